"""The verifying client (:mod:`projector.remote.client`), issue 17 item 10: it bounds every message where its bytes
arrive, on stdio and on Streamable HTTP. Hostile servers on loopback (a stdio script, a tiny HTTP server in a thread)
answer with far more than the limit; the client's memory is bounded by ``tracemalloc``, never by time. On main an
endless ``skills/list`` reached 4.4 GB, and a 300 MB read of a file the manifest lists as 8 bytes peaked at 2.25 GB
before the size check. Against the project server over its real transports (stdio and HTTP), ``project-skill remote``
and ``pin`` list, pin and load what build wrote, to the byte."""

from __future__ import annotations

import hashlib
import json
import socket
import subprocess
import sys
import threading
import time
import tracemalloc
import zlib
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import pytest

from projector.remote import connect
from projector.remote.errors import RemoteError

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "bad_inputs" / "response-too-large.server.py"
MiB = 1 << 20
URI = "skill://hello-world/SKILL.md"
SKILL = b"12345678"
ENTRY = {"uri": URI, "frontmatter": {"name": "hello-world", "description": "d"},
         "resources": [{"uri": URI, "digest": "sha256:" + hashlib.sha256(SKILL).hexdigest(), "size": len(SKILL)}]}
PIECE = b"x" * MiB
MAX_MESSAGE = 16 * MiB  # projector.remote.transport's limits, pinned here
READ_LIMIT_8 = 6 * 8 + 64 * 1024
HINT = ("a file's read is bounded by its size in the manifest (6 times it, plus 64 KiB, for JSON escaping), any other "
        "message by 16 MiB")


def stdio(mode: str, total: int) -> str:
    return f"{sys.executable} {SCRIPT} {mode} {total}"


@contextmanager
def peak() -> Iterator[list[int]]:
    """The peak of traced allocations inside the block, in bytes (appended to the list on exit)."""
    out: list[int] = []
    tracemalloc.start()
    tracemalloc.reset_peak()
    try:
        yield out
    finally:
        out.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()


# ------------------------------------------------------------------------------------------------------ stdio

@pytest.mark.slow
@pytest.mark.anyio
async def test_stdio_a_read_far_over_the_manifest_size_is_cut_at_its_limit():
    async with connect(stdio("read", 32 * MiB)) as remote:
        entries = await remote.list_skills()
        with peak() as used:
            with pytest.raises(RemoteError) as info:
                await remote.load(entries[0])
        with pytest.raises(RemoteError) as again:  # the connection is closed: nothing more is asked of it
            await remote.list_skills()
    e = info.value
    assert (e.code, e.where) == ("response-too-large", URI)
    assert e.message == (f"the answer to resources/read of a file the manifest lists as 8 bytes passed {READ_LIMIT_8} "
                         "bytes, its limit; it was refused before being buffered whole, and the connection was closed")
    assert e.hint == HINT
    assert used[0] < 4 * MiB  # main buffered all 32 MiB (and more, decoding and parsing it)
    assert again.value.code == "server-error" and "the connection was closed" in again.value.message


@pytest.mark.slow
@pytest.mark.anyio
async def test_stdio_a_listing_message_over_16_mib_is_cut():
    async with connect(stdio("list", 40 * MiB)) as remote:
        with peak() as used:
            with pytest.raises(RemoteError) as info:
                await remote.list_skills()
    e = info.value
    assert e.code == "response-too-large"
    assert e.message == (f"the answer to skills/list passed {MAX_MESSAGE} bytes, its limit; it was refused before "
                         "being buffered whole, and the connection was closed")
    assert used[0] < MAX_MESSAGE + 4 * MiB  # the line collected up to the limit, and no further


@pytest.mark.slow
@pytest.mark.anyio
async def test_stdio_endless_pages_are_cut_by_the_listing_cap():
    async with connect(stdio("pages", MiB), max_message=2 * MiB, max_listing=4 * MiB) as remote:
        with pytest.raises(RemoteError) as info:
            await remote.list_skills()
    assert info.value.code == "response-too-large"
    assert info.value.message == ("skills/list passed 4194304 bytes in 5 pages, the limit for one listing; the rest "
                                  "was not read")


