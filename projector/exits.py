"""Exit codes, mapped in one place, and the one wrapper every command line runs its command through.

Every CLI of the project (``project-skill`` and the commands it loads lazily: ``serve``, ``remote``, ``pin``,
``matrix``, ``docs``; ``python -m projector.server``; ``python -m projector.matrix.serve``) returns what :func:`run`
returns, so an error maps to the same exit code everywhere: 0 ok, 1 findings, 2 usage, 130 interrupted. The map is
:data:`EXIT_CODES`, by the error's class; no other module spells an exit code as a number.

:func:`run` also prints a :class:`~projector.errors.ProjectorError` (and every subclass) one way: a usage error as
``PROG: message`` (or ``file:line:col`` text where it has a place) on every command; a finding as its diagnostics
(:func:`report`, or :func:`say`), then the command's closing line. What a command says around its findings is its
:class:`Shell`: its name, the closing line, and for the two commands that tell a failure on one line (``docs``,
``matrix``) the lead that begins it. This is a core module: it imports nothing but :mod:`projector.errors`.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Callable

from .errors import Diagnostic, ProjectorError, UsageError, format_text

EXIT_OK = 0
EXIT_FINDINGS = 1  # errors; warnings under --strict; a stale tree, page or data file; a refused skill
EXIT_USAGE = 2  # the command line itself is wrong (argparse exits with 2 too)
EXIT_INTERRUPTED = 130  # Ctrl-C: 128 + SIGINT, as a shell reports a process it interrupted

# The one map: an error's class -> the exit code every CLI returns for it. The first class it is an instance of wins.
EXIT_CODES: tuple[tuple[type[BaseException], int], ...] = (
    (UsageError, EXIT_USAGE),
    (ProjectorError, EXIT_FINDINGS),
    (KeyboardInterrupt, EXIT_INTERRUPTED),
)


def exit_code(exc: BaseException) -> int:
    """The exit code for ``exc``, from :data:`EXIT_CODES`."""
    for cls, code in EXIT_CODES:
        if isinstance(exc, cls):
            return code
    raise TypeError(f"no exit code for {type(exc).__name__}")  # pragma: no cover: run() catches only the mapped


# ------------------------------------------------------------------------------------------------------ printing


def _github(d: Diagnostic) -> str:
    level = {"error": "error", "warning": "warning", "note": "notice"}[d.severity]
    if d.acknowledged is not None:
        level = "notice"
    # GitHub's workflow-command escaping: '%', CR and LF in the message; also ':' and ',' in a property, or a file
    # named "a,line=1.yaml" would set the line. (Control characters were escaped when the diagnostic was made.)
    props = [f"file={_github_escape(d.span.file, prop=True)}"]
    if d.span.line:
        props += [f"line={d.span.line}", f"col={d.span.col}"]
    props.append(f"title={d.code}")
    msg = d.message + (f" (acknowledged: {d.acknowledged})" if d.acknowledged is not None else "")
    if d.hint:
        msg += f" Hint: {d.hint}"
    return f"::{level} {','.join(props)}::{_github_escape(msg)}"


def _github_escape(text: str, *, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def report(diags: list[Diagnostic], fmt: str = "text") -> None:
    """Print diagnostics: text to stderr; json (one array) and github annotations to stdout."""
    if fmt == "json":
        print(json.dumps([d.to_json() for d in diags], indent=2, ensure_ascii=False))
    elif fmt == "github":
        for d in diags:
            print(_github(d))
    else:
        for d in diags:
            print(format_text(d), file=sys.stderr)


def _is_sentence(d: Diagnostic) -> bool:
    """A problem told in a sentence (``ProjectorError("...")``): it has no place in a file to print."""
    return d.code == "error" and d.span.file == "<projector>"


def say(prog: str, diags: list[Diagnostic]) -> None:
    """Print diagnostics to stderr, a sentence as ``PROG: message`` and anything with a place as its text."""
    for d in diags:
        print(f"{prog}: {d.message}" if _is_sentence(d) else format_text(d), file=sys.stderr)


@dataclass(frozen=True)
class Shell:
    """What one command says around an error. Usage errors read the same on every command; a finding prints its
    diagnostics with ``findings`` (default: as text, :func:`report`), then ``closing`` when given. With ``lead``, a
    finding is one line instead: ``PROG: LEAD`` followed by the error's text."""

    prog: str
    closing: Callable[[ProjectorError], str] | None = None
    findings: Callable[[list[Diagnostic]], None] = report
    lead: str | None = None

    def print_error(self, exc: ProjectorError) -> None:
        if isinstance(exc, UsageError):
            say(self.prog, exc.diagnostics)
        elif self.lead is not None:
            print(f"{self.prog}: {self.lead}{exc}", file=sys.stderr)
        else:
            self.findings(exc.diagnostics)
            if self.closing is not None:
                print(self.closing(exc), file=sys.stderr)


def run(shell: Shell, command: Callable[[], int]) -> int:
    """Run ``command`` and return its exit code; an error becomes its code from :data:`EXIT_CODES`, printed the
    :class:`Shell`'s way. argparse's own exit (``--help``, ``--version``: 0; a usage error it printed: 2) is returned
    as its code, so every CLI's ``main()`` returns and never raises."""
    try:
        return command()
    except ProjectorError as exc:
        shell.print_error(exc)
        return exit_code(exc)
    except KeyboardInterrupt as exc:  # pragma: no cover: a signal, not a test
        return exit_code(exc)
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or EXIT_OK
        raise
