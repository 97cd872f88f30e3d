"""Workflow prompts run on the server, bootstrap prompts, attach() and the demo tools, through the public Client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
import yaml
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

from projector.builder import WorkflowBuilder, arg, const, step
from projector.load import load_all
from projector.server import SkillsExtension, attach, build_server
from projector.server.bootstrap import parse as parse_bootstrap
from projector.server.demo import RefundStore, add_demo_tools, demo_server
from projector.server.errors import AttachError

ROOT = Path(__file__).resolve().parents[2]
SKILLS = ROOT / "generated_skills"
WORKFLOWS = ROOT / "workflows"
MANIFEST = json.loads((SKILLS / "skills.json").read_text("utf-8"))["skills"]


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
    assert progress == [(1, 4, "step 1 of 4: fetch_order"), (2, 4, "step 2 of 4: check_eligibility"),
                        (3, 4, "step 3 of 4: issue_refund"), (4, 4, "step 4 of 4: read_policy")]


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
    ok = texts(await get_prompt(server, "code_mode", {"question": "Customers by country?",
                                                      "sql": "SELECT country, count(*) AS n FROM customers "
                                                             "GROUP BY country ORDER BY country"}))
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
        for name, args in [("refund_flow", {}), ("refund_flow", {"order_id": "A1", "bogus": "x"}),
                           ("hello_world", {"nom": "Ada"})]:
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

    wf = (WorkflowBuilder("typed_flow", "Exercise every data source.")
          .argument("count", "How many", required=True, type="integer")
          .argument("price", "Unit price", required=True, type="number")
          .argument("gift", "Gift wrap?", required=True, type="boolean")
          .argument("who", "For whom", type="string")
          .tool("make_cart").tool("ship")
          .step("cart", tool="make_cart", args={"count": arg("count"), "price": arg("price"), "gift": arg("gift"),
                                                "label": const("cart for {who}")}, bind="cart")
          .step("ship", tool="ship", args={"sku": step("cart", "items.0.sku"), "tag": step("cart", "items.0.tags.1"),
                                           "note": arg("who")}, bind="shipment")
          .step("notes", resources=["memo://{region}/notes"], template={"region": step("cart", "region")})
          .build())
    attach(server, None, [wf])
    return server, calls


@pytest.mark.anyio
async def test_typed_arguments_placeholders_field_paths_and_resource_templates():
    server, calls = typed_server()
    result = texts(await get_prompt(server, "typed_flow", {"count": "3", "price": "2.5", "gift": "true",
                                                           "who": "Bo"}))
    assert calls == [{"count": 3, "price": 2.5, "gift": True, "label": "cart for Bo"},
                     {"sku": "SKU-3", "tag": "b", "note": "Bo"}]
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
        for args in [{"count": "1.5", "price": "1", "gift": "true"}, {"count": "x", "price": "1", "gift": "true"},
                     {"count": "1", "price": "nan", "gift": "true"}, {"count": "1", "price": "1", "gift": "yes"},
                     {"count": "1", "price": "one", "gift": "true"}]:
            with pytest.raises(MCPError) as info:
                await client.get_prompt("typed_flow", args)
            assert info.value.code == types.INVALID_PARAMS and "Invalid argument" in info.value.error.message
    assert calls == []


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
    assert "refunds.yaml:47:5: error[unknown-tool]" in msg  # where the step is written
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
    assert f"test_serve_workflows.py:{at[0]}:13: error[parameter-type]: step 's' passes the string \"three\" as 'n', " \
           "which the tool 'count' does not accept: 'three' is not of type 'integer'" in msg
    assert f"test_serve_workflows.py:{at[1]}:13: error[parameter-type]: step 's' passes the input 'flag' " \
           "(boolean) as 'n', but the tool 'count' takes integer there" in msg


def test_attach_refuses_prompt_name_collisions_and_changes_nothing():
    server = MCPServer("x")
    bare_refund_tools(server)
    server.resource("docs://refund-policy/{region}", name="policy")(lambda region: region)

    @server.prompt(name="refund_flow")
    def taken() -> str:
        return "mine"

    msg = serve_error(server, refunds_only(), SKILLS)
    assert "prompt-collision" in msg and "'refund_flow'" in msg
    assert getattr(server, "_extensions") == []  # nothing was added


@pytest.mark.anyio
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


# ------------------------------------------------------------------------------------------- bootstrap

@pytest.mark.anyio
async def test_bootstrap_prompts_inline_exactly_what_resources_read_serves():
    server, _ = demo_server(SKILLS, WORKFLOWS)
    async with Client(server) as client:
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        for entry in MANIFEST:
            name = "skill." + entry["frontmatter"]["name"]
            assert prompts[name].arguments == []
            result = await client.get_prompt(name, {})
            assert len(result.messages) == 1 and result.messages[0].role == "user"
            inlined = parse_bootstrap(result.messages[0].content.text)
            assert list(inlined) == [r["uri"] for r in entry["resources"]]
            for res in entry["resources"]:
                read = (await client.read_resource(res["uri"])).contents[0]
                assert inlined[res["uri"]] == read.text.encode("utf-8")
                assert inlined[res["uri"]] == (SKILLS / res["uri"].removeprefix("skill://")).read_bytes()
                assert len(inlined[res["uri"]]) == res["size"]
        with pytest.raises(MCPError):
            await client.get_prompt("skill.hello-world", {"x": "y"})


# --------------------------------------------------------------------------------------------- the demo

def test_demo_tools_match_the_workflow_declarations():
    import anyio

    server, _ = demo_server(SKILLS, WORKFLOWS)
    tools = {t.name: t for t in anyio.run(server.list_tools)}
    declared = 0
    for path in sorted(WORKFLOWS.glob("*.yaml")):
        for tool in yaml.safe_load(path.read_text("utf-8"))["tools"]:
            served = tools[tool["name"]]
            assert served.description == tool["description"]
            assert served.annotations.model_dump(by_alias=True, exclude_none=True) == tool["annotations"]
            props = served.input_schema["properties"]
            assert sorted(props) == sorted(tool["input_schema"]["properties"])
            assert sorted(served.input_schema["required"]) == sorted(tool["input_schema"]["required"])
            for name, prop in tool["input_schema"]["properties"].items():
                assert props[name]["type"] == prop["type"]
            declared += 1
    assert declared == 11  # refunds.yaml, refunds-gated.yaml and refunds-approved.yaml declare the same three tools


def test_the_eligibility_policy():
    store = RefundStore()
    verdicts = {oid: store.check_eligibility(store.get_order(oid)) for oid in sorted(store.orders)}
    assert {k: v["eligible"] for k, v in verdicts.items()} == {"A1001": True, "A1002": False, "A1003": False,
                                                              "A1004": False, "A1005": True}
    assert verdicts["A1005"]["needs_approval"] is True
    assert "already refunded" in verdicts["A1004"]["reasons"][0]
    with pytest.raises(ValueError):
        store.issue_refund("A1001", 1000.0)  # more than the total
    with pytest.raises(ValueError):
        store.issue_refund("A1001", 0)
    assert store.ledger() == []


@pytest.mark.anyio
async def test_query_refuses_everything_but_reads():
    server, _ = demo_server(SKILLS, WORKFLOWS)
    async with Client(server) as client:
        ok = await client.call_tool("query", {"sql": "SELECT count(*) AS n FROM orders"})
        assert not ok.is_error and json.loads(ok.content[0].text)["rows"] == [[10]]
        for sql in ["DELETE FROM customers", "INSERT INTO customers VALUES (9, 'x', 'x@x', 'X', '2025-01-01')",
                    "UPDATE products SET price_cents = 0", "DROP TABLE orders", "CREATE TABLE t (x)",
                    "PRAGMA query_only = OFF", "ATTACH DATABASE '/tmp/x.db' AS x",
                    "SELECT 1; DELETE FROM customers", "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 "
                    "FROM c) SELECT count(*) FROM c", "SELEC 1"]:
            bad = await client.call_tool("query", {"sql": sql})
            assert bad.is_error, sql
        after = await client.call_tool("query", {"sql": "SELECT count(*) FROM customers"})
        assert json.loads(after.content[0].text)["rows"] == [[6]]
        schema = (await client.read_resource("sqlite://demo/schema")).contents[0].text
        assert [line.split()[2] for line in schema.splitlines() if line.startswith("CREATE TABLE")] == [
            "customers", "order_items", "orders", "products"]
        policy = await client.read_resource("docs://refund-policy/eu")
        assert "European Union" in policy.contents[0].text
        with pytest.raises(MCPError):
            await client.read_resource("docs://refund-policy/mars")


ROWS_300 = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n LIMIT 300) "


@pytest.mark.anyio
async def test_query_caps_rows_and_bytes_and_says_so():
    from projector.server.demo import MAX_BYTES, MAX_ROWS

    server, _ = demo_server(SKILLS, WORKFLOWS)
    async with Client(server) as client:
        async def run(sql: str) -> tuple[dict[str, Any], int]:
            res = await client.call_tool("query", {"sql": sql})
            assert not res.is_error, res.content[0].text
            return json.loads(res.content[0].text), len(res.content[0].text.encode())

        small, _ = await run("SELECT id FROM customers ORDER BY id")
        assert small["truncated"] is False and "note" not in small and small["row_count"] == 6
        many, _ = await run(ROWS_300 + "SELECT x FROM n")
        assert many["rows"] == [[i] for i in range(1, MAX_ROWS + 1)] and many["row_count"] == MAX_ROWS
        assert many["truncated"] is True and f"more than {MAX_ROWS} rows" in many["note"]
        wide, size = await run(ROWS_300 + "SELECT x, printf('%.*c', 60000, 'y') FROM n")  # 18 MB uncapped
        assert wide["truncated"] is True and f"more than {MAX_BYTES} bytes" in wide["note"]
        assert 0 < wide["row_count"] == len(wide["rows"]) < 10 and wide["rows"][0] == [1, "y" * 60000]
        assert size <= MAX_BYTES + 1024
        blob, _ = await run("SELECT x'00ff', 1e999")
        assert blob["rows"] == [["X'00FF'", "inf"]]
        for sql in ["SELECT zeroblob(200000000)", "SELECT randomblob(100000)",
                    ROWS_300 + "SELECT group_concat(printf('%.*c', 1000, 'z')) FROM n",
                    "SELECT " + ", ".join(["1"] * 500)]:
            bad = await client.call_tool("query", {"sql": sql})
            assert bad.is_error and ("too big" in bad.content[0].text or "too many columns" in bad.content[0].text)


@pytest.mark.anyio
async def test_the_readme_library_example(tmp_path, monkeypatch):
    from mcp_types import ToolAnnotations

    server = MCPServer("greeter")

    @server.tool(description="Return a friendly greeting for a name.",
                 annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True))
    def greet(name: str) -> str:
        return f"Hello, {name}!"

    from projector.cli import main

    monkeypatch.chdir(ROOT)
    out = (tmp_path / "greeter_skills").as_posix()
    assert main(["build", "workflows/hello-world.yaml", "--out", out]) == 0
    attach(server, skills=out, workflows=["workflows/hello-world.yaml"])
    async with Client(server) as client:
        assert client.server_capabilities.extensions == {"io.modelcontextprotocol/skills": {"directoryRead": True}}
        prompts = sorted(p.name for p in (await client.list_prompts()).prompts)
        assert prompts == ["hello_world", "skill.hello-world"]
        result = await client.get_prompt("hello_world", {"name": "Ada"})
        assert '"Hello, Ada!"' in result.messages[3].content.text
