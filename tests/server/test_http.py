"""``serve --http`` (:mod:`projector.server.http`): two processes serve identically behind one client, a cursor from one
works on another, progress reaches an HTTP client, any nesting is answered. The serve front under hostile clients
(issue 17): DNS rebinding (foreign Host and Origin), running out of file descriptors, a slow SQL query. Real
processes and real HTTP clients on loopback, bounded in count; nothing asserts a duration."""

from __future__ import annotations

import hashlib
import json
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
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
from mcp.client.streamable_http import streamable_http_client
from mcp.server.mcpserver import MCPServer
from pydantic import TypeAdapter

from projector.server.demo import MAX_VALUE_BYTES, add_demo_tools

from .test_serve_skills import MANIFEST, committed, serve_args, start_http, stop
from .test_stdio import DEEP_LINES, FILES

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SKILLS = ROOT / "generated_skills"
WORKFLOWS = ROOT / "workflows"
FRAMEWORKS = ["mcp", "fastmcp"]
RAW = TypeAdapter(dict[str, Any])
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "hardening-test", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}}


async def call(client: Client, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    req = types.Request[dict[str, Any] | None, str](method=method, params=params or {})
    return await client.session.send_request(req, RAW)


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
        # The dead connections still queued in the kernel are accepted (and closed) first, and while the server holds
        # its bound of them a new one is closed at once, as the bound says; serving again means within a deadline.
        deadline, failures = time.monotonic() + 30, []
        while True:
            try:
                async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                    result = await client.call_tool("greet", {"name": "Ada"})
                break
            except Exception as exc:  # noqa: BLE001 - a connection closed by the bound, kept for the message
                failures.append(repr(exc))
                assert proc.poll() is None, proc.tail()
                assert time.monotonic() < deadline, f"not serving again within 30 s: {failures[-3:]}"
                await anyio.sleep(0.2)
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


# -------------------------------------------------------------------------------------------------- HTTP

async def verify_everything(client: Client) -> int:
    """list, get and read every file, checking bytes and digests; returns the number of requests."""
    n = 0
    page = await call(client, "skills/list")
    n += 1
    assert page["skills"] == MANIFEST
    for entry in MANIFEST:
        assert (await call(client, "skills/get", {"uri": entry["uri"]}))["skill"] == entry
        n += 1
    for uri, digest, size in FILES:
        data = (await client.read_resource(uri)).contents[0].text.encode("utf-8")
        n += 1
        assert "sha256:" + hashlib.sha256(data).hexdigest() == digest and len(data) == size
    return n


class RoundRobin(httpx2.AsyncBaseTransport):
    """Sends each HTTP request to the next of several servers: a load balancer in one object."""

    def __init__(self, ports: list[int]):
        self.ports = ports
        self.inner = httpx2.AsyncHTTPTransport()
        self.sent: Counter = Counter()
        self.i = 0

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        port = self.ports[self.i % len(self.ports)]
        self.i += 1
        self.sent[port] += 1
        request.url = request.url.copy_with(port=port)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


@pytest.mark.anyio
async def test_two_processes_serve_identically_and_one_client_can_alternate():
    (p1, url1), (p2, url2) = start_http(), start_http()
    try:
        seen = []
        for url in (url1, url2):
            async with Client(url, cache=None) as client:
                listing = await call(client, "skills/list")
                listing.pop("_meta", None)  # the serverInfo stamp is the same too, but not the point
                files = {uri: (await client.read_resource(uri)).contents[0].text.encode("utf-8") for uri, _, _ in FILES}
                dirs = [await call(client, "resources/directory/read", {"uri": e["uri"].rsplit("/", 1)[0]})
                        for e in MANIFEST]
                prompts = [p.model_dump() for p in (await client.list_prompts()).prompts]
                seen.append((listing, files, dirs, prompts))
        assert seen[0] == seen[1]
        assert all(data == committed(uri) for uri, data in seen[0][1].items())

        ports = [int(url1.split(":")[2].split("/")[0]), int(url2.split(":")[2].split("/")[0])]
        balancer = RoundRobin(ports)
        http = httpx2.AsyncClient(transport=balancer, timeout=httpx2.Timeout(30, read=120))
        async with http, Client(streamable_http_client(url1, http_client=http), cache=None) as client:
            n = 0
            for _ in range(3):
                n += await verify_everything(client)
            # paging across processes: a cursor made by one process is honoured by the other
        assert n == 3 * (1 + len(MANIFEST) + len(FILES))
        assert min(balancer.sent.values()) >= n // 2 - 2 and len(balancer.sent) == 2, balancer.sent
    finally:
        stop(p1)
        stop(p2)


@pytest.mark.anyio
async def test_a_cursor_from_one_process_works_on_another():
    procs = []
    try:
        for _ in range(2):
            proc, url = start_http_paged()
            procs.append((proc, url))
        (_, url1), (_, url2) = procs
        walked = []
        cursor = None
        for i in range(len(MANIFEST)):
            async with Client(url1 if i % 2 == 0 else url2, cache=None) as client:
                page = await call(client, "skills/list", {"cursor": cursor} if cursor else {})
            walked += page["skills"]
            cursor = page.get("nextCursor")
        assert walked == MANIFEST and cursor is None
    finally:
        for proc, _ in procs:
            stop(proc)


def start_http_paged() -> tuple[subprocess.Popen, str]:
    import socket

    from .test_serve_skills import free_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, *serve_args(), "--page-size", "1", "--http", f"127.0.0.1:{port}"],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            time.sleep(0.1)
    stop(proc)
    raise RuntimeError("server did not start")


