"""Durable task runs on DBOS (issue 32): ``serve --state DIR``, ``attach(..., state=DIR)``.

:class:`DurableTasks` is a :class:`~projector.server.tasks.Tasks` whose rounds are DBOS workflows, with DBOS's system
database in ``DIR/dbos.sqlite`` and the tasks (their status, the runner's state, the pending questions) in
``DIR/tasks.db`` (:class:`~projector.server.taskstore.SqliteStore`):

- each round of a task is one DBOS workflow (its id: the task's id and the round's number), which runs the job and
  then settles the task (its result, or its questions) as a step of its own;
- each step's tool call and resource read is a DBOS step: its output is checkpointed, so when the process dies and
  the round is recovered at the next start-up (``DBOS.launch``), a step that finished is never called again (the
  run goes on from the recorded outputs), and a confirmation's yes is claimed once (the claim is a step too);
- a tool call that was *in flight* when the process died (it started, and no output was recorded) is called again
  only when its tool is read-only or idempotent by its annotations. Otherwise the task stops in ``input_required``
  and asks the person "retry step N (tool X)?": a yes forks the round's DBOS workflow at that step (the earlier
  steps' outputs are reused, the tool is called once more); a no ends the task without calling it.

With a Postgres URL instead of a folder (``--state postgresql://...``), DBOS's system database, the tasks, the
markers and the claims are in that database, shared by several processes (:mod:`projector.server.durable_pg`).
What the state keeps is bounded, an expired task goes with its rounds, and a task saved ``working`` whose round was
never recorded is taken up (:mod:`projector.server.durable_upkeep`).

DBOS is the optional extra ``project-skill[durable]``: :func:`available` says whether it is installed.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import stat
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import disk
from ..errors import Span, error
from ..model import Workflow
from . import durable_pg
from .durable_upkeep import Upkeep, limits, same_round
from .errors import AttachError
from .replay import ReplayGuard
from .tasks import Call, Done, Failure, NeedInput, TaskRecord, Tasks, settled
from .taskstore import SqliteStore

EXTRA = "project-skill[durable]"
NO_TASKS = (
    f"workflow tools run without tasks: --state needs DBOS, the {EXTRA} extra (pip install "
    f"'{EXTRA}'), and it is not installed"
)
STATE_HINT = "give a folder of your own (made if missing) that neither its group nor others can write"
_ENGINE: DurableTasks | None = None  # DBOS is one per process: the engine its recovered rounds run on


def available() -> bool:
    """Whether DBOS (the durable extra) is installed."""
    import importlib.util

    return importlib.util.find_spec("dbos") is not None


def _state_dir(path: str | Path) -> Path:
    folder = Path(path).expanduser().absolute()
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = folder.lstat()  # a link is refused, not followed: the tool did not make it
    except OSError as exc:
        raise AttachError(
            error(Span(str(folder)), "state-dir", f"the state folder cannot be used: {exc}", STATE_HINT)
        ) from None
    if not stat.S_ISDIR(info.st_mode) or disk.not_own(info) is not None:  # the one rule, as for the replay database
        raise AttachError(
            error(
                Span(str(folder)),
                "state-dir",
                "the state folder is not a folder of your own that only you can write",
                STATE_HINT,
            )
        )
    return folder


# ------------------------------------------------------------------------------------------------ the in-flight rule


class InFlight(BaseException):  # noqa: N818 - a BaseException, so that no step's ``except Exception`` catches it
    """A tool call that was in flight when the process died, and whose tool may not be called again unasked."""

    def __init__(self, tool: str, arguments: Any, step_id: int, after: int | None):
        super().__init__(tool, arguments, step_id, after)
        self.tool, self.arguments, self.step_id = tool, arguments, step_id
        self.after = after  # the workflow's last step that ran or was skipped in this round (None: none yet)


class _Markers:
    """Which tool calls started: one row per (DBOS workflow, step id), written before the tool is called."""

    def __init__(self, path: Path):
        self.path = str(path)
        with self._db() as db:
            db.execute("CREATE TABLE IF NOT EXISTS started (workflow TEXT, step INTEGER, PRIMARY KEY (workflow, step))")

    def _db(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=10.0)

    def start(self, workflow: str, step: int) -> bool:
        """Mark the call started; False when it had been started before (by a process that then died)."""
        db = self._db()
        try:
            with db:
                cur = db.execute("INSERT OR IGNORE INTO started (workflow, step) VALUES (?, ?)", (workflow, step))
            return cur.rowcount == 1
        finally:
            db.close()

    def forget(self, task_id: str) -> None:
        """Drop the markers of every round of the task (their workflows are ``TASK_ID.ROUND``)."""
        db = self._db()
        try:
            with db:
                db.execute("DELETE FROM started WHERE workflow > ? AND workflow < ?", (f"{task_id}.", f"{task_id}/"))
        finally:
            db.close()


@dataclass(frozen=True)
class _Content:
    """A read resource's item, as the runner reads it."""

    mime_type: str | None
    content: str | bytes


