"""The rules of WORKFLOW-FORMAT.md that go beyond shape. Shared by the YAML loader and the Python builder, so a
workflow is held to the same rules however it was written. Returns every problem; raises nothing.

:func:`validate` is a list of small rules, one function each, composed by plain lines in the order their
diagnostics come out: the workflow's own fields, its declarations, then each step's rules, then its texts and the
fit of its steps to its tools. A reference to a prompt argument or to an earlier result (a step's sources, its
template, the placeholders of its constants, the subjects of its conditions, the values its confirmation shows) is
resolved by one resolver,
:class:`References`. The condition operators are :mod:`projector.conditions`' one table.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import assert_never

from . import fit, naming
from .conditions import ON_FAIL, OPERATORS, Operator, literal
from .gates import ACKNOWLEDGEABLE
from .errors import Diagnostic, Span, error, suggest as _suggest
from .model import PLACEHOLDER, Argument, Condition, Const, FromArg, FromStep, Source, Step, Workflow
from .texts import frontmatter_problems, invisible_problem, text_problems

MAX_DESCRIPTION = 1024
# What ``project-skill init`` writes for the description, and the mark that refuses it until the author replaces it.
PLACEHOLDER_MARK = "TODO(project-skill init)"
DESCRIPTION_PLACEHOLDER = f"{PLACEHOLDER_MARK}: say what this workflow does and when to use it"
_FIELD_PATH_HINT = "a field path is names and list indexes joined by single dots: items.0.sku"


def validate(wf: Workflow, *, tools_from_server: bool = False) -> list[Diagnostic]:
    """Every rule of the format that ``wf`` breaks. With ``tools_from_server`` the steps' tools come from a server
    (``--tools-from``, ``attach()``): a tool not listed under ``tools:`` is not an error here, and the steps are fitted
    to the tools by the caller, once it has them (:mod:`projector.fit`)."""
    return [
        *_name_rule(wf),
        *_description_rule(wf),
        *_title_rule(wf),
        *frontmatter_problems(wf),
        *_unique_names(
            wf.arguments, "an argument name is empty", "duplicate-argument", "argument '{}' is declared twice"
        ),
        *_unique_names(wf.tools, "a tool name is empty", "duplicate-tool", "tool '{}' is declared twice"),
        *(_ask_rule(a) for a in wf.arguments if a.ask and a.required),
        *(
            error(ins.span, "empty-instruction", "an instruction has no text")
            for ins in wf.instructions
            if not ins.text.strip()
        ),
        *_has_steps(wf),
        *_step_rules(wf, tools_from_server),
        *text_problems(wf),
        *(() if tools_from_server else fit.check_steps(wf)),
    ]


# ---------------------------------------------------------------------------------------------- the workflow's own


def _name_rule(wf: Workflow) -> list[Diagnostic]:
    if not wf.name.strip():
        return [error(wf.span, "empty-name", "the workflow name is empty")]
    if not wf.name.isprintable():  # a control, format or line-breaking character: the text rule reports it
        return []
    problem = naming.workflow_name_problem(wf.name)
    return [error(wf.span, *problem)] if problem else []


def _description_rule(wf: Workflow) -> list[Diagnostic]:
    if not wf.description.strip():
        return [
            error(
                wf.description_span,
                "empty-description",
                "the workflow description is empty",
                "a skill needs a description of 1 to 1024 characters",
            )
        ]
    if PLACEHOLDER_MARK in wf.description:
        return [
            error(
                wf.description_span,
                "placeholder-description",
                "the description is still the placeholder that `project-skill init` wrote",
                "replace it with what the workflow does and when to use it: "
                "it becomes the skill's description, which a model reads to decide whether to load the skill",
            )
        ]
    if len(wf.description) > MAX_DESCRIPTION:
        return [
            error(
                wf.description_span,
                "description-too-long",
                f"the description is {len(wf.description)} characters; a skill description allows {MAX_DESCRIPTION}",
                "move detail into instructions or step guidance",
            )
        ]
    return []


def _title_rule(wf: Workflow) -> list[Diagnostic]:
    if wf.title is None:
        return []
    if not wf.title.strip():
        return [
            error(
                wf.title_span, "empty-name", "the title is empty", "leave title out to take the heading from the name"
            )
        ]
    if any(unicodedata.category(c) in ("Cc", "Zl", "Zp") for c in wf.title):
        return [
            error(
                wf.title_span,
                "control-character",
                "the title contains a line break or another control character",
                "a title is one line of plain text",
            )
        ]
    p = invisible_problem(wf.title_span, "the title", wf.title, one_line=True)
    return [p] if p else []


def _unique_names(items: tuple, empty: str, code: str, twice: str) -> list[Diagnostic]:
    """Each declared argument or tool has a name, and no name is declared twice."""
    out: list[Diagnostic] = []
    seen: set[str] = set()
    for item in items:
        if not item.name.strip():
            out.append(error(item.span, "empty-name", empty))
        elif item.name in seen:
            out.append(error(item.span, code, twice.format(item.name)))
        else:
            seen.add(item.name)
    return out


def _declared(items: tuple) -> list[str]:
    """The names :func:`_unique_names` accepts, in order: each non-empty name once."""
    return list(dict.fromkeys(i.name for i in items if i.name.strip()))


NO_STEPS = "the workflow has no steps"


def _has_steps(wf: Workflow) -> list[Diagnostic]:
    return [] if wf.steps else [error(wf.span, "missing-key", NO_STEPS, "add at least one step")]


# ---------------------------------------------------------------------------------------------------- references


@dataclass(frozen=True)
class References:
    """What a step's references can name, and the one resolver of them: a prompt argument must be declared, a result
    must be saved by an earlier step. ``bound`` grows as the steps are checked in order (:func:`_bind_rule`)."""

    arguments: list[str]  # the declared prompt arguments
    results: list[str]  # every step's bind, for a placeholder that names a result
    bound: dict[str, str]  # bind -> the earlier step that saves it
    later: dict[str, str]  # bind -> the step that saves it, of every step (the last one, if two do)

    @classmethod
    def of(cls, wf: Workflow) -> References:
        binds = [s for s in wf.steps if s.bind]
        return cls(
            _declared(wf.arguments), [s.bind for s in binds if s.bind], {}, {s.bind: s.name for s in binds if s.bind}
        )

    def argument(self, name: str, span: Span, where: str, *, placeholder: bool = False) -> Diagnostic | None:
        """``undeclared-argument`` unless ``name`` is a declared prompt argument."""
        if name in self.arguments:
            return None
        head = name.split(".")[0]
        if placeholder and head in self.results:
            return error(
                span,
                "undeclared-argument",
                f"{where} names '{name}', a step result; placeholders take prompt arguments only",
                f"pass the result as a source of its own ({{step: {head}, field: "
                "...}); in a resource URI, bind a template variable to it under the step's template:",
            )
        return error(
            span,
            "undeclared-argument",
            f"{where} uses the argument '{name}', which is not declared",
            _suggest(name, self.arguments) or "declare it under arguments",
        )

    def result(self, ref: FromStep, where: str, *, saved_by: str | None = None) -> Diagnostic | None:
        """``forward-binding`` or ``unknown-binding`` unless an earlier step saves ``ref``'s result. ``saved_by``:
        the bind of the step that reads it, when reading its own result is worded as such (a condition)."""
        if ref.bind in self.bound:
            return None
        if ref.bind == saved_by:
            return error(
                ref.span,
                "forward-binding",
                f"{where} uses '{ref.bind}', which this step saves itself",
                "a condition is checked before its step runs; it can use only results of earlier steps",
            )
        if ref.bind in self.later:
            return error(
                ref.span,
                "forward-binding",
                f"{where} uses '{ref.bind}', which step '{self.later[ref.bind]}' binds later",
                "a step may only use results of earlier steps; reorder the steps",
            )
        return error(
            ref.span,
            "unknown-binding",
            f"{where} uses '{ref.bind}', which no step binds",
            _suggest(ref.bind, self.bound) or "bind it on an earlier step with bind:",
        )

    def source(self, src: Source, where: str) -> list[Diagnostic | None]:
        """A step argument's or template binding's source: its argument, its result and field path, or the
        placeholders of its constant."""
        match src:
            case FromArg():
                return [self.argument(src.name, src.span, where)]
            case FromStep():
                return [self.result(src, where), _field_path(src, where)]
            case Const():
                return [
                    self.argument(ph, src.span, f"{where} (placeholder {{{ph}}})", placeholder=True)
                    for ph in src.placeholders
                ]
            case _:
                assert_never(src)

    def subject(self, subject: FromArg | FromStep, where: str, step: Step) -> Diagnostic | None:
        """A condition's subject: a declared argument, or a result an earlier step saves, by a sound field path."""
        match subject:
            case FromArg():
                return self.argument(subject.name, subject.span, where)
            case FromStep():
                return self.result(subject, where, saved_by=step.bind) or _field_path(subject, where)
            case _:
                assert_never(subject)


