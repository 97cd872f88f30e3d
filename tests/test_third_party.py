"""The whole path of a server author, with a real third-party server installed from PyPI: ``mcp-server-git`` (the
dev extra installs it; stdio; ``--repository PATH``), on a throwaway git repository.

``tools`` writes a snapshot; ``init`` writes a workflow that builds once its description is set; ``check`` passes
from the snapshot with the server gone; a declared tool that differs from the server in one schema makes
``check --strict --tools-from SERVER`` fail with ``tool-mismatch`` at the declaration, naming the field;
``serve MODULE:ATTR`` on the server's own factory (``mcp_server_git.server.create_server``, through a two-line module,
since it takes a required argument) serves the skills and the workflow prompt, over stdio and HTTP, and FastMCP's
client reads them: the prompt runs the server's real tools, and the skill's files are the built bytes. The server
declares no ``outputSchema``, so a field path into a result (``{step: staged_diff, field: diff}``) is
``unstructured-result`` from its snapshot, ``--strict`` fails on it, and the gate hint suggests no ``field:``.

Not skipped when the server is missing: CI installs it (``pip install -e '.[dev]'``), so its absence is a failure.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest
from fastmcp import Client as FastMCPClient
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport
from fastmcp.skills import SkillsClientExtension

from projector.validate import DESCRIPTION_PLACEHOLDER

pytestmark = pytest.mark.slow

BIN = Path(sys.executable).parent


def server_script() -> str:
    found = shutil.which("mcp-server-git", path=os.pathsep.join([str(BIN), os.environ.get("PATH", "")]))
    assert found, ("mcp-server-git is not installed: `pip install -e '.[dev]'` installs it (the dev extra); "
                   "this test does not skip without it")
    return found


def project_skill(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "projector.cli", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=180, env=env)


def make_repo(repo: Path) -> Path:
    """A throwaway git repository with one commit."""
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], check=True, timeout=60)
    (repo / "a.txt").write_text("one\n")
    subprocess.run([*git, "add", "a.txt"], check=True, timeout=60)
    subprocess.run([*git, "commit", "-q", "-m", "first"], check=True, timeout=60)
    return repo


@pytest.fixture
def git_server(tmp_path) -> str:
    return shlex.join([server_script(), "--repository", str(make_repo(tmp_path / "repo"))])


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


# ------------------------------------------------------------------ the trap: a field of a result that is text

COMMIT_STAGED = """\
name: commit_staged
description: Commit what is staged, when something is.
arguments:
  - {name: repo_path, required: true}
  - {name: message, required: true}
steps:
  - name: staged
    tool: git_diff_staged
    args: {repo_path: {arg: repo_path}}
    bind: staged_diff
  - name: commit
    tool: git_commit
    args: {repo_path: {arg: repo_path}, message: {arg: message}}
    when: {step: staged_diff, field: diff, exists: true}
"""

COMMIT_GUIDED = """\
name: commit_guided
description: Commit what is staged, on guidance.
arguments:
  - {name: repo_path, required: true}
  - {name: message, required: true}
steps:
  - name: staged
    tool: git_diff_staged
    args: {repo_path: {arg: repo_path}}
    bind: staged_diff
  - name: commit
    tool: git_commit
    args: {repo_path: {arg: repo_path}, message: {arg: message}}
    guidance: Only commit if the staged diff is what the user asked for.
"""


def test_a_field_of_mcp_server_git_text_result_is_unstructured_result_and_strict_fails(tmp_path, git_server):
    """mcp-server-git declares no outputSchema: git_diff_staged returns text. A condition on a field of it is
    ``unstructured-result`` at the path (from the snapshot, with no tools in the file), and the gate hint on a step
    guided by that result suggests an argument condition, not ``field:``."""
    work = tmp_path / "project"
    (work / "workflows").mkdir(parents=True)
    wrote = project_skill("tools", git_server, "--out", "tools.json", cwd=work)
    assert wrote.returncode == 0, wrote.stderr
    staged = json.loads((work / "tools.json").read_text("utf-8"))["tools"]
    assert [t for t in staged if t["name"] == "git_diff_staged" and "outputSchema" not in t]  # the premise
    (work / "workflows" / "commit_staged.yaml").write_text(COMMIT_STAGED, encoding="utf-8")
    (work / "workflows" / "commit_guided.yaml").write_text(COMMIT_GUIDED, encoding="utf-8")

    built = project_skill("build", "--tools-from", "tools.json", cwd=work)
    assert built.returncode == 0, built.stderr  # a warning: the skills are written
    err = built.stderr
    warnings = sorted(line.split(": ")[:2] for line in err.splitlines() if "warning[" in line)
    assert warnings == [["workflows/commit_guided.yaml:14:15", "warning[gate-on-side-effect]"],
                        ["workflows/commit_staged.yaml:14:18", "warning[unstructured-result]"]], err
    assert ("workflows/commit_staged.yaml:14:18: warning[unstructured-result]: step 'commit' reads "
            "'staged_diff.diff', but the tool 'git_diff_staged' (which saves 'staged_diff') declares no output "
            "schema: it returns text, its result has no fields, and 'staged_diff.diff' will never resolve; the "
            "server-side run stops there on every call (`staged_diff.diff` is missing)") in err
    lines = err.splitlines()
    hint = lines[next(i for i, line in enumerate(lines) if "warning[gate-on-side-effect]" in line) + 1]
    assert hint.startswith("  hint: ")
    assert ("the guidance names the saved result 'staged_diff', but the tool 'git_diff_staged' returns text (it "
            "declares no output schema), which has no field to test: state the condition as data on an input the "
            "user supplies, when: {arg: approved, equals: true}") in hint
    assert "field:" not in hint

    assert project_skill("check", "--tools-from", "tools.json", cwd=work).returncode == 0
    strict = project_skill("check", "--strict", "--tools-from", "tools.json", cwd=work)
    assert strict.returncode == 1
    assert "workflows/commit_staged.yaml:14:18: warning[unstructured-result]" in strict.stderr


# ------------------------------------------------------------------------------- serve MODULE:ATTR, the git server

SERVE_GIT = """\
from pathlib import Path

