"""The whole path of a server author, with a real third-party server installed from PyPI: ``mcp-server-git`` (the
dev extra installs it; stdio; ``--repository PATH``), on a throwaway git repository.

``tools`` writes a snapshot; ``init`` writes a workflow that builds once its description is set; ``check`` passes
from the snapshot with the server gone; a declared tool that differs from the server in one schema makes
``check --strict --tools-from SERVER`` fail with ``tool-mismatch`` at the declaration, naming the field.

Not skipped when the server is missing: CI installs it (``pip install -e '.[dev]'``), so its absence is a failure.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from projector.validate import DESCRIPTION_PLACEHOLDER

BIN = Path(sys.executable).parent


def server_script() -> str:
    found = shutil.which("mcp-server-git", path=os.pathsep.join([str(BIN), os.environ.get("PATH", "")]))
    assert found, ("mcp-server-git is not installed: `pip install -e '.[dev]'` installs it (the dev extra); "
                   "this test does not skip without it")
    return found


def project_skill(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "projector.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=180, env=env)


@pytest.fixture
def git_server(tmp_path) -> str:
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], check=True, timeout=60)
    (repo / "a.txt").write_text("one\n")
    subprocess.run([*git, "add", "a.txt"], check=True, timeout=60)
    subprocess.run([*git, "commit", "-q", "-m", "first"], check=True, timeout=60)
    return shlex.join([server_script(), "--repository", str(repo)])


def test_tools_init_build_check_offline_and_drift_with_mcp_server_git(tmp_path, git_server):
    work = tmp_path / "project"
    work.mkdir()

    # tools: the snapshot
    wrote = project_skill("tools", git_server, "--out", "tools.json", cwd=work)
    assert wrote.returncode == 0, wrote.stderr
    snapshot = json.loads((work / "tools.json").read_text("utf-8"))
    names = [t["name"] for t in snapshot["tools"]]
    assert names == sorted(names) and {"git_status", "git_diff_staged", "git_log"} <= set(names)
    assert project_skill("tools", git_server, "--check", "tools.json", cwd=work).returncode == 0

    # init: a workflow that builds once its description is set
    made = project_skill("init", "review_staged", "--tools-from", "tools.json", "--tool", "git_status",
                         "--tool", "git_diff_staged", cwd=work)
    assert made.returncode == 0, made.stderr
    wf = work / "workflows" / "review_staged.yaml"
    refused = project_skill("build", cwd=work)
    assert refused.returncode == 1 and "error[placeholder-description]" in refused.stderr
    wf.write_text(wf.read_text("utf-8").replace(DESCRIPTION_PLACEHOLDER, "Review what is staged before a commit."),
                  encoding="utf-8")
    built = project_skill("build", "--strict", cwd=work)
    assert built.returncode == 0, built.stderr + built.stdout
    assert "git_diff_staged" in (work / "generated_skills" / "review-staged" / "SKILL.md").read_text("utf-8")

    # check: offline from the snapshot, with the server gone (not on PATH, not named, mcp never imported)
    probe = ("import sys; from projector.cli import main;"
             "rc = main(['check', '--strict', '--tools-from', 'tools.json']); print(rc, 'mcp' in sys.modules)")
    env = {**os.environ, "PATH": "/nonexistent"}
    offline = subprocess.run([sys.executable, "-c", probe], cwd=work, capture_output=True, text=True, timeout=180,
                             env=env)
    assert offline.stdout.splitlines()[-1] == "0 False", offline.stderr + offline.stdout
    assert "up to date" in offline.stdout

    # drift: one schema of a declared tool differs from the live server
    text = wf.read_text("utf-8")
    assert text.count("type: integer") == 1  # git_diff_staged's context_lines
    wf.write_text(text.replace("type: integer", "type: string"), encoding="utf-8")
    line = next(i for i, t in enumerate(wf.read_text("utf-8").splitlines(), 1)
                if t == "  - name: git_diff_staged")
    drift = project_skill("check", "--strict", "--tools-from", git_server, cwd=work)
    assert drift.returncode == 1
    out = drift.stderr
    assert (f"workflows/review_staged.yaml:{line}:5: warning[tool-mismatch]: tool 'git_diff_staged': input_schema "
            "differs between workflows/review_staged.yaml and the server") in out, out
    assert "'properties.context_lines.type' (file: string 'string', server: string 'integer')" in out
    assert "refresh the snapshot: project-skill tools" in out and "--out tools.json" in out
    assert out.count("warning[tool-mismatch]") == 1  # only the one field, only that tool
    # and the same declaration against the committed snapshot says the same
    frozen = project_skill("check", "--strict", "--tools-from", "tools.json", cwd=work)
    assert frozen.returncode == 1
    assert "'properties.context_lines.type' (file: string 'string', snapshot: string 'integer')" in frozen.stderr
