"""The eval cases derived from each workflow (projector/evals.py), through what a user touches: `build`, `check`,
`project-skill evals`, and the skills tree that `serve` loads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from projector.load import load_all
from tests.conftest import EXAMPLES

ARGUMENT_TYPES = ("string", "number", "integer", "boolean")


def _build(cli, tmp_path: Path, *paths: str, strict: bool = False) -> Path:
    out = tmp_path / "out"
    args = ["build", "--no-cache", "--no-config", "--out", str(out), *(paths or [str(EXAMPLES)])]
    r = cli(*args, *(["--strict"] if strict else []))
    assert r.code == 0, r.out + r.err
    return out


def _cases(out: Path) -> Path:
    """The folder of the eval cases that a build into ``out`` writes: beside it (``out-evals``)."""
    return out.with_name(f"{out.name}-evals")


def _evals(out: Path, skill: str) -> list[dict]:
    return json.loads((_cases(out) / skill / "evals.json").read_text("utf-8"))["evals"]


def _queries(out: Path, skill: str) -> list[dict]:
    return json.loads((_cases(out) / skill / "eval_queries.json").read_text("utf-8"))


def test_every_example_has_derived_cases_at_least_as_many_as_its_gates(cli, tmp_path):
    out = _build(cli, tmp_path)
    index = json.loads((out / "skills.json").read_text("utf-8"))["skills"]
    workflows = {wf.description: wf for wf in load_all([str(EXAMPLES)])}
    assert len(index) == len(workflows) == 5
    for entry in index:
        skill = entry["frontmatter"]["name"]
        wf = workflows[entry["frontmatter"]["description"]]
        cases = _evals(out, skill)
        queries = _queries(out, skill)
        negatives = [q for q in queries if not q["should_trigger"]]
        assert [q["query"] for q in queries if q["should_trigger"]] == [wf.description]
        assert sorted(q["query"] for q in negatives) == sorted(d for d in workflows if d != wf.description)
        conditions = sum(len(s.when) for s in wf.steps)
        confirmations = sum(s.confirm is not None for s in wf.steps)
        asked = sum(a.ask for a in wf.arguments)
        assert len(cases) + len(negatives) >= 2 * (conditions + confirmations) + asked + len(negatives), skill
        assert [c["id"] for c in cases] == list(range(1, len(cases) + 1))
        for case in cases:  # the Agent Skills fields, and the oracle as server state
            assert case["prompt"].startswith(wf.description) and case["expected_output"] and case["expectations"]
            assert set(case["projector"]) == {"covers", "arguments", "results", "answers", "calls"}


def test_the_approved_refund_has_a_case_for_each_condition_answer_and_asked_input(cli, tmp_path):
    out = _build(cli, tmp_path)
    cases = {tuple(c["projector"]["covers"]): c["projector"] for c in _evals(out, "refund-flow-approved")}
    assert set(cases) == {
        ("the run, every condition holding and every confirmation a yes",),
        ("issue_refund: when[0] fails",),
        ("issue_refund: confirm decline",),
        ("issue_refund: confirm cancel",),
        ("reason: asked, given",),
        ("reason: asked, refused",),
    }

    run = cases[("the run, every condition holding and every confirmation a yes",)]
    assert run["results"] == [{"step": "check_eligibility", "tool": "check_eligibility", "returns": {"eligible": True}}]
    assert [(c["tool"], c["called"]) for c in run["calls"]] == [
        ("get_order", True),
        ("check_eligibility", True),
        ("issue_refund", True),
    ]
    assert run["calls"][0]["arguments"] == {"id": run["arguments"]["order_id"]}
    assert run["calls"][2]["arguments"] == {
        "order_id": {"step": "order", "field": "id"},
        "amount": {"step": "order", "field": "total"},
    }

    failed = cases[("issue_refund: when[0] fails",)]
    assert failed["results"][0]["returns"] == {"eligible": False}
    assert failed["calls"] == [{"step": "issue_refund", "tool": "issue_refund", "called": False}]
    for action in ("decline", "cancel"):
        said = cases[(f"issue_refund: confirm {action}",)]
        assert said["answers"] == [{"step": "issue_refund", "question": "confirm", "action": action}]
        assert said["calls"][0]["called"] is False

    given, refused = cases[("reason: asked, given",)], cases[("reason: asked, refused",)]
    for case in (given, refused):
        assert "reason" not in case["arguments"]
    assert given["answers"][0] == {
        "step": "issue_refund",
        "question": "ask",
        "action": "accept",
        "content": {"reason": "example-reason"},
    }
    assert refused["answers"][0] == {"step": "issue_refund", "question": "ask", "action": "decline"}
    assert (given["calls"][0]["called"], refused["calls"][0]["called"]) == (True, False)


def test_check_fails_on_a_stale_or_missing_eval_file(cli, tmp_path):
    out = _build(cli, tmp_path)
    check = ["check", "--no-cache", "--no-config", "--out", str(out), str(EXAMPLES)]
    assert cli(*check).code == 0
    cases = _cases(out) / "refund-flow-gated" / "evals.json"
    cases.write_text(cases.read_text("utf-8").replace('"called": false', '"called": true'), "utf-8")
    r = cli(*check)
    assert r.code == 1 and "stale: " in r.out and "out-evals/refund-flow-gated/evals.json" in r.out
    cases.unlink()
    (_cases(out) / "hello-world" / "eval_queries.json").unlink()
    r = cli(*check)
    assert r.code == 1
    assert "missing: " in r.out and "out-evals/refund-flow-gated/evals.json" in r.out
    assert "out-evals/hello-world/eval_queries.json" in r.out
    assert _build(cli, tmp_path) == out and cli(*check).code == 0


def test_eval_cases_are_in_a_tree_of_their_own_beside_the_skills(cli, tmp_path):
    """Issue 38 (8): the cases hold the expected answers, and a skills server serves a skill's folder whole: no file
    of them is in the skills tree, and its index does not name them."""
    from projector.server.tree import SkillTree

    out = _build(cli, tmp_path)
    assert not [p for p in out.rglob("*") if "eval" in p.name]
    assert "eval" not in (out / "skills.json").read_text("utf-8")
    tree = SkillTree.load(out)
    skill = tree.skill("skill://refund-flow-approved/SKILL.md")
    assert skill is not None and sorted(f.rel for f in skill.files) == ["SKILL.md", "references/tools.md"]
    assert sorted(p.relative_to(_cases(out)).as_posix() for p in _cases(out).rglob("*.json")) == sorted(
        f"{skill}/{name}"
        for skill in ("code-mode", "hello-world", "refund-flow", "refund-flow-approved", "refund-flow-gated")
        for name in ("eval_queries.json", "evals.json")
    )


async def _served_by_fastmcps_directory_provider(root: Path) -> dict[str, list[str]]:
    """Every resource FastMCP's own ``SkillsDirectoryProvider`` lists for ``root``, and every file of each skill
    that its skills client reads (verified): what any agent on such a server could read."""
    from fastmcp import Client, FastMCP
    from fastmcp.skills import SkillsClientExtension
    from fastmcp.skills.provider import SkillsDirectoryProvider

    server = FastMCP("generic")
    server.add_provider(SkillsDirectoryProvider(root))
    async with Client(server, extensions=[SkillsClientExtension()]) as client:
        served = {"resources": sorted(str(r.uri) for r in await client.list_resources())}
        for entry in await client.list_skills():
            served[entry.uri] = sorted((await client.read_skill(entry.uri)).files)
    return served


@pytest.mark.parametrize("tree", ["built", "committed"])
def test_a_generic_skills_server_pointed_at_the_skills_serves_no_eval_case(cli, tmp_path, tree):
    """Issue 38 (8): FastMCP's ``SkillsDirectoryProvider`` serves every file of a skill's folder; pointed at the
    skills (a fresh build, and the committed generated_skills/), it serves each skill's own files and no case."""
    pytest.importorskip("fastmcp", reason="the fastmcp extra is not installed")
    import anyio

    from tests.conftest import ROOT

    root = _build(cli, tmp_path) if tree == "built" else ROOT / "generated_skills"
    served = anyio.run(_served_by_fastmcps_directory_provider, root)
    assert not [uri for uri in served["resources"] if "eval" in uri]
    manifest = json.loads((root / "skills.json").read_text("utf-8"))["skills"]
    own = {
        e["uri"]: sorted(r["uri"].removeprefix(e["uri"].removesuffix("SKILL.md")) for r in e["resources"])
        for e in manifest
    }
    assert {k: v for k, v in served.items() if k != "resources"} == own


