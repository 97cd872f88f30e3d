"""``project-skill serve --upstream SERVER`` keeps what is the operator's (issue 38): nothing of the upstream's stderr
or exit details reaches a client, and the upstream is started with only the environment it needs.

Each test runs the real gateway as a process, in front of a small Python upstream (mcp 2.x, over stdio) written
here, and reaches it with ``mcp``'s client over stdio (the client starts the gateway) and over Streamable HTTP. What a
client receives (tool results, the workflow prompts' transcripts, log notifications) is compared with what the
gateway wrote on its own stderr."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from tests.conftest import ROOT

from .test_serve_skills import free_port, stop

SECRET = "postgres://shop:SECRET-7f3a@db/shop"

UPSTREAM = f"""
import json
import os
import sys

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import ToolAnnotations

server = MCPServer("upstream")
READ = ToolAnnotations(read_only_hint=True)


@server.tool(description="Look an order up.", annotations=READ)
def lookup(order: str = "1") -> str:
    return f"order {{order}}: shipped"


@server.tool(description="The names of the variables in this server's environment.", annotations=READ)
def environment() -> str:
    return json.dumps(sorted(os.environ))


@server.tool(description="Say where the database is, then never answer.", annotations=READ)
async def hang() -> str:
    print("connecting to {SECRET}", file=sys.stderr, flush=True)
    await anyio.sleep(3600)
    return "late"


@server.tool(description="Say where the database is, then exit without an answer.", annotations=READ)
def die() -> str:
    print("fatal: lost {SECRET}", file=sys.stderr, flush=True)
    os._exit(7)


@server.tool(description="Refuse with the server's own error, code -32000.", annotations=READ)
def locked() -> str:
    raise MCPError(code=-32000, message="order 1 is locked by another clerk")


server.run("stdio")
"""

WORKFLOWS = {
    "stuck.yaml": "name: stuck\ndescription: Wait for the upstream.\nsteps:\n  - {name: wait, tool: hang}\n",
    "look.yaml": "name: look\ndescription: Look an order up.\nsteps:\n  - {name: find, tool: lookup}\n",
}


def upstream_command(folder: Path) -> str:
    path = folder / "upstream.py"
    path.write_text(UPSTREAM, encoding="utf-8")
    return shlex.join([sys.executable, str(path)])


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> Path:
    """The upstream, its workflows and their skills, built once for the module with ``--tools-from`` it."""
    folder = tmp_path_factory.mktemp("gateway-operator")
    (folder / "workflows").mkdir()
    for name, text in WORKFLOWS.items():
        (folder / "workflows" / name).write_text(text, encoding="utf-8")
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "projector.cli",
            "build",
            "workflows",
            "--tools-from",
            upstream_command(folder),
            "--out",
            "skills",
        ],
        cwd=folder,
        env=gateway_env(),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert built.returncode == 0, built.stderr
    return folder


def gateway_argv(folder: Path, framework: str, *extra: str) -> list[str]:
    return [
        "-m",
        "projector.cli",
        "serve",
        "--upstream",
        upstream_command(folder),
        "--workflows",
        str(folder / "workflows"),
        "--skills",
        str(folder / "skills"),
        "--framework",
        framework,
        "--upstream-timeout",
        "3",
        *extra,
    ]


def gateway_env(**extra: str) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]), **extra)


@contextlib.asynccontextmanager
async def connected(transport: str, argv: list[str], env: dict[str, str], log: Path, said: list[str]):
    """A client of the gateway (``argv``), whose stderr goes to ``log``; every log notification's text in ``said``."""

    async def heard(params: Any) -> None:
        said.append(json.dumps(params.model_dump(mode="json")))

    with open(log, "w", encoding="utf-8") as errlog:
        if transport == "stdio":
            params = StdioServerParameters(command=sys.executable, args=argv, env=env, cwd=str(ROOT))
            async with Client(stdio_client(params, errlog=errlog), logging_callback=heard) as client:
                yield client
            return
        port = free_port()
        proc = subprocess.Popen(
            [sys.executable, *argv, "--http", f"127.0.0.1:{port}"],
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=errlog,
            stdin=subprocess.DEVNULL,
        )
        try:
            await _listening(proc, port, log)
            async with Client(f"http://127.0.0.1:{port}/mcp", logging_callback=heard) as client:
                yield client
        finally:
            stop(proc)


