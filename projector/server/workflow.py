"""The server-accelerated workflow prompt: ``prompts/get`` runs a workflow's steps on the server.

Each workflow becomes an MCP prompt under its raw name (``refund_flow``), with the workflow's arguments. Getting the
prompt runs the steps in order against the server's own registered tools and resources, and returns the transcript,
the way pmcp's server-side workflows do:

1. a user message: the intent (the workflow and its description) with its parameters and any context;
2. an assistant message: the plan, one line per step;
3. per step, an assistant message with the step's guidance and the tool call with its parameters (or the resource
   read), then a user message with the result;
4. a last message: done; or, when a required tool parameter cannot be resolved, a hand-over to the client saying
   what is missing and what to do next; or, when a tool or a read fails, the error and where the run stopped.

The server runs every step unconditionally, except that a step's ``when:`` conditions are checked just before it
runs (:mod:`projector.conditions`, the one evaluator): a failed one ends the run with one line naming the step, the
condition and the value seen (``on_fail: stop``), or skips the step (``on_fail: skip``). It cannot apply a step's
guidance: that judgment is the model's, which is why the generated SKILL.md warns about it and why the transcript
labels guidance as not applied.

Everything in the transcript is deterministic: JSON is printed with sorted keys, and nothing carries a time.
"""

from __future__ import annotations

import json
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.prompts.base import AssistantMessage, Message, Prompt, PromptArgument, UserMessage
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult, TextContent

from ..conditions import Check, failure_text, first_failure, statement
from ..errors import plural
from ..fit import wraps_result
from ..model import PLACEHOLDER, Argument, Const, FromArg, FromStep, Source, Step, Workflow


def dumps(value: Any) -> str:
    """JSON for the transcript: sorted keys, two-space indent, UTF-8 text."""
    return json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False)


def _fence(value: Any) -> str:
    return "```json\n" + dumps(value) + "\n```"


# --------------------------------------------------------------------------------------------------- argument types

# A typed argument's text must be the one canonical text of its value: what the condition checks and what a
# {placeholder} passes on are then the same. int() and float() also read "1_2", "012", " 12\n" and fullwidth digits,
# so a gate would check 12 while the tool got "acct-1_2"; such texts are refused, with the canonical form to write.
_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)", re.ASCII)
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?", re.ASCII)  # JSON's number grammar


