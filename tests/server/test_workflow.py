"""The server-side runner (:mod:`projector.server.workflow`), through mcp's public in-memory ``Client``: workflow
prompts run on the server (refunds, code mode, hello, typed arguments, templates); the work a run does grows with its
steps, not with their square, and a confirmation on the first step does not repeat the
opening of the transcript. Conditions (``when:``) enforced by the run: stop, skip, progress, and the refunds pair over
a real transport (stdio, the server as its own process)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import ElicitResult, TextContent, ToolAnnotations

from projector.builder import WorkflowBuilder, arg, condition, confirm, const, step
from projector.model import Workflow
from projector.render import project
from projector.server import attach
from projector.server.demo import demo_server

from .test_serve_skills import ROOT, serve_args

SKILLS = ROOT / "generated_skills"
WORKFLOWS = ROOT / "workflows"

pytestmark = pytest.mark.anyio


def built(tmp_path: Path, *workflows: str, skills_only: bool = False) -> Path:
    """``project-skill build WORKFLOWS --out DIR [--skills-only]``: a skills tree of just those workflows."""
    from projector.output import compile_paths, write

    out = tmp_path / ("skills-only" if skills_only else "skills")
    write(compile_paths([str(WORKFLOWS / w) for w in workflows], skills_only=skills_only), out)
    return out


def texts(result: types.GetPromptResult) -> list[tuple[str, str]]:
    return [(m.role, m.content.text) for m in result.messages]


async def get_prompt(server: MCPServer, name: str, args: dict[str, str], progress: list | None = None):
    async with Client(server) as client:
        if progress is None:
            return await client.get_prompt(name, args)

        async def on_progress(p: float, total: float | None, message: str | None) -> None:
            progress.append((p, total, message))

        req = types.GetPromptRequest(params=types.GetPromptRequestParams(name=name, arguments=args))
        return await client.session.send_request(req, types.GetPromptResult, progress_callback=on_progress)


class CountingSteps(tuple):
    """A workflow's steps that count how many step records are read, by iteration, index or slice (as
    tests/test_gates.py counts the compile's passes)."""

    reads = 0

    def __iter__(self):
        for item in tuple.__iter__(self):
            CountingSteps.reads += 1
            yield item

    def __getitem__(self, key):
        got = tuple.__getitem__(self, key)
        CountingSteps.reads += len(got) if isinstance(key, slice) else 1
        return got


def skipping(n: int) -> Workflow:
    """n steps, each saving a result that the next one reads, each skipped (its condition fails, on_fail: skip)."""
    b = WorkflowBuilder("many_skipped", "Many steps, all skipped.")
    b.argument("go", "Whether to run the steps", required=True, type="string")
    b.tool(
        "noop",
        "Does nothing.",
        input_schema={"type": "object", "properties": {"x": {}}},
        annotations={"readOnlyHint": True},
    )
    for i in range(n):
        b.step(
            f"s{i}",
            tool="noop",
            bind=f"r{i}",
            args={"x": step(f"r{i - 1}")} if i else {},
            when=condition(arg("go"), equals="yes"),
            on_fail="skip",
        )
    wf = b.build()
    return Workflow(wf.name, wf.description, wf.arguments, wf.instructions, wf.tools, CountingSteps(wf.steps))


def noop_server(*workflows: Workflow) -> MCPServer:
    server = MCPServer("runner")

    @server.tool()
    def noop(x: Any = None) -> str:
        """Does nothing."""
        return "ok"

    attach(server, None, list(workflows))
    return server


@pytest.mark.slow
async def test_a_run_of_skipped_steps_reads_each_step_a_bounded_number_of_times():
    """Linear, by counting: ten times the skipped steps read ten times the step records (each skipped step used to
    scan every step after it for the ones that read its result: a hundredfold)."""
    reads = {}
    for n in (100, 1000):
        server = noop_server(skipping(n))
        async with Client(server) as c:
            CountingSteps.reads = 0
            result = await c.get_prompt("many_skipped", {"go": "no"})
            reads[n] = CountingSteps.reads
        last = result.messages[-1].content.text
        assert last == f"Done: 0 of the {n} steps of `many_skipped` ran on the server; {n} were skipped."
        assert "Step 2 (`s1`) will not have `r0`." in result.messages[2].content.text
    assert reads[1000] <= 10 * reads[100] + 10, reads


async def test_a_confirmation_on_the_first_step_keeps_one_opening():
    wf = (
        WorkflowBuilder("first_confirmed", "A first step that needs a yes.")
        .tool(
            "noop",
            "Does nothing.",
            input_schema={"type": "object", "properties": {"x": {}}},
            annotations={"readOnlyHint": False},
        )
        .step("only", tool="noop", confirm=confirm("Run it?"))
        .build()
    )

    async def yes(_ctx: Any, _params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"confirm": True})

    async with Client(noop_server(wf), elicitation_callback=yes) as c:
        result = await c.get_prompt("first_confirmed", {})
    texts = [m.content.text for m in result.messages]
    assert [t.split("\n")[0].split(":")[0] for t in texts] == [
        "Run the workflow `first_confirmed`",
        "Plan",
        "Step 1 of 1",
        "Result of `noop`",
        "Done",
    ]


