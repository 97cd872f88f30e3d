"""Whose a task is (issue 38): on a server with authentication, a task is its principal's alone.

Driven over Streamable HTTP against tests/server/tasks/auth_server.py (the demo shop's workflows as tasks, behind each
framework's own bearer-token auth), by two mcp ``Client``s holding two principals' tokens, with the tasks kept in
memory, in a state folder (DBOS on SQLite) and in a Postgres database (DBOS on Postgres, the cluster of
test_durable_postgres). What is pinned: Alice's task waits for her yes; Bob, holding its id, gets for ``tasks/get``,
``tasks/update`` (his yes to her question) and ``tasks/cancel`` exactly what an unknown task id gets, and there is no
``tasks/list`` for anyone; Alice's task is untouched by him, another token of hers reaches it, and her own yes runs
the refund once. The state keeps
no token. Where there is no authentication, a task is its id's bearer's: test_tasks and test_durable reach a task
from another connection, and after a restart.
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.extension import advertise
from mcp.shared.exceptions import MCPError

from projector.server.tasks import TASKS_EXTENSION

from .tasks.auth_server import TOKENS
from .test_durable_postgres import cluster, database  # noqa: F401 - its Postgres cluster, started here when used
from .test_serve_skills import ROOT
from .test_tasks import REFUND, Wire

AUTH_SERVER = ROOT / "tests" / "server" / "tasks" / "auth_server.py"
ALICE, BOB, ALICE_AGAIN = TOKENS  # two principals of one OAuth client (subjects alice, bob), and Alice's new token
YES = {"action": "accept", "content": {"confirm": True}}


@contextmanager
def auth_serving(framework: str = "mcp", state: Path | str | None = None) -> Iterator[str]:
    """The auth server over HTTP on a free port; its URL."""
    from .test_fastmcp import free_port, running

    port = free_port()
    argv = [sys.executable, str(AUTH_SERVER), "--framework", framework, "--http", f"127.0.0.1:{port}"]
    with running(argv + (["--state", str(state)] if state is not None else []), port) as url:
        yield url


@asynccontextmanager
async def as_principal(url: str, token: str) -> AsyncIterator[Wire]:
    """mcp's Client over Streamable HTTP with ``Authorization: Bearer token``, declaring the Tasks extension."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=300)) as http:
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, extensions=[advertise(TASKS_EXTENSION)]) as c:
            yield Wire(c)


async def refusal(wire: Wire, method: str, task_id: str | None = None, **params: Any) -> tuple[int, str, Any]:
    """The error ``method`` gets, its task id (if any) in the message written as ``<id>``."""
    sent = {"taskId": task_id} if task_id is not None else {}
    with pytest.raises(MCPError) as refused:
        await wire.send(method, **sent, **params)
    message = refused.value.message.replace(task_id, "<id>") if task_id else refused.value.message
    return refused.value.code, message, refused.value.data


async def refunds(wire: Wire) -> list[str]:
    listed = await wire.send("tools/call", name="list_refunds", arguments={})
    return [r["order_id"] for r in listed["structuredContent"]["result"]]


async def settled(wire: Wire, task_id: str) -> dict[str, Any]:
    with anyio.fail_after(60):
        while (task := await wire.send("tasks/get", taskId=task_id))["status"] == "working":
            await anyio.sleep(0.05)
    return task


async def only_alice_reaches_her_task(url: str) -> None:
    async with as_principal(url, ALICE) as alice, as_principal(url, BOB) as bob:
        created = await alice.send("tools/call", name=REFUND[0], arguments=REFUND[1])
        waiting = await settled(alice, created["taskId"])
        assert waiting["status"] == "input_required"
        theirs, unknown = waiting["taskId"], secrets.token_urlsafe(18)
        answers = {k: YES for k in waiting["inputRequests"]}  # Bob's yes to Alice's question
        for method, params in (("tasks/get", {}), ("tasks/update", {"inputResponses": answers}), ("tasks/cancel", {})):
            seen = await refusal(bob, method, theirs, **params)
            assert seen == await refusal(bob, method, unknown, **params), method
            assert seen[0] == -32602
        assert await refusal(bob, "tasks/list") == await refusal(alice, "tasks/list")  # no listing, for anyone
        assert (await refusal(bob, "tasks/list"))[0] == -32601
        again = await alice.send("tasks/get", taskId=theirs)
        assert again["status"] == "input_required" and again["inputRequests"] == waiting["inputRequests"]
        assert await refunds(alice) == []  # his yes ran nothing
        async with as_principal(url, ALICE_AGAIN) as refreshed:  # her principal, not her token, owns the task
            assert (await refreshed.send("tasks/get", taskId=theirs))["inputRequests"] == waiting["inputRequests"]
        await alice.send("tasks/update", taskId=theirs, inputResponses={k: YES for k in again["inputRequests"]})
        done = await settled(alice, theirs)
        assert done["status"] == "completed", done
        assert done["result"]["content"][-1]["text"].startswith("Done: all 4 steps")
        assert await refusal(bob, "tasks/get", theirs) == await refusal(bob, "tasks/get", unknown)
        assert await refunds(bob) == ["A1001"]  # the one refund, issued on her yes


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("framework", ["mcp", "fastmcp"])
async def test_another_principal_cannot_get_answer_or_cancel_a_task_kept_in_memory(framework):
    with auth_serving(framework) as url:
        await only_alice_reaches_her_task(url)


@pytest.mark.slow
@pytest.mark.anyio
async def test_another_principal_cannot_get_answer_or_cancel_a_durable_task_and_no_token_is_kept(tmp_path):
    pytest.importorskip("dbos")
    state = tmp_path / "state"
    with auth_serving("mcp", state) as url:
        await only_alice_reaches_her_task(url)
    kept = b"".join(p.read_bytes() for p in sorted(state.rglob("*")) if p.is_file())
    for token in TOKENS:
        assert token.encode() not in kept


@pytest.mark.slow
@pytest.mark.anyio
async def test_another_principal_cannot_get_answer_or_cancel_a_task_kept_in_postgres(database):  # noqa: F811
    pytest.importorskip("dbos")
    with auth_serving("mcp", database) as url:
        await only_alice_reaches_her_task(url)