@pytest.mark.anyio
async def test_progress_reaches_an_http_client(http_url_progress):
    progress = []

    async def on_progress(p: float, total: float | None, message: str | None) -> None:
        progress.append((p, total))

    async with Client(http_url_progress, cache=None) as client:
        req = types.GetPromptRequest(params=types.GetPromptRequestParams(name="hello_world",
                                                                         arguments={"name": "Ada"}))
        result = await client.session.send_request(req, types.GetPromptResult, progress_callback=on_progress)
    assert "Hello, Ada!" in result.messages[3].content.text
    assert progress == [(1, 1)]


@pytest.fixture(scope="module")
def http_url_progress():
    proc, url = start_http()
    yield url
    stop(proc)


def test_http_answers_any_depth_and_keeps_serving(http_url_progress):
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json",
               "MCP-Protocol-Version": "2026-07-28"}
    for body in DEEP_LINES:
        r = httpx2.post(http_url_progress, content=body, headers=headers, timeout=30)
        assert r.status_code < 500, (r.status_code, r.text[:200])
        assert r.json()["error"]["code"] in (-32700, -32600), r.text[:200]
    for rid in ("{}", "[]", "true", "1.5", "null"):  # the SDK's HTTP front answers these itself
        body = '{"jsonrpc": "2.0", "id": %s, "method": "skills/list", "params": {"_meta": %s}}' % (
            rid, json.dumps(ENVELOPE))
        r = httpx2.post(http_url_progress, content=body.encode(), headers={**headers, "Mcp-Method": "skills/list"},
                        timeout=30)
        assert r.json()["error"]["code"] == -32600 and r.json()["id"] is None
    ok = httpx2.post(http_url_progress, headers={**headers, "Mcp-Method": "skills/list"}, timeout=30, json={
        "jsonrpc": "2.0", "id": 9, "method": "skills/list", "params": {"_meta": ENVELOPE}})
    assert ok.json()["result"]["skills"] == MANIFEST


# ------------------------------------------------------------------------------------------------------------- load

CLIENTS, REQUESTS = 20, 200


@pytest.mark.anyio
async def test_concurrent_http_clients_get_no_errors():
    """20 concurrent HTTP clients making 200 requests each, against one ``serve --http`` process, 0 errors. Measured
    on the 2-core CI machine: the server handles about 150-180 requests a second, so this takes 25-45 s; the
    bottleneck is the server's per-request work in the SDK (one process, stateless Streamable HTTP), not the client."""
    proc, url = start_http()
    errors: list[str] = []
    done = Counter()
    try:
        async def one(i: int) -> None:
            try:
                async with Client(url, cache=None) as client:
                    while done[i] < REQUESTS:
                        k = done[i] % (len(FILES) + 2)
                        if k == 0:
                            assert (await call(client, "skills/list"))["skills"] == MANIFEST
                        elif k == 1:
                            entry = MANIFEST[i % len(MANIFEST)]
                            assert (await call(client, "skills/get", {"uri": entry["uri"]}))["skill"] == entry
                        else:
                            uri, digest, _ = FILES[k - 2]
                            data = (await client.read_resource(uri)).contents[0].text.encode("utf-8")
                            assert "sha256:" + hashlib.sha256(data).hexdigest() == digest
                        done[i] += 1
            except Exception as exc:  # counted, not raised: the test reports every failure
                errors.append(f"client {i} after {done[i]} requests: {exc!r}")

        start = time.monotonic()
        async with anyio.create_task_group() as tg:
            for i in range(CLIENTS):
                tg.start_soon(one, i)
        elapsed = time.monotonic() - start
    finally:
        stop(proc)
    total = sum(done.values())
    print(f"\n{CLIENTS} clients x {REQUESTS} requests: {total} requests in {elapsed:.1f} s "
          f"({total / elapsed:.0f}/s), {len(errors)} errors")
    assert errors == []
    assert total == CLIENTS * REQUESTS
