"""Do a workflow's steps fit the tools they call? One implementation for ``build``, ``check``, ``--tools-from``,
``attach()`` and every other adapter (they differ only in where the tools come from).

For each tool step, against the tool's ``input_schema``:

- ``missing-parameter``: a parameter the schema requires is not given;
- ``unknown-parameter``: a given parameter is not among the schema's ``properties``, and the schema does not allow
  others (``additionalProperties`` is absent or false, and no ``patternProperties`` matches). A schema without
  ``properties`` says nothing about names, so it accepts any. Reported at the key. When the name is a near miss of a
  required parameter that is not given (``repo`` for ``repo_path``), that is one misspelling: one
  ``unknown-parameter`` that names it, and no ``missing-parameter``;
- ``parameter-type``: a constant is not valid against the parameter's schema (checked by ``jsonschema``, imported
  only when a constant needs it, its regular expressions matched in linear time by RE2: see
  :mod:`projector.toolschema`; a step's constants are not checked against a schema with a pattern RE2 cannot
  read), or a prompt argument's declared ``type`` (string when not declared) is not a type
  the parameter takes;
- ``bad-input-schema``: the tool's input schema is broken where a constant meets it (an unknown type, a ``$ref``
  that resolves nowhere), so the constant cannot be checked;
- the keywords about the names as a whole (:func:`projector.toolschema.object_problems`): a name ``propertyNames``
  refuses is ``unknown-parameter`` at the key, more names than ``maxProperties`` is ``unknown-parameter``, and a
  name given without one that ``dependentRequired`` asks with it is ``missing-parameter``.

And for each ``{step: BIND, field: PATH}`` (a step's argument or template binding, or the subject of one of its
``when:`` conditions), against the ``output_schema`` of the tool that made BIND, when it declares one (inside the
SDKs' ``{result: x}`` envelope, where a run saves ``x``): ``bad-field-path`` when the path leaves the schema (a name not among declared ``properties`` of a schema
that does not allow others, an index on something that is not a list, a name on a list). When that tool declares
no ``output_schema`` at all, its result is text (the SDKs send structured content only for a tool that declares an
``outputSchema``), which has no fields: :func:`unstructured_reads` makes that the warning ``unstructured-result``
at the path, which :func:`projector.gates.check` reports with the step's other warnings (so it can be acknowledged on
the step and ``--strict`` fails on it). It rests on the tools the workflow ends up with, its own or those of
``--tools-from`` (a server or a snapshot). :func:`returns_text` is the one test of "this tool returns text".

And for a server about to serve skills, :func:`check_prompts`: a skill whose SKILL.md names a workflow prompt
(``metadata.workflow``) that the server does not offer is ``missing-workflow-prompt``.

And :func:`unknown_tool`, the one ``unknown-tool`` rule (a step calls a tool its tools do not have), for the
workflow's own tools (:mod:`projector.validate`), a server's (:func:`check_workflows`) and ``--tools-from``'s.
What a JSON Schema says (its properties, types, field paths) is read by :mod:`projector.toolschema`.

Every problem comes back at once, as data. Nothing here imports ``mcp``.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from .errors import Diagnostic, Span, closest, error, suggest
from .model import Const, FromArg, FromStep, Source, Step, Tool, Workflow
from .results import returns_text as _returns_text
from .toolschema import (
    argument_errors,
    field_problem,
    json_type,
    json_types,
    object_problems,
    open_to,
    properties,
    type_words,
    wraps_result,
)

# A field path: names and list indexes joined by single dots (items.0.sku).
FIELD_PATH = re.compile(r"^[^.]+(\.[^.]+)*$")
# A prompt argument's declared type -> the JSON types its value can have.
ARG_JSON_TYPES = {"string": {"string"}, "integer": {"integer"}, "number": {"number", "integer"}, "boolean": {"boolean"}}


def as_tool(name: str, value: Any) -> Tool:
    """A tool description as the model's :class:`Tool`: a ``Tool`` as is, an ``mcp_types.Tool`` (or anything with
    the same attributes), or a bare input schema (a dict, or None)."""
    if isinstance(value, Tool):
        return value
    if value is None or isinstance(value, dict):
        return Tool(name=name, input_schema=value)
    return from_listing(value)


def from_listing(t: Any) -> Tool:
    """A ``tools/list`` entry (an ``mcp_types.Tool``, duck-typed so the core need not import ``mcp``)."""
    ann = getattr(t, "annotations", None)
    if ann is not None and hasattr(ann, "model_dump"):
        ann = ann.model_dump(by_alias=True, exclude_none=True, mode="json")
    return Tool(
        name=t.name,
        description=getattr(t, "description", None) or "",
        input_schema=getattr(t, "input_schema", None),
        annotations=ann or None,
        output_schema=getattr(t, "output_schema", None),
    )


def from_wire(entry: Mapping[str, Any]) -> Tool:
    """A ``tools/list`` entry as its JSON carries it (``inputSchema``, ``outputSchema``, ``annotations``): what a
    tools snapshot holds, and what a live server's listing is turned into, so both are read by the same code."""
    return Tool(
        name=entry["name"],
        description=entry.get("description") or "",
        input_schema=entry.get("inputSchema"),
        annotations=entry.get("annotations") or None,
        output_schema=entry.get("outputSchema"),
    )


