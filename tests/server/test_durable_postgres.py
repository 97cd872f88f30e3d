"""Durable workflow tasks on Postgres, shared by several server processes (issue 32):
``project-skill serve --workflow-tools --state postgresql://...``.

The slow tests start their own Postgres cluster from Debian's packages (``/usr/lib/postgresql/*/bin``) in a temporary
folder, on 127.0.0.1 and a free port, with a password, and stop it at the end. Two real server processes serve the
refunds workflow on the same database and share the demo shop's file (``$PROJECT_SKILL_DEMO_SHOP``); one is killed
with SIGKILL mid-run, and the other takes up its task once its lease has run out (``$PROJECT_SKILL_STATE_LEASE``).
What is pinned: the task made on the dead process is read, answered and finished on the live one; an in-flight call
of a tool that is neither read-only nor idempotent is not called again unless the person says yes; a yes is acted on
once, wherever it is sent again; the ledger holds exactly one refund.
"""

from __future__ import annotations

import glob
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from projector.server import durable
from projector.server.errors import AttachError

from .test_durable import (
    APPROVED,
    DONE,
    ELIGIBLE,
    GATED,
    INELIGIBLE,
    answer,
    client,
    free_port,
    killed,
    ledger,
    settle,
    start,
    state_shop,
    texts,
)
from .test_durable import serving as durable_serving
from . import test_confirm as confirm
from .test_serve_skills import stop
from .test_tasks import Wire

pytest.importorskip("dbos")

PASSWORD = "s3cret-pw"  # noqa: S105 - the throwaway cluster's own
ARGS = {"order_id": ELIGIBLE, "reason": "broken"}
LEASE = "2"  # seconds: a killed process's rounds are taken up within a lease and a beat


def _binaries() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[4]))
    return Path(found[-1]).parent if found else None


def _as_postgres(argv: list[str]) -> list[str]:
    """initdb refuses to run as root: as root, the cluster belongs to the ``postgres`` user of Debian's package."""
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A Postgres cluster of its own, on 127.0.0.1 (and a unix socket in its folder); yields its base URL."""
    bindir = _binaries()
    if bindir is None:
        if os.geteuid() != 0:
            pytest.skip("Postgres is not installed (/usr/lib/postgresql/*/bin/initdb) and only root installs it")
        pytest.fail("Postgres is not installed (/usr/lib/postgresql/*/bin/initdb): scripts/test installs it as root")
    home = Path(tempfile.mkdtemp(prefix="projector-pg-"))  # not under pytest's folder, which only root can enter
    if os.geteuid() == 0:
        shutil.chown(home, "postgres")
    data, pwfile, port = home / "data", home / "pw", free_port()
    pwfile.write_text(PASSWORD, "utf-8")
    if os.geteuid() == 0:
        shutil.chown(pwfile, "postgres")
    options = f"-p {port} -k {home} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200"
    try:
        _run(
            [
                str(bindir / "initdb"),
                "-D",
                str(data),
                "-U",
                "projector",
                "--pwfile",
                str(pwfile),
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "--no-sync",
                "-E",
                "UTF8",
            ]
        )
        _run([str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(home / "log"), "-w", "start"])
        yield f"postgresql://projector:{PASSWORD}@127.0.0.1:{port}"
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run(
                _as_postgres([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]),
                capture_output=True,
                timeout=120,
            )
        shutil.rmtree(home, ignore_errors=True)


def _run(argv: list[str]) -> None:
    done = subprocess.run(_as_postgres(argv), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{argv[0]} failed: {done.stdout}{done.stderr}"


@pytest.fixture
def database(cluster: str, request: pytest.FixtureRequest) -> str:
    """A database of the test's own in the cluster; its URL."""
    import psycopg

    name = "t_" + "".join(c if c.isalnum() else "_" for c in request.node.name.lower())[:50]
    with psycopg.connect(f"{cluster}/postgres", autocommit=True) as db:
        db.execute(f"DROP DATABASE IF EXISTS {name}")
        db.execute(f"CREATE DATABASE {name}")
    return f"{cluster}/{name}"