# ---------------------------------------------------------------------------------- conditions in a run


async def _ledger(client: Client) -> list[dict[str, Any]]:
    result = await client.call_tool("list_refunds", {})
    sc = result.structured_content
    return sc["result"] if isinstance(sc, dict) and set(sc) == {"result"} else sc  # type: ignore[return-value]


async def _run_on_one_server(prompt: str, orders: list[str]) -> tuple[list[list[str]], list[dict[str, Any]]]:
    """Each order through ``prompt`` on one freshly started ``project-skill serve --stdio`` process; the transcripts'
    texts and the ledger afterwards."""
    params = StdioServerParameters(command=sys.executable, args=[*serve_args(), "--stdio"], cwd=str(ROOT))
    transcripts = []
    async with Client(stdio_client(params)) as client:
        assert await _ledger(client) == []
        names = {p.name for p in (await client.list_prompts()).prompts}
        assert {"refund_flow", "refund_flow_gated"} <= names  # serve offers both
        for order in orders:
            result = await client.get_prompt(prompt, {"order_id": order})
            transcripts.append([m.content.text for m in result.messages if isinstance(m.content, TextContent)])
        ledger = await _ledger(client)
    return transcripts, ledger


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_refunds_pair_over_stdio_gated_refunds_only_the_eligible_order():
    (eligible, ineligible), ledger = await _run_on_one_server("refund_flow_gated", ["A1001", "A1002"])
    assert [r["order_id"] for r in ledger] == ["A1001"]
    assert eligible[-1] == "Done: all 4 steps of `refund_flow_gated` ran on the server."
    assert "Checked by the server: `eligibility.eligible` is `true`." in "\n".join(eligible)
    assert ineligible[-1] == (
        "Stopped before step 3 of 4 (`issue_refund`): `eligibility.eligible` is `false`, the "
        "step needs `true`. The server did not call `issue_refund`, and the 1 later step did "
        "not run; tell the user why the workflow stopped."
    )
    assert "\n" not in ineligible[-1]
    assert not any("Calling the tool `issue_refund`" in t for t in ineligible)


@pytest.mark.slow
@pytest.mark.anyio
async def test_the_refunds_pair_over_stdio_ungated_still_refunds_both():
    _, ledger = await _run_on_one_server("refund_flow", ["A1001", "A1002"])
    assert [r["order_id"] for r in ledger] == ["A1001", "A1002"]


# ------------------------------------------------------------------------------------------ stop, skip, progress


def _server(
    on_fail: str, when: Any, *, args: tuple[str, ...] = ("mode",), acknowledge: dict[str, str] | None = None
) -> tuple[MCPServer, list[str]]:
    calls: list[str] = []
    server = MCPServer("gates")

    @server.tool(description="Look something up.")
    def look(key: str) -> dict:
        calls.append(f"look {key}")
        return {"status": key, "items": [{"n": 1}]}

    @server.tool(description="Act on it.")
    def act(status: str = "") -> str:
        calls.append(f"act {status}")
        return "acted"

    b = WorkflowBuilder("flow", "Look, maybe act, then look again.")
    for a in args:
        b.argument(a, type="integer" if a == "count" else None)
    b.tool("look", annotations={"readOnlyHint": True}).tool("act", annotations={"readOnlyHint": False})
    b.step("first", tool="look", args={"key": arg("mode")}, bind="found")
    b.step(
        "maybe",
        tool="act",
        args={"status": step("found", "status")},
        bind="acted",
        when=when,
        on_fail=on_fail,
        acknowledge=acknowledge,
    )
    b.step(
        "after",
        tool="act",
        args={"status": step("acted")},
        acknowledge={"uses-skippable-result": "a test"} if on_fail == "skip" else None,
    )
    attach(server, skills=None, workflows=[b.build()])
    return server, calls


@pytest.mark.anyio
async def test_skip_says_so_goes_on_and_a_later_step_is_told_why_its_input_is_missing():
    server, calls = _server("skip", condition(step("found", "status"), in_=["open", "new"]))
    progress: list = []
    msgs = texts(await get_prompt(server, "flow", {"mode": "closed"}, progress))
    skip = next(t for _, t in msgs if "Skipped:" in t)
    assert skip.startswith(
        'Step 2 of 3: `maybe`.\nSkipped: `found.status` is `"closed"`, the step needs one of `"open"`, `"new"`.'
    )
    assert "Step 3 (`after`) will not have `acted`." in skip
    # the result the skipped step would have saved is missing, and the run says why; the optional argument is left out
    assert calls == ["look closed", "act "]
    assert msgs[-1][1] == "Done: 2 of the 3 steps of `flow` ran on the server; 1 was skipped."
    assert progress == [
        (1, 3, "step 1 of 3: first"),
        (2, 3, "step 2 of 3: maybe (skipped)"),
        (3, 3, "step 3 of 3: after"),
    ]


