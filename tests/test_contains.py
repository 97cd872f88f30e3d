"""`contains` and `not_contains`: words for text results (issue 42, item 3), through `build`, `evals` and
`evals run` as a user runs them. The server's run is in tests/server/test_contains.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

PUBLISH = """\
name: publish-when-ready
description: Publish the draft once its status file says ready.
arguments:
  - {{name: draft, type: string, required: true}}
  - {{name: count, type: integer, required: true}}
tools:
  - name: read_status
    description: Read the status file as text.
    input_schema: {{type: object, properties: {{path: {{type: string}}}}, required: [path]}}
    annotations: {{readOnlyHint: true}}
  - name: list_labels
    description: The draft's labels.
    input_schema: {{type: object}}
    output_schema: {{type: object, properties: {{labels: {{type: array}}, pages: {{type: integer}}}}, required: [labels]}}
    annotations: {{readOnlyHint: true}}
  - name: publish
    description: Publish the draft.
    input_schema: {{type: object, properties: {{draft: {{type: string}}}}, required: [draft]}}
    annotations: {{readOnlyHint: false, destructiveHint: false}}
steps:
  - {{name: status, tool: read_status, args: {{path: {{const: status.txt}}}}, bind: status}}
  - {{name: labels, tool: list_labels, bind: labels}}
  - name: publish
    tool: publish
    args: {{draft: {{arg: draft}}}}
    when:
{conditions}"""

GOOD = (
    "{step: status, contains: ready}",
    "{step: status, not_contains: error}",
    "{step: labels, field: labels, contains: approved}",
)


def _workflow(tree, *conditions: str) -> Path:
    text = PUBLISH.format(conditions="".join(f"      - {c}\n" for c in conditions))
    return tree({"flows/publish.yaml": text}) / "flows"


def test_contains_builds_says_it_in_plain_words_and_warns_about_nothing(cli, tmp_path, tree):
    root = _workflow(tree, *GOOD)
    r = cli("build", "--no-cache", "--no-config", "--strict", "--out", str(tmp_path / "out"), str(root))
    assert r.code == 0, r.err
    assert "dead-condition" not in r.err and "eval-uncovered" not in r.err
    skill = (tmp_path / "out" / "publish-when-ready" / "SKILL.md").read_text("utf-8")
    assert 'the result saved as `status` (step 1) contains `"ready"`' in skill
    assert 'the result saved as `status` (step 1) does not contain `"error"`' in skill
    assert 'the field `labels` of `labels` (step 2) contains `"approved"`' in skill


def test_each_contains_condition_gets_a_case_where_it_holds_and_one_where_it_fails(cli, tree):
    """The run's case gives the status file a text with a trailing newline that contains `ready`, and a list with
    the label; each failing case a value that does not contain it (or, for not_contains, the operand itself)."""
    root = _workflow(tree, *GOOD)
    r = cli("evals", "--no-config", str(root))
    assert r.code == 0, r.err
    cases = {
        c["projector"]["covers"][0]: {x["step"]: x["returns"] for x in c["projector"]["results"]}
        for c in json.loads(r.out)["evals"]
    }
    run = cases["the run, every condition holding and every confirmation a yes"]
    assert run == {"status": "ready\n", "labels": {"labels": ["approved"]}}
    assert "ready" not in json.dumps(cases["publish: when[0] fails"]["status"])
    assert "error" in cases["publish: when[1] fails"]["status"]
    assert "approved" not in json.dumps(cases["publish: when[2] fails"]["labels"]["labels"])
    assert isinstance(cases["publish: when[2] fails"]["labels"]["labels"], list)  # within the output schema


@pytest.mark.parametrize(
    ("condition", "why", "hint"),
    [
        (
            "{arg: count, contains: 1}",
            "can never hold: an integer contains nothing (only a string or a list does)",
            "compare with a value of the subject's type",
        ),
        (
            "{arg: draft, contains: 7}",
            "can never hold: a string contains only text, never an integer",
            'write contains: "7"',
        ),
        (
            "{step: labels, field: pages, not_contains: 3}",
            "can never fail while `labels.pages` has a value: an integer contains nothing",
            None,
        ),
    ],
)
def test_contains_on_a_subject_that_can_never_contain_the_operand_is_a_dead_condition(
    cli, tmp_path, tree, condition, why, hint
):
    root = _workflow(tree, condition)
    r = cli("build", "--no-cache", "--no-config", "--out", str(tmp_path / "out"), str(root))
    assert r.code == 0, r.err
    [line] = [x for x in r.err.splitlines() if "warning[dead-condition]" in x]
    assert why in line and "publish.yaml:" in line
    if hint:
        assert hint in r.err
    assert "eval-uncovered" not in r.err  # one word for one cause


def test_contains_in_the_schema_and_a_misspelling_suggests_it(cli, tmp_path, tree):
    r = cli("schema")
    condition = json.loads(r.out)["$defs"]["condition"]["properties"]
    assert "contains" in condition and "not_contains" in condition
    root = _workflow(tree, "{step: status, contain: ready}")
    r = cli("check", "--no-cache", "--no-config", "--out", str(tmp_path / "out"), str(root))
    assert r.code == 1 and "did you mean 'contains'?" in r.err, r.err


def _project_skill(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "projector.cli", *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


@pytest.mark.slow
def test_the_derived_cases_of_a_contains_gate_pass_on_the_real_servers_workflow_prompt(tmp_path, tree):
    """A small project: the workflow above, built; each derived case served by `project-skill serve` with the
    results the case states, on the workflow prompt: the gate publishes only where the text contains `ready`."""
    root = _workflow(tree, *GOOD)
    built = _project_skill("build", "--no-config", "--out", "skills", str(root), cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    run = _project_skill(
        "evals", "run", "--no-config", "--skills", "skills", "--surface", "prompt", "--json", str(root), cwd=tmp_path
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    [report] = json.loads(run.stdout)
    assert report["cases"] == 4 and report["passed"] == 4 and report["unsafe"] == 0, report
    published = {r["covers"][0]: "publish" in [c["tool"] for c in r["calls"]] for r in report["runs"]}
    assert published == {
        "the run, every condition holding and every confirmation a yes": True,
        "publish: when[0] fails": False,
        "publish: when[1] fails": False,
        "publish: when[2] fails": False,
    }
