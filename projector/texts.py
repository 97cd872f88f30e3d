"""The texts of a workflow: what may not hide in them. Every text reaches SKILL.md, references/tools.md or
skills.json, so none may hold a control character or an invisible one, a one-line text no line break, and a JSON
value no unsound number or unbounded nesting. Run by :func:`projector.validate.validate` on every workflow, and on
tools taken from a server or a snapshot (:func:`tool_problems`, for ``--tools-from``). Returns problems; raises
nothing.
"""

from __future__ import annotations

import math
import re
import unicodedata
from typing import assert_never

from .errors import Diagnostic, Span, error
from .model import Const, FromArg, FromStep, Source, Step, Tool, Workflow

# Every text of a workflow reaches SKILL.md, references/tools.md or skills.json. None may hold a control character
# other than tab and newline (a terminal escape, a bell, a carriage return that hides what precedes it), and the
# texts that the output prints on one line (names, keys, URIs: headings, list items, code spans) may not hold a line
# break either, or they could add headings of their own: neither \n nor U+2028 or U+2029, which str.splitlines, the
# renderer (render.LINE_BREAK) and JavaScript's multi-line expressions all break at (the other such breaks, \r, \v,
# \f, \x1c-\x1e and U+0085, are control characters). Multi-line texts are made inert by the renderer instead.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Invisible characters make a text read differently from what it holds: bidirectional controls reorder what a reader
# sees (Trojan Source), zero-width characters and invisible operators hide inside words, and tag characters carry text
# no one sees ("ASCII smuggling" into a model). Refused in every text, as control characters are; in one-line texts
# (names, keys, URIs) every other format character (Unicode category Cf: a soft hyphen, ...) too.
_INVISIBLE = re.compile("[\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb\U000e0000-\U000e007f]")
# In a one-line text, also the characters that show as nothing though they are letters or symbols: the Hangul fillers
# and the blank Braille pattern (a name made of them looks empty, or like another name).
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
MAX_VALUE_DEPTH = 100  # as deep as the loader accepts a YAML document; JSON values are walked recursively later


MAX_COMPATIBILITY = 500
# The metadata key that states the tools a skill's steps call (projector.render.tools_value): a server hides the
# skill from a caller that cannot see one of them (projector.server.tree.Skill.tools).
TOOLS_KEY = "tools"
# The metadata keys the tool writes itself (projector.render): a workflow cannot set them.
RESERVED_METADATA = ("workflow", "workflow-tool", "workflow-digest", TOOLS_KEY)


def frontmatter_problems(wf: Workflow) -> list[Diagnostic]:
    """The rules of the Agent Skills fields a workflow passes to its frontmatter (skills-ref's validator holds the
    same): ``compatibility`` is 1-500 characters, ``license`` is not empty, ``metadata`` keys are not empty and
    are none of the keys the tool writes itself, and no text holds a control character."""
    problems: list[Diagnostic] = []
    for key, text, span in (
        ("license", wf.license, wf.license_span),
        ("compatibility", wf.compatibility, wf.compatibility_span),
    ):
        if text is None:
            continue
        if not text.strip():
            problems.append(
                error(span, "empty-field", f"'{key}' of the workflow is empty", f"leave {key} out, or say what it is")
            )
        elif p := _text_problem(span, f"'{key}' of the workflow", text, one_line=False):
            problems.append(p)
    if wf.compatibility is not None and len(wf.compatibility) > MAX_COMPATIBILITY:
        problems.append(
            error(
                wf.compatibility_span,
                "compatibility-too-long",
                f"'compatibility' is {len(wf.compatibility)} characters; Agent Skills allows {MAX_COMPATIBILITY}",
                "say only what the skill needs from its environment; move the rest into instructions",
            )
        )
    for (key, value), span in zip(wf.metadata, wf.metadata_spans or (wf.span,) * len(wf.metadata)):
        if key in RESERVED_METADATA:
            problems.append(
                error(
                    span,
                    "reserved-metadata-key",
                    f"the metadata key '{key}' is one the tool writes itself ({', '.join(RESERVED_METADATA)})",
                    f"rename it (for example 'x-{key}'): metadata.workflow names the workflow prompt, "
                    "metadata.workflow-digest is the version stamp of the bundle and metadata.tools "
                    "lists the tools its steps call",
                )
            )
        elif not key.strip():
            problems.append(error(span, "empty-field", "a metadata key of the workflow is empty", "name the key"))
        elif p := (
            _text_problem(span, f"the metadata key '{key}'", key, one_line=True)
            or _text_problem(span, f"metadata.{key}", value, one_line=False)
        ):
            problems.append(p)
    return problems


