"""Step conditions (``when:`` / ``on_fail:``): the evaluator against an independent reference, the loader's and the
builder's checks, the gate analysis, and the SKILL.md wording."""

from __future__ import annotations

import json
import re
from fractions import Fraction
from typing import Any

import pytest
import yaml
from conftest import EXAMPLES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from projector import conditions, fit
from projector.builder import WorkflowBuilder, arg, condition, step
from projector.errors import LoadError
from projector.load import load_file, parse
from projector.model import Condition, FromArg, FromStep, Tool
from projector.render import project

# ------------------------------------------------------------------------------------ an independent reference

_ABSENT = ("absent",)


def _norm(v: Any) -> tuple:
    """A JSON value as a tagged tuple whose plain equality is JSON equality (numbers exactly, by value)."""
    if v is True or v is False:
        return ("bool", v)
    if type(v) in (int, float):
        return ("num", Fraction(v))
    if type(v) is str:
        return ("str", v)
    if v is None:
        return ("null",)
    if type(v) is list:
        return ("list", tuple(_norm(x) for x in v))
    return ("obj", tuple(sorted((k, _norm(x)) for k, x in v.items())))


def _ref_lookup(kind: str, name: str, path: list[str], args: dict, results: dict) -> Any:
    if kind == "arg":
        return args[name] if name in args else _ABSENT
    if name not in results:
        return _ABSENT
    cur = results[name]
    for p in path:
        if type(cur) is dict:
            if p not in cur:
                return _ABSENT
            cur = cur[p]
        elif type(cur) is list:
            if not p.isdigit() or int(p) >= len(cur):
                return _ABSENT
            cur = cur[int(p)]
        else:
            return _ABSENT
    return cur


def _ref_holds(op: str, operand: Any, seen: Any) -> bool:
    if seen is _ABSENT:
        return op == "exists" and operand is False
    if op == "exists":
        return operand is True
    if op in ("contains", "not_contains"):  # a substring of a string, an item of a list, nothing of anything else
        if type(seen) is str:
            has = type(operand) is str and seen.find(operand) >= 0
        else:
            has = type(seen) is list and any(_norm(x) == _norm(operand) for x in seen)
        return has is (op == "contains")
    matches = [_norm(seen) == _norm(x) for x in (operand if op in ("in", "not_in") else [operand])]
    return {"equals": any(matches), "not_equals": not any(matches), "in": any(matches),
            "not_in": not any(matches)}[op]


# ------------------------------------------------------------------------------------------------- strategies

SCALARS = st.sampled_from([None, None, True, False, 0, 1, 2, -1, 0.0, 1.0, 2.5, "", "1", "true", "a", "null"])
JSON = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                     st.dictionaries(st.sampled_from(["a", "b", "0"]), inner,
                                                                     max_size=3)), max_leaves=8)
CONTAINERS = st.one_of(st.lists(JSON, min_size=1, max_size=3),
                       st.dictionaries(st.sampled_from(["a", "b", "0"]), JSON, min_size=1, max_size=3))
KEYS = st.sampled_from(["a", "b", "0", "1"])


def _twins(v: Any) -> list[Any]:
    """Values close to ``v`` that JSON equality must tell apart (or not): the same value, its numbers with the other
    number type, booleans as numbers and numbers as booleans, its JSON text as a string, null."""
    out = [v, None, json.dumps(v)]
    if isinstance(v, bool):
        out.append(int(v))
    elif isinstance(v, int):
        out += [float(v)] + ([bool(v)] if v in (0, 1) else [])
    elif isinstance(v, float) and v.is_integer():
        out.append(int(v))
    elif isinstance(v, list):
        out += [[t for t in _twins(x)[1:2]] for x in v[:1]] + [[_twins(x)[-1] for x in v]]
    elif isinstance(v, dict):
        out.append({k: _twins(x)[-1] for k, x in v.items()})
    return out


