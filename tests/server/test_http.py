"""The serve front under hostile clients (issue 17): DNS rebinding (foreign Host and Origin), running out of file
descriptors, a slow SQL query, and requests read before end of input on stdio. Real processes and real HTTP
clients on loopback, bounded in count; nothing asserts a duration."""

from __future__ import annotations

import json
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from projector.server.demo import MAX_VALUE_BYTES, add_demo_tools

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SKILLS = ROOT / "generated_skills"
WORKFLOWS = ROOT / "workflows"
FRAMEWORKS = ["mcp", "fastmcp"]
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "hardening-test", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serving(framework: str, *extra: str, nofile: int | None = None) -> Iterator[tuple[int, subprocess.Popen]]:
    """``serve --http`` on a free loopback port, as a subprocess; with ``nofile``, under that RLIMIT_NOFILE (soft and
    hard, so the server cannot raise it)."""
    port = free_port()
    log = tempfile.TemporaryFile()  # not a pipe: a server that logs a lot must not block on a full pipe

    def limit() -> None:  # runs in the child before exec
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    proc = subprocess.Popen([sys.executable, "-m", "projector.server", "--framework", framework, "--skills",
                             str(SKILLS), "--workflows", str(WORKFLOWS), "--http", f"127.0.0.1:{port}", *extra],
                            cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log,
                            preexec_fn=limit)

    def tail() -> str:
        log.seek(0)
        return log.read().decode(errors="replace")[-3000:]

    proc.tail = tail  # type: ignore[attr-defined]
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the server exited: {tail()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the server did not listen within 60 s"
                time.sleep(0.1)
        yield port, proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(15)
        log.close()


def raw(port: int, method: str, params: dict[str, Any], headers: dict[str, str] | None = None) -> httpx2.Response:
    """One stateless JSON-RPC request over HTTP to 127.0.0.1:port, with ``headers`` on top (Host, Origin)."""
    name = {"Mcp-Name": params["name"]} if "name" in params else {}
    return httpx2.post(f"http://127.0.0.1:{port}/mcp", timeout=60, headers={
        "Accept": "application/json, text/event-stream", "Content-Type": "application/json",
        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method, **name, **(headers or {})},
        json={"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": ENVELOPE}})


def refund_flow(port: int, headers: dict[str, str] | None = None) -> httpx2.Response:
    # refund_flow is the ungated workflow: the server runs issue_refund on any order it can refund at all
    return raw(port, "prompts/get", {"name": "refund_flow", "arguments": {"order_id": "A1003"}}, headers)


async def ledger(port: int) -> list[dict[str, Any]]:
    """The demo's refunds, through a real MCP client on the loopback name."""
    async with Client(f"http://127.0.0.1:{port}/mcp") as client:
        result = await client.call_tool("list_refunds", {})
    assert not result.is_error, result
    data = result.structured_content
    return data["result"] if isinstance(data, dict) and "result" in data else data


# ---------------------------------------------------------------------------------------- item 3: rebinding

FOREIGN = [
    {"Host": "evil.example:{port}"},
    {"Host": "evil.example"},
    {"Host": "127.0.0.1.evil.example:{port}"},
    {"Host": "localhost.evil.example"},
    {"Origin": "http://evil.example"},
    {"Origin": "http://evil.example:{port}"},
    {"Origin": "http://localhost.evil.example:{port}"},
    {"Origin": "null"},
    {"Host": "evil.example:{port}", "Origin": "http://evil.example:{port}"},
]


def _fill(headers: dict[str, str], port: int) -> dict[str, str]:
    return {k: v.format(port=port) for k, v in headers.items()}


@pytest.mark.anyio
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_http_refuses_a_foreign_host_or_origin_and_runs_nothing(framework):
    with serving(framework) as (port, _):
        for headers in FOREIGN:
            r = refund_flow(port, _fill(headers, port))
            assert 400 <= r.status_code < 500, (headers, r.status_code, r.text[:300])
            assert "refund" not in r.text.lower(), r.text[:300]
        assert await ledger(port) == []
        # the loopback names and the bound address, with and without their origins, are served
        for headers in [{}, {"Host": f"localhost:{port}", "Origin": f"http://localhost:{port}"},
                        {"Origin": f"http://127.0.0.1:{port}"}, {"Host": f"[::1]:{port}"}]:
            r = raw(port, "tools/call", {"name": "list_refunds", "arguments": {}}, headers)
            assert r.status_code == 200, (headers, r.status_code, r.text[:300])
        r = refund_flow(port)
        assert r.status_code == 200 and "R0001" in r.text, r.text[:300]
        assert [x["order_id"] for x in await ledger(port)] == ["A1003"]


