"""A person in the loop that the server enforces (issue 22): ``refund_flow_approved``'s ``confirm:`` and ``ask:``
through ``prompts/get`` and the 2026-07-28 ``InputRequiredResult``, on both frameworks, in memory and over HTTP with
two ``serve`` processes that share a state key behind a client that alternates between them.

Driven through mcp's public ``Client`` (its elicitation callback, or ``client.session.get_prompt(...,
allow_input_required=True)`` to hold the state in hand). The sealing itself (AES-GCM, the binding to the request) is
mcp's ``request_state``; what is pinned here is projector's use of it: nothing runs unconfirmed, a retry never calls
an earlier tool again, a state that does not verify runs nothing, and a yes runs its step once.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import ElicitResult, InputRequiredResult

from projector.server import attach
from projector.server.demo import demo_server
from projector.server.errors import AttachError

from .test_serve_skills import ROOT, free_port, serve_args, stop

FRAMEWORKS = ["mcp", "fastmcp"]
PROMPT = "refund_flow_approved"
STEP_TOOLS = ("get_order", "check_eligibility", "issue_refund")
pytestmark = pytest.mark.anyio


def answer(kind: str, **content: Any):
    """An elicitation callback that answers every question the same way, and counts them."""
    asked: list[str] = []

    async def on_elicit(_ctx: Any, params: Any) -> ElicitResult:
        asked.append(params.message)
        if kind == "yes":
            return ElicitResult(action="accept", content={"confirm": True, **content})
        if kind == "no":
            return ElicitResult(action="accept", content={"confirm": False, **content})
        return ElicitResult(action=kind)  # decline, cancel

    on_elicit.asked = asked  # type: ignore[attr-defined]
    return on_elicit


def served(framework: str) -> tuple[Any, Any, Counter]:
    """The demo server, its store, and a count of the store's calls by tool (a retry must not call one again)."""
    server, store = demo_server(framework=framework)
    calls: Counter = Counter()
    for name in STEP_TOOLS:
        real = getattr(store, name)

        def counted(*a: Any, _real: Any = real, _name: str = name, **k: Any) -> Any:
            calls[_name] += 1
            return _real(*a, **k)

        setattr(store, name, counted)
    return server, store, calls


def target(server: Any, framework: str) -> Any:
    return server if framework == "mcp" else server._mcp_server  # FastMCP's low-level server, in memory


def texts(result: Any) -> list[tuple[str, str]]:
    return [(m.role, m.content.text) for m in result.messages]


async def run(framework: str, kind: str | None, args: dict[str, str] | None = None):
    server, store, calls = served(framework)
    callback = answer(kind) if kind else None
    async with Client(target(server, framework), **({"elicitation_callback": callback} if callback else {})) as c:
        result = await c.get_prompt(PROMPT, args or {"order_id": "A1001", "reason": "broken"})
    return texts(result), store.ledger(), calls, (callback.asked if callback else [])


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_yes_runs_the_step_once_and_the_retry_calls_no_earlier_tool(framework):
    transcript, ledger, calls, asked = await run(framework, "yes")
    assert len(asked) == 1 and asked[0].startswith("Issue this refund? It cannot be undone.")
    assert "- `order.total`: 129.0" in asked[0] and '- the input `reason`: "broken"' in asked[0]
    assert [r["order_id"] for r in ledger] == ["A1001"]
    assert calls == Counter(get_order=1, check_eligibility=1, issue_refund=1)
    assert "Confirmed: Issue this refund? It cannot be undone. (a person answered yes)." in transcript[6][1]
    assert transcript[-1][1] == f"Done: all 4 steps of `{PROMPT}` ran on the server."


@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize(
    "kind, said", [("no", "they answered no"), ("decline", "they declined"), ("cancel", "they cancelled the question")]
)
async def test_anything_but_yes_stops_before_the_step_and_names_it(framework, kind, said):
    transcript, ledger, calls, asked = await run(framework, kind)
    assert ledger == [] and len(asked) == 1 and calls["issue_refund"] == 0
    assert transcript[-1] == (
        "user",
        "Stopped before step 3 of 4 (`issue_refund`): the person did not confirm it "
        f'("Issue this refund? It cannot be undone."): {said}. The server did not call '
        "`issue_refund`, and the 1 later step did not run; tell the user why the workflow "
        "stopped.",
    )


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_a_client_without_elicitation_gets_a_transcript_that_needs_a_confirmation(framework):
    transcript, ledger, calls, _ = await run(framework, None)
    assert ledger == [] and calls["issue_refund"] == 0
    assert 'it needs a person\'s confirmation ("Issue this refund? It cannot be undone.")' in transcript[-1][1]
    assert "the step never runs unconfirmed" in transcript[-1][1]


