"""``project-skill serve --upstream SERVER`` and :func:`projector.server.gateway`: the skills and workflow prompts in
front of another server, driven through a real client.

The fast tests put the gateway in front of a small Python server (mcp 2.x, over stdio, as a subprocess), written here.
The slow ones (``-m slow``) put it in front of the reference servers of other SDKs and languages, installed by
scripts/conformance.py: ``mcp-server-sqlite`` (mcp 1.x, in a virtual environment of its own) and
``@modelcontextprotocol/server-memory`` (npm, TypeScript SDK v1), each reached over stdio and over HTTP by FastMCP's
client and the TypeScript SDK v2 client, which list and read the skills, call the upstream's tools, and run its test
workflow (tests/server/gateway/) as a prompt and as a tool through its ``confirm:``; the skills conformance scenarios
run against the gateway too."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp_types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter

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


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_step_that_calls_a_tool_the_upstream_lacks_is_refused_at_start(tmp_path):
    upstream = upstream_command(tmp_path)
    built = project_skill("build", str(workflows(tmp_path)), "--tools-from", upstream, "--out", "skills", cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    wfs = workflows(tmp_path, WORKFLOW.replace("tool: reserve", "tool: reserve_all"))
    run = project_skill("serve", "--upstream", upstream, "--workflows", str(wfs), "--skills", "skills", cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    assert "unknown-tool" in run.stderr and "reserve_all" in run.stderr
    assert "Traceback" not in run.stderr


@pytest.mark.slow
def test_an_upstream_that_dies_at_start_is_a_clear_error(tmp_path):
    dying = f"{shlex.quote(sys.executable)} -c 'import sys; print(\"no licence key\", file=sys.stderr); sys.exit(4)'"
    started = time.monotonic()
    run = project_skill("serve", "--upstream", dying, "--workflows", str(workflows(tmp_path)), cwd=tmp_path)
    assert run.returncode == 1
    assert "exited with status 4" in run.stderr and "no licence key" in run.stderr
    assert "Traceback" not in run.stderr
    assert time.monotonic() - started < 30


@pytest.mark.slow
def test_an_upstream_that_never_answers_is_a_clear_error_within_the_timeout(tmp_path):
    silent = f"{shlex.quote(sys.executable)} -c 'import time; time.sleep(600)'"
    started = time.monotonic()
    run = project_skill("serve", "--upstream", silent, "--upstream-timeout", "2", "--workflows",
                        str(workflows(tmp_path)), cwd=tmp_path)
    assert run.returncode == 1
    assert "did not answer" in run.stderr or "timed out" in run.stderr.lower(), run.stderr
    assert "Traceback" not in run.stderr
    assert time.monotonic() - started < 30


@pytest.mark.slow
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


@pytest.mark.slow
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_call_to_an_upstream_that_died_is_a_tool_error_not_a_hang(tmp_path, framework):
    died, after = anyio.run(_call_after, upstream_command(tmp_path), workflows(tmp_path), framework, "die")
    assert died.is_error and after.is_error
    assert "did not answer" in after.content[0].text


@pytest.mark.slow
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_call_the_upstream_never_answers_is_a_tool_error_after_the_timeout(tmp_path, framework):
    hung, after = anyio.run(_call_after, upstream_command(tmp_path), workflows(tmp_path), framework, "hang")
    assert hung.is_error and "did not answer" in hung.content[0].text
    assert not after.is_error  # the upstream is still there: only that call timed out


@pytest.mark.slow
def test_the_python_api_refuses_an_unreachable_upstream_with_the_servers_error(tmp_path):
    async def start() -> None:
        async with gateway(f"{shlex.quote(sys.executable)} -c 'raise SystemExit(5)'", None, None):
            pass

    with pytest.raises(ServerError, match="status 5"):
        anyio.run(start)


@pytest.mark.slow
def test_the_python_api_raises_attach_error_for_a_step_that_does_not_fit(tmp_path):
    async def start() -> None:
        async with gateway(upstream_command(tmp_path), None,
                           workflows(tmp_path, WORKFLOW.replace("{sku: {arg: sku}}", "{code: {arg: sku}}"))):
            pass

    with pytest.raises(AttachError):
        anyio.run(start)


# ----------------------------------------------------------------------- the upstream's tools/list decides (issue 33)

HIDING = Path(__file__).parent / "gateway" / "hiding_upstream.py"
REFUND_NOW = """
name: refund_now
description: Refund an order in full.
arguments:
  - {name: order_id, description: The order, required: true, type: string}
  - {name: amount, description: How much, required: true, type: number}
