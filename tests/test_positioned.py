"""YAML with positions (projector/positioned.py), piece by piece: the position arithmetic, the helpers the
messages are built from, the resolve cache, and the fallbacks for what the parsers never say on real input.

tests/test_load.py pins what a user reads for each hostile input, word for word; this file pins the
parts under those messages with exact values, so that a wrong position or a wrong tag shows up here first.
"""

from __future__ import annotations

import tracemalloc
import unicodedata
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conftest import ROOT

from projector import positioned, yaml12
from projector.errors import Span, format_text
from projector.load import parse
from projector.positioned import (
    MAX_INT_DIGITS,
    Reader,
    Y,
    _byte_line_col,
    _char,
    _line_col,
    decode,
    loader_class,
    normalize,
    type_name,
)


def _read(text: str, file: str = "f.yaml") -> tuple[Y | None, list[str]]:
    reader = Reader(text, file)
    doc = reader.read()
    return doc, [format_text(d) for d in reader.diags]


# Position arithmetic.


@pytest.mark.parametrize(
    ("text", "offset", "expected"),
    [
        ("abc", 0, (1, 1)),
        ("abc", 2, (1, 3)),
        ("ab\ncd\nefg", 3, (2, 1)),
        ("ab\ncd\nefg", 8, (3, 3)),
        ("a\n\n\nbcd", 6, (4, 3)),
    ],
)
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
    asks = [
        ("12", (True, False)),
        ("12", (False, True)),
        ("12", (True, False)),
        ("true", (False, True)),
        ("true", (True, False)),
        ("~", (True, False)),
        ("", (True, False)),
        ("x", (True, False)),
    ]
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


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (
            yaml.MarkedYAMLError(problem="no mark at all"),
            "f.yaml:1:1: error[yaml-syntax]: invalid YAML: no mark at all",
        ),
        (yaml.YAMLError("no position"), "f.yaml:1:1: error[yaml-syntax]: invalid YAML: no position"),
    ],
)
def test_a_parser_error_without_a_position_is_reported_at_the_start(monkeypatch, exc, expected):
    monkeypatch.setattr(positioned, "_Loader", _Failing(exc))
    assert _read("a: 1\nb: 2\n") == (None, [expected])


@pytest.mark.slow
@pytest.mark.skipif(not positioned.HAVE_LIBYAML, reason="libyaml's nesting limit")
def test_past_libyaml_s_nesting_limit_only_the_depth_is_reported():
    doc, diags = _read("x: " + "[" * 1001 + "&a 1\n")
    assert doc is None
    assert diags == [
        (
            "f.yaml:1:103: error[too-deep]: the YAML nests deeper than 100 levels\n"
            "  hint: a workflow needs a few levels; flatten the value"
        )
    ]


# Hints and refusals that need an input no snapshot should hold.


def test_a_value_without_a_key_on_the_first_line_gets_an_indentation_hint():
    wf, diags = parse(b": g\n", "f.yaml")
    assert wf is None
    assert [(d.code, d.span) for d in diags] == [("yaml-syntax", Span("f.yaml", 1, 1))]
    assert diags[0].hint.startswith("check the indentation of line 1")


def test_the_colon_hint_keeps_a_key_that_starts_with_a_no_break_space():
    _wf, diags = parse("x:\n  -   \u00a0name: a: b\n".encode("utf-8"), "f.yaml")
    assert [(d.code, d.span) for d in diags] == [("yaml-syntax", Span("f.yaml", 2, 15))]
    assert (
        diags[0].hint == "the value of '\u00a0name' holds ': ', which starts a mapping in YAML; quote the value: "
        '\u00a0name: "a: b"'
    )


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


# Round two of the loader's hardening (issue 17): the alias bomb is refused before any expansion, and what a
# plain scalar means must not depend on the YAML version where it reaches a condition or a tool.


# The first round's alias bomb: ten lines, over five million nodes once expanded.
BOMB = (
    "\n".join(
        ["name: bomb", 'a: &a ["x","x","x","x","x","x","x","x","x"]']
        + [f"{c}: &{c} [{', '.join(['*' + p] * 9)}]" for p, c in zip("abcdef", "bcdefg")]
        + ["description: d", "steps: [{name: s, tool: t}]"]
    )
    + "\n"
)


