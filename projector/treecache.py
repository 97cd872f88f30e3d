"""The whole-tree entry of the build cache: what a build of these exact input files makes, as digests, so that a warm
``check`` of an unchanged tree decodes one entry instead of one per workflow, and never holds a bundle in memory.

- **Key.** The SHA-256 of :data:`FORMAT` and every input file's own cache key (:meth:`projector.cache.Cache.key`,
  which covers the environment, the options, the display path and the bytes), in the order the files were found: a
  file added, removed, renamed or edited gives another key.
- **Slot.** ``entries/tree-<40 hex>``, beside the per-file entries, named by the options and the display paths, so
  that each set of paths a run names has its own.
- **Payload.** JSON: the build's diagnostics (a list of fields each, read back by
  :func:`projector.cachefmt.diagnostic`; the file, hint and extra fields as indexes into tables of their distinct
  values), each bundle's name, URI, file count, byte count and findings (what
  ``build`` prints), the size and SHA-256 of every file of the tree, its bundle folders, and the folders its
  skills.json lists (what :func:`projector.output.compare` reads back from that file on disk).
- **Trust.** As every entry: sealed with this user's secret (:meth:`projector.cache.Cache.read`), so an entry this
  machine did not write is never used; a payload that does not decode as written is a miss.
- **Use.** Only for the verdict: when the tree on disk has exactly these files (:func:`projector.output.unchanged`,
  each file read with the bounds :func:`~projector.output.compare` reads it with, and hashed), ``check`` is done.
  When anything differs, the run compiles as if there were no such entry (the per-file entries still answer), so the
  diff, the lists and every message come from the one slow path. The entry is written by a run that compiled
  without it; it is never the source of the tree's bytes.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .cachefmt import diagnostic, span_of
from .errors import Diagnostic

if TYPE_CHECKING:
    from .cache import Cache
    from .output import Build

FORMAT = 2  # bump when the payload below changes


@dataclass(frozen=True)
class Summary:
    """A build, as far as a warm ``check`` needs it: what it prints, and the digests of the tree it writes."""

    diagnostics: list[Diagnostic]
    skills: list[tuple[str, str, int, int, int]]  # per bundle: name, URI, files, bytes, findings
    files: dict[str, tuple[int, str]]  # POSIX path in the tree -> (size, SHA-256 hex)
    owned: set[str]  # the bundle folders, and those the tree's skills.json lists


def _where(store: Cache, keys: list[tuple[str, str]]) -> tuple[str, str]:
    """The slot and the key of the whole-tree entry for these ``(display path, key)`` pairs."""
    names = "\0".join(display for display, _ in keys)
    slot = hashlib.sha256(f"{store.options}\0tree\0{names}".encode("utf-8", "surrogatepass")).hexdigest()[:40]
    key = hashlib.sha256(("\0".join([f"tree-{FORMAT}", *(k for _, k in keys)])).encode("ascii")).hexdigest()
    return f"tree-{slot}", key


def summarize(build: Build) -> Summary:
    from .output import listed_dirs
    from .sep2640 import INDEX_FILE

    skills = [(b.name, b.entry["uri"], len(b.entry["resources"]), sum(r["size"] for r in b.entry["resources"]),
               len(b.diagnostics)) for b in build.bundles]
    files = {rel: (len(data), hashlib.sha256(data).hexdigest()) for rel, data in build.files.items()}
    return Summary(list(build.diagnostics), skills, files,
                   listed_dirs(build.files[INDEX_FILE])[0] | build.bundle_dirs)


def encode(summary: Summary) -> bytes:
    """The payload: each diagnostic as a row, its file, hint and extra fields as indexes into tables of the distinct
    values (a set of workflows repeats a hundred hints thousands of times: a third of the bytes to seal and parse)."""
    files: dict[str, int] = {}
    hints: dict[str, int] = {}
    extras: dict[str, int] = {}  # by their JSON text, in their own order
    rows = [[files.setdefault(d.span.file, len(files)), d.span.line, d.span.col, d.severity, d.code, d.message,
             None if d.hint is None else hints.setdefault(d.hint, len(hints)), d.acknowledged,
             extras.setdefault(_json(d.extra), len(extras))] for d in summary.diagnostics]
    return json.dumps({"sources": list(files), "hints": list(hints), "extras": [json.loads(e) for e in extras],
                       "diagnostics": rows, "skills": summary.skills,
                       "files": [[rel, size, digest] for rel, (size, digest) in summary.files.items()],
                       "owned": sorted(summary.owned)}, ensure_ascii=True, separators=(",", ":")).encode("ascii")


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=True, separators=(",", ":"))


def _index(i: Any, table: list[Any]) -> Any:
    if type(i) is not int or not 0 <= i < len(table):
        raise ValueError("not an index of its table")
    return table[i]


def _diagnostics(v: dict[str, Any]) -> list[Diagnostic]:
    """The rows of :func:`encode`, each read back by :func:`~projector.cachefmt.diagnostic` (which refuses a field
    of the wrong type, the tables' values included)."""
    sources, hints, extras = v["sources"], v["hints"], v["extras"]
    if not (type(sources) is list and type(hints) is list and type(extras) is list):
        raise TypeError("tables")
    return [diagnostic([_index(f, sources), line, col], severity, code, message,
                       None if h is None else _index(h, hints), acknowledged, _index(e, extras))
            for f, line, col, severity, code, message, h, acknowledged, e in v["diagnostics"]]


def decode(payload: bytes) -> Summary:
    """:func:`encode` reversed; raises ValueError, KeyError, TypeError... for bytes it did not write."""
    v: dict[str, Any] = json.loads(payload)
    skills = [(str(name), str(uri), int(n), int(size), int(found)) for name, uri, n, size, found in v["skills"]]
    files = {str(rel): (int(size), str(digest)) for rel, size, digest in v["files"]}
    if not all(isinstance(o, str) for o in v["owned"]):
        raise TypeError("owned")
    return Summary(_diagnostics(v), skills, files, set(v["owned"]))


def lookup(store: Cache, keys: list[tuple[str, str]]) -> Summary | None:
    """The whole-tree entry for these inputs, or None for a miss of any kind."""
    slot, key = _where(store, keys)
    payload = store.read(slot, key)
    try:
        return None if payload is None else decode(payload)
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeError):
        return None


def keep(store: Cache, keys: list[tuple[str, str]], build: Build) -> None:
    """Write the whole-tree entry of ``build``, compiled from these inputs, unless it is there (a build answered by
    the per-file entries rewrites nothing); any failure to write is ignored."""
    slot, key = _where(store, keys)
    if store.read(slot, key) is None:
        store.write(slot, key, encode(summarize(build)))
