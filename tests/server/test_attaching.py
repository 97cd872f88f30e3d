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
from typing import Any, TypedDict

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.server.request_state import RequestStateSecurity
from mcp.shared.exceptions import MCPError

from conftest import ROOT
from projector.builder import WorkflowBuilder, arg, const
from projector.load import load_all
from projector.output import compile_paths, write
from projector.server import AttachError, SkillsExtension, attach, build_server
from projector.server.cli import main
from projector.server.demo import add_demo_tools
from projector.server.replay import MemoryGuard, SqliteGuard

from .test_confirm import FRAMEWORKS, PROMPT, YES, answer, first_round, ledger, start, target, texts
from .test_serve_skills import serve_args, stop
from .test_workflow import built

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


# ---------------------------------------------------------------------------------------- attach checks

def bare_refund_tools(server: MCPServer, *, drop: str | None = None, rename: dict[str, str] | None = None) -> None:
    async def get_order(id: str) -> dict:
        return {"id": id, "total": 1.0, "region": "eu"}

    async def check_eligibility(order: dict) -> dict:
        return {"eligible": True}

    async def issue_refund(order_id: str, amount: float) -> dict:
        return {}

    for fn in (get_order, check_eligibility, issue_refund):
        if fn.__name__ != drop:
            server.add_tool(fn, name=(rename or {}).get(fn.__name__, fn.__name__))


def refunds_only() -> list:
    return [wf for wf in load_all([str(WORKFLOWS)]) if wf.name == "refund_flow"]


def serve_error(server: MCPServer, workflows: Any, skills: Any = None) -> str:
    with pytest.raises(AttachError) as info:
        attach(server, skills, workflows)
    return str(info.value)


def test_attach_fails_when_a_tool_is_missing():
    server = MCPServer("x")
    bare_refund_tools(server, drop="issue_refund")
    server.resource("docs://refund-policy/{region}", name="policy")(lambda region: region)
    msg = serve_error(server, refunds_only())
    assert "step 'issue_refund' calls the tool 'issue_refund', which the server does not have" in msg
    assert "refunds.yaml:48:11: error[unknown-tool]" in msg  # where the step names its tool
    assert "register it on the server before calling attach(); the server's tools: check_eligibility, get_order" \
        in msg


def test_attach_fails_when_the_schema_does_not_accept_the_arguments():
    server = MCPServer("x")

    async def issue_refund(order: str, amount: float) -> dict:  # `order_id` is called `order` here
        return {}

    bare_refund_tools(server, drop="issue_refund")
    server.add_tool(issue_refund)
    msg = serve_error(server, refunds_only())
    # one misspelling, one error at the key (issue 19): 'order_id' for the required 'order'
    assert "refunds.yaml:50:7: error[unknown-parameter]: step 'issue_refund' passes 'order_id', which is not a " \
           "parameter of the tool 'issue_refund'; the tool requires 'order', which is not given\n" \
           "  hint: did you mean 'order'?" in msg
    assert "missing-parameter" not in msg
    assert "no resource or template matching 'docs://refund-policy/{region}'" in msg  # every problem at once


def test_attach_checks_argument_types():
    server = MCPServer("x")

    @server.tool()
    def count(n: int) -> int:
        return n

    wfs = [WorkflowBuilder("c1", "Const of the wrong type.").tool("count")
           .step("s", tool="count", args={"n": const("three")}).build(),
           WorkflowBuilder("c2", "Argument of the wrong type.").argument("flag", type="boolean").tool("count")
           .step("s", tool="count", args={"n": arg("flag")}).build()]
    msg = serve_error(server, wfs)
    # each at the line of its .step(...) call (the builder records the caller's place)
    lines = Path(__file__).read_text("utf-8").splitlines()
    at = [next(i for i, s in enumerate(lines, 1) if s.strip().startswith(call)) for call in
          ('.step("s", tool="count", args={"n": const("three")})', '.step("s", tool="count", args={"n": arg("flag")})')]
    assert f"test_attaching.py:{at[0]}:13: error[parameter-type]: step 's' passes the string \"three\" as 'n', " \
           "which the tool 'count' does not accept: 'three' is not of type 'integer'" in msg
    assert f"test_attaching.py:{at[1]}:13: error[parameter-type]: step 's' passes the input 'flag' " \
           "(boolean) as 'n', but the tool 'count' takes integer there" in msg


async def test_attach_refuses_prompt_name_collisions_and_changes_nothing():
    server = MCPServer("x")
    bare_refund_tools(server)
    server.resource("docs://refund-policy/{region}", name="policy")(lambda region: region)

    @server.prompt(name="refund_flow")
    def taken() -> str:
        return "mine"

    msg = serve_error(server, refunds_only(), SKILLS)
    assert "prompt-collision" in msg and "'refund_flow'" in msg
    async with Client(server) as client:  # nothing was added: the author's own prompt alone, no skill
        assert [p.name for p in (await client.list_prompts()).prompts] == ["refund_flow"]
        assert (await client.list_resources()).resources == []
        with pytest.raises(MCPError):
            await client.read_resource("skill://refund-flow/SKILL.md")


async def test_attach_with_the_extension_given_at_construction_uses_it():
    ext = SkillsExtension(SKILLS, page_size=2)
    server = MCPServer("shop", extensions=[ext])
    add_demo_tools(server)
    assert attach(server, ext, WORKFLOWS) is ext
    async with Client(server) as client:
        page = await client.session.send_request(
            types.Request[dict[str, Any] | None, str](method="skills/list", params={}),
            __import__("pydantic").TypeAdapter(dict[str, Any]))
        assert len(page["skills"]) == 2 and "nextCursor" in page
        names = sorted(p.name for p in (await client.list_prompts()).prompts)
        assert names == ["code_mode", "hello_world", "refund_flow", "refund_flow_approved", "refund_flow_gated",
                         "skill.code-mode", "skill.hello-world", "skill.refund-flow", "skill.refund-flow-approved",
                         "skill.refund-flow-gated"]


