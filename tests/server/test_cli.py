"""``project-skill serve`` (:mod:`projector.server.cli`): its help, loopback by default, usage errors exit 2 and a
missing tree exits 1, never a traceback. It reads ``[tool.project-skill]`` as ``build`` does: its
``--skills``, ``--workflows`` and ``--workflow-tools`` default from the table's ``out``, ``workflows`` and
``workflow-tools``, paths relative to the pyproject.toml's folder; a flag overrides the table. Driven as a user runs
it: ``serve`` in a subprocess over stdio, from a folder inside a project that has only the table, with mcp's
``Client``."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from projector.server.cli import main

from .test_serve_skills import ROOT, SKILLS, WORKFLOWS, free_port

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
TABLE = '[tool.project-skill]\nout = "built"\nworkflows = ["flows"]\nworkflow-tools = true\n'


def project(tmp_path: Path) -> Path:
    """A project with only the table (and the files it names), and a folder inside it to run from."""
    shutil.copytree(SKILLS, tmp_path / "built")
    shutil.copytree(WORKFLOWS, tmp_path / "flows")
    (tmp_path / "pyproject.toml").write_text(TABLE, encoding="utf-8")
    (tmp_path / "src").mkdir()
    return tmp_path / "src"


async def served(cwd: Path, *flags: str) -> tuple[set[str], set[str], int]:
    """The tools and prompts ``serve`` offers from ``cwd``, and how many skills it lists."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "projector.server", "--stdio", *flags],
                                   cwd=str(cwd), env={"PYTHONPATH": str(ROOT)})
    async with Client(stdio_client(params)) as c:
        tools = {t.name for t in (await c.list_tools()).tools}
        prompts = {p.name for p in (await c.list_prompts()).prompts}
        skills = [r for r in (await c.list_resources()).resources if str(r.uri).endswith("/SKILL.md")]
    return tools, prompts, len(skills)


async def test_serve_takes_its_paths_and_workflow_tools_from_the_table(tmp_path):
    tools, prompts, skills = await served(project(tmp_path))
    assert {"hello_world", "refund_flow_approved"} <= prompts  # the workflows of flows/, not of ./workflows
    assert {"hello_world", "refund_flow_approved"} <= tools  # workflow-tools = true
    assert skills == len(list(SKILLS.glob("*/SKILL.md")))  # the skills of built/


async def test_a_flag_overrides_the_table(tmp_path):
    cwd = project(tmp_path)
    shutil.rmtree(tmp_path / "built")
    shutil.rmtree(tmp_path / "flows")  # the table's paths are gone: only the flags' can be served
    flags = ("--skills", str(SKILLS), "--workflows", str(WORKFLOWS))
    tools, prompts, skills = await served(cwd, *flags)
    assert "refund_flow_approved" in prompts and skills == len(list(SKILLS.glob("*/SKILL.md")))
    assert "refund_flow_approved" in tools  # the table's workflow-tools still holds
    tools, prompts, _ = await served(cwd, "--no-config", *flags)
    assert "refund_flow_approved" in prompts and "refund_flow_approved" not in tools  # no table: no workflow tools


# --------------------------------------------------------------------------------------------------- CLI

