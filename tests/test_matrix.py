"""``project-skill matrix``: the reader, the policy, the agent tool (composing from a lock made at set-up), and the
harness over a real stdio transport.

The slow part (one full measurement, ~20 s, and a second run of the refunds task) runs once per module."""

from __future__ import annotations

import functools
import json
import shutil
from dataclasses import replace
from pathlib import Path

import anyio
import pytest
from mcp import Client

from projector.matrix import cli as matrix_cli
from projector.matrix import harness
from projector.matrix.agent import AGENT_TOOL, READ_COMPOSED, SERVER, TRACE_TOOL, make_lock, register_agent
from projector.matrix.policy import judge
from projector.matrix.reader import ReadError, parse, parse_source

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "docs" / "data" / "matrix.json"


@pytest.fixture(scope="module")
def fresh() -> dict:
    """One full measurement of the committed tree."""
    return anyio.run(harness.measure, ROOT)


def _runs(data: dict, task: str) -> dict[tuple[str, str], dict]:
    t = next(t for t in data["tasks"] if t["task"] == task)
    return {(r["surface"], r["scenario"]): r for r in t["runs"]}


# ------------------------------------------------------------------------------------------------------ the reader

def test_reader_follows_the_generated_refund_skill():
    proc = parse((ROOT / "generated_skills/refund-flow/SKILL.md").read_text())
    assert proc.name == "refund-flow"
    assert proc.inputs == {"order_id": "string", "reason": "string"}
    assert [s.name for s in proc.steps] == ["fetch_order", "check_eligibility", "issue_refund", "read_policy"]
    fetch, check, refund, policy = proc.steps
    assert fetch.tool == "get_order" and fetch.args == [("id", parse_source("the input `order_id`"))]
    assert check.args[0][1].kind == "result" and check.args[0][1].name == "order"
    assert refund.gated and "eligible" in (refund.judgment or "")
    assert [(k, s.kind, s.name, s.path) for k, s in refund.args] == [
        ("order_id", "field", "order", ("id",)), ("amount", "field", "order", ("total",))]
    assert policy.tool is None and policy.resources[0][0] == "docs://refund-policy/{region}"
    assert not fetch.gated and not check.gated


@pytest.mark.parametrize("skill", ["hello-world", "code-mode", "refund-flow", "refund-flow-gated"])
def test_reader_reads_every_shipped_skill(skill):
    proc = parse((ROOT / "generated_skills" / skill / "SKILL.md").read_text())
    assert proc.steps


def test_reader_parses_every_source_kind():
    assert parse_source("the input `x`; if the user gave none, a value you work out yourself").name == "x"
    assert parse_source("the field `items.0.sku` of `order` (step 1)").path == ("items", "0", "sku")
    assert parse_source("the text `` a`b ``").value == "a`b"
    assert parse_source('the value `{"a":1}`').value == {"a": 1}
    with pytest.raises(ReadError):
        parse_source("something else")


def test_reader_refuses_an_unknown_layout():
    with pytest.raises(ReadError):
        parse("---\nname: x\n---\n\n# X\n\nno procedure here\n")
    with pytest.raises(ReadError):
        parse("---\nname: x\n---\n\n## Procedure\n\n### Step 1: a\n\nDo something vague.\n")


# ------------------------------------------------------------------------------------------------------ the policy

def test_policy_follows_the_eligibility_result():
    j = "Only issue the refund if the eligibility check says the order is eligible."
    assert judge(j, {"order": {"id": "A"}, "eligibility": {"eligible": True}}).proceed
    no = judge(j, {"eligibility": {"eligible": False, "reasons": ["final-sale items cannot be refunded"]}})
    assert not no.proceed and "final-sale" in no.reason
    assert not judge(j, {"order": {"id": "A"}}).proceed  # nothing to verify it with
    assert not judge("Only send it if a manager approved.", {"x": {"eligible": True}}).proceed


# ----------------------------------------------------------------------------------------------- the agent, in memory

async def _agent_server(tmp_path: Path, framework: str = "mcp", skills=None):
    """The demo server with the agent, after its set-up: the lock made from the skills it serves."""
    from projector.server.demo import demo_server

    lock = tmp_path / "skills.lock"
    server, store = demo_server(ROOT / "generated_skills" if skills is None else skills, ROOT / "workflows",
                                framework=framework)
    register_agent(server, lock=lock)
    await make_lock(server, lock)
    return server, store, lock