def test_a_rebuild_drops_the_cases_earlier_versions_wrote_in_a_bundles_folder(cli, tmp_path):
    """A tree built before the evals tree holds ``evals/`` in each bundle's folder: ``check`` counts those files as
    extra, and a build removes them (and the folder), keeping a file of the user's beside them."""
    out = _build(cli, tmp_path)
    for skill in ("hello-world", "refund-flow"):
        (out / skill / "evals").mkdir()
        for name in ("evals.json", "eval_queries.json"):
            (out / skill / "evals" / name).write_text("{}\n", "utf-8")
    (out / "refund-flow" / "evals" / "mine.md").write_text("my notes\n", "utf-8")
    check = ["check", "--no-config", "--out", str(out), str(EXAMPLES)]
    r = cli(*check)
    assert r.code == 1 and f"extra: {out.as_posix()}/hello-world/evals/evals.json" in r.out
    assert "(0 stale, 0 missing, 4 extra)" in r.out
    _build(cli, tmp_path)
    assert not (out / "hello-world" / "evals").exists()
    assert [p.name for p in (out / "refund-flow" / "evals").iterdir()] == ["mine.md"]
    assert cli(*check).code == 0


def test_the_evals_tree_drops_a_gone_skills_cases_and_keeps_the_users_files(cli, tmp_path, tree):
    root = tree(
        {
            "wf/a.yaml": GATED.format(
                name="a", description="Write a down.", conditions="      - {arg: mode, equals: a}\n"
            ),
            "wf/b.yaml": GATED.format(
                name="b", description="Write b down.", conditions="      - {arg: mode, equals: b}\n"
            ),
        }
    )
    out = _build(cli, tmp_path, str(root / "wf"))
    (_cases(out) / "README.md").write_text("mine\n", "utf-8")
    (_cases(out) / "b" / "notes.md").write_text("mine too\n", "utf-8")
    (root / "wf" / "b.yaml").unlink()
    assert _build(cli, tmp_path, str(root / "wf")) == out
    assert sorted(p.relative_to(_cases(out)).as_posix() for p in _cases(out).rglob("*") if p.is_file()) == [
        "README.md",
        "a/eval_queries.json",
        "a/evals.json",
        "b/notes.md",
    ]
    check = cli("check", "--no-config", "--out", str(out), str(root / "wf"))
    assert check.code == 0, check.out


