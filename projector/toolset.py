"""Tools as the core knows them: the tools snapshot (``tools.json``), and fitting workflows to a server's tools.

This is the offline half of ``--tools-from`` (:mod:`projector.remote.tools` holds the half that asks a live server,
and re-exports these names): a snapshot's bytes (:func:`snapshot_bytes`, the one format ``tools --out`` writes),
reading them back with a bound and every problem at ``file:line:col`` (:func:`read_snapshot`,
:func:`parse_snapshot`, :func:`parse_listing` for a listing given in Python), and :func:`merge_tools`, which takes
each workflow's tools from a source and says where the file and the source disagree (``tool-mismatch``). It is core:
it imports neither ``mcp`` nor the client, server or harness packages, so ``build --tools-from tools.json`` and the
builder's ``tools_from(snapshot or listing)`` run on the core alone. The rules themselves are described in
:mod:`projector.remote.tools`.
"""

from __future__ import annotations

import dataclasses
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from . import bounded
from .errors import Diagnostic, LoadError, Span
from .fit import check_steps, fill_declared, from_wire, undeclared_by, unknown_tool
from .model import Tool, Workflow
from .sep2640 import describe_value, value_diff
from .texts import tool_problems
from .render import json_text

# JSON Schema's annotation keywords (the meta-data vocabulary and $comment): they do not change what a schema accepts.
_SCHEMA_ANNOTATIONS = frozenset(
    {"title", "description", "examples", "$comment", "default", "deprecated", "readOnly", "writeOnly"}
)
_NAME_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
SNAPSHOT_LIMIT = 16 * 1024 * 1024  # bytes of a snapshot: what `tools` fetches and writes, and `--tools-from` reads
SNAPSHOT_FILE = "tools.json"
# The keys of a snapshot's tool, in the order written; any others follow, by name.
TOOL_KEYS = ("name", "title", "description", "inputSchema", "outputSchema", "annotations")
_HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
_SHOWN_PATHS = 3


def _schema_core(value: Any) -> Any:
    """A JSON Schema without the keywords that do not change what it accepts."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k in _SCHEMA_ANNOTATIONS:
                continue
            if k == "additionalProperties" and v is True:
                continue
            if k in _NAME_MAPS and isinstance(v, dict):
                out[k] = {name: _schema_core(sub) for name, sub in v.items()}  # property names are data, keep them
            else:
                out[k] = _schema_core(v)
        return out
    if isinstance(value, list):
        return [_schema_core(v) for v in value]
    return value


# ------------------------------------------------------------------------------------------------------ the source


@dataclass(frozen=True)
class ToolSource:
    """Where tools come from, for messages: a live server (its spec) or a snapshot file (its path)."""

    name: str
    snapshot: bool = False
    described: str | None = None  # how messages name it, when not by ``name`` (a listing given in Python)

    @property
    def words(self) -> str:
        if self.described:
            return self.described
        return f"the snapshot {self.name}" if self.snapshot else f"the server {self.name}"

    @property
    def refresh(self) -> str:
        """The command that writes the snapshot again."""
        server = "SERVER" if self.snapshot else shlex.quote(self.name)
        out = shlex.quote(self.name) if self.snapshot else SNAPSHOT_FILE
        return f"project-skill tools {server} --out {out}"


def is_snapshot(spec: Any) -> bool:
    """Whether ``--tools-from`` names a snapshot file: a path that exists and ends in ``.json``."""
    return isinstance(spec, str) and spec.endswith(".json") and os.path.lexists(spec)


# ---------------------------------------------------------------------------------------------------- the snapshot


def _canonical(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _canonical(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def canonical_tool(entry: Mapping[str, Any]) -> dict[str, Any]:
    """One ``tools/list`` entry (JSON) with the snapshot's key order."""
    first = {k: _canonical(entry[k]) for k in TOOL_KEYS if k in entry}
    return first | {k: _canonical(entry[k]) for k in sorted(entry) if k not in first}


def snapshot_bytes(entries: Sequence[Mapping[str, Any]]) -> bytes:
    """The snapshot of a ``tools/list`` result: sorted by name (the first of each name kept), fixed formatting."""
    seen: dict[str, Mapping[str, Any]] = {}
    for e in entries:
        seen.setdefault(str(e.get("name")), e)
    tools = [canonical_tool(seen[name]) for name in sorted(seen)]
    return (json_text({"tools": tools}, indent=2, sort_keys=False) + "\n").encode("utf-8")


