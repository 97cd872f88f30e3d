"""A person in the loop that the server enforces: a step's ``confirm:`` and an argument's ``ask: true``.

The 2026-07-28 protocol lets ``prompts/get`` answer with an ``InputRequiredResult``: elicitation requests and an
opaque ``requestState``; the client asks its user and retries with ``inputResponses`` and the state. This module is
the runner's side of that, in no framework's terms:

- :class:`~projector.server.runstate.Round` is what the client brought to this ``prompts/get`` (whether it can be
  asked at all, the state it echoed, its answers); an adapter makes it from its framework's request context. It, the
  run and the state a paused run carries live in :mod:`projector.server.runstate`, which this module and the runner
  share.
- :func:`ask_inputs` and :func:`confirmation` are the two checks :func:`projector.server.workflow.run_step` makes
  before a step: they either let the step go on, stop the run with a turn that says why, or pause the run by raising
  :class:`Pause`, which carries an :class:`Asking` (the questions and the state to resume from). The adapter turns an
  :class:`Asking` into its framework's ``InputRequiredResult``.
- :class:`~projector.server.runstate.RunState` is what the state carries: the step to resume at, the results so
  far, the answers given, the transcript so far, and a one-time token for a confirmation. It is plain JSON here: the
  framework's request-state boundary (``mcp.server.request_state``, AES-GCM under ``PROJECT_SKILL_STATE_KEY``) seals
  it on the way out, and verifies it on the way back, before the runner sees it; a state that does not verify never
  reaches here. A state whose retry would be too large for a server to take is never sent: the run stops instead,
  and says why.
- Everything a question shows from the run (a result's field, an input) is written as the SKILL.md writes a JSON
  value (:func:`projector.render.canonical_json`), with every control, separator and bidirectional override escaped
  (:func:`projector.errors.printable`): a value that a customer controls cannot draw lines of its own in the question.
- A replay guard (:mod:`projector.server.replay`) makes each confirmation's yes run its step at most once. A sealed
  state is authentic, not single-use: the same state and the same yes could be sent twice within its lifetime (a
  retry after a timeout, a copy). So the yes claims the question's token, in the guard the adapter passed in with
  the :class:`~projector.server.runstate.Round`, before the step runs, and a token already claimed is refused with
  -32602 and nothing runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR

from ..errors import printable
from ..model import Argument, FromArg, FromStep, Source, Step
from ..render import canonical_json
from .arguments import Missing
from .runstate import Run, invalid_state, snapshot, too_large
from .runstate import Answer as Answer, Round as Round, RunState as RunState  # where the adapters and tests find them

ELICITATION_PROTOCOL = "2026-07-28"
_CANNOT_ASK = (
    "this client cannot ask a person (it did not declare elicitation, or it speaks a protocol older than "
    f"{ELICITATION_PROTOCOL})"
)


# ------------------------------------------------------------------------------------------------------- the round


def can_elicit(capabilities: Any, protocol_version: str | None) -> bool:
    """Whether a client with these capabilities, on this protocol, can be asked through an ``InputRequiredResult``:
    form elicitation declared (a bare ``elicitation: {}`` counts as form), and a protocol of 2026-07-28 or later."""
    elicitation = getattr(capabilities, "elicitation", None) if capabilities is not None else None
    if elicitation is None or (getattr(elicitation, "form", None) is None and getattr(elicitation, "url", None)):
        return False
    return protocol_version is not None and protocol_version >= ELICITATION_PROTOCOL


@dataclass(frozen=True)
class Asking:
    """The run paused for a person: ``requests`` maps each key to an elicitation's message and requested schema;
    ``state`` is the plain JSON the framework seals as ``requestState``."""

    requests: dict[str, tuple[str, dict[str, Any]]]
    state: str


def input_required(asking: Asking) -> Any:
    """``asking`` as the wire's ``InputRequiredResult``: one form elicitation per question, and the plain state,
    which the framework's request-state boundary seals on the way out."""
    from mcp_types import ElicitRequest, ElicitRequestFormParams, InputRequiredResult

    return InputRequiredResult(
        input_requests={
            key: ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))
            for key, (message, schema) in asking.requests.items()
        },
        request_state=asking.state,
    )


class Pause(Exception):
    """Raised by a check to pause the run; :func:`projector.server.workflow.run_workflow` returns its asking."""

    def __init__(self, asking: Asking):
        super().__init__("input required")
        self.asking = asking


# -------------------------------------------------------------------------------------------------- asked inputs


def needed_arguments(step: Step) -> list[str]:
    """The prompt arguments a step reads, in order (:meth:`projector.model.Step.arguments_read`, the one rule)."""
    return step.arguments_read()


_JSON_TYPES = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,)}


def _fits(arg: Argument, value: Any) -> bool:
    kind = arg.type or "string"
    if isinstance(value, bool) and kind != "boolean":
        return False
    if isinstance(value, float) and not math.isfinite(value):  # 1e999 in JSON: refused, as a prompt argument is
        return False
    return isinstance(value, _JSON_TYPES[kind])


def _ask_schema(args: list[Argument]) -> dict[str, Any]:
    props = {
        a.name: {
            "type": a.type or "string",
            "title": a.name,
            **({"description": a.description} if a.description else {}),
        }
        for a in args
    }
    return {"type": "object", "properties": props, "required": [a.name for a in args]}


