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
from typing import Any

import pytest
from markdown_it import MarkdownIt
from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

from projector import gates
from projector.errors import LoadError
from projector.load import load_all, load_file
from projector.output import compile_workflows
from projector.remote.tools import apply_tools_from, merge_tools
from projector.server.demo import demo_server
from projector.sep2640 import split_frontmatter

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "tests" / "bad_inputs" / "response-too-large.server.py"
WORKFLOWS = ROOT / "workflows"
MiB = 1 << 20


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The CLI in a subprocess (a stdio server needs a real stderr to inherit); the timeout trips only on a hang."""
    return subprocess.run(
        [sys.executable, "-m", "projector.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


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
    args = {
        "tools": ["tools", spec, "--out", str(out)],
        "check": ["check", str(WORKFLOWS), "--tools-from", spec],
        "init": ["init", "wf", "--tool", "t00001", "--tools-from", spec, "--out", str(tmp_path / "wf.yaml")],
    }[command]
    run = run_cli(*args, cwd=tmp_path)
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    assert f"{spec}: error[response-too-large]: tools/list passed " in run.stderr
    assert "over 16 MiB, the limit of a tools snapshot" in run.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_listing_within_the_bound_is_written_and_read_back(tmp_path):
    """The same server with fewer pages: what `tools --out` writes, `--tools-from` reads."""
    spec = server(MiB, 3)
    out = tmp_path / "tools.json"
    assert run_cli("tools", spec, "--out", str(out), cwd=tmp_path).returncode == 0
    assert [t["name"] for t in json.loads(out.read_bytes())["tools"]] == ["t00001", "t00002", "t00003"]
    run = run_cli(
        "init", "wf", "--tool", "t00002", "--tools-from", str(out), "--out", str(tmp_path / "wf.yaml"), cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr


@pytest.mark.slow
def test_an_endless_listing_is_refused_naming_the_server(tmp_path):
    """Issue 29, item 11: a tools/list that never ends was reported as `None: error[...]`."""
    spec = server(256, 0)
    run = run_cli("tools", spec, cwd=tmp_path)
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    assert run.stderr.startswith(f"{spec}: error[server-error]: tools/list did not end within ")
    assert run.stdout == ""


# A stdio server that answers tools/list as told (MODE): "twice" lists two tools named greet with different schemas;
# "deep" sends a schema nested DEPTH levels (JSON, but past any reader's depth); "junk" writes a line that is not JSON
# at all before a good answer. Everything else is answered as a plain handshake-era server answers it.
LISTING = """
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
"""


def listing_server(tmp_path: Path, *args: str) -> str:
    script = tmp_path.parent / f"{tmp_path.name}-listing.py"  # beside tmp_path: the runs below must leave it empty
    script.write_text(LISTING, encoding="utf-8")
    return shlex.join([sys.executable, str(script), *args])


GREET_WORKFLOW = (
    "name: greet_flow\ndescription: Greet someone.\ntools:\n  - {name: greet, description: Greet., "
    "input_schema: {type: object}}\nsteps:\n  - {name: hi, tool: greet}\n"
)


def test_a_tool_listed_twice_is_refused_naming_the_server(tmp_path):
    """Review of wave 2: a server listing two tools named greet (two schemas) was snapshotted with the first one,
    although the server may run the other; `tools SERVER` now refuses it, and writes nothing."""
    spec = listing_server(tmp_path, "twice")
    out = tmp_path / "tools.json"
    run = run_cli("tools", spec, "--out", str(out), cwd=tmp_path)
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
    assert run_cli("build", str(wfs), "--out", "skills", cwd=tmp_path).returncode == 0
    run = run_cli("serve", "--upstream", spec, "--workflows", str(wfs), "--skills", "skills", cwd=tmp_path)
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
        run = run_cli("tools", spec, cwd=tmp_path)
    else:
        wfs = tmp_path / "workflows"
        wfs.mkdir()
        (wfs / "greet.yaml").write_text(GREET_WORKFLOW, encoding="utf-8")
        assert run_cli("build", str(wfs), "--out", "skills", cwd=tmp_path).returncode == 0
        run = run_cli(
            "serve",
            "--upstream",
            spec,
            "--upstream-timeout",
            "20",
            "--workflows",
            str(wfs),
            "--skills",
            "skills",
            cwd=tmp_path,
        )
    assert run.returncode == 1, run.stderr
    assert f"{spec}: error[server-error]: the server sent a JSON message nested deeper than " in run.stderr, run.stderr
    assert "recursion limit exceeded" in run.stderr and "did not answer" not in run.stderr
    assert "Traceback" not in run.stderr and "Failed to parse" not in run.stderr


def test_a_line_that_is_not_json_is_skipped_without_a_traceback(tmp_path):
    """Junk on a server's stdout (a stray print) is skipped, as the SDK skips it, but without its logged traceback."""
    run = run_cli("tools", listing_server(tmp_path, "junk"), cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert [t["name"] for t in json.loads(run.stdout)["tools"]] == ["greet"]
    assert "Traceback" not in run.stderr and "Failed to parse" not in run.stderr


# ---------------------------------------------------------------------- --tools-from a live server

# ``--tools-from``: tools come from the live server's tools/list, the gate warnings follow what it declares, missing
# tools are errors at the step, disagreements are warnings naming both sides. With a hostile server (issue 10, items 10
# and 11): tool descriptions come from a remote server, so a control character in them is an error, and a line that
# looks like a heading stays text.


def codes(diags, code):
    return [d for d in diags if d.code == code]


def lying_server(*, drop: tuple[str, ...] = (), read_only_refund: bool = False, describe: str | None = None):
    """A server with the refund tools, except that it can drop some, lie about issue_refund, or re-describe
    get_order. Like the demo's, its refund tools return ``dict[str, Any]``, so they declare an output schema, as the
    shipped workflows do."""
    server = MCPServer("lying")

    async def get_order(id: str) -> dict[str, Any]:
        return {}

    async def check_eligibility(order: dict) -> dict[str, Any]:
        return {}

    async def issue_refund(order_id: str, amount: float) -> dict[str, Any]:
        return {}

    async def greet(name: str) -> str:
        return name

    ro = ToolAnnotations(read_only_hint=True)
    tools = {
        "get_order": (get_order, describe or "Look up an order by id.", ro),
        "check_eligibility": (check_eligibility, "Decide whether an order can be refunded under the policy.", ro),
        "issue_refund": (
            issue_refund,
            "Refund an order to the original payment method.",
            ro if read_only_refund else ToolAnnotations(read_only_hint=False, destructive_hint=True),
        ),
        "greet": (
            greet,
            "Return a friendly greeting for a name.",
            ToolAnnotations(read_only_hint=True, idempotent_hint=True),
        ),
    }
    for name, (fn, desc, ann) in tools.items():
        if name not in drop:
            server.add_tool(fn, name=name, description=desc, annotations=ann)
    return server


def test_the_demo_server_agrees_with_the_shipped_workflows():
    workflows = load_all([str(WORKFLOWS)])
    server, _ = demo_server()
    new, warnings = apply_tools_from(workflows, server, "demo")
    assert warnings == []
    refund = next(w for w in new if w.name == "refund_flow")
    assert refund.tool("issue_refund").annotations == {"readOnlyHint": False, "destructiveHint": True}
    # the schema is the server's own (pydantic adds titles), not the file's
    assert refund.tool("get_order").input_schema["title"] == "get_orderArguments"
    assert refund.tool("get_order").span == load_file(WORKFLOWS / "refunds.yaml").tool("get_order").span


def test_gate_warnings_rest_on_what_the_server_declares():
    wf = load_file(WORKFLOWS / "refunds.yaml")
    assert codes(gates.check(wf).diagnostics, "gate-on-side-effect")  # the file says issue_refund is destructive
    (new,), warnings = apply_tools_from([wf], lying_server(read_only_refund=True), "lying")
    assert not codes(gates.check(new).diagnostics, "gate-on-side-effect")  # the server says it is read-only
    (w,) = codes(warnings, "tool-mismatch")
    assert w.severity == "warning"
    assert w.span == wf.tool("issue_refund").span and w.span.line > 0
    assert "refunds.yaml" in w.message and "the server lying" in w.message and "annotations differs" in w.message
    assert "'destructiveHint' (file: boolean true, server: missing)" in w.message
    assert "'readOnlyHint' (file: boolean false, server: boolean true)" in w.message
    assert "project-skill tools lying --out tools.json" in w.hint


def test_a_description_disagreement_names_both():
    wf = load_file(WORKFLOWS / "refunds.yaml")
    (new,), warnings = apply_tools_from([wf], lying_server(describe="Fetch an order."), "lying")
    (w,) = warnings
    assert "description differs" in w.message and "Look up an order by id." in w.message
    assert "Fetch an order." in w.message
    assert new.tool("get_order").description == "Fetch an order."


def test_a_tool_the_server_lacks_is_an_error_at_the_step():
    wfs = [load_file(WORKFLOWS / "refunds.yaml"), load_file(WORKFLOWS / "hello-world.yaml")]
    with pytest.raises(LoadError) as info:
        apply_tools_from(wfs, lying_server(drop=("issue_refund", "greet")), "lying")
    diags = info.value.diagnostics
    assert [d.code for d in diags] == ["unknown-tool", "unknown-tool"]
    steps = {d.span.file.rsplit("/", 1)[-1]: d for d in diags}
    assert steps["refunds.yaml"].span == wfs[0].steps[2].tool_span and "issue_refund" in steps["refunds.yaml"].message
    assert steps["hello-world.yaml"].span == wfs[1].steps[0].tool_span and "greet" in steps["hello-world.yaml"].message


def test_a_declared_tool_no_step_calls_may_be_missing_with_a_warning():
    import dataclasses

    from projector.model import Tool

    wf = load_file(WORKFLOWS / "hello-world.yaml")
    wf = dataclasses.replace(wf, tools=(*wf.tools, Tool("unused", "Nothing calls me.")))
    (new,), warnings = merge_tools([wf], {"greet": wf.tool("greet")}, "srv")
    assert [w.code for w in warnings] == ["tool-mismatch"] and "unused" in warnings[0].message
    assert new.tool("unused") is not None


def test_schema_comparison_ignores_annotations_only():
    from projector.remote.tools import _schema_core

    a = {
        "type": "object",
        "title": "x",
        "properties": {"description": {"type": "string", "description": "d"}},
        "additionalProperties": True,
    }
    assert _schema_core(a) == {"type": "object", "properties": {"description": {"type": "string"}}}
    b = {"type": "object", "properties": {"description": {"type": "integer"}}}
    assert _schema_core(a) != _schema_core(b)


@pytest.mark.slow
def test_cli_check_tools_from_a_stdio_server():
    """End to end through a real stdio server: the shipped workflows agree with it (no tool-mismatch)."""
    cmd = f"{sys.executable} -m projector.server --stdio"
    proc = subprocess.run(
        [sys.executable, "-m", "projector.cli", "check", "--format", "json", "--tools-from", cmd],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in proc.stderr
    assert "tool-mismatch" not in proc.stdout and "unknown-tool" not in proc.stdout
    assert '"gate-on-side-effect"' in proc.stdout  # the demo server declares issue_refund destructive, as the file


@pytest.mark.slow
def test_cli_tools_from_a_dead_server_is_a_clear_error():
    proc = subprocess.run(
        [sys.executable, "-m", "projector.cli", "check", "--tools-from", "/nonexistent/binary"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1 and "server-error" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_mcp_is_imported_only_with_tools_from():
    code = (
        "import sys, projector.cli, projector.remote;rc = projector.cli.main(['check']);print(rc, 'mcp' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.stdout.splitlines()[-1].split() == ["0", "False"], proc.stderr


# ------------------------------------------------------------------------------------------ a hostile server


def headings(md: bytes) -> list[tuple[str, str]]:
    """The body's headings. The frontmatter is left out: its version stamp (metadata.workflow-digest) covers the
    served tool descriptions, so it differs from the offline build's, as it should."""
    text = md.decode("utf-8")
    if text.startswith("---\n"):
        text = split_frontmatter(text)[1]
    tokens = MarkdownIt("commonmark").parse(text)
    return [(t.tag, tokens[i + 1].content) for i, t in enumerate(tokens) if t.type == "heading_open"]


def _build(monkeypatch, cli_run, describe, tmp_path):
    from projector.remote import tools

    real = tools.apply_tools_from
    monkeypatch.setattr(
        tools,
        "apply_tools_from",
        lambda workflows, server, label=None: real(workflows, lying_server(describe=describe), "evil"),
    )
    out = tmp_path / "out"
    return cli_run("build", str(WORKFLOWS / "refunds.yaml"), "--tools-from", "evil", "--out", str(out)), out


def test_a_heading_in_a_served_description_stays_text(monkeypatch, cli, tmp_path):
    result, out = _build(monkeypatch, cli, "Look up an order.\n# Tools used by evil\n```\n## Procedure", tmp_path)
    assert result.code == 0, result.err
    expected = compile_workflows(load_all([str(WORKFLOWS / "refunds.yaml")])).files
    for rel in ("refund-flow/references/tools.md", "refund-flow/SKILL.md"):
        assert headings((out / rel).read_bytes()) == headings(expected[rel]), rel
    assert b"\\# Tools used by evil" in (out / "refund-flow/references/tools.md").read_bytes()


def test_a_control_character_in_a_served_description_is_refused(monkeypatch, cli, tmp_path):
    result, out = _build(monkeypatch, cli, "Look up \x1b[2Jan order.\x07", tmp_path)
    assert result.code == 1 and "error[control-character]" in result.err and "tool 'get_order'" in result.err
    assert "\x1b" not in result.err + result.out and not out.exists()
