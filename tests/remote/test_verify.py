"""Pure verification: YAML value equality, frontmatter parsing, entry shapes, manifest URIs and limits, bytes."""

from __future__ import annotations

import datetime

import pytest
import yaml

from projector.remote.errors import VerificationError
from projector.remote.verify import check_frontmatter
from projector.sep2640 import (FileRef, check_manifest, mapping_diff, parse_entry, parse_frontmatter, relative_path,
                               uri_segments, verify_bytes, yaml_equal)
from projector.sep2640 import digest as sha256

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
               fm={"name": "demo", "description": "A demo", "version": 1, "enabled": True, "license": None,
                   "mode": "0o17"})
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


# ------------------------------------------------------------------------------------------------------ strictness

FM = {"name": "demo", "description": "A demo"}


@pytest.mark.parametrize("yaml_text, what", [
    ("name: demo\ndescription: Injected text\ndescription: A demo", "'description' twice"),
    ("name: demo\n\"description\": Injected\ndescription: A demo", "'description' twice"),
    ("name: demo\ndescription: A demo\nmetadata: {1: a, '1': b}", "'1' twice"),
    ("name: demo\ndescription: A demo\nmetadata: {1: a, 1.0: b}", "'1' twice"),
    ("name: demo\ndescription: A demo\nmetadata: {~: a, 'null': b}", "'null' twice"),
    ("name: demo\ndescription: &d A demo\nx: *d", "the anchor &d"),
    ("name: demo\ndescription: A demo\nx: [*d]", "the alias *d"),
    ("name: demo\ndescription: [unclosed", None),  # not YAML at all: the parser's own error
    ("name: !!str demo\ndescription: A demo", "the explicit tag tag:yaml.org,2002:str"),
    ("name: demo\ndescription: ! A demo", "the explicit tag !"),
    ("name: demo\ndescription: A demo\nmetadata: !evil {}", "the explicit tag !evil"),
    ("name: demo\ndescription: A demo\n<<: {description: Injected}", "a merge key (<<)"),
    ("name: demo\ndescription: A demo\n? [a]\n: b", "a mapping or sequence used as a key"),
    ("%YAML 1.1\n---\nname: demo\ndescription: A demo", None),  # the directive's '---' ends the block
])
def test_ambiguous_frontmatter_is_refused(yaml_text, what):
    data = f"---\n{yaml_text}\n---\n\n# Demo\n".encode()
    with pytest.raises(VerificationError) as info:
        parse_frontmatter(data, "x")
    if what is None:
        assert info.value.code == "bad-frontmatter"
    else:
        assert info.value.code == "frontmatter-ambiguous", info.value
        assert what in info.value.message
        assert "Injected" not in info.value.message


def test_plain_frontmatter_with_nesting_is_not_ambiguous():
    data = (b"---\nname: demo\ndescription: 'A: demo'\nmetadata:\n  a: [1, {b: c, d: [e]}]\n  f: {g: h}\n"
            b"list:\n  - {k: 1}\n  - {k: 2}\n---\n")
    assert parse_frontmatter(data, "x")["metadata"] == {"a": [1, {"b": "c", "d": ["e"]}], "f": {"g": "h"}}


def test_deep_frontmatter_is_bad_not_a_crash():
    deep = "x: " + "[" * 5000 + "]" * 5000
    data = f"---\nname: demo\ndescription: A demo\n{deep}\n---\n".encode()
    assert code_of(parse_frontmatter, data, "x") == "bad-frontmatter"
    ok = "x: " + "[" * 60 + "]" * 60
    parse_frontmatter(f"---\nname: demo\ndescription: A demo\n{ok}\n---\n".encode(), "x")


@pytest.mark.parametrize("file_extra, entry_extra, keys", [
    ("license: null\n", {}, "'license'"),  # an extra null key in the file
    ("", {"license": None}, "'license'"),  # an extra null key in the entry
    ("metadata: {a: 1, b: ~}\n", {"metadata": {"a": 1}}, "'metadata.b'"),
    ("metadata: [{a: 1}]\n", {"metadata": [{"a": 1, "b": None}]}, "'metadata.0.b'"),
])
def test_null_never_equals_absent(file_extra, entry_extra, keys):
    data = f"---\nname: demo\ndescription: A demo\n{file_extra}---\n".encode()
    e = entry([ref("skill://demo/SKILL.md", data)], fm={**FM, **entry_extra})
    with pytest.raises(VerificationError) as info:
        check_frontmatter(e, data)
    assert info.value.code == "frontmatter-mismatch"
    assert keys in info.value.message