tools:
  - name: issue_refund
    description: Refund an order to the original payment method.
    input_schema:
      type: object
      properties: {order_id: {type: string}, amount: {type: number}}
      required: [order_id, amount]
    annotations: {readOnlyHint: false, destructiveHint: true}
    output_schema: {type: object}
steps:
  - name: refund
    tool: issue_refund
    args: {order_id: {arg: order_id}, amount: {arg: amount}}
"""


async def _catalog(client: Client, manifest: dict) -> dict:
    """What a caller sees: skills/list, skills/get of each built skill and resources/read of each of its files
    (None: refused as unknown), the prompts and the tools."""
    async def call(method: str, params: dict) -> Any:
        request = mcp_types.Request[dict[str, Any] | None, str](method=method, params=params)
        return await client.session.send_request(request, TypeAdapter(dict[str, Any]))

    async def answer(method: str, params: dict) -> Any:
        try:
            return await call(method, params)
        except MCPError as exc:
            assert exc.code == mcp_types.INVALID_PARAMS, exc
            return None

    got = {uri: await answer("skills/get", {"uri": uri}) for uri in manifest}
    read = {r["uri"]: await answer("resources/read", {"uri": r["uri"]})
            for e in manifest.values() for r in e["resources"]}
    return {"listed": sorted(e["uri"] for e in (await call("skills/list", {}))["skills"]), "got": got,
            "read": read, "prompts": sorted(p.name for p in (await client.list_prompts()).prompts),
            "tools": sorted(t.name for t in (await client.list_tools()).tools)}


async def _until(client: Client, shown: bool) -> None:
    """Wait, a bounded time, for the gateway's tools/list to show issue_refund (``shown``) or not."""
    with anyio.fail_after(30):
        while ("issue_refund" in {t.name for t in (await client.list_tools()).tools}) != shown:
            await anyio.sleep(0.05)


async def _hidden_and_back(framework: str, skills: Path, wfs: Path, command: str) -> tuple[dict, dict, dict]:
    manifest = {e["uri"]: e for e in json.loads((skills / "skills.json").read_text("utf-8"))["skills"]}
    async with gateway(command, skills, wfs, framework=framework, skill_tools=True, workflow_tools=True) as server:
        async with Client(for_server(server).in_process(server), cache=None) as client:
            whole = await _catalog(client, manifest)
            await client.call_tool("hide", {"name": "issue_refund"})  # through the gateway, to the upstream
            await _until(client, shown=False)
            seen = await _catalog(client, manifest)
            await client.call_tool("show", {"name": "issue_refund"})
            await _until(client, shown=True)
            again = await _catalog(client, manifest)
    return whole, seen, again


def _hiding_command(era: str) -> str:
    if era == "2026-07-28":
        return f"{shlex.quote(sys.executable)} {shlex.quote(str(HIDING))}"
    from tests.remote.upstreams import installed

    python = installed()["sqlite"].parent / "python"  # mcp 1.x, in the reference SQLite server's environment
    return f"{shlex.quote(str(python))} {shlex.quote(str(HIDING.with_name('hiding_upstream_v1.py')))}"


