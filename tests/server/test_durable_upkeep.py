"""What a durable state keeps, and for how long (issue 38, item 5): ``project-skill serve --workflow-tools --state``.

Real server processes over Streamable HTTP, with the bounds and the ``ttlMs`` set through the environment
(``$PROJECT_SKILL_STATE_MAX_TASKS``, ``..._MAX_TASK_BYTES``, ``..._MAX_BYTES``, ``$PROJECT_SKILL_STATE_TTL``), and
mcp's ``Client`` declaring the Tasks extension. What is pinned: a task past a bound is refused with a plain error
before anything of it is kept; an expired task is removed with its DBOS rounds (the folder's rows go, and its size
stops growing); a task saved ``working`` by a process killed before its round was recorded is taken up at the next
start, and finishes with one refund. The Postgres state is pinned the same way in ``test_durable_postgres.py``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from .test_durable import APPROVED, ELIGIBLE, GATED, INELIGIBLE, client, killed, ledger, serving, settle, start, texts
from .test_tasks import Wire

pytest.importorskip("dbos")

# ``serve``, in a process whose DBOS kills it (SIGKILL) as it is asked to record the $KILL_AT-th round: the task is
# saved ``working`` and its round is not recorded, as when a server dies between the two.
KILLED_BEFORE_A_ROUND = """
import os, signal, sys
from dbos import DBOS
real, seen = DBOS.start_workflow_async, []
async def start(*args, **kwargs):
    seen.append(1)
    if len(seen) == int(os.environ["KILL_AT"]):
        os.kill(os.getpid(), signal.SIGKILL)
    return await real(*args, **kwargs)
DBOS.start_workflow_async = staticmethod(start)
from projector.server.cli import main
sys.exit(main("serve", sys.argv[1:]))
"""


async def call(url: str, name: str, reason: str, order: str = ELIGIBLE) -> dict[str, Any]:
    async with client(url) as c:
        return await Wire(c).send("tools/call", name=name, arguments={"order_id": order, "reason": reason})


async def refused(url: str, name: str, reason: str) -> str:
    async with client(url) as c:
        with pytest.raises(MCPError) as error:
            await Wire(c).send("tools/call", name=name, arguments={"order_id": ELIGIBLE, "reason": reason})
    return error.value.error.message


def size(state: Path) -> int:
    """The bytes of the state's databases (DBOS's and the tasks'), their journals included."""
    return sum(p.stat().st_size for p in state.iterdir() if p.name != "demo-shop.json")


def rows(state: Path) -> tuple[int, int]:
    """How many tasks the folder keeps, and how many DBOS workflows (the tasks' rounds)."""
    with sqlite3.connect(f"file:{state / 'tasks.db'}?mode=ro", uri=True) as tasks:
        kept = tasks.execute("SELECT COUNT(*) FROM tasks").fetchone()[0]
    with sqlite3.connect(f"file:{state / 'dbos.sqlite'}?mode=ro", uri=True) as dbos:
        rounds = dbos.execute("SELECT COUNT(*) FROM workflow_status").fetchone()[0]
    return kept, rounds


# ----------------------------------------------------------------------------------------------------- the bounds


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_task_over_the_bytes_one_task_may_take_is_refused_before_anything_is_kept(tmp_path):
    state = tmp_path / "state"
    with serving(state, env={"PROJECT_SKILL_STATE_MAX_TASK_BYTES": "20000"}) as (proc, url):
        before = size(state)
        message = await refused(url, GATED, "x" * 30_000)
        assert "over the 20,000 bytes this server keeps for one task; nothing was kept" in message
        assert size(state) - before < 30_000  # nothing of the call was kept
        small = await call(url, GATED, "broken", INELIGIBLE)  # a task within the bound is made as before
        assert (await settle(url, small["taskId"]))["status"] == "completed"
    assert "Traceback" not in proc.said


@pytest.mark.slow
@pytest.mark.anyio
async def test_past_the_number_of_tasks_kept_a_new_task_is_refused(tmp_path):
    with serving(tmp_path / "state", env={"PROJECT_SKILL_STATE_MAX_TASKS": "2"}) as (proc, url):
        for _ in range(2):
            assert (await call(url, APPROVED, "broken"))["resultType"] == "task"
        assert "this server keeps at most 2 tasks" in await refused(url, APPROVED, "broken")
    assert "Traceback" not in proc.said


