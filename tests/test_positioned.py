"""YAML with positions (projector/positioned.py), piece by piece: the position arithmetic, the helpers the
messages are built from, the resolve cache, and the fallbacks for what the parsers never say on real input.

tests/test_bad_input_messages.py pins what a user reads for each hostile input, word for word; this file pins the
parts under those messages with exact values, so that a wrong position or a wrong tag shows up here first.
"""

from __future__ import annotations

import pytest
import yaml

from projector import positioned
from projector.errors import Span, format_text
from projector.positioned import (MAX_INT_DIGITS, Reader, Y, _byte_line_col, _char, _line_col, decode, loader_class,
                                  normalize, type_name)
from projector.shape import parse


def _read(text: str, file: str = "f.yaml") -> tuple[Y | None, list[str]]:
    reader = Reader(text, file)
    doc = reader.read()
    return doc, [format_text(d) for d in reader.diags]


# Position arithmetic.

@pytest.mark.parametrize(("text", "offset", "expected"), [
    ("abc", 0, (1, 1)),
    ("abc", 2, (1, 3)),
    ("ab\ncd\nefg", 3, (2, 1)),
    ("ab\ncd\nefg", 8, (3, 3)),
    ("a\n\n\nbcd", 6, (4, 3)),
])
def test_line_col_of_a_character_offset(text, offset, expected):
    assert _line_col(text, offset) == expected
    assert _byte_line_col(text.encode("ascii"), offset) == expected


def test_char_past_the_text_is_empty():
    mark = yaml.Mark("f", 0, 5, 0, None, None)
    assert _char(["ab", "cd"], mark) == ""
    assert _char(["ab", "cd"], yaml.Mark("f", 0, 1, 9, None, None)) == ""
    assert _char(["ab", "cd"], yaml.Mark("f", 0, 1, 1, None, None)) == "d"


def test_key_span_is_the_key_own_or_else_the_mapping_s():
    doc, diags = _read("top: 0\nmap:\n  a: 1\n  c: 5\n")
    assert diags == []
    m = doc.value["map"]
    assert m.key_span("c") == Span("f.yaml", 4, 3)
    assert m.key_span("missing") == Span("f.yaml", 3, 3)  # not a key: the mapping's own position
    assert doc.value["top"].key_span("x") == Span("f.yaml", 1, 6)  # a scalar has no key marks


def test_renamed_moves_the_key_its_position_and_its_odd_reading_and_nothing_else():
    doc, diags = _read("top: 0\nmap:\n  a: 1\n  b: 2\n  1e3: 3\n  0o17: 4\n  c: 5\n")
    assert diags == []
    m = doc.value["map"]
    assert m.odd == {"1e3": ("1e3", 1000.0), "0o17": ("0o17", 15)}

    r = m.renamed("b", "B")
    assert list(r.value) == ["a", "B", "1e3", "0o17", "c"]
    assert r.value["B"] is m.value["b"]
    assert [r.key_span(k) for k in r.value] == [Span("f.yaml", n, 3) for n in (3, 4, 5, 6, 7)]
    assert r.span == m.span == Span("f.yaml", 3, 3)
    assert r.odd == m.odd

    r = m.renamed("1e3", "e")
    assert list(r.value) == ["a", "b", "e", "0o17", "c"]
    assert r.key_span("e") == Span("f.yaml", 5, 3)
    assert r.odd == {"e": ("1e3", 1000.0), "0o17": ("0o17", 15)}

    plain = doc.renamed("top", "first")  # a mapping without odd keys keeps having none
    assert plain.odd is None
    assert list(plain.value) == ["first", "map"]
    assert plain.key_span("first") == Span("f.yaml", 1, 1)
    assert plain.key_span("map") == Span("f.yaml", 2, 1)


def test_type_name_of_a_type_the_table_does_not_name():
    assert type_name(b"x") == "bytes"
    assert type_name(1.5) == "a number"
    assert type_name(None) == "null"


