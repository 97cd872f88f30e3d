"""A Python builder for workflows, for authors who keep their workflows next to their server.

    from projector.builder import WorkflowBuilder, arg, step, const, condition

    wf = (
        WorkflowBuilder("refund_flow", "Process a customer refund after checking eligibility.")
        .argument("order_id", "The order to refund", required=True, type="string")
        .tool("get_order", "Look up an order by id.", input_schema={...}, annotations={"readOnlyHint": True})
        .step("fetch_order", tool="get_order", args={"id": arg("order_id")}, bind="order")
        .build()
    )

``build()`` holds the workflow to the same rules as the YAML loader and raises :class:`~projector.errors.LoadError`
with every problem. The same workflow built here and loaded from YAML projects to the same bytes.
"""

from __future__ import annotations

from typing import Any, Mapping

from .errors import LoadError, Span
from .model import Argument, Condition, Const, FromArg, FromStep, Instruction, Source, Step, Tool, Workflow
from .validate import validate


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
    The operators: equals, not_equals, in_ (``in`` is a Python keyword), not_in, exists."""
    if not isinstance(subject, (FromArg, FromStep)):
        raise TypeError("a condition's subject must be arg(...) or step(...)")
    if len(operator) != 1:
        raise TypeError(f"a condition has exactly one operator, got {len(operator)}: {', '.join(operator) or 'none'}")
    (op, value), = operator.items()
    op = "in" if op == "in_" else op
    if isinstance(value, tuple):
        value = list(value)
    return Condition(subject, op, value)  # type: ignore[arg-type]  # build() reports an unknown operator


class WorkflowBuilder:
    def __init__(self, name: str, description: str, *, title: str | None = None, source: str = "<python>"):
        self._name = name
        self._description = description
        self._title = title
        self._source = source
        self._arguments: list[Argument] = []
        self._instructions: list[Instruction] = []
        self._tools: list[Tool] = []
        self._steps: list[Step] = []

    def _span(self) -> Span:
        return Span(self._source)

    def argument(self, name: str, description: str = "", *, required: bool = False,
                 type: str | None = None) -> WorkflowBuilder:
        self._arguments.append(Argument(name, description, required, type, span=self._span()))  # type: ignore[arg-type]
        return self

    def instruction(self, role: str, text: str) -> WorkflowBuilder:
        self._instructions.append(Instruction(role, text, span=self._span()))  # type: ignore[arg-type]
        return self

    def tool(self, name: str, description: str = "", *, input_schema: Mapping[str, Any] | None = None,
             annotations: Mapping[str, Any] | None = None,
             output_schema: Mapping[str, Any] | None = None) -> WorkflowBuilder:
        self._tools.append(Tool(name, description, dict(input_schema) if input_schema is not None else None,
                                dict(annotations) if annotations is not None else None,
                                dict(output_schema) if output_schema is not None else None, span=self._span()))
        return self

    def step(self, name: str, *, tool: str | None = None, args: Mapping[str, Source] | None = None,
             bind: str | None = None, guidance: str | None = None, resources: list[str] | tuple[str, ...] = (),
             template: Mapping[str, Source] | None = None,
             acknowledge: Mapping[str, str] | None = None,
             when: Condition | list[Condition] | tuple[Condition, ...] = (),
             on_fail: str = "stop") -> WorkflowBuilder:
        for what, mapping in (("args", args), ("template", template)):
            for key, src in (mapping or {}).items():
                if not isinstance(src, (FromArg, FromStep, Const)):
                    raise TypeError(f"step {name!r}: {what}[{key!r}] must be arg(...), step(...) or const(...)")
        conditions = (when,) if isinstance(when, Condition) else tuple(when)
        if not all(isinstance(c, Condition) for c in conditions):
            raise TypeError(f"step {name!r}: when must be condition(...) or a list of them")
        self._steps.append(Step(
            name=name, tool=tool, args=tuple((args or {}).items()), bind=bind, guidance=guidance,
            resources=tuple(resources), template=tuple((template or {}).items()),
            acknowledge=tuple((acknowledge or {}).items()), span=self._span(), guidance_span=self._span(),
            when=conditions, on_fail=on_fail, on_fail_span=self._span()))  # type: ignore[arg-type]
        return self

    def build(self) -> Workflow:
        wf = Workflow(self._name, self._description, tuple(self._arguments), tuple(self._instructions),
                      tuple(self._tools), tuple(self._steps), span=self._span(), source=self._source,
                      title=self._title, title_span=self._span())
        problems = [d for d in validate(wf) if d.severity == "error"]
        if problems:
            raise LoadError(problems)
        return wf
