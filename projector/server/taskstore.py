"""Tasks kept in a SQLite file (:class:`SqliteStore`), so that a task outlives the process that made it.

A task waiting for a person (``input_required``) holds everything its next round needs: the tool's arguments, the
runner's state (the results of the steps that ran), the pending questions. Kept here, it survives a restart: the
next process that opens the same file answers ``tasks/get`` for it, and a ``tasks/update`` there continues the run
from its state, without calling a finished step again. A round that was *running* when the process died is not
resumed (its task stays ``working`` until its ``ttlMs`` passes); resuming one safely needs each step checkpointed,
which this store does not do.

The file is checked as the replay guard's is (:mod:`projector.server.replay`): an absolute path in a folder of the
user's own, made with mode 0600 when missing. It keeps at most what its :class:`~projector.server.tasks.Bounds`
say, counted in the same transaction as the write (so two processes on the file cannot both take the last place),
and each change of a task is one transaction (``BEGIN IMMEDIATE``). A durable runner removes the expired tasks
(:meth:`SqliteStore.expired`, :meth:`SqliteStore.remove`) and takes up those left ``working`` with no round
(:meth:`SqliteStore.stuck`).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..errors import Span, error
from .errors import AttachError
from .replay import _check, _make, _Unusable
from .tasks import Bounds, Change, TaskRecord, TaskStore

TASKS_DB_HINT = "give an absolute path in a folder of your own that neither its group nor others can write"


# Besides the record: what the bounds, the pruning and the take-up look up without reading every record. ``at``: the
# wall-clock second of the last write.
COLUMNS = (("status", "TEXT"), ("expires", "REAL"), ("bytes", "INTEGER"), ("at", "REAL"))


def _migrate(db: sqlite3.Connection) -> None:
    """The columns of :data:`COLUMNS`, added to a file made before them and filled from its records."""
    have = {row[1] for row in db.execute("PRAGMA table_info(tasks)")}
    for name, kind in COLUMNS:
        if name not in have:
            db.execute(f"ALTER TABLE tasks ADD COLUMN {name} {kind}")
    db.execute(
        "UPDATE tasks SET status = json_extract(record, '$.status'), expires = json_extract(record, '$.expires'), "
        "bytes = length(CAST(record AS BLOB)), at = 0 WHERE bytes IS NULL"
    )
    db.execute("CREATE INDEX IF NOT EXISTS tasks_expires ON tasks (expires)")
    db.execute("CREATE INDEX IF NOT EXISTS tasks_status ON tasks (status, at)")


class SqliteStore(TaskStore):
    """Each task as one row (its record as JSON), written before the call that changed it is answered."""

    def __init__(self, path: str | Path, bounds: Bounds | None = None):
        self.path = str(path)
        self.bounds = bounds if bounds is not None else Bounds()
        try:
            _make(self.path)
            with self._connect() as db:
                db.execute("CREATE TABLE IF NOT EXISTS tasks (task_id TEXT PRIMARY KEY, record TEXT NOT NULL)")
                _migrate(db)
        except (_Unusable, sqlite3.Error) as exc:
            raise AttachError(
                error(Span(self.path), "tasks-db", f"the tasks database cannot be used: {exc}", TASKS_DB_HINT)
            ) from None

    def _connect(self) -> sqlite3.Connection:
        _check(self.path)
        return sqlite3.connect(self.path, timeout=10.0)

    def _transaction(self, body: Callable[[sqlite3.Connection], Any]) -> Any:
        """``body`` in one write transaction, taken at once (two processes on the file take turns)."""
        db = self._connect()
        db.isolation_level = None
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                out = body(db)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            return out
        finally:
            db.close()

    def _write(self, db: sqlite3.Connection, record: TaskRecord) -> None:
        """Write ``record``, within the bounds (:class:`~projector.server.tasks.TooMuch` before anything is written)."""
        text, now = record.encode(), time.time()
        row = db.execute("SELECT bytes FROM tasks WHERE task_id = ?", (record.task_id,)).fetchone()
        old = None if row is None else int(row[0] or 0)
        if self.bounds.grows(old, len(text), record.status):
            count, total = db.execute(
                "SELECT COUNT(*), COALESCE(SUM(bytes), 0) FROM tasks WHERE expires >= ? AND task_id <> ?",
                (now, record.task_id),
            ).fetchone()
            self.bounds.check(old, len(text), count, total)
        db.execute(
            "INSERT OR REPLACE INTO tasks (task_id, record, status, expires, bytes, at) VALUES (?, ?, ?, ?, ?, ?)",
            (record.task_id, text, record.status, record.expires, len(text), now),
        )

    def _put(self, record: TaskRecord) -> None:
        self._transaction(lambda db: self._write(db, record))

    def _get(self, task_id: str) -> TaskRecord | None:
        db = self._connect()
        try:
            row = db.execute("SELECT record FROM tasks WHERE task_id = ?", (task_id,)).fetchone()
        finally:
            db.close()
        return None if row is None else TaskRecord(**json.loads(row[0]))

    def modify(self, task_id: str, change: Change) -> TaskRecord | None:
        """:meth:`change`, in this thread."""

        def body(db: sqlite3.Connection) -> TaskRecord | None:
            row = db.execute("SELECT record FROM tasks WHERE task_id = ?", (task_id,)).fetchone()
            rec = None if row is None else TaskRecord(**json.loads(row[0]))
            if rec is not None and change(rec):
                self._write(db, rec)
            return rec

        return self._transaction(body)

    async def put(self, record: TaskRecord) -> None:
        import anyio.to_thread

        await anyio.to_thread.run_sync(self._put, record)

    async def get(self, task_id: str) -> TaskRecord | None:
        import anyio.to_thread

        return await anyio.to_thread.run_sync(self._get, task_id)

    async def change(self, task_id: str, change: Change) -> TaskRecord | None:
        import anyio.to_thread

        return await anyio.to_thread.run_sync(self.modify, task_id, change)

    def expired(self, now: float, limit: int = 100) -> list[str]:
        """The ids of up to ``limit`` tasks whose ``ttlMs`` passed before ``now``, the oldest first."""
        db = self._connect()
        try:
            rows = db.execute(
                "SELECT task_id FROM tasks WHERE expires < ? ORDER BY expires, task_id LIMIT ?", (now, limit)
            ).fetchall()
        finally:
            db.close()
        return [r[0] for r in rows]

    def remove(self, task_id: str) -> None:
        self._transaction(lambda db: db.execute("DELETE FROM tasks WHERE task_id = ?", (task_id,)))

    def stuck(self, before: float, now: float) -> list[TaskRecord]:
        """The live tasks left ``working`` since before ``before`` (the wall-clock second of their last write)."""
        db = self._connect()
        try:
            rows = db.execute(
                "SELECT record FROM tasks WHERE status = 'working' AND at < ? AND expires >= ? ORDER BY at, task_id",
                (before, now),
            ).fetchall()
        finally:
            db.close()
        return [TaskRecord(**json.loads(r[0])) for r in rows]