@pytest.mark.anyio
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_http_allow_host_and_allow_origin_add_names_and_nothing_else(framework):
    with serving(framework, "--allow-host", "mcp.example.test", "--allow-host", "other.example.test:8443",
                 "--allow-origin", "https://app.example.test") as (port, _):
        for headers in [*FOREIGN, {"Host": "other.example.test:9999"}, {"Origin": "https://app.example.test:1"},
                        {"Host": f"mcp.example.test:{port}", "Origin": "https://evil.example"}]:
            r = refund_flow(port, _fill(headers, port))
            assert 400 <= r.status_code < 500, (headers, r.status_code, r.text[:300])
        assert await ledger(port) == []
        for headers in [{"Host": f"mcp.example.test:{port}"}, {"Host": "mcp.example.test"},
                        {"Host": "other.example.test:8443"}, {"Origin": "https://app.example.test"},
                        {"Host": "mcp.example.test", "Origin": "https://mcp.example.test"}]:
            r = raw(port, "tools/call", {"name": "list_refunds", "arguments": {}}, headers)
            assert r.status_code == 200, (headers, r.status_code, r.text[:300])
        r = refund_flow(port, {"Host": "mcp.example.test", "Origin": "https://app.example.test"})
        assert r.status_code == 200 and "R0001" in r.text, r.text[:300]
        assert [x["order_id"] for x in await ledger(port)] == ["A1003"]


def test_allow_host_refuses_a_malformed_name():
    from projector.server.cli import parser

    for bad in ["", "evil example", "a/b", "http://x", "x:notaport", "*"]:
        with pytest.raises(SystemExit):
            parser("serve").parse_args(["--http", "8000", "--allow-host", bad])
    for bad in ["", "evil.example", "ftp://x", "http://x/path", "https://"]:
        with pytest.raises(SystemExit):
            parser("serve").parse_args(["--http", "8000", "--allow-origin", bad])


# ------------------------------------------------------------------------------ item 7: file descriptors

@pytest.mark.anyio
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_http_keeps_serving_after_running_out_of_file_descriptors(framework):
    with serving(framework, nofile=64) as (port, proc):
        held: list[socket.socket] = []
        for _ in range(200):  # more idle connections than the process has descriptors
            try:
                held.append(socket.create_connection(("127.0.0.1", port), timeout=5))
            except OSError:
                break
        time.sleep(1)  # let the server accept what it can (a pause, not a measurement)
        for s in held:
            s.close()
        assert proc.poll() is None, proc.tail()
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            result = await client.call_tool("greet", {"name": "Ada"})
        assert not result.is_error and "Hello, Ada!" in result.content[0].text
        assert proc.poll() is None


# ------------------------------------------------------------------------------------ item 8: slow SQL

def demo_tools(framework: str) -> tuple[Any, Any]:
    if framework == "fastmcp":
        from fastmcp import FastMCP

        server: Any = FastMCP("sql-test")
    else:
        server = MCPServer("sql-test")
    _, db = add_demo_tools(server)
    return server, db


class Clients:
    """Two in-memory clients of one server, on either framework, answering (is_error, text) for a tool call."""

    def __init__(self, framework: str, server: Any):
        self.framework, self.server = framework, server

    def client(self) -> Any:
        if self.framework == "fastmcp":
            from fastmcp import Client as FastMCPClient

            return FastMCPClient(self.server)
        return Client(self.server)

    async def call(self, client: Any, name: str, args: dict[str, Any]) -> tuple[bool, str]:
        if self.framework == "fastmcp":
            result = await client.call_tool(name, args, raise_on_error=False)
        else:
            result = await client.call_tool(name, args)
        return bool(result.is_error), "".join(getattr(c, "text", "") for c in result.content)


HUGE = ["SELECT printf('%.*c', 2147483647, 'x')",  # the query of the report: 2^31 appends inside one call
        "SELECT printf('%!.*c', 2147483647, 'x')",
        "SELECT format('%.*c', 2147483647, 'x')",
        "SELECT printf('%.*c', '2147483647', 'x')",  # the width as text
        "SELECT printf('%*.*c', 1, 2147483647, 'x')",
        "SELECT printf('%.2147483647c', 'x')",
        f"SELECT printf('%.*c', {MAX_VALUE_BYTES + 1}, 'x')",
        "SELECT printf('%s%s', hex(zeroblob(20000)), hex(zeroblob(20000)))",
        "SELECT length(printf('%.*c', 70000, 'x'))"]


