"""The Tasks extension (SEP-2663) on mcp's MCPServer: an ``mcp.server.extension.Extension`` over
:mod:`projector.server.tasks_wire`, and the host a task's workflow runs on (the server's, not a request's).

MCPServer takes extensions at construction; ``attach`` adds this one to a built server through the two private
methods the constructor itself calls (``_apply_extension``, then ``_install_extension_interceptor``), as the skills
extension is added (:mod:`.mcp`). A server built with ``MCPServer(..., extensions=[MCPTasksExtension(tasks)])`` needs
neither.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import MCPServer

from ..errors import AttachError
from ..tasks import TASKS_EXTENSION, Tasks
from ..workflow import ToolSpec, WorkflowHost
from ..tasks_wire import intercept, method_handlers


class MCPTasksExtension(Extension):
    """``tasks/get``, ``tasks/update``, ``tasks/cancel``, and task-augmented ``tools/call``, over ``tasks``."""

    identifier = TASKS_EXTENSION

    def __init__(self, tasks: Tasks):
        self.tasks = tasks

    def methods(self) -> Sequence[MethodBinding]:
        return [MethodBinding(method, params, handler) for method, params, handler in method_handlers(self.tasks)]

    async def intercept_tool_call(self, params: Any, ctx: Any, call_next: Any) -> Any:
        return await intercept(
            self.tasks, ctx, params.name, params.arguments, params.input_responses, lambda: call_next(ctx)
        )


def add_tasks(server: MCPServer, tasks: Tasks) -> None:
    extensions = getattr(server, "_extensions", ())
    if any(getattr(e, "tasks", None) is tasks for e in extensions):
        return
    if any(getattr(e, "identifier", None) == TASKS_EXTENSION for e in extensions):
        raise AttachError("this server already has a Tasks extension of its own")
    apply, install = getattr(server, "_apply_extension", None), getattr(server, "_install_extension_interceptor", None)
    if apply is None or install is None:  # pragma: no cover - a future mcp without the private hooks
        raise AttachError(
            "this mcp version cannot add an extension to a built server; build it with "
            "MCPServer(..., extensions=[MCPTasksExtension(tasks)])"
        )
    apply(MCPTasksExtension(tasks))
    install()


class ServerHost(WorkflowHost):
    """The runner on an MCPServer outside any request: a task's rounds run long after the call that started it."""

    def __init__(self, server: MCPServer):
        self.server = server

    async def tools(self) -> dict[str, ToolSpec]:
        return {t.name: ToolSpec(t.input_schema, t.output_schema) for t in await self.server.list_tools()}

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        return await self.server.call_tool(name, arguments)

    async def read_resource(self, uri: str) -> Sequence[Any]:
        return list(await self.server.read_resource(uri))  # type: ignore[arg-type]

    async def report_progress(self, progress: float, total: float, message: str) -> None:
        return None
