"""The incremental cache: what one workflow file compiled to, kept under a key, so an unchanged file is not parsed,
validated and rendered again.

- **Where.** ``.projector_cache/`` in the folder of the first workflow path (``workflows/.projector_cache/`` for the
  default), as ruff keeps ``.ruff_cache/``. The folder carries its own ``.gitignore`` (``*``), and workflow discovery
  skips dot-folders. A cache folder that would sit inside the output folder is not used at all.
- **Key.** The SHA-256 of: this module's format number, the environment (the interpreter; PyYAML with or without
  libyaml; where Jinja2, MarkupSafe, python-slugify and text-unidecode are installed and their files' size and
  mtime; the size and mtime of every source file, template and schema of the ``projector`` package, so any change to
  the code invalidates every entry, as ``.pyc`` files are checked), the compile options (``repr`` of the whole
  :class:`~projector.output.Options` object, so a new option is in the key as soon as it is a field there), the
  file's display path (it appears in spans and messages; a name that is not UTF-8 is taken with its surrogate
  escapes) and the file's bytes.
- **Entries.** One file per (workflow file, options): ``entries/<slot>``, where the slot hashes the display path
  and the options. It holds the full key, a checksum, and the payload: the file's compile result as a JSON header
  and the bundle's file bytes after it (never pickle: a cache folder may come from anywhere). An entry that is
  unreadable, truncated, for another key, fails its checksum, does not decode, or names a path that is not a plain
  relative path inside its bundle (and a bundle folder outside the options' URI prefix) is a miss; the compile
  result replaces it. Entries of deleted workflows stay until the folder is deleted, which is always safe.
- **Trust.** A cache folder may come with a checkout (committed by mistake, or planted), so an entry this machine did
  not write is never used: the checksum is an HMAC-SHA256 of key and payload under a 32-byte secret kept outside
  every checkout, ``$XDG_CACHE_HOME/project-skill/cache-key`` (by default ``~/.cache/...``), made once, mode 0600.
  Without that key (no home; a link, another user's folder, a key of the wrong size or mode) there is no cache.
- **No link followed.** All happens relative to folder descriptors opened without following a link: the cache
  folder and ``entries/`` must be real folders of the current user that neither group nor others can write, the
  ``.gitignore`` a regular file; entries are read with :func:`projector.bounded.read_regular`. Anything else there
  turns the cache off for the run, with nothing written; a link, FIFO or folder in place of an entry is a miss, left
  alone.
- **Writes** go to a new file of a random name (``.tmp-`` and 32 hex digits; ``O_CREAT|O_EXCL|O_NOFOLLOW``, 0600),
  written whole, then ``os.replace``: racing builds each leave a whole entry, and a reader checks the key. The
  ``.gitignore`` too, rewritten whenever it is not exactly ours. What killed runs left (our temporary names, regular
  files, older than :data:`STALE_AFTER` seconds) the next run removes. A cache that cannot be written (read-only
  folder, full disk) costs only its speed-up; the build never fails for it.
- ``--tools-from`` runs bypass the cache: their input is the server's answer, fetched anew each run.

The cache never changes output bytes: a hit gives back exactly what a miss computes (tests/test_cache.py checks
builds with and without it against each other, for the examples and for random edits; tests/test_cache_safety.py
checks the cache against a hostile checkout).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
import stat
import sys
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from functools import lru_cache
from pathlib import Path
from typing import Any

from . import bounded, disk
from .cachefmt import ENCODED_FIELDS, Result, decode, encode, plain_path  # noqa: F401 - the entries' payload
from .sep2640 import MAX_BYTES

CACHE_DIR = ".projector_cache"
FORMAT = 4  # bump when the entry layout below changes
GITIGNORE = b"# Created by project-skill: the build cache is never committed.\n*\n"
KEY_SIZE = 32  # bytes of the per-user secret
MAX_ENTRY = 4 * MAX_BYTES  # the largest bundle, with room for its header
_WRITERS = 4  # threads writing entries within Cache.writes_in_background()
STALE_AFTER = 600  # seconds after which a temporary file is a killed run's: a live write takes milliseconds
_TEMP = re.compile(r"\.tmp-(?:[0-9a-f]{32}|[0-9]+-[0-9a-f]{40})")  # ours, and the names of cache format 2
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_FOLDER = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_SUPPORTED = (hasattr(os, "O_NOFOLLOW") and hasattr(os, "O_DIRECTORY") and os.listdir in os.supports_fd
              and {os.open, os.stat, os.mkdir, os.unlink, os.rename, os.link} <= os.supports_dir_fd)
PACKAGE = Path(__file__).resolve().parent
_SOURCE_SUFFIXES = (".py", ".j2", ".json", ".sql")



def _stats(folder: Path, rel: str = "") -> list[tuple[str, int, int]]:
    """(relative path, size, mtime in ns) of every source file under ``folder``, ``__pycache__`` skipped."""
    out: list[tuple[str, int, int]] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return out
    for entry in entries:
        if entry.is_dir():
            if entry.name != "__pycache__":
                out.extend(_stats(Path(entry.path), f"{rel}{entry.name}/"))
        elif entry.name.endswith(_SOURCE_SUFFIXES):
            st = entry.stat()
            out.append((rel + entry.name, st.st_size, st.st_mtime_ns))
    return out


def _library(name: str) -> list[Any]:
    """Where a library is installed and its entry file's size and mtime, found without importing it (importing
    Jinja2 costs more than a warm run needs). An upgrade rewrites the file."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return [name, None]
    origin = spec.origin if spec else None
    try:
        st = os.stat(origin) if origin else None
    except OSError:
        st = None
    return [name, origin, st.st_size if st else None, st.st_mtime_ns if st else None]


