"""The Python builder: tools from a server or a tools snapshot (``WorkflowBuilder.tools_from``, the same code as
``--tools-from``), and diagnostics at the caller's ``file:line:col`` (the first frame outside projector/)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import ROOT
from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

from projector import builder, model
from projector.builder import WorkflowBuilder, arg, condition, step
from projector.errors import LoadError
from projector.load import load_data, load_file
from projector.remote.tools import apply_tools_from, snapshot_bytes
from projector.render import project

HERE = Path(__file__).resolve()
SHOWN = HERE.relative_to(Path.cwd()).as_posix() if HERE.is_relative_to(Path.cwd()) else HERE.as_posix()

COUNT = {
    "name": "count",
    "description": "Count the letters of a word.",
    "inputSchema": {
        "type": "object",
        "properties": {"word": {"type": "string"}, "times": {"type": "integer"}},
        "required": ["word"],
    },
    "annotations": {"readOnlyHint": True},
}
SHOUT = {
    "name": "shout",
    "description": "Shout a word.",
    "inputSchema": {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]},
    "annotations": {"readOnlyHint": True},
}

YAML = """\
name: counting
description: Count things.
arguments:
  - {name: word, description: What to count, required: true, type: string}
steps:
  - name: count
    tool: count
    args: {word: {arg: word}}
    bind: n
"""


def line_of(marker: str) -> int:
    """The line of this file that holds ``marker`` (and is not this call)."""
    lines = HERE.read_text("utf-8").splitlines()
    found = [i for i, text in enumerate(lines, 1) if marker in text and "line_of(" not in text]
    assert len(found) == 1, (marker, found)
    return found[0]


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    path = tmp_path / "tools.json"
    path.write_bytes(snapshot_bytes([SHOUT, COUNT]))
    return path


def counting(source) -> WorkflowBuilder:
    return (
        WorkflowBuilder("counting", "Count things.")
        .tools_from(source)
        .argument("word", "What to count", required=True, type="string")
        .step("count", tool="count", args={"word": arg("word")}, bind="n")
    )


# ------------------------------------------------------------------------------------------------- tools_from


def test_tools_from_a_snapshot_projects_the_bytes_of_tools_from_on_the_command_line(snapshot: Path):
    wf = counting(str(snapshot)).build()
    assert [(t.name, t.description, t.input_schema) for t in wf.tools] == [
        ("count", COUNT["description"], COUNT["inputSchema"])
    ]
    # the same workflow as YAML with --tools-from the same snapshot: the same bytes
    [from_yaml], _ = apply_tools_from(
        [load_data(YAML.encode(), "counting.yaml", tools_from_server=True)], str(snapshot)
    )
    assert project(wf).files == project(from_yaml).files
    assert counting(snapshot).build().tools == wf.tools  # a Path works too


def test_tools_from_a_parsed_listing(snapshot: Path):
    listing = json.loads(snapshot.read_text("utf-8"))
    wf = counting(listing).build()
    assert project(wf).files == project(counting(str(snapshot)).build()).files
    assert counting(listing["tools"]).build().tools == wf.tools  # the list alone


def counting_server() -> MCPServer:
    server = MCPServer("counting")

    async def count(word: str, times: int = 1) -> int:
        return len(word) * times

    server.add_tool(
        count,
        name="count",
        description="Count the letters of a word.",
        annotations=ToolAnnotations(read_only_hint=True),
    )
    return server


def test_tools_from_a_live_server_goes_through_the_snapshot_reader():
    wf = counting(counting_server()).build()
    [tool] = wf.tools
    assert tool.description == "Count the letters of a word." and tool.annotations == {"readOnlyHint": True}
    assert tool.input_schema["properties"]["times"]["default"] == 1


@pytest.mark.slow
def test_tools_from_a_stdio_server_spec():
    server = (
        f"{sys.executable} -c \"from mcp.server.mcpserver import MCPServer; s = MCPServer('c'); "
        f"s.add_tool(lambda word: len(word), name='count', description='Count.'); s.run()\""
    )
    [tool] = counting(server).build().tools
    assert tool.name == "count" and tool.input_schema["required"] == ["word"]


def test_drift_from_the_source_is_a_warning_at_the_declaring_call(snapshot: Path):
    b = (
        WorkflowBuilder("counting", "Count things.")
        .tools_from(snapshot)
        .tool("count", "Count the words of a text.")  # declared-differently
        .argument("word", "What to count", required=True, type="string")
        .step("count", tool="count", args={"word": arg("word")})
    )
    b.build()
    [d] = [d for d in b.diagnostics if d.code == "tool-mismatch"]
    assert (d.span.file, d.span.line) == (SHOWN, line_of("# declared-differently"))
    assert "description differs" in d.message and "the snapshot" in d.message


def test_a_tool_the_source_lacks_is_unknown_at_the_step_call(snapshot: Path):
    b = WorkflowBuilder("counting", "Count things.").tools_from(snapshot)
    b = b.step("whisper", tool="whisper")  # calls-whisper
    with pytest.raises(LoadError) as err:
        b.build()
    [d] = err.value.diagnostics
    assert d.code == "unknown-tool" and (d.span.file, d.span.line) == (SHOWN, line_of("# calls-whisper"))
    assert "count, shout" in (d.hint or "")


def test_a_bad_snapshot_is_refused_where_it_is_wrong(tmp_path: Path):
    bad = tmp_path / "tools.json"
    bad.write_text('{"tools": [\n  {"name": "x"}\n]}\n', "utf-8")
    with pytest.raises(LoadError) as err:
        WorkflowBuilder("w", "W.").tools_from(bad)
    [d] = err.value.diagnostics
    assert d.code == "bad-snapshot" and str(d.span) == f"{bad.as_posix()}:2:3" and "inputSchema" in d.message
    with pytest.raises(LoadError) as err:
        WorkflowBuilder("w", "W.").tools_from(tmp_path / "missing.json")
    assert err.value.diagnostics[0].code == "io"


def test_a_bad_listing_is_refused_at_the_tools_from_call():
    with pytest.raises(LoadError) as err:
        WorkflowBuilder("w", "W.").tools_from({"tools": [{"name": "x", "inputSchema": []}]})  # bad-listing
    [d] = err.value.diagnostics
    assert d.code == "bad-snapshot" and "'inputSchema' must be an object" in d.message
    assert (d.span.file, d.span.line) == (SHOWN, line_of("# bad-listing"))
    with pytest.raises(LoadError) as err:
        WorkflowBuilder("w", "W.").tools_from([object()])  # not-a-tool
    assert err.value.diagnostics[0].code == "bad-snapshot"
    assert err.value.diagnostics[0].span.line == line_of("# not-a-tool")


# ------------------------------------------------------------------------------------------------- spans


def test_diagnostics_name_the_callers_file_and_line():
    b = (
        WorkflowBuilder("spans", "Spans.")
        .argument("who", "Who", required=True)
        .step("greet", tool="greet", args={"name": arg("who")})  # unknown-greet
    )
    with pytest.raises(LoadError) as err:
        b.build()
    [d] = err.value.diagnostics
    assert d.code == "unknown-tool"
    assert (d.span.file, d.span.line) == (SHOWN, line_of("# unknown-greet"))
    assert d.span.col > 0 and "<python>" not in str(d.span)
    assert str(err.value).startswith(f"{SHOWN}:{line_of('# unknown-greet')}:{d.span.col}: error[unknown-tool]")


def test_each_call_records_its_own_line_and_the_workflow_its_constructor():
    wf = (
        WorkflowBuilder("lines", "Lines.")  # the-constructor
        .argument("who", "Who", required=True)  # the-argument
        .tool("greet", "Greet.", annotations={"readOnlyHint": True})  # the-tool
        .step("greet", tool="greet", args={"name": arg("who")})  # the-step
        .build()
    )
    assert wf.source == SHOWN
    assert (wf.span.file, wf.span.line) == (SHOWN, line_of("# the-constructor"))
    assert wf.arguments[0].span.line == line_of("# the-argument")
    assert wf.tools[0].span.line == line_of("# the-tool")
    assert wf.steps[0].span.line == line_of("# the-step")
    # the column is the method name's on a chained call
    assert wf.steps[0].span.col == HERE.read_text("utf-8").splitlines()[wf.steps[0].span.line - 1].index("step") + 1


def test_a_given_source_is_used_as_before():
    b = WorkflowBuilder("named", "Named.", source="flows.py").step("s", tool="nope")
    with pytest.raises(LoadError) as err:
        b.build()
    assert str(err.value.diagnostics[0].span) == "flows.py"


def test_frames_inside_projector_are_skipped():
    """A helper inside projector/ that builds for its caller reports the caller's line, not its own."""
    import projector

    helper_file = str(Path(projector.__file__).resolve().parent / "helper_for_the_test.py")
    space: dict = {"WorkflowBuilder": WorkflowBuilder}
    exec(
        compile("def helper():\n    return WorkflowBuilder('w', 'W.').step('s', tool='nope')\n", helper_file, "exec"),
        space,
    )
    b = space["helper"]()  # through-a-helper
    with pytest.raises(LoadError) as err:
        b.build()
    assert (err.value.diagnostics[0].span.file, err.value.diagnostics[0].span.line) == (
        SHOWN,
        line_of("# through-a-helper"),
    )


