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

from projector.server import AttachError, attach, serve_http_async
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
    return await session.send_request(
        types.Request[dict[str, Any] | None, str](method=method, params=params or {}), RAW
    )


async def catalog(session: Any, manifest: dict[str, Any] = MANIFEST) -> dict[str, Any]:
    """What a caller sees: skills/list, every skills/get and resources/read of the whole manifest (None: refused as
    unknown, -32602), the prompts and the tools."""
    listed = {e["uri"]: e for e in (await call(session, "skills/list"))["skills"]}
    got, read = {}, {}
    for uri, entry in manifest.items():
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
    assert {k: v for k, v in seen["read"].items() if v is not None} == {
        k: v for k, v in whole["read"].items() if not any(k.startswith(u[: -len("SKILL.md")]) for u in REFUND)
    }
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
        async with (
            FastMCPClient(server) as plain,
            FastMCPClient(server, extensions=[SkillsClientExtension()]) as reader,
        ):
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


# ------------------------------------------------------------------------------ tools the server does not have


def skills_only(cli: Any, tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """The workflows built with ``--skills-only`` (their SKILL.md names no prompt, ``metadata.tools`` as ever), and
    their manifest by URI."""
    out = tmp_path / "catalog"
    assert cli("build", str(WORKFLOWS), "--skills-only", "--out", str(out)).code == 0
    return out, {e["uri"]: e for e in json.loads((out / "skills.json").read_text("utf-8"))["skills"]}


@pytest.mark.parametrize("framework", ["mcp", "fastmcp"])
async def test_a_skills_catalog_without_their_tools_serves_every_skill(framework, cli, tmp_path):
    """A pure skills catalog (as ``serve --skills DIR``): the server has none of the tools the skills call, which
    live on another server. Every skill is listed, got and read, with its bootstrap prompt and in load_skill."""
    skills, manifest = skills_only(cli, tmp_path)
    assert all(e["frontmatter"]["metadata"]["tools"] for e in manifest.values())
    server: Any = MCPServer("catalog") if framework == "mcp" else FastMCP("catalog")
    attach(server, skills, None, skill_tools=True)
    client = Client(server) if framework == "mcp" else FastMCPClient(server)
    async with client:
        seen = await catalog(client.session, manifest)
    assert set(seen["listed"]) == set(manifest) and None not in seen["got"].values()
    files = {r["uri"]: r for e in manifest.values() for r in e["resources"]}
    assert set(seen["read"]) == set(files) and None not in seen["read"].values()
    assert {"skill." + uri.split("/")[2] for uri in manifest} <= seen["prompts"]
    load = seen["tools"]["load_skill"]["description"]
    assert all(f"- {uri.split('/')[2]}:" in load for uri in manifest)


def add_refund_tool(server: MCPServer, hidden: list[bool]) -> None:
    """Give ``server`` issue_refund, and a middleware that does not show it while ``hidden[0]``."""

    @server.tool()
    def issue_refund(order_id: str, amount: float) -> str:
        """Refund an order."""
        return "refunded"

    async def not_shown(ctx: Any, call_next: Any) -> Any:
        result = await call_next(ctx)
        if ctx.method == "tools/list" and hidden[0]:
            result = {**result, "tools": [t for t in result["tools"] if t["name"] != "issue_refund"]}
        return result

    server.middleware.append(not_shown)


async def test_only_a_tool_the_server_has_and_the_caller_cannot_see_hides_a_skill(cli, tmp_path):
    """The refund skills call issue_refund, which this server has, and two tools it does not have: they are
    served to a caller shown issue_refund, and hidden from one not shown it; the other skills, whose tools are all
    elsewhere, are served to both."""
    skills, manifest = skills_only(cli, tmp_path)
    refunds = {u for u, e in manifest.items() if "issue_refund" in e["frontmatter"]["metadata"]["tools"].split()}
    server, hidden = MCPServer("refunds"), [False]
    add_refund_tool(server, hidden)  # get_order and check_eligibility live elsewhere
    attach(server, skills, None)
    async with Client(server) as client:
        shown = await catalog(client.session, manifest)
        hidden[0] = True
        not_shown = await catalog(client.session, manifest)
    assert refunds and set(shown["listed"]) == set(manifest) and None not in shown["got"].values()
    assert set(not_shown["listed"]) == set(manifest) - refunds
    assert {u for u, got in not_shown["got"].items() if got is None} == refunds
    assert {"skill." + u.split("/")[2] for u in refunds} <= shown["prompts"] - not_shown["prompts"]


async def test_a_tool_added_after_attach_counts_once_a_caller_is_shown_it(cli, tmp_path):
    """The server "has" the tools it listed at attach time and every tool a caller has been shown since: a tool
    registered after attach and shown to no caller yet hides nothing; once one caller is shown it, a caller who
    is not loses the skills that call it."""
    skills, manifest = skills_only(cli, tmp_path)
    refunds = {u for u, e in manifest.items() if "issue_refund" in e["frontmatter"]["metadata"]["tools"].split()}
    server, hidden = MCPServer("late"), [True]
    attach(server, skills, None)
    add_refund_tool(server, hidden)
    async with Client(server) as client:
        before = await catalog(client.session, manifest)
        hidden[0] = False
        shown = await catalog(client.session, manifest)
        hidden[0] = True
        after = await catalog(client.session, manifest)
    assert set(before["listed"]) == set(shown["listed"]) == set(manifest)
    assert set(after["listed"]) == set(manifest) - refunds


@pytest.mark.parametrize("how", ["disabled", "authorized"])
async def test_fastmcp_a_tool_no_caller_is_shown_at_attach_still_hides_its_skills(how, cli, tmp_path):
    """FastMCP's own listing at attach leaves out a disabled tool, and one whose ``auth`` the (absent) caller
    fails; the server has them all the same, so a caller not shown issue_refund is not served the skills that call
    it, even before any caller has been shown it. Enabled again, the skills are back."""
    from fastmcp.server.auth import require_scopes

    skills, manifest = skills_only(cli, tmp_path)
    refunds = {u for u, e in manifest.items() if "issue_refund" in e["frontmatter"]["metadata"]["tools"].split()}
    server = FastMCP("refunds")

    @server.tool(auth=require_scopes("refunds") if how == "authorized" else None)
    def issue_refund(order_id: str, amount: float) -> str:
        """Refund an order."""
        return "refunded"

    if how == "disabled":
        server.disable(names={"issue_refund"}, components={"tool"})
    attach(server, skills, None)
    async with FastMCPClient(server) as client:
        seen = await catalog(client.session, manifest)
        if how == "disabled":
            server.enable(names={"issue_refund"}, components={"tool"})
            again = await catalog(client.session, manifest)
            assert set(again["listed"]) == set(manifest)
    assert refunds and "issue_refund" not in seen["tools"]
    assert set(seen["listed"]) == set(manifest) - refunds
    assert {u for u, got in seen["got"].items() if got is None} == refunds


# ------------------------------------------------------------------------------ a tool disabled at start-up


def shop_disabled() -> FastMCP:
    """Issue 33's own case, as its author writes it: a FastMCP shop whose factory disables issue_refund."""
    server = FastMCP("shop")
    add_demo_tools(server)
    server.disable(names={"issue_refund"})
    return server


async def test_fastmcp_a_tool_disabled_at_start_up_is_a_tool_the_server_has():
    """Issue 38, item 7: ``attach`` does not refuse the shipped workflows (``unknown-tool``) when the factory has
    disabled issue_refund; the skills, prompts and workflow tools that call it are hidden while it is, the others
    served, and all of them shown once it is enabled."""
    server = shop_disabled()
    attach(server, SKILLS, WORKFLOWS, skill_tools=True, workflow_tools=True)
    async with FastMCPClient(server) as client:
        seen = await catalog(client.session)
        server.enable(names={"issue_refund"})
        again = await catalog(client.session)
    assert set(again["listed"]) == set(MANIFEST) and "issue_refund" in again["tools"]
    assert "issue_refund" not in seen["tools"]
    check_refund_hidden(seen, again)


def test_fastmcp_the_steps_are_fitted_to_a_disabled_tool():
    """A disabled tool is checked as any other: a step whose arguments its schema refuses stops ``attach``."""
    server = FastMCP("shop")

    @server.tool
    def issue_refund(order: str, amount: float) -> str:  # `order_id` is called `order` here
        """Refund an order."""
        return "refunded"

    server.disable(names={"issue_refund"})
    with pytest.raises(AttachError) as info:
        attach(server, None, WORKFLOWS / "refunds.yaml")
    said = str(info.value)
    assert (
        "error[unknown-parameter]: step 'issue_refund' passes 'order_id', which is not a parameter of the "
        "tool 'issue_refund'" in said
    )
    assert "calls the tool 'issue_refund', which the server does not have" not in said


SHOP_DISABLED = '''\
"""Issue 33's shop: the demo's tools on FastMCP, issue_refund disabled at start-up; a session may open it."""
from fastmcp import Context, FastMCP

from projector.server.demo import add_demo_tools


def make():
    server = FastMCP("shop")
    add_demo_tools(server)
    server.disable(names={"issue_refund"})

    @server.tool
    async def open_refunds(ctx: Context) -> str:
        """Enable issue_refund for this session."""
        await ctx.enable_components(names={"issue_refund"}, components={"tool"})
        return "open"

    return server
'''


@pytest.mark.slow
async def test_serve_a_fastmcp_factory_that_disables_a_tool_starts_and_hides_what_needs_it(tmp_path):
    """``project-skill serve shop:make`` over stdio, the factory disabling issue_refund: it starts; the refund
    skills, prompts and workflow tool are hidden and the others served; once the session enables issue_refund the
    client is told the tools changed (FastMCP sends it) and sees them all."""
    import sys

    from fastmcp.client.transports import StdioTransport

    (tmp_path / "shop.py").write_text(SHOP_DISABLED, encoding="utf-8")
    changed: list[str] = []

    async def on_message(message: Any) -> None:
        root = getattr(message, "root", message)
        method = getattr(root, "method", None)
        if isinstance(method, str) and method.endswith("list_changed"):
            changed.append(method)

    transport = StdioTransport(
        command=str(Path(sys.executable).parent / "project-skill"),
        args=[
            "serve",
            "shop:make",
            "--skills",
            str(SKILLS),
            "--workflows",
            str(WORKFLOWS),
            "--skill-tools",
            "--workflow-tools",
        ],
        cwd=str(tmp_path),
        env={"PYTHONPATH": str(ROOT)},
    )  # this checkout's projector
    async with FastMCPClient(transport, message_handler=on_message) as client:
        seen = await catalog(client.session)
        await client.call_tool("open_refunds", {})
        again = await catalog(client.session)
    assert set(again["listed"]) == set(MANIFEST) and "issue_refund" in again["tools"]
    check_refund_hidden(seen, again)
    assert "notifications/tools/list_changed" in changed  # FastMCP's own, for the tools enabled
