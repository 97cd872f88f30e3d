"""The state of one run of a workflow prompt, which the runner and the person in the loop share.

The runner (:mod:`projector.server.workflow`) drives the steps; the confirmations and asked inputs
(:mod:`projector.server.confirm`) pause and resume them. Both read and write the same run: what it was given, what
its steps saved or skipped, the answers a person gave, the transcript so far. That state lives here, in one module
that both import and neither owns, so the two never import each other:

- :class:`Round` is what the client brought to this ``prompts/get``: whether it can be asked at all, the state it
  echoed (already verified by the framework), its answers;
- :class:`Run` is one run: its inputs, its saved results, its transcript, and the round it is in;
- :class:`RunState` is what a paused run carries to its retry, as plain JSON that the framework seals as
  ``requestState``. Each saved result is carried once: the transcript refers to a step's result by the step's
  number, and the turn is written again from the result on resume.

A retry carries the sealed state back, and a server takes at most :data:`MAX_RETRY_BYTES` in one message (mcp's
HTTP body limit, and ``serve``'s stdio line limit). :func:`retry_bytes` says how large the retry of a state would
be, so that a run whose results are too large to carry stops before it asks, with a reason, instead of asking a
question whose yes could never come back.
"""

from __future__ import annotations

import json
import math
import secrets
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from ..model import Argument, Const, FromArg, FromStep, Source, Workflow
from ..render import workflow_digest
from .arguments import Missing, canonical_text
from .replay import ReplayGuard

STATE_VERSION = 2
# The most a server takes in one message: mcp's Streamable HTTP answers a longer body with 413, and ``serve``'s
# stdio answers a longer line with an error (``--max-line-bytes``, by default the same 4 MiB).
MAX_RETRY_BYTES = 4 * 1024 * 1024
# What a retry holds besides the sealed state and the arguments: the JSON-RPC message, the method, the prompt's name,
# the answers to one question, and the claims mcp seals around the state (times, bindings, audience, principal).
_RETRY_OVERHEAD = 16 * 1024


# ------------------------------------------------------------------------------------------------------- the round


@dataclass(frozen=True)
class Answer:
    """One answer of the client's ``inputResponses``: an elicitation result's ``action`` and ``content``."""

    action: str
    content: dict[str, Any]

    @classmethod
    def of(cls, raw: Any) -> Answer:
        data = raw.model_dump(by_alias=True, exclude_none=True) if hasattr(raw, "model_dump") else raw
        if not isinstance(data, dict):
            return cls("cancel", {})
        content = data.get("content")
        return cls(str(data.get("action", "cancel")), content if isinstance(content, dict) else {})


@dataclass(frozen=True)
class Round:
    """What the client brought to this ``prompts/get``: whether it can be asked (it declared form elicitation and
    speaks 2026-07-28 or later), the state it echoed (already verified, in plain text) and its answers by key; and
    the replay guard where a yes is claimed (:mod:`projector.server.replay`), which ``attach`` gave the prompt or
    the tool."""

    can_ask: bool = False
    state: str | None = None
    answers: dict[str, Answer] = field(default_factory=dict)
    guard: ReplayGuard | None = None

    @classmethod
    def of(cls, *, can_ask: bool, state: str | None, responses: Any, guard: ReplayGuard | None = None) -> Round:
        answers = {str(k): Answer.of(v) for k, v in (responses or {}).items()}
        return cls(can_ask, state, answers, guard)


# -------------------------------------------------------------------------------------------------------- the host


@dataclass(frozen=True)
class ToolSpec:
    """What the runner needs to know about a server's tool."""

    input_schema: dict[str, Any] | None
    output_schema: dict[str, Any] | None


class WorkflowHost(ABC):
    """What the runner needs from the server it runs on; each framework's adapter makes one for a request
    (:meth:`projector.server.adapters.base.Adapter.add_tool` with ``host=True``, and the workflow prompts).

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


@dataclass(frozen=True)
class Turn:
    """One message of the transcript, in no framework's terms: each adapter makes its own message of it."""

    role: Literal["user", "assistant"]
    text: str