class DurableHost:
    """The server's host inside a DBOS round: each tool call and each read is a checkpointed step. It follows the
    steps the runner reports done (each step that ran or was skipped reports itself), so that a call found in
    flight is known by its step: the one after the last reported (a replay reports them again, in the same order)."""

    def __init__(self, host: Any, engine: DurableTasks):
        self.host, self.engine = host, engine
        self.after: int | None = None

    async def tools(self) -> Any:
        return await self.host.tools()

    async def report_progress(self, progress: float, total: float, message: str) -> None:
        self.after = int(progress)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        from dbos import DBOS
        from mcp_types import CallToolResult

        if DBOS.workflow_id is None:  # pragma: no cover - every durable round is a DBOS workflow
            raise RuntimeError("a durable task's step ran outside its DBOS workflow; nothing was called")
        kind, value = await DBOS.run_step_async({"name": f"tool:{name}"}, self._call, name, arguments)
        if kind == "result":
            return CallToolResult.model_validate(value)
        if kind == "in-flight":
            raise InFlight(name, arguments, int(value), self.after)
        if kind == "other":
            return value
        raise RuntimeError(value)

    async def _call(self, name: str, arguments: dict[str, Any]) -> tuple[str, Any]:
        from dbos import DBOS
        from mcp_types import CallToolResult

        workflow, step = str(DBOS.workflow_id), int(DBOS.step_id or 0)
        started = await asyncio.to_thread(self.engine.markers.start, workflow, step)
        if not started and name not in self.engine.retry_safe:
            return "in-flight", step
        try:
            result = await self.host.call_tool(name, arguments)
        except Exception as exc:
            return "error", str(exc) or type(exc).__name__
        if isinstance(result, CallToolResult):
            return "result", result.model_dump(mode="json", by_alias=True, exclude_none=True)
        return "other", None

    async def read_resource(self, uri: str) -> Sequence[Any]:
        from dbos import DBOS

        items = await DBOS.run_step_async({"name": "read"}, self._read, uri)
        if isinstance(items, str):
            raise RuntimeError(items)
        return [_Content(m, c) for m, c in items]

    async def _read(self, uri: str) -> list[tuple[str | None, str | bytes]] | str:
        try:
            return [(c.mime_type, c.content) for c in await self.host.read_resource(uri)]
        except Exception as exc:
            return str(exc) or type(exc).__name__


class DurableGuard(ReplayGuard):
    """A replay guard whose claim is a checkpointed step: a recovered round does not claim its yes twice."""

    def __init__(self, guard: ReplayGuard):
        self.guard, self.shared = guard, guard.shared

    async def claim(self, token: str) -> bool:
        from dbos import DBOS

        if DBOS.workflow_id is None:
            return await self.guard.claim(token)
        return bool(await DBOS.run_step_async({"name": "claim"}, self.guard.claim, token))


# ---------------------------------------------------------------------------------------------------- the engine


def _retry_question(wf: Workflow | None, flight: InFlight, state: Any) -> tuple[int, dict[str, Any]]:
    """The step the in-flight call was (the one after the last step that ran or was skipped in the round, else the
    round's first), and the question asked about it."""
    from . import confirm
    from .workflow_task import elicitation

    try:
        first = int(json.loads(state)["step"]) if isinstance(state, str) else 1
    except (ValueError, KeyError, TypeError):
        first = 1
    tool, arguments = flight.tool, flight.arguments
    steps = wf.steps if wf is not None else []
    n = flight.after + 1 if flight.after is not None else first
    if not (0 < n <= len(steps) and steps[n - 1].tool == tool):  # pragma: no cover - the runner reports each step
        n = next((i for i, s in enumerate(steps, 1) if i >= first and s.tool == tool), first)
    step = steps[n - 1] if 0 < n <= len(steps) else None
    where = f"Step {n} of {len(steps)} of `{wf.name}` (`{step.name}`)" if wf is not None and step else f"Step {n}"
    message = (
        f"{where} was calling the tool `{tool}` when the server stopped, so whether that call took effect is "
        f"not known; `{tool}` is neither read-only nor idempotent, so it is not called again unless you say "
        f"so. It was called with:\n{json.dumps(arguments, sort_keys=True, ensure_ascii=False)}\n\n"
        f"Retry step {n} (tool {tool})?"
    )
    schema = confirm.confirm_schema(step) if step is not None else {"type": "object"}
    return n, elicitation(message, schema)


