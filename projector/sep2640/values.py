"""YAML and JSON values compared: whether SKILL.md's frontmatter says what its entry says, and how they differ.

A JSON entry and a YAML file carry the same frontmatter in two type systems, so equality is YAML's: 1 equals 1.0,
a boolean is no number, a timestamp (no JSON type) equals the string it is written as, and a key that one side has
and the other lacks is a difference even when the value is null. :func:`frontmatter_diff` is the one comparison;
``serve`` refuses a tree by it and the client words each difference (:func:`describe_value`, :func:`value_diff`).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from typing import Any

import yaml


def key_set_diff(a: Any, b: Any, path: str = "") -> list[str]:
    """The keys (dotted paths, sorted) present in one mapping and not the other, at any depth: a null value is a
    value, never the same as an absent key. Mappings nested in both sides, and sequences of the same length, are
    compared item by item."""
    out: list[str] = []
    if isinstance(a, dict) and isinstance(b, dict):
        ka = {json_key(k): v for k, v in a.items()}
        kb = {json_key(k): v for k, v in b.items()}
        for k in sorted(set(ka) | set(kb)):
            sub = f"{path}.{k}" if path else k
            if (k in ka) != (k in kb):
                out.append(sub)
            else:
                out.extend(key_set_diff(ka[k], kb[k], sub))
    elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            out.extend(key_set_diff(x, y, f"{path}.{i}" if path else str(i)))
    return out


def json_key(k: Any) -> str:
    """Mapping keys as JSON carries them: YAML may key by number, bool or null; JSON keys are strings."""
    if isinstance(k, str):
        return k
    if k is None:
        return "null"
    if isinstance(k, bool):
        return "true" if k else "false"
    if isinstance(k, float) and k.is_integer():
        return str(int(k))
    return str(k)


def _date_equal(d: _dt.date, s: str) -> bool:
    """A YAML timestamp has no JSON type, so a JSON entry carries it as a string; equal if it parses to the same."""
    try:
        other = yaml.safe_load(s)
    except yaml.YAMLError:
        return False
    return type(other) is type(d) and other == d


def yaml_equal(a: Any, b: Any) -> bool:
    """Equality of YAML/JSON values: 1 == 1.0; booleans are not numbers; every null is equal, and a missing mapping
    key equals null; mappings compare key by key, sequences item by item, recursively."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        return a == b
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    if isinstance(a, _dt.date) and isinstance(b, str):
        return _date_equal(a, b)
    if isinstance(b, _dt.date) and isinstance(a, str):
        return _date_equal(b, a)
    if isinstance(a, _dt.date) and isinstance(b, _dt.date):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return not mapping_diff(a, b)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(yaml_equal(x, y) for x, y in zip(a, b))
    return False


def mapping_diff(a: dict[Any, Any], b: dict[Any, Any]) -> list[str]:
    """The keys (as strings, sorted) whose values differ; a key missing on one side counts as null there."""
    ka = {json_key(k): v for k, v in a.items()}
    kb = {json_key(k): v for k, v in b.items()}
    if len(ka) != len(a) or len(kb) != len(b):  # two keys that JSON cannot tell apart: never equal
        return sorted(set(ka) | set(kb))
    return sorted(k for k in set(ka) | set(kb) if not yaml_equal(ka.get(k), kb.get(k)))


MISSING = object()  # a mapping key that is not there, told apart from a null value


def _text_keys(value: Any) -> Any:
    """``value`` with every mapping key as the text JSON writes for it (``1`` as ``"1"``, ``True`` as ``"true"``, a
    date as its ISO form), so that a mapping whose keys mix types (YAML allows it) can be sorted and shown."""
    if isinstance(value, dict):
        return {
            k
            if isinstance(k, str)
            else json.dumps(k)
            if k is None or isinstance(k, (bool, int, float))
            else str(k): _text_keys(v)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [_text_keys(v) for v in value]
    return value


def describe_value(value: Any, limit: int = 60) -> str:
    """A YAML/JSON value with its type, for a message: ``string 'yes'``, ``boolean true``, ``integer 15``. Text is
    escaped (no control characters reach the terminal) and cut to ``limit`` characters."""
    if value is MISSING:
        return "missing"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {'true' if value else 'false'}"
    if isinstance(value, int):
        return f"integer {value}"
    if isinstance(value, float):
        return f"number {value!r}"
    if isinstance(value, str):
        shown = "".join(("\\" + c) if c in "\\'" else c if c.isprintable() else repr(c)[1:-1] for c in value[:limit])
        return f"string '{shown}{'...' if len(value) > limit else ''}'"
    if isinstance(value, _dt.datetime):
        return f"timestamp {value.isoformat()}"
    if isinstance(value, _dt.date):
        return f"date {value.isoformat()}"
    text = json.dumps(_text_keys(value), ensure_ascii=True, sort_keys=True, default=str)
    kind = "mapping" if isinstance(value, dict) else "sequence" if isinstance(value, (list, tuple)) else "value"
    return f"{kind} {text[:limit]}{'...' if len(text) > limit else ''}"


def value_diff(a: Any, b: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """Where two YAML/JSON values differ: ``(dotted path, a's value, b's value)``, mappings followed key by key."""
    if isinstance(a, dict) and isinstance(b, dict):
        ka = {json_key(k): v for k, v in a.items()}
        kb = {json_key(k): v for k, v in b.items()}
        if len(ka) == len(a) and len(kb) == len(b):
            out = []
            for k in sorted(set(ka) | set(kb)):
                va, vb = ka.get(k, MISSING), kb.get(k, MISSING)
                if not yaml_equal(None if va is MISSING else va, None if vb is MISSING else vb):
                    out.extend(value_diff(va, vb, f"{path}.{k}" if path else k))
            return out
    return [] if yaml_equal(a, b) else [(path, a, b)]


def frontmatter_diff(file: dict[str, Any], entry: Any) -> tuple[list[str], list[tuple[str, Any, Any]]]:
    """How a SKILL.md's frontmatter (``file``) differs from its entry's: first the keys only one of them has (dotted
    paths, :func:`key_set_diff`), and only when there are none, the values that differ (:func:`value_diff`).
    Both empty: the two say the same."""
    keys = key_set_diff(file, entry)
    return (keys, []) if keys else ([], value_diff(file, entry))
