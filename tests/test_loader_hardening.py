"""Round two of the loader's hardening (issue 17): the alias bomb is refused before any expansion, and what a
plain scalar means must not depend on the YAML version where it reaches a condition or a tool."""

from __future__ import annotations

import tracemalloc
import unicodedata

import pytest

from projector import load
from projector.load import parse

# The first round's alias bomb: ten lines, over five million nodes once expanded.
BOMB = "\n".join(["name: bomb", 'a: &a ["x","x","x","x","x","x","x","x","x"]']
                 + [f"{c}: &{c} [{', '.join(['*' + p] * 9)}]" for p, c in zip("abcdef", "bcdefg")]
                 + ["description: d", "steps: [{name: s, tool: t}]"]) + "\n"


def test_the_bomb_is_ten_lines_of_nested_aliases():
    assert len(BOMB.splitlines()) == 10 and BOMB.count("*") == 54


def test_the_alias_bomb_is_refused_visiting_each_node_once(monkeypatch):
    calls = 0
    real = load._Reader._convert

    def counting(self, *args, **kwargs):
        nonlocal calls
        calls += 1
        if calls > 10_000:  # far past every node of the text: it is walking the expansion
            raise AssertionError("the loader walks the expanded aliases")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(load._Reader, "_convert", counting)
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
    # emoji, accents and right-to-left scripts themselves are fine everywhere
    texts = {k: v + " \u05e9\u05dc\u05d5\u05dd caf\u00e9 \U0001f600" for k, v in PLAIN.items()}
    texts["const"] = '"c \u05e9\u05dc\u05d5\u05dd"'
    wf, diags = parse(FLOW.format(**texts), "f.yaml")
    assert [d for d in diags if d.severity == "error"] == []
