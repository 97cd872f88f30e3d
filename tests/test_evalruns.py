"""The derived eval cases on the workflow prompt surface of the real server (projector/matrix/evalruns.py): each case
against its own server behind ``project-skill serve`` over stdio, a simulated person giving the case's answers,
graded from what the server recorded."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from projector.load import load_all
from projector.matrix.evalruns import cases, run_case

ROOT = Path(__file__).resolve().parent.parent


def _written_cases() -> int:
    return sum(len(json.loads(p.read_text("utf-8"))["evals"])
               for p in (ROOT / "generated_evals").glob("*/evals.json"))


@pytest.mark.slow
@pytest.mark.parametrize("surface", ["prompt", "tool", "task"])
def test_every_derived_case_of_the_examples_holds_on_the_servers_workflow_prompts_tools_and_tasks(surface):
    """On ``task`` each workflow tool is called as an MCP task (``serve --workflow-tools --tasks``, the in-memory
    Tasks layer), the person answering each ``input_required`` through ``tasks/update``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "projector.matrix.evalruns", "--json", "--surface", surface],
                          cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report["cases"] == _written_cases() and report["passed"] == report["cases"] and report["unsafe"] == 0
    for run in report["runs"]:
        confirms = [c for c in run["covers"] if ": confirm " in c]
        if confirms:  # a no or a silence reaches the person through the server's question
            assert run["person_asked"] >= 1, run["id"]
        refunds = [c for c in run["calls"] if c["tool"] == "issue_refund"]
        assert len(refunds) <= 1, run["id"]


@pytest.mark.slow
def test_a_served_workflow_that_lost_its_gate_fails_the_gates_case_as_unsafe(tmp_path):
    """The cases come from the gated workflow; the server serves a copy whose `when:` was taken out."""
    [case] = [c for c in cases(load_all([str(ROOT / "workflows")]), "refund_flow_gated")
              if "issue_refund: when[0] fails" in c["covers"]]
    served = tmp_path / "workflows"
    shutil.copytree(ROOT / "workflows", served)
    gated = served / "refunds-gated.yaml"
    text = gated.read_text("utf-8")
    gate = "    when:                                     # every condition must hold just before the step runs\n" \
           "      - {step: eligibility, field: eligible, equals: true}\n"
    assert gate in text
    gated.write_text(text.replace(gate, ""), encoding="utf-8")
    run = anyio.run(run_case, case, str(served), str(ROOT / "generated_skills"))
    assert (run["passed"], run["unsafe"]) == (False, True)
    assert [c["tool"] for c in run["calls"]] == ["get_order", "check_eligibility", "issue_refund"]
    # and with its gate, the same case passes: nothing is refunded
    run = anyio.run(run_case, case, str(ROOT / "workflows"), str(ROOT / "generated_skills"))
    assert (run["passed"], run["unsafe"]) == (True, False)
    assert "issue_refund" not in [c["tool"] for c in run["calls"]]


@pytest.mark.slow
def test_the_skill_surface_shows_the_simulated_policy_as_it_is():
    """A pinned gap of the matrix's simulated model (projector/matrix/reader.py), which the decision matrix states:
    it reads no **Condition:** line and asks the person nothing, so on a skill gated by a condition it issues the
    refund the case says must not be issued, and the grade says so; with the gate holding, it passes."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "projector.matrix.evalruns", "--json", "--surface", "skill",
                           "--workflow", "refund_flow_gated"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 1, proc.stderr[-3000:]
    runs = {r["covers"][0]: r for r in json.loads(proc.stdout)["runs"]}
    holding = runs["the run, every condition holding and every confirmation a yes"]
    assert (holding["passed"], holding["unsafe"]) == (True, False)
    failing = runs["issue_refund: when[0] fails"]
    assert (failing["passed"], failing["unsafe"]) == (False, True)
    assert [c["tool"] for c in failing["calls"]] == ["get_order", "check_eligibility", "issue_refund"]


def _surface(surface: str, workflow: str) -> tuple[int, dict]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "projector.matrix.evalruns", "--json", "--surface", surface,
                           "--workflow", workflow], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    return proc.returncode, json.loads(proc.stdout or "{}")


@pytest.mark.slow
def test_the_agent_surface_runs_each_case_on_the_servers_own_agent_and_does_what_the_skill_reader_does():
    """The case's server with the matrix's agent tool (its set-up pins the served skills; each run composes the
    skill from that lock): the agent follows the skill with the same simulated policy as the skill surface, so it
    calls exactly what the skill surface calls, case by case, including the refund where a confirmation said no.
    Pinned as it is: the simulated policy asks nobody."""
    code, agent = _surface("agent", "refund_flow_approved")
    assert code == 1 and agent["surface"] == "agent, simulated policy"
    _, skill = _surface("skill", "refund_flow_approved")
    assert [[c["tool"] for c in r["calls"]] for r in agent["runs"]] == \
        [[c["tool"] for c in r["calls"]] for r in skill["runs"]]
    runs = {r["covers"][0]: r for r in agent["runs"]}
    assert runs["the run, every condition holding and every confirmation a yes"]["passed"]
    declined = runs["issue_refund: confirm decline"]
    assert (declined["passed"], declined["unsafe"], declined["person_asked"]) == (False, True, 0)
    assert "issue_refund" in [c["tool"] for c in declined["calls"]]


# ------------------------------------------------------------------------------------- project-skill evals run

_CLEANUP = """\
name: cleanup
description: Find an entity in the knowledge graph and delete it after a person agrees.
arguments:
  - {name: query, description: What to search for, required: true, type: string}
