"""Tasks kept in a SQLite file (:class:`SqliteStore`), so that a task outlives the process that made it.

A task waiting for a person (``input_required``) holds everything its next round needs: the tool's arguments, the
runner's state (the results of the steps that ran), the pending questions. Kept here, it survives a restart: the
next process that opens the same file answers ``tasks/get`` for it, and a ``tasks/update`` there continues the run
from its state, without calling a finished step again. A round that was *running* when the process died is not
resumed (its task stays ``working`` until its ``ttlMs`` passes); resuming one safely needs each step checkpointed,
which this store does not do.

The file is checked as the replay guard's is (:mod:`projector.server.replay`): an absolute path in a folder of the
user's own, made with mode 0600 when missing.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from ..errors import Span, error
from .errors import AttachError
from .replay import _check, _make, _Unusable
from .tasks import TaskRecord, TaskStore

TASKS_DB_HINT = "give an absolute path in a folder of your own that neither its group nor others can write"


class SqliteStore(TaskStore):
    """Each task as one row (its record as JSON), written before the call that changed it is answered."""

    def __init__(self, path: str | Path):
        self.path = str(path)
        try:
            _make(self.path)
            with self._connect() as db:
                db.execute("CREATE TABLE IF NOT EXISTS tasks (task_id TEXT PRIMARY KEY, record TEXT NOT NULL)")
        except (_Unusable, sqlite3.Error) as exc:
            raise AttachError(
                error(Span(self.path), "tasks-db", f"the tasks database cannot be used: {exc}", TASKS_DB_HINT)
            ) from None

    def _connect(self) -> sqlite3.Connection:
        _check(self.path)
        return sqlite3.connect(self.path, timeout=10.0)

    def _put(self, record: TaskRecord) -> None:
        db = self._connect()
        try:
            with db:
                db.execute(
                    "INSERT OR REPLACE INTO tasks (task_id, record) VALUES (?, ?)",
                    (record.task_id, json.dumps(record.to_json(), sort_keys=True)),
                )
        finally:
            db.close()

    def _get(self, task_id: str) -> TaskRecord | None:
        db = self._connect()
        try:
            row = db.execute("SELECT record FROM tasks WHERE task_id = ?", (task_id,)).fetchone()
        finally:
            db.close()
        return None if row is None else TaskRecord(**json.loads(row[0]))

    async def put(self, record: TaskRecord) -> None:
        import anyio.to_thread

        await anyio.to_thread.run_sync(self._put, record)

    async def get(self, task_id: str) -> TaskRecord | None:
        import anyio.to_thread

        return await anyio.to_thread.run_sync(self._get, task_id)
