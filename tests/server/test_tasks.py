"""Workflow tools as tasks (SEP-2663, issue 32): ``attach(..., workflow_tools=True, tasks=Tasks())``.

Driven through real clients: the official conformance suite's ten Tasks server scenarios (over Streamable HTTP,
against the fixture server in ``tests/server/tasks``, on both frameworks), and mcp's ``Client`` in memory, which
declares the extension and sends ``tools/call``, ``tasks/get``, ``tasks/update`` and ``tasks/cancel`` as they are
on the wire. What is pinned: a task asks the prompt's question and runs the same tool calls as the plain tool and
the prompt for the same answers; a no, a cancel or an answer of another task runs nothing more; a client that did
not declare the extension gets the plain result.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.extension import advertise
from mcp.shared.exceptions import MCPError
from mcp_types import Request, RequestParams
from pydantic import ConfigDict, TypeAdapter

from projector.server import adapters, attach
from projector.server.demo import INSTRUCTIONS, add_demo_tools
from projector.server.tasks import TASKS_EXTENSION, MemoryStore, Tasks

from .test_confirm import answer
from .test_serve_skills import ROOT, SKILLS, WORKFLOWS
from .test_workflow_tool import STEP_TOOLS, as_prompt, as_tool

FRAMEWORKS = ["mcp", "fastmcp"]
TASKS_SCENARIOS = {
    "tasks-lifecycle",
    "tasks-capability-negotiation",
    "tasks-wire-fields",
    "tasks-request-state-removal",
    "tasks-mrtr-input",
    "tasks-request-headers",
    "tasks-dispatch-and-envelope",
    "tasks-status-notifications",
    "tasks-required-task-error",
    "tasks-mrtr-composition",
}
REFUND = ("refund_flow_approved", {"order_id": "A1001", "reason": "broken"})


# --------------------------------------------------------------------------------------------- the official suite


@pytest.mark.slow
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_ten_tasks_conformance_scenarios_pass(framework, tmp_path):
    report = tmp_path / "conformance.json"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "conformance.py"),
            "--tasks",
            "--framework",
            framework,
            "--json",
            str(report),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    print(done.stdout)
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    results = json.loads(report.read_text("utf-8"))
    assert {r["scenario"] for r in results} == TASKS_SCENARIOS
    for r in results:
        assert r["problems"] == [] and r["counts"].get("FAILURE", 0) == 0 and r["counts"].get("WARNING", 0) == 0, r
        if r["scenario"] != "tasks-status-notifications":  # the suite's placeholder: one check it always skips
            assert r["counts"]["SUCCESS"] > 0 and r["counts"].get("SKIPPED", 0) == 0, r


def test_the_tasks_conformance_run_fails_loudly_when_its_peers_cannot_be_installed(tmp_path):
    """CI (``.ci/run`` -> ``scripts/test``, the whole suite, slow tests included) runs the ten scenarios above; on a
    machine where Node and the suite are missing and cannot be installed, the run exits 2 naming why, and the test
    above fails on it: a scenario that did not run is never a skip, nor a pass."""
    import os

    empty = tmp_path / "bin"
    empty.mkdir()
    env = {**os.environ, "PATH": str(empty), "PROJECTOR_CACHE": str(tmp_path / "cache"), "CI": "true"}
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "conformance.py"), "--tasks", "--framework", "mcp"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "npm is not on PATH" in done.stderr and "GREEN" not in done.stdout


# ------------------------------------------------------------------------------------- the Tasks extension's client

WORKFLOW_SERVER = ROOT / "tests" / "server" / "tasks" / "workflow_server.py"


def _ext_tasks_client() -> tuple[str, str]:
    """Node 22 and the folder of ``@modelcontextprotocol/ext-tasks`` (with the TypeScript SDK v2 client), installed
    by scripts/conformance.py as CI installs them (a failed install fails the test; it never skips)."""
    from .test_fastmcp import _conformance_script

    script = _conformance_script()
    cache = script.cache_dir()
    script.install(cache, log=lambda *_: None)
    return str(script.node_binary(cache)), str(script.install_peer(cache, script.TS_EXT_TASKS, log=lambda *_: None))


@pytest.mark.slow
@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("kind", ["yes", "no"])
def test_the_tasks_extensions_own_client_completes_a_confirmed_task_over_http(framework, kind):
    """The npm package ``@modelcontextprotocol/ext-tasks`` (on the TypeScript SDK v2 client, 2026-07-28) calls the
    refunds workflow tool: it gets a task, polls ``tasks/get``, answers the ``confirm:`` through ``tasks/update``,
    and reads the completed result, which its own schemas accept; the refund is issued once on a yes, never on a
    no. Its driver is tests/server/ts_tasks_client.mjs; the server, tests/server/tasks/workflow_server.py."""
    from .test_fastmcp import free_port, running

    node, peer = _ext_tasks_client()
    port = free_port()
    argv = [sys.executable, str(WORKFLOW_SERVER), "--framework", framework, "--http", f"127.0.0.1:{port}"]
    with running(argv, port) as url:
        done = subprocess.run(
            [
                node,
                str(ROOT / "tests" / "server" / "ts_tasks_client.mjs"),
                peer,
                url,
                REFUND[0],
                json.dumps(REFUND[1]),
                kind,
                json.dumps(["list_refunds"]),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=180,
        )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["kind"] == "task" and seen["outcome"] == "completed"
    assert seen["statuses"] == ["working", "input_required", "completed"]
    assert len(seen["asked"]) == 1 and seen["asked"][0].startswith("Issue this refund?")
    last = seen["result"]["content"][-1]["text"]
    (refunds,) = seen["after"]  # a plain call in the same session: the server's ledger
    if kind == "yes":
        assert last == "Done: all 4 steps of `refund_flow_approved` ran on the server."
        assert [r["order_id"] for r in refunds["structuredContent"]["result"]] == ["A1001"]
        assert seen["result"]["structuredContent"]["results"]["refund"]["order_id"] == "A1001"
    else:
        assert "the person did not confirm it" in last and "did not call `issue_refund`" in last
        assert refunds["structuredContent"]["result"] == []


# ------------------------------------------------------------------------------------------- a client of the wire


class _Params(RequestParams):
    model_config = ConfigDict(extra="allow")


class _Raw(Request[_Params, str]):
    method: str
    params: _Params


class Wire:
    """mcp's Client in memory, declaring the Tasks extension, sending requests as they are on the wire."""

    def __init__(self, client: Client):
        self.client = client

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        return await self.client.session.send_request(
            _Raw(method=method, params=_Params(**params)), TypeAdapter(dict[str, Any])
        )

    async def settle(
        self, task_id: str, until: tuple[str, ...] = ("input_required", "completed", "failed", "cancelled")
    ) -> dict[str, Any]:
        with anyio.fail_after(30):
            while (task := await self.send("tasks/get", taskId=task_id))["status"] not in until:
                await anyio.sleep(0.02)
        return task

    async def answer(self, task: dict[str, Any], **content: Any) -> dict[str, Any]:
        """Answer every pending request of ``task`` with ``content`` (accepted), and wait for what comes next."""
        responses = {k: {"action": "accept", "content": content} for k in task["inputRequests"]}
        assert await self.send("tasks/update", taskId=task["taskId"], inputResponses=responses) == {
            "resultType": "complete",
            "_meta": task["_meta"],
        }
        return await self.settle(task["taskId"])


