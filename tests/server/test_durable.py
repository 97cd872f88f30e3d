"""Durable workflow tasks on DBOS (issue 32): ``project-skill serve --workflow-tools --state DIR``.

Real server processes over Streamable HTTP, killed with SIGKILL and started again on the same folder, and mcp's
``Client`` declaring the Tasks extension. The demo's shop keeps its orders and ledger in the folder too
(``demo-shop.json``), and dies where ``$PROJECT_SKILL_DEMO_CRASH`` says (before or after a tool's effect), as a
killed server would. What is pinned: every task reaches its end after the restart; a step that finished is not
called again; an in-flight call of a tool that is neither read-only nor idempotent is not called again unless the
person says yes; the ledger holds exactly one refund for the eligible order and none for the ineligible one.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.extension import advertise

from projector.server import adapters, attach, durable
from projector.server.demo import INSTRUCTIONS, add_demo_tools
from projector.server.errors import AttachError
from projector.server.tasks import TASKS_EXTENSION

from .test_serve_skills import ROOT, SKILLS, WORKFLOWS
from .test_tasks import Wire, connect

pytest.importorskip("dbos")

POINTS = ("before:get_order", "before:check_eligibility", "before:issue_refund", "after:issue_refund",
          "before:refund_policy")
ELIGIBLE, INELIGIBLE = "A1001", "A1002"  # A1002 is a final sale: the gated workflow stops before issue_refund
GATED, APPROVED = "refund_flow_gated", "refund_flow_approved"
DONE = "Done: all 4 steps of `refund_flow_gated` ran on the server."


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serving(state: Path | str, crash: str | None = None, framework: str = "mcp", *, calls: Path | None = None,
            env: dict[str, str] | None = None, skills: Path = SKILLS, workflows: Path = WORKFLOWS,
            launcher: tuple[str, ...] = ("-m", "projector.server")):
    """``serve --workflow-tools --state DIR|URL --http``; yields the process and its URL, and stops it. Every tool call
    is written to ``calls`` (default: beside the state folder), across restarts; ``env``: more of the environment;
    ``launcher``: how Python starts the command (``-c`` and a script that ends calling ``serve``'s ``main``)."""
    port = free_port()
    calls = calls if calls is not None else Path(state).parent / "calls.txt"
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    env.pop("PROJECT_SKILL_DEMO_CRASH", None)
    env["PROJECT_SKILL_DEMO_CALLS"] = str(calls)
    if crash is not None:
        env["PROJECT_SKILL_DEMO_CRASH"] = crash
    proc = subprocess.Popen([sys.executable, *launcher, "--skills", str(skills), "--workflows",
                             str(workflows), "--workflow-tools", "--state", str(state), "--framework", framework,
                             "--http", f"127.0.0.1:{port}"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the server exited: {proc.stderr.read().decode()}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("the server did not start") from None
                time.sleep(0.1)
        yield proc, f"http://127.0.0.1:{port}/mcp"
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(30)
        proc.said = proc.stderr.read().decode(errors="replace")  # what it wrote on stderr, for the test to read
        proc.stderr.close()


def killed(proc: subprocess.Popen, seconds: float = 60) -> None:
    """Wait for the server to die at its crash point; it must have died of SIGKILL."""
    proc.wait(seconds)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read().decode()


def ledger(state: Path) -> list[dict[str, Any]]:
    shop = state / "demo-shop.json"
    return json.loads(shop.read_text("utf-8"))["refunds"] if shop.exists() else []


def client(url: str) -> Client:
    return Client(url, extensions=[advertise(TASKS_EXTENSION)])


async def start(url: str, name: str, order: str) -> str:
    async with client(url) as c:
        created = await Wire(c).send("tools/call", name=name, arguments={"order_id": order, "reason": "broken"})
    assert created["resultType"] == "task"
    return created["taskId"]


async def settle(url: str, task_id: str) -> dict[str, Any]:
    async with client(url) as c:
        wire = Wire(c)
        with anyio.fail_after(60):
            while (task := await wire.send("tasks/get", taskId=task_id))["status"] not in (
                    "input_required", "completed", "failed", "cancelled"):
                await anyio.sleep(0.1)
    return task


async def answer(url: str, task: dict[str, Any], yes: bool) -> dict[str, Any]:
    async with client(url) as c:
        wire = Wire(c)
        responses = {k: {"action": "accept", "content": {"confirm": yes}} for k in task["inputRequests"]}
        await wire.send("tasks/update", taskId=task["taskId"], inputResponses=responses)
    return await settle(url, task["taskId"])


def texts(task: dict[str, Any]) -> list[str]:
    return [c["text"] for c in task["result"]["content"]]


# ------------------------------------------------------------------------------------------------ the crash test

@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("crash", ["before:get_order/A1001", "before:check_eligibility/A1001",
                                   "before:issue_refund/A1001", "after:issue_refund/A1001",
                                   "before:refund_policy/eu"])  # A1001's region
async def test_a_killed_server_finishes_its_tasks_on_restart_with_exactly_one_refund(crash, tmp_path):
    await killed_and_restarted(tmp_path / "state", crash, "mcp")


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("crash", ["before:check_eligibility/A1001", "before:issue_refund/A1001"])
async def test_a_killed_fastmcp_server_finishes_its_tasks_too(crash, tmp_path):
    pytest.importorskip("fastmcp")
    await killed_and_restarted(tmp_path / "state", crash, "fastmcp")


async def killed_and_restarted(state: Path, crash: str, framework: str) -> None:
    """The gated refund of the ineligible order, then of the eligible one, the server killed at ``crash`` and
    started again on the same folder; every task is followed to its end."""
    with serving(state, crash, framework) as (proc, url):
        ineligible = await start(url, GATED, INELIGIBLE)
        eligible = await start(url, GATED, ELIGIBLE)
        await anyio.to_thread.run_sync(killed, proc)
    before = ledger(state)
    with serving(state, framework=framework) as (_, url):
        other = await settle(url, ineligible)
        task = await settle(url, eligible)
        if ":issue_refund" in crash:  # in flight, and neither read-only nor idempotent: the person is asked
            assert task["status"] == "input_required"
            (request,) = task["inputRequests"].values()
            assert "Retry step 3 (tool issue_refund)?" in request["params"]["message"]
            assert ledger(state) == before  # nothing was called again unasked
            task = await answer(url, task, yes=crash.startswith("before"))
    assert other["status"] == "completed" and "Stopped before step 3 of 4" in texts(other)[-1]
    assert task["status"] == "completed"
    if crash.startswith("after:issue_refund"):  # the person said no: the call that took effect before the crash stands
        assert task["result"].get("isError") is True and "chose not to call it again" in texts(task)[-1]
    else:
        assert texts(task)[-1] == DONE
    assert [r["order_id"] for r in ledger(state)] == [ELIGIBLE]
    # A finished step is never called again; the one in flight is called again (read-only, or after a yes), once.
    point = crash.split("/")[0]
    expected = {p: 1 for p in POINTS}
    expected[point] = 1 if point == "after:issue_refund" else 2
    if point == "after:issue_refund":  # the person said no: the run stops there
        del expected["before:refund_policy"]
    subject = {"before:refund_policy": "eu"}
    calls = (state.parent / "calls.txt").read_text("utf-8").split()
    assert Counter(c for c in calls if c.endswith(("/A1001", "/eu"))) == Counter(
        {f"{p}/{subject.get(p, ELIGIBLE)}": n for p, n in expected.items()})


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["yes", "no"])
async def test_a_task_waiting_for_a_confirmation_survives_a_kill_and_is_answered_after_it(kind, tmp_path):
    state = tmp_path / "state"
    with serving(state) as (proc, url):
        waiting = await settle(url, await start(url, APPROVED, ELIGIBLE))
        assert waiting["status"] == "input_required"
        proc.send_signal(signal.SIGKILL)
        await anyio.to_thread.run_sync(killed, proc)
    with serving(state) as (_, url):
        again = await settle(url, waiting["taskId"])
        assert again["inputRequests"] == waiting["inputRequests"]
        done = await answer(url, again, yes=kind == "yes")
    assert done["status"] == "completed"
    assert [r["order_id"] for r in ledger(state)] == ([ELIGIBLE] if kind == "yes" else [])


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_cancelled_task_calls_no_tool_after_the_cancel_nor_after_a_restart(tmp_path):
    state = tmp_path / "state"
    with serving(state) as (proc, url):
        waiting = await settle(url, await start(url, APPROVED, ELIGIBLE))
        async with client(url) as c:
            await Wire(c).send("tasks/cancel", taskId=waiting["taskId"])
        assert (await settle(url, waiting["taskId"]))["status"] == "cancelled"
    with serving(state) as (_, url):
        assert (await settle(url, waiting["taskId"]))["status"] == "cancelled"
        async with client(url) as c:  # an answer to the cancelled task's question runs nothing
            responses = {k: {"action": "accept", "content": {"confirm": True}} for k in waiting["inputRequests"]}
            await Wire(c).send("tasks/update", taskId=waiting["taskId"], inputResponses=responses)
        assert (await settle(url, waiting["taskId"]))["status"] == "cancelled"
    assert ledger(state) == []


# ------------------------------------------------------------------------------------------------ attach(state=)

def state_shop(state: Path | None = None, **kwargs: Any) -> tuple[Any, Any]:
    server = adapters.get("mcp").make_server("shop", version="1", instructions=INSTRUCTIONS, page_size=50)
    store, _ = add_demo_tools(server)
    attach(server, SKILLS, WORKFLOWS, workflow_tools=True, state=state, **kwargs)
    return server, store


@pytest.mark.anyio
async def test_attach_with_a_state_folder_runs_durable_tasks_and_one_engine_per_process(tmp_path):
    server, store = state_shop(tmp_path / "state")
    try:
        with pytest.raises(AttachError) as second:  # DBOS is one per process
            state_shop(tmp_path / "other")
        assert second.value.diagnostics[0].code == "state-in-use"
        async with connect(server, "mcp") as c:
            wire = Wire(c)
            created = await wire.send("tools/call", name=APPROVED, arguments={"order_id": ELIGIBLE, "reason": "x"})
            waiting = await wire.settle(created["taskId"])
            assert waiting["status"] == "input_required"
            done = await wire.answer(waiting, confirm=True)
    finally:
        durable.shutdown()
    assert done["status"] == "completed" and done["result"]["content"][-1]["text"].startswith("Done: all 4 steps")
    assert [r["order_id"] for r in store.ledger()] == [ELIGIBLE]
    assert {p.name for p in (tmp_path / "state").iterdir()} >= {"dbos.sqlite", "tasks.db"}


@pytest.mark.parametrize(("kwargs", "code"), [({"tasks": "given"}, "state-and-tasks"),
                                              ({"workflow_tools": False}, "tasks-without-tools")])
def test_attach_with_a_state_folder_refuses_what_it_cannot_honour(kwargs, code, tmp_path):
    server = adapters.get("mcp").make_server("shop", version="1", instructions=INSTRUCTIONS, page_size=50)
    add_demo_tools(server)
    with pytest.raises(AttachError) as refused:
        attach(server, SKILLS, WORKFLOWS, **{"workflow_tools": True, "state": tmp_path / "s", **kwargs})
    assert refused.value.diagnostics[0].code == code


@pytest.mark.parametrize("make", ["shared", "file"])
def test_a_state_folder_others_can_write_or_that_is_a_file_is_refused_before_anything_is_kept(make, tmp_path):
    state = tmp_path / "state"
    if make == "shared":
        state.mkdir()
        state.chmod(0o777)
    else:
        state.write_text("not a folder", "utf-8")
    with pytest.raises(AttachError) as refused:
        state_shop(state)
    assert refused.value.diagnostics[0].code == "state-dir" and str(state) in str(refused.value.diagnostics[0])
    assert (list(state.iterdir()) == []) if make == "shared" else state.read_text("utf-8") == "not a folder"


def test_attach_with_a_state_folder_and_no_dbos_says_which_extra_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "dbos", None)
    with pytest.raises(AttachError) as refused:
        state_shop(tmp_path / "state")
    assert refused.value.diagnostics[0].code == "state-needs-dbos"
    assert "pip install 'project-skill[durable]'" in str(refused.value.diagnostics[0].hint)
    assert not (tmp_path / "state").exists()


# ---------------------------------------------------------------------------------------------- without the extra

HIDE_DBOS = ("import sys; sys.modules['dbos'] = None; from projector.server.cli import main; "
             "sys.exit(main('serve', sys.argv[1:]))")


def test_without_dbos_serve_says_once_that_the_workflow_tools_run_without_tasks(tmp_path):
    done = subprocess.run([sys.executable, "-c", HIDE_DBOS, "--skills", str(SKILLS), "--workflows", str(WORKFLOWS),
                           "--workflow-tools", "--state", str(tmp_path / "state")], cwd=ROOT, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("workflow tools run without tasks") == 1
    assert "project-skill[durable]" in done.stderr
    assert not (tmp_path / "state").exists()  # nothing is kept where nothing runs durably


def test_state_without_workflow_tools_is_a_usage_error(cli, tmp_path):
    result = cli("serve", "--skills", str(SKILLS), "--workflows", str(WORKFLOWS), "--state", str(tmp_path / "s"))
    assert result.code == 2 and "--state keeps the tasks of the workflow tools; add --workflow-tools" in result.err


def test_state_in_front_of_an_upstream_is_a_usage_error_not_a_silent_memory_store(cli, tmp_path):
    result = cli("serve", "--upstream", "http://127.0.0.1:9/mcp", "--workflow-tools", "--state", str(tmp_path / "s"))
    assert result.code == 2 and "--state is not supported with --upstream yet" in result.err
    assert not (tmp_path / "s").exists()


# ------------------------------------------------------------------------------------------ the question of a retry

@pytest.mark.slow
@pytest.mark.anyio
async def test_four_answers_at_once_to_a_retry_question_run_it_once_and_none_is_an_error(tmp_path):
    """Issue 38, 10b: each answer is taken in one change of the task; the three that lose answer a round already
    answered, which is no error, and the refund is issued once."""
    state = tmp_path / "state"
    with serving(state, "before:issue_refund/A1001") as (proc, url):
        eligible = await start(url, GATED, ELIGIBLE)
        await anyio.to_thread.run_sync(killed, proc)
    with serving(state) as (proc, url):
        task = await settle(url, eligible)
        assert task["status"] == "input_required"
        yes = {k: {"action": "accept", "content": {"confirm": True}} for k in task["inputRequests"]}
        answers: list[Any] = []

        async def send(wire: Wire) -> None:
            try:
                answers.append(await wire.send("tasks/update", taskId=eligible, inputResponses=yes))
            except Exception as exc:  # noqa: BLE001 - what the client saw
                answers.append(exc)

        async with client(url) as a, client(url) as b, client(url) as c, client(url) as d:
            with anyio.fail_after(60):  # none hangs
                async with anyio.create_task_group() as group:
                    for each in (a, b, c, d):
                        group.start_soon(send, Wire(each))
        done = await settle(url, eligible)
    assert [a.get("resultType") if isinstance(a, dict) else repr(a) for a in answers] == ["complete"] * 4
    assert done["status"] == "completed" and texts(done)[-1] == DONE
    assert [r["order_id"] for r in ledger(state)] == [ELIGIBLE]
    assert (state.parent / "calls.txt").read_text("utf-8").split().count("after:issue_refund/A1001") == 1
    assert "Traceback" not in proc.said


TWICE = "refund_twice"


def refund_twice(tmp_path: Path, cli: Any) -> tuple[Path, Path]:
    """The gated refund with a step before the refund that calls the same tool and is skipped (its condition never
    holds for the demo's orders): the refund is step 4. Its workflows and its built skills."""
    text = (WORKFLOWS / "refunds-gated.yaml").read_text("utf-8").replace("name: refund_flow_gated", f"name: {TWICE}")
    skipped = """  - name: refund_elsewhere
    tool: issue_refund
    args:
      order_id: {step: order, field: id}
      amount: {step: order, field: total}
    when:
      - {step: order, field: region, equals: nowhere}
    on_fail: skip
"""
    step = "  - name: issue_refund\n    tool: issue_refund\n"
    assert step in text
    text = text.replace(step, skipped + step)
    workflows, skills = tmp_path / "workflows", tmp_path / "skills"
    workflows.mkdir()
    (workflows / "twice.yaml").write_text(text, "utf-8")
    built = cli("build", str(workflows), "--out", str(skills))
    assert built.code == 0, built.err
    return workflows, skills


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_retry_question_names_the_step_in_flight_not_a_skipped_one_that_calls_the_same_tool(tmp_path, cli):
    """Issue 38, 10c: step 3 calls `issue_refund` too, and was skipped; the call in flight was step 4's."""
    workflows, skills = refund_twice(tmp_path, cli)
    state = tmp_path / "state"
    where = {"skills": skills, "workflows": workflows}
    with serving(state, "before:issue_refund/A1001", **where) as (proc, url):
        task_id = await start(url, TWICE, ELIGIBLE)
        await anyio.to_thread.run_sync(killed, proc)
    with serving(state, **where) as (_, url):
        task = await settle(url, task_id)
        (request,) = task["inputRequests"].values()
        assert "Retry step 4 (tool issue_refund)?" in request["params"]["message"]
        assert "Step 4 of 5 of `refund_twice` (`issue_refund`)" in request["params"]["message"]
        done = await answer(url, task, yes=True)
    assert done["status"] == "completed" and [r["order_id"] for r in ledger(state)] == [ELIGIBLE]