def test_the_bomb_is_ten_lines_of_nested_aliases():
    assert len(BOMB.splitlines()) == 10 and BOMB.count("*") == 54


def test_the_alias_bomb_is_refused_without_expanding_it():
    """Ten lines of nested aliases would expand to a billion items: the loader reads each node of the text once (an
    alias is not followed: it becomes null), so it stays small."""
    tracemalloc.start()
    try:
        wf, diags = parse(BOMB, "bomb.yaml")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * 1024 * 1024
    aliases = [d for d in diags if d.code == "alias"]
    assert [(d.span.line, d.span.col) for d in aliases][:3] == [(2, 4), (3, 4), (3, 8)]
    assert aliases[0].message == "YAML anchor &a is not allowed"
    assert aliases[2].message == "YAML alias *a is not allowed"
    assert len(aliases) == 7 + 54


# ------------------------------------------------- bidi and zero-width characters (issue 17, item 13, fourth bullet)

FLOW = """\
name: {name}
title: {title}
description: {description}
arguments:
  - name: {arg}
    description: {arg_description}
instructions:
  - role: system
    text: {instruction}
tools:
  - name: t
    description: {tool_description}
    annotations: {{readOnlyHint: true}}
steps:
  - name: {step}
    tool: t
    args: {{y: {{const: {const}}}}}
    guidance: {guidance}
"""
PLAIN = {
    "name": "flow",
    "title": "Flow",
    "description": "d",
    "arg": "a",
    "arg_description": "an argument",
    "instruction": "be kind",
    "tool_description": "a tool",
    "step": "s",
    "const": "c",
    "guidance": "go on",
}
# (field, line, col) of where each text's problem is reported: the nearest position the model keeps
WHERE = {
    "name": (1, 7),
    "title": (2, 8),
    "description": (3, 14),
    "arg": (5, 5),
    "arg_description": (5, 5),
    "instruction": (8, 5),
    "tool_description": (11, 5),
    "step": (15, 5),
    "const": (17, 15),
    "guidance": (18, 15),
}
WHAT = {
    "name": "the workflow name",
    "title": "the title",
    "description": "the description",
    "arg": "the name of argument 'a{c}'",
    "arg_description": "the description of argument 'a'",
    "instruction": "an instruction",
    "tool_description": "the description of tool 't'",
    "step": "the name of step 's{c}'",
    "const": "the constant of step 's', 'y'",
    "guidance": "the guidance of step 's'",
}
# every bidi control and zero-width character, and the other invisible format characters that are refused everywhere
EVERYWHERE = [
    "\u061c",
    "\u180e",
    "\u200b",
    "\u200c",
    "\u200d",
    "\u200e",
    "\u200f",
    "\u202a",
    "\u202b",
    "\u202c",
    "\u202d",
    "\u202e",
    "\u2060",
    "\u2061",
    "\u2062",
    "\u2063",
    "\u2064",
    "\u2066",
    "\u2067",
    "\u2068",
    "\u2069",
    "\u206a",
    "\u206f",
    "\ufeff",
    "\ufff9",
    "\ufffb",
    "\U000e0001",
    "\U000e0041",
    "\U000e007f",
]


def _flow(field: str, value: str) -> str:
    texts = dict(PLAIN)
    texts[field] = PLAIN[field] + value + "z"
    return FLOW.format(**texts)


@pytest.mark.parametrize("field", sorted(WHERE))
@pytest.mark.parametrize("char", EVERYWHERE)
def test_bidi_and_zero_width_characters_are_refused_in_every_text(field, char):
    wf, diags = parse(_flow(field, char), "f.yaml")
    problems = [(d.code, d.span.line, d.span.col, d.message, d.hint) for d in diags]
    name = unicodedata.name(char, "")
    assert len(problems) == 1, problems
    code, line, col, message, hint = problems[0]
    assert (code, line, col) == ("control-character", *WHERE[field])
    assert message.startswith(WHAT[field].split("{")[0])
    assert message.endswith(
        f"contains the invisible format character U+{ord(char):04X}" + (f" ({name})" if name else "")
    )
    assert hint == (
        "remove it: a bidirectional control or an invisible character makes a text read differently from what it holds"
    )


