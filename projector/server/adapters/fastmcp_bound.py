"""The skill tools on FastMCP, and skills bound to their tools there (:mod:`projector.server.bound`).

``load_skill`` and ``read_skill_file`` are :class:`SkillTool`, registered by :func:`add_skill_tools`: the same
functions as on ``MCPServer`` (:mod:`projector.server.skill_tools`).

The caller's tools are FastMCP's own answer: ``FastMCP.list_tools()`` in the request's context, the path its
``tools/list`` takes (global and per-session visibility, tags, component authorization, the list middleware), asked
once per request (kept in the request's state). One FastMCP middleware then serves the caller what it can carry out:
``check_resource_access`` refuses the files of a hidden skill, which FastMCP's skills extension also asks before it
lists or gets a skill, so ``skills/list`` and ``skills/get`` leave it out by FastMCP's own rule; the prompt and tool
hooks leave out the hidden prompts and workflow tools, and the skill tools for a client that reads skills itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

import mcp_types
from fastmcp import FastMCP
from fastmcp.exceptions import AuthorizationError, NotFoundError, ToolError
from fastmcp.server.dependencies import get_context
from fastmcp.server.middleware import Middleware
from fastmcp.tools.base import ToolResult
from fastmcp.tools.function_tool import FunctionTool

from ..bound import WITHDRAWN, Bound, declares_skills
from ..skill_tools import ANNOTATIONS, LOAD_SKILL, READ_SKILL_FILE, TOOL_NAMES, Refusal, SkillTools, functions
from ..skills import CALLER_TREE
from ..tree import SkillTree

_PROBING: ContextVar[bool] = ContextVar("projector_probing_fastmcp_tools", default=False)
_STATE = "projector.visible-tools"


async def visible_tools(server: FastMCP) -> frozenset[str] | None:
    """The tools ``tools/list`` shows this request's caller, asked once per request; None outside a request (the
    server's own calls, such as a later ``attach``'s listing, see every tool)."""
    try:
        ctx = get_context()
    except RuntimeError:
        return None
    if ctx.request_context is None:
        return None
    cached = await ctx.get_state(_STATE)
    if isinstance(cached, frozenset):
        return cached
    token = _PROBING.set(True)
    try:
        names = frozenset(t.name for t in await server.list_tools())
    finally:
        _PROBING.reset(token)
    await ctx.set_state(_STATE, names, serializable=False)
    return names


class BoundMiddleware(Middleware):
    def __init__(self, server: FastMCP, bound: Bound):
        self.server, self.bound = server, bound

    async def _caller(self) -> tuple[frozenset[str], SkillTree | None]:
        visible = await visible_tools(self.server)
        return self.bound.hidden(visible), self.bound.tree_for(visible)

    async def _hides(self, context: Any) -> bool:
        _, tree = await self._caller()
        return not _PROBING.get() and self.bound.hides_uri(str(getattr(context.message, "uri", "")), tree)

    async def check_resource_access(self, context: Any) -> None:
        if await self._hides(context):  # FastMCP's skills extension asks it before it lists or gets a skill
            raise AuthorizationError("a tool this skill calls is not visible to the caller")

    async def on_read_resource(self, context: Any, call_next: Any) -> Any:
        if await self._hides(context):  # read as an unknown resource
            raise NotFoundError(f"Unknown resource: {str(context.message.uri)!r}")
        return await call_next(context)

    async def on_list_resources(self, context: Any, call_next: Any) -> Any:
        resources = await call_next(context)
        if _PROBING.get():
            return resources
        _, tree = await self._caller()
        return [r for r in resources if not self.bound.hides_uri(str(r.uri), tree)]

    async def on_list_prompts(self, context: Any, call_next: Any) -> Any:
        prompts = await call_next(context)
        if _PROBING.get():
            return prompts
        hidden, _ = await self._caller()
        return [p for p in prompts if p.name not in hidden]

    async def on_get_prompt(self, context: Any, call_next: Any) -> Any:
        hidden, _ = await self._caller()
        if context.message.name in hidden:
            raise NotFoundError(f"Unknown prompt: {context.message.name!r}")
        return await self._withdrawn_known(context, call_next)

    async def _withdrawn_known(self, context: Any, call_next: Any) -> Any:
        """``call_next(context)`` with the withdrawn workflows known to a run it starts (:data:`WITHDRAWN`)."""
        token = WITHDRAWN.set(self.bound.withdrawn)
        try:
            return await call_next(context)
        finally:
            WITHDRAWN.reset(token)

    async def on_list_tools(self, context: Any, call_next: Any) -> Any:
        tools = await call_next(context)
        if _PROBING.get():
            return tools
        hidden, tree = await self._caller()
        drop = set(hidden)
        rc = get_context().request_context
        if self.bound.skill_tools and rc is not None and declares_skills(rc.session.client_capabilities):
            drop |= set(TOOL_NAMES)
        kept = [t for t in tools if t.name not in drop]
        if self.bound.skill_tools and tree is not None and tree is not self.bound.tree:
            described = SkillTools(tree)
            text = {LOAD_SKILL: described.load_description(), READ_SKILL_FILE: described.read_description()}
            kept = [t.model_copy(update={"description": text[t.name]}) if t.name in text else t for t in kept]
        return kept

    async def on_call_tool(self, context: Any, call_next: Any) -> Any:
        if _PROBING.get():
            return await call_next(context)
        name, arguments = context.message.name, context.message.arguments or {}
        hidden, tree = await self._caller()
        if name in hidden:
            raise NotFoundError(f"Unknown tool: {name!r}")
        if self.bound.skill_tools and name in TOOL_NAMES and tree is not None and tree is not self.bound.tree:
            value = arguments.get("name" if name == LOAD_SKILL else "uri")
            if isinstance(value, str):
                tools = SkillTools(tree)
                try:
                    f = tools.load_skill(value) if name == LOAD_SKILL else tools.read_skill_file(value)
                except Refusal as exc:
                    raise ToolError(str(exc)) from None
                return ToolResult(content=tools.content(f))
        return await self._withdrawn_known(context, call_next)


class SkillTool(FunctionTool):
    """``load_skill`` or ``read_skill_file`` (:mod:`projector.server.skill_tools`) as a FastMCP tool, without
    FastMCP's ``_meta.fastmcp`` block."""

    def to_mcp_tool(self, **overrides: Any) -> mcp_types.Tool:
        return super().to_mcp_tool(**{**overrides, "_meta": None})


