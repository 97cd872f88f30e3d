"""The suite runs as a newcomer runs it: a bare ``pytest`` from the repository's root (the console script, which puts
no current folder on ``sys.path`` as ``python -m pytest`` does), and without the optional extras it does not need.

Each test starts pytest in a subprocess, with no ``PYTHONPATH`` of ours and Python's ``-P`` (the current folder is
not put on ``sys.path``), as the ``pytest`` script starts.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _pytest(*args: str, path: str = "", timeout: int = 300) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER")}
    if path:
        env["PYTHONPATH"] = path
    return subprocess.run(
        [sys.executable, "-P", "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.slow
def test_a_bare_pytest_collects_every_test():
    """Test modules that import the shared helpers as ``tests.conftest`` need the root on ``sys.path``: the
    configuration puts it there (``pythonpath``), so the collection does not depend on how pytest was started."""
    run = _pytest("--collect-only", "-q")  # exits 1 all the same: syrupy counts every snapshot unused
    assert "ERROR collecting" not in run.stdout, run.stdout[-3000:] + run.stderr[-2000:]
    summary = [line for line in run.stdout.splitlines() if " collected in " in line]
    assert summary and "error" not in summary[-1], summary


# A plugin that makes Inspect AI (the ``evals`` extra) missing, as it is where the extra is not installed.
HIDE_INSPECT = """
import sys


class _Missing:
    def find_spec(self, name, path=None, target=None):
        if name == "inspect_ai" or name.startswith("inspect_ai."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _Missing())
"""


@pytest.mark.slow
def test_the_exit_code_tests_pass_without_the_evals_extra(tmp_path):
    """Only the entry point that needs Inspect AI is skipped, and says why; every other one is still run."""
    (tmp_path / "hide_inspect.py").write_text(HIDE_INSPECT, "utf-8")
    path = os.pathsep.join([str(tmp_path), str(ROOT)])
    run = _pytest("-p", "hide_inspect", "-v", "-rs", "tests/test_exits.py", path=path, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    skipped = [line for line in run.stdout.splitlines() if " SKIPPED " in line]
    assert skipped and all("::test_the_inspect_entry_point" in line for line in skipped)
    assert "the evals extra (inspect-ai) is not installed" in run.stdout
    assert [line for line in run.stdout.splitlines() if " passed" in line and " skipped" in line]