@pytest.mark.parametrize("char", ["\u00ad", "\u0600", "\u06dd", "\U000110bd"])
def test_other_format_characters_are_refused_in_names_only(char):
    wf, diags = parse(_flow("name", char), "f.yaml")
    assert [(d.code, d.span.line, d.span.col) for d in diags] == [("control-character", 1, 7)]
    for field in ("description", "guidance", "const", "instruction"):
        wf, diags = parse(_flow(field, char), "f.yaml")
        assert diags == [], field


def test_text_without_format_characters_is_untouched():
    wf, diags = parse(FLOW.format(**PLAIN), "f.yaml")
    assert diags == []
    # emoji, accents and right-to-left scripts themselves are fine everywhere but in the workflow's name, which names
    # the MCP prompt (ASCII: bad-workflow-name, tests/test_scaffold.py)
    texts = {k: v + (" \u05e9\u05dc\u05d5\u05dd caf\u00e9 \U0001f600" if k != "name" else "") for k, v in PLAIN.items()}
    texts["const"] = '"c \u05e9\u05dc\u05d5\u05dd"'
    wf, diags = parse(FLOW.format(**texts), "f.yaml")
    assert [d for d in diags if d.severity == "error"] == []


# ------------------------------------------------- YAML 1.1 and 1.2 read a gate's values the same (issue 17, item 4)

GATED = """\
name: close
description: Close an account when the approver says so.
arguments: [{{name: answer}}, {{name: n, type: integer}}]
tools:
  - {{name: close, annotations: {{destructiveHint: true}}, input_schema: {{type: object, properties: {{x: {{}}}}}}}}
steps:
  - name: close
    tool: close
    args: {{x: {{const: {const}}}}}
    when: {{arg: answer, {op}: {operand}}}
"""


def gated(operand: str = '"yes"', op: str = "equals", const: str = '"c"') -> list[tuple]:
    _, diags = parse(GATED.format(operand=operand, op=op, const=const), "g.yaml")
    return [(d.code, d.span.line, d.span.col, d.message, d.hint) for d in diags]


def test_not_equals_no_is_refused_with_the_quoted_form_in_the_hint():
    assert gated("no", "not_equals") == [
        (
            "ambiguous-scalar",
            10,
            37,
            "'not_equals' in the condition of step 'close' is the unquoted 'no': YAML 1.1 reads it as false, YAML 1.2 "
            'as "no"',
            'quote it to mean the text: "no"; or write false for the boolean',
        )
    ]


# text -> (YAML 1.1 as PyYAML reads it, YAML 1.2 core), for the plain scalars the two versions read differently
DIFFERENT = {
    "no": (False, "no"),
    "No": (False, "No"),
    "NO": (False, "NO"),
    "yes": (True, "yes"),
    "Yes": (True, "Yes"),
    "on": (True, "on"),
    "On": (True, "On"),
    "ON": (True, "ON"),
    "off": (False, "off"),
    "010": (8, 10),
    "-010": (-8, -10),
    "0o17": ("0o17", 15),
    "1:30": (90, "1:30"),
    "190:20:30": (685230, "190:20:30"),
    "1_000": (1000, "1_000"),
    "0b1": (1, "0b1"),
    "-0b11": (-3, "-0b11"),
    "0x_1F": (31, "0x_1F"),
    "-0x1F": (-31, "-0x1F"),
    "1e3": ("1e3", 1000.0),
    "1.5e3": ("1.5e3", 1500.0),
    "1E-2": ("1E-2", 0.01),
    "08": ("08", 8),
    "09.5": (9.5, 9.5),
    "1_000.5": (1000.5, "1_000.5"),
    "2026-01-01": ("2026-01-01", "2026-01-01"),
}
SAME = [
    "y",
    "n",
    "Y",
    "N",
    "true",
    "True",
    "FALSE",
    "null",
    "~",
    "0",
    "-0",
    "00",
    "+1",
    "12",
    "0x1F",
    "1.",
    ".5",
    "1.0",
    "-2.5",
    "1.0e+3",
    "tRUE",
    "nO",
    "yes!",
    "onion",
    "no way",
    "0o",
    "x",
]


def _literal(v):
    import json

    return json.dumps(v)


