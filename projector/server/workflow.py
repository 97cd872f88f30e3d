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

The runner knows no framework: it reaches the server through a :class:`WorkflowHost` and returns the transcript as
:class:`Turn` objects (a role and a text), which each framework's adapter (:mod:`projector.server.adapters`) turns
into its own prompt messages. One step is one call of :func:`run_step`. The run itself (its inputs, saved results,
answers and transcript) is a :class:`~projector.server.runstate.Run`, which the confirmations (:mod:`.confirm`) read
and pause too: it lives in :mod:`projector.server.runstate`, which both import.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, CallToolResult, TextContent

from ..conditions import Check, failure_text, first_failure, statement
from ..errors import plural
from ..model import PLACEHOLDER, Step, Workflow
from ..toolschema import argument_errors
from . import confirm
from .bound import WITHDRAWN
from .arguments import Missing, canonical_text, convert_argument
from .runstate import Run, RunState
from .runstate import ToolSpec as ToolSpec, Turn as Turn, WorkflowHost as WorkflowHost  # the runner's public face


def transcript_json(value: Any) -> str:
    """JSON for the transcript: sorted keys, two-space indent, UTF-8 text."""
    return json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False)


def _fence(value: Any) -> str:
    return "```json\n" + transcript_json(value) + "\n```"


# ------------------------------------------------------------------------------------------------------ results


def tool_result_value(result: CallToolResult, output_schema: dict[str, Any] | None) -> Any:
    """The value a step saves, by the one rule of :func:`projector.results.saved_value`: structured content when
    there is some (a wrapped text read as the text is), else the text content, read as JSON when it is JSON."""
    from ..results import saved_value

    texts = [c.text for c in result.content if isinstance(c, TextContent)]
    others = [c.type for c in result.content if not isinstance(c, TextContent)]
    return saved_value(result.structured_content, texts, others, output_schema)


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


# ----------------------------------------------------------------------------------------------------------- prompt


def _user(text: str) -> Turn:
    return Turn("user", text)


def _assistant(text: str) -> Turn:
    return Turn("assistant", text)


@dataclass(frozen=True)
class PromptArgumentSpec:
    name: str
    description: str | None
    required: bool


@dataclass(frozen=True)
class PromptSpec:
    """A workflow's prompt as ``prompts/list`` shows it, on every framework."""

    name: str
    title: str | None
    description: str
    arguments: tuple[PromptArgumentSpec, ...]


def prompt_spec(wf: Workflow) -> PromptSpec:
    args = tuple(
        PromptArgumentSpec(
            name=a.name,
            required=a.required,
            description=(
                f"{a.description} ({a.type})"
                if a.description and a.type
                else a.description or (f"({a.type})" if a.type else None)
            ),
        )
        for a in wf.arguments
    )
    n = len(wf.steps)
    description = (
        f"{wf.description} Runs the workflow's {n} step{'s' * (n != 1)} on the server and returns the transcript."
    )
    return PromptSpec(name=wf.name, title=wf.title, description=description, arguments=args)


def _describe(step: Step) -> str:
    if step.tool is not None:
        line = f"call the tool `{step.tool}`"
        if step.bind:
            line += f" and save the result as `{step.bind}`"
    else:
        line = "read " + ", ".join(f"`{r}`" for r in step.resources)
    if step.when:
        line += ", only if " + " and ".join(statement(c) for c in step.when)
    if step.confirm is not None:
        line += ", once a person confirms it"
    return line


