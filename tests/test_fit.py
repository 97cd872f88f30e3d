"""Steps against the tools they call (projector.fit): one implementation behind build, check, --tools-from and
attach(). Each test here failed before the check moved into the core (build accepted every one of these files)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT, snapshot_tree
from projector.builder import WorkflowBuilder, arg, const, step
from projector.errors import LoadError
from projector.fit import field_problem
from projector.load import load_file, parse

COUNT = {"type": "object", "properties": {"n": {"type": "integer"}, "label": {"type": "string"}}, "required": ["n"]}


def diags(text: str, file: str = "wf.yaml"):
    _wf, found = parse(textwrap.dedent(text), file)
    return [d for d in found if d.severity == "error"]


def codes_at(found) -> list[tuple[str, int, int]]:
    return sorted((d.code, d.span.line, d.span.col) for d in found)


BAD = """\
name: bad_calls
description: Every way a step can miss its tool.
arguments:
  - {name: flag, type: boolean}
  - {name: who}
tools:
  - name: count
    input_schema: {type: object, properties: {n: {type: integer}, label: {type: string}}, required: [n]}
    annotations: {readOnlyHint: true}
steps:
  - name: no_n
    tool: count
    args:
      label: {arg: who}
  - name: typo
    tool: count
    args:
      n: {const: 3}
      lable: {arg: who}
  - name: quoted_number
    tool: count
    args:
      n: {const: "72"}
  - name: boolean_input
    tool: count
    args:
      n: {arg: flag}