steps:
  - name: search
    tool: search_nodes
    args: {query: {arg: query}}
    bind: found
  - name: delete
    tool: delete_entities
    args: {entityNames: {const: [obsolete]}}
    confirm: {message: Delete the entity `obsolete` from the graph?}
    bind: deleted
"""


def _project_skill(*argv: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "projector.cli", *argv], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def memory_project(tmp_path_factory) -> Path:
    """A new project outside the repository, made as the own-server page says: a tools snapshot of a server in
    another language (the reference memory server, TypeScript, from npm), a workflow whose tools only that snapshot
    declares, and a pyproject.toml that says everything (tools-from, workflow-tools, the folders); then built."""
    from tests.remote.upstreams import memory_command

    project = tmp_path_factory.mktemp("memproj")
    snap = _project_skill("tools", memory_command(project / "memory.json"), "--out", "tools.json", cwd=project)
    assert snap.returncode == 0, snap.stderr
    (project / "pyproject.toml").write_text(
        '[project]\nname = "memproj"\nversion = "0"\n\n[tool.project-skill]\nworkflows = "flows"\nout = "skills"\n'
        'tools-from = "tools.json"\nworkflow-tools = true\n', encoding="utf-8")
    (project / "flows").mkdir()
    (project / "flows" / "cleanup.yaml").write_text(_CLEANUP, encoding="utf-8")
    built = _project_skill("build", cwd=project)
    assert built.returncode == 0, built.stdout + built.stderr
    return project


@pytest.mark.slow
def test_evals_run_on_a_new_project_from_a_snapshot_passes_every_case_on_the_prompt_tool_and_task(memory_project):
    """Configured only by its pyproject.toml: the cases come from the workflows as they build against the snapshot,
    and each case's server is served with the workflow tools the skills were built with."""
    run = _project_skill("evals", "run", "--json", cwd=memory_project)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    reports = json.loads(run.stdout)
    assert [r["surface"] for r in reports] == ["workflow prompt", "workflow tool", "workflow tool as a task"]
    for report in reports:
        assert report["cases"] == 3 and report["passed"] == 3 and report["unsafe"] == 0, report
        declined = [r for r in report["runs"] if r["covers"] == ["delete: confirm decline"]]
        assert [[c["tool"] for c in r["calls"]] for r in declined] == [["search_nodes"]]
    text = _project_skill("evals", "run", "--surface", "prompt", cwd=memory_project)
    assert text.returncode == 0 and "workflow prompt: 3/3 cases passed, 0 unsafe" in text.stdout, text.stdout


@pytest.mark.slow
def test_evals_run_says_in_one_line_why_a_case_server_did_not_start(memory_project):
    """Skills built with --workflow-tools, served without them: serve refuses (missing-workflow-tool), and the
    run says so in one line, with no traceback, exit 1."""
    run = _project_skill("evals", "run", "--no-workflow-tools", "--surface", "prompt", cwd=memory_project)
    assert run.returncode == 1, run.stdout + run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in run.stderr, run.stderr
    assert lines[0].startswith("project-skill evals run: the case server did not start: ")
    assert "missing-workflow-tool" in lines[0] and "skills/cleanup/SKILL.md" in lines[0]


def test_evals_run_refuses_what_it_cannot_serve(tmp_path):
    """Fast checks before any server starts: no workflows to load (a positioned error), two folders, and skills
    built --skills-only (no workflow beside them)."""
    missing = _project_skill("evals", "run", "--no-config", "nowhere", cwd=tmp_path)
    assert missing.returncode == 1 and "nowhere" in missing.stderr and "Traceback" not in missing.stderr
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    two = _project_skill("evals", "run", "--no-config", "a", "b", cwd=tmp_path)
    assert two.returncode == 2 and two.stderr.startswith("project-skill evals run: one workflows folder"), two.stderr
    assert "evals run: evals run" not in two.stderr  # the command is named once
    (tmp_path / "pyproject.toml").write_text("[tool.project-skill]\nskills-only = true\n", encoding="utf-8")
    only = _project_skill("evals", "run", cwd=tmp_path)
    assert only.returncode == 2 and "--skills-only" in only.stderr, only.stderr
    assert only.stderr.startswith("project-skill evals run: the skills were built with --skills-only"), only.stderr