@pytest.mark.anyio
async def test_agent_tool_declines_the_ineligible_order_and_refunds_the_eligible_one(tmp_path):
    server, store, lock = await _agent_server(tmp_path)
    assert [p["uri"] for p in json.loads(lock.read_text())["skills"]] == [
        "skill://code-mode/SKILL.md", "skill://hello-world/SKILL.md", "skill://refund-flow-approved/SKILL.md",
        "skill://refund-flow-gated/SKILL.md", "skill://refund-flow/SKILL.md"]
    async with Client(server) as client:
        res = await client.call_tool(AGENT_TOOL, {"skill": "refund-flow", "arguments": {"order_id": "A1002"}})
        assert not res.is_error
        assert "Did not call `issue_refund`" in res.content[0].text
        assert store.ledger() == []
        res = await client.call_tool(AGENT_TOOL, {"skill": "refund-flow", "arguments": {"order_id": "A1001"}})
        assert [r["order_id"] for r in store.ledger()] == ["A1001"]
        assert res.structured_content is None  # only the final message reaches the client


@pytest.mark.anyio
async def test_agent_tool_on_fastmcp_declines_the_ineligible_order_and_refunds_the_eligible_one(tmp_path):
    fastmcp = pytest.importorskip("fastmcp")
    server, store, _ = await _agent_server(tmp_path, "fastmcp")
    async with fastmcp.Client(server) as client:
        res = await client.call_tool_mcp(AGENT_TOOL, {"skill": "refund-flow", "arguments": {"order_id": "A1002"}})
        assert not res.is_error
        assert "Did not call `issue_refund`" in res.content[0].text
        assert store.ledger() == []
        res = await client.call_tool_mcp(AGENT_TOOL, {"skill": "refund-flow", "arguments": {"order_id": "A1001"}})
        assert not res.is_error
        assert [r["order_id"] for r in store.ledger()] == ["A1001"]
        assert res.structured_content is None  # only the final message reaches the client, as on MCPServer
        trace = await client.call_tool_mcp(TRACE_TOOL, {})
        # No SKILL.md read: the skill reached the agent in its instructions, composed (and verified against the
        # lock) before the loop. The loop's requests are the steps alone.
        assert [q["target"] for q in trace.structured_content["requests"]] == [
            "get_order", "check_eligibility", "issue_refund", "docs://refund-policy/eu"]


@pytest.mark.anyio
@pytest.mark.parametrize("framework", ["mcp", "fastmcp"])
async def test_the_agent_composes_from_the_lock_and_refuses_a_skill_changed_after_set_up(tmp_path, framework):
    """Surface C's trust rule: the lock made at set-up is the approval, and each run composes from it before its
    loop. One byte of one file of the served skill changed after set-up: the run is refused with the lock's
    position and the changed file, before the agent calls a single tool; the other skills still run."""
    if framework == "fastmcp":
        pytest.importorskip("fastmcp")
    from projector.server.skills import SkillTree

    tree = SkillTree.load(ROOT / "generated_skills")
    server, store, lock = await _agent_server(tmp_path, framework, tree)
    tools = "skill://refund-flow/references/tools.md"
    data = bytearray(tree.files[tools].data)
    data[100] ^= 0x01
    tree.files[tools] = replace(tree.files[tools], data=bytes(data))  # the server now serves other bytes

    from projector.server import adapters

    async with Client(adapters.get(framework).in_process(server)) as client:
        res = await client.call_tool(AGENT_TOOL, {"skill": "refund-flow", "arguments": {"order_id": "A1001"}})
        assert res.is_error
        text = res.content[0].text
        assert "refused to run the skill 'refund-flow'" in text and "digest-mismatch" in text, text
        assert f"{lock}:" in text and tools in text, text  # at the lock's entry, naming the changed file
        assert store.ledger() == []
        trace = (await client.call_tool(TRACE_TOOL, {})).structured_content
        assert trace["requests"] == [] and trace["model_turns"] == 0 and "digest-mismatch" in trace["refused"]
        ok = await client.call_tool(AGENT_TOOL, {"skill": "hello-world", "arguments": {"name": "Ada"}})
        assert not ok.is_error and "Hello, Ada!" in ok.content[0].text


