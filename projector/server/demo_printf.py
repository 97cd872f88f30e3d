"""The field widths and precisions of a SQLite ``printf`` format, read as SQLite's own formatter reads them.

The demo database (:class:`projector.server.demo.DemoDatabase`) replaces SQLite's ``printf`` with one that refuses
any width or precision above its value limit before it calls the built-in, because the VM checks no budget while one
function call runs. This module only reads the format; it runs nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Any

_FLAGS = frozenset("-+ #!0,")
_ONE_ARGUMENT = frozenset("dicouxXpfeEgGsqQwzr")  # conversions that take an argument (SQLite's fmtinfo table)


def printf_sizes(fmt: str, args: Sequence[Any], as_int: Callable[[Any], int]) -> Iterator[int]:
    """Every field width and precision of SQLite's ``printf(fmt, *args)``, read the way SQLite's own formatter
    reads them (``sqlite3_str_vappendf``): flags, a width of digits or ``*`` (the next argument), a precision of
    ``.`` digits or ``.*``, ``l``/``ll``, a conversion that takes the next argument, ``%%``; an unknown conversion
    ends the formatting. ``*`` values are read with ``as_int`` and given as absolute values; digit runs as written
    (SQLite wraps long ones, so this may only be larger)."""
    scan = _PrintfScan(fmt, args, as_int)
    while scan.i < len(fmt):
        if fmt[scan.i] != "%":
            scan.i += 1
            continue
        scan.i += 1
        if not (yield from scan.spec()):
            return


class _PrintfScan:
    """The reading position in a printf format (``i``) and in its arguments (``k``). Each method reads one part of
    a conversion spec at ``i``; those that end the spec's prefix return True beside the sizes they read, with ``i``
    at the conversion character."""

    def __init__(self, fmt: str, args: Sequence[Any], as_int: Callable[[Any], int]):
        self.fmt, self.args, self.as_int = fmt, args, as_int
        self.i = self.k = 0

    def at(self, j: int) -> str:
        return self.fmt[j] if j < len(self.fmt) else ""

    def take(self) -> Any:
        self.k += 1
        return self.args[self.k - 1] if self.k <= len(self.args) else None

    def digits(self, j: int) -> int:
        while "0" <= self.at(j) <= "9":
            j += 1
        return j

    def spec(self) -> Generator[int, None, bool]:
        """One conversion spec, ``i`` just after its ``%``: its sizes; False when the formatting ends here."""
        while self.at(self.i):
            sizes, done = self._part(self.at(self.i))
            yield from sizes
            if done:
                break
            self.i += 1
        c = self.at(self.i)
        if not c:
            return False
        if c in _ONE_ARGUMENT:
            self.take()
        elif c not in ("%", "n"):
            return False
        self.i += 1
        return True

    def _part(self, c: str) -> tuple[list[int], bool]:
        if c in _FLAGS:
            return [], False
        if c == "l":
            return self._length()
        if "1" <= c <= "9":
            return self._width()
        if c == "*":
            return self._star()
        if c == ".":
            return self._precision()
        return [], True

    def _length(self) -> tuple[list[int], bool]:
        self.i += 1
        if self.at(self.i) == "l":
            self.i += 1
        return [], True

    def _width(self) -> tuple[list[int], bool]:
        j = self.digits(self.i)
        sizes = [int(self.fmt[self.i : j])]
        if self.at(j) not in (".", "l"):
            self.i = j
            return sizes, True
        self.i = j - 1
        return sizes, False

    def _star(self) -> tuple[list[int], bool]:
        sizes = [abs(self.as_int(self.take()))]
        if self.at(self.i + 1) not in (".", "l"):
            self.i += 1
            return sizes, True
        return sizes, False

    def _precision(self) -> tuple[list[int], bool]:
        self.i += 1
        if self.at(self.i) == "*":
            sizes = [abs(self.as_int(self.take()))]
            self.i += 1
        else:
            j = self.digits(self.i)
            sizes = [int(self.fmt[self.i : j] or "0")]
            self.i = j
        if self.at(self.i) == "l":
            self.i -= 1
            return sizes, False
        return sizes, True