def test_the_evals_folder_is_chosen_by_flag_or_file_and_never_inside_the_skills(cli, tmp_path):
    root = tmp_path / "proj"
    (root / "workflows").mkdir(parents=True)
    (root / "workflows" / "hello.yaml").write_text((EXAMPLES / "hello-world.yaml").read_text("utf-8"), "utf-8")
    (root / "pyproject.toml").write_text('[tool.project-skill]\nout = "skills"\nevals-out = "cases"\n', "utf-8")
    assert cli("build", cwd=root).code == 0
    assert (root / "cases" / "hello-world" / "evals.json").is_file() and (root / "skills" / "skills.json").is_file()
    assert cli("check", cwd=root).code == 0
    assert cli("build", "--evals-out", str(tmp_path / "elsewhere"), cwd=root).code == 0  # the command line's own
    assert (tmp_path / "elsewhere" / "hello-world" / "eval_queries.json").is_file()
    for inside in ("skills", "skills/cases", "."):
        r = cli("build", "--evals-out", inside, cwd=root)
        assert r.code == 2 and "--evals-out" in r.err and "Traceback" not in r.err, r.err
    assert not (root / "skills" / "cases").exists()


def test_the_evals_command_prints_what_build_writes(cli, tmp_path):
    out = _build(cli, tmp_path)
    r = cli("evals", "--no-config", str(EXAMPLES), "--workflow", "refund_flow_approved")
    assert r.code == 0 and r.out == (_cases(out) / "refund-flow-approved" / "evals.json").read_text("utf-8")
    r = cli("evals", "--no-config", str(EXAMPLES), "--workflow", "hello-world", "--queries")
    assert r.code == 0 and r.out == (_cases(out) / "hello-world" / "eval_queries.json").read_text("utf-8")
    r = cli("evals", "--no-config", str(EXAMPLES))
    assert r.code == 2 and "--workflow" in r.err and "refund-flow-gated" in r.err
    r = cli("evals", "--no-config", str(EXAMPLES), "--workflow", "nope")
    assert r.code == 2 and "no workflow 'nope'" in r.err


