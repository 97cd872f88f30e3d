"""Skills bound to their tools (issue 33), through real clients: a caller is served only the skills whose tools it
can see (the framework's own ``tools/list`` for that caller), and a client that declared the skills extension is not
offered ``load_skill`` and ``read_skill_file`` too."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from fastmcp import Client as FastMCPClient
from fastmcp import Context, FastMCP
from fastmcp.skills import SkillsClientExtension
from mcp import Client
from mcp.client.extension import ClientExtension
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter

from projector.server import attach, serve_http_async
from projector.server.demo import add_demo_tools

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
SKILLS = ROOT / "generated_skills"
WORKFLOWS = ROOT / "workflows"
MANIFEST = {e["uri"]: e for e in json.loads((SKILLS / "skills.json").read_text("utf-8"))["skills"]}
RAW = TypeAdapter(dict[str, Any])
REFUND = {u for u, e in MANIFEST.items() if "issue_refund" in e["frontmatter"]["metadata"]["tools"].split()}
OTHERS = set(MANIFEST) - REFUND


async def call(session: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return await session.send_request(types.Request[dict[str, Any] | None, str](method=method, params=params or {}),
                                      RAW)


async def catalog(session: Any) -> dict[str, Any]:
    """What a caller sees: skills/list, every skills/get and resources/read of the whole manifest (None: refused as
    unknown, -32602), the prompts and the tools."""
    listed = {e["uri"]: e for e in (await call(session, "skills/list"))["skills"]}
    got, read = {}, {}
    for uri, entry in MANIFEST.items():
        try:
            got[uri] = (await call(session, "skills/get", {"uri": uri}))["skill"]
        except MCPError as exc:
            assert exc.code == types.INVALID_PARAMS
            got[uri] = None
        for r in entry["resources"]:
            try:
                read[r["uri"]] = (await call(session, "resources/read", {"uri": r["uri"]}))["contents"][0]
            except MCPError as exc:
                assert exc.code == types.INVALID_PARAMS
                read[r["uri"]] = None
    prompts = {p["name"] for p in (await call(session, "prompts/list"))["prompts"]}
    tools = {t["name"]: t for t in (await call(session, "tools/list"))["tools"]}
    return {"listed": listed, "got": got, "read": read, "prompts": prompts, "tools": tools}


def check_refund_hidden(seen: dict[str, Any], whole: dict[str, Any]) -> None:
    assert set(seen["listed"]) == OTHERS
    assert all(seen["got"][u] is None for u in REFUND)
    assert all(seen["read"][r["uri"]] is None for u in REFUND for r in MANIFEST[u]["resources"])
    # every other skill byte-equal
    assert {u: seen["got"][u] for u in OTHERS} == {u: whole["got"][u] for u in OTHERS}
    assert {k: v for k, v in seen["read"].items() if v is not None} == \
        {k: v for k, v in whole["read"].items() if not any(k.startswith(u[:-len("SKILL.md")]) for u in REFUND)}
    for gone in ("refund_flow", "refund_flow_gated", "skill.refund-flow", "skill.refund-flow-gated"):
        assert gone in whole["prompts"] and gone not in seen["prompts"]
    assert "hello_world" in seen["prompts"] and "skill.hello-world" in seen["prompts"]
    assert "refund_flow" in whole["tools"] and "refund_flow" not in seen["tools"]
    load = seen["tools"]["load_skill"]["description"]
    assert "- refund-flow:" in whole["tools"]["load_skill"]["description"]
    assert "- refund-flow:" not in load and "- hello-world:" in load


def mcp_server(hide: set[str]) -> MCPServer:
    """The demo's tools on MCPServer, with a middleware that does not show the tools ``hide`` to any caller."""
    server = MCPServer("shop")
    add_demo_tools(server)

    async def not_shown(ctx: Any, call_next: Any) -> Any:
        result = await call_next(ctx)
        if ctx.method == "tools/list" and hide:
            result = {**result, "tools": [t for t in result["tools"] if t["name"] not in hide]}
        return result

    server.middleware.append(not_shown)
    attach(server, SKILLS, WORKFLOWS, skill_tools=True, workflow_tools=True)
    return server


async def test_mcpserver_serves_no_skill_whose_tool_the_caller_is_not_shown():
    async with Client(mcp_server(set())) as client:
        whole = await catalog(client.session)
    async with Client(mcp_server({"issue_refund"})) as client:
        seen = await catalog(client.session)
    assert set(whole["listed"]) == set(MANIFEST) and all(v is not None for v in whole["read"].values())
    check_refund_hidden(seen, whole)


def fastmcp_server() -> FastMCP:
    server = FastMCP("shop")
    add_demo_tools(server)

    @server.tool
    async def hide_refunds(ctx: Context) -> str:
        """Hide issue_refund for this session only."""
        await ctx.disable_components(names={"issue_refund"}, components={"tool"})
        return "hidden"

    attach(server, SKILLS, WORKFLOWS, skill_tools=True, workflow_tools=True)
    return server


async def test_fastmcp_disabled_tool_hides_its_skills_and_enabled_again_shows_them():
    server = fastmcp_server()
    async with FastMCPClient(server) as client:
        whole = await catalog(client.session)
        server.disable(names={"issue_refund"}, components={"tool"})
        seen = await catalog(client.session)
        server.enable(names={"issue_refund"}, components={"tool"})
        again = await catalog(client.session)
    assert set(whole["listed"]) == set(MANIFEST)
    check_refund_hidden(seen, whole)
    assert again == whole