@st.composite
def cases(draw) -> tuple[list[tuple[str, str, list[str], str, Any]], dict, dict]:
    args = draw(st.dictionaries(st.sampled_from(["x", "y"]), JSON, min_size=1, max_size=2))
    results = draw(st.dictionaries(st.sampled_from(["r", "s"]), st.one_of(CONTAINERS, JSON), min_size=1,
                                   max_size=2))
    conds = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["step", "arg"]))
        given = sorted(args if kind == "arg" else results)
        some = ["x", "y"] if kind == "arg" else ["r", "s", "t"]
        name = draw(st.sampled_from(given)) if given and draw(st.integers(0, 4)) != 4 else draw(st.sampled_from(some))
        path: list[str] = []
        if kind == "step":
            if draw(st.integers(0, 4)) != 4:  # mostly a path that exists, as far as it goes
                cur = results.get(name)
                while isinstance(cur, (dict, list)) and cur and draw(st.integers(0, 5)) != 5:
                    key = draw(st.sampled_from(sorted(cur) if isinstance(cur, dict) else
                                               [str(i) for i in range(len(cur))]))
                    path.append(key)
                    cur = cur[key] if isinstance(cur, dict) else cur[int(key)]
                if isinstance(cur, (dict, list)) and draw(st.integers(0, 3)) == 3:  # one step too far
                    path.append(str(len(cur)) if isinstance(cur, list) else "zz")
            else:
                path = draw(st.lists(KEYS, max_size=2))
        seen = _ref_lookup(kind, name, path, args, results)
        near = _twins(seen) if seen is not _ABSENT else [None]
        value = st.one_of(JSON, st.sampled_from(near))
        op = draw(st.sampled_from(tuple(conditions.OPERATORS)))
        if op == "exists":
            operand = draw(st.booleans())
        elif op in ("in", "not_in"):
            operand = draw(st.lists(value, max_size=3))
        elif op in ("contains", "not_contains"):  # mostly what the subject has: one of its items, a part of its text
            parts = list(seen) if isinstance(seen, list) else [seen[1:], seen[:1], seen + "x"] \
                if isinstance(seen, str) else []
            operand = draw(st.one_of(value, st.sampled_from(parts))) if parts else draw(value)
        else:
            operand = draw(value)
        conds.append((kind, name, path, op, operand))
    return conds, args, results


def _model(kind: str, name: str, path: list[str], op: str, operand: Any) -> Condition:
    subject = FromArg(name) if kind == "arg" else FromStep(name, ".".join(path) if path else None)
    return Condition(subject, op, operand)  # type: ignore[arg-type]


@pytest.mark.slow
@settings(max_examples=500, deadline=None)
@given(cases())
def test_the_evaluator_agrees_with_an_independent_reference(case):
    conds, args, results = case
    model = [_model(*c) for c in conds]
    for c, m in zip(conds, model):  # each condition on its own
        seen = _ref_lookup(c[0], c[1], c[2], args, results)
        assert conditions.check(m, lambda s: conditions.subject_value(s, args, results)).ok is \
            _ref_holds(c[3], c[4], seen), (c, seen)
    # and the run's question: which one fails first
    expected_first = next((i for i, c in enumerate(conds)
                           if not _ref_holds(c[3], c[4], _ref_lookup(c[0], c[1], c[2], args, results))), None)
    found = conditions.first_failure(model, args, results)
    if expected_first is None:
        assert found is None
    else:
        assert found is not None and found.condition is model[expected_first]
        seen = _ref_lookup(conds[expected_first][0], conds[expected_first][1], conds[expected_first][2], args,
                           results)
        assert (found.seen is conditions.MISSING) == (seen is _ABSENT)
        if seen is not _ABSENT:
            assert _norm(found.seen) == _norm(seen)


@pytest.mark.parametrize("a, b, equal", [
    (1, 1.0, True), (True, 1, False), ("1", 1, False), (False, 0, False), (None, None, True), (None, False, False),
    ([1, 2], [1.0, 2.0], True), ([1, 2], [2, 1], False), ({"a": 1}, {"a": 1.0}, True), ({"a": 1}, {"b": 1}, False),
    ({"a": [True]}, {"a": [1]}, False), ("", None, False), ([], {}, False),
])
def test_values_compare_as_json_values(a, b, equal):
    assert conditions.json_equal(a, b) is equal
    assert conditions.json_equal(b, a) is equal


def test_a_missing_value_fails_everything_but_exists_false():
    for op, operand in (("equals", None), ("not_equals", 1), ("in", [None]), ("not_in", [1]), ("exists", True)):
        assert conditions.holds(op, operand, conditions.MISSING) is False, op
    assert conditions.holds("exists", False, conditions.MISSING) is True
    assert conditions.holds("exists", True, None) is True  # null is a value
    assert conditions.holds("exists", False, None) is False


