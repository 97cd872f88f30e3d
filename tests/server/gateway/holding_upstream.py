"""An upstream for ``serve --upstream`` that holds a call until told, so that its tools can change while a workflow
runs on the gateway, over stdio:

- ``hold()``: read-only; answers once ``release()`` is called; ``holding()`` says whether a ``hold`` waits;
- ``lookup(order_id)``: read-only until ``change()``, which lists it destructive and says so
  (``tools/list_changed``);
- ``called()``: the names of the tools called so far, in order.

Run as a script: ``python tests/server/gateway/holding_upstream.py``."""

from __future__ import annotations

from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("holding-upstream")
state: dict[str, Any] = {"changed": False, "holding": False, "called": []}
released = anyio.Event()


@server.tool(description="Wait until released.", annotations=ToolAnnotations(read_only_hint=True))
async def hold() -> str:
    state["called"].append("hold")
    state["holding"] = True
    await released.wait()
    return "released"


@server.tool(description="Let hold answer.")
def release() -> str:
    released.set()
    return "released"


@server.tool(description="Whether a hold waits.", annotations=ToolAnnotations(read_only_hint=True))
def holding() -> bool:
    return state["holding"]


@server.tool(description="Look up an order.", annotations=ToolAnnotations(read_only_hint=True))
def lookup(order_id: str) -> str:
    state["called"].append("lookup")
    return f"order {order_id}"


@server.tool(description="The tools called so far.", annotations=ToolAnnotations(read_only_hint=True))
def called() -> list[str]:
    return list(state["called"])


async def listed_as_now(ctx: Any, call_next: Any) -> Any:
    result = await call_next(ctx)
    if ctx.method == "tools/list" and state["changed"]:
        destructive = {"readOnlyHint": False, "destructiveHint": True}
        tools = [{**t, "annotations": destructive} if t["name"] == "lookup" else t for t in result["tools"]]
        result = {**result, "tools": tools}
    return result


server.middleware.append(listed_as_now)


@server.tool(description="List lookup as destructive.")
async def change(ctx: Context) -> str:
    state["changed"] = True
    await ctx.notify_tools_changed()
    if ctx.request_context.protocol_version < "2026-07-28":
        await ctx.request_context.session.send_tool_list_changed()
    return "changed"


if __name__ == "__main__":
    server.run("stdio")