class _Key(str):
    """The last part of a path that names a key itself (an unknown key), not its value."""


def _locate(text: str, path: Sequence[str | int]) -> tuple[int, int]:
    """The line and column of the value at ``path`` (of the key, for a :class:`_Key`) in a JSON text (JSON is YAML,
    and PyYAML keeps positions); 1:1 when it cannot be told. Only called for a snapshot known to be bounded JSON."""
    import yaml

    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        for part in path:
            if isinstance(part, int) and isinstance(node, yaml.SequenceNode) and part < len(node.value):
                node = node.value[part]
            elif isinstance(part, str) and isinstance(node, yaml.MappingNode):
                node = next(k if isinstance(part, _Key) else v for k, v in node.value if k.value == part)
            else:
                break
        return node.start_mark.line + 1, node.start_mark.column + 1
    except Exception:  # noqa: BLE001 - a position is a courtesy; the problem itself is reported anyway
        return 1, 1


def _shape(doc: Any) -> list[tuple[tuple[str | int, ...], str]]:
    """Every way ``doc`` is not a tools snapshot: ``(path, problem)``."""
    if not isinstance(doc, dict) or not isinstance(doc.get("tools"), list):
        return [((), 'a tools snapshot is a JSON object {"tools": [...]}')]
    out: list[tuple[tuple[str | int, ...], str]] = [
        ((_Key(k),), f"the key '{k}' is not part of a tools snapshot (only 'tools')") for k in doc if k != "tools"
    ]
    names: set[str] = set()
    for i, t in enumerate(doc["tools"]):
        at: tuple[str | int, ...] = ("tools", i)
        if not isinstance(t, dict):
            out.append((at, f"tools[{i}] is not an object"))
            continue
        name = t.get("name")
        if not isinstance(name, str) or not name.strip():
            out.append((at, f"tools[{i}] has no 'name' string"))
        elif name in names:
            out.append(((*at, "name"), f"the tool '{name}' is listed twice"))
        else:
            names.add(name)
        what = f"tools[{i}]" + (f" ('{name}')" if isinstance(name, str) else "")
        for key, kind in (
            ("title", str),
            ("description", str),
            ("inputSchema", dict),
            ("outputSchema", dict),
            ("annotations", dict),
        ):
            if key == "inputSchema" and key not in t:
                out.append((at, f"{what} has no 'inputSchema' (every MCP tool has one)"))
            elif key in t and not isinstance(t[key], kind):
                out.append(((*at, key), f"{what}: '{key}' must be {'a string' if kind is str else 'an object'}"))
        ann = t.get("annotations")
        if isinstance(ann, dict):
            out.extend(
                ((*at, "annotations", h), f"{what}: annotation '{h}' must be true or false")
                for h in _HINTS
                if h in ann and not isinstance(ann[h], bool)
            )
    return out


def parse_snapshot(data: bytes, file: str, *, code: str = "bad-snapshot") -> dict[str, Tool]:
    """The tools of a snapshot's bytes, name -> :class:`Tool`. Raises :class:`LoadError` (``code``, every problem
    at its ``file:line:col``) for anything that is not a bounded JSON tools snapshot."""
    hint = (
        f"write it again with: {ToolSource(file, snapshot=True).refresh}"
        if code == "bad-snapshot"
        else "the server's tools/list result is not what MCP says it is"
    )
    try:
        doc = bounded.loads(data)
    except bounded.BadJSON as exc:
        raise LoadError(
            Diagnostic(Span(file, exc.line or 1, exc.col or 1), "error", code, f"not a tools snapshot: {exc}", hint)
        ) from None
    problems = _shape(doc)
    if problems:
        text = data.decode("utf-8")
        raise LoadError(
            [Diagnostic(Span(file, *_locate(text, path)), "error", code, message, hint) for path, message in problems]
        )
    return {t["name"]: from_wire(t) for t in doc["tools"]}


