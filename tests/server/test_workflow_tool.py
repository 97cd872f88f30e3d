"""Workflows as tools (issue 30): ``attach(..., workflow_tools=True)`` and ``project-skill serve --workflow-tools``.

Driven through real clients only: mcp's ``Client`` in memory (on MCPServer, and on FastMCP's low-level server),
FastMCP's own ``Client``, and ``serve`` over stdio and Streamable HTTP. What is pinned: a workflow's tool and its
prompt call the same tools and say the same transcript for the same inputs and answers, on both frameworks; the
tool's listing (input schema, output schema, annotations); its structured result; and that a name already taken
on the server is refused before anything is added.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

from projector.builder import WorkflowBuilder, arg
from projector.server import attach
from projector.server.demo import demo_server
from projector.server.errors import AttachError

from .test_confirm import answer
from .test_serve_skills import ROOT, SKILLS, WORKFLOWS, free_port, serve_args, stop

FRAMEWORKS = ["mcp", "fastmcp"]
STEP_TOOLS = ("get_order", "check_eligibility", "issue_refund")
pytestmark = pytest.mark.anyio


def served(framework: str) -> tuple[Any, list[tuple[str, Any]], Any]:
    """The demo server with its workflows as tools, the calls its store gets (tool name and arguments, in order),
    and the store."""
    server, store = demo_server(framework=framework, workflow_tools=True)
    calls: list[tuple[str, Any]] = []
    for name in STEP_TOOLS:
        real = getattr(store, name)

        def recorded(*a: Any, _real: Any = real, _name: str = name, **k: Any) -> Any:
            calls.append((_name, [*a, k]))
            return _real(*a, **k)

        setattr(store, name, recorded)
    return server, calls, store


def in_memory(server: Any, framework: str) -> Any:
    return server if framework == "mcp" else server._mcp_server  # FastMCP's low-level server, in memory


async def as_prompt(framework: str, name: str, args: dict[str, str], kind: str | None):
    server, calls, store = served(framework)
    callback = {"elicitation_callback": answer(kind)} if kind else {}
    async with Client(in_memory(server, framework), **callback) as c:
        result = await c.get_prompt(name, args)
    return [m.content.text for m in result.messages], calls, store.ledger()


async def as_tool(framework: str, name: str, args: dict[str, str], kind: str | None):
    server, calls, store = served(framework)
    callback = {"elicitation_callback": answer(kind)} if kind else {}
    async with Client(in_memory(server, framework), **callback) as c:
        result = await c.call_tool(name, args)
    assert not result.is_error
    return [block.text for block in result.content], calls, store.ledger(), result.structured_content


CASES = {
    "confirmed yes": ("refund_flow_approved", {"order_id": "A1001", "reason": "broken"}, "yes"),
    "confirmed no": ("refund_flow_approved", {"order_id": "A1001", "reason": "broken"}, "no"),
    "no elicitation": ("refund_flow_approved", {"order_id": "A1001", "reason": "broken"}, None),
    "failing when": ("refund_flow_gated", {"order_id": "A1002"}, None),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_the_tool_and_the_prompt_make_the_same_calls_and_say_the_same_transcript(case):
    name, args, kind = CASES[case]
    seen = []
    for framework in FRAMEWORKS:
        prompt = await as_prompt(framework, name, args, kind)
        texts, calls, ledger, _ = await as_tool(framework, name, args, kind)
        assert (texts, calls, ledger) == prompt
        seen.append((texts, calls, ledger))
    assert seen[0] == seen[1]  # and the frameworks agree
    texts, calls, ledger = seen[0]
    last = texts[-1]
    if case == "confirmed yes":
        assert [c[0] for c in calls] == list(STEP_TOOLS) and [r["order_id"] for r in ledger] == ["A1001"]
        assert last == "Done: all 4 steps of `refund_flow_approved` ran on the server."
    else:  # nothing refunded, and the transcript says why
        assert ledger == [] and "issue_refund" not in [c[0] for c in calls]
        assert last.startswith("Stopped before step 3 of 4 (`issue_refund`)")
    if case == "confirmed no":
        assert "they answered no" in last
    if case == "no elicitation":
        assert "it needs a person's confirmation" in last and "the step never runs unconfirmed" in last
    if case == "failing when":
        assert "eligibility.eligible" in last


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_the_structured_result_holds_the_saved_results_and_fits_the_output_schema(framework):
    import jsonschema

    server, _, _ = served(framework)
    async with Client(in_memory(server, framework), elicitation_callback=answer("yes")) as c:
        tool = {t.name: t for t in (await c.list_tools()).tools}["refund_flow_approved"]
        result = await c.call_tool("refund_flow_approved", {"order_id": "A1001", "reason": "broken"})
        stopped = await c.call_tool("refund_flow_gated", {"order_id": "A1002"})
    assert sorted(tool.output_schema["properties"]["results"]["properties"]) == ["eligibility", "order", "refund"]
    assert tool.output_schema["required"] == ["results"]
    saved = result.structured_content["results"]
    assert saved["order"]["id"] == "A1001" and saved["eligibility"]["eligible"] is True
    assert saved["refund"]["order_id"] == "A1001" and saved["refund"]["amount"] == 129.0
    assert sorted(stopped.structured_content["results"]) == ["eligibility", "order"]  # the refund never ran
    for r in (result, stopped):
        jsonschema.validate(r.structured_content, tool.output_schema)


def shop_tools(framework: str) -> dict[str, Any]:
    """``tools/list`` of the demo with its workflows as tools, through mcp's Client (FastMCP: its own Client)."""
    server, _, _ = served(framework)

    async def listed() -> dict[str, Any]:
        if framework == "mcp":
            async with Client(server) as c:
                return {t.name: t for t in (await c.list_tools()).tools}
        import fastmcp

        async with fastmcp.Client(server) as c:
            return {t.name: t for t in await c.list_tools()}

    return listed


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_the_annotations_follow_from_the_steps(framework):
    tools = await shop_tools(framework)()
    # greet: read-only and idempotent
    assert tools["hello_world"].annotations == ToolAnnotations(read_only_hint=True, destructive_hint=False,
                                                               idempotent_hint=True, open_world_hint=True)
    # a schema read and a read-only query that says it is closed-world: read-only, closed-world
    assert tools["code_mode"].annotations == ToolAnnotations(read_only_hint=True, destructive_hint=False,
                                                             idempotent_hint=True, open_world_hint=False)
    # issue_refund is destructive: so is the workflow, and it is not read-only
    for name in ("refund_flow", "refund_flow_gated", "refund_flow_approved"):
        assert tools[name].annotations == ToolAnnotations(read_only_hint=False, destructive_hint=True,
                                                          idempotent_hint=False, open_world_hint=True)


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_the_input_schema_is_the_workflows_arguments(framework):
    tools = await shop_tools(framework)()
    schema = tools["refund_flow_approved"].input_schema
    assert schema["type"] == "object" and schema["required"] == ["order_id"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["order_id"] == {"type": "string", "description": "The order to refund"}
    assert schema["properties"]["reason"]["type"] == "string"
    assert schema["properties"]["reason"]["description"].startswith("Why the customer asked for the refund. Leave")
    assert tools["hello_world"].input_schema["properties"] == {"name": {"type": "string", "description": "Who to greet"}}


def typed_workflow() -> Any:
    return (WorkflowBuilder("greet_many", "Greet a name a number of times.")
            .argument("name", "Who to greet", required=True, type="string")
            .argument("times", "How many times", required=True, type="integer")
            .tool("greet", "Return a friendly greeting for a name.",
                  input_schema={"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
                  annotations={"readOnlyHint": True})
            .step("greet", tool="greet", args={"name": arg("name")}, bind="greeting")
            .build())


def greeter_with(workflow: Any, *, also: str | None = None) -> MCPServer:
    server = MCPServer("greeter")

    @server.tool()
    def greet(name: str) -> str:
        return f"Hello, {name}!"

    if also is not None:
        server.add_tool(lambda: "taken", name=also, description="A tool already on the server.")
    return server


async def test_typed_arguments_are_json_values_and_a_bad_one_is_a_tool_error_naming_it():
    wf = typed_workflow()
    server = greeter_with(wf)
    attach(server, None, [wf], workflow_tools=True)
    async with Client(server) as c:
        schema = {t.name: t for t in (await c.list_tools()).tools}["greet_many"].input_schema
        ok = await c.call_tool("greet_many", {"name": "Ada", "times": 2})
        wrong = await c.call_tool("greet_many", {"name": "Ada", "times": "two"})
        unknown = await c.call_tool("greet_many", {"name": "Ada", "times": 2, "loud": True})
        missing = await c.call_tool("greet_many", {"times": 2})
    assert schema["properties"]["times"] == {"type": "integer", "description": "How many times"}
    assert schema["required"] == ["name", "times"]
    assert not ok.is_error and ok.structured_content == {"results": {"greeting": "Hello, Ada!"}}
    assert '"times": 2' in ok.content[0].text  # the parameters, typed
    assert wrong.is_error and "Invalid argument 'times'" in wrong.content[0].text
    assert unknown.is_error and "Unknown argument 'loud'" in unknown.content[0].text
    assert missing.is_error and "Missing required argument 'name'" in missing.content[0].text


BAD_CALLS = [({"name": "Ada", "times": "two"}, "Invalid argument 'times' for {named}: 'two' is not an integer"),
             ({"name": "Ada", "times": 2, "loud": True}, "Unknown argument 'loud' for {named}; it takes 'name', "
                                                         "'times'"),
             ({"times": 2}, "Missing required argument 'name' for {named}")]


@pytest.mark.parametrize("args, message", BAD_CALLS)
async def test_a_bad_argument_is_worded_for_the_tool_and_for_the_prompt(args, message):
    """The same bad argument names the surface it was given to: an ``isError`` result naming the tool (the model
    can correct its call), and a -32602 naming the prompt."""
    from mcp.shared.exceptions import MCPError

    wf = typed_workflow()
    server = greeter_with(wf)
    attach(server, None, [wf], workflow_tools=True)
    async with Client(server) as c:
        as_a_tool = await c.call_tool("greet_many", args)
        with pytest.raises(MCPError) as as_a_prompt:
            await c.get_prompt("greet_many", {k: v if isinstance(v, str) else str(v) for k, v in args.items()})
    assert as_a_tool.is_error and as_a_tool.content[0].text == message.format(named="the tool 'greet_many'")
    assert as_a_prompt.value.error.code == -32602
    assert as_a_prompt.value.error.message == message.format(named="prompt 'greet_many'")


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_a_name_taken_by_a_server_tool_is_refused_and_nothing_is_added(framework):
    server, _ = demo_server(None, None, framework=framework)  # the demo tools, no skills or workflows yet
    if framework == "mcp":
        server.add_tool(lambda: "mine", name="hello_world", description="A tool of the server's own.")
    else:
        server.tool(lambda: "mine", name="hello_world", description="A tool of the server's own.")
    with pytest.raises(AttachError) as info:
        attach(server, None, WORKFLOWS, workflow_tools=True, bootstrap_prompts=False)
    [d] = info.value.diagnostics
    assert d.code == "tool-collision" and "'hello_world'" in d.message and "a tool already on the server" in d.message
    assert str(d.span).startswith(str(WORKFLOWS / "hello-world.yaml"))
    async with Client(in_memory(server, framework)) as c:
        prompts = {p.name for p in (await c.list_prompts()).prompts}
        tools = {t.name for t in (await c.list_tools()).tools}
    assert not prompts & {"hello_world", "refund_flow"} and "refund_flow" not in tools


async def test_a_name_taken_by_a_skill_tool_is_refused():
    wf = WorkflowBuilder("load_skill", "A workflow named like a skill tool.").tool(
        "greet", "Greet.", input_schema={"type": "object", "properties": {"name": {"type": "string"}}}).step(
        "greet", tool="greet", args={"name": arg("who")}).argument("who", "Who").build()
    with pytest.raises(AttachError) as info:
        attach(greeter_with(wf), SKILLS, [wf], workflow_tools=True, skill_tools=True, workflow_prompts=False)
    assert [d.code for d in info.value.diagnostics] == ["tool-collision"]


async def test_without_the_flag_no_workflow_is_a_tool():
    server, _ = demo_server()
    async with Client(server) as c:
        tools = {t.name for t in (await c.list_tools()).tools}
    assert not tools & {"hello_world", "refund_flow", "code_mode"}


# --------------------------------------------------------------------------------------------- serve, for real

async def call_hello(target: Any) -> Any:
    async with Client(target) as c:
        listed = {t.name: t for t in (await c.list_tools()).tools}
        result = await c.call_tool("hello_world", {"name": "Ada"})
    assert listed["hello_world"].annotations.read_only_hint is True
    assert result.structured_content == {"results": {"greeting": "Hello, Ada!"}}
    assert result.content[-1].text == "Done: all 1 step of `hello_world` ran on the server."


@pytest.mark.slow
async def test_serve_workflow_tools_over_stdio():
    params = StdioServerParameters(command=sys.executable, args=[*serve_args(), "--stdio", "--workflow-tools"],
                                   cwd=str(ROOT))
    await call_hello(stdio_client(params))


@pytest.mark.slow
async def test_serve_workflow_tools_over_http():
    import socket
    import time

    port = free_port()
    proc = subprocess.Popen([sys.executable, *serve_args(), "--http", f"127.0.0.1:{port}", "--workflow-tools"],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, proc.stderr.read().decode()
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.1)
        await call_hello(f"http://127.0.0.1:{port}/mcp")
    finally:
        stop(proc)


# ------------------------------------------------------------------------------- the SKILL.md names the tool

def built(cli, tmp_path, *flags: str):
    out = tmp_path / "skills"
    run = cli("build", str(WORKFLOWS), "--out", str(out), "--no-cache", *flags)
    assert run.code == 0, run.err
    return out


def test_build_workflow_tools_names_the_tool_in_each_skill(cli, tmp_path):
    out = built(cli, tmp_path, "--workflow-tools")
    text = (out / "hello-world" / "SKILL.md").read_text("utf-8")
    assert "  workflow: hello_world\n  workflow-tool: hello_world\n  workflow-digest: " in text
    assert "The same run is also the tool `hello_world`, for a host that calls tools" in text
    plain = built(cli, tmp_path / "plain")  # without the flag: the shipped bytes, no tool named
    assert (plain / "hello-world" / "SKILL.md").read_bytes() == (SKILLS / "hello-world" / "SKILL.md").read_bytes()
    assert "workflow-tool" not in (plain / "hello-world" / "SKILL.md").read_text("utf-8")


def test_build_refuses_skills_only_with_workflow_tools(cli, tmp_path):
    run = cli("build", str(WORKFLOWS), "--out", str(tmp_path / "o"), "--skills-only", "--workflow-tools")
    assert run.code == 2 and "--skills-only and --workflow-tools" in run.err
    assert not (tmp_path / "o").exists()


@pytest.mark.slow
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_skills_that_name_their_tool_are_served_only_with_the_tools(cli, tmp_path, framework):
    out = built(cli, tmp_path, "--workflow-tools")
    with pytest.raises(AttachError) as info:
        demo_server(out, WORKFLOWS, framework=framework)
    codes = sorted({d.code for d in info.value.diagnostics})
    assert codes == ["missing-workflow-tool"] and len(info.value.diagnostics) == 5
    assert "skill 'hello-world' names the workflow tool 'hello_world'" in str(info.value)
    server, _ = demo_server(out, WORKFLOWS, framework=framework, workflow_tools=True)
    async with Client(in_memory(server, framework)) as c:
        served = await c.read_resource("skill://hello-world/SKILL.md")
    assert served.contents[0].text.encode("utf-8") == (out / "hello-world" / "SKILL.md").read_bytes()


def test_a_workflow_cannot_set_the_workflow_tool_metadata_key_itself(cli, tmp_path):
    src = (WORKFLOWS / "hello-world.yaml").read_text("utf-8") + "metadata:\n  workflow-tool: something_else\n"
    (tmp_path / "wf").mkdir()
    (tmp_path / "wf" / "hello.yaml").write_text(src, "utf-8")
    run = cli("build", str(tmp_path / "wf"), "--out", str(tmp_path / "out"), "--no-cache")
    assert run.code == 1 and "reserved-metadata-key" in run.out + run.err and "workflow-tool" in run.out + run.err
