"""The upkeep of a durable state (issue 38): how much it keeps and for how long, and the tasks no round runs.

- What a ``--state`` keeps is bounded (:func:`limits`): at most ``$PROJECT_SKILL_STATE_MAX_TASKS`` live tasks, each
  of at most ``$PROJECT_SKILL_STATE_MAX_TASK_BYTES``, all of them at most ``$PROJECT_SKILL_STATE_MAX_BYTES`` (the
  store refuses a write past them before anything is written, :class:`~projector.server.tasks.Bounds`), each kept
  ``$PROJECT_SKILL_STATE_TTL`` seconds (its ``ttlMs``).
- :class:`Upkeep` is a thread of the engine's own. At start-up, before the server answers anyone, and then every
  :func:`interval`, it removes each expired task together with its rounds' DBOS workflows and in-flight markers (a
  round still running is cancelled first, and removed at the next pass), and takes up each task left ``working``
  with no round: saved, and the process died before DBOS recorded the round. The round of an answer is started as
  it would have been, with the answers (nothing of it ran, so nothing runs twice); a task whose first round was
  never recorded ends ``failed`` (the process died before it told the client the task's id, so no one waits for it
  and nothing of it runs); a task whose round ended without settling it ends ``failed``. On a folder, a task saved ``working`` is recorded by the same process within
  milliseconds, so at start-up any such task is stuck; later, one silent for a minute. On Postgres, another live
  process may be between the two, so only a task silent for a lease is taken up.

It calls DBOS's synchronous API, from a thread with no event loop, as DBOS's own recovery does.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any, Protocol

from mcp_types import INTERNAL_ERROR

from ..errors import Span, error
from .errors import AttachError
from .tasks import DEFAULT_TTL_MS, Bounds, Failure, TaskRecord, settled


class Engine(Protocol):
    """What the upkeep needs of its engine (:class:`projector.server.durable.DurableTasks`, which starts it: named
    here by what it does, so that neither module imports the other both ways)."""

    ttl_ms: int
    store: Any  # the engine's store: SqliteStore, or PgStore on Postgres
    markers: Any

    def begin_now(self, rec: TaskRecord) -> None: ...


LIMITS = {  # variable -> (what it bounds, default, unit)
    "PROJECT_SKILL_STATE_MAX_TASKS": ("tasks", Bounds.tasks, "tasks"),
    "PROJECT_SKILL_STATE_MAX_TASK_BYTES": ("task_bytes", Bounds.task_bytes, "bytes"),
    "PROJECT_SKILL_STATE_MAX_BYTES": ("total_bytes", Bounds.total_bytes, "bytes"),
    "PROJECT_SKILL_STATE_TTL": ("ttl", DEFAULT_TTL_MS // 1000, "seconds"),
}
MAX_LIMIT = 10**15
ACTIVE = frozenset({"PENDING", "ENQUEUED", "DELAYED"})  # a DBOS workflow that runs, or will
LATER_GRACE = 60.0  # on a folder, after start-up: a task silent this long with no round is stuck


def limits() -> tuple[Bounds, int]:
    """The bounds and the ``ttlMs`` of a durable state, from the environment; ``state-limit`` for a value that is
    not a whole number from 1 up."""
    found: dict[str, int] = {}
    for name, (key, default, unit) in LIMITS.items():
        raw = os.environ.get(name, "").strip()
        value = int(raw) if raw.isascii() and raw.isdigit() and len(raw) <= 15 else (default if not raw else 0)
        if not 1 <= value <= MAX_LIMIT:
            raise AttachError(
                error(
                    Span(f"${name}"),
                    "state-limit",
                    f"${name} is {raw[:40]!r}, not a whole number of {unit} from 1 up",
                    f"give a whole number of {unit} (default {default})",
                )
            )
        found[key] = value
    ttl = found.pop("ttl")
    return Bounds(**found), ttl * 1000


def interval(ttl_ms: int, lease: float | None) -> float:
    """How often the upkeep runs: a minute, or half the ``ttlMs`` or a lease when shorter, at least a second."""
    return max(1.0, min(60.0, ttl_ms / 2000, lease if lease is not None else 60.0))


class Upkeep:
    """The thread that keeps the engine's state: see the module's docstring."""

    def __init__(self, engine: Engine, lease: float | None):
        self.engine, self.lease = engine, lease
        self.every = interval(engine.ttl_ms, lease)
        self._stop = threading.Event()
        self._first = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, wait: float = 60.0) -> None:
        """Start the thread, and wait (up to ``wait`` seconds) for its first pass."""
        self._thread = threading.Thread(target=self._run, name="projector-upkeep", daemon=True)
        self._thread.start()
        self._first.wait(wait)

    def halt(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)

    def _run(self) -> None:
        grace = self.lease if self.lease is not None else 0.0
        while not self._stop.is_set():
            try:
                self.sweep(grace)
            except Exception as exc:  # noqa: BLE001 - the store is away for now: the next pass tries again
                print(f"project-skill: the state's upkeep failed, tried again later: {exc}"[:500], file=sys.stderr)
            self._first.set()
            grace = self.lease if self.lease is not None else LATER_GRACE
            self._stop.wait(self.every)

    def sweep(self, grace: float) -> None:
        """One pass: the expired tasks removed, the stuck ones (silent ``grace`` seconds) taken up."""
        now = time.time()
        for task_id in self.engine.store.expired(now):
            self._remove(task_id)
        for rec in self.engine.store.stuck(now - grace, now):
            self._take_up(rec)

    def _remove(self, task_id: str) -> None:
        """The task, its rounds' DBOS workflows and its in-flight markers; a round still running is cancelled now,
        and the rest goes at the next pass, once it has stopped."""
        from dbos import DBOS

        rounds = DBOS.list_workflows(workflow_id_prefix=[f"{task_id}."], load_input=False, load_output=False)
        running = [w.workflow_id for w in rounds if w.status in ACTIVE]
        if running:
            DBOS.cancel_workflows(running)
            return
        if rounds:
            DBOS.delete_workflows([w.workflow_id for w in rounds])
        self.engine.markers.forget(task_id)
        self.engine.store.remove(task_id)

    def _take_up(self, rec: TaskRecord) -> None:
        """A task ``working`` with no round running: the round of an answer is started now, with the answers; a
        first round never recorded ends the task (its client was never told its id: nothing of it runs); a round
        that ended without settling the task ends it."""
        from dbos import DBOS

        found = DBOS.get_workflow_status(f"{rec.task_id}.{rec.round}")
        if found is not None and found.status in ACTIVE:
            return
        if found is None and rec.round > 0:
            self.engine.begin_now(rec)
            return
        why = "its round ended without a result" if found is not None else "the server stopped before it began"
        failure = Failure(INTERNAL_ERROR, f"the task failed: {why}; nothing more was run")
        self.engine.store.modify(rec.task_id, lambda now: same_round(now, rec) and settled(now, failure))


def same_round(now: TaskRecord, then: TaskRecord) -> bool:
    """Whether the task is still in the round it was read in, running."""
    return now.status == "working" and now.round == then.round
