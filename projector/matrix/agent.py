"""Surface C: an agent that runs on the server, as a tool, on skills composed from a lock.

:func:`make_lock` is the set-up. Before any tool call it connects projector's verifying client to the server in
process (through the adapter's public in-process connection, :meth:`~projector.server.adapters.base.Adapter.
in_process`), and pins every skill the server serves into a lock file: the approval, made from the manifests alone,
as ``project-skill pin`` makes it.

:func:`register_agent` adds the tool ``agent`` to a server that serves skills (``mcp``'s ``MCPServer`` or a
``fastmcp.FastMCP``). Called with a skill name and the skill's inputs, it first composes its instructions from that
lock with :func:`projector.remote.compose.compose`: the skill is resolved on the server and verified against its pin
before any byte is used, so a skill that no longer matches the lock is refused before the agent's loop, and the tool
fails with the composition's refusal. Then it follows the composed skill with the same reader and the same
deterministic policy the client uses on the skill surface (its "model"), calling the server's tools in process, and
returns only its final message. The client sees none of the steps.

The SKILL.md reaches the agent inside its instructions, so the agent's loop does not read it. A read of one of the
skill's own files goes to the composition's scoped reader (the bytes verified at composition, and only the files of
the pinned manifest), not to the server; a read of anything else (the server's own resources, such as a policy
document) is a request to the server. The server's tools and resources are reached through the same per-framework
host as the server-side workflow runner (:class:`projector.server.workflow.WorkflowHost`, made by the server's
adapter, :mod:`projector.server.adapters`), so the agent has no framework code of its own.

It also adds ``agent_trace``, a read-only tool that returns what the last agent run did (its own requests and
turns, and the size of its composed instructions). The harness reads it after a run, as an observer, the way it
reads the ledger; it is not part of the surface and its bytes are not counted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp_types import CallToolResult, TextContent, ToolAnnotations

from ..errors import ProjectorError
from ..server.adapters import detect
from ..server.adapters.base import Adapter
from ..server.workflow import WorkflowHost
from .reader import ReadError, StepFailed, follow, parse, result_value

AGENT_TOOL = "agent"
TRACE_TOOL = "agent_trace"
AGENT_DESCRIPTION = (
    "Run the server's own agent on one of its skills: it follows the skill with its own judgment and "
    "returns only its final message."
)
TRACE_DESCRIPTION = "What the last agent run did: its requests and model turns (for measurement)."
AGENT_ANNOTATIONS = ToolAnnotations(read_only_hint=False, destructive_hint=True)
TRACE_ANNOTATIONS = ToolAnnotations(read_only_hint=True, idempotent_hint=True)

SERVER = "projector-demo"  # how the lock and the origin tags name the agent's own server, reached in process
READ_COMPOSED = "composition/read"  # a read of a skill's own file, from the composition: not a server request


def _adapter(server: Any) -> Adapter:
    adapter = detect(server)
    if adapter is None:
        raise TypeError(f"register_agent() takes an mcp MCPServer or a fastmcp.FastMCP, not {type(server).__name__}")
    return adapter


async def make_lock(server: Any, lock: str | Path) -> None:
    """The set-up: pin every skill ``server`` serves into the lock file ``lock``, over the verifying client in
    process. Approval reads no file; the first composition verifies the bytes against it."""
    from ..remote import Lock, connect, pin_entry, write_lock

    async with connect(_adapter(server).in_process(server), SERVER) as remote:
        entries = await remote.list_skills()
    write_lock(lock, Lock().updated(SERVER, [pin_entry(SERVER, e) for e in entries], replace_server=True))


class _ServerBackend:
    """The agent's hands: the server's own tools and resources, called in process through ``host``, and the
    composed skill's files, read from the composition."""

    def __init__(self, host: WorkflowHost, composition: Any):
        self.host, self.composition = host, composition
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
        return result_value(
            result.structured_content,
            [c.text for c in result.content if isinstance(c, TextContent)],
            spec.output_schema if spec else None,
        )

    async def read_resource(self, uri: str) -> str:
        if any(uri.startswith(s.root + "/") for s in self.composition.skills):
            self.requests.append({"method": READ_COMPOSED, "target": uri})
            try:
                return self.composition.reader.read_text(SERVER, uri)  # refuses a file outside the pinned manifest
            except ProjectorError as exc:
                raise StepFailed(f"cannot read {uri}: {exc}") from None
        self.requests.append({"method": "resources/read", "target": uri})
        contents = await self.host.read_resource(uri)
        return "".join(c.content if isinstance(c.content, str) else "" for c in contents)


def register_agent(server: Any, *, lock: str | Path) -> None:
    """Add the ``agent`` and ``agent_trace`` tools to ``server``, an ``MCPServer`` or a ``fastmcp.FastMCP`` (which
    must serve the skills it is asked for); a TypeError for anything else. Each run composes from ``lock``, which
    :func:`make_lock` makes at set-up."""
    adapter = _adapter(server)
    last: dict[str, Any] = {}

    async def agent(host: WorkflowHost, skill: str, arguments: dict[str, str]) -> str:
        from ..remote.compose import compose

        last.clear()
        try:  # resolve time: a skill that no longer matches its pin is refused here, before the loop
            composition = await compose(lock, {SERVER: [skill]}, targets={SERVER: adapter.in_process(server)})
        except ProjectorError as exc:
            last.update({"skill": skill, "refused": str(exc), "requests": [], "model_turns": 0})
            raise adapter.tool_error(f"refused to run the skill {skill!r}: {exc}") from None
        [composed] = composition.skills
        try:
            proc = parse(composed.text)
        except ReadError as exc:
            raise adapter.tool_error(f"cannot follow the skill {skill!r}: {exc}") from None
        backend = _ServerBackend(host, composition)
        outcome = await follow(proc, arguments, backend)
        last.update(
            {
                "skill": skill,
                "requests": backend.requests,
                "model_turns": len(backend.requests) + 1,
                "instructions_bytes": len(composition.instructions.encode("utf-8")),
                "skill_bytes": len(composed.text.encode("utf-8")),
            }
        )
        return outcome.answer

    async def agent_trace() -> dict[str, Any]:
        return dict(last)

    # the agent's answer is a message for the model, not data: text content only
    adapter.add_tool(
        server,
        agent,
        name=AGENT_TOOL,
        description=AGENT_DESCRIPTION,
        annotations=AGENT_ANNOTATIONS,
        text_only=True,
        host=True,
    )
    adapter.add_tool(server, agent_trace, name=TRACE_TOOL, description=TRACE_DESCRIPTION, annotations=TRACE_ANNOTATIONS)
