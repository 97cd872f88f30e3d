"""A Python builder for workflows, for authors who keep their workflows next to their server.

    from projector.builder import WorkflowBuilder, arg, step, const, condition, confirm

    wf = (
        WorkflowBuilder("refund_flow", "Process a customer refund after checking eligibility.")
        .argument("order_id", "The order to refund", required=True, type="string")
        .tool("get_order", "Look up an order by id.", input_schema={...}, annotations={"readOnlyHint": True})
        .step("fetch_order", tool="get_order", args={"id": arg("order_id")}, bind="order")
        .build()
    )

``build()`` holds the workflow to the same rules as the YAML loader and raises :class:`~projector.errors.LoadError`
with every problem. The same workflow built here and loaded from YAML projects to the same bytes.

Each diagnostic names the line of your code that made the part it is about, as ``file:line:col`` (the first frame
outside projector/, so a helper of this package never shows up). Give ``source=`` to name the workflow by that
instead, with no lines.

``.tools_from(SOURCE)`` takes the tools' declarations from a server or a tools snapshot, as ``build --tools-from``
does: a step may then name a tool and nothing else, and a ``.tool(...)`` declaration that disagrees with SOURCE is a
``tool-mismatch`` warning in ``builder.diagnostics`` after ``build()``.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path
from typing import Any, Mapping, Sequence

from .errors import Diagnostic, LoadError, Span
from .model import Argument, Condition, Confirm, Const, FromArg, FromStep, Instruction, Source, Step, Tool, Workflow
from .toolset import SNAPSHOT_FILE, ToolSource, merge_tools, parse_listing, read_snapshot
from .validate import validate

_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _shown(file: str) -> str:
    """A source file as diagnostics show it: relative to the working folder when inside it, with ``/``."""
    if file.startswith("<"):
        return file  # <stdin>, <string>: no file
    path = Path(file)
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except (ValueError, OSError):
        return path.as_posix()


def caller_span() -> Span:
    """Where the first frame outside projector/ on the stack is: ``file:line:col`` of the call it is making (the
    column of a chained method call is its name's). ``Span()`` when every frame is inside."""
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE):
        frame = frame.f_back
    if frame is None:
        return Span()
    i = frame.f_lasti // 2
    position = next((p for n, p in enumerate(frame.f_code.co_positions()) if n == i), None)
    line = position[0] if position and position[0] else frame.f_lineno
    col = position[2] + 1 if position and position[2] is not None else 1
    return Span(_shown(frame.f_code.co_filename), line or 0, col if line else 0)


def arg(name: str) -> FromArg:
    """The prompt argument ``name``."""
    return FromArg(name)


def step(bind: str, field: str | None = None) -> FromStep:
    """The result bound as ``bind`` by an earlier step, or one field of it (dot path)."""
    return FromStep(bind, field)


def const(value: Any) -> Const:
    """A constant JSON value; a string may hold ``{argname}`` placeholders."""
    return Const(value)


def condition(subject: FromArg | FromStep, **operator: Any) -> Condition:
    """One condition for a step's ``when``: a subject and exactly one operator, as keyword:
    ``condition(step("eligibility", "eligible"), equals=True)``, ``condition(arg("reason"), exists=True)``.
    The operators: equals, not_equals, in_ (``in`` is a Python keyword), not_in, contains, not_contains, exists."""
    if not isinstance(subject, (FromArg, FromStep)):
        raise TypeError("a condition's subject must be arg(...) or step(...)")
    if len(operator) != 1:
        raise TypeError(f"a condition has exactly one operator, got {len(operator)}: {', '.join(operator) or 'none'}")
    ((op, value),) = operator.items()
    op = "in" if op == "in_" else op
    if isinstance(value, tuple):
        value = list(value)
    return Condition(subject, op, value)  # type: ignore[arg-type]  # build() reports an unknown operator