def test_same_keys_with_null_values_still_verify():
    data = b"---\nname: demo\ndescription: A demo\nlicense: ~\nmetadata: {1: a}\n---\n"
    e = entry([ref("skill://demo/SKILL.md", data)], fm={**FM, "license": None, "metadata": {"1": "a"}})
    assert check_frontmatter(e, data)["license"] is None


# ------------------------------------------------------------------------------------------------------ mutants
# Each test below kills a mutant of verify.py that the suite once let through (issue 10, item 15).

@pytest.mark.parametrize("uri", ["skill://demo/a\x7fb", "skill://demo/a\x1fb", "skill://demo/a%5cb",
                                 "skill://demo/a%5Cb", "skill://demo/a%2Fb"])
def test_del_and_encoded_backslash_are_refused(uri):
    assert code_of(check_manifest, entry([ref("skill://demo/SKILL.md"), ref(uri)])) == "bad-manifest-uri"


def test_printable_neighbours_of_the_refused_characters_are_fine():
    check_manifest(entry([ref("skill://demo/SKILL.md"), ref("skill://demo/a b~c"), ref("skill://demo/%20x")]))


def test_float_keys_that_are_integers_compare_as_json_keys():
    assert mapping_diff(yaml.safe_load("{1.0: a}"), {"1": "a"}) == []
    assert mapping_diff(yaml.safe_load("{1.5: a}"), {"1.5": "a"}) == []
    assert mapping_diff(yaml.safe_load("{1.5: a}"), {"1": "a"}) == ["1", "1.5"]
    assert mapping_diff({None: "a", True: "b", False: "c"}, {"null": "a", "true": "b", "false": "c"}) == []


def test_keys_json_cannot_tell_apart_never_compare_equal():
    assert mapping_diff({1: "a", "1": "a"}, {"1": "a"}) == ["1"]
    assert mapping_diff({"1": "a"}, {1: "a", "1": "a"}) == ["1"]


def test_booleans_and_numbers_are_different_types():
    assert not yaml_equal(True, 1) and not yaml_equal(1, True) and not yaml_equal(False, 0)
    assert not yaml_equal(0, False) and yaml_equal(True, True) and not yaml_equal(True, False)


@pytest.mark.parametrize("a, b, equal", [
    (float("nan"), float("nan"), True), (float("nan"), 1.0, False), (1.0, float("nan"), False),
    ([1, 2], (1, 2), True), ([1, 2], [2, 1], False), ([], [], True), ({}, {}, True), ({}, [], False),
    ("a", "a", True), ("a", "b", False), (None, None, True), (None, "", False), ("", None, False),
    (datetime.date(2024, 1, 2), datetime.date(2024, 1, 2), True),
    (datetime.date(2024, 1, 2), datetime.datetime(2024, 1, 2), False),
    ("2024-01-02", datetime.date(2024, 1, 2), True), (datetime.date(2024, 1, 2), 20240102, False),
    ("[2024-01-02", datetime.date(2024, 1, 2), False), (1, "1", False), ({"a": 1}, {"a": 1.0}, True),
])
def test_yaml_equality_both_ways(a, b, equal):
    assert yaml_equal(a, b) is equal and yaml_equal(b, a) is equal


def test_resources_missing_is_not_dynamic():
    assert code_of(parse_entry, {"uri": "skill://a/SKILL.md", "frontmatter": {}}) == "bad-manifest"
    assert code_of(parse_entry, {"uri": "skill://a/SKILL.md", "frontmatter": {}, "resources": "Dynamic"}) == \
        "bad-manifest"
    assert code_of(parse_entry, {"uri": "skill://a/SKILL.md", "frontmatter": {}, "resources": None}) == "bad-manifest"


