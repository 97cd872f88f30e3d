"""``project-skill tools SERVER`` freezes a server's tools/list into a snapshot; ``--tools-from FILE`` reads it back
offline, through the very code a live server's listing goes through, so drift (``tool-mismatch``, one warning per
differing field, at the declaration) is reported the same way from both; a bad snapshot is a positioned error."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

from projector.errors import LoadError
from projector.load import load_data
from projector import toolset
from projector.remote import tools as remote_tools
from projector.remote.errors import ServerError
from projector.remote.tools import (ToolSource, fetch_snapshot, list_server_tools, merge_tools, parse_snapshot,
                                    read_snapshot, snapshot_bytes)

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "bad_inputs"

WORKFLOW = """\
name: counting
description: Count things.
arguments:
  - {name: word, description: What to count, required: true, type: string}
tools:
  - name: count
    description: Count the letters of a word.
    input_schema:
      type: object
      properties: {word: {type: string}, times: {type: %(times)s}}
      required: [word]
    annotations: {readOnlyHint: true}
steps:
  - name: count
    tool: count
    args: {word: {arg: word}}
"""


def counting_server(*, describe: str = "Count the letters of a word.") -> MCPServer:
    server = MCPServer("counting")

    async def count(word: str, times: int = 1) -> int:
        return len(word) * times

    async def shout(word: str) -> str:
        return word.upper()

    server.add_tool(count, name="count", description=describe, annotations=ToolAnnotations(read_only_hint=True))
    server.add_tool(shout, name="shout", description="Shout a word.",
                    annotations=ToolAnnotations(read_only_hint=True))
    return server


def snapshot_of(server) -> bytes:
    return anyio.run(fetch_snapshot, server, "counting")


# ------------------------------------------------------------------------------------------------------ the bytes


def test_snapshot_bytes_are_sorted_canonical_and_end_in_one_newline():
    entries = [{"inputSchema": {"type": "object", "properties": {"b": {}, "a": {}}}, "name": "zeta",
                "annotations": {"readOnlyHint": True}, "description": "Z."},
               {"name": "alpha", "inputSchema": {"type": "object"}, "_meta": {"z": 1, "a": 2}, "title": "A"},
               {"name": "alpha", "inputSchema": {"type": "string"}}]  # a second 'alpha': the first one wins
    data = snapshot_bytes(entries)
    assert data == snapshot_bytes(list(reversed(entries[:2])) + entries[2:])  # the order given does not matter
    assert data.endswith(b"}\n") and not data.endswith(b"\n\n") and b"\r" not in data
    doc = json.loads(data)
    assert [t["name"] for t in doc["tools"]] == ["alpha", "zeta"]
    assert list(doc["tools"][0]) == ["name", "title", "inputSchema", "_meta"]  # fixed keys first, then by name
    assert list(doc["tools"][1]) == ["name", "description", "inputSchema", "annotations"]
    assert list(doc["tools"][1]["inputSchema"]["properties"]) == ["a", "b"]
    assert doc["tools"][0]["inputSchema"] == {"type": "object"}
    assert data.decode().startswith('{\n  "tools": [\n    {\n      "name": "alpha",')


@pytest.mark.slow
def test_the_cli_prints_writes_and_checks_a_stdio_servers_snapshot(tmp_path):
    server = f"{sys.executable} -m projector.server --stdio"
    run = subprocess.run([sys.executable, "-m", "projector.cli", "tools", server], cwd=ROOT, capture_output=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    names = [t["name"] for t in json.loads(run.stdout)["tools"]]
    assert names == sorted(names) and {"greet", "issue_refund", "get_order"} <= set(names)
    out = tmp_path / "tools.json"
    wrote = subprocess.run([sys.executable, "-m", "projector.cli", "tools", server, "--out", str(out)], cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
    assert wrote.returncode == 0 and f"wrote {out}: {len(names)} tools" in wrote.stderr
    assert out.read_bytes() == run.stdout and os.listdir(tmp_path) == ["tools.json"]  # no temporary file left
    same = subprocess.run([sys.executable, "-m", "projector.cli", "tools", server, "--check", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert same.returncode == 0 and "is up to date" in same.stdout
    out.write_bytes(run.stdout.replace(b"Return a friendly greeting", b"Say hello"))
    stale = subprocess.run([sys.executable, "-m", "projector.cli", "tools", server, "--check", str(out)], cwd=ROOT,
                           capture_output=True, text=True, timeout=120)
    assert stale.returncode == 1 and "-      \"description\": \"Say hello" in stale.stdout
    assert "is out of date; run: project-skill tools" in stale.stdout and "Traceback" not in stale.stderr


class _Pages:
    """A fake connection whose tools/list never ends (a new cursor each page), or repeats its cursor."""

    def __init__(self, repeat: bool):
        self.repeat, self.calls = repeat, 0
        self.label = "fake"
        self.client = self

    async def list_tools(self, cursor=None):
        import mcp_types

        self.calls += 1
        nxt = "same" if self.repeat else f"c{self.calls}"
        tool = mcp_types.Tool(name=f"t{self.calls}", input_schema={"type": "object"})
        return mcp_types.ListToolsResult(tools=[tool], next_cursor=nxt)


@pytest.mark.parametrize("repeat, message", [(False, "did not end within 5 pages"), (True, "repeated a cursor")])
def test_every_page_is_followed_within_a_bound(monkeypatch, repeat, message):
    from projector.remote import client

    fake = _Pages(repeat)

    @contextlib.asynccontextmanager
    async def connect(server, label=None, **_):
        yield fake

    monkeypatch.setattr(client, "connect", connect)
    monkeypatch.setattr(remote_tools, "MAX_PAGES", 5)
    with pytest.raises(ServerError) as info:
        anyio.run(fetch_snapshot, "fake", "fake")
    assert message in str(info.value)
    assert fake.calls == (5 if not repeat else 2)


# ------------------------------------------------------------------------------------------- one path for both


def test_a_snapshot_reads_back_exactly_as_the_live_server(tmp_path):
    server = counting_server()
    path = tmp_path / "tools.json"
    path.write_bytes(snapshot_of(server))
    live = anyio.run(list_server_tools, server, "counting")
    assert read_snapshot(path) == live and list(live) == ["count", "shout"]
    assert live["count"].input_schema["properties"]["times"] == {"default": 1, "title": "Times", "type": "integer"}

    wf = load_data((WORKFLOW % {"times": "string"}).encode(), "wf.yaml")
    (_, from_server) = merge_tools([wf], live, ToolSource("counting"))
    (_, from_file) = merge_tools([wf], read_snapshot(path), ToolSource("tools.json", snapshot=True))
    (w,) = from_file
    assert [d.span for d in from_server] == [w.span] == [wf.tool("count").span]
    assert [d.message.replace("the server counting", "X").replace("server", "snapshot") for d in from_server] \
        == [w.message.replace("the snapshot tools.json", "X")]


def test_drift_is_one_warning_per_field_at_the_declaration_with_the_refresh_command(tmp_path):
    path = tmp_path / "tools.json"
    path.write_bytes(snapshot_of(counting_server(describe="Count letters.")))
    text = (WORKFLOW % {"times": "string"}).replace("{readOnlyHint: true}", "{readOnlyHint: false}")
    wf = load_data(text.encode(), "wf.yaml")
    (new,), warnings = merge_tools([wf], read_snapshot(path), ToolSource("tools.json", snapshot=True))
    by_field = {w.message.split(": ", 1)[1].split(" differs")[0]: w for w in warnings}
    assert sorted(by_field) == ["annotations", "description", "input_schema"]
    assert all(w.code == "tool-mismatch" and w.severity == "warning" for w in warnings)
    assert {w.span for w in warnings} == {wf.tool("count").span} and wf.tool("count").span.line == 6
    assert ("'properties.times.type' (file: string 'string', snapshot: string 'integer')"
            in by_field["input_schema"].message)
    assert "'readOnlyHint' (file: boolean false, snapshot: boolean true)" in by_field["annotations"].message
    assert "(file: string 'Count the letters of a word.', snapshot: string 'Count letters.')" \
        in by_field["description"].message
    assert all("project-skill tools SERVER --out tools.json" in w.hint for w in warnings)
    assert new.tool("count").description == "Count letters."  # the snapshot's declaration is used


def test_unknown_tool_from_a_snapshot_is_at_tool_and_says_did_you_mean(cli, tmp_path):
    """A step that calls a tool the snapshot lacks is reported where ``tool:`` names it, with the nearest name."""
    snap = tmp_path / "tools.json"
    snap.write_bytes(snapshot_of(counting_server()))
    wf = tmp_path / "wf" / "counting.yaml"
    wf.parent.mkdir()
    wf.write_text((WORKFLOW % {"times": "integer"}).replace("tool: count", "tool: cuont"), encoding="utf-8")
    run = cli("check", str(wf.parent), "--out", str(tmp_path / "out"), "--tools-from", str(snap))
    assert run.code == 1
    line = next(i for i, text in enumerate(wf.read_text().splitlines(), 1) if "tool: cuont" in text)
    assert f"{wf}:{line}:11: error[unknown-tool]: step 'count' calls the tool 'cuont'" in run.err
    assert "hint: did you mean 'count'?" in run.err


def test_check_strict_fails_on_drift_from_a_snapshot_and_passes_when_in_line(cli, tmp_path):
    snap = tmp_path / "tools.json"
    snap.write_bytes(snapshot_of(counting_server()))
    wf = tmp_path / "wf" / "counting.yaml"
    wf.parent.mkdir()
    wf.write_text(WORKFLOW % {"times": "integer"}, encoding="utf-8")
    out = str(tmp_path / "out")
    assert cli("build", str(wf.parent), "--out", out, "--tools-from", str(snap), "--strict").code == 0
    assert cli("check", str(wf.parent), "--out", out, "--tools-from", str(snap), "--strict").code == 0
    wf.write_text(WORKFLOW % {"times": "string"}, encoding="utf-8")
    run = cli("check", str(wf.parent), "--out", out, "--tools-from", str(snap), "--strict")
    assert run.code == 1
    assert f"{wf}:6:5: warning[tool-mismatch]: tool 'count': input_schema differs" in run.err


@pytest.mark.slow
def test_a_snapshot_run_is_offline_and_never_imports_mcp(tmp_path):
    snap = tmp_path / "tools.json"
    snap.write_bytes(snapshot_of(counting_server()))
    (tmp_path / "wf").mkdir()
    (tmp_path / "wf" / "c.yaml").write_text("name: c\ndescription: Count.\nsteps:\n  - name: count\n    tool: count\n"
                                            "    args: {word: {const: abc}}\n", encoding="utf-8")
    code = ("import sys; from projector.cli import main;"
            f"rc = main(['build', {str(tmp_path / 'wf')!r}, '--out', {str(tmp_path / 'out')!r}, "
            f"'--tools-from', {str(snap)!r}]);"
            "print(rc, 'mcp' in sys.modules, 'anyio' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PATH": ""})
    assert proc.stdout.splitlines()[-1].split() == ["0", "False", "False"], proc.stderr
    assert "Count the letters of a word." in (tmp_path / "out" / "c" / "references" / "tools.md").read_text()
    assert not (tmp_path / "wf" / ".projector_cache").exists()  # a snapshot run bypasses the cache, as a server's


# ------------------------------------------------------------------------------------------------ bad snapshots


def test_the_corpus_case_is_refused_at_its_position(cli, tmp_path):
    case = CORPUS / "bad-snapshot.tools.json"
    run = cli("check", str(ROOT / "workflows" / "hello-world.yaml"), "--tools-from", str(case))
    assert run.code == 1 and "Traceback" not in run.err
    assert f"{case.as_posix()}:5:22: error[bad-snapshot]: tools[0] ('greet'): 'inputSchema' must be an object" \
        in run.err
    assert "write it again with: project-skill tools SERVER --out" in run.err


@pytest.mark.parametrize("text, where, words", [
    ('{"tools": [\n  {"name": "a",, }\n]}', "2:16", "not JSON"),
    ('{"tools": [], "tools": []}', "1:1", "appears twice"),
    ('{"tools": [' + "[" * 70 + "]" * 70 + "]}", "1:1", "nested deeper"),
    ('{"tools": [{"name": "a", "inputSchema": {"maximum": 1' + "0" * 80 + "}}]}", "1:1", "digits"),
    ('{"tools": [{"name": "a", "inputSchema": {"maximum": NaN}}]}', "1:1", "NaN is not a JSON value"),
    ('[1, 2]', "1:1", 'a JSON object {"tools": [...]}'),
    ('{"tools": [], "skills": []}', "1:15", "'skills' is not part of a tools snapshot"),
    ('{"tools": [\n 7]}', "2:2", "tools[0] is not an object"),
    ('{"tools": [{"inputSchema": {}}]}', "1:12", "has no 'name' string"),
    ('{"tools": [{"name": "a"}]}', "1:12", "has no 'inputSchema'"),
    ('{"tools": [{"name": "a", "inputSchema": {}},\n {"name": "a", "inputSchema": {}}]}', "2:11", "listed twice"),
    ('{"tools": [{"name": "a", "inputSchema": {}, "description": 3}]}', "1:60", "'description' must be a string"),
    ('{"tools": [{"name": "a", "inputSchema": {}, "outputSchema": []}]}', "1:61", "'outputSchema' must be an"),
    ('{"tools": [{"name": "a", "inputSchema": {}, "annotations": {"readOnlyHint": "yes"}}]}', "1:77",
     "annotation 'readOnlyHint' must be true or false"),
    (b'{"tools": ["\xff"]}', "1:1", "not UTF-8"),
])
def test_a_bad_snapshot_is_a_positioned_error(tmp_path, text, where, words):
    path = tmp_path / "tools.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(LoadError) as info:
        read_snapshot(path)
    found = [d for d in info.value.diagnostics if words in d.message]
    assert found, [d.message for d in info.value.diagnostics]
    assert found[0].code == "bad-snapshot" and f"{found[0].span.line}:{found[0].span.col}" == where


def test_an_unreadable_snapshot_is_an_io_error_read_with_a_bound(tmp_path, monkeypatch):
    real = tmp_path / "real.json"
    real.write_bytes(snapshot_bytes([]))
    link = tmp_path / "link.json"
    link.symlink_to(real)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    (tmp_path / "dir.json").mkdir()
    for path, words in ((link, "symbolic link"), (fifo, "a FIFO"), (tmp_path / "dir.json", "folder")):
        with pytest.raises(LoadError) as info:
            read_snapshot(path)
        (d,) = info.value.diagnostics
        assert d.code == "io" and words in d.message and d.span.file == path.as_posix()
    monkeypatch.setattr(toolset, "SNAPSHOT_LIMIT", 10)
    with pytest.raises(LoadError) as info:
        read_snapshot(real)
    assert "over the limit of 10" in info.value.diagnostics[0].message


def test_a_missing_snapshot_is_an_io_error_not_a_command(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = cli("check", str(ROOT / "workflows"), "--tools-from", "tools.json")
    assert run.code == 1 and "tools.json: error[io]: the tools snapshot does not exist" in run.err
    assert "project-skill tools SERVER --out tools.json" in run.err and "server-error" not in run.err


def test_parse_snapshot_round_trips_what_it_wrote():
    data = snapshot_of(counting_server())
    assert snapshot_bytes(json.loads(data)["tools"]) == data
    assert set(parse_snapshot(data, "x.json")) == {"count", "shout"}
