"""How the gate check finds a saved result named in a text (projector.gates.ResultNames), pinned where the mutation
run found it loose (scripts/mutation gates, issue 20)."""

from __future__ import annotations

import pytest

from projector.gates import ResultNames


def _names(*pairs: tuple[str, str]) -> ResultNames:
    names = ResultNames()
    for name, bind in pairs:
        names.add(name, bind)
    return names


@pytest.mark.parametrize("text, named", [
    ("check the order first", "order"),
    ("check the order_total first", None),  # joined by "_" to a longer word: another name
    ("check the Order, then", "order"),
    ("check the order_", None),
    ("the order_total and the order", "order"),  # its first whole-word place counts
])
def test_a_name_followed_by_an_underscore_is_another_word(text, named):
    assert _names(("order", "order")).named(text) == named


@pytest.mark.parametrize("text, named", [
    ("after send refund email, confirm", "mail"),
    ("send refund email", "mail"),
    ("then send-refund-email now", "mail"),
    ("after send refund, confirm", None),
    ("after send refund sms, confirm", None),
    ("one two send refund email three four", "mail"),
])
def test_a_name_of_three_words_is_matched_word_after_word(text, named):
    assert _names(("send refund email", "mail")).named(text) == named
