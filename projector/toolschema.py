"""What a tool's JSON Schema says, as far as the fit checks (:mod:`projector.fit`) and the scaffold read it: the
declared property names, whether an object schema is open to other names, the JSON types a schema admits, and whether
a field path into a tool's result exists in its output schema. Plain functions over JSON values; nothing here knows
workflows.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
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
                if re.search(rx, name):
                    return True
            except re.error:
                return True  # a pattern Python cannot read: do not guess
    return False


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


def field_problem(schema: Any, path: Sequence[str | int], root: Any = None, budget: list[int] | None = None
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
        if isinstance(part, int) and ("prefixItems" in schema or "items" in schema
                                      or kinds is not None and "array" in kinds):
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
                return (f"{where} has no field '{name}'" + (f" ({close})" if close else "")
                        + f"; its fields: {', '.join(sorted(props))}")
            else:
                return None
        done.append(part)
    return None


def wraps_result(output_schema: Any) -> bool:
    """Whether a tool's output schema is the SDKs' ``{"result": x}`` envelope for a result that is not an object.
    A step saves ``x`` itself then (the server-side run unwraps it), so field paths start inside ``result``."""
    return isinstance(output_schema, dict) and set(properties(output_schema)) == {"result"}