@pytest.mark.parametrize("text", sorted(DIFFERENT))
def test_a_plain_operand_that_the_versions_read_differently_is_refused(text):
    v11, v12 = DIFFERENT[text]
    if yaml12.same_value(v11, v12):
        assert gated(text) == []
        return
    found = gated(text)
    assert [(c, line, col) for c, line, col, _, _ in found] == [("ambiguous-scalar", 10, 33)]
    message, hint = found[0][3:]
    assert message == (
        f"'equals' in the condition of step 'close' is the unquoted '{text}': YAML 1.1 reads it as "
        f"{_literal(v11)}, YAML 1.2 as {_literal(v12)}"
    )
    assert hint.startswith(f'quote it to mean the text: "{text}"; or write ')
    assert gated(f'"{text}"') == [] and gated(f"'{text}'") == []  # quoted: a string under both
    # the same text, quoted, is what YAML 1.2 readers and PyYAML agree on
    assert yaml.safe_load(f'v: "{text}"')["v"] == yaml12.load_core(f'v: "{text}"')["v"] == text


@pytest.mark.parametrize("text", SAME)
def test_a_plain_operand_both_versions_read_alike_is_fine(text):
    assert gated(text) == []
    assert gated(f"[{text}]", "in") == []


def test_the_hints_name_each_reading_to_write_instead():
    hints = {text: gated(text)[0][4] for text in ("yes", "010", "0o17", "1:30", "1e3")}
    assert hints == {
        "yes": 'quote it to mean the text: "yes"; or write true for the boolean',
        "010": 'quote it to mean the text: "010"; or write 8 or 10 for a number',
        "0o17": 'quote it to mean the text: "0o17"; or write 15 for the number',
        "1:30": 'quote it to mean the text: "1:30"; or write 90 for the number',
        "1e3": 'quote it to mean the text: "1e3"; or write 1000.0 for the number',
    }


def test_every_item_of_a_list_operand_and_every_operator_is_checked():
    found = gated("[yes, 'no', 8, 010]", "in")
    assert [(c, line, col) for c, line, col, _, _ in found] == [
        ("ambiguous-scalar", 10, 30),
        ("ambiguous-scalar", 10, 44),
    ]
    assert found[0][3].startswith("'in' in the condition of step 'close' is the unquoted 'yes'")
    for op in ("not_equals", "not_in", "exists"):
        operand = "[on]" if op == "not_in" else "on"
        assert [f[0] for f in gated(operand, op)] == ["ambiguous-scalar"], op


def test_constants_in_step_args_are_checked_to_any_depth_keys_included():
    found = gated(const='{a: [1, {b: off}], 0o17: "x", "010": 010}')
    assert [(c, line, col) for c, line, col, _, _ in found] == [
        ("ambiguous-scalar", 9, 35),
        ("ambiguous-scalar", 9, 42),
        ("ambiguous-scalar", 9, 60),
    ]
    assert found[0][3] == (
        "the constant of 'args.x' of step 'close' is the unquoted 'off': YAML 1.1 reads it as "
        'false, YAML 1.2 as "off"'
    )
    assert found[1][3] == (
        "a key in the constant of 'args.x' of step 'close' is the unquoted '0o17': YAML 1.1 reads "
        'it as "0o17", YAML 1.2 as 15'
    )
    assert gated(const='{a: [1, {b: "off"}], "0o17": "x", "010": "010"}') == []


def test_a_template_constant_and_a_field_path_are_checked_too():
    text = """\
name: t
description: d
arguments: [{name: region}]
tools:
  - {name: look, annotations: {readOnlyHint: true}}
steps:
  - {name: a, tool: look, bind: found}
  - name: read
    resources: ["docs://{r}/{k}"]
    template: {r: {const: 1_0}, k: {step: found, field: 010}}
    when: {step: found, field: 0o1, equals: 1}
"""
    _, diags = parse(text, "t.yaml")
    diags = sorted(diags, key=lambda d: (d.span.line, d.span.col))
    assert [(d.code, d.span.line, d.span.col) for d in diags] == [
        ("ambiguous-scalar", 10, 27),
        ("ambiguous-scalar", 10, 57),
        ("ambiguous-scalar", 11, 32),
    ]
    assert [d.message.split(" is ")[0] for d in diags] == [
        "the constant of 'template.r' of step 'read'",
        "'field' of 'template.k' of step 'read'",
        "'field' of the condition of step 'read'",
    ]