class DurableTasks(Tasks):
    """:class:`Tasks` whose rounds are DBOS workflows, kept in ``state_dir``; see the module's docstring."""

    def __init__(self, state: str | Path, **kwargs: Any):
        if _ENGINE is not None and _ENGINE._launched:
            raise AttachError(
                error(
                    Span(durable_pg.redact(str(state))),
                    "state-in-use",
                    f"this process already runs durable tasks (on {_ENGINE.where}); DBOS runs one engine per process",
                    "serve each state folder or database from its own process",
                )
            )
        self.lease: durable_pg.Lease | None = None
        self.pg: durable_pg.Pg | None = None
        bounds, ttl_ms = limits()
        kwargs.setdefault("ttl_ms", ttl_ms)
        self.store: Any
        if durable_pg.is_url(state):
            self.pg = durable_pg.Pg(str(state))
            self.lease = durable_pg.Lease(self.pg, durable_pg.lease_seconds())
            self.pg.make_tables()
            super().__init__(durable_pg.PgStore(self.pg, bounds), **kwargs)
            self.where, self.system_url = self.pg.shown, str(state)
            self.markers: Any = durable_pg.PgMarkers(self.pg)
            self.replay = durable_pg.PgGuard(self.pg)
        elif durable_pg.looks_like_url(state):
            raise AttachError(
                error(
                    Span(durable_pg.redact(str(state))),
                    "state-url",
                    f"the state is not a URL of a kind that is kept: it must be {durable_pg.URL_FORMS}",
                    "give a Postgres URL (postgresql://...) to share the tasks between processes, or a folder",
                )
            )
        else:
            folder = _state_dir(state)
            super().__init__(SqliteStore(folder / "tasks.db", bounds), **kwargs)
            self.where, self.system_url = str(folder), f"sqlite:///{folder / 'dbos.sqlite'}"
            self.markers = _Markers(folder / "tasks.db")
        self.retry_safe: set[str] = set()
        self.workflows: dict[str, Workflow] = {}
        self._launched = False
        self.upkeep = Upkeep(self, self.lease.seconds if self.lease is not None else None)

    def wrap(
        self, host: Callable[[], Any], guard: ReplayGuard, wfs: Sequence[Workflow], retry_safe: Collection[str]
    ) -> tuple[Callable[[], Any], ReplayGuard]:
        self.retry_safe |= set(retry_safe)
        self.workflows.update({wf.name: wf for wf in wfs})
        shared = self.replay if self.replay is not None else guard  # on Postgres, every process's claims
        return (lambda: DurableHost(host(), self)), DurableGuard(shared)

    def ready(self) -> None:
        """Start DBOS, once every tool is supported: the rounds the last process left running are recovered now."""
        global _ENGINE
        if self._launched:
            return
        from dbos import DBOS

        from .. import __version__

        _ENGINE = self
        try:
            if self.lease is not None:
                self.lease.beat()  # before any round runs here: this process is alive
            DBOS(
                config={
                    "name": "projector",
                    "system_database_url": self.system_url,
                    "application_version": f"projector-{__version__}",
                    "executor_id": self.lease.executor_id if self.lease is not None else None,
                    "log_level": "WARNING",
                }
            )
            DBOS.launch()
            if self.lease is not None:
                self.lease.start()
            self.upkeep.start()  # the expired tasks go, the stuck ones are taken up, before anyone is answered
        except Exception as exc:
            _ENGINE = None
            message = f"DBOS cannot start on the state {'database' if self.pg else 'folder'}: {exc}"
            raise AttachError(
                error(
                    Span(self.where if self.pg else str(Path(self.where) / "dbos.sqlite")),
                    "state-db",
                    (self.pg.clean(message) if self.pg else message)[:500],
                    durable_pg.PG_HINT if self.pg else STATE_HINT,
                )
            ) from None
        self._launched = True

    def close(self) -> None:
        """Stop DBOS (its rounds still running are taken up at the next start on the folder, or by a live process on
        the same Postgres database)."""
        global _ENGINE
        from dbos import DBOS

        self.upkeep.halt()
        if self.lease is not None:
            self.lease.halt()
        if self._launched:
            DBOS.destroy(workflow_completion_timeout_sec=0)
            self._launched = False
        if self.lease is not None:
            self.lease.forget()  # after DBOS: its rounds left pending are another live process's to take up
        if _ENGINE is self:
            _ENGINE = None

    async def _begin(self, rec: Any, answers: dict[str, Any]) -> None:
        """The round's DBOS workflow, recorded (with its inputs) before the request that asked for it is answered."""
        from dbos import DBOS, SetWorkflowID

        kind, retry = _plan(rec, answers)
        workflow = f"{rec.task_id}.{rec.round}"  # the round's DBOS workflow, which a cancel names
        with SetWorkflowID(workflow):
            if kind == "start":
                await DBOS.start_workflow_async(_round, rec.task_id, rec.tool, dict(rec.arguments), answers, rec.state)
            elif kind == "fork":  # yes: the round again from the in-flight step
                try:
                    await DBOS.fork_workflow_async(retry["workflow"], int(retry["step"]))
                except Exception:
                    if await DBOS.get_workflow_status_async(workflow) is None:
                        raise  # else: forked already (taken up meanwhile), and it runs once
            else:
                await self._settle(rec.task_id, Done(_not_retried(retry)))

    def begin_now(self, rec: TaskRecord) -> None:
        """:meth:`_begin` for a round taken up (:mod:`.durable_upkeep`), with the answers it was asked with, from a
        thread with no event loop: DBOS runs the round on its own."""
        from dbos import DBOS, SetWorkflowID

        kind, retry = _plan(rec, rec.given)
        workflow = f"{rec.task_id}.{rec.round}"
        with SetWorkflowID(workflow):
            if kind == "start":
                DBOS.start_workflow(_round, rec.task_id, rec.tool, dict(rec.arguments), rec.given, rec.state)
            elif kind == "fork":
                try:
                    DBOS.fork_workflow(retry["workflow"], int(retry["step"]))
                except Exception:
                    if DBOS.get_workflow_status(workflow) is None:
                        raise
            else:
                done = Done(_not_retried(retry))
                self.store.modify(rec.task_id, lambda now: same_round(now, rec) and settled(now, done))

    async def cancel(self, task_id: Any, owner: str | None = None) -> dict[str, Any]:
        out = await super().cancel(task_id, owner)  # another's task is unknown here: nothing below runs for it
        rec = await self.store.get(task_id) if isinstance(task_id, str) else None
        if rec is not None and self._launched:
            from dbos import DBOS

            try:
                await DBOS.cancel_workflow_async(f"{rec.task_id}.{rec.round}")
            except Exception:  # noqa: BLE001 - a round that never started, or ended: nothing to stop
                pass
        return out


