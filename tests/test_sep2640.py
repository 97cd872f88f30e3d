"""The SEP-2640 wire has one owner (projector/sep2640/): its id, its digest and its frontmatter reader are defined
once in the package, and the server and the client refuse the same frontmatter.

The structural checks grep the source tree, so a second copy (a module that spells ``"sha256:" + hexdigest`` again,
or declares the extension id itself) fails here. The table runs each frontmatter through ``serve``'s tree loading and
through the client's verification (entry, manifest, bytes, frontmatter), with the same bytes and the same entry.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from projector import sep2640
from projector.errors import ProjectorError
from projector.remote.verify import check_frontmatter
from projector.sep2640 import (
    VerificationError,
    WireError,
    check_manifest,
    digest,
    frontmatter_text,
    parse_entry,
    parse_frontmatter,
    verify_bytes,
)
from projector.sep2640.frontmatter import LOADERS

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "projector"
GENERATED = ROOT / "generated_skills"
OWNER = "projector/sep2640/wire.py"


def sources() -> dict[str, str]:
    return {p.relative_to(ROOT).as_posix(): p.read_text("utf-8") for p in sorted(PACKAGE.rglob("*.py"))}


def holders(pattern: str) -> list[str]:
    rx = re.compile(pattern)
    return sorted(path for path, text in sources().items() if rx.search(text))


def test_the_extension_id_is_written_once():
    assert holders(r"""["']io\.modelcontextprotocol/skills["']""") == [OWNER]
    assert sep2640.EXTENSION_ID == "io.modelcontextprotocol/skills"


def test_the_digest_is_spelled_once():
    assert holders(r"\bdef digest\(") == [OWNER]
    # "sha256:" + a hex digest, in any spelling: concatenated, or formatted in an f-string
    assert holders(r"""["']sha256:["']\s*\+|f["']sha256:\{""") == [OWNER]
    assert digest(b"x") == "sha256:2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"


def test_one_frontmatter_reader_and_one_scheme():
    assert holders(r"\bdef parse_frontmatter\(") == ["projector/sep2640/frontmatter.py"]
    assert holders(r"\bdef split_frontmatter\(") == ["projector/sep2640/frontmatter.py"]
    assert holders(r"""(?m)^\s*\w+\s*=\s*["']skill://["']""") == [OWNER]
    assert holders(r"""(?m)^\s*\w+\s*=\s*["']SKILL\.md["']""") == [OWNER]
    assert holders(r"""(?m)^\s*\w+\s*=\s*["']skills\.json["']""") == [OWNER]


def test_the_build_reads_its_output_the_same_under_yaml_1_1_and_1_2():
    """The build reads back each SKILL.md it writes as YAML 1.1 (it imports no ruamel.yaml); the server and the
    client read it as YAML 1.2. The build quotes whatever the two read differently, so both give the entry."""
    index = json.loads((GENERATED / "skills.json").read_text("utf-8"))
    assert index["skills"]
    for entry in index["skills"]:
        rel = sep2640.skill_path_of(entry["uri"])
        data = (GENERATED / rel / "SKILL.md").read_bytes()
        read_1_1 = parse_frontmatter(data, entry["uri"], "1.1")
        assert read_1_1 == parse_frontmatter(data, entry["uri"]) == entry["frontmatter"]
        assert list(read_1_1) == list(entry["frontmatter"])


def test_skill_uri_and_its_inverse():
    assert sep2640.skill_uri("a/b/name") == "skill://a/b/name/SKILL.md"
    assert sep2640.skill_uri("a/name", "references/x.md") == "skill://a/name/references/x.md"
    assert sep2640.skill_path_of(sep2640.skill_uri("a/b/name")) == "a/b/name"
    assert sep2640.last_segment("skill://a/b/name/SKILL.md") == "name"


@pytest.mark.parametrize("segment, bad", [("a", False), ("a.md", False), ("...", False), (".hidden", False),
                                          ("", True), (".", True), ("..", True), ("a/b", True), ("a\\b", True),
                                          ("a\0b", True)])
def test_the_segment_rule(segment, bad):
    assert sep2640.bad_segment(segment) is bad


# ------------------------------------------------------------------------------------------------------ server == client

DESCRIPTION = "Say hello."
NAME = "hello"
URI = f"skill://{NAME}/SKILL.md"
FM = {"name": NAME, "description": DESCRIPTION}

# id: (SKILL.md bytes, the entry's frontmatter). Each is honest about digests and sizes: only the frontmatter lies.
CASES: dict[str, tuple[bytes, dict]] = {
    "honest": (b"---\nname: hello\ndescription: Say hello.\n---\n\n# Hello\n", FM),
    "CRLF and a BOM": ("\ufeff---\r\nname: hello\r\ndescription: Say hello.\r\n---\r\n".encode(), FM),
    "yes, listed as YAML 1.1 reads it": (b"---\nname: hello\ndescription: Say hello.\nok: yes\n---\n",
                                         {**FM, "ok": True}),
    "yes, listed as YAML 1.2 reads it": (b"---\nname: hello\ndescription: Say hello.\nok: yes\n---\n",
                                         {**FM, "ok": "yes"}),
    "0o17 listed as 15": (b"---\nname: hello\ndescription: Say hello.\nmode: 0o17\n---\n", {**FM, "mode": 15}),
    "010 listed as 8": (b"---\nname: hello\ndescription: Say hello.\nmode: 010\n---\n", {**FM, "mode": 8}),
    "1:30 listed as 90": (b"---\nname: hello\ndescription: Say hello.\nt: 1:30\n---\n", {**FM, "t": 90}),
    "description: no, listed as false": (b"---\nname: hello\ndescription: no\n---\n", {**FM, "description": False}),
    "a null key the entry lacks": (b"---\nname: hello\ndescription: Say hello.\nlicense: ~\n---\n", FM),
    "a duplicate key": (b"---\nname: hello\nname: hello\ndescription: Say hello.\n---\n", FM),
    "an anchor": (b"---\nname: hello\ndescription: &d Say hello.\n---\n", FM),
    "an alias": (b"---\nname: &n hello\ndescription: Say hello.\nalso: *n\n---\n", {**FM, "also": NAME}),
    "a tag": (b"---\nname: hello\ndescription: !!str Say hello.\n---\n", FM),
    "a merge key": (b"---\nname: hello\ndescription: Say hello.\nm:\n  <<: {a: 1}\n---\n", {**FM, "m": {"a": 1}}),
    "U+2028": ("---\nname: hello\ndescription: Say\u2028hello.\n---\n".encode(), {**FM, "description": "Say hello."}),
    "not UTF-8": (b"---\nname: hello\ndescription: \xff\n---\n", FM),
    "no frontmatter": (b"# Hello\n", FM),
    "not YAML": (b"---\nname: [hello\ndescription: Say hello.\n---\n", FM),
    "not a mapping": (b"---\n- hello\n---\n", FM),
    "too deep": (b"---\nname: hello\ndescription: Say hello.\nx: " + b"[" * 70 + b"]" * 70 + b"\n---\n", FM),
    "another name, file and entry alike": (b"---\nname: evil\ndescription: Say hello.\n---\n", {**FM, "name": "evil"}),
}
# The server words a refusal as its own where it has one; every other code is the client's.
SERVER_CODE = {"bad-frontmatter": "bad-skill-md", "name-mismatch": "bad-skill-md"}


def client_verdict(data: bytes, frontmatter: dict) -> str | None:
    """What the client makes of the skill: None (loaded), or the code it refuses with."""
    entry = parse_entry({"uri": URI, "frontmatter": frontmatter,
                         "resources": [{"uri": URI, "digest": digest(data), "size": len(data)}]})
    try:
        check_manifest(entry)
        verify_bytes(entry.resources[0], data)
        check_frontmatter(entry, data)
    except VerificationError as exc:
        return exc.code
    return None


def server_verdict(root: Path, data: bytes, frontmatter: dict) -> str | None:
    """What ``serve`` makes of a tree holding only this skill: None (served), or the code it refuses with."""
    from projector.server.tree import SkillTree

    (root / NAME).mkdir(parents=True)
    (root / NAME / "SKILL.md").write_bytes(data)
    entry = {"uri": URI, "frontmatter": frontmatter,
             "resources": [{"uri": URI, "digest": digest(data), "size": len(data)}]}
    (root / "skills.json").write_text(json.dumps({"skills": [entry]}), "utf-8")
    try:
        SkillTree.load(root)
    except ProjectorError as exc:
        (d,) = exc.diagnostics
        return d.code
    return None


def test_the_table_has_both_verdicts():
    verdicts = {client_verdict(*case) for case in CASES.values()}
    assert None in verdicts and {"frontmatter-mismatch", "frontmatter-ambiguous", "bad-frontmatter",
                                 "name-mismatch"} <= verdicts


@pytest.mark.parametrize("case", list(CASES))
def test_server_and_client_accept_and_refuse_the_same_frontmatter(tmp_path, case):
    data, frontmatter = CASES[case]
    client = client_verdict(data, frontmatter)
    server = server_verdict(tmp_path / "tree", data, frontmatter)
    assert server == SERVER_CODE.get(client, client), (client, server)


def test_a_mapping_whose_keys_mix_types_is_described_with_its_keys_as_json_writes_them():
    import datetime

    from projector.sep2640.values import describe_value

    assert describe_value({1: "a", "b": "c", False: None}) == 'mapping {"1": "a", "b": "c", "false": null}'
    assert describe_value([{datetime.date(2020, 1, 2): 1, None: 2}]) == 'sequence [{"2020-01-02": 1, "null": 2}]'


# The SEP-2640 wire's mutation survivors (issue 20), pinned: a refusal without a place is the server's, a hint added
# to a refusal without one is that hint alone, and the refusals of the YAML 1.1 reading run on that reading's own
# parser (libyaml's, when PyYAML has it), so what they saw is what is read.
#
# libyaml and PyYAML's pure parser disagree on some text: libyaml reads a tab after a plain scalar (``note: x<TAB>``),
# the pure parser does not; the pure parser reads a tab inside a literal block's indentation, libyaml does not. A
# duplicate key after such a spot is seen only by the parser that gets past it.


DEMO_URI = "skill://demo/SKILL.md"
AMBIGUOUS_HINT = ("YAML parsers disagree on such frontmatter (which duplicate wins, what a tag means), so a host "
                  "could show other text than the one verified; a skill's frontmatter is plain YAML")
TWICE = ("frontmatter-ambiguous", "SKILL.md frontmatter holds the key 'b' twice", AMBIGUOUS_HINT)


# ------------------------------------------------------------------------------------------------ the refusal


@pytest.mark.parametrize("cls", [WireError, VerificationError])
def test_a_refusal_without_a_place_is_the_servers(cls):
    e = cls("bad-entry", "", "a skills entry is not an object")
    assert (e.code, e.where, e.message, e.hint) == ("bad-entry", "", "a skills entry is not an object", None)
    assert [(str(d.span), d.severity, d.code, d.message, d.hint) for d in e.diagnostics] == \
        [("<server>", "error", "bad-entry", "a skills entry is not an object", None)]
    assert str(e) == "<server>: error[bad-entry]: a skills entry is not an object"


def test_a_hint_added_to_a_refusal_without_one_is_that_hint_alone():
    e = VerificationError("digest-mismatch", DEMO_URI, "served bytes hash to sha256:x; the manifest says sha256:y")
    once = e.with_hint("still refused after refreshing the entry once with skills/get")
    assert type(once) is VerificationError
    assert (once.code, once.where, once.message, once.hint) == \
        ("digest-mismatch", DEMO_URI, "served bytes hash to sha256:x; the manifest says sha256:y",
         "still refused after refreshing the entry once with skills/get")
    assert str(once) == (f"{DEMO_URI}: error[digest-mismatch]: served bytes hash to sha256:x; the manifest says "
                         "sha256:y\n  hint: still refused after refreshing the entry once with skills/get")
    twice = once.with_hint("and again")
    assert twice.hint == "still refused after refreshing the entry once with skills/get; and again"
    assert e.hint is None  # the original is left as it was


# ------------------------------------------------------------------------------------------------ the parser


TAB_AFTER_SCALAR = b"---\nname: demo\nnote: x\t\nb: 1\nb: 2\n---\n"  # libyaml reads it, the pure parser does not
TAB_IN_BLOCK = b"---\nname: demo\nnote: |\n \tx\nb: 1\nb: 2\n---\n"  # the pure parser reads it, libyaml does not
LIBYAML = LOADERS["1.1"] is not yaml.SafeLoader


def refusal(call):
    with pytest.raises(VerificationError) as info:
        call()
    assert info.value.where == DEMO_URI
    return info.value.code, info.value.message, info.value.hint


@pytest.mark.parametrize("data, v12, v11", [
    (TAB_AFTER_SCALAR, ("bad-frontmatter", "SKILL.md frontmatter is not valid YAML at frontmatter line 2", None),
     TWICE if LIBYAML else
     ("bad-frontmatter", "SKILL.md frontmatter is not valid YAML 1.1 at frontmatter line 2", None)),
    (TAB_IN_BLOCK, TWICE,
     ("bad-frontmatter", "SKILL.md frontmatter is not valid YAML 1.1 at frontmatter line 3", None) if LIBYAML else
     TWICE),
])
def test_the_refusals_of_a_reading_run_on_its_own_parser(data, v12, v11):
    assert LOADERS == {"1.2": yaml.SafeLoader, "1.1": getattr(yaml, "CSafeLoader", yaml.SafeLoader)}
    assert refusal(lambda: parse_frontmatter(data, DEMO_URI)) == v12
    assert refusal(lambda: parse_frontmatter(data, DEMO_URI, "1.2")) == v12
    assert refusal(lambda: parse_frontmatter(data, DEMO_URI, "1.1")) == v11
    if v11 == TWICE:
        assert refusal(lambda: frontmatter_text(data, DEMO_URI, "1.1")) == TWICE
    else:  # the refusals' pass saw no duplicate, as the reading's parser cannot read past the tab
        assert frontmatter_text(data, DEMO_URI, "1.1") == data.decode()[4:-5]