@pytest.mark.anyio
async def test_a_skipped_result_that_a_tool_requires_hands_over_naming_the_skip():
    server = MCPServer("gates")

    @server.tool(description="Echo.")
    def echo(value: str | bool) -> str:
        return str(value)

    wf = (
        WorkflowBuilder("flow", "d")
        .argument("go", type="boolean")
        .tool("echo", annotations={"readOnlyHint": True})
        .step(
            "maybe",
            tool="echo",
            args={"value": arg("go")},
            bind="m",
            when=condition(arg("go"), equals=True),
            on_fail="skip",
        )
        .step("needs", tool="echo", args={"value": step("m")}, acknowledge={"uses-skippable-result": "test"})
        .build()
    )
    attach(server, skills=None, workflows=[wf])
    msgs = texts(await get_prompt(server, "flow", {"go": "false"}))
    assert msgs[-1][1].startswith(
        "Stopped before step 2 of 2 (`needs`): the tool `echo` requires `value`, and it "
        "has no value: step 1 `maybe`, which saves `m`, was skipped."
    )


@pytest.mark.anyio
async def test_stop_names_the_step_the_condition_and_the_value_seen_and_reports_no_more_progress():
    server, calls = _server(
        "stop", [condition(arg("mode"), exists=True), condition(step("found", "items.0.n"), not_in=[1, 2])]
    )
    progress: list = []
    msgs = texts(await get_prompt(server, "flow", {"mode": "open"}, progress))
    assert msgs[-1] == (
        "user",
        "Stopped before step 2 of 3 (`maybe`): `found.items.0.n` is `1`, the step needs none "
        "of `1`, `2`. The server did not call `act`, and the 1 later step did not run; tell "
        "the user why the workflow stopped.",
    )
    assert calls == ["look open"]
    assert progress == [(1, 3, "step 1 of 3: first")]
    plan = msgs[1][1]
    assert (
        "2. `maybe`: call the tool `act` and save the result as `acted`, only if the argument `mode` is given "
        "and `found.items.0.n` is none of `1`, `2`"
    ) in plan


@pytest.mark.anyio
async def test_conditions_compare_typed_arguments_as_json_values():
    # an integer argument arrives as the string "1" and is compared as the number 1 (== 1.0, != true, != "1"); a
    # condition that never holds before a side effect is served only acknowledged (dead-condition, issue 38)
    for value, ran in ((1.0, True), (True, False), ("1", False)):
        ack = None if ran else {"dead-condition": "the test runs a condition that never holds"}
        server, calls = _server("stop", condition(arg("count"), equals=value), args=("mode", "count"), acknowledge=ack)
        await get_prompt(server, "flow", {"mode": "x", "count": "1"})
        assert ("act x" in calls) is ran, value


@pytest.mark.anyio
async def test_an_absent_optional_argument_fails_every_condition_but_exists_false():
    for cond, ran in (
        (condition(arg("note"), exists=False), True),
        (condition(arg("note"), not_equals="x"), False),
        (condition(arg("note"), not_in=["x"]), False),
    ):
        server, calls = _server("stop", cond, args=("mode", "note"))
        msgs = texts(await get_prompt(server, "flow", {"mode": "x"}))
        assert ("act x" in calls) is ran, cond
        if not ran:
            assert "the argument `note` was not given" in msgs[-1][1]


# ------------------------------------------------------------------ a gate checks what the tool gets (issue 17)


def _account_server(typ: str, when: Any) -> tuple[MCPServer, list[str]]:
    """One gated step: the condition checks the typed argument ``n``; the tool gets ``acct-{n}``."""
    calls: list[str] = []
    server = MCPServer("gates")

    @server.tool(description="Close an account.")
    def close(account: str) -> str:
        calls.append(account)
        return "closed"

    wf = (
        WorkflowBuilder("flow", "Close one account.")
        .argument("n", required=True, type=typ)
        .tool("close", annotations={"destructiveHint": True})
        .step("close", tool="close", args={"account": const("acct-{n}")}, when=when)
        .build()
    )
    attach(server, skills=None, workflows=[wf])
    return server, calls


