"""``project-skill serve MODULE:ATTR`` (:mod:`projector.server.target`): the author's own server, found as uvicorn and
``fastmcp run`` find theirs, with the skills and workflows attached; every way a target can be wrong is a usage error
(exit 2) naming it. A target's own code misbehaving while it loads: what it prints must not reach the stdio JSON-RPC
stream, and whatever it raises is one line, never a traceback (issue 29, item 11).

The third-party end of it (``mcp-server-git``'s own factory, over stdio and HTTP) is in tests/test_third_party.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from fastmcp import Client as FastMCPClient
from fastmcp.client.transports import StdioTransport
from fastmcp.skills import SkillsClientExtension

from projector.server.cli import main

from .test_fastmcp import EXPECTED_FILES, SKILLS, WORKFLOWS

BIN = Path(sys.executable).parent


@pytest.fixture
def here(tmp_path, monkeypatch):
    """tmp_path as the current directory, with sys.path and sys.modules restored afterwards."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        del sys.modules[name]


def serve(*argv: str, capsys) -> tuple[int, str]:
    rc = main("serve", [*argv, "--skills", str(SKILLS), "--workflows", str(WORKFLOWS)])
    return rc, capsys.readouterr().err


MODULES = {
    "t_import_raises": "raise RuntimeError('no database configured')\n",
    "t_exits": "import sys\nsys.exit('usage: mine --db URL')\n",
    "t_broken_import": "import t_not_installed_anywhere\n",
    "t_values": ("def needs(repository, depth=1):\n    return None\n"
                 "def boom():\n    raise ValueError('cannot connect')\n"
                 "def not_a_server():\n    return 42\n"
                 "number = 3\n"
                 "server = None\n"),
}

CASES = [
    ("t_nowhere:server", "t_nowhere:server: no module named 't_nowhere' (looked in the current directory"),
    ("t_import_raises:server", "t_import_raises:server: importing t_import_raises raised RuntimeError: no database "
                               "configured"),
    ("t_exits:server", "t_exits:server: importing t_exits raised SystemExit: usage: mine --db URL"),
    ("t_broken_import:mcp", "t_broken_import:mcp: importing t_broken_import raised ModuleNotFoundError: No module "
                            "named 't_not_installed_anywhere'"),
    ("t_values:sever", "t_values:sever: module t_values has no attribute 'sever'; did you mean 'server'?"),
    ("t_values:number", "t_values:number: t_values:number is of type int; expected a server (mcp's MCPServer or a "
                        "fastmcp.FastMCP) or a factory with no required arguments that returns one"),
    ("t_values:needs", "t_values:needs: t_values:needs is a factory with required arguments (repository); serve "
                       "calls it with none"),
    ("t_values:boom", "t_values:boom: calling t_values:boom() raised ValueError: cannot connect"),
    ("t_values:not_a_server", "t_values:not_a_server: t_values:not_a_server() returned a value of type int, not a "
                              "server"),
    ("t_values", "t_values: expected MODULE:ATTR or path/to/file.py:ATTR"),
    ("missing/file.py:mcp", "missing/file.py:mcp: no such file: missing/file.py"),
]


@pytest.mark.parametrize(("target", "expected"), CASES, ids=[c[0] for c in CASES])
def test_a_bad_target_is_a_usage_error_naming_it_never_a_traceback(here, capsys, target, expected):
    for name, text in MODULES.items():
        (here / f"{name}.py").write_text(text, encoding="utf-8")
    rc, err = serve(target, capsys=capsys)
    assert rc == 2, err
    assert err.startswith(f"project-skill serve: {expected}"), err
    assert "Traceback" not in err and len(err.splitlines()) == 1


@pytest.mark.slow
def test_the_target_is_imported_from_the_current_directory(here, capsys):
    """As uvicorn does: a module in the current directory is found even when the command is the console script
    (which does not put the current directory on sys.path by itself)."""
    assert str(here) not in sys.path and "" not in sys.path
    (here / "t_cwd_mod.py").write_text("value = 'not a server'\n", encoding="utf-8")
    rc, err = serve("t_cwd_mod:value", capsys=capsys)
    assert rc == 2 and "t_cwd_mod:value is of type str" in err, err


def _help() -> str:
    from projector.server.cli import parser

    return " ".join(parser("serve").format_help().split())


@pytest.mark.slow
def test_the_help_says_the_current_directory_goes_on_sys_path():
    text = _help()
    assert "MODULE:ATTR" in text and "path/to/file.py:ATTR" in text
    assert "The current directory is put first on sys.path before the import, as uvicorn does" in text


def test_a_framework_that_disagrees_with_the_target_is_a_usage_error(here, capsys):
    (here / "t_fast.py").write_text("from fastmcp import FastMCP\nmcp = FastMCP('t')\n", encoding="utf-8")
    rc, err = serve("t_fast:mcp", "--framework", "mcp", capsys=capsys)
    assert rc == 2
    assert err == ("project-skill serve: t_fast:mcp: --framework mcp, but the target is a FastMCP server; leave "
                   "--framework out (it is detected from the object)\n")


def test_a_target_without_the_workflows_tools_names_the_target_in_the_hint(here, capsys):
    (here / "t_bare.py").write_text("from mcp.server.mcpserver import MCPServer\nserver = MCPServer('bare')\n",
                                    encoding="utf-8")
    rc, err = serve("t_bare:server", capsys=capsys)
    assert rc == 1 and err.endswith("project-skill serve: nothing is served\n")
    assert "error[unknown-tool]: step 'fetch_order' calls the tool 'get_order', which the server does not have" in err
    assert "hint: register it on t_bare:server; the server's tools: none" in err
    assert ("error[unknown-resource]: workflow 'code_mode', step 'read_schema': the server has no resource or "
            "template matching 'sqlite://demo/schema'\n  hint: register the resource on t_bare:server\n") in err
    assert "attach()" not in err


