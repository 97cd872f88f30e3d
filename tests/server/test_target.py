"""``project-skill serve MODULE:ATTR`` (projector.server.target) against a target's own code misbehaving while it
loads: what it prints must not reach the stdio JSON-RPC stream, and whatever it raises is one line, never a
traceback (issue 29, item 11)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from .test_fastmcp import SKILLS, WORKFLOWS

BIN = Path(sys.executable).parent
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "test", "version": "0"}}}

CHATTY = '''\
"""A server whose module and factory talk on standard output while they load."""
import os
import sys

from fastmcp import FastMCP

from projector.server.demo import add_demo_tools

print("loading my server")
sys.stdout.write("still loading\\n")
os.write(1, b"a C library says hello\\n")


def make():
    print("making my server")
    server = FastMCP("chatty")
    add_demo_tools(server)
    return server
'''


def serve(target: str, cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "project-skill"), "serve", target, "--skills", str(SKILLS), "--workflows",
                           str(WORKFLOWS)], input=stdin, capture_output=True, text=True, cwd=cwd, timeout=120)


def test_what_a_target_prints_while_it_loads_goes_to_stderr_not_onto_the_json_rpc_stream(tmp_path):
    (tmp_path / "chatty.py").write_text(CHATTY, encoding="utf-8")
    proc = serve("chatty:make", tmp_path, json.dumps(INITIALIZE) + "\n")
    assert proc.returncode == 0, proc.stderr
    for said in ("loading my server", "still loading", "a C library says hello", "making my server"):
        assert said in proc.stderr and said not in proc.stdout
    answers = [json.loads(line) for line in proc.stdout.splitlines()]  # every line of stdout is JSON-RPC
    assert [a.get("id") for a in answers] == [1] and answers[0]["result"]["serverInfo"]["name"] == "chatty"




@pytest.mark.parametrize(("module", "said"), [
    ("class Boom(BaseException):\n    pass\n\nraise Boom('the sky fell')\n", "raised Boom: the sky fell"),
    ("raise GeneratorExit('odd')\n", "raised GeneratorExit: odd"),
    ("def make():\n    raise SystemExit(3)\n", "calling t_boom:make() raised SystemExit: 3"),
], ids=["base-exception", "generator-exit", "factory-exits"])
def test_any_exception_a_target_raises_while_loading_is_one_line_naming_it(tmp_path, module, said):
    (tmp_path / "t_boom.py").write_text(module + "server = None\n", encoding="utf-8")
    target = "t_boom:make" if "def make" in module else "t_boom:server"
    proc = serve(target, tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(f"project-skill serve: {target}: ") and said in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.splitlines()) == 1


def test_an_interrupt_while_a_target_loads_stops_the_command_quietly(tmp_path):
    """KeyboardInterrupt is the user's Ctrl-C, not the target's error: exit 130, as for every command."""
    (tmp_path / "t_int.py").write_text("raise KeyboardInterrupt\n", encoding="utf-8")
    proc = serve("t_int:server", tmp_path)
    assert proc.returncode == 130 and "Traceback" not in proc.stderr and proc.stdout == ""
