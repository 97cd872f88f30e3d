"""The rules of WORKFLOW-FORMAT.md that go beyond shape. Shared by the YAML loader and the Python builder, so a
workflow is held to the same rules however it was written. Returns every problem; raises nothing."""

from __future__ import annotations

import difflib
import math
import re
import unicodedata

from . import fit, naming
from .conditions import LIST_OPERATORS, ON_FAIL, OPERATORS, literal
from .gates import ACKNOWLEDGEABLE
from .errors import Diagnostic, Span, error
from .model import PLACEHOLDER, Const, FromArg, FromStep, Step, Tool, Workflow

MAX_DESCRIPTION = 1024
# What ``project-skill init`` writes for the description, and the mark that refuses it until the author replaces it.
PLACEHOLDER_MARK = "TODO(project-skill init)"
DESCRIPTION_PLACEHOLDER = f"{PLACEHOLDER_MARK}: say what this workflow does and when to use it"


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
    elif PLACEHOLDER_MARK in wf.description:
        err(wf.description_span, "placeholder-description", "the description is still the placeholder that "
            "`project-skill init` wrote", "replace it with what the workflow does and when to use it: it becomes "
            "the skill's description, which a model reads to decide whether to load the skill")
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
        elif p := _invisible_problem(wf.title_span, "the title", wf.title, one_line=True):
            diags.append(p)

    diags.extend(frontmatter_problems(wf))

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
                if src.field is not None and not fit.FIELD_PATH.fullmatch(src.field):
                    err(src.span, "bad-field-path", f"{where} has the field path '{src.field}'",
                        "a field path is names and list indexes joined by single dots: items.0.sku")
            elif isinstance(src, Const):
                for ph in src.placeholders:
                    check_arg(ph, src.span, f"{where} (placeholder {{{ph}}})", placeholder=True)

        diags.extend(check_conditions(step, what, arg_names, binds, later_binds))

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
    diags.extend(text_problems(wf))
    if not tools_from_server:
        diags.extend(fit.check_steps(wf))
    return diags


def check_conditions(step: Step, what: str, arg_names: list[str], binds: dict[str, str],
                     later_binds: dict[str, str]) -> list[Diagnostic]:
    """The rules of a step's ``when:`` and ``on_fail:`` beyond their shape (the loader checks that): known operators
    with operands of the right kind, declared arguments, results saved by earlier steps, well-formed field paths.
    Whether a field path is in the saving tool's output schema is :mod:`projector.fit`'s check, the same one as for
    step arguments (``fit.check_steps``), so it holds for tools from ``--tools-from`` and ``attach()`` too."""
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
        if not fit.FIELD_PATH.fullmatch(subject.field):
            out.append(error(subject.span, "bad-field-path", f"{where} has the field path '{subject.field}'",
                             "a field path is names and list indexes joined by single dots: items.0.sku"))
            continue
    return out


# ------------------------------------------------------------------------------------------------------ texts

# Every text of a workflow reaches SKILL.md, references/tools.md or skills.json. None may hold a control character
# other than tab and newline (a terminal escape, a bell, a carriage return that hides what precedes it), and the
# texts that the output prints on one line (names, keys, URIs: headings, list items, code spans) may not hold a line
# break either, or they could add headings of their own. Multi-line texts are made inert by the renderer instead.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Invisible characters make a text read differently from what it holds: bidirectional controls reorder what a reader
# sees (Trojan Source), zero-width characters and invisible operators hide inside words, and tag characters carry text
# no one sees ("ASCII smuggling" into a model). Refused in every text, as control characters are; in one-line texts
# (names, keys, URIs) every other format character (Unicode category Cf: a soft hyphen, ...) too.
_INVISIBLE = re.compile("[\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb"
                        "\U000e0000-\U000e007f]")
MAX_VALUE_DEPTH = 100  # as deep as the loader accepts a YAML document; JSON values are walked recursively later


