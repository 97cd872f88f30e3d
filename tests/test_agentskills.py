"""The official Agent Skills validator (skills-ref) accepts every generated bundle."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import GENERATED

BUNDLES = sorted(p.parent for p in GENERATED.rglob("SKILL.md"))


def agentskills() -> str:
    exe = Path(sys.executable).with_name("agentskills")
    found = str(exe) if exe.exists() else shutil.which("agentskills")
    assert found, "skills-ref is a dev dependency: pip install -e '.[dev]'"
    return found


def test_there_are_bundles():
    assert [b.name for b in BUNDLES] == ["code-mode", "hello-world", "refund-flow", "refund-flow-approved",
                                         "refund-flow-gated"]


@pytest.mark.slow
@pytest.mark.parametrize("bundle", BUNDLES, ids=lambda p: p.name)
def test_agentskills_validate(bundle):
    proc = subprocess.run([agentskills(), "validate", str(bundle)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.slow
def test_agentskills_validate_can_fail(tmp_path):
    bad = tmp_path / "not-the-name"
    shutil.copytree(GENERATED / "hello-world", bad)
    proc = subprocess.run([agentskills(), "validate", str(bad)], capture_output=True, text=True)
    assert proc.returncode != 0
