"""The immutable model of a sequential workflow, shared by the YAML loader and the Python builder.

Positions (:class:`~projector.errors.Span`) ride along for diagnostics but never take part in equality, so a
workflow built in code equals the same workflow loaded from YAML.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields, is_dataclass
from functools import cached_property
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any, Literal, Union

from .errors import Span

ArgType = Literal["string", "number", "integer", "boolean"]
Role = Literal["system", "user", "assistant"]

PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.-]*)\}")

_NOWHERE = Span()


def _span() -> Any:
    return field(default=_NOWHERE, compare=False, repr=False)


def _additive(default: Any) -> Any:
    """A field added to format version 1 after its first release: :func:`canonical` leaves it out while it has its
    default, so that every workflow written without it keeps its canonical form, and so its digest."""
    return field(default=default, metadata={"additive": True})


@dataclass(frozen=True)
class FromArg:
    """``{arg: NAME}``: the prompt argument NAME."""

    name: str
    span: Span = _span()


@dataclass(frozen=True)
class FromStep:
    """``{step: BIND}`` or ``{step: BIND, field: PATH}``: an earlier step's whole result, or one field of it."""

    bind: str
    field: str | None = None
    span: Span = _span()

    @property
    def path(self) -> tuple[str | int, ...]:
        if self.field is None:
            return ()
        return tuple(int(p) if p.isdigit() else p for p in self.field.split("."))


