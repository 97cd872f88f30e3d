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