def canonical_text(value: Any) -> str:
    """The one text of a typed argument's value: ``true``, ``12``, ``-0.25``, ``1e+300``. A whole number is written
    without a fraction below 10**16 (``12.0`` is ``12``); other floats as Python's shortest round-trip repr."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e16:
            return str(int(value))
        return repr(value)
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)


def _read_number(text: str) -> Any:
    """int or float as Python reads them (leniently: underscores, spaces, any Unicode digits), or None."""
    try:
        return int(text, 10)
    except ValueError:
        try:
            value = float(text)
        except ValueError:
            return None
        return value if math.isfinite(value) else None


def convert_argument(arg: Argument, raw: Any) -> Any:
    """A prompt argument arrives as a string; give it the workflow's declared type. Bad values are ``-32602``: text
    that is not the type, and text of the type that is not its canonical form (:func:`canonical_text`)."""
    if arg.type in (None, "string"):
        if not isinstance(raw, str):
            raise _bad_argument(arg, raw, "a string")
        return raw
    if not isinstance(raw, str):  # a client that sends JSON values: the value itself is unambiguous
        return _convert_value(arg, raw)
    if arg.type == "boolean":
        if raw in ("true", "false"):
            return raw == "true"
        if raw.strip().lower() in ("true", "false"):
            raise _not_canonical(arg, raw, "a boolean", raw.strip().lower())
        raise _bad_argument(arg, raw, "a boolean (true or false)")
    if arg.type == "integer":
        if _INTEGER.fullmatch(raw) and raw != "-0":
            return int(raw, 10)
        try:
            value = int(raw, 10)
        except ValueError:
            raise _bad_argument(arg, raw, "an integer") from None
        raise _not_canonical(arg, raw, "an integer", canonical_text(value))
    # number
    if _NUMBER.fullmatch(raw):
        number = _read_number(raw)
        if number is None:  # 1e999: beyond a float
            raise _bad_argument(arg, raw, "a finite number")
        if canonical_text(number) == raw:
            return number
        raise _not_canonical(arg, raw, "a number", canonical_text(number))
    number = _read_number(raw)
    if number is None:
        raise _bad_argument(arg, raw, "a finite number" if _is_float(raw) else "a number")
    raise _not_canonical(arg, raw, "a number", canonical_text(number))


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _convert_value(arg: Argument, raw: Any) -> Any:
    if arg.type == "boolean":
        if isinstance(raw, bool):
            return raw
        raise _bad_argument(arg, raw, "a boolean (true or false)")
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or (arg.type == "integer"
                                                                        and not isinstance(raw, int)):
        raise _bad_argument(arg, raw, "an integer" if arg.type == "integer" else "a number")
    if isinstance(raw, float) and not math.isfinite(raw):
        raise _bad_argument(arg, raw, "a finite number")
    return raw


def _bad_argument(arg: Argument, raw: Any, what: str) -> MCPError:
    return MCPError(code=INVALID_PARAMS, message=f"Invalid argument {arg.name!r}: {raw!r} is not {what}",
                    data={"argument": arg.name})


def _not_canonical(arg: Argument, raw: str, what: str, canonical: str) -> MCPError:
    return MCPError(code=INVALID_PARAMS, message=f"Invalid argument {arg.name!r}: {raw!r} is not the canonical form "
                    f"of {what}; write {canonical}", data={"argument": arg.name})


# -------------------------------------------------------------------------------------------------------- resolving

@dataclass(frozen=True)
class Missing:
    """Why a value could not be resolved."""

    reason: str


class _Run:
    def __init__(self, wf: Workflow, given: dict[str, str], typed: dict[str, Any]):
        self.wf = wf
        self.given = given  # each argument's canonical text, for {placeholders}
        self.typed = typed  # converted to each argument's type
        self.results: dict[str, Any] = {}
        self.skipped: dict[str, str] = {}  # bind -> why its step was skipped (on_fail: skip)

    def resolve(self, source: Source) -> Any:
        if isinstance(source, FromArg):
            if source.name in self.typed:
                return self.typed[source.name]
            return Missing(f"the optional argument `{source.name}` was not given")
        if isinstance(source, FromStep):
            if source.bind in self.skipped:
                return Missing(self.skipped[source.bind])
            if source.bind not in self.results:
                return Missing(f"there is no result saved as `{source.bind}`")
            value = self.results[source.bind]
            for part in source.path:
                if isinstance(value, dict) and str(part) in value:
                    value = value[str(part)]
                elif isinstance(value, list) and isinstance(part, int) and part < len(value):
                    value = value[part]
                else:
                    return Missing(f"the result saved as `{source.bind}` has no field `{source.field}`")
            return value
        if isinstance(source, Const):
            if not isinstance(source.value, str):
                return source.value
            missing = [p for p in source.placeholders if p not in self.given]
            if missing:
                return Missing(f"the constant uses `{{{missing[0]}}}`, and the argument `{missing[0]}` was not given")
            return PLACEHOLDER.sub(lambda m: self.given[m.group(1)], source.value)
        raise TypeError(f"unknown source {source!r}")  # pragma: no cover - the model has three kinds


def tool_result_value(result: CallToolResult, output_schema: dict[str, Any] | None) -> Any:
    """The value a step saves: structured content when there is some (unwrapped from the SDK's ``{"result": x}``
    envelope for non-object returns), else the text content parsed as JSON when it is JSON, else the text."""
    sc = result.structured_content
    if sc is not None:
        if isinstance(sc, dict) and set(sc) == {"result"} and wraps_result(output_schema):
            return sc["result"]
        return sc
    texts = [c.text for c in result.content if isinstance(c, TextContent)]
    if len(texts) != 1 or len(texts) != len(result.content):
        parts = [json.loads(t) if _is_json(t) else t for t in texts]
        others = [c.type for c in result.content if not isinstance(c, TextContent)]
        return parts + [f"<{kind} content>" for kind in others]
    return json.loads(texts[0]) if _is_json(texts[0]) else texts[0]


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _error_text(result: CallToolResult) -> str:
    texts = [c.text for c in result.content if isinstance(c, TextContent)]
    return "\n".join(texts) or "the tool reported an error without a message"


def _uri_value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, ensure_ascii=False)
    return quote(text, safe="")


# ------------------------------------------------------------------------------------------------------------- host

@dataclass(frozen=True)
class ToolSpec:
    """What the runner needs to know about a server's tool."""

    input_schema: dict[str, Any] | None
    output_schema: dict[str, Any] | None