"""


def test_build_refuses_every_misfit_at_once_and_writes_nothing(cli, tmp_path):
    wf = tmp_path / "bad.yaml"
    wf.write_text(BAD, "utf-8")
    out = tmp_path / "out"
    run = cli("build", str(wf), "--out", str(out))
    assert run.code == 1 and "Traceback" not in run.err
    assert not out.exists()
    shown = wf.as_posix()
    assert f"{shown}:11:5: error[missing-parameter]: step 'no_n' does not give 'n', which the tool 'count' " \
           "requires" in run.err
    assert f"{shown}:19:7: error[unknown-parameter]: step 'typo' passes 'lable', which is not a parameter of the " \
           "tool 'count'\n  hint: did you mean 'label'?" in run.err
    assert f"{shown}:23:10: error[parameter-type]: step 'quoted_number' passes the string \"72\" as 'n', which the " \
           "tool 'count' does not accept: '72' is not of type 'integer'" in run.err
    assert f"{shown}:27:16: error[parameter-type]: step 'boolean_input' passes the input 'flag' (boolean) as 'n', " \
           "but the tool 'count' takes integer there\n  hint: declare the argument with type: integer" in run.err
    assert cli("check", str(wf), "--out", str(out)).code == 1


def test_constants_are_checked_by_a_json_schema_validator():
    schema = {"type": "object", "properties": {
        "n": {"type": "integer", "minimum": 10},
        "mode": {"enum": ["fast", "safe"]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "ref": {"$ref": "#/$defs/Id"}},
        "$defs": {"Id": {"type": "string", "pattern": "^A[0-9]+$"}}}
    wf = (WorkflowBuilder("consts", "Constants against a schema.").tool("t", input_schema=schema,
                                                                      annotations={"readOnlyHint": True}))
    good = wf.step("ok", tool="t", args={"n": const(10), "mode": const("safe"), "tags": const(["a"]),
                                         "ref": const("A1")})
    good.build()  # valid constants, a $ref resolved against the whole schema
    bad = (WorkflowBuilder("consts", "Constants against a schema.")
           .tool("t", input_schema=schema, annotations={"readOnlyHint": True})
           .step("bad", tool="t", args={"n": const(9), "mode": const("quick"), "tags": const(["a", 1]),
                                        "ref": const("B1")}))
    with pytest.raises(LoadError) as info:
        bad.build()
    found = {d.message.split("does not accept: ")[1] for d in info.value.diagnostics}
    assert found == {"9 is less than the minimum of 10", "'quick' is not one of ['fast', 'safe']",
                     "1 is not of type 'string'", "'B1' does not match '^A[0-9]+$'"}
    assert {d.code for d in info.value.diagnostics} == {"parameter-type"}


def test_open_schemas_accept_other_names_and_types_left_open_accept_anything():
    ok = """\
    name: open
    description: d
    arguments: [{name: x}]
    tools:
      - name: free
        input_schema: {type: object, properties: {a: {type: string}}, additionalProperties: true}
        annotations: {readOnlyHint: true}
      - name: pattern
        input_schema: {type: object, properties: {a: {type: string}}, patternProperties: {"^x_": {}}}
        annotations: {readOnlyHint: true}
      - name: bare
        input_schema: {type: object}
        annotations: {readOnlyHint: true}
      - name: untyped
        input_schema: {type: object, properties: {a: {description: anything}}}
        annotations: {readOnlyHint: true}
    steps:
      - {name: s1, tool: free, args: {b: {arg: x}}}
      - {name: s2, tool: pattern, args: {x_1: {arg: x}}}
      - {name: s3, tool: bare, args: {whatever: {const: 1}}}
      - {name: s4, tool: untyped, args: {a: {arg: x}}}
    """
    assert diags(ok) == []


def test_a_broken_input_schema_is_reported_not_raised():
    found = diags("""\
    name: broken
    description: d
    tools:
      - name: t
        input_schema: {type: object, properties: {n: {type: integr}}}
        annotations: {readOnlyHint: true}
    steps:
      - {name: s, tool: t, args: {n: {const: 1}}}
    """)
    assert codes_at(found) == [("bad-input-schema", 4, 5)]
    assert "is not a valid JSON Schema" in found[0].message


@pytest.mark.parametrize("kinds", ["[integr, string]", "[integr, number, string]"])
def test_an_unknown_type_before_the_constants_own_in_a_list_of_types_is_reported(kinds):
    """As the validator reads the list, in order: the unknown name comes first, and the schema is reported broken,
    also where the constant is one of the later types (no shortcut accepts it)."""
    found = diags(f"""\
    name: broken_list
    description: d
    tools:
      - name: t
        input_schema: {{type: object, properties: {{n: {{type: {kinds}}}}}}}
        annotations: {{readOnlyHint: true}}
    steps:
      - {{name: s, tool: t, args: {{n: {{const: x}}}}}}
    """)
    assert codes_at(found) == [("bad-input-schema", 4, 5)], found


@pytest.mark.parametrize("required", ["3", "repo", "{repo: true}", "[3, repo]"])
def test_a_required_that_is_not_a_list_of_names_requires_nothing_else(required):
    """``required: 3`` raised a TypeError out of the fit check; ``required: repo`` made each of its letters a
    parameter the step does not give. Only the names of a list count."""
    found = diags(f"""\
    name: odd_required
    description: d
    tools:
      - name: t
        input_schema: {{type: object, properties: {{repo: {{type: string}}}}, required: {required}}}
        annotations: {{readOnlyHint: true}}
    steps:
      - {{name: s, tool: t}}
    """)
    assert [d.code for d in found] == (["missing-parameter"] if required == "[3, repo]" else []), found


OUT = {"type": "object", "properties": {
    "id": {"type": "string"},
    "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
    "meta": {"type": "object"},
    "extra": {"type": "object", "properties": {"a": {}}, "additionalProperties": {"type": "integer"}}},
    "$defs": {"Item": {"type": "object", "properties": {"sku": {"type": "string"}}}}}


@pytest.mark.parametrize("path,problem", [
    (("id",), None),
    (("items", 0, "sku"), None),
    (("meta", "anything"), None),            # an object that declares no properties: unknown, accepted
    (("extra", "zzz"), None),                # additionalProperties is a schema
    (("idd",), "the result has no field 'idd' (did you mean 'id'?); its fields: extra, id, items, meta"),
    (("total",), "the result has no field 'total'; its fields: extra, id, items, meta"),
    (("items", 0, "skus"), "'items.0' has no field 'skus' (did you mean 'sku'?); its fields: sku"),
    (("id", "x"), "'id' is string, so it has no field 'x'"),
])
def test_field_paths_walk_the_output_schema(path, problem):
    assert field_problem(OUT, path) == problem


def test_bad_field_path_against_a_declared_output_schema():
    found = diags("""\
    name: fields
    description: d
    tools:
      - name: get_order
        input_schema: {type: object, properties: {}}
        output_schema: {type: object, properties: {id: {type: string}, total: {type: number}}, required: [id]}
        annotations: {readOnlyHint: true}
      - name: show
        annotations: {readOnlyHint: true}
    steps:
      - {name: fetch, tool: get_order, bind: order}
      - name: use
        tool: show
        args:
          a: {step: order, field: id}
          b: {step: order, field: totl}
    """)
    assert codes_at(found) == [("bad-field-path", 16, 17)]
    assert "reads 'totl' of 'order', which the output schema of the tool 'get_order' does not have: the result " \
           "has no field 'totl' (did you mean 'total'?)" in found[0].message


def test_a_malformed_field_path_is_reported_once():
    """A path that is not names joined by single dots is the validator's problem; the schema walk leaves it alone
    (it used to add a second bad-field-path at the same place, for the empty name between the dots)."""
    found = diags("""\
    name: fields
    description: d
    tools:
      - name: get_order
        output_schema: {type: object, properties: {id: {type: string}}}
        annotations: {readOnlyHint: true}
      - name: show
        annotations: {readOnlyHint: true}
    steps:
      - {name: fetch, tool: get_order, bind: order}
      - name: use
        tool: show
        args: {a: {step: order, field: "id..x"}}
        when: {step: order, field: "id..x", exists: true}
    """)
    assert codes_at(found) == [("bad-field-path", 13, 22), ("bad-field-path", 14, 18)]
    assert all("has the field path 'id..x'" in d.message for d in found)


def test_attach_and_build_give_the_same_diagnostics(tmp_path):
    """The same workflow against the same tools: build (tools declared in the file) and attach() (tools registered
    on the server) report the same problems, because both call projector.fit."""
    from mcp.server.mcpserver import MCPServer

    from projector.server import attach
    from projector.server.adapters.mcp import run_now
    from projector.server.errors import AttachError

    server = MCPServer("x")

    @server.tool(description="Count.")
    def count(n: int, label: str = "") -> int:
        return n

    @server.tool(description="Order.", structured_output=True)
    def get_order(id: str) -> dict[str, str]:
        return {"id": id}

    listed = {t.name: t for t in run_now(server.list_tools())}
    tools = [{"name": name, "input_schema": t.input_schema, **({"output_schema": t.output_schema}
                                                                 if t.output_schema else {})}
             for name, t in sorted(listed.items())]
    text = "\n".join([
        "name: same",
        "description: Same diagnostics everywhere.",
        "arguments: [{name: flag, type: boolean}, {name: who}]",
        f"tools: {json.dumps(tools)}",
        "steps:",
        "  - {name: no_n, tool: count, args: {label: {arg: who}}}",
        "  - {name: typo, tool: count, args: {n: {const: 3}, lable: {arg: who}}}",
        "  - {name: quoted, tool: count, args: {n: {const: \"72\"}}}",
        "  - {name: typed, tool: count, args: {n: {arg: flag}}}",
        "  - {name: fetch, tool: get_order, args: {id: {arg: who}}, bind: order}",
        "",
    ])
    wf = tmp_path / "same.yaml"
    wf.write_text(text, "utf-8")
    with pytest.raises(LoadError) as built:
        load_file(wf)
    with pytest.raises(AttachError) as served:
        attach(server, None, [wf])
    as_built = [(str(d.span), d.code, d.message, d.hint) for d in built.value.diagnostics]
    as_served = [(str(d.span), d.code, d.message, d.hint) for d in served.value.diagnostics]
    assert {c for _, c, _, _ in as_built} == {"missing-parameter", "unknown-parameter", "parameter-type"}
    assert len(as_built) == 4
    assert as_served == as_built


def test_attach_takes_a_tool_the_file_does_not_list_from_the_server(tmp_path):
    from mcp.server.mcpserver import MCPServer

    from projector.server import attach

    server = MCPServer("x")

    @server.tool()
    def count(n: int) -> int:
        return n

    wf = tmp_path / "w.yaml"
    wf.write_text("name: w\ndescription: d\nsteps:\n  - {name: s, tool: count, args: {n: {const: 1}}}\n", "utf-8")
    attach(server, None, [wf])  # no unknown-tool: the server has it, and the step fits its schema


def test_tools_from_takes_unlisted_tools_from_the_server_and_checks_them(tmp_path):
    from mcp.server.mcpserver import MCPServer

    from projector.load import load_all
    from projector.remote.tools import apply_tools_from

    server = MCPServer("srv")

    @server.tool(description="Count things.")
    def count(n: int) -> int:
        return n

    good = tmp_path / "good" / "w.yaml"
    good.parent.mkdir()
    good.write_text("name: w\ndescription: d\nsteps:\n  - {name: s, tool: count, args: {n: {const: 1}}}\n", "utf-8")
    with pytest.raises(LoadError) as plain:
        load_all([good.as_posix()])  # without a server the tool is unknown; the hint names the other way
    (d,) = plain.value.diagnostics
    assert d.code == "unknown-tool" and "--tools-from SERVER" in d.hint and "attach()" not in d.hint
    (wf,), warnings = apply_tools_from(load_all([good.as_posix()], tools_from_server=True), server, "srv")
    assert warnings == [] and wf.tool("count").description == "Count things."

    bad = tmp_path / "bad" / "w.yaml"
    bad.parent.mkdir()
    bad.write_text("name: w\ndescription: d\nsteps:\n  - {name: s, tool: count, args: {n: {const: \"1\"}}}\n",
                   "utf-8")
    with pytest.raises(LoadError) as info:
        apply_tools_from(load_all([bad.as_posix()], tools_from_server=True), server, "srv")
    assert [(d.code, d.span.line) for d in info.value.diagnostics] == [("parameter-type", 4)]


def test_unknown_tool_hint_for_build_and_check_names_tools_from_not_attach(cli):
    case = (ROOT / "tests" / "bad_inputs" / "unknown-tool.yaml").relative_to(ROOT).as_posix()
    for command in ("build", "check"):
        run = cli(command, case, "--out", "/nonexistent/out", cwd=ROOT)
        assert run.code == 1 and "error[unknown-tool]" in run.err
        assert "--tools-from SERVER" in run.err and "attach()" not in run.err


def test_a_placeholder_naming_a_step_result_points_to_template_bindings():
    found = diags("""\
    name: ph
    description: d
    tools: [{name: t, annotations: {readOnlyHint: true}}]
    steps:
      - {name: a, tool: t, bind: order}
      - {name: b, tool: t, args: {x: {const: "id {order.id}"}}}
    """)
    (d,) = found
    assert d.code == "undeclared-argument" and (d.span.line, d.span.col) == (6, 34)
    assert "names 'order.id', a step result; placeholders take prompt arguments only" in d.message
    assert "{step: order, field: ...}" in d.hint and "template" in d.hint


@pytest.mark.slow
def test_jsonschema_is_imported_only_when_a_constant_needs_it(tmp_path):
    probe = ("import sys\nfrom projector.load import load_file\nload_file(sys.argv[1])\n"
             "print('jsonschema' in sys.modules)")
    plain = tmp_path / "plain.yaml"
    plain.write_text("name: p\ndescription: d\ntools: [{name: t, input_schema: {type: object, properties: "
                     "{x: {type: string}}}}]\narguments: [{name: a}]\nsteps: [{name: s, tool: t, args: {x: {arg: a}}}]\n",
                     "utf-8")
    typed = tmp_path / "typed.yaml"  # a constant its property's type alone accepts: no validator needed either
    typed.write_text(plain.read_text("utf-8").replace("{arg: a}", "{const: hi}"), "utf-8")
    consts = tmp_path / "consts.yaml"
    consts.write_text(typed.read_text("utf-8").replace("{type: string}", "{type: string, enum: [hi]}"), "utf-8")
    seen = {p.name: subprocess.run([sys.executable, "-c", probe, str(p)], capture_output=True, text=True,
                                   cwd=ROOT).stdout.strip() for p in (plain, typed, consts)}
    assert seen == {"plain.yaml": "False", "typed.yaml": "False", "consts.yaml": "True"}


def test_builder_and_yaml_fit_the_same(tmp_path):
    wf = (WorkflowBuilder("b", "d").argument("x").tool("t", input_schema=COUNT, annotations={"readOnlyHint": True})
          .step("s", tool="t", args={"n": arg("x")}, bind="r")
          .step("u", tool="t", args={"n": const(1), "label": step("r", "x")}))
    with pytest.raises(LoadError) as info:
        wf.build()
    (d,) = info.value.diagnostics
    assert d.code == "parameter-type" and d.message.startswith("step 's' passes the input 'x'")
    assert d.span.file.endswith("tests/test_fit.py")
    lines = Path(__file__).read_text("utf-8").splitlines()  # the .step(...) call's line, the one after .argument's
    call = '.step("s", tool="t", args={"n": arg("x")}, bind="r")'
    at = next(i for i, s in enumerate(lines, 1) if s.strip().startswith(call))
    assert d.span.line == at and lines[at - 2].strip().startswith('wf = (WorkflowBuilder("b", "d").argument("x")')


def test_bad_inputs_leave_the_output_alone(cli, tmp_path):
    out = tmp_path / "out"
    assert cli("build", str(ROOT / "workflows"), "--out", str(out)).code == 0
    before = snapshot_tree(out)
    wf = tmp_path / "bad.yaml"
    wf.write_text(BAD, "utf-8")
    assert cli("build", str(wf), "--out", str(out)).code == 1
    assert snapshot_tree(out) == before


def test_a_wrapped_result_is_walked_from_inside_the_envelope():
    """The SDKs wrap a non-object result as {"result": x} and the server-side run saves x: paths start inside."""
    wrapped = {"type": "object", "properties": {"result": {"type": "array", "items": {
        "type": "object", "properties": {"sku": {"type": "string"}}}}}, "required": ["result"]}
    text = f"""\
    name: wrapped
    description: d
    tools:
      - name: list_items
        output_schema: {json.dumps(wrapped)}
        annotations: {{readOnlyHint: true}}
      - name: show
        annotations: {{readOnlyHint: true}}
    steps:
      - {{name: l, tool: list_items, bind: items}}
      - {{name: a, tool: show, args: {{x: {{step: items, field: 0.sku}}}}}}
      - {{name: b, tool: show, args: {{x: {{step: items, field: 0.skus}}}}}}
    """
    found = diags(text)
    assert [(d.code, d.span.line) for d in found] == [("bad-field-path", 12)]
    assert "'0' has no field 'skus' (did you mean 'sku'?)" in found[0].message


def test_unstructured_result_rests_on_the_tools_from_declaration(cli, tmp_path):
    """With --tools-from (here a snapshot, read offline) the source's declaration decides whether a result is text,
    with what the server leaves out taken from the file (issue 30): a file that declares an output schema for a tool
    whose server declares none fills it in (a note, no tool-mismatch, no unstructured-result), and a file that
    declares none for a tool whose server declares one does not warn."""
    snapshot = tmp_path / "tools.json"
    snapshot.write_text(json.dumps({"tools": [
        {"name": "diff", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
        {"name": "review", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"},
         "annotations": {"readOnlyHint": True}},
    ]}), "utf-8")
    wf = tmp_path / "w.yaml"
    wf.write_text(textwrap.dedent("""\
        name: w
        description: d
        tools:
          - {name: diff, annotations: {readOnlyHint: true}, output_schema: {type: object}}
          - {name: review, annotations: {readOnlyHint: true}}
        steps:
          - {name: a, tool: diff, bind: staged}
          - {name: b, tool: review, bind: verdict, when: {step: staged, field: diff, exists: true}}
          - {name: c, tool: review, when: {step: verdict, field: ok, equals: true}}
        """), "utf-8")
    out = str(tmp_path / "out")
    own = cli("build", str(wf), "--out", out)  # the file's own declarations: diff has fields, review is text
    assert own.code == 0
    assert [line.split(": ")[1] for line in own.err.splitlines() if "warning[" in line] == \
        ["warning[unstructured-result]"]
    assert f"{wf.as_posix()}:9:42: warning[unstructured-result]: step 'c' reads 'verdict.ok'" in own.err
    run = cli("build", str(wf), "--out", out, "--tools-from", str(snapshot))
    assert run.code == 0, run.err
    found = sorted((line.split(": ")[0], line.split(": ")[1]) for line in run.err.splitlines() if "warning[" in line)
    assert found == [], run.err
    assert f"{wf.as_posix()}:4:5: note[tool-filled]: tool 'diff': the snapshot" in run.err
    strict = cli("build", "--strict", str(wf), "--out", out, "--tools-from", str(snapshot))
    assert strict.code == 0, strict.err
    bare = snapshot.read_text("utf-8").replace('"outputSchema": {"type": "object"}, ', "")  # review: text now
    snapshot.write_text(bare, "utf-8")
    strict = cli("check", "--strict", str(wf), "--out", out, "--tools-from", str(snapshot))
    assert strict.code == 1 and "warning[unstructured-result]: step 'c' reads 'verdict.ok'" in strict.err


# ------------------------------------------------------------------------------------- declarations (--tools-from)

# As mcp-server-sqlite lists its tools: no annotations, no output schemas.
SQLITE_TOOLS = {"tools": [
    {"name": "read_query", "description": "Execute a SELECT query on the SQLite database",
     "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}},
    {"name": "write_query", "description": "Execute an INSERT, UPDATE, or DELETE query on the SQLite database",
     "inputSchema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
     "annotations": {"readOnlyHint": False}},
]}
REPORT = """\
name: open_orders_report
description: Report the orders still open.
tools:
  - name: read_query                       # the server declares neither: the file says what it leaves out
    annotations: {readOnlyHint: true}
    output_schema: {type: array, items: {type: object, properties: {id: {type: integer}}}}