@pytest.mark.slow
@pytest.mark.anyio
async def test_past_the_bytes_kept_in_all_a_new_task_is_refused(tmp_path):
    with serving(tmp_path / "state", env={"PROJECT_SKILL_STATE_MAX_BYTES": "100000"}) as (proc, url):
        first = await call(url, APPROVED, "x" * 20_000)  # waits for a yes, its state holding the reason again
        assert (task := await settle(url, first["taskId"]))["status"] == "input_required", task.get("error")
        message = await refused(url, APPROVED, "x" * 40_000)
        assert "this server keeps at most 100,000 bytes of tasks" in message and "nothing was kept" in message
        assert (await call(url, APPROVED, "broken"))["resultType"] == "task"  # a small one still fits
    assert "Traceback" not in proc.said


# ------------------------------------------------------------------------------------------------------- the ttl


@pytest.mark.slow
@pytest.mark.anyio
async def test_an_expired_task_is_removed_with_its_dbos_rounds_and_the_folder_stops_growing(tmp_path):
    state = tmp_path / "state"
    with serving(state, env={"PROJECT_SKILL_STATE_TTL": "2"}) as (proc, url):
        empty = size(state)
        made = [(await call(url, APPROVED, "x" * 100_000))["taskId"] for _ in range(4)]
        for task_id in made:
            assert (task := await settle(url, task_id))["status"] == "input_required", task.get("error")
        assert rows(state) == (4, 4)
        grown = size(state) - empty
        await anyio.sleep(4)  # the ttlMs passes, and the upkeep runs (every second here)
        assert rows(state) == (0, 0)
        async with client(url) as c:
            with pytest.raises(MCPError) as gone:
                await Wire(c).send("tasks/get", taskId=made[0])
        assert gone.value.error.code == -32602
        again = [(await call(url, APPROVED, "x" * 100_000))["taskId"] for _ in range(4)]
        for task_id in again:
            assert (await settle(url, task_id))["status"] == "input_required"
        assert size(state) - empty < grown * 1.5  # the space of the removed ones is used again
    assert "Traceback" not in proc.said


# ------------------------------------------------------------------------------------- a task saved with no round


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_task_answered_by_a_process_killed_before_its_round_was_recorded_is_taken_up_on_restart(tmp_path):
    state = tmp_path / "state"
    launcher = ("-c", KILLED_BEFORE_A_ROUND)
    with serving(state, env={"KILL_AT": "2"}, launcher=launcher) as (proc, url):
        waiting = await settle(url, await start(url, APPROVED, ELIGIBLE))
        assert waiting["status"] == "input_required"
        yes = {k: {"action": "accept", "content": {"confirm": True}} for k in waiting["inputRequests"]}
        with pytest.raises(Exception):  # noqa: B017, PT011 - the server died before it answered
            async with client(url) as c:
                await Wire(c).send("tasks/update", taskId=waiting["taskId"], inputResponses=yes)
        await anyio.to_thread.run_sync(killed, proc)
    with serving(state) as (proc, url):
        done = await settle(url, waiting["taskId"])
    assert done["status"] == "completed" and texts(done)[-1].startswith("Done: all 4 steps")
    assert [r["order_id"] for r in ledger(state)] == [ELIGIBLE]
    assert "Traceback" not in proc.said


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_task_made_by_a_process_killed_before_its_first_round_was_recorded_runs_nothing(tmp_path):
    """Its client was never told its id: the task ends, and none of its steps is called."""
    state = tmp_path / "state"
    with serving(state, env={"KILL_AT": "1"}, launcher=("-c", KILLED_BEFORE_A_ROUND)) as (proc, url):
        with pytest.raises(Exception):  # noqa: B017, PT011 - the server died before it answered
            await start(url, GATED, ELIGIBLE)
        await anyio.to_thread.run_sync(killed, proc)
    with serving(state) as (proc, url):
        await anyio.sleep(1)
        assert (await call(url, GATED, "broken", INELIGIBLE))["resultType"] == "task"
    calls = (tmp_path / "calls.txt").read_text("utf-8").split() if (tmp_path / "calls.txt").exists() else []
    assert [c for c in calls if c.endswith(ELIGIBLE)] == [] and ledger(state) == []
    assert "Traceback" not in proc.said


@pytest.mark.parametrize("value", ["lots", "0", "-5", "1.5", "1e9", "\u00b2", "1\u00b9"])
def test_a_bound_that_is_not_a_whole_number_from_one_up_is_refused_before_anything_is_made(
    value, tmp_path, monkeypatch
):
    from projector.server.errors import AttachError

    from .test_durable import state_shop

    monkeypatch.setenv("PROJECT_SKILL_STATE_MAX_TASKS", value)
    with pytest.raises(AttachError) as refused:
        state_shop(tmp_path / "state")
    problem = refused.value.diagnostics[0]
    assert problem.code == "state-limit" and "$PROJECT_SKILL_STATE_MAX_TASKS" in str(problem)
    assert not (tmp_path / "state").exists()
