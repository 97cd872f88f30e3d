"""Real processes: stdio robustness, HTTP under concurrent load, two processes behind one client, the CLI."""

from __future__ import annotations

import hashlib
import json
import select
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from pydantic import TypeAdapter

from projector.server.stdio import classify

from .test_serve_skills import MANIFEST, ROOT, SKILLS, WORKFLOWS, committed, serve_args, start_http, stop

pytestmark = pytest.mark.slow

RAW = TypeAdapter(dict[str, Any])
ENVELOPE = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}}
FILES = [(r["uri"], r["digest"], r["size"]) for e in MANIFEST for r in e["resources"]]


async def call(client: Client, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    req = types.Request[dict[str, Any] | None, str](method=method, params=params or {})
    return await client.session.send_request(req, RAW)


# ------------------------------------------------------------------------------------------------- stdio

class RawStdio:
    """The server as a subprocess, spoken to line by line: the one place a test writes wire bytes itself, because
    the point is to send what no client would."""

    def __init__(self, *extra: str):
        self.proc = subprocess.Popen([sys.executable, *serve_args(), "--stdio", *extra], cwd=ROOT,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)

    def send(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def recv(self, timeout: float = 20) -> dict[str, Any]:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        assert ready, "no answer from the server"
        return json.loads(self.proc.stdout.readline())

    def request(self, rid: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.send(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method,
                              "params": {**(params or {}), "_meta": ENVELOPE}}).encode() + b"\n")
        return self.recv()

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(20)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
            assert self.proc.stdout is not None
            self.proc.stdout.close()


def test_stdio_answers_malformed_and_oversized_lines_and_keeps_serving():
    s = RawStdio("--max-line-bytes", "100000")
    try:
        assert s.request(1, "skills/list")["result"]["skills"] == MANIFEST
        for bad in [b"{not json}\n", b"[1, 2\n", b"\xff\xfe garbage \x00\n", b'{"jsonrpc": "2.0", "id": \n']:
            s.send(bad)
            assert s.recv() == {"jsonrpc": "2.0", "id": None,
                                "error": {"code": -32700, "message": "Parse error: the line is not valid JSON"}}
        s.send(b'{"hello": "world"}\n')
        assert s.recv()["error"]["code"] == -32600
        s.send(b'{"jsonrpc": "2.0", "id": 41, "method": 7}\n')
        assert s.recv() == {"jsonrpc": "2.0", "id": 41,
                            "error": {"code": -32600, "message": "Invalid Request: not a JSON-RPC 2.0 message"}}
        s.send(b'{"jsonrpc": "2.0", "id": 42, "method": "skills/list", "params": {"pad": "' + b"x" * 300_000 + b'"}}\n')
        big = s.recv()  # answered by its id, read from the start of the line: the client stops waiting
        assert big["id"] == 42 and big["error"]["code"] == -32600 and "longer than 100000 bytes" in \
            big["error"]["message"]
        s.send(b'{"method": "skills/list", "params": {"pad": "' + b"x" * 300_000 + b'"}, "jsonrpc": "2.0", "id": "z"}\n')
        assert s.recv()["id"] == "z"  # the id written last (as the TypeScript SDK writes it), read from the end
        s.send(b'{"jsonrpc": "2.0", "method": "skills/list", "params": {"pad": "' + b"x" * 300_000 + b'", "id": 9}}\n')
        assert s.recv()["id"] is None  # an "id" inside the params is not the request's
        s.send(b"\n\n")  # blank lines are nothing, not errors
        got = s.request(43, "skills/get", {"uri": MANIFEST[0]["uri"]})
        assert got["id"] == 43 and got["result"]["skill"] == MANIFEST[0]
        read = s.request(44, "resources/read", {"uri": FILES[1][0]})
        assert read["result"]["contents"][0]["text"].encode() == committed(FILES[1][0])
        unknown = s.request(45, "skills/get", {"uri": "skill://nope/SKILL.md"})
        assert unknown["error"]["code"] == -32602
    finally:
        assert s.close() == 0


DEEP_LINES = [
    b"[" * 1000 + b"]" * 1000 + b"\n",  # the 2 KB line that killed serve --stdio with a RecursionError
    b'{"a":' * 3000 + b"1" + b"}" * 3000 + b"\n",
    b"[" * 200_000 + b"\n",  # unclosed, and far deeper than any recursion limit
    b'{"jsonrpc": "2.0", "id": 7, "method": "skills/list", "params": {"x": ' + b"[" * 5000 + b"]" * 5000 + b"}}\n",
]


def test_stdio_answers_any_depth_and_bad_ids_and_keeps_serving():
    s = RawStdio()
    try:
        for line in DEEP_LINES:
            s.send(line)
            got = s.recv()
            assert got["id"] is None and got["error"]["code"] in (-32700, -32600), got
        # ids the SDK would take for a notification and never answer
        for rid in (b"{}", b"[]", b"true", b"1.5", b"null"):
            s.send(b'{"jsonrpc": "2.0", "id": ' + rid + b', "method": "skills/list"}\n')
            assert s.recv() == {"jsonrpc": "2.0", "id": None, "error": {
                "code": -32600, "message": "Invalid Request: the id must be a string or an integer"}}
        assert s.request(8, "skills/list")["result"]["skills"] == MANIFEST
    finally:
        assert s.close() == 0


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300) | st.recursive(st.none() | st.integers() | st.text(max_size=5),
                                               lambda c: st.lists(c, max_size=3) | st.dictionaries(
                                                   st.text(max_size=3), c, max_size=3)).map(
    lambda v: json.dumps(v).encode()), st.integers(0, 3000))
