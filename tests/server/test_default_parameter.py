"""One answer on both surfaces: an optional input that feeds a tool parameter with a ``default`` is left out when the
user gave none, by the server-side workflow prompt and by a model that follows the SKILL.md.

The server side runs through a real in-memory client on an ``MCPServer`` whose tool records what it receives. The
skill side reads the rendered SKILL.md's argument list and follows it as a model would: it sends a given input, and
leaves out an argument whose instruction says to leave it out. Both must send the tool the same arguments.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

from projector.builder import WorkflowBuilder, arg
from projector.render import project
from projector.server import attach

# One argument line of a step in SKILL.md: "- `key`: description".
ARG_LINE = re.compile(r"^- `([^`]+)`: (.*)$")
LEAVE_OUT = re.compile(r"^the input `([^`]+)`; if the user gave none, leave it out \(the tool uses `([^`]*)`\)$")
GIVEN = re.compile(r"^the input `([^`]+)`$")


def _server() -> tuple[MCPServer, list[dict[str, Any]]]:
    server = MCPServer("diffs")
    calls: list[dict[str, Any]] = []

    @server.tool(description="Show the staged diff.", annotations=ToolAnnotations(read_only_hint=True))
    def diff_staged(repo_path: str, context_lines: int = 3) -> str:
        calls.append({"repo_path": repo_path, "context_lines": context_lines})
        return "diff"

    return server, calls


async def _workflow(server: MCPServer):
    listed = {t.name: t for t in await server.list_tools()}["diff_staged"]
    assert listed.input_schema["properties"]["context_lines"]["default"] == 3  # the tool's own schema says so
    return (WorkflowBuilder("review_staged", "Review the staged changes.")
            .argument("repo_path", "The repository", required=True, type="string")
            .argument("context_lines", "Lines of context", type="integer")
            .tool("diff_staged", listed.description or "", input_schema=listed.input_schema,
                  annotations={"readOnlyHint": True})
            .step("diff", tool="diff_staged", args={"repo_path": arg("repo_path"),
                                                    "context_lines": arg("context_lines")}, bind="diff")
            .build())


def _skill_arguments(skill_md: str, given: dict[str, Any]) -> dict[str, Any]:
    """What a model following the SKILL.md's argument list sends, for the user's ``given`` inputs; an instruction
    this follower does not understand fails the test (it would have to invent a value)."""
    sent: dict[str, Any] = {}
    lines = [m.groups() for m in map(ARG_LINE.match, skill_md.splitlines()) if m]
    assert lines, skill_md
    for key, how in lines:
        leave = LEAVE_OUT.match(how)
        name = (leave or GIVEN.match(how) or pytest.fail(f"`{key}`: no value the follower can take: {how}")).group(1)
        if name in given:
            sent[key] = given[name]
        elif leave is None:
            pytest.fail(f"`{key}`: the input `{name}` was not given and the skill does not say to leave it out")
    return sent


@pytest.mark.anyio
@pytest.mark.parametrize("given", [{"repo_path": "/r"}, {"repo_path": "/r", "context_lines": 7}],
                         ids=["left-out", "given"])
async def test_an_optional_input_with_a_tool_default_gets_the_same_arguments_on_both_surfaces(given):
    server, calls = _server()
    wf = await _workflow(server)
    attach(server, None, [wf])
    async with Client(server) as client:
        result = await client.get_prompt("review_staged", {k: str(v) for k, v in given.items()})
    assert result.messages[-1].content.text.startswith("Done: all 1 step")
    skill_md = project(wf).files["SKILL.md"].decode("utf-8")
    assert "- `context_lines`: the input `context_lines`; if the user gave none, leave it out (the tool uses `3`)" \
        in skill_md
    # The tool sees its default when the argument is left out, so "the same arguments" is what was sent: the server
    # run leaves it out exactly when the skill says to.
    server_sent = {k: v for k, v in calls[0].items() if k in given}
    assert calls == [{"repo_path": "/r", "context_lines": given.get("context_lines", 3)}]
    assert _skill_arguments(skill_md, given) == server_sent == given


def test_the_skill_shows_the_default_as_json_and_only_for_an_optional_parameter():
    schema = {"type": "object", "required": ["mode"],
              "properties": {"mode": {"type": "string", "default": "fast"},
                             "label": {"type": "string", "default": "a \"b\""},
                             "depth": {"type": "integer"}}}
    wf = (WorkflowBuilder("defaults", "Defaults.")
          .argument("mode", type="string").argument("label", type="string").argument("depth", type="integer")
          .tool("t", "A tool.", input_schema=schema, annotations={"readOnlyHint": True})
          .step("s", tool="t", args={"mode": arg("mode"), "label": arg("label"), "depth": arg("depth")})
          .build())
    md = project(wf).files["SKILL.md"].decode("utf-8")
    assert '- `label`: the input `label`; if the user gave none, leave it out (the tool uses `"a \\"b\\""`)' in md
    # required by the tool: the server hands over, so there is nothing to leave out; no default: unchanged.
    assert "- `mode`: the input `mode`; if the user gave none, a value you work out yourself" in md
    assert "- `depth`: the input `depth`; if the user gave none, a value you work out yourself" in md
