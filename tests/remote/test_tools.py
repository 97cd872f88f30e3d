"""``project-skill tools SERVER``, and ``init`` and ``--tools-from SERVER``, which share its client
(projector.remote.tools), against a hostile server on stdio (tests/bad_inputs/response-too-large.server.py, mode
``tools``): a listing that never ends, or ends past the one bound of a tools snapshot, is refused naming the server,
and nothing is written."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "bad_inputs" / "response-too-large.server.py"
WORKFLOWS = ROOT / "workflows"
MiB = 1 << 20


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The CLI in a subprocess (a stdio server needs a real stderr to inherit); the timeout trips only on a hang."""
    return subprocess.run([sys.executable, "-m", "projector.cli", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=300)


def server(page_bytes: int, pages: int) -> str:
    """A stdio server whose tools/list sends ``pages`` pages (0: without end) of one tool of ``page_bytes``."""
    return shlex.join([sys.executable, str(SCRIPT), "tools", str(page_bytes), str(pages)])


@pytest.mark.slow
@pytest.mark.parametrize("command", ["tools", "check", "init"])
def test_a_listing_past_the_snapshot_bound_is_refused_naming_the_server(tmp_path, command):
    """Issue 29, items 6 and 11: on main, `tools` kept every page with no total cap (1.5 GB in under a minute) and
    `tools --out` wrote a 20 MiB snapshot that `--tools-from` then refused. Now 20 pages of 1 MiB stop at 16 MiB."""
    spec = server(MiB, 20)
    out = tmp_path / "tools.json"
    args = {"tools": ["tools", spec, "--out", str(out)],
            "check": ["check", str(WORKFLOWS), "--tools-from", spec],
            "init": ["init", "wf", "--tool", "t00001", "--tools-from", spec, "--out", str(tmp_path / "wf.yaml")]}[command]
    run = cli(*args, cwd=tmp_path)
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    assert f"{spec}: error[response-too-large]: tools/list passed " in run.stderr
    assert "over 16 MiB, the limit of a tools snapshot" in run.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_listing_within_the_bound_is_written_and_read_back(tmp_path):
    """The same server with fewer pages: what `tools --out` writes, `--tools-from` reads."""
    spec = server(MiB, 3)
    out = tmp_path / "tools.json"
    assert cli("tools", spec, "--out", str(out), cwd=tmp_path).returncode == 0
    assert [t["name"] for t in json.loads(out.read_bytes())["tools"]] == ["t00001", "t00002", "t00003"]
    run = cli("init", "wf", "--tool", "t00002", "--tools-from", str(out), "--out", str(tmp_path / "wf.yaml"), cwd=tmp_path)
    assert run.returncode == 0, run.stderr


@pytest.mark.slow
def test_an_endless_listing_is_refused_naming_the_server(tmp_path):
    """Issue 29, item 11: a tools/list that never ends was reported as `None: error[...]`."""
    spec = server(256, 0)
    run = cli("tools", spec, cwd=tmp_path)
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    assert run.stderr.startswith(f"{spec}: error[server-error]: tools/list did not end within ")
    assert run.stdout == ""