@pytest.mark.anyio
@pytest.mark.parametrize(
    "typ, text, canonical",
    [
        ("integer", "1_2", "12"),
        ("integer", "\uff11\uff12", "12"),
        ("integer", "012", "12"),
        ("integer", " 12\n", "12"),
        ("integer", "+12", "12"),
        ("integer", "-0", "0"),
        ("integer", "12.0", None),
        ("number", "1_2", "12"),
        ("number", "012", "12"),
        ("number", " 12", "12"),
        ("number", "12.0", "12"),
        ("number", "1.50", "1.5"),
        ("number", "1e3", "1000"),
        ("number", ".5", "0.5"),
        ("number", "\uff11.5", "1.5"),
        ("boolean", "TRUE", "true"),
        ("boolean", " true", "true"),
        ("boolean", "False", "false"),
    ],
)
async def test_a_typed_argument_not_in_its_canonical_form_is_refused_before_any_step(typ, text, canonical):
    value = {"integer": 12, "number": 12, "boolean": True}[typ]
    server, calls = _account_server(typ, condition(arg("n"), equals=value))
    async with Client(server) as client:
        with pytest.raises(MCPError) as info:
            await client.get_prompt("flow", {"n": text})
    assert info.value.code == -32602
    what = "an integer" if typ == "integer" else "a " + typ
    invalid = "Invalid argument 'n' for prompt 'flow'"
    assert info.value.error.message == (
        f"{invalid}: {text!r} is not the canonical form of {what}; write {canonical}"
        if canonical
        else f"{invalid}: {text!r} is not {what}"
    )
    assert calls == []


@pytest.mark.anyio
@pytest.mark.parametrize(
    "typ, text, value",
    [
        ("integer", "12", 12),
        ("integer", "-12", -12),
        ("integer", "0", 0),
        ("number", "12", 12),
        ("number", "1.5", 1.5),
        ("number", "-0.25", -0.25),
        ("boolean", "true", True),
        ("boolean", "false", False),
    ],
)
async def test_the_canonical_form_runs_and_the_tool_gets_the_text_the_condition_checked(typ, text, value):
    server, calls = _account_server(typ, condition(arg("n"), equals=value))
    msgs = texts(await get_prompt(server, "flow", {"n": text}))
    assert calls == [f"acct-{text}"]
    assert msgs[-1][1] == "Done: all 1 step of `flow` ran on the server."


# ------------------------------------------------------------------------------------------------- refunds


@pytest.mark.anyio
async def test_refund_prompt_on_an_ineligible_order_does_issue_the_refund():
    server, store = demo_server(SKILLS, WORKFLOWS)
    assert store.check_eligibility(store.get_order("A1002"))["eligible"] is False
    result = await get_prompt(server, "refund_flow", {"order_id": "A1002", "reason": "changed my mind"})
    msgs = texts(result)
    assert [r for r, _ in msgs] == ["user", "assistant"] + ["assistant", "user"] * 4 + ["assistant"]
    assert '"order_id": "A1002"' in msgs[0][1] and '"reason": "changed my mind"' in msgs[0][1]
    assert "supervisor's approval" in msgs[0][1]  # the workflow's context
    assert "Plan: 4 steps" in msgs[1][1] and "`issue_refund`" in msgs[1][1]
    assert '"eligible": false' in msgs[5][1] and "final-sale" in msgs[5][1]
    assert "Guidance (the server cannot apply it" in msgs[6][1] and "Only issue the refund" in msgs[6][1]
    assert '"amount": 59.0' in msgs[6][1] and '"order_id": "A1002"' in msgs[6][1]
    assert '"status": "issued"' in msgs[7][1]
    assert "docs://refund-policy/us" in msgs[8][1] and "Refund policy: United States" in msgs[9][1]
    assert msgs[-1][1].startswith("Done: all 4 steps")
    # The blind spot the skill warns about: the ledger shows a refund for an order the policy refuses.
    assert store.ledger() == [{"refund_id": "R0001", "order_id": "A1002", "amount": 59.0, "status": "issued"}]
    assert store.get_order("A1002")["status"] == "refunded"


@pytest.mark.anyio
async def test_progress_is_reported_once_per_step():
    server, _ = demo_server(SKILLS, WORKFLOWS)
    progress: list = []
    await get_prompt(server, "refund_flow", {"order_id": "A1001"}, progress)
    assert progress == [
        (1, 4, "step 1 of 4: fetch_order"),
        (2, 4, "step 2 of 4: check_eligibility"),
        (3, 4, "step 3 of 4: issue_refund"),
        (4, 4, "step 4 of 4: read_policy"),
    ]


@pytest.mark.anyio
async def test_a_failing_tool_stops_the_run_with_an_error_message():
    server, store = demo_server(SKILLS, WORKFLOWS)
    result = texts(await get_prompt(server, "refund_flow", {"order_id": "A1004"}))
    last = result[-1][1]
    assert last.startswith("Error: the workflow `refund_flow` stopped at step 3 of 4 (`issue_refund`)")
    assert "already refunded" in last and "The 1 later step did not run." in last
    assert not any("docs://refund-policy" in t and r == "user" for r, t in result)
    assert store.ledger() == []
    first = texts(await get_prompt(server, "refund_flow", {"order_id": "NOPE"}))
    assert "stopped at step 1 of 4 (`fetch_order`)" in first[-1][1] and "no order with id 'NOPE'" in first[-1][1]
    assert len(first) == 4  # intent, plan, the call, the error


