"""The handshake-era twin of ``hiding_upstream.py``, on ``mcp`` 1.x (run by the Python of the reference SQLite
server's virtual environment, which scripts/conformance.py installs): ``greet``, ``issue_refund``, and
``hide(name)`` / ``show(name)``, which take a tool out of ``tools/list`` or put it back and send
``notifications/tools/list_changed``."""

from __future__ import annotations

from mcp.server.fastmcp import Context, FastMCP

server = FastMCP("hiding-upstream-v1")
hidden: dict[str, object] = {}


@server.tool(description="Return a friendly greeting for a name.")
def greet(name: str) -> str:
    return f"Hello, {name}!"


@server.tool(description="Refund an order to the original payment method.")
def issue_refund(order_id: str, amount: float) -> dict:
    return {"order_id": order_id, "refunded": amount}


@server.tool(description="Take a tool out of tools/list.")
async def hide(name: str, ctx: Context) -> str:
    tools = server._tool_manager._tools  # mcp 1.x has no public way to take a tool out and put it back
    if name in tools:
        hidden[name] = tools.pop(name)
    await ctx.session.send_tool_list_changed()
    return f"hidden {name}"


@server.tool(description="Put a hidden tool back in tools/list.")
async def show(name: str, ctx: Context) -> str:
    if name in hidden:
        server._tool_manager._tools[name] = hidden.pop(name)
    await ctx.session.send_tool_list_changed()
    return f"shown {name}"


if __name__ == "__main__":
    server.run("stdio")