def check_arguments(wf: Workflow, arguments: dict[str, Any], surface: str = "prompt") -> dict[str, Any]:
    """The arguments, each converted to its declared type; ``-32602`` for an unknown argument, a missing required
    one, or a value that is not of its type (:func:`convert_argument`). ``surface``: what they were given to, which
    every message names: ``"prompt"`` (``for prompt 'refund_flow'``) or ``"tool"`` (``for the tool 'refund_flow'``,
    a workflow tool's, :mod:`projector.server.workflow_tool`)."""
    named = {"prompt": f"prompt {wf.name!r}", "tool": f"the tool {wf.name!r}"}[surface]
    declared = {a.name: a for a in wf.arguments}
    unknown = sorted(set(arguments) - set(declared))
    if unknown:
        raise MCPError(
            code=INVALID_PARAMS,
            message=f"Unknown argument {unknown[0]!r} for {named}; "
            f"it takes {', '.join(repr(a) for a in declared) or 'no arguments'}",
            data={"argument": unknown[0]},
        )
    missing = [a.name for a in wf.arguments if a.required and a.name not in arguments]
    if missing:
        raise MCPError(
            code=INVALID_PARAMS,
            message=f"Missing required argument {missing[0]!r} for {named}",
            data={"argument": missing[0]},
        )
    return {name: convert_argument(declared[name], raw, named) for name, raw in arguments.items()}


async def run_workflow(
    wf: Workflow,
    arguments: dict[str, Any],
    host: WorkflowHost,
    round: confirm.Round | None = None,
    saved: dict[str, Any] | None = None,
) -> list[Turn] | confirm.Asking:
    """Run ``wf`` on ``host``'s server and return the transcript: every step in order (:func:`run_step`), until
    one stops the run, then the closing turn. Or, when a step needs a person (``confirm:``, an ``ask: true`` input)
    and ``round`` says the client can ask, the questions and the state to resume from (:mod:`.confirm`); the
    retry's ``round`` carries that state and the answers, and the run resumes at that step: no earlier tool is
    called again. Without ``round`` the client cannot be asked. ``saved``, when given, receives the results the
    steps saved by the end of the run (those of earlier rounds too): a workflow tool's structured result."""
    typed = check_arguments(wf, arguments)
    # what a {placeholder} gets: the canonical text of the value the conditions check, the text itself for strings
    run = Run(
        wf,
        {name: canonical_text(value) for name, value in typed.items()},
        typed,
        host,
        round,
        sent_bytes=len(json.dumps(arguments, default=str)),
    )
    if run.round.state is not None:
        first = _resume(run)
    else:
        first, run.turns = 1, _opening(wf, typed)
    run.tools = await host.tools()
    try:
        for n, step in enumerate(wf.steps, 1):
            if n >= first and not await run_step(run, n, step):
                return run.turns
    except confirm.Pause as paused:
        return paused.asking
    finally:
        if saved is not None:
            saved.update(run.results)
    run.turns.append(_done(wf, run.skipped_count))
    return run.turns


def _resume(run: Run) -> int:
    """Take up the paused run that this round's state holds; returns the step it resumes at. Its transcript is the
    one it paused with, each result turn written again from the value the state carries once."""
    assert run.round.state is not None
    state = RunState.loads(run.round.state, run.wf)
    for n, value in state.values.items():
        run.values[n] = value
    for bind, n in state.bound.items():
        run.save(n, bind, state.values[n])
    run.skipped, run.skipped_count = state.skipped, state.skipped_count
    for turn in state.turns:
        if isinstance(turn, int):
            run.add_result_turn(turn, _result_turn(run.wf.steps[turn - 1], state.values[turn]))
        else:
            run.turns.append(Turn(*turn))  # type: ignore[arg-type]
    run.resumed, run.token = (state.step, state.waits), state.token
    for name, value in state.asked.items():
        declared = run.wf.argument(name)
        if declared is not None and name not in run.typed:
            run.take(declared, value)
    return state.step


def _opening(wf: Workflow, typed: dict[str, Any]) -> list[Turn]:
    """The intent (the workflow, its parameters, its context) and the plan, one line per step."""
    intent = f"Run the workflow `{wf.name}`: {wf.description}\n\nParameters:\n{_fence(typed)}"
    if wf.instructions:
        intent += "\n\nContext:\n" + "\n".join(f"- {i.role.capitalize()}: {i.text.strip()}" for i in wf.instructions)
    total = len(wf.steps)
    plan = [f"Plan: {total} step{'s' * (total != 1)}, run on the server in order."]
    plan += [f"{n}. `{s.name}`: {_describe(s)}" for n, s in enumerate(wf.steps, 1)]
    return [_user(intent), _assistant("\n".join(plan))]