@pytest.mark.anyio
async def test_the_transcript_is_deterministic():
    runs = []
    for _ in range(2):
        server, _ = demo_server(SKILLS, WORKFLOWS)
        runs.append(texts(await get_prompt(server, "refund_flow", {"order_id": "A1003", "reason": "late"})))
    assert runs[0] == runs[1]
    assert '"eligible": false' in runs[0][5][1] and "refund window" in runs[0][5][1]


# -------------------------------------------------------------------------------------- code mode, hello


@pytest.mark.anyio
async def test_hand_over_when_a_required_parameter_cannot_be_resolved():
    server, _ = demo_server(SKILLS, WORKFLOWS)
    progress: list = []
    result = texts(await get_prompt(server, "code_mode", {"question": "How many customers?"}, progress))
    assert "CREATE TABLE customers" in result[3][1]  # step 1 ran: the schema was read
    last = result[-1]
    assert last[0] == "user"
    assert last[1].startswith("Stopped before step 2 of 2 (`run_query`): the tool `query` requires `sql`")
    assert "the optional argument `sql` was not given" in last[1] and "Over to you" in last[1]
    assert "2. `run_query`: call the tool `query`" in last[1]
    assert not any("Calling the tool `query`" in t for _, t in result)
    assert progress == [(1, 2, "step 1 of 2: read_schema")]


@pytest.mark.anyio
async def test_code_mode_runs_the_query_and_the_tool_is_read_only():
    server, _ = demo_server(SKILLS, WORKFLOWS)
    ok = texts(
        await get_prompt(
            server,
            "code_mode",
            {
                "question": "Customers by country?",
                "sql": "SELECT country, count(*) AS n FROM customers GROUP BY country ORDER BY country",
            },
        )
    )
    rows = json.loads(ok[-2][1].split("```json\n", 1)[1].rsplit("\n```", 1)[0])
    assert rows["columns"] == ["country", "n"]
    assert rows["rows"] == [["AT", 1], ["GB", 2], ["NL", 1], ["US", 2]]
    bad = texts(await get_prompt(server, "code_mode", {"question": "x", "sql": "DELETE FROM customers"}))
    assert "stopped at step 2 of 2" in bad[-1][1] and "read-only" in bad[-1][1]


@pytest.mark.anyio
async def test_hello_world():
    server, _ = demo_server(SKILLS, WORKFLOWS)
    result = texts(await get_prompt(server, "hello_world", {"name": "Ada"}))
    assert result[3] == ("user", 'Result of `greet` (saved as `greeting`):\n```json\n"Hello, Ada!"\n```')


@pytest.mark.anyio
async def test_prompt_argument_errors_are_invalid_params():
    server, _ = demo_server(SKILLS, WORKFLOWS)
    async with Client(server) as client:
        for name, args in [
            ("refund_flow", {}),
            ("refund_flow", {"order_id": "A1", "bogus": "x"}),
            ("hello_world", {"nom": "Ada"}),
        ]:
            with pytest.raises(MCPError) as info:
                await client.get_prompt(name, args)
            assert info.value.code == types.INVALID_PARAMS


@pytest.mark.anyio
async def test_an_unknown_prompt_is_invalid_params_and_known_ones_still_work():
    server, _ = demo_server(SKILLS, WORKFLOWS)
    async with Client(server) as client:
        for name in ["nope", "", "skill.nope", "refund_flow "]:
            with pytest.raises(MCPError) as info:
                await client.get_prompt(name, {})
            assert info.value.code == types.INVALID_PARAMS and info.value.message == f"Unknown prompt: {name}"
        assert any("Hello, Ada!" in t for _, t in texts(await client.get_prompt("hello_world", {"name": "Ada"})))
    attach(server, None, None)  # a second attach adds no second copy of the middleware
    assert sum(getattr(m, "projector_unknown_prompt", False) for m in server.middleware) == 1


# ------------------------------------------------------------------------- typed args, fields, templates


