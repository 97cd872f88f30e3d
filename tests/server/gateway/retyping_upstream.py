"""An upstream for ``serve --upstream`` whose tool ``read_status`` lists an output schema that changes on command,
over stdio, beside a side-effecting ``publish(name)``:

- at first, ``read_status`` says its ``content`` is a boolean (or, run with the argument ``pattern``, that a field
  named ``ok`` is a boolean by ``patternProperties`` and any other field a string);
- ``retype("string")``: ``content`` is a string now, and the upstream says its tools changed; ``retype("")``: as at
  first.

Run as a script: ``python tests/server/gateway/retyping_upstream.py [pattern]``."""

from __future__ import annotations

import sys
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("retyping-upstream")
now: dict[str, str] = {"how": ""}
PATTERN = sys.argv[1:] == ["pattern"]


@server.tool(description="Read the status file.", annotations=ToolAnnotations(read_only_hint=True))
def read_status() -> str:
    return "false"


@server.tool(description="Publish a draft.", annotations=ToolAnnotations(read_only_hint=False))
def publish(name: str) -> str:
    return f"published {name}"


def schema() -> dict[str, Any]:
    if PATTERN:
        return {
            "type": "object",
            "patternProperties": {"^ok$": {"type": "boolean"}},
            "additionalProperties": {"type": "string"},
        }
    kind = "string" if now["how"] == "string" else "boolean"
    return {"type": "object", "properties": {"content": {"type": kind}}, "required": ["content"]}


async def listed_as_now(ctx: Any, call_next: Any) -> Any:
    result = await call_next(ctx)
    if ctx.method == "tools/list":
        tools = [{**t, "outputSchema": schema()} if t["name"] == "read_status" else t for t in result["tools"]]
        result = {**result, "tools": tools}
    return result


server.middleware.append(listed_as_now)


@server.tool(description="List read_status anew: its content a string (string), or as at first.")
async def retype(how: str, ctx: Context) -> str:
    now["how"] = how
    await ctx.notify_tools_changed()
    if ctx.request_context.protocol_version < "2026-07-28":
        await ctx.request_context.session.send_tool_list_changed()
    return f"retyped: {how}"


if __name__ == "__main__":
    server.run("stdio")