def test_failure_text_names_the_subject_the_value_seen_and_what_is_needed():
    def text(subject, op, value, args, results):
        found = conditions.first_failure([Condition(subject, op, value)], args, results)
        assert found is not None
        return conditions.failure_text(found)

    elig = FromStep("eligibility", "eligible")
    assert text(elig, "equals", True, {}, {"eligibility": {"eligible": False}}) == \
        "`eligibility.eligible` is `false`, the step needs `true`"
    assert text(elig, "equals", True, {}, {"eligibility": {}}) == \
        "`eligibility.eligible` is missing, the step needs `true`"
    assert text(FromArg("reason"), "exists", True, {}, {}) == "the argument `reason` was not given, the step needs it"
    assert text(FromArg("mode"), "in", ["a", "b"], {"mode": "c"}, {}) == \
        'the argument `mode` is `"c"`, the step needs one of `"a"`, `"b"`'
    assert text(FromStep("r"), "not_in", [1], {}, {"r": 1.0}) == "`r` is `1.0`, the step needs none of `1`"
    assert text(FromStep("r", "s"), "not_equals", "x", {}, {"r": {"s": "x"}}) == \
        '`r.s` is `"x"`, the step needs anything but `"x"`'
    assert text(FromStep("r", "s"), "exists", False, {}, {"r": {"s": None}}) == \
        "`r.s` is `null`, the step needs it to be absent"
    long = text(FromStep("r"), "equals", 1, {}, {"r": "x" * 500})
    assert len(long) < 200 and "…" in long


# --------------------------------------------------------------------------------------------- loading, errors

GATED = EXAMPLES / "refunds-gated.yaml"


def test_the_gated_example_loads_into_the_model():
    wf = load_file(GATED)
    assert wf.name == "refund_flow_gated"
    refund = wf.steps[2]
    assert refund.when == (Condition(FromStep("eligibility", "eligible"), "equals", True),)
    assert refund.on_fail == "stop"
    assert [s.when for s in wf.steps if s is not refund] == [(), (), ()]


def test_one_condition_may_be_written_without_the_list():
    base = "name: w\ndescription: d\ntools: [{name: t, annotations: {readOnlyHint: true}}]\nsteps:\n" \
           "  - {name: a, tool: t, bind: r}\n  - name: b\n    tool: t\n"
    one, d1 = parse(base + "    when: {step: r, field: ok, equals: 1}\n", "one.yaml")
    listed, d2 = parse(base + "    when: [{step: r, field: ok, equals: 1}]\n", "two.yaml")
    assert d1 == d2 == [] and one == listed


def test_every_condition_problem_of_a_file_is_reported_in_one_run():
    text = """name: w
description: d
arguments: [{name: reason}]
tools: [{name: t, annotations: {readOnlyHint: true}}]
steps:
  - name: a
    tool: t
    bind: r
    when: {step: r, exists: true}
  - name: b
    tool: t
    when:
      - {step: r, field: ok, equal: true}
      - {step: r, equals: 1, in: [1]}
      - {arg: reasn, exists: true}
      - {step: later, equals: 1}
      - {step: r, not_in: 3}
      - {step: r, exists: "yes"}
      - {step: r}
      - {const: 1, equals: 1}
    on_fail: ignore
  - name: c
    tool: t
    bind: later
    on_fail: skip
"""
    _, diags = parse(text, "many.yaml")
    found = sorted((d.code, d.span.line, d.span.col) for d in diags)
    assert found == sorted([
        ("forward-binding", 9, 18),        # a condition on the step's own result
        ("unknown-operator", 13, 30),
        ("multiple-operators", 14, 30),
        ("undeclared-argument", 15, 15),
        ("forward-binding", 16, 16),
        ("operator-needs-list", 17, 19),
        ("wrong-type", 18, 19),
        ("missing-operator", 19, 9),
        ("bad-source", 20, 10),
        ("bad-on-fail", 21, 14),
        ("on-fail-without-when", 25, 14),
    ]), found
    by_code = {d.code: d for d in diags}
    assert by_code["unknown-operator"].hint == "did you mean 'equals'?"
    assert by_code["bad-on-fail"].hint is not None and "stop" in by_code["bad-on-fail"].hint
    assert "this step saves itself" in [d for d in diags if d.span.line == 9][0].message


def test_the_schema_accepts_and_refuses_what_the_loader_does():
    import jsonschema
    from test_schema import SCHEMA

    validator = jsonschema.Draft202012Validator(SCHEMA)
    validator.validate(yaml.safe_load(GATED.read_text("utf-8")))
    step_ = {"name": "s", "tool": "t"}
    for bad in ({"step": "r", "equals": 1, "in": [1]}, {"step": "r"}, {"arg": "a", "step": "r", "exists": True},
                {"arg": "a", "field": "x", "exists": True}, {"step": "r", "in": 3}, {"step": "r", "equal": 1}):
        doc = {"name": "w", "description": "d", "steps": [{**step_, "when": bad}]}
        with pytest.raises(jsonschema.ValidationError):
            validator.validate(doc)
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({"name": "w", "description": "d", "steps": [{**step_, "on_fail": "ignore"}]})