GATED = """\
name: {name}
description: {description}
arguments:
  - {{name: mode, type: string, required: true}}
  - {{name: count, type: integer}}
tools:
  - name: write
    input_schema: {{type: object, properties: {{mode: {{type: string}}}}}}
    annotations: {{readOnlyHint: false}}
steps:
  - name: write
    tool: write
    args: {{mode: {{arg: mode}}}}
    when:
{conditions}
"""


def _gated(tree, name: str, *conditions: str, description: str = "Write the mode down.") -> Path:
    text = GATED.format(name=name, description=description, conditions="".join(f"      - {c}\n" for c in conditions))
    return tree({f"wf/{name}.yaml": text})


def test_each_condition_gets_a_case_where_it_fails_with_the_others_holding(cli, tmp_path, tree):
    root = _gated(tree, "two", "{arg: mode, in: [a, b]}", "{arg: count, not_equals: 3}", "{arg: count, exists: true}")
    out = _build(cli, tmp_path, str(root / "wf"))
    cases = {c["projector"]["covers"][0]: c["projector"] for c in _evals(out, "two")}
    assert cases["the run, every condition holding and every confirmation a yes"]["arguments"] == {
        "mode": "a",
        "count": 0,
    }
    assert cases["write: when[0] fails"]["arguments"] == {"mode": "example", "count": 0}
    assert cases["write: when[1] fails"]["arguments"] == {"mode": "a", "count": 3}
    assert cases["write: when[2] fails"]["arguments"] == {"mode": "a"}  # an optional argument left out
    assert all(
        cases[f"write: when[{i}] fails"]["calls"] == [{"step": "write", "tool": "write", "called": False}]
        for i in range(3)
    )


def test_a_gate_no_case_can_cover_warns_and_fails_strict(cli, tmp_path, tree):
    root = _gated(tree, "never", "{arg: mode, equals: a}", "{arg: mode, equals: b}")
    out = tmp_path / "out"
    r = cli("build", "--no-cache", "--no-config", "--out", str(out), str(root / "wf"))
    assert r.code == 0 and "warning[eval-uncovered]" in r.err and "never.yaml:" in r.err
    assert (_cases(out) / "never" / "evals.json").exists()  # the run case still, stating that nothing is called
    r = cli("check", "--no-cache", "--no-config", "--strict", "--out", str(out), str(root / "wf"))
    assert r.code == 1 and "eval-uncovered" in r.err
    r = cli("build", "--no-cache", "--no-config", "--strict", "--out", str(tmp_path / "other"), str(root / "wf"))
    assert r.code == 1 and not (tmp_path / "other").exists()


