"""The gateway's server on FastMCP: one forwarding tool per upstream tool (:mod:`projector.server.gateway`).

Apart from :mod:`projector.server.adapters.fastmcp` so that module stays within the house's size; like it, only
imported when FastMCP is the framework.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def forwarding_server(
    name: str,
    tools: Sequence[Any],
    forward: Callable[[str, dict[str, Any]], Any],
    gone: type[Exception],
    visible: Callable[[], Any] | None = None,
) -> Any:
    """A ``fastmcp.FastMCP`` with one forwarding tool per upstream tool, and a middleware that lists only those
    ``visible()`` names."""
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
            listed = await call_next(context)
            now = visible() if visible is not None else None
            return listed if now is None else [t for t in listed if t.name not in forwarded or t.name in now]

    server = FastMCP(name)
    if visible is not None:
        server.add_middleware(ListedOnly())
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