def _done(wf: Workflow, skipped: int) -> Turn:
    total = len(wf.steps)
    if skipped:
        return _assistant(
            f"Done: {total - skipped} of the {total} steps of `{wf.name}` ran on the server; {skipped} "
            f"{'was' if skipped == 1 else 'were'} skipped."
        )
    return _assistant(f"Done: all {total} step{'s' * (total != 1)} of `{wf.name}` ran on the server.")


async def run_step(run: Run, n: int, step: Step) -> bool:
    """Step ``n``: its conditions, then its tool call or its reads, then one progress notification. Its turns go on
    ``run.turns``; False when the run stops here (a failed ``on_fail: stop`` condition, a hand-over, an error)."""
    total = len(run.wf.steps)
    head = f"Step {n} of {total}: `{step.name}`."
    unasked = confirm.ask_inputs(run, n, step)
    if unasked is not None:
        run.turns.append(_needs_person(run.wf, n, step, unasked))
        return False
    if step.when:
        found = first_failure(step.when, run.typed, run.results)
        if found is not None:
            return await _condition_failed(run, n, step, found, head)
        head += "\nChecked by the server: " + "; ".join(statement(c) for c in step.when) + "."
    if step.confirm is not None and step.tool is not None and not _fits_before_asking(run, n, step):
        return False
    if step.confirm is not None:
        decision = await confirm.confirmation(run, n, step)
        if not decision.yes:
            return await _not_confirmed(run, n, step, decision, head)
        head += f"\nConfirmed: {decision.reason}."
    if step.guidance:
        applies = "it enforces only the conditions above" if step.when else "it runs every step"
        head += f"\nGuidance (the server cannot apply it; {applies}): {step.guidance.strip()}"
    ran = await (_call_tool(run, n, step, head) if step.tool is not None else _read_resources(run, n, step, head))
    if ran:
        await run.host.report_progress(n, total, f"step {n} of {total}: {step.name}")
    return ran


async def _condition_failed(run: Run, n: int, step: Step, found: Check, head: str) -> bool:
    """``on_fail: skip``: say so, mark the step's binding as skipped, go on. ``on_fail: stop``: end the run."""
    if step.on_fail != "skip":
        run.turns.append(_stopped(run.wf, n, step, found))
        return False
    await _skip(run, n, step, f"{head}\n{_skipped(run, n, step, found)}", "was skipped")
    return True


async def _not_confirmed(run: Run, n: int, step: Step, decision: confirm.Decision, head: str) -> bool:
    """A no (or a cancel, or no answer) acts as ``on_fail``; a client that cannot ask always stops the run."""
    if step.on_fail != "skip" or not decision.can_ask:
        run.turns.append(_needs_person(run.wf, n, step, decision.reason))
        return False
    await _skip(run, n, step, f"{head}\nSkipped: {decision.reason}. Going on with the next step.", "was not confirmed")
    return True


async def _skip(run: Run, n: int, step: Step, text: str, why: str) -> None:
    """Step ``n`` is skipped: its turn, its binding marked (a later use says why), its progress, the count."""
    total = len(run.wf.steps)
    run.turns.append(_assistant(text))
    if step.bind:
        run.skipped[step.bind] = f"step {n} `{step.name}`, which saves `{step.bind}`, {why}"
    await run.host.report_progress(n, total, f"step {n} of {total}: {step.name} (skipped)")
    run.skipped_count += 1