async def test_an_older_protocol_gets_the_same_transcript_as_no_elicitation():
    server, store, _ = served("mcp")
    async with Client(server, mode="legacy", elicitation_callback=answer("yes")) as c:
        result = await c.get_prompt(PROMPT, {"order_id": "A1001", "reason": "broken"})
    assert store.ledger() == [] and "it needs a person's confirmation" in texts(result)[-1][1]


async def test_the_condition_comes_first_on_an_ineligible_order():
    transcript, ledger, _, asked = await run("mcp", "yes", {"order_id": "A1002", "reason": "x"})
    assert ledger == [] and asked == []  # nobody is asked about a refund the policy refuses
    assert "`eligibility.eligible` is `false`" in transcript[-1][1] or "eligible" in transcript[-1][1]


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_an_asked_input_is_asked_where_first_needed_and_joins_the_arguments(framework):
    server, store, calls = served(framework)
    asked: list[Any] = []

    async def on_elicit(_ctx: Any, params: Any) -> ElicitResult:
        asked.append(params)
        if "reason" in params.requested_schema["properties"]:
            return ElicitResult(action="accept", content={"reason": "arrived broken"})
        return ElicitResult(action="accept", content={"confirm": True})

    async with Client(target(server, framework), elicitation_callback=on_elicit) as c:
        result = await c.get_prompt(PROMPT, {"order_id": "A1001"})
    assert [sorted(p.requested_schema["properties"]) for p in asked] == [["reason"], ["confirm"]]
    assert asked[0].requested_schema["properties"]["reason"]["type"] == "string"
    assert "Why the customer asked for the refund" in asked[0].message
    assert '- the input `reason`: "arrived broken"' in asked[1].message
    assert len(store.ledger()) == 1 and calls == Counter(get_order=1, check_eligibility=1, issue_refund=1)
    assert texts(result)[-1][1].startswith("Done")


async def test_a_refused_input_stops_where_it_is_first_needed():
    server, store, _ = served("mcp")
    async with Client(server, elicitation_callback=answer("decline")) as c:
        result = await c.get_prompt(PROMPT, {"order_id": "A1001"})
    last = texts(result)[-1][1]
    assert store.ledger() == [] and last.startswith(
        "Stopped before step 3 of 4 (`issue_refund`): it needs the input `reason`"
    )
    assert "the person did not give it (they declined)" in last


async def first_round(client: Client) -> InputRequiredResult:
    first = await client.session.get_prompt(
        PROMPT, {"order_id": "A1001", "reason": "broken"}, allow_input_required=True
    )
    assert isinstance(first, InputRequiredResult) and first.request_state
    assert list(first.input_requests) == ["confirm-3"]
    return first


YES = {"confirm-3": ElicitResult(action="accept", content={"confirm": True})}


def tampered(state: str) -> str:
    i = len(state) // 2
    return state[:i] + ("A" if state[i] != "A" else "B") + state[i + 1 :]


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_a_modified_state_is_refused_with_nothing_run(framework):
    server, store, calls = served(framework)
    async with Client(target(server, framework), elicitation_callback=answer("yes")) as c:
        first = await first_round(c)
        before = Counter(calls)
        with pytest.raises(MCPError) as refused:
            await c.session.get_prompt(
                PROMPT,
                {"order_id": "A1001", "reason": "broken"},
                input_responses=YES,
                request_state=tampered(first.request_state),
                allow_input_required=True,
            )
    assert refused.value.error.code == -32602
    assert calls == before and store.ledger() == []


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_a_replayed_yes_does_not_refund_twice(framework):
    server, store, calls = served(framework)
    args = {"order_id": "A1001", "reason": "broken"}
    async with Client(target(server, framework), elicitation_callback=answer("yes")) as c:
        first = await first_round(c)
        done = await c.session.get_prompt(PROMPT, args, input_responses=YES, request_state=first.request_state)
        assert texts(done)[-1][1].startswith("Done")
        with pytest.raises(MCPError) as refused:
            await c.session.get_prompt(
                PROMPT, args, input_responses=YES, request_state=first.request_state, allow_input_required=True
            )
    assert refused.value.error.code == -32602 and "answered before" in refused.value.error.message
    assert len(store.ledger()) == 1 and calls["issue_refund"] == 1


