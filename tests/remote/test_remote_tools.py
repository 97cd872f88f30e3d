"""``--tools-from``: tools come from the live server's tools/list, the gate warnings follow what it declares, missing
tools are errors at the step, disagreements are warnings naming both sides. With a hostile server (issue 10, items 10
and 11): tool descriptions come from a remote server, so a control character in them is an error, and a line that
looks like a heading stays text."""

from __future__ import annotations

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
WORKFLOWS = ROOT / "workflows"


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
        "issue_refund": (issue_refund, "Refund an order to the original payment method.",
                         ro if read_only_refund else ToolAnnotations(read_only_hint=False, destructive_hint=True)),
        "greet": (greet, "Return a friendly greeting for a name.",
                  ToolAnnotations(read_only_hint=True, idempotent_hint=True)),
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
    assert steps["refunds.yaml"].span == wfs[0].steps[2].span and "issue_refund" in steps["refunds.yaml"].message
    assert steps["hello-world.yaml"].span == wfs[1].steps[0].span and "greet" in steps["hello-world.yaml"].message


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

    a = {"type": "object", "title": "x", "properties": {"description": {"type": "string", "description": "d"}},
         "additionalProperties": True}
    assert _schema_core(a) == {"type": "object", "properties": {"description": {"type": "string"}}}
    b = {"type": "object", "properties": {"description": {"type": "integer"}}}
    assert _schema_core(a) != _schema_core(b)


@pytest.mark.slow
def test_cli_check_tools_from_a_stdio_server():
    """End to end through a real stdio server: the shipped workflows agree with it (no tool-mismatch)."""
    cmd = f"{sys.executable} -m projector.server --stdio"
    proc = subprocess.run([sys.executable, "-m", "projector.cli", "check", "--format", "json", "--tools-from", cmd],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr
    assert "tool-mismatch" not in proc.stdout and "unknown-tool" not in proc.stdout
    assert '"gate-on-side-effect"' in proc.stdout  # the demo server declares issue_refund destructive, as the file


@pytest.mark.slow
def test_cli_tools_from_a_dead_server_is_a_clear_error():
    proc = subprocess.run([sys.executable, "-m", "projector.cli", "check", "--tools-from", "/nonexistent/binary"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "server-error" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.slow
def test_mcp_is_imported_only_with_tools_from():
    code = ("import sys, projector.cli, projector.remote;"
            "rc = projector.cli.main(['check']);"
            "print(rc, 'mcp' in sys.modules)")
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
    monkeypatch.setattr(tools, "apply_tools_from",
                        lambda workflows, server, label=None: real(workflows, lying_server(describe=describe), "evil"))
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
