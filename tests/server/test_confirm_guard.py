"""The confirmation's own safeguards, below the transports: the replay guard's file, and a paused run's state bound
to the workflow definition it paused on. tests/server/test_confirm.py drives the whole round trip."""

from __future__ import annotations

import dataclasses
import os

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from conftest import ROOT
from projector.load import load_file
from projector.server.confirm import RunState, SqliteGuard

APPROVED = ROOT / "workflows" / "refunds-approved.yaml"


def _state() -> RunState:
    return RunState(2, "confirm", "t" * 32, {1: {"id": "A1001"}}, {"order": 1}, {}, 0, {}, [("user", "hi"), 1])


@pytest.mark.parametrize("kind", ["dangling-link", "link-to-a-file", "relative", "missing-folder"])
def test_the_replay_guard_refuses_a_path_it_would_not_own_and_writes_nothing(tmp_path, kind, monkeypatch):
    victim = tmp_path / "victim.txt"
    if kind == "dangling-link":
        path = tmp_path / "guard.db"
        os.symlink(tmp_path / "elsewhere.db", path)
    elif kind == "link-to-a-file":
        victim.write_bytes(b"precious")
        path = tmp_path / "guard.db"
        os.symlink(victim, path)
    elif kind == "relative":
        monkeypatch.chdir(tmp_path)
        path = "guard.db"
    else:
        path = tmp_path / "no" / "such" / "guard.db"
    with pytest.raises(MCPError) as raised:
        SqliteGuard(path)
    assert "nothing was run" in raised.value.error.message
    assert not (tmp_path / "elsewhere.db").exists()  # a dangling link's target is not created
    assert not (tmp_path / "no").exists()
    if kind == "relative":
        assert not (tmp_path / "guard.db").exists()
    if kind == "link-to-a-file":
        assert victim.read_bytes() == b"precious"


def test_the_replay_guard_claims_a_token_once(tmp_path):
    guard = SqliteGuard(tmp_path / "guard.db")
    again = SqliteGuard(tmp_path / "guard.db")  # another process on the same host opens the same file
    assert anyio.run(guard.claim, "a" * 32) is True
    assert anyio.run(again.claim, "a" * 32) is False


def test_a_state_is_refused_once_the_workflow_it_paused_on_has_changed():
    wf = load_file(APPROVED)
    text = _state().dumps(wf)
    assert RunState.loads(text, wf).step == 2
    changed = dataclasses.replace(wf, steps=(wf.steps[0], wf.steps[2], wf.steps[1], *wf.steps[3:]))
    with pytest.raises(MCPError) as raised:
        RunState.loads(text, changed)
    assert "the workflow has changed" in raised.value.error.message


def test_an_asked_number_must_be_finite():
    """A JSON answer of 1e999 reads as infinity; a prompt argument refuses it as not a finite number, and so does an
    asked input."""
    from projector.model import Argument
    from projector.server.confirm import _fits

    arg = Argument("amount", "the amount", required=False, type="number")
    assert _fits(arg, 12.5) and _fits(arg, 3)
    assert not _fits(arg, float("inf")) and not _fits(arg, float("nan")) and not _fits(arg, True)