def _field_path(ref: FromStep, where: str) -> Diagnostic | None:
    if ref.field is None or fit.FIELD_PATH.fullmatch(ref.field):
        return None
    return error(ref.span, "bad-field-path", f"{where} has the field path '{ref.field}'", _FIELD_PATH_HINT)


# --------------------------------------------------------------------------------------------------------- steps


def _step_rules(wf: Workflow, tools_from_server: bool) -> list[Diagnostic]:
    """Each step's rules, in order; a step's references see the results of the steps before it."""
    refs = References.of(wf)
    tools = None if tools_from_server else _declared(wf.tools)
    names: set[str] = set()
    out: list[Diagnostic | None] = []
    for step in wf.steps:
        what = f"step '{step.name}'" if step.name else "a step"
        out.append(_step_name(step, names))
        out.extend(_acknowledgements(step, what))
        out.extend(_tool_or_resources(step, what, tools))
        out.extend(d for key, src in step.sources() for d in refs.source(src, f"{what}, '{key}'"))
        out.extend(check_conditions(step, what, refs))
        out.extend(_confirm_rules(step, what, refs))
        out.extend(_template_rules(step, what))
        out.append(_bind_rule(step, what, refs.bound))
    return [d for d in out if d is not None]


def _ask_rule(arg: Argument) -> Diagnostic:
    """``ask: true`` is for an optional argument: a required one is always given, so there is nothing to ask."""
    return error(
        arg.ask_span,
        "ask-on-required",
        f"argument '{arg.name}' is required and has ask: true; a required "
        "argument is always given, so it is never asked for",
        "remove ask, or make the argument optional (required: false) so the run asks for it when not given",
    )