def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).parent / "project-skill"
    return subprocess.run([str(exe), *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def test_project_skill_serve_help():
    done = run_cli("serve", "--help")
    assert done.returncode == 0, done.stderr
    assert "--http" in done.stdout and "127.0.0.1" in done.stdout


def test_project_skill_serve_http_starts_on_loopback_by_default():
    port = free_port()
    exe = Path(sys.executable).parent / "project-skill"
    proc = subprocess.Popen([str(exe), "serve", "--http", str(port)], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                time.sleep(0.1)
        assert proc.poll() is None
    finally:
        stop_text(proc)
    assert f"serving MCP at http://127.0.0.1:{port}/mcp" in proc.stderr_text


@pytest.mark.slow
@pytest.mark.parametrize("framework", ["mcp", "fastmcp"])
@pytest.mark.parametrize("verbose", [False, True])
def test_serve_http_is_quiet_unless_verbose(framework, verbose):
    """``serve --http`` says where it serves and nothing else (no uvicorn INFO lines, no framework start-up box);
    ``--verbose`` shows them."""
    port = free_port()
    exe = Path(sys.executable).parent / "project-skill"
    argv = [str(exe), "serve", "--http", str(port), "--framework", framework, *(["--verbose"] if verbose else [])]
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                time.sleep(0.1)
        assert proc.poll() is None
    finally:
        stop_text(proc)
    lines = [line for line in proc.stderr_text.splitlines() if line.strip()]
    assert lines[0] == f"project-skill serve: serving MCP at http://127.0.0.1:{port}/mcp ({framework})"
    if verbose:
        assert any("INFO" in line for line in lines)
    else:
        assert lines == lines[:1], proc.stderr_text


def stop_text(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    proc.stderr_text = proc.stderr.read() if proc.stderr else ""  # type: ignore[attr-defined]
    if proc.stderr:
        proc.stderr.close()


def test_serve_usage_errors_exit_2(capsys):
    for args in (["--http", "nonsense"], ["--http", "127.0.0.1:99999"], ["--http", "0"], ["--stdio", "--http", "1"],
                 ["--page-size", "0"], ["--ttl-ms", "-1"]):
        try:
            code = main("serve", args)
        except SystemExit as exc:
            code = exc.code
        assert code == 2, args
        assert "Traceback" not in capsys.readouterr().err


def test_serve_missing_tree_exits_1_without_traceback(tmp_path, capsys):
    assert main("serve", ["--skills", str(tmp_path / "none"), "--workflows", str(WORKFLOWS)]) == 1
    err = capsys.readouterr().err
    assert "no-index" in err and "Traceback" not in err
    assert main("serve", ["--skills", str(SKILLS), "--workflows", str(tmp_path / "none")]) == 1
    assert "no such file or folder" in capsys.readouterr().err


def test_tasks_needs_workflow_tools_and_is_not_state(capsys, tmp_path):
    for args, said in ((["--tasks"], "--tasks runs the workflow tools as tasks; add --workflow-tools"),
                       (["--workflow-tools", "--tasks", "--state", str(tmp_path / "s")], "not both"),
                       (["--upstream", "http://127.0.0.1:9/mcp", "--workflow-tools", "--tasks"],
                        "--tasks is not supported with --upstream yet")):
        assert main("serve", ["--skills", str(SKILLS), "--workflows", str(WORKFLOWS), *args]) == 2, args
        err = capsys.readouterr().err
        assert said in err and "Traceback" not in err, err
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("said", ["yes", "no"])
async def test_serve_tasks_runs_a_workflow_tool_as_a_task_in_memory_over_stdio(said):
    """``serve --workflow-tools --tasks``: a client that declares the Tasks extension gets a task for the confirmed
    refunds workflow, sees the confirmation as ``input_required``, answers it through ``tasks/update``, and reads
    the completed result; the ledger holds the refund on a yes only. No DBOS, no state folder."""
    from projector.matrix.taskrun import call_as_task, task_client

    params = StdioServerParameters(command=sys.executable, cwd=str(ROOT), args=[
        "-m", "projector.server", "--stdio", "--no-config", "--skills", str(SKILLS), "--workflows", str(WORKFLOWS),
        "--workflow-tools", "--tasks"])
    questions = []

    async def person(request):
        questions.append(request["message"])
        return {"action": "accept", "content": {"confirm": said == "yes"}}

    async with task_client(stdio_client(params)) as client:
        done = await call_as_task(client, "refund_flow_approved", {"order_id": "A1001", "reason": "broken"}, person)
        ledger = (await client.call_tool("list_refunds", {})).structured_content["result"]
    assert done.status == "completed" and done.methods[0] == "tools/call" and "tasks/update" in done.methods
    assert len(questions) == done.asked == 1 and questions[0].startswith("Issue this refund?")
    if said == "yes":
        assert done.text() == "Done: all 4 steps of `refund_flow_approved` ran on the server."
        assert [r["order_id"] for r in ledger] == ["A1001"]
    else:
        assert "the person did not confirm it" in done.text() and ledger == []
