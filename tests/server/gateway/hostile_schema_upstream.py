"""An upstream for ``serve --upstream`` that lists its tool ``find(q)`` with a hostile input schema, over stdio (the
upstream itself checks ``q`` as a plain string):

- run with ``branches``: ``q`` is a ``$ref`` to thirty levels of ``anyOf`` whose two branches refer to the next level,
  ending in an integer: a string meets 2**30 paths before it fails;
- run with ``pattern``: ``q`` must match ``(a|b)*`` written two thousand times over.

Run as a script: ``python tests/server/gateway/hostile_schema_upstream.py branches|pattern``."""

from __future__ import annotations

import sys
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("hostile-schema-upstream")
HOW = sys.argv[1] if len(sys.argv) > 1 else "branches"


@server.tool(description="Find something.", annotations=ToolAnnotations(read_only_hint=True))
def find(q: str) -> str:
    return f"found {len(q)}"


def schema() -> dict[str, Any]:
    if HOW == "pattern":
        return {"type": "object", "properties": {"q": {"type": "string", "pattern": "(a|b)*" * 2000}}}
    levels = {f"n{i}": {"anyOf": [{"$ref": f"#/$defs/n{i + 1}"}, {"$ref": f"#/$defs/n{i + 1}"}]} for i in range(30)}
    return {
        "type": "object",
        "properties": {"q": {"$ref": "#/$defs/n0"}},
        "required": ["q"],
        "$defs": {**levels, "n30": {"type": "integer"}},
    }


async def listed_as_hostile(ctx: Any, call_next: Any) -> Any:
    result = await call_next(ctx)
    if ctx.method == "tools/list":
        result = {
            **result,
            "tools": [{**t, "inputSchema": schema()} if t["name"] == "find" else t for t in result["tools"]],
        }
    return result


server.middleware.append(listed_as_hostile)

if __name__ == "__main__":
    server.run("stdio")
