"""Task-augmented ``tools/call`` (the Tasks extension, SEP-2663, 2026-07-28), in no framework's terms.

A tool that supports tasks is given a *job* (:data:`Job`): one round of work that either finishes (:class:`Done`,
a ``CallToolResult`` as wire JSON) or stops for a person (:class:`NeedInput`, the input requests and the state to
resume from). :class:`Tasks` runs the jobs of the tools it is told about (:meth:`Tasks.support`):

- :meth:`Tasks.start` records the task in its :class:`TaskStore` *before* it answers, so a ``tasks/get`` right after
  the ``CreateTaskResult`` resolves, then runs the first round in the background;
- :meth:`Tasks.get` is ``tasks/get``: the status, the result or error inlined once terminal, the pending input
  requests while ``input_required``;
- :meth:`Tasks.update` is ``tasks/update``: the answers are kept until every pending request has one, then the next
  round runs with them. Each round mints new request ids, so an answer is bound to its task and its round: an id of
  another task or of an earlier round answers nothing;
- :meth:`Tasks.cancel` is ``tasks/cancel``: the status is ``cancelled`` at once; an interruptible job (a plain tool)
  is stopped where it is, a workflow's job is told through :attr:`Call.cancelled` and stops before its next step.

Whose a task is. A task made by a request that carries an identity (an authenticated principal: see
:func:`projector.server.tasks_wire.owner`) keeps that identity's digest as its ``owner``, and each of the three
methods is given the asking request's: a task whose owner is not the asker's is answered exactly as an unknown one
(-32602), whatever the store. A task made without an identity has no owner: its id, unguessable, is the bearer's key
to it (the Tasks extension allows task ids as bearer tokens), so a client can reach it again after a restart.

A tool error is ``completed`` with ``result.isError``; ``failed`` is for a protocol-level failure (:class:`Failure`,
or anything the job raises). A task stays readable for its ``ttlMs``, then is gone (``-32602``) and runs nothing
more. Each framework's adapter serves this object as its own extension (the three methods and a ``tools/call``
interceptor); the store is an interface so that a durable one can take the place of :class:`MemoryStore`.

Each change of a task (an answer, a cancel, a round's end) is one :meth:`TaskStore.change`: read, changed and
written with no other change in between, so four answers at once to one question start one round, and the three
others answer nothing, as an answer to a round already answered does. A store that keeps tasks past the process
holds them within :class:`Bounds` (how many, and how many bytes each and in all), checked before anything is written.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import secrets
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
CLIENT_CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities"
MISSING_CLIENT_CAPABILITY = -32021  # SEP-2575: the client did not declare what the request needs
HEADER_MISMATCH = -32020  # SEP-2243: a routing header that does not match the body
DEFAULT_TTL_MS = 24 * 60 * 60 * 1000  # a task waiting for a person may wait hours
DEFAULT_POLL_MS = 500
TERMINAL = frozenset({"completed", "failed", "cancelled"})


# ---------------------------------------------------------------------------------------------------------- a job


@dataclass(frozen=True)
class Call:
    """One round of a job: the tool's arguments, the answers to the previous round's requests (by the job's own
    keys), the state the previous round stopped with (None on the first), and whether the task was cancelled."""

    arguments: dict[str, Any]
    answers: dict[str, Any]
    state: Any
    cancelled: Callable[[], bool]


@dataclass(frozen=True)
class Done:
    """The job finished: its ``CallToolResult`` as wire JSON (``content``, and ``isError`` for a tool error)."""

    result: dict[str, Any]


@dataclass(frozen=True)
class NeedInput:
    """The job waits for a person: each request (``{"method": "elicitation/create", "params": ...}``) by the job's
    own key, and the JSON state its next round resumes from."""

    requests: dict[str, dict[str, Any]]
    state: Any


class Failure(Exception):
    """A protocol-level failure of a job: the task is ``failed`` with this error inlined."""

    def __init__(self, code: int, message: str, data: Any = None):
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


Job = Callable[[Call], Awaitable[Done | NeedInput]]
# Before a task is made: an MRTR round in the request itself (arguments, inputResponses) -> an InputRequiredResult as
# wire JSON to answer now, or None to make the task (SEP-2663's MRTR-then-task composition).
Gather = Callable[[dict[str, Any], dict[str, Any]], dict[str, Any] | None]


@dataclass(frozen=True)
class TaskSupport:
    """How a tool runs as a task: its job; ``required``: the tool cannot run without one (-32021 for a client that
    did not declare the extension); ``interruptible``: a cancel may stop the job where it is (a workflow's job says
    no, and stops between steps); ``gather``: an MRTR round before the task."""

    job: Job
    required: bool = False
    interruptible: bool = True
    gather: Gather | None = None


# -------------------------------------------------------------------------------------------------------- the store


@dataclass
class TaskRecord:
    """Everything about one task, as plain JSON values, so that any store can keep it."""

    task_id: str
    tool: str
    arguments: dict[str, Any]
    status: str
    created_at: str
    updated_at: str
    expires: float  # the wall-clock second it is gone
    ttl_ms: int
    poll_ms: int
    round: int = 0
    state: Any = None
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)  # minted id -> request
    keys: dict[str, str] = field(default_factory=dict)  # minted id -> the job's key
    answers: dict[str, Any] = field(default_factory=dict)  # minted id -> answer, until every pending one has one
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    owner: str | None = None  # the digest of the principal that made it; None: whoever holds the id
    # the answers the running round started with (by the job's keys): a durable store takes the round up with them
    # when the process died before the round was recorded
    given: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def encode(self) -> str:
        """The record as a store keeps it (ASCII JSON): its length is the bytes it takes."""
        return json.dumps(self.to_json(), sort_keys=True)


Change = Callable[[TaskRecord], bool]  # changes a record in place; True when it is to be written


class TaskStore(ABC):
    """Where tasks are kept. ``put`` returns only once the record is stored (a ``get`` after it sees it)."""

    @abstractmethod
    async def put(self, record: TaskRecord) -> None: ...

    @abstractmethod
    async def get(self, task_id: str) -> TaskRecord | None: ...

    async def change(self, task_id: str, change: Change) -> TaskRecord | None:
        """Read the task, let ``change`` change it, and write it when it says so, with no other change of the task
        in between; the record as changed, or None when there is none. Here, in this process (a lock per task);
        a store that several processes share overrides it with its own transaction."""
        locks = self.__dict__.setdefault("_locks", weakref.WeakValueDictionary())
        lock = locks.setdefault(task_id, asyncio.Lock())
        async with lock:
            rec = await self.get(task_id)
            if rec is not None and change(rec):
                await self.put(rec)
        return rec


MAX_TASKS = 10_000  # tasks a durable store keeps (the expired ones not counted)
MAX_TASK_BYTES = 4 * 1024 * 1024  # one task as kept: its arguments, state, questions and result
MAX_TOTAL_BYTES = 256 * 1024 * 1024  # every task as kept


@dataclass(frozen=True)
class Bounds:
    """How much a store that outlives the process keeps: at most ``tasks`` tasks, each of at most ``task_bytes``
    (its record as kept), all of them together at most ``total_bytes``. A write that would go past one is refused
    before anything is written: a new task (the call gets an error), an answer (the task waits as it was); a round
    whose result is too large ends the task ``failed``. The expired tasks count for nothing."""

    tasks: int = MAX_TASKS
    task_bytes: int = MAX_TASK_BYTES
    total_bytes: int = MAX_TOTAL_BYTES

    def grows(self, old: int | None, new: int, status: str = "") -> bool:
        """Whether a write of ``new`` bytes over a record of ``old`` (None: a new task) is checked, the others
        counted. A task kept that ends ``failed`` or ``cancelled`` is not: it adds a few bytes (an error, a longer
        word), and it must end even in a store with no room for them (else it stays ``working`` until its ``ttlMs``,
        or cannot be cancelled)."""
        return old is None or (new > old and status not in ("failed", "cancelled"))

    def check(self, old: int | None, new: int, others: int, others_bytes: int) -> None:
        """Refuse (:class:`TooMuch`) a write of ``new`` bytes over ``old``, beside ``others`` live tasks that take
        ``others_bytes``."""
        if new > self.task_bytes:
            raise TooMuch(
                f"the task would take {new:,} bytes, over the {self.task_bytes:,} bytes this server keeps "
                "for one task; nothing was kept",
                INVALID_PARAMS,
            )
        if old is None and others >= self.tasks:
            raise TooMuch(
                f"this server keeps at most {self.tasks:,} tasks, and none has expired yet; nothing was "
                "kept: call again later, or without a task"
            )
        if self.grows(old, new) and others_bytes + new > self.total_bytes:
            raise TooMuch(
                f"this server keeps at most {self.total_bytes:,} bytes of tasks, and they would take "
                f"{others_bytes + new:,}; nothing was kept: call again later, or without a task"
            )


class TooMuch(MCPError):
    """A write that :class:`Bounds` refuses: nothing of it was written."""

    def __init__(self, message: str, code: int = INTERNAL_ERROR):
        super().__init__(code=code, message=message)


MAX_MEMORY_TASKS = 10_000  # tasks one process keeps in memory, expired ones dropped first


class MemoryStore(TaskStore):
    """This process's memory: tasks end with the process. At most ``limit`` tasks: when it is full, the expired ones
    go, and a new task beyond that is refused (a client cannot make the server keep tasks without bound)."""

    def __init__(self, limit: int = MAX_MEMORY_TASKS) -> None:
        self._records: dict[str, dict[str, Any]] = {}
        self.limit = limit

    async def put(self, record: TaskRecord) -> None:
        if record.task_id not in self._records and len(self._records) >= self.limit:
            now = time.time()
            for task_id in [k for k, v in self._records.items() if v["expires"] < now]:
                del self._records[task_id]
            if len(self._records) >= self.limit:
                raise MCPError(
                    code=INTERNAL_ERROR,
                    message=f"this server keeps at most {self.limit} tasks in memory, and none has expired yet: "
                    "call again later, or without a task",
                )
        self._records[record.task_id] = record.to_json()

    async def get(self, task_id: str) -> TaskRecord | None:
        data = self._records.get(task_id)
        return None if data is None else TaskRecord(**{k: _copy(v) for k, v in data.items()})


def _copy(value: Any) -> Any:
    return {k: _copy(v) for k, v in value.items()} if isinstance(value, dict) else value


# ------------------------------------------------------------------------------------------------------------ wire


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _envelope(rec: TaskRecord) -> dict[str, Any]:
    return {
        "taskId": rec.task_id,
        "status": rec.status,
        "createdAt": rec.created_at,
        "lastUpdatedAt": rec.updated_at,
        "ttlMs": rec.ttl_ms,
        "pollIntervalMs": rec.poll_ms,
    }


def created(rec: TaskRecord) -> dict[str, Any]:
    """The flat ``CreateTaskResult``."""
    return {"resultType": "task", **_envelope(rec)}


def detailed(rec: TaskRecord) -> dict[str, Any]:
    """``tasks/get``'s answer: the task, and its result, error or pending requests."""
    out: dict[str, Any] = {"resultType": "complete", **_envelope(rec)}
    if rec.status == "completed" and rec.result is not None:
        out["result"] = {"resultType": "complete", **rec.result}  # a CallToolResult of 2026-07-28 carries it too
    elif rec.status == "failed" and rec.error is not None:
        out["error"] = rec.error
    elif rec.status == "input_required":
        out["inputRequests"] = {k: v for k, v in rec.pending.items() if k not in rec.answers}
    return out