def _needs_person(wf: Workflow, n: int, step: Step, why: str) -> Turn:
    """The run stops before step ``n``: a person did not say yes, did not give an input, or cannot be asked."""
    rest = len(wf.steps) - n
    action = f"did not call `{step.tool}`" if step.tool else "did not read the step's resources"
    tail = f", and the {rest} later step{'s' * (rest != 1)} did not run" if rest else ""
    return _user(
        f"Stopped before step {n} of {len(wf.steps)} (`{step.name}`): {why}. The server {action}{tail}; "
        "tell the user why the workflow stopped."
    )


def _resolved(run: Run, step: Step, tool: ToolSpec | None) -> dict[str, Any] | tuple[str, Missing]:
    """The step's tool parameters, or the first required one that has no value and why. An optional parameter
    without a value is left out."""
    schema = (tool.input_schema if tool else None) or {}
    required = set(schema.get("required") or ())
    params: dict[str, Any] = {}
    for name, source in step.args:
        value = run.resolve(source)
        if isinstance(value, Missing):
            if name in required:
                return name, value
            continue
        params[name] = value
    return params


def _tool_params(run: Run, n: int, step: Step, tool: ToolSpec | None) -> dict[str, Any] | None:
    """The step's tool parameters; None (after a hand-over turn) when a required one has no value."""
    params = _resolved(run, step, tool)
    if isinstance(params, tuple):
        run.turns.append(_hand_over(run.wf, n, step, *params))
        return None
    return params


def _fits_before_asking(run: Run, n: int, step: Step) -> bool:
    """A step a person must confirm: the arguments it has are checked against the tool's schema before anyone is
    asked (:func:`_refused`), so that no one says yes to a call that would not be made. False after the error."""
    assert step.tool is not None
    tool = run.tools.get(step.tool)
    params = _resolved(run, step, tool)
    refused = None if isinstance(params, tuple) else _refused(step.tool, tool, params)
    if refused is not None:
        run.turns.append(_failed(run.wf, n, step, refused))
    return refused is None


def _refused(name: str, tool: ToolSpec | None, params: dict[str, Any]) -> str | None:
    """Why the tool's input schema, as the server lists it now, refuses the arguments the step has resolved (a
    result or an input that makes them invalid, a number that is not finite), or None: checked before the call, by
    the same rule as ``build`` checks constants (:func:`projector.toolschema.argument_errors`), so that no framework
    coerces them (``"-1e999"`` into an infinity). A schema that cannot be used is the server's to apply."""
    schema = tool.input_schema if tool is not None else None
    found = argument_errors(schema, params) if isinstance(schema, dict) and params else {}
    if isinstance(found, str) or not found:
        return None
    said = "; ".join(f"`{key}`: {message}" for key, message in found.items())
    return f"the arguments do not fit the input schema of the tool `{name}`, so it was not called ({said})"


async def _tool_failure(host: WorkflowHost, name: str, params: dict[str, Any]) -> tuple[Any, str | None]:
    """The tool's result, and why the call failed (None when it did not)."""
    try:
        result = await host.call_tool(name, params)
    except Exception as exc:  # ToolError, MCPError, anything the tool raised
        return None, str(exc) or type(exc).__name__
    if not isinstance(result, CallToolResult):
        return result, "the tool asked for more input, which a server-side run cannot give"
    if result.is_error:
        return result, _error_text(result)
    return result, None


async def _call_tool(run: Run, n: int, step: Step, head: str) -> bool:
    assert step.tool is not None
    tool = run.tools.get(step.tool)
    params = _tool_params(run, n, step, tool)
    if params is None:
        return False
    refused = _refused(step.tool, tool, params)
    if refused is None and run.wf.name in WITHDRAWN.get()():
        refused = (
            f"the server's tools changed while the workflow ran, and it no longer fits them, so the tool "
            f"`{step.tool}` was not called"
        )
    if refused is not None:
        run.turns.append(_failed(run.wf, n, step, refused))
        return False
    run.turns.append(_assistant(f"{head}\nCalling the tool `{step.tool}` with:\n{_fence(params)}"))
    result, failure = await _tool_failure(run.host, step.tool, params)
    if failure is not None:
        run.turns.append(_failed(run.wf, n, step, f"the tool `{step.tool}` failed: {failure}"))
        return False
    value = tool_result_value(result, tool.output_schema if tool else None)
    run.save(n, step.bind, value)
    run.add_result_turn(n, _result_turn(step, value))
    return True