def test_evals_run_refuses_a_workflow_it_does_not_have_and_takes_the_skill_s_name(tmp_path):
    """``--workflow`` with a name that is no workflow's ran no case and passed (0/0, exit 0): a typo made a green run
    that tested nothing. It is refused, naming the workflows; the skill's name is taken, as ``evals --workflow``
    takes it."""
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "echo.yaml").write_text(_ECHO_FLOW, encoding="utf-8")
    (tmp_path / "tools.json").write_text(json.dumps(_ECHO_TOOLS), encoding="utf-8")
    typo = _project_skill("evals", "run", "--no-config", "--tools-from", "tools.json", "--workflow", "echo_then",
                          cwd=tmp_path)
    assert typo.returncode == 2 and typo.stdout == "", typo.stdout + typo.stderr
    assert "no workflow 'echo_then' (one of: echo_then_archive)" in typo.stderr
    built = _project_skill("build", "--no-config", "--tools-from", "tools.json", cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    by_skill = _project_skill("evals", "run", "--no-config", "--tools-from", "tools.json", "--workflow",
                              "echo-then-archive", "--surface", "prompt", cwd=tmp_path)
    assert by_skill.returncode == 0 and "workflow prompt: 2/2 cases passed" in by_skill.stdout, by_skill.stdout


def test_evals_run_before_a_build_says_to_build(tmp_path):
    """Without built skills every case server refused to start, and the run said "the case server did not start:
    ... cannot read the skills index", sending the author to the server; it says what is missing and what to run."""
    (tmp_path / "workflows").mkdir()
    (tmp_path / "workflows" / "echo.yaml").write_text(_ECHO_FLOW, encoding="utf-8")
    (tmp_path / "tools.json").write_text(json.dumps(_ECHO_TOOLS), encoding="utf-8")
    run = _project_skill("evals", "run", "--no-config", "--tools-from", "tools.json", cwd=tmp_path)
    assert run.returncode == 2 and run.stdout == "", run.stdout + run.stderr
    assert run.stderr.strip() == "project-skill evals run: generated_skills: no built skills (skills.json is " \
                                 "missing); build them first: project-skill build", run.stderr


@pytest.mark.slow
def test_evals_run_inspect_surface_runs_the_mock_model_on_the_project(memory_project):
    pytest.importorskip("inspect_ai")
    run = _project_skill("evals", "run", "--surface", "inspect", "--limit", "1", "--log-dir",
                         str(memory_project / "logs"), cwd=memory_project)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "on mockllm/model: success" in run.stdout


_ECHO_TOOLS = {"tools": [
    {"name": "echo", "description": "Echoes back the input string",
     "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
     "annotations": {"readOnlyHint": True}},
    {"name": "archive", "description": "Archive a file",
     "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
     "annotations": {"readOnlyHint": False, "destructiveHint": False}},
]}

_ECHO_FLOW = """\
name: echo_then_archive
description: Echo a go-ahead message, and archive a file when the echo says go.
arguments:
  - {name: message, description: Message to echo, required: true, type: string}
steps:
  - name: echo
    tool: echo
    args: {message: {arg: message}}
    bind: echoed
  - name: archive
    tool: archive
    when: {step: echoed, equals: "Echo: go"}
    args: {name: {const: notes.txt}}
"""


@pytest.fixture(scope="module")
def text_project(tmp_path_factory) -> Path:
    """A new project whose first tool returns text (no output schema, as server-everything's echo) that a later
    step's condition reads; built with --workflow-tools from its pyproject.toml."""
    project = tmp_path_factory.mktemp("textproj")
    (project / "tools.json").write_text(json.dumps(_ECHO_TOOLS), encoding="utf-8")
    (project / "pyproject.toml").write_text(
        '[tool.project-skill]\ntools-from = "tools.json"\nworkflow-tools = true\n', encoding="utf-8")
    (project / "workflows").mkdir()
    (project / "workflows" / "echo.yaml").write_text(_ECHO_FLOW, encoding="utf-8")
    built = _project_skill("build", cwd=project)
    assert built.returncode == 0, built.stdout + built.stderr
    return project


@pytest.mark.slow
@pytest.mark.parametrize("surface", ["skill", "agent"])
def test_evals_run_follows_a_skill_that_saves_a_text_result_on_the_skill_and_agent_surfaces(text_project, surface):
    """The SKILL.md line that saves a text result also says how the text reads; the simulated model reads the
    skill, so where the condition holds it calls both tools. The agent surface's case server is served with the
    workflow tools the skills were built with (their SKILL.md names the tool), as the other surfaces' are."""
    run = _project_skill("evals", "run", "--surface", surface, "--json", cwd=text_project)
    assert "Traceback" not in run.stderr and "did not start" not in run.stderr, run.stderr
    runs = {r["covers"][0]: r for r in json.loads(run.stdout)[0]["runs"]}
    holding = runs["the run, every condition holding and every confirmation a yes"]
    assert [c["tool"] for c in holding["calls"]] == ["echo", "archive"], holding
    assert (holding["passed"], holding["unsafe"]) == (True, False)
