"""Step conditions (``when:``): the one evaluator, pure and shared by every server-side runner.

A condition is data: a subject (a prompt argument, an earlier result, or one field of it), one operator and a JSON
operand. Nothing is evaluated as code. The rules:

- values compare as JSON values: ``1 == 1.0``, but ``true != 1`` and ``"1" != 1``; lists compare item by item and
  objects key by key;
- ``in`` and ``not_in`` take a list, and test membership with that equality;
- ``contains`` holds when the subject is a string that has the operand, a string, in it (case and spaces as
  written), or a list that has an item equal to the operand; never on another subject (a number, a boolean, an
  object, null). ``not_contains`` holds when the subject has a value and ``contains`` does not. So a text result
  ``"ready\n"`` contains ``ready``, and ``[1, 2]`` contains ``2``;
- ``exists: true`` holds when the subject has a value (``null`` is a value); ``exists: false`` when it has none;
- a subject with no value (a missing field, an optional argument that was not given, a result that was never saved)
  fails every condition except ``exists: false``, which it satisfies.

The operators are one table, :data:`OPERATORS`: each entry says what its operand must be, when it holds (with a
value and without one), how it is worded, and what its subject's type decides before any run (:class:`Typed`: which
operand values meet the subject, when one never can, and whether the condition then never holds or never fails).
The loader (:mod:`projector.shape`), the validator (:mod:`projector.validate`), the evaluator (:func:`holds`), the
build's ``dead-condition`` (:func:`never_decided`, for :mod:`projector.gates`) and both renderings
(:func:`requirement` and :func:`statement` here, :func:`projector.render.describe_condition` in the SKILL.md) read
it, so a new operator is one entry here plus its key in the JSON Schema (``tests/test_schema.py`` keeps the two
equal).

The runner (:mod:`projector.server.workflow`, and any framework adapter over it) calls :func:`first_failure` just
before a step runs, and words what it found with :func:`failure_text`. The SKILL.md states the same conditions in
plain words (:mod:`projector.render`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Literal, Mapping, NamedTuple, assert_never

from .model import Condition, FromArg, FromStep
from .toolschema import json_type

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


# ------------------------------------------------------------------------------------------------- the operators

Operand = Literal["value", "list", "bool"]  # what an operator's operand must be: any JSON value, a list, a boolean


class Words(NamedTuple):
    """How the three renderings say one condition: templates of ``{subject}`` and ``{operand}``."""

    needs: str  # what the step needs, after "the step needs" (the runner's failure line, :func:`requirement`)
    plan: str  # the plan's statement, the subject as the transcript names it (:func:`statement`)
    prose: str  # the SKILL.md's plain words (:func:`projector.render.describe_condition`)


@dataclass(frozen=True)
class Known:
    """What the build knows of a subject's values before any run (:func:`never_decided`): their JSON types (a prompt
    argument's declared type, the type an output schema gives a result or a field), every value it can have (an
    ``enum`` or ``const`` there), or that it is the whole result of a tool that returns text. None: not known."""

    kinds: frozenset[str] | None = None
    values: tuple[Any, ...] | None = None
    text: bool = False


@dataclass(frozen=True)
class Typed:
    """How an operator meets its subject's type, for the build's ``dead-condition`` (:func:`never_decided`).

    ``values``: the operand values the subject is compared with; ``mismatch``: why a subject of what is
    :class:`Known` can never match one of them, and the operand to write instead ("" when there is none to
    suggest), or None when it can; ``dead``: what follows when no value can match: the condition never holds
    (``"hold"``), or never fails while the subject has a value (``"fail"``). A new operator says these three things
    (an operator whose operand the type says nothing about, as ``exists``, has no ``Typed``)."""

    values: Callable[[Any], list[Any]]
    mismatch: Callable[[Known, Any], tuple[str, str] | None]
    dead: Literal["hold", "fail"]


@dataclass(frozen=True)
class Operator:
    """One operator of the condition language, everything any part of the tool needs to know about it."""

    name: str
    operand: Operand  # what the validator holds the operand to (projector.validate)
    test: Callable[[Any, Any], bool]  # (value, operand): whether a subject that has a value satisfies it
    absent: Callable[[Any], bool]  # (operand): whether a subject with no value satisfies it
    words: Callable[[Any, bool], Words]  # (operand, the subject is an argument): how it is said
    typed: Typed | None = None  # how the subject's type decides it before any run (dead-condition)
    # (operand): values of a subject that the derived evals try first (projector.evals), before the operand's own: for
    # an operator whose operand is not a value the subject takes (contains), ones for which it holds and fails
    samples: Callable[[Any], list[Any]] = lambda _operand: []


def _equals(value: Any, operand: Any) -> bool:
    return json_equal(value, operand)


def _not_equals(value: Any, operand: Any) -> bool:
    return not json_equal(value, operand)


def _one_of(value: Any, operand: Any) -> bool:
    return any(json_equal(value, item) for item in operand)


def _none_of(value: Any, operand: Any) -> bool:
    return not any(json_equal(value, item) for item in operand)


def _contains(value: Any, operand: Any) -> bool:
    if isinstance(value, str):
        return isinstance(operand, str) and operand in value
    return isinstance(value, list) and any(json_equal(item, operand) for item in value)


def _not_contains(value: Any, operand: Any) -> bool:
    return not _contains(value, operand)


def _containing(operand: Any) -> list[Any]:
    """Values that contain ``operand``: a text with it and a newline after (a file's last line), a list of it; and
    one that does not: the empty list."""
    return [f"{operand}\n", [operand], []] if isinstance(operand, str) else [[operand], []]


def _has_value(_value: Any, operand: Any) -> bool:
    return bool(operand)


def _never(_operand: Any) -> bool:
    """A subject with no value fails every condition but ``exists: false``."""
    return False


def _has_none(operand: Any) -> bool:
    return not operand


def _worded(words: Words) -> Callable[[Any, bool], Words]:
    """The same words whatever the operand and the subject."""
    return lambda _operand, _of_argument: words


def _exists_words(given: Any, of_argument: bool) -> Words:
    """``exists``: an argument is given or not (by the user, in the SKILL.md's words); a result or field exists."""
    if of_argument:
        return (
            Words("it", "{subject} is given", "the user gave {subject}")
            if given
            else Words("it to be absent", "{subject} is not given", "the user did not give {subject}")
        )
    return (
        Words("it", "{subject} exists", "{subject} is present")
        if given
        else Words("it to be absent", "{subject} does not exist", "{subject} is absent")
    )


# ------------------------------------------------------------------------ what a subject's type decides (dead-condition)

_KIND_WORDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "array": "a list",
    "object": "an object",
    "null": "null",
}


def _kind(value: Any) -> str:
    """A value's JSON type, a whole ``float`` (``1.0``) an integer as JSON Schema counts it."""
    kind = json_type(value)
    return "integer" if kind == "number" and value.is_integer() else kind


def _arg_mismatch(kinds: set[str], value: Any) -> str | None:
    """Instead of ``value``, the operand a subject of ``kinds`` could equal (as YAML text), or "" when there is none
    to suggest; None when ``value`` can be equal to such a subject."""
    kind = _kind(value)
    if kind in kinds:
        return None
    if "boolean" in kinds and isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower()
    if "string" in kinds and kind in ("integer", "number", "boolean"):
        return literal(literal(value))
    if kinds & {"integer", "number"} and isinstance(value, str):
        from .results import text_value

        number = text_value(value.strip())
        return literal(number) if _kind(number) in kinds else ""
    return ""


def _kinds_words(kinds: set[str]) -> str:
    shown = kinds - {"integer"} if "number" in kinds else kinds
    return " or ".join(sorted(_KIND_WORDS[k] for k in shown))


def _text_mismatch(value: Any) -> str | None:
    """For a text result: instead of the string ``value``, the operand it could equal (the JSON value its text reads
    as), or None when ``value`` can be equal to such a result."""
    from .results import text_value

    if not isinstance(value, str):
        return None
    read = text_value(value)
    return None if isinstance(read, str) and read == value else literal(read)


def _the_operand(operand: Any) -> list[Any]:
    return [operand]


def _its_items(operand: Any) -> list[Any]:
    return list(operand) if isinstance(operand, (list, tuple)) else []


def _unequal(known: Known, value: Any) -> tuple[str, str] | None:
    """Why a subject of what is ``known`` never equals ``value``, and the operand to write instead; None when it
    can: a value of another JSON type (``"true"`` against a boolean, a number against a string), one outside the
    values it can have (an ``enum``), or JSON text against the whole result of a tool that returns text, whose text
    is read as JSON when it is JSON (:mod:`projector.results`), so a string that is JSON text (``"[]"``) never
    equals it."""
    if known.kinds is not None:
        instead = _arg_mismatch(set(known.kinds), value)
        if instead is not None:
            return f"{_KIND_WORDS[_kind(value)]} never equals {_kinds_words(set(known.kinds))}", instead
    if known.values is not None and not any(json_equal(value, v) for v in known.values):
        return f"{literal(value)} is none of the values it can have ({_short(list(known.values))})", ""
    if known.text:
        instead = _text_mismatch(value)
        if instead is not None:
            return (
                f"its tool returns text, which is read as JSON when it is JSON: the text {value} is "
                f"{instead}, never the string {literal(value)}",
                instead,
            )
    return None


def _uncontained(known: Known, value: Any) -> tuple[str, str] | None:
    """Why a subject of what is ``known`` never contains ``value``, and the operand to write instead; None when it
    can: only a string (a string operand, as text) or a list (any operand, as an item) contains anything, and a
    subject with an ``enum`` contains it only if one of its values does."""
    kinds = set(known.kinds) if known.kinds is not None else None
    if kinds is not None and "array" not in kinds:
        if "string" not in kinds:
            return f"{_kinds_words(kinds)} contains nothing (only a string or a list does)", ""
        if not isinstance(value, str):
            instead = literal(literal(value)) if _kind(value) in ("integer", "number", "boolean") else ""
            return f"a string contains only text, never {_KIND_WORDS[_kind(value)]}", instead
    if known.values is not None and not any(_contains(v, value) for v in known.values):
        return f"none of the values it can have ({_short(list(known.values))}) contains {literal(value)}", ""
    return None


# The one table of operators, in the order messages list them. The loader (projector.shape), the validator, the
# evaluator (holds) and both renderings (requirement and statement here, describe_condition in projector.render) read
# it; the JSON Schema's condition lists exactly these keys (tests/test_schema.py keeps the two equal).
OPERATORS: Mapping[str, Operator] = MappingProxyType(
    {
        op.name: op
        for op in (
            Operator(
                "equals",
                "value",
                _equals,
                _never,
                _worded(Words("{operand}", "{subject} is {operand}", "{subject} is {operand}")),
                Typed(_the_operand, _unequal, "hold"),
            ),
            Operator(
                "not_equals",
                "value",
                _not_equals,
                _never,
                _worded(Words("anything but {operand}", "{subject} is not {operand}", "{subject} is not {operand}")),
                Typed(_the_operand, _unequal, "fail"),
            ),
            Operator(
                "in",
                "list",
                _one_of,
                _never,
                _worded(Words("one of {operand}", "{subject} is one of {operand}", "{subject} is one of {operand}")),
                Typed(_its_items, _unequal, "hold"),
            ),
            Operator(
                "not_in",
                "list",
                _none_of,
                _never,
                _worded(Words("none of {operand}", "{subject} is none of {operand}", "{subject} is none of {operand}")),
                Typed(_its_items, _unequal, "fail"),
            ),
            Operator(
                "contains",
                "value",
                _contains,
                _never,
                _worded(
                    Words("it to contain {operand}", "{subject} contains {operand}", "{subject} contains {operand}")
                ),
                Typed(_the_operand, _uncontained, "hold"),
                _containing,
            ),
            Operator(
                "not_contains",
                "value",
                _not_contains,
                _never,
                _worded(
                    Words(
                        "it not to contain {operand}",
                        "{subject} does not contain {operand}",
                        "{subject} does not contain {operand}",
                    )
                ),
                Typed(_the_operand, _uncontained, "fail"),
            ),
            Operator("exists", "bool", _has_value, _has_none, _exists_words),
        )
    }
)


def holds(op: str, operand: Any, value: Any) -> bool:
    """Whether ``value`` (or :data:`MISSING`) satisfies ``op operand``."""
    found = OPERATORS.get(op)
    if found is None:
        raise ValueError(f"unknown operator {op!r}")  # the loader and the builder refuse it first
    if value is MISSING:
        return found.absent(operand)
    return found.test(value, operand)


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


def first_failure(
    conditions: tuple[Condition, ...] | list[Condition], arguments: Mapping[str, Any], results: Mapping[str, Any]
) -> Check | None:
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
    return text if len(text) <= MAX_SEEN else text[: MAX_SEEN - 1] + "…"


def subject_label(subject: FromArg | FromStep) -> str:
    """The subject as the transcript names it: ``the argument `reason```, ```eligibility.eligible```."""
    if isinstance(subject, FromArg):
        return f"the argument `{subject.name}`"
    return f"`{subject.bind}.{subject.field}`" if subject.field is not None else f"`{subject.bind}`"


def _backticked(value: Any) -> str:
    return f"`{literal(value)}`"


def operand_text(cond: Condition, show: Callable[[Any], str]) -> str:
    """The operand of ``cond`` as a rendering writes it, each value by ``show``: a list as its items (``nothing``
    when empty), a boolean not at all (the words say it)."""
    kind = OPERATORS[cond.op].operand
    match kind:
        case "value":
            return show(cond.value)
        case "list":
            return ", ".join(show(v) for v in cond.value) or "nothing"
        case "bool":
            return ""
        case _:
            assert_never(kind)


def words(cond: Condition) -> Words:
    """The templates that say ``cond`` (:class:`Words`)."""
    return OPERATORS[cond.op].words(cond.value, isinstance(cond.subject, FromArg))


def requirement(cond: Condition) -> str:
    """What the step needs, after "the step needs": ```true```, ``one of `"a"`, `"b"` ``, ``it to be absent``."""
    return words(cond).needs.format(operand=operand_text(cond, _backticked))


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
    return words(cond).plan.format(subject=subject_label(cond.subject), operand=operand_text(cond, _backticked))


# ------------------------------------------------------------------------------------------- the build's warnings


def dead_end(cond: Condition) -> Literal["hold", "fail"] | None:
    """What follows when no operand value of ``cond`` can match its subject (:class:`Typed`), or None for an operator
    that its subject's type does not decide."""
    typed = OPERATORS[cond.op].typed
    return typed.dead if typed is not None else None


def never_decided(cond: Condition, known: Known) -> list[tuple[int, str, str]]:
    """The operand values of ``cond`` that its subject can never match, by what is :class:`Known` of it, as
    ``(index of the value, why, what to write instead)``; the operator's :class:`Typed` says which values are
    compared and how."""
    typed = OPERATORS[cond.op].typed
    if typed is None:
        return []
    out: list[tuple[int, str, str]] = []
    for i, value in enumerate(typed.values(cond.value)):
        found = typed.mismatch(known, value)
        if found is not None:
            out.append((i, *found))
    return out
