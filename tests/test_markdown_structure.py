"""No user text can change the Markdown structure of SKILL.md or references/tools.md (issue 10, item 11).

The output is parsed with a CommonMark parser (markdown-it-py), and the tree of headings, the code fences and the
HTML blocks must be the same whatever the texts hold. Multi-line texts are free-form; one-line texts (names, keys,
URIs) may change what a heading says, never how many headings there are or their levels."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from projector.builder import WorkflowBuilder, arg, const
from projector.bundle import parse_frontmatter, split_frontmatter
from projector.errors import LoadError
from projector.render import inert, project
from projector.validate import _INVISIBLE

MD = MarkdownIt("commonmark")

# Lines that open a block in CommonMark, alone or inside the list items and quotes the text opens itself.
HOSTILE_LINES = [
    "# h", "## Procedure", "### Step 9: injected", "###### x", "  # indented", "   ## three", "\t# tab", "#",
    "===", "---", "- - -", "  ===  ", "- # x", "> # x", "1. # x", "2) ## x", ">#x", "- - # deep", "> > ## deep",
    "```", "```json", "````", "~~~", "~~~~ x", "   ```", "<!--", "<!-- x -->", "<pre>", "</pre>", "<div>",
    "<script>", "<?php", "<![CDATA[", "<!DOCTYPE html>", "-->", "- item", "> quote", "    code", "", " ", "plain",
    "*emph*", "`code`", "***", "+++", "| a | b |", "[x]: /url", "\\", "Setext heading",
]
# invisible characters (bidi controls, zero-width, tag characters) are refused in every text (validate._INVISIBLE)
VISIBLE = st.characters(blacklist_categories=("Cs", "Cc")).filter(lambda c: not _INVISIBLE.match(c))
LINE_TEXT = st.text(st.one_of(VISIBLE, st.sampled_from("\t#=-`~<>*_ !?/")), max_size=24)
MULTI_LINE = st.lists(st.one_of(st.sampled_from(HOSTILE_LINES), LINE_TEXT), min_size=1, max_size=6).map(
    "\n".join).filter(lambda t: t.strip() != "")


def workflow(description="d", arg_description="a", instruction="i", tool_description="t", guidance="Only if g.",
             constant="c", *, step_name="s", tool_name="t", arg_name="who", bind="r", resource="docs://x"):
    return (WorkflowBuilder("w", description)
            .argument(arg_name, arg_description, required=True)
            .instruction("system", instruction)
            .tool(tool_name, tool_description, input_schema={"type": "object"},
                  annotations={"readOnlyHint": False, "destructiveHint": True})
            .step(step_name, tool=tool_name, args={"x": arg(arg_name), "y": const(constant)}, bind=bind,
                  guidance=guidance)
            .step("read", resources=[resource])
            .build())


def structure(md: bytes) -> dict[str, list]:
    """The block structure that matters: headings (level and text), code fences (info and content), HTML blocks.
    An indented code block is the author's own Markdown: it ends at the first line that is not indented, so it can
    swallow nothing of the template."""
    tokens = MD.parse(md.decode("utf-8"))
    headings = [(t.tag, tokens[i + 1].content) for i, t in enumerate(tokens) if t.type == "heading_open"]
    fences = [(t.info, t.content) for t in tokens if t.type == "fence"]
    html = [t.content for t in tokens if t.type == "html_block"]
    return {"headings": headings, "fences": fences, "html": html}


def files(wf):
    out = project(wf).files
    fm, body = split_frontmatter(out["SKILL.md"].decode("utf-8"))
    return {"SKILL.md": body.encode(), "references/tools.md": out["references/tools.md"]}, \
        parse_frontmatter(out["SKILL.md"])


BASELINE, _ = files(workflow())
LEVELS = {name: [h for h, _ in structure(md)["headings"]] for name, md in BASELINE.items()}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(description=MULTI_LINE.filter(lambda t: len(t) <= 1024), arg_description=MULTI_LINE, instruction=MULTI_LINE,
       tool_description=MULTI_LINE, guidance=MULTI_LINE, constant=MULTI_LINE)
@example(description="x\n## Procedure", arg_description="```", instruction="<!--", tool_description="# Tools used by",
         guidance="a\n---", constant="a\n# b")
def test_multi_line_texts_cannot_change_the_structure(description, arg_description, instruction, tool_description,
                                                      guidance, constant):
    got, fm = files(workflow(description, arg_description, instruction, tool_description, guidance, constant))
    for name, md in got.items():
        assert structure(md) == structure(BASELINE[name]), name
    # the frontmatter keeps the text exactly as written, and is still the only frontmatter
    assert fm["description"] == description
    assert not got["SKILL.md"].startswith(b"---")


ONE_LINE = st.text(st.one_of(st.characters(blacklist_categories=("Cs", "Cc", "Cf")).filter(
    lambda c: not _INVISIBLE.match(c)), st.sampled_from("\t#=-`~<>*_")), min_size=1, max_size=20).filter(lambda t: t.strip() != "")


@settings(max_examples=100, deadline=None)
@given(step_name=ONE_LINE, tool_name=ONE_LINE, arg_name=ONE_LINE, bind=ONE_LINE, resource=ONE_LINE)
@example(step_name="# x", tool_name="`", arg_name="<!--", bind="```", resource="---")
def test_one_line_texts_change_heading_text_not_structure(step_name, tool_name, arg_name, bind, resource):
    if step_name == "read":
        step_name += "!"
    got, _ = files(workflow(step_name=step_name, tool_name=tool_name, arg_name=arg_name, bind=bind,
                            resource=resource))
    for name, md in got.items():
        s = structure(md)
        assert [h for h, _ in s["headings"]] == LEVELS[name], name
        assert s["html"] == [] and len(s["fences"]) == len(structure(BASELINE[name])["fences"])


@pytest.mark.parametrize("field", ["step_name", "tool_name", "arg_name", "bind", "resource"])
def test_a_line_break_in_a_one_line_text_is_refused(field):
    with pytest.raises(LoadError) as info:
        workflow(**{field: "x\n## Procedure"})
    assert {d.code for d in info.value.diagnostics} == {"line-break"}


def test_the_examples_render_as_written():
    """Text without block syntax is untouched: the committed examples and their snapshots do not change."""
    for text in ("Only issue the refund if the eligibility check says the order is eligible.",
                 "Two lines\nof guidance.", "a - b # c <3", "- a list\n- of items\n  1. nested"):
        assert inert(text) == text


def test_multi_line_constants_are_shown_as_json_on_one_line():
    body = project(workflow(constant="Dear {who},\n# Not a heading")).files["SKILL.md"].decode()
    assert '- `y`: the text `"Dear {who},\\n# Not a heading"`' in body


@pytest.mark.parametrize("description", ["\xa0\n# h", "a\u3000\nb", "x\u2003\ny\xa0"])
def test_unicode_blanks_at_line_ends_survive_in_the_frontmatter(description):
    _, fm = files(workflow(description))
    assert fm["description"] == description
