"""The rules of WORKFLOW-FORMAT.md that go beyond shape. Shared by the YAML loader and the Python builder, so a
workflow is held to the same rules however it was written. Returns every problem; raises nothing."""

from __future__ import annotations

import difflib
import re
import unicodedata

from . import fit, naming
from .conditions import LIST_OPERATORS, ON_FAIL, OPERATORS, literal
from .gates import ACKNOWLEDGEABLE
from .errors import Diagnostic, Span, error
from .model import PLACEHOLDER, Const, FromArg, FromStep, Step, Workflow

MAX_DESCRIPTION = 1024
_FIELD_PATH = re.compile(r"^[^.]+(\.[^.]+)*$")


def _suggest(word: str, options: list[str]) -> str | None:
    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else None


def validate(wf: Workflow, *, tools_from_server: bool = False) -> list[Diagnostic]:
    """Every rule of the format that ``wf`` breaks. With ``tools_from_server`` the steps' tools come from a server
    (``--tools-from``, ``attach()``): a tool not listed under ``tools:`` is not an error here, and the steps are fitted
    to the tools by the caller, once it has them (:mod:`projector.fit`)."""
    diags: list[Diagnostic] = []

    def err(span: Span, code: str, message: str, hint: str | None = None) -> None:
        diags.append(error(span, code, message, hint))

    if not wf.name.strip():
        err(wf.span, "empty-name", "the workflow name is empty")
    else:
        problem = naming.name_problem(wf.name)
        if problem:
            err(wf.span, *problem)
    if not wf.description.strip():
        err(wf.description_span, "empty-description", "the workflow description is empty",
            "a skill needs a description of 1 to 1024 characters")
    elif bad := [c for c in wf.description if c not in "\n\t" and unicodedata.category(c) == "Cc"]:
        err(wf.description_span, "control-character",
            f"the description contains the control character U+{ord(bad[0]):04X}",
            "a skill description is plain text: remove it (line breaks and tabs are fine)")
    elif len(wf.description) > MAX_DESCRIPTION:
        err(wf.description_span, "description-too-long",
            f"the description is {len(wf.description)} characters; a skill description allows {MAX_DESCRIPTION}",
            "move detail into instructions or step guidance")
    if wf.title is not None:
        if not wf.title.strip():
            err(wf.title_span, "empty-name", "the title is empty", "leave title out to take the heading from the name")
        elif any(unicodedata.category(c) == "Cc" for c in wf.title):
            err(wf.title_span, "control-character", "the title contains a line break or another control character",
                "a title is one line of plain text")

    arg_names: list[str] = []
    for a in wf.arguments:
        if not a.name.strip():
            err(a.span, "empty-name", "an argument name is empty")
        elif a.name in arg_names:
            err(a.span, "duplicate-argument", f"argument '{a.name}' is declared twice")
        else:
            arg_names.append(a.name)
    tool_names: list[str] = []
    for t in wf.tools:
        if not t.name.strip():
            err(t.span, "empty-name", "a tool name is empty")
        elif t.name in tool_names:
            err(t.span, "duplicate-tool", f"tool '{t.name}' is declared twice")
        else:
            tool_names.append(t.name)
    for ins in wf.instructions:
        if not ins.text.strip():
            err(ins.span, "empty-instruction", "an instruction has no text")

    all_binds = [s.bind for s in wf.steps if s.bind]

    def check_arg(name: str, span: Span, where: str, placeholder: bool = False) -> None:
        if name in arg_names:
            return
        if placeholder and name.split(".")[0] in all_binds:
            err(span, "undeclared-argument", f"{where} names '{name}', a step result; placeholders take prompt "
                "arguments only", f"pass the result as a source of its own ({{step: {name.split('.')[0]}, field: ...}}); "
                "in a resource URI, bind a template variable to it under the step's template:")
            return
        err(span, "undeclared-argument", f"{where} uses the argument '{name}', which is not declared",
            _suggest(name, arg_names) or "declare it under arguments")

    if not wf.steps:
        err(wf.span, "missing-key", "the workflow has no steps", "add at least one step")
    step_names: set[str] = set()
    binds: dict[str, str] = {}  # bind -> step that made it
    later_binds = {s.bind: s.name for s in wf.steps if s.bind}
    for step in wf.steps:
        what = f"step '{step.name}'" if step.name else "a step"
        if not step.name.strip():
            err(step.span, "empty-name", "a step name is empty")
        elif step.name in step_names:
            err(step.span, "duplicate-step", f"step name '{step.name}' is used twice", "step names are unique")
        step_names.add(step.name)

        for code, _reason in step.acknowledge:
            if code not in ACKNOWLEDGEABLE:
                err(step.span, "unknown-acknowledgement", f"{what} acknowledges '{code}', which is not a warning "
                    "that can be acknowledged", _suggest(code, list(ACKNOWLEDGEABLE))
                    or f"acknowledgeable codes: {', '.join(ACKNOWLEDGEABLE)}")

        if step.tool is None:
            if not step.resources:
                err(step.span, "empty-step", f"{what} has neither a tool nor resources",
                    "give it a tool, or make it a resource-only step with at least one resource")
            if step.args:
                err(step.span, "resource-step-args", f"{what} is resource-only but has args",
                    "args are passed to a tool; add a tool or remove the args")
            if step.bind:
                err(step.span, "resource-step-bind", f"{what} is resource-only but has a bind",
                    "only a tool result can be bound; add a tool or remove the bind")
        elif step.tool not in tool_names and not tools_from_server:
            err(step.span, "unknown-tool", f"{what} calls the tool '{step.tool}', which is not listed under tools",
                "; ".join(p for p in (_suggest(step.tool, tool_names), "declare the tool under tools, or take it "
                                      "from a live server with --tools-from SERVER") if p))

        for key, src in step.sources():
            where = f"{what}, '{key}'"
            if isinstance(src, FromArg):
                check_arg(src.name, src.span, where)
            elif isinstance(src, FromStep):
                if src.bind not in binds:
                    if src.bind in later_binds:
                        err(src.span, "forward-binding",
                            f"{where} uses '{src.bind}', which step '{later_binds[src.bind]}' binds later",
                            "a step may only use results of earlier steps; reorder the steps")
                    else:
                        err(src.span, "unknown-binding", f"{where} uses '{src.bind}', which no step binds",
                            _suggest(src.bind, list(binds)) or "bind it on an earlier step with bind:")
                if src.field is not None and not _FIELD_PATH.match(src.field):
                    err(src.span, "bad-field-path", f"{where} has the field path '{src.field}'",
                        "a field path is names and list indexes joined by single dots: items.0.sku")
            elif isinstance(src, Const):
                for ph in src.placeholders:
                    check_arg(ph, src.span, f"{where} (placeholder {{{ph}}})", placeholder=True)

        diags.extend(check_conditions(wf, step, what, arg_names, binds, later_binds))

        placeholders: list[str] = []
        for uri in step.resources:
            for ph in PLACEHOLDER.findall(uri):
                if ph not in placeholders:
                    placeholders.append(ph)
        template = step.template_dict
        for ph in placeholders:
            if ph not in template:
                err(step.span, "unbound-placeholder", f"{what} reads a resource with the placeholder {{{ph}}}, "
                    "which template does not bind", f"add template: {{{ph}: {{arg: ...}}}}")
        for key, src in step.template:
            if key not in placeholders:
                err(src.span, "unused-template-binding", f"{what} binds the template variable '{key}', "
                    "which no resource URI uses", _suggest(key, placeholders))

        if step.bind is not None:
            if not step.bind.strip():
                err(step.span, "empty-name", f"{what} has an empty bind")
            elif step.bind in binds:
                err(step.span, "duplicate-binding", f"{what} binds '{step.bind}', which step "
                    f"'{binds[step.bind]}' already binds", "bindings are unique")
            else:
                binds[step.bind] = step.name
    if not tools_from_server:
        diags.extend(fit.check_steps(wf))
    return diags