def invisible_problem(span: Span, what: str, text: str, one_line: bool) -> Diagnostic | None:
    """``control-character`` for the first invisible character of ``text`` (:data:`_INVISIBLE`; in a one-line
    text, any format character), or None."""
    if text.isascii():  # no ASCII character is a format character (Cf) or one of _INVISIBLE
        return None
    if one_line:
        found = next(
            (c for c in text if unicodedata.category(c) == "Cf" or _INVISIBLE.match(c) or c in _BLANK_LETTERS), None
        )
    else:
        m = _INVISIBLE.search(text)
        found = m.group(0) if m else None
    if found is None:
        return None
    name = unicodedata.name(found, "")
    kind = "format character" if unicodedata.category(found) == "Cf" else "character"
    return error(
        span,
        "control-character",
        f"{what} contains the invisible {kind} U+{ord(found):04X}" + (f" ({name})" if name else ""),
        "remove it: a bidirectional control or an invisible character makes a text read differently from what it holds",
    )


def _text_problem(span: Span, what: str, text: str, one_line: bool) -> Diagnostic | None:
    if m := _CONTROL.search(text):
        return error(
            span,
            "control-character",
            f"{what} contains the control character U+{ord(m.group(0)):04X}",
            "write plain text: remove it (line breaks and tabs are fine in multi-line texts)",
        )
    if not text.isascii() and (p := invisible_problem(span, what, text, one_line)):  # its own shortcut, inlined
        return p
    if one_line and len((text + "x").splitlines()) > 1:  # \n, U+2028, U+2029: the other breaks are control characters
        brk = next(c for c in text if len((c + "x").splitlines()) > 1)
        kind = "" if brk == "\n" else f" (U+{ord(brk):04X} {unicodedata.name(brk, '')})"
        return error(
            span,
            "line-break",
            f"{what} contains a line break{kind}",
            "it is printed on one line (a heading, a list item, a code span): write it on one line",
        )
    return None


def _value_problem(span: Span, what: str, value: object) -> Diagnostic | None:
    """The first problem of a JSON value (a constant, an input schema, annotations): a control character in any
    string or key, a number JSON cannot carry (NaN, infinity), or more nesting than :data:`MAX_VALUE_DEPTH`.
    Walked without recursion, so a value built in Python cannot exhaust the stack here."""
    if type(value) in _PLAIN_LEAVES or _clean_value(value):  # a leaf other than a string or a float has no problem
        return None
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, str):
            if p := _text_problem(span, what, v, one_line=False):
                return p
        elif isinstance(v, float) and not math.isfinite(v):
            return error(
                span,
                "bad-number",
                f"{what} holds {v}, which is not a finite number",
                "JSON has no NaN or infinity: write a finite number",
            )
        elif isinstance(v, (dict, list, tuple)):
            if depth > MAX_VALUE_DEPTH:
                return error(
                    span, "too-deep", f"{what} nests deeper than {MAX_VALUE_DEPTH} levels", "flatten the value"
                )
            if isinstance(v, dict):
                stack.extend((k, depth) for k in reversed(list(v)))
                stack.extend((x, depth + 1) for x in reversed(list(v.values())))
            else:
                stack.extend((x, depth + 1) for x in reversed(v))
    return None


_PLAIN_LEAVES = (bool, int, type(None))
_CONTAINERS = (dict, list, tuple)


def _clean_value(value: object) -> bool:
    """Whether :func:`_value_problem` finds nothing in ``value``, decided in one pass: True only for a value of the
    exact JSON types (keys: strings) whose strings, joined, hold neither a control nor an invisible character, with
    finite floats and no more nesting than :data:`MAX_VALUE_DEPTH`. False means "look closer": the walk there finds
    the first problem, or none (a subclass of str as a value, a key that is not a string)."""
    texts: list[str] = []
    stack: list[tuple[object, int]] = [([value], 0)]  # the value itself as the one item of a list at depth 0
    while stack:
        v, depth = stack.pop()
        if depth > MAX_VALUE_DEPTH:
            return False
        if type(v) is dict:
            texts.extend(v)  # its keys: one that is not a string fails the join below
            v = v.values()
        for x in v:  # type: ignore[attr-defined]
            kind = type(x)
            if kind is str:
                texts.append(x)
            elif kind in _CONTAINERS:
                stack.append((x, depth + 1))
            elif kind is float:
                if not math.isfinite(x):
                    return False
            elif kind not in _PLAIN_LEAVES:
                return False
    try:
        joined = "".join(texts)
    except TypeError:
        return False
    return not _CONTROL.search(joined) and not _INVISIBLE.search(joined)


def text_problems(wf: Workflow) -> list[Diagnostic]:
    """Control characters in any text, line breaks in one-line texts, and unsound JSON values: one diagnostic per
    text, at the nearest position the model keeps. Also run on tools taken from a live server (--tools-from)."""
    if _all_clean(wf):  # most workflows: nothing to say, known without a pass per text
        return []
    found: list[Diagnostic | None] = [
        _text_problem(wf.span, "the workflow name", wf.name, one_line=True),
        _text_problem(wf.description_span, "the description", wf.description, one_line=False),
    ]
    for a in wf.arguments:
        found.append(_text_problem(a.span, f"the name of argument {a.name!r}", a.name, one_line=True))
        found.append(_text_problem(a.span, f"the description of argument {a.name!r}", a.description, one_line=False))
    found.extend(_text_problem(ins.span, "an instruction", ins.text, one_line=False) for ins in wf.instructions)
    found.extend(tool_problems(wf.tools))
    for step in wf.steps:
        found.extend(_step_texts(step, f"step {step.name!r}"))
    return [d for d in found if d is not None]


