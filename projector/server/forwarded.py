"""The gateway's forwarded tools as the upstream lists them (:mod:`projector.server.gateway`).

What the gateway lists of a forwarded tool is the upstream's ``tools/list`` entry as it last listed it, field for
field (name, title, description, input and output schemas, annotations, ``execution``, icons, ``_meta``): each
framework's own rendering of its forwarding tool (MCPServer's key order, FastMCP's ``_meta.fastmcp`` tags and default
title, either dropping ``execution``) is replaced on the wire by the upstream's entry. The gateway adds nothing to it.
The entry is the upstream's JSON as it came (:func:`as_listed`: its keys in its order, and the fields the ``mcp``
client's models do not know), where the models read it as the listing the gateway checked its workflows against; else
(the upstream answered the two listings differently) the listing as the models read it.

When the upstream says its tools changed, the gateway lists them again (:meth:`Forwarded.update`): a tool it no
longer lists is not listed, one whose description, schemas or annotations changed is listed as it is now, one it
lists for the first time is listed (after the gateway's own tools) and its calls forwarded, unless its name is one of
the gateway's own tools (a workflow tool, a skill tool), which keeps it; and the workflows whose steps no longer fit
are withdrawn (:mod:`projector.server.refit`). Then every client is told
(:meth:`Forwarded.announce`): a ``subscriptions/listen`` event on the 2026-07-28 wire where the framework serves it
(MCPServer), and ``notifications/tools/list_changed`` (and the prompts' and resources') to each connection of an
earlier protocol version that has sent a request.

Framework-free: each adapter's ``forwarding_server`` puts :meth:`Forwarded.middleware` in its low-level server's
middleware, the layer that sees the wire form of each result.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import anyio
import mcp_types

MODERN = "2026-07-28"  # from this protocol version on, list changes are subscriptions/listen events
MAX_SESSIONS = 4096  # connections kept to be told of a change (the oldest are forgotten first)
TELL_TIMEOUT = 5.0  # seconds to tell one connection of a change; one that does not take it in time is forgotten


def wire(tool: Any) -> dict[str, Any]:
    """A tool (``mcp_types.Tool``) as its ``tools/list`` entry."""
    return tool.model_dump(by_alias=True, mode="json", exclude_none=True)


async def as_listed(remote: Any, tools: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """Each of ``tools`` (the upstream's listing as the ``mcp`` client's models read it) as the JSON the upstream
    sent, by name: ``tools/list`` asked again as raw JSON (each message bounded, within :data:`MAX_PAGES` pages and
    the :data:`SNAPSHOT_LIMIT` bytes of the models' listing), and an entry kept as it came when the models read it as
    the tool they have; else the models' entry. Never raises: the models' listing is already checked."""
    from ..remote.tools import MAX_PAGES
    from ..toolset import SNAPSHOT_LIMIT

    entries = {t.name: wire(t) for t in tools}
    raw: dict[str, dict[str, Any]] = {}
    cursor, kept = None, 0
    try:
        for _ in range(MAX_PAGES):
            page = await remote.request("tools/list", {"cursor": cursor} if cursor else {})
            for entry in page.get("tools") or ():
                if isinstance(entry, dict) and isinstance(entry.get("name"), str):
                    raw.setdefault(entry["name"], entry)
                    kept += len(json.dumps(entry))
            cursor = page.get("nextCursor")
            if cursor is None or kept > SNAPSHOT_LIMIT:
                break
    except Exception:  # the listing of the models stands
        return entries
    for name, entry in raw.items():
        try:
            if name in entries and wire(mcp_types.Tool.model_validate(entry)) == entries[name]:
                entries[name] = entry
        except ValueError:
            pass
    return entries


class Forwarded:
    """The upstream's tools as last listed, by name, in its order; and who to tell when they change."""

    def __init__(
        self,
        tools: Sequence[Any],
        call: Callable[[str, dict[str, Any]], Awaitable[Any]],
        gone: type,
        entries: Mapping[str, dict[str, Any]] | None = None,
    ):
        """``call(name, arguments)``: a ``tools/call`` upstream (its ``CallToolResult``); ``gone``: what it raises
        when the upstream cannot answer (a tool error for the client); ``entries``: :func:`as_listed`."""
        self.names = frozenset(t.name for t in tools)  # the forwarding tools the gateway's server was built with
        self.own: frozenset[str] = frozenset()  # the gateway's own tools (workflow and skill tools): set after attach
        self.call, self.gone = call, gone
        self.tools: dict[str, Any] = {}
        self.entries: dict[str, dict[str, Any]] = {}
        self.update(tools, entries)
        # a session of each connection, by its client's initialize params (one object per connection: a session is
        # made per request, and any of them can notify its connection), kept with them
        self._sessions: dict[int, tuple[Any, Any]] = {}
        self._publishers: list[Callable[[], Awaitable[None]]] = []

    def update(self, tools: Sequence[Any], entries: Mapping[str, dict[str, Any]] | None = None) -> bool:
        """Take the upstream's new listing (``entries``: each tool's JSON, :func:`as_listed`; by default the models'
        own); whether anything a client sees of it changed."""
        entries = {t.name: (entries or {}).get(t.name) or wire(t) for t in tools}
        changed = list(entries.items()) != list(self.entries.items())
        self.tools = {t.name: t for t in tools}  # a new mapping each time: refit caches on its identity
        self.entries = entries
        return changed

    def visible(self) -> frozenset[str]:
        return frozenset(self.tools)

    def publisher(self, publish: Callable[[], Awaitable[None]]) -> None:
        """Call ``publish()`` on each change (the framework's ``subscriptions/listen`` events)."""
        self._publishers.append(publish)

    def added(self, name: Any) -> bool:
        """Whether ``name`` is a tool the upstream listed after the gateway started, forwarded by the middleware."""
        return name in self.entries and name not in self.names and name not in self.own

    def listed(self, entries: list[Any], last: bool) -> list[Any]:
        """A page of the server's ``tools/list`` with each forwarded tool as the upstream lists it now, without those
        it no longer lists, and (on the ``last`` page) with those it listed since the gateway started."""
        out, seen = [], set()
        for entry in entries:
            name = entry.get("name") if isinstance(entry, dict) else None
            seen.add(name)
            if name not in self.names:
                out.append(entry)
            elif name in self.entries:
                out.append(dict(self.entries[name]))
        if last:
            out += [dict(e) for name, e in self.entries.items() if self.added(name) and name not in seen]
        return out

    async def forward(self, params: Any) -> dict[str, Any]:
        """A ``tools/call`` of a tool the upstream listed after the gateway started, sent upstream; its result as it
        came (an upstream's JSON-RPC error stays that error)."""
        arguments = params.get("arguments") if isinstance(params, Mapping) else None
        try:
            result = await self.call(params["name"], dict(arguments or {}))
        except self.gone as exc:
            result = mcp_types.CallToolResult(
                content=[mcp_types.TextContent(type="text", text=str(exc))], is_error=True
            )
        return wire(result)

    def middleware(self) -> Callable[..., Any]:
        """The low-level server middleware (``async (ctx, call_next)``) that serves :meth:`listed` on the wire and
        remembers each connection of an earlier protocol version, to tell it of changes."""

        async def forwarded_as_listed(ctx: Any, call_next: Any) -> Any:
            version = getattr(ctx, "protocol_version", MODERN)
            if isinstance(version, str) and version < MODERN and getattr(ctx, "session", None) is not None:
                self._remember(ctx.session)
            params = ctx.params if isinstance(ctx.params, Mapping) else {}
            if ctx.method == "tools/call" and self.added(params.get("name")):
                return await self.forward(params)
            result = await call_next(ctx)
            if ctx.method != "tools/list":
                return result
            if hasattr(result, "model_dump"):
                result = result.model_dump(by_alias=True, mode="json", exclude_none=True)
            if not isinstance(result, Mapping) or not isinstance(result.get("tools"), list):
                return result
            return {**result, "tools": self.listed(result["tools"], result.get("nextCursor") is None)}

        return forwarded_as_listed

    def _remember(self, session: Any) -> None:
        connection = getattr(session, "client_params", None)
        if connection is None or id(connection) in self._sessions:
            return
        if len(self._sessions) >= MAX_SESSIONS:
            self._sessions.pop(next(iter(self._sessions)))
        self._sessions[id(connection)] = (connection, session)

    async def announce(self) -> None:
        """Tell every client that the tools changed, and the prompts and resources with them (a workflow withdrawn
        or back takes its prompts, its tool and its skill's files). A connection that has closed is forgotten."""
        for publish in self._publishers:
            try:
                await publish()
            except Exception:  # nobody listening, or a listener gone: the next listing shows the change
                pass
        for key, (_, session) in list(self._sessions.items()):
            told = False
            with anyio.move_on_after(TELL_TIMEOUT):
                try:
                    await session.send_tool_list_changed()
                    await session.send_prompt_list_changed()
                    await session.send_resource_list_changed()
                    told = True
                except Exception:  # a closed connection
                    pass
            if not told:
                self._sessions.pop(key, None)
