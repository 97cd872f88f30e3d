"""The confirmation's own safeguards, below the transports: a paused run's state bound to the workflow definition
it paused on. tests/server/test_confirm.py drives the whole round trip; the replay guard is tests/server/test_replay.py."""

from __future__ import annotations

import dataclasses

import pytest
from mcp.shared.exceptions import MCPError

from conftest import ROOT
from projector.load import load_file
from projector.server.confirm import RunState

APPROVED = ROOT / "workflows" / "refunds-approved.yaml"


def _state() -> RunState:
    return RunState(2, "confirm", "t" * 32, {1: {"id": "A1001"}}, {"order": 1}, {}, 0, {}, [("user", "hi"), 1])


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