def test_entry_properties():
    e = parse_entry({"uri": "skill://a/b/SKILL.md", "frontmatter": {"name": "b", "description": "d"},
                     "resources": [ref("skill://a/b/SKILL.md", b"xy"), ref("skill://a/b/c.md", b"z")]})
    assert (e.root, e.name, e.description, e.total_size, e.dynamic) == ("skill://a/b", "b", "d", 3, False)
    assert e.ref("skill://a/b/c.md").size == 1 and e.ref("skill://a/b/nope.md") is None
    odd = parse_entry({"uri": "skill://a/b/SKILL.md", "frontmatter": {"name": 1, "description": 2},
                       "resources": "dynamic"})
    assert (odd.name, odd.description, odd.total_size, odd.dynamic, odd.ref("x")) == ("b", "", 0, True, None)
    assert FileRef("u", "d", 1).to_json() == {"uri": "u", "digest": "d", "size": 1}


@pytest.mark.parametrize("raw, message", [
    ("x", "a skills entry is not an object"),
    ({"uri": ""}, "a skills entry has no 'uri' string"),
    ({"uri": 5}, "a skills entry has no 'uri' string"),
    ({"uri": "skill://a/SKILL.mdx"}, "the entry URI does not end in /SKILL.md"),
    ({"uri": "skill://a/SKILL.md", "frontmatter": "x"}, "the entry has no 'frontmatter' object"),
    ({"uri": "skill://a/SKILL.md", "frontmatter": {}, "resources": 1},
     "the entry's 'resources' is neither a list nor \"dynamic\""),
    ({"uri": "skill://a/SKILL.md", "frontmatter": {}, "resources": ["x"]}, "resources[0] has no 'uri' string"),
    ({"uri": "skill://a/SKILL.md", "frontmatter": {}, "resources": [{"uri": 1}]}, "resources[0] has no 'uri' string"),
    ({"uri": "skill://a/SKILL.md", "frontmatter": {}, "resources": [{"uri": "u", "digest": "sha256:" + "a" * 64}]},
     "resources[0] (u) has no valid size"),
    ({"uri": "skill://a/SKILL.md", "frontmatter": {},
      "resources": [{"uri": "u", "digest": "sha256:" + "a" * 64 + "\n", "size": 1}]},
     "resources[0] (u) has no valid digest"),
    ({"uri": "skill://a/SKILL.md", "frontmatter": {}, "resources": [{"uri": "u", "digest": 5, "size": 1}]},
     "resources[0] (u) has no valid digest"),
])
def test_entry_messages(raw, message):
    with pytest.raises(VerificationError) as info:
        parse_entry(raw, "where")
    assert info.value.message == message


def test_a_zero_size_is_a_size():
    e = parse_entry({"uri": "skill://a/SKILL.md", "frontmatter": {},
                     "resources": [{"uri": "skill://a/SKILL.md", "digest": sha256(b""), "size": 0}]})
    assert e.resources[0].size == 0
    verify_bytes(e.resources[0], b"")


# ------------------------------------------------------------------------------------------------------ every refusal
# Pinned field by field: code, where (the span), message and hint.
SK = "skill://demo/SKILL.md"


def _ent(res):
    return entry(res, uri=SK)


