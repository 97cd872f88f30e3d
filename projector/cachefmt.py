"""The payload of a build cache entry (projector/cache.py): one workflow file's compile result as bytes, and back.

A JSON header (everything but the bundle's file bytes; ASCII, so a display path with surrogate escapes survives),
then those bytes, raw; never pickle, as a cache folder may come from anywhere. :func:`decode` runs only on a payload
whose HMAC was checked, and still refuses a path that is not a plain relative path inside its bundle. The layout is
:data:`projector.cache.FORMAT`: bump it there when this changes. :func:`diagnostic` makes a diagnostic read back,
for these entries and the whole-tree ones (:mod:`projector.treecache`).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from .errors import Diagnostic, Span

if TYPE_CHECKING:
    from .bundle import Bundle

# One file's compile result: the workflow's name, span and source file (for cross-file checks), its bundle (or None)
# and its diagnostics. The same tuple as projector.output._Result.
Result = tuple[str, Span, str, "Bundle | None", list[Diagnostic]]


def span_of(s: Span) -> list[Any]:
    return [s.file, s.line, s.col]


def diag(d: Diagnostic) -> dict[str, Any]:
    return {"span": span_of(d.span), "severity": d.severity, "code": d.code, "message": d.message, "hint": d.hint,
            "acknowledged": d.acknowledged, "extra": d.extra}


def undiag(v: dict[str, Any]) -> Diagnostic:
    return diagnostic(v["span"], v["severity"], v["code"], v["message"], v["hint"], v["acknowledged"], v["extra"])


def diagnostic(span: list[Any], severity: Any, code: Any, message: Any, hint: Any, acknowledged: Any,
               extra: Any) -> Diagnostic:
    """The :class:`~projector.errors.Diagnostic` that :func:`diag` wrote (``span`` as :func:`span_of` wrote it),
    its fields set as its ``__init__`` sets them, without running it again: it escaped the text when the diagnostic
    was first made, and escaping escaped text changes nothing (tests/test_cache.py compares the two ways), while a
    warm run of 1,000 workflows makes thousands of these. A field of the wrong type is refused (TypeError)."""
    file, line, col = span
    if not (type(file) is str and type(line) is int and type(col) is int and type(severity) is str
            and type(code) is str and type(message) is str and (hint is None or type(hint) is str)
            and (acknowledged is None or type(acknowledged) is str) and type(extra) is dict):
        raise TypeError("not a diagnostic as the cache writes it")
    where = object.__new__(Span)
    where.__dict__.update(file=file, line=line, col=col)
    d = object.__new__(Diagnostic)
    d.__dict__.update(span=where, severity=severity, code=code, message=message, hint=hint,
                      acknowledged=acknowledged, extra=dict(extra))
    return d


# Every field of these classes is written and read back below; tests/test_cache.py fails when one is added here
# and not there.
ENCODED_FIELDS = {"Bundle": ("name", "path", "files", "entry", "diagnostics", "span", "evals"),
                  "Diagnostic": ("span", "severity", "code", "message", "hint", "acknowledged", "extra"),
                  "Span": ("file", "line", "col")}


def encode(result: Result) -> bytes:
    """A result as bytes: a JSON header (everything but the bundle's file bytes; ASCII, so a display path with
    surrogate escapes survives), then those bytes, raw."""
    name, span, source, b, diags = result
    meta: dict[str, Any] = {"name": name, "span": span_of(span), "source": source, "diags": [diag(d) for d in diags],
                            "bundle": None}
    blobs: list[bytes] = []
    if b is not None:
        meta["bundle"] = {"name": b.name, "path": b.path, "entry": b.entry, "index_text": b.index_text,
                          "diagnostics": [diag(d) for d in b.diagnostics], "span": span_of(b.span),
                          "files": [[rel, len(data)] for rel, data in b.files.items()], "evals": len(b.evals)}
        blobs = [*b.files.values(), b.evals]
    head = json.dumps(meta, ensure_ascii=True, separators=(",", ":")).encode("ascii")
    return b"%d\n%s%s" % (len(head), head, b"".join(blobs))


def plain_path(path: Any) -> bool:
    """Whether a path read from an entry names a place inside its folder, as a path from a server must: a relative
    POSIX path with no empty, ``.`` or ``..`` segment (so not absolute either), no backslash and no NUL."""
    return (isinstance(path, str) and "\\" not in path and "\0" not in path
            and all(seg not in ("", ".", "..") for seg in path.split("/")))


def _bundle_files(b: dict[str, Any], rest: bytes, at: int, prefix: tuple[str, ...]) -> dict[str, bytes]:
    """The bundle's files from the bytes after the header, every path checked."""
    path = b["path"]
    if not plain_path(path) or tuple(path.split("/")[:-1]) != prefix:
        raise ValueError(f"the bundle path {path!r} is not a skill folder under the URI prefix")
    files: dict[str, bytes] = {}
    for rel, length in b["files"]:
        if not plain_path(rel):
            raise ValueError(f"the file path {rel!r} is not a plain relative path")
        if rel in files:
            raise ValueError(f"the file {rel!r} is listed twice")
        if length < 0 or at + length > len(rest):
            raise ValueError("truncated entry")
        files[rel] = rest[at:at + length]
        at += length
    if at + b["evals"] != len(rest) or b["evals"] < 0:
        raise ValueError("trailing bytes in entry")
    return files


def decode(data: bytes, prefix: tuple[str, ...] = ()) -> Result:
    """:func:`encode` reversed, for a build with the URI ``prefix``, on a payload whose HMAC was checked. Raises
    ValueError (or KeyError, TypeError...) for bytes it did not write, and for a path that is not a plain relative
    path inside its bundle."""
    from .bundle import Bundle  # here: a whole-tree entry needs only the diagnostics' form, not the bundles'

    size, _, rest = data.partition(b"\n")
    n = int(size)
    meta = json.loads(rest[:n])  # after its HMAC: bytes this user's builds wrote (bounded.loads costs a warm run 40 %)
    b = meta["bundle"]
    bundle = None
    if b is not None:
        files = _bundle_files(b, rest, n, prefix)
        bundle = Bundle(b["name"], b["path"], files, b["entry"], tuple(undiag(d) for d in b["diagnostics"]),
                        Span(*b["span"]), rest[len(rest) - b["evals"]:] if b["evals"] else b"")
        if not isinstance(b["index_text"], str):
            raise TypeError("index_text")
        bundle.__dict__["index_text"] = b["index_text"]  # Bundle.index_text, as made when the entry was written
    elif n != len(rest):
        raise ValueError("trailing bytes in entry")
    return meta["name"], Span(*meta["span"]), meta["source"], bundle, [undiag(d) for d in meta["diags"]]