def typed_server() -> tuple[MCPServer, list[dict[str, Any]]]:
    calls: list[dict[str, Any]] = []
    server = MCPServer("typed")

    @server.tool()
    def make_cart(count: int, price: float, gift: bool, label: str) -> dict[str, Any]:
        calls.append({"count": count, "price": price, "gift": gift, "label": label})
        return {"items": [{"sku": f"SKU-{count}", "tags": ["a", "b"]}], "region": "north/east"}

    @server.tool()
    def ship(sku: str, tag: str, note: str = "none") -> str:
        calls.append({"sku": sku, "tag": tag, "note": note})
        return f"shipped {sku}"

    @server.resource("memo://{region}/notes")
    def notes(region: str) -> str:
        return f"notes for {region}"

    wf = (
        WorkflowBuilder("typed_flow", "Exercise every data source.")
        .argument("count", "How many", required=True, type="integer")
        .argument("price", "Unit price", required=True, type="number")
        .argument("gift", "Gift wrap?", required=True, type="boolean")
        .argument("who", "For whom", type="string")
        .tool("make_cart")
        .tool("ship")
        .step(
            "cart",
            tool="make_cart",
            args={"count": arg("count"), "price": arg("price"), "gift": arg("gift"), "label": const("cart for {who}")},
            bind="cart",
        )
        .step(
            "ship",
            tool="ship",
            args={"sku": step("cart", "items.0.sku"), "tag": step("cart", "items.0.tags.1"), "note": arg("who")},
            bind="shipment",
        )
        .step("notes", resources=["memo://{region}/notes"], template={"region": step("cart", "region")})
        .build()
    )
    attach(server, None, [wf])
    return server, calls


@pytest.mark.anyio
async def test_typed_arguments_placeholders_field_paths_and_resource_templates():
    server, calls = typed_server()
    result = texts(await get_prompt(server, "typed_flow", {"count": "3", "price": "2.5", "gift": "true", "who": "Bo"}))
    assert calls == [
        {"count": 3, "price": 2.5, "gift": True, "label": "cart for Bo"},
        {"sku": "SKU-3", "tag": "b", "note": "Bo"},
    ]
    assert '"count": 3' in result[0][1] and '"gift": true' in result[0][1]  # typed in the intent too
    assert "memo://north%2Feast/notes" in result[-3][1]  # template values are percent-encoded into the URI
    assert result[-2][1].endswith("notes for north/east")
    assert result[-1][1].startswith("Done: all 3 steps")


@pytest.mark.anyio
async def test_optional_parameters_without_values_are_left_out_and_placeholders_hand_over():
    server, calls = typed_server()
    result = texts(await get_prompt(server, "typed_flow", {"count": "1", "price": "4", "gift": "false"}))
    # `label` is required by make_cart and comes from a constant whose {who} was not given: hand over.
    assert "requires `label`" in result[-1][1] and "the argument `who` was not given" in result[-1][1]
    assert calls == []


@pytest.mark.anyio
async def test_bad_typed_values_are_invalid_params():
    server, calls = typed_server()
    async with Client(server) as client:
        for args in [
            {"count": "1.5", "price": "1", "gift": "true"},
            {"count": "x", "price": "1", "gift": "true"},
            {"count": "1", "price": "nan", "gift": "true"},
            {"count": "1", "price": "1", "gift": "yes"},
            {"count": "1", "price": "one", "gift": "true"},
        ]:
            with pytest.raises(MCPError) as info:
                await client.get_prompt("typed_flow", args)
            assert info.value.code == types.INVALID_PARAMS and "Invalid argument" in info.value.error.message
    assert calls == []


# ---------------------------------------------------------------------- a tool parameter's default, on both surfaces

# One answer on both surfaces: an optional input that feeds a tool parameter with a ``default`` is left out when the
# user gave none, by the server-side workflow prompt and by a model that follows the SKILL.md.
#
# The server side runs through a real in-memory client on an ``MCPServer`` whose tool records what it receives. The
# skill side reads the rendered SKILL.md's argument list and follows it as a model would: it sends a given input, and
# leaves out an argument whose instruction says to leave it out. Both must send the tool the same arguments.

# One argument line of a step in SKILL.md: "- `key`: description".
ARG_LINE = re.compile(r"^- `([^`]+)`: (.*)$")
LEAVE_OUT = re.compile(r"^the input `([^`]+)`; if the user gave none, leave it out \(the tool uses `([^`]*)`\)$")
GIVEN = re.compile(r"^the input `([^`]+)`$")


def _diffs_server() -> tuple[MCPServer, list[dict[str, Any]]]:
    server = MCPServer("diffs")
    calls: list[dict[str, Any]] = []

    @server.tool(description="Show the staged diff.", annotations=ToolAnnotations(read_only_hint=True))
    def diff_staged(repo_path: str, context_lines: int = 3) -> str:
        calls.append({"repo_path": repo_path, "context_lines": context_lines})
        return "diff"

    return server, calls


async def _diffs_workflow(server: MCPServer):
    listed = {t.name: t for t in await server.list_tools()}["diff_staged"]
    assert listed.input_schema["properties"]["context_lines"]["default"] == 3  # the tool's own schema says so
    return (
        WorkflowBuilder("review_staged", "Review the staged changes.")
        .argument("repo_path", "The repository", required=True, type="string")
        .argument("context_lines", "Lines of context", type="integer")
        .tool(
            "diff_staged",
            listed.description or "",
            input_schema=listed.input_schema,
            annotations={"readOnlyHint": True},
        )
        .step(
            "diff",
            tool="diff_staged",
            args={"repo_path": arg("repo_path"), "context_lines": arg("context_lines")},
            bind="diff",
        )
        .build()
    )