@lru_cache(maxsize=1)
def environment_digest() -> str:
    """Everything besides the options and the file that decides the output: the interpreter, the libraries that
    shape bytes (where they are installed and their files' size and mtime), libyaml, and the size and mtime of every
    source file, template and schema of this package, as Python's own ``.pyc`` check does: any edit, checkout or
    upgrade gives new keys, so no code change can leave an entry in use that the new code would not write.
    (Reading and hashing every source file costs 30-50 ms a run; stat-ing them, about 1 ms.)"""
    import yaml

    state = [FORMAT, sys.implementation.name, list(sys.version_info), sys.executable, yaml.__version__,
             bool(getattr(yaml, "__with_libyaml__", False)),
             [_library(n) for n in ("yaml", "jinja2", "markupsafe", "slugify", "text_unidecode")],
             str(PACKAGE), sorted(_stats(PACKAGE))]
    return hashlib.sha256(json.dumps(state).encode("utf-8")).hexdigest()


def location(paths: list[str], out: Path) -> Path | None:
    """The cache folder for a run over ``paths`` into ``out``: ``.projector_cache`` in the folder of the first path;
    None when that would put it inside the output folder (the cache never sits in committed output)."""
    if not paths:
        return None
    first = Path(paths[0])
    folder = first if first.is_dir() else first.parent
    where = folder / CACHE_DIR
    try:
        resolved, out_resolved = where.resolve(), out.resolve()
    except OSError:
        return None
    if resolved == out_resolved or out_resolved in resolved.parents:
        return None
    return where


# ------------------------------------------------------------------------------------------------ folders and files

class _Off(OSError):
    """What is there is not the cache's own (a link, a FIFO, another user's folder...): the cache is not used."""


def _folder(parent: int, name: str, create: bool) -> int | None:
    """``name`` in the open folder ``parent``, opened without following a link: a real folder of the current user
    that neither group nor others can write (made, mode 0700, when ``create``). None when it is not there."""
    if create:
        with suppress(FileExistsError):
            os.mkdir(name, 0o700, dir_fd=parent)
    try:
        fd = os.open(name, _FOLDER | os.O_NOFOLLOW, dir_fd=parent)
    except FileNotFoundError:
        return None
    except OSError:  # a link (ELOOP), a file (ENOTDIR), ...
        raise _Off(f"{name} is not a folder") from None
    st = os.fstat(fd)
    if disk.not_own(st) is not None:
        os.close(fd)
        raise _Off(f"{name} is another user's, or others can write it")
    return fd


def _new_file(folder: int, data: bytes) -> str:
    """A new file of a random name in ``folder`` holding ``data``, whole; its name. Removed again on failure."""
    name = f".tmp-{secrets.token_hex(16)}"
    fd = os.open(name, _NEW_FILE, 0o600, dir_fd=folder)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
    except BaseException:
        _unlink(folder, name)
        raise
    return name


def _write_whole(folder: int, name: str, data: bytes) -> None:
    """``name`` in ``folder`` holds ``data``, whole, or is left as it was."""
    tmp = _new_file(folder, data)
    try:
        os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
    except BaseException:
        _unlink(folder, tmp)
        raise