def _confirm_rules(step: Step, what: str, refs: References) -> list[Diagnostic | None]:
    """``confirm:`` has a question, and each value it shows is a sound reference (the one resolver, as for the
    step's arguments). Its texts are :func:`projector.texts.text_problems`' to check."""
    confirm = step.confirm
    if confirm is None:
        return []
    found: list[Diagnostic | None] = []
    if not confirm.message.strip():
        found.append(
            error(
                confirm.message_span,
                "empty-confirm-message",
                f"the confirmation of {what} has an empty message",
                "write the question the person answers yes or no, e.g. 'Issue this refund?'",
            )
        )
    for i, src in enumerate(confirm.show, 1):
        found.extend(refs.source(src, f"{what}, value {i} of 'confirm.show'"))
    return found


def _step_name(step: Step, names: set[str]) -> Diagnostic | None:
    """A step has a name, used once; records it in ``names``."""
    seen = step.name in names
    names.add(step.name)
    if not step.name.strip():
        return error(step.span, "empty-name", "a step name is empty")
    if seen:
        return error(step.span, "duplicate-step", f"step name '{step.name}' is used twice", "step names are unique")
    return None


def _acknowledgements(step: Step, what: str) -> list[Diagnostic]:
    return [
        error(
            step.span,
            "unknown-acknowledgement",
            f"{what} acknowledges '{code}', which is not a warning that can be acknowledged",
            _suggest(code, ACKNOWLEDGEABLE) or f"acknowledgeable codes: {', '.join(ACKNOWLEDGEABLE)}",
        )
        for code, _reason in step.acknowledge
        if code not in ACKNOWLEDGEABLE
    ]


def _tool_or_resources(step: Step, what: str, tools: list[str] | None) -> list[Diagnostic | None]:
    """A step calls a listed tool (``tools`` None: the tools come from a server, :func:`fit.check_workflows`), or
    reads resources and nothing else."""
    if step.tool is not None:
        return (
            []
            if tools is None
            else [
                fit.unknown_tool(
                    step,
                    tools,
                    what=what,
                    at=step.tool_span if step.tool_span.line else step.span,
                    lacks="is not listed under tools",
                    then=("declare the tool under tools, or take it from a live server with --tools-from SERVER",),
                )
            ]
        )
    out = []
    if not step.resources:
        out.append(
            error(
                step.span,
                "empty-step",
                f"{what} has neither a tool nor resources",
                "give it a tool, or make it a resource-only step with at least one resource",
            )
        )
    if step.args:
        out.append(
            error(
                step.span,
                "resource-step-args",
                f"{what} is resource-only but has args",
                "args are passed to a tool; add a tool or remove the args",
            )
        )
    if step.bind:
        out.append(
            error(
                step.span,
                "resource-step-bind",
                f"{what} is resource-only but has a bind",
                "only a tool result can be bound; add a tool or remove the bind",
            )
        )
    return out


