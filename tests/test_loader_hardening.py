"""Round two of the loader's hardening (issue 17): the alias bomb is refused before any expansion, and what a
plain scalar means must not depend on the YAML version where it reaches a condition or a tool."""

from __future__ import annotations

import tracemalloc

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