async def test_fastmcp_a_tool_hidden_for_the_session_hides_its_skills_from_that_session():
    """Per-session visibility (``ctx.disable_components``): each client's catalog follows its own tools/list. (Two
    in-memory clients of one FastMCP server share FastMCP's session state, so both see the hidden tool hidden.)"""
    server = fastmcp_server()
    async with FastMCPClient(server) as one:
        before = await catalog(one.session)
        await one.call_tool("hide_refunds", {})
        after = await catalog(one.session)
        names = {t.name for t in await one.list_tools()}
    assert set(before["listed"]) == set(MANIFEST) and "issue_refund" not in names
    check_refund_hidden(after, before)


class Skills(ClientExtension):
    identifier = "io.modelcontextprotocol/skills"


@pytest.mark.parametrize("framework", ["mcp", "fastmcp"])
async def test_a_client_that_declared_the_skills_extension_is_not_offered_the_skill_tools(framework):
    server: Any = MCPServer("shop") if framework == "mcp" else FastMCP("shop")
    add_demo_tools(server)
    attach(server, SKILLS, WORKFLOWS, skill_tools=True)
    if framework == "mcp":
        async with Client(server) as plain, Client(server, extensions=[Skills()]) as reader:
            offered = {t.name for t in (await plain.list_tools()).tools}
            declared = {t.name for t in (await reader.list_tools()).tools}
    else:
        async with FastMCPClient(server) as plain, \
                FastMCPClient(server, extensions=[SkillsClientExtension()]) as reader:
            offered = {t.name for t in await plain.list_tools()}
            declared = {t.name for t in await reader.list_tools()}
    assert {"load_skill", "read_skill_file"} <= offered
    assert not {"load_skill", "read_skill_file"} & declared
    assert offered - declared == {"load_skill", "read_skill_file"}


async def _listening(port: int) -> None:
    with anyio.fail_after(60):
        while True:
            try:
                await (await anyio.connect_tcp("127.0.0.1", port)).aclose()
                return
            except OSError:
                await anyio.sleep(0.1)


@pytest.mark.slow
async def test_fastmcp_two_http_sessions_each_see_the_catalog_of_their_own_tools():
    """Per session, for real: two clients of one FastMCP server over Streamable HTTP, each in a session of its own
    (the handshake era, stateful: on the 2026-07-28 wire an HTTP connection has no session, and FastMCP refuses
    session rules without authentication), one hides issue_refund for its own session (``ctx.disable_components``);
    that one no longer sees the refund skills, their prompts and workflow tool, while the other sees the whole
    catalog."""
    from .test_http import free_port

    server, port = fastmcp_server(), free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    async with anyio.create_task_group() as tg:
        tg.start_soon(partial(serve_http_async, server, "127.0.0.1", port, stateless=False))
        await _listening(port)
        async with FastMCPClient(url, mode="legacy") as one, FastMCPClient(url, mode="legacy") as two:
            whole = await catalog(one.session)
            await one.call_tool("hide_refunds", {})
            hidden = await catalog(one.session)
            other = await catalog(two.session)
            names = {t.name for t in await one.list_tools()}
        tg.cancel_scope.cancel()
    assert set(whole["listed"]) == set(MANIFEST) and "issue_refund" not in names
    check_refund_hidden(hidden, whole)
    assert other == whole


async def _three_callers(server: FastMCP) -> dict[str, set[str]]:
    """The skills listed to A (sees every tool), B (``issue_refund`` disabled), and C (declares the extension)."""
    async with FastMCPClient(server) as a:
        seen = {"A": {e["uri"] for e in (await call(a.session, "skills/list"))["skills"]}}
    server.disable(names={"issue_refund"}, components={"tool"})
    try:
        async with FastMCPClient(server) as b:
            seen["B"] = {e["uri"] for e in (await call(b.session, "skills/list"))["skills"]}
            seen["B tools"] = {t.name for t in await b.list_tools()}
    finally:
        server.enable(names={"issue_refund"}, components={"tool"})
    async with FastMCPClient(server, extensions=[SkillsClientExtension()]) as c:
        seen["C"] = {e["uri"] for e in (await call(c.session, "skills/list"))["skills"]}
        seen["C tools"] = {t.name for t in await c.list_tools()}
    return seen


@pytest.mark.slow
async def test_the_three_callers_of_the_docs_table_on_fastmcps_own_skills_provider_and_on_projector():
    """The table in docs/serving.md, "Skills bound to their tools", measured: the same skills (generated_skills/)
    served by FastMCP's own ``SkillsDirectoryProvider`` and by :func:`attach`, on a FastMCP server with the demo's
    tools. FastMCP's provider lists every skill to B, whose ``issue_refund`` is disabled (it checks the files'
    visibility and authorization, not the tools a skill calls); projector leaves the refund skills out. Neither
    offers a declaring client C less than A: projector's skill tools only are withheld from it."""
    from fastmcp.skills.provider import SkillsDirectoryProvider

    provider = FastMCP("shop")
    add_demo_tools(provider)
    provider.add_provider(SkillsDirectoryProvider(SKILLS))
    ours = FastMCP("shop")
    add_demo_tools(ours)
    attach(ours, SKILLS, WORKFLOWS, skill_tools=True)
    theirs, mine = await _three_callers(provider), await _three_callers(ours)
    assert theirs["A"] == theirs["B"] == theirs["C"] == set(MANIFEST)
    assert "issue_refund" not in theirs["B tools"]
    assert mine["A"] == mine["C"] == set(MANIFEST) and mine["B"] == OTHERS
    assert "load_skill" in mine["B tools"] and "load_skill" not in mine["C tools"]