steps:
  - name: find
    tool: read_query
    args: {query: {const: "SELECT id FROM orders WHERE open"}}
    bind: open_orders
"""


def _sqlite_project(tmp_path: Path, workflow: str) -> Path:
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "report.yaml").write_text(workflow, encoding="utf-8")
    (tmp_path / "tools.json").write_text(json.dumps(SQLITE_TOOLS), encoding="utf-8")
    return tmp_path


def test_what_a_server_leaves_out_the_workflow_declares_and_strict_passes(cli, tmp_path):
    """Issue 30: a tool with no annotations, described in the workflow, builds under --strict with no
    acknowledgement; the SKILL.md calls it read-only; each filled field is a note, not tool-mismatch."""
    text = REPORT
    root = _sqlite_project(tmp_path, text)
    run = cli("build", "workflows", "--tools-from", "tools.json", "--strict", "--out", "skills", "--no-cache",
              cwd=root)
    assert run.code == 0, run.err
    assert "warning[" not in run.err
    assert "workflows/report.yaml:4:5: note[tool-filled]: tool 'read_query': the snapshot tools.json " \
           "declares no annotations; the file's are used" in run.err
    assert "note[tool-filled]: tool 'read_query': the snapshot tools.json declares no output schema" in run.err
    skill = (root / "skills" / "open-orders-report" / "SKILL.md").read_text("utf-8")
    assert "Call the tool `read_query` (read-only)" in skill


def test_a_field_the_server_declares_differently_stays_a_mismatch(cli, tmp_path):
    text = REPORT.replace(
        "steps:", "  - name: write_query\n    annotations: {readOnlyHint: true}\nsteps:")
    root = _sqlite_project(tmp_path, text)
    run = cli("build", "workflows", "--tools-from", "tools.json", "--strict", "--out", "skills", "--no-cache",
              cwd=root)
    assert run.code == 1
    assert "warning[tool-mismatch]: tool 'write_query': annotations differs" in run.err
    assert "tool 'write_query'" not in run.err.split("warning[tool-mismatch]")[0]  # no note for what it declares
    assert not (root / "skills").exists()


def test_a_filled_output_schema_checks_field_paths_and_ends_unstructured_result(cli, tmp_path):
    text = REPORT + (
        "  - name: again\n    tool: read_query\n    args: {query: {step: open_orders, field: 0.idd}}\n")
    root = _sqlite_project(tmp_path, text)
    run = cli("build", "workflows", "--tools-from", "tools.json", "--out", "skills", "--no-cache", cwd=root)
    assert run.code == 1
    assert "bad-field-path" in run.err and "'0' has no field 'idd'" in run.err, run.err
    assert "unstructured-result" not in run.err



# ------------------------------------------------------------------------------------------------ hostile patterns

BACKTRACKING = """\
name: redos
description: A tool whose schema has a pattern that backtracks.
tools:
  - name: lookup
    input_schema:
      type: object
      properties:
        code: {type: string, pattern: "^(a+)+$"}
        meta: {type: object, patternProperties: {"^(b+)+$": {type: integer}}, additionalProperties: false}
      patternProperties: {"^(c+)+$": {type: string}}
      additionalProperties: false
    annotations: {readOnlyHint: true}
