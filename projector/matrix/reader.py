"""Reading a generated SKILL.md back into a procedure, and following it one request at a time.

This is how the simulated model uses a skill: it reads only the text a host would give it (the SKILL.md served over
MCP), not the workflow file it was compiled from. Each step's arguments are recovered from their plain-words
descriptions ("the input `order_id`", "the field `id` of `order` (step 1)", ...), so a procedure that this reader
can follow is one the text fully describes. A SKILL.md whose layout it does not recognise is a :class:`ReadError`.

:func:`follow` runs a procedure against a :class:`Backend`: the client surface (A) talks to the server over a real
MCP transport; the agent surface (C) calls the server's tools in process. Both use the same policy
(:mod:`projector.matrix.policy`) for each step's judgment.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import quote

from ..errors import PlainError, plural
from .policy import Decision, judge

# One inline code span, fenced with one to three backticks (the generator uses a longer fence only when the text
# holds backticks). No capturing groups, so it can be embedded anywhere.
CODE = r"(?:```.+?```|``.+?``|`[^`]+`)"
_STEP_HEAD = re.compile(r"^### Step (\d+): (.+)$")
_INPUT = re.compile(rf"^- ({CODE}) \((\w+), (required|optional)\)")


class ReadError(PlainError):
    """The SKILL.md does not have the layout this reader follows."""


def _code(text: str) -> str:
    """The content of one inline code span (CommonMark: one padding space each side is stripped)."""
    text = text.strip()
    if re.fullmatch(CODE, text) is None:
        raise ReadError(f"expected inline code, got {text!r}")
    fence = len(text) - len(text.lstrip("`"))
    s = text[fence:-fence]
    if len(s) > 2 and s.startswith(" ") and s.endswith(" ") and s.strip():
        s = s[1:-1]
    return s


@dataclass(frozen=True)
class Source:
    kind: str  # input | result | field | text | value
    name: str = ""  # input name or bind
    path: tuple[str, ...] = ()
    value: Any = None


@dataclass
class StepPlan:
    number: int
    name: str
    judgment: str | None = None
    gated: bool = False  # the SKILL.md says: decide before calling; if it does not hold, do not call
    tool: str | None = None
    args: list[tuple[str, Source]] = field(default_factory=list)
    resources: list[tuple[str, list[tuple[str, Source]]]] = field(default_factory=list)
    bind: str | None = None


@dataclass
class Procedure:
    name: str
    inputs: dict[str, str]  # name -> declared type
    steps: list[StepPlan]


def parse_source(desc: str) -> Source:
    desc = desc.strip()
    m = re.fullmatch(rf"the input ({CODE})(?:; .*)?", desc)
    if m:
        return Source("input", _code(m.group(1)))
    m = re.fullmatch(rf"the whole result saved as ({CODE}) \(.*\)", desc)
    if m:
        return Source("result", _code(m.group(1)))
    m = re.fullmatch(rf"the field ({CODE}) of ({CODE}) \(.*\)", desc)
    if m:
        return Source("field", _code(m.group(2)), tuple(_code(m.group(1)).split(".")))
    m = re.fullmatch(rf"the text ({CODE})(, with .*)?", desc)
    if m:
        return Source("text", value=_code(m.group(1)))
    m = re.fullmatch(rf"the value ({CODE})", desc)
    if m:
        return Source("value", value=json.loads(_code(m.group(1))))
    raise ReadError(f"unrecognised data source: {desc!r}")


def _bullets(lines: list[str], start: int) -> tuple[list[str], int]:
    """The ``- `` items after ``start`` (skipping one blank line), and the index after them."""
    i = start
    while i < len(lines) and not lines[i].strip():
        i += 1
    items: list[str] = []
    while i < len(lines) and lines[i].startswith("- "):
        items.append(lines[i])
        i += 1
    return items, i


def _name(text: str) -> str:
    """The skill's name, from the frontmatter."""
    if not text.startswith("---\n"):
        raise ReadError("no frontmatter")
    m = re.search(r"(?m)^name: (.+)$", text.split("\n---\n", 1)[0])
    if m is None:
        raise ReadError("no name in the frontmatter")
    return m.group(1).strip()


def _inputs(section: str) -> dict[str, str]:
    """The ``## Inputs`` section: each input's name and declared type."""
    inputs: dict[str, str] = {}
    for line in section.splitlines():
        im = _INPUT.match(line)
        if im:
            inputs[_code(im.group(1))] = im.group(2)
    return inputs