async def _listening(proc: subprocess.Popen, port: int, log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the gateway exited: {log.read_text('utf-8')}")
        with contextlib.suppress(OSError):
            stream = await anyio.connect_tcp("127.0.0.1", port)
            await stream.aclose()
            return
        await anyio.sleep(0.2)
    raise RuntimeError("the gateway did not listen within 60 s")


def run_logged(fn: Any, *args: Any, log: Path) -> Any:
    """``anyio.run(fn, *args, log)``; when it fails, the gateway's stderr says why."""
    try:
        return anyio.run(fn, *args, log)
    except BaseException as exc:
        said = log.read_text("utf-8") if log.exists() else "(nothing)"
        raise AssertionError(f"the session failed; the gateway's stderr:\n{said}") from exc


def _texts(result: Any) -> list[str]:
    """Every text a client got: a tool result's content, or a prompt's messages."""
    parts = [m.content for m in result.messages] if hasattr(result, "messages") else result.content
    return [json.dumps(p.model_dump(mode="json")) for p in parts]


async def _failing_upstream(transport: str, argv: list[str], log: Path) -> dict[str, Any]:
    """The upstream hangs (a call, then a workflow's step), then dies (a call), then is gone (a workflow's step, a
    call): what the client got each time."""
    said: list[str] = []
    got: dict[str, Any] = {}
    async with connected(transport, argv, gateway_env(), log, said) as client:
        with anyio.fail_after(90):
            got["hang"] = await client.call_tool("hang", {})
            got["stuck"] = await client.get_prompt("stuck", {})
            got["die"] = await client.call_tool("die", {})
            got["look"] = await client.get_prompt("look", {})
            got["lookup"] = await client.call_tool("lookup", {})
    got["said"] = said
    return got


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("framework", ["mcp", "fastmcp"])
def test_the_upstreams_stderr_reaches_the_operator_and_no_client(served, tmp_path, framework, transport):
    """Issue 38: an upstream that printed a database URL with its password, then hung or died, handed it to every
    client in the forwarded call's error and in the workflow's transcript. Now a client is told only that the upstream
    did not answer and that the call's effect is unknown; the stderr and the exit status go to the gateway's stderr."""
    log = tmp_path / "gateway.stderr"
    got = run_logged(_failing_upstream, transport, gateway_argv(served, framework), log=log)
    for call in ("hang", "die", "lookup"):
        assert got[call].is_error, got[call]
    received = [text for key in ("hang", "stuck", "die", "look", "lookup") for text in _texts(got[key])] + got["said"]
    leaked = [text for text in received if "SECRET" in text or "status 7" in text or "stderr" in text]
    assert leaked == []
    for key in ("hang", "stuck", "die", "look", "lookup"):
        said = " ".join(_texts(got[key]))
        assert "did not answer" in said and "unknown" in said, said
    assert "within 3 s" in " ".join(_texts(got["hang"]))
    stderr = log.read_text("utf-8")
    assert f"connecting to {SECRET}" in stderr and f"fatal: lost {SECRET}" in stderr, stderr
    assert "status 7" in stderr and "Traceback" not in stderr, stderr


async def _environment(argv: list[str], env: dict[str, str], log: Path) -> list[str]:
    async with connected("stdio", argv, env, log, []) as client:
        with anyio.fail_after(60):
            result = await client.call_tool("environment", {})
    assert not result.is_error, result
    return json.loads(result.content[0].text)


@pytest.mark.slow
def test_the_upstream_gets_only_the_environment_it_needs(served, tmp_path):
    """Issue 38: the upstream inherited the gateway's whole environment, ``$PROJECT_SKILL_STATE_KEY`` included. Now it
    gets the usual safe variables (PATH, HOME, the locale, the temporary folder, ...) and those the operator names
    with ``--upstream-env``; nothing else of the gateway's."""
    env = gateway_env(
        PROJECT_SKILL_STATE_KEY="k" * 40,
        SHOP_API_TOKEN="token",
        DATABASE_URL=SECRET,
        LANG="C.UTF-8",
        TMPDIR=str(tmp_path),
    )
    safe = {"PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR"}
    theirs = {"PROJECT_SKILL_STATE_KEY", "SHOP_API_TOKEN", "PYTHONPATH", "UNSET_NAME"}
    names = run_logged(_environment, gateway_argv(served, "mcp"), env, log=tmp_path / "plain.stderr")
    assert safe <= set(names) and not (theirs | {"DATABASE_URL"}) & set(names), names
    argv = gateway_argv(served, "mcp", "--upstream-env", "DATABASE_URL", "--upstream-env", "UNSET_NAME")
    names = run_logged(_environment, argv, env, log=tmp_path / "passed.stderr")
    assert safe | {"DATABASE_URL"} <= set(names) and not theirs & set(names), names


@pytest.mark.parametrize("name", ["DATABASE_URL=postgres://x", "", "1ABC", "A B"])
def test_upstream_env_takes_a_variables_name_only(cli, name):
    """A value on the command line would be shown to every user of the machine (``ps``): ``--upstream-env`` takes a
    name, whose value comes from the gateway's environment; anything else is a usage error, before any start."""
    run = cli("serve", "--upstream", "http://127.0.0.1:9/mcp", "--upstream-env", name)
    assert run.code == 2, run
    assert "--upstream-env" in run.err and "a variable's name" in run.err and "Traceback" not in run.err


async def _refused(transport: str, argv: list[str], log: Path) -> list[str]:
    """What the client got for the upstream's own error, then for a call after it."""
    async with connected(transport, argv, gateway_env(), log, []) as client:
        with anyio.fail_after(60):
            try:
                got = _texts(await client.call_tool("locked", {}))
            except MCPError as exc:
                got = [f"{exc.code}: {exc.message}"]
            after = await client.call_tool("lookup", {})
    return [*got, *_texts(after)]


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("framework", ["mcp", "fastmcp"])
def test_the_upstreams_own_error_with_code_32000_is_its_answer_not_a_silent_upstream(
    served, tmp_path, framework, transport
):
    """-32000 is the first of JSON-RPC's server-defined codes, which servers use for their own errors; mcp's client
    also uses it when a connection closes. An upstream that answered with it was reported as one that had stopped
    ("did not answer ...; whether the call had any effect there is unknown"), its own message dropped: the client got
    less than the upstream said, and a false account of it. It is passed on as any other error of the upstream's."""
    got = run_logged(_refused, transport, gateway_argv(served, framework), log=tmp_path / "gateway.stderr")
    said = " ".join(got)
    assert "order 1 is locked by another clerk" in said and "did not answer" not in said, got
    assert "order 1: shipped" in got[-1], got


async def _upstream_gone_over_http(argv: list[str], upstream: subprocess.Popen, log: Path) -> dict[str, Any]:
    """A call while the HTTP upstream serves, then the upstream is stopped: a call, a workflow, a skill's file."""
    got: dict[str, Any] = {}
    async with connected("stdio", argv, gateway_env(), log, []) as client:
        with anyio.fail_after(90):
            got["before"] = await client.call_tool("lookup", {})
            got["die"] = await client.call_tool("die", {})  # it exits in the middle of the call
            stop(upstream)
            got["lookup"] = await client.call_tool("lookup", {})
            got["look"] = await client.get_prompt("look", {})
            got["again"] = await client.call_tool("lookup", {})
            got["prompts"] = [p.name for p in (await client.list_prompts()).prompts]
    return got


@pytest.mark.slow
def test_an_http_upstream_that_goes_away_is_a_tool_error_and_the_gateway_keeps_serving(served, tmp_path):
    """An HTTP upstream that stopped mid-session (a restart, a crash) made the SDK's HTTP transport raise its connection
    error into the task that called it, cancelling it: the gateway itself stopped with a traceback, and every client
    lost it. The call is a tool error that says the upstream did not answer, as for a stdio upstream that died, and
    the gateway serves on."""
    port = free_port()
    script = (
        (served / "upstream.py")
        .read_text("utf-8")
        .replace('server.run("stdio")', f'server.run("streamable-http", host="127.0.0.1", port={port})')
    )
    (tmp_path / "http_upstream.py").write_text(script, encoding="utf-8")
    upstream = subprocess.Popen(
        [sys.executable, str(tmp_path / "http_upstream.py")],
        env=gateway_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL,
    )
    try:
        anyio.run(_listening, upstream, port, tmp_path / "upstream.stderr")
        argv = gateway_argv(served, "mcp")
        argv[argv.index("--upstream") + 1] = f"http://127.0.0.1:{port}/mcp"
        got = run_logged(_upstream_gone_over_http, argv, upstream, log=tmp_path / "gateway.stderr")
    finally:
        stop(upstream)
    assert _texts(got["before"]) and "order 1: shipped" in _texts(got["before"])[0]
    for key in ("die", "lookup", "look", "again"):
        said = " ".join(_texts(got[key]))
        assert "did not answer" in said and "unknown" in said, said
    assert got["lookup"].is_error and got["again"].is_error
    assert "look" in got["prompts"]
    assert "Traceback" not in (tmp_path / "gateway.stderr").read_text("utf-8")
