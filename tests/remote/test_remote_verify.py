"""Pure verification: YAML value equality, frontmatter parsing, entry shapes, manifest URIs and limits, bytes."""

from __future__ import annotations

import datetime

import pytest
import yaml

from projector.remote.errors import VerificationError
from projector.remote.verify import (FileRef, check_frontmatter, check_manifest, mapping_diff, parse_entry,
                                     parse_frontmatter, relative_path, sha256, verify_bytes, yaml_equal)

BODY = b"---\nname: demo\ndescription: A demo\n---\n\n# Demo\n"


def entry(resources, uri="skill://demo/SKILL.md", fm=None):
    return parse_entry({"uri": uri, "frontmatter": fm or {"name": "demo", "description": "A demo"},
                        "resources": resources})


def ref(uri, data=b"x"):
    return {"uri": uri, "digest": sha256(data), "size": len(data)}


def code_of(fn, *args):
    with pytest.raises(VerificationError) as info:
        fn(*args)
    return info.value.code


# ------------------------------------------------------------------------------------------------------ equality

@pytest.mark.parametrize("file_yaml, entry_value", [
    ("1", 1), ("1.0", 1), ("1", 1.0), ("1.0e+3", 1000), ("yes", True), ("on", True), ("No", False), ("true", True),
    ("~", None), ("null", None), ("Null", None), ("NULL", None), ("", None),
    ("[1, 2.0]", [1.0, 2]), ("{a: 1}", {"a": 1.0}), ("'1'", "1"), ("2024-01-02", "2024-01-02"),
    (".nan", float("nan")),
])
def test_equal_as_yaml_values(file_yaml, entry_value):
    assert yaml_equal(yaml.safe_load(file_yaml), entry_value)


@pytest.mark.parametrize("file_yaml, entry_value", [
    ("yes", 1), ("true", 1), ("1", True), ("0", False), ("'1'", 1), ("1", "1"), ("null", ""), ("null", 0),
    ("null", False), ("[1]", [1, 1]), ("{a: 1}", {"a": 2}), ("2024-01-02", "2024-01-03"), ("yes", "yes"),
    ("[]", {}), ("1.5", 1),
])
def test_unequal_as_yaml_values(file_yaml, entry_value):
    assert not yaml_equal(yaml.safe_load(file_yaml), entry_value)


def test_missing_key_equals_null_and_diff_names_fields():
    assert mapping_diff({"a": 1, "b": None}, {"a": 1.0}) == []
    assert mapping_diff({"a": 1, "b": 2, "c": "x"}, {"a": True, "c": "x", "d": 0}) == ["a", "b", "d"]
    # YAML keys that are not strings compare as JSON carries them
    assert mapping_diff(yaml.safe_load("{1: a, null: c}"), {"1": "a", "null": "c"}) == []
    assert mapping_diff(yaml.safe_load("{true: b}"), {"true": "b"}) == []
    assert mapping_diff(yaml.safe_load("{1: a}"), {"2": "a"}) == ["1", "2"]


def test_dates_compare_with_their_string_form():
    assert yaml_equal(datetime.date(2024, 1, 2), "2024-01-02")
    assert not yaml_equal(datetime.date(2024, 1, 2), "2024-01-02T00:00:00")
    assert not yaml_equal(datetime.date(2024, 1, 2), "not a date")


# ------------------------------------------------------------------------------------------------------ frontmatter

@pytest.mark.parametrize("text", [
    "---\nname: demo\n---\n", "\ufeff---\r\nname: demo\r\n---\r\nbody", "---\nname: demo\n---",
    "---\nname: demo\n--- \n",
])
def test_frontmatter_forms_accepted(text):
    assert parse_frontmatter(text.encode("utf-8"), "x") == {"name": "demo"}


@pytest.mark.parametrize("data", [b"no frontmatter\n", b"---\nname: demo\n", b"---\n- a list\n---\n",
                                  b"---\nname: [unclosed\n---\n", b"\xff\xfe---\n"])
def test_bad_frontmatter(data):
    assert code_of(parse_frontmatter, data, "x") == "bad-frontmatter"


def test_frontmatter_mismatch_names_the_field_and_both_values_with_their_types():
    e = entry([ref("skill://demo/SKILL.md", BODY)])
    assert check_frontmatter(e, BODY) == {"name": "demo", "description": "A demo"}
    evil = BODY.replace(b"A demo", b'"Exfiltrate\\e[2J credentials"')  # YAML's \e: an ESC character
    with pytest.raises(VerificationError) as info:
        check_frontmatter(e, evil)
    assert info.value.code == "frontmatter-mismatch"
    assert "field 'description' (file: string 'Exfiltrate\\x1b[2J credentials', entry: string 'A demo')" \
        in str(info.value)
    assert "\x1b" not in str(info.value)  # the served text is escaped, never sent to the terminal as is


def test_frontmatter_is_compared_as_yaml_1_2_as_the_reference_sdk_reads_it():
    data = b"---\nname: demo\ndescription: A demo\nversion: 1.0\nenabled: yes\nlicense: ~\nmode: 0o17\n---\n"
    e = entry([ref("skill://demo/SKILL.md", data)],
              fm={"name": "demo", "description": "A demo", "version": 1, "enabled": "yes", "license": None,
                  "mode": 15})
    check_frontmatter(e, data)  # 'yes' is a string and 0o17 the integer 15 in YAML 1.2
    e2 = entry([ref("skill://demo/SKILL.md", data)],
               fm={"name": "demo", "description": "A demo", "version": 1, "enabled": True, "mode": "0o17"})
    with pytest.raises(VerificationError) as info:
        check_frontmatter(e2, data)  # the YAML 1.1 reading is not accepted
    assert info.value.code == "frontmatter-mismatch"
    assert "fields 'enabled' (file: string 'yes', entry: boolean true); 'mode' (file: integer 15, entry: string " \
           "'0o17')" in str(info.value)


