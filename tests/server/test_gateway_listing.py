"""What the gateway (``serve --upstream``) lists of the upstream's tools, and what follows when the upstream changes
them (issue 38, items 2 and 3), driven through a real client over the wire.

- Each forwarded tool is the upstream's ``tools/list`` entry, field for field (``execution``, ``title``, ``_meta``,
  schemas and annotations): compared as JSON with the upstream's own listing, on both frameworks, in front of
  ``@modelcontextprotocol/server-everything`` (npm, TypeScript SDK) and ``mcp-server-sqlite`` (PyPI, ``mcp`` 1.x),
  and before and after a list change (an ``mcp`` 2.x upstream written here, and an ``mcp`` 1.x one).
- After the upstream changes a tool, the gateway lists it as it is now, the workflows whose steps no longer fit it
  (a read-only step now destructive, arguments the new schema refuses) are withdrawn with their prompt, tool and
  skill until they fit again, and a client listening for changes is told.

All slow: each starts the upstream as a subprocess."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter

from projector.server import gateway
from projector.server.adapters import for_server
from tests.conftest import ROOT
from tests.server.test_gateway import FRAMEWORKS, _stdio, workflows

pytestmark = pytest.mark.slow

CHANGING = Path(__file__).parent / "gateway" / "changing_upstream.py"
HIDING_V1 = Path(__file__).parent / "gateway" / "hiding_upstream_v1.py"
LEGACY_LISTENER = Path(__file__).parent / "gateway" / "legacy_listener.py"
CHECK_ORDER = """
name: check_order
description: Look an order up.
arguments:
  - {name: order_id, description: The order, required: true, type: string}
steps:
  - name: look
    tool: lookup
    args: {order_id: {arg: order_id}}
"""


async def request(client: Client, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """``method`` as the server answers it on the wire, as JSON."""
    req = mcp_types.Request[dict[str, Any] | None, str](method=method, params=params or {})
    return await client.session.send_request(req, TypeAdapter(dict[str, Any]))


async def listed(client: Client) -> list[dict[str, Any]]:
    """Every page of ``tools/list``, as JSON."""
    tools, cursor = [], None
    for _ in range(100):
        page = await request(client, "tools/list", {"cursor": cursor} if cursor else {})
        tools += page["tools"]
        cursor = page.get("nextCursor")
        if cursor is None:
            return tools
    raise AssertionError("tools/list did not end")


def by_name(tools: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in tools}


def forwarded(ours: list[dict[str, Any]], upstream: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The gateway's entries of the upstream's tools, by name (as ``by_name(upstream)`` has them)."""
    return {t["name"]: t for t in ours if t["name"] in by_name(upstream)}


async def until(client: Client, done: Callable[[list[dict[str, Any]]], bool]) -> list[dict[str, Any]]:
    """The gateway's listing once ``done(listing)``, waited for a bounded time."""
    with anyio.fail_after(30):
        while not done(tools := await listed(client)):
            await anyio.sleep(0.05)
    return tools


def python_command(script: Path, python: str = sys.executable) -> str:
    return f"{shlex.quote(python)} {shlex.quote(str(script))}"


# -------------------------------------------------------------------------- every field, as the upstream lists it


async def _direct_and_through(command: str, framework: str) -> tuple[list[dict], list[dict]]:
    async with Client(_stdio(command)) as direct:
        upstream = await listed(direct)
    async with gateway(command, None, None, framework=framework) as server:
        async with Client(for_server(server).in_process(server), cache=None) as client:
            names = {t["name"] for t in upstream}
            # the upstream may register tools after the handshake and say so; the gateway follows
            ours = await until(client, lambda tools: names <= {t["name"] for t in tools})
    return upstream, ours


def _reference(which: str, folder: Path) -> str:
    from tests.remote.upstreams import everything_command, sqlite_command

    return everything_command() if which == "everything" else sqlite_command(folder / "shop.db")


@pytest.mark.parametrize("which", ["everything", "sqlite"])
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_forwarded_tool_is_listed_as_the_upstream_lists_it(tmp_path, framework, which):
    """Issue 38 item 3: on 006a534, 0 of server-everything's 13 tools were listed as it lists them (``execution``
    dropped from each, so its task-only tool looked like a plain one; MCPServer's key order; FastMCP's
    ``_meta.fastmcp.tags`` and default title added). Now the JSON of each forwarded tool equals the upstream's, its
    keys in the upstream's order, and the gateway forwards all of them."""
    upstream, ours = anyio.run(_direct_and_through, _reference(which, tmp_path), framework)
    assert upstream and forwarded(ours, upstream) == by_name(upstream)
    assert [list(t) for t in forwarded(ours, upstream).values()] == [list(t) for t in by_name(upstream).values()]
    if which == "everything":
        assert any(t.get("execution", {}).get("taskSupport") == "required" for t in ours)


