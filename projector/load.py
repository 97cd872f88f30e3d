"""Load workflow files (WORKFLOW-FORMAT.md, version 1) into the model, reporting every problem at once.

The loader is three parts, one for each thing it reads. This module reads files: it finds the workflow files under
the paths given (refusing a link that leads outside every folder scanned), reads each one with a bound, and raises
every problem of every file at once. :mod:`projector.positioned` reads the text as YAML that keeps its positions, and
:mod:`projector.shape` checks the values against the format and builds the model (its :func:`parse` is re-exported
here, the entry point for bytes already read).
"""

from __future__ import annotations

import os
from pathlib import Path

from . import bounded
from .errors import Diagnostic, LoadError, Span, error
from .model import Workflow
from .shape import parse
from .validate import collisions

__all__ = [
    "parse",
    "read_source",
    "load_file",
    "load_data",
    "read_regular",
    "discover",
    "load_all",
    "OutsideRoot",
    "MAX_SOURCE_BYTES",
    "WORKFLOW_SUFFIXES",
]


def read_source(path: Path | str, file: str) -> bytes:
    """A workflow file's bytes, read only when it is a regular file inside the scanned folders; :class:`LoadError`
    (``outside-root`` or ``io``) otherwise."""
    if isinstance(path, OutsideRoot):
        raise LoadError(
            error(
                Span(file),
                "outside-root",
                "the file is a link to a file outside every folder being compiled; it was not read",
                "name the file on the command line to compile it anyway, or copy it into the folder",
            )
        )
    return read_regular(Path(path), file)


def load_file(path: Path | str, display: str | None = None, *, tools_from_server: bool = False) -> Workflow:
    """Load and validate one workflow file, raising :class:`LoadError` with every problem found."""
    file = display or Path(path).as_posix()
    return load_data(read_source(path, file), file, tools_from_server=tools_from_server)


def load_data(data: bytes, file: str, *, tools_from_server: bool = False) -> Workflow:
    """:func:`load_file` for bytes already read from ``file``."""
    wf, diags = parse(data, file, tools_from_server=tools_from_server)
    if wf is None or any(d.severity == "error" for d in diags):
        raise LoadError(diags)  # with the notes that explain them (errors-not-shown)
    return wf


# A workflow file larger than this is refused before it is read (a 40,000-step workflow is about 6 MB).
MAX_SOURCE_BYTES = 64 * 1024 * 1024


def read_regular(path: Path, file: str) -> bytes:
    """The bytes of ``path``, which must be a regular file of at most :data:`MAX_SOURCE_BYTES`: a FIFO would block
    forever and ``/dev/zero`` would never end, so anything else is an ``io`` error. The read is
    :func:`projector.bounded.read_regular`'s (non-blocking, checked on the open descriptor); the path itself may be a
    link the user made, as any path named on the command line."""
    try:
        return bounded.read_regular(path, MAX_SOURCE_BYTES, follow_links=True)
    except bounded.Unreadable as exc:
        hint = (
            "name workflow files (*.yaml) or folders that hold them"
            if exc.reason.endswith("not a regular file")
            else None
        )
        raise LoadError(error(Span(file), "io", f"cannot read the file: {exc.reason}", hint)) from None


WORKFLOW_SUFFIXES = (".yaml", ".yml")


def _walk(folder: Path) -> list[Path]:
    """Workflow files under ``folder``, skipping dot-files and dot-folders without entering them (``.git``,
    ``.venv``...). Symlinked folders are not followed, as ``Path.rglob``."""
    out: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return out
    for entry in entries:
        if entry.name.startswith("."):
            continue
        child = folder / entry.name
        if entry.is_dir(follow_symlinks=False):
            out.extend(_walk(child))
        elif os.path.splitext(entry.name)[1] in WORKFLOW_SUFFIXES and entry.is_file():
            out.append(child)
    return out


def discover(paths: list[str]) -> list[tuple[Path, str]]:
    """Expand files and folders into workflow files, sorted by POSIX path. Returns ``(path, display name)``.

    A file found in a folder that resolves outside every folder scanned (a symbolic link to ``/etc/passwd``, say)
    is refused (``outside-root``): a pull request could otherwise make CI read, and quote in its diagnostics, any
    file on the machine. A file named on the command line is read wherever it points."""
    found: dict[str, Path] = {}
    named: set[str] = set()
    linked: dict[str, Path] = {}  # symbolic links met while scanning folders, checked once every root is known
    roots: list[Path] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            roots.append(path.resolve())
            for f in _walk(path):  # does not descend into linked folders: only a file itself can be a link
                found[f.as_posix()] = f
                if f.is_symlink():
                    linked[f.as_posix()] = f
        elif path.exists() or path.is_symlink():
            found[path.as_posix()] = path
            named.add(path.as_posix())
        else:
            raise LoadError(error(Span(p), "io", "no such file or folder"))
    for display, f in sorted(linked.items()):
        real = f.resolve()
        if display not in named and not any(real.is_relative_to(root) for root in roots):
            found[display] = OutsideRoot(f)  # refused by load_file, beside every other file's problems
    return [(found[k], k) for k in sorted(found)]


class OutsideRoot(type(Path())):  # type: ignore[misc]
    """A file found in a folder that resolves outside every folder scanned: :func:`load_file` refuses it unread."""


def load_all(paths: list[str], *, tools_from_server: bool = False) -> list[Workflow]:
    """Load every workflow under ``paths``; all problems of all files are raised together."""
    workflows: list[Workflow] = []
    diags: list[Diagnostic] = []
    for path, display in discover(paths):
        try:
            workflows.append(load_file(path, display, tools_from_server=tools_from_server))
        except LoadError as exc:
            diags.extend(exc.diagnostics)
    diags.extend(collisions(workflows))
    if diags:
        raise LoadError(diags)
    return workflows