class WorkflowHost(ABC):
    """What the runner needs from the server it runs on; one adapter per framework (``mcp``'s MCPServer here,
    FastMCP in :mod:`projector.server.fastmcp_adapter`).

    A read returns items with ``mime_type`` and ``content`` (``str`` or ``bytes``). ``call_tool`` raises on any
    failure other than a result with ``is_error``, which the runner reports itself.
    """

    @abstractmethod
    async def tools(self) -> dict[str, ToolSpec]: ...

    @abstractmethod
    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any: ...

    @abstractmethod
    async def read_resource(self, uri: str) -> Sequence[Any]: ...

    @abstractmethod
    async def report_progress(self, progress: float, total: float, message: str) -> None: ...


class MCPServerHost(WorkflowHost):
    """The runner on ``mcp``'s MCPServer, through the request's :class:`~mcp.server.mcpserver.Context`."""

    def __init__(self, ctx: Context):
        self.ctx = ctx

    async def tools(self) -> dict[str, ToolSpec]:
        return {t.name: ToolSpec(t.input_schema, t.output_schema) for t in await self.ctx.mcp_server.list_tools()}

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        return await self.ctx.mcp_server.call_tool(name, arguments, self.ctx)

    async def read_resource(self, uri: str) -> Sequence[Any]:
        return list(await self.ctx.read_resource(uri))

    async def report_progress(self, progress: float, total: float, message: str) -> None:
        await self.ctx.report_progress(progress, total, message)


# ----------------------------------------------------------------------------------------------------------- prompt

def _describe(step: Step) -> str:
    if step.tool is not None:
        line = f"call the tool `{step.tool}`"
        if step.bind:
            line += f" and save the result as `{step.bind}`"
    else:
        line = "read " + ", ".join(f"`{r}`" for r in step.resources)
    if step.when:
        line += ", only if " + " and ".join(statement(c) for c in step.when)
    return line


class WorkflowPrompt(Prompt):
    """A workflow as an MCP prompt that runs on the server (see the module docstring)."""

    workflow: Any = None

    @classmethod
    def for_workflow(cls, wf: Workflow) -> WorkflowPrompt:
        args = [PromptArgument(name=a.name, required=a.required,
                               description=(f"{a.description} ({a.type})" if a.description and a.type
                                            else a.description or (f"({a.type})" if a.type else None)))
                for a in wf.arguments]
        n = len(wf.steps)
        description = (f"{wf.description} Runs the workflow's {n} step{'s' * (n != 1)} on the server and returns "
                       f"the transcript.")
        return cls(name=wf.name, title=wf.title, description=description, arguments=args, fn=_unused, workflow=wf)

    async def render(self, arguments: dict[str, Any] | None, context: Context) -> list[Message]:  # type: ignore[override]
        return await run_workflow(self.workflow, arguments or {}, context)


def _unused() -> str:  # pragma: no cover - WorkflowPrompt.render never calls fn
    raise AssertionError("unreachable")


