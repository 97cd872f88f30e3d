"""Surface C: an agent that runs on the server, as a tool.

:func:`register_agent` adds the tool ``agent`` to an ``MCPServer`` that serves skills. Called with a skill name and
the skill's inputs, it reads the skill's SKILL.md from the server itself, follows it with the same reader and the
same deterministic policy the client uses on the skill surface (its "model"), calling the server's tools in process,
and returns only its final message. The client sees none of the steps.

It also adds ``agent_trace``, a read-only tool that returns what the last agent run did (its own requests and
turns). The harness reads it after a run, as an observer, the way it reads the ledger; it is not part of the
surface and its bytes are not counted.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import CallToolResult, TextContent, ToolAnnotations

from .reader import ReadError, StepFailed, follow, parse, result_value

AGENT_TOOL = "agent"
TRACE_TOOL = "agent_trace"


class _ServerBackend:
    """The agent's hands: the server's own tools and resources, called in process."""

    def __init__(self, ctx: Context, server: MCPServer):
        self.ctx = ctx
        self.server = server
        self.requests: list[dict[str, str]] = []

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        self.requests.append({"method": "tools/call", "target": name})
        tools = {t.name: t for t in await self.server.list_tools()}
        try:
            result = await self.server.call_tool(name, arguments, self.ctx)
        except Exception as exc:  # ToolError and the like: the agent sees a failed call
            raise StepFailed(f"the tool `{name}` failed: {exc}") from None
        if not isinstance(result, CallToolResult):
            raise StepFailed(f"the tool `{name}` asked for more input")
        if result.is_error:
            text = " ".join(c.text for c in result.content if isinstance(c, TextContent))
            raise StepFailed(f"the tool `{name}` failed: {text}")
        tool = tools.get(name)
        return result_value(result.structured_content, [c.text for c in result.content
                                                        if isinstance(c, TextContent)],
                            tool.output_schema if tool else None)

    async def read_resource(self, uri: str) -> str:
        self.requests.append({"method": "resources/read", "target": uri})
        contents = list(await self.ctx.read_resource(uri))
        return "".join(c.content if isinstance(c.content, str) else "" for c in contents)


def register_agent(server: MCPServer, *, skill_scheme: str = "skill://") -> None:
    """Add the ``agent`` and ``agent_trace`` tools to ``server`` (which must serve the skills it is asked for)."""
    last: dict[str, Any] = {}

    async def agent(skill: str, arguments: dict[str, str], ctx: Context) -> str:
        backend = _ServerBackend(ctx, server)
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

    server.add_tool(agent, name=AGENT_TOOL,
                    description="Run the server's own agent on one of its skills: it follows the skill with its own "
                                "judgment and returns only its final message.",
                    annotations=ToolAnnotations(read_only_hint=False, destructive_hint=True),
                    structured_output=False)  # a message for the model, not data: text content only
    server.add_tool(agent_trace, name=TRACE_TOOL,
                    description="What the last agent run did: its requests and model turns (for measurement).",
                    annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True))