@pytest.mark.slow
@pytest.mark.parametrize("era", ["2026-07-28", "handshake"])
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_skill_whose_tool_the_upstream_stops_listing_is_gone_and_back_when_it_returns(framework, era, cli,
                                                                                        tmp_path):
    """The upstream's tools/list decides, while the gateway serves: when the upstream takes issue_refund out of its
    list and says so (a subscriptions/listen event from an mcp 2.x upstream on the 2026-07-28 wire; a
    notifications/tools/list_changed from an mcp 1.x upstream in the handshake era), the skill that calls it is not listed, unknown to skills/get and resources/read, and its
    prompts and workflow tool are gone, while the other skill stays as it was; when the upstream lists the tool
    again, the gateway serves all of it as at first."""
    wfs = workflows(tmp_path, REFUND_NOW)
    shutil.copy(ROOT / "workflows" / "hello-world.yaml", wfs / "hello-world.yaml")
    skills = tmp_path / "skills"
    assert cli("build", str(wfs), "--out", str(skills)).code == 0
    whole, seen, again = anyio.run(_hidden_and_back, framework, skills, wfs, _hiding_command(era))
    refund, hello = "skill://refund-now/SKILL.md", "skill://hello-world/SKILL.md"
    assert whole["listed"] == [hello, refund] and None not in whole["got"].values()
    assert {"refund_now", "skill.refund-now", "hello_world", "skill.hello-world"} <= set(whole["prompts"])
    assert {"issue_refund", "refund_now", "hello_world"} <= set(whole["tools"])
    assert seen["listed"] == [hello] and seen["got"] == {**whole["got"], refund: None}
    assert seen["read"] == {uri: None if uri.startswith("skill://refund-now/") else text
                            for uri, text in whole["read"].items()}
    assert seen["prompts"] == [p for p in whole["prompts"] if p not in ("refund_now", "skill.refund-now")]
    assert seen["tools"] == [t for t in whole["tools"] if t not in ("issue_refund", "refund_now")]
    assert again == whole


# ------------------------------------------------------------------------------ real upstreams of other SDKs (slow)

GATEWAY_WORKFLOWS = ROOT / "tests" / "server" / "gateway"
TRANSPORTS = ["stdio", "http"]


@dataclass(frozen=True)
class Real:
    """A reference upstream and its test workflow (tests/server/gateway/WHICH/), served as a prompt and as a tool."""

    workflow: str
    arguments: dict[str, Any]
    done: str  # in the run's transcript once the confirmed step and the rest have run
    look: dict[str, Any]  # a call of the upstream's own tool that reads what the workflow changes
    undo: dict[str, Any] | None  # one that undoes it (the memory server keeps an entity once, whoever adds it again)


REAL = {
    "sqlite": Real("record_insight", {"insight": "sales are up"}, "Insight added to memo",
                   {"tool": "read_query", "arguments": {"query": "SELECT count(*) AS n FROM insights"}}, None),
    "memory": Real("remember_person", {"person": "Ada"}, '"name": "gateway-visitor"',
                   {"tool": "read_graph", "arguments": {}},
                   {"tool": "delete_entities", "arguments": {"entityNames": ["gateway-visitor"]}}),
}


def plan(which: str) -> list[dict[str, Any]]:
    """The calls each client makes in one session: look, run the prompt, look, (undo,) run the tool, look."""
    real = REAL[which]
    run = {"arguments": real.arguments}
    return [real.look, {"prompt": real.workflow, **run}, real.look, *([real.undo] if real.undo else []),
            {"tool": real.workflow, **run}, real.look]


def real_upstream(which: str, folder: Path) -> str:
    """The upstream's command line, on a fresh state in ``folder`` (the SQLite one with its ``insights`` table)."""
    from tests.remote.upstreams import memory_command, sqlite_command

    if which == "memory":
        return memory_command(folder / "memory.jsonl")
    with contextlib.closing(sqlite3.connect(folder / "shop.db")) as db, db:
        db.execute("CREATE TABLE IF NOT EXISTS insights (source TEXT)")
    return sqlite_command(folder / "shop.db")


@pytest.fixture(scope="module")
def real_skills(tmp_path_factory):
    """``real_skills(which)``: the skills tree built once per upstream, with ``--tools-from`` it and
    ``--workflow-tools``, shared by the module's tests."""
    made: dict[str, Path] = {}

    def tree(which: str) -> Path:
        if which not in made:
            folder = tmp_path_factory.mktemp(f"gateway-{which}")
            done = project_skill("build", str(GATEWAY_WORKFLOWS / which), "--tools-from", real_upstream(which, folder),
                                 "--workflow-tools", "--out", "skills", cwd=folder, timeout=120)
            assert done.returncode == 0, done.stderr
            made[which] = folder / "skills"
        return made[which]

    return tree


def tree_files(skills: Path) -> dict[str, bytes]:
    """Every file the built index lists, by URI: what a client may read (the derived evals beside each bundle are
    not served)."""
    index = json.loads((skills / "skills.json").read_text("utf-8"))
    uris = sorted(r["uri"] for entry in index["skills"] for r in entry["resources"])
    return {uri: (skills / uri.removeprefix("skill://")).read_bytes() for uri in uris}