def gated_in_code():
    from test_render import refunds_in_code

    wf = refunds_in_code()
    b = (WorkflowBuilder("refund_flow_gated",
                         "Process a customer refund, only for an order the eligibility check finds eligible.")
         .argument("order_id", "The order to refund", required=True, type="string")
         .argument("reason", "Why the customer asked for the refund")
         .instruction("system", "Refunds above the policy ceiling need a supervisor's approval."))
    for t in wf.tools:
        b.tool(t.name, t.description, input_schema=t.input_schema, annotations=t.annotations,
               output_schema=t.output_schema)
    for s in wf.steps:
        extra: dict[str, Any] = {}
        if s.name == "issue_refund":
            extra = {"when": [condition(step("eligibility", "eligible"), equals=True)], "on_fail": "stop"}
        b.step(s.name, tool=s.tool, args=dict(s.args), bind=s.bind, guidance=s.guidance, resources=s.resources,
               template=dict(s.template), **extra)
    return b.build()


def test_builder_and_yaml_agree_on_conditions():
    from_yaml = load_file(GATED)
    from_code = gated_in_code()
    assert from_code == from_yaml
    assert project(from_code).files == project(from_yaml).files


def test_the_builder_checks_conditions_like_the_loader():
    with pytest.raises(LoadError) as exc:
        (WorkflowBuilder("w", "d").tool("t", annotations={"readOnlyHint": True})
         .step("a", tool="t", bind="r", when=condition(arg("nope"), exists=True), on_fail="later")
         .step("b", tool="t", when=[condition(step("r"), in_=5), condition(step("r"), between=[1, 2])])
         .build())
    assert sorted(d.code for d in exc.value.diagnostics) == ["bad-on-fail", "operator-needs-list",
                                                              "undeclared-argument", "unknown-operator"]
    with pytest.raises(TypeError):
        condition(step("r"), equals=1, exists=True)
    with pytest.raises(TypeError):
        WorkflowBuilder("w", "d").step("a", tool="t", when=[{"step": "r"}])  # type: ignore[list-item]


@pytest.mark.parametrize("schema, path, missing", [
    (None, ("a",), False),
    ({"type": "object", "properties": {"eligible": {"type": "boolean"}}}, ("eligible",), False),
    ({"type": "object", "properties": {"eligible": {"type": "boolean"}}}, ("eligble",), True),
    ({"type": "object", "properties": {"a": {"type": "object", "properties": {"b": {}}}}}, ("a", "c"), True),
    ({"type": "object", "properties": {"items": {"type": "array", "items": {
        "type": "object", "properties": {"sku": {}}}}}}, ("items", 0, "sku"), False),
    ({"type": "object", "properties": {"items": {"type": "array", "items": {
        "type": "object", "properties": {"sku": {}}}}}}, ("items", 0, "skus"), True),
    ({"type": "object", "properties": {"a": {}}, "additionalProperties": True}, ("b",), False),
    ({"type": "object", "anyOf": [{"properties": {"a": {}}}, {}]}, ("b",), False),
    ({"type": "object"}, ("b",), False),
])
def test_field_paths_are_checked_against_a_declared_output_schema(schema, path, missing):
    """A condition's field path is checked by the same walker as a step argument's (fit.field_problem)."""
    wf = (WorkflowBuilder("w", "d")
          .tool("make", annotations={"readOnlyHint": True}, output_schema=schema)
          .tool("t", annotations={"readOnlyHint": True})
          .step("a", tool="make", bind="r")
          .step("b", tool="t", when=condition(step("r", ".".join(map(str, path))), exists=True)))
    if missing:
        with pytest.raises(LoadError) as exc:
            wf.build()
        [d] = exc.value.diagnostics
        assert d.code == "bad-field-path" and "the condition" in d.message
        assert d.message.endswith(fit.field_problem(schema, path))  # the one walker's own words
    else:
        wf.build()


WRAPPED = """name: w
description: d
tools:
  - name: check
    annotations: {readOnlyHint: true}
    output_schema:
      type: object
      properties: {result: {type: object, properties: {eligible: {type: boolean}}}}
      required: [result]
  - {name: refund, annotations: {destructiveHint: true}}
steps:
  - {name: a, tool: check, bind: eligibility}
  - name: b
    tool: refund
    when: {step: eligibility, field: FIELD, equals: true}
"""