def _unlink(folder: int, name: str) -> None:
    with suppress(OSError):
        os.unlink(name, dir_fd=folder)


def _sweep(folder: int) -> None:
    """Remove what killed runs left in ``folder``: regular files of our temporary names, older than
    :data:`STALE_AFTER` (a live run's file is younger; were it removed, that run would only miss one entry)."""
    now = time.time()
    for name in sorted(os.listdir(folder)):
        if _TEMP.fullmatch(name):
            try:
                st = os.stat(name, dir_fd=folder, follow_symlinks=False)
                if stat.S_ISREG(st.st_mode) and now - st.st_mtime > STALE_AFTER:
                    os.unlink(name, dir_fd=folder)
            except OSError:
                pass


def _gitignore(top: int) -> None:
    """The cache folder's ``.gitignore``: exactly :data:`GITIGNORE`, written whole when it is missing or differs.
    Anything but a regular file there turns the cache off."""
    try:
        st = os.stat(".gitignore", dir_fd=top, follow_symlinks=False)
    except FileNotFoundError:
        st = None
    if st is not None:
        if not stat.S_ISREG(st.st_mode):
            raise _Off(".gitignore is not a regular file")
        try:
            if bounded.read_regular(".gitignore", len(GITIGNORE), dir_fd=top) == GITIGNORE:
                return
        except bounded.Unreadable:
            pass  # longer than ours: rewritten
    try:
        _write_whole(top, ".gitignore", GITIGNORE)
    except OSError:
        pass  # a read-only or full disk: the next run repairs it


def _store(root: Path, create: bool) -> int | None:
    """The open ``entries/`` folder of the cache folder ``root``, after its checks (and its repairs); None when the
    cache folder is not there yet (``create`` false)."""
    parent = os.open(root.parent, _FOLDER)  # the workflows' folder: followed, as the workflows are read from it
    try:
        top = _folder(parent, root.name, create)
    finally:
        os.close(parent)
    if top is None:
        return None
    try:
        _gitignore(top)
        _sweep(top)
        entries = _folder(top, "entries", create)
    finally:
        os.close(top)
    if entries is not None:
        _sweep(entries)
    return entries


# ------------------------------------------------------------------------------------------------ the secret

def key_file() -> Path | None:
    """Where the per-user secret lives: ``$XDG_CACHE_HOME/project-skill/cache-key``, ``~/.cache/...`` when that is
    unset or not absolute (as the XDG spec says); None when there is no absolute home either."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        home = os.path.expanduser("~")
        if not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    return Path(base) / "project-skill" / "cache-key"


def _read_key(folder: int) -> bytes | None:
    try:
        st = os.stat("cache-key", dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o077 or st.st_size != KEY_SIZE:
        raise _Off("the cache key is not a private file of the right size")
    data = bounded.read_regular("cache-key", KEY_SIZE, dir_fd=folder)
    if len(data) != KEY_SIZE:
        raise _Off("the cache key changed while it was read")
    return data


def _make_key(folder: int) -> bytes | None:
    """A new secret, published whole (written under a random name, then hard-linked, which never replaces): when
    two runs race, both take the one that was linked first."""
    tmp = _new_file(folder, secrets.token_bytes(KEY_SIZE))
    try:
        os.link(tmp, "cache-key", src_dir_fd=folder, dst_dir_fd=folder)
    except FileExistsError:
        pass
    finally:
        _unlink(folder, tmp)
    return _read_key(folder)


def user_key() -> bytes | None:
    """This user's cache secret, made on first use; None when it cannot be had (then the cache is not used)."""
    where = key_file()
    if where is None or not _SUPPORTED:
        return None
    try:
        os.makedirs(where.parent.parent, 0o700, exist_ok=True)
        parent = os.open(where.parent.parent, _FOLDER)
        try:
            folder = _folder(parent, where.parent.name, True)
        finally:
            os.close(parent)
        if folder is None:
            return None
        try:
            return _read_key(folder) or _make_key(folder)
        finally:
            os.close(folder)
    except OSError:
        return None


# ------------------------------------------------------------------------------------------------ the store

def _text(s: str) -> bytes:
    """A display path as bytes, total: the surrogate escapes of a name that is not UTF-8 included."""
    return s.encode("utf-8", "surrogatepass")


