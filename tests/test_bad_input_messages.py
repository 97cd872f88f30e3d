"""What the loader says about each bad input, word for word.

tests/test_bad_inputs.py pins each case's code and position; this file pins the whole report a user reads for it:
every diagnostic's position, severity, code, message and hint, in order, as ``project-skill build`` prints them. A
reworded message is a visible change, so it shows up here as a snapshot diff to review. It also holds the loader's
wording still while its modules are moved (issue 20) and lets mutation testing see a dropped or garbled message.

The YAML cases are parsed one file at a time, as ``build`` parses each file, and a case that loads is compiled too,
so the warnings of projection speak (``unstructured-result``). The folder cases are loaded whole, so the rules that
span files (``slug-collision``) and discovery (``outside-root``) speak too. ``output-conflict`` is about a tree on
disk, and tests/test_bad_inputs.py runs it.
"""

from __future__ import annotations

import pytest
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from conftest import ROOT
from projector.errors import BuildError, LoadError, format_text
from projector.load import load_all, parse
from projector.output import compile_workflows

CORPUS = ROOT / "tests" / "bad_inputs"
FILES = sorted(p for p in CORPUS.glob("*.yaml"))
FOLDERS = sorted(p for p in CORPUS.iterdir() if p.is_dir() and not p.name.startswith(".") and p.name != "output-conflict")


class Text(SingleFileSnapshotExtension):
    _write_mode = WriteMode.TEXT
    file_extension = "txt"


@pytest.fixture
def snap(snapshot):
    return snapshot.use_extension(Text)


def report(diags) -> str:
    return "".join(format_text(d) + "\n" for d in diags)


@pytest.mark.parametrize("case", FILES, ids=lambda p: p.name)
def test_what_the_loader_says_about_each_bad_file(case, snap):
    wf, diags = parse(case.read_bytes(), case.name)
    if wf is not None and not any(d.severity == "error" for d in diags):
        try:
            diags = diags + compile_workflows([wf]).diagnostics
        except BuildError as exc:
            diags = diags + exc.diagnostics
    assert diags or case.read_bytes().startswith(b"# expect: ok"), f"{case.name} gave no diagnostic at all"
    assert report(diags) == snap(name=case.stem)


@pytest.mark.parametrize("case", FOLDERS, ids=lambda p: p.name)
def test_what_the_loader_says_about_each_bad_folder(case, snap, monkeypatch):
    monkeypatch.chdir(CORPUS)
    with pytest.raises(LoadError) as raised:
        load_all([case.name])
    assert report(raised.value.diagnostics) == snap(name=case.name)


# Small hostile inputs, one for each thing the loader says that no corpus file makes it say: merge keys, tags on
# keys, keys that are not strings, anchors, nesting, a hint for each kind of YAML syntax error, line endings and a
# byte-order mark, NUL bytes and control characters at a position past the first line. Each is a whole workflow
# where the mistake allows, so that the report holds what the mistake makes the loader say and nothing else.
_TOOLS = "tools: [{name: t, annotations: {readOnlyHint: true}}]\n"
_STEPS = "steps: [{name: a, tool: t}]\n"
_REST = _TOOLS + _STEPS
_DEEP = "[" * 120 + "]" * 120