def test_the_demo_with_workflows_naming_other_tools_says_it_serves_only_its_own(tmp_path, capsys):
    wf = tmp_path / "workflows"
    wf.mkdir()
    (wf / "status.yaml").write_text(
        "name: status_flow\n"
        "description: Show the working tree status of a repository before a commit.\n"
        "arguments:\n  - {name: repo_path, description: the repository, required: true}\n"
        "steps:\n  - name: status\n    tool: git_status\n    args: {repo_path: {arg: repo_path}}\n", encoding="utf-8")
    rc = main("serve", ["--skills", str(SKILLS), "--workflows", str(wf)])
    err = capsys.readouterr().err
    assert rc == 1
    assert "error[unknown-tool]: step 'status' calls the tool 'git_status'" in err
    assert ("hint: the demo serves only its own tools; to serve these workflows with your server's tools, run "
            "project-skill serve MODULE:ATTR") in err
    assert "the server's tools: check_eligibility, get_order, greet, issue_refund, list_refunds, query" in err
    assert "attach()" not in err


MINE = '''\
"""An author's own FastMCP server: the demo's tools on a server of its own, made by a factory."""
from fastmcp import FastMCP

from projector.server.demo import add_demo_tools


def make():
    server = FastMCP("mine")
    add_demo_tools(server)
    return server
'''


@pytest.mark.slow
@pytest.mark.anyio
async def test_serve_a_fastmcp_factory_by_file_path_over_stdio(tmp_path):
    """``serve app/mine.py:make``: the file form, a factory, FastMCP detected from the object; FastMCP's client
    lists the workflow prompts, runs one on the server's own tools, and reads every skill, verified."""
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "mine.py").write_text(MINE, encoding="utf-8")
    transport = StdioTransport(command=str(BIN / "project-skill"),
                               args=["serve", "app/mine.py:make", "--skills", str(SKILLS), "--workflows",
                                     str(WORKFLOWS)], cwd=str(tmp_path))
    async with FastMCPClient(transport, extensions=[SkillsClientExtension()]) as client:
        prompts = {p.name for p in await client.list_prompts()}
        assert {"hello_world", "refund_flow", "skill.hello-world"} <= prompts
        result = await client.get_prompt("hello_world", {"name": "Ada"})
        transcript = "\n".join(m.content.text for m in result.messages)
        assert "Hello, Ada!" in transcript
        read = {e.uri: dict((await client.read_skill(e.uri)).files) for e in await client.list_skills()}
    assert read == EXPECTED_FILES


@pytest.mark.slow
def test_serve_with_no_target_still_serves_the_demo():
    proc = subprocess.run([str(BIN / "project-skill"), "serve", "--skills", str(SKILLS), "--workflows",
                           str(WORKFLOWS)], input="", capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "serving MCP on stdio (mcp)" in proc.stderr


# -------------------------------------------------- a target that misbehaves while it loads, in a real process

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


def serve_process(target: str, cwd: Path, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "project-skill"), "serve", target, "--skills", str(SKILLS), "--workflows",
                           str(WORKFLOWS)], input=stdin, capture_output=True, text=True, cwd=cwd, timeout=120)


@pytest.mark.slow
def test_what_a_target_prints_while_it_loads_goes_to_stderr_not_onto_the_json_rpc_stream(tmp_path):
    (tmp_path / "chatty.py").write_text(CHATTY, encoding="utf-8")
    proc = serve_process("chatty:make", tmp_path, json.dumps(INITIALIZE) + "\n")
    assert proc.returncode == 0, proc.stderr
    for said in ("loading my server", "still loading", "a C library says hello", "making my server"):
        assert said in proc.stderr and said not in proc.stdout
    answers = [json.loads(line) for line in proc.stdout.splitlines()]  # every line of stdout is JSON-RPC
    assert [a.get("id") for a in answers] == [1] and answers[0]["result"]["serverInfo"]["name"] == "chatty"


@pytest.mark.slow
@pytest.mark.parametrize(("module", "said"), [
    ("class Boom(BaseException):\n    pass\n\nraise Boom('the sky fell')\n", "raised Boom: the sky fell"),
    ("raise GeneratorExit('odd')\n", "raised GeneratorExit: odd"),
    ("def make():\n    raise SystemExit(3)\n", "calling t_boom:make() raised SystemExit: 3"),
], ids=["base-exception", "generator-exit", "factory-exits"])
def test_any_exception_a_target_raises_while_loading_is_one_line_naming_it(tmp_path, module, said):
    (tmp_path / "t_boom.py").write_text(module + "server = None\n", encoding="utf-8")
    target = "t_boom:make" if "def make" in module else "t_boom:server"
    proc = serve_process(target, tmp_path)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(f"project-skill serve: {target}: ") and said in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.splitlines()) == 1


@pytest.mark.slow
def test_an_interrupt_while_a_target_loads_stops_the_command_quietly(tmp_path):
    """KeyboardInterrupt is the user's Ctrl-C, not the target's error: exit 130, as for every command."""
    (tmp_path / "t_int.py").write_text("raise KeyboardInterrupt\n", encoding="utf-8")
    proc = serve_process("t_int:server", tmp_path)
    assert proc.returncode == 130 and "Traceback" not in proc.stderr and proc.stdout == ""