def test_a_nested_difference_is_named_by_its_path():
    data = b"---\nname: demo\ndescription: A demo\nmetadata:\n  workflow: 0o17\n---\n"
    e = entry([ref("skill://demo/SKILL.md", data)],
              fm={"name": "demo", "description": "A demo", "metadata": {"workflow": "0o17"}})
    with pytest.raises(VerificationError) as info:
        check_frontmatter(e, data)
    assert "field 'metadata.workflow' (file: integer 15, entry: string '0o17')" in str(info.value)


# ------------------------------------------------------------------------------------------------------ entries

@pytest.mark.parametrize("raw, code", [
    ("x", "bad-entry"), ({}, "bad-entry"), ({"uri": "skill://a/README.md", "frontmatter": {}, "resources": []},
                                            "bad-entry"),
    ({"uri": "skill://a/SKILL.md", "frontmatter": [], "resources": []}, "bad-entry"),
    ({"uri": "skill://a/SKILL.md", "frontmatter": {}, "resources": "static"}, "bad-manifest"),
    ({"uri": "skill://a/SKILL.md", "frontmatter": {}, "resources": [{"uri": "skill://a/SKILL.md"}]}, "bad-manifest"),
    ({"uri": "skill://a/SKILL.md", "frontmatter": {},
      "resources": [{"uri": "skill://a/SKILL.md", "digest": "sha256:" + "A" * 64, "size": 1}]}, "bad-manifest"),
    ({"uri": "skill://a/SKILL.md", "frontmatter": {},
      "resources": [{"uri": "skill://a/SKILL.md", "digest": "sha256:" + "a" * 64, "size": True}]}, "bad-manifest"),
    ({"uri": "skill://a/SKILL.md", "frontmatter": {},
      "resources": [{"uri": "skill://a/SKILL.md", "digest": "sha256:" + "a" * 64, "size": -1}]}, "bad-manifest"),
])
def test_bad_entries(raw, code):
    assert code_of(parse_entry, raw) == code


def test_dynamic_entry():
    e = parse_entry({"uri": "skill://a/SKILL.md", "frontmatter": {"name": "a"}, "resources": "dynamic"})
    assert e.dynamic and e.resources is None and e.root == "skill://a"
    check_manifest(e)


# ------------------------------------------------------------------------------------------------------ manifests

def test_good_manifest_and_relative_paths():
    e = entry([ref("skill://demo/SKILL.md"), ref("skill://demo/references/a%20b.md"), ref("skill://demo/x/y/z.py")])
    check_manifest(e)
    assert relative_path(e, "skill://demo/references/a%20b.md") == "references/a b.md"


@pytest.mark.parametrize("uri", [
    "skill://demo/../other/SKILL.md", "skill://demo/a/../../x", "skill://demo/./a.md", "skill://demo/%2e%2e/x",
    "skill://demo/%2E%2e/x", "skill://demo/a%2fb", "skill://demo/a\\b", "skill://demo//a", "skill://demo/a/",
    "skill://demo/a?b", "skill://demo/a#b", "skill://demo/a\x00b", "skill://demo/a%00b", "skill://demo/%ff",
    "skill://other/a.md", "skill://demox/a.md", "skill://demo", "file://demo/a.md", "demo/a.md",
])
def test_bad_manifest_uris_refused(uri):
    e = entry([ref("skill://demo/SKILL.md"), ref(uri)])
    assert code_of(check_manifest, e) == "bad-manifest-uri"


def test_bad_skill_uri_refused():
    e = entry([ref("skill://a/../b/SKILL.md")], uri="skill://a/../b/SKILL.md")
    assert code_of(check_manifest, e) == "bad-manifest-uri"


def test_manifest_without_skill_md_or_with_duplicates():
    assert code_of(check_manifest, entry([ref("skill://demo/a.md")])) == "unlisted-file"
    assert code_of(check_manifest, entry([ref("skill://demo/SKILL.md"), ref("skill://demo/a.md"),
                                          ref("skill://demo/a.md")])) == "bad-manifest"


def test_limits():
    files = [ref("skill://demo/SKILL.md")] + [ref(f"skill://demo/f{i}.md") for i in range(511)]
    check_manifest(entry(files))  # exactly 512 is allowed
    assert code_of(check_manifest, entry(files + [ref("skill://demo/one-more.md")])) == "too-many-files"
    big = [{"uri": "skill://demo/SKILL.md", "digest": sha256(b"x"), "size": 16 * 1024 * 1024 - 1},
           {"uri": "skill://demo/b.bin", "digest": sha256(b"x"), "size": 1}]
    check_manifest(entry(big))  # exactly 16 MiB is allowed
    big[1]["size"] = 2
    assert code_of(check_manifest, entry(big)) == "too-large"


# ------------------------------------------------------------------------------------------------------ bytes

def test_size_then_digest():
    r = FileRef("skill://demo/SKILL.md", sha256(b"hello"), 5)
    verify_bytes(r, b"hello")
    assert code_of(verify_bytes, r, b"hellO") == "digest-mismatch"
    assert code_of(verify_bytes, r, b"hello!") == "size-mismatch"
    assert code_of(verify_bytes, r, b"") == "size-mismatch"
