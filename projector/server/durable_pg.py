"""Durable tasks on one Postgres database, shared by several server processes (issue 32): ``--state postgresql://``.

With a folder, one process owns the durable state (:mod:`projector.server.durable`). With a Postgres URL, DBOS's
system database is that database, and so is everything the tasks need besides, in a schema of their own
(``projector``): the tasks (:class:`PgStore`), the in-flight markers (:class:`PgMarkers`), the claims of the
confirmations' yes (:class:`PgGuard`) and the processes' heartbeats (:class:`Lease`). So every process on the URL
reads, answers and cancels every task, and a yes claimed on one process is refused on every other.

Who runs a round that a dead process left behind: each process is its own DBOS executor (a random id) and writes a
heartbeat every third of the lease (``$PROJECT_SKILL_STATE_LEASE`` seconds, 30 by default). A live process that
finds another's heartbeat older than the lease claims it, with one ``UPDATE ... WHERE beat < now() - lease`` (only
one process's update matches: the claim renews the heartbeat, so the others wait one more lease), recovers that
executor's pending DBOS workflows (DBOS re-enqueues them; any live process runs each once), then forgets it. A
process that stops writing its heartbeat while it still runs (a long pause) can be taken over while alive; the
in-flight markers still hold then: a tool call that was started and is neither read-only nor idempotent is not
called again unasked.

Every statement has a bound (``statement_timeout``, ``connect_timeout``), and the URL's password never appears in an
error: :func:`redact`. The tasks are kept within their :class:`~projector.server.tasks.Bounds`, counted under one
advisory lock in the write's own transaction (two processes cannot both take the last place), and each change of a
task is one transaction that holds its row (``SELECT ... FOR UPDATE``).
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
import uuid
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR

from ..errors import Span, error
from .errors import AttachError
from .replay import CLAIM_SECONDS, ReplayGuard
from .tasks import Bounds, Change, TaskRecord, TaskStore

SCHEMES = ("postgresql://", "postgres://")
URL_FORMS = "a folder, or a Postgres URL (postgresql://USER:PASSWORD@HOST:PORT/DATABASE, or postgres://...)"
LEASE_ENV = "PROJECT_SKILL_STATE_LEASE"
DEFAULT_LEASE = 30.0
MIN_LEASE = 1.0
SCHEMA = "projector"
TIMEOUT_SECONDS = 10  # connecting, and each statement
PG_HINT = "give the URL of a Postgres database that exists and that this user can create tables in"
_DDL_LOCK = 0x70726F6A  # one advisory lock: two processes starting at once do not race to make the tables
_BOUNDS_LOCK = 0x70726F6B  # one advisory lock: the tasks are counted and one is added by one process at a time
_DDL = (
    f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}",
    f"CREATE TABLE IF NOT EXISTS {SCHEMA}.tasks (task_id TEXT PRIMARY KEY, record TEXT NOT NULL)",
    # besides the record, what the bounds, the pruning and the take-up look up (``at``: the second of the last write)
    f"ALTER TABLE {SCHEMA}.tasks ADD COLUMN IF NOT EXISTS status TEXT, ADD COLUMN IF NOT EXISTS expires "
    "DOUBLE PRECISION, ADD COLUMN IF NOT EXISTS bytes BIGINT, ADD COLUMN IF NOT EXISTS at DOUBLE PRECISION",
    f"UPDATE {SCHEMA}.tasks SET status = record::json->>'status', expires = (record::json->>'expires')::float8, "
    "bytes = octet_length(record), at = 0 WHERE bytes IS NULL",
    f"CREATE INDEX IF NOT EXISTS tasks_expires ON {SCHEMA}.tasks (expires)",
    f"CREATE INDEX IF NOT EXISTS tasks_status ON {SCHEMA}.tasks (status, at)",
    f"CREATE TABLE IF NOT EXISTS {SCHEMA}.started (workflow TEXT, step INTEGER, PRIMARY KEY (workflow, step))",
    f"CREATE TABLE IF NOT EXISTS {SCHEMA}.claims (token TEXT PRIMARY KEY, at TIMESTAMPTZ NOT NULL)",
    f"CREATE INDEX IF NOT EXISTS claims_at ON {SCHEMA}.claims (at)",
    f"CREATE TABLE IF NOT EXISTS {SCHEMA}.executors (executor_id TEXT PRIMARY KEY, beat TIMESTAMPTZ NOT NULL)",
)


def is_url(state: Any) -> bool:
    """Whether ``state`` names a Postgres database rather than a folder."""
    return isinstance(state, str) and state.startswith(SCHEMES)


def looks_like_url(state: Any) -> bool:
    """Whether ``state`` is a URL of some kind (``scheme://``): a folder is never meant by one."""
    return isinstance(state, str) and re.match(r"[A-Za-z][A-Za-z0-9+.-]{0,30}://", state) is not None


def redact(url: str) -> str:
    """The URL as it may be shown: its password (in the user part, or a ``password=`` parameter) as ``***``."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if parts.password is not None:
            user, _, host = netloc.rpartition("@")
            netloc = f"{user.partition(':')[0]}:***@{host}"
        query = urlencode([(k, "***" if k == "password" else v) for k, v in parse_qsl(parts.query)], safe="*")
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:
        return url.split("://", 1)[0] + "://***"


def _secrets(url: str) -> list[str]:
    try:
        parts = urlsplit(url)
        found = [parts.password or ""] + [v for k, v in parse_qsl(parts.query) if k == "password"]
    except ValueError:
        found = [url]
    return [s for s in found if s]


def _unclear(url: str) -> bool:
    """Whether libpq would read another password from ``url`` than :func:`redact` hides: a character of the user part
    left unencoded (``@ / ? #``) moves where each sees the password end, and the rest would be shown."""
    from psycopg.conninfo import conninfo_to_dict

    try:
        libpq = conninfo_to_dict(url).get("password")
        parts = urlsplit(url)
        ours = [unquote(parts.password or "")] + [v for k, v in parse_qsl(parts.query) if k == "password"]
    except Exception:  # noqa: BLE001 - a URL libpq cannot read: connecting says what is wrong, the URL hidden
        return False
    return (libpq is not None and libpq not in ours) or ("@" not in parts.netloc and "@" in parts.path)


def _check(url: str) -> None:
    if _unclear(url):
        raise AttachError(
            error(
                Span(url.split("://", 1)[0] + "://***"),
                "state-url",
                "where the URL's password ends is not clear: its user part has a character that must be "
                "percent-encoded; nothing was connected",
                "write @ as %40, / as %2F, ? as %3F and # as %23 in the user and the password",
            )
        )


class Pg:
    """Connections to the database, one per operation, each bounded; every message about it has no password."""

    def __init__(self, url: str):
        _check(url)
        self.url, self.shown = url, redact(url)
        self._hidden = _secrets(url)

    def clean(self, message: str) -> str:
        for secret in self._hidden:
            message = message.replace(secret, "***")
        return message

    def connect(self) -> Any:
        import psycopg

        return psycopg.connect(
            self.url,
            autocommit=True,
            connect_timeout=TIMEOUT_SECONDS,
            options=f"-c statement_timeout={TIMEOUT_SECONDS * 1000}",
        )

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> tuple[int, list[tuple[Any, ...]]]:
        """Run one statement; its row count and its rows (none for a statement that returns none)."""
        with self.connect() as db:
            cur = db.execute(sql, params)  # type: ignore[arg-type] - statements are this module's own constants
            return cur.rowcount, (cur.fetchall() if cur.description is not None else [])

    def make_tables(self) -> None:
        """The schema and its tables, made once (under an advisory lock) when missing; AttachError otherwise."""
        import psycopg

        try:
            with self.connect() as db, db.transaction():
                db.execute("SELECT pg_advisory_xact_lock(%s)", (_DDL_LOCK,))
                for statement in _DDL:
                    db.execute(statement)  # type: ignore[arg-type]
        except psycopg.Error as exc:
            raise AttachError(
                error(
                    Span(self.shown),
                    "state-db",
                    self.clean(f"the Postgres database cannot be used: {exc}")[:500],
                    PG_HINT,
                )
            ) from None

    def unavailable(self, what: str, exc: Exception) -> MCPError:
        return MCPError(code=INTERNAL_ERROR, message=self.clean(f"{what} ({self.shown}): {exc}; nothing was run")[:500])


class PgStore(TaskStore):
    """The tasks, one row each (the record as JSON), written before the call that changed it is answered."""

    def __init__(self, pg: Pg, bounds: Bounds | None = None):
        self.pg = pg
        self.bounds = bounds if bounds is not None else Bounds()

    def _write(self, db: Any, record: TaskRecord, old: int | None) -> None:
        """Write ``record`` over a row of ``old`` bytes (None: none), within the bounds."""
        text, now = record.encode(), time.time()
        if self.bounds.grows(old, len(text), record.status):
            db.execute("SELECT pg_advisory_xact_lock(%s)", (_BOUNDS_LOCK,))
            count, total = db.execute(
                f"SELECT COUNT(*), COALESCE(SUM(bytes), 0) FROM {SCHEMA}.tasks WHERE expires >= %s AND task_id <> %s",
                (now, record.task_id),
            ).fetchone()
            self.bounds.check(old, len(text), int(count), int(total))
        db.execute(
            f"INSERT INTO {SCHEMA}.tasks (task_id, record, status, expires, bytes, at) VALUES (%s, %s, %s, %s, %s, %s) "
            "ON CONFLICT (task_id) DO UPDATE SET record = EXCLUDED.record, status = EXCLUDED.status, "
            "expires = EXCLUDED.expires, bytes = EXCLUDED.bytes, at = EXCLUDED.at",
            (record.task_id, text, record.status, record.expires, len(text), now),
        )

    def _put(self, record: TaskRecord) -> None:
        with self.pg.connect() as db, db.transaction():
            row = db.execute(f"SELECT bytes FROM {SCHEMA}.tasks WHERE task_id = %s", (record.task_id,)).fetchone()
            self._write(db, record, None if row is None else int(row[0] or 0))

    def _get(self, task_id: str) -> TaskRecord | None:
        _, rows = self.pg.execute(f"SELECT record FROM {SCHEMA}.tasks WHERE task_id = %s", (task_id,))
        return TaskRecord(**json.loads(rows[0][0])) if rows else None

    def modify(self, task_id: str, change: Change) -> TaskRecord | None:
        """:meth:`change`, in this thread: one transaction that holds the task's row."""
        with self.pg.connect() as db, db.transaction():
            row = db.execute(
                f"SELECT record, bytes FROM {SCHEMA}.tasks WHERE task_id = %s FOR UPDATE", (task_id,)
            ).fetchone()
            rec = None if row is None else TaskRecord(**json.loads(row[0]))
            if rec is not None and change(rec):
                self._write(db, rec, int(row[1] or 0))
            return rec

    async def _in_thread(self, what: str, fn: Any, *args: Any) -> Any:
        import anyio.to_thread
        import psycopg

        try:
            return await anyio.to_thread.run_sync(fn, *args)
        except psycopg.Error as exc:
            raise self.pg.unavailable(what, exc) from None

    async def put(self, record: TaskRecord) -> None:
        await self._in_thread("the task cannot be kept in the Postgres database", self._put, record)

    async def get(self, task_id: str) -> TaskRecord | None:
        return await self._in_thread("the task cannot be read from the Postgres database", self._get, task_id)

    async def change(self, task_id: str, change: Change) -> TaskRecord | None:
        return await self._in_thread("the task cannot be kept in the Postgres database", self.modify, task_id, change)

    def expired(self, now: float, limit: int = 100) -> list[str]:
        """The ids of up to ``limit`` tasks whose ``ttlMs`` passed before ``now``, the oldest first."""
        _, rows = self.pg.execute(
            f"SELECT task_id FROM {SCHEMA}.tasks WHERE expires < %s ORDER BY expires, task_id LIMIT %s", (now, limit)
        )
        return [r[0] for r in rows]

    def remove(self, task_id: str) -> None:
        self.pg.execute(f"DELETE FROM {SCHEMA}.tasks WHERE task_id = %s", (task_id,))

    def stuck(self, before: float, now: float) -> list[TaskRecord]:
        """The live tasks left ``working`` since before ``before`` (the wall-clock second of their last write)."""
        _, rows = self.pg.execute(
            f"SELECT record FROM {SCHEMA}.tasks WHERE status = 'working' AND at < %s AND expires >= %s "
            "ORDER BY at, task_id",
            (before, now),
        )
        return [TaskRecord(**json.loads(r[0])) for r in rows]


class PgMarkers:
    """Which tool calls started, seen by every process: one row per (DBOS workflow, step), before the call."""

    def __init__(self, pg: Pg):
        self.pg = pg

    def start(self, workflow: str, step: int) -> bool:
        """Mark the call started; False when it had been started before (by a process that then died)."""
        count, _ = self.pg.execute(
            f"INSERT INTO {SCHEMA}.started (workflow, step) VALUES (%s, %s) ON CONFLICT DO NOTHING", (workflow, step)
        )
        return count == 1

    def forget(self, task_id: str) -> None:
        """Drop the markers of every round of the task (their workflows are ``TASK_ID.ROUND``)."""
        self.pg.execute(
            f"DELETE FROM {SCHEMA}.started WHERE workflow > %s AND workflow < %s", (f"{task_id}.", f"{task_id}/")
        )


class PgGuard(ReplayGuard):
    """The claims of the confirmations' yes in the database: an insert of the token as a primary key, which only one
    process can make; the claims older than ``seconds`` are deleted through an index on their time."""

    shared = True

    def __init__(self, pg: Pg, seconds: float = CLAIM_SECONDS):
        self.pg, self.seconds = pg, seconds

    def _claim(self, token: str) -> bool:
        with self.pg.connect() as db:
            db.execute(f"DELETE FROM {SCHEMA}.claims WHERE at < now() - make_interval(secs => %s)", (self.seconds,))
            cur = db.execute(
                f"INSERT INTO {SCHEMA}.claims (token, at) VALUES (%s, now()) ON CONFLICT DO NOTHING", (token,)
            )
            return cur.rowcount == 1

    async def claim(self, token: str) -> bool:
        import anyio.to_thread
        import psycopg

        try:
            return await anyio.to_thread.run_sync(self._claim, token)
        except psycopg.Error as exc:
            raise self.pg.unavailable("the confirmation cannot be checked for a replay in the database", exc) from None


def lease_seconds() -> float:
    """``$PROJECT_SKILL_STATE_LEASE``: how long a silent process keeps its rounds (a positive number of seconds)."""
    raw = os.environ.get(LEASE_ENV, "").strip()
    try:
        value = float(raw) if raw else DEFAULT_LEASE
    except ValueError:
        value = -1.0
    if not MIN_LEASE <= value <= 86_400:  # under a second, the heartbeats and take-overs would run in a tight loop
        raise AttachError(
            error(
                Span(f"${LEASE_ENV}"),
                "state-lease",
                f"${LEASE_ENV} is {raw[:40]!r}, not a number of seconds from {MIN_LEASE:g} to 86400",
                f"give a number of seconds from {MIN_LEASE:g} to 86400 (default 30)",
            )
        )
    return value


class Lease:
    """This process's heartbeat, and the take-over of the rounds of a process whose heartbeat stopped."""

    def __init__(self, pg: Pg, seconds: float):
        self.pg, self.seconds = pg, seconds
        self.executor_id = f"projector-{uuid.uuid4().hex}"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def beat(self) -> None:
        self.pg.execute(
            f"INSERT INTO {SCHEMA}.executors (executor_id, beat) VALUES (%s, now()) "
            "ON CONFLICT (executor_id) DO UPDATE SET beat = now()",
            (self.executor_id,),
        )

    def take_over(self) -> list[str]:
        """The executors whose heartbeat is older than the lease, their pending rounds recovered here, then
        forgotten. The claim renews their heartbeat, so no other live process takes the same ones meanwhile; one
        that died before forgetting them is taken over again a lease later (DBOS's recovery does nothing twice)."""
        from dbos import DBOS

        _, rows = self.pg.execute(
            f"UPDATE {SCHEMA}.executors SET beat = now() WHERE executor_id <> %s "
            "AND beat < now() - make_interval(secs => %s) RETURNING executor_id",
            (self.executor_id, self.seconds),
        )
        dead = sorted(r[0] for r in rows)
        for executor in dead:
            DBOS._recover_pending_workflows([executor])
            self.pg.execute(f"DELETE FROM {SCHEMA}.executors WHERE executor_id = %s", (executor,))
        return dead

    def start(self) -> None:
        """Beat every third of the lease, in a thread of its own; a failed beat is tried again next."""
        self._thread = threading.Thread(target=self._run, name="projector-lease", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.seconds / 3):
            try:
                self.beat()
                self.take_over()
            except Exception:  # noqa: BLE001, S112 - the database is away for now: the next beat tries again
                continue

    def halt(self) -> None:
        """Stop beating and taking over (before DBOS stops: a take-over needs it)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(TIMEOUT_SECONDS * 2)

    def forget(self) -> None:
        """Mark this process gone: its rounds, if any are left, are taken over by a live process at its next beat."""
        try:
            self.pg.execute(f"UPDATE {SCHEMA}.executors SET beat = 'epoch' WHERE executor_id = %s", (self.executor_id,))
        except Exception:  # noqa: BLE001, S110 - the database is away: the lease runs out by itself
            pass