CALLS = {
    "entry not an object": (parse_entry, ("x",)),
    "entry not an object, where given": (parse_entry, ("x", "srv")),
    "entry without uri": (parse_entry, ({},)),
    "too many files": (check_manifest, (_ent([ref(SK)] + [ref(f"skill://demo/f{i}") for i in range(512)]),)),
    "too large": (check_manifest, (_ent([{"uri": SK, "digest": sha256(b"x"), "size": 16 * 1024 * 1024 + 1}]),)),
    "outside the root": (check_manifest, (_ent([ref(SK), ref("skill://other/a.md")]),)),
    "listed twice": (check_manifest, (_ent([ref(SK), ref("skill://demo/a.md"), ref("skill://demo/a.md")]),)),
    "SKILL.md unlisted": (check_manifest, (_ent([ref("skill://demo/a.md")]),)),
    "not a URI": (uri_segments, ("demo/a.md", "w")),
    "a backslash": (uri_segments, ("skill://a\\b", "w")),
    "encoded dot": (uri_segments, ("skill://a/%2e", "w")),
    "not UTF-8 encoded": (uri_segments, ("skill://a/%ff", "w")),
    "dot segment": (uri_segments, ("skill://a/./b", "w")),
    "size mismatch": (verify_bytes, (FileRef("skill://d/a", sha256(b"abc"), 3), b"ab")),
    "digest mismatch": (verify_bytes, (FileRef("skill://d/a", sha256(b"abc"), 3), b"abd")),
    "frontmatter not UTF-8": (parse_frontmatter, (b"\xff---", "w")),
    "no frontmatter": (parse_frontmatter, (b"# x", "w")),
    "frontmatter not YAML": (parse_frontmatter, (b"---\nname: x\nbad: [\n---\n", "w")),
    "frontmatter not a mapping": (parse_frontmatter, (b"---\n- x\n---\n", "w")),
    "one field differs": (check_frontmatter, (_ent([ref(SK)]), b"---\nname: demo\ndescription: B\n---\n")),
    "two fields differ": (check_frontmatter, (_ent([ref(SK)]), b"---\nname: x\ndescription: B\n---\n")),
    "keys differ": (check_frontmatter, (_ent([ref(SK)]), b"---\nname: demo\ndescription: A demo\nx: ~\n---\n")),
    "ambiguous": (parse_frontmatter, (b"---\nname: a\nname: b\n---\n", "w")),
    "too deep": (parse_frontmatter, (b"---\nx: " + b"[" * 70 + b"]" * 70 + b"\n---\n", "w")),
}

EXPECTED = {
    'entry not an object': ('bad-entry', '<server>', 'a skills entry is not an object', None),
    'entry not an object, where given': ('bad-entry', 'srv', 'a skills entry is not an object', None),
    'entry without uri': ('bad-entry', '<server>', "a skills entry has no 'uri' string", None),
    'too many files': (
        'too-many-files',
        'skill://demo/SKILL.md',
        'the manifest lists 513 files; SEP-2640 allows 512, SKILL.md included',
        None,
    ),
    'too large': (
        'too-large',
        'skill://demo/SKILL.md',
        'the manifest adds up to 16777217 bytes; SEP-2640 allows 16777216 (16 MiB)',
        None,
    ),
    'outside the root': (
        'bad-manifest-uri',
        'skill://demo/SKILL.md',
        "the manifest URI 'skill://other/a.md' is outside the skill root 'skill://demo'",
        None,
    ),
    'listed twice': ('bad-manifest', 'skill://demo/SKILL.md', "the manifest lists 'skill://demo/a.md' twice", None),
    'SKILL.md unlisted': (
        'unlisted-file',
        'skill://demo/SKILL.md',
        'the manifest does not list SKILL.md itself',
        'a host reads only files its manifest lists, SKILL.md included',
    ),
    'not a URI': ('bad-manifest-uri', 'w', "'demo/a.md' is not a scheme://path URI", None),
    'a backslash': (
        'bad-manifest-uri',
        'w',
        "'skill://a\\\\b' holds a backslash, a query, a fragment or a control character",
        None,
    ),
    'encoded dot': ('bad-manifest-uri', 'w', "'skill://a/%2e' holds a percent-encoded '.', '/', '\\' or NUL", None),
    'not UTF-8 encoded': ('bad-manifest-uri', 'w', "'skill://a/%ff' percent-encodes bytes that are not UTF-8", None),
    'dot segment': ('bad-manifest-uri', 'w', "'skill://a/./b' has an empty, '.' or '..' path segment", None),
    'size mismatch': ('size-mismatch', 'skill://d/a', 'served 2 bytes; the manifest says 3', None),
    'digest mismatch': ("digest-mismatch", "skill://d/a",
                        f"served bytes hash to {sha256(b'abd')}; the manifest says {sha256(b'abc')}", None),
    'frontmatter not UTF-8': ('bad-frontmatter', 'w', 'SKILL.md is not UTF-8', None),
    'no frontmatter': ('bad-frontmatter', 'w', "SKILL.md has no '---' frontmatter block", None),
    'frontmatter not YAML': (
        'bad-frontmatter',
        'w',
        'SKILL.md frontmatter is not valid YAML at frontmatter line 2',
        None,
    ),
    'frontmatter not a mapping': ('bad-frontmatter', 'w', 'SKILL.md frontmatter is not a mapping', None),
    'one field differs': (
        'frontmatter-mismatch',
        'skill://demo/SKILL.md',
        "SKILL.md frontmatter differs from the entry's in field 'description' (file: string 'B', entry: string "
        "'A demo')",
        'a host must not load a skill whose file and entry disagree (frontmatter is read as YAML 1.2, as the '
        'reference SDK reads it)',
    ),
    'two fields differ': (
        'frontmatter-mismatch',
        'skill://demo/SKILL.md',
        "SKILL.md frontmatter differs from the entry's in fields 'description' (file: string 'B', entry: string "
        "'A demo'); 'name' (file: string 'x', entry: string 'demo')",
        'a host must not load a skill whose file and entry disagree (frontmatter is read as YAML 1.2, as the '
        'reference SDK reads it)',
    ),
    'keys differ': (
        'frontmatter-mismatch',
        'skill://demo/SKILL.md',
        "SKILL.md frontmatter and the entry's do not have the same keys: 'x'",
        'a host must not load a skill whose file and entry disagree',
    ),
    'ambiguous': ('frontmatter-ambiguous', 'w', "SKILL.md frontmatter holds the key 'name' twice",
                  "YAML parsers disagree on such frontmatter (which duplicate wins, what a tag means), so a host "
                  "could show other text than the one verified; a skill's frontmatter is plain YAML"),
    'too deep': ('bad-frontmatter', 'w', 'SKILL.md frontmatter nests more than 64 levels deep', None),
}