def _all_clean(wf: Workflow) -> bool:
    """Whether :func:`text_problems` finds nothing in ``wf``, decided on every text it reads joined into one text
    per kind (each check is of single characters, so the joined text has a problem exactly when one of its parts
    has): the one-line texts ASCII, with neither a control character nor a line break; the others without a control
    or an invisible character; the JSON values clean (:func:`_clean_value`). False means "look closer"."""
    one = [wf.name]
    many = [wf.description]
    values: list[object] = []
    for a in wf.arguments:
        one.append(a.name)
        many.append(a.description)
    many.extend(ins.text for ins in wf.instructions)
    for t in wf.tools:
        one.append(t.name)
        many.append(t.description)
        values += (t.input_schema, t.output_schema, t.annotations)
    for step in wf.steps:
        one += (step.name, step.tool or "", step.bind or "", *step.resources)
        if step.guidance is not None:
            many.append(step.guidance)
        refs: list[Source | FromArg | FromStep] = []
        for key, src in step.sources():
            one.append(key)
            refs.append(src)
        if step.confirm is not None:
            one.append(step.confirm.message)
            refs += step.confirm.show
        for cond in step.when:
            refs.append(cond.subject)
            values.append(cond.value)
        for src in refs:
            kind = type(src)
            if kind is FromArg:
                one.append(src.name)  # type: ignore[union-attr]
            elif kind is FromStep:
                one += (src.bind, src.field or "")  # type: ignore[union-attr]
            elif kind is Const:
                values.append(src.value)  # type: ignore[union-attr]
            else:
                return False
    try:
        one_line, other = "".join(one), "".join(many)
    except TypeError:  # a text that is not one: the pass per text says where
        return False
    if not one_line.isascii() or "\n" in one_line or _CONTROL.search(one_line) or _CONTROL.search(other):
        return False
    if not other.isascii() and _INVISIBLE.search(other):
        return False
    return _clean_value(values)  # one level deeper than each value: at the very limit, the pass per text decides


def _step_texts(step: Step, what: str) -> list[Diagnostic | None]:
    """:func:`text_problems` of one step: its name, tool, bind, guidance, resource URIs, sources and conditions."""
    found = [_text_problem(step.span, f"the name of {what}", step.name, one_line=True)]
    found.extend(
        _text_problem(step.span, f"the {label} of {what}", value, one_line=True)
        for label, value in (("tool", step.tool), ("bind", step.bind))
        if value is not None
    )
    if step.guidance is not None:
        found.append(_text_problem(step.guidance_span, f"the guidance of {what}", step.guidance, one_line=False))
    found.extend(_text_problem(step.span, f"a resource URI of {what}", uri, one_line=True) for uri in step.resources)
    for key, src in step.sources():
        found.append(_text_problem(step.span, f"an argument name of {what}", key, one_line=True))
        found.extend(_source_texts(src, f"{what}, {key!r}"))
    if step.confirm is not None:
        found.append(
            _text_problem(
                step.confirm.message_span, f"the confirmation message of {what}", step.confirm.message, one_line=True
            )
        )
        for src in step.confirm.show:
            found.extend(_source_texts(src, f"{what}, 'confirm.show'"))
    for cond in step.when:
        found.extend(_reference_texts(cond.subject, f"a condition of {what}"))
        found.append(_value_problem(cond.span, f"the value of a condition of {what}", cond.value))
    return found


def _source_texts(src: Source, where: str) -> list[Diagnostic | None]:
    match src:
        case FromArg() | FromStep():
            return _reference_texts(src, where)
        case Const():
            return [_value_problem(src.span, f"the constant of {where}", src.value)]
        case _:
            assert_never(src)


def _reference_texts(ref: FromArg | FromStep, where: str) -> list[Diagnostic | None]:
    """The names a reference holds (an argument's; a result's bind and field path) are one-line texts."""
    match ref:
        case FromArg():
            return [_text_problem(ref.span, where, ref.name, one_line=True)]
        case FromStep():
            return [_text_problem(ref.span, where, part, one_line=True) for part in (ref.bind, ref.field or "")]
        case _:
            assert_never(ref)


def tool_problems(tools: tuple[Tool, ...] | list[Tool]) -> list[Diagnostic]:
    """:func:`text_problems` for tool declarations alone (a file's, or a live server's)."""
    found: list[Diagnostic | None] = []
    for t in tools:
        what = f"tool {t.name!r}"
        found.append(_text_problem(t.span, f"the name of {what}", t.name, one_line=True))
        found.append(_text_problem(t.span, f"the description of {what}", t.description, one_line=False))
        for label, value in (
            ("input schema", t.input_schema),
            ("output schema", t.output_schema),
            ("annotations", t.annotations),
        ):
            found.append(_value_problem(t.span, f"the {label} of {what}", value))
    return [d for d in found if d is not None]