def test_build_server_is_one_call(tmp_path):
    def greet(name: str) -> str:
        return f"hi {name}"

    wf = (WorkflowBuilder("hello_world", "Greet.").argument("name", required=True).tool("greet")
          .step("greet", tool="greet", args={"name": arg("name")}, bind="g").build())
    server = build_server("mine", built(tmp_path, "hello-world.yaml"), [wf], tools=[greet])
    assert server.name == "mine"


# ------------------------------------------------ a gate that the tool's result can never decide (issue 38, item 0)

DEAD_GATE = ROOT / "tests" / "bad_inputs" / "dead-condition-output-schema.yaml"


class Text(TypedDict):
    content: str


def files_server(structured: bool = True) -> MCPServer:
    """The npm filesystem server's two tools as a server author writes them: every read is ``{content: string}``
    (declared as its output schema, or, with ``structured=False``, not declared at all)."""
    server = MCPServer("files")

    def read_text_file(path: str) -> Text:
        return {"content": "false"}

    def move_file(source: str, destination: str) -> str:
        return "moved"

    server.add_tool(
        read_text_file,
        annotations=types.ToolAnnotations(read_only_hint=True),
        structured_output=structured,
    )
    server.add_tool(move_file, annotations=types.ToolAnnotations(read_only_hint=False, destructive_hint=False))
    return server


def dead_gate(tmp_path: Path, *, acknowledged: bool = False, declared: bool = True) -> Path:
    """The issue's workflow: publish unless the status file says false, written `not_equals: false`."""
    text = DEAD_GATE.read_text("utf-8")
    if not declared:
        text = text.replace(
            "    output_schema: {type: object, properties: {content: {type: string}}, required: [content]}\n", ""
        )
    if acknowledged:
        text += "    acknowledge: {dead-condition: the status file only ever says true; the gate is a placeholder}\n"
    path = tmp_path / "publish.yaml"
    path.write_text(text, "utf-8")
    return path


@pytest.mark.parametrize("declared_by", ["server", "workflow"])
def test_attach_refuses_a_gate_that_can_never_fail_before_a_side_effect(tmp_path, declared_by):
    """The output schema says `content` is a string, so `not_equals: false` holds for every file: the server would
    move it whatever the file says. Refused as an unknown tool is, whether the server declares the schema or the
    workflow fills it in for a server that declares none."""
    server = files_server(structured=declared_by == "server")
    path = dead_gate(tmp_path, declared=declared_by == "workflow")
    msg = serve_error(server, [path])
    line = 21 if declared_by == "workflow" else 20  # the file without its output_schema line is one line shorter
    assert f"{path}:{line}:54: error[dead-condition]" in msg  # at the operand
    assert "`status.content` is not `false` can never fail while `status.content` has a value" in msg
    assert "a boolean never equals a string, as the output schema of the tool 'read_text_file' declares it" in msg
    assert "the side-effecting tool 'move_file'" in msg
    assert 'write not_equals: "false"' in msg and "acknowledge: {dead-condition: why}" in msg


async def test_an_acknowledged_dead_gate_is_served_and_runs_as_written(tmp_path):
    server = files_server()
    attach(server, None, [dead_gate(tmp_path, acknowledged=True)])
    async with Client(server) as client:
        names = [p.name for p in (await client.list_prompts()).prompts]
    assert "dead_condition_output_schema" in names


def test_a_dead_gate_before_a_read_only_step_is_served(tmp_path):
    """Nothing changes the world behind it: the build's warning is enough."""
    server = files_server()
    path = dead_gate(tmp_path)
    path.write_text(
        path.read_text("utf-8")
        .replace("tool: move_file", "tool: read_text_file")
        .replace("args: {source: {arg: draft}, destination: {const: published/}}", "args: {path: {arg: draft}}"),
        "utf-8",
    )
    attach(server, None, [path])


def test_serve_refuses_a_dead_gate_before_a_side_effect(tmp_path, capsys):
    """`project-skill serve` calls attach: the demo shop's `issue_refund` behind `equals: "true"` on a boolean input
    (the string never equals the boolean, so no refund would ever run) exits 1 at the operand, serving nothing."""
    import shutil

    folder = tmp_path / "workflows"
    shutil.copytree(WORKFLOWS, folder)
    gate = folder / "approved-refund.yaml"
    gate.write_text(
        "name: refund_when_approved\n"
        "description: Refund an order once a person approved it.\n"
        "arguments:\n"
        "  - {name: order_id, required: true}\n"
        "  - {name: approved, type: boolean, required: true}\n"
        "steps:\n"
        "  - name: refund\n"
        "    tool: issue_refund\n"
        "    args: {order_id: {arg: order_id}, amount: {const: 5}}\n"
        '    when: {arg: approved, equals: "true"}\n',
        "utf-8",
    )
    assert main("serve", ["--skills", str(SKILLS), "--workflows", str(folder)]) == 1
    err = capsys.readouterr().err
    assert f"{gate}:10:35: error[dead-condition]" in err, err
    assert "the argument `approved` is `\"true\"` can never hold: a string never equals a boolean" in err
    assert "Traceback" not in err