@pytest.mark.parametrize("case", sorted(CALLS))
def test_every_refusal_in_full(case):
    fn, args = CALLS[case]
    with pytest.raises(VerificationError) as info:
        fn(*args)
    e = info.value
    assert (e.code, e.where, e.message, e.hint) == EXPECTED[case]


# ------------------------------------------------------------------------------------------------------ more mutants

def _where_code_hint(fn, *args):
    with pytest.raises(VerificationError) as info:
        fn(*args)
    return info.value.code, info.value.where, info.value.hint


@pytest.mark.parametrize("raw, hint", [
    ({"uri": "skill://a/SKILL.mdx"}, None),
    ({"uri": "skill://a/SKILL.md", "frontmatter": "x"}, None),
    ({"uri": "skill://a/SKILL.md", "frontmatter": {}, "resources": 1}, None),
    ({"uri": "skill://a/SKILL.md", "frontmatter": {}, "resources": ["x"]}, None),
    ({"uri": "skill://a/SKILL.md", "frontmatter": {}, "resources": [{"uri": "u", "digest": "x", "size": 1}]},
     "a digest is 'sha256:' and 64 lowercase hex digits"),
    ({"uri": "skill://a/SKILL.md", "frontmatter": {}, "resources": [{"uri": "u", "digest": "sha256:" + "a" * 64}]},
     "a size is a non-negative integer count of bytes"),
])
def test_entry_refusals_name_the_entry_and_hint(raw, hint):
    code, where, got = _where_code_hint(parse_entry, raw, "where")
    assert where == raw["uri"] and got == hint
    assert code == ("bad-entry" if "resources" not in raw else "bad-manifest")


def test_an_entry_keeps_its_raw_form():
    raw = {"uri": "skill://a/SKILL.md", "frontmatter": {"name": "a"}, "resources": "dynamic"}
    assert parse_entry(raw).raw is raw
    raw = {"uri": "skill://a/SKILL.md", "frontmatter": {"name": "a"}, "resources": [ref("skill://a/SKILL.md")]}
    assert parse_entry(raw).raw is raw


def test_manifest_uri_errors_name_the_entry():
    e = entry([ref("skill://demo/SKILL.md"), ref("skill://demo/a/../b")])
    assert _where_code_hint(check_manifest, e) == ("bad-manifest-uri", "skill://demo/SKILL.md", None)
    bad_root = entry([ref("skill://demo/../SKILL.md")], uri="skill://demo/../SKILL.md")
    assert _where_code_hint(check_manifest, bad_root)[1] == "skill://demo/../SKILL.md"


