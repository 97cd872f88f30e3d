"""`eval-uncovered` says why no case covers a gate, and can be acknowledged (issue 42, item 2), through `build` and
`check` as a user runs them."""

from __future__ import annotations

from pathlib import Path

WORKFLOW = """\
name: {name}
description: Write the mode down.
arguments:
  - {{name: mode, type: string, required: true}}
tools:
  - name: look
    input_schema: {{type: object}}
    output_schema: {{type: object, properties: {{ready: {{type: string}}}}, required: [ready]}}
    annotations: {{readOnlyHint: true}}
  - name: write
    input_schema: {{type: object, properties: {{mode: {{type: string}}}}}}
    annotations: {{readOnlyHint: false}}
steps:
  - name: check
    tool: look
    bind: seen
    when:
      - {{arg: mode, equals: a}}
  - name: write
    tool: write
    args: {{mode: {{arg: mode}}}}
    when:
{conditions}
{extra}"""


def _workflow(tree, name: str, *conditions: str, extra: str = "") -> Path:
    text = WORKFLOW.format(name=name, conditions="".join(f"      - {c}\n" for c in conditions), extra=extra)
    return tree({f"{name}/{name}.yaml": text}) / name


def _build(cli, tmp_path: Path, root: Path, *flags: str):
    return cli("build", "--no-cache", "--no-config", "--out", str(tmp_path / "out"), *flags, str(root))


def test_a_repeated_guard_names_the_earlier_step_whose_condition_stops_the_run(cli, tmp_path, tree):
    """The same condition on two consecutive steps: the second can never fail on its own. The warning says so, and
    which earlier condition stops the run first, instead of sending the author to look for a contradiction."""
    r = _build(cli, tmp_path, _workflow(tree, "twice", "{arg: mode, equals: a}"))
    assert r.code == 0, r.err
    line = next(x for x in r.err.splitlines() if "warning[eval-uncovered]" in x)
    assert "twice.yaml:" in line and "contradict" not in line
    assert "step 'check''s condition that the argument `mode` is `\"a\"` (when[0]) fails first" in line
    assert "the run stops there" in line and "it repeats that condition" in line


def test_a_contradiction_names_the_two_conditions(cli, tmp_path, tree):
    r = _build(cli, tmp_path, _workflow(tree, "never", "{arg: mode, equals: b}"))
    line = next(x for x in r.err.splitlines() if "warning[eval-uncovered]" in x)
    assert 'its condition that the argument `mode` is `"b"` (when[0]) can never hold together with step ' in line
    assert "'check''s condition that the argument `mode` is `\"a\"` (when[0])" in line


def test_a_condition_dead_condition_names_gets_no_second_word_but_another_cause_on_the_step_does(cli, tmp_path, tree):
    """`equals: true` on a field the output schema says is a string is `dead-condition`'s, at the operand; not also
    an `eval-uncovered` claiming a contradiction. A repeated guard on the same step is still said."""
    root = _workflow(tree, "dead", "{step: seen, field: ready, not_equals: true}", "{arg: mode, equals: a}")
    r = _build(cli, tmp_path, root)
    assert "warning[dead-condition]" in r.err, r.err
    uncovered = [x for x in r.err.splitlines() if "warning[eval-uncovered]" in x]
    assert len(uncovered) == 1 and "when[1]" in uncovered[0] and "it repeats" in uncovered[0]
    r = _build(cli, tmp_path, _workflow(tree, "deader", "{step: seen, field: ready, equals: true}"))
    assert "warning[dead-condition]" in r.err and "eval-uncovered" not in r.err, r.err


def test_eval_uncovered_can_be_acknowledged_and_strict_then_passes(cli, tmp_path, tree):
    ack = "    acknowledge: {eval-uncovered: a second guard in case the check step is removed}\n"
    root = _workflow(tree, "twice", "{arg: mode, equals: a}", extra=ack)
    r = _build(cli, tmp_path, root, "--strict")
    assert r.code == 0, r.err
    assert "warning[eval-uncovered]" in r.err and "(acknowledged: a second guard" in r.err
    assert "unknown-acknowledgement" not in r.err and "unused-acknowledgement" not in r.err
    r = cli("check", "--no-cache", "--no-config", "--strict", "--out", str(tmp_path / "out"), str(root))
    assert r.code == 0, r.err


def test_an_eval_uncovered_acknowledgement_that_does_not_fire_is_unused(cli, tmp_path, tree):
    ack = "    acknowledge: {eval-uncovered: stale}\n"
    root = _workflow(tree, "fine", "{step: seen, field: ready, equals: done}", extra=ack)
    r = _build(cli, tmp_path, root)
    assert "eval-uncovered" not in r.err.replace("acknowledges 'eval-uncovered'", "")
    assert "warning[unused-acknowledgement]" in r.err and "acknowledges 'eval-uncovered'" in r.err, r.err
    assert _build(cli, tmp_path, root, "--strict").code == 1


REACH = """\
name: reach
description: Write the mode down.
arguments:
  - {name: mode, type: string, required: true}
tools:
  - name: look
    annotations: {readOnlyHint: true}
  - name: write
    annotations: {readOnlyHint: false}
steps:
  - name: check
    tool: look
    when:
      - {arg: mode, equals: a}
      - {arg: mode, in: [b, c]}
  - name: write
    tool: write
    confirm: {message: Write it?}
"""


def test_a_step_the_run_never_reaches_names_the_earlier_step_that_never_runs(cli, tmp_path, tree):
    """A confirmed write after a read-only step whose own conditions contradict: the write's warning says the run
    never reaches it, and why the earlier step never runs."""
    r = _build(cli, tmp_path, tree({"reach/reach.yaml": REACH}) / "reach")
    line = next(x for x in r.err.splitlines() if "warning[eval-uncovered]" in x)
    assert "step 'write' calls" in line and "the run never reaches it: step 'check' before it never runs (" in line
    assert 'is one of `"b"`, `"c"` (when[1]) can never hold together with its condition' in line


LISTS = """\
name: tidy
description: Delete the obsolete entity when the search found nothing, unless the labels say keep.
arguments:
  - {name: labels, type: string, required: true}
tools:
  - name: search
    input_schema: {type: object}
    output_schema: {type: object, properties: {entities: {type: array}, meta: {type: object}}}
    annotations: {readOnlyHint: true}
  - name: delete
    input_schema: {type: object}
    annotations: {readOnlyHint: false, destructiveHint: true}
steps:
  - name: search
    tool: search
    bind: found
  - name: delete
    tool: delete
    when:
      - {step: found, field: entities, equals: []}
      - {step: found, field: meta, not_equals: {}}
      - {step: found, field: entities, not_in: [[keep]]}
"""


def test_a_condition_on_a_list_or_an_object_gets_its_cases(cli, tmp_path, tree):
    """A new user's `equals: []` on an array field was eval-uncovered ("no value its subject can have makes it
    hold"): an equals operand that is a list was taken for the values of an `in`, and no array or object was ever
    tried. Each of the three conditions now holds in the run's case and fails in its own."""
    root = tree({"tidy.yaml": LISTS})
    r = _build(cli, tmp_path, root, "--strict")
    assert r.code == 0 and "eval-uncovered" not in r.err, r.err
    printed = cli("evals", "--no-config", str(root / "tidy.yaml"))
    covers = [case["projector"]["covers"][0] for case in __import__("json").loads(printed.out)["evals"]]
    assert covers == ["the run, every condition holding and every confirmation a yes",
                      "delete: when[0] fails", "delete: when[1] fails", "delete: when[2] fails"], covers