def test_a_condition_field_starts_inside_the_result_envelope_like_a_step_argument(tmp_path):
    """A tool whose output schema is the SDKs' {result: x} envelope: the run saves x, so a condition reads
    ``eligible``, not ``result.eligible`` (as a step argument does)."""
    inside = tmp_path / "inside.yaml"
    inside.write_text(WRAPPED.replace("FIELD", "eligible"))
    assert load_file(inside).steps[1].when[0].subject.field == "eligible"
    outside = tmp_path / "outside.yaml"
    outside.write_text(WRAPPED.replace("FIELD", "result.eligible"))
    with pytest.raises(LoadError) as exc:
        load_file(outside)
    [d] = exc.value.diagnostics
    assert (d.code, d.span.line, d.span.col) == ("bad-field-path", 15, 18)
    assert d.message == ("step 'b', the condition, reads 'result.eligible' of 'eligibility', which the output schema "
                         "of the tool 'check' does not have: the result has no field 'result'; its fields: eligible")
    # an argument reading the same path gets the same answer from the same walker
    as_arg = tmp_path / "arg.yaml"
    as_arg.write_text(WRAPPED.replace("    when: {step: eligibility, field: FIELD, equals: true}\n",
                                      "    args: {x: {step: eligibility, field: result.eligible}}\n")
                      .replace("{name: refund, annotations", "{name: refund, input_schema: {type: object}, "
                                                            "annotations"))
    with pytest.raises(LoadError) as exc:
        load_file(as_arg)
    assert exc.value.diagnostics[0].message.endswith("the result has no field 'result'; its fields: eligible")


def test_a_condition_field_is_checked_against_a_server_tools_output_schema():
    """attach() and --tools-from take the tools from a server: the condition's field is checked against the
    server's output schema, as a step argument's is (the workflow declares no tools at all)."""
    text = WRAPPED.split("tools:")[0] + "steps:" + WRAPPED.split("steps:")[1]
    wf, diags = parse(text.replace("FIELD", "eligble"), "w.yaml", tools_from_server=True)
    assert diags == []
    tools = {"check": Tool("check", output_schema={"type": "object", "properties": {
                 "eligible": {"type": "boolean"}, "reasons": {"type": "array"}}}),
             "refund": Tool("refund", input_schema={"type": "object"})}
    [d] = fit.check_workflows([wf], tools)
    assert (d.code, d.span.line) == ("bad-field-path", 7)
    assert "the condition, reads 'eligble' of 'eligibility'" in d.message and "(did you mean 'eligible'?)" in d.message


# ----------------------------------------------------------------------------------------------- gate analysis

def test_gate_on_side_effect_does_not_fire_on_a_step_with_when():
    ungated = project(load_file(EXAMPLES / "refunds.yaml")).diagnostics
    gated = project(load_file(GATED)).diagnostics
    assert [d.code for d in ungated] == ["gate-on-side-effect"]
    assert [(d.code, d.severity) for d in gated] == [("guidance-on-side-effect", "note")]
    assert "enforces only the step's when: conditions" in gated[0].message


def test_the_gate_hint_suggests_when_naming_the_saved_result():
    [d] = project(load_file(EXAMPLES / "refunds.yaml")).diagnostics
    assert d.hint is not None
    assert d.hint.startswith("the guidance names the saved result 'eligibility'")
    assert "when: {step: eligibility, field: FIELD, equals: VALUE}" in d.hint
    # guidance that names no saved result keeps the old hint
    wf = (WorkflowBuilder("w", "d").tool("t", annotations={"destructiveHint": True})
          .step("s", tool="t", guidance="Only if the moon is full.").build())
    [plain] = project(wf).diagnostics
    assert plain.hint is not None and "when:" not in plain.hint and "make the tool enforce" in plain.hint


def test_a_step_using_a_skippable_result_warns_and_can_be_acknowledged():
    def wf(ack=None, guard=False):
        b = (WorkflowBuilder("w", "d").argument("go", type="boolean")
             .tool("t", annotations={"readOnlyHint": True}, output_schema={"type": "object"})
             .step("maybe", tool="t", bind="m", when=condition(arg("go"), equals=True), on_fail="skip"))
        b.step("after", tool="t", args={"x": step("m", "id")}, acknowledge=ack,
               when=condition(step("m"), exists=True) if guard else ())
        return b.build()

    [d] = project(wf()).diagnostics
    assert (d.code, d.severity, d.acknowledged) == ("uses-skippable-result", "warning", None)
    assert "step 1 'maybe'" in d.message and "'m'" in d.message
    [acked] = project(wf({"uses-skippable-result": "after copes without it"})).diagnostics
    assert acked.acknowledged == "after copes without it"
    assert project(wf(guard=True)).diagnostics == []