def _result_turn(step: Step, value: Any) -> Turn:
    saved = f" (saved as `{step.bind}`)" if step.bind else ""
    return _user(f"Result of `{step.tool}`{saved}:\n{_fence(value)}")


async def _read_resources(run: Run, n: int, step: Step, head: str) -> bool:
    fills: dict[str, str] = {}
    for name, source in step.template:
        value = run.resolve(source)
        if isinstance(value, Missing):
            run.turns.append(_hand_over(run.wf, n, step, name, value))
            return False
        fills[name] = _uri_value(value)
    uris = [PLACEHOLDER.sub(lambda m: fills.get(m.group(1), m.group(0)), r) for r in step.resources]
    run.turns.append(_assistant(f"{head}\nReading " + ", ".join(f"`{u}`" for u in uris) + "."))
    for uri in uris:
        try:
            contents = await run.host.read_resource(uri)
        except Exception as exc:
            run.turns.append(_failed(run.wf, n, step, f"reading `{uri}` failed: {exc}"))
            return False
        for c in contents:
            mime = c.mime_type or "text/plain"
            body = c.content if isinstance(c.content, str) else f"<{plural(len(c.content), 'byte')} of {mime}>"
            run.turns.append(_user(f"Resource `{uri}` ({mime}):\n\n{body}"))
    return True


def _remaining(wf: Workflow, n: int) -> str:
    return "\n".join(f"{i}. `{s.name}`: {_describe(s)}" for i, s in enumerate(wf.steps, 1) if i >= n)


def _hand_over(wf: Workflow, n: int, step: Step, param: str, why: Missing) -> Turn:
    target = (
        f"the tool `{step.tool}` requires `{param}`"
        if step.tool is not None
        else f"the resource URI needs `{{{param}}}`"
    )
    return _user(
        f"Stopped before step {n} of {len(wf.steps)} (`{step.name}`): {target}, and it has no value: {why.reason}.\n\n"
        f"Over to you. Work out `{param}` (ask the user if you cannot), then carry on yourself with the results "
        f"above and these steps:\n{_remaining(wf, n)}"
    )


def _stopped(wf: Workflow, n: int, step: Step, found: Check) -> Turn:
    """One line: the step, the failing condition and the value actually seen."""
    rest = len(wf.steps) - n
    action = f"did not call `{step.tool}`" if step.tool else "did not read the step's resources"
    tail = f", and the {rest} later step{'s' * (rest != 1)} did not run" if rest else ""
    return _user(
        f"Stopped before step {n} of {len(wf.steps)} (`{step.name}`): {failure_text(found)}. The "
        f"server {action}{tail}; tell the user why the workflow stopped."
    )


def _skipped(run: Run, n: int, step: Step, found: Check) -> str:
    wf = run.wf
    readers = run.readers(step.bind) if step.bind else []
    users = [f"{i} (`{wf.steps[i - 1].name}`)" for i in readers[bisect_right(readers, n) :]]
    later = f" Step{'s' * (len(users) != 1)} {', '.join(users)} will not have `{step.bind}`." if users else ""
    return f"Skipped: {failure_text(found)}.{later} Going on with the next step."


def _failed(wf: Workflow, n: int, step: Step, what: str) -> Turn:
    rest = len(wf.steps) - n
    tail = f" The {rest} later step{'s' * (rest != 1)} did not run." if rest else ""
    return _user(
        f"Error: the workflow `{wf.name}` stopped at step {n} of {len(wf.steps)} (`{step.name}`): "
        f"{what}.{tail} Tell the user what failed; do not retry a tool that changes data without "
        f"asking."
    )
