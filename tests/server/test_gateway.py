"""``project-skill serve --upstream SERVER`` and :func:`projector.server.gateway`: the skills and workflow prompts in
front of another server, driven through a real client.

The fast tests put the gateway in front of a small Python server (mcp 2.x, over stdio, as a subprocess), written here.
The slow ones (``-m slow``) put it in front of the reference servers of other SDKs and languages, installed by
scripts/conformance.py: ``mcp-server-sqlite`` (mcp 1.x, in a virtual environment of its own) and
``@modelcontextprotocol/server-memory`` (npm, TypeScript SDK v1), each reached over stdio and over HTTP by FastMCP's
client and the TypeScript SDK v2 client."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client

from projector.remote.errors import ServerError
from projector.server import AttachError, gateway
from projector.server.adapters import for_server
from tests.conftest import ROOT

FRAMEWORKS = ["mcp", "fastmcp"]

UPSTREAM = '''
import os
import time

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations
from pydantic import BaseModel

server = MCPServer("upstream")


class Stock(BaseModel):
    sku: str
    count: int


@server.tool(description="How many of a SKU are in stock.", annotations=ToolAnnotations(read_only_hint=True))
def stock(sku: str) -> Stock:
    return Stock(sku=sku, count=len(sku))


@server.tool(description="Reserve items of a SKU.", annotations=ToolAnnotations(destructive_hint=True))
def reserve(sku: str, count: int) -> str:
    return f"reserved {count} of {sku}"


@server.tool(description="Exit at once, without an answer.")
def die() -> str:
    os._exit(7)


@server.tool(description="Never answer.")
def hang() -> str:
    time.sleep(3600)
    return "late"


server.run("stdio")
'''

WORKFLOW = '''
name: reserve_stock
description: Reserve items of a SKU that is in stock.
arguments:
  - {name: sku, description: The SKU, required: true, type: string}
steps:
  - name: check
    tool: stock
    args: {sku: {arg: sku}}
    bind: found
  - name: reserve
    tool: reserve
    args: {sku: {arg: sku}, count: {step: found, field: count}}
    bind: reserved
'''


def upstream_command(tmp_path: Path) -> str:
    path = tmp_path / "upstream.py"
    path.write_text(UPSTREAM, encoding="utf-8")
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(path))}"


def workflows(tmp_path: Path, text: str = WORKFLOW) -> Path:
    folder = tmp_path / "workflows"
    folder.mkdir(exist_ok=True)
    (folder / "reserve.yaml").write_text(text, encoding="utf-8")
    return folder


def project_skill(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "projector.cli", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)


async def _listing_and_calls(command: str, wfs: Path, framework: str) -> dict:
    async with Client(_stdio(command)) as direct:
        upstream_tools = (await direct.list_tools()).tools
        upstream_call = await direct.call_tool("stock", {"sku": "abc"})
    async with gateway(command, None, wfs, framework=framework) as server:
        async with Client(for_server(server).in_process(server)) as client:
            tools = (await client.list_tools()).tools
            call = await client.call_tool("stock", {"sku": "abc"})
            prompts = [p.name for p in (await client.list_prompts()).prompts]
            run = await client.get_prompt("reserve_stock", {"sku": "abcd"})
    return {"upstream_tools": upstream_tools, "upstream_call": upstream_call, "tools": tools, "call": call,
            "prompts": prompts, "run": [m.content.text for m in run.messages]}


def _stdio(command: str):
    from mcp.client.stdio import StdioServerParameters

    words = shlex.split(command)
    return StdioServerParameters(command=words[0], args=words[1:])


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_upstreams_tools_pass_through_and_the_workflow_calls_them(tmp_path, framework):
    seen = anyio.run(_listing_and_calls, upstream_command(tmp_path), workflows(tmp_path), framework)
    ours = {t.name: t for t in seen["tools"]}
    for t in seen["upstream_tools"]:
        got = ours[t.name]
        assert (got.description, got.input_schema, got.output_schema, got.annotations) == \
               (t.description, t.input_schema, t.output_schema, t.annotations)
    assert set(ours) == {t.name for t in seen["upstream_tools"]}
    assert seen["call"].structured_content == seen["upstream_call"].structured_content == {"sku": "abc", "count": 3}
    assert seen["call"].content == seen["upstream_call"].content
    assert "reserve_stock" in seen["prompts"]
    assert any("reserved 4 of abcd" in text for text in seen["run"])


def test_a_step_that_calls_a_tool_the_upstream_lacks_is_refused_at_start(tmp_path):
    upstream = upstream_command(tmp_path)
    built = project_skill("build", str(workflows(tmp_path)), "--tools-from", upstream, "--out", "skills", cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    wfs = workflows(tmp_path, WORKFLOW.replace("tool: reserve", "tool: reserve_all"))
    run = project_skill("serve", "--upstream", upstream, "--workflows", str(wfs), "--skills", "skills", cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    assert "unknown-tool" in run.stderr and "reserve_all" in run.stderr
    assert "Traceback" not in run.stderr


def test_an_upstream_that_dies_at_start_is_a_clear_error(tmp_path):
    dying = f"{shlex.quote(sys.executable)} -c 'import sys; print(\"no licence key\", file=sys.stderr); sys.exit(4)'"
    started = time.monotonic()
    run = project_skill("serve", "--upstream", dying, "--workflows", str(workflows(tmp_path)), cwd=tmp_path)
    assert run.returncode == 1
    assert "exited with status 4" in run.stderr and "no licence key" in run.stderr
    assert "Traceback" not in run.stderr
    assert time.monotonic() - started < 30


def test_an_upstream_that_never_answers_is_a_clear_error_within_the_timeout(tmp_path):
    silent = f"{shlex.quote(sys.executable)} -c 'import time; time.sleep(600)'"
    started = time.monotonic()
    run = project_skill("serve", "--upstream", silent, "--upstream-timeout", "2", "--workflows",
                        str(workflows(tmp_path)), cwd=tmp_path)
    assert run.returncode == 1
    assert "did not answer" in run.stderr or "timed out" in run.stderr.lower(), run.stderr
    assert "Traceback" not in run.stderr
    assert time.monotonic() - started < 30


def test_an_upstream_listing_past_the_snapshot_bound_is_refused_naming_the_upstream(tmp_path):
    """Issue 30 (the gateway's listing had its own loop, with no total cap): the upstream's tools/list is read as
    ``project-skill tools`` reads it, so one that passes 16 MiB (1 MiB pages, without end) stops the gateway at
    start-up with an error naming the upstream, instead of being kept (20 MiB of it) and served."""
    spec = shlex.join([sys.executable, str(ROOT / "tests" / "bad_inputs" / "response-too-large.server.py"), "tools",
                       str(1 << 20), "20"])
    wfs = workflows(tmp_path, "name: one\ndescription: Call one tool.\ntools:\n  - {name: t00001, description: "
                              "Pad., input_schema: {type: object}}\nsteps:\n  - {name: a, tool: t00001}\n")
    assert project_skill("build", str(wfs), "--out", "skills", cwd=tmp_path).returncode == 0
    run = project_skill("serve", "--upstream", spec, "--workflows", str(wfs), "--skills", "skills", cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    assert f"{spec}: error[response-too-large]: tools/list passed " in run.stderr, run.stderr
    assert "Traceback" not in run.stderr


async def _call_after(command: str, wfs: Path, framework: str, first: str) -> list:
    async with gateway(command, None, wfs, framework=framework, timeout=2) as server:
        async with Client(for_server(server).in_process(server)) as client:
            with anyio.fail_after(30):
                return [await client.call_tool(first, {}), await client.call_tool("stock", {"sku": "x"})]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_call_to_an_upstream_that_died_is_a_tool_error_not_a_hang(tmp_path, framework):
    died, after = anyio.run(_call_after, upstream_command(tmp_path), workflows(tmp_path), framework, "die")
    assert died.is_error and after.is_error
    assert "did not answer" in after.content[0].text


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_call_the_upstream_never_answers_is_a_tool_error_after_the_timeout(tmp_path, framework):
    hung, after = anyio.run(_call_after, upstream_command(tmp_path), workflows(tmp_path), framework, "hang")
    assert hung.is_error and "did not answer" in hung.content[0].text
    assert not after.is_error  # the upstream is still there: only that call timed out


def test_the_python_api_refuses_an_unreachable_upstream_with_the_servers_error(tmp_path):
    async def start() -> None:
        async with gateway(f"{shlex.quote(sys.executable)} -c 'raise SystemExit(5)'", None, None):
            pass

    with pytest.raises(ServerError, match="status 5"):
        anyio.run(start)


def test_the_python_api_raises_attach_error_for_a_step_that_does_not_fit(tmp_path):
    async def start() -> None:
        async with gateway(upstream_command(tmp_path), None,
                           workflows(tmp_path, WORKFLOW.replace("{sku: {arg: sku}}", "{code: {arg: sku}}"))):
            pass

    with pytest.raises(AttachError):
        anyio.run(start)


# ------------------------------------------------------------------------------ real upstreams of other SDKs (slow)

GATEWAY_WORKFLOWS = ROOT / "tests" / "server" / "gateway"
# upstream -> (its test workflow's prompt, arguments, a read-only tool to call, what the confirmed step returns)
REAL = {"sqlite": ("record_insight", {"insight": "sales are up"}, ("list_tables", {}), "Insight added to memo"),
        "memory": ("remember_person", {"person": "Ada"}, ("read_graph", {}), '"name": "gateway-visitor"')}


def real_upstream(which: str, tmp_path: Path) -> str:
    from tests.remote.upstreams import memory_command, sqlite_command

    return sqlite_command(tmp_path / "shop.db") if which == "sqlite" else memory_command(tmp_path / "memory.jsonl")


def built_skills(which: str, upstream: str, tmp_path: Path) -> Path:
    done = project_skill("build", str(GATEWAY_WORKFLOWS / which), "--tools-from", upstream, "--out", "skills",
                         cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    return tmp_path / "skills"


def tree_files(skills: Path) -> dict[str, bytes]:
    return {f"skill://{p.relative_to(skills).as_posix()}": p.read_bytes()
            for p in sorted(skills.rglob("*")) if p.is_file() and p.name != "skills.json"}


async def through_the_gateway(target, which: str) -> dict:
    """FastMCP's client: list and read (verified) every skill, call an upstream tool; mcp's client: run the workflow
    prompt, saying yes to its confirmation."""
    from fastmcp import Client as FastMCPClient
    from fastmcp.skills import SkillsClientExtension
    from mcp_types import ElicitResult

    prompt, arguments, (tool, tool_args), _ = REAL[which]
    async with FastMCPClient(target, extensions=[SkillsClientExtension()]) as client:
        listed = await client.list_skills()
        files = {}
        for entry in listed:
            skill = await client.read_skill(entry.uri)
            files.update({entry.uri.removesuffix("SKILL.md") + rel: data for rel, data in skill.files.items()})
        called = await client.call_tool_mcp(tool, tool_args)
    asked: list[str] = []

    async def yes(_ctx, params) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"confirm": True})

    url = target if isinstance(target, str) else None
    async with Client(url or target.__dict__["_mcp_stdio"], elicitation_callback=yes) as c:
        run = await c.get_prompt(prompt, arguments)
    return {"files": files, "called": called, "asked": asked, "run": "\n".join(m.content.text for m in run.messages)}


def check_seen(seen: dict, which: str, skills: Path) -> None:
    assert seen["files"] == tree_files(skills)  # every file, byte-equal to the built tree
    assert not seen["called"].is_error, seen["called"]
    assert len(seen["asked"]) == 1  # the confirm: step asked once
    assert REAL[which][3] in seen["run"], seen["run"]


def gateway_argv(upstream: str, which: str) -> list[str]:
    return ["-m", "projector.cli", "serve", "--upstream", upstream, "--skills", "skills", "--workflows",
            str(GATEWAY_WORKFLOWS / which)]


@pytest.mark.slow
@pytest.mark.parametrize("which", sorted(REAL))
def test_a_real_upstream_over_stdio(tmp_path, which):
    from fastmcp.client.transports import StdioTransport
    from mcp.client.stdio import StdioServerParameters

    upstream = real_upstream(which, tmp_path)
    skills = built_skills(which, upstream, tmp_path)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    transport = StdioTransport(sys.executable, gateway_argv(upstream, which), env=env, cwd=str(tmp_path))
    transport.__dict__["_mcp_stdio"] = StdioServerParameters(command=sys.executable, args=gateway_argv(upstream, which),
                                                             env=env, cwd=str(tmp_path))
    check_seen(anyio.run(through_the_gateway, transport, which), which, skills)


def start_gateway_http(upstream: str, which: str, cwd: Path) -> tuple[subprocess.Popen, str]:
    import socket

    from .test_serve_skills import free_port

    port = free_port()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, *gateway_argv(upstream, which), "--http", f"127.0.0.1:{port}"], cwd=cwd,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the gateway exited: {proc.stderr.read().decode()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("the gateway did not listen within 60 s")


@pytest.mark.slow
@pytest.mark.parametrize("which", sorted(REAL))
def test_a_real_upstream_over_http_for_fastmcp_and_the_typescript_v2_client(tmp_path, which):
    import base64
    import json

    from tests.remote.upstreams import conformance_script, installed

    from .test_serve_skills import stop

    upstream = real_upstream(which, tmp_path)
    skills = built_skills(which, upstream, tmp_path)
    proc, url = start_gateway_http(upstream, which, tmp_path)
    try:
        check_seen(anyio.run(through_the_gateway, url, which), which, skills)
        script = conformance_script()
        client_dir = script.install_peer(script.cache_dir(), script.TS_CLIENT_V2, log=lambda *_: None)
        ts = subprocess.run([str(installed()["node"]), str(ROOT / "tests" / "server" / "ts_skills_v2_client.cjs"),
                             str(client_dir), "http", url], capture_output=True, text=True, timeout=120)
        assert ts.returncode == 0, ts.stderr
        read = {uri: base64.b64decode(data) for uri, data in json.loads(ts.stdout)["files"].items()}
        assert read == tree_files(skills)
    finally:
        stop(proc)


@pytest.mark.slow
@pytest.mark.parametrize("which", sorted(REAL))
def test_the_skills_conformance_scenarios_pass_against_the_gateway(tmp_path, which):
    from tests.remote.upstreams import conformance_script

    upstream = real_upstream(which, tmp_path)
    built_skills(which, upstream, tmp_path)
    command = shlex.join([sys.executable, *gateway_argv(upstream, which), "--skills", str(tmp_path / "skills")])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "conformance.py"), "--server-only",
                           "--server-command", command], capture_output=True, text=True, timeout=600, env=env)
    assert conformance_script() is not None
    assert done.returncode == 0, done.stdout + done.stderr
    assert "GREEN" in done.stdout
