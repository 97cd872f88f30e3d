"""The replay guard (:mod:`projector.server.replay`): a confirmation's one-time token is claimed once, in this
process's memory or in one SQLite file; expired claims are forgotten; and the SQLite file must be the user's own,
checked when ``attach`` or ``serve`` starts, before anyone can say yes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from conftest import ROOT
from projector.server import AttachError, attach
from projector.server.replay import MemoryGuard, SqliteGuard

from .test_serve_skills import serve_args

APPROVED = ROOT / "workflows" / "refunds-approved.yaml"


def claim(guard, token: str) -> bool:
    return anyio.run(guard.claim, token)


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_a_token_is_claimed_once(tmp_path, kind):
    guard = MemoryGuard() if kind == "memory" else SqliteGuard(tmp_path / "claims.db")
    assert claim(guard, "a" * 32) is True
    assert claim(guard, "a" * 32) is False
    assert claim(guard, "b" * 32) is True


def test_two_sqlite_guards_on_one_file_share_their_claims(tmp_path):
    guard = SqliteGuard(tmp_path / "claims.db")
    again = SqliteGuard(tmp_path / "claims.db")  # another process on the same host opens the same file
    assert claim(guard, "a" * 32) is True
    assert claim(again, "a" * 32) is False


@pytest.mark.slow
def test_expired_claims_are_forgotten():
    now = [0.0]
    guard = MemoryGuard(seconds=10, clock=lambda: now[0])
    for i in range(1000):
        assert claim(guard, f"old-{i}")
    now[0] = 5.0
    assert claim(guard, "young") and not claim(guard, "old-7")  # within its lifetime a claim holds
    now[0] = 12.0  # the 1000 old claims are past their lifetime, "young" is not
    assert claim(guard, "new")
    assert len(guard) == 2
    assert not claim(guard, "young") and claim(guard, "old-7")  # forgotten: only its lifetime protected it


# ----------------------------------------------------------------------------------------------- the file's owner

def _refused(path: Path | str) -> AttachError:
    with pytest.raises(AttachError) as raised:
        SqliteGuard(path)
    (d,) = raised.value.diagnostics
    assert d.code == "replay-db" and d.span.file == str(path) and "nothing is served" in d.message
    return raised.value


@pytest.mark.parametrize("kind", ["dangling-link", "link-to-a-file", "relative", "missing-folder", "folder-link"])
def test_a_path_it_would_not_own_is_refused_and_nothing_is_written(tmp_path, kind, monkeypatch):
    victim = tmp_path / "victim.txt"
    path: Path | str = tmp_path / "guard.db"
    if kind == "dangling-link":
        os.symlink(tmp_path / "elsewhere.db", path)
    elif kind == "link-to-a-file":
        victim.write_bytes(b"precious")
        os.symlink(victim, path)
    elif kind == "relative":
        monkeypatch.chdir(tmp_path)
        path = "guard.db"
    elif kind == "missing-folder":
        path = tmp_path / "no" / "such" / "guard.db"
    else:
        (tmp_path / "real").mkdir(mode=0o700)
        os.symlink(tmp_path / "real", tmp_path / "link")
        path = tmp_path / "link" / "guard.db"
    _refused(path)
    assert not (tmp_path / "elsewhere.db").exists()  # a dangling link's target is not created
    assert not (tmp_path / "no").exists() and not (tmp_path / "real" / "guard.db").exists()
    if kind == "relative":
        assert not (tmp_path / "guard.db").exists()
    if kind == "link-to-a-file":
        assert victim.read_bytes() == b"precious"


@pytest.mark.parametrize("kind", ["group-writable file", "world-writable file", "world-writable folder",
                                  "another user's file", "another user's folder"])
def test_a_file_someone_else_can_write_is_refused(tmp_path, kind):
    """Whoever can write the file (or the folder it is in) can empty the claims, and a yes would run again."""
    folder = tmp_path / "state"
    folder.mkdir(mode=0o700)
    path = folder / "claims.db"
    SqliteGuard(path)  # made, the user's own
    before = path.read_bytes()
    if kind.startswith("another user's"):
        if os.geteuid() != 0:
            pytest.skip("making a file of another user needs root")
        os.chown(path if kind.endswith("file") else folder, 65534, 65534)
    else:
        target = folder if kind.endswith("folder") else path
        os.chmod(target, 0o777 if "world" in kind else 0o620)
    error = _refused(path)
    why = "is another user's" if "another" in kind else "can be written by its group or by others"
    assert why in str(error) and ("its folder" in str(error)) == kind.endswith("folder")
    assert path.read_bytes() == before


def test_a_missing_file_is_made_private(tmp_path):
    SqliteGuard(tmp_path / "claims.db")
    assert (tmp_path / "claims.db").stat().st_mode & 0o777 == 0o600


def test_a_file_that_turns_unsafe_after_start_up_runs_nothing(tmp_path):
    guard = SqliteGuard(tmp_path / "claims.db")
    os.chmod(tmp_path / "claims.db", 0o666)
    with pytest.raises(MCPError) as raised:
        claim(guard, "a" * 32)
    assert "nothing was run" in raised.value.error.message and "others" in raised.value.error.message


# ------------------------------------------------------------------------------------------------- at start-up

def test_attach_checks_the_replay_db_before_anyone_can_say_yes(tmp_path, monkeypatch):
    from mcp.server.mcpserver import MCPServer

    from projector.server.demo import add_demo_tools

    path = tmp_path / "claims.db"
    path.write_bytes(b"")
    os.chmod(path, 0o666)
    monkeypatch.setenv("PROJECT_SKILL_REPLAY_DB", str(path))
    server = MCPServer("shop")
    add_demo_tools(server)
    with pytest.raises(AttachError) as raised:
        attach(server, None, APPROVED)
    assert [d.code for d in raised.value.diagnostics] == ["replay-db"]


@pytest.mark.slow
def test_serve_refuses_an_unusable_replay_db_at_start_up(tmp_path):
    proc = subprocess.run([sys.executable, *serve_args()], cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=120,
                          env={**os.environ, "PROJECT_SKILL_REPLAY_DB": str(tmp_path / "no" / "claims.db")})
    assert proc.returncode == 1, proc.stderr
    assert "replay-db" in proc.stderr and "its folder does not exist" in proc.stderr
    assert "nothing is served" in proc.stderr and "Traceback" not in proc.stderr
    assert "serving MCP" not in proc.stderr


# -------------------------------------------------------------------------------------------- under concurrency

CONCURRENT = 8  # the same answered retry, sent this many times at once
ARGS = {"order_id": "A1001", "reason": "broken"}


async def _same_yes_at_once(client: Any, surface: str) -> tuple[list[Any], list[MCPError]]:
    """The question (an InputRequiredResult with a requestState), then the same yes CONCURRENT times at once, through
    ``surface`` (the workflow's prompt, or its tool): what came back, split into results and refusals."""
    from mcp_types import ElicitResult, InputRequiredResult

    send = client.session.get_prompt if surface == "prompt" else client.session.call_tool
    first = await send("refund_flow_approved", ARGS, allow_input_required=True)
    assert isinstance(first, InputRequiredResult) and first.request_state
    assert list(first.input_requests) == ["confirm-3"]
    yes = {"confirm-3": ElicitResult(action="accept", content={"confirm": True})}
    results: list[Any] = []
    refusals: list[MCPError] = []

    async def retry() -> None:
        try:
            results.append(await send("refund_flow_approved", ARGS, input_responses=yes,
                                      request_state=first.request_state, allow_input_required=True))
        except MCPError as exc:
            refusals.append(exc)

    with anyio.fail_after(90):  # nothing hangs
        async with anyio.create_task_group() as tg:
            for _ in range(CONCURRENT):
                tg.start_soon(retry)
    return results, refusals


def _ran_once(results: list[Any], refusals: list[MCPError], surface: str) -> None:
    assert len(results) == 1, (results, refusals)
    (done,) = results
    last = done.messages[-1].content.text if surface == "prompt" else done.content[-1].text
    assert last == "Done: all 4 steps of `refund_flow_approved` ran on the server.", last
    assert len(refusals) == CONCURRENT - 1
    for refused in refusals:
        assert refused.error.code == -32602 and "answered before" in refused.error.message, refused.error


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("surface", ["prompt", "tool"])
@pytest.mark.parametrize("framework", ["mcp", "fastmcp"])
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_the_same_yes_sent_at_once_runs_the_step_once(tmp_path, transport, framework, surface):
    """Issue 29: the same answered retry (state and yes) sent eight times at once, to one ``serve`` process, runs
    ``issue_refund`` once: one transcript that ends done, seven -32602 refusals, one refund in the ledger. Over
    stdio the claims are in the process's memory; over HTTP in a SQLite file ($PROJECT_SKILL_REPLAY_DB), as a
    deployment of several processes keeps them."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from .test_confirm import answer, start
    from .test_serve_skills import stop

    flags = ["--framework", framework, "--workflow-tools"]
    if transport == "stdio":
        params = StdioServerParameters(command=sys.executable, args=[*serve_args(), "--stdio", *flags], cwd=str(ROOT))
        async with Client(stdio_client(params), elicitation_callback=answer("yes")) as c:
            results, refusals = await _same_yes_at_once(c, surface)
            ledger = (await c.call_tool("list_refunds", {})).structured_content["result"]
    else:
        proc, port = start({"PROJECT_SKILL_REPLAY_DB": str(tmp_path / "claims.db")}, framework, *flags[2:])
        try:
            url = f"http://127.0.0.1:{port}/mcp"
            async with Client(url, cache=None, elicitation_callback=answer("yes")) as c:
                results, refusals = await _same_yes_at_once(c, surface)
            async with Client(url, cache=None) as c:
                ledger = (await c.call_tool("list_refunds", {})).structured_content["result"]
        finally:
            stop(proc)
    _ran_once(results, refusals, surface)
    assert [r["order_id"] for r in ledger] == ["A1001"]


@pytest.mark.anyio
@pytest.mark.parametrize("framework", ["mcp", "fastmcp"])
async def test_a_replayed_yes_to_the_workflow_tool_is_a_protocol_error_on_both_frameworks(framework):
    """The workflow tool refuses a yes given before as the prompt does: -32602, not an ``isError`` result that a
    model would read as the tool having run and failed (FastMCP flattens a tool's exceptions into one)."""
    from mcp import Client

    from projector.server.demo import demo_server

    from .test_confirm import answer

    server, store = demo_server(framework=framework, workflow_tools=True)
    async with Client(server if framework == "mcp" else server._mcp_server, elicitation_callback=answer("yes")) as c:
        first = await c.session.call_tool("refund_flow_approved", ARGS, allow_input_required=True)
        yes = {"confirm-3": {"action": "accept", "content": {"confirm": True}}}
        done = await c.session.call_tool("refund_flow_approved", ARGS, input_responses=yes,
                                         request_state=first.request_state)
        with pytest.raises(MCPError) as refused:
            await c.session.call_tool("refund_flow_approved", ARGS, input_responses=yes,
                                      request_state=first.request_state, allow_input_required=True)
    assert not done.is_error and done.content[-1].text.startswith("Done")
    assert refused.value.error.code == -32602 and "answered before" in refused.value.error.message
    assert [r["order_id"] for r in store.ledger()] == ["A1001"]