async def _before_and_after(command: str, framework: str, change: tuple[str, dict], undo: tuple[str, dict]) -> dict:
    seen: dict[str, list[dict]] = {}
    async with Client(_stdio(command)) as direct:
        seen["upstream before"] = await listed(direct)
        await direct.call_tool(*change)
        seen["upstream after"] = await listed(direct)
    async with gateway(command, None, None, framework=framework) as server:
        async with Client(for_server(server).in_process(server), cache=None) as client:
            seen["before"] = await listed(client)
            await client.call_tool(*change)
            seen["after"] = await until(client, lambda tools: tools != seen["before"])
            await client.call_tool(*undo)
            seen["again"] = await until(client, lambda tools: tools == seen["before"])
    return seen


@pytest.mark.parametrize(
    ("script", "change", "undo"),
    [
        (CHANGING, ("change", {"how": "both"}), ("restore", {})),
        (CHANGING, ("change", {"how": "added"}), ("restore", {})),
        (HIDING_V1, ("hide", {"name": "issue_refund"}), ("show", {"name": "issue_refund"})),
    ],
    ids=["mcp-2", "mcp-2-added", "mcp-1"],
)
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_after_a_list_change_each_forwarded_tool_is_listed_as_the_upstream_lists_it_now(
    framework, script, change, undo
):
    """Issue 38 item 2: on 006a534 only the set of names was refreshed after ``tools/list_changed``, so a tool the
    upstream made destructive, with a new description and a new required parameter, kept its start-up entry. Now
    the gateway's listing of the upstream's tools equals the upstream's own, before the change, after it, and after
    it is undone; on an ``mcp`` 2.x upstream (2026-07-28) and an ``mcp`` 1.x one (handshake, notifications)."""
    python = sys.executable
    if script == HIDING_V1:
        from tests.remote.upstreams import installed

        python = str(installed()["sqlite"].parent / "python")  # mcp 1.x, in the reference SQLite server's venv
    seen = anyio.run(_before_and_after, python_command(script, python), framework, change, undo)
    assert seen["upstream before"] != seen["upstream after"]
    both = seen["upstream before"] + seen["upstream after"]
    assert forwarded(seen["before"], both) == by_name(seen["upstream before"])
    assert forwarded(seen["after"], both) == by_name(seen["upstream after"])
    assert seen["again"] == seen["before"]


# --------------------------------------------------------------------- a workflow that no longer fits is withdrawn


async def _catalog(client: Client) -> dict[str, Any]:
    async def prompt_runs() -> bool:
        try:
            await client.get_prompt("check_order", {"order_id": "A1"})
        except MCPError:
            return False
        return True

    tools = {t["name"]: t for t in await listed(client)}
    return {
        "tools": tools,
        "prompts": sorted(p.name for p in (await client.list_prompts()).prompts),
        "skills": sorted(s["uri"] for s in (await request(client, "skills/list"))["skills"]),
        "prompt runs": await prompt_runs(),
        "tool runs": not (await client.call_tool("check_order", {"order_id": "A1"})).is_error,
    }


def _lookup_is(how: str) -> Callable[[list[dict[str, Any]]], bool]:
    def done(tools: list[dict[str, Any]]) -> bool:
        lookup = next(t for t in tools if t["name"] == "lookup")
        destructive = lookup.get("annotations", {}).get("destructiveHint") is True
        required = "reason" in lookup["inputSchema"].get("required", [])
        return (destructive, required) == {
            "": (False, False),
            "destructive": (True, False),
            "required": (False, True),
            "both": (True, True),
        }[how]

    return done


async def _withdrawn_and_back(framework: str, skills: Path, wfs: Path, how: str, listen: bool) -> tuple:
    command = python_command(CHANGING)
    async with gateway(command, skills, wfs, framework=framework, workflow_tools=True) as server:
        async with Client(for_server(server).in_process(server), cache=None) as client:
            whole = await _catalog(client)
            told = anyio.Event()

            async def hear() -> None:
                async with client.listen(tools_list_changed=True) as events:
                    async for _ in events:
                        told.set()
                        return

            async with anyio.create_task_group() as tg:
                if listen:
                    tg.start_soon(hear)
                    await anyio.sleep(0.2)  # the stream is open before the change
                await client.call_tool("change", {"how": how})
                await until(client, _lookup_is(how))
                changed = await _catalog(client)
                # the upstream's tool itself, as it is now, is still called through the gateway
                changed["lookup runs"] = not (
                    await client.call_tool("lookup", {"order_id": "A1", "reason": "audit"})
                ).is_error
                if listen:
                    with anyio.fail_after(30):
                        await told.wait()
                tg.cancel_scope.cancel()
            await client.call_tool("restore", {})
            await until(client, _lookup_is(""))
            again = await _catalog(client)
    return whole, changed, again