def parse_listing(listing: Any, where: Span) -> dict[str, Tool]:
    """The tools of a parsed listing: a snapshot's JSON (``{"tools": [...]}``), its list of tools, or the
    ``mcp_types.Tool`` objects of a ``tools/list`` result. It is read as the snapshot it would be written as, by
    :func:`parse_snapshot`; every problem is a ``bad-snapshot`` error at ``where`` (the listing has no lines)."""
    entries = listing.get("tools") if isinstance(listing, Mapping) else listing
    problem = None
    if isinstance(listing, Mapping) and set(listing) - {"tools"}:
        others = ", ".join(sorted(map(str, set(listing) - {"tools"})))
        problem = f"a tools listing has only the key 'tools', not {others}"
    elif isinstance(entries, (str, bytes)) or not isinstance(entries, Sequence):
        problem = 'a tools listing is {"tools": [...]} or a list of tools'
    elif bad := [i for i, e in enumerate(entries) if not isinstance(e, Mapping) and not hasattr(e, "model_dump")]:
        problem = f"tools[{bad[0]}] is not a tool (a JSON object or an mcp_types.Tool)"
    hint = "pass what `project-skill tools SERVER` writes, parsed, or a tools/list result's tools"
    if problem is not None:
        raise LoadError(Diagnostic(where, "error", "bad-snapshot", problem, hint))
    try:
        data = json_text(
            {"tools": [dict(e) if isinstance(e, Mapping) else wire_tool(e) for e in entries]}, indent=2, sort_keys=False
        ).encode("utf-8")
        return parse_snapshot(data, str(where))
    except (TypeError, ValueError) as exc:  # not JSON: a value of another type somewhere
        raise LoadError(
            Diagnostic(where, "error", "bad-snapshot", f"the tools listing is not JSON: {exc}", hint)
        ) from None
    except LoadError as exc:  # positions in a text the caller never saw: the call itself is the place
        raise LoadError([dataclasses.replace(d, span=where, hint=hint) for d in exc.diagnostics]) from None


def read_snapshot(path: str | Path) -> dict[str, Tool]:
    """The tools of the snapshot file ``path``: read with a bound, never following a link. Raises
    :class:`LoadError` (``io`` when it cannot be read, ``bad-snapshot`` when it is not a snapshot)."""
    file = Path(path).as_posix()
    try:
        data = bounded.read_regular(path, SNAPSHOT_LIMIT)
    except bounded.Unreadable as exc:
        raise LoadError(
            Diagnostic(
                Span(file),
                "error",
                "io",
                f"cannot read the tools snapshot: {exc}",
                f"write it with: {ToolSource(file, snapshot=True).refresh}",
            )
        ) from None
    return parse_snapshot(data, file)


def wire_tool(t: Any) -> dict[str, Any]:
    """An ``mcp_types.Tool`` as its ``tools/list`` JSON."""
    return t.model_dump(by_alias=True, exclude_none=True, mode="json")


# --------------------------------------------------------------------------------------------------------- drift


def _where(span: Span, wf: Workflow) -> Span:
    return span if span.line else Span(wf.source)


def drift(declared: Tool, actual: Tool) -> list[tuple[str, list[tuple[str, Any, Any]]]]:
    """Each field a declaration gives that ``actual`` disagrees on, with where inside it: ``(field, [(path,
    declared value, actual value)])``. Fields the declaration leaves out do not count."""
    out: list[tuple[str, list[tuple[str, Any, Any]]]] = []
    if declared.description and declared.description.strip() != actual.description.strip():
        out.append(("description", [("", declared.description, actual.description)]))
    for name in ("input_schema", "output_schema"):
        mine, theirs = getattr(declared, name), getattr(actual, name)
        if mine is not None:
            if diff := value_diff(_schema_core(mine), _schema_core(theirs)):
                out.append((name, diff))
    if declared.annotations is not None:
        if diff := value_diff(declared.annotations, actual.annotations or {}):
            out.append(("annotations", diff))
    return out


def _detail(diff: list[tuple[str, Any, Any]], other: str) -> str:
    shown = [
        (f"'{path}' " if path else "") + f"(file: {describe_value(a)}, {other}: {describe_value(b)})"
        for path, a, b in diff[:_SHOWN_PATHS]
    ]
    more = len(diff) - _SHOWN_PATHS
    return "; ".join(shown) + (f"; and {more} more" if more > 0 else "")