@pytest.mark.anyio
async def test_the_agent_reads_its_skills_files_from_the_composition_only(tmp_path):
    """A read of one of the composed skill's own files comes from the composition (the verified bytes, no server
    request); a URI under the skill that its pinned manifest does not list is refused."""
    from projector.matrix.agent import _ServerBackend
    from projector.matrix.reader import StepFailed
    from projector.remote.compose import compose

    server, _, lock = await _agent_server(tmp_path)
    composition = await compose(lock, {SERVER: ["refund-flow"]}, targets={SERVER: server})

    class NoHost:
        async def read_resource(self, uri):
            raise AssertionError(f"the server was asked for {uri}")

    backend = _ServerBackend(NoHost(), composition)
    tools = "skill://refund-flow/references/tools.md"
    assert await backend.read_resource(tools) == (ROOT / "generated_skills/refund-flow/references/tools.md").read_text()
    with pytest.raises(StepFailed, match="unlisted-file"):
        await backend.read_resource("skill://refund-flow/references/other.md")
    assert backend.requests == [{"method": READ_COMPOSED, "target": tools},
                                {"method": READ_COMPOSED, "target": "skill://refund-flow/references/other.md"}]


def test_register_agent_refuses_a_foreign_server(tmp_path):
    with pytest.raises(TypeError, match="MCPServer or a fastmcp.FastMCP"):
        register_agent(object(), lock=tmp_path / "skills.lock")


def test_context_bytes_leave_out_the_envelope_only():
    result = {"content": [{"type": "text", "text": "é"}], "_meta": {"x": 1}, "resultType": "complete"}
    assert harness.context_bytes(result) == len('{"content":[{"text":"é","type":"text"}]}'.encode())


# ------------------------------------------------------------------------------------------------ the measurement

@pytest.mark.slow
def test_only_the_workflow_surface_refunds_the_ineligible_order(fresh):
    runs = _runs(fresh, "refunds")
    refunded = {s for (s, sc), r in runs.items() if sc == "ineligible" and r["refund_issued"]}
    assert refunded == {"workflow"}
    # read from the ledger, not guessed: the flag agrees with the ledger's entries
    for (surface, scenario), r in runs.items():
        assert r["refund_issued"] == any(e["order_id"] == r["order_id"] for e in r["ledger"])
    # and the policy is not a blanket refusal: every surface refunds the eligible order
    assert all(runs[(s, "eligible")]["refund_issued"] for s in harness.SURFACES)


@pytest.mark.slow
def test_the_gated_workflow_surface_closes_the_blind_spot(fresh):
    runs = _runs(fresh, "refunds")
    ok, no = runs[("gated", "eligible")], runs[("gated", "ineligible")]
    assert [e["order_id"] for e in ok["ledger"]] == ["A1001"] and no["ledger"] == []
    assert [(q["method"], q["target"]) for q in no["requests"]] == [("prompts/get", "refund_flow_gated")]
    assert (no["round_trips"], no["model_turns"]) == (1, 1)
    assert no["answer"].startswith("Stopped before step 3 of 4 (`issue_refund`): `eligibility.eligible` is "
                                   "`false`, the step needs `true`.")
    # it stops before the refund and the policy read, so it costs less than the ungated prompt
    assert no["context_bytes"] < runs[("workflow", "ineligible")]["context_bytes"]
    for task in fresh["tasks"][1:]:
        assert "gated" in task["not_applicable"] and all(r["surface"] != "gated" for r in task["runs"])


def _confirmed(run: dict, answer: str, asked: int) -> None:
    """A B3 run: the person's answer, how often they were asked, and a retry of the same prompt per question."""
    assert (run["person_answer"], run["person_asked"]) == (answer, asked)
    assert [(q["method"], q["target"]) for q in run["requests"]] == [("prompts/get", "refund_flow_approved")] * (1 + asked)
    assert (run["round_trips"], run["model_turns"]) == (1 + asked, 1)
    assert run["refund_issued"] == any(e["order_id"] == run["order_id"] for e in run["ledger"])


@pytest.mark.slow
def test_b3_a_yes_on_the_eligible_order_gives_exactly_one_refund(fresh):
    run = _runs(fresh, "refunds")[(harness.CONFIRMED, "eligible-yes")]
    _confirmed(run, "yes", 1)
    assert [e["order_id"] for e in run["ledger"]] == ["A1001"] and run["refund_issued"]
    assert run["answer"] == "Done: all 4 steps of `refund_flow_approved` ran on the server."


@pytest.mark.slow
def test_b3_a_no_on_the_eligible_order_gives_none_and_names_the_step(fresh):
    run = _runs(fresh, "refunds")[(harness.CONFIRMED, "eligible-no")]
    _confirmed(run, "no", 1)
    assert run["ledger"] == [] and not run["refund_issued"]
    assert run["answer"].startswith("Stopped before step 3 of 4 (`issue_refund`): the person did not confirm it")
    assert "they answered no" in run["answer"]


