"""Frameworks are adapters (issue 20): the registry is the one place that names them, and a third framework is one
adapter module plus its line in the registry.

The third framework here is a toy, written in this file: a server that keeps its tools, resources and prompts in
dicts, and an adapter for it. Registered for one test, it is offered by every ``--framework`` choice, recognised by
``attach()``, runs the demo server and its workflow prompts with the one runner, and is served by ``project-skill
serve --framework toy``, with no other file touched.
"""

from __future__ import annotations

import inspect
import json
import re
import sys
import typing
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pydantic
import pytest
from mcp_types import CallToolResult, TextContent

from projector.server import adapters, attach, bootstrap
from projector.server.adapters.base import Adapter, Listing, with_host
from projector.server.skill_tools import LOAD_SKILL, READ_SKILL_FILE, SkillTools, functions
from projector.server.workflow import ToolSpec, WorkflowHost, run_workflow

ROOT = Path(__file__).resolve().parents[2]
SKILLS = ROOT / "generated_skills"
WORKFLOWS = ROOT / "workflows"
PACKAGE = ROOT / "projector"
ADAPTERS = PACKAGE / "server" / "adapters"


# ------------------------------------------------------------------------------------ the registry names them

FRAMEWORK_NAME = r"""["'](?:mcp|fastmcp)["']"""
COMPARISONS = [
    re.compile(rf"[=!]=\s*{FRAMEWORK_NAME}"),  # framework == "fastmcp"
    re.compile(rf"{FRAMEWORK_NAME}\s*[=!]="),  # "mcp" != framework
    re.compile(rf"\bin\s*[(\[{{]\s*{FRAMEWORK_NAME}"),  # framework in ("mcp", "fastmcp")
    re.compile(rf"[(\[{{]\s*{FRAMEWORK_NAME}\s*,\s*{FRAMEWORK_NAME}"),  # choices=("mcp", "fastmcp")
]


def _outside_adapters() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if ADAPTERS not in p.parents)


def test_no_module_outside_the_adapters_compares_framework_names():
    found = [f"{p.relative_to(ROOT).as_posix()}:{n}: {line.strip()}"
             for p in _outside_adapters()
             for n, line in enumerate(p.read_text("utf-8").splitlines(), 1)
             if any(rx.search(line) for rx in COMPARISONS)]
    assert found == []


@pytest.mark.slow
def test_only_the_fastmcp_adapter_imports_fastmcp():
    importing = re.compile(r"^\s*(?:from|import)\s+fastmcp\b", re.M)
    found = [p.relative_to(ROOT).as_posix() for p in sorted(PACKAGE.rglob("*.py")) if importing.search(
        p.read_text("utf-8"))]
    # Of the server frameworks, only the FastMCP adapter imports fastmcp. The pydantic-ai agent adapter is a client:
    # pydantic-ai's MCP toolset is built on fastmcp's client, so it names that client's stdio transport.
    assert found == ["projector/remote/agent_pydantic.py", "projector/server/adapters/fastmcp.py",
                     "projector/server/adapters/fastmcp_bound.py", "projector/server/adapters/fastmcp_forward.py",
                     "projector/server/adapters/fastmcp_refusals.py", "projector/server/adapters/fastmcp_tasks.py"]


def test_every_framework_choice_is_the_registry(capsys):
    from projector.server.cli import main

    assert main("serve", ["--framework", "nope"]) == 2  # the usage error lists the choices serve takes
    choices = capsys.readouterr().err.rsplit("(choose from ", 1)[1].split(")", 1)[0]
    assert tuple(c.strip(" '") for c in choices.split(",")) == adapters.names() == ("mcp", "fastmcp")
    assert adapters.DEFAULT == "mcp"
    assert [adapters.get(name).name for name in adapters.names()] == list(adapters.names())


def test_an_adapter_calls_no_private_name_of_another():
    """An adapter reaches what it shares with another through framework-free modules, never through the other."""
    modules = sorted(p for p in ADAPTERS.glob("*.py") if p.stem not in ("__init__", "base"))
    family = {p.stem: p.stem.split("_")[0] for p in modules}  # fastmcp_forward is the FastMCP adapter's
    assert sorted(set(family.values())) == ["fastmcp", "mcp"]
    for path in modules:
        text = path.read_text("utf-8")
        others = {stem for stem, f in family.items() if f != family[path.stem]}
        for other in others:
            assert not re.search(rf"from \.{other} import|adapters\.{other} import", text), (path.name, other)
        # the private helpers the FastMCP adapter once imported from the package face, and the private method of
        # MCPServer's skills extension it called
        assert not re.search(r"from \.\.? import .*\b_[a-z]|\._directory\._", text), path.name