def _skill_arguments(skill_md: str, given: dict[str, Any]) -> dict[str, Any]:
    """What a model following the SKILL.md's argument list sends, for the user's ``given`` inputs; an instruction
    this follower does not understand fails the test (it would have to invent a value)."""
    sent: dict[str, Any] = {}
    lines = [m.groups() for m in map(ARG_LINE.match, skill_md.splitlines()) if m]
    assert lines, skill_md
    for key, how in lines:
        leave = LEAVE_OUT.match(how)
        name = (leave or GIVEN.match(how) or pytest.fail(f"`{key}`: no value the follower can take: {how}")).group(1)
        if name in given:
            sent[key] = given[name]
        elif leave is None:
            pytest.fail(f"`{key}`: the input `{name}` was not given and the skill does not say to leave it out")
    return sent


@pytest.mark.parametrize(
    "given", [{"repo_path": "/r"}, {"repo_path": "/r", "context_lines": 7}], ids=["left-out", "given"]
)
async def test_an_optional_input_with_a_tool_default_gets_the_same_arguments_on_both_surfaces(given):
    server, calls = _diffs_server()
    wf = await _diffs_workflow(server)
    attach(server, None, [wf])
    async with Client(server) as client:
        result = await client.get_prompt("review_staged", {k: str(v) for k, v in given.items()})
    assert result.messages[-1].content.text.startswith("Done: all 1 step")
    skill_md = project(wf).files["SKILL.md"].decode("utf-8")
    assert (
        "- `context_lines`: the input `context_lines`; if the user gave none, leave it out (the tool uses `3`)"
        in skill_md
    )
    # The tool sees its default when the argument is left out, so "the same arguments" is what was sent: the server
    # run leaves it out exactly when the skill says to.
    server_sent = {k: v for k, v in calls[0].items() if k in given}
    assert calls == [{"repo_path": "/r", "context_lines": given.get("context_lines", 3)}]
    assert _skill_arguments(skill_md, given) == server_sent == given


# ------------------------------------------------------------- a step's arguments against the tool's schema, at run time


def _strict_server() -> tuple[MCPServer, list[Any]]:
    """Tools whose framework (MCPServer: pydantic, lax) would coerce what their JSON Schema refuses: ``"-1e999"``
    into an infinity, ``2.5`` into an error only once the call is made. Each workflow passes an input that fits at
    build time (a result's type is known only at run time; a number may be whole) and not at run time."""
    calls: list[Any] = []
    server = MCPServer("strict")

    @server.tool()
    def echo(text: str) -> dict[str, str]:
        """Say the text back."""
        return {"value": text}

    @server.tool()
    def refund(amount: float) -> str:
        """Refund an amount."""
        calls.append(("refund", amount))
        return "refunded"

    @server.tool()
    def pack(count: int) -> str:
        """Pack some boxes."""
        calls.append(("pack", count))
        return "packed"

    refund_said = (
        WorkflowBuilder("refund_said", "Refund the amount the user said.")
        .argument("amount", "The amount", required=True)
        .tool("echo")
        .tool("refund")
        .step("say", tool="echo", args={"text": arg("amount")}, bind="said")
        .step("refund", tool="refund", args={"amount": step("said", "value")})
        .build()
    )
    pack_some = (
        WorkflowBuilder("pack_some", "Pack boxes.")
        .argument("count", "How many", required=True, type="number")
        .tool("pack")
        .step("pack", tool="pack", args={"count": arg("count")})
        .build()
    )
    refund_confirmed = (
        WorkflowBuilder("refund_confirmed", "Refund the amount the user said, once a person says yes.")
        .argument("amount", "The amount", required=True)
        .tool("echo")
        .tool("refund")
        .step("say", tool="echo", args={"text": arg("amount")}, bind="said")
        .step("refund", tool="refund", args={"amount": step("said", "value")}, confirm=confirm("Refund it?"))
        .build()
    )
    attach(server, None, [refund_said, pack_some, refund_confirmed])
    return server, calls


@pytest.mark.parametrize(
    ("prompt", "args", "tool", "said"),
    [
        ("refund_said", {"amount": "-1e999"}, "refund", "`amount`: '-1e999' is not of type 'number'"),
        ("pack_some", {"count": "2.5"}, "pack", "`count`: 2.5 is not of type 'integer'"),
    ],
    ids=["not-a-finite-number", "wrong-type"],
)
async def test_arguments_the_tools_schema_refuses_stop_the_step_before_the_call(prompt, args, tool, said):
    """Issue 38, item 10: the run checks a step's arguments against the tool's input schema, as the server lists it,
    before the call (the rule ``build`` applies to constants); the transcript says why and nothing is called."""
    server, calls = _strict_server()
    result = texts(await get_prompt(server, prompt, args))
    last = result[-1][1]
    assert last.startswith(f"Error: the workflow `{prompt}` stopped at step")
    assert f"the arguments do not fit the input schema of the tool `{tool}`, so it was not called ({said})" in last
    assert not any(f"Calling the tool `{tool}`" in text for _, text in result)
    assert calls == []


