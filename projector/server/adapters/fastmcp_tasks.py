"""The Tasks extension (SEP-2663) on FastMCP: a ``fastmcp.server.extensions.ServerExtension`` over
:mod:`projector.server.tasks_wire`, registered with FastMCP's public ``add_extension``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastmcp import FastMCP
from fastmcp.server.dependencies import get_context
from fastmcp.server.extensions import MethodBinding, ServerExtension

from ..errors import AttachError
from ..tasks import TASKS_EXTENSION, Tasks
from .fastmcp import FastMCPHost
from ..tasks_wire import intercept, method_handlers


class FastMCPTasksExtension(ServerExtension):
    """``tasks/get``, ``tasks/update``, ``tasks/cancel``, and task-augmented ``tools/call``, over ``tasks``."""

    identifier = TASKS_EXTENSION

    def __init__(self, tasks: Tasks):
        self.tasks = tasks

    def clone(self) -> FastMCPTasksExtension:
        return FastMCPTasksExtension(self.tasks)

    def methods(self) -> Sequence[MethodBinding]:
        return [MethodBinding(method, params, handler) for method, params, handler in method_handlers(self.tasks)]

    async def intercept_tool_call(self, params: Any, context: Any, call_next: Any) -> Any:
        ctx = context.request_context if context is not None else get_context().request_context
        return await intercept(self.tasks, ctx, params.name, params.arguments, params.input_responses, call_next)


def add_tasks(server: FastMCP, tasks: Tasks) -> None:
    current = getattr(server, "_extensions", {}).get(TASKS_EXTENSION)
    if current is not None and getattr(current, "tasks", None) is tasks:
        return
    if current is not None:
        raise AttachError("this server already has a Tasks extension of its own")
    server.add_extension(FastMCPTasksExtension(tasks))


class ServerHost(FastMCPHost):
    """The runner on a FastMCP server outside any request: a task's rounds run long after the call that started it,
    so no progress goes to that call."""

    def __init__(self, server: FastMCP):
        self.ctx, self.server = None, server

    async def report_progress(self, progress: float, total: float, message: str) -> None:
        return None