def _drift_warnings(wf: Workflow, ft: Tool, st: Tool, source: ToolSource) -> list[Diagnostic]:
    other = "snapshot" if source.snapshot else "server"
    hint = (
        f"if the server changed, refresh the snapshot ({source.refresh}) and bring this declaration in line, or "
        f"leave the field out to take the {other}'s"
    )
    if not source.snapshot:
        hint = (
            f"if the server changed on purpose, bring this declaration in line (or leave the field out to take "
            f"the server's), and refresh the snapshot: {source.refresh}"
        )
    return [
        Diagnostic(
            _where(ft.span, wf),
            "warning",
            "tool-mismatch",
            f"tool '{ft.name}': {field} differs between {wf.source} and {source.words}: "
            f"{_detail(diff, other)}; the {other}'s declaration is used",
            hint,
        )
        for field, diff in drift(ft, st)
    ]


def _filled_note(wf: Workflow, ft: Tool, field: str, source: ToolSource) -> Diagnostic:
    """``tool-filled``: a field the server leaves out, taken from the file's declaration."""
    what = (
        "declares no annotations; the file's are used"
        if field == "annotations"
        else "declares no output schema; the file's is used (the tool's text is read as JSON of that shape)"
    )
    return Diagnostic(
        _where(ft.span, wf),
        "note",
        "tool-filled",
        f"tool '{ft.name}': {source.words} {what}",
        "nothing to do; if the server comes to declare the field, the two must agree (tool-mismatch)",
    )


def merge_tools(
    workflows: list[Workflow], tools: dict[str, Tool], source: str | ToolSource
) -> tuple[list[Workflow], list[Diagnostic]]:
    """Pure: each workflow with its tools replaced by ``source``'s, plus the drift warnings; raises for missing
    tools. ``source``: a :class:`ToolSource`, or a server's name."""
    source = source if isinstance(source, ToolSource) else ToolSource(source)
    errors: list[Diagnostic] = []
    warnings: list[Diagnostic] = []
    result: list[Workflow] = []
    known = ", ".join(sorted(tools)) or "none"
    for wf in workflows:
        refresh = f"if the server has it now, refresh the snapshot: {source.refresh}" if source.snapshot else None
        errors.extend(
            d
            for step in wf.steps
            if (
                d := unknown_tool(
                    step,
                    tools,
                    what=f"step '{step.name}'",
                    at=_where(step.tool_span if step.tool_span.line else step.span, wf),
                    lacks=f"{source.words} does not have",
                    then=(f"{source.words}'s tools: {known}", refresh),
                )
            )
        )
        new_tools = []
        for ft in wf.tools:
            st = tools.get(ft.name)
            if st is None:
                if not any(s.tool == ft.name for s in wf.steps):
                    warnings.append(
                        Diagnostic(
                            _where(ft.span, wf),
                            "warning",
                            "tool-mismatch",
                            f"tool '{ft.name}' is declared in {wf.source} but {source.words} "
                            f"does not have it; no step calls it",
                            f"remove the declaration, or refresh the snapshot: {source.refresh}",
                        )
                    )
                new_tools.append(ft)
                continue
            warnings.extend(_drift_warnings(wf, undeclared_by(ft, st), st, source))
            served, filled = fill_declared(ft, st)  # what the server leaves out, the file may say
            warnings.extend(_filled_note(wf, ft, field, source) for field in filled)
            new_tools.append(dataclasses.replace(served, span=ft.span))
        # A tool that a step calls but the file does not list is taken from the source, in the order steps use it.
        listed = {t.name for t in new_tools}
        for step in wf.steps:
            if step.tool is not None and step.tool in tools and step.tool not in listed:
                new_tools.append(dataclasses.replace(tools[step.tool], span=Span(wf.source)))
                listed.add(step.tool)
        merged = dataclasses.replace(wf, tools=tuple(new_tools))
        errors.extend(check_steps(merged))  # the steps against the source's schemas, as build checks declared ones
        result.append(merged)
    # The source's texts are held to the rules of a file's (a server's tool may not smuggle a line break into a name)
    errors.extend(d for wf in result for d in tool_problems(wf.tools))
    if errors:
        raise LoadError(errors)
    return result, sorted(warnings, key=Diagnostic.sort_key)