def test_skills_only_findings_say_no_workflow_prompt_is_served():
    """``build --skills-only`` serves no prompt: the same findings fire (codes, severities, places, acknowledgements
    alike), but none of them says that a workflow prompt or a server-side run does anything."""
    skippy = (WorkflowBuilder("w", "d").argument("go", type="boolean")
              .tool("t", annotations={"readOnlyHint": True}, output_schema={"type": "object"})
              .step("maybe", tool="t", bind="m", when=condition(arg("go"), equals=True), on_fail="skip")
              .step("after", tool="t", args={"x": step("m", "id")}).build())
    for wf in (load_file(EXAMPLES / "refunds.yaml"), load_file(GATED), skippy):
        served, alone = project(wf).diagnostics, project(wf, skills_only=True).diagnostics
        assert [(d.code, d.severity, d.span, d.acknowledged) for d in alone] == \
            [(d.code, d.severity, d.span, d.acknowledged) for d in served] != []
        for d in alone:
            words = f"{d.message} {d.hint or ''}"
            assert "workflow prompt will run" not in words and "server-side prompt" not in words, words
            assert "server-side run enforces it;" not in words and "server-side run then" not in words, words

    [gate] = project(load_file(EXAMPLES / "refunds.yaml"), skills_only=True).diagnostics
    assert gate.message.endswith("(\"Only issue the refund if\"). Only the model's judgment applies it: no workflow "
                                 "prompt is served (--skills-only), and nothing on the server stops the call if the "
                                 "model decides wrong")
    assert gate.hint is not None and "when: {step: eligibility, field: FIELD, equals: VALUE}, and the skill states it " \
        "as an exact check before the call" in gate.hint
    [note] = project(load_file(GATED), skills_only=True).diagnostics
    assert note.message.endswith("with guidance; only the model's judgment applies it: no workflow prompt is served "
                                 "(the skill states its when: conditions as checks before the call)")
    [skip] = project(skippy, skills_only=True).diagnostics
    assert "(on_fail: skip); the model then has no value for it" in skip.message


def test_build_skills_only_prints_the_skills_only_wording(cli, tmp_path):
    run = cli("build", str(EXAMPLES / "refunds.yaml"), "--skills-only", "--out", str(tmp_path / "out"))
    assert run.code == 0
    assert "no workflow prompt is served (--skills-only)" in run.err + run.out
    assert "workflow prompt will run this step anyway" not in run.err + run.out
    run = cli("check", str(EXAMPLES / "refunds.yaml"), "--skills-only", "--out", str(tmp_path / "out"))
    assert run.code == 0 and "no workflow prompt is served (--skills-only)" in run.err + run.out


# ------------------------------------------------------------------------------------------------- the wording

def _section(body: str, number: int) -> str:
    return re.split(r"(?m)^### Step ", body.split("## Server-accelerated alternative")[0])[number]


def test_the_gated_skill_states_the_condition_before_the_call():
    body = project(load_file(GATED)).files["SKILL.md"].decode()
    step3 = _section(body, 3)
    sentence = ("**Condition:** call `issue_refund` only if the field `eligible` of `eligibility` (step 2) is `true`.")
    assert sentence in step3
    assert step3.index(sentence) < step3.index("Call the tool `issue_refund`")
    assert "stop the procedure here, and tell the user which condition failed" in step3
    assert "**Judgment:** Only issue the refund if" in step3  # guidance stays as the Judgment
    assert "Decide this yourself" not in step3  # no longer a gate left to the reader alone
    alternative = body.split("## Server-accelerated alternative")[1]
    enforced, judgment = alternative.split("Beyond these conditions, it cannot apply the judgment of:")
    assert "- Step 3, `issue_refund`: the field `eligible` of `eligibility` (step 2) is `true`. Otherwise it stops." \
        in enforced
    assert "Only issue the refund if" in judgment and "Only issue" not in enforced
    assert "unconditionally" not in alternative


SUBJECTS = st.sampled_from([("arg", "mode"), ("step", "res"), ("field", "res.status"), ("field", "res.items.0")])
OPERANDS = st.one_of(st.booleans(), st.integers(-5, 5), st.sampled_from(["shipped", "a`b", "x y", ""]),
                     st.none())


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(SUBJECTS, st.sampled_from(tuple(conditions.OPERATORS)), OPERANDS,
                          st.lists(OPERANDS, min_size=1, max_size=3)), min_size=1, max_size=4),
       st.sampled_from(["stop", "skip"]))