def shop(framework: str, tasks: Tasks | None = None) -> tuple[Any, Any, list[str]]:
    """The demo's shop with its workflows as tools that run as tasks, its store, and the tool calls it gets."""
    adapter = adapters.get(framework)
    server = adapter.make_server("shop", version="1", instructions=INSTRUCTIONS, page_size=50)
    store, _ = add_demo_tools(server)
    calls: list[str] = []
    for name in STEP_TOOLS:
        real = getattr(store, name)

        def recorded(*a: Any, _real: Any = real, _name: str = name, **k: Any) -> Any:
            calls.append(_name)
            return _real(*a, **k)

        setattr(store, name, recorded)
    attach(server, SKILLS, WORKFLOWS, workflow_tools=True, tasks=tasks if tasks is not None else Tasks())
    return server, store, calls


def connect(server: Any, framework: str, *, declare: bool = True, **kwargs: Any) -> Client:
    target = server if framework == "mcp" else server._mcp_server  # FastMCP's low-level server, in memory
    return Client(target, extensions=[advertise(TASKS_EXTENSION)] if declare else None, **kwargs)


async def run_as_task(framework: str, name: str, args: dict[str, Any], kind: str | None):
    """The workflow as a task, each confirmation answered ``kind`` ("yes", "no"; None: cancelled instead)."""
    server, store, calls = shop(framework)
    async with connect(server, framework) as c:
        wire = Wire(c)
        created = await wire.send("tools/call", name=name, arguments=args)
        assert created["resultType"] == "task" and created["status"] == "working"
        task = await wire.settle(created["taskId"])
        questions = []
        while task["status"] == "input_required" and kind is not None:
            (request,) = task["inputRequests"].values()
            questions.append(request["params"]["message"])
            task = await wire.answer(task, confirm=kind == "yes")
        if kind is None:
            await wire.send("tasks/cancel", taskId=task["taskId"])
            task = await wire.settle(task["taskId"], ("cancelled",))
    return task, questions, calls, store.ledger()