def test_a_listing_with_another_key_is_refused():
    with pytest.raises(LoadError) as err:
        WorkflowBuilder("w", "W.").tools_from({"tools": [], "next": 1})
    assert "only the key 'tools', not next" in err.value.diagnostics[0].message


# ---------------------------------------------------------------------- confirm: on a step and ask: on an argument (issue 22)

APPROVED = ROOT / "workflows" / "refunds-approved.yaml"


def test_the_builder_makes_the_same_workflow_as_the_yaml():
    wf = load_file(APPROVED)
    tools = {t.name: t for t in wf.tools}
    b = (
        WorkflowBuilder(wf.name, wf.description)
        .argument("order_id", "The order to refund", required=True, type="string")
        .argument("reason", "Why the customer asked for the refund", type="string", ask=True)
        .instruction("system", wf.instructions[0].text)
    )
    for t in wf.tools:
        b.tool(
            t.name, t.description, input_schema=t.input_schema, annotations=t.annotations, output_schema=t.output_schema
        )
    assert tools
    wf2 = (
        b.step("fetch_order", tool="get_order", args={"id": arg("order_id")}, bind="order")
        .step("check_eligibility", tool="check_eligibility", args={"order": step("order")}, bind="eligibility")
        .step(
            "issue_refund",
            tool="issue_refund",
            args={"order_id": step("order", "id"), "amount": step("order", "total")},
            when=condition(step("eligibility", "eligible"), equals=True),
            confirm=builder.confirm(
                "Issue this refund? It cannot be undone.", step("order", "id"), step("order", "total"), arg("reason")
            ),
            bind="refund",
        )
        .step("read_policy", resources=["docs://refund-policy/{region}"], template={"region": step("order", "region")})
        .build()
    )
    assert model.canonical(wf2) == model.canonical(wf)
    assert project(wf2).files == project(wf).files


def test_a_workflow_without_the_new_keys_keeps_its_canonical_form():
    wf = load_file(ROOT / "workflows" / "refunds-gated.yaml")
    text = repr(model.canonical(wf))
    assert "'confirm'" not in text and "'ask'" not in text