def test_trigger_negatives_are_the_nearest_descriptions_and_bounded(cli, tmp_path, tree):
    files = {}
    for i in range(12):
        text = GATED.format(
            name=f"w{i:02}",
            description=f"Write the mode number {i} down.",
            conditions="      - {arg: mode, equals: a}\n",
        )
        files[f"wf/w{i:02}.yaml"] = text
    files["wf/near.yaml"] = GATED.format(
        name="near", description="Refund a customer order quickly.", conditions="      - {arg: mode, equals: a}\n"
    )
    files["wf/nearer.yaml"] = GATED.format(
        name="nearer", description="Refund an order for a customer.", conditions="      - {arg: mode, equals: a}\n"
    )
    root = tree(files)
    out = _build(cli, tmp_path, str(root / "wf"))
    negatives = [q["query"] for q in _queries(out, "near") if not q["should_trigger"]]
    assert len(negatives) == 10 and negatives[0] == "Refund an order for a customer."
    first = (_cases(out) / "near" / "eval_queries.json").read_bytes()
    again = _build(cli, tmp_path / "again", str(root / "wf"))
    assert (_cases(again) / "near" / "eval_queries.json").read_bytes() == first


@pytest.mark.parametrize("skill", ["refund-flow-approved", "hello-world"])
def test_eval_files_are_stable_json(cli, tmp_path, skill):
    out = _build(cli, tmp_path)
    for name in ("evals.json", "eval_queries.json"):
        data = (_cases(out) / skill / name).read_bytes()
        assert data.endswith(b"}\n") or data.endswith(b"]\n")
        assert json.dumps(json.loads(data), indent=2, ensure_ascii=False).encode("utf-8") + b"\n" == data


# ------------------------------------------- a case gives a tool only what its output schema allows (issue 38, item 0)

DEAD_GATE = Path(__file__).resolve().parent / "bad_inputs" / "dead-condition-output-schema.yaml"

ENUM_GATE = """\
name: ship
description: Ship an order once it is packed.
tools:
  - name: order_status
    input_schema: {type: object}
    output_schema:
      type: object
      properties: {state: {enum: [new, packed, shipped]}, note: {type: string}}
      required: [state]
    annotations: {readOnlyHint: true}
  - name: ship
    input_schema: {type: object}
    annotations: {readOnlyHint: false}
steps:
  - {name: status, tool: order_status, bind: order}
  - name: ship
    tool: ship
    when:
      - {step: order, field: state, equals: packed}
      - {step: order, field: note, not_equals: hold}
"""


def _printed_cases(cli, path: Path, workflow: str) -> list[dict]:
    r = cli("evals", "--no-config", str(path), "--workflow", workflow)
    assert r.code == 0, r.err
    return [c["projector"] for c in json.loads(r.out)["evals"]]


def test_a_case_never_gives_a_result_the_output_schema_rules_out(cli, tmp_path):
    """The issue's gate: `status.content` is a string, so no result of the tool makes `not_equals: false` fail. No
    case feeds the tool `{"content": false}` (which the server can never send); the gate is uncovered, and said."""
    cases = _printed_cases(cli, DEAD_GATE, "dead_condition_output_schema")
    returned = [r["returns"]["content"] for c in cases for r in c["results"]]
    assert returned and all(isinstance(v, str) for v in returned), returned
    assert [c["covers"] for c in cases] == [["the run, every condition holding and every confirmation a yes"]]
    r = cli("build", "--no-cache", "--no-config", "--out", str(tmp_path / "out"), str(DEAD_GATE))
    assert r.code == 0 and "warning[dead-condition]" in r.err, r.err  # the one word on it (not eval-uncovered too)