def test_classify_answers_every_line_without_raising(line, depth):
    for candidate in (line, b"[" * depth + line + b"]" * depth, b"{" * depth + line):
        verdict = classify(candidate)
        assert verdict is None or isinstance(verdict, str) or verdict[1] in (-32700, -32600)


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


# --------------------------------------------------------------------------------------------------- CLI

def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).parent / "project-skill"
    return subprocess.run([str(exe), *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def test_project_skill_serve_help():
    done = run_cli("serve", "--help")
    assert done.returncode == 0, done.stderr
    assert "--http" in done.stdout and "127.0.0.1" in done.stdout


def test_project_skill_serve_http_starts_on_loopback_by_default():
    import socket

    from .test_serve_skills import free_port

    port = free_port()
    exe = Path(sys.executable).parent / "project-skill"
    proc = subprocess.Popen([str(exe), "serve", "--http", str(port)], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                time.sleep(0.1)
        assert proc.poll() is None
    finally:
        stop_text(proc)
    assert f"serving MCP at http://127.0.0.1:{port}/mcp" in proc.stderr_text


def stop_text(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    proc.stderr_text = proc.stderr.read() if proc.stderr else ""  # type: ignore[attr-defined]
    if proc.stderr:
        proc.stderr.close()


def test_serve_usage_errors_exit_2(capsys):
    from projector.server.cli import main

    for args in (["--http", "nonsense"], ["--http", "127.0.0.1:99999"], ["--http", "0"], ["--stdio", "--http", "1"],
                 ["--page-size", "0"], ["--ttl-ms", "-1"]):
        try:
            code = main("serve", args)
        except SystemExit as exc:
            code = exc.code
        assert code == 2, args
        assert "Traceback" not in capsys.readouterr().err


def test_serve_missing_tree_exits_1_without_traceback(tmp_path, capsys):
    from projector.server.cli import main

    assert main("serve", ["--skills", str(tmp_path / "none"), "--workflows", str(WORKFLOWS)]) == 1
    err = capsys.readouterr().err
    assert "no-index" in err and "Traceback" not in err
    assert main("serve", ["--skills", str(SKILLS), "--workflows", str(tmp_path / "none")]) == 1
    assert "no such file or folder" in capsys.readouterr().err