async def run_workflow(wf: Workflow, arguments: dict[str, Any], ctx: Context | WorkflowHost) -> list[Message]:
    """Run ``wf`` on ``ctx``'s server (an MCPServer request context, or any :class:`WorkflowHost`) and return the
    transcript messages."""
    host = ctx if isinstance(ctx, WorkflowHost) else MCPServerHost(ctx)
    declared = {a.name: a for a in wf.arguments}
    unknown = sorted(set(arguments) - set(declared))
    if unknown:
        raise MCPError(code=INVALID_PARAMS, message=f"Unknown argument {unknown[0]!r} for prompt {wf.name!r}; "
                       f"it takes {', '.join(repr(a) for a in declared) or 'no arguments'}",
                       data={"argument": unknown[0]})
    missing = [a.name for a in wf.arguments if a.required and a.name not in arguments]
    if missing:
        raise MCPError(code=INVALID_PARAMS, message=f"Missing required argument {missing[0]!r} for prompt "
                       f"{wf.name!r}", data={"argument": missing[0]})
    typed = {name: convert_argument(declared[name], raw) for name, raw in arguments.items()}
    # what a {placeholder} gets: the canonical text of the value the conditions check, the text itself for strings
    given = {name: canonical_text(value) for name, value in typed.items()}
    run = _Run(wf, given, typed)

    intent = f"Run the workflow `{wf.name}`: {wf.description}\n\nParameters:\n{_fence(typed)}"
    if wf.instructions:
        intent += "\n\nContext:\n" + "\n".join(f"- {i.role.capitalize()}: {i.text.strip()}" for i in wf.instructions)
    messages: list[Message] = [UserMessage(intent)]
    total = len(wf.steps)
    plan = [f"Plan: {total} step{'s' * (total != 1)}, run on the server in order."]
    plan += [f"{n}. `{s.name}`: {_describe(s)}" for n, s in enumerate(wf.steps, 1)]
    messages.append(AssistantMessage("\n".join(plan)))

    tools = await host.tools()
    skipped = 0
    for n, step in enumerate(wf.steps, 1):
        head = f"Step {n} of {total}: `{step.name}`."
        if step.when:
            found = first_failure(step.when, typed, run.results)
            if found is not None and step.on_fail == "skip":
                messages.append(AssistantMessage(f"{head}\n{_skipped(wf, n, step, found)}"))
                if step.bind:
                    run.skipped[step.bind] = f"step {n} `{step.name}`, which saves `{step.bind}`, was skipped"
                await host.report_progress(n, total, f"step {n} of {total}: {step.name} (skipped)")
                skipped += 1
                continue
            if found is not None:
                messages.append(_stopped(wf, n, step, found))
                return messages
            head += "\nChecked by the server: " + "; ".join(statement(c) for c in step.when) + "."
        if step.guidance:
            applies = "it enforces only the conditions above" if step.when else "it runs every step"
            head += f"\nGuidance (the server cannot apply it; {applies}): {step.guidance.strip()}"
        if step.tool is not None:
            tool = tools.get(step.tool)
            schema = (tool.input_schema if tool else None) or {}
            required = set(schema.get("required") or ())
            params: dict[str, Any] = {}
            for name, source in step.args:
                value = run.resolve(source)
                if isinstance(value, Missing):
                    if name in required:
                        messages.append(_hand_over(wf, n, step, name, value))
                        return messages
                    continue  # an optional parameter without a value is left out
                params[name] = value
            messages.append(AssistantMessage(f"{head}\nCalling the tool `{step.tool}` with:\n{_fence(params)}"))
            failure: str | None = None
            try:
                result = await host.call_tool(step.tool, params)
            except Exception as exc:  # ToolError, MCPError, anything the tool raised
                failure = str(exc) or type(exc).__name__
            else:
                if not isinstance(result, CallToolResult):
                    failure = "the tool asked for more input, which a server-side run cannot give"
                elif result.is_error:
                    failure = _error_text(result)
            if failure is not None:
                messages.append(_failed(wf, n, step, f"the tool `{step.tool}` failed: {failure}"))
                return messages
            value = tool_result_value(result, tool.output_schema if tool else None)
            if step.bind:
                run.results[step.bind] = value
            saved = f" (saved as `{step.bind}`)" if step.bind else ""
            messages.append(UserMessage(f"Result of `{step.tool}`{saved}:\n{_fence(value)}"))
        else:
            fills: dict[str, str] = {}
            for name, source in step.template:
                value = run.resolve(source)
                if isinstance(value, Missing):
                    messages.append(_hand_over(wf, n, step, name, value))
                    return messages
                fills[name] = _uri_value(value)
            uris = [PLACEHOLDER.sub(lambda m: fills.get(m.group(1), m.group(0)), r) for r in step.resources]
            messages.append(AssistantMessage(f"{head}\nReading " + ", ".join(f"`{u}`" for u in uris) + "."))
            for uri in uris:
                try:
                    contents = await host.read_resource(uri)
                except Exception as exc:
                    messages.append(_failed(wf, n, step, f"reading `{uri}` failed: {exc}"))
                    return messages
                for c in contents:
                    mime = c.mime_type or "text/plain"
                    body = c.content if isinstance(c.content, str) else f"<{plural(len(c.content), 'byte')} of {mime}>"
                    messages.append(UserMessage(f"Resource `{uri}` ({mime}):\n\n{body}"))
        await host.report_progress(n, total, f"step {n} of {total}: {step.name}")
    if skipped:
        messages.append(AssistantMessage(f"Done: {total - skipped} of the {total} steps of `{wf.name}` ran on the "
                                         f"server; {skipped} {'was' if skipped == 1 else 'were'} skipped."))
        return messages
    messages.append(AssistantMessage(f"Done: all {total} step{'s' * (total != 1)} of `{wf.name}` ran on the server."))
    return messages