def _sections(text: str) -> tuple[dict[str, str], str]:
    """The inputs, and the ``## Procedure`` section's text."""
    inputs: dict[str, str] = {}
    procedure = None
    for sec in re.split(r"(?m)^(?=## )", text):
        if sec.startswith("## Inputs"):
            inputs.update(_inputs(sec))
        elif sec.startswith("## Procedure"):
            procedure = sec
    if procedure is None:
        raise ReadError("no Procedure section")
    return inputs, procedure


# Each reader below takes the step, its lines and the index of the line it starts at, and returns the index of the
# last line it read (the paragraph or the bullets that belong to it).


def _judgment(step: StepPlan, lines: list[str], i: int) -> int:
    para = [lines[i][len("**Judgment:** ") :]]
    while i + 1 < len(lines) and lines[i + 1].strip():
        i += 1
        para.append(lines[i])
    step.judgment = " ".join(p.strip() for p in para)
    return i


def _gate(step: StepPlan, lines: list[str], i: int) -> int:
    step.gated = True
    return i


def _resource(step: StepPlan, lines: list[str], i: int) -> int:
    rm = re.match(rf"Read the resource ({CODE})(, where:|\.)$", lines[i])
    if rm is None:
        raise ReadError(f"bad resource line {lines[i]!r}")
    fills: list[tuple[str, Source]] = []
    if rm.group(2) == ", where:":
        items, after = _bullets(lines, i + 1)
        i = after - 1
        for item in items:
            fm = re.match(rf"- ({CODE}) is (.+)$", item)
            if fm is None:
                raise ReadError(f"bad placeholder line {item!r}")
            fills.append((_code(fm.group(1)).strip("{}"), parse_source(fm.group(2))))
    step.resources.append((_code(rm.group(1)), fills))
    return i


def _tool(step: StepPlan, lines: list[str], i: int) -> int:
    tm = re.match(rf"Call the tool ({CODE}) \(.*?\)( with these arguments:| with no arguments\.)$", lines[i])
    if tm is None:
        raise ReadError(f"bad tool line {lines[i]!r}")
    step.tool = _code(tm.group(1))
    if tm.group(2).startswith(" with these"):
        items, after = _bullets(lines, i + 1)
        i = after - 1
        for item in items:
            am = re.match(rf"- ({CODE}): (.+)$", item)
            if am is None:
                raise ReadError(f"bad argument line {item!r}")
            step.args.append((_code(am.group(1)), parse_source(am.group(2))))
    return i


def _save(step: StepPlan, lines: list[str], i: int) -> int:
    # The name, then a full stop; the rule for a text result may follow on the same line (results.TEXT_STEP).
    sm = re.match(rf"Save the result as ({CODE})\.(?: |$)", lines[i])
    if sm is None:
        raise ReadError(f"bad save line {lines[i]!r}")
    step.bind = _code(sm.group(1))
    return i


# What a step's line begins with -> its reader. A line that begins with none of these is prose, and skipped.
_STEP_LINES = (
    ("**Judgment:** ", _judgment),
    ("Decide this yourself before you call ", _gate),
    ("Read the resource ", _resource),
    ("Call the tool ", _tool),
    ("Save the result as ", _save),
)


def _step_line(step: StepPlan, lines: list[str], i: int) -> int:
    for prefix, read in _STEP_LINES:
        if lines[i].startswith(prefix):
            return read(step, lines, i)
    return i


def _step(chunk: str) -> StepPlan:
    """One ``### Step N: name`` section."""
    lines = chunk.rstrip("\n").split("\n")
    head = _STEP_HEAD.match(lines[0])
    if head is None:
        raise ReadError(f"bad step heading {lines[0]!r}")
    step = StepPlan(int(head.group(1)), head.group(2).strip())
    i = 1
    while i < len(lines):
        i = _step_line(step, lines, i) + 1
    if step.tool is None and not step.resources:
        raise ReadError(f"step {step.number} neither calls a tool nor reads a resource")
    return step


def parse(text: str) -> Procedure:
    """A generated SKILL.md as a procedure."""
    name = _name(text)
    inputs, procedure = _sections(text)
    steps = [_step(chunk) for chunk in re.split(r"(?m)^(?=### Step )", procedure)[1:]]
    if not steps:
        raise ReadError("no steps")
    return Procedure(name, inputs, steps)


# ------------------------------------------------------------------------------------------------------ following


class StepFailed(Exception):
    """A tool call or resource read failed; the run stops there."""