def _template_rules(step: Step, what: str) -> list[Diagnostic]:
    """Every ``{placeholder}`` of a resource URI is bound under ``template:``, and every binding is used."""
    placeholders = list(dict.fromkeys(ph for uri in step.resources for ph in PLACEHOLDER.findall(uri)))
    template = step.template_dict
    return [
        *(
            error(
                step.span,
                "unbound-placeholder",
                f"{what} reads a resource with the placeholder {{{ph}}}, which template does not bind",
                f"add template: {{{ph}: {{arg: ...}}}}",
            )
            for ph in placeholders
            if ph not in template
        ),
        *(
            error(
                src.span,
                "unused-template-binding",
                f"{what} binds the template variable '{key}', which no resource URI uses",
                _suggest(key, placeholders),
            )
            for key, src in step.template
            if key not in placeholders
        ),
    ]


def _bind_rule(step: Step, what: str, bound: dict[str, str]) -> Diagnostic | None:
    """A bind is not empty and not a bind of an earlier step; records it in ``bound`` for the steps after."""
    if step.bind is None:
        return None
    if not step.bind.strip():
        return error(step.span, "empty-name", f"{what} has an empty bind")
    if step.bind in bound:
        return error(
            step.span,
            "duplicate-binding",
            f"{what} binds '{step.bind}', which step '{bound[step.bind]}' already binds",
            "bindings are unique",
        )
    bound[step.bind] = step.name
    return None


# ---------------------------------------------------------------------------------------------------- conditions


def check_conditions(step: Step, what: str, refs: References) -> list[Diagnostic]:
    """The rules of a step's ``when:`` and ``on_fail:`` beyond their shape (the loader checks that): known operators
    with operands of the right kind, declared arguments, results saved by earlier steps, well-formed field paths.
    Whether a field path is in the saving tool's output schema is :mod:`projector.fit`'s check, the same one as for
    step arguments (``fit.check_steps``), so it holds for tools from ``--tools-from`` and ``attach()`` too."""
    found = [_on_fail_rule(step, what)]
    for cond in step.when:
        where = f"a condition of {what}" if len(step.when) > 1 else f"the condition of {what}"
        found.append(_operator_rule(cond, where))
        found.append(refs.subject(cond.subject, where, step))
    return [d for d in found if d is not None]


def _on_fail_rule(step: Step, what: str) -> Diagnostic | None:
    if step.on_fail not in ON_FAIL:
        return error(
            step.on_fail_span,
            "bad-on-fail",
            f"{what} has on_fail '{step.on_fail}'",
            _suggest(str(step.on_fail), ON_FAIL) or "on_fail is stop (the default) or skip",
        )
    if step.on_fail != "stop" and not step.when and step.confirm is None:
        return error(
            step.on_fail_span,
            "on-fail-without-when",
            f"{what} has on_fail but no when",
            "add the conditions under when:, or remove on_fail",
        )
    return None


def _operator_rule(cond: Condition, where: str) -> Diagnostic | None:
    """The operator is in the table, and its operand is of the kind the table says."""
    op = OPERATORS.get(cond.op)
    if op is None:
        return error(
            cond.span,
            "unknown-operator",
            f"unknown operator '{cond.op}' in {where}",
            _suggest(str(cond.op), OPERATORS) or f"the operators are {', '.join(OPERATORS)}",
        )
    return _operand_rule(op, cond, where)


def _operand_rule(op: Operator, cond: Condition, where: str) -> Diagnostic | None:
    kind = op.operand
    match kind:
        case "value":
            return None
        case "list":
            return (
                None
                if isinstance(cond.value, (list, tuple))
                else error(
                    cond.span,
                    "operator-needs-list",
                    f"'{cond.op}' in {where} needs a list of values",
                    f"write {cond.op}: [{literal(cond.value)}]",
                )
            )
        case "bool":
            return (
                None
                if isinstance(cond.value, bool)
                else error(cond.span, "wrong-type", f"'{cond.op}' in {where} must be true or false")
            )
        case _:
            assert_never(kind)


def collisions(workflows: list[Workflow]) -> list[Diagnostic]:
    """Two workflows whose names make the same skill name; the message names both files."""
    return name_collisions([(wf.name, wf.span, wf.source) for wf in workflows])


def name_collisions(named: list[tuple[str, Span, str]]) -> list[Diagnostic]:
    """:func:`collisions` over ``(workflow name, its span, its file)``."""
    problems: list[Diagnostic] = []
    seen: dict[str, tuple[str, Span, str]] = {}
    for name, span, source in named:
        slug = naming.skill_name(name)
        if not slug:
            continue
        if slug in seen:
            other, _, other_source = seen[slug]
            problems.append(
                error(
                    span,
                    "slug-collision",
                    f"workflow '{name}' ({source}) and workflow '{other}' ({other_source}) "
                    f"both make the skill name '{slug}'",
                    "rename one of them; skill names must be unique",
                )
            )
        else:
            seen[slug] = (name, span, source)
    return problems
