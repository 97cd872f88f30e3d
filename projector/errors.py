"""One root error, and the diagnostics every user-facing problem is reported as.

A :class:`Diagnostic` is plain data: where (``file:line:col``), how bad (error, warning or note), a stable kebab-case
code, a message and, where one helps, a hint. Every stage returns or raises these; only the CLI prints them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["error", "warning", "note"]


# What a diagnostic never prints raw: C0 and C1 control characters and DEL (terminal escape sequences, bells, line
# breaks that would fake a new diagnostic), the line and paragraph separators, and the bidirectional overrides and
# isolates that make a terminal show text in another order than it is.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape(m: re.Match[str]) -> str:
    c = m.group(0)
    return _ESCAPES.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")


def printable(text: str) -> str:
    """``text`` with every control character escaped as Python writes it (``\\x1b``, ``\\n``): safe to print."""
    return _UNPRINTABLE.sub(_escape, text) if _UNPRINTABLE.search(text) else text


def printable_quote(text: str) -> str:
    """``text`` quoted for a message: ``'...'`` with control characters escaped."""
    return f"'{printable(text)}'"


@dataclass(frozen=True, order=True)
class Span:
    """A position in a source file. ``line`` and ``col`` are 1-based; 0 means unknown."""

    file: str = "<python>"
    line: int = 0
    col: int = 0

    def __str__(self) -> str:
        if self.line <= 0:
            return self.file
        return f"{self.file}:{self.line}:{self.col}"


@dataclass(frozen=True)
class Diagnostic:
    span: Span
    severity: Severity
    code: str
    message: str
    hint: str | None = None
    # Set when an author acknowledged this warning on its step (``acknowledge: {code: reason}``).
    acknowledged: str | None = None
    extra: dict[str, str] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        # Diagnostics quote user text (keys, names, values, file names): whatever they quote is escaped here, once,
        # so the text, JSON and GitHub formats and the servers' errors can never print a raw escape sequence.
        for name in ("message", "hint", "acknowledged"):
            value = getattr(self, name)
            if value is not None and _UNPRINTABLE.search(value):
                object.__setattr__(self, name, printable(value))
        if _UNPRINTABLE.search(self.span.file):
            object.__setattr__(self, "span", Span(printable(self.span.file), self.span.line, self.span.col))

    def sort_key(self) -> tuple:
        return (self.span.file, self.span.line, self.span.col, self.code, self.message)

    def to_json(self) -> dict:
        out: dict = {
            "file": self.span.file,
            "line": self.span.line,
            "col": self.span.col,
            "severity": self.severity,
            "code": self.code,
            "message": self.message,
        }
        if self.hint is not None:
            out["hint"] = self.hint
        if self.acknowledged is not None:
            out["acknowledged"] = self.acknowledged
        return out


class ProjectorError(Exception):
    """The root of every error this project raises on purpose. Its exit code comes from the one map,
    :data:`projector.exits.EXIT_CODES`, by its class (:func:`projector.exits.exit_code`)."""

    def __init__(self, diagnostics: list[Diagnostic] | Diagnostic | str):
        if isinstance(diagnostics, str):
            diagnostics = [Diagnostic(Span("<projector>"), "error", "error", diagnostics)]
        elif isinstance(diagnostics, Diagnostic):
            diagnostics = [diagnostics]
        self.diagnostics: list[Diagnostic] = sorted(diagnostics, key=Diagnostic.sort_key)
        super().__init__("\n".join(format_text(d) for d in self.diagnostics))


class PlainError(ProjectorError):
    """A problem told in one sentence, with no place in a file: an input of the docs, a matrix run, a SKILL.md the
    matrix reader cannot follow. ``str()`` is the sentence itself, so a message that quotes it reads as it did."""

    def __init__(self, message: str):
        super().__init__(message)
        self.args = (message,)


class LoadError(ProjectorError):
    """A workflow file or builder call is not a valid workflow."""


class BuildError(ProjectorError):
    """The workflows are valid one by one, but the set cannot be built (collisions, limits, output conflicts)."""


class DiskError(ProjectorError):
    """The output folder could not be written (``io``), or writing it would overwrite what is not this tool's
    (``output-conflict``). Nothing was changed."""


class UsageError(ProjectorError):
    """The command line itself is wrong (exit 2)."""


def plural(n: int, noun: str, nouns: str | None = None) -> str:
    """``1 skill``, ``2 skills``, ``0 files``: a count with its noun, singular only for exactly one."""
    return f"{n} {noun if n == 1 else (nouns or noun + 's')}"


def error(span: Span, code: str, message: str, hint: str | None = None) -> Diagnostic:
    return Diagnostic(span, "error", code, message, hint)


def closest(word: str, options: Iterable[str], *, cutoff: float = 0.6) -> str | None:
    """The one owner of "did you mean": the closest of ``options`` to a misspelled ``word`` (``difflib``'s ratio at
    least ``cutoff``), or None."""
    import difflib  # here: only a misspelt name needs it

    close = difflib.get_close_matches(word, list(options), n=1, cutoff=cutoff)
    return close[0] if close else None


def suggest(word: str, options: Iterable[str], *, cutoff: float = 0.6) -> str | None:
    """The hint ``did you mean 'x'?`` for the closest of ``options`` to a misspelled ``word`` (:func:`closest`), or
    None."""
    close = closest(word, options, cutoff=cutoff)
    return f"did you mean '{close}'?" if close else None


def format_text(d: Diagnostic) -> str:
    head = f"{d.span}: {d.severity}[{d.code}]: {d.message}"
    if d.acknowledged is not None:
        head += f" (acknowledged: {d.acknowledged})"
    if d.hint:
        head += f"\n  hint: {d.hint}"
    return head
