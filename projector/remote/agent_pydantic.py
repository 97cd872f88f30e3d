"""A pydantic-ai agent built from a composition of pinned skills: the adapter between :mod:`.compose` and a real
agent framework.

pydantic-ai (the ``project-skill[agent]`` extra: ``pydantic-ai-slim[mcp]``) takes MCP servers as toolsets and
instructions as text. It neither verifies nor pins skills. This adapter gives it only what :func:`.compose.compose`
verified:

- the system prompt is :attr:`Composition.instructions`, byte for byte. It is passed as pydantic-ai's
  ``system_prompt``, which the model receives unchanged. pydantic-ai's ``instructions`` would strip the text's
  surrounding whitespace, and so break byte equality;
- one ``MCPToolset`` for each server the skills came from, with the server's own instructions left out
  (``include_instructions=False``, pydantic-ai's default), so no unverified server text reaches the system prompt.
  It asks a server for its tools only when the server's capabilities offer ``tools``: a skills catalog that serves
  skills and no tools (the TypeScript SDK v2 ``SkillCatalog``) answers ``tools/list`` with "Method not found", and
  pydantic-ai's own ``MCPToolset`` would fail the agent's first run on it. Such a server adds no tools, and its
  skills' files still reach the model through the reader below (pydantic-ai treats ``prompts`` the same way);
- the tool ``read_skill_file(server, uri)``: the composition's :class:`~.compose.FileReader`. It hands out the
  verified bytes of a pinned skill's file from the server that pinned it, and a refusal reaches the model as a
  failed tool call (pydantic-ai's ``ToolFailed``), never as file text;
- :func:`user_prompt`: the user-role turns (unpinned skills accepted with ``unpinned="user-turn"``) placed before
  the user's own prompt, in the user's message and never in the system prompt.

:func:`agent_from_lock` composes first and builds the agent only from a composition. A refused skill raises
:class:`~.compose.CompositionRefused` before any agent exists, so the model is never called. pydantic-ai is
imported when an agent is built, never on import of this module; ``project-skill build`` never imports it.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .compose import Composition, Unpinned, compose

READ_TOOL = "read_skill_file"
READ_DESCRIPTION = (
    "Read a supporting file of a skill in your instructions. Give the server and the file's URI, "
    "both as the skill's <skill> element names them: the skill's root URI followed by the path that "
    "its SKILL.md gives (for example skill://refund-flow/references/tools.md). Only the files of a "
    "skill's pinned manifest can be read, and only from the server that pinned it."
)


def toolset_target(server: str, target: Any = None) -> Any:
    """What ``MCPToolset`` connects to for a server as the lock names it (a lock names it by its name, not by how it
    is reached: :mod:`.pins`). ``target`` is what to reach (an in-process server, a transport, or a spec); without
    one, the name itself is taken as a spec. A spec that is an ``http(s)://`` URL is used as it is, and a command
    line becomes fastmcp's ``StdioTransport``, split as the client splits it."""
    if target is None:
        target = server
    if not isinstance(target, str):
        return target
    if target.startswith(("http://", "https://")):
        return target
    import os
    import shlex

    from fastmcp.client.transports import StdioTransport

    words = shlex.split(target)
    return StdioTransport(words[0], words[1:], env=dict(os.environ), cwd=os.getcwd())


@functools.cache
def _offered_toolset() -> type:
    """pydantic-ai's ``MCPToolset``, asking for tools only when the server offers them (made on first use, so that
    importing this module does not import pydantic-ai)."""
    from pydantic_ai.mcp import MCPToolset

    class OfferedToolset(MCPToolset):  # type: ignore[type-arg]
        """An ``MCPToolset`` that lists no tools where the server's capabilities offer none, instead of sending a
        ``tools/list`` the server does not implement."""

        async def list_tools(self) -> list[Any]:
            async with self:  # connected (once per run: pydantic-ai counts the entries), so capabilities are known
                if not self.capabilities.tools:
                    return []
                return await super().list_tools()

    return OfferedToolset


def read_tool(composition: Composition) -> Any:
    """The scoped file reader as a pydantic-ai ``Tool``. A refusal becomes ``ToolFailed`` with its diagnostic."""
    from pydantic_ai import Tool
    from pydantic_ai.exceptions import ToolFailed

    from ..errors import ProjectorError

    def read_skill_file(server: str, uri: str) -> str:
        try:
            return composition.reader.read_text(server, uri)
        except ProjectorError as exc:
            raise ToolFailed(str(exc)) from None

    return Tool(read_skill_file, name=READ_TOOL, description=READ_DESCRIPTION)


def build_agent(
    composition: Composition, model: Any, *, targets: Mapping[str, Any] | None = None, **agent_options: Any
) -> Any:
    """A pydantic-ai ``Agent`` with the composition's instructions as its system prompt, each skill server as an
    MCP toolset (its tools, when it offers any), and the scoped reader as a tool. ``targets`` maps a server (as the lock names it) to what the
    toolset connects to instead; ``agent_options`` go to ``Agent`` (not ``system_prompt``, ``instructions``,
    ``toolsets`` or ``tools``)."""
    from pydantic_ai import Agent

    for owned in ("system_prompt", "instructions", "toolsets", "tools"):
        if owned in agent_options:
            raise TypeError(f"build_agent() sets {owned} itself, from the composition")
    toolset = _offered_toolset()
    toolsets = [
        toolset(toolset_target(s, (targets or {}).get(s)), include_instructions=False) for s in composition.servers()
    ]
    return Agent(
        model,
        system_prompt=composition.instructions,
        toolsets=toolsets,
        tools=[read_tool(composition)],
        **agent_options,
    )


def user_prompt(composition: Composition, prompt: str) -> list[str]:
    """The user's message: each user-role turn of the composition, then ``prompt``."""
    return [*composition.user_turn_texts(), prompt]


async def agent_from_lock(
    lock_path: str | Path,
    model: Any,
    selection: Mapping[str, Sequence[str]] | None = None,
    *,
    unpinned: Unpinned = "refuse",
    targets: Mapping[str, Any] | None = None,
    **agent_options: Any,
) -> tuple[Any, Composition]:
    """Compose (verifying every skill against its pin), then build the agent: ``(agent, composition)``. A refusal
    raises :class:`~.compose.CompositionRefused` and no agent is built."""
    composition = await compose(lock_path, selection, unpinned=unpinned, targets=targets)
    return build_agent(composition, model, targets=targets, **agent_options), composition