def test_the_wording_names_every_condition(conds, on_fail):
    model = []
    for (kind, name), op, operand, items in conds:
        subject = arg(name) if kind == "arg" else step(*name.split(".", 1)) if kind == "field" else step(name)
        value = items if op in ("in", "not_in") else bool(operand) if op == "exists" else operand
        model.append(condition(subject, **{"in_" if op == "in" else op: value}))
    wf = (WorkflowBuilder("w", "d").argument("mode").tool("t", annotations={"readOnlyHint": True})
          .step("first", tool="t", bind="res")
          .step("second", tool="t", when=model, on_fail=on_fail).build())
    body = project(wf).files["SKILL.md"].decode()
    step2 = _section(body, 2)
    call = step2.index("Call the tool `t`")
    from projector.render import canonical_json, code, describe_condition
    for c in model:
        words = describe_condition(c, wf)
        assert step2.index(words) < call
        subject = c.subject
        if isinstance(subject, FromArg):
            assert f"the input `{subject.name}`" in words
        elif subject.field is not None:
            assert f"the field {code(subject.field)} of `res` (step 1)" in words
        else:
            assert "the result saved as `res` (step 1)" in words
        operands = c.value if c.op in ("in", "not_in") else [] if c.op == "exists" else [c.value]
        for v in operands:
            assert code(canonical_json(v, indent=None)) in words
        assert words in body.split("## Server-accelerated alternative")[1]
    assert ("skip this step" in step2) is (on_fail == "skip")
    assert ("stop the procedure here" in step2) is (on_fail == "stop")


# ------------------------------------------------------------------------------------ exact wording (mutation)

@pytest.mark.parametrize("subject, op, value, words", [
    (FromStep("elig", "ok"), "equals", True, "`elig.ok` is `true`"),
    (FromArg("mode"), "not_equals", "no", 'the argument `mode` is not `"no"`'),
    (FromArg("mode"), "in", ["a", 1], 'the argument `mode` is one of `"a"`, `1`'),
    (FromArg("mode"), "not_in", ["a"], 'the argument `mode` is none of `"a"`'),
    (FromArg("mode"), "in", [], "the argument `mode` is one of nothing"),
    (FromArg("reason"), "exists", True, "the argument `reason` is given"),
    (FromArg("reason"), "exists", False, "the argument `reason` is not given"),
    (FromStep("r"), "exists", True, "`r` exists"),
    (FromStep("r", "a.b"), "exists", False, "`r.a.b` does not exist"),
])
def test_statement_words_every_operator(subject, op, value, words):
    assert conditions.statement(Condition(subject, op, value)) == words


def test_requirement_of_an_empty_list():
    assert conditions.requirement(Condition(FromArg("m"), "in", [])) == "one of nothing"
    assert conditions.requirement(Condition(FromArg("m"), "not_in", [])) == "none of nothing"


def test_literal_is_compact_sorted_json_with_unicode_kept():
    assert conditions.literal({"b": [1, "é"], "a": None}) == '{"a": null, "b": [1, "é"]}'


def test_a_value_seen_is_cut_after_max_seen_characters():
    """The stop message quotes the value seen whole up to MAX_SEEN characters, and cut with an ellipsis past it."""
    cond = Condition(FromArg("m"), "equals", "z")

    def said(seen: str) -> str:
        text = conditions.failure_text(conditions.check(cond, lambda s: seen))
        return text.removeprefix("the argument `m` is `").removesuffix('`, the step needs `"z"`')

    fits = "x" * (conditions.MAX_SEEN - 2)  # with its quotes, exactly MAX_SEEN characters
    assert said(fits) == f'"{fits}"'
    assert said(fits + "y") == f'"{fits}' + "…"
    assert len(said(fits + "y")) == conditions.MAX_SEEN


def test_an_unknown_operator_is_a_clear_error_and_missing_has_a_name():
    with pytest.raises(ValueError, match=r"^unknown operator 'bigger'$"):
        conditions.holds("bigger", 1, 1)
    assert repr(conditions.MISSING) == "MISSING"


