"""Skills bound to their tools on mcp's ``MCPServer`` (:mod:`projector.server.bound`).

MCPServer has no visibility of its own: a tool is hidden from a caller by the server's middleware, or by its
``tools/list`` handler. So the caller's tools are the server's own answer to ``tools/list`` for this request: the
server's middleware chain (``MCPServer.middleware``, outermost first, as the runner composes it) around the
``tools/list`` handler, on the request's context. It is asked once per request, by one middleware that
:func:`projector.server.attach` appends, which then filters what that request is served.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from functools import partial
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult, PaginatedRequestParams, TextContent

from ..bound import WITHDRAWN, Bound, declares_skills
from ..skill_tools import LOAD_SKILL, TOOL_NAMES, Refusal, SkillTools
from ..skills import CALLER_TREE

_PROBING: ContextVar[bool] = ContextVar("projector_probing_tools", default=False)
METHODS = frozenset(
    {
        "tools/list",
        "tools/call",
        "prompts/list",
        "prompts/get",
        "resources/list",
        "resources/read",
        "resources/directory/read",
        "skills/list",
        "skills/get",
    }
)


def _dump(result: Any) -> Any:
    return result.model_dump(by_alias=True, mode="json", exclude_none=True) if hasattr(result, "model_dump") else result


async def visible_tools(server: MCPServer, ctx: Any) -> frozenset[str] | None:
    """The names ``tools/list`` answers this request's caller: the server's middleware around its handler."""
    entry = server._lowlevel_server.get_request_handler("tools/list")  # MCPServer keeps its low-level server private
    if entry is None:  # pragma: no cover - MCPServer always lists tools
        return None

    async def handler(c: Any) -> Any:
        return _dump(await entry.handler(c, PaginatedRequestParams()))

    call: Callable[[Any], Awaitable[Any]] = handler
    for middleware in reversed(server.middleware):
        call = partial(_apply, middleware, call)
    token = _PROBING.set(True)
    try:
        result = _dump(await call(dataclasses.replace(ctx, method="tools/list", params=None)))
    finally:
        _PROBING.reset(token)
    tools = result.get("tools") if isinstance(result, dict) else None
    return frozenset(t["name"] for t in tools or () if isinstance(t, dict) and isinstance(t.get("name"), str))


def _apply(middleware: Any, call_next: Any, ctx: Any) -> Any:
    return middleware(ctx, call_next)


def _skill_call(tools: SkillTools, name: str, arguments: Any) -> dict[str, Any]:
    """``load_skill`` or ``read_skill_file`` on the caller's tree, as the tool answers (a refusal is ``isError``)."""
    key = "name" if name == LOAD_SKILL else "uri"
    value = arguments.get(key) if isinstance(arguments, dict) else None
    if not isinstance(value, str):
        return {}
    try:
        f = tools.load_skill(value) if name == LOAD_SKILL else tools.read_skill_file(value)
    except Refusal as exc:
        return _dump(CallToolResult(content=[TextContent(type="text", text=str(exc))], is_error=True))
    return _dump(CallToolResult(content=tools.content(f)))


class BoundMiddleware:
    """The one middleware: asks the caller's tools once per request, and serves the caller's tree and offer."""

    projector_bound = True

    def __init__(self, server: MCPServer, bound: Bound):
        self.server, self.bound = server, bound

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if ctx.request_id is None or ctx.method not in METHODS or _PROBING.get():
            return await call_next(ctx)
        visible = await visible_tools(self.server, ctx)
        tree = self.bound.tree_for(visible)
        token = CALLER_TREE.set((self.bound.tree, tree)) if tree is not None and self.bound.tree else None
        withdrawn = WITHDRAWN.set(self.bound.withdrawn)
        try:
            return await self._serve(ctx, call_next, self.bound.hidden(visible), tree)
        finally:
            WITHDRAWN.reset(withdrawn)
            if token is not None:
                CALLER_TREE.reset(token)

    async def _serve(self, ctx: Any, call_next: Any, hidden: frozenset[str], tree: Any) -> Any:
        params = ctx.params if isinstance(ctx.params, dict) else {}
        method, name, uri = ctx.method, params.get("name"), params.get("uri")
        if method == "prompts/get" and name in hidden:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown prompt: {name}", data={"name": name})
        if method == "resources/read" and isinstance(uri, str) and self.bound.hides_uri(uri, tree):
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown resource: {uri}", data={"uri": uri})
        if method == "tools/call" and name in hidden:
            return _dump(
                CallToolResult(content=[TextContent(type="text", text=f"Unknown tool: {name}")], is_error=True)
            )
        if method == "tools/call" and self.bound.skill_tools and name in TOOL_NAMES and tree is not self.bound.tree:
            answer = _skill_call(SkillTools(tree), name, params.get("arguments"))
            if answer:
                return answer
        result = _dump(await call_next(ctx))
        return self._filter(ctx, method, result, hidden, tree)

    def _filter(self, ctx: Any, method: str, result: Any, hidden: frozenset[str], tree: Any) -> Any:
        if not isinstance(result, dict):
            return result
        if method == "prompts/list" and hidden:
            return {**result, "prompts": [p for p in result.get("prompts", []) if p.get("name") not in hidden]}
        if method == "resources/list" and tree is not self.bound.tree:
            return {
                **result,
                "resources": [
                    r for r in result.get("resources", []) if not self.bound.hides_uri(str(r.get("uri")), tree)
                ],
            }
        if method != "tools/list":
            return result
        drop = set(hidden)
        if self.bound.skill_tools and declares_skills(ctx.session.client_capabilities):
            drop |= set(TOOL_NAMES)
        tools = [t for t in result.get("tools", []) if t.get("name") not in drop]
        if self.bound.skill_tools and tree is not self.bound.tree:
            described = SkillTools(tree)
            text = {LOAD_SKILL: described.load_description(), TOOL_NAMES[1]: described.read_description()}
            tools = [{**t, "description": text[t["name"]]} if t.get("name") in text else t for t in tools]
        return {**result, "tools": tools}


def bind(server: MCPServer, bound: Bound) -> None:
    """Append the middleware (once) that serves each request's caller what it can carry out."""
    if not any(getattr(m, "projector_bound", False) for m in server.middleware):
        server.middleware.append(BoundMiddleware(server, bound))
