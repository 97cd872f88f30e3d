"""FastMCP as the second framework: attach() on a fastmcp.FastMCP, and equal behaviour with mcp's MCPServer, through
real clients (mcp's, FastMCP's own, `project-skill remote`, the TypeScript SDK) over memory, stdio and HTTP."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from fastmcp import Client as FastMCPClient
from fastmcp import FastMCP
from fastmcp.client.transports import StdioTransport, StreamableHttpTransport
from fastmcp.skills import SkillsClientExtension
from mcp import Client
from mcp.server.lowlevel import Server as LowLevelServer
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter

from projector.builder import WorkflowBuilder, arg
from projector.server import attach, attach_async
from projector.server.bootstrap import parse as parse_bootstrap
from projector.server.demo import add_demo_tools, demo_server
from projector.server.errors import AttachError

ROOT = Path(__file__).resolve().parents[2]
SKILLS = ROOT / "generated_skills"
WORKFLOWS = ROOT / "workflows"
MANIFEST = json.loads((SKILLS / "skills.json").read_text("utf-8"))["skills"]
RAW = TypeAdapter(dict[str, Any])
FRAMEWORKS = ("mcp", "fastmcp")
DIRECTORY_SERVER = ROOT / "bench" / "fastmcp_directory_server.py"  # also the bench's baseline


def new_server(framework: str, name: str = "shop") -> Any:
    return MCPServer(name) if framework == "mcp" else FastMCP(name)


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


BUNDLES = {k: v for k, v in tree(SKILLS).items() if k != "skills.json"}


# ------------------------------------------------------------------------------------------ clients, in memory

async def prompt_messages(server: Any, name: str, args: dict[str, str]) -> tuple[list[tuple[str, str]], list]:
    """``prompts/get`` through each framework's own in-memory client: the messages, and the progress seen."""
    progress: list = []

    async def on_progress(p: float, total: float | None, message: str | None) -> None:
        progress.append((p, total, message))

    # FastMCP's Client.get_prompt sends no progress token, so both go through the session with a progress callback
    req = types.GetPromptRequest(params=types.GetPromptRequestParams(name=name, arguments=args))
    async with (Client(server) if isinstance(server, MCPServer) else FastMCPClient(server)) as client:
        result = await client.session.send_request(req, types.GetPromptResult, progress_callback=on_progress)
    return [(m.role, m.content.text) for m in result.messages], progress


async def prompt_names(server: Any) -> list[str]:
    if isinstance(server, MCPServer):
        async with Client(server) as client:
            return sorted(p.name for p in (await client.list_prompts()).prompts)
    async with FastMCPClient(server) as client:
        return sorted(p.name for p in await client.list_prompts())


# ----------------------------------------------------------------------------------------------- attach()

def test_attach_refuses_anything_but_the_two_frameworks_with_a_type_error():
    for foreign in (object(), LowLevelServer("low"), "server"):
        with pytest.raises(TypeError) as info:
            attach(foreign, SKILLS, WORKFLOWS)
        message = str(info.value)
        assert "mcp.server.mcpserver.MCPServer" in message and "fastmcp.FastMCP" in message, message
        assert type(foreign).__qualname__ in message


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_attach_at_import_time_without_an_event_loop(framework):
    server = new_server(framework)
    add_demo_tools(server)
    ext = attach(server, SKILLS, WORKFLOWS)
    assert ext is not None
    names = asyncio.run(prompt_names(server))
    assert {"refund_flow", "hello_world", "code_mode", "skill.refund-flow"} <= set(names)


@pytest.mark.anyio
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_attach_inside_a_running_event_loop(framework):
    # The old FastMCP path failed here with "listing suspended unexpectedly" (and outside a loop with anyio's
    # NoEventLoopError).
    server = new_server(framework)
    add_demo_tools(server)
    attach(server, SKILLS, WORKFLOWS)
    messages, _ = await prompt_messages(server, "hello_world", {"name": "Ada"})
    assert any('"Hello, Ada!"' in text for _, text in messages)


