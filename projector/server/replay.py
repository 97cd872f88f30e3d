"""The replay guard: each confirmation's yes runs its step at most once.

A sealed ``requestState`` is authentic, not single-use: the same state and the same yes could be sent twice within
its lifetime (a retry after a timeout, a copy), to the same process, to another one that shares the state key, or to
the same server after a restart. So each confirmation carries a one-time token, and the yes claims it before the
step runs (:func:`projector.server.confirm.confirmation`); a token claimed before is refused and nothing runs.

The guard is state that the runner and the server share, so it lives here and is passed in: :func:`attach` takes
one (``replay=``) and gives it to every workflow prompt it adds; ``project-skill serve`` builds one at start-up
(:func:`from_env`). :class:`MemoryGuard` holds the claims of one process; :class:`SqliteGuard` holds them in one
SQLite file that every process on a host shares, and that outlives a restart (``PROJECT_SKILL_REPLAY_DB``).

A claim is kept for :data:`CLAIM_SECONDS`. It must outlive every state that carries its token: mcp's default TTL is
600 s, but a server built with its own ``RequestStateSecurity(ttl=...)`` may seal for longer. A day bounds the
memory (a claim is a 32-character token and a time) and covers any TTL a confirmation would sensibly have.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
import time
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR

from .. import disk
from ..errors import Span, error
from .errors import AttachError

CLAIM_SECONDS = 86_400.0
REPLAY_DB_ENV = "PROJECT_SKILL_REPLAY_DB"
REPLAY_DB_HINT = (
    f"set ${REPLAY_DB_ENV} to an absolute path in a folder of your own that neither its group nor "
    "others can write (the file is made there, mode 0600, when it is missing)"
)


class ReplayGuard(ABC):
    """Claims of one-time tokens: :meth:`claim` is true the first time for a token, false ever after (for at least
    :data:`CLAIM_SECONDS`, the longest a state that carries it verifies).

    ``shared`` says whether the claims reach past this process: seen by every process that shares the state key, and
    kept across a restart. A guard of your own (a database every worker reaches) keeps the default, True."""

    shared: bool = True

    @abstractmethod
    async def claim(self, token: str) -> bool: ...


class MemoryGuard(ReplayGuard):
    """The claims of this process, in the order they were made: a claim is a dict lookup and an insert, and the
    claims older than ``seconds`` are dropped from the front, each once (O(1) per claim, amortised; no scan per
    yes). Two processes that share a state key do not share these, and a restart forgets them: give them a
    :class:`SqliteGuard` on one file. ``clock`` is a monotonic clock in seconds."""

    shared = False

    def __init__(self, seconds: float = CLAIM_SECONDS, clock: Callable[[], float] = time.monotonic) -> None:
        self.seconds = seconds
        self._clock = clock
        self._claims: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        """How many claims it holds (the expired ones go at the next claim)."""
        return len(self._claims)

    async def claim(self, token: str) -> bool:
        with self._lock:
            now = self._clock()  # read under the lock: the claims stay in the order of their times
            while self._claims:
                oldest, at = next(iter(self._claims.items()))
                if now - at <= self.seconds:
                    break
                del self._claims[oldest]
            if token in self._claims:
                return False
            self._claims[token] = now
            return True


class SqliteGuard(ReplayGuard):
    """The claims in one SQLite file, shared by every process that opens it: a claim is an insert of the token as a
    primary key, which only one process can make; the expired claims are deleted through an index on their time.

    The file is the user's own, checked when the guard is made (at start-up) and before each claim, as the build
    cache checks its folders (:func:`projector.disk.not_own`): an absolute path; the folder it is in and the file
    (made, mode 0600, when missing) are real ones, not links, of the current user, and neither group nor others can
    write them. Whoever could write the file could empty the claims, and a yes would run again. A path that fails
    this is an :class:`~projector.server.errors.AttachError` (``replay-db``) when the guard is made, and a claim
    that cannot be made later is an internal error: its step does not run."""

    def __init__(self, path: str | Path, seconds: float = CLAIM_SECONDS):
        self.path = str(path)
        self.seconds = seconds
        try:
            _make(self.path)
            db = self._connect()
            try:
                db.execute("CREATE TABLE IF NOT EXISTS claims (token TEXT PRIMARY KEY, at REAL NOT NULL)")
                db.execute("CREATE INDEX IF NOT EXISTS claims_at ON claims (at)")
            finally:
                db.close()
        except _Unusable as exc:
            raise AttachError(
                error(
                    Span(self.path),
                    "replay-db",
                    f"the replay database cannot be used: {exc}; "
                    "a confirmation's yes could not be claimed, so nothing is served",
                    REPLAY_DB_HINT,
                )
            ) from None
        except sqlite3.Error as exc:
            raise AttachError(
                error(
                    Span(self.path),
                    "replay-db",
                    f"the replay database cannot be used: {exc}; nothing is served",
                    REPLAY_DB_HINT,
                )
            ) from None

    def _connect(self) -> sqlite3.Connection:
        _check(self.path)
        return sqlite3.connect(self.path, timeout=10.0, isolation_level=None)

    async def claim(self, token: str) -> bool:
        import anyio.to_thread

        return await anyio.to_thread.run_sync(self._claim, token)

    def _claim(self, token: str) -> bool:
        now = time.time()
        try:
            db = self._connect()
        except (_Unusable, sqlite3.Error) as exc:
            raise _unavailable(self.path, str(exc)) from None
        try:
            db.execute("DELETE FROM claims WHERE at < ?", (now - self.seconds,))
            db.execute("INSERT INTO claims (token, at) VALUES (?, ?)", (token, now))
            return True
        except sqlite3.IntegrityError:
            return False
        except sqlite3.Error as exc:
            raise _unavailable(self.path, str(exc)) from None
        finally:
            db.close()


class _Unusable(Exception):
    """Why the replay database's path is not one the guard may use."""


