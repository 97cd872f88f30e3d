"""JSON text with the json module's exact bytes, faster: orjson for the values it writes identically.

``json.dumps`` with ``indent`` runs a pure-Python encoder; orjson is a well-kept C extension several times faster.
Both are asked for the same layout (``indent`` 2 or none, ``", "``/``": "`` separators, UTF-8 as is, keys sorted or
in insertion order). orjson is used only for values it writes byte for byte as ``json.dumps`` does: strings,
booleans, null and 64-bit integers, in string-keyed objects and lists. Floats (another shortest-repr algorithm:
``1e-7`` against ``1e-07``; NaN as null), integers past 64 bits and non-string keys go to ``json.dumps``.
tests/test_render.py checks the two against each other on random values.
"""

from __future__ import annotations

import json
from typing import Any

# Importing orjson (a large extension module) costs more than it saves on a few texts: the first texts of a run go
# through json, and orjson is imported only once a run has many to write. Either way the bytes are the same.
ORJSON_FROM = 64
_calls = 0
_orjson: Any = None


def _fast() -> Any:
    global _calls, _orjson
    if _orjson is None:
        _calls += 1
        if _calls < ORJSON_FROM:
            return None
        try:
            import orjson
        except ImportError:  # pragma: no cover - a declared dependency; without it, json gives the same bytes
            orjson = False
        _orjson = orjson
    return _orjson or None


# Values orjson writes as json.dumps does whatever they hold, by exact type (int is not: its range counts).
_SAFE_LEAVES = frozenset({str, bool, type(None)})


def same_in_orjson(value: Any) -> bool:
    """Whether orjson writes ``value`` byte for byte as ``json.dumps`` does (see the module's docstring)."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return True
    if kind is dict:
        for k, v in value.items():
            if type(k) is not str:
                return False
            if type(v) not in _SAFE_LEAVES and not same_in_orjson(v):  # a string (most values) needs no call
                return False
        return True
    if kind is list:
        for v in value:
            if type(v) not in _SAFE_LEAVES and not same_in_orjson(v):
                return False
        return True
    if kind is int:
        return -(2**63) <= value < 2**64
    return False


def json_text(value: Any, *, indent: int | None, sort_keys: bool) -> str:
    """``json.dumps(value, indent=indent, sort_keys=sort_keys, ensure_ascii=False)`` with ``(",", ": ")``
    separators when indented and ``(",", ":")`` when not; the same text."""
    fast = _fast()
    if fast is not None and indent in (2, None) and same_in_orjson(value):
        option = (fast.OPT_INDENT_2 if indent else 0) | (fast.OPT_SORT_KEYS if sort_keys else 0)
        return fast.dumps(value, option=option).decode("utf-8")
    return json.dumps(value, indent=indent, sort_keys=sort_keys, ensure_ascii=False,
                      separators=(",", ": ") if indent else (",", ":"))
