"""A stdio server's stderr, as the commands that start one show it: kept while the server works, shown (its last
lines, without the ``server/discover`` warning of an ``mcp`` 1.x server) when it fails, passed through with
``--verbose``.

The commands run as a subprocess, so what is asserted is what reaches the user's terminal (the server inherits the
command's stderr unless the command captures it)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.remote.upstreams import sqlite_command

NOISY = '''
import sys
from mcp.server.mcpserver import MCPServer

print("noisy: warming up the cache", file=sys.stderr, flush=True)
server = MCPServer("noisy")


@server.tool(description="Say it back.")
def echo(text: str) -> str:
    return text


server.run("stdio")
'''

# what an mcp 1.x server logs for the server/discover probe (abridged: the same shape, three errors of 31)
DISCOVER_WARNING = """WARNING:root:Failed to validate request: 31 validation errors for ClientRequest
PingRequest.method
  Input should be 'ping' [type=literal_error, input_value='server/discover', input_type=str]
    For further information visit https://errors.pydantic.dev/2.14/v/literal_error
InitializeRequest.params.protocolVersion
  Field required [type=missing, input_value={'_meta': {}}, input_type=dict]
    For further information visit https://errors.pydantic.dev/2.14/v/missing
CallToolRequest.method
  Input should be 'tools/call' [type=literal_error, input_value='server/discover', input_type=str]
"""

FAILING = f'''
import sys
sys.stderr.write({DISCOVER_WARNING!r})
print("Error: unable to open database file /nowhere/x.db", file=sys.stderr, flush=True)
sys.exit(3)
'''


def project_skill(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "projector.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def server_file(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(path))}"


@pytest.mark.slow
def test_tools_keeps_a_working_servers_stderr_off_the_terminal(tmp_path):
    run = project_skill("tools", server_file(tmp_path, "noisy.py", NOISY), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert '"name": "echo"' in run.stdout
    assert "warming up" not in run.stderr


@pytest.mark.slow
def test_tools_verbose_passes_the_servers_stderr_through(tmp_path):
    run = project_skill("tools", "--verbose", server_file(tmp_path, "noisy.py", NOISY), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "noisy: warming up the cache" in run.stderr


@pytest.mark.slow
def test_a_failing_server_shows_its_exit_status_and_last_lines_without_the_discover_warning(tmp_path):
    run = project_skill("tools", server_file(tmp_path, "failing.py", FAILING), cwd=tmp_path)
    assert run.returncode == 1
    assert "the server exited with status 3" in run.stderr
    assert "unable to open database file /nowhere/x.db" in run.stderr
    assert "validation errors" not in run.stderr and "server/discover" not in run.stderr
    assert "Traceback" not in run.stderr


@pytest.mark.slow
def test_remote_list_shows_a_failing_servers_stderr_once_and_on_one_diagnostic(tmp_path):
    run = project_skill("remote", "list", server_file(tmp_path, "failing.py", FAILING), cwd=tmp_path)
    assert run.returncode == 1
    assert run.stderr.count("unable to open database file") == 1
    assert "validation errors" not in run.stderr


@pytest.mark.slow
def test_tools_against_an_mcp_1x_server_prints_nothing_of_the_servers_own(tmp_path):
    run = project_skill("tools", sqlite_command(tmp_path / "shop.db"), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert '"name": "read_query"' in run.stdout
    assert run.stderr.strip() == "", run.stderr
