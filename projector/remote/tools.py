"""``project-skill build|check --tools-from SERVER``: take each tool's description, input schema and annotations from
a live server's ``tools/list`` instead of from the workflow file, so the gate warnings rest on what the server really
declares.

- A tool that a step calls but the server lacks is an error (``unknown-tool`` at the step, raised as
  :class:`~projector.errors.LoadError`, every one at once). A tool that a step calls and the file does not list is
  taken from the server, so a workflow file may name its tools and nothing else.
- The steps' arguments and field paths are then checked against the server's schemas
  (:func:`projector.fit.check_steps`, as ``build`` checks the file's): every problem is raised at once too.
- A file's ``tools:`` entry that disagrees with the server is a warning (``tool-mismatch``) at the tool, naming the
  file, the server and both values. Fields the file leaves out are not disagreements.
- JSON Schema annotation keywords (``title``, ``description``, ``examples``, ``$comment``) and the default
  ``additionalProperties: true`` do not count when comparing input schemas; values compare as YAML values (1 == 1.0).

``mcp`` is imported only when this module's functions run (the core imports this module only for ``--tools-from``).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from ..errors import Diagnostic, LoadError, Span
from ..fit import check_steps, from_listing
from ..model import Tool, Workflow
from .verify import yaml_equal

_SCHEMA_ANNOTATIONS = frozenset({"title", "description", "examples", "$comment"})
_NAME_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
MAX_PAGES = 1000


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


def _compact(value: Any, limit: int = 160) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def server_tool(t: Any) -> Tool:
    """An ``mcp_types.Tool`` as a model :class:`~projector.model.Tool`."""
    return from_listing(t)


async def list_server_tools(server: Any, label: str | None = None) -> dict[str, Tool]:
    """Every page of ``tools/list`` from ``server`` (a spec string or anything :class:`mcp.Client` takes)."""
    from .client import connect
    from .errors import ServerError

    out: dict[str, Tool] = {}
    async with connect(server, label) as remote:
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            try:
                page = await remote.client.list_tools(cursor=cursor)
            except Exception as exc:
                from .client import _describe

                raise ServerError("server-error", remote.label, f"tools/list failed: {_describe(exc)}") from None
            for t in page.tools:
                out.setdefault(t.name, server_tool(t))
            cursor = page.next_cursor
            if cursor is None:
                return out
            if cursor in seen:
                raise ServerError("server-error", remote.label, "tools/list repeated a cursor")
            seen.add(cursor)
    raise ServerError("server-error", str(label), f"tools/list did not end within {MAX_PAGES} pages")


def _where(span: Span, wf: Workflow) -> Span:
    return span if span.line else Span(wf.source)


def merge_tools(workflows: list[Workflow], tools: dict[str, Tool], server_label: str
                ) -> tuple[list[Workflow], list[Diagnostic]]:
    """Pure: each workflow with its tools replaced by the server's, plus the warnings; raises for missing tools."""
    errors: list[Diagnostic] = []
    warnings: list[Diagnostic] = []
    result: list[Workflow] = []
    for wf in workflows:
        for step in wf.steps:
            if step.tool is not None and step.tool not in tools:
                known = ", ".join(sorted(tools)) or "none"
                errors.append(Diagnostic(_where(step.span, wf), "error", "unknown-tool",
                                         f"step '{step.name}' calls the tool '{step.tool}', which the server "
                                         f"{server_label} does not have", f"the server's tools: {known}"))
        new_tools = []
        for ft in wf.tools:
            st = tools.get(ft.name)
            if st is None:
                if not any(s.tool == ft.name for s in wf.steps):
                    warnings.append(Diagnostic(_where(ft.span, wf), "warning", "tool-mismatch",
                                               f"tool '{ft.name}' is declared in {wf.source} but the server "
                                               f"{server_label} does not have it; no step calls it"))
                new_tools.append(ft)
                continue
            differs = []
            if ft.description and ft.description.strip() != st.description.strip():
                differs.append(("description", ft.description, st.description))
            if ft.input_schema is not None and not yaml_equal(_schema_core(ft.input_schema),
                                                              _schema_core(st.input_schema)):
                differs.append(("input_schema", ft.input_schema, st.input_schema))
            if ft.output_schema is not None and not yaml_equal(_schema_core(ft.output_schema),
                                                               _schema_core(st.output_schema)):
                differs.append(("output_schema", ft.output_schema, st.output_schema))
            if ft.annotations is not None and not yaml_equal(ft.annotations, st.annotations or {}):
                differs.append(("annotations", ft.annotations, st.annotations))
            if differs:
                fields = ", ".join(f for f, _, _ in differs)
                detail = "; ".join(f"{f}: file {_compact(a)} vs server {_compact(b)}" for f, a, b in differs)
                warnings.append(Diagnostic(_where(ft.span, wf), "warning", "tool-mismatch",
                                           f"tool '{ft.name}': {wf.source} and the server {server_label} disagree "
                                           f"on {fields}; the server's declaration is used",
                                           detail))
            new_tools.append(dataclasses.replace(st, span=ft.span))
        # A tool that a step calls but the file does not list is taken from the server, in the order steps use it.
        listed = {t.name for t in new_tools}
        for step in wf.steps:
            if step.tool is not None and step.tool in tools and step.tool not in listed:
                new_tools.append(dataclasses.replace(tools[step.tool], span=Span(wf.source)))
                listed.add(step.tool)
        merged = dataclasses.replace(wf, tools=tuple(new_tools))
        errors.extend(check_steps(merged))  # the steps against the server's schemas, as build checks declared ones
        result.append(merged)
    if errors:
        raise LoadError(errors)
    return result, sorted(warnings, key=Diagnostic.sort_key)


async def apply_tools_from_async(workflows: list[Workflow], server: Any, label: str | None = None
                                 ) -> tuple[list[Workflow], list[Diagnostic]]:
    label = label or (server if isinstance(server, str) else type(server).__name__)
    tools = await list_server_tools(server, label)
    return merge_tools(workflows, tools, label)


def apply_tools_from(workflows: list[Workflow], server: Any, label: str | None = None
                     ) -> tuple[list[Workflow], list[Diagnostic]]:
    """The synchronous entry point ``project-skill build|check --tools-from`` calls."""
    import anyio

    return anyio.run(apply_tools_from_async, workflows, server, label)