@pytest.mark.slow
def test_cli_names_the_refusal(tmp_path):
    import subprocess

    proc = subprocess.run([sys.executable, "-m", "projector.cli", "remote", "load", stdio("read", 8 * MiB),
                           "hello-world", "--out", str(tmp_path / "o")], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert f"{URI}: error[response-too-large]: the answer to resources/read" in proc.stderr
    assert not (tmp_path / "o").exists()


# ------------------------------------------------------------------------------------------------------ HTTP

class Hostile(BaseHTTPRequestHandler):
    mode = "read"
    total = 32 * MiB

    def log_message(self, *args: object) -> None:
        pass

    def _json(self, body: dict, status: int = 200) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _padded(self, head: bytes, tail: bytes, sse: bool) -> None:
        if sse:
            head, tail = b"event: message\ndata: " + head, tail + b"\n\n"
        size = self.total
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream" if sse else "application/json")
        self.send_header("Content-Length", str(size))
        self.end_headers()
        try:
            self.wfile.write(head)
            left = size - len(head) - len(tail)
            piece = b"x" * MiB
            while left > 0:
                self.wfile.write(piece[:left])
                left -= len(piece)
            self.wfile.write(tail)
        except OSError:  # the client closed the connection: what the bound is for
            pass

    def do_GET(self) -> None:
        self.send_response(405)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_DELETE(self) -> None:
        self.do_GET()

    def do_POST(self) -> None:
        msg = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        method, rid = msg.get("method"), msg.get("id")
        if rid is None:
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif method == "initialize":
            self._json({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"resources": {}},
                "serverInfo": {"name": "hostile", "version": "0"}}})
        elif method == "skills/list" and self.mode == "list":
            self._padded(b'{"jsonrpc": "2.0", "id": %d, "result": {"skills": [], "pad": "' % rid, b'"}}', False)
        elif method == "skills/list":
            self._json({"jsonrpc": "2.0", "id": rid, "result": {"skills": [ENTRY]}})
        elif method == "resources/read" and self.mode == "gzip":
            z = zlib.compressobj(wbits=zlib.MAX_WBITS | 16)  # one gzip member, made piece by piece: small to hold
            parts = [z.compress(b'{"jsonrpc": "2.0", "id": %d, "result": {"contents": [{"uri": "%s", "mimeType": '
                                b'"text/markdown", "text": "' % (rid, URI.encode()))]
            parts += [z.compress(PIECE) for _ in range(self.total // MiB)]
            data = b"".join([*parts, z.compress(b'"}]}}'), z.flush()])
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        elif method == "resources/read":
            self._padded(b'{"jsonrpc": "2.0", "id": %d, "result": {"contents": [{"uri": "%s", "mimeType": '
                         b'"text/markdown", "text": "' % (rid, URI.encode()), b'"}]}}', self.mode == "read-sse")
        else:
            self._json({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"no {method}"}})


@contextmanager
def hostile_http(mode: str, total: int) -> Iterator[str]:
    handler = type("H", (Hostile,), {"mode": mode, "total": total})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=30)


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["read", "read-sse"])
async def test_http_a_read_far_over_the_manifest_size_is_cut_at_its_limit(mode):
    with hostile_http(mode, 32 * MiB) as url:
        async with connect(url) as remote:
            entries = await remote.list_skills()
            with peak() as used:
                with pytest.raises(RemoteError) as info:
                    await remote.load(entries[0])
    e = info.value
    assert (e.code, e.where) == ("response-too-large", URI)
    assert e.message == (f"the answer to resources/read of a file the manifest lists as 8 bytes passed {READ_LIMIT_8} "
                         "bytes, its limit; it was refused before being buffered whole, and the connection was closed")
    assert used[0] < 4 * MiB


@pytest.mark.slow
@pytest.mark.anyio
async def test_http_a_listing_body_over_16_mib_is_cut():
    with hostile_http("list", 40 * MiB) as url:
        async with connect(url) as remote:
            with peak() as used:
                with pytest.raises(RemoteError) as info:
                    await remote.list_skills()
    assert info.value.code == "response-too-large"
    assert info.value.message.startswith(f"the answer to skills/list passed {MAX_MESSAGE} bytes, its limit")
    assert used[0] < MAX_MESSAGE + 8 * MiB


