"""A workflow tool's refusals on FastMCP: a protocol error stays one, as on ``MCPServer`` and as for the prompt.

The runner refuses a ``tools/call`` retry with an ``MCPError``: -32602 for a yes given before (its token already
claimed in the replay guard), or for a state that does not fit the workflow; -32603 when the guard cannot be used.
On ``MCPServer`` that error reaches the client as it is. FastMCP flattens every exception a tool raises into an
``isError`` result, which a client reads as the tool having run and failed, and a model may retry; so the workflow
tool raises :class:`Refused` instead (a ``FastMCPError``, which FastMCP passes up unmasked), and
:class:`RefusalsMiddleware`, outside the tool's own error handling, raises the runner's ``MCPError`` again, which
the transport sends as the protocol error it is. Arguments that do not fit stay a tool error (``ToolError``), for
the model to correct.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from fastmcp import FastMCP
from fastmcp.exceptions import FastMCPError, ToolError
from fastmcp.server.middleware import Middleware
from mcp.shared.exceptions import MCPError

from .. import confirm
from ..workflow import WorkflowHost
from ..workflow_tool import BadArguments, Outcome, call_workflow


class Refused(FastMCPError):
    """The runner's protocol error, carried through FastMCP's tool error handling."""

    def __init__(self, error: MCPError):
        super().__init__(error.error.message, log_level=logging.INFO)
        self.error = error


class RefusalsMiddleware(Middleware):
    """Raises a workflow tool's :class:`Refused` as the ``MCPError`` it carries."""

    async def on_call_tool(self, context: Any, call_next: Any) -> Any:
        try:
            return await call_next(context)
        except Refused as exc:
            raise exc.error from None


def install(server: FastMCP) -> None:
    """Add :class:`RefusalsMiddleware` to ``server``, once, outermost."""
    if not any(isinstance(m, RefusalsMiddleware) for m in server.middleware):
        server.middleware.insert(0, RefusalsMiddleware())


async def call(
    wf: Any, arguments: Mapping[str, Any] | None, host: WorkflowHost, round: confirm.Round
) -> Outcome | confirm.Asking:
    """:func:`~projector.server.workflow_tool.call_workflow`, its bad arguments a ``ToolError`` and its protocol
    errors :class:`Refused`."""
    try:
        return await call_workflow(wf, arguments, host, round)
    except BadArguments as exc:
        raise ToolError(str(exc)) from None
    except MCPError as exc:
        raise Refused(exc) from None