def gateway_argv(upstream: str, which: str, skills: Path) -> list[str]:
    return ["-m", "projector.cli", "serve", "--upstream", upstream, "--skills", str(skills), "--workflows",
            str(GATEWAY_WORKFLOWS / which), "--workflow-tools"]


def python_path() -> str:
    return os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])


@dataclass(frozen=True)
class Served:
    """The gateway as a client reaches it: at ``url`` (a gateway process on 127.0.0.1), or started by the client
    itself on stdio (``sys.executable`` with ``argv``)."""

    url: str | None
    argv: list[str]

    def node_args(self) -> list[str]:
        """The TypeScript scripts' transport arguments (their stdio transport passes on no PYTHONPATH: ``env`` does)."""
        if self.url is not None:
            return ["http", self.url]
        return ["stdio", shutil.which("env") or "env", f"PYTHONPATH={python_path()}", sys.executable, *self.argv]

    def fastmcp(self) -> Any:
        from fastmcp.client.transports import StdioTransport

        if self.url is not None:
            return self.url
        return StdioTransport(sys.executable, self.argv, env=dict(os.environ, PYTHONPATH=python_path()))


@contextlib.contextmanager
def served(upstream: str, which: str, skills: Path, transport: str) -> Iterator[Served]:
    """The gateway in front of ``upstream``: on HTTP, a process stopped after; on stdio, the command a client runs."""
    argv = gateway_argv(upstream, which, skills)
    if transport == "stdio":
        yield Served(None, argv)
        return
    proc, url = start_gateway_http(argv)
    try:
        yield Served(url, argv)
    finally:
        from .test_serve_skills import stop

        stop(proc)


