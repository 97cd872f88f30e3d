"""The demo tools (:mod:`projector.server.demo`), through the public Client: they match the workflows' declarations,
the eligibility policy, a read-only query that is capped, and the README's library example."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

from projector.server import attach
from projector.server.demo import RefundStore, demo_server

ROOT = Path(__file__).resolve().parents[2]
SKILLS = ROOT / "generated_skills"
WORKFLOWS = ROOT / "workflows"
MANIFEST = json.loads((SKILLS / "skills.json").read_text("utf-8"))["skills"]



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
