"""``project-skill tools SERVER``, and ``init`` and ``--tools-from SERVER``, which share its client
(projector.remote.tools), against a hostile server on stdio (tests/bad_inputs/response-too-large.server.py, mode
``tools``): a listing that never ends, or ends past the one bound of a tools snapshot, is refused naming the server,
and nothing is written."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "bad_inputs" / "response-too-large.server.py"
WORKFLOWS = ROOT / "workflows"
MiB = 1 << 20


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The CLI in a subprocess (a stdio server needs a real stderr to inherit); the timeout trips only on a hang."""
    return subprocess.run([sys.executable, "-m", "projector.cli", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=300, stdin=subprocess.DEVNULL)


def server(page_bytes: int, pages: int) -> str:
    """A stdio server whose tools/list sends ``pages`` pages (0: without end) of one tool of ``page_bytes``."""
    return shlex.join([sys.executable, str(SCRIPT), "tools", str(page_bytes), str(pages)])


@pytest.mark.slow
@pytest.mark.parametrize("command", ["tools", "check", "init"])
def test_a_listing_past_the_snapshot_bound_is_refused_naming_the_server(tmp_path, command):
    """Issue 29, items 6 and 11: on main, `tools` kept every page with no total cap (1.5 GB in under a minute) and
    `tools --out` wrote a 20 MiB snapshot that `--tools-from` then refused. Now 20 pages of 1 MiB stop at 16 MiB."""
    spec = server(MiB, 20)
    out = tmp_path / "tools.json"
    args = {"tools": ["tools", spec, "--out", str(out)],
            "check": ["check", str(WORKFLOWS), "--tools-from", spec],
            "init": ["init", "wf", "--tool", "t00001", "--tools-from", spec, "--out", str(tmp_path / "wf.yaml")]}[command]
    run = cli(*args, cwd=tmp_path)
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    assert f"{spec}: error[response-too-large]: tools/list passed " in run.stderr
    assert "over 16 MiB, the limit of a tools snapshot" in run.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_listing_within_the_bound_is_written_and_read_back(tmp_path):
    """The same server with fewer pages: what `tools --out` writes, `--tools-from` reads."""
    spec = server(MiB, 3)
    out = tmp_path / "tools.json"
    assert cli("tools", spec, "--out", str(out), cwd=tmp_path).returncode == 0
    assert [t["name"] for t in json.loads(out.read_bytes())["tools"]] == ["t00001", "t00002", "t00003"]
    run = cli("init", "wf", "--tool", "t00002", "--tools-from", str(out), "--out", str(tmp_path / "wf.yaml"), cwd=tmp_path)
    assert run.returncode == 0, run.stderr


@pytest.mark.slow
def test_an_endless_listing_is_refused_naming_the_server(tmp_path):
    """Issue 29, item 11: a tools/list that never ends was reported as `None: error[...]`."""
    spec = server(256, 0)
    run = cli("tools", spec, cwd=tmp_path)
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    assert run.stderr.startswith(f"{spec}: error[server-error]: tools/list did not end within ")
    assert run.stdout == ""


# A stdio server that answers tools/list as told (MODE): "twice" lists two tools named greet with different schemas;
# "deep" sends a schema nested DEPTH levels (JSON, but past any reader's depth); "junk" writes a line that is not JSON
# at all before a good answer. Everything else is answered as a plain handshake-era server answers it.
LISTING = '''
import json
import sys

MODE, DEPTH = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 0


def send(text):
    sys.stdout.write(text + "\\n")
    sys.stdout.flush()


GREET = {"name": "greet", "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}
GREET_TOO = {"name": "greet", "inputSchema": {"type": "object", "properties": {"amount": {"type": "number"}}}}
for line in sys.stdin:
    msg = json.loads(line)
    method, rid = msg.get("method"), msg.get("id")
    if rid is None:
        continue
    if method == "initialize":
        send(json.dumps({"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": msg["params"]["protocolVersion"], "capabilities": {"tools": {}},
            "serverInfo": {"name": "listing", "version": "0"}}}))
    elif method == "tools/list" and MODE == "twice":
        send(json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"tools": [GREET, GREET_TOO]}}))
    elif method == "tools/list" and MODE == "deep":
        send('{"jsonrpc": "2.0", "id": %d, "result": {"tools": [{"name": "greet", "inputSchema": {"type": '
             '"object", "x": %s%s}}]}}' % (rid, "[" * DEPTH, "]" * DEPTH))
    elif method == "tools/list":
        send("this line is not JSON at all")
        send(json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"tools": [GREET]}}))
    else:
        send(json.dumps({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no " + method}}))
'''


def listing_server(tmp_path: Path, *args: str) -> str:
    script = tmp_path.parent / f"{tmp_path.name}-listing.py"  # beside tmp_path: the runs below must leave it empty
    script.write_text(LISTING, encoding="utf-8")
    return shlex.join([sys.executable, str(script), *args])


GREET_WORKFLOW = ("name: greet_flow\ndescription: Greet someone.\ntools:\n  - {name: greet, description: Greet., "
                  "input_schema: {type: object}}\nsteps:\n  - {name: hi, tool: greet}\n")


def test_a_tool_listed_twice_is_refused_naming_the_server(tmp_path):
    """Review of wave 2: a server listing two tools named greet (two schemas) was snapshotted with the first one,
    although the server may run the other; `tools SERVER` now refuses it, and writes nothing."""
    spec = listing_server(tmp_path, "twice")
    out = tmp_path / "tools.json"
    run = cli("tools", spec, "--out", str(out), cwd=tmp_path)
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    assert run.stderr.startswith(f"{spec}: error[server-error]: tools/list lists the tool 'greet' twice"), run.stderr
    assert list(tmp_path.iterdir()) == [] and run.stdout == ""


def test_the_gateway_refuses_an_upstream_that_lists_a_tool_twice(tmp_path):
    """The gateway lists with the same listing: on c8af271 it served one of the two schemas (and mcp printed `Tool
    already exists: greet`), while the upstream ran whichever it chose."""
    spec = listing_server(tmp_path, "twice")
    wfs = tmp_path / "workflows"
    wfs.mkdir()
    (wfs / "greet.yaml").write_text(GREET_WORKFLOW, encoding="utf-8")
    assert cli("build", str(wfs), "--out", "skills", cwd=tmp_path).returncode == 0
    run = cli("serve", "--upstream", spec, "--workflows", str(wfs), "--skills", "skills", cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    assert f"{spec}: error[server-error]: tools/list lists the tool 'greet' twice" in run.stderr, run.stderr
    assert "Tool already exists" not in run.stderr and "Traceback" not in run.stderr


@pytest.mark.parametrize("command", ["tools", "serve"])
def test_a_listing_nested_past_any_reader_ends_the_connection_at_once(tmp_path, command):
    """Review of wave 2: a schema nested 100k levels made mcp log a traceback ("Failed to parse JSONRPC message from
    server"), then `tools` waited 60 s and the gateway 30 s for an answer that could never be read, and said the
    server "did not answer". Now the connection ends at once, with an error saying why."""
    spec = listing_server(tmp_path, "deep", "100000")
    if command == "tools":
        run = cli("tools", spec, cwd=tmp_path)
    else:
        wfs = tmp_path / "workflows"
        wfs.mkdir()
        (wfs / "greet.yaml").write_text(GREET_WORKFLOW, encoding="utf-8")
        assert cli("build", str(wfs), "--out", "skills", cwd=tmp_path).returncode == 0
        run = cli("serve", "--upstream", spec, "--upstream-timeout", "20", "--workflows", str(wfs), "--skills", "skills",
                  cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    assert f"{spec}: error[server-error]: the server sent a JSON message nested deeper than " in run.stderr, run.stderr
    assert "recursion limit exceeded" in run.stderr and "did not answer" not in run.stderr
    assert "Traceback" not in run.stderr and "Failed to parse" not in run.stderr


def test_a_line_that_is_not_json_is_skipped_without_a_traceback(tmp_path):
    """Junk on a server's stdout (a stray print) is skipped, as the SDK skips it, but without its logged traceback."""
    run = cli("tools", listing_server(tmp_path, "junk"), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert [t["name"] for t in json.loads(run.stdout)["tools"]] == ["greet"]
    assert "Traceback" not in run.stderr and "Failed to parse" not in run.stderr
