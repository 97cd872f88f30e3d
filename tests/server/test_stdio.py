"""The stdio front (:mod:`projector.server.stdio`): every line a client sends is answered (malformed, oversized, nested
to any depth, bad ids) and the server keeps serving; ``classify`` answers every line without raising. Real processes,
spoken to line by line, and requests read before end of input answered (issue 17, item 17)."""

from __future__ import annotations

import json
import select
import subprocess
import sys
import threading
from typing import Any

import mcp_types as types
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from projector.server.stdio import classify

from .test_serve_skills import MANIFEST, ROOT, SKILLS, WORKFLOWS, committed, serve_args

ENVELOPE = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}}
FILES = [(r["uri"], r["digest"], r["size"]) for e in MANIFEST for r in e["resources"]]



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


@pytest.mark.slow
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


@pytest.mark.slow
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


# ------------------------------------------------------------------------------ item 17: stdio end of input

PING = json.dumps({"jsonrpc": "2.0", "id": 2, "method": "ping", "params": {"_meta": ENVELOPE}}).encode() + b"\n"
NESTED = b"[" * 1000 + b"]" * 1000 + b"\n"  # the 2 KB line of nested brackets


def _stdio_run(stdin: bytes) -> list[dict[str, Any]]:
    done = subprocess.run([sys.executable, "-m", "projector.server", "--skills", str(SKILLS), "--workflows",
                           str(WORKFLOWS), "--stdio"], cwd=ROOT, input=stdin, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


@pytest.mark.slow
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


@pytest.mark.slow
def test_stdio_answers_a_burst_of_requests_before_end_of_input():
    lines = b"".join(json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/list", "params": {"_meta": ENVELOPE}})
                     .encode() + b"\n" for i in range(50))
    got = _stdio_run(lines + b"{not json}\n" + PING.replace(b'"id": 2', b'"id": 99'))
    assert sorted(m["id"] for m in got if m.get("id") is not None) == [*range(50), 99]
    assert all("greet" in json.dumps(m["result"]) for m in got if isinstance(m.get("id"), int) and m["id"] < 50)
    assert [m["error"]["code"] for m in got if m.get("id") is None] == [types.PARSE_ERROR]


@pytest.mark.slow
def test_stdio_does_not_wait_at_end_of_input_for_a_request_the_client_cancelled():
    request = {"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {"_meta": ENVELOPE}}
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5, "_meta": ENVELOPE}}
    got = _stdio_run(json.dumps(request).encode() + b"\n" + json.dumps(cancel).encode() + b"\n" + PING)
    assert 2 in [m.get("id") for m in got]  # the ping after it is answered, and the server exits by itself
