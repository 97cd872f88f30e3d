"""Surface C: an agent that runs on the server, as a tool.

:func:`register_agent` adds the tool ``agent`` to a server that serves skills (``mcp``'s ``MCPServer`` or a
``fastmcp.FastMCP``). Called with a skill name and the skill's inputs, it reads the skill's SKILL.md from the server
itself, follows it with the same reader and the same deterministic policy the client uses on the skill surface (its
"model"), calling the server's tools in process, and returns only its final message. The client sees none of the
steps.

The server's tools and resources are reached through the same per-framework host as the server-side workflow runner
(:class:`projector.server.workflow.WorkflowHost`, made by the server's adapter, :mod:`projector.server.adapters`), so
the agent has no framework code of its own.

It also adds ``agent_trace``, a read-only tool that returns what the last agent run did (its own requests and
turns). The harness reads it after a run, as an observer, the way it reads the ledger; it is not part of the
surface and its bytes are not counted.
"""

from __future__ import annotations

from typing import Any

from mcp_types import CallToolResult, TextContent, ToolAnnotations

from ..server.adapters import detect
from ..server.workflow import WorkflowHost
from .reader import ReadError, StepFailed, follow, parse, result_value

AGENT_TOOL = "agent"
TRACE_TOOL = "agent_trace"
AGENT_DESCRIPTION = ("Run the server's own agent on one of its skills: it follows the skill with its own judgment and "
                     "returns only its final message.")
TRACE_DESCRIPTION = "What the last agent run did: its requests and model turns (for measurement)."
AGENT_ANNOTATIONS = ToolAnnotations(read_only_hint=False, destructive_hint=True)
TRACE_ANNOTATIONS = ToolAnnotations(read_only_hint=True, idempotent_hint=True)


class _ServerBackend:
    """The agent's hands: the server's own tools and resources, called in process through ``host``."""

    def __init__(self, host: WorkflowHost):
        self.host = host
        self.requests: list[dict[str, str]] = []

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        self.requests.append({"method": "tools/call", "target": name})
        tools = await self.host.tools()
        try:
            result = await self.host.call_tool(name, arguments)
        except Exception as exc:  # ToolError and the like: the agent sees a failed call
            raise StepFailed(f"the tool `{name}` failed: {exc}") from None
        if not isinstance(result, CallToolResult):
            raise StepFailed(f"the tool `{name}` asked for more input")
        if result.is_error:
            text = " ".join(c.text for c in result.content if isinstance(c, TextContent))
            raise StepFailed(f"the tool `{name}` failed: {text}")
        spec = tools.get(name)
        return result_value(result.structured_content, [c.text for c in result.content
                                                        if isinstance(c, TextContent)],
                            spec.output_schema if spec else None)

    async def read_resource(self, uri: str) -> str:
        self.requests.append({"method": "resources/read", "target": uri})
        contents = await self.host.read_resource(uri)
        return "".join(c.content if isinstance(c.content, str) else "" for c in contents)


def register_agent(server: Any, *, skill_scheme: str = "skill://") -> None:
    """Add the ``agent`` and ``agent_trace`` tools to ``server``, an ``MCPServer`` or a ``fastmcp.FastMCP`` (which
    must serve the skills it is asked for); a TypeError for anything else."""
    adapter = detect(server)
    if adapter is None:
        raise TypeError(f"register_agent() takes an mcp MCPServer or a fastmcp.FastMCP, not {type(server).__name__}")
    last: dict[str, Any] = {}

    async def agent(host: WorkflowHost, skill: str, arguments: dict[str, str]) -> str:
        backend = _ServerBackend(host)
        text = await backend.read_resource(f"{skill_scheme}{skill}/SKILL.md")
        try:
            proc = parse(text)
        except ReadError as exc:
            raise ValueError(f"cannot follow the skill {skill!r}: {exc}") from None
        outcome = await follow(proc, arguments, backend)
        last.clear()
        last.update({"skill": skill, "requests": backend.requests, "model_turns": len(backend.requests) + 1})
        return outcome.answer

    async def agent_trace() -> dict[str, Any]:
        return dict(last)

    # the agent's answer is a message for the model, not data: text content only
    adapter.add_tool(server, agent, name=AGENT_TOOL, description=AGENT_DESCRIPTION, annotations=AGENT_ANNOTATIONS,
                     text_only=True, host=True)
    adapter.add_tool(server, agent_trace, name=TRACE_TOOL, description=TRACE_DESCRIPTION,
                     annotations=TRACE_ANNOTATIONS)
