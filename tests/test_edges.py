"""The edges a new user hit (issue 9, item 3 and 4): --skills-only, title:, asking for the inputs of side effects,
check's fix hint, plurals, and `project-skill schema`."""

from __future__ import annotations

import json
import shlex

import pytest

from conftest import ROOT
from projector.builder import WorkflowBuilder, arg
from projector.sep2640 import parse_frontmatter
from projector.load import parse
from projector.output import compile_paths, compile_workflows
from projector.render import project

HELLO = (ROOT / "workflows" / "hello-world.yaml").as_posix()


# ------------------------------------------------------------------------------------------------ --skills-only

def test_skills_only_names_no_workflow_prompt(cli, tmp_path):
    out = tmp_path / "out"
    run = cli("build", HELLO, "--skills-only", "--out", str(out))
    assert run.code == 0, run.err
    md = (out / "hello-world" / "SKILL.md").read_bytes()
    fm = parse_frontmatter(md, "SKILL.md")
    assert fm == {"name": "hello-world", "description": "Greet someone by name with the server's greeter.",
                  "metadata": {"workflow-digest": fm["metadata"]["workflow-digest"]}}  # the stamp only
    assert fm["metadata"]["workflow-digest"].startswith("sha256:")
    assert b"hello_world" not in md and b"prompt" not in md and b"Server-accelerated" not in md
    entry = json.loads((out / "skills.json").read_text("utf-8"))["skills"][0]
    assert entry["frontmatter"] == fm
    # the default names it, and check compares with the same flag
    default = (ROOT / "generated_skills" / "hello-world" / "SKILL.md").read_bytes()
    assert b"metadata:\n  workflow: hello_world\n" in default and b"the MCP prompt `hello_world`" in default
    assert cli("check", HELLO, "--skills-only", "--out", str(out)).code == 0
    assert cli("check", HELLO, "--out", str(out)).code == 1


# ------------------------------------------------------------------------------------------------------ title

TITLED = """\
name: refund_flow
title: Refund an order, carefully
description: Refund an order.
arguments: [{name: order_id, required: true}]
tools: [{name: get_order, annotations: {readOnlyHint: true}}]
steps: [{name: fetch, tool: get_order, args: {id: {arg: order_id}}}]
"""


def test_title_is_the_heading_and_the_builder_agrees():
    wf, diags = parse(TITLED, "t.yaml")
    assert diags == []
    files = project(wf).files
    body = files["SKILL.md"].decode("utf-8")
    assert "\n# Refund an order, carefully\n" in body and "\n# Refund flow\n" not in body
    built = (WorkflowBuilder("refund_flow", "Refund an order.", title="Refund an order, carefully")
             .argument("order_id", required=True).tool("get_order", annotations={"readOnlyHint": True})
             .step("fetch", tool="get_order", args={"id": arg("order_id")}).build())
    assert built == wf and project(built).files == files
    untitled, _ = parse(TITLED.replace("title: Refund an order, carefully\n", ""), "t.yaml")
    assert "\n# Refund flow\n" in project(untitled).files["SKILL.md"].decode("utf-8")


@pytest.mark.parametrize("title, code", [('""', "empty-name"), ('"Two\\nlines"', "control-character"),
                                         ("[a]", "wrong-type")])
def test_a_bad_title_is_an_error_at_its_position(title, code):
    _, diags = parse(TITLED.replace("Refund an order, carefully", title), "t.yaml")
    assert [(d.code, d.span.line, d.span.col) for d in diags] == [(code, 2, 8)]


# ----------------------------------------------------------------------------------------- ask for the input

ASK = """\
name: pay
description: Pay an amount.
arguments:
  - {name: amount, type: number}
  - {name: note}
tools:
  - name: pay
    input_schema: {type: object, properties: {amount: {type: number}, note: {type: string}}, required: [amount]}
    annotations: {readOnlyHint: false}
  - name: quote
    input_schema: {type: object, properties: {amount: {type: number}}, required: [amount]}
    annotations: {readOnlyHint: true}
steps:
  - name: quote
    tool: quote
    args: {amount: {arg: amount}}
  - name: pay
    tool: pay
    args: {amount: {arg: amount}, note: {arg: note}}
"""