# Bytes to text.

def test_normalize_drops_one_byte_order_mark_and_makes_every_line_end_lf():
    assert normalize("\ufeffa\r\nb\rc\n") == "a\nb\nc\n"
    assert normalize("\ufeff\ufeffa") == "\ufeffa"
    assert normalize("a\r\r\nb") == "a\n\nb"
    assert normalize("plain\n") == "plain\n"


def test_decode_names_the_first_nul_and_normalizes():
    assert decode(b"\xef\xbb\xbfa: 1\r\nb: 2\r", "f") == ("a: 1\nb: 2\n", [])
    text, diags = decode(b"\x00a\x00", "f")
    assert text is None and [d.span for d in diags] == [Span("f", 1, 1)]
    text, diags = decode(b"a\nbc\x00\n\x00", "f")
    assert text is None and [(d.code, d.span) for d in diags] == [("nul-byte", Span("f", 2, 3))]


# The resolve cache: the same tag as the base loader's, whatever was asked before.

@pytest.fixture
def fresh_cache(monkeypatch):
    monkeypatch.setattr(positioned, "_RESOLVED", {})


@pytest.mark.usefixtures("fresh_cache")
def test_the_resolve_cache_keeps_the_implicit_flags_apart():
    loader = loader_class(yaml.SafeLoader)("")
    base = yaml.SafeLoader("")
    asks = [("12", (True, False)), ("12", (False, True)), ("12", (True, False)), ("true", (False, True)),
            ("true", (True, False)), ("~", (True, False)), ("", (True, False)), ("x", (True, False))]
    for value, implicit in asks:
        assert loader.resolve(yaml.ScalarNode, value, implicit) == base.resolve(yaml.ScalarNode, value, implicit)
    assert loader.resolve(yaml.ScalarNode, "12", (True, False)) == "tag:yaml.org,2002:int"
    assert loader.resolve(yaml.ScalarNode, "12", (False, True)) == "tag:yaml.org,2002:str"
    assert loader.resolve(yaml.SequenceNode, None, (True, False)) == "tag:yaml.org,2002:seq"
    assert loader.resolve(yaml.MappingNode, None, (True, False)) == "tag:yaml.org,2002:map"


@pytest.mark.usefixtures("fresh_cache")
def test_the_resolve_cache_loads_what_the_base_loads():
    text = "a: 12\nb: '12'\nc: [true, 'true', ~, 1.5, x]\nd: {e: 0x1f}\n"
    expected = {"a": 12, "b": "12", "c": [True, "true", None, 1.5, "x"], "d": {"e": 31}}
    assert yaml.load(text, Loader=loader_class(yaml.SafeLoader)) == expected
    assert yaml.load(text, Loader=loader_class(yaml.SafeLoader)) == expected  # from the cache this time


@pytest.mark.usefixtures("fresh_cache")
def test_a_base_with_path_resolvers_resolves_as_itself():
    class WithPaths(yaml.SafeLoader):
        pass

    WithPaths.add_path_resolver("tag:yaml.org,2002:int", ["a"], str)  # for a quoted scalar: plain ones resolve first
    text = "a: '12'\nb: 12\nc: '12'\n"
    assert yaml.load(text, Loader=loader_class(WithPaths)) == {"a": 12, "b": 12, "c": "12"}


# What the parsers never say on real input: the fallbacks still give a diagnostic at the file's start.

class _Failing:
    def __init__(self, exc):
        self.exc = exc

    def __call__(self, text):
        return self

    def get_single_node(self):
        raise self.exc

    def dispose(self):
        pass