def _check(path: str) -> bool:
    """Whether the file exists; raises :class:`_Unusable` when the path or its folder breaks the rule."""
    if not os.path.isabs(path):
        raise _Unusable("the path is not absolute")
    for what, name, kind in (("its folder", os.path.dirname(path), stat.S_ISDIR), ("it", path, stat.S_ISREG)):
        try:
            st = os.lstat(name)
        except FileNotFoundError:
            if what == "it":
                return False
            raise _Unusable("its folder does not exist") from None
        except OSError as exc:
            raise _Unusable(f"{what} cannot be read ({exc.strerror or exc})") from None
        if not kind(st.st_mode):
            raise _Unusable(f"{what} is a link or not a {'folder' if kind is stat.S_ISDIR else 'regular file'}")
        why = disk.not_own(st)
        if why is not None:
            raise _Unusable(f"{what} {why}")
    return True


def _make(path: str) -> None:
    """The file, made private when it is missing (never through a link, never over another file)."""
    if _check(path):
        return
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))
    except FileExistsError:
        pass  # made by another process just now: checked again before it is opened
    except OSError as exc:
        raise _Unusable(f"it cannot be made ({exc.strerror or exc})") from None


def _unavailable(path: str, why: str) -> MCPError:
    """The replay guard cannot be used: the step is not run (a yes that cannot be claimed is not acted on)."""
    return MCPError(
        code=INTERNAL_ERROR,
        message=f"the confirmation cannot be checked for a replay: the replay "
        f"database ({path}) cannot be used: {why}; nothing was run",
    )


def from_env() -> ReplayGuard:
    """The guard ``project-skill serve`` (and :func:`attach`, by default) uses: a :class:`SqliteGuard` on
    ``$PROJECT_SKILL_REPLAY_DB`` when it is set, checked now, else a :class:`MemoryGuard` of this process."""
    path = os.environ.get(REPLAY_DB_ENV, "")
    return SqliteGuard(path) if path else MemoryGuard()