@pytest.mark.anyio
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_attach_async_from_an_async_main(framework):
    server = new_server(framework)
    add_demo_tools(server)
    await attach_async(server, SKILLS, WORKFLOWS)
    messages, _ = await prompt_messages(server, "hello_world", {"name": "Ada"})
    assert messages[-1][1].startswith("Done: all")


def bad_workflows() -> list:
    return [WorkflowBuilder("broken", "Calls what the server lacks.")
            .argument("order_id", "An order", required=True, type="integer")
            .tool("no_such_tool", "Not on the server.", annotations={"readOnlyHint": True})
            .tool("get_order", "Look up an order by id.", annotations={"readOnlyHint": True})
            .step("missing", tool="no_such_tool", args={})
            .step("typed", tool="get_order", args={"id": arg("order_id")})
            .step("policy", resources=["docs://nowhere/{order_id}"], template={"order_id": arg("order_id")})
            .build()]


def test_fastmcp_runs_the_same_attach_checks_and_adds_nothing_when_they_fail():
    def failure(server: Any) -> list[tuple[str, str]]:
        add_demo_tools(server)
        with pytest.raises(AttachError) as info:
            attach(server, SKILLS, bad_workflows())
        return [(d.code, d.message) for d in info.value.diagnostics]

    on_mcp = failure(MCPServer("a"))
    server = FastMCP("b")
    on_fastmcp = failure(server)
    assert on_fastmcp == on_mcp
    assert sorted(c for c, _ in on_fastmcp) == ["parameter-type", "unknown-resource", "unknown-tool"]
    assert asyncio.run(prompt_names(server)) == []  # nothing was added

    async def resources() -> list[str]:
        async with FastMCPClient(server) as client:
            return sorted(str(r.uri) for r in await client.list_resources())

    assert not any(uri.startswith("skill://") for uri in asyncio.run(resources()))


def test_fastmcp_prompt_name_clashes_are_refused():
    server = FastMCP("shop")
    add_demo_tools(server)

    @server.prompt(name="refund_flow")
    def mine() -> str:
        return "mine"

    with pytest.raises(AttachError) as info:
        attach(server, SKILLS, WORKFLOWS)
    assert [d.code for d in info.value.diagnostics] == ["prompt-collision"]
    assert "refund_flow" in info.value.diagnostics[0].message
    assert asyncio.run(prompt_names(server)) == ["refund_flow"]


def test_a_fastmcp_server_with_its_own_skills_extension_is_refused_clearly(tmp_path):
    from fastmcp.skills.extension import SkillsExtension
    from projector.cli import main

    skills_only = tmp_path / "skills"  # skills that name no workflow prompt, so serving them alone is fine
    assert main(["build", str(WORKFLOWS), "--skills-only", "--out", str(skills_only)]) == 0
    server = FastMCP("shop")
    server.add_extension(SkillsExtension())
    with pytest.raises(AttachError) as info:
        attach(server, skills_only, None)
    assert "skills extension" in str(info.value.diagnostics[0].message)


# ------------------------------------------------------------------------------------ equal prompts, in memory

@pytest.mark.anyio
@pytest.mark.parametrize("order", ["A1001", "A1002"])
async def test_refund_flow_gives_the_same_transcript_and_progress_on_both_frameworks(order):
    runs = {}
    for framework in FRAMEWORKS:
        server, store = demo_server(SKILLS, WORKFLOWS, framework=framework)
        messages, progress = await prompt_messages(server, "refund_flow", {"order_id": order})
        runs[framework] = (messages, progress, store.ledger())
    assert runs["fastmcp"] == runs["mcp"]
    messages, progress, ledger = runs["mcp"]
    assert messages[-1][1].startswith("Done: all 4 steps")
    assert len(progress) == 4 and ledger[0]["order_id"] == order