# ---------------------------------------------------------------------------------------------------------- the run


class Run:
    """One run of a workflow: what it was given, what its steps saved or skipped, and its transcript so far."""

    def __init__(
        self,
        wf: Workflow,
        given: dict[str, str],
        typed: dict[str, Any],
        host: WorkflowHost,
        round: Round | None = None,
        sent_bytes: int = 0,
    ):
        self.wf = wf
        self.given = given  # each argument's canonical text, for {placeholders}
        self.declared = frozenset(a.name for a in wf.arguments)  # the names a {placeholder} inside a constant takes
        self.typed = typed  # converted to each argument's type
        self.host = host
        self.round = round or Round()  # what the client brought: whether it can be asked, its state, its answers
        self.sent_bytes = sent_bytes  # the size of the arguments as sent, which a retry sends again
        self.tools: dict[str, ToolSpec] = {}
        self.values: dict[int, Any] = {}  # step number -> the value its tool call returned
        self.bound: dict[str, int] = {}  # bind -> the step whose value it holds
        self.results: dict[str, Any] = {}  # bind -> that value, as the conditions read it
        self.skipped: dict[str, str] = {}  # bind -> why its step was skipped (on_fail: skip)
        self.skipped_count = 0
        self.turns: list[Turn] = []
        self.result_turns: dict[int, int] = {}  # index in turns -> the step whose result that turn shows
        self.resumed: tuple[int, str] | None = None  # the step this round resumes at, and what it waited for
        self.token = ""  # the one-time token of the confirmation this round answers
        self.asked: dict[str, Any] = {}  # the answers to asked inputs (ask: true), by argument name
        self._readers: dict[str, list[int]] | None = None

    def save(self, n: int, bind: str | None, value: Any) -> None:
        """Step ``n``'s tool returned ``value``; under ``bind`` when the step saves it."""
        self.values[n] = value
        if bind:
            self.results[bind] = value
            self.bound[bind] = n

    def add_result_turn(self, n: int, turn: Turn) -> None:
        """The turn that shows step ``n``'s result (:meth:`save`): a state carries it as a reference to the value."""
        self.result_turns[len(self.turns)] = n
        self.turns.append(turn)

    def take(self, arg: Argument, value: Any) -> None:
        """An asked input's answer joins the arguments."""
        self.asked[arg.name] = value
        self.typed[arg.name] = value
        self.given[arg.name] = canonical_text(value)

    def readers(self, bind: str) -> list[int]:
        """The numbers of the steps that read the result saved as ``bind``, in order; one pass over the steps for
        the whole run, however many are skipped."""
        if self._readers is None:
            self._readers = {}
            for i, s in enumerate(self.wf.steps, 1):
                for b in dict.fromkeys(src.bind for _, src in s.sources() if isinstance(src, FromStep)):
                    self._readers.setdefault(b, []).append(i)
        return self._readers.get(bind, [])

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
            uses = source.uses(self.declared)
            missing = [p for p in uses if p not in self.given]
            if missing:
                return Missing(f"the constant uses `{{{missing[0]}}}`, and the argument `{missing[0]}` was not given")
            return source.filled(self.given) if uses else source.value
        raise TypeError(f"unknown source {source!r}")  # pragma: no cover - the model has three kinds


# -------------------------------------------------------------------------------------------------------- the state


def invalid_state(why: str) -> MCPError:
    return MCPError(
        code=INVALID_PARAMS,
        message=f"Invalid requestState: {why}; nothing was run",
        data={"reason": "invalid_request_state"},
    )


# A turn as the state carries it: [role, text], or the number of the step whose result the turn shows.
StateTurn = tuple[str, str] | int