async def prompt_questions(framework: str, name: str, args: dict[str, Any]) -> list[str]:
    server, _, _ = shop(framework)
    asked = answer("no")
    async with connect(server, framework, declare=False, elicitation_callback=asked) as c:
        await c.get_prompt(name, args)
    return list(asked.asked)


# ------------------------------------------------------------------------------------------------ the workflows


@pytest.mark.anyio
@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("kind", ["yes", "no"])
async def test_a_task_asks_the_prompts_question_and_makes_the_same_calls_as_the_tool_and_the_prompt(framework, kind):
    name, args = REFUND
    task, questions, calls, ledger = await run_as_task(framework, name, args, kind)
    texts, tool_calls, tool_ledger, structured = await as_tool(framework, name, args, kind)
    prompt_texts, prompt_calls, prompt_ledger = await as_prompt(framework, name, args, kind)
    assert task["status"] == "completed"
    result = task["result"]
    assert result["resultType"] == "complete"  # a 2026-07-28 CallToolResult, as a client's schema requires
    assert [b["text"] for b in result["content"]] == texts == prompt_texts
    assert calls == [c[0] for c in tool_calls] == [c[0] for c in prompt_calls]
    assert ledger == tool_ledger == prompt_ledger
    assert result["structuredContent"] == structured
    assert questions == await prompt_questions(framework, name, args)  # the prompt's own question, word for word
    if kind == "yes":
        assert calls == list(STEP_TOOLS) and [r["order_id"] for r in ledger] == ["A1001"]
    else:
        assert "issue_refund" not in calls and ledger == []


@pytest.mark.anyio
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_a_cancel_while_the_task_waits_between_steps_runs_nothing_more(framework):
    task, _, calls, ledger = await run_as_task(framework, *REFUND, None)
    assert task["status"] == "cancelled" and "result" not in task
    assert "issue_refund" not in calls and ledger == []


