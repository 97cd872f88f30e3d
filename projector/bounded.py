"""Every read has a bound: the one owner for reading a file or a JSON text that a checkout, a cache or a server hands
over.

A file read here must be a regular file (a FIFO would block forever, ``/dev/zero`` never ends), is opened without
blocking and without following a symbolic link in its last component unless the caller asks, is checked on the open
descriptor (so the path cannot be swapped between the check and the read), and is refused past ``limit`` bytes
before more than ``limit + 1`` bytes are read.

A JSON text parsed here is refused past a nesting depth, with an integer of more digits than any field of ours
needs, with ``NaN`` or ``Infinity`` (not JSON) or a number too large to be finite (``1e999``, which JSON allows but
every reader takes as infinity), or with a key twice in one object (two readers could take either).

Both raise their own exception (:class:`Unreadable`, an ``OSError``; :class:`BadJSON`, a ``ValueError``) whose text
says what is wrong in a few words; each caller turns it into a diagnostic of its own, with its file and code.
"""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path
from typing import Any

MAX_DEPTH = 64
MAX_INT_DIGITS = 64

_KINDS = (
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),
)


class Unreadable(OSError):
    """A file that is not read: not a regular file, a link, over its limit, or an OS error. ``str()`` says why."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason

    def __str__(self) -> str:
        return self.reason


class BadJSON(ValueError):
    """A JSON text that is not parsed. ``str()`` says why; ``line`` and ``col`` are 1-based, or 0 when unknown."""

    def __init__(self, reason: str, line: int = 0, col: int = 0):
        super().__init__(reason)
        self.reason, self.line, self.col = reason, line, col

    def __str__(self) -> str:
        return self.reason


def kind_of(mode: int) -> str:
    """What a file of this ``st_mode`` is, in words: ``a FIFO``, ``a folder``…"""
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def read_regular(path: Path | str, limit: int, *, follow_links: bool = False, dir_fd: int | None = None) -> bytes:
    """The bytes of ``path``, a regular file of at most ``limit`` bytes. Raises :class:`Unreadable`. With
    ``dir_fd``, ``path`` is relative to that open folder (``os.open``'s ``dir_fd``)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_links:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, dir_fd=dir_fd)
    except OSError as exc:
        if not follow_links and _is_link(path, dir_fd):
            raise Unreadable("it is a symbolic link, which is not followed") from None
        raise Unreadable(exc.strerror or str(exc)) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Unreadable(f"it is {kind_of(st.st_mode)}, not a regular file")
        if st.st_size > limit:
            raise Unreadable(f"it is {st.st_size} bytes, over the limit of {limit}")
        chunks: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:
            raise Unreadable(f"it grew past the limit of {limit} bytes while being read")
        return data
    except OSError as exc:
        if isinstance(exc, Unreadable):
            raise
        raise Unreadable(exc.strerror or str(exc)) from None
    finally:
        os.close(fd)


def _is_link(path: Path | str, dir_fd: int | None) -> bool:
    try:
        return stat.S_ISLNK(os.stat(path, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _refuse_constant(name: str) -> Any:
    raise BadJSON(f"{name} is not a JSON value")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999 is JSON, but no number a reader can hold: it would read as infinity
        raise BadJSON(f"the number {text[:40]} is too large to read (it would be infinite)")
    return value


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        dup = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise BadJSON(f"the key {json.dumps(dup, ensure_ascii=True)} appears twice in one object")
    return out


def _depth_within(value: Any, max_depth: int) -> bool:
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if type(node) is dict:
            children: Any = node.values()
        elif type(node) is list:
            children = node
        else:
            continue
        if depth > max_depth:
            return False
        stack.extend((child, depth + 1) for child in children if type(child) in (dict, list))
    return True


def loads(text: str | bytes, *, max_depth: int = MAX_DEPTH, max_int_digits: int = MAX_INT_DIGITS) -> Any:
    """``json.loads`` with bounds: nesting depth, integer digits, no NaN/Infinity (nor 1e999), no duplicate key. Raises
    :class:`BadJSON`."""

    def parse_int(digits: str) -> int:
        if len(digits.lstrip("-")) > max_int_digits:
            raise BadJSON(f"an integer of {len(digits.lstrip('-'))} digits, over the limit of {max_int_digits}")
        return int(digits)

    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise BadJSON(f"not UTF-8 (byte {exc.start})") from None
    try:
        value = json.loads(
            text,
            parse_int=parse_int,
            parse_float=_finite_float,
            parse_constant=_refuse_constant,
            object_pairs_hook=_unique,
        )
    except BadJSON:
        raise
    except RecursionError:
        raise BadJSON(f"nested deeper than {max_depth} levels") from None
    except json.JSONDecodeError as exc:
        raise BadJSON(f"not JSON: {exc.msg}", exc.lineno, exc.colno) from None
    except ValueError as exc:  # pragma: no cover - json's own limits (int digits are caught by parse_int first)
        raise BadJSON(f"not JSON: {exc}") from None
    if not _depth_within(value, max_depth):
        raise BadJSON(f"nested deeper than {max_depth} levels")
    return value