def start_gateway_http(argv: list[str]) -> tuple[subprocess.Popen, str]:
    import socket

    from .test_serve_skills import free_port

    port = free_port()
    env = dict(os.environ, PYTHONPATH=python_path())
    proc = subprocess.Popen([sys.executable, *argv, "--http", f"127.0.0.1:{port}"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
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


def text_of(result: dict[str, Any]) -> str:
    parts = result["messages"] if "messages" in result else result["content"]
    return "\n".join(p.get("text", "") for p in parts)


def looked(which: str, result: dict[str, Any]) -> Any:
    """What the upstream's read tool saw: the SQLite server's row count, the memory server's entities."""
    assert not result["isError"], result
    if which == "sqlite":
        return int(re.fullmatch(r"\[\{'n': (\d+)\}\]", text_of(result).strip()).group(1))
    return {e["name"]: e["observations"] for e in json.loads(text_of(result))["entities"]}


def check_runs(which: str, results: list[dict[str, Any]], folder: Path) -> None:
    """Both runs went through the confirm: (asked once each, answered yes) to their end, and each did its side effect
    exactly once, as the upstream's own read tool, and the database file, show."""
    real = REAL[which]
    assert len(results) == len(plan(which))
    before, prompt, after_prompt, tool, after_tool = results[0], results[1], results[2], results[-2], results[-1]
    for run in (prompt, tool):
        assert len(run["asked"]) == 1, run  # the confirm: step asked once
        assert real.done in text_of(run), text_of(run)
    bound = {"tables", "counted", "recorded"} if which == "sqlite" else {"found", "created", "stored"}
    assert not tool["isError"] and set(tool["structuredContent"]["results"]) == bound, tool
    if which == "sqlite":
        assert [looked(which, r) for r in (before, after_prompt, after_tool)] == [0, 1, 2]
        with contextlib.closing(sqlite3.connect(folder / "shop.db")) as db:
            assert db.execute("SELECT source FROM insights").fetchall() == [("gateway",), ("gateway",)]
    else:
        visitor = {"gateway-visitor": ["met through the gateway"]}
        assert [looked(which, r) for r in (before, after_prompt, after_tool)] == [{}, visitor, visitor]


async def fastmcp_session(target: Served, which: str) -> dict[str, Any]:
    """FastMCP's client, in one session: list and read (verified) every skill, then make the plan's calls, saying
    yes to each confirmation."""
    from fastmcp import Client as FastMCPClient
    from fastmcp.client.elicitation import ElicitResult
    from fastmcp.skills import SkillsClientExtension

    asked: list[str] = []

    async def yes(message, _type, _params, _context) -> ElicitResult:
        asked.append(message)
        return ElicitResult(action="accept", content={"confirm": True})

    results = []
    async with FastMCPClient(target.fastmcp(), extensions=[SkillsClientExtension()], elicitation_handler=yes) as client:
        files = {}
        for entry in await client.list_skills():
            skill = await client.read_skill(entry.uri)
            files.update({entry.uri.removesuffix("SKILL.md") + rel: data for rel, data in skill.files.items()})
        for call in plan(which):
            asked.clear()
            if "prompt" in call:
                got = await client.get_prompt(call["prompt"], call["arguments"])
                results.append({"asked": list(asked),
                                "messages": [{"role": m.role, "text": m.content.text} for m in got.messages]})
            else:
                done = await client.call_tool_mcp(call["tool"], call["arguments"])
                results.append({"asked": list(asked), "content": [c.model_dump() for c in done.content],
                                "structuredContent": done.structured_content, "isError": bool(done.is_error)})
    return {"files": files, "results": results}


@pytest.mark.slow
@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("which", sorted(REAL))
def test_fastmcps_client_runs_a_real_upstreams_workflow_as_prompt_and_tool(real_skills, tmp_path, which, transport):
    """Issue 30: FastMCP's client, through ``serve --upstream`` in front of mcp-server-sqlite (mcp 1.x) or
    server-memory (npm), lists and reads every skill byte-equal to the built tree, calls the upstream's tools, and
    runs the workflow as a prompt and as a tool through its confirm:, each side effect happening exactly once."""
    skills = real_skills(which)
    with served(real_upstream(which, tmp_path), which, skills, transport) as target:
        seen = anyio.run(fastmcp_session, target, which)
    assert seen["files"] == tree_files(skills)
    check_runs(which, seen["results"], tmp_path)


def node(script: str, *args: str) -> dict[str, Any]:
    from tests.remote.upstreams import conformance_script, installed

    peers = conformance_script()
    client_dir = peers.install_peer(peers.cache_dir(), peers.TS_CLIENT_V2, log=lambda *_: None)
    done = subprocess.run([str(installed()["node"]), str(ROOT / "tests" / "server" / script), str(client_dir), *args],
                          capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.slow
@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("which", sorted(REAL))
def test_the_typescript_v2_client_runs_a_real_upstreams_workflow_as_prompt_and_tool(real_skills, tmp_path, which,
                                                                                    transport):
    """Issue 30: the same with the TypeScript SDK v2 client (protocol 2026-07-28, its SkillsClient verifying every
    file; each confirm: answered through its InputRequiredResult driver)."""
    skills = real_skills(which)
    with served(real_upstream(which, tmp_path), which, skills, transport) as target:
        listing = node("ts_skills_v2_client.cjs", *target.node_args())
        if transport == "http":  # a no first: asked once, and nothing reaches the upstream
            said_no = node("ts_confirm_v2_client.cjs", "no", json.dumps(plan(which)[-2:]), *target.node_args())
        runs = node("ts_confirm_v2_client.cjs", "yes", json.dumps(plan(which)), *target.node_args())
    assert {uri: base64.b64decode(data) for uri, data in listing["files"].items()} == tree_files(skills)
    if transport == "http":
        refused, look = said_no["results"]
        assert len(refused["asked"]) == 1 and REAL[which].done not in text_of(refused), refused
        assert looked(which, look) == looked(which, runs["results"][0])  # unchanged by the no
    check_runs(which, runs["results"], tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("which", sorted(REAL))
def test_the_skills_conformance_scenarios_pass_against_the_gateway(real_skills, tmp_path, which):
    from tests.remote.upstreams import conformance_script

    command = shlex.join([sys.executable, *gateway_argv(real_upstream(which, tmp_path), which, real_skills(which))])
    env = dict(os.environ, PYTHONPATH=python_path())
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "conformance.py"), "--server-only",
                           "--server-command", command], capture_output=True, text=True, timeout=600, env=env)
    assert conformance_script() is not None
    assert done.returncode == 0, done.stdout + done.stderr
    assert "GREEN" in done.stdout
