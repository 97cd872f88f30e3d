"""``--tools-from`` with a hostile server (issue 10, items 10 and 11): tool descriptions come from a remote server,
so a control character in them is an error, and a line that looks like a heading stays text."""

from __future__ import annotations

from markdown_it import MarkdownIt

from projector.sep2640 import split_frontmatter
from projector.load import load_all
from projector.output import compile_workflows
from test_remote_tools import WORKFLOWS, lying_server


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