def test_a_field_with_an_enum_fails_with_another_of_its_values_and_a_required_one_is_never_left_out(cli, tree):
    root = tree({"wf/ship.yaml": ENUM_GATE})
    cases = {c["covers"][0]: c["results"][0]["returns"] for c in _printed_cases(cli, root / "wf" / "ship.yaml", "ship")}
    assert cases == {
        "the run, every condition holding and every confirmation a yes": {"state": "packed", "note": "example"},
        "ship: when[0] fails": {"state": "new", "note": "example"},  # one of its values; never "example", never absent
        "ship: when[1] fails": {"state": "packed", "note": "hold"},
    }


# ----------------------------------------------------------------- linear in the steps (issue 38, item 9)


def _long(n: int):
    """n steps: every tenth reads a prompt argument, every fiftieth the previous result's field, one confirms."""
    from projector.model import Argument, Condition, Confirm, FromStep, Step, Tool, Workflow
    from projector.model import FromArg

    from tests.test_gates import CountingSteps

    steps = []
    for i in range(n):
        when = ()
        if i % 50 == 25:
            when = (Condition(FromStep(f"r{i - 1}", "ok"), "equals", True),)
        elif i % 10 == 5:
            when = (Condition(FromArg("go"), "equals", True),)
        steps.append(
            Step(
                f"s{i}",
                tool="act" if i % 2 else "look",
                bind=f"r{i}",
                when=when,
                on_fail="skip" if when else "stop",
                confirm=Confirm("Go on?") if i == 7 else None,
            )
        )
    tools = (
        Tool("look", annotations={"readOnlyHint": True}, output_schema={"type": "object", "properties": {"ok": {}}}),
        Tool("act", annotations={"readOnlyHint": False}),
    )
    return Workflow(
        "long", "A long one.", (Argument("go", type="boolean", required=True),), (), tools, CountingSteps(steps)
    )


@pytest.mark.slow
def test_deriving_the_cases_is_linear_in_the_steps(monkeypatch):
    """Linear, by counting: the step records read and compared grow tenfold for ten times the steps (each step
    looked itself up by equality among the steps, which made 10,000 steps a hundred times 1,000's time)."""
    from projector.evals import evals_json
    from projector.model import Step

    from tests.test_gates import CountingSteps

    compared = [0]
    real = Step.__eq__

    def counting(self, other):
        compared[0] += 1
        return real(self, other)

    monkeypatch.setattr(Step, "__eq__", counting)
    work = {}
    for n in (100, 1000):
        wf = _long(n)
        CountingSteps.reads, compared[0] = 0, 0
        text, _problems = evals_json(wf, "long")
        work[n] = CountingSteps.reads + compared[0]
        assert json.loads(text)["evals"]
    assert work[1000] <= 10 * work[100] + 10, work


def test_a_users_file_where_the_cases_go_is_never_written_over(cli, tmp_path):
    """``--evals-out`` may name a folder of the user's: a file there that a build did not write, at the path of a
    skill's cases, is refused (``output-conflict``), not replaced; the user's other files stay as they are."""
    mine = tmp_path / "notes"
    (mine / "hello-world").mkdir(parents=True)
    (mine / "hello-world" / "evals.json").write_text("my own cases\n", "utf-8")
    (mine / "todo.md").write_text("mine\n", "utf-8")
    r = cli("build", "--no-config", str(EXAMPLES), "--out", str(tmp_path / "out"), "--evals-out", str(mine))
    assert r.code != 0 and "output-conflict" in r.err and "Traceback" not in r.err, r.err
    assert (mine / "hello-world" / "evals.json").read_text("utf-8") == "my own cases\n"
    assert (mine / "todo.md").read_text("utf-8") == "mine\n"