@pytest.mark.anyio
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_an_answer_is_bound_to_its_task_and_its_round(framework):
    server, store, calls = shop(framework)
    name, args = REFUND
    async with connect(server, framework) as c:
        wire = Wire(c)
        first = await wire.settle((await wire.send("tools/call", name=name, arguments=args))["taskId"])
        second = await wire.settle((await wire.send("tools/call", name=name, arguments=args))["taskId"])
        yes = {"action": "accept", "content": {"confirm": True}}
        # the first task's question answered in the second task: it answers nothing there
        await wire.send(
            "tasks/update", taskId=second["taskId"], inputResponses={k: yes for k in first["inputRequests"]}
        )
        still = await wire.send("tasks/get", taskId=second["taskId"])
        assert still["status"] == "input_required" and still["inputRequests"] == second["inputRequests"]
        done = await wire.answer(first, confirm=True)
        # the same yes again, once its task is done: nothing more runs
        await wire.send("tasks/update", taskId=first["taskId"], inputResponses={k: yes for k in first["inputRequests"]})
        await wire.send("tasks/cancel", taskId=second["taskId"])
        await anyio.sleep(0.1)
    assert done["status"] == "completed"
    assert calls.count("issue_refund") == 1 and [r["order_id"] for r in store.ledger()] == ["A1001"]


@pytest.mark.anyio
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_a_client_that_did_not_declare_tasks_gets_the_plain_result_and_no_tasks_methods(framework):
    server, store, calls = shop(framework)
    async with connect(server, framework, declare=False, elicitation_callback=answer("yes")) as c:
        result = await c.call_tool(*REFUND)
        with pytest.raises(MCPError) as refused:
            await Wire(c).send("tasks/get", taskId="anything")
    assert not result.is_error and result.content[-1].text.startswith("Done: all 4 steps")
    assert refused.value.code == -32021
    assert calls == list(STEP_TOOLS)


@pytest.mark.anyio
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_the_server_advertises_the_tasks_extension(framework):
    server, _, _ = shop(framework)
    async with connect(server, framework) as c:
        extensions = c.server_capabilities.extensions or {}
    assert TASKS_EXTENSION in extensions


@pytest.mark.anyio
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_the_workflow_tools_declare_no_execution_task_support(framework):
    """SEP-2663 (the Tasks extension, 2026-07-28) has no tool-level declaration: the server decides per request
    whether a call becomes a task, and a client that declared the extension handles either answer. ``Tool.execution``
    (``taskSupport``) is the 2025-11-25 core tasks' field, removed in 2026-07-28; a 2025-11-25 client reading it would
    send the old ``task`` param and expect ``tasks/result``, which this server does not serve. So the listing, for a
    client that declared the extension, is the plain one: the tasks are told by the server's capabilities alone."""
    server, _, _ = shop(framework)
    async with connect(server, framework) as c:
        listed = {t["name"]: t for t in (await Wire(c).send("tools/list"))["tools"]}
        extensions = c.server_capabilities.extensions or {}
    assert REFUND[0] in listed and TASKS_EXTENSION in extensions
    assert [name for name, tool in listed.items() if "execution" in tool] == []


@pytest.mark.anyio
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_an_unknown_task_is_invalid_params(framework):
    server, _, _ = shop(framework)
    async with connect(server, framework) as c:
        with pytest.raises(MCPError) as unknown:
            await Wire(c).send("tasks/get", taskId="no-such-task")
    assert unknown.value.code == -32602


@pytest.mark.anyio
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_the_tasks_kept_in_memory_are_bounded_and_expired_ones_make_room(framework):
    """A client cannot make the server keep tasks without bound: past the store's limit a new task is refused with a
    plain error, and once the kept ones have expired, a new task takes their place."""
    tasks = Tasks(MemoryStore(limit=2), ttl_ms=1_000)
    server, _, _ = shop(framework, tasks)
    async with connect(server, framework) as c:
        wire = Wire(c)
        for _ in range(2):
            assert (await wire.send("tools/call", name=REFUND[0], arguments=REFUND[1]))["resultType"] == "task"
        with pytest.raises(MCPError) as full:
            await wire.send("tools/call", name=REFUND[0], arguments=REFUND[1])
        assert "at most 2 tasks" in full.value.message
        await anyio.sleep(1.2)  # the two kept tasks' ttlMs passes
        assert (await wire.send("tools/call", name=REFUND[0], arguments=REFUND[1]))["resultType"] == "task"


# --------------------------------------------------------------------------------------------------- a restart


