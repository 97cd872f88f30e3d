"""Skills as tools (issue 19, item 4): ``attach(..., skill_tools=True)`` and ``project-skill serve --skill-tools``
add ``load_skill`` and ``read_skill_file``, read-only tools for hosts that call tools but never read resources.

Tested through real clients on both frameworks (mcp's ``Client`` in memory and over stdio, FastMCP's ``Client`` in
memory and over stdio): the bytes equal the committed ``generated_skills/`` files and ``resources/read``; anything
the manifest does not list is a tool error (``isError``), not a protocol error.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from fastmcp import Client as FastMCPClient
from fastmcp import FastMCP
from fastmcp.client.transports import StdioTransport
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.server.mcpserver import MCPServer

from projector.server import attach
from projector.server.demo import add_demo_tools, demo_server
from projector.server.errors import AttachError
from projector.server.skill_tools import LOAD_SKILL, MAX_LINE, MAX_LISTED, READ_SKILL_FILE, SkillTools
from projector.server.skills import SkillTree

ROOT = Path(__file__).resolve().parents[2]
SKILLS = ROOT / "generated_skills"
WORKFLOWS = ROOT / "workflows"
BAD = ROOT / "tests" / "bad_inputs"
BIN = Path(sys.executable).parent
FRAMEWORKS = ("mcp", "fastmcp")
NAMES = sorted(p.parent.name for p in SKILLS.glob("*/SKILL.md"))
REFUSED = ["skill://hello-world/../refund-flow/SKILL.md", "skill://nope/SKILL.md", "skill://hello-world/nope.md",
           "skill://hello-world/references", "references/tools.md", "file:///etc/passwd", ""]


def served(framework: str, skill_tools: bool = True, skills: Any = SKILLS) -> Any:
    server: Any = MCPServer("shop") if framework == "mcp" else FastMCP("shop")
    add_demo_tools(server)
    attach(server, skills, WORKFLOWS, skill_tools=skill_tools)
    return server


class Session:
    """One client over either framework's in-memory transport (mcp's Client for MCPServer, FastMCP's for FastMCP),
    or a stdio session: ``list_tools`` and ``call`` give the raw MCP results."""

    def __init__(self, client: Any, fastmcp: bool):
        self.client, self.fastmcp = client, fastmcp

    async def list_tools(self) -> list[types.Tool]:
        return list(await self.client.list_tools()) if self.fastmcp else (await self.client.list_tools()).tools

    async def call(self, name: str, args: dict[str, Any]) -> types.CallToolResult:
        if self.fastmcp:
            return await self.client.call_tool_mcp(name, args)
        return await self.client.call_tool(name, args)

    async def read(self, uri: str) -> Any:
        if self.fastmcp:
            return (await self.client.read_resource_mcp(uri)).contents
        return (await self.client.read_resource(uri)).contents


def client_for(server: Any) -> Any:
    return Client(server) if isinstance(server, MCPServer) else FastMCPClient(server)


def text_of(result: types.CallToolResult) -> str:
    assert len(result.content) == 1 and result.content[0].type == "text", result
    return result.content[0].text


@pytest.mark.anyio
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_load_skill_returns_the_committed_skill_md_bytes(framework):
    server = served(framework)
    async with client_for(server) as client:
        s = Session(client, framework == "fastmcp")
        for name in NAMES:
            result = await s.call(LOAD_SKILL, {"name": name})
            assert not result.is_error
            assert text_of(result).encode("utf-8") == (SKILLS / name / "SKILL.md").read_bytes()
            assert result.structured_content is None  # the bytes once, not twice
            # the same bytes resources/read serves
            (content,) = await s.read(f"skill://{name}/SKILL.md")
            assert content.text == text_of(result)


@pytest.mark.anyio
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_read_skill_file_returns_every_listed_file_byte_equal(framework):
    manifest = json.loads((SKILLS / "skills.json").read_text("utf-8"))["skills"]
    server = served(framework)
    async with client_for(server) as client:
        s = Session(client, framework == "fastmcp")
        seen = 0
        for entry in manifest:
            for r in entry["resources"]:
                result = await s.call(READ_SKILL_FILE, {"uri": r["uri"]})
                assert not result.is_error, result
                data = text_of(result).encode("utf-8")
                assert "sha256:" + hashlib.sha256(data).hexdigest() == r["digest"]
                assert data == (SKILLS / r["uri"][len("skill://"):]).read_bytes()
                seen += 1
        assert seen >= 8  # every shipped skill has SKILL.md and references/tools.md
        result = await s.call(READ_SKILL_FILE, {"uri": "skill://hello-world/references/tools.md"})
        assert text_of(result).encode() == (SKILLS / "hello-world" / "references" / "tools.md").read_bytes()


@pytest.mark.anyio
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_what_the_manifest_does_not_list_is_a_tool_error_not_a_protocol_error(framework):
    server = served(framework)
    async with client_for(server) as client:
        s = Session(client, framework == "fastmcp")
        for uri in REFUSED:
            result = await s.call(READ_SKILL_FILE, {"uri": uri})
            assert result.is_error, uri
            assert "not a file of a skill this server serves" in text_of(result), (uri, text_of(result))
        traversal = text_of(await s.call(READ_SKILL_FILE, {"uri": REFUSED[0]}))
        assert "'..'" in traversal  # says that dot segments are not resolved
        directory = text_of(await s.call(READ_SKILL_FILE, {"uri": "skill://hello-world/references"}))
        assert "a directory" in directory and "skill://hello-world/references/tools.md" in directory
        relative = text_of(await s.call(READ_SKILL_FILE, {"uri": "references/tools.md"}))
        assert "skill://hello-world/references/tools.md" in relative  # the full URI it probably means
        for name in ("nope", "hello-world/SKILL.md", "../hello-world", "hello_world"):
            result = await s.call(LOAD_SKILL, {"name": name})
            assert result.is_error, name
            assert f"no skill named {name!r}" in text_of(result)
        assert "hello-world" in text_of(await s.call(LOAD_SKILL, {"name": "hello_world"}))  # the closest name
        # the server keeps serving after every refusal
        assert not (await s.call(LOAD_SKILL, {"name": "hello-world"})).is_error


@pytest.mark.anyio
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_the_tools_are_read_only_and_their_descriptions_name_the_skills(framework):
    server = served(framework)
    manifest = json.loads((SKILLS / "skills.json").read_text("utf-8"))["skills"]
    async with client_for(server) as client:
        tools = {t.name: t for t in await Session(client, framework == "fastmcp").list_tools()}
    for name in (LOAD_SKILL, READ_SKILL_FILE):
        tool = tools[name]
        a = tool.annotations
        assert (a.read_only_hint, a.idempotent_hint, a.open_world_hint) == (True, True, False)
        assert a.destructive_hint is not True
        assert tool.output_schema is None
        assert tool.meta is None  # no FastMCP _meta.fastmcp block
        for entry in manifest:
            fm = entry["frontmatter"]
            assert f"- {fm['name']}: {fm['description']}" in tool.description
    assert tools[LOAD_SKILL].input_schema["required"] == ["name"]
    assert tools[READ_SKILL_FILE].input_schema["required"] == ["uri"]


@pytest.mark.anyio
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_off_by_default(framework):
    server: Any = MCPServer("shop") if framework == "mcp" else FastMCP("shop")
    add_demo_tools(server)
    attach(server, SKILLS, WORKFLOWS)
    async with client_for(server) as client:
        names = {t.name for t in await Session(client, framework == "fastmcp").list_tools()}
    assert names and not names & {LOAD_SKILL, READ_SKILL_FILE}


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("taken", [LOAD_SKILL, READ_SKILL_FILE])
def test_a_tool_of_the_same_name_is_a_clear_error_and_nothing_is_added(framework, taken):
    server: Any = MCPServer("shop") if framework == "mcp" else FastMCP("shop")
    add_demo_tools(server)

    def mine(name: str) -> str:
        return name

    (server.add_tool if framework == "mcp" else server.tool)(mine, name=taken, description="the author's own")
    with pytest.raises(AttachError) as info:
        attach(server, SKILLS, WORKFLOWS, skill_tools=True)
    (d,) = info.value.diagnostics
    assert d.code == "tool-collision"
    assert f"'{taken}'" in d.message and "skill_tools" in d.message
    # nothing was added: the same attach without the tools succeeds (no prompt is taken twice)
    attach(server, SKILLS, WORKFLOWS)


def test_skill_tools_without_skills_is_a_clear_error():
    server = MCPServer("shop")
    add_demo_tools(server)
    with pytest.raises(AttachError, match="skill_tools=True needs a skills tree"):
        attach(server, None, WORKFLOWS, skill_tools=True, workflow_prompts=False)


def _tree(tmp_path: Path, count: int, description: str = "Does a thing.", extra: dict[str, bytes] | None = None) -> Path:
    """A hand-built tree of ``count`` skills (s0, s1, ...) with a valid skills.json."""
    entries = []
    for i in range(count):
        name = f"s{i}"
        files = {"SKILL.md": f"---\nname: {name}\ndescription: {json.dumps(description)}\n---\n\n# {name}\n".encode()}
        if i == 0:
            files.update(extra or {})
        resources = []
        for rel, data in files.items():
            p = tmp_path / name / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)
            resources.append({"uri": f"skill://{name}/{rel}", "digest": "sha256:" + hashlib.sha256(data).hexdigest(),
                              "size": len(data)})
        entries.append({"uri": f"skill://{name}/SKILL.md", "type": "skill-md",
                        "frontmatter": {"name": name, "description": description}, "resources": resources})
    (tmp_path / "skills.json").write_text(json.dumps({"skills": entries}), encoding="utf-8")
    return tmp_path


@pytest.mark.slow
def test_descriptions_stay_bounded_for_a_large_tree(tmp_path):
    tools = SkillTools(SkillTree.load(_tree(tmp_path, 500, "x" * 1000)))
    for description in (tools.load_description(), tools.read_description()):
        lines = [line for line in description.splitlines() if line.startswith("- s")]
        assert len(lines) == MAX_LISTED
        assert all(len(line) <= MAX_LINE for line in lines)
        assert f"and {500 - MAX_LISTED} more" in description
        assert len(description) < (MAX_LISTED + 20) * MAX_LINE
    # a skill beyond the listed ones still loads
    assert tools.load_skill("s499").rel == "SKILL.md"


def test_a_description_with_more_than_one_line_is_named_by_its_first(tmp_path):
    tools = SkillTools(SkillTree.load(_tree(tmp_path, 1, "First line.\n  Second line.")))
    assert "- s0: First line.\n" in tools.load_description() + "\n"


@pytest.mark.anyio
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_a_file_that_is_not_utf8_comes_back_as_an_embedded_blob(tmp_path, framework):
    png = b"\x89PNG\r\n\x1a\n\x00\xff\xfe binary"
    root = _tree(tmp_path, 1, extra={"assets/logo.png": png})
    server: Any = MCPServer("bin") if framework == "mcp" else FastMCP("bin")
    attach(server, root, None, skill_tools=True)
    async with client_for(server) as client:
        result = await Session(client, framework == "fastmcp").call(READ_SKILL_FILE,
                                                                    {"uri": "skill://s0/assets/logo.png"})
    assert not result.is_error
    (block,) = result.content
    assert block.type == "resource"
    assert str(block.resource.uri) == "skill://s0/assets/logo.png"
    assert block.resource.mime_type == "image/png"
    assert base64.b64decode(block.resource.blob) == png


# -------------------------------------------------------------------------------------- the command line, stdio

async def _stdio_load(args: list[str], cwd: Path | None = None) -> tuple[str, bool]:
    params = StdioServerParameters(command=str(BIN / "project-skill"),
                                   args=["serve", *args, "--skills", str(SKILLS), "--workflows", str(WORKFLOWS)],
                                   cwd=str(cwd) if cwd else None)
    async with Client(stdio_client(params)) as client:
        result = await client.call_tool(LOAD_SKILL, {"name": "hello-world"})
        refused = await client.call_tool(READ_SKILL_FILE, {"uri": "skill://hello-world/../refund-flow/SKILL.md"})
    return text_of(result), bool(refused.is_error)


MINE = '''\
from mcp.server.mcpserver import MCPServer

from projector.server.demo import add_demo_tools

server = MCPServer("mine")
add_demo_tools(server)
'''


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("args", [["--skill-tools"], ["--skill-tools", "--framework", "fastmcp"], ["mine:server",
                                                                                                   "--skill-tools"]],
                         ids=["demo-mcp", "demo-fastmcp", "target"])
async def test_serve_skill_tools_over_stdio(tmp_path, args):
    (tmp_path / "mine.py").write_text(MINE, encoding="utf-8")
    text, refused = await _stdio_load(args, tmp_path)
    assert text.encode("utf-8") == (SKILLS / "hello-world" / "SKILL.md").read_bytes()
    assert refused


@pytest.mark.slow
@pytest.mark.anyio
async def test_fastmcp_client_over_stdio_loads_a_skill(tmp_path):
    transport = StdioTransport(command=str(BIN / "project-skill"),
                               args=["serve", "--skill-tools", "--framework", "fastmcp", "--skills", str(SKILLS),
                                     "--workflows", str(WORKFLOWS)], cwd=str(tmp_path))
    async with FastMCPClient(transport) as client:
        result = await client.call_tool_mcp(READ_SKILL_FILE, {"uri": "skill://refund-flow/references/tools.md"})
    assert text_of(result).encode() == (SKILLS / "refund-flow" / "references" / "tools.md").read_bytes()


def test_serve_a_target_that_has_load_skill_refuses_with_tool_collision(capsys, monkeypatch):
    """The bad-input case tests/bad_inputs/tool-collision.server.py: exit 1, ``tool-collision``, nothing served."""
    from projector.server.cli import main

    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    try:
        rc = main("serve", [str(BAD / "tool-collision.server.py") + ":server", "--skill-tools", "--skills",
                            str(SKILLS), "--workflows", str(WORKFLOWS)])
    finally:
        for name in set(sys.modules) - before:
            del sys.modules[name]
    err = capsys.readouterr().err
    assert rc == 1, err
    assert "tool-collision" in err and "'load_skill'" in err and "nothing is served" in err


def test_demo_server_takes_skill_tools():
    server, _ = demo_server(SKILLS, WORKFLOWS, skill_tools=True)
    import anyio

    async def names() -> set[str]:
        return {t.name for t in await server.list_tools()}

    assert {LOAD_SKILL, READ_SKILL_FILE} <= anyio.run(names)


def test_a_nested_skill_is_named_by_its_path_and_a_shared_name_is_refused(tmp_path):
    entries = []
    for path in ("team-a/x", "team-b/x", "team-b/y"):
        name = path.rsplit("/", 1)[-1]
        data = f"---\nname: {name}\ndescription: Skill {path}.\n---\n".encode()
        (tmp_path / path).mkdir(parents=True)
        (tmp_path / path / "SKILL.md").write_bytes(data)
        entries.append({"uri": f"skill://{path}/SKILL.md", "frontmatter": {"name": name, "description": f"Skill {path}."},
                        "resources": [{"uri": f"skill://{path}/SKILL.md", "size": len(data),
                                       "digest": "sha256:" + hashlib.sha256(data).hexdigest()}]})
    (tmp_path / "skills.json").write_text(json.dumps({"skills": entries}), encoding="utf-8")
    tools = SkillTools(SkillTree.load(tmp_path))
    assert tools.load_skill("team-b/x").uri == "skill://team-b/x/SKILL.md"
    assert tools.load_skill("y").uri == "skill://team-b/y/SKILL.md"  # a unique last segment is enough
    with pytest.raises(ValueError, match="shared by 2 skills; give one path: team-a/x, team-b/x"):
        tools.load_skill("x")
    assert "- team-a/x: Skill team-a/x." in tools.load_description()
