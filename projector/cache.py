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
  file's display path (it appears in spans and messages) and the file's bytes.
- **Entries.** One file per (workflow file, options): ``entries/<slot>``, where the slot hashes the display path
  and the options. It holds the full key, the SHA-256 of the payload, and the payload: the file's compile result as
  a JSON header and the bundle's file bytes after it (never pickle: a cache folder may come from anywhere). An
  entry that is unreadable, truncated, for another key, fails its checksum or does not decode is a miss; the compile
  result replaces it. Entries of deleted workflows stay until the folder is deleted, which is always safe.
- **Writes** go to a temporary file in the same folder (named for the process and the slot), then ``os.replace``:
  two builds racing on one cache each leave a whole entry, and a reader checks the key, so it never takes one that
  is not its own. A cache that cannot be written (read-only folder, full disk) costs only its speed-up; the build
  never fails for it.
- ``--tools-from`` runs bypass the cache: their input is the server's answer, fetched anew each run.

The cache never changes output bytes: a hit gives back exactly what a miss computes (tests/test_cache.py checks
builds with and without it against each other, for the examples and for random edits).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

from .bundle import Bundle
from .errors import Diagnostic, Span

CACHE_DIR = ".projector_cache"
FORMAT = 2  # bump when the entry layout below changes
PACKAGE = Path(__file__).resolve().parent
_SOURCE_SUFFIXES = (".py", ".j2", ".json", ".sql")

# One file's compile result: the workflow's name, span and source file (for cross-file checks), its bundle (or None)
# and its diagnostics. The same tuple as projector.output._Result.
Result = tuple[str, Span, str, "Bundle | None", list[Diagnostic]]


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


# ------------------------------------------------------------------------------------------------ (de)serializing

def _span(s: Span) -> list[Any]:
    return [s.file, s.line, s.col]


def _diag(d: Diagnostic) -> dict[str, Any]:
    return {"span": _span(d.span), "severity": d.severity, "code": d.code, "message": d.message, "hint": d.hint,
            "acknowledged": d.acknowledged, "extra": d.extra}


def _undiag(v: dict[str, Any]) -> Diagnostic:
    return Diagnostic(Span(*v["span"]), v["severity"], v["code"], v["message"], v["hint"], v["acknowledged"],
                      dict(v["extra"]))


# Every field of these classes is written and read back below; tests/test_cache.py fails when one is added here
# and not there.
ENCODED_FIELDS = {"Bundle": ("name", "path", "files", "entry", "diagnostics", "span"),
                  "Diagnostic": ("span", "severity", "code", "message", "hint", "acknowledged", "extra"),
                  "Span": ("file", "line", "col")}


def encode(result: Result) -> bytes:
    """A result as bytes: a JSON header (everything but the bundle's file bytes), then those bytes, raw."""
    name, span, source, b, diags = result
    meta: dict[str, Any] = {"name": name, "span": _span(span), "source": source, "diags": [_diag(d) for d in diags],
                            "bundle": None}
    blobs: list[bytes] = []
    if b is not None:
        meta["bundle"] = {"name": b.name, "path": b.path, "entry": b.entry, "index_text": b.index_text,
                          "diagnostics": [_diag(d) for d in b.diagnostics], "span": _span(b.span),
                          "files": [[rel, len(data)] for rel, data in b.files.items()]}
        blobs = list(b.files.values())
    head = json.dumps(meta, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return b"%d\n%s%s" % (len(head), head, b"".join(blobs))


def decode(data: bytes) -> Result:
    """:func:`encode` reversed. Raises ValueError (or KeyError, TypeError...) for bytes it did not write."""
    size, _, rest = data.partition(b"\n")
    n = int(size)
    meta = json.loads(rest[:n])
    b = meta["bundle"]
    bundle = None
    if b is not None:
        files: dict[str, bytes] = {}
        at = n
        for rel, length in b["files"]:
            if length < 0 or at + length > len(rest):
                raise ValueError("truncated entry")
            files[rel] = rest[at:at + length]
            at += length
        if at != len(rest):
            raise ValueError("trailing bytes in entry")
        bundle = Bundle(b["name"], b["path"], files, b["entry"], tuple(_undiag(d) for d in b["diagnostics"]),
                        Span(*b["span"]))
        if not isinstance(b["index_text"], str):
            raise TypeError("index_text")
        bundle.__dict__["index_text"] = b["index_text"]  # Bundle.index_text, as made when the entry was written
    elif n != len(rest):
        raise ValueError("trailing bytes in entry")
    return meta["name"], Span(*meta["span"]), meta["source"], bundle, [_undiag(d) for d in meta["diags"]]


# ------------------------------------------------------------------------------------------------ the store

class Cache:
    """The entries of one cache folder for one set of compile options."""

    def __init__(self, root: Path, options: Any):
        self.root = root
        self.entries = root / "entries"
        self.options = repr(options)
        # Plain bytes, not a hashlib object: a Cache goes to worker processes (pickled).
        self._base = f"{environment_digest()}\0{self.options}\0".encode()
        self._ready = False

    def key(self, display: str, data: bytes) -> str:
        d = display.encode()
        return hashlib.sha256(b"%s%d\0%s\0%s" % (self._base, len(d), d, data)).hexdigest()

    def slot(self, display: str) -> Path:
        name = hashlib.sha256(f"{self.options}\0{display}".encode()).hexdigest()[:40]
        return self.entries / name

    def get(self, display: str, key: str) -> Result | None:
        """The cached result for ``key``, or None for a miss of any kind (absent, torn, foreign, corrupt)."""
        try:
            raw = self.slot(display).read_bytes()
            head_key, head_sum, payload = raw.split(b"\n", 2)
            if head_key.decode("ascii") != key or hashlib.sha256(payload).hexdigest() != head_sum.decode("ascii"):
                return None
            result = decode(payload)
        except (OSError, ValueError, KeyError, TypeError, AttributeError, UnicodeError):
            return None
        return result

    def put(self, display: str, key: str, result: Result) -> None:
        """Store ``result`` under ``key``, atomically; any failure to write is ignored."""
        try:
            payload = encode(result)
            self._prepare()
            slot = self.slot(display)
            # Unique to this process and slot (no two writers share it), one write, then the atomic rename.
            tmp = slot.with_name(f".tmp-{os.getpid()}-{slot.name}")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                try:
                    os.write(fd, b"%s\n%s\n%s" % (key.encode(), hashlib.sha256(payload).hexdigest().encode(), payload))
                finally:
                    os.close(fd)
                os.replace(tmp, slot)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
        except (OSError, ValueError, TypeError):
            pass

    def _prepare(self) -> None:
        if self._ready:
            return
        self.entries.mkdir(parents=True, exist_ok=True)
        ignore = self.root / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# Created by project-skill: the build cache is never committed.\n*\n", "utf-8")
        self._ready = True