# ---------------------------------------------------------------------------------------- a third framework

class ToyServer:
    """A framework in a dozen lines: everything is a dict."""

    def __init__(self, name: str):
        self.name = name
        self.tools: dict[str, dict[str, Any]] = {}
        self.resources: dict[str, tuple[str, Callable[..., Any]]] = {}
        self.templates: dict[str, tuple[str, Callable[..., Any]]] = {}
        self.prompts: dict[str, ToyPrompt] = {}
        self.skills: Any = None
        self.progress: list[tuple[float, float, str]] = []
        self.ran: list[tuple[str, Any]] = []


@dataclass
class ToyPrompt:
    name: str
    render: Callable[[ToyServer, dict[str, Any]], Awaitable[list[tuple[str, str]]]]


def _input_schema(fn: Callable[..., Any]) -> dict[str, Any]:
    hints = typing.get_type_hints(fn)
    fields = {p.name: (hints.get(p.name, Any), ... if p.default is p.empty else p.default)
              for p in inspect.signature(fn).parameters.values()}
    return pydantic.create_model(f"{fn.__name__}_arguments", **fields).model_json_schema()  # type: ignore[call-overload]


class ToyHost(WorkflowHost):
    def __init__(self, server: ToyServer):
        self.server = server

    async def tools(self) -> dict[str, ToolSpec]:
        return {name: ToolSpec(t["input_schema"], None) for name, t in self.server.tools.items()}

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        value = await self.server.tools[name]["fn"](**arguments)
        return CallToolResult(content=[TextContent(type="text", text=json.dumps(value))])

    async def read_resource(self, uri: str) -> Sequence[Any]:
        if self.server.skills is not None and uri in self.server.skills.files:
            return [self.server.skills.files[uri]]  # a SkillFile: mime_type and content
        mime, fn = self.server.resources[uri]
        return [SimpleNamespace(mime_type=mime, content=fn())]

    async def report_progress(self, progress: float, total: float, message: str) -> None:
        self.server.progress.append((progress, total, message))


class ToyAdapter(Adapter):
    name = "toy"

    def recognises(self, obj: Any) -> bool:
        return isinstance(obj, ToyServer)

    def run_sync(self, fn: Callable[[], Awaitable[Any]]) -> Any:
        return anyio.run(fn)

    async def listing(self, server: ToyServer) -> Listing:
        return Listing(tools={n: t["input_schema"] for n, t in server.tools.items()}, templates=list(server.templates),
                       resources=list(server.resources), prompts=set(server.prompts))

    def add_extension(self, server: ToyServer, ext: Any, listing: Listing) -> Any:
        server.skills = ext.tree
        return ext

    def workflow_prompt(self, wf: Any, replay: Any) -> ToyPrompt:
        async def render(server: ToyServer, arguments: dict[str, Any]) -> list[tuple[str, str]]:
            return [(t.role, t.text) for t in await run_workflow(wf, arguments, ToyHost(server))]
        return ToyPrompt(wf.name, render)

    def bootstrap_prompt(self, skill: Any) -> ToyPrompt:
        async def render(server: ToyServer, arguments: dict[str, Any]) -> list[tuple[str, str]]:
            return [("user", bootstrap.render(skill))]
        return ToyPrompt(bootstrap.bootstrap_name(skill), render)

    def add_prompts(self, server: ToyServer, prompts: Sequence[ToyPrompt]) -> None:
        server.prompts.update((p.name, p) for p in prompts)

    def add_skill_tools(self, server: ToyServer, tree: Any) -> SkillTools:
        tools = SkillTools(tree)
        for fn, name in zip(functions(tools, ValueError), (LOAD_SKILL, READ_SKILL_FILE)):
            self.add_tool(server, fn, name=name, description="", annotations=None)  # type: ignore[arg-type]
        return tools

    def add_tool(self, server: ToyServer, fn: Callable[..., Any], *, name: str, description: str, annotations: Any,
                 text_only: bool = False, host: bool = False) -> None:
        if host:
            fn = with_host(fn, lambda kwargs: ToyHost(server))
        server.tools[name] = {"fn": fn, "input_schema": _input_schema(fn), "description": description}

    def add_resource(self, server: ToyServer, uri: str, fn: Callable[..., Any], *, name: str, mime_type: str,
                     description: str) -> None:
        (server.templates if "{" in uri else server.resources)[uri] = (mime_type, fn)

    def make_server(self, name: str, *, version: str, instructions: str, page_size: int) -> ToyServer:
        return ToyServer(name)

    def run_stdio(self, server: ToyServer, max_line_bytes: int | None = None) -> None:
        server.ran.append(("stdio", max_line_bytes))
        RAN.append(server)

    async def serve_http(self, server: ToyServer, **kwargs: Any) -> None:  # type: ignore[override]
        server.ran.append(("http", kwargs))