def test_a_nested_skill_root_is_the_whole_prefix():
    uri = "skill://a/b/demo/SKILL.md"
    check_manifest(entry([ref(uri), ref("skill://a/b/demo/x.md")], uri=uri))
    for other in ("skill://a/other.md", "skill://a/b/other/x.md", "skill://a/b/x.md"):
        assert code_of(check_manifest, entry([ref(uri), ref(other)], uri=uri)) == "bad-manifest-uri"


def test_capital_letters_and_spaces_in_manifest_uris():
    e = entry([ref("skill://demo/SKILL.md"), ref("skill://demo/X.md"), ref("skill://demo/a b.md")])
    check_manifest(e)
    assert relative_path(e, "skill://demo/a b.md") == "a b.md"
    assert relative_path(e, "skill://demo/x/a%20b.md") == "x/a b.md"


def test_key_set_diff_edges():
    from projector.sep2640 import key_set_diff

    assert key_set_diff({"a": 1}, "x") == [] and key_set_diff([1], 5) == [] and key_set_diff("x", {"a": 1}) == []
    assert key_set_diff([{"a": 1}], [{}]) == ["0.a"]
    assert key_set_diff({"m": [{}, {"b": None}]}, {"m": [{}, {}]}) == ["m.1.b"]
    assert key_set_diff([1, 2], [1]) == []  # lengths differ: the value comparison reports it


def test_the_key_count_guard_reports_every_key():
    assert mapping_diff({1: "a", "1": "a", "x": 1}, {"1": "a"}) == ["1", "x"]


def test_dates_of_different_days_differ():
    assert not yaml_equal(datetime.date(2024, 1, 2), datetime.date(2024, 1, 3))


def test_frontmatter_errors_from_check_name_the_entry():
    e = entry([ref("skill://demo/SKILL.md")])
    assert _where_code_hint(check_frontmatter, e, b"no block") == ("bad-frontmatter", "skill://demo/SKILL.md", None)
    data = b"---\nname: demo\ndescription: A demo\nx: 1\ny: 2\n---\n"
    with pytest.raises(VerificationError) as info:
        check_frontmatter(e, data)
    assert info.value.message == "SKILL.md frontmatter and the entry's do not have the same keys: 'x', 'y'"


def test_frontmatter_that_is_not_even_readable_yaml():
    # a raw control character: PyYAML's reader refuses it before parsing, with no line to report
    with pytest.raises(VerificationError) as info:
        parse_frontmatter(b"---\nname: a\x07b\n---\n", "w")
    assert (info.value.code, info.value.message) == ("bad-frontmatter", "SKILL.md frontmatter is not valid YAML")


@pytest.mark.parametrize("yaml_text, message", [
    ("<<: {a: 1}", "SKILL.md frontmatter holds a merge key (<<)"),
    ("x: *a", "SKILL.md frontmatter holds the alias *a"),
    ("x: &a 1", "SKILL.md frontmatter holds the anchor &a"),
    ("x: !t 1", "SKILL.md frontmatter holds the explicit tag !t"),
    ("? [a]\n: 1", "SKILL.md frontmatter holds a mapping or sequence used as a key"),
])
def test_ambiguity_errors_in_full(yaml_text, message):
    with pytest.raises(VerificationError) as info:
        parse_frontmatter(f"---\n{yaml_text}\n---\n".encode(), "w")
    assert (info.value.code, info.value.where, info.value.message) == ("frontmatter-ambiguous", "w", message)


def test_the_depth_limit_is_exact():
    from projector.sep2640 import MAX_FRONTMATTER_DEPTH

    def fm(n):  # the top-level mapping is one level, each bracket one more
        return f"---\nx: {'[' * n}{']' * n}\n---\n".encode()

    parse_frontmatter(fm(MAX_FRONTMATTER_DEPTH - 1), "w")
    assert code_of(parse_frontmatter, fm(MAX_FRONTMATTER_DEPTH), "w") == "bad-frontmatter"