def serving(url: str, folder: Path, crash: str | None = None, env: dict[str, str] | None = None, **kwargs: Any):
    """``serve --workflow-tools --state URL --http`` with the demo shop and its call log in ``folder``; ``env``: more
    of the environment."""
    env = {"PROJECT_SKILL_STATE_LEASE": LEASE, "PROJECT_SKILL_DEMO_SHOP": str(folder / "demo-shop.json"), **(env or {})}
    return durable_serving(url, crash, calls=folder / "calls.txt", env=env, **kwargs)


def calls(folder: Path) -> Counter[str]:
    return Counter((folder / "calls.txt").read_text("utf-8").split())


# ------------------------------------------------------------------------------------------ two processes, one dies


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("crash", ["before:check_eligibility/A1001", "before:issue_refund/A1001"])
async def test_a_task_made_on_a_killed_process_is_finished_by_the_other_with_one_refund(crash, database, tmp_path):
    with serving(database, tmp_path, crash) as (a, url_a), serving(database, tmp_path) as (_, url_b):
        ineligible = await start(url_a, GATED, INELIGIBLE)
        eligible = await start(url_a, GATED, ELIGIBLE)
        await anyio.to_thread.run_sync(killed, a)
        task = await settle(url_b, eligible)  # B reads it at once, and takes up its round once A's lease ran out
        if crash.startswith("before:issue_refund"):  # in flight, not idempotent: B asks, and runs it on a yes
            assert task["status"] == "input_required"
            (request,) = task["inputRequests"].values()
            assert "Retry step 3 (tool issue_refund)?" in request["params"]["message"]
            assert ledger(tmp_path) == []
            task = await answer(url_b, task, yes=True)
        other = await settle(url_b, ineligible)
    assert task["status"] == "completed" and texts(task)[-1] == DONE
    assert other["status"] == "completed" and "Stopped before step 3 of 4" in texts(other)[-1]
    assert [r["order_id"] for r in ledger(tmp_path)] == [ELIGIBLE]
    made = calls(tmp_path)
    assert made["before:get_order/A1001"] == 1  # finished on A: never called again on B
    assert made[crash] == 2 and made["after:issue_refund/A1001"] == 1


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_confirmation_asked_on_a_killed_process_is_answered_on_the_other_once(database, tmp_path):
    with serving(database, tmp_path) as (a, url_a), serving(database, tmp_path) as (_, url_b):
        waiting = await settle(url_a, await start(url_a, APPROVED, ELIGIBLE))
        assert waiting["status"] == "input_required"
        a.send_signal(signal.SIGKILL)
        await anyio.to_thread.run_sync(killed, a)
        again = await settle(url_b, waiting["taskId"])
        assert again["inputRequests"] == waiting["inputRequests"]
        done = await answer(url_b, again, yes=True)
        assert done["status"] == "completed" and texts(done)[-1].startswith("Done: all 4 steps")
        async with client(url_b) as c:  # the same yes again: it answers nothing, and nothing runs
            responses = {k: {"action": "accept", "content": {"confirm": True}} for k in waiting["inputRequests"]}
            await Wire(c).send("tasks/update", taskId=waiting["taskId"], inputResponses=responses)
        await anyio.sleep(1)
        assert await settle(url_b, waiting["taskId"]) == done
    with serving(database, tmp_path) as (_, url_c):  # nor on a third process
        async with client(url_c) as c:
            await Wire(c).send("tasks/update", taskId=waiting["taskId"], inputResponses=responses)
        await anyio.sleep(1)
        assert await settle(url_c, waiting["taskId"]) == done
    assert [r["order_id"] for r in ledger(tmp_path)] == [ELIGIBLE]
    assert calls(tmp_path)["before:issue_refund/A1001"] == 1


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_prompts_yes_is_claimed_in_postgres_so_another_process_refuses_it_again(database, tmp_path):
    """With a state key and no $PROJECT_SKILL_REPLAY_DB, the processes on one Postgres state share the claims."""
    env = {k: v for k, v in os.environ.items() if k != "PROJECT_SKILL_REPLAY_DB"}
    env.update(
        {
            "PROJECT_SKILL_STATE_KEY": secrets.token_hex(32),
            "PROJECT_SKILL_STATE_LEASE": LEASE,
            "PROJECT_SKILL_DEMO_SHOP": str(tmp_path / "demo-shop.json"),
        }
    )
    flags = ("--workflow-tools", "--state", database)
    (a, port_a), (b, port_b) = confirm.start(env, "mcp", *flags), confirm.start(env, "mcp", *flags)
    try:
        async with Client(
            f"http://127.0.0.1:{port_a}/mcp", cache=None, elicitation_callback=confirm.answer("yes")
        ) as c:
            first = await confirm.first_round(c)
            done = await c.session.get_prompt(
                confirm.PROMPT, ARGS, input_responses=confirm.YES, request_state=first.request_state
            )
        assert done.messages[-1].content.text.startswith("Done")
        async with Client(f"http://127.0.0.1:{port_b}/mcp", cache=None) as c:
            with pytest.raises(MCPError) as refused:
                await c.session.get_prompt(
                    confirm.PROMPT,
                    ARGS,
                    input_responses=confirm.YES,
                    request_state=first.request_state,
                    allow_input_required=True,
                )
        assert refused.value.error.code == -32602 and "answered before" in refused.value.error.message
    finally:
        stop(a)
        stop(b)
    assert [r["order_id"] for r in ledger(tmp_path)] == [ELIGIBLE]