def test_an_explicit_str_tag_means_the_text_under_both_versions():
    assert gated("!!str no") == [] and gated("!!str 0o17") == []
    assert [f[0] for f in gated("!!int 010")] == ["ambiguous-scalar"]  # !!int: 8 under 1.1, 10 under 1.2
    assert gated("!!int 12") == [] and gated("!!float 1") == []


def test_only_gate_and_tool_values_are_checked():
    # a description, a name or guidance is text under both versions' readers in the places the loader reads it
    wf, diags = parse(
        GATED.format(operand="'yes'", op="equals", const='"c"').replace(
            "Close an account when the approver says so.", "'no'"
        ),
        "g.yaml",
    )
    assert diags == []


def test_a_workflow_file_over_the_source_limit_is_refused_before_it_is_read(tmp_path, monkeypatch):
    """load.read_regular is bounded.read_regular's: the size is checked before any byte is read."""
    from projector import load
    from projector.errors import LoadError

    p = tmp_path / "big.yaml"
    p.write_bytes(b"x" * 11)
    monkeypatch.setattr(load, "MAX_SOURCE_BYTES", 10)
    with pytest.raises(LoadError) as info:
        load.read_regular(p, "big.yaml")
    (d,) = info.value.diagnostics
    assert (str(d.span), d.code, d.message, d.hint) == (
        "big.yaml",
        "io",
        "cannot read the file: it is 11 bytes, over the limit of 10",
        None,
    )
    monkeypatch.setattr(load, "MAX_SOURCE_BYTES", 11)
    assert load.read_regular(p, "big.yaml") == b"x" * 11


def test_a_fifo_named_as_a_workflow_is_an_io_error_with_the_hint(tmp_path):
    import os

    from projector import load
    from projector.errors import LoadError

    p = tmp_path / "w.yaml"
    os.mkfifo(p)
    with pytest.raises(LoadError) as info:
        load.read_regular(p, "w.yaml")
    (d,) = info.value.diagnostics
    assert (d.code, d.message, d.hint) == (
        "io",
        "cannot read the file: it is a FIFO, not a regular file",
        "name workflow files (*.yaml) or folders that hold them",
    )


# ---------------------------------------------------------------------- fast paths

# The reader: with and without its fast paths.

_PIECES = [
    "a",
    "yes",
    "No",
    "on",
    "~",
    "null",
    "0o17",
    "1e3",
    "12",
    "-1",
    ".5",
    "true",
    "x y",
    "é",
    "\u200b",
    "'q'",
    '"d"',
    "!!str 12",
    "!!int 12",
    "!!str yes",
    "&a v",
    "*a",
    "<<",
    "",
    "nan",
    ".inf",
    "0x1f",
    "2001-12-14",
    "[1, yes]",
    "{k: 0o17}",
    "|\n  block",
    ">-\n  fold",
    "Done!",
    "a*b",
    "<< : {x: 1}",
]


def _yaml_texts() -> st.SearchStrategy[str]:
    """Small YAML documents of mappings and lists whose keys and values are the pieces above: every scalar style,
    the YAML 1.1 and 1.2 traps, tags, anchors, aliases, merge keys and duplicate keys."""
    scalar = st.sampled_from(_PIECES)
    key = st.sampled_from(
        ["a", "b", "yes", "0o17", "1e3", "n", "'a'", '"b"', "!!str 12", "12", "null", "~", "<<", "é", "tool", "on"]
    )

    def block(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        entry = st.tuples(key, st.one_of(scalar, children))
        mapping = st.lists(entry, min_size=1, max_size=4).map(
            lambda es: "\n".join(
                f"{k}:" + ("\n" + _indent(v) if "\n" in v or v.endswith(":") else f" {v}") for k, v in es
            )
        )
        sequence = st.lists(st.one_of(scalar, children), min_size=1, max_size=3).map(
            lambda vs: "\n".join("-" + ("\n" + _indent(v) if "\n" in v else f" {v}") for v in vs)
        )
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


class _Str(str):
    pass


def _flat(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [x for k, v in value.items() for x in (k, *_flat(v))]
    if isinstance(value, list):
        return [x for v in value for x in _flat(v)]
    return [value]
