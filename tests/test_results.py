"""One meaning for a text result (projector.results): a tool that declares no output schema returns text, read as
JSON when the whole text is JSON, whether the server sends only text or structured content that wraps it.

Driven through real servers and the public ``Client``: ``MCPServer`` with ``structured_output=False`` (text only,
no output schema) and with a ``-> str`` return (``{"result": text}`` under a generated wrapper schema), and FastMCP
both ways. The same condition must give the same answer on all of them."""

from __future__ import annotations

from typing import Annotated

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from pydantic import Field

from projector.builder import WorkflowBuilder, condition, step
from projector.server import attach

TEXT = "[]"  # what mcp-server-sqlite answers for a query with no rows


def _workflow(acknowledge=None, **operator):
    return (WorkflowBuilder("orders_flow", "Close the day when no order is open.")
            .tool("open_orders").tool("close_day")
            .step("find", tool="open_orders", bind="orders")
            .step("close", tool="close_day", when=condition(step("orders"), **operator), bind="closed",
                  acknowledge=acknowledge)
            .build())


def _mcp(structured: bool) -> MCPServer:
    server = MCPServer("orders")

    @server.tool(structured_output=structured, annotations={"readOnlyHint": True})
    def open_orders() -> str:
        return TEXT

    @server.tool(structured_output=False)
    def close_day() -> str:
        return "closed"

    return server


def _fastmcp(structured: bool):
    from fastmcp import FastMCP

    server = FastMCP("orders")

    @server.tool(output_schema=None if not structured else ..., annotations={"readOnlyHint": True})
    def open_orders() -> str:
        return TEXT

    @server.tool(output_schema=None)
    def close_day() -> str:
        return "closed"

    return server


SERVERS = {"mcp-text": lambda: _mcp(False), "mcp-wrapped": lambda: _mcp(True),
           "fastmcp-text": lambda: _fastmcp(False), "fastmcp-wrapped": lambda: _fastmcp(True)}


async def _run(server, wf) -> tuple[str, str]:
    """(how the tool's output schema was listed, the transcript's last message)."""
    attach(server, None, [wf])
    if isinstance(server, MCPServer):
        client = Client(server)
    else:
        from fastmcp import Client as FastMCPClient

        client = FastMCPClient(server)
    async with client:
        listed = {t.name: t.output_schema for t in (await client.session.list_tools()).tools}
        result = await client.session.get_prompt("orders_flow", {})
    return ("wrapped" if listed["open_orders"] else "text"), result.messages[-1].content.text


@pytest.mark.anyio
@pytest.mark.parametrize("kind", SERVERS)
async def test_the_same_condition_gives_the_same_answer_on_every_server(kind):
    sent, last = await _run(SERVERS[kind](), _workflow(equals=[]))
    assert sent == kind.split("-")[1]  # the server really sent the result that way
    assert last.startswith("Done: all 2 steps"), last  # the text [] is the empty list, on every server
    sent, last = await _run(SERVERS[kind](), _workflow(not_equals=[]))
    assert "`orders` is `[]`, the step needs anything but `[]`" in last, last


@pytest.mark.anyio
@pytest.mark.parametrize("kind", SERVERS)
async def test_a_string_that_looks_like_json_never_equals_a_text_result(kind):
    """The issue's case: `not_equals: "[]"` compares the list [] with a string, so it holds on every server (and the
    build warns at the operand: tests/bad_inputs/dead-condition-json-text.yaml). Before a side effect, attach
    refuses such a gate (issue 38) unless the step acknowledges it; acknowledged, it runs as written."""
    from projector.server import AttachError

    with pytest.raises(AttachError, match=r"error\[dead-condition\]"):
        attach(SERVERS[kind](), None, [_workflow(not_equals="[]")])
    ack = {"dead-condition": "close_day refuses itself while an order is open"}
    _sent, last = await _run(SERVERS[kind](), _workflow(ack, not_equals="[]"))
    assert last.startswith("Done: all 2 steps"), last


def test_the_rule_reads_json_text_as_json_and_other_text_as_itself():
    from projector.results import saved_value

    assert saved_value(None, ["[]"], [], None) == []
    assert saved_value({"result": "[]"}, ["[]"], [], {"type": "object", "properties": {"result": {"type": "string"}},
                                                      "required": ["result"]}) == []
    assert saved_value(None, ["no rows"], [], None) == "no rows"
    assert saved_value(None, ["NaN"], [], None) == "NaN"  # not JSON: the text itself
    assert saved_value(None, ["[" * 100 + "]" * 100], [], None) == "[" * 100 + "]" * 100  # past the depth bound


def _refund_server(text: str, refunded: list) -> MCPServer:
    server = MCPServer("refunds")

    @server.tool(structured_output=False, annotations={"readOnlyHint": True})
    def quote() -> str:
        return text

    @server.tool(structured_output=False)
    def refund(amount: Annotated[float, Field(le=500, strict=True)]) -> str:  # strict: pydantic's lax mode reads
        # the string "-1e999" as a float itself
        refunded.append(amount)
        return "refunded"

    return server


@pytest.mark.anyio
async def test_a_text_too_large_to_be_a_finite_number_stays_text():
    """Review of wave 2: the text ``-1e999`` was read as minus infinity, so it passed the next tool's ``amount <= 500``
    and a refund ran with it, although a prompt argument refuses a number that is not finite. It is the text itself
    (the string ``"-1e999"``), so the run refuses the refund's arguments by the tool's own schema before calling it
    (issue 38) and nothing is refunded; ``-12.5`` is still the number."""
    wf = (WorkflowBuilder("refund_flow", "Refund the quoted amount.").tool("quote").tool("refund")
          .step("quote", tool="quote", bind="amount")
          .step("pay", tool="refund", args={"amount": step("amount")}, bind="paid").build())
    for text, expected in (("-1e999", []), ("-12.5", [-12.5])):
        refunded: list = []
        server = _refund_server(text, refunded)
        attach(server, None, [wf])
        async with Client(server) as client:
            result = await client.session.get_prompt("refund_flow", {})
        said = "\n".join(m.content.text for m in result.messages)
        assert refunded == expected, said
        assert "Infinity" not in said
        assert ("`amount`: '-1e999' is not of type 'number'" in said) == (text == "-1e999"), said


def test_structured_content_with_a_number_too_large_is_read_from_its_text():
    """JSON's ``1e999`` in structured content reaches a client as infinity (``mcp``'s reader, like every other): the
    step reads the result's text content instead, where the same rule leaves it as text."""
    from projector.results import saved_value

    assert saved_value({"amount": float("-inf")}, ['{"amount": -1e999}'], [], None) == '{"amount": -1e999}'
    assert saved_value({"amount": float("-inf")}, [], [], None) == "<structured content with a number too large to read>"
    assert saved_value({"amount": -12.5}, ['{"amount": -12.5}'], [], None) == {"amount": -12.5}
    assert saved_value(None, ["1e999"], [], None) == "1e999"
