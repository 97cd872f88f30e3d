"""Step conditions (``when:``): the one evaluator, pure and shared by every server-side runner.

A condition is data: a subject (a prompt argument, an earlier result, or one field of it), one operator and a JSON
operand. Nothing is evaluated as code. The rules:

- values compare as JSON values: ``1 == 1.0``, but ``true != 1`` and ``"1" != 1``; lists compare item by item and
  objects key by key;
- ``in`` and ``not_in`` take a list, and test membership with that equality;
- ``exists: true`` holds when the subject has a value (``null`` is a value); ``exists: false`` when it has none;
- a subject with no value (a missing field, an optional argument that was not given, a result that was never saved)
  fails every condition except ``exists: false``, which it satisfies.

The runner (:mod:`projector.server.workflow`, and any framework adapter over it) calls :func:`first_failure` just
before a step runs, and words what it found with :func:`failure_text`. The SKILL.md states the same conditions in
plain words (:mod:`projector.render`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from .model import Condition, FromArg, FromStep

OPERATORS = ("equals", "not_equals", "in", "not_in", "exists")
LIST_OPERATORS = ("in", "not_in")
ON_FAIL = ("stop", "skip")


class _Missing:
    """The value of a subject that has none."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


def json_equal(a: Any, b: Any) -> bool:
    """Equality of two JSON values: numbers by value (``1 == 1.0``), never a boolean with a number, never a string
    with anything else; lists item by item, objects key by key."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) or isinstance(b, (int, float)):
        return isinstance(a, (int, float)) and isinstance(b, (int, float)) and a == b
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return False


def holds(op: str, operand: Any, value: Any) -> bool:
    """Whether ``value`` (or :data:`MISSING`) satisfies ``op operand``."""
    if op == "exists":
        return (value is not MISSING) == bool(operand)
    if value is MISSING:
        return False
    if op == "equals":
        return json_equal(value, operand)
    if op == "not_equals":
        return not json_equal(value, operand)
    if op == "in":
        return any(json_equal(value, item) for item in operand)
    if op == "not_in":
        return not any(json_equal(value, item) for item in operand)
    raise ValueError(f"unknown operator {op!r}")  # the loader and the builder refuse it first


def field_value(value: Any, path: tuple[str | int, ...]) -> Any:
    """One field of a result by its dot path (list indexes as numbers), or :data:`MISSING`."""
    for part in path:
        if isinstance(value, dict) and str(part) in value:
            value = value[str(part)]
        elif isinstance(value, list) and isinstance(part, int) and part < len(value):
            value = value[part]
        else:
            return MISSING
    return value


def subject_value(subject: FromArg | FromStep, arguments: Mapping[str, Any], results: Mapping[str, Any]) -> Any:
    """The subject's value, from the typed prompt arguments given and the results saved so far, or :data:`MISSING`."""
    if isinstance(subject, FromArg):
        return arguments.get(subject.name, MISSING)
    if subject.bind not in results:
        return MISSING
    return field_value(results[subject.bind], subject.path)


@dataclass(frozen=True)
class Check:
    """One condition and the value it saw (:data:`MISSING` when there was none)."""

    condition: Condition
    seen: Any
    ok: bool


def check(condition: Condition, lookup: Callable[[FromArg | FromStep], Any]) -> Check:
    seen = lookup(condition.subject)
    return Check(condition, seen, holds(condition.op, condition.value, seen))


def first_failure(conditions: tuple[Condition, ...] | list[Condition], arguments: Mapping[str, Any],
                  results: Mapping[str, Any]) -> Check | None:
    """The first condition that does not hold, in the order written, or None when all hold."""
    for cond in conditions:
        found = check(cond, lambda s: subject_value(s, arguments, results))
        if not found.ok:
            return found
    return None


# ---------------------------------------------------------------------------------------------------- in words

MAX_SEEN = 120


def literal(value: Any) -> str:
    """A JSON value as compact text with sorted keys (the same on every machine)."""
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(", ", ": "))


def _short(value: Any) -> str:
    text = literal(value)
    return text if len(text) <= MAX_SEEN else text[:MAX_SEEN - 1] + "…"


def subject_label(subject: FromArg | FromStep) -> str:
    """The subject as the transcript names it: ``the argument `reason```, ```eligibility.eligible```."""
    if isinstance(subject, FromArg):
        return f"the argument `{subject.name}`"
    return f"`{subject.bind}.{subject.field}`" if subject.field is not None else f"`{subject.bind}`"


def requirement(cond: Condition) -> str:
    """What the step needs, after "the step needs": ```true```, ``one of `"a"`, `"b"` ``, ``it to be absent``."""
    if cond.op == "equals":
        return f"`{literal(cond.value)}`"
    if cond.op == "not_equals":
        return f"anything but `{literal(cond.value)}`"
    if cond.op in LIST_OPERATORS:
        items = ", ".join(f"`{literal(v)}`" for v in cond.value) or "nothing"
        return ("one of " if cond.op == "in" else "none of ") + items
    return "it" if cond.value else "it to be absent"


def failure_text(found: Check) -> str:
    """One line: the subject, the value actually seen, and what the step needs.

    ```eligibility.eligible` is `false`, the step needs `true```"""
    subject = subject_label(found.condition.subject)
    if found.seen is MISSING:
        seen = "was not given" if isinstance(found.condition.subject, FromArg) else "is missing"
    else:
        seen = f"is `{_short(found.seen)}`"
    return f"{subject} {seen}, the step needs {requirement(found.condition)}"


def statement(cond: Condition) -> str:
    """The condition as a short statement, for the plan: ```eligibility.eligible` is `true```."""
    subject = subject_label(cond.subject)
    if cond.op == "equals":
        return f"{subject} is `{literal(cond.value)}`"
    if cond.op == "not_equals":
        return f"{subject} is not `{literal(cond.value)}`"
    if cond.op in LIST_OPERATORS:
        items = ", ".join(f"`{literal(v)}`" for v in cond.value) or "nothing"
        return f"{subject} is {'one' if cond.op == 'in' else 'none'} of {items}"
    if isinstance(cond.subject, FromArg):
        return f"{subject} {'is given' if cond.value else 'is not given'}"
    return f"{subject} {'exists' if cond.value else 'does not exist'}"