ACK: dict[str, Any] = {"resultType": "complete"}


def declared(meta: Mapping[str, Any] | None, session_capabilities: Any = None) -> bool:
    """Whether the client declared the extension: for this request (in its ``_meta`` client capabilities), or for
    the session (``session_capabilities``, the capabilities it initialised with)."""
    caps = meta.get(CLIENT_CAPABILITIES_META) if isinstance(meta, Mapping) else None
    extensions = caps.get("extensions") if isinstance(caps, Mapping) else None
    if isinstance(extensions, Mapping) and TASKS_EXTENSION in extensions:
        return True
    session = getattr(session_capabilities, "extensions", None)
    return isinstance(session, Mapping) and TASKS_EXTENSION in session


def missing_capability() -> MCPError:
    return MCPError(
        code=MISSING_CLIENT_CAPABILITY,
        message=f"this request needs the client to declare the {TASKS_EXTENSION} extension",
        data={"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
    )


def check_name_header(headers: Mapping[str, str] | None, task_id: str) -> None:
    """SEP-2243 over HTTP: an ``Mcp-Name`` header on ``tasks/*`` must be the task id (-32020 otherwise)."""
    if headers is None:
        return
    name = headers.get("mcp-name")
    if name is not None and name.strip() != task_id:
        raise MCPError(code=HEADER_MISMATCH, message="the Mcp-Name header does not match the request's taskId")


def unknown_task(task_id: str) -> MCPError:
    return MCPError(code=INVALID_PARAMS, message=f"no task {task_id[:80]!r} (it is unknown, or its ttlMs has passed)")


def _owns(asker: str | None, owner: str | None) -> bool:
    """Whether a task of ``owner`` (None: nobody's) is the asker's to see, answer and cancel."""
    return owner is None or (asker is not None and hmac.compare_digest(asker, owner))


# ------------------------------------------------------------------------------------------------------ the runner


async def _gone(call: Call) -> Done:
    """The job of a task whose tool this server no longer runs as a task (a store kept from another deployment)."""
    raise Failure(INTERNAL_ERROR, "this server no longer runs the task's tool as a task; nothing more was run")


class Tasks:
    """The tasks of one server: which tools run as tasks, where tasks are kept, and the rounds running now."""

    replay: Any = None  # a replay guard the tasks bring, shared as they are (a Postgres state's); None: the caller's

    def __init__(self, store: TaskStore | None = None, *, ttl_ms: int = DEFAULT_TTL_MS, poll_ms: int = DEFAULT_POLL_MS):
        self.store = store if store is not None else MemoryStore()
        self.ttl_ms, self.poll_ms = ttl_ms, poll_ms
        self.supports: dict[str, TaskSupport] = {}
        self._running: dict[str, asyncio.Task[None]] = {}
        self._cancelled: set[str] = set()

    def wrap(self, host: Callable[[], Any], guard: Any, wfs: Any, retry_safe: Any) -> tuple[Callable[[], Any], Any]:
        """The host and the replay guard the workflow jobs run with (a durable runner checkpoints them); ``wfs``:
        the workflows, ``retry_safe``: the names of the read-only or idempotent tools. Here, unchanged."""
        return host, guard

    def ready(self) -> None:
        """Every tool is supported and served: a durable runner starts (and recovers its rounds) here."""

    def support(
        self, tool: str, job: Job, *, required: bool = False, interruptible: bool = True, gather: Gather | None = None
    ) -> None:
        self.supports[tool] = TaskSupport(job, required, interruptible, gather)

    async def start(
        self,
        tool: str,
        arguments: Mapping[str, Any] | None,
        answers: Mapping[str, Any] | None = None,
        owner: str | None = None,
    ) -> dict[str, Any]:
        """Make a task for a call of ``tool`` and start its first round; the ``CreateTaskResult``. ``owner``: the
        digest of the caller's identity (None: the task is the bearer's of its id), as the other methods take it."""
        now = _now()
        rec = TaskRecord(
            task_id=secrets.token_urlsafe(18),
            tool=tool,
            arguments=dict(arguments or {}),
            status="working",
            created_at=now,
            updated_at=now,
            expires=time.time() + self.ttl_ms / 1000,
            ttl_ms=self.ttl_ms,
            poll_ms=self.poll_ms,
            owner=owner,
        )
        await self.store.put(rec)
        await self._begin(rec, dict(answers or {}))
        return created(rec)

    async def _live(self, task_id: Any, owner: str | None) -> TaskRecord:
        """The task, when it is there, not expired, and the asker's (or nobody's): otherwise what an unknown id gets."""
        rec = await self.store.get(task_id) if isinstance(task_id, str) else None
        if rec is None or rec.expires < time.time() or not _owns(owner, rec.owner):
            raise unknown_task(str(task_id))
        return rec

    async def get(self, task_id: Any, owner: str | None = None) -> dict[str, Any]:
        return detailed(await self._live(task_id, owner))

    async def update(
        self, task_id: Any, responses: Mapping[str, Any] | None, owner: str | None = None
    ) -> dict[str, Any]:
        """Keep the answers to pending requests (any other id answers nothing); once each has one, the next round.
        The answers are taken in one change of the task: of several at once, one starts the round, and the others
        find it running and answer nothing, as an answer to a round already answered does."""
        rec = await self._live(task_id, owner)
        given: dict[str, Any] = {}
        began: list[bool] = []

        def answer(rec: TaskRecord) -> bool:
            if rec.status != "input_required":
                return False
            for key, value in (responses or {}).items():
                if key in rec.pending:
                    rec.answers[key] = value
            rec.updated_at = _now()
            if any(k not in rec.answers for k in rec.pending):
                return True
            given.update({rec.keys[k]: rec.answers[k] for k in rec.pending})
            rec.status, rec.pending, rec.keys, rec.answers, rec.given = "working", {}, {}, {}, dict(given)
            began.append(True)
            return True

        changed = await self.store.change(rec.task_id, answer)
        if changed is not None and began:
            await self._begin(changed, given)
        return ACK

    async def cancel(self, task_id: Any, owner: str | None = None) -> dict[str, Any]:
        rec = await self._live(task_id, owner)

        def cancel(rec: TaskRecord) -> bool:
            if rec.status in TERMINAL:
                return False
            self._cancelled.add(rec.task_id)
            rec.status, rec.pending, rec.keys, rec.answers, rec.given = "cancelled", {}, {}, {}, {}
            rec.updated_at = _now()
            return True

        await self.store.change(rec.task_id, cancel)
        running = self._running.get(rec.task_id)
        support = self.supports.get(rec.tool)
        if rec.task_id in self._cancelled and running is not None and support is not None and support.interruptible:
            running.cancel()
        return ACK

    # ------------------------------------------------------------------------------------------------ the rounds

    async def _begin(self, rec: TaskRecord, answers: dict[str, Any]) -> None:
        """Start a round before the request that asked for it is answered: here, in the background (a durable
        runner records it first, so that a task it answered for is never left without its round)."""
        self._run(rec, answers)

    def _run(self, rec: TaskRecord, answers: dict[str, Any]) -> None:
        support = self.supports.get(rec.tool)
        job: Job = support.job if support is not None else _gone
        call = Call(dict(rec.arguments), answers, rec.state, lambda: rec.task_id in self._cancelled)
        task = asyncio.get_running_loop().create_task(self._round(rec.task_id, job, call))
        self._running[rec.task_id] = task
        task.add_done_callback(lambda _t, tid=rec.task_id: self._running.pop(tid, None))

    async def _round(self, task_id: str, job: Job, call: Call) -> None:
        try:
            outcome: Done | NeedInput | Failure = await job(call)
        except asyncio.CancelledError:
            return
        except Failure as exc:
            outcome = exc
        except MCPError as exc:
            outcome = Failure(exc.code, exc.message, exc.data)
        except Exception as exc:  # a job's crash is the task's protocol-level failure, never the server's
            outcome = Failure(INTERNAL_ERROR, f"the task failed: {type(exc).__name__}: {exc}"[:500])
        await self._settle(task_id, outcome)

    async def _settle(self, task_id: str, outcome: Done | NeedInput | Failure) -> None:
        try:
            await self.store.change(task_id, lambda rec: settled(rec, outcome))
        except TooMuch as exc:  # the result or the state is more than the store keeps: the task ends, kept small
            failure = Failure(INTERNAL_ERROR, f"the task's result is not kept: {exc.error.message}")
            await self.store.change(task_id, lambda rec: settled(rec, failure))


def settled(rec: TaskRecord, outcome: Done | NeedInput | Failure) -> bool:
    """``rec`` with its round's outcome: its result, its questions (with new ids) or its error; False (nothing to
    write) when it is no longer running (cancelled meanwhile: what the round did is not its result)."""
    if rec.status != "working":
        return False
    rec.updated_at, rec.given = _now(), {}
    if isinstance(outcome, Done):
        rec.status, rec.result, rec.state = "completed", outcome.result, None
    elif isinstance(outcome, NeedInput):
        rec.round += 1
        minted = {f"r{rec.round}-{secrets.token_urlsafe(9)}": key for key in outcome.requests}
        rec.status, rec.state, rec.keys = "input_required", outcome.state, minted
        rec.pending = {mid: outcome.requests[key] for mid, key in minted.items()}
        rec.answers = {}
    else:
        error: dict[str, Any] = {"code": outcome.code, "message": outcome.message}
        if outcome.data is not None:
            error["data"] = outcome.data
        rec.status, rec.error, rec.state, rec.result = "failed", error, None, None
    return True
