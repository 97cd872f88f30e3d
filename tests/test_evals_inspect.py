"""The derived eval cases run through Inspect AI (projector/matrix/evals_inspect.py), each against its own case server
behind ``project-skill serve`` (projector/server/evalcase.py), graded from what that server recorded.

Driven as a user drives it: ``python -m projector.matrix.evals_inspect`` in a fresh process with no network (the
mock model of CI), or ``run()`` with a scripted Inspect model whose tool calls reach the real server over stdio; the
assertions read the Inspect log it writes, as ``inspect view`` would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("inspect_ai", reason="the evals extra (inspect-ai) is not installed")

from inspect_ai.log import read_eval_log  # noqa: E402
from inspect_ai.model import ModelOutput, ModelUsage, get_model  # noqa: E402

from projector.matrix.evals_inspect import run  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
NO_NETWORK = {"HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9", "NO_PROXY": ""}


def _cases() -> dict[str, dict]:
    """Every derived case of the shipped examples, as ``build`` wrote them, by sample id (WORKFLOW-N)."""
    out = {}
    for path in sorted((ROOT / "generated_evals").glob("*/evals.json")):
        skill = (ROOT / "generated_skills" / path.parent.name / "SKILL.md").read_text("utf-8")
        workflow = next(line.split(":", 1)[1].strip() for line in skill.splitlines()
                        if line.strip().startswith("workflow:"))
        for case in json.loads(path.read_text("utf-8"))["evals"]:
            out[f"{workflow}-{case['id']}"] = case
    return out


def _scores(log) -> dict[str, dict[str, float]]:
    """Each sample's scores as numbers: 1 for a passed case (C), else 0; the unsafe flag as it is."""
    return {str(s.id): {name: (1.0 if sc.value == "C" else 0.0) if name == "case_passed" else float(sc.value)
                        for name, sc in (s.scores or {}).items()} for s in log.samples}


@pytest.mark.slow
def test_the_mock_model_runs_every_example_case_offline_and_the_log_holds_a_score_per_sample(tmp_path):
    logs = tmp_path / "logs"
    env = {**os.environ, **NO_NETWORK, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "projector.matrix.evals_inspect", "--log-dir", str(logs)], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "case_passed" in proc.stdout and "unsafe_side_effect" in proc.stdout
    assert "--model openai/" in proc.stdout  # the closing note: how to run it on a real model
    [written] = list(logs.iterdir())
    log = read_eval_log(str(written))
    assert log.status == "success"
    cases = _cases()
    scores = _scores(log)
    assert set(scores) == set(cases)
    for sid, case in cases.items():
        # the mock calls no tool, so the server records none: exactly the cases that expect no call pass
        expects_a_call = any(c["called"] for c in case["projector"]["calls"])
        assert scores[sid] == {"case_passed": 0.0 if expects_a_call else 1.0, "unsafe_side_effect": 0.0}, sid


def _scripted(*calls: tuple[str, dict]) -> object:
    """An Inspect mock model that makes these tool calls, one a turn, then says it is done."""
    outputs = [ModelOutput.for_tool_call("mockllm/model", name, args, tool_call_id=f"call-{n}")
               for n, (name, args) in enumerate(calls)]
    outputs.append(ModelOutput.from_content("mockllm/model", "Done."))
    for out in outputs:
        out.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
    return get_model("mockllm/model", custom_outputs=outputs)


def _case_id(workflow: str, covers: str) -> str:
    return next(sid for sid, case in _cases().items()
                if sid.startswith(f"{workflow}-") and covers in case["projector"]["covers"])


ORDER = {"id": "example-order_id", "total": 1}


@pytest.mark.slow
def test_a_refund_issued_where_the_gate_fails_is_graded_failed_and_unsafe_from_the_servers_record(tmp_path):
    sid = _case_id("refund_flow_gated", "issue_refund: when[0] fails")
    model = _scripted(("get_order", {"id": "example-order_id"}), ("check_eligibility", {"order": ORDER}),
                      ("issue_refund", {"order_id": "example-order_id", "amount": 1}))
    log = run(model, sample_id=sid, log_dir=str(tmp_path / "logs"))
    assert log.status == "success" and Path(log.location).exists()
    [sample] = log.samples
    # the case server answered check_eligibility with the case's own result, which the model saw
    said = [m.text for m in sample.messages if m.role == "tool" and m.function == "check_eligibility"]
    assert said == ['{"eligible": false}']
    assert _scores(log)[sid] == {"case_passed": 0.0, "unsafe_side_effect": 1.0}
    assert "issue_refund" in sample.scores["case_passed"].explanation


@pytest.mark.slow
def test_the_run_with_every_call_made_as_the_case_states_passes(tmp_path):
    sid = _case_id("refund_flow_gated", "the run, every condition holding and every confirmation a yes")
    model = _scripted(("load_skill", {"name": "refund-flow-gated"}), ("get_order", {"id": "example-order_id"}),
                      ("check_eligibility", {"order": ORDER}),
                      ("issue_refund", {"order_id": "example-order_id", "amount": 1}))
    log = run(model, sample_id=sid, log_dir=str(tmp_path / "logs"))
    assert _scores(log)[sid] == {"case_passed": 1.0, "unsafe_side_effect": 0.0}
    # and a wrong argument is a failed case, not an unsafe one
    model = _scripted(("get_order", {"id": "A1001"}), ("check_eligibility", {"order": ORDER}),
                      ("issue_refund", {"order_id": "A1001", "amount": 1}))
    log = run(model, sample_id=sid, log_dir=str(tmp_path / "logs2"))
    assert _scores(log)[sid] == {"case_passed": 0.0, "unsafe_side_effect": 0.0}


def test_the_case_server_refuses_a_case_file_that_is_not_one_naming_it(cli, tmp_path, monkeypatch):
    bad = tmp_path / "case.json"
    bad.write_text("{not json", encoding="utf-8")
    monkeypatch.setenv("PROJECTOR_EVAL_CASE", str(bad))
    r = cli("serve", "projector.server.evalcase:server", "--no-config", "--skills", str(ROOT / "generated_skills"),
            "--workflows", str(ROOT / "workflows"))
    assert r.code != 0
    assert str(bad) in r.err and "not JSON" in r.err
    assert "Traceback" not in r.err
