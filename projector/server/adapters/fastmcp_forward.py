"""The gateway's server on FastMCP: one forwarding tool per upstream tool (:mod:`projector.server.gateway`).

Apart from :mod:`projector.server.adapters.fastmcp` so that module stays within the house's size; like it, only
imported when FastMCP is the framework.

FastMCP renders a tool its own way on the wire (a default ``title``, ``_meta.fastmcp.tags``, its own ``execution``),
so the gateway's wire middleware (:class:`projector.server.forwarded.Forwarded`) sits in FastMCP's low-level server,
the one layer that sees the wire form of ``tools/list``; FastMCP's own middleware leaves out the tools the upstream no
longer lists, for the listings FastMCP makes itself (the skills bound to their tools ask it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def forwarding_server(
    name: str,
    tools: Sequence[Any],
    forward: Callable[[str, dict[str, Any]], Any],
    gone: type[Exception],
    listed: Any = None,
) -> Any:
    """A ``fastmcp.FastMCP`` with one forwarding tool per upstream tool, listed as ``listed``
    (:class:`~projector.server.forwarded.Forwarded`) has them."""
    from fastmcp import FastMCP
    from fastmcp.exceptions import ToolError
    from fastmcp.server.middleware import Middleware
    from fastmcp.tools import Tool, ToolResult

    class ForwardingTool(Tool):
        async def run(self, arguments: dict[str, Any]) -> ToolResult:  # type: ignore[override]
            try:
                result = await forward(self.name, arguments)
            except gone as exc:
                raise ToolError(str(exc)) from None
            return ToolResult(
                content=result.content,
                structured_content=result.structured_content,
                meta=result.meta,
                is_error=bool(result.is_error),
            )

    forwarded = frozenset(t.name for t in tools)

    class ListedOnly(Middleware):
        async def on_list_tools(self, context: Any, call_next: Any) -> Any:
            shown = await call_next(context)
            now = upstream.visible()
            return [t for t in shown if t.name not in forwarded or t.name in now]

    upstream = listed
    server = FastMCP(name)
    if upstream is not None:
        server.add_middleware(ListedOnly())
        # FastMCP keeps its low-level server private; its middleware list is the SDK's public one (outermost: the
        # last word on the wire form)
        server._mcp_server.middleware.insert(0, upstream.middleware())
    for t in tools:
        server.add_tool(
            ForwardingTool(
                name=t.name,
                title=t.title,
                description=t.description,
                parameters=t.input_schema,
                output_schema=t.output_schema,
                annotations=t.annotations,
                icons=t.icons,
                meta=t.meta,
            )
        )
    return server
