"""A workflow prompt's arguments, from the strings ``prompts/get`` carries to the values the workflow declares.

The runner (:mod:`projector.server.workflow`) converts every argument here before a step runs; a bad value is
``-32602`` (Invalid params) naming the argument, on every framework. :class:`Missing` is why a value a step needs
could not be had (an optional argument not given, a result not saved); the runner and its confirmations both read it.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from ..model import Argument

# A typed argument's text must be the one canonical text of its value: what the condition checks and what a
# {placeholder} passes on are then the same. int() and float() also read "1_2", "012", " 12\n" and fullwidth digits,
# so a gate would check 12 while the tool got "acct-1_2"; such texts are refused, with the canonical form to write.
_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)", re.ASCII)
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?", re.ASCII)  # JSON's number grammar


@dataclass(frozen=True)
class Missing:
    """Why a value could not be resolved."""

    reason: str


def canonical_text(value: Any) -> str:
    """The one text of a typed argument's value: ``true``, ``12``, ``-0.25``, ``1e+300``. A whole number is written
    without a fraction below 10**16 (``12.0`` is ``12``); other floats as Python's shortest round-trip repr."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e16:
            return str(int(value))
        return repr(value)
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)


def _read_number(text: str) -> Any:
    """int or float as Python reads them (leniently: underscores, spaces, any Unicode digits), or None."""
    try:
        return int(text, 10)
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            return None
        return value if math.isfinite(value) else None


def convert_argument(arg: Argument, raw: Any, named: str = "") -> Any:
    """A prompt argument arrives as a string; give it the workflow's declared type. Bad values are ``-32602``: text
    that is not the type, and text of the type that is not its canonical form (:func:`canonical_text`). ``named``:
    what the argument was given to, as the message names it (``prompt 'refund_flow'``, ``the tool 'refund_flow'``)."""
    try:
        return _convert(arg, raw)
    except _Invalid as exc:
        given = f" for {named}" if named else ""
        raise MCPError(
            code=INVALID_PARAMS, message=f"Invalid argument {arg.name!r}{given}: {exc}", data={"argument": arg.name}
        ) from None


def _convert(arg: Argument, raw: Any) -> Any:
    if arg.type in (None, "string"):
        if not isinstance(raw, str):
            raise _bad_argument(arg, raw, "a string")
        return raw
    if not isinstance(raw, str):  # a client that sends JSON values: the value itself is unambiguous
        return _convert_value(arg, raw)
    if arg.type == "boolean":
        if raw in ("true", "false"):
            return raw == "true"
        if raw.strip().lower() in ("true", "false"):
            raise _not_canonical(arg, raw, "a boolean", raw.strip().lower())
        raise _bad_argument(arg, raw, "a boolean (true or false)")
    if arg.type == "integer":
        if _INTEGER.fullmatch(raw) and raw != "-0":
            return int(raw, 10)
        try:
            value = int(raw, 10)
        except ValueError:
            raise _bad_argument(arg, raw, "an integer") from None
        raise _not_canonical(arg, raw, "an integer", canonical_text(value))
    # number
    if _NUMBER.fullmatch(raw):
        number = _read_number(raw)
        if number is None:  # 1e999: beyond a float
            raise _bad_argument(arg, raw, "a finite number")
        if canonical_text(number) == raw:
            return number
        raise _not_canonical(arg, raw, "a number", canonical_text(number))
    number = _read_number(raw)
    if number is None:
        raise _bad_argument(arg, raw, "a finite number" if _is_float(raw) else "a number")
    raise _not_canonical(arg, raw, "a number", canonical_text(number))


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _convert_value(arg: Argument, raw: Any) -> Any:
    if arg.type == "boolean":
        if isinstance(raw, bool):
            return raw
        raise _bad_argument(arg, raw, "a boolean (true or false)")
    if (
        isinstance(raw, bool)
        or not isinstance(raw, (int, float))
        or (arg.type == "integer" and not isinstance(raw, int))
    ):
        raise _bad_argument(arg, raw, "an integer" if arg.type == "integer" else "a number")
    if isinstance(raw, float) and not math.isfinite(raw):
        raise _bad_argument(arg, raw, "a finite number")
    return raw


class _Invalid(Exception):
    """What is wrong with an argument's value; :func:`convert_argument` words the error around it."""


def _bad_argument(arg: Argument, raw: Any, what: str) -> _Invalid:
    return _Invalid(f"{raw!r} is not {what}")


def _not_canonical(arg: Argument, raw: str, what: str, canonical: str) -> _Invalid:
    return _Invalid(f"{raw!r} is not the canonical form of {what}; write {canonical}")