def _label(wf: Workflow, step: Step) -> str:
    """How a step is named in a message; a workflow built in code has no file position, so it is named too."""
    if step.span.line:
        return f"step '{step.name}'"
    return f"workflow '{wf.name}', step '{step.name}'"


def _at(span: Span, step: Step, wf: Workflow) -> Span:
    if span.line:
        return span
    return step.span if step.span.line else Span(wf.source)


def _show(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ------------------------------------------------------------------------------------------------- declarations


def fill_declared(declared: Tool, served: Tool) -> tuple[Tool, tuple[str, ...]]:
    """The tool a server serves (``served``), with the fields it leaves out taken from the workflow's declaration of
    it (``declared``): its annotations when it declares none, its output schema when it declares none. Returns the
    tool and what was filled (``"annotations"``, ``"output_schema"``), for the caller's note. A field the server does
    declare is never replaced: a declaration that differs there is the caller's ``tool-mismatch``."""
    filled = tuple(
        name
        for name in ("annotations", "output_schema")
        if getattr(served, name) is None and getattr(declared, name) is not None
    )
    if not filled:
        return served, ()
    return replace(served, **{name: getattr(declared, name) for name in filled}), filled


def undeclared_by(declared: Tool, served: Tool) -> Tool:
    """``declared`` without the fields that :func:`fill_declared` fills (those ``served`` does not declare): what is
    left is what the two must agree on."""
    return replace(
        declared, **{name: None for name in ("annotations", "output_schema") if getattr(served, name) is None}
    )


# ------------------------------------------------------------------------------------------------- input schemas


def _describe(wf: Workflow, src: Source) -> str:
    if isinstance(src, Const):
        return f"the {json_type(src.value)} {_show(src.value)}"
    if isinstance(src, FromArg):
        a = wf.argument(src.name)
        return f"the input '{src.name}' ({(a.type if a and a.type else 'string')})"
    return f"the result '{src.bind}'"


def _unknown(schema: dict[str, Any], props: dict[str, Any], name: str) -> bool:
    """Whether ``name`` is not a parameter of an input schema with declared ``properties`` that allows no others."""
    return bool(props) and name not in props and not open_to(schema, name)


def _misspelled(step: Step, schema: dict[str, Any], props: dict[str, Any], given: dict[str, Source]) -> dict[str, str]:
    """Unknown parameter -> the required parameter it misspells: the closest of those not given (``repo`` for
    ``repo_path``). Each missing parameter is claimed by the first unknown one, in the order the step writes them;
    the two are then one problem, reported once, at the key."""
    missing = [n for n in _required(schema) if n not in given]
    meant: dict[str, str] = {}
    for name, _src in step.args:
        if not missing:
            break
        if _unknown(schema, props, name) and (close := closest(name, missing)) is not None:
            meant[name] = close
            missing.remove(close)
    return meant


def _check_arguments(wf: Workflow, step: Step, tool: Tool, broken: set[str]) -> list[Diagnostic]:
    schema = tool.input_schema
    if not isinstance(schema, dict):
        return []
    props = properties(schema)
    meant = _misspelled(step, schema, props, step.args_dict)
    keys = dict(step.arg_spans)
    out: list[Diagnostic] = []
    consts: dict[str, Any] = {}
    for name, src in step.args:
        if _unknown(schema, props, name):
            at = _at(keys.get(name, src.span), step, wf)  # the key is what is wrong, not its value
            out.append(_unknown_parameter(wf, step, tool, name, at, meant.get(name), props))
        elif isinstance(src, Const) and not src.placeholders:
            consts[name] = src.value
        elif not isinstance(src, FromStep):  # a result's type is known only when the step has run
            out.extend(_kind_problem(wf, step, tool, name, src, props.get(name)))
    if consts:
        out.extend(_constant_problems(wf, step, tool, consts, broken))
    out.extend(_missing_parameters(wf, step, tool, schema, meant))
    known = [name for name, _src in step.args if not _unknown(schema, props, name)]  # unknown ones are said above
    what = _label(wf, step)
    out.extend(
        error(_at(keys.get(name, step.span) if name else step.span, step, wf), code, f"{what} {message}", hint)
        for code, name, message, hint in object_problems(schema, [n for n, _s in step.args], known, tool.name)
    )
    return out


def _unknown_parameter(
    wf: Workflow, step: Step, tool: Tool, name: str, at: Span, meant: str | None, props: dict[str, Any]
) -> Diagnostic:
    """``unknown-parameter`` at the key; when it misspells a required parameter not given, it names that one."""
    what = _label(wf, step)
    if meant is not None:
        return error(
            at,
            "unknown-parameter",
            f"{what} passes '{name}', which is not a parameter of the tool "
            f"'{tool.name}'; the tool requires '{meant}', which is not given",
            f"did you mean '{meant}'?",
        )
    return error(
        at,
        "unknown-parameter",
        f"{what} passes '{name}', which is not a parameter of the tool '{tool.name}'",
        suggest(name, props) or f"its parameters: {', '.join(sorted(props))}",
    )


def _kind_problem(wf: Workflow, step: Step, tool: Tool, name: str, src: FromArg | Const, prop: Any) -> list[Diagnostic]:
    """``parameter-type`` when a prompt argument's declared type, or a text with placeholders (a string), is not a
    type the parameter takes."""
    kinds = json_types(prop)
    if isinstance(src, Const):  # a string with {placeholders}: its text is known only at run time
        gives = {"string"}
    else:
        a = wf.argument(src.name)
        gives = ARG_JSON_TYPES.get((a.type if a else None) or "string", {"string"})
    if kinds is None or gives & kinds:
        return []
    if isinstance(src, Const):
        hint = "a text with {placeholders} is a string; pass the input itself instead ({arg: NAME})"
    else:
        fits = [t for t in ("string", "integer", "number", "boolean") if ARG_JSON_TYPES[t] & kinds]
        hint = (
            f"declare the argument with type: {fits[0]}"
            if fits
            else f"a prompt argument cannot carry {type_words(kinds)}; pass a step result or a constant"
        )
    return [
        error(
            _at(src.span, step, wf),
            "parameter-type",
            f"{_label(wf, step)} passes {_describe(wf, src)} as '{name}', but the tool '{tool.name}' takes "
            f"{type_words(kinds)} there",
            hint,
        )
    ]


def _constant_problems(
    wf: Workflow, step: Step, tool: Tool, consts: dict[str, Any], broken: set[str]
) -> list[Diagnostic]:
    """The constants of one step against the tool's input schema: ``parameter-type`` for each one it refuses, or
    ``bad-input-schema`` once per tool (``broken``) when the schema itself cannot be used."""
    assert isinstance(tool.input_schema, dict)
    found = argument_errors(tool.input_schema, consts)
    if isinstance(found, str):
        if tool.name in broken:
            return []
        broken.add(tool.name)
        return [
            error(
                _at(tool.span, step, wf),
                "bad-input-schema",
                f"the input schema of the tool '{tool.name}' is not a valid JSON Schema: {found}",
                "fix the schema where the tool is declared (the file, or the server)",
            )
        ]
    given = step.args_dict
    return [
        error(
            _at(given[name].span, step, wf),
            "parameter-type",
            f"{_label(wf, step)} passes {_describe(wf, given[name])} as '{name}', which the tool "
            f"'{tool.name}' does not accept: {message}",
            "give a constant that the parameter's schema accepts (quotes make a string)",
        )
        for name, message in found.items()
    ]


def _missing_parameters(
    wf: Workflow, step: Step, tool: Tool, schema: dict[str, Any], meant: dict[str, str]
) -> list[Diagnostic]:
    given = step.args_dict
    return [
        error(
            _at(step.span, step, wf),
            "missing-parameter",
            f"{_label(wf, step)} does not give '{name}', which the tool '{tool.name}' requires",
            f"add it under args: {name}: {{arg: ...}}, {{step: ...}} or {{const: ...}}",
        )
        for name in _required(schema)
        if name not in given and name not in meant.values()
    ]


# ------------------------------------------------------------------------------------------------ output schemas


def _field_reads(step: Step) -> list[tuple[str, FromStep]]:
    """Every ``{step: BIND, field: PATH}`` a step reads, with how a message names it: its arguments and template
    bindings (by key), the values its confirmation shows, and its ``when:`` conditions' subjects."""
    reads = [(f"'{key}'", src) for key, src in step.sources() if isinstance(src, FromStep)]
    if step.confirm is not None:
        reads += [
            (f"value {i} of 'confirm.show'", src)
            for i, src in enumerate(step.confirm.show, 1)
            if isinstance(src, FromStep)
        ]
    for cond in step.when:
        if isinstance(cond.subject, FromStep):
            reads.append(("a condition" if len(step.when) > 1 else "the condition", cond.subject))
    return reads


def _check_fields(wf: Workflow, step: Step, tools: Mapping[str, Tool], made_by: dict[str, Step]) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for who, src in _field_reads(step):
        if src.field is None or not FIELD_PATH.fullmatch(src.field):
            continue  # a malformed path is the validator's bad-field-path, reported once
        maker = made_by.get(src.bind)
        tool = tools.get(maker.tool) if maker is not None and maker.tool else None
        if tool is None or not isinstance(tool.output_schema, dict) or returns_text(tool):
            continue  # a text (the SDKs' wrapper of a string too) is unstructured_reads' warning
        schema = tool.output_schema
        problem = field_problem(schema["properties"]["result"] if wraps_result(schema) else schema, src.path, schema)
        if problem:
            out.append(
                error(
                    _at(src.span, step, wf),
                    "bad-field-path",
                    f"{_label(wf, step)}, {who}, reads '{src.field}' of '{src.bind}', which the output "
                    f"schema of the tool '{tool.name}' does not have: {problem}",
                    "correct the field path, or correct the tool's output_schema",
                )
            )
    return out


def returns_text(tool: Tool | None) -> bool:
    """Whether ``tool`` returns text: it declares no output schema, or only the SDKs' wrapper of a string, so a
    call's result is a text, read by the one rule of :mod:`projector.results`. False for an unknown tool."""
    return _returns_text(tool)


def unstructured_reads(wf: Workflow, step: Step, *, skills_only: bool = False) -> list[Diagnostic]:
    """``unstructured-result``: each ``{step: BIND, field: PATH}`` of ``step`` (its arguments, its template bindings,
    its ``when:`` subjects, in that order) into the result of a tool that returns text (:func:`returns_text`).
    The tools are the workflow's own (after ``--tools-from``, the source's). A warning at the path, acknowledgeable
    on the step; ``skills_only`` words it for a build that serves no workflow prompt. The result's text could still be JSON that has the field (a run parses JSON text),
    which only the author can know: that is what an acknowledgement says."""
    reads: list[tuple[str, FromStep]] = []  # (what the server-side run then does, the read)
    required = step_required(wf, step)
    for key, src in step.args:
        if isinstance(src, FromStep):
            reads.append(("hands the step over to the client" if key in required else f"leaves '{key}' out", src))
    for _key, src in step.template:
        if isinstance(src, FromStep):
            reads.append(("hands the step over to the client", src))
    for cond in step.when:
        if isinstance(cond.subject, FromStep):
            reads.append(("skips the step" if step.on_fail == "skip" else "stops there", cond.subject))
    out: list[Diagnostic] = []
    for run, src in reads:
        made = wf.step_for_bind(src.bind)
        tool = wf.tool(made[1].tool) if made is not None and made[1].tool else None
        if src.field is None or not returns_text(tool):
            continue
        assert tool is not None
        subject = f"{src.bind}.{src.field}"
        # the server-side run's own words (projector.server.workflow): a condition's, and a source's
        why = (
            f"`{subject}` is missing"
            if run in ("stops there", "skips the step")
            else f"the result saved as `{src.bind}` has no field `{src.field}`"
        )
        then = (
            "the model is told to read a field that the text does not have"
            if skills_only
            else f"the server-side run {run} on every call ({why})"
        )
        out.append(
            Diagnostic(
                _at(src.span, step, wf),
                "warning",
                "unstructured-result",
                f"{_label(wf, step)} reads '{subject}', but the tool '{tool.name}' (which saves '{src.bind}') declares "
                f"{'no output schema' if tool.output_schema is None else 'only a string result'}: it returns text, its "
                f"result has no fields, and '{subject}' will never resolve; "
                f"{then}",
                f"use the whole result ({{step: {src.bind}}}), or a condition on an input the user supplies (when: "
                "{arg: approved, equals: true}); if the server sends structured content, declare the tool's "
                "output_schema; if its text is JSON that has the field, acknowledge the warning on the step "
                "(acknowledge: {unstructured-result: why})",
                acknowledged=step.acknowledged.get("unstructured-result"),
                extra={"step": step.name},
            )
        )
    return out


def step_required(wf: Workflow, step: Step) -> set[str]:
    """The parameters that the tool of ``step`` requires (its input schema's ``required``), by name."""
    tool = wf.tool(step.tool) if step.tool else None
    return set(_required(tool.input_schema if tool is not None and isinstance(tool.input_schema, dict) else {}))


def _required(schema: dict[str, Any]) -> list[str]:
    """The names an input schema's ``required`` lists, in order: none when it is not a list (``required: 3`` or a
    string is not JSON Schema; a string's letters are no parameters), and only its strings."""
    names = schema.get("required")
    return [n for n in names if isinstance(n, str)] if isinstance(names, list) else []


# -------------------------------------------------------------------------------------------------------- entry points


def check_steps(wf: Workflow, tools: Mapping[str, Tool] | None = None) -> list[Diagnostic]:
    """Every way ``wf``'s steps do not fit ``tools`` (name -> tool; by default the workflow's own ``tools:``).
    Steps whose tool is not in ``tools`` are left to the caller, which knows where tools come from."""
    if tools is None:
        tools = {}
        for t in wf.tools:
            tools.setdefault(t.name, t)  # type: ignore[union-attr]
    out: list[Diagnostic] = []
    made_by: dict[str, Step] = {}
    broken: set[str] = set()
    for step in wf.steps:
        tool = tools.get(step.tool) if step.tool else None
        if tool is not None:
            out.extend(_check_arguments(wf, step, tool, broken))
        out.extend(_check_fields(wf, step, tools, made_by))
        if step.bind:
            made_by.setdefault(step.bind, step)
    return out


def unknown_tool(
    step: Step,
    known: Collection[str],
    *,
    what: str,
    at: Span,
    lacks: str,
    then: Sequence[str | None] = (),
) -> Diagnostic | None:
    """``unknown-tool``, the one rule that a step calls only a tool there is: ``known`` are the tools, the
    workflow's own (:func:`projector.validate.validate`), a server's (:func:`check_workflows`) or those of
    ``--tools-from`` (:func:`projector.toolset.merge_tools`). Each caller says only how the step is named
    (``what``, at ``at``: where ``tool:`` is written, when it is), what the owner of the tools ``lacks`` and its
    hints (``then``, after the did-you-mean of :func:`projector.errors.suggest`)."""
    if step.tool is None or step.tool in known:
        return None
    return error(
        at,
        "unknown-tool",
        f"{what} calls the tool '{step.tool}', which {lacks}",
        "; ".join(p for p in (suggest(step.tool, known), *then) if p),
    )


def check_workflows(
    workflows: Sequence[Workflow], tools: Mapping[str, Any], *, owner: str = "the server", hint: str = ""
) -> list[Diagnostic]:
    """Every way the steps of ``workflows`` do not fit ``tools`` (name -> a :class:`Tool`, an ``mcp_types.Tool``
    or a bare input schema), including ``unknown-tool`` for a step whose tool ``owner`` does not have.
    ``hint`` leads the ``unknown-tool`` hint (say where tools are registered)."""
    table = {name: as_tool(name, value) for name, value in tools.items()}
    known = ", ".join(sorted(table)) or "none"
    out: list[Diagnostic] = []
    for wf in workflows:
        out.extend(
            d
            for step in wf.steps
            if (
                d := unknown_tool(
                    step,
                    table,
                    what=_label(wf, step),
                    at=_at(step.tool_span, step, wf),
                    lacks=f"{owner} does not have",
                    then=(hint, f"{owner}'s tools: {known}"),
                )
            )
        )
        out.extend(check_steps(wf, table))
    return sorted(out, key=Diagnostic.sort_key)


def workflow_prompt(frontmatter: Any) -> str | None:
    """The workflow prompt a skill's SKILL.md names (its ``metadata.workflow``), or None."""
    meta = frontmatter.get("metadata") if isinstance(frontmatter, dict) else None
    value = meta.get("workflow") if isinstance(meta, dict) else None
    return value if isinstance(value, str) else None


def check_prompts(skills: Iterable[tuple[str, str, Any]], offered: Iterable[str]) -> list[Diagnostic]:
    """Every skill whose SKILL.md names a workflow prompt (``metadata.workflow``) that the server does not offer.
    ``skills``: ``(where, skill name, frontmatter)``; ``offered``: the prompt names the server will have."""
    names = set(offered)
    out: list[Diagnostic] = []
    for where, name, frontmatter in skills:
        prompt = workflow_prompt(frontmatter)
        if prompt is not None and prompt not in names:
            out.append(
                error(
                    Span(where),
                    "missing-workflow-prompt",
                    f"skill '{name}' names the workflow prompt '{prompt}' (its metadata.workflow), which "
                    "this server does not offer; its SKILL.md would send a model looking for it",
                    "serve the workflow too, or build the skills with `project-skill build --skills-only`, "
                    "whose SKILL.md names no prompt",
                )
            )
    return out