def check_conditions(wf: Workflow, step: Step, what: str, arg_names: list[str], binds: dict[str, str],
                     later_binds: dict[str, str]) -> list[Diagnostic]:
    """The rules of a step's ``when:`` and ``on_fail:`` beyond their shape (the loader checks that): known operators
    with operands of the right kind, declared arguments, results saved by earlier steps, field paths that the saving
    tool's output schema has, where it declares one."""
    out: list[Diagnostic] = []
    if step.on_fail not in ON_FAIL:
        out.append(error(step.on_fail_span, "bad-on-fail", f"{what} has on_fail '{step.on_fail}'",
                         _suggest(str(step.on_fail), list(ON_FAIL)) or "on_fail is stop (the default) or skip"))
    elif step.on_fail != "stop" and not step.when:
        out.append(error(step.on_fail_span, "on-fail-without-when", f"{what} has on_fail but no when",
                         "add the conditions under when:, or remove on_fail"))
    for cond in step.when:
        where = f"a condition of {what}" if len(step.when) > 1 else f"the condition of {what}"
        if cond.op not in OPERATORS:
            out.append(error(cond.span, "unknown-operator", f"unknown operator '{cond.op}' in {where}",
                             _suggest(str(cond.op), list(OPERATORS)) or f"the operators are {', '.join(OPERATORS)}"))
        elif cond.op in LIST_OPERATORS and not isinstance(cond.value, (list, tuple)):
            out.append(error(cond.span, "operator-needs-list", f"'{cond.op}' in {where} needs a list of values",
                             f"write {cond.op}: [{literal(cond.value)}]"))
        elif cond.op == "exists" and not isinstance(cond.value, bool):
            out.append(error(cond.span, "wrong-type", f"'exists' in {where} must be true or false"))
        subject = cond.subject
        if isinstance(subject, FromArg):
            if subject.name not in arg_names:
                out.append(error(subject.span, "undeclared-argument", f"{where} uses the argument '{subject.name}', "
                                 "which is not declared", _suggest(subject.name, arg_names) or
                                 "declare it under arguments"))
            continue
        if subject.bind not in binds:
            if subject.bind == step.bind:
                out.append(error(subject.span, "forward-binding", f"{where} uses '{subject.bind}', which this step "
                                 "saves itself", "a condition is checked before its step runs; it can use only "
                                 "results of earlier steps"))
            elif subject.bind in later_binds:
                out.append(error(subject.span, "forward-binding", f"{where} uses '{subject.bind}', which step "
                                 f"'{later_binds[subject.bind]}' binds later",
                                 "a step may only use results of earlier steps; reorder the steps"))
            else:
                out.append(error(subject.span, "unknown-binding", f"{where} uses '{subject.bind}', which no step "
                                 "binds", _suggest(subject.bind, list(binds)) or "bind it on an earlier step with "
                                 "bind:"))
            continue
        if subject.field is None:
            continue
        if not _FIELD_PATH.match(subject.field):
            out.append(error(subject.span, "bad-field-path", f"{where} has the field path '{subject.field}'",
                             "a field path is names and list indexes joined by single dots: items.0.sku"))
            continue
        saver = wf.step_for_bind(subject.bind)
        tool = wf.tool(saver[1].tool) if saver and saver[1].tool else None
        schema = getattr(tool, "output_schema", None)  # declared by the workflow, or by --tools-from
        at = missing_field(schema, subject.path)
        if tool is not None and at is not None:
            part = str(subject.path[at])
            out.append(error(subject.span, "bad-field-path",
                             f"{where} reads the field '{subject.field}' of '{subject.bind}', but the output schema "
                             f"of the tool '{tool.name}' has no '{part}' there",
                             _suggest(part, _properties(schema, subject.path[:at]))
                             or "check the field's name against the tool's outputSchema"))
    return out


