"""``attach()``'s start-up rules (:mod:`projector.server.attaching`). A served skill never names a workflow prompt that
the server does not offer: attach() raises and serve exits 1, naming the skill and the prompt; --skills-only bundles
name none and are served alone. For a person in the loop: a state key never silently replaces a server's own
request-state policy, and a state key (valid across processes and restarts) needs a replay guard that is too.

Driven through ``attach`` and a real ``Client`` in memory, and through ``project-skill serve`` in a real process;
``refund_flow_approved`` is the workflow with a ``confirm:`` step (tests/server/test_confirm.py drives it whole).
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.server.request_state import RequestStateSecurity
from mcp.shared.exceptions import MCPError

from conftest import ROOT
from projector.output import compile_paths, write
from projector.server import AttachError, attach
from projector.server.demo import add_demo_tools
from projector.server.cli import main
from projector.server.replay import MemoryGuard, SqliteGuard

from .test_confirm import FRAMEWORKS, PROMPT, YES, answer, first_round, ledger, start, target, texts
from .test_serve_skills import serve_args, stop

APPROVED = ROOT / "workflows" / "refunds-approved.yaml"
HELLO = ROOT / "workflows" / "hello-world.yaml"
ARGS = {"order_id": "A1001", "reason": "broken"}
SKILLS = ROOT / "generated_skills"
WORKFLOWS = ROOT / "workflows"
pytestmark = pytest.mark.anyio


def shop(framework: str, security: RequestStateSecurity | None = None) -> tuple[Any, Any]:
    """A server of the demo tools, built as its author builds it (with their own request-state policy, or none)."""
    policy = {"request_state_security": security} if security is not None else {}
    if framework == "mcp":
        from mcp.server.mcpserver import MCPServer

        server = MCPServer("shop", **policy)
    else:
        from fastmcp import FastMCP

        server = FastMCP("shop", **policy)
    store, _ = add_demo_tools(server)
    return server, store


async def prompts(server: Any, framework: str) -> list[str]:
    async with Client(target(server, framework)) as c:
        return [p.name for p in (await c.list_prompts()).prompts]


# ------------------------------------------------------------------------------------ the server's own policy

@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_a_state_key_never_replaces_the_servers_own_policy(framework, tmp_path, monkeypatch):
    """A server that seals with a 2-second expiry of its own, and a state key in the environment: refused, loudly,
    and nothing is added (before, the policy was swapped for mcp's 600 seconds under the key)."""
    monkeypatch.setenv("PROJECT_SKILL_STATE_KEY", secrets.token_hex(32))
    monkeypatch.setenv("PROJECT_SKILL_REPLAY_DB", str(tmp_path / "claims.db"))
    server, _ = shop(framework, RequestStateSecurity.ephemeral(ttl=2))
    with pytest.raises(AttachError) as raised:
        await attach_async(server)
    (d,) = raised.value.diagnostics
    assert d.code == "own-state-policy" and "PROJECT_SKILL_STATE_KEY" in d.message
    assert "RequestStateSecurity(keys=" in d.hint
    assert PROMPT not in await prompts(server, framework)


@pytest.mark.slow
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_a_policy_that_takes_the_key_is_kept_with_its_expiry(framework, tmp_path, monkeypatch):
    """The server's own policy already holds the key: attach keeps it, so its short expiry still holds: a yes sent
    after the state expired is refused, and nothing runs."""
    key = secrets.token_hex(32)
    monkeypatch.setenv("PROJECT_SKILL_STATE_KEY", key)
    monkeypatch.setenv("PROJECT_SKILL_REPLAY_DB", str(tmp_path / "claims.db"))
    server, store = shop(framework, RequestStateSecurity(keys=[key], ttl=0.5))
    await attach_async(server)
    async with Client(target(server, framework), elicitation_callback=answer("yes")) as c:
        first = await first_round(c)
        await anyio.sleep(1.0)
        with pytest.raises(MCPError) as refused:
            await c.session.get_prompt(PROMPT, ARGS, input_responses=YES, request_state=first.request_state,
                                       allow_input_required=True)
    assert refused.value.error.code == -32602 and store.ledger() == []


async def attach_async(server: Any, **kwargs: Any) -> Any:
    from projector.server import attach_async as attach_in_loop

    return await attach_in_loop(server, None, APPROVED, **kwargs)


# ----------------------------------------------------------------------------- a key needs a shared replay guard

@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_a_state_key_with_a_guard_in_memory_is_refused(framework):
    server, _ = shop(framework)
    with pytest.raises(AttachError) as raised:
        await attach_async(server, state_key=secrets.token_hex(32))
    (d,) = raised.value.diagnostics
    assert d.code == "replay-not-shared" and "PROJECT_SKILL_REPLAY_DB" in d.hint
    assert PROMPT not in await prompts(server, framework)
    with pytest.raises(AttachError):  # given explicitly, a guard in memory is no better
        await attach_async(server, state_key=secrets.token_hex(32), replay=MemoryGuard())


async def test_a_state_key_with_a_shared_guard_or_nothing_to_confirm_is_served(tmp_path):
    server, _ = shop("mcp")
    await attach_async(server, state_key=secrets.token_hex(32), replay=SqliteGuard(tmp_path / "claims.db"))
    assert PROMPT in await prompts(server, "mcp")
    hello, _ = shop("mcp")
    attach(hello, None, HELLO, state_key=secrets.token_hex(32))  # no confirm: step, no claim to share
    assert "hello_world" in await prompts(hello, "mcp")


@pytest.mark.slow
def test_serve_with_a_state_key_and_no_replay_db_does_not_start():
    env = {k: v for k, v in os.environ.items() if k != "PROJECT_SKILL_REPLAY_DB"}
    proc = subprocess.run([sys.executable, *serve_args()], cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=120, env={**env, "PROJECT_SKILL_STATE_KEY": secrets.token_hex(32)})
    assert proc.returncode == 1, proc.stderr
    assert "replay-not-shared" in proc.stderr and "PROJECT_SKILL_REPLAY_DB" in proc.stderr
    assert "Traceback" not in proc.stderr and "serving MCP" not in proc.stderr


@pytest.mark.slow
async def test_a_yes_replayed_to_a_restarted_server_runs_nothing(tmp_path):
    env = {"PROJECT_SKILL_STATE_KEY": secrets.token_hex(32), "PROJECT_SKILL_REPLAY_DB": str(tmp_path / "claims.db")}
    proc, port = start(env, "mcp")
    try:
        async with Client(f"http://127.0.0.1:{port}/mcp", cache=None, elicitation_callback=answer("yes")) as c:
            first = await first_round(c)
            done = await c.session.get_prompt(PROMPT, ARGS, input_responses=YES, request_state=first.request_state)
        assert texts(done)[-1][1].startswith("Done") and len(await ledger(port)) == 1
    finally:
        stop(proc)
    proc, port = start(env, "mcp")  # the same server, restarted
    try:
        async with Client(f"http://127.0.0.1:{port}/mcp", cache=None) as c:
            with pytest.raises(MCPError) as refused:
                await c.session.get_prompt(PROMPT, ARGS, input_responses=YES, request_state=first.request_state,
                                           allow_input_required=True)
        assert refused.value.error.code == -32602 and "answered before" in refused.value.error.message
        assert await ledger(port) == []
    finally:
        stop(proc)


# ------------------------------------------------------------- the workflow prompts a served skill names

async def test_attach_refuses_skills_whose_prompt_is_not_offered():
    server = MCPServer("x")
    with pytest.raises(AttachError) as info:
        attach(server, SKILLS, None)
    diags = info.value.diagnostics
    assert [(d.code, Path(d.span.file).parent.name) for d in diags] == [
        ("missing-workflow-prompt", "code-mode"), ("missing-workflow-prompt", "hello-world"),
        ("missing-workflow-prompt", "refund-flow-approved"), ("missing-workflow-prompt", "refund-flow-gated"),
        ("missing-workflow-prompt", "refund-flow")]
    assert "skill 'refund-flow' names the workflow prompt 'refund_flow'" in diags[4].message
    assert "--skills-only" in diags[3].hint
    async with Client(server) as client:  # nothing was added: no skill, no prompt
        assert (await client.list_prompts()).prompts == [] and (await client.list_resources()).resources == []
        with pytest.raises(MCPError):
            await client.read_resource("skill://hello-world/SKILL.md")


def test_serve_with_no_workflows_exits_1_naming_skill_and_prompt(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main("serve", ["--skills", str(SKILLS), "--workflows", str(empty)]) == 1
    err = capsys.readouterr().err
    assert "error[missing-workflow-prompt]: skill 'hello-world' names the workflow prompt 'hello_world'" in err
    assert "project-skill build --skills-only" in err and "nothing is served" in err


def test_a_prompt_already_on_the_server_counts_as_offered(tmp_path):
    tree = tmp_path / "t"
    write(compile_paths([str(WORKFLOWS / "hello-world.yaml")]), tree)
    server = MCPServer("x")

    @server.prompt(name="hello_world")
    def mine() -> str:
        return "my own runner"

    attach(server, tree, None)


async def test_skills_only_bundles_are_served_without_workflows(tmp_path):
    tree = tmp_path / "t"
    write(compile_paths([str(WORKFLOWS)], skills_only=True), tree)
    server = MCPServer("skills-only")
    attach(server, tree, None)
    async with Client(server) as client:
        prompts = sorted(p.name for p in (await client.list_prompts()).prompts)
        assert prompts == ["skill.code-mode", "skill.hello-world", "skill.refund-flow",
                           "skill.refund-flow-approved", "skill.refund-flow-gated"]
        text = (await client.read_resource("skill://refund-flow/SKILL.md")).contents[0].text
        assert "refund_flow" not in text and "Server-accelerated" not in text


async def test_a_titled_workflow_prompt_has_its_title(tmp_path):
    wf = tmp_path / "greet.yaml"
    wf.write_text("name: greet_flow\ntitle: Greet someone\ndescription: Greet.\narguments: [{name: name}]\n"
                  "steps: [{name: g, tool: greet, args: {name: {arg: name}}}]\n", "utf-8")
    server = MCPServer("x")

    @server.tool()
    def greet(name: str) -> str:
        return name

    attach(server, None, [wf])
    async with Client(server) as client:
        (p,) = (await client.list_prompts()).prompts
        assert (p.name, p.title) == ("greet_flow", "Greet someone")
