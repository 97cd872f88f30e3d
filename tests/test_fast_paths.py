"""The loader's and the projector's fast paths give exactly what their general paths give (issue 23).

Each fast path is compared with the way it short-cuts, on inputs at its edges: the positioned reader with its
string fast paths switched off, the clean-value check with the full walk, the ASCII shortcut of the invisible-
character check with the per-character scan, the cached YAML 1.2 reading with the uncached one, and the canonical
form's per-class field table with :func:`dataclasses.fields`.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conftest import ROOT
from projector import model, positioned, texts, yaml12
from projector.errors import Span, format_text
from projector.model import Argument, Const, Step, Workflow
from projector.positioned import Reader, Y

# The reader: with and without its fast paths.

_PIECES = ["a", "yes", "No", "on", "~", "null", "0o17", "1e3", "12", "-1", ".5", "true", "x y", "é", "\u200b",
           "'q'", '"d"', "!!str 12", "!!int 12", "!!str yes", "&a v", "*a", "<<", "", "nan", ".inf", "0x1f",
           "2001-12-14", "[1, yes]", "{k: 0o17}", "|\n  block", ">-\n  fold", "Done!", "a*b", "<< : {x: 1}"]


def _yaml_texts() -> st.SearchStrategy[str]:
    """Small YAML documents of mappings and lists whose keys and values are the pieces above: every scalar style,
    the YAML 1.1 and 1.2 traps, tags, anchors, aliases, merge keys and duplicate keys."""
    scalar = st.sampled_from(_PIECES)
    key = st.sampled_from(["a", "b", "yes", "0o17", "1e3", "n", "'a'", '"b"', "!!str 12", "12", "null", "~",
                           "<<", "é", "tool", "on"])

    def block(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        entry = st.tuples(key, st.one_of(scalar, children))
        mapping = st.lists(entry, min_size=1, max_size=4).map(
            lambda es: "\n".join(f"{k}:" + ("\n" + _indent(v) if "\n" in v or v.endswith(":") else f" {v}")
                                 for k, v in es))
        sequence = st.lists(st.one_of(scalar, children), min_size=1, max_size=3).map(
            lambda vs: "\n".join("-" + ("\n" + _indent(v) if "\n" in v else f" {v}") for v in vs))
        return st.one_of(mapping, sequence)

    return st.recursive(block(scalar), block, max_leaves=12)


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.split("\n"))


class _NoNode:
    """A class no node is an instance of: with it as ``_SCALAR_NODE`` every fast path of the reader is off."""


def _tree(y: Y | None) -> Any:
    """Everything a ``Y`` carries, as plain data (NaN as its repr, so that two readings compare equal)."""
    if y is None:
        return None
    value = y.value
    if isinstance(value, dict):
        value = {k: (_tree(v), y.key_span(k)) for k, v in value.items()}
    elif isinstance(value, list):
        value = [_tree(v) for v in value]
    else:
        value = (type(value).__name__, repr(value))
    return value, y.span, repr(y.odd)


def _read_both(text: str) -> tuple[Any, Any]:
    fast = Reader(text, "f.yaml")
    got = (_tree(fast.read()), [format_text(d) for d in fast.diags])
    with pytest.MonkeyPatch.context() as m:
        m.setattr(positioned, "_SCALAR_NODE", _NoNode)
        slow = Reader(text, "f.yaml")
        expected = (_tree(slow.read()), [format_text(d) for d in slow.diags])
    return got, expected


@settings(max_examples=300, deadline=None)
@given(_yaml_texts())
@example("a: 1\na: 2\nyes: no\n0o17: 1e3\n'q': \"d\"\n")
@example("a: &x v\nb: *x\nc: [*x, &y w]\n")
@example("!!str 12: !!str yes\n'12': !!int 12\nk: !!str\n")
@example("<<: {a: 1}\nb: 2\n")
def test_the_reader_reads_the_same_with_and_without_its_fast_paths(text):
    got, expected = _read_both(text)
    assert got == expected


def _corpus() -> list[Path]:
    """The examples and the bad inputs that decode to text (the reader never sees the others)."""
    found = sorted([*(ROOT / "workflows").glob("*.yaml"), *(ROOT / "tests" / "bad_inputs").glob("*.yaml")])
    return [p for p in found if positioned.decode(p.read_bytes(), p.name)[0] is not None]


def test_the_corpus_holds_the_examples_and_most_bad_inputs():
    names = {p.name for p in _corpus()}
    assert {p.name for p in (ROOT / "workflows").glob("*.yaml")} <= names and len(names) > 50


@pytest.mark.parametrize("path", _corpus(), ids=lambda p: p.name)
def test_the_examples_and_the_bad_inputs_read_the_same_without_the_fast_paths(path):
    text, _ = positioned.decode(path.read_bytes(), path.name)
    got, expected = _read_both(text)
    assert got == expected


def test_the_resolver_s_shortcuts_give_the_base_loader_s_tags(monkeypatch):
    monkeypatch.setattr(positioned, "_RESOLVED", {})
    base = positioned._BaseLoader("")
    ours = positioned._Loader("")
    try:
        for kind in (positioned.yaml.ScalarNode, positioned.yaml.SequenceNode, positioned.yaml.MappingNode):
            for value in ("12", "yes", "", "~", "x", None):
                for implicit in ((True, False), (False, True), (True, True), (False, False)):
                    if value is None and kind is positioned.yaml.ScalarNode:
                        continue
                    assert ours.resolve(kind, value, implicit) == base.resolve(kind, value, implicit)
    finally:
        base.dispose()
        ours.dispose()


# Clean JSON values: the one-pass check agrees with the walk that finds the first problem.

class _Str(str):
    pass


class _Int(enum.IntEnum):
    ONE = 1


_LEAF = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
                  st.text(st.sampled_from("ab\t\n\x00\x1b\x7f\x85\u200b\u202e\ufeffé\U000e0041"), max_size=4),
                  st.sampled_from([_Str("x"), _Str("\x01"), _Int.ONE, 1.5, ()]))
_JSON = st.recursive(_LEAF, lambda c: st.one_of(
    st.lists(c, max_size=3), st.lists(c, max_size=3).map(tuple),
    st.dictionaries(st.one_of(st.text(st.sampled_from("ab\x01\u200b"), max_size=2), st.sampled_from([1, 2.5])),
                    c, max_size=3)), max_leaves=10)


def _nested(depth: int, leaf: object = "x") -> object:
    value: object = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


def _walk_only(value: object) -> Any:
    with pytest.MonkeyPatch.context() as m:
        m.setattr(texts, "_clean_value", lambda v: False)
        return texts._value_problem(Span("f", 1, 1), "v", value)


@settings(max_examples=500, deadline=None)
@given(_JSON)
@example({"a": "ok", "b": [1, True, None, 2.5]})
@example({"\x01": "key"})
@example({1: "x", "b": "\x02"})
@example({float("nan"): 1})
@example([_Str("\x01")])
@example(_nested(texts.MAX_VALUE_DEPTH))
@example(_nested(texts.MAX_VALUE_DEPTH + 1))
@example(_nested(texts.MAX_VALUE_DEPTH - 1, leaf=[]))
@example(_nested(texts.MAX_VALUE_DEPTH, leaf=[]))
@example(_nested(texts.MAX_VALUE_DEPTH, leaf={}))
@example(["\u200b", float("inf")])
@example(["a", "\x85"])
def test_a_value_is_clean_exactly_when_the_walk_finds_nothing(value):
    expected = _walk_only(value)
    if texts._clean_value(value):
        assert expected is None
    assert texts._value_problem(Span("f", 1, 1), "v", value) == expected


def test_a_cycle_is_too_deep_with_and_without_the_fast_check():
    value: list[Any] = ["x"]
    value.append(value)
    assert not texts._clean_value(value)
    assert texts._value_problem(Span("f", 1, 1), "v", value).code == "too-deep"


# The invisible-character check: no ASCII character is one it refuses, so ASCII texts skip the scan.

def _scan(text: str, one_line: bool) -> str | None:
    if one_line:
        return next((c for c in text if unicodedata.category(c) == "Cf" or texts._INVISIBLE.match(c)), None)
    m = texts._INVISIBLE.search(text)
    return m.group(0) if m else None


def test_no_ascii_character_is_invisible_or_a_format_character():
    for c in map(chr, range(128)):
        assert unicodedata.category(c) != "Cf" and not texts._INVISIBLE.match(c), hex(ord(c))


@settings(max_examples=300, deadline=None)
@given(st.text(st.one_of(st.characters(max_codepoint=127), st.sampled_from("\xad\u061c\u200b\u2066\ufeff\U000e0041"
                                                                           "é\u00a0")), max_size=12),
       st.booleans())
@example("plain ascii \x01\x7f", True)
@example("soft\xadhyphen", True)
@example("soft\xadhyphen", False)
def test_the_invisible_check_finds_what_the_scan_finds(text, one_line):
    found = _scan(text, one_line)
    problem = texts.invisible_problem(Span("f", 1, 1), "t", text, one_line)
    assert (problem is None) == (found is None)
    if found is not None:
        assert f"U+{ord(found):04X}" in problem.message


# YAML 1.2 readings: remembered, and for a string the same verdict as same_value's.

@settings(max_examples=300, deadline=None)
@given(st.one_of(st.sampled_from(["yes", "No", "0o17", "0x1F", "1e3", "1_000", "~", "null", "Null", "", "true",
                                  "TRUE", ".inf", "-.Inf", ".nan", "+12", "0b1", "9" * 5000, "n", "o"]),
                 st.text(st.sampled_from("0123456789+-.eExXoOnNuUlLtTrRfFaAsS~_"), max_size=6)),
       st.sampled_from(["text", "str-subclass", "bool", "int", "none"]), st.booleans())
def test_reads_differently_agrees_with_core_value_and_same_value(text, kind, subclass_text):
    value = {"text": text, "str-subclass": _Str(text), "bool": True, "int": 12, "none": None}[kind]
    text = _Str(text) if subclass_text else text
    for _ in range(2):  # the second time from the cache
        differs, got = yaml12.reads_differently(text, value)
        if text[:1] not in yaml12.MAYBE_TYPED and isinstance(value, str):
            assert (differs, got) == (False, value)
            continue
        core = yaml12.core_value(text)
        assert differs == (not yaml12.same_value(value, core))
        assert repr(got) == repr(core if differs else value) and type(got) is type(core if differs else value)


# The canonical form: the field table per class gives what dataclasses.fields gives.

def _canonical_by_fields(value: Any) -> Any:
    """model.canonical as it was written before the per-class table (the reference)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        node: dict[str, Any] = {"kind": type(value).__name__}
        for f in dataclasses.fields(value):
            if f.compare and not (f.metadata.get("additive") and getattr(value, f.name) == f.default):
                node[f.name] = _canonical_by_fields(getattr(value, f.name))
        return node
    if isinstance(value, (tuple, list)):
        return [_canonical_by_fields(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _canonical_by_fields(v) for k, v in value.items()}
    return value


@dataclasses.dataclass(frozen=True)
class _Sub(Const):
    extra: int = 0


@pytest.mark.parametrize("value", [
    Workflow("w", "d", arguments=(Argument("a", ask=True), Argument("b")),
             steps=(Step("s", tool="t", args=(("x", Const({1: [_Str("s"), 1.5, math.inf, (2, 3)]})),)),)),
    [Const(_Sub(1, extra=2)), Const, {"k": (Argument, _Int.ONE, True, None)}],
    _Str("s"),
], ids=["workflow", "subclasses-and-classes", "str-subclass"])
def test_canonical_is_the_fields_reading(value):
    got, expected = model.canonical(value), _canonical_by_fields(value)
    assert repr(got) == repr(expected)
    assert [type(x) for x in _flat(got)] == [type(x) for x in _flat(expected)]


def test_canonical_of_every_example_is_the_fields_reading():
    from projector.load import load_file

    for path in sorted((ROOT / "workflows").glob("*.yaml")):
        wf = load_file(path)
        assert model.canonical(wf) == _canonical_by_fields(wf), path.name


def _flat(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [x for k, v in value.items() for x in (k, *_flat(v))]
    if isinstance(value, list):
        return [x for v in value for x in _flat(v)]
    return [value]


# Y.plain: its shortcut for leaves gives what the plain recursion gives.

def _plain_by_recursion(y: Y) -> Any:
    if isinstance(y.value, dict):
        return {k: _plain_by_recursion(v) for k, v in y.value.items()}
    if isinstance(y.value, list):
        return [_plain_by_recursion(v) for v in y.value]
    return y.value


class _Dict(dict):
    pass


@settings(max_examples=200, deadline=None)
@given(_yaml_texts())
def test_plain_is_the_recursive_reading(text):
    doc = Reader(text, "f.yaml").read()
    if doc is not None:
        got, expected = doc.plain(), _plain_by_recursion(doc)
        assert repr(got) == repr(expected)
        assert [type(x) for x in _flat(got)] == [type(x) for x in _flat(expected)]


def test_plain_of_hand_built_values_with_subclasses():
    leaf = Y(_Str("s"), "f", None)
    doc = Y(_Dict(a=Y([leaf, Y(1.5, "f", None), Y(_Dict(), "f", None)], "f", None), b=leaf), "f", None)
    got = doc.plain()
    assert got == _plain_by_recursion(doc) == {"a": ["s", 1.5, {}], "b": "s"}
    assert type(got["b"]) is _Str and type(got) is dict and type(got["a"][2]) is dict