@pytest.mark.anyio
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_query_refuses_an_oversized_value_with_a_clear_error(framework):
    server, _ = demo_tools(framework)
    clients = Clients(framework, server)
    async with clients.client() as client:
        for sql in HUGE:
            is_error, text = await clients.call(client, "query", {"sql": sql})
            assert is_error, (sql, text[:200])
            assert f"longer than {MAX_VALUE_BYTES} bytes" in text, (sql, text)
        # printf still works within the bound, and after the refusals
        is_error, text = await clients.call(client, "query", {"sql": "SELECT printf('%5.2f|%-3s|%.*c', 3.14159, "
                                                                     "'a', 3, 'y') AS s"})
        assert not is_error and json.loads(text)["rows"] == [[" 3.14|a  |yyy"]], text
        is_error, text = await clients.call(client, "query", {"sql": "SELECT length(printf('%.*c', 1000, 'x'))"})
        assert not is_error and json.loads(text)["rows"] == [[1000]], text


@pytest.mark.anyio
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_a_slow_query_does_not_block_another_client(framework):
    server, db = demo_tools(framework)
    started, release = threading.Event(), threading.Event()
    events: list[str] = []

    def hold() -> int:  # a SQL function that stays inside one call until the test lets it go
        events.append("query started")
        started.set()
        if not release.wait(10):  # a safety bound for a server that runs it on the event loop; never reached here
            events.append("query gave up waiting")
        return 1

    db.conn.create_function("hold", 0, hold)
    clients = Clients(framework, server)
    async with clients.client() as slow_client, clients.client() as other_client:
        async with anyio.create_task_group() as tg:
            async def slow() -> None:
                is_error, text = await clients.call(slow_client, "query", {"sql": "SELECT hold() AS h"})
                events.append(f"query answered {is_error} {text[:80]}")

            tg.start_soon(slow)
            await anyio.to_thread.run_sync(started.wait, 15)
            is_error, text = await clients.call(other_client, "get_order", {"id": "A1001"})
            events.append(f"other answered {is_error}")
            release.set()
    assert events[:2] == ["query started", "other answered False"], events
    assert events[2].startswith("query answered False"), events


def test_query_time_is_bounded_by_a_deadline(monkeypatch):
    """A query that keeps the VM busy stops at the step budget or the deadline, whichever comes first; the deadline
    is read from the clock the database is given, so the test drives it by hand."""
    from projector.server import demo

    clock = [0.0]
    db = demo.DemoDatabase(clock=lambda: clock[0])

    def tick() -> int:  # each call moves the database's clock on past the deadline
        clock[0] += demo.MAX_SECONDS
        return 1

    db.conn.create_function("tick", 0, tick)
    with pytest.raises(demo.DemoError, match="ran too long"):
        db.query("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + tick() FROM n) SELECT count(*) FROM n")
    assert db.query("SELECT count(*) AS n FROM orders")["rows"][0][0] > 0


# ------------------------------------------------------------------------------ item 17: stdio end of input

PING = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"_meta": ENVELOPE}}).encode() + b"\n"
NESTED = b"[" * 1000 + b"]" * 1000 + b"\n"  # the 2 KB line of nested brackets


def _stdio_run(stdin: bytes) -> list[dict[str, Any]]:
    done = subprocess.run([sys.executable, "-m", "projector.server", "--skills", str(SKILLS), "--workflows",
                           str(WORKFLOWS), "--stdio"], cwd=ROOT, input=stdin, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def test_stdio_answers_every_request_read_before_end_of_input():
    runs = 20
    answered: list[list[Any]] = []

    def one() -> None:
        got = _stdio_run(NESTED + PING)
        # the ping is answered (2026-07-28 has no ping method, so the answer is -32601) and so is the nested line
        answered.append(sorted((str(m.get("id")), m["error"]["code"] if "error" in m else "result") for m in got))

    for _ in range(runs // 4):  # four processes at a time
        threads = [threading.Thread(target=one) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(answered) == runs
    assert all(a == [("2", -32601), ("None", -32600)] for a in answered), answered


def test_stdio_answers_a_burst_of_requests_before_end_of_input():
    lines = b"".join(json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/list", "params": {"_meta": ENVELOPE}})
                     .encode() + b"\n" for i in range(50))
    got = _stdio_run(lines + b"{not json}\n" + PING.replace(b'"id": 2', b'"id": 99'))
    assert sorted(m["id"] for m in got if m.get("id") is not None) == [*range(50), 99]
    assert all("greet" in json.dumps(m["result"]) for m in got if isinstance(m.get("id"), int) and m["id"] < 50)
    assert [m["error"]["code"] for m in got if m.get("id") is None] == [types.PARSE_ERROR]


def test_stdio_does_not_wait_at_end_of_input_for_a_request_the_client_cancelled():
    request = {"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {"_meta": ENVELOPE}}
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5, "_meta": ENVELOPE}}
    got = _stdio_run(json.dumps(request).encode() + b"\n" + json.dumps(cancel).encode() + b"\n" + PING)
    assert 2 in [m.get("id") for m in got]  # the ping after it is answered, and the server exits by itself