def add_skill_tools(server: FastMCP, tree: SkillTree) -> SkillTools:
    """Register the two skill tools on ``server`` (its names already checked by ``check_names``). A refusal is
    FastMCP's ``ToolError``, which reaches the client as an ``isError`` result even when details are masked."""
    tools = SkillTools(tree)
    load, read = functions(tools, ToolError)
    for fn, name, description in (
        (load, LOAD_SKILL, tools.load_description()),
        (read, READ_SKILL_FILE, tools.read_description()),
    ):
        server.add_tool(
            SkillTool.from_function(fn, name=name, description=description, annotations=ANNOTATIONS, output_schema=None)
        )
    return tools


def caller_handler(
    server: FastMCP, bound: Bound, handler: Callable[..., Awaitable[Any]]
) -> Callable[..., Awaitable[Any]]:
    """``handler`` (``resources/directory/read``) on the tree this request's caller is served."""

    async def handler_for_caller(ctx: Any, params: Any) -> Any:
        tree = bound.tree_for(await visible_tools(server))
        token = CALLER_TREE.set((bound.tree, tree)) if tree is not None and bound.tree is not None else None
        try:
            return await handler(ctx, params)
        finally:
            if token is not None:
                CALLER_TREE.reset(token)

    return handler_for_caller


def bind(server: FastMCP, bound: Bound, served: Any) -> None:
    """Add the middleware (once), and serve ``resources/directory/read`` of ``served`` (the extension ``attach``
    added, or None) on the caller's tree."""
    if not any(isinstance(m, BoundMiddleware) for m in server.middleware):
        server.add_middleware(BoundMiddleware(server, bound))
    if served is not None:
        served.read_directory = caller_handler(server, bound, served.read_directory)