def test_describe_value_names_the_type_and_escapes_and_cuts_the_text():
    from projector.sep2640 import MISSING as _MISSING, describe_value

    assert describe_value(_MISSING) == "missing"
    assert describe_value(None) == "null"
    assert [describe_value(v) for v in (True, False)] == ["boolean true", "boolean false"]
    assert describe_value(15) == "integer 15" and describe_value(1.5) == "number 1.5"
    assert describe_value("yes") == "string 'yes'"
    assert describe_value("a'b\\c\x1b") == "string 'a\\'b\\\\c\\x1b'"
    assert describe_value("x" * 61) == f"string '{'x' * 60}...'" and describe_value("x" * 60) == f"string '{'x' * 60}'"
    assert describe_value("abcd", limit=2) == "string 'ab...'"
    assert describe_value(datetime.datetime(2024, 1, 2, 3, 4, 5)) == "timestamp 2024-01-02T03:04:05"
    assert describe_value(datetime.date(2024, 1, 2)) == "date 2024-01-02"
    assert describe_value({"b": 1, "a": "é"}) == 'mapping {"a": "\\u00e9", "b": 1}'
    assert describe_value([1, 2]) == "sequence [1, 2]" and describe_value((1,)) == "sequence [1]"
    assert describe_value(b"x") == 'value "b\'x\'"'
    assert describe_value(list(range(30))) == "sequence " + str(list(range(30)))[:60] + "..."
    assert describe_value([1, 2], limit=3) == "sequence [1,..." and describe_value([1, 2], limit=6) == "sequence [1, 2]"
    assert describe_value("aX'") == "string 'aX\\''"  # only the quote and the backslash are escaped


def test_value_diff_follows_mappings_and_names_each_path():
    from projector.sep2640 import MISSING as _MISSING, value_diff

    assert value_diff({"a": 1}, {"a": 1}) == []
    assert value_diff({"a": 1, "m": {"x": 1, "y": 2}}, {"a": 2, "m": {"x": 1, "z": 3}}) == [
        ("a", 1, 2), ("m.y", 2, _MISSING), ("m.z", _MISSING, 3)]
    assert value_diff({"a": None}, {}) == value_diff({}, {"a": None}) == []  # the key sets are compared before
    assert value_diff(1, 1) == value_diff("x", "x") == []
    assert value_diff({"m": {"x": [1]}}, {"m": {"x": [2]}}) == [("m.x", [1], [2])]
    assert value_diff(1, 2) == [("", 1, 2)] and value_diff(1, 2, "p") == [("p", 1, 2)]
    assert value_diff({"a": 1}, [1]) == [("", {"a": 1}, [1])]
    assert value_diff({1: "a", "1": "b"}, {"1": "a"}) == [("", {1: "a", "1": "b"}, {"1": "a"})]  # clashing keys


def test_clip_keeps_a_text_of_exactly_the_limit_and_cuts_one_more():
    from projector.sep2640 import clip

    assert clip("u" * 120) == "u" * 120 and clip("u" * 121) == "u" * 120 + "..."
    assert clip("abcd", 4) == "abcd" and clip("abcde", 4) == "abcd..."


@pytest.mark.parametrize("text, line, col", [
    ("\u2028---", 1, 1),        # the very first character
    ("\n\u2028", 2, 1),         # right after a line break at offset 0
    ("a\n\nb\x85", 3, 2),
])
def test_refuse_line_breaks_counts_lines_and_columns_from_the_start(text, line, col):
    from projector.sep2640.frontmatter import YAML11_ONLY_BREAKS, refuse_line_breaks

    with pytest.raises(VerificationError) as info:
        refuse_line_breaks(text, len(text), "w")
    ch = text.rstrip("-")[-1]
    assert (info.value.code, info.value.where, info.value.message) == (
        "frontmatter-ambiguous", "w",
        f"SKILL.md frontmatter holds U+{ord(ch):04X} {YAML11_ONLY_BREAKS[ch]} at line {line}, column {col}")


def test_refuse_line_breaks_looks_only_before_the_end():
    from projector.sep2640 import refuse_line_breaks

    refuse_line_breaks("ab\u2028", 2, "w")  # the break is past the frontmatter block: body text, not refused


def test_check_name_of_an_entry_whose_root_has_no_slash():
    from projector.sep2640 import check_name

    e = entry([], uri="/SKILL.md", fm={"name": "demo", "description": "A demo"})
    with pytest.raises(VerificationError) as info:
        check_name(e)
    assert (info.value.code, info.value.message) == (
        "name-mismatch", "the entry's frontmatter name is string 'demo', but the last segment of its URI is string ''")