def _sub_schema(schema: object, part: str | int) -> object:
    """The schema of one field of a value that ``schema`` describes; None when it is not known."""
    if not isinstance(schema, dict):
        return None
    props = schema.get("properties")
    if isinstance(props, dict) and str(part) in props:
        return props[str(part)]
    items = schema.get("items")
    if isinstance(part, int) and isinstance(items, dict):
        return items
    return None


def _closed(schema: object, part: str | int) -> bool:
    """Whether ``schema`` says for certain that a value it describes has no field ``part``: it lists its properties,
    ``part`` is not among them, nothing else may add it (no ``additionalProperties``/``patternProperties``, no
    combinators or references)."""
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return False
    if any(k in schema for k in ("$ref", "allOf", "anyOf", "oneOf", "if", "patternProperties", "$dynamicRef")):
        return False
    extra = schema.get("additionalProperties")
    if extra not in (None, False):
        return False
    return str(part) not in schema["properties"] and not (isinstance(part, int) and "items" in schema)


def missing_field(schema: object, path: tuple[str | int, ...]) -> int | None:
    """The index of the first part of ``path`` that an output schema, where declared, certainly does not have; else
    None (also when nothing is declared, or the schema cannot tell)."""
    for i, part in enumerate(path):
        if _closed(schema, part):
            return i
        schema = _sub_schema(schema, part)
        if schema is None:
            return None
    return None


def _properties(schema: object, path: tuple[str | int, ...]) -> list[str]:
    for part in path:
        schema = _sub_schema(schema, part)
    props = schema.get("properties") if isinstance(schema, dict) else None
    return list(props) if isinstance(props, dict) else []


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
            problems.append(error(span, "slug-collision",
                                  f"workflow '{name}' ({source}) and workflow '{other}' ({other_source}) "
                                  f"both make the skill name '{slug}'",
                                  "rename one of them; skill names must be unique"))
        else:
            seen[slug] = (name, span, source)
    return problems