@pytest.mark.slow
@pytest.mark.anyio
async def test_bootstrap_prompts_are_byte_equal_on_both_frameworks():
    mcp_server, _ = demo_server(SKILLS, WORKFLOWS)
    fast_server, _ = demo_server(SKILLS, WORKFLOWS, framework="fastmcp")
    for entry in MANIFEST:
        name = "skill." + entry["uri"].removeprefix("skill://").removesuffix("/SKILL.md").replace("/", ".")
        on_mcp, _ = await prompt_messages(mcp_server, name, {})
        on_fastmcp, _ = await prompt_messages(fast_server, name, {})
        assert on_fastmcp == on_mcp
        files = parse_bootstrap(on_fastmcp[0][1])
        assert files == {r["uri"]: (SKILLS / r["uri"].removeprefix("skill://")).read_bytes()
                         for r in entry["resources"]}


@pytest.mark.anyio
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_bad_prompt_arguments_are_invalid_params_on_both(framework):
    server, _ = demo_server(SKILLS, WORKFLOWS, framework=framework)
    async with (Client(server) if framework == "mcp" else FastMCPClient(server)) as client:
        for args in ({}, {"order_id": "A1001", "nope": "x"}):
            req = types.GetPromptRequest(params=types.GetPromptRequestParams(name="refund_flow", arguments=args))
            with pytest.raises(MCPError) as info:
                await client.session.send_request(req, types.GetPromptResult)
            assert info.value.code == types.INVALID_PARAMS, info.value


# ------------------------------------------------------------------------------------------- server processes

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def running(argv: list[str], port: int):
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the server exited: {proc.stderr.read().decode(errors='replace')}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the server did not listen within 60 s"
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        proc.stderr.close()


def serve_argv(framework: str) -> list[str]:
    return [sys.executable, "-m", "projector.server", "--framework", framework, "--skills", str(SKILLS),
            "--workflows", str(WORKFLOWS)]


@pytest.fixture(scope="module")
def urls():
    """Both demo servers over HTTP, and FastMCP's own SkillsDirectoryProvider serving generated_skills/."""
    ports = {"mcp": free_port(), "fastmcp": free_port(), "directory": free_port()}
    with running([*serve_argv("mcp"), "--http", f"127.0.0.1:{ports['mcp']}"], ports["mcp"]) as mcp_url, \
            running([*serve_argv("fastmcp"), "--http", f"127.0.0.1:{ports['fastmcp']}"], ports["fastmcp"]) as f_url, \
            running([sys.executable, str(DIRECTORY_SERVER), str(SKILLS), "--http", str(ports["directory"])],
                    ports["directory"]) as d_url:
        yield {"mcp": mcp_url, "fastmcp": f_url, "directory": d_url}


def stdio_command(framework: str) -> str:
    return " ".join([*serve_argv(framework), "--stdio"])