@dataclass
class RunState:
    """What a paused run needs to resume: the step (1-based) and what it waits for (``confirm`` or ``ask``), the
    one-time token of a confirmation, the value of each step's tool call so far (once each) and which step each bind
    holds, the skips, the answers to asked inputs, and the transcript (a result turn as its step's number)."""

    step: int
    waits: str
    token: str
    values: dict[int, Any]
    bound: dict[str, int]
    skipped: dict[str, str]
    skipped_count: int
    asked: dict[str, Any]
    turns: list[StateTurn]

    def dumps(self, wf: Workflow) -> str:
        # The workflow's digest binds the state to the definition it paused on: after a redeploy that changed the
        # workflow, a yes given to its old step N must not run whatever step N is now.
        return json.dumps(
            {
                "v": STATE_VERSION,
                "workflow": wf.name,
                "definition": workflow_digest(wf),
                "step": self.step,
                "waits": self.waits,
                "token": self.token,
                "values": {str(n): v for n, v in self.values.items()},
                "bound": self.bound,
                "skipped": self.skipped,
                "skipped_count": self.skipped_count,
                "asked": self.asked,
                "turns": [t if isinstance(t, int) else list(t) for t in self.turns],
            },
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        )

    @classmethod
    def loads(cls, text: str, wf: Workflow) -> RunState:
        """The state a run of ``wf`` paused with; -32602 for anything else (a state of another workflow, or one this
        version of the runner did not write)."""
        try:
            data = json.loads(text)
            if data["v"] != STATE_VERSION or data["workflow"] != wf.name or data["waits"] not in ("confirm", "ask"):
                raise ValueError
            if data["definition"] != workflow_digest(wf):
                raise invalid_state("the workflow has changed since the run paused; start it again")
            step = data["step"]
            if not (isinstance(step, int) and 1 <= step <= len(wf.steps)):
                raise ValueError
            values = {_step_number(k, wf): v for k, v in dict(data["values"]).items()}
            bound = {str(b): _known(n, values) for b, n in dict(data["bound"]).items()}
            turns = [_known(t, values) if isinstance(t, int) else _role_text(t) for t in data["turns"]]
            return cls(
                step,
                data["waits"],
                str(data["token"]),
                values,
                bound,
                dict(data["skipped"]),
                int(data["skipped_count"]),
                dict(data["asked"]),
                turns,
            )
        except (ValueError, KeyError, TypeError):
            raise invalid_state("it is not the state of a paused run of this workflow") from None


def _step_number(key: str, wf: Workflow) -> int:
    n = int(key)
    if not (1 <= n <= len(wf.steps) and wf.steps[n - 1].tool is not None):
        raise ValueError(key)
    return n


def _known(n: Any, values: dict[int, Any]) -> int:
    if type(n) is not int or n not in values:
        raise ValueError(n)
    return n


def _role_text(turn: Any) -> tuple[str, str]:
    role, text = turn
    if role not in ("user", "assistant") or not isinstance(text, str):
        raise ValueError(role)
    return role, text


def snapshot(run: Run, n: int, waits: str) -> RunState:
    """The state of ``run`` paused before step ``n``, with a new one-time token."""
    turns: list[StateTurn] = [run.result_turns.get(i, (t.role, t.text)) for i, t in enumerate(run.turns)]
    return RunState(
        n, waits, secrets.token_hex(16), run.values, run.bound, run.skipped, run.skipped_count, run.asked, turns
    )


def retry_bytes(state: str, sent_bytes: int) -> int:
    """About how many bytes the client's retry of ``state`` takes, from above: the state as mcp seals it (written as
    an ASCII JSON string into its claims, encrypted, then base64), the arguments sent again, and the message around
    them."""
    claims = len(json.dumps(state)) + _RETRY_OVERHEAD
    return 4 * math.ceil((claims + 32) / 3) + sent_bytes + _RETRY_OVERHEAD


def too_large(run: Run, state: str) -> str | None:
    """Why ``state`` cannot go out (its retry would be over :data:`MAX_RETRY_BYTES`), or None when it can."""
    size = retry_bytes(state, run.sent_bytes)
    if size <= MAX_RETRY_BYTES:
        return None
    return (
        f"a person's answer must come back with the run's state, and with the results so far that retry would be "
        f"about {size:,} bytes, over the {MAX_RETRY_BYTES:,} bytes (4 MiB) a server takes in one message"
    )
