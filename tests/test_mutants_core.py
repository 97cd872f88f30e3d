"""Core behaviour pinned where the mutation run found it loose (scripts/mutation, issue 20): each test names the
target whose survivors it kills. They check what a user reads: the exact words, codes and refusals."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from projector import conditions
from projector.model import Condition, FromArg, FromStep

# ------------------------------------------------------------------------------------------------ conditions


@pytest.mark.parametrize("subject, op, value, needs", [
    (FromArg("a"), "equals", 1, "`1`"),
    (FromStep("r", "f"), "equals", "x", '`"x"`'),
    (FromArg("a"), "not_equals", None, "anything but `null`"),
    (FromStep("r"), "not_equals", [1], "anything but `[1]`"),
    (FromArg("a"), "in", [1, "b"], 'one of `1`, `"b"`'),
    (FromStep("r"), "in", [True], "one of `true`"),
    (FromArg("a"), "not_in", [{"k": 1}], 'none of `{"k": 1}`'),
    (FromStep("r", "f"), "not_in", [], "none of nothing"),
    (FromArg("a"), "exists", True, "it"),
    (FromArg("a"), "exists", False, "it to be absent"),
    (FromStep("r"), "exists", True, "it"),
    (FromStep("r", "f"), "exists", False, "it to be absent"),
])
def test_what_the_step_needs_for_every_operator_and_subject(subject, op, value, needs):
    """The runner's "the step needs ..." words (:func:`conditions.requirement`), for an argument and for a result
    alike, of every operator: ``exists`` says ``it`` or ``it to be absent`` whatever the subject."""
    assert conditions.requirement(Condition(subject, op, value)) == needs


@pytest.mark.parametrize("subject, op, value, args, results, line", [
    (FromArg("reason"), "exists", False, {"reason": "late"}, {},
     'the argument `reason` is `"late"`, the step needs it to be absent'),
    (FromStep("lookup"), "exists", True, {}, {}, "`lookup` is missing, the step needs it"),
    (FromStep("lookup", "order.id"), "exists", True, {}, {"lookup": {"order": {}}},
     "`lookup.order.id` is missing, the step needs it"),
])
def test_the_failure_line_of_an_exists_condition(subject, op, value, args, results, line):
    found = conditions.first_failure([Condition(subject, op, value)], args, results)
    assert found is not None
    assert conditions.failure_text(found) == line


def test_a_fixed_wording_is_the_same_for_every_operand_and_subject():
    words = conditions.Words("n {operand}", "p {subject}", "s {subject}")
    say = conditions._worded(words)
    assert [say(operand, of_argument) for operand in (1, [2], None) for of_argument in (True, False)] == [words] * 6


@pytest.mark.parametrize("op, value, text", [
    ("equals", {"b": 1, "a": "é"}, '<{"a": "é", "b": 1}>'),
    ("not_equals", "x", '<"x">'),
    ("in", [1, None], "<1>, <null>"),
    ("not_in", [], "nothing"),
    ("exists", True, ""),
    ("exists", False, ""),
])
def test_the_operand_as_a_rendering_writes_it(op, value, text):
    """A value by ``show``; a list as its items (``nothing`` when empty); a boolean not at all: the words of
    ``exists`` say it, so the operand is the empty text."""
    show = lambda v: f"<{conditions.literal(v)}>"  # noqa: E731
    assert conditions.operand_text(Condition(FromArg("a"), op, value), show) == text


def test_an_operator_of_an_unknown_kind_of_operand_is_not_rendered_silently(monkeypatch):
    """A new kind of operand added to the table without a rendering fails loudly, naming the kind, rather than
    render as nothing."""
    odd = conditions.Operator("bigger", "range", conditions._equals, conditions._never,  # type: ignore[arg-type]
                              conditions._worded(conditions.Words("{operand}", "{subject}", "{subject}")))
    monkeypatch.setattr(conditions, "OPERATORS", MappingProxyType({**conditions.OPERATORS, "bigger": odd}))
    with pytest.raises(AssertionError, match="'range'"):
        conditions.operand_text(Condition(FromArg("a"), "bigger", [1, 2]), conditions.literal)