def test_an_optional_input_of_a_side_effect_is_asked_for_and_noted():
    wf, diags = parse(ASK, "a.yaml")
    assert diags == []
    p = project(wf)
    body = p.files["SKILL.md"].decode("utf-8")
    quote, pay = body.split("### Step 2")
    # the read-only step may work it out; the side effect must ask; a parameter the tool does not require may too
    assert "- `amount`: the input `amount`; if the user gave none, a value you work out yourself" in quote
    assert "- `amount`: the input `amount`; if the user gave none, ask the user for it; never work it out " \
           "yourself" in pay
    assert "- `note`: the input `note`; if the user gave none, a value you work out yourself" in pay
    notes = [d for d in p.diagnostics if d.code == "ask-for-input"]
    assert [(d.severity, d.span.line) for d in notes] == [("note", 19)]
    assert "optional input 'amount' as 'amount', which the side-effecting tool 'pay' requires" in notes[0].message


# ------------------------------------------------------------------------------------------------ check's hint

def test_check_hint_repeats_the_paths_and_flags_given(cli, tmp_path):
    out = tmp_path / "my out"
    run = cli("check", HELLO, "--out", str(out), "--uri-prefix", "a/b", "--skills-only")
    assert run.code == 1
    expected = shlex.join(["project-skill", "build", HELLO, "--out", str(out), "--uri-prefix", "a/b",
                           "--skills-only"])
    assert run.out.rstrip().endswith(f"run: {expected}")
    assert cli(*shlex.split(expected)[1:]).code == 0  # and running it fixes the tree
    assert cli("check", HELLO, "--out", str(out), "--uri-prefix", "a/b", "--skills-only").code == 0


def test_check_hint_keeps_tools_from():
    from projector import cli as cli_mod

    args = cli_mod.parser().parse_args(["check", "w", "--tools-from", "uvx mcp-server-time", "--out", "o"])
    args.argv = ["check", "w", "--tools-from", "uvx mcp-server-time", "--out", "o"]
    assert cli_mod.rebuild_command(args) == "project-skill build w --tools-from 'uvx mcp-server-time' --out o"


# ---------------------------------------------------------------------------------------------------- plurals

def test_one_skill_one_file_one_finding_are_singular(cli, tmp_path):
    run = cli("build", HELLO, "--out", str(tmp_path / "o"))
    assert "wrote " in run.out and ": 1 skill; 0 warnings, 0 notes" in run.out
    assert "1 skills" not in run.out
    one = tmp_path / "one.yaml"
    one.write_text("name: one\ndescription: d\nsteps: [{name: r, resources: ['docs://x']}]\n", "utf-8")
    run = cli("build", str(one), "--out", str(tmp_path / "p"))
    assert "(1 file, " in run.out and "0 findings)" in run.out and "(1 files" not in run.out
    assert cli("check", str(one), "--out", str(tmp_path / "p")).out.count("1 skill;") == 1


def test_a_one_step_prompt_says_one_step():
    pytest.importorskip("mcp")
    from projector.server.adapters.mcp import WorkflowPrompt

    wf, _ = parse(TITLED, "t.yaml")
    prompt = WorkflowPrompt.for_workflow(wf)
    assert "Runs the workflow's 1 step on the server" in prompt.description
    assert prompt.title == "Refund an order, carefully"


# ----------------------------------------------------------------------------------------------------- schema

def test_schema_prints_the_shipped_schema(capsysbinary):
    from projector.cli import main

    assert main(["schema"]) == 0
    out = capsysbinary.readouterr().out
    assert out == (ROOT / "projector" / "schemas" / "workflow.schema.json").read_bytes()
    schema = json.loads(out)
    assert {"title", "arguments", "steps"} <= set(schema["properties"])
    assert "output_schema" in schema["$defs"]["tool"]["properties"]


def test_skills_only_builds_the_same_bytes_in_parallel(tmp_path):
    workflows = [(ROOT / "workflows").as_posix()]
    serial = compile_paths(workflows, skills_only=True, jobs=1)
    assert compile_paths(workflows, skills_only=True, jobs=2).files == serial.files
    from projector.load import load_all

    assert compile_workflows(load_all(workflows), skills_only=True).files == serial.files
    assert all(list(parse_frontmatter(data, rel)["metadata"]) == ["workflow-digest"]
               for rel, data in serial.files.items() if rel.endswith("SKILL.md"))