steps:
  - name: find
    tool: lookup
    args:
      code: {const: "%(a)s!"}
      meta: {const: {"%(b)s!": 1}}
      %(c)s!: {const: x}
"""


@pytest.mark.slow
def test_a_backtracking_pattern_is_matched_in_linear_time_with_positioned_errors(tmp_path):
    """Issue 29, item 7: Python's re takes minutes for ^(a+)+$ against 41 a's and a '!'; with 1,000 of them (a
    YAML key's limit) it would never end. Run in a subprocess whose timeout trips only on a hang."""
    wf = tmp_path / "redos.yaml"
    wf.write_text(BACKTRACKING % {"a": "a" * 1000, "b": "b" * 1000, "c": "c" * 1000}, "utf-8")
    run = subprocess.run([sys.executable, "-m", "projector.cli", "check", str(wf), "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    shown = wf.as_posix()
    assert f"{shown}:17:13: error[parameter-type]: step 'find' passes the string \"aaaa" in run.stderr
    assert "does not match '^(a+)+$'" in run.stderr
    assert f"{shown}:18:13: error[parameter-type]: step 'find' passes the object" in run.stderr
    assert "does not match any of the regexes: '^(b+)+$'" in run.stderr
    assert f"{shown}:19:7: error[unknown-parameter]: step 'find' passes 'cccc" in run.stderr


def test_a_pattern_is_read_as_json_schema_means_it():
    """RE2 reads a pattern as ECMA-262 does where Python's re differs: ``$`` is the end of the text."""
    schema = {"type": "object", "properties": {"id": {"type": "string", "pattern": "^A[0-9]+$"}}}
    wf = WorkflowBuilder("ids", "Ids.").tool("t", input_schema=schema, annotations={"readOnlyHint": True})
    wf.step("ok", tool="t", args={"id": const("A12")}).build()
    bad = (WorkflowBuilder("ids", "Ids.").tool("t", input_schema=schema, annotations={"readOnlyHint": True})
           .step("bad", tool="t", args={"id": const("A12\n")}))
    with pytest.raises(LoadError) as info:
        bad.build()
    (d,) = info.value.diagnostics
    assert d.code == "parameter-type" and "does not match '^A[0-9]+$'" in d.message


@pytest.mark.parametrize("pattern", ["^(?=(a+)+$)a", "^(a)\\1$"])
def test_a_pattern_that_cannot_be_matched_safely_is_not_guessed(pattern):
    """Lookaround and backreferences can backtrack without end; a constant is not checked against them (nor the
    step's other constants: the schema cannot be applied safely)."""
    schema = {"type": "object", "properties": {"id": {"type": "string", "pattern": pattern}, "n": {"type": "integer"}}}
    wf = (WorkflowBuilder("ids", "Ids.").tool("t", input_schema=schema, annotations={"readOnlyHint": True})
          .step("s", tool="t", args={"id": const("ab"), "n": const(1)}))
    wf.build()


def test_unevaluated_properties_beside_pattern_properties_is_not_guessed():
    """jsonschema decides unevaluatedProperties with Python's re over patternProperties, which a hostile key could
    stall: the schema is not applied to the constants then (before, this refused the key 'y')."""
    meta = {"type": "object", "patternProperties": {"^(x+)+$": {}}, "unevaluatedProperties": False}
    schema = {"type": "object", "properties": {"meta": meta}}
    (WorkflowBuilder("u", "U.").tool("t", input_schema=schema, annotations={"readOnlyHint": True})
     .step("s", tool="t", args={"meta": const({"y": 1})}).build())


# A constant is refused exactly where JSON Schema (jsonschema, 2020-12) refuses it, with its message: also for the
# plain schemas that are decided without building a validator, at the edges of "plain" (a bool is no integer, 1.0 is
# one, an unknown type breaks the schema, an annotation decides nothing, a keyword beside them does).
_PROPERTY_SCHEMAS = st.one_of(
    st.sampled_from([True, False, {}, {"description": "d"}, {"minimum": 3}, {"enum": [1, "a"]}, {"const": True}]),
    st.builds(
        lambda t, extra: {"type": t, **extra},
        st.one_of(
            st.sampled_from(["string", "integer", "number", "boolean", "null", "object", "array", "objekt"]),
            st.lists(st.sampled_from(["string", "integer", "null", "array"]), max_size=3),
        ),
        st.sampled_from(
            [
                {},
                {"description": "d", "title": "t"},
                {"default": 1, "examples": [2]},
                {"maxLength": 1},
                {"pattern": "^a"},
                {"items": {"type": "string"}},
            ]
        ),
    ),
)
_CONSTANTS = st.sampled_from(["s", "", "abc", 1, 0, -7, 1.0, 2.5, True, False, None, [], [1], {}, {"a": 1}])
_ROOTS = st.sampled_from(
    [
        {},
        {"type": "object"},
        {"required": ["x"]},
        {"required": "x"},
        {"required": [["x"]]},
        {"additionalProperties": 1},
        {"additionalProperties": False},
        {"additionalProperties": {"type": "string"}},
        {"title": "T", "description": "D"},
        {"type": "array"},
        {"$schema": "http://json-schema.org/draft-04/schema#"},
        {"$defs": {"a": {}}},
        {"type": ["object"]},
    ]
)


@settings(max_examples=400, deadline=None)
@given(_PROPERTY_SCHEMAS, _CONSTANTS, _ROOTS)
def test_a_constant_is_refused_where_json_schema_refuses_it(prop, value, root):
    import jsonschema
    from jsonschema.validators import validator_for

    schema = {**root, "properties": {"x": prop}}
    try:
        errors = validator_for(schema, default=jsonschema.Draft202012Validator)(schema).iter_errors({"x": value})
        refused = sorted(
            (list(map(str, e.absolute_path)), e.message) for e in errors if list(e.absolute_path)[:1] == ["x"]
        )
        expected = {("parameter-type", refused[0][1])} if refused else set()  # the first, as the check says it
    except (jsonschema.exceptions.UnknownType, TypeError):  # a schema broken where the constant meets it
        expected = {("bad-input-schema", "")}
    wf = WorkflowBuilder("w", "d").tool("t", input_schema=schema, annotations={"readOnlyHint": True})
    try:
        wf.step("s", tool="t", args={"x": const(value)}).build()
        found = set()
    except LoadError as exc:
        found = {
            (d.code, d.message.split("does not accept: ")[-1] if d.code == "parameter-type" else "")
            for d in exc.diagnostics
            if d.code in ("parameter-type", "bad-input-schema")
        }
    assert found == expected
