"""Projection: snapshots pin every generated file byte for byte; the builder and YAML agree; gates fire as they
should; frontmatter survives any description."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from conftest import EXAMPLES, GENERATED
from projector.builder import WorkflowBuilder, arg, const, step
from projector.sep2640 import parse_frontmatter, split_frontmatter
from projector.errors import LoadError
from projector.load import load_all, load_file, parse
from projector.output import compile_workflows
from projector.render import project, workflow_digest


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


def test_output_rules():
    for rel, data in BUILD.files.items():
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
        .tool("get_order", "Look up an order by id.",
              input_schema={"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
              annotations={"readOnlyHint": True}, output_schema={"type": "object"})
        .tool("check_eligibility", "Decide whether an order can be refunded under the policy.",
              input_schema={"type": "object", "properties": {"order": {"type": "object"}}, "required": ["order"]},
              annotations={"readOnlyHint": True}, output_schema={"type": "object"})
        .tool("issue_refund", "Refund an order to the original payment method.",
              input_schema={"type": "object", "properties": {"order_id": {"type": "string"},
                                                             "amount": {"type": "number"}},
                            "required": ["order_id", "amount"]},
              annotations={"readOnlyHint": False, "destructiveHint": True}, output_schema={"type": "object"})
        .step("fetch_order", tool="get_order", args={"id": arg("order_id")}, bind="order")
        .step("check_eligibility", tool="check_eligibility", args={"order": step("order")}, bind="eligibility")
        .step("issue_refund", tool="issue_refund",
              args={"order_id": step("order", "id"), "amount": step("order", "total")},
              guidance="Only issue the refund if the eligibility check says the order is eligible.", bind="refund")
        .step("read_policy", resources=["docs://refund-policy/{region}"],
              template={"region": step("order", "region")})
        .build()
    )


def test_builder_and_yaml_project_to_identical_bytes():
    from_yaml = load_file(EXAMPLES / "refunds.yaml")
    from_code = refunds_in_code()
    assert from_code == from_yaml
    assert project(from_code).files == project(from_yaml).files


def test_builder_validates_like_the_loader():
    with pytest.raises(LoadError) as exc:
        (WorkflowBuilder("x", "d").tool("t", annotations={"readOnlyHint": True})
         .step("a", tool="t", args={"v": arg("missing"), "w": step("later")})
         .step("b", tool="nope", bind="later").build())
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


@pytest.mark.parametrize("guidance", [
    "Only issue the refund if the eligibility check says the order is eligible.",
    "Do not send the email if the customer opted out.",
    "Verify the address first.",
    "Unless the manager signed, stop here.",
    "Needs a supervisor's approval.",
    "Confirm with the user before deleting.",
])
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


@pytest.mark.parametrize("description", [
    "Refund an order: fast path", "yes", "1.0", "null", "- starts like a list", "# not a comment",
    "quotes ' and \" and `backticks`", "ünïcödé ✓ 日本語", "trailing space ", "a " * 400, "line\nbreak",
    "{flow: mapping}", "@at", "%percent", "*star", "&amp", "!bang", "key: value # comment",
])
def test_frontmatter_round_trips_any_description(description):
    wf = WorkflowBuilder("fm", description).tool("t", annotations={"readOnlyHint": True}).step(
        "s", tool="t").build()
    files = project(wf).files
    fm = parse_frontmatter(files["SKILL.md"], "SKILL.md")
    assert fm == {"name": "fm", "description": description,
                  "metadata": {"workflow": "fm", "workflow-digest": workflow_digest(wf)}}
    assert list(fm) == ["name", "description", "metadata"]


def test_body_over_500_lines_warns():
    b = WorkflowBuilder("long", "d").tool("t", annotations={"readOnlyHint": True})
    for i in range(120):
        b.step(f"s{i}", tool="t", args={"v": const(i)})
    diags = project(b.build()).diagnostics
    assert [d.code for d in diags] == ["body-too-long"]


def test_const_placeholders_and_all_source_kinds_in_plain_words():
    wf = (WorkflowBuilder("kinds", "d").argument("who", required=True)
          .tool("t", annotations={"readOnlyHint": True})
          .step("a", tool="t", args={"x": const("Hello {who}"), "y": const({"k": [1, 2]}), "z": arg("who")},
                bind="r")
          .step("b", tool="t", args={"x": step("r"), "y": step("r", "items.0.sku")})
          .build())
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


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from projector import render  # noqa: E402

PRINTABLE_BMP = st.text(st.characters(max_codepoint=0xFFFF, blacklist_categories=("Cs",)), max_size=300).filter(
    str.isprintable)
YAMLISH = st.sampled_from(["yes", "no", "null", "~", "---", "...", "# x", "a: b", "- x", "'q'", '"q"', "1.0", "0x1",
                           "@", "`", "!", "%", "&a", "*a", "{}", "[]", "|", ">", " lead", "trail ", "a  b", "é"])


@settings(max_examples=500, deadline=None)
@given(st.one_of(PRINTABLE_BMP, YAMLISH, st.lists(YAMLISH, max_size=6).map("".join)),
       st.one_of(PRINTABLE_BMP, YAMLISH))
def test_libyaml_frontmatter_path_writes_the_same_bytes(description, workflow):
    data = {"name": "x", "description": description, "metadata": {"workflow": workflow}}
    if render._same_in_libyaml(data):
        assert render.dump_frontmatter(data) == render.dump_frontmatter(data, fast=False)


def test_frontmatter_outside_the_fast_path_is_still_exact():
    for description in ("line\nbreak", "emoji \U0001F600", "tab\there", "para\u2029graph"):
        data = {"name": "x", "description": description, "metadata": {"workflow": "w"}}
        assert not render._same_in_libyaml(data)
        assert yaml.safe_load(render.dump_frontmatter(data)) == data


@pytest.mark.parametrize("char", ["\x85", "\r", "\x00", "\x1b"])
def test_control_characters_in_a_description_are_refused(char):
    # PyYAML cannot round-trip some of them (U+0085 comes back as a line break), and no host wants them.
    with pytest.raises(LoadError) as exc:
        WorkflowBuilder("w", f"bad{char}text").tool("t", annotations={"readOnlyHint": True}).step(
            "s", tool="t").build()
    assert [d.code for d in exc.value.diagnostics] == ["control-character"]


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8) | st.integers(-3, 3), inner,
                                                                max_size=4),
    max_leaves=20)


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
                expected = json.dumps(value, indent=indent, sort_keys=sort_keys, ensure_ascii=False,
                                      separators=seps)
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
    wf.write_text("""\
name: close_day
description: Close the day when no order is open.
tools:
  - {name: open_orders, annotations: {readOnlyHint: true}}
  - {name: close_day, annotations: {readOnlyHint: false}}
steps:
  - {name: find, tool: open_orders, bind: orders}
  - {name: close, tool: close_day, bind: closed, when: {step: orders, equals: []}}
""", encoding="utf-8")
    run = cli("build", str(wf), "--out", str(tmp_path / "out"))
    assert run.code == 0, run.err
    skill = (tmp_path / "out" / "close-day" / "SKILL.md").read_text("utf-8")
    assert ("Save the result as `orders`. The tool returns text: read it as JSON when the whole text is JSON (`[]` is "
            "an empty list, `42` a number, `true` a boolean, not a string), and as the text itself otherwise.\n"
            in skill)
    assert skill.count("The tool returns text") == 1  # not on `closed`, which nothing reads