async def test_a_state_for_other_arguments_is_refused():
    server, store, _ = served("mcp")
    async with Client(server, elicitation_callback=answer("yes")) as c:
        first = await first_round(c)
        with pytest.raises(MCPError) as refused:
            await c.session.get_prompt(
                PROMPT,
                {"order_id": "A1003", "reason": "broken"},
                input_responses=YES,
                request_state=first.request_state,
                allow_input_required=True,
            )
    assert refused.value.error.code == -32602 and store.ledger() == []


async def test_the_frameworks_give_equal_transcripts():
    for kind in ("yes", "no", None):
        mcp_run, fast_run = await run("mcp", kind), await run("fastmcp", kind)
        assert mcp_run[0] == fast_run[0] and mcp_run[1] == fast_run[1]


def test_serve_refuses_a_short_state_key_with_bad_state_key(capsys, monkeypatch):
    """The bad-input case tests/bad_inputs/bad-state-key.env: exit 1, ``bad-state-key``, nothing served; and
    ``attach(state_key=...)`` raises the same."""
    from projector.server.cli import main

    line = next(
        x
        for x in (ROOT / "tests" / "bad_inputs" / "bad-state-key.env").read_text().splitlines()
        if x.startswith("PROJECT_SKILL_STATE_KEY=")
    )
    key = line.split("=", 1)[1]
    monkeypatch.setenv("PROJECT_SKILL_STATE_KEY", key)
    rc = main("serve", ["--skills", str(ROOT / "generated_skills"), "--workflows", str(ROOT / "workflows")])
    err = capsys.readouterr().err
    assert rc == 1, err
    assert "bad-state-key" in err and "Traceback" not in err
    monkeypatch.delenv("PROJECT_SKILL_STATE_KEY")
    with pytest.raises(AttachError) as refused:
        demo_server_with_key(key)
    assert refused.value.diagnostics[0].code == "bad-state-key"


def demo_server_with_key(key: str) -> None:
    from projector.server.demo import add_demo_tools

    from mcp.server.mcpserver import MCPServer

    server = MCPServer("shop")
    add_demo_tools(server)
    attach(server, None, ROOT / "workflows" / "refunds-approved.yaml", state_key=key)


# ------------------------------------------------------------------------------------- two processes over HTTP