ADAPTER = ToyAdapter()
RAN: list[ToyServer] = []


@pytest.fixture
def toy(monkeypatch):
    """The toy framework, registered for one test: the registry line a third framework adds."""
    monkeypatch.setitem(adapters.REGISTRY, "toy", adapters.Entry(
        "toy", __name__, requires=__name__, label="Toy", a_server="a toy server", server_class=f"{__name__}.ToyServer",
        extra="toy"))
    assert sys.modules[__name__].ADAPTER is ADAPTER
    RAN.clear()
    return ADAPTER


def test_a_registered_framework_is_offered_by_every_framework_choice(toy, tmp_path, capsys):
    from projector.matrix import cli as matrix_cli
    from projector.server.cli import parser

    assert adapters.names() == ("mcp", "fastmcp", "toy")
    assert parser("serve").parse_args(["--framework", "toy"]).framework == "toy"
    # the matrix takes it too: it gets past the choices to the missing tree
    assert matrix_cli.main("matrix", ["--root", str(tmp_path), "--framework", "toy"]) == 2
    assert "skills.json is missing" in capsys.readouterr().err
    assert adapters.missing("toy") is None


def test_attach_recognises_a_registered_framework_and_names_it_when_refusing(toy):
    server = ToyServer("shop")
    assert adapters.for_server(server) is toy
    with pytest.raises(TypeError) as info:
        attach(object(), SKILLS, WORKFLOWS)
    message = str(info.value)
    assert "mcp.server.mcpserver.MCPServer" in message and "fastmcp.FastMCP" in message
    assert f"or a toy server ({__name__}.ToyServer, with the project-skill[toy] extra), not builtins.object" in message


def test_the_demo_and_its_workflow_prompts_run_on_a_registered_framework(toy):
    from projector.server.demo import demo_server

    server, store = demo_server(SKILLS, WORKFLOWS, framework="toy", skill_tools=True)
    assert isinstance(server, ToyServer) and server.skills is not None
    assert {"refund_flow", "hello_world", "code_mode", "skill.refund-flow"} <= set(server.prompts)
    assert {"greet", "issue_refund", LOAD_SKILL, READ_SKILL_FILE} <= set(server.tools)

    turns = anyio.run(server.prompts["hello_world"].render, server, {"name": "Ada"})
    assert turns[0][0] == "user" and turns[0][1].startswith("Run the workflow `hello_world`")
    assert ("user", 'Result of `greet` (saved as `greeting`):\n```json\n"Hello, Ada!"\n```') in turns
    assert turns[-1] == ("assistant", "Done: all 1 step of `hello_world` ran on the server.")
    assert server.progress == [(1, 1, "step 1 of 1: greet")]
    [(role, text)] = anyio.run(server.prompts["skill.refund-flow"].render, server, {})
    assert role == "user" and bootstrap.parse(text)["skill://refund-flow/SKILL.md"] == \
        (SKILLS / "refund-flow" / "SKILL.md").read_bytes()


def test_the_matrix_agent_gets_a_host_on_a_registered_framework_and_refuses_to_run_unverified(toy, tmp_path):
    """The agent's tool is added through the adapter (it gets a host), but the agent composes each run from a lock
    made at set-up over projector's verifying client, in process. The toy speaks no MCP, so its adapter keeps the
    default ``in_process``: the set-up is refused, and so is a run, before its loop."""
    from projector.matrix.agent import AGENT_TOOL, make_lock, register_agent
    from projector.server.demo import demo_server

    server, _ = demo_server(SKILLS, WORKFLOWS, framework="toy")
    lock = tmp_path / "skills.lock"
    register_agent(server, lock=lock)
    assert server.tools[AGENT_TOOL]["input_schema"]["required"] == ["skill", "arguments"]
    with pytest.raises(TypeError, match="cannot connect to a toy server in process"):
        anyio.run(make_lock, server, lock)
    with pytest.raises(TypeError, match="cannot connect to a toy server in process"):
        anyio.run(lambda: server.tools[AGENT_TOOL]["fn"](skill="hello-world", arguments={"name": "Ada"}))


@pytest.mark.slow
def test_serve_runs_a_registered_framework(toy, capsys):
    from projector.server.cli import main

    assert main("serve", ["--framework", "toy", "--skills", str(SKILLS), "--workflows", str(WORKFLOWS)]) == 0
    assert "serving MCP on stdio (toy)" in capsys.readouterr().err
    [server] = RAN
    assert server.ran == [("stdio", 4 * 1024 * 1024)] and "refund_flow" in server.prompts