def result_value(structured: Any, texts: list[str], output_schema: dict[str, Any] | None) -> Any:
    """The value a step saves from a tool result: the structured content (unwrapped from the SDK's
    ``{"result": x}`` envelope when the output schema is exactly that envelope), else the text parsed as JSON when it
    is JSON, else the text."""
    if structured is not None:
        props = (output_schema or {}).get("properties") or {}
        if isinstance(structured, dict) and set(structured) == {"result"} and set(props) == {"result"}:
            return structured["result"]
        return structured
    text = "".join(texts)
    try:
        return json.loads(text)
    except ValueError:
        return text


class Backend(Protocol):
    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        """Call a tool; return the value a step saves."""

    async def read_resource(self, uri: str) -> str:
        """Read a resource; return its text."""


def _typed(value: str, kind: str) -> Any:
    if kind == "integer":
        return int(value)
    if kind == "number":
        return float(value) if any(c in value for c in ".eE") else int(value)
    if kind == "boolean":
        return value.lower() == "true"
    return value


@dataclass
class Outcome:
    """What following a procedure did: the steps run, the steps declined (number -> the policy's decision), every
    saved result, and the final message."""

    ran: list[int] = field(default_factory=list)
    declined: dict[int, Decision] = field(default_factory=dict)
    memory: dict[str, Any] = field(default_factory=dict)
    last_tool: tuple[str, Any] | None = None  # the last tool called, and its result
    failed: tuple[int, str] | None = None
    answer: str = ""


class Unresolved(Exception):
    pass


def _resolve(src: Source, inputs: dict[str, str], typed: dict[str, Any], memory: dict[str, Any]) -> Any:
    if src.kind == "input":
        if src.name not in typed:
            raise Unresolved(f"the input `{src.name}` was not given")
        return typed[src.name]
    if src.kind in ("result", "field"):
        if src.name not in memory:
            raise Unresolved(f"there is no result saved as `{src.name}`")
        value = memory[src.name]
        for part in src.path:
            if isinstance(value, dict) and part in value:
                value = value[part]
            elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
                value = value[int(part)]
            else:
                raise Unresolved(f"`{src.name}` has no field `{'.'.join(src.path)}`")
        return value
    if src.kind == "text":
        return re.sub(r"\{([A-Za-z_][\w-]*)\}", lambda m: inputs.get(m.group(1), m.group(0)), src.value)
    return src.value


async def follow(proc: Procedure, arguments: dict[str, str], backend: Backend) -> Outcome:
    """Run ``proc`` step by step: one request per step, the policy deciding each gated step first."""
    typed = {k: _typed(v, proc.inputs.get(k, "string")) for k, v in arguments.items()}
    out = Outcome()
    for step in proc.steps:
        if step.gated:
            decision = judge(step.judgment or "", out.memory)
            if not decision.proceed:
                out.declined[step.number] = decision
                continue
        try:
            for uri, fills in step.resources:
                values = {k: _resolve(s, arguments, typed, out.memory) for k, s in fills}
                filled = re.sub(r"\{(\w+)\}", lambda m: quote(str(values.get(m.group(1), m.group(0))), safe=""), uri)
                text = await backend.read_resource(filled)
                if step.bind:
                    out.memory[step.bind] = text
            if step.tool is not None:
                args = {k: _resolve(s, arguments, typed, out.memory) for k, s in step.args}
                value = await backend.call_tool(step.tool, args)
                if step.bind:
                    out.memory[step.bind] = value
                out.last_tool = (step.tool, value)
        except Unresolved as exc:
            out.declined[step.number] = Decision(False, str(exc))
            continue
        except StepFailed as exc:
            out.failed = (step.number, str(exc))
            break
        out.ran.append(step.number)
    out.answer = final_answer(proc, out)
    return out


def final_answer(proc: Procedure, out: Outcome) -> str:
    """The simulated model's last message: deterministic, short, and built only from what it saw."""
    total = len(proc.steps)
    parts = [f"Ran {'all ' if len(out.ran) == total else ''}{len(out.ran)} of {plural(total, 'step')} of {proc.name}."]
    for n, decision in sorted(out.declined.items()):
        step = proc.steps[n - 1]
        what = f"`{step.tool}`" if step.tool else f"step {n}"
        parts.append(f"Did not call {what} (step {n}): {decision.reason}.")
    if out.failed is not None:
        parts.append(f"Stopped at step {out.failed[0]}: {out.failed[1]}.")
    tool_steps = [s for s in proc.steps if s.tool is not None]
    if tool_steps and tool_steps[-1].number in out.ran and out.last_tool is not None:
        tool, value = out.last_tool
        parts.append(f"`{tool}` returned {json.dumps(value, sort_keys=True, ensure_ascii=False)}.")
    return " ".join(parts)
