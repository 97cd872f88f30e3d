"""An upstream for ``serve --upstream`` whose tool list changes on command, over stdio: the demo's tools, and
``hide(name)`` / ``show(name)``, which take a tool out of ``tools/list`` or put it back and say so
(``tools/list_changed``: a ``subscriptions/listen`` event on the 2026-07-28 wire, a notification before it).

Run as a script: ``python tests/server/gateway/hiding_upstream.py``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # a stdio server does not inherit PYTHONPATH

from mcp.server.mcpserver import Context, MCPServer  # noqa: E402

from projector.server.demo import add_demo_tools  # noqa: E402

server = MCPServer("hiding-upstream")
add_demo_tools(server)
hidden: set[str] = set()


async def not_listed(ctx: Any, call_next: Any) -> Any:
    result = await call_next(ctx)
    if ctx.method == "tools/list" and hidden:
        result = {**result, "tools": [t for t in result["tools"] if t["name"] not in hidden]}
    return result


server.middleware.append(not_listed)


async def changed(ctx: Context) -> None:
    await ctx.notify_tools_changed()
    if ctx.request_context.protocol_version < "2026-07-28":
        await ctx.request_context.session.send_tool_list_changed()


@server.tool(description="Take a tool out of tools/list.")
async def hide(name: str, ctx: Context) -> str:
    hidden.add(name)
    await changed(ctx)
    return f"hidden {name}"


@server.tool(description="Put a hidden tool back in tools/list.")
async def show(name: str, ctx: Context) -> str:
    hidden.discard(name)
    await changed(ctx)
    return f"shown {name}"


if __name__ == "__main__":
    server.run("stdio")
