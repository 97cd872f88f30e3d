"""Bundles and the index, pinned: frontmatter splitting, the entry, the SEP-2640 limits at their exact edges, and the
JSON bytes (they kill the mutants of ``bundle.py``; scripts/mutation)."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from projector import bundle
from projector.builder import WorkflowBuilder
from projector.errors import BuildError, LoadError, Span
from projector.render import dump_frontmatter, project
from projector.sep2640 import VerificationError, parse_frontmatter, split_frontmatter


def _message(fn, *args) -> str:
    with pytest.raises(ValueError) as info:
        fn(*args)
    return str(info.value)


@pytest.mark.slow
def test_split_frontmatter():
    """The build reads SKILL.md back through the wire's one reader (projector.sep2640): the block as the
    conformance suite finds it."""
    assert split_frontmatter("---\na: 1\n---\nbody\n") == ("a: 1", "body\n")
    assert split_frontmatter("---\na: 1\n---\n") == ("a: 1", "")
    assert split_frontmatter("---\na: 1\n---\nx\n---\ny\n") == ("a: 1", "x\n---\ny\n")  # the first
    for text in ("a: 1\n---\n", "---\na: 1\n", "---\n---\nbody\n"):  # no block, not closed, an empty block
        assert _message(split_frontmatter, text) == "SKILL.md has no '---' frontmatter block"


def test_parse_frontmatter():
    assert parse_frontmatter(b"---\nname: x\nn: 1.0\n---\n", "w", "1.1") == {"name": "x", "n": 1.0}
    with pytest.raises(VerificationError) as info:
        parse_frontmatter(b"---\n- a\n---\n", "w", "1.1")
    assert (info.value.code, info.value.message) == ("bad-frontmatter", "SKILL.md frontmatter is not a mapping")


def test_digest_and_entry():
    files = {"references/z.md": b"z", "SKILL.md": b"---\nname: s\ndescription: d\n---\n", "a.md": b"aa"}
    assert bundle.digest(b"x") == "sha256:" + hashlib.sha256(b"x").hexdigest()
    entry = bundle.make_entry("p/s", files)
    assert entry == {
        "uri": "skill://p/s/SKILL.md",
        "frontmatter": {"name": "s", "description": "d"},
        "resources": [{"uri": f"skill://p/s/{rel}", "digest": bundle.digest(files[rel]), "size": len(files[rel])}
                      for rel in ("SKILL.md", "a.md", "references/z.md")],
    }


def test_limits_at_their_edges():
    span = Span("f.yaml", 3, 4)
    ok = {f"f{i}": b"" for i in range(bundle.MAX_FILES)}
    assert bundle.limit_problems("s", ok, span) == []
    over = {**ok, "one-more": b""}
    (p,) = bundle.limit_problems("s", over, span)
    assert (p.span, p.severity, p.code, p.message) == (span, "error", "too-many-files",
                                                       "skill 's' has 513 files; SEP-2640 allows 512, SKILL.md included")
    assert bundle.limit_problems("s", {"a": b"x" * bundle.MAX_BYTES}, span) == []
    (p,) = bundle.limit_problems("s", {"a": b"x" * bundle.MAX_BYTES, "b": b"x"}, span)
    assert (p.code, p.message) == ("bundle-too-large", f"skill 's' is {bundle.MAX_BYTES + 1} bytes; SEP-2640 allows "
                                   f"{bundle.MAX_BYTES} (16 MiB)")
    assert [d.code for d in bundle.limit_problems("s", {**over, "a": b"x" * bundle.MAX_BYTES + b"x"}, span)] == \
        ["too-many-files", "bundle-too-large"]
    assert (bundle.MAX_FILES, bundle.MAX_BYTES) == (512, 16 * 1024 * 1024)


def _projection(name="s", description="d", prefix=()):
    wf = (WorkflowBuilder(name, description).tool("t", annotations={"destructiveHint": True})
          .step("x", tool="t", guidance="Only if asked.").build())
    return project(wf, prefix)


def test_bundle_and_a_refused_bundle():
    proj = _projection(prefix=("p",))
    b = bundle.bundle(proj)
    assert (b.name, b.path, b.files) == ("s", "p/s", proj.files)
    assert [d.code for d in b.diagnostics] == ["gate-on-side-effect"] and b.diagnostics == tuple(proj.diagnostics)
    assert b.entry == bundle.make_entry("p/s", proj.files)
    placed = dataclasses.replace(proj, workflow=dataclasses.replace(proj.workflow, span=Span("w.yaml", 3, 1)))
    assert bundle.bundle(placed).span == Span("w.yaml", 3, 1)  # where an output-conflict of the bundle is reported
    big = type(proj)(proj.workflow, proj.name, proj.path, {**proj.files, "big": b"x" * bundle.MAX_BYTES})
    with pytest.raises(BuildError) as info:
        bundle.bundle(big)
    (d,) = info.value.diagnostics
    assert d.code == "bundle-too-large" and d.message.startswith("skill 'p/s' is ")


def test_dumps_and_index_bytes():
    assert bundle.stable_json({"b": ["é", 1], "a": {}}) == '{\n  "b": [\n    "é",\n    1\n  ],\n  "a": {}\n}\n'.encode()
    b1, b2 = bundle.bundle(_projection("zeta")), bundle.bundle(_projection("alpha"))
    data = bundle.index([b1, b2])
    assert [e["uri"] for e in json.loads(data)["skills"]] == ["skill://alpha/SKILL.md", "skill://zeta/SKILL.md"]
    assert data == bundle.stable_json({"skills": [b2.entry, b1.entry]}) and data.endswith(b"}\n")


def test_the_index_of_no_skills():
    assert bundle.index([]) == b'{\n  "skills": []\n}\n'


# The index entry a build writes (projector.bundle.make_entry), pinned where the mutation run found it loose
# (scripts/mutation bundle, issue 20).


def test_the_entry_reads_the_frontmatter_as_yaml_1_1():
    """The build reads what it wrote with PyYAML (YAML 1.1) and never imports ruamel.yaml: a hand-made SKILL.md whose
    frontmatter 1.1 and 1.2 read differently shows which reading the entry holds (``yes`` is true only in 1.1)."""
    files = {"SKILL.md": b"---\nname: x\ndescription: d\nflag: yes\n---\nbody\n"}
    entry = bundle.make_entry("x", files)
    assert entry["frontmatter"] == {"name": "x", "description": "d", "flag": True}


def test_a_bad_frontmatter_is_refused_naming_the_skill_uri():
    with pytest.raises(VerificationError) as caught:
        bundle.make_entry("a/x", {"SKILL.md": b"no frontmatter here\n"})
    assert caught.value.where == "skill://a/x/SKILL.md"
    assert caught.value.code == "bad-frontmatter"


# The entry takes the mapping the renderer dumped instead of parsing SKILL.md again only where the reading would give
# that mapping back (projector.bundle.reads_back): checked against the reading itself, on hostile texts.
_HOSTILE = [
    "yes",
    "No",
    "on",
    "~",
    "null",
    "0o17",
    "0x1F",
    "0b101",
    "1_000",
    "1e3",
    ".inf",
    "=",
    "<<",
    "---",
    "...",
    "a: b",
    "- x",
    "#x",
    "x #y",
    "'",
    '"',
    "%x",
    "@x",
    "!x",
    "&x",
    "*x",
    "? x",
    "2001-12-14",
    " lead",
    "trail ",
    "a\tb",
    "\u2028",
    "\x85",
    "\r",
    "line\nbreak",
    "\ufeff",
    "\xa0",
    "\U0001f600",
    "k" * 200,
    "",
]
_TEXT = st.one_of(st.sampled_from(_HOSTILE), st.text(max_size=12))
_MAPPING = st.dictionaries(_TEXT, st.one_of(_TEXT, st.dictionaries(_TEXT, _TEXT, max_size=3)), max_size=4)


def _reading(files: dict[str, bytes], frontmatter=None):
    try:
        return bundle.make_entry("s", files, frontmatter)["frontmatter"]
    except VerificationError as exc:
        return ("refused", exc.code)


@settings(max_examples=300, deadline=None)
@given(_MAPPING)
def test_the_dumped_frontmatter_is_taken_only_where_it_reads_back_as_itself(mapping):
    dumped = dump_frontmatter(mapping)
    files = {"SKILL.md": b"---\n" + dumped.encode("utf-8") + b"---\nbody\n"}
    parsed = _reading(files)
    assert _reading(files, (mapping, dumped)) == parsed
    # the reading itself, key order included (skills.json lists the frontmatter in its order)
    assert json.dumps(_reading(files, (mapping, dumped))) == json.dumps(parsed)
    # a SKILL.md whose block is not the dumped YAML is read, never taken from the mapping
    other = {"SKILL.md": b"---\nname: other\n---\nbody\n"}
    assert _reading(other, (mapping, dumped)) == {"name": "other"}


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(_HOSTILE), st.dictionaries(st.sampled_from(_HOSTILE), _TEXT, max_size=3))
def test_a_built_entry_says_what_its_skill_md_says(description, metadata):
    try:
        wf = WorkflowBuilder("w", description or "d", metadata=metadata).tool("t").step("x", tool="t").build()
    except LoadError:  # a description or a metadata key the workflow format refuses
        return
    b = bundle.bundle(project(wf))
    assert b.entry["frontmatter"] == parse_frontmatter(b.files["SKILL.md"], "w", "1.1")
    assert json.dumps(b.entry) == json.dumps(bundle.make_entry("w", b.files))


def test_the_examples_entries_say_what_their_skill_md_says():
    from pathlib import Path

    from projector.load import load_file

    examples = sorted((Path(__file__).parents[1] / "workflows").glob("*.yaml"))
    assert examples
    for path in examples:
        b = bundle.bundle(project(load_file(path)))
        said = parse_frontmatter(b.files["SKILL.md"], "w", "1.1")
        assert json.dumps(b.entry["frontmatter"]) == json.dumps(said)