def ask_inputs(run: Run, n: int, step: Step) -> str | None:
    """Step ``n``'s ``ask: true`` inputs that the prompt was called without: taken from this round's answer when it
    answers them, else asked (raises :class:`Pause`). Returns why the run stops here (the inputs cannot be asked,
    or the person did not give them), or None when the step can go on."""
    wf = run.wf
    missing = [
        a
        for a in (wf.argument(name) for name in needed_arguments(step))
        if a is not None and a.ask and a.name not in run.typed
    ]
    if not missing:
        return None
    names = ", ".join(f"`{a.name}`" for a in missing)
    what = f"the input{'s' * (len(missing) != 1)} {names}, which the prompt was called without"
    if run.resumed == (n, "ask"):
        answer = run.round.answers.get(f"ask-{n}")
        if answer is None or answer.action != "accept":
            said = _said(answer)
            return f"it needs {what}, and the person did not give {'it' if len(missing) == 1 else 'them'} ({said})"
        wrong = [a for a in missing if a.name not in answer.content or not _fits(a, answer.content[a.name])]
        if wrong:
            a = wrong[0]
            return f"it needs {what}, and the answer for `{a.name}` is not {_a(a.type or 'string')}"
        for a in missing:
            run.take(a, answer.content[a.name])
        return None
    if not run.round.can_ask:
        return (
            f"it needs {what}, and {_CANNOT_ASK}. Call the prompt again with "
            f"{'it' if len(missing) == 1 else 'them'}, asked of the user; never work "
            f"{'it' if len(missing) == 1 else 'them'} out yourself"
        )
    total = len(wf.steps)
    message = (
        f"Step {n} of {total} of `{wf.name}` (`{step.name}`) needs "
        + "; ".join(f"`{a.name}`" + (f" ({a.description.strip()})" if a.description.strip() else "") for a in missing)
        + "."
    )
    return _pause(run, n, "ask", (message, _ask_schema(missing)))


def _pause(run: Run, n: int, waits: str, question: tuple[str, dict[str, Any]]) -> str:
    """Pause the run before step ``n`` to ask ``question`` (raises :class:`Pause`). Returns why it cannot instead:
    the state that must carry the answer back would make a retry larger than a server takes."""
    state = snapshot(run, n, waits).dumps(run.wf)
    why = too_large(run, state)
    if why is not None:
        return why
    raise Pause(Asking({f"{waits}-{n}": question}, state))


def _a(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _said(answer: Answer | None) -> str:
    if answer is None:
        return "no answer came back"
    return {"decline": "they declined", "cancel": "they cancelled the question"}.get(answer.action, "they answered no")


# -------------------------------------------------------------------------------------------------- confirmation


def _label(src: Source, i: int) -> str:
    if isinstance(src, FromArg):
        return f"the input `{src.name}`"
    if isinstance(src, FromStep):
        return f"`{src.bind}.{src.field}`" if src.field else f"`{src.bind}`"
    return f"value {i}"


def shown(run: Run, step: Step) -> str:
    """The values the confirmation shows, one line each: ``- `order.total`: 129.0``. Each is JSON as the SKILL.md
    writes it, with every control, line or paragraph separator and bidirectional override escaped: it stays on its
    line, in the order it holds."""
    lines = []
    assert step.confirm is not None
    for i, src in enumerate(step.confirm.show, 1):
        value = run.resolve(src)
        text = "(no value)" if isinstance(value, Missing) else printable(canonical_json(value, indent=None))
        lines.append(f"- {_label(src, i)}: {text}")
    return "\n".join(lines)


def confirm_schema(step: Step) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["confirm"],
        "properties": {
            "confirm": {
                "type": "boolean",
                "title": "Confirm",
                "description": f"Yes runs the step `{step.name}`; anything else does not.",
            }
        },
    }


@dataclass(frozen=True)
class Decision:
    """What a confirmation decided: ``yes`` (run the step, its token claimed), or why not (``reason``)."""

    yes: bool
    reason: str = ""
    can_ask: bool = True


async def confirmation(run: Run, n: int, step: Step) -> Decision:
    """Step ``n``'s ``confirm:``, once its conditions hold: this round's answer to it, or the question (raises
    :class:`Pause`). A yes claims the question's one-time token (-32602 when it was claimed before: nothing runs)."""
    assert step.confirm is not None
    message = step.confirm.message.strip()
    if run.resumed == (n, "confirm"):
        answer = run.round.answers.get(f"confirm-{n}")
        if answer is not None and answer.action == "accept" and answer.content.get("confirm") is True:
            if run.round.guard is None:  # a prompt made without attach(): a yes that cannot be claimed runs nothing
                raise MCPError(
                    code=INTERNAL_ERROR, message="no replay guard to claim the confirmation in; nothing was run"
                )
            if not await run.round.guard.claim(run.token):
                raise invalid_state("its confirmation was answered before, and its step has run")
            return Decision(True, f"{message} (a person answered yes)")
        return Decision(False, f'the person did not confirm it ("{message}"): {_said(answer)}')
    if not run.round.can_ask:
        return Decision(
            False,
            f'it needs a person\'s confirmation ("{message}"), and {_CANNOT_ASK}; the step never runs unconfirmed',
            can_ask=False,
        )
    values = shown(run, step)
    text = f"{message}\n\n{values}" if values else message
    return Decision(False, _pause(run, n, "confirm", (text, confirm_schema(step))), can_ask=False)