def start(env: dict[str, str], framework: str, *flags: str) -> tuple[subprocess.Popen, int]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, *serve_args(), "--framework", framework, "--http", f"127.0.0.1:{port}", *flags],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, **env},
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {proc.stderr.read().decode()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc, port
        except OSError:
            time.sleep(0.1)
    stop(proc)
    raise RuntimeError("server did not start")


class RoundRobin(httpx2.AsyncBaseTransport):
    """Each HTTP request to the next of two servers; records which one got each ``prompts/get``."""

    def __init__(self, ports: list[int]):
        self.ports, self.i = ports, 0
        self.inner = httpx2.AsyncHTTPTransport()
        self.prompts: list[tuple[int, dict]] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        port = self.ports[self.i % len(self.ports)]
        self.i += 1
        body = json.loads(request.content or b"{}") if request.method == "POST" else {}
        if body.get("method") == "prompts/get":
            self.prompts.append((port, body["params"]))
        request.url = request.url.copy_with(port=port)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def ledger(port: int) -> list[dict]:
    async with Client(f"http://127.0.0.1:{port}/mcp", cache=None) as c:
        result = await c.call_tool("list_refunds", {})
    return result.structured_content["result"]


@pytest.fixture(params=FRAMEWORKS)
def two_processes(request, tmp_path: Path):
    env = {"PROJECT_SKILL_STATE_KEY": secrets.token_hex(32), "PROJECT_SKILL_REPLAY_DB": str(tmp_path / "claims.db")}
    procs: list[subprocess.Popen] = []
    try:
        for _ in range(2):
            proc, port = start(env, request.param)
            procs.append((proc, port))
        yield [port for _, port in procs]
    finally:
        for proc, _ in procs:
            stop(proc)


async def alternating(ports: list[int], kind: str | None) -> tuple[list[tuple[str, str]], RoundRobin, list[str]]:
    balancer = RoundRobin(ports)
    http = httpx2.AsyncClient(transport=balancer, timeout=httpx2.Timeout(30, read=60))
    callback = answer(kind) if kind else None
    async with (
        http,
        Client(
            streamable_http_client(f"http://127.0.0.1:{ports[0]}/mcp", http_client=http),
            cache=None,
            **({"elicitation_callback": callback} if callback else {}),
        ) as c,
    ):
        result = await c.get_prompt(PROMPT, {"order_id": "A1001", "reason": "broken"})
    return texts(result), balancer, (callback.asked if callback else [])


@pytest.mark.slow
async def test_two_processes_sharing_a_key_enforce_the_confirmation(two_processes):
    ports = two_processes

    async def refunds() -> list[dict]:
        return [r for p in ports for r in await ledger(p)]

    # no: nothing refunded, the transcript names the step
    transcript, balancer, asked = await alternating(ports, "no")
    assert len(asked) == 1 and await refunds() == []
    assert transcript[-1][1].startswith("Stopped before step 3 of 4 (`issue_refund`): the person did not confirm it")
    assert len({port for port, _ in balancer.prompts}) == 2  # the retry went to the other process
    # a client without elicitation: no refund, and a transcript that says a confirmation is needed
    transcript, _, _ = await alternating(ports, None)
    assert "it needs a person's confirmation" in transcript[-1][1] and await refunds() == []
    # a modified state: refused by the other process, nothing run
    async with Client(f"http://127.0.0.1:{ports[0]}/mcp", cache=None, elicitation_callback=answer("yes")) as c:
        first = await first_round(c)
    async with Client(f"http://127.0.0.1:{ports[1]}/mcp", cache=None, elicitation_callback=answer("yes")) as c:
        with pytest.raises(MCPError) as refused:
            await c.session.get_prompt(
                PROMPT,
                {"order_id": "A1001", "reason": "broken"},
                input_responses=YES,
                request_state=tampered(first.request_state),
                allow_input_required=True,
            )
    assert refused.value.error.code == -32602 and await refunds() == []
    # yes: asked once, exactly one refund, the retry answered by the other process
    transcript, balancer, asked = await alternating(ports, "yes")
    assert len(asked) == 1 and transcript[-1][1].startswith("Done")
    (p1, _), (p2, retry) = balancer.prompts
    assert p1 != p2 and retry["requestState"] and retry["inputResponses"]["confirm-3"]["action"] == "accept"
    assert [r["order_id"] for r in await refunds()] == ["A1001"]
    # the same yes replayed, to either process: refused, still one refund
    for port in ports:
        async with Client(f"http://127.0.0.1:{port}/mcp", cache=None, elicitation_callback=answer("yes")) as c:
            with pytest.raises(MCPError) as refused:
                await c.session.get_prompt(
                    PROMPT,
                    {"order_id": "A1001", "reason": "broken"},
                    input_responses=YES,
                    request_state=retry["requestState"],
                    allow_input_required=True,
                )
        assert refused.value.error.code == -32602
    assert [r["order_id"] for r in await refunds()] == ["A1001"]


@pytest.mark.slow
async def test_processes_with_different_keys_refuse_each_others_state(tmp_path):
    procs = [
        start(
            {
                "PROJECT_SKILL_STATE_KEY": secrets.token_hex(32),
                "PROJECT_SKILL_REPLAY_DB": str(tmp_path / f"claims-{i}.db"),
            },
            "mcp",
        )
        for i in range(2)
    ]
    try:
        (_, a), (_, b) = procs
        async with Client(f"http://127.0.0.1:{a}/mcp", cache=None, elicitation_callback=answer("yes")) as c:
            first = await first_round(c)
        async with Client(f"http://127.0.0.1:{b}/mcp", cache=None, elicitation_callback=answer("yes")) as c:
            with pytest.raises(MCPError) as refused:
                await c.session.get_prompt(
                    PROMPT,
                    {"order_id": "A1001", "reason": "broken"},
                    input_responses=YES,
                    request_state=first.request_state,
                    allow_input_required=True,
                )
        assert refused.value.error.code == -32602
        assert await ledger(a) == [] and await ledger(b) == []
    finally:
        for proc, _ in procs:
            stop(proc)


# --------------------------------------------------------------------------------------- the TypeScript SDK v2


def _node_and_client() -> tuple[str, str]:
    from .test_peers import _conformance_script

    script = _conformance_script()
    cache = script.cache_dir()
    script.install(cache, log=lambda *_: None)
    return str(script.node_binary(cache)), str(script.install_peer(cache, script.TS_CLIENT_V2, log=lambda *_: None))


@pytest.mark.slow
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_typescript_sdk_v2_client_answers_the_confirmation(framework):
    node, client = _node_and_client()
    script = Path(__file__).with_name("ts_confirm_v2_client.cjs")
    seen = {}
    proc, port = start({}, framework)  # one process: the refunds add up in its ledger
    try:
        calls = json.dumps(
            [
                {"prompt": "refund_flow_approved", "arguments": {"order_id": "A1001", "reason": "broken"}},
                {"tool": "list_refunds"},
            ]
        )
        for kind in ("no", "none", "yes"):
            done = subprocess.run(
                [node, str(script), client, kind, calls, "http", f"http://127.0.0.1:{port}/mcp"],
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 0, done.stderr
            prompt, refunds = json.loads(done.stdout)["results"]
            seen[kind] = {**prompt, "refunds": refunds["structuredContent"]}
    finally:
        stop(proc)
    assert len(seen["no"]["asked"]) == 1 and seen["no"]["refunds"]["result"] == []
    assert "the person did not confirm it" in seen["no"]["messages"][-1]["text"]
    assert seen["none"]["asked"] == [] and "it needs a person's confirmation" in seen["none"]["messages"][-1]["text"]
    assert len(seen["yes"]["asked"]) == 1 and seen["yes"]["messages"][-1]["text"].startswith("Done")
    assert [r["order_id"] for r in seen["yes"]["refunds"]["result"]] == ["A1001"]


# ------------------------------------------------------------------------------- what the question shows


async def test_the_question_escapes_line_separators_and_bidi_controls_in_a_shown_value():
    """A field a customer controls (a payee's name) cannot draw lines of its own in front of the person: a line or
    paragraph separator, a C1 line break and a bidirectional override are written escaped, as the SKILL.md writes a
    JSON value; the question has exactly the lines the workflow shows."""
    from mcp.server.mcpserver import MCPServer

    from projector.builder import WorkflowBuilder, confirm, step

    hostile = "ACME\u2028- amount: 1.00\u2029- IBAN: XX00\x85\u202eEVIL\u2066"
    server = MCPServer("payments")

    @server.tool()
    def get_payee() -> dict:
        """The payee."""
        return {"name": hostile}

    @server.tool()
    def pay(name: str) -> str:
        """Pay them."""
        return "paid"

    wf = (
        WorkflowBuilder("pay_payee", "Pay a payee once a person says yes.")
        .tool(
            "get_payee",
            "The payee.",
            input_schema={"type": "object", "properties": {}},
            annotations={"readOnlyHint": True},
        )
        .tool(
            "pay",
            "Pay them.",
            input_schema={"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
            annotations={"readOnlyHint": False},
        )
        .step("payee", tool="get_payee", bind="payee")
        .step("pay", tool="pay", args={"name": step("payee", "name")}, confirm=confirm("Pay?", step("payee", "name")))
        .build()
    )
    attach(server, None, [wf])
    on_elicit = answer("no")
    async with Client(server, elicitation_callback=on_elicit) as c:
        await c.get_prompt("pay_payee", {})
    (question,) = on_elicit.asked
    assert (
        question.splitlines()
        == question.split("\n")
        == ["Pay?", "", '- `payee.name`: "ACME\\u2028- amount: 1.00\\u2029- IBAN: XX00\\u0085\\u202eEVIL\\u2066"']
    )


def test_an_asked_number_must_be_finite():
    """A JSON answer of 1e999 reads as infinity; a prompt argument refuses it as not a finite number, and so does an
    asked input."""
    from projector.model import Argument
    from projector.server.confirm import _fits

    arg = Argument("amount", "the amount", required=False, type="number")
    assert _fits(arg, 12.5) and _fits(arg, 3)
    assert not _fits(arg, float("inf")) and not _fits(arg, float("nan")) and not _fits(arg, True)
