"""The client's verification of served skills: its mutation survivors (issue 20), pinned by whole messages.

- A value is quoted in the message and the fix when it is at most 60 characters long, and only then.
- A mapping that YAML 1.1 reads with fewer keys than YAML 1.2 (``yes`` and ``0b1`` are both the key 1 to PyYAML,
  as True == 1) is named as a whole, not pair by pair.
- A sequence under the key ``""`` is named by its items' indexes alone.
- :func:`frontmatter_note` says nothing for the YAML 1.2 reading, whatever the file holds."""

from __future__ import annotations

import pytest

from projector.remote.verify import check_frontmatter, frontmatter_note
from projector.sep2640 import VerificationError, digest, parse_entry

URI = "skill://demo/SKILL.md"
MISMATCH = "a host must not load a skill whose file and entry disagree"
HINT_12 = (f"{MISMATCH} (frontmatter is read as YAML 1.2, as the reference SDK reads it); the publisher read it as "
           "YAML 1.1 (as PyYAML, and so FastMCP, does) and should quote these values in SKILL.md{example}, which every "
           "YAML reader reads as the same string; to accept this publisher's YAML 1.1 reading, pass --frontmatter-yaml "
           "1.1 (frontmatter_yaml=\"1.1\" in the library)")
NOTE = ("accepted with its frontmatter read as YAML 1.1 (--frontmatter-yaml 1.1), as its entry reads it; a YAML 1.2 "
        "host (the reference SDK) refuses it: ")


def entry(data: bytes, fm: dict):
    return parse_entry({"uri": URI, "frontmatter": fm,
                        "resources": [{"uri": URI, "digest": digest(data), "size": len(data)}]})


def skill(yaml_text: str) -> bytes:
    return f"---\nname: demo\ndescription: d\n{yaml_text}\n---\n".encode()


def refused(e, data: bytes) -> tuple[str, str, str | None]:
    with pytest.raises(VerificationError) as info:
        check_frontmatter(e, data)
    assert (info.value.code, info.value.where) == ("frontmatter-mismatch", URI)
    return info.value.message, info.value.hint


V60 = "10" + "_0" * 29  # an integer to YAML 1.1, a string to YAML 1.2: 60 characters
V61 = "1" + "_0" * 30  # 61
N = 10 ** 30


@pytest.mark.parametrize("text, shown, named, example", [
    (V60, f"'{V60}'", f"'n: {V60}'", f' (n: "{V60}")'),
    (V61, f"'{V61[:60]}...'", "'n'", ""),
])
def test_a_value_is_quoted_up_to_60_characters(text, shown, named, example):
    assert len(text) in (60, 61)
    data = skill(f"n: {text}")
    e = entry(data, {"name": "demo", "description": "d", "n": N})
    why = f"{named} reads as string {shown} under YAML 1.2 and as integer {N} under YAML 1.1"
    assert refused(e, data) == (
        f"SKILL.md frontmatter differs from the entry's in field 'n' (file: string {shown}, entry: integer {N}); the "
        f"file and the entry agree under YAML 1.1 but not under YAML 1.2: {why}", HINT_12.format(example=example))
    assert check_frontmatter(e, data, "1.1")["n"] == N
    assert frontmatter_note(e, data, "1.1") == NOTE + why


def test_a_mapping_read_with_fewer_keys_is_named_as_a_whole():
    data = skill("m:\n  yes: a\n  0b1: b")
    e = entry(data, {"name": "demo", "description": "d", "m": {"true": "b"}})
    why = ("'m' reads as mapping {\"0b1\": \"b\", \"yes\": \"a\"} under YAML 1.2 and as mapping {\"true\": \"b\"} "
           "under YAML 1.1")
    assert refused(e, data) == (
        "SKILL.md frontmatter and the entry's do not have the same keys: 'm.0b1', 'm.true', 'm.yes'; the file and the "
        f"entry agree under YAML 1.1 but not under YAML 1.2: {why}", HINT_12.format(example=""))
    assert check_frontmatter(e, data, "1.1") == {"name": "demo", "description": "d", "m": {True: "b"}}
    assert frontmatter_note(e, data, "1.1") == NOTE + why


def test_a_sequence_under_the_empty_key_is_named_by_its_indexes():
    data = skill('"": [a, yes]')
    e = entry(data, {"name": "demo", "description": "d", "": ["a", True]})
    why = "'1: yes' reads as string 'yes' under YAML 1.2 and as boolean true under YAML 1.1"
    assert refused(e, data) == (
        "SKILL.md frontmatter differs from the entry's in field '' (file: sequence [\"a\", \"yes\"], entry: sequence "
        f"[\"a\", true]); the file and the entry agree under YAML 1.1 but not under YAML 1.2: {why}",
        HINT_12.format(example=""))
    assert frontmatter_note(e, data, "1.1") == NOTE + why


@pytest.mark.parametrize("data, fm", [
    (skill("approved: yes"), {"name": "demo", "description": "d", "approved": True}),  # 1.2 disagrees with the entry
    (skill("0o17: a\n15: b"), {"name": "demo", "description": "d", "0o17": "a", "15": "b"}),  # not YAML 1.2
])
def test_the_note_is_for_the_yaml_1_1_reading_only(data, fm):
    e = entry(data, fm)
    assert frontmatter_note(e, data, "1.2") is None
    assert frontmatter_note(e, data, "1.1").startswith(NOTE)


@pytest.mark.parametrize("yaml_text, fm_value", [
    ("m: {1: a, b: c}", "x"),  # keys of two types: a mapping json.dumps cannot sort
    ("m: {2020-01-02: a, b: c}", "x"),  # a date key, which json.dumps refuses as a key
])
def test_a_mapping_whose_keys_mix_types_is_named_not_a_crash(yaml_text, fm_value):
    data = skill(yaml_text)
    for version in ("1.2", "1.1"):
        with pytest.raises(VerificationError) as info:
            check_frontmatter(entry(data, {"name": "demo", "description": "d", "m": fm_value}), data, version)
        assert info.value.code == "frontmatter-mismatch"
        assert "mapping {" in info.value.message and "string 'x'" in info.value.message
