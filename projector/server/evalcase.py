"""The server one derived eval case runs against: ``project-skill serve projector.server.evalcase:server``.

A derived case (:mod:`projector.evals`) states what the tools return where a condition reads it (``check_eligibility``
says ``{"eligible": false}``), and grades the run from which tools the server was asked to call, with which
arguments. The demo server's tools answer from their own store, so they cannot play a case; this server can. It
offers the tools the served workflows declare (names, descriptions, input schemas and annotations as written), each
answering with the result the case states for it (its steps' results in order, the last one repeated), or else a
value made from the tool's output schema; and the resources their steps read, as short placeholder texts. Every call
is appended to the case's record file (one JSON line: the tool and its arguments) before it is answered: the record
is the server's account of what happened, and the grader reads it, never the model's transcript.

``project-skill serve`` attaches the skills and the workflow to it as to any other server, so the model meets the
same skills, prompts and checks as on a real one. The case comes from a JSON file named by the environment variable
:data:`ENV` (written by :mod:`projector.matrix.evalruns`): ``{"tools": [...], "resources": [...], "results": {tool:
[value, ...]}, "record": path}``. It is read with a bound, and the server refuses to start on anything else.
"""

from __future__ import annotations

import inspect
import json
import os
import re
from pathlib import Path
from typing import Any

import mcp_types as types

from ..errors import UsageError
from . import adapters

ENV = "PROJECTOR_EVAL_CASE"
MAX_SPEC_BYTES = 4 * 1024 * 1024
_VARIABLE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


class CaseGone(Exception):
    """Never raised: the forwarding server's 'upstream gone' error, which a case server has no use for."""


def example(schema: Any, depth: int = 0) -> Any:
    """A value of a tool's output schema, for a result the case does not state: each declared property, a sample
    of its type (nested objects to a depth of 3)."""
    if not isinstance(schema, dict) or depth > 3:
        return {}
    kind = schema.get("type")
    if kind == "object" or isinstance(schema.get("properties"), dict):
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        return {
            name: example(sub, depth + 1)
            if isinstance(sub, dict) and sub.get("type") in ("object", "array")
            else _scalar(name, sub)
            for name, sub in props.items()
        }
    if kind == "array":
        return []
    return _scalar("value", schema)


def _scalar(name: str, schema: Any) -> Any:
    kind = schema.get("type") if isinstance(schema, dict) else None
    return {"integer": 1, "number": 1, "boolean": True, "null": None}.get(kind, f"example-{name}")


def read_spec(path: str) -> dict[str, Any]:
    """The case file, read with a bound; a :class:`UsageError` naming it when it is not one."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_SPEC_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the eval case: {exc.strerror}") from None
    if len(data) > MAX_SPEC_BYTES:
        raise UsageError(f"{path}: the eval case is larger than {MAX_SPEC_BYTES} bytes")
    try:
        spec = json.loads(data)
    except ValueError as exc:
        raise UsageError(f"{path}: the eval case is not JSON: {exc}") from None
    if not isinstance(spec, dict) or not isinstance(spec.get("tools"), list) or not isinstance(spec.get("record"), str):
        raise UsageError(f"{path}: the eval case needs 'tools' (a list) and 'record' (a path)")
    return spec


def _placeholder(uri: str) -> Any:
    """A resource's reader: a short text, taking the template's variables as its parameters."""
    names = _VARIABLE.findall(uri)

    def read(**values: str) -> str:
        return f"The resource {uri} of this eval case ({json.dumps(values, sort_keys=True)})."

    read.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, annotation=str) for n in names], return_annotation=str
    )
    read.__annotations__ = {**{n: str for n in names}, "return": str}
    return read


def server() -> Any:
    """The case's server (an MCPServer), from the file named by :data:`ENV`."""
    path = os.environ.get(ENV)
    if not path:
        raise UsageError(f"the eval case server needs {ENV} set to a case file (projector.matrix.evalruns writes one)")
    spec = read_spec(path)
    record = Path(spec["record"])
    results: dict[str, list[Any]] = {k: list(v) for k, v in (spec.get("results") or {}).items() if isinstance(v, list)}
    tools = [types.Tool.model_validate(t) for t in spec["tools"]]
    schemas = {t.name: t.output_schema for t in tools}
    answered: dict[str, int] = {}

    async def forward(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        with record.open("a", encoding="utf-8") as fh:  # the record first: a call that fails later still happened
            fh.write(json.dumps({"tool": name, "arguments": arguments}, sort_keys=True) + "\n")
        stated = results.get(name) or []
        n = answered.get(name, 0)
        answered[name] = n + 1
        value = stated[min(n, len(stated) - 1)] if stated else example(schemas.get(name))
        text = json.dumps(value, sort_keys=True)
        structured = value if isinstance(value, dict) else None
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=structured)

    adapter = adapters.get("mcp")
    made = adapter.forwarding_server(
        "projector-eval-case", [t.model_copy(update={"output_schema": None}) for t in tools], forward, CaseGone
    )
    for uri in sorted(set(spec.get("resources") or [])):
        adapter.add_resource(
            made,
            uri,
            _placeholder(uri),
            name=uri,
            mime_type="text/plain",
            description="A placeholder of this eval case.",
        )
    return made
