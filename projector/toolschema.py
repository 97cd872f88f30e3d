"""What a tool's JSON Schema says, as far as the fit checks (:mod:`projector.fit`) and the scaffold read it: the
declared property names, whether an object schema is open to other names, the JSON types a schema admits, whether
a field path into a tool's result exists in its output schema, and whether a step's arguments are valid against its
input schema (:func:`argument_errors`: its constants at build, every call's arguments in a server-side run). Plain
functions over JSON values; nothing here knows workflows.

A schema's regular expressions (``pattern``, the names of ``patternProperties``) come from a workflow file or a
server, and the text they meet (a step's constant, a parameter's name) from a workflow file: both are hostile. So they
are never given to Python's ``re``, which backtracks (``^(a+)+$`` against 41 characters takes minutes), but to RE2
(``google-re2``), which matches in time linear in the text and bounds a compiled pattern's memory:
:func:`search`, and :func:`linear_validator` for ``jsonschema``. A pattern RE2 cannot read (lookaround,
backreferences, ``\\Z``) cannot be matched safely, so what it would decide is not guessed (:class:`Unchecked`).
RE2's syntax is closer to the ECMA-262 dialect JSON Schema names than Python's: ``\\d`` and ``\\w`` are ASCII, and
``$`` is the end of the text (not also before a final line break). Where RE2 differs, the pattern is translated
(:func:`ecma_dots`): its ``.`` also matches ``\\r``, U+2028 and U+2029, which ECMA's does not, so a constant that a
TypeScript server would refuse could pass.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Sequence
from contextvars import ContextVar
from typing import Any

from .errors import suggest


def properties(schema: Any) -> dict[str, Any]:
    props = schema.get("properties") if isinstance(schema, dict) else None
    return props if isinstance(props, dict) else {}


def open_to(schema: dict[str, Any], name: str) -> bool:
    """Whether an object schema with declared ``properties`` also accepts the name ``name``."""
    extra = schema.get("additionalProperties")
    if extra is True or isinstance(extra, dict) and extra != {"not": {}}:
        return True
    patterns = schema.get("patternProperties")
    if isinstance(patterns, dict):
        for rx in patterns:
            try:
                if search(rx, name):
                    return True
            except (Unchecked, TypeError):
                return True  # a pattern that cannot be matched safely: do not guess
    return False


# ------------------------------------------------------------------------------------------- regular expressions


class Unchecked(Exception):
    """A schema's regular expression that cannot be matched in linear time (RE2 cannot read it, or the text is not
    Unicode): what it would decide is not guessed."""


# ECMA-262's ``.``: any character but the line terminators. RE2's also matches \r, U+2028 and U+2029.
_ECMA_DOT = "[^\\n\\r\\x{2028}\\x{2029}]"


def _skip_class_start(pattern: str, i: int) -> int:
    """The index after the opening of the character class at ``i`` (``[``, ``[^``), and after a ``]`` right there,
    which RE2 reads as a literal."""
    i += 1
    if pattern.startswith("^", i):
        i += 1
    return i + 1 if pattern.startswith("]", i) else i


def ecma_dots(pattern: str) -> str:
    """``pattern`` for RE2 with each ``.`` outside a character class (and outside RE2's ``\\Q...\\E`` and escapes)
    written as :data:`_ECMA_DOT`, so that it matches what ECMA-262's ``.`` matches. One pass over the pattern."""
    out: list[str] = []
    i, n, in_class = 0, len(pattern), False
    while i < n:
        c = pattern[i]
        if pattern.startswith("\\Q", i):  # RE2's literal text, to \E (or the end)
            end = pattern.find("\\E", i + 2)
            j = n if end < 0 else end + 2
        elif c == "\\":
            j = i + 2
        elif in_class and pattern.startswith("[:", i) and (end := pattern.find(":]", i + 2)) >= 0:
            j = end + 2  # a POSIX class inside a class: [[:alpha:]]
        elif in_class:
            in_class = c != "]"
            j = i + 1
        elif c == "[":
            in_class, j = True, _skip_class_start(pattern, i)
        else:
            out.append(_ECMA_DOT if c == "." else c)
            i += 1
            continue
        out.append(pattern[i:j])
        i = j
    return "".join(out)


# The work one validation may do (:func:`argument_errors`): each keyword a validator applies costs one, and each
# regular expression matched its size times its text's over :data:`_PATTERN_UNIT` (RE2 is linear in the text, but a
# pattern too large for its DFA is matched in time proportional to both). Past it the schema is not checked here (:class:`Unchecked`):
# a hostile one (thirty nested ``anyOf`` levels are 2**30 paths) would hold the server's event loop.
MAX_WORK = 50_000
_PATTERN_UNIT = 100
_WORK: ContextVar[list[int] | None] = ContextVar("projector_schema_work", default=None)


def _spend(cost: int) -> None:
    work = _WORK.get()
    if work is not None:
        work[0] -= cost
        if work[0] < 0:
            raise Unchecked("the schema takes too much work to check")


def _charged(keyword: Any) -> Any:
    """A validator's keyword function that spends one unit of the validation's work (:data:`MAX_WORK`) first."""

    def charged(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        _spend(1)
        return keyword(validator, value, instance, schema)

    return charged


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> Any:
    import re2  # lazy: only a schema with a pattern pays for the import

    options = re2.Options()
    options.log_errors = False  # RE2 would print its own parse errors to stderr
    try:
        return re2.compile(ecma_dots(pattern), options)
    except re2.error:
        return None


def search(pattern: Any, text: str) -> bool:
    """Whether the regular expression ``pattern`` matches somewhere in ``text``, as JSON Schema's ``pattern`` asks,
    in time linear in ``text`` (RE2). Raises :class:`Unchecked` for a pattern RE2 cannot read, and TypeError for one
    that is not a string (a broken schema)."""
    if not isinstance(pattern, str):
        raise TypeError(f"a regular expression must be a string, not {pattern!r}")
    _spend(len(pattern) * len(text) // _PATTERN_UNIT)  # within a validation's work (argument_errors), if in one
    compiled = _compiled(pattern)
    if compiled is None:
        raise Unchecked(pattern)
    try:
        return compiled.search(text) is not None
    except UnicodeEncodeError:  # a lone surrogate: RE2 reads UTF-8 only
        raise Unchecked(pattern) from None


def _mentions(schema: Any, keyword: str) -> bool:
    """Whether ``keyword`` is a key anywhere in ``schema`` (a JSON value, walked without recursion)."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if keyword in node:
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


# ------------------------------------------------------------------------------------------- plain constants

# The root keywords of a plain object schema (:func:`plainly_valid`) and the keywords of a plain property schema:
# ``type`` and keywords that only annotate.
_PLAIN_ROOT = frozenset({"type", "properties", "required", "additionalProperties", "description", "title"})
_PLAIN_PROPERTY = frozenset({"type", "description", "title", "default", "examples"})
# A constant's Python type -> the JSON Schema types it is, as JSON Schema 2020-12 (jsonschema's default draft) sees it.
_JSON_TYPES: dict[type, frozenset[str]] = {
    str: frozenset({"string"}),
    bool: frozenset({"boolean"}),
    int: frozenset({"integer", "number"}),
    float: frozenset({"number"}),
    type(None): frozenset({"null"}),
    dict: frozenset({"object"}),
    list: frozenset({"array"}),
}


_TYPE_NAMES = frozenset().union(*_JSON_TYPES.values())


def _plain_property_accepts(subschema: Any, value: Any) -> bool:
    if subschema is True:
        return True
    if type(subschema) is not dict or not _PLAIN_PROPERTY.issuperset(subschema):
        return False
    if "type" not in subschema:
        return True
    kinds = _JSON_TYPES.get(type(value), frozenset())
    named = subschema["type"]
    if type(named) is str:
        return named in kinds
    # every name a type (an unknown one is the validator's to report, wherever it stands in the list)
    return type(named) is list and _TYPE_NAMES.issuperset(named) and not kinds.isdisjoint(named)


def plainly_valid(schema: dict[str, Any], consts: dict[str, Any]) -> bool:
    """Whether JSON Schema validation of ``consts`` (parameter name -> constant) against the tool's input schema
    ``schema`` finds nothing under any of the names, known without building a validator: the schema is a plain
    object schema (no ``$schema``, so 2020-12; the root keywords :data:`_PLAIN_ROOT`, ``type`` absent or
    ``"object"``, ``required`` a list of names, ``additionalProperties`` a boolean or a schema), each name is one of
    its ``properties``, and its property schema is ``true`` or only a ``type`` (a name or a list of names) that the
    constant is, beside annotations. Anything else (a ``pattern``, an ``enum``, a ``$ref``, a type the constant is
    not) is for the validator, which says why."""
    if not _PLAIN_ROOT.issuperset(schema) or schema.get("type", "object") != "object":
        return False
    required = schema.get("required", [])
    if type(required) is not list or not all(type(n) is str for n in required):
        return False
    if type(schema.get("additionalProperties", True)) not in (bool, dict):
        return False
    props = schema.get("properties")
    if type(props) is not dict:
        return False
    return all(name in props and _plain_property_accepts(props[name], v) for name, v in consts.items())


def _plural(names: Sequence[str]) -> str:
    return ", ".join(repr(n) for n in names) + (" was" if len(names) == 1 else " were")


def _invalid(message: str) -> Any:
    from jsonschema.exceptions import ValidationError  # lazy, as in projector.fit: only constants need jsonschema

    return ValidationError(message)


def _pattern(validator: Any, rx: Any, instance: Any, schema: Any) -> Any:
    if validator.is_type(instance, "string") and not search(rx, instance):
        yield _invalid(f"{instance!r} does not match {rx!r}")


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Any:
    if validator.is_type(instance, "object"):
        for rx, subschema in patterns.items():
            for k, v in instance.items():
                if search(rx, k):
                    yield from validator.descend(v, subschema, path=k, schema_path=rx)


def _additional_properties(validator: Any, extra: Any, instance: Any, schema: Any) -> Any:
    if not validator.is_type(instance, "object"):
        return
    props, patterns = schema.get("properties", {}), schema.get("patternProperties", {})
    extras = sorted((k for k in instance if k not in props and not any(search(rx, k) for rx in patterns)), key=str)
    if validator.is_type(extra, "object"):
        for k in extras:
            yield from validator.descend(instance[k], extra, path=k)
    elif not extra and extras and patterns:
        verb = "does" if len(extras) == 1 else "do"
        yield _invalid(
            f"{', '.join(map(repr, extras))} {verb} not match any of the regexes: "
            f"{', '.join(map(repr, sorted(patterns)))}"
        )
    elif not extra and extras:
        yield _invalid(f"Additional properties are not allowed ({_plural(extras)} unexpected)")


def _unevaluated_guard(original: Any) -> Any:
    """``unevaluatedProperties`` reaches ``patternProperties`` through jsonschema's own helpers, which use ``re``:
    beside ``patternProperties``, it is :class:`Unchecked` for an object with keys."""

    def unevaluated(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        if validator.is_type(instance, "object") and instance:
            raise Unchecked("unevaluatedProperties beside patternProperties")
        yield from original(validator, value, instance, schema)

    return unevaluated


@functools.cache
def _linear_class(base: Any, guard_unevaluated: bool) -> Any:
    """``base`` (a jsonschema validator class) with every keyword that matches a regular expression matching it by
    :func:`search`; with ``guard_unevaluated`` (the schema has both), ``unevaluatedProperties`` guarded too."""
    from jsonschema.validators import extend

    keywords = {
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
    }
    original = base.VALIDATORS.get("unevaluatedProperties")
    if guard_unevaluated and original is not None:
        keywords["unevaluatedProperties"] = _unevaluated_guard(original)
    every = {**base.VALIDATORS, **keywords}
    return extend(base, {name: _charged(fn) for name, fn in every.items()})


def linear_validator(base: Any, schema: Any) -> Any:
    """The jsonschema validator class ``base`` (chosen for ``schema``) with its regular expressions matched by RE2
    (:func:`search`), so validating a hostile text against a hostile pattern takes linear time. Validation raises
    :class:`Unchecked` where a pattern cannot be matched safely."""
    return _linear_class(base, _mentions(schema, "unevaluatedProperties") and _mentions(schema, "patternProperties"))


# ------------------------------------------------------------------------------------------- values against a schema

_VALIDATORS: dict[str, Any] = {}


def _validator(schema: dict[str, Any]) -> Any:
    """A JSON Schema validator for ``schema``, shared by every step whose tool has the same schema (the same tool is
    usually declared in several workflow files, and a served tool is checked at every run)."""
    import jsonschema  # lazy: only a workflow with constants, or a run, pays for the import
    from jsonschema.validators import validator_for

    key = json.dumps(schema, sort_keys=True, default=str)
    found = _VALIDATORS.get(key)
    if found is None:
        if len(_VALIDATORS) > 1024:
            _VALIDATORS.clear()
        cls = linear_validator(validator_for(schema, default=jsonschema.Draft202012Validator), schema)
        found = _VALIDATORS[key] = cls(schema)
    return found


def _not_finite(value: Any) -> float | None:
    """The first NaN or infinity anywhere in ``value`` (a JSON value, walked without recursion), or None. JSON has
    neither, and a JSON Schema ``number`` admits both, so they are refused here."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            return node
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, (list, tuple)):
            stack.extend(node)
    return None


def argument_errors(schema: dict[str, Any], values: dict[str, Any]) -> dict[str, str] | str:
    """Validate a step's arguments (parameter name -> value) at once against the tool's whole input schema (so
    ``$ref`` and ``$defs`` resolve), keeping the errors under each argument's own name: name -> the first error
    message, or a string when the schema itself is broken where the values meet it. A number that is not finite
    (NaN, an infinity) is refused under its name whatever the schema says: JSON cannot carry it. ``build`` checks a
    step's constants with it (:mod:`projector.fit`), and the server-side run every call's arguments.

    The schema is not checked against its meta-schema first: that costs a hundred times the validation, for every
    tool of every file. A schema that is broken where a value is checked (an unknown type, an unresolvable ``$ref``,
    a keyword with a value of the wrong kind) still stops the validator, and is reported. A pattern RE2 cannot read
    refuses nothing (:class:`Unchecked`: what it decides is not guessed)."""
    odd = {name: _not_finite(v) for name, v in values.items()}
    found: dict[str, str] = {name: f"{v!r} is not a finite number" for name, v in odd.items() if v is not None}
    if plainly_valid(schema, values):
        return found
    from jsonschema.exceptions import UnknownType

    work = _WORK.set([MAX_WORK])
    try:
        validator = _validator(schema)
        for err in sorted(validator.iter_errors(values), key=lambda e: (list(map(str, e.absolute_path)), e.message)):
            path = list(err.absolute_path)
            if path and path[0] in values and path[0] not in found:
                found[str(path[0])] = err.message
        return found
    except Unchecked:
        return found
    except UnknownType as exc:
        return f"unknown type {exc.type!r}"
    except Exception as exc:  # noqa: BLE001 - an unresolvable $ref, a keyword of the wrong kind: the schema's fault
        text = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return text if len(text) <= 160 else text[:157] + "..."
    finally:
        _WORK.reset(work)


# What an object schema says about its names as a whole, beside each property's own schema; with where ``$ref``s in
# ``propertyNames`` resolve.
_NAME_KEYWORDS = ("propertyNames", "$defs", "definitions", "$schema", "$id")


def _names_refused(schema: dict[str, Any], names: Sequence[str]) -> dict[str, str]:
    """Name -> why ``propertyNames`` refuses it, by the linear-time validator (a pattern RE2 cannot read, or a broken
    schema, refuses nothing: what it decides is not guessed)."""
    if not names or not isinstance(schema.get("propertyNames"), (dict, bool)):
        return {}
    import jsonschema  # lazy, as in projector.fit
    from jsonschema.validators import validator_for

    names_schema = {k: schema[k] for k in _NAME_KEYWORDS if k in schema}
    refused: dict[str, str] = {}
    try:
        cls = linear_validator(validator_for(names_schema, default=jsonschema.Draft202012Validator), names_schema)
        for err in cls(names_schema).iter_errors(dict.fromkeys(names)):
            if isinstance(err.instance, str) and err.instance in names:
                refused.setdefault(err.instance, err.message)
    except Exception:  # noqa: BLE001 - Unchecked, a broken schema (bad-input-schema where constants meet it)
        return {}
    return refused


def object_problems(
    schema: dict[str, Any], given: Sequence[str], checked: Sequence[str], tool: str
) -> list[tuple[str, str | None, str, str]]:
    """What the object keywords of the input schema of ``tool`` refuse in the parameter names a step gives
    (``given``; the names of ``checked`` against ``propertyNames``): ``(code, the name it is about or None, what the
    step does, to be said after its label, a hint)``."""
    out: list[tuple[str, str | None, str, str]] = [
        (
            "unknown-parameter",
            name,
            f"passes '{name}', a name the tool '{tool}' does not accept: {message}",
            "the tool's input schema limits its parameter names (propertyNames)",
        )
        for name, message in _names_refused(schema, checked).items()
    ]
    dependent = schema.get("dependentRequired")
    for name, needs in dependent.items() if isinstance(dependent, dict) else ():
        if name in given and isinstance(needs, list):
            out.extend(
                (
                    "missing-parameter",
                    None,
                    f"gives '{name}' but not '{need}', which the tool '{tool}' requires with it",
                    f"add it under args, or leave out '{name}'",
                )
                for need in needs
                if isinstance(need, str) and need not in given
            )
    most = schema.get("maxProperties")
    if isinstance(most, int) and not isinstance(most, bool) and len(given) > most:
        out.append(
            (
                "unknown-parameter",
                None,
                f"passes {len(given)} parameters, but the tool '{tool}' takes at most {most}",
                "leave out the parameters the step does not need",
            )
        )
    return out


def json_type(value: Any) -> str:
    """The JSON type of a JSON value, as JSON Schema names it: a ``bool`` is a boolean (never an integer), an ``int``
    an integer, a ``float`` a number (whole or not: a caller that counts ``1.0`` as an integer, as JSON Schema does,
    says so itself)."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "null" if value is None else "array" if isinstance(value, list) else "object"


def json_types(schema: Any) -> set[str] | None:
    """The JSON types a schema admits, or None when it does not say (no ``type``, or a branch without one)."""
    if not isinstance(schema, dict):
        return None
    if "type" in schema:
        declared = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        kinds = {t for t in declared if isinstance(t, str)}
        if "number" in kinds:
            kinds.add("integer")
        return kinds
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            out: set[str] = set()
            for b in branches:
                kinds = json_types(b)
                if kinds is None:
                    return None
                out |= kinds
            return out
    return None


def type_words(kinds: set[str]) -> str:
    shown = sorted(kinds - {"integer"} if "number" in kinds else kinds)
    return " or ".join(shown)


_MAX_REFS = 64


def _deref(schema: Any, root: Any, budget: list[int]) -> Any:
    """Follow local ``$ref``s (``#/...``); anything else, or a cycle, gives None (unknown)."""
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        ref = schema["$ref"]
        budget[0] -= 1
        if budget[0] < 0 or not ref.startswith("#"):
            return None
        node: Any = root
        for part in [p for p in ref[1:].split("/") if p]:
            part = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return None
        schema = node
    return schema


def field_problem(
    schema: Any, path: Sequence[str | int], root: Any = None, budget: list[int] | None = None
) -> str | None:
    """Why ``path`` is not in ``schema`` (a message), or None when it is, or when the schema does not say."""
    root = schema if root is None else root
    budget = [_MAX_REFS] if budget is None else budget
    done: list[str | int] = []
    for i, part in enumerate(path):
        schema = _deref(schema, root, budget)
        if not isinstance(schema, dict):
            return None
        for key in ("anyOf", "oneOf", "allOf"):
            branches = schema.get(key)
            if isinstance(branches, list) and branches and not properties(schema) and "items" not in schema:
                problems = [field_problem(b, path[i:], root, budget) for b in branches]
                if any(p is None for p in problems):
                    return None
                return problems[0]
        where = f"'{'.'.join(map(str, done))}'" if done else "the result"
        kinds = json_types(schema)
        if isinstance(part, int) and (
            "prefixItems" in schema or "items" in schema or kinds is not None and "array" in kinds
        ):
            prefix = schema.get("prefixItems")
            if isinstance(prefix, list) and part < len(prefix):
                schema = prefix[part]
            elif isinstance(schema.get("items"), dict):
                schema = schema["items"]
            elif schema.get("items") is False:
                return f"{where} has no item {part}"
            else:
                return None
        elif kinds is not None and "object" not in kinds and not (isinstance(part, int) and "array" in kinds):
            return f"{where} is {type_words(kinds)}, so it has no field '{part}'"
        else:
            props = properties(schema)
            name = str(part)
            if name in props:
                schema = props[name]
            elif isinstance(schema.get("additionalProperties"), dict):
                schema = schema["additionalProperties"]
            elif props and not open_to(schema, name):
                close = suggest(name, props)
                return (
                    f"{where} has no field '{name}'"
                    + (f" ({close})" if close else "")
                    + f"; its fields: {', '.join(sorted(props))}"
                )
            else:
                return None
        done.append(part)
    return None


def wraps_result(output_schema: Any) -> bool:
    """Whether a tool's output schema is the SDKs' ``{"result": x}`` envelope for a result that is not an object.
    A step saves ``x`` itself then (the server-side run unwraps it), so field paths start inside ``result``."""
    return isinstance(output_schema, dict) and set(properties(output_schema)) == {"result"}


def field_schema(schema: Any, path: Sequence[str | int], root: Any = None) -> Any:
    """The schema of the value at ``path`` in a value of ``schema`` (a dict), or None when the schema does not say:
    a path through ``anyOf``/``oneOf``/``allOf`` branches, a ``$ref`` that resolves nowhere, a name it does not
    declare, a name beside ``patternProperties``. What the build knows of a result's field before any run (its type, its ``enum``), so None means "could
    be anything"."""
    root = schema if root is None else root
    budget = [_MAX_REFS]
    schema = _deref(schema, root, budget)
    for part in path:
        if not isinstance(schema, dict):
            return None
        if isinstance(part, int) and str(part) not in properties(schema):
            prefix = schema.get("prefixItems")
            items = schema.get("items")
            schema = prefix[part] if isinstance(prefix, list) and part < len(prefix) else items
        else:
            props = properties(schema)
            name = str(part)
            if name not in props and schema.get("patternProperties"):
                return None  # a pattern may name it: what it says is not guessed
            schema = props.get(name) if name in props else schema.get("additionalProperties")
        schema = _deref(schema, root, budget)
    return schema if isinstance(schema, dict) else None