MAX_COMPATIBILITY = 500
# The metadata keys the tool writes itself (projector.render): a workflow cannot set them.
RESERVED_METADATA = ("workflow", "workflow-digest")


def frontmatter_problems(wf: Workflow) -> list[Diagnostic]:
    """The rules of the Agent Skills fields a workflow passes to its frontmatter (skills-ref's validator holds the
    same): ``compatibility`` is 1-500 characters, ``license`` is not empty, ``metadata`` keys are not empty and
    are none of the keys the tool writes itself, and no text holds a control character."""
    problems: list[Diagnostic] = []
    for key, text, span in (("license", wf.license, wf.license_span),
                            ("compatibility", wf.compatibility, wf.compatibility_span)):
        if text is None:
            continue
        if not text.strip():
            problems.append(error(span, "empty-field", f"'{key}' of the workflow is empty",
                                  f"leave {key} out, or say what it is"))
        elif p := _text_problem(span, f"'{key}' of the workflow", text, one_line=False):
            problems.append(p)
    if wf.compatibility is not None and len(wf.compatibility) > MAX_COMPATIBILITY:
        problems.append(error(wf.compatibility_span, "compatibility-too-long",
                              f"'compatibility' is {len(wf.compatibility)} characters; Agent Skills allows "
                              f"{MAX_COMPATIBILITY}", "say only what the skill needs from its environment; move "
                              "the rest into instructions"))
    for (key, value), span in zip(wf.metadata, wf.metadata_spans or (wf.span,) * len(wf.metadata)):
        if key in RESERVED_METADATA:
            problems.append(error(span, "reserved-metadata-key", f"the metadata key '{key}' is one the tool writes "
                                  f"itself ({', '.join(RESERVED_METADATA)})",
                                  f"rename it (for example 'x-{key}'): metadata.workflow names the workflow prompt "
                                  "and metadata.workflow-digest is the version stamp of the bundle"))
        elif not key.strip():
            problems.append(error(span, "empty-field", "a metadata key of the workflow is empty", "name the key"))
        elif p := (_text_problem(span, f"the metadata key '{key}'", key, one_line=True)
                   or _text_problem(span, f"metadata.{key}", value, one_line=False)):
            problems.append(p)
    return problems


def _invisible_problem(span: Span, what: str, text: str, one_line: bool) -> Diagnostic | None:
    """``control-character`` for the first invisible character of ``text`` (:data:`_INVISIBLE`; in a one-line
    text, any format character), or None."""
    if one_line:
        found = next((c for c in text if unicodedata.category(c) == "Cf" or _INVISIBLE.match(c)), None)
    else:
        m = _INVISIBLE.search(text)
        found = m.group(0) if m else None
    if found is None:
        return None
    name = unicodedata.name(found, "")
    return error(span, "control-character", f"{what} contains the invisible format character U+{ord(found):04X}"
                 + (f" ({name})" if name else ""), "remove it: a bidirectional control or an invisible character "
                 "makes a text read differently from what it holds")


def _text_problem(span: Span, what: str, text: str, one_line: bool) -> Diagnostic | None:
    if m := _CONTROL.search(text):
        return error(span, "control-character", f"{what} contains the control character U+{ord(m.group(0)):04X}",
                     "write plain text: remove it (line breaks and tabs are fine in multi-line texts)")
    if p := _invisible_problem(span, what, text, one_line):
        return p
    if one_line and "\n" in text:
        return error(span, "line-break", f"{what} contains a line break", "it is printed on one line (a heading, "
                     "a list item, a code span): write it on one line")
    return None


