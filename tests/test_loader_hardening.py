"""Round two of the loader's hardening (issue 17): the alias bomb is refused before any expansion, and what a
plain scalar means must not depend on the YAML version where it reaches a condition or a tool."""

from __future__ import annotations

import tracemalloc
import unicodedata

import pytest

import yaml

from projector import positioned, yaml12
from projector.load import parse

# The first round's alias bomb: ten lines, over five million nodes once expanded.
BOMB = "\n".join(["name: bomb", 'a: &a ["x","x","x","x","x","x","x","x","x"]']
                 + [f"{c}: &{c} [{', '.join(['*' + p] * 9)}]" for p, c in zip("abcdef", "bcdefg")]
                 + ["description: d", "steps: [{name: s, tool: t}]"]) + "\n"


def test_the_bomb_is_ten_lines_of_nested_aliases():
    assert len(BOMB.splitlines()) == 10 and BOMB.count("*") == 54


def test_the_alias_bomb_is_refused_visiting_each_node_once(monkeypatch):
    calls = 0
    real = positioned.Reader._convert

    def counting(self, *args, **kwargs):
        nonlocal calls
        calls += 1
        if calls > 10_000:  # far past every node of the text: it is walking the expansion
            raise AssertionError("the loader walks the expanded aliases")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(positioned.Reader, "_convert", counting)
    tracemalloc.start()
    try:
        wf, diags = parse(BOMB, "bomb.yaml")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # each node of the text once: the document, its 10 values, the 9 + 6 * 9 list items (an alias is not followed:
    # it becomes null), and the step mapping with its 2 values
    assert calls == 1 + 10 + 9 + 6 * 9 + 1 + 2
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
PLAIN = {"name": "flow", "title": "Flow", "description": "d", "arg": "a", "arg_description": "an argument",
         "instruction": "be kind", "tool_description": "a tool", "step": "s", "const": "c", "guidance": "go on"}
# (field, line, col) of where each text's problem is reported: the nearest position the model keeps
WHERE = {"name": (1, 7), "title": (2, 8), "description": (3, 14), "arg": (5, 5), "arg_description": (5, 5),
         "instruction": (8, 5), "tool_description": (11, 5), "step": (15, 5), "const": (17, 15),
         "guidance": (18, 15)}
WHAT = {"name": "the workflow name", "title": "the title", "description": "the description",
        "arg": "the name of argument 'a{c}'", "arg_description": "the description of argument 'a'",
        "instruction": "an instruction", "tool_description": "the description of tool 't'",
        "step": "the name of step 's{c}'", "const": "the constant of step 's', 'y'",
        "guidance": "the guidance of step 's'"}
# every bidi control and zero-width character, and the other invisible format characters that are refused everywhere
EVERYWHERE = ["\u061c", "\u180e", "\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u202a", "\u202b", "\u202c",
              "\u202d", "\u202e", "\u2060", "\u2061", "\u2062", "\u2063", "\u2064", "\u2066", "\u2067", "\u2068",
              "\u2069", "\u206a", "\u206f", "\ufeff", "\ufff9", "\ufffb", "\U000e0001", "\U000e0041", "\U000e007f"]


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
    assert message.endswith(f"contains the invisible format character U+{ord(char):04X}" + (f" ({name})" if name
                                                                                             else ""))
    assert hint == ("remove it: a bidirectional control or an invisible character makes a text read differently "
                    "from what it holds")


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
    # the MCP prompt (ASCII: bad-workflow-name, tests/test_init.py)
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
    assert gated("no", "not_equals") == [(
        "ambiguous-scalar", 10, 37,
        "'not_equals' in the condition of step 'close' is the unquoted 'no': YAML 1.1 reads it as false, YAML 1.2 "
        'as "no"',
        'quote it to mean the text: "no"; or write false for the boolean')]