def shutdown() -> None:
    """Stop this process's durable engine, if it runs one (tests; a server just exits)."""
    if _ENGINE is not None:
        _ENGINE.close()


def _plan(rec: TaskRecord, answers: dict[str, Any]) -> tuple[str, Any]:
    """How a round begins: ``start`` (its workflow, from the task's state), ``fork`` (a yes to "Retry step N?": the
    in-flight round again from that step) or ``no`` (the retry refused: the task ends); and the retry, if any."""
    retry = rec.state.get("retry") if isinstance(rec.state, dict) else None
    if not isinstance(retry, dict):
        return "start", None
    yes = any(
        isinstance(a, dict) and a.get("action") == "accept" and (a.get("content") or {}).get("confirm") is True
        for a in answers.values()
    )
    return ("fork" if yes else "no"), retry


def _not_retried(retry: dict[str, Any]) -> dict[str, Any]:
    from .workflow_task import result

    return result(
        [
            f"Stopped at step {retry.get('n')}: the tool `{retry.get('tool')}` was in flight when the server "
            "stopped, and the person chose not to call it again. Whether that call took effect is not known; "
            "tell the user, and check before doing it by hand."
        ],
        is_error=True,
    )


async def _round_body(task_id: str, tool: str, arguments: dict[str, Any], answers: dict[str, Any], state: Any) -> None:
    from dbos import DBOS

    engine = _ENGINE
    assert engine is not None
    rec = await engine.store.get(task_id)
    stopped = rec is None or rec.status != "working"
    support = engine.supports.get(tool)
    if stopped or support is None:
        return
    call = Call(arguments, answers, state, lambda: stopped or task_id in engine._cancelled)
    outcome: Done | NeedInput | Failure
    try:
        outcome = await support.job(call)
    except InFlight as flight:
        n, question = _retry_question(engine.workflows.get(tool), flight, state)
        outcome = NeedInput(
            {f"retry-{n}": question},
            {"retry": {"workflow": DBOS.workflow_id, "step": flight.step_id, "n": n, "tool": flight.tool}},
        )
    except asyncio.CancelledError:
        return
    except Failure as exc:
        outcome = exc
    except Exception as exc:  # a job's crash is the task's failure, never the server's
        outcome = Failure(-32603, f"the task failed: {type(exc).__name__}: {exc}"[:500])

    async def settle() -> None:
        await engine._settle(task_id, outcome)

    await DBOS.run_step_async({"name": "settle"}, settle)


def _register() -> Any:
    from dbos import DBOS

    return DBOS.workflow(name="projector.task_round")(_round_body)


_round = _register() if available() else None