def _value_problem(span: Span, what: str, value: object) -> Diagnostic | None:
    """The first problem of a JSON value (a constant, an input schema, annotations): a control character in any
    string or key, a number JSON cannot carry (NaN, infinity), or more nesting than :data:`MAX_VALUE_DEPTH`.
    Walked without recursion, so a value built in Python cannot exhaust the stack here."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, str):
            if p := _text_problem(span, what, v, one_line=False):
                return p
        elif isinstance(v, float) and not math.isfinite(v):
            return error(span, "bad-number", f"{what} holds {v}, which is not a finite number",
                         "JSON has no NaN or infinity: write a finite number")
        elif isinstance(v, (dict, list, tuple)):
            if depth > MAX_VALUE_DEPTH:
                return error(span, "too-deep", f"{what} nests deeper than {MAX_VALUE_DEPTH} levels",
                             "flatten the value")
            if isinstance(v, dict):
                stack.extend((k, depth) for k in reversed(list(v)))
                stack.extend((x, depth + 1) for x in reversed(list(v.values())))
            else:
                stack.extend((x, depth + 1) for x in reversed(v))
    return None


def text_problems(wf: Workflow) -> list[Diagnostic]:
    """Control characters in any text, line breaks in one-line texts, and unsound JSON values: one diagnostic per
    text, at the nearest position the model keeps. Also run on tools taken from a live server (--tools-from)."""
    found: list[Diagnostic | None] = [
        _text_problem(wf.span, "the workflow name", wf.name, one_line=True),
        _text_problem(wf.description_span, "the description", wf.description, one_line=False),
    ]
    for a in wf.arguments:
        found.append(_text_problem(a.span, f"the name of argument {a.name!r}", a.name, one_line=True))
        found.append(_text_problem(a.span, f"the description of argument {a.name!r}", a.description, one_line=False))
    for ins in wf.instructions:
        found.append(_text_problem(ins.span, "an instruction", ins.text, one_line=False))
    found.extend(tool_problems(wf.tools))
    for step in wf.steps:
        what = f"step {step.name!r}"
        found.append(_text_problem(step.span, f"the name of {what}", step.name, one_line=True))
        for label, value in (("tool", step.tool), ("bind", step.bind)):
            if value is not None:
                found.append(_text_problem(step.span, f"the {label} of {what}", value, one_line=True))
        if step.guidance is not None:
            found.append(_text_problem(step.guidance_span, f"the guidance of {what}", step.guidance, one_line=False))
        for uri in step.resources:
            found.append(_text_problem(step.span, f"a resource URI of {what}", uri, one_line=True))
        for key, src in step.sources():
            where = f"{what}, {key!r}"
            found.append(_text_problem(step.span, f"an argument name of {what}", key, one_line=True))
            if isinstance(src, FromArg):
                found.append(_text_problem(src.span, where, src.name, one_line=True))
            elif isinstance(src, FromStep):
                for part in (src.bind, src.field or ""):
                    found.append(_text_problem(src.span, where, part, one_line=True))
            elif isinstance(src, Const):
                found.append(_value_problem(src.span, f"the constant of {where}", src.value))
        for cond in step.when:
            subject = cond.subject
            if isinstance(subject, FromArg):
                found.append(_text_problem(subject.span, f"a condition of {what}", subject.name, one_line=True))
            elif isinstance(subject, FromStep):
                for part in (subject.bind, subject.field or ""):
                    found.append(_text_problem(subject.span, f"a condition of {what}", part, one_line=True))
            found.append(_value_problem(cond.span, f"the value of a condition of {what}", cond.value))
    return [d for d in found if d is not None]


def tool_problems(tools: tuple[Tool, ...] | list[Tool]) -> list[Diagnostic]:
    """:func:`text_problems` for tool declarations alone (a file's, or a live server's)."""
    found: list[Diagnostic | None] = []
    for t in tools:
        what = f"tool {t.name!r}"
        found.append(_text_problem(t.span, f"the name of {what}", t.name, one_line=True))
        found.append(_text_problem(t.span, f"the description of {what}", t.description, one_line=False))
        for label, value in (("input schema", t.input_schema), ("output schema", t.output_schema),
                             ("annotations", t.annotations)):
            found.append(_value_problem(t.span, f"the {label} of {what}", value))
    return [d for d in found if d is not None]


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