def _remaining(wf: Workflow, n: int) -> str:
    return "\n".join(f"{i}. `{s.name}`: {_describe(s)}" for i, s in enumerate(wf.steps, 1) if i >= n)


def _hand_over(wf: Workflow, n: int, step: Step, param: str, why: Missing) -> Message:
    target = (f"the tool `{step.tool}` requires `{param}`" if step.tool is not None
              else f"the resource URI needs `{{{param}}}`")
    return UserMessage(
        f"Stopped before step {n} of {len(wf.steps)} (`{step.name}`): {target}, and it has no value: {why.reason}.\n\n"
        f"Over to you. Work out `{param}` (ask the user if you cannot), then carry on yourself with the results "
        f"above and these steps:\n{_remaining(wf, n)}")


def _stopped(wf: Workflow, n: int, step: Step, found: Check) -> Message:
    """One line: the step, the failing condition and the value actually seen."""
    rest = len(wf.steps) - n
    action = f"did not call `{step.tool}`" if step.tool else "did not read the step's resources"
    tail = f", and the {rest} later step{'s' * (rest != 1)} did not run" if rest else ""
    return UserMessage(f"Stopped before step {n} of {len(wf.steps)} (`{step.name}`): {failure_text(found)}. The "
                       f"server {action}{tail}; tell the user why the workflow stopped.")


def _skipped(wf: Workflow, n: int, step: Step, found: Check) -> str:
    users = [f"{i} (`{s.name}`)" for i, s in enumerate(wf.steps, 1)
             if i > n and step.bind and any(isinstance(src, FromStep) and src.bind == step.bind
                                            for _, src in s.sources())]
    later = (f" Step{'s' * (len(users) != 1)} {', '.join(users)} will not have `{step.bind}`." if users else "")
    return f"Skipped: {failure_text(found)}.{later} Going on with the next step."


def _failed(wf: Workflow, n: int, step: Step, what: str) -> Message:
    rest = len(wf.steps) - n
    tail = f" The {rest} later step{'s' * (rest != 1)} did not run." if rest else ""
    return UserMessage(f"Error: the workflow `{wf.name}` stopped at step {n} of {len(wf.steps)} (`{step.name}`): "
                       f"{what}.{tail} Tell the user what failed; do not retry a tool that changes data without "
                       f"asking.")