@pytest.mark.parametrize(
    ("framework", "how"),
    [("mcp", "both"), ("fastmcp", "both"), ("mcp", "destructive"), ("mcp", "required")],
)
def test_a_workflow_whose_step_no_longer_fits_is_withdrawn_until_it_fits_again(cli, tmp_path, framework, how):
    """Issue 38 item 2: on 006a534 a workflow whose read-only step the upstream made destructive (or gave a new
    required parameter) stayed served as it was, its workflow tool still ``readOnlyHint: true``, and ran the step
    with no question. Now its prompt, its workflow tool and its skill are withdrawn while the step does not fit by
    the start-up rules, and back as they were once the upstream lists the tool as at first; a client listening for
    changes (2026-07-28, on MCPServer, which serves ``subscriptions/listen``) is told."""
    wfs = workflows(tmp_path, CHECK_ORDER)
    skills = tmp_path / "skills"
    built = cli("build", str(wfs), "--tools-from", python_command(CHANGING), "--workflow-tools", "--out", str(skills))
    assert built.code == 0, built.err
    whole, changed, again = anyio.run(_withdrawn_and_back, framework, skills, wfs, how, framework == "mcp")
    skill = "skill://check-order/SKILL.md"
    assert whole["tools"]["check_order"]["annotations"]["readOnlyHint"] is True
    assert {"check_order", "skill.check-order"} <= set(whole["prompts"]) and skill in whole["skills"]
    assert whole["prompt runs"] and whole["tool runs"]
    assert "check_order" not in changed["tools"] and "lookup" in changed["tools"]
    assert not {"check_order", "skill.check-order"} & set(changed["prompts"])
    assert skill not in changed["skills"]
    assert not changed["prompt runs"] and not changed["tool runs"] and changed["lookup runs"]
    assert again == whole


async def _call_added(framework: str) -> list[Any]:
    async with gateway(python_command(CHANGING), None, None, framework=framework) as server:
        async with Client(for_server(server).in_process(server), cache=None) as client:
            await client.call_tool("change", {"how": "added"})
            await until(client, lambda tools: "archive" in by_name(tools))
            added = await client.call_tool("archive", {"order_id": "A1"})
            await client.call_tool("restore", {})
            await until(client, lambda tools: "archive" not in by_name(tools))
            try:
                gone = await client.call_tool("archive", {"order_id": "A1"})
            except MCPError as exc:
                gone = exc
    return [added, gone]


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_tool_the_upstream_lists_after_start_is_forwarded_while_it_lists_it(framework):
    """Issue 38 item 2: on 006a534 a tool the upstream listed only after the gateway started was never listed nor
    callable through it. Now it is listed as the upstream lists it, its calls go upstream, and once the upstream no
    longer lists it the gateway does not know it."""
    added, gone = anyio.run(_call_added, framework)
    assert not added.is_error and added.content[0].text == "archived A1"
    assert isinstance(gone, MCPError) or gone.is_error


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_handshake_era_client_is_told_when_the_upstream_changes_its_tools(cli, tmp_path, framework):
    """Issue 38 item 2: clients get ``list_changed``. A client of the handshake era (``mcp`` 1.x), connected to
    ``project-skill serve --upstream`` over stdio, hears ``notifications/tools/list_changed`` and
    ``prompts/list_changed`` once the upstream changed ``lookup`` and the gateway withdrew the workflow; on 006a534 it
    heard nothing."""
    from tests.remote.upstreams import installed

    wfs = workflows(tmp_path, CHECK_ORDER)
    skills = tmp_path / "skills"
    built = cli("build", str(wfs), "--tools-from", python_command(CHANGING), "--workflow-tools", "--out", str(skills))
    assert built.code == 0, built.err
    serve = [
        sys.executable,
        "-m",
        "projector.cli",
        "serve",
        "--upstream",
        python_command(CHANGING),
        "--workflows",
        str(wfs),
        "--skills",
        str(skills),
        "--workflow-tools",
        "--framework",
        framework,
    ]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    python = str(installed()["sqlite"].parent / "python")  # mcp 1.x
    run = subprocess.run(
        [python, str(LEGACY_LISTENER), json.dumps(serve), json.dumps(env), "both"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
    )
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout)
    assert {"notifications/tools/list_changed", "notifications/prompts/list_changed"} <= set(seen["heard"])
    assert "check_order" in seen["tools before"] and "check_order" not in seen["tools after"]
    assert "check_order" in seen["prompts before"] and "check_order" not in seen["prompts after"]