from mcp_server_git.server import create_server

REPO = Path({repo!r})
server = create_server(REPO)  # an object: serve_git:server


def make():  # a factory with no required arguments: serve_git:make
    return create_server(REPO)
"""


@pytest.fixture(scope="module")
def git_project(tmp_path_factory) -> tuple[Path, Path]:
    """A project built from mcp-server-git's tools (tools, init, build), a repository with a staged change, and
    ``serve_git.py``, the author's module around the server's own factory."""
    root = tmp_path_factory.mktemp("served")
    repo = make_repo(root / "repo")
    (repo / "a.txt").write_text("one\ntwo\n")
    subprocess.run(["git", "-C", str(repo), "add", "a.txt"], check=True, timeout=60)
    work = root / "project"
    work.mkdir()
    server = shlex.join([server_script(), "--repository", str(repo)])
    for step in (["tools", server, "--out", "tools.json"],
                 ["init", "review_staged", "--tools-from", "tools.json", "--tool", "git_status", "--tool",
                  "git_diff_staged"]):
        done = project_skill(*step, cwd=work)
        assert done.returncode == 0, done.stderr
    wf = work / "workflows" / "review_staged.yaml"
    wf.write_text(wf.read_text("utf-8").replace(DESCRIPTION_PLACEHOLDER, "Review what is staged before a commit."),
                  encoding="utf-8")
    built = project_skill("build", "--strict", cwd=work)
    assert built.returncode == 0, built.stderr + built.stdout
    (work / "serve_git.py").write_text(SERVE_GIT.format(repo=str(repo)), encoding="utf-8")
    return work, repo


async def read_back(transport, work: Path, repo: Path) -> None:
    """What FastMCP's client reads from the served git server: the workflow prompt, run on the server's real tools,
    and the skill, through the skills extension and as a resource, byte-equal to the built files."""
    built = work / "generated_skills" / "review-staged"
    async with FastMCPClient(transport, extensions=[SkillsClientExtension()]) as client:
        tools = {t.name for t in await client.list_tools()}
        assert {"git_status", "git_diff_staged", "git_log"} <= tools  # the server's own tools, all of them
        prompts = {p.name for p in await client.list_prompts()}
        assert {"review_staged", "skill.review-staged"} <= prompts
        result = await client.get_prompt("review_staged", {"repo_path": str(repo)})
        transcript = "\n".join(m.content.text for m in result.messages)
        # git_status and git_diff_staged really ran, on the throwaway repository
        assert "Result of `git_status`" in transcript and "Changes to be committed" in transcript
        assert "modified:   a.txt" in transcript
        assert "Result of `git_diff_staged`" in transcript and "+two" in transcript
        assert "Done: all 2 steps of `review_staged` ran on the server." in transcript
        listed = await client.list_skills()
        assert [e.uri for e in listed] == ["skill://review-staged/SKILL.md"]
        skill = await client.read_skill(listed[0].uri)  # verifies each file's size and digest against skills/get
        # every file of the bundle; the derived evals beside it are not served
        assert dict(skill.files) == {p.relative_to(built).as_posix(): p.read_bytes()
                                     for p in sorted(built.rglob("*")) if p.is_file() and "evals" not in p.parts}
        contents = await client.read_resource("skill://review-staged/SKILL.md")
        assert contents[0].text.encode("utf-8") == (built / "SKILL.md").read_bytes()


@pytest.mark.anyio
async def test_serve_module_attr_serves_mcp_server_git_own_factory_over_stdio(git_project):
    work, repo = git_project
    transport = StdioTransport(command=str(BIN / "project-skill"), args=["serve", "serve_git:make"], cwd=str(work))
    await read_back(transport, work, repo)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.anyio
async def test_serve_module_attr_serves_mcp_server_git_over_http(git_project):
    work, repo = git_project
    port = free_port()
    proc = subprocess.Popen([str(BIN / "project-skill"), "serve", "serve_git:server", "--http", f"127.0.0.1:{port}",
                             "--allow-host", "git.example.com"], cwd=work, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        for _ in range(300):  # up to about 30 s
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                time.sleep(0.1)
        else:
            pytest.fail("the server did not start")
        url = f"http://127.0.0.1:{port}/mcp"
        await read_back(StreamableHttpTransport(url), work, repo)
        # served through serve_http: the Host allow-list holds for your own server too
        envelope = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "1"},
                    "io.modelcontextprotocol/clientCapabilities": {}}
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": envelope}}
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
                   "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}
        async with httpx2.AsyncClient(timeout=20) as http:
            foreign = await http.post(url, json=body, headers={**headers, "Host": "evil.example"})
            allowed = await http.post(url, json=body, headers={**headers, "Host": "git.example.com"})
        assert foreign.status_code == 421 and "git_status" not in foreign.text
        assert allowed.status_code == 200 and "git_status" in allowed.text, allowed.text
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        if proc.stderr:
            proc.stderr.close()