@pytest.mark.anyio
@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("kind", ["yes", "no"])
async def test_a_task_waiting_for_a_confirmation_survives_a_restart_and_is_answered_there(framework, kind, tmp_path):
    from projector.server.taskstore import SqliteStore

    db = tmp_path / "tasks.db"
    first, first_store, first_calls = shop(framework, Tasks(SqliteStore(db)))
    async with connect(first, framework) as c:
        wire = Wire(c)
        waiting = await wire.settle((await wire.send("tools/call", name=REFUND[0], arguments=REFUND[1]))["taskId"])
    assert waiting["status"] == "input_required"
    del first  # the first server is gone; a new one opens the same file
    second, second_store, second_calls = shop(framework, Tasks(SqliteStore(db)))
    async with connect(second, framework) as c:
        wire = Wire(c)
        assert (await wire.send("tasks/get", taskId=waiting["taskId"]))["inputRequests"] == waiting["inputRequests"]
        done = await wire.answer(waiting, confirm=kind == "yes")
    assert done["status"] == "completed"
    assert first_calls == ["get_order", "check_eligibility"] and first_store.ledger() == []
    if kind == "yes":  # the finished steps are not called again: their results came with the task's state
        assert second_calls == ["issue_refund"] and [r["order_id"] for r in second_store.ledger()] == ["A1001"]
        assert done["result"]["content"][-1]["text"] == "Done: all 4 steps of `refund_flow_approved` ran on the server."
    else:
        assert second_calls == [] and second_store.ledger() == []


@pytest.mark.anyio
async def test_a_round_whose_result_is_not_kept_ends_the_task_failed_even_when_the_failure_is_larger(tmp_path):
    """A store bounded in bytes (``--state``) with room for the task as made and not for its round's outcome: the
    task ends ``failed`` (the outcome is not kept), never stays ``working`` because its failure, a little larger
    than the task as made, does not fit either. The bound is found as the smallest that takes the task."""
    from projector.server.taskstore import SqliteStore
    from projector.server.tasks import Bounds

    for bound in range(100, 4000, 20):
        db = tmp_path / f"tasks-{bound}.db"
        server, _, _ = shop("mcp", Tasks(SqliteStore(db, Bounds(task_bytes=bound))))
        async with connect(server, "mcp") as c:
            wire = Wire(c)
            try:
                created = await wire.send("tools/call", name=REFUND[0], arguments=REFUND[1])
            except MCPError as refused:
                assert "nothing was kept" in refused.error.message
                continue
            with anyio.fail_after(10):
                task = await wire.settle(created["taskId"], ("input_required", "completed", "failed"))
        assert task["status"] == "failed" and "not kept" in task["error"]["message"], task
        return
    pytest.fail("no bound took the task")


@pytest.mark.anyio
async def test_a_running_task_is_cancelled_in_a_store_with_no_room_for_the_longer_word(tmp_path):
    """``cancelled`` is two bytes longer than ``working``: in a store bounded in bytes with no room left for them, a
    cancel still ends the task (a task that ends adds nothing worth keeping out), and its job is stopped."""
    from projector.server.tasks import Bounds, Done
    from projector.server.taskstore import SqliteStore

    stopped = anyio.Event()

    async def job(call: Any) -> Done:
        try:
            await anyio.sleep(60)
        finally:
            stopped.set()
        return Done({"content": []})

    async def made(bound: int) -> tuple[Tasks, dict[str, Any]] | None:
        tasks = Tasks(SqliteStore(tmp_path / f"tasks-{bound}.db", Bounds(task_bytes=bound)))
        tasks.support("slow", job)
        try:
            return tasks, await tasks.start("slow", {})
        except MCPError:
            return None

    coarse = 100
    while await made(coarse) is None:
        coarse += 32
    for bound in range(coarse - 31, coarse + 1):  # the smallest bound that takes the task: no room for a byte more
        if (found := await made(bound)) is not None:
            break
    tasks, created = found
    await tasks.cancel(created["taskId"])
    assert (await tasks.get(created["taskId"]))["status"] == "cancelled"
    with anyio.fail_after(5):
        await stopped.wait()