@pytest.mark.parametrize("subject, op, value, words", [
    (FromStep("elig", "ok"), "equals", True, "the field `ok` of `elig` (step 1) is `true`"),
    (FromArg("mode"), "not_equals", "no", 'the input `mode` is not `"no"`'),
    (FromArg("mode"), "in", ["a", 1], 'the input `mode` is one of `"a"`, `1`'),
    (FromStep("elig"), "not_in", ["a"], 'the result saved as `elig` (step 1) is none of `"a"`'),
    (FromArg("mode"), "not_in", [], "the input `mode` is none of nothing"),
    (FromArg("reason"), "exists", True, "the user gave the input `reason`"),
    (FromArg("reason"), "exists", False, "the user did not give the input `reason`"),
    (FromStep("elig"), "exists", True, "the result saved as `elig` (step 1) is present"),
    (FromStep("gone", "a.b"), "exists", False, "the field `a.b` of `gone` (an earlier step) is absent"),
])
def test_the_skill_words_every_operator(subject, op, value, words):
    """The SKILL.md's words of each operator (the table's prose), exactly."""
    from projector.render import describe_condition

    wf = (WorkflowBuilder("w", "d").tool("t", annotations={"readOnlyHint": True})
          .step("first", tool="t", bind="elig").build())
    assert describe_condition(Condition(subject, op, value), wf) == words


def test_every_operator_has_its_words_and_its_kind_of_operand():
    """Each entry of the one table says its condition in all three renderings, and the validator holds its operand
    to the entry's kind: a list for a list operator, true or false for a boolean one."""
    for name, op in conditions.OPERATORS.items():
        operand = [1] if op.operand == "list" else True
        for of_argument in (True, False):
            words = op.words(operand, of_argument)
            assert "{subject}" in words.plan and "{subject}" in words.prose
        wrong = "x" if op.operand in ("list", "bool") else None
        if wrong is None:
            continue
        wf = WorkflowBuilder("w", "d").argument("m").step("s", resources=["r://x"], when=[
            Condition(FromArg("m"), name, wrong)])
        with pytest.raises(LoadError) as exc:
            wf.build()
        [d] = [d for d in exc.value.diagnostics if d.code in ("operator-needs-list", "wrong-type")]
        assert d.code == ("operator-needs-list" if op.operand == "list" else "wrong-type")
        assert f"'{name}' in the condition of step 's'" in d.message


# The runner's words for a condition: what the step needs, why it failed, the operand.


@pytest.mark.parametrize("subject, op, value, needs", [
    (FromArg("a"), "equals", 1, "`1`"),
    (FromStep("r", "f"), "equals", "x", '`"x"`'),
    (FromArg("a"), "not_equals", None, "anything but `null`"),
    (FromStep("r"), "not_equals", [1], "anything but `[1]`"),
    (FromArg("a"), "in", [1, "b"], 'one of `1`, `"b"`'),
    (FromStep("r"), "in", [True], "one of `true`"),
    (FromArg("a"), "not_in", [{"k": 1}], 'none of `{"k": 1}`'),
    (FromStep("r", "f"), "not_in", [], "none of nothing"),
    (FromArg("a"), "exists", True, "it"),
    (FromArg("a"), "exists", False, "it to be absent"),
    (FromStep("r"), "exists", True, "it"),
    (FromStep("r", "f"), "exists", False, "it to be absent"),
])
def test_what_the_step_needs_for_every_operator_and_subject(subject, op, value, needs):
    """The runner's "the step needs ..." words (:func:`conditions.requirement`), for an argument and for a result
    alike, of every operator: ``exists`` says ``it`` or ``it to be absent`` whatever the subject."""
    assert conditions.requirement(Condition(subject, op, value)) == needs


@pytest.mark.parametrize("subject, op, value, args, results, line", [
    (FromArg("reason"), "exists", False, {"reason": "late"}, {},
     'the argument `reason` is `"late"`, the step needs it to be absent'),
    (FromStep("lookup"), "exists", True, {}, {}, "`lookup` is missing, the step needs it"),
    (FromStep("lookup", "order.id"), "exists", True, {}, {"lookup": {"order": {}}},
     "`lookup.order.id` is missing, the step needs it"),
])
def test_the_failure_line_of_an_exists_condition(subject, op, value, args, results, line):
    found = conditions.first_failure([Condition(subject, op, value)], args, results)
    assert found is not None
    assert conditions.failure_text(found) == line


@pytest.mark.parametrize("op, value, text", [
    ("equals", {"b": 1, "a": "é"}, '<{"a": "é", "b": 1}>'),
    ("not_equals", "x", '<"x">'),
    ("in", [1, None], "<1>, <null>"),
    ("not_in", [], "nothing"),
    ("exists", True, ""),
    ("exists", False, ""),
])
def test_the_operand_as_a_rendering_writes_it(op, value, text):
    """A value by ``show``; a list as its items (``nothing`` when empty); a boolean not at all: the words of
    ``exists`` say it, so the operand is the empty text."""
    show = lambda v: f"<{conditions.literal(v)}>"  # noqa: E731
    assert conditions.operand_text(Condition(FromArg("a"), op, value), show) == text