# ------------------------------------------------------------------------------------------------ the URL's forms


@pytest.mark.parametrize("url", ["mysql://me:hunter2@127.0.0.1/shop", "sqlite:///tmp/x.db"])
def test_a_state_url_that_is_not_postgres_is_refused_naming_the_forms_and_hiding_the_password(
    url, tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(AttachError) as refused:
        state_shop(url)
    problem = str(refused.value.diagnostics[0])
    assert refused.value.diagnostics[0].code == "state-url"
    assert "postgresql://USER:PASSWORD@HOST:PORT/DATABASE" in problem and "hunter2" not in problem
    assert list(tmp_path.iterdir()) == []  # no folder was made of it


def test_a_postgres_url_that_cannot_be_reached_is_refused_without_its_password(tmp_path):
    url = f"postgresql://me:hunter2@127.0.0.1:{free_port()}/shop?password=hunter2"
    try:
        with pytest.raises(AttachError) as refused:
            state_shop(url)
    finally:
        durable.shutdown()
    problem = refused.value.diagnostics[0]
    assert problem.code == "state-db" and "hunter2" not in str(problem) and "127.0.0.1" in str(problem)


@pytest.mark.parametrize("password", ["hunt@er2", "hunt#er2", "hunt/er2", "hunt?er2"])
def test_a_password_with_a_character_left_unencoded_is_refused_without_showing_any_of_it(password, cli, tmp_path):
    """Python and libpq would read another password from the URL: neither part of it may reach the error."""
    try:
        run = cli("serve", "--workflow-tools", "--state", f"postgresql://me:{password}@127.0.0.1:{free_port()}/shop")
    finally:
        durable.shutdown()
    assert run.code != 0 and "state-url" in run.err and "%40" in run.err
    assert "hunt" not in run.err + run.out and "er2" not in run.err + run.out


@pytest.mark.parametrize("lease", ["soon", "0", "0.001", "0.9", "86401", "nan"])
def test_a_lease_that_is_not_a_number_of_seconds_is_refused(monkeypatch, tmp_path, lease):
    """A lease under a second would have each process reconnect in a near-tight loop and take over live ones."""
    monkeypatch.setenv("PROJECT_SKILL_STATE_LEASE", lease)
    with pytest.raises(AttachError) as refused:
        state_shop("postgresql://me@127.0.0.1:1/shop")
    assert refused.value.diagnostics[0].code == "state-lease"
    assert "PROJECT_SKILL_STATE_LEASE" in str(refused.value.diagnostics[0])


# ------------------------------------------------------------------------------------ what the database keeps


def kept(url: str) -> tuple[int, int]:
    """How many tasks the database keeps, and how many DBOS workflows (the tasks' rounds)."""
    import psycopg

    with psycopg.connect(url) as db:
        tasks = db.execute("SELECT COUNT(*) FROM projector.tasks").fetchone()[0]
        rounds = db.execute("SELECT COUNT(*) FROM dbos.workflow_status").fetchone()[0]
    return tasks, rounds


@pytest.mark.slow
@pytest.mark.anyio
async def test_postgres_refuses_a_task_past_its_bounds_and_removes_an_expired_one_with_its_rounds(database, tmp_path):
    from .test_durable_upkeep import call, refused

    env = {
        "PROJECT_SKILL_STATE_MAX_TASKS": "2",
        "PROJECT_SKILL_STATE_MAX_TASK_BYTES": "20000",
        "PROJECT_SKILL_STATE_TTL": "3",
    }
    with serving(database, tmp_path, env=env) as (a, url_a), serving(database, tmp_path, env=env) as (b, url_b):
        assert "over the 20,000 bytes this server keeps for one task" in await refused(url_a, APPROVED, "x" * 30_000)
        made = [(await call(url, APPROVED, "broken"))["taskId"] for url in (url_a, url_b)]
        assert "this server keeps at most 2 tasks" in await refused(url_b, APPROVED, "broken")  # made on A and B
        for task_id in made:
            assert (await settle(url_a, task_id))["status"] == "input_required"
        assert kept(database) == (2, 2)
        await anyio.sleep(5)  # the ttlMs passes, and a process's upkeep runs
        assert kept(database) == (0, 0)
        assert (await call(url_b, APPROVED, "broken"))["resultType"] == "task"  # their places are free again
    assert "Traceback" not in a.said + b.said


@pytest.mark.slow
@pytest.mark.anyio
async def test_postgres_takes_up_a_task_answered_on_a_process_killed_before_its_round_was_recorded(database, tmp_path):
    from .test_durable_upkeep import KILLED_BEFORE_A_ROUND

    killing = {"env": {"KILL_AT": "2"}, "launcher": ("-c", KILLED_BEFORE_A_ROUND)}
    with serving(database, tmp_path, **killing) as (a, url_a), serving(database, tmp_path) as (b, url_b):
        waiting = await settle(url_a, await start(url_a, APPROVED, ELIGIBLE))
        yes = {k: {"action": "accept", "content": {"confirm": True}} for k in waiting["inputRequests"]}
        with pytest.raises(Exception):  # noqa: B017, PT011 - A died before it answered
            async with client(url_a) as c:
                await Wire(c).send("tasks/update", taskId=waiting["taskId"], inputResponses=yes)
        await anyio.to_thread.run_sync(killed, a)
        done = await settle(url_b, waiting["taskId"])  # B takes it up once it has been silent for a lease
    assert done["status"] == "completed" and texts(done)[-1].startswith("Done: all 4 steps")
    assert [r["order_id"] for r in ledger(tmp_path)] == [ELIGIBLE]
    assert "Traceback" not in b.said


@pytest.mark.slow
@pytest.mark.anyio
async def test_postgres_four_answers_at_once_on_two_processes_to_a_retry_question_run_it_once(database, tmp_path):
    crashing = serving(database, tmp_path, "before:issue_refund/A1001")
    with crashing as (a, url_a), serving(database, tmp_path) as (b, url_b):
        eligible = await start(url_a, GATED, ELIGIBLE)
        await anyio.to_thread.run_sync(killed, a)
        task = await settle(url_b, eligible)
        assert task["status"] == "input_required"
        with serving(database, tmp_path) as (c, url_c):
            yes = {k: {"action": "accept", "content": {"confirm": True}} for k in task["inputRequests"]}
            answers: list[Any] = []

            async def send(url: str) -> None:
                async with client(url) as each:
                    try:
                        answers.append(await Wire(each).send("tasks/update", taskId=eligible, inputResponses=yes))
                    except Exception as exc:  # noqa: BLE001 - what the client saw
                        answers.append(exc)

            with anyio.fail_after(60):
                async with anyio.create_task_group() as group:
                    for url in (url_b, url_c, url_b, url_c):
                        group.start_soon(send, url)
            done = await settle(url_c, eligible)
    assert [x.get("resultType") if isinstance(x, dict) else repr(x) for x in answers] == ["complete"] * 4
    assert done["status"] == "completed" and texts(done)[-1] == DONE
    assert [r["order_id"] for r in ledger(tmp_path)] == [ELIGIBLE]
    assert calls(tmp_path)["after:issue_refund/A1001"] == 1
    assert "Traceback" not in b.said + c.said