async def call(client: Client, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    req = types.Request[dict[str, Any] | None, str](method=method, params=params or {})
    return await client.session.send_request(req, RAW)


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_skills_surface_is_byte_equal_on_both_frameworks_over_http(urls):
    requests = [("skills/list", {})]
    for entry in MANIFEST:
        requests.append(("skills/get", {"uri": entry["uri"]}))
        requests += [("resources/read", {"uri": r["uri"]}) for r in entry["resources"]]
        requests.append(("resources/directory/read", {"uri": entry["uri"].removesuffix("/SKILL.md")}))
    answers = {}
    for framework in FRAMEWORKS:
        async with Client(urls[framework]) as client:
            answers[framework] = [await call(client, m, p) for m, p in requests]
            listed = (await client.list_resources()).resources
            answers[framework].append([r.model_dump(by_alias=True, exclude_none=True) for r in listed
                                       if str(r.uri).startswith("skill://")])
    assert answers["fastmcp"] == answers["mcp"]
    assert answers["mcp"][0]["skills"] == MANIFEST
    assert [r["name"] for r in answers["mcp"][-1]] == [e["frontmatter"]["name"] for e in MANIFEST]


async def fastmcp_client_reads_every_skill(transport: Any) -> dict[str, dict[str, bytes]]:
    async with FastMCPClient(transport, extensions=[SkillsClientExtension()]) as client:
        out = {}
        for entry in await client.list_skills():
            skill = await client.read_skill(entry.uri)  # verifies each file's size and digest, and the frontmatter
            out[entry.uri] = dict(skill.files)
        return out


EXPECTED_FILES = {e["uri"]: {r["uri"].removeprefix(e["uri"].removesuffix("SKILL.md")):
                             (SKILLS / r["uri"].removeprefix("skill://")).read_bytes() for r in e["resources"]}
                  for e in MANIFEST}


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_fastmcp_read_skill_verifies_every_skill_from_our_servers_over_http(urls, framework):
    assert await fastmcp_client_reads_every_skill(StreamableHttpTransport(urls[framework])) == EXPECTED_FILES


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_fastmcp_read_skill_verifies_every_skill_from_our_servers_over_stdio(framework):
    argv = [*serve_argv(framework), "--stdio"]
    transport = StdioTransport(command=argv[0], args=argv[1:], cwd=str(ROOT))
    assert await fastmcp_client_reads_every_skill(transport) == EXPECTED_FILES


def cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "projector.cli", *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=180)


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_remote_load_from_the_fastmcp_demo_is_byte_equal_to_generated_skills(urls, transport, tmp_path):
    server = urls["fastmcp"] if transport == "http" else stdio_command("fastmcp")
    done = cli("remote", "load", server, "--all", "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    # the bundles, and the index of what it wrote (skills.json): the tree build wrote
    assert tree(tmp_path / "out") == tree(SKILLS)


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_remote_load_verifies_fastmcps_own_directory_provider(urls, transport, tmp_path):
    server = urls["directory"] if transport == "http" else f"{sys.executable} {DIRECTORY_SERVER} {SKILLS}"
    listed = cli("remote", "list", server, "--format", "json")
    assert listed.returncode == 0, listed.stderr
    # FastMCP lists the same entries, in the same order, with the same files: its provider serves every file of a
    # skill's folder, and the derived eval cases are not in one (generated_evals/, docs/evals.md)
    assert json.loads(listed.stdout) == {"skills": MANIFEST}
    done = cli("remote", "load", server, "--all", "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    loaded = tree(tmp_path / "out")
    assert json.loads(loaded.pop("skills.json")) == {"skills": MANIFEST}  # the index it wrote
    assert loaded == BUNDLES  # every file of each folder, verified and written


def _conformance_script():
    spec = importlib.util.spec_from_file_location("conformance_script_ts", ROOT / "scripts" / "conformance.py")
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_typescript_sdk_client_lists_and_reads_every_skill(urls, framework):
    script = _conformance_script()
    cache = script.cache_dir()
    script.install(cache, log=lambda *_: None)  # Node 22 (and the suite), as the conformance test does
    sdk = script.install_ts_sdk(cache, log=lambda *_: None)
    done = subprocess.run([str(script.node_binary(cache)), str(Path(__file__).with_name("ts_skills_client.cjs")),
                           str(sdk), urls[framework]], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["protocolVersion"] == "2025-11-25"  # the SDK's handshake era
    assert seen["extensions"] == {"io.modelcontextprotocol/skills": {"directoryRead": True}}
    assert seen["skills"] == MANIFEST
    assert {uri: text.encode("utf-8") for uri, text in seen["files"].items()} == \
        {e["uri"]: (SKILLS / e["uri"].removeprefix("skill://")).read_bytes() for e in MANIFEST}


@pytest.mark.slow
def test_official_conformance_is_green_on_fastmcp(tmp_path):
    report = tmp_path / "conformance.json"
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "conformance.py"), "--server-only",
                           "--framework", "fastmcp", "--json", str(report)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900, env=dict(os.environ))
    print(done.stdout)
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    results = json.loads(report.read_text("utf-8"))
    assert {r["scenario"] for r in results} == {"sep-2640-skills-enumeration", "sep-2640-skills-manifest",
                                                "sep-2640-skills-directory"}
    for r in results:
        assert r["problems"] == [], r
        assert r["counts"]["SUCCESS"] > 0
        assert (r["counts"]["FAILURE"], r["counts"]["WARNING"], r["counts"]["SKIPPED"]) == (0, 0, 0), r


# ------------------------------------------------------------------------------------------------ the docs' examples

def attach_section() -> str:
    """The attach examples of docs/serving.md (once in the README), from "The library" to the next section."""
    text = (ROOT / "docs" / "serving.md").read_text("utf-8")
    return text[text.index("## The library: `attach`"):text.index("## One server, three ways to use a procedure")]


def attach_examples() -> list[str]:
    return re.findall(r"```python\n(.*?)```", attach_section(), re.S)


@pytest.mark.slow
@pytest.mark.parametrize("index, framework", [(0, "mcp"), (1, "fastmcp")])
def test_the_serving_page_attach_examples_run_as_written(index, framework, monkeypatch, tmp_path):
    import shlex

    from projector.cli import main

    code = attach_examples()[index]
    assert len(attach_examples()) == 2
    runs: list = []
    import projector.server

    monkeypatch.setattr(projector.server, "serve_http", lambda server, *a, **k: runs.append((a, k)))  # record it
    # A project of the reader's own: the example workflow, then the page's shell step, as written.
    (tmp_path / "workflows").mkdir()
    shutil.copy(ROOT / "workflows" / "hello-world.yaml", tmp_path / "workflows" / "hello-world.yaml")
    monkeypatch.chdir(tmp_path)
    [shell] = re.findall(r"```sh\n(.*?)```", attach_section(), re.S)
    for line in shell.strip().splitlines():
        argv = shlex.split(line)
        assert argv[0] == "project-skill"
        assert main(argv[1:]) == 0
    namespace: dict[str, Any] = {}
    exec(compile(code, f"docs/serving.md ({framework})", "exec"), namespace)
    server = namespace["server"]
    assert type(server) is (MCPServer if framework == "mcp" else FastMCP)
    assert len(runs) == 1 and runs[0][1]["port"] == 8000
    assert asyncio.run(prompt_names(server)) == ["hello_world", "skill.hello-world"]
    messages, progress = asyncio.run(prompt_messages(server, "hello_world", {"name": "Ada"}))
    assert '"Hello, Ada!"' in messages[3][1] and len(progress) == 1


def test_serve_framework_fastmcp_without_the_extra_is_a_usage_error(monkeypatch, capsys):
    from projector.server import cli as serve_cli

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "fastmcp"
                        else real(name, *a))
    assert serve_cli.main("serve", ["--framework", "fastmcp"]) == 2
    err = capsys.readouterr().err
    assert "pip install 'project-skill[fastmcp]'" in err and "Traceback" not in err


def test_fastmcp_refuses_skills_whose_workflow_prompt_is_not_offered():
    """The same missing-workflow-prompt check as on MCPServer: serving the shipped skills without their workflows
    would send a model looking for prompts that are not there."""
    server = FastMCP("skills-alone")
    with pytest.raises(AttachError) as info:
        attach(server, SKILLS, None)
    assert sorted((d.code, Path(d.span.file).parent.name) for d in info.value.diagnostics) == [
        ("missing-workflow-prompt", "code-mode"), ("missing-workflow-prompt", "hello-world"),
        ("missing-workflow-prompt", "refund-flow"), ("missing-workflow-prompt", "refund-flow-approved"),
        ("missing-workflow-prompt", "refund-flow-gated")]