@pytest.mark.slow
@pytest.mark.anyio
async def test_http_a_compressed_body_is_refused():
    """A gzip bomb: a few kB on the wire, 32 MiB once decoded. The client asked for no compression."""
    with hostile_http("gzip", 32 * MiB) as url:
        async with connect(url) as remote:
            entries = await remote.list_skills()
            with peak() as used:
                with pytest.raises(RemoteError) as info:
                    await remote.load(entries[0])
    e = info.value
    assert e.code == "response-too-large"
    assert e.message == ("the server sent a compressed body (Content-Encoding: gzip) although the client asked for "
                         "none; its size cannot be bounded before it is decoded, so it was refused and the connection "
                         "was closed")
    assert used[0] < 4 * MiB


@pytest.mark.anyio
async def test_an_honest_read_at_the_limit_passes():
    """The bound is the manifest's size: an honest server's files load over both transports (also below,
    against the project's own server)."""
    from projector.remote.transport import MAX_LISTING, MAX_READ, read_limit

    assert (read_limit(0), read_limit(8), MAX_READ, MAX_LISTING) == (65536, 65584, 6 * 16 * MiB + 65536, 64 * MiB)


# ---------------------------------------------------------------------------- the project's own server, stdio and HTTP

GENERATED = ROOT / "generated_skills"
SERVE_STDIO = f"{sys.executable} -m projector.server --stdio"


def cli(*argv: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "projector.cli", *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def served(root: Path) -> dict[str, bytes]:
    """The files the index lists, and the index: what a server serves and a load writes (the derived evals beside
    each bundle are not served)."""
    index = json.loads((root / "skills.json").read_text("utf-8"))
    listed = sorted(r["uri"].removeprefix("skill://") for entry in index["skills"] for r in entry["resources"])
    return {rel: (root / rel).read_bytes() for rel in [*listed, "skills.json"]}


FULL = served(GENERATED)
EXPECTED = {k: v for k, v in FULL.items() if k != "skills.json"}


@pytest.fixture(scope="module")
def http_url(tmp_path_factory):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tmp_path_factory.mktemp("http") / "server.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "projector.server", "--http", f"127.0.0.1:{port}"],
                                cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, log.read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the server did not listen within 60 s"
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@pytest.mark.slow
def test_stdio_list_and_load(tmp_path):
    listed = cli("remote", "list", SERVE_STDIO, "--format", "json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == json.loads((GENERATED / "skills.json").read_text("utf-8"))
    loaded = cli("remote", "load", SERVE_STDIO, "--all", "--out", str(tmp_path / "out"))
    assert loaded.returncode == 0, loaded.stderr
    assert tree(tmp_path / "out") == FULL  # the index too: what build wrote, to the byte


@pytest.mark.slow
def test_http_pin_then_locked_load(http_url, tmp_path):
    lock = tmp_path / "skills.lock"
    pinned = cli("pin", http_url, "--lock", str(lock))
    assert pinned.returncode == 0, pinned.stderr
    doc = json.loads(lock.read_text("utf-8"))
    assert {s["server"] for s in doc["skills"]} == {"projector-demo"} and len(doc["skills"]) == 5  # not the URL
    loaded = cli("remote", "load", http_url, "--locked", str(lock), "--out", str(tmp_path / "out"))
    assert loaded.returncode == 0, loaded.stderr
    assert tree(tmp_path / "out") == FULL
    # a lock whose pin differs (as if the server had changed since) refuses before any read
    doc["skills"][0]["files"][0]["digest"] = "sha256:" + "0" * 64
    from projector.remote.pins import manifest_digest
    from projector.sep2640 import FileRef

    doc["skills"][0]["manifest"] = manifest_digest(FileRef(**f) for f in doc["skills"][0]["files"])
    lock.write_text(json.dumps(doc), "utf-8")
    refused = cli("remote", "load", http_url, "--locked", str(lock), "--out", str(tmp_path / "out2"))
    assert refused.returncode == 1 and "error[lock-mismatch]" in refused.stderr
    assert not (tmp_path / "out2").exists()


@pytest.mark.slow
@pytest.mark.anyio
async def test_http_library(http_url):
    async with connect(http_url) as remote:
        assert remote.protocol_version == "2026-07-28" and remote.declares_skills()
        entries = await remote.list_skills()
        skills = [await remote.load(e) for e in entries]
    assert {f"{s.entry.root.removeprefix('skill://')}/{p}": b for s in skills for p, b in s.paths().items()} == EXPECTED


@pytest.mark.slow
def test_http_unreachable_is_a_clear_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = cli("remote", "list", f"http://127.0.0.1:{port}/mcp")
    assert proc.returncode == 1 and "error[server-error]" in proc.stderr and "Traceback" not in proc.stderr