NESTED = """\
name: find_orders
description: Find a customer's orders.
arguments:
  - {name: who, description: The customer, required: true}
  - {name: since, description: The first day}
tools:
  - name: search
    description: Search the orders.
    input_schema: {type: object, properties: {query: {type: object}}, required: [query]}
steps:
  - name: search
    tool: search
    args:
      query:
        const:
          all: [{customer: "{who}"}, "status:{open}", [1, "{who}-{who}"]]
          "{who}": {note: "{nobody} is text: no argument of that name"}
    bind: found
"""


def _search_server() -> tuple[MCPServer, list[Any]]:
    calls: list[Any] = []
    server = MCPServer("orders")

    @server.tool()
    def search(query: dict[str, Any]) -> str:
        """Search the orders."""
        calls.append(query)
        return "found"

    return server, calls


async def test_placeholders_inside_a_constants_lists_and_maps_are_filled(tmp_path):
    """Issue 38, item 10: ``{arg}`` in the strings inside a constant's lists and maps is the argument's text, as in
    a string constant; a ``{name}`` that names no argument stays text, and a key is not filled, so the file loads
    (and a file that loaded before runs) as written. The skill says the same."""
    path = tmp_path / "find-orders.yaml"
    path.write_text(NESTED, encoding="utf-8")
    server, calls = _search_server()
    attach(server, None, path)
    result = texts(await get_prompt(server, "find_orders", {"who": "Ada"}))
    assert result[-1][1].startswith("Done: all 1 step")
    assert calls == [
        {
            "all": [{"customer": "Ada"}, "status:{open}", [1, "Ada-Ada"]],
            "{who}": {"note": "{nobody} is text: no argument of that name"},
        }
    ]
    from projector.load import load_all

    skill_md = project(load_all([str(path)])[0]).files["SKILL.md"].decode("utf-8")
    assert "with `{who}` replaced by the input `who`" in skill_md


async def test_a_placeholder_inside_a_constant_of_an_argument_not_given_hands_over(tmp_path):
    """An optional argument a nested placeholder takes, not given: as for a string constant, the run hands over
    before the step, and the tool is not called with the placeholder's text."""
    path = tmp_path / "find-orders.yaml"
    path.write_text(NESTED.replace('customer: "{who}"', 'customer: "{since}"'), encoding="utf-8")
    server, calls = _search_server()
    attach(server, None, path)
    result = texts(await get_prompt(server, "find_orders", {"who": "Ada"}))
    assert "requires `query`" in result[-1][1] and "the argument `since` was not given" in result[-1][1]
    assert calls == []


async def test_a_step_a_person_confirms_is_checked_before_anyone_is_asked():
    """No one is asked to say yes to a call whose arguments the tool's schema refuses: the run stops first."""
    server, calls = _strict_server()
    asked: list[Any] = []

    async def yes(_ctx: Any, params: Any) -> ElicitResult:
        asked.append(params)
        return ElicitResult(action="accept", content={"confirm": True})

    async with Client(server, elicitation_callback=yes) as client:
        result = await client.get_prompt("refund_confirmed", {"amount": "-1e999"})
    last = result.messages[-1].content.text
    assert "the arguments do not fit the input schema of the tool `refund`, so it was not called" in last
    assert asked == [] and calls == []


async def test_an_asked_input_a_placeholder_inside_a_constant_takes_is_asked_before_its_step(tmp_path):
    """``ask: true`` on an input that only a placeholder inside a constant's map takes: the run asks for it before
    that step, as for any input the step reads, and fills it in."""
    path = tmp_path / "find-orders.yaml"
    text = NESTED.replace('customer: "{who}"', 'customer: "{since}"').replace(
        "{name: since, description: The first day}", "{name: since, description: The first day, ask: true}"
    )
    path.write_text(text, encoding="utf-8")
    server, calls = _search_server()
    attach(server, None, path)
    asked: list[Any] = []

    async def give(_ctx: Any, params: Any) -> ElicitResult:
        asked.append(params.requested_schema["required"])
        return ElicitResult(action="accept", content={"since": "2024-01-01"})

    async with Client(server, elicitation_callback=give) as client:
        result = await client.get_prompt("find_orders", {"who": "Ada"})
    assert result.messages[-1].content.text.startswith("Done: all 1 step")
    assert asked == [["since"]]
    assert calls[0]["all"][0] == {"customer": "2024-01-01"}