# ``build``, in a process killed (SIGKILL) as it starts on the second of the two trees: one is swapped in, the
# other is as it was.
KILLED_BETWEEN_THE_TREES = """
import os, signal, sys
import projector.disk as disk
real, seen = disk.replace_tree, []
def replace_tree(*args, **kwargs):
    seen.append(1)
    if len(seen) == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    return real(*args, **kwargs)
disk.replace_tree = replace_tree
import projector.output as output
output.replace_tree = replace_tree
from projector.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_a_build_killed_between_the_two_trees_leaves_no_gone_skills_cases_for_good(cli, tmp_path, tree):
    """A skill removed, and the build that drops it killed after one tree is swapped in and before the other: the
    next build still drops the gone skill's cases, and ``check`` is clean only once they are gone."""
    import os
    import subprocess
    import sys

    root = tree({"wf/a.yaml": GATED.format(name="a", description="Write a down.", conditions="      - {arg: mode, "
                 "equals: a}\n"), "wf/b.yaml": GATED.format(name="b", description="Write b down.", conditions="  "
                 "    - {arg: mode, equals: b}\n")})
    out = _build(cli, tmp_path, str(root / "wf"))
    assert (_cases(out) / "b" / "evals.json").is_file()
    (root / "wf" / "b.yaml").unlink()
    argv = ["build", "--no-cache", "--no-config", "--out", str(out), str(root / "wf")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    killed = subprocess.run([sys.executable, "-c", KILLED_BETWEEN_THE_TREES, *argv], env=env, capture_output=True,
                            timeout=120)
    assert killed.returncode == -9, killed.stderr
    _build(cli, tmp_path, str(root / "wf"))
    assert not (_cases(out) / "b").exists()
    assert cli("check", "--no-config", "--out", str(out), str(root / "wf")).code == 0


def test_a_rebuild_refused_for_the_skills_writes_no_cases_either(cli, tmp_path):
    """The cases go first in a rebuild, but only once the skills tree is known to be written: a file of the user's
    where a rebuilt skill writes refuses the build (``output-conflict``), and the evals tree stays as it was."""
    out = _build(cli, tmp_path)
    before = {p: p.read_bytes() for p in _cases(out).rglob("*") if p.is_file()}
    (_cases(out) / "hello-world" / "evals.json").write_text("{}\n", "utf-8")  # stale: the build would rewrite it
    before[_cases(out) / "hello-world" / "evals.json"] = b"{}\n"
    (out / "refund-flow" / "references" / "tools.md").unlink()
    (out / "refund-flow" / "references" / "tools.md").write_text("mine\n", "utf-8")  # the index records other bytes
    skills = json.loads((out / "skills.json").read_text("utf-8"))
    for entry in skills["skills"]:
        entry["resources"] = [r for r in entry["resources"] if not r["uri"].endswith("refund-flow/references/tools.md")]
    (out / "skills.json").write_text(json.dumps(skills), "utf-8")
    r = cli("build", "--no-cache", "--no-config", "--out", str(out), str(EXAMPLES))
    assert r.code != 0 and "output-conflict" in r.err, r.out + r.err
    assert {p: p.read_bytes() for p in _cases(out).rglob("*") if p.is_file()} == before


BOUNDED_GATE = """\
name: restock
description: Restock unless there are ten or more.
tools:
  - name: stock
    input_schema: {type: object}
    output_schema:
      type: object
      properties: {count: {type: integer, minimum: 10, maximum: 99}}
      required: [count]
    annotations: {readOnlyHint: true}
  - name: restock
    input_schema: {type: object}
    annotations: {readOnlyHint: false}
steps:
  - {name: stock, tool: stock, bind: s}
  - name: restock
    tool: restock
    when: {step: s, field: count, equals: 10}
"""


def test_a_case_never_gives_a_field_a_value_its_schema_bounds_rule_out(cli, tree):
    """The output schema says ``count`` is from 10 to 99; the case that makes ``equals: 10`` fail fed the tool
    ``{"count": 0}``, which the server can never send (the cases checked a field's type and ``enum``, not the rest of
    its schema). Now each value a case gives a field is valid against the field's whole schema."""
    root = tree({"wf/restock.yaml": BOUNDED_GATE})
    cases = {
        c["covers"][0]: c["results"][0]["returns"] for c in _printed_cases(cli, root / "wf" / "restock.yaml", "restock")
    }
    assert cases["restock: when[0] fails"]["count"] in range(11, 100), cases