SNIPPETS: dict[str, str | bytes] = {
    # What YAML allows and a workflow refuses, at the position of what is refused.
    "merge-key": "name: m\n<<: {description: d}\ndescription: d\n" + _REST,
    "anchor": "name: &n x\ndescription: d\n" + _REST,
    "alias-without-anchor": "name: x\ndescription: *d\n" + _REST,
    "tagged-key": "name: x\ndescription: d\n!thing title: T\n" + _REST,
    "tagged-value": "name: x\ndescription: d\ntitle: !thing T\n" + _REST,
    "tagged-list": "name: x\ndescription: d\n" + _TOOLS + "steps: [{name: a, tool: t, args: {x: {const: !!str [1]}}}]\n",
    "timestamp-tag-on-a-date": "name: x\ndescription: !!timestamp 2001-12-14\n" + _REST,
    "integer-key": "name: x\ndescription: d\n1: one\n" + _REST,
    "list-key": "name: x\ndescription: d\n? [a, b]\n: ab\n" + _REST,
    "mapping-key": "name: x\ndescription: d\n? {a: b}\n: ab\n" + _REST,
    "yaml-1.1-value-type": "name: x\ndescription: d\ntitle: =\n" + _REST,
    "yaml-1.1-value-type-as-a-key": "name: x\ndescription: d\n=: x\n" + _REST,
    "empty-string-key-in-a-constant": "name: x\ndescription: d\n" + _TOOLS
                                      + "steps: [{name: a, tool: t, args: {x: {const: {'': 1}}}}]\n",
    "empty": "",
    "only-a-comment": "# name: x\n",
    # Nesting: one too-deep per file, the value's (a refused key is not looked into), and past libyaml's limit.
    "two-deep-values": "name: x\ndescription: d\n" + _TOOLS
                       + f"steps: [{{name: a, tool: t, args: {{x: {{const: {_DEEP}}}, y: {{const: {_DEEP}}}}}}}]\n",
    "deep-key-and-deep-value": f"name: x\ndescription: d\n? {_DEEP}\n: 1\n" + _TOOLS
                               + f"steps: [{{name: a, tool: t, args: {{x: {{const: {_DEEP}}}}}}}]\n",
    "deep-past-the-parser-limit-after-a-closed-list": "name: x\ndescription: d\nx: [[[]], " + "[" * 1001 + "\n",
    # Bytes and characters, past the first line.
    "nul-first-byte": b"\x00name: x\n",
    "two-nul-bytes": b"name: x\ndescription: d\x00\nsteps: \x00\n",
    "control-character-on-line-4": "name: x\ndescription: d\n" + _TOOLS + "steps: [{name: a\x07, tool: t}]\n",
    "byte-order-mark": "\ufeffname: x\ndescription: d\n" + _REST,
    "lone-cr-line-ends": "name: x\rdescription: d\r" + _TOOLS.replace("\n", "\r") + "steps:\r  - name: a\r   tool: t\r",
    # A hint for each kind of YAML syntax error.
    # YAML breaks lines at U+2028 too, and so do the positions and the hints (the quote is named).
    "line-separator-before-an-unclosed-quote": _REST + "name: x\ndescription: d\u2028title: 'T\n",
    "quote-unclosed-before-a-document-end": "name: x\ndescription: 'd\n---\n" + _REST,
    "directive-without-document-start": "%YAML 1.1\nname: x\ndescription: d\n" + _REST,
    "colon-in-a-flow-mapping": "name: x\ndescription: d\n" + _TOOLS + "steps: [{name: a: b, tool: t}]\n",
    "flow-mapping-closed-with-a-bracket": "name: x\ndescription: d\n" + _TOOLS + "steps: [{name: a, tool: t]]\n",
    "flow-list-never-closed": "name: x\ndescription: d\n" + _TOOLS + "steps: [{name: a, tool: t}\n",
    "colon-in-a-list-item": "name: x\ndescription: d\n" + _TOOLS + "steps:\n  - name: fetch: all\n    tool: t\n",
    "colon-in-an-item-after-spaces": "name: x\ndescription: d\n" + _TOOLS + "steps:\n  - name: a\n    tool: t\n"
                                     "    args:\n      headers:\n        const:\n          -   X-Api-Key: Bearer: k\n",
    "colon-after-a-quoted-key-with-a-colon": "name: x\n\"description: long\": Note: it is\n" + _REST,
    "key-indented-more-than-the-line-above": "name: x\ndescription: d\n  tools: [t]\n" + _STEPS,
    "colon-after-the-key-repeated": "name: x\ndescription: description: what it does\n" + _REST,
    "colon-before-two-comments": "name: x\ndescription: Note: it is # one # two\n" + _REST,
    "colon-in-a-value-of-100-characters": "name: x\ndescription: Note: " + "x" * 94 + "\n" + _REST,
    "colon-in-a-value-of-101-characters": "name: x\ndescription: Note: " + "x" * 95 + "\n" + _REST,
    "colon-in-a-non-ascii-value": "name: x\ndescription: Café: open late\n" + _REST,
    "backtick-at-a-line-start": "name: x\n`description`: d\n" + _REST,
    "text-after-a-double-quote": "name: x\ndescription: \"d\" and more\n" + _REST,
    "text-after-a-single-quote": "name: x\ndescription: 'd'  and more\n" + _REST,
    "key-in-the-column-of-a-list": "name: x\ndescription: d\n" + _TOOLS + "steps:\n  - {name: a, tool: t}\n"
                                   "  bind: b\n",
    "key-in-the-column-of-a-list-after-a-comment": "name: x\ndescription: d\n" + _TOOLS
                                                   + "steps:\n  - {name: a, tool: t}\n      # the step\n  bind: b\n",
}


@pytest.mark.slow
@pytest.mark.parametrize("name", SNIPPETS)
def test_what_the_loader_says_about_each_hostile_snippet(name, snap):
    text = SNIPPETS[name]
    data = text if isinstance(text, bytes) else text.encode("utf-8")
    wf, diags = parse(data, f"{name}.yaml")
    if wf is not None and not any(d.severity == "error" for d in diags):
        diags = diags + compile_workflows([wf]).diagnostics
    assert report(diags) == snap(name=name)