class Cache:
    """The entries of one cache folder for one set of compile options."""

    def __init__(self, root: Path, options: Any):
        self.root = root
        self.entries = root / "entries"
        self.options = repr(options)
        self.prefix = tuple(options.prefix)
        # Plain bytes, not a hashlib object: a Cache goes to worker processes (pickled).
        self._base = _text(f"{environment_digest()}\0{self.options}\0")
        self._secret = user_key()
        self._off = self._secret is None  # set for good once the cache folder is found not to be the cache's own
        self._fd: int | None = None  # the open entries/ folder, once checked (each process opens its own)
        self._closer: Any = None
        self._pool: Any = None  # within writes_in_background(): the threads that write entries

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_fd": None, "_closer": None, "_pool": None}

    @contextmanager
    def writes_in_background(self) -> Iterator[None]:
        """Within, :meth:`put` hands each entry's write to a few threads and returns: writing over an entry waits on
        the disk to free the old one (a millisecond or more on a VM, or a file system mounted with ``discard``), and
        the threads overlap those waits with the compile. On exit, every write has ended."""
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(_WRITERS) as pool:
            self._pool = pool
            try:
                yield
            finally:
                self._pool = None

    def key(self, display: str, data: bytes) -> str:
        d = _text(display)
        return hashlib.sha256(b"%s%d\0%s\0%s" % (self._base, len(d), d, data)).hexdigest()

    def _slot_name(self, display: str) -> str:
        return hashlib.sha256(_text(f"{self.options}\0{display}")).hexdigest()[:40]

    def slot(self, display: str) -> Path:
        return self.entries / self._slot_name(display)

    def seal(self, key: str, payload: bytes) -> bytes:
        """The checksum line of an entry: HMAC-SHA256 of the key and the payload under this user's secret."""
        if self._secret is None:
            raise _Off("no cache key")
        return hmac.new(self._secret, b"%s\n%s" % (key.encode("ascii"), payload), hashlib.sha256).hexdigest().encode()

    def _folder(self, create: bool) -> int | None:
        """The checked ``entries/`` folder, open; None when the cache is off or (for a read) not there yet."""
        if self._fd is not None or self._off:
            return self._fd
        try:
            fd = _store(self.root, create)
        except _Off:
            self._off = True
            return None
        except OSError:  # the folder could not be made (a read-only disk, a file in its place...)
            self._off = create
            return None
        if fd is not None:
            self._fd = fd
            self._closer = weakref.finalize(self, os.close, fd)
        return fd

    def get(self, display: str, key: str) -> Result | None:
        """The cached result for ``key``, or None for a miss of any kind (absent, torn, foreign, corrupt)."""
        payload = self.read(self._slot_name(display), key)
        try:
            return None if payload is None else decode(payload, self.prefix)
        except (ValueError, KeyError, TypeError, AttributeError, UnicodeError):
            return None

    def put(self, display: str, key: str, result: Result) -> None:
        """Store ``result`` under ``key``, whole (in a thread, within :meth:`writes_in_background`); any failure to
        write is ignored."""
        try:
            payload = encode(result)
        except (ValueError, TypeError):
            return
        if self._pool is not None and self._folder(True) is not None:  # the folder is opened here, once
            self._pool.submit(self.write, self._slot_name(display), key, payload)
        else:
            self.write(self._slot_name(display), key, payload)

    def read(self, name: str, key: str) -> bytes | None:
        """The payload of the slot ``name`` in ``entries/``, when it is sealed for ``key`` by this user's secret (see
        :meth:`seal`); None for a miss of any kind. :func:`get`'s, and the whole-tree entries' (projector.treecache)."""
        try:
            folder = self._folder(False)
            if folder is None:
                return None
            raw = bounded.read_regular(name, MAX_ENTRY, dir_fd=folder)
            head_key, head_sum, payload = raw.split(b"\n", 2)
            if head_key != key.encode("ascii") or not hmac.compare_digest(head_sum, self.seal(key, payload)):
                return None
            return payload
        except (OSError, ValueError):
            return None

    def write(self, name: str, key: str, payload: bytes) -> None:
        """Seal ``payload`` for ``key`` into the slot ``name``, whole; any failure to write is ignored. A slot that
        holds anything but a regular file (a link, a FIFO, a folder) is not the cache's: it is left alone."""
        try:
            folder = self._folder(True)
            if folder is None:
                return
            try:
                if not stat.S_ISREG(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode):
                    return
            except FileNotFoundError:
                pass
            _write_whole(folder, name, b"%s\n%s\n%s" % (key.encode("ascii"), self.seal(key, payload), payload))
        except (OSError, ValueError, TypeError):
            pass
