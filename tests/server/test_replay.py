"""The replay guard (:mod:`projector.server.replay`): a confirmation's one-time token is claimed once, in this
process's memory or in one SQLite file; expired claims are forgotten; and the SQLite file must be the user's own,
checked when ``attach`` or ``serve`` starts, before anyone can say yes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