# text -> (YAML 1.1 as PyYAML reads it, YAML 1.2 core), for the plain scalars the two versions read differently
DIFFERENT = {"no": (False, "no"), "No": (False, "No"), "NO": (False, "NO"), "yes": (True, "yes"),
             "Yes": (True, "Yes"), "on": (True, "on"), "On": (True, "On"), "ON": (True, "ON"), "off": (False, "off"),
             "010": (8, 10), "-010": (-8, -10), "0o17": ("0o17", 15), "1:30": (90, "1:30"),
             "190:20:30": (685230, "190:20:30"), "1_000": (1000, "1_000"), "0b1": (1, "0b1"),
             "-0b11": (-3, "-0b11"), "0x_1F": (31, "0x_1F"), "-0x1F": (-31, "-0x1F"), "1e3": ("1e3", 1000.0),
             "1.5e3": ("1.5e3", 1500.0), "1E-2": ("1E-2", 0.01), "08": ("08", 8), "09.5": (9.5, 9.5),
             "1_000.5": (1000.5, "1_000.5"), "2026-01-01": ("2026-01-01", "2026-01-01")}
SAME = ["y", "n", "Y", "N", "true", "True", "FALSE", "null", "~", "0", "-0", "00", "+1", "12", "0x1F", "1.", ".5",
        "1.0", "-2.5", "1.0e+3", "tRUE", "nO", "yes!", "onion", "no way", "0o", "x"]


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
    assert message == (f"'equals' in the condition of step 'close' is the unquoted '{text}': YAML 1.1 reads it as "
                       f"{_literal(v11)}, YAML 1.2 as {_literal(v12)}")
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
    assert hints == {"yes": 'quote it to mean the text: "yes"; or write true for the boolean',
                     "010": 'quote it to mean the text: "010"; or write 8 or 10 for a number',
                     "0o17": 'quote it to mean the text: "0o17"; or write 15 for the number',
                     "1:30": 'quote it to mean the text: "1:30"; or write 90 for the number',
                     "1e3": 'quote it to mean the text: "1e3"; or write 1000.0 for the number'}


def test_every_item_of_a_list_operand_and_every_operator_is_checked():
    found = gated("[yes, 'no', 8, 010]", "in")
    assert [(c, line, col) for c, line, col, _, _ in found] == [("ambiguous-scalar", 10, 30),
                                                                 ("ambiguous-scalar", 10, 44)]
    assert found[0][3].startswith("'in' in the condition of step 'close' is the unquoted 'yes'")
    for op in ("not_equals", "not_in", "exists"):
        operand = "[on]" if op == "not_in" else "on"
        assert [f[0] for f in gated(operand, op)] == ["ambiguous-scalar"], op


def test_constants_in_step_args_are_checked_to_any_depth_keys_included():
    found = gated(const='{a: [1, {b: off}], 0o17: "x", "010": 010}')
    assert [(c, line, col) for c, line, col, _, _ in found] == [
        ("ambiguous-scalar", 9, 35), ("ambiguous-scalar", 9, 42), ("ambiguous-scalar", 9, 60)]
    assert found[0][3] == ("the constant of 'args.x' of step 'close' is the unquoted 'off': YAML 1.1 reads it as "
                           'false, YAML 1.2 as "off"')
    assert found[1][3] == ("a key in the constant of 'args.x' of step 'close' is the unquoted '0o17': YAML 1.1 reads "
                           'it as "0o17", YAML 1.2 as 15')
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
        ("ambiguous-scalar", 10, 27), ("ambiguous-scalar", 10, 57), ("ambiguous-scalar", 11, 32)]
    assert [d.message.split(" is ")[0] for d in diags] == [
        "the constant of 'template.r' of step 'read'", "'field' of 'template.k' of step 'read'",
        "'field' of the condition of step 'read'"]


def test_an_explicit_str_tag_means_the_text_under_both_versions():
    assert gated("!!str no") == [] and gated("!!str 0o17") == []
    assert [f[0] for f in gated("!!int 010")] == ["ambiguous-scalar"]  # !!int: 8 under 1.1, 10 under 1.2
    assert gated("!!int 12") == [] and gated("!!float 1") == []


def test_only_gate_and_tool_values_are_checked():
    # a description, a name or guidance is text under both versions' readers in the places the loader reads it
    wf, diags = parse(GATED.format(operand="'yes'", op="equals", const='"c"').replace(
        "Close an account when the approver says so.", "'no'"), "g.yaml")
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
        "big.yaml", "io", "cannot read the file: it is 11 bytes, over the limit of 10", None)
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
    assert (d.code, d.message, d.hint) == ("io", "cannot read the file: it is a FIFO, not a regular file",
                                           "name workflow files (*.yaml) or folders that hold them")
