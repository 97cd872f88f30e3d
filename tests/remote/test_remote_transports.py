"""``project-skill remote`` and ``pin`` against the project server over its real transports: stdio and HTTP."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
GENERATED = ROOT / "generated_skills"
SERVE_STDIO = f"{sys.executable} -m projector.server --stdio"


def cli(*argv: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "projector.cli", *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


FULL = tree(GENERATED)
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


def test_stdio_list_and_load(tmp_path):
    listed = cli("remote", "list", SERVE_STDIO, "--format", "json")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == json.loads((GENERATED / "skills.json").read_text("utf-8"))
    loaded = cli("remote", "load", SERVE_STDIO, "--all", "--out", str(tmp_path / "out"))
    assert loaded.returncode == 0, loaded.stderr
    assert tree(tmp_path / "out") == FULL  # the index too: what build wrote, to the byte


def test_http_pin_then_locked_load(http_url, tmp_path):
    lock = tmp_path / "skills.lock"
    pinned = cli("pin", http_url, "--lock", str(lock))
    assert pinned.returncode == 0, pinned.stderr
    doc = json.loads(lock.read_text("utf-8"))
    assert {s["server"] for s in doc["skills"]} == {http_url} and len(doc["skills"]) == 5
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


@pytest.mark.anyio
async def test_http_library(http_url):
    from projector.remote import connect

    async with connect(http_url) as remote:
        assert remote.protocol_version == "2026-07-28" and remote.declares_skills()
        entries = await remote.list_skills()
        skills = [await remote.load(e) for e in entries]
    assert {f"{s.entry.root.removeprefix('skill://')}/{p}": b for s in skills for p, b in s.paths().items()} == EXPECTED


def test_http_unreachable_is_a_clear_error():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = cli("remote", "list", f"http://127.0.0.1:{port}/mcp")
    assert proc.returncode == 1 and "error[server-error]" in proc.stderr and "Traceback" not in proc.stderr