def _texts(value: Any) -> Iterator[str]:
    """Every string value inside a list or a map, at any depth (not the keys), in order; without recursion."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            yield node
        elif isinstance(node, (list, tuple)):
            stack.extend(reversed(node))
        elif isinstance(node, dict):
            stack.extend(reversed(list(node.values())))


def _filled(value: Any, fill: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return fill(value)
    if isinstance(value, (list, tuple)):
        return [_filled(v, fill) for v in value]
    if isinstance(value, dict):
        return {k: _filled(v, fill) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class Const:
    """``{const: VALUE}``: a constant JSON value. A string may hold ``{argname}`` placeholders; so may the strings
    inside a list or a map (their values, at any depth, not their keys), where a ``{name}`` that names no declared
    argument is text, as written (so every file that loaded before loads, and runs, the same)."""

    value: Any
    span: Span = _span()

    @property
    def placeholders(self) -> tuple[str, ...]:
        """The placeholders of a string constant, each of which must name a declared argument (the loader checks)."""
        if isinstance(self.value, str):
            return tuple(PLACEHOLDER.findall(self.value))
        return ()

    def uses(self, declared: Collection[str] | None) -> tuple[str, ...]:
        """The arguments the constant's placeholders take, once each in order: every placeholder of a string
        constant; inside a list or a map, those that name an argument in ``declared`` (None: every name, for a
        caller that reads only declared arguments anyway)."""
        if isinstance(self.value, str):
            return tuple(dict.fromkeys(self.placeholders))
        found = (n for t in _texts(self.value) for n in PLACEHOLDER.findall(t))
        return tuple(dict.fromkeys(n for n in found if declared is None or n in declared))

    def filled(self, texts: Mapping[str, str]) -> Any:
        """The value with each placeholder of an argument in ``texts`` (name -> its text) replaced by its text, in
        the string and in every string inside; any other ``{name}`` is left as written."""

        def fill(text: str) -> str:
            return PLACEHOLDER.sub(lambda m: texts.get(m.group(1), m.group(0)), text)

        return _filled(self.value, fill)


Source = Union[FromArg, FromStep, Const]

OnFail = Literal["stop", "skip"]


@dataclass(frozen=True)
class Confirm:
    """``confirm:``: a person must say yes before the step runs. ``message`` is the question; ``show`` the values the
    person sees with it, in order, each a data source checked like a step argument. A no acts as a failed condition
    (the step's ``on_fail``)."""

    message: str
    show: tuple[Source, ...] = ()
    span: Span = _span()
    message_span: Span = _span()


@dataclass(frozen=True)
class Condition:
    """One entry of a step's ``when:``: a subject (``{arg}``, ``{step}`` or ``{step, field}``), one operator and its
    operand, a JSON value (a list for ``in`` and ``not_in``, a boolean for ``exists``). Evaluated by
    :mod:`projector.conditions`; never as code. ``op`` names an entry of the one operator table
    (:data:`projector.conditions.OPERATORS`), which the loader and :func:`projector.validate.validate` hold it to."""

    subject: Union[FromArg, FromStep]
    op: str
    value: Any
    span: Span = _span()  # the operator's key, where a problem with the operand is reported
    # Where the operand is written: one span for a value, one per item for a list; empty for a condition built in
    # Python (its problems are reported at ``span``).
    operand_spans: tuple[Span, ...] = field(default=(), compare=False, repr=False)


@dataclass(frozen=True)
class Argument:
    name: str
    description: str = ""
    required: bool = False
    type: ArgType | None = None
    span: Span = _span()
    # ``ask: true``: when the prompt was called without it, the server-side run asks the person for it the first time
    # a step needs it (an optional argument only).
    ask: bool = _additive(False)
    ask_span: Span = _span()


@dataclass(frozen=True)
class Instruction:
    role: Role
    text: str
    span: Span = _span()


@dataclass(frozen=True)
class Tool:
    name: str
    description: str = ""
    # JSON values are kept as they were written; tuples of pairs would hide them from users for no gain.
    input_schema: Any = None
    annotations: Any = None
    # JSON Schema of the tool's structured result (MCP ``outputSchema``); field paths into its result are checked.
    output_schema: Any = None
    span: Span = _span()

    @property
    def annotated(self) -> bool:
        return isinstance(self.annotations, dict) and bool(self.annotations)

    @property
    def side_effecting(self) -> bool:
        """MCP semantics: ``readOnlyHint`` defaults to false, so an annotated tool is side-effecting unless it says
        ``readOnlyHint: true``; ``destructiveHint: true`` always counts."""
        ann = self.annotations if isinstance(self.annotations, dict) else {}
        return ann.get("readOnlyHint") is not True or ann.get("destructiveHint") is True

    @property
    def destructive(self) -> bool:
        ann = self.annotations if isinstance(self.annotations, dict) else {}
        return ann.get("readOnlyHint") is not True and ann.get("destructiveHint") is not False


@dataclass(frozen=True)
class Step:
    name: str
    tool: str | None = None
    args: tuple[tuple[str, Source], ...] = ()
    bind: str | None = None
    guidance: str | None = None
    resources: tuple[str, ...] = ()
    template: tuple[tuple[str, Source], ...] = ()
    acknowledge: tuple[tuple[str, str], ...] = ()
    span: Span = _span()
    guidance_span: Span = _span()
    # ``when:``: every condition must hold just before the step runs; ``on_fail`` says what a failed one does.
    when: tuple[Condition, ...] = ()
    on_fail: OnFail = "stop"
    on_fail_span: Span = _span()
    # Where each key of ``args`` is written, for a problem with the key itself (a misspelled parameter); empty for a
    # step built in Python, whose problems are reported at the step.
    arg_spans: tuple[tuple[str, Span], ...] = field(default=(), compare=False, repr=False)
    # Where ``tool:``'s value is written, for a problem with the tool's name (``unknown-tool``); the step's own span
    # for a step built in Python.
    tool_span: Span = _span()
    # ``confirm:``: a person's yes before the step runs (:class:`Confirm`); None: no confirmation.
    confirm: Confirm | None = _additive(None)

    @property
    def args_dict(self) -> dict[str, Source]:
        return dict(self.args)

    @property
    def template_dict(self) -> dict[str, Source]:
        return dict(self.template)

    @property
    def acknowledged(self) -> dict[str, str]:
        return dict(self.acknowledge)

    def sources(self) -> list[tuple[str, Source]]:
        return [*self.args, *self.template]

    def arguments_read(self) -> list[str]:
        """The prompt arguments this step reads, in order: its conditions' subjects, its sources (and their
        constants' placeholders), and the values its confirmation shows. An ``ask: true`` input is asked before the
        first step that reads it (the server's runner), and the derived evals ask it there (:mod:`projector.evals`)."""
        found = [c.subject.name for c in self.when if isinstance(c.subject, FromArg)]
        for src in [s for _, s in self.sources()] + list(self.confirm.show if self.confirm else ()):
            if isinstance(src, FromArg):
                found.append(src.name)
            elif isinstance(src, Const):
                found += list(src.uses(None))  # inside a list or a map, a name may be text: callers read declared ones
        return list(dict.fromkeys(found))


@dataclass(frozen=True)
class Workflow:
    name: str
    description: str
    arguments: tuple[Argument, ...] = ()
    instructions: tuple[Instruction, ...] = ()
    tools: tuple[Tool, ...] = ()
    steps: tuple[Step, ...] = ()
    span: Span = _span()
    description_span: Span = _span()
    # A human title for the SKILL.md heading and the MCP prompt's title; None: the heading comes from the name.
    title: str | None = None
    title_span: Span = _span()
    # Agent Skills' optional frontmatter fields, written to the SKILL.md as given (None or (): left out). ``metadata``
    # holds string pairs sorted by key, so that the order they were written in changes neither equality nor bytes;
    # ``metadata_spans`` holds where each key was written, in the same order.
    license: str | None = None
    license_span: Span = _span()
    compatibility: str | None = None
    compatibility_span: Span = _span()
    metadata: tuple[tuple[str, str], ...] = ()
    metadata_spans: tuple[Span, ...] = field(default=(), compare=False, repr=False)
    # Agent Skills' experimental ``allowed-tools``: accepted, never written (see ``allowed-tools-ignored``).
    allowed_tools: str | None = None
    allowed_tools_span: Span = _span()
    # Where the workflow came from, for diagnostics and for `skills.json` ordering; never rendered.
    source: str = field(default="<python>", compare=False)

    # Lookups by name, built once per workflow (the first of a repeated name wins, as a scan would find it): every
    # step looks up its tool and its sources, so a scan per lookup would make compiling quadratic in the steps.
    @cached_property
    def _tools_by_name(self) -> dict[str, Tool]:
        found: dict[str, Tool] = {}
        for t in self.tools:
            found.setdefault(t.name, t)
        return found

    @cached_property
    def _arguments_by_name(self) -> dict[str, Argument]:
        found: dict[str, Argument] = {}
        for a in self.arguments:
            found.setdefault(a.name, a)
        return found

    @cached_property
    def _steps_by_bind(self) -> dict[str, tuple[int, Step]]:
        found: dict[str, tuple[int, Step]] = {}
        for i, s in enumerate(self.steps):
            if s.bind is not None:
                found.setdefault(s.bind, (i, s))
        return found

    def tool(self, name: str) -> Tool | None:
        return self._tools_by_name.get(name)

    def metadata_span(self, key: str) -> Span:
        """Where the metadata key ``key`` was written (the workflow's place when unknown)."""
        for (k, _), span in zip(self.metadata, self.metadata_spans):
            if k == key:
                return span
        return self.span

    def argument(self, name: str) -> Argument | None:
        return self._arguments_by_name.get(name)

    def step_for_bind(self, bind: str) -> tuple[int, Step] | None:
        return self._steps_by_bind.get(bind)


def canonical(value: Any) -> Any:
    """The model as plain JSON: each node is ``{"kind": ClassName, field: value, ...}`` over its compared fields
    only, so positions and the source's name take no part (as in equality), and a tuple is a list. A field added to
    the format later (:func:`_additive`) is left out while it has its default. Two workflows
    that are equal have the same canonical form, whether they were loaded from YAML or built in Python."""
    kind = type(value)
    if kind in _LEAVES:
        return value
    spec = _compared_fields(kind)
    if spec is not None:
        node: dict[str, Any] = {"kind": kind.__name__}
        for name, additive, default in spec:
            v = getattr(value, name)
            if not (additive and v == default):
                node[name] = v if type(v) in _LEAVES else canonical(v)
        return node
    if isinstance(value, (tuple, list)):  # a leaf taken as it is here, not by a call: most items are leaves
        return [v if type(v) in _LEAVES else canonical(v) for v in value]
    if isinstance(value, dict):
        return {str(k): v if type(v) in _LEAVES else canonical(v) for k, v in value.items()}
    return value


# What canonical returns as it is, by exact type (a subclass takes the general way).
_LEAVES = frozenset({str, int, float, bool, type(None)})
_FIELDS_OF: dict[type, tuple[tuple[str, bool, Any], ...] | None] = {}


def _compared_fields(cls: type) -> tuple[tuple[str, bool, Any], ...] | None:
    """``(name, additive, default)`` of each compared field of the dataclass ``cls``, in order; None when instances
    of ``cls`` are not dataclass instances. Once per class: :func:`dataclasses.fields` is slow."""
    try:
        return _FIELDS_OF[cls]
    except KeyError:
        pass
    spec = None
    if is_dataclass(cls) and not issubclass(cls, type):  # an instance of cls is a dataclass instance, not a class
        spec = tuple((f.name, bool(f.metadata.get("additive")), f.default) for f in fields(cls) if f.compare)
    _FIELDS_OF[cls] = spec
    return spec