def confirm(message: str, *show: Source) -> Confirm:
    """A step's ``confirm``: the question a person answers before the step runs, and the values shown with it, in
    order: ``confirm("Issue this refund?", step("order", "total"), arg("reason"))``."""
    if not all(isinstance(s, (FromArg, FromStep, Const)) for s in show):
        raise TypeError("the values a confirmation shows must be arg(...), step(...) or const(...)")
    return Confirm(message, tuple(show))


class WorkflowBuilder:
    def __init__(
        self,
        name: str,
        description: str,
        *,
        title: str | None = None,
        source: str | None = None,
        license: str | None = None,
        compatibility: str | None = None,
        metadata: Mapping[str, str] | None = None,
        allowed_tools: str | None = None,
    ):
        """``license``, ``compatibility``, ``metadata`` (string to string) and ``allowed_tools``: the Agent Skills
        frontmatter fields, as the workflow file's keys of the same names (``allowed-tools``) give them."""
        self._name = name
        self._description = description
        self._title = title
        for what, text in (("license", license), ("compatibility", compatibility), ("allowed_tools", allowed_tools)):
            if text is not None and not isinstance(text, str):
                raise TypeError(f"{what} must be a string or None")
        if metadata is not None and not (
            isinstance(metadata, Mapping)
            and all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items())
        ):
            raise TypeError("metadata must be a mapping of string to string")
        self._frontmatter: dict[str, Any] = {
            "license": license,
            "compatibility": compatibility,
            "allowed_tools": allowed_tools,
            "metadata": tuple(sorted((metadata or {}).items())),
        }
        self._given_source = source
        self._origin = self._span()  # the constructor's call: where the workflow is
        self._source = source if source is not None else self._origin.file or "<python>"
        self._arguments: list[Argument] = []
        self._instructions: list[Instruction] = []
        self._tools: list[Tool] = []
        self._steps: list[Step] = []
        self._tools_from: tuple[dict[str, Tool], ToolSource] | None = None
        self.diagnostics: list[Diagnostic] = []
        """The warnings and notes of the last ``build()`` (``tool-mismatch`` from :meth:`tools_from`, ...)."""

    def _span(self) -> Span:
        """The caller's place, or just ``source`` when one was given."""
        if self._given_source is not None:
            return Span(self._given_source)
        found = caller_span()
        return found if found.line else Span(found.file)

    def tools_from(self, source: Any, *, label: str | None = None) -> WorkflowBuilder:
        """Take the tools' declarations (description, schemas, annotations) from ``source``, as
        ``project-skill build --tools-from`` does, with the same code:

        - a tools snapshot: a :class:`~pathlib.Path`, or a string path that exists and ends in ``.json`` (the file
          ``project-skill tools SERVER --out tools.json`` writes; read offline, with a bound, without ``mcp``);
        - a parsed listing: that file's JSON (``{"tools": [...]}``), its list, or the ``mcp_types.Tool`` objects of
          a ``tools/list`` result;
        - a server: a stdio command line, an ``http(s)://`` URL, or a server object (``MCPServer``, FastMCP), which
          is asked for its tools now, once (not inside a running event loop: pass its listing there).

        A step may then call a tool with no ``.tool(...)`` declaration; a declaration that disagrees with ``source``
        is a ``tool-mismatch`` warning (in :attr:`diagnostics` after ``build()``) and ``source``'s is used; a step
        whose tool ``source`` lacks is an ``unknown-tool`` error at the step. A snapshot or listing that is not one
        raises :class:`~projector.errors.LoadError` here (``bad-snapshot``; ``io`` for an unreadable file)."""
        where = self._span()
        if isinstance(source, Path):
            tools = read_snapshot(source)
            found = ToolSource(source.as_posix(), snapshot=True)
        elif isinstance(source, Mapping) or (isinstance(source, Sequence) and not isinstance(source, (str, bytes))):
            tools = parse_listing(source, where)
            found = ToolSource(SNAPSHOT_FILE, snapshot=True, described=f"the tools listing given at {where}")
        else:
            from .remote.tools import load_tools  # lazily: a string may name a live server, which needs the client

            tools, found = load_tools(source, label)
        self._tools_from = (tools, found)
        return self

    def argument(
        self, name: str, description: str = "", *, required: bool = False, type: str | None = None, ask: bool = False
    ) -> WorkflowBuilder:
        where = self._span()
        self._arguments.append(
            Argument(
                name,
                description,
                required,
                type,
                span=where,  # type: ignore[arg-type]
                ask=ask,
                ask_span=where,
            )
        )
        return self

    def instruction(self, role: str, text: str) -> WorkflowBuilder:
        self._instructions.append(Instruction(role, text, span=self._span()))  # type: ignore[arg-type]
        return self

    def tool(
        self,
        name: str,
        description: str = "",
        *,
        input_schema: Mapping[str, Any] | None = None,
        annotations: Mapping[str, Any] | None = None,
        output_schema: Mapping[str, Any] | None = None,
    ) -> WorkflowBuilder:
        self._tools.append(
            Tool(
                name,
                description,
                dict(input_schema) if input_schema is not None else None,
                dict(annotations) if annotations is not None else None,
                dict(output_schema) if output_schema is not None else None,
                span=self._span(),
            )
        )
        return self

    def step(
        self,
        name: str,
        *,
        tool: str | None = None,
        args: Mapping[str, Source] | None = None,
        bind: str | None = None,
        guidance: str | None = None,
        resources: list[str] | tuple[str, ...] = (),
        template: Mapping[str, Source] | None = None,
        acknowledge: Mapping[str, str] | None = None,
        when: Condition | list[Condition] | tuple[Condition, ...] = (),
        on_fail: str = "stop",
        confirm: Confirm | None = None,
    ) -> WorkflowBuilder:
        for what, mapping in (("args", args), ("template", template)):
            for key, src in (mapping or {}).items():
                if not isinstance(src, (FromArg, FromStep, Const)):
                    raise TypeError(f"step {name!r}: {what}[{key!r}] must be arg(...), step(...) or const(...)")
        conditions = (when,) if isinstance(when, Condition) else tuple(when)
        if not all(isinstance(c, Condition) for c in conditions):
            raise TypeError(f"step {name!r}: when must be condition(...) or a list of them")
        if confirm is not None and not isinstance(confirm, Confirm):
            raise TypeError(f"step {name!r}: confirm must be confirm(...)")
        if confirm is not None:
            where = self._span()
            confirm = dataclasses.replace(confirm, span=where, message_span=where)
        self._steps.append(
            Step(
                name=name,
                tool=tool,
                args=tuple((args or {}).items()),
                bind=bind,
                guidance=guidance,
                resources=tuple(resources),
                template=tuple((template or {}).items()),
                acknowledge=tuple((acknowledge or {}).items()),
                span=self._span(),
                guidance_span=self._span(),
                when=conditions,
                on_fail=on_fail,
                on_fail_span=self._span(),
                confirm=confirm,
            )
        )  # type: ignore[arg-type]
        return self

    def build(self) -> Workflow:
        """The workflow, held to the format's rules (and, after :meth:`tools_from`, fitted to those tools); raises
        :class:`~projector.errors.LoadError` with every problem. Warnings are kept in :attr:`diagnostics`."""
        wf = Workflow(
            self._name,
            self._description,
            tuple(self._arguments),
            tuple(self._instructions),
            tuple(self._tools),
            tuple(self._steps),
            span=self._origin,
            source=self._source,
            title=self._title,
            title_span=self._origin,
            **self._frontmatter,
            license_span=self._origin,
            compatibility_span=self._origin,
            allowed_tools_span=self._origin,
            metadata_spans=(self._origin,) * len(self._frontmatter["metadata"]),
        )
        found = validate(wf, tools_from_server=self._tools_from is not None)
        problems = [d for d in found if d.severity == "error"]
        if problems:
            raise LoadError(problems)
        kept = [d for d in found if d.severity != "error"]
        if self._tools_from is not None:
            (wf,), drift = merge_tools([wf], *self._tools_from)
            kept.extend(drift)
        self.diagnostics = sorted(kept, key=Diagnostic.sort_key)
        return wf