@pytest.mark.slow
@pytest.mark.parametrize("answer", ["yes", "no"])
def test_b3_the_ineligible_order_gets_none_whatever_the_answer_and_nobody_is_asked(fresh, answer):
    run = _runs(fresh, "refunds")[(harness.CONFIRMED, f"ineligible-{answer}")]
    _confirmed(run, answer, 0)  # the condition comes first: one prompts/get, no question
    assert run["ledger"] == [] and not run["refund_issued"]
    assert run["answer"].startswith("Stopped before step 3 of 4 (`issue_refund`): `eligibility.eligible` is "
                                    "`false`, the step needs `true`.")


@pytest.mark.slow
def test_b3_is_stated_as_not_applicable_on_the_tasks_without_a_confirmed_workflow(fresh):
    for task in fresh["tasks"][1:]:
        for surface in (harness.CONFIRMED, harness.CONFIRMED_TASK):
            assert task["not_applicable"][surface].startswith("no confirmed workflow")
            assert all(r["surface"] != surface for r in task["runs"])


@pytest.mark.slow
@pytest.mark.parametrize("order", ["eligible", "ineligible"])
@pytest.mark.parametrize("answer", ["yes", "no"])
def test_b3t_the_confirmation_through_a_task_does_what_b3_does_on_the_wire_of_tasks(fresh, order, answer):
    """Issue 32 item 6: B3's four scenarios measured again with the workflow tool called as an MCP task. The refund
    and the question are B3's; the requests are the task-augmented call, the polls and, when asked, one update."""
    runs = _runs(fresh, "refunds")
    run, b3 = runs[(harness.CONFIRMED_TASK, f"{order}-{answer}")], runs[(harness.CONFIRMED, f"{order}-{answer}")]
    asked = 1 if order == "eligible" else 0  # the condition comes first: nobody is asked about the ineligible order
    assert (run["person_answer"], run["person_asked"]) == (answer, asked) == (b3["person_answer"], b3["person_asked"])
    assert (run["refund_issued"], run["ledger"]) == (b3["refund_issued"], b3["ledger"])
    assert run["refund_issued"] == (order == "eligible" and answer == "yes")
    assert run["answer"] == b3["answer"]  # the same transcript's last line as the prompt's
    methods = [q["method"] for q in run["requests"]]
    assert methods[0] == "tools/call" and run["requests"][0]["target"] == "refund_flow_approved"
    assert methods.count("tools/call") == 1 and methods.count("tasks/update") == asked
    assert methods.count("tasks/get") == 1 + asked  # one per round; a poll finding it working is not counted
    assert run["round_trips"] == len(methods) > b3["round_trips"]