@pytest.mark.parametrize(("exc", "expected"), [
    (yaml.MarkedYAMLError(problem="no mark at all"), "f.yaml:1:1: error[yaml-syntax]: invalid YAML: no mark at all"),
    (yaml.YAMLError("no position"), "f.yaml:1:1: error[yaml-syntax]: invalid YAML: no position"),
])
def test_a_parser_error_without_a_position_is_reported_at_the_start(monkeypatch, exc, expected):
    monkeypatch.setattr(positioned, "_Loader", _Failing(exc))
    assert _read("a: 1\nb: 2\n") == (None, [expected])


def test_too_deep_without_a_deep_node_found_is_reported_once_at_the_start():
    reader = Reader("a: 1\nb: 2\n", "f.yaml")
    reader.too_deep = False
    reader._refuse_depth()
    reader._refuse_depth()
    assert [format_text(d) for d in reader.diags] == [
        ("f.yaml:1:1: error[too-deep]: the YAML nests deeper than 100 levels\n"
         "  hint: a workflow needs a few levels; flatten the value")]


@pytest.mark.skipif(not positioned.HAVE_LIBYAML, reason="libyaml's nesting limit")
def test_past_libyaml_s_nesting_limit_only_the_depth_is_reported():
    doc, diags = _read("x: " + "[" * 1001 + "&a 1\n")
    assert doc is None
    assert diags == [("f.yaml:1:103: error[too-deep]: the YAML nests deeper than 100 levels\n"
                      "  hint: a workflow needs a few levels; flatten the value")]


# Hints and refusals that need an input no snapshot should hold.

def test_a_value_without_a_key_on_the_first_line_gets_an_indentation_hint():
    wf, diags = parse(b": g\n", "f.yaml")
    assert wf is None
    assert [(d.code, d.span) for d in diags] == [("yaml-syntax", Span("f.yaml", 1, 1))]
    assert diags[0].hint.startswith("check the indentation of line 1")


def test_the_colon_hint_keeps_a_key_that_starts_with_a_no_break_space():
    _wf, diags = parse("x:\n  -   \u00a0name: a: b\n".encode("utf-8"), "f.yaml")
    assert [(d.code, d.span) for d in diags] == [("yaml-syntax", Span("f.yaml", 2, 15))]
    assert diags[0].hint == "the value of '\u00a0name' holds ': ', which starts a mapping in YAML; quote the value: " \
                            "\u00a0name: \"a: b\""


def test_an_integer_tag_on_a_text_as_long_as_the_digit_limit_is_not_called_too_long():
    value = "1" * (MAX_INT_DIGITS - 1) + "x"
    _doc, diags = _read(f"a: !!int {value}\n")
    assert len(diags) == 1
    assert diags[0].startswith("f.yaml:1:4: error[yaml-tag]: ")
    assert diags[0].endswith(" is not a valid !!int\n  hint: remove the tag, or write a value the tag allows")


def test_an_alias_brings_nothing_back_and_every_report_names_the_file():
    _wf, diags = parse(b"name: &n x\ndescription: *n\ntools: [{name: t}]\nsteps: [{name: a, tool: t}]\n", "f.yaml")
    assert [(d.code, d.span) for d in diags][:2] == [("alias", Span("f.yaml", 1, 7)), ("alias", Span("f.yaml", 2, 14))]
    assert {d.span.file for d in diags} == {"f.yaml"}


@pytest.mark.parametrize("reader", ["libyaml", "pure-python"])
def test_a_control_character_after_non_ascii_text_is_reported_where_it_is(reader, monkeypatch):
    """libyaml gives a reader error's position in UTF-8 bytes, PyYAML's own reader in characters: both land on the
    character itself (it was 3:3, past the end of the file, with libyaml)."""
    if reader == "pure-python":
        monkeypatch.setattr(positioned, "_Loader", positioned.loader_class(yaml.SafeLoader))
    else:
        assert positioned.HAVE_LIBYAML, "PyYAML was built without libyaml here"
    _doc, diags = _read("a: é\nb: ééé\x07\n")
    assert diags[0].startswith("f.yaml:2:7: error[yaml-syntax]: ")
