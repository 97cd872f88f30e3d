"""`contains` on the server (issue 42, item 3): a workflow attached to an `MCPServer`, run by a client through its
workflow prompt. The server's tool returns text with a trailing newline, as a file's contents do; `equals: ready`
never holds on it, `contains: ready` does."""

from __future__ import annotations

from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from projector.server import AttachError, attach

FLOW = """\
name: publish
description: Publish the draft once its status file says ready.
arguments:
  - {{name: draft, required: true}}
  - {{name: count, type: integer}}
steps:
  - {{name: status, tool: read_status, args: {{path: {{const: status.txt}}}}, bind: status}}
  - name: publish
    tool: publish
    args: {{draft: {{arg: draft}}}}
    when: {when}
"""


def files(status: str) -> tuple[MCPServer, list[str]]:
    """A server whose status file says ``status`` (text: no output schema) and whose `publish` changes the world."""
    published: list[str] = []
    server = MCPServer("files")

    def read_status(path: str) -> str:
        return status

    def publish(draft: str) -> str:
        published.append(draft)
        return "published"

    server.add_tool(read_status, annotations=types.ToolAnnotations(read_only_hint=True), structured_output=False)
    server.add_tool(publish, annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=False))
    return server, published


def flow(tmp_path: Path, when: str) -> Path:
    path = tmp_path / "publish.yaml"
    path.write_text(FLOW.format(when=when), "utf-8")
    return path


async def run(server: MCPServer) -> str:
    async with Client(server) as client:
        result = await client.get_prompt("publish", {"draft": "post.md"})
    return result.messages[-1].content.text


@pytest.mark.anyio
@pytest.mark.parametrize(("status", "ran"), [("ready\n", True), ("status: ready\n", True), ("waiting\n", False)])
async def test_contains_gates_a_side_effect_on_a_text_result(tmp_path, status, ran):
    server, published = files(status)
    attach(server, None, [flow(tmp_path, "{step: status, contains: ready}")])
    last = await run(server)
    assert (published == ["post.md"]) is ran, last
    if not ran:
        assert '`status` is `"waiting\\n"`, the step needs it to contain `"ready"`' in last, last


@pytest.mark.anyio
async def test_not_contains_stops_on_the_word_and_equals_never_holds_on_the_newline(tmp_path):
    server, published = files("error: disk full\n")
    attach(server, None, [flow(tmp_path, "{step: status, not_contains: error}")])
    assert 'the step needs it not to contain `"error"`' in await run(server)
    assert published == []
    server, published = files("ready\n")
    attach(server, None, [flow(tmp_path, "{step: status, equals: ready}")])
    await run(server)
    assert published == []  # the trap, which contains avoids


def test_attach_refuses_contains_on_a_number_before_a_side_effect(tmp_path):
    """`contains` on an integer argument never holds: like any dead gate before a side effect, refused at attach."""
    server, _ = files("ready\n")
    with pytest.raises(AttachError) as caught:
        attach(server, None, [flow(tmp_path, "{arg: count, contains: 1}")])
    msg = str(caught.value)
    assert "error[dead-condition]" in msg and "an integer contains nothing" in msg
    assert "acknowledge: {dead-condition: why}" in msg