SLOW_ROUND = (  # the demo server, each round of a task taking 1.2 s more than the server's poll interval (0.5 s)
    "import sys, anyio\n"
    "from projector.server import demo\n"
    "async def slow(point, subject):\n"
    "    if point in ('before:get_order', 'before:issue_refund'):\n"
    "        await anyio.sleep(1.2)\n"
    "demo._crash_test = slow\n"
    "from projector.matrix.serve import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


@pytest.mark.slow
@pytest.mark.parametrize("scenario", ["eligible-yes", "ineligible-no"])
def test_b3t_figures_do_not_depend_on_how_fast_the_server_is(monkeypatch, scenario):
    """A slow machine: the task's round outlasts the server's poll interval, so the client's polls find it still
    ``working`` before it asks or ends. Those polls wait on the machine, not on the surface: the figures (round
    trips, context bytes, the requests) are the committed ones all the same, or ``matrix --check`` would fail on
    a slow CI machine."""
    made = harness.server_params

    def slow(*args, **kwargs):
        params = made(*args, **kwargs)
        assert params.args[:2] == ["-m", "projector.matrix.serve"]
        return params.model_copy(update={"args": ["-c", SLOW_ROUND, *params.args[2:]]})

    monkeypatch.setattr(harness, "server_params", slow)
    task = next(t for t in harness.TASKS if t.task == "refunds")
    arguments, said = next((a, s) for sc, a, s in task.confirmed_scenarios if sc == scenario)
    run = anyio.run(functools.partial(harness.run_one, ROOT, task, harness.CONFIRMED_TASK, scenario, arguments,
                                      said=said))
    committed = _runs(json.loads(DATA.read_text()), "refunds")[(harness.CONFIRMED_TASK, scenario)]
    assert run["answer"] == committed["answer"]
    assert ([q["method"] for q in run["requests"]], run["round_trips"], run["context_bytes"]) == \
        ([q["method"] for q in committed["requests"]], committed["round_trips"], committed["context_bytes"])


def test_context_bytes_leave_out_the_sealed_request_state():
    result = {"inputRequests": {"confirm-3": {"message": "ok?"}}, "requestState": "x" * 99,
              "resultType": "input_required"}
    assert harness.context_bytes(result) == len('{"inputRequests":{"confirm-3":{"message":"ok?"}}}'.encode())


@pytest.mark.slow
def test_figures_are_consistent_with_the_recorded_requests(fresh):
    for task in fresh["tasks"]:
        for r in task["runs"]:
            assert r["round_trips"] == len(r["requests"]) > 0
            assert r["context_bytes"] == sum(q["bytes"] for q in r["requests"])
            if r["surface"] == "skill":
                assert r["requests"][0]["target"] == f"skill://{task['skill']}/SKILL.md"
                assert r["model_turns"] == r["round_trips"] + 1
            elif r["surface"] in ("workflow", "gated"):
                assert [q["method"] for q in r["requests"]] == ["prompts/get"]
                assert r["model_turns"] == 1
            elif r["surface"] == harness.CONFIRMED:  # one prompts/get, and its retry when the person was asked
                assert [q["method"] for q in r["requests"]] == ["prompts/get"] * (1 + r["person_asked"])
                assert r["model_turns"] == 1
            elif r["surface"] == harness.CONFIRMED_TASK:  # the call, polls, and an update when the person was asked
                methods = [q["method"] for q in r["requests"]]
                assert methods[0] == "tools/call" and methods[-1] == "tasks/get", methods
                assert methods.count("tasks/update") == r["person_asked"] and r["model_turns"] == 1
            else:
                assert [q["target"] for q in r["requests"]] == [AGENT_TOOL]
                assert r["server_model_turns"] == len(r["server_requests"]) + 1
                # the composed instructions: the SKILL.md, plus the preamble and its origin tag
                skill_md = (ROOT / "generated_skills" / task["skill"] / "SKILL.md").read_bytes()
                assert r["skill_md_bytes"] == len(skill_md) < r["instructions_bytes"]
    # The agent did on the server what the skill's client did over the wire, but for reading the SKILL.md: the skill
    # surface's first request. The agent's SKILL.md came in its instructions, composed from the lock before its loop,
    # so its loop starts at the first step (and has one model turn fewer than before it composed).
    for task in fresh["tasks"]:
        runs = _runs(fresh, task["task"])
        for (surface, sc), r in runs.items():
            if surface == "agent":
                skill = runs[("skill", sc)]["requests"]
                assert skill[0]["target"] == f"skill://{task['skill']}/SKILL.md"
                assert [(q["method"], q["target"]) for q in r["server_requests"]] == \
                    [(q["method"], q["target"]) for q in skill[1:]]


@pytest.mark.slow
def test_figures_are_deterministic_across_two_runs(fresh):
    again = anyio.run(harness.measure, ROOT, harness.TASKS[:1])
    assert again["tasks"][0] == fresh["tasks"][0]


@pytest.mark.slow
def test_committed_data_equals_a_fresh_run(fresh):
    assert DATA.is_file(), "docs/data/matrix.json is missing; run project-skill matrix"
    assert harness.matrix_json(fresh) == DATA.read_bytes(), "docs/data/matrix.json is stale; run project-skill matrix"


@pytest.mark.slow
def test_cli_check_and_write(fresh, tmp_path, monkeypatch, capsys):
    shutil.copytree(ROOT / "generated_skills", tmp_path / "generated_skills")
    monkeypatch.setattr(harness, "measure", lambda root, tasks=harness.TASKS, framework="mcp": _const(fresh))
    assert matrix_cli.main("matrix", ["--root", str(tmp_path), "--check"]) == 1
    assert "out of date" in capsys.readouterr().out
    assert matrix_cli.main("matrix", ["--root", str(tmp_path)]) == 0
    written = tmp_path / "docs/data/matrix.json"
    assert json.loads(written.read_text()) == fresh
    assert matrix_cli.main("matrix", ["--root", str(tmp_path), "--check"]) == 0
    assert "refunds      workflow  ineligible" in capsys.readouterr().out


async def _const(value):
    return value


@pytest.mark.slow
def test_cli_framework_switch_reaches_the_harness(fresh, tmp_path, monkeypatch, capsys):
    shutil.copytree(ROOT / "generated_skills", tmp_path / "generated_skills")
    seen = []

    def measure(root, tasks=harness.TASKS, framework="mcp"):
        seen.append(framework)
        return _const(fresh)

    monkeypatch.setattr(harness, "measure", measure)
    assert matrix_cli.main("matrix", ["--root", str(tmp_path), "--check", "--framework", "fastmcp"]) == 1
    assert "the committed data is measured on mcp" in capsys.readouterr().out
    assert matrix_cli.main("matrix", ["--root", str(tmp_path), "--check"]) == 1
    assert "the committed data is measured on mcp" not in capsys.readouterr().out
    assert seen == ["fastmcp", "mcp"]
    assert matrix_cli.main("matrix", ["--framework", "flask"]) == 2


def test_cli_usage(tmp_path, capsys):
    assert matrix_cli.main("matrix", ["--root", str(tmp_path)]) == 2
    assert "project-skill build" in capsys.readouterr().err
    assert matrix_cli.main("matrix", ["--nope"]) == 2


# ------------------------------------------------------------------------------------------- the same on FastMCP

def _as_mcpserver_prints_it(result: dict) -> dict:
    """A FastMCP ``tools/call`` result as MCPServer puts it on the wire: the one known difference between the two.

    Both send the same ``structuredContent``; the text content is that value printed as JSON, which FastMCP prints
    compactly and MCPServer (``pydantic_core.to_json(value, indent=2)``) with a two-space indent. A string result is
    the same text on both. Anything else (a result that is not exactly FastMCP's compact print of its structured
    content, a non-dict value) is not this difference, so this fails on it."""
    import pydantic_core

    if "structuredContent" not in result:
        return result  # text-only results (the agent's message, prompts, resources): nothing to translate
    value = result["structuredContent"]
    if ((result.get("_meta") or {}).get("fastmcp") or {}).get("wrap_result"):
        value = value["result"]
    if isinstance(value, str):
        assert result["content"] == [{"type": "text", "text": value}], result
        return result
    assert isinstance(value, dict), f"a structured result this comparison does not know: {result}"
    assert result["content"] == [{"type": "text", "text": pydantic_core.to_json(value).decode()}], result
    return {**result, "content": [{"type": "text", "text": pydantic_core.to_json(value, indent=2).decode()}]}


@pytest.mark.slow
def test_figures_are_the_same_on_fastmcp_but_for_the_compact_json_of_tool_results(fresh, monkeypatch):
    """The matrix with the demo on FastMCP (``matrix --framework fastmcp``): every run, answer, ledger, request and
    byte count equals the committed MCPServer data once FastMCP's compact JSON text of a tool's structured result is
    printed as MCPServer prints it; and that difference touches only the skill surface's ``tools/call`` bytes."""
    pytest.importorskip("fastmcp")
    translated: list[dict] = []
    measured = harness.context_bytes

    def as_on_mcpserver(result: dict) -> int:
        same = _as_mcpserver_prints_it(result)
        if same is not result:
            translated.append(result)
        return measured(same)

    monkeypatch.setattr(harness, "context_bytes", as_on_mcpserver)
    on_fastmcp = anyio.run(functools.partial(harness.measure, ROOT, framework="fastmcp"))
    assert harness.matrix_json(on_fastmcp) == DATA.read_bytes()
    assert translated  # the difference is real, not assumed: FastMCP's tool results were translated

    # measured as they are, the figures differ exactly where tool results reach the client: the skill surface
    monkeypatch.setattr(harness, "context_bytes", measured)
    raw = anyio.run(functools.partial(harness.measure, ROOT, harness.TASKS[:1], framework="fastmcp"))
    want = _runs(fresh, "refunds")
    for key, run in _runs(raw, "refunds").items():
        base = want[key]
        differs = {k for k in run if run[k] != base[k]}
        if key[0] != "skill":
            assert not differs, key
            continue
        assert differs == {"context_bytes", "requests"}, key
        for got, had in zip(run["requests"], base["requests"], strict=True):
            assert (got["method"], got["target"]) == (had["method"], had["target"])
            assert (got["bytes"] < had["bytes"]) == (got["method"] == "tools/call"), (key, got, had)
