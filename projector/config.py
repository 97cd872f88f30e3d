"""The configuration file: ``[tool.project-skill]`` in ``pyproject.toml``, as ruff, mypy and pytest keep theirs.

Without it, every ``build`` and ``check`` (and the pre-commit hook) would repeat the same flags. The table gives the
defaults of those flags; a flag on the command line overrides the file. What a user can get wrong here is reported
as every other mistake: a diagnostic at ``pyproject.toml:LINE:COL`` with a code and a hint, all problems at once.

Where the file is: the first ``pyproject.toml`` found walking up from the current directory, as ruff finds its own;
the walk stops there whether or not the file holds the table, so a nested project never inherits its parent's
settings, and a ``pyproject.toml`` without the table changes nothing. Paths in the table, and the default paths
when the table is there, are relative to the file's folder, not to the current directory: the same project builds
the same way from any of its folders. They must stay inside that folder, as written and once resolved (no absolute
path, no ``..`` out of it, no link on the way that leads out of it: ``outside-project``; the default paths too, when
the file has the table): the file comes with a cloned repository, and so do its links, which must not decide where
``build`` writes or what it reads elsewhere; the command line, the user's own, may name any path, and so may a file it names with
``--config FILE`` (a ``ci/project.toml`` that points at ``../workflows``).

The read is bounded (:data:`MAX_BYTES`), and ``tomllib`` is imported only when a file is there to read, so ``build``
and ``check`` stay light. ``tomllib`` gives no positions for keys: :func:`_locate` finds a key's line in the text.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import bounded
from .errors import Span, UsageError, error, printable_quote, suggest

FILE_NAME = "pyproject.toml"
TABLE = "project-skill"
MAX_BYTES = 1 << 20  # a pyproject.toml is a few kilobytes; one mebibyte is generous and still bounded
MAX_PROBLEMS = 20  # the problems in one table that are each located and reported; the rest are counted

# Each key of the table -> the argparse destination of the flag it gives the default of.
KEYS = {
    "workflows": "paths",
    "out": "out",
    "evals-out": "evals_out",
    "tools-from": "tools_from",
    "strict": "strict",
    "uri-prefix": "uri_prefix",
    "skills-only": "skills_only",
    "workflow-tools": "workflow_tools",
}
# What a key gives when neither the command line nor the file does.
DEFAULTS: dict[str, Any] = {
    "workflows": ["workflows"],
    "out": "generated_skills",
    "evals-out": None,  # beside out: evals_beside
    "tools-from": None,
    "strict": False,
    "uri-prefix": None,
    "skills-only": False,
    "workflow-tools": False,
}


@dataclass(frozen=True)
class Config:
    """What a ``[tool.project-skill]`` table says. ``shown`` is the file as the user would name it (relative to the
    current directory); ``root`` is its folder, which relative paths in it start from (also relative where it can
    be, so messages read as before); ``values`` holds only the keys the table sets, checked."""

    shown: str
    root: Path
    values: dict[str, Any] = field(default_factory=dict)
    contained: bool = True  # its paths must stay in its folder: a file found, not one named by --config
    at: tuple[int, int] = (1, 1)  # where the table starts in the file (line, column)

    def path(self, value: str) -> str:
        """``value``, a path written in the file, as a path from the current directory."""
        return value if os.path.isabs(value) else (self.root / value).as_posix()


def find(start: Path) -> tuple[Path, Path] | None:
    """The first ``pyproject.toml`` from ``start`` upwards, with the folder to show it from: ``(file, root)``,
    ``root`` being ``.``, ``..``, ``../..``... The walk is as long as the path."""
    up = Path(".")
    for folder in (start, *start.parents):
        if os.path.lexists(folder / FILE_NAME):
            return folder / FILE_NAME, up
        up = up / ".."
    return None


def load(explicit: str | None = None, *, disabled: bool = False) -> Config | None:
    """The configuration for a run: from ``explicit`` (``--config FILE``, which must hold the table), else from the
    file :func:`find` finds from the current directory, else None. Raises :class:`UsageError` with every problem."""
    if disabled:
        return None
    if explicit is not None:
        got = _read(Path(explicit), explicit, Path(os.path.dirname(explicit) or "."), contained=False)
        if got is None:
            raise UsageError(
                error(
                    Span(explicit, 1, 1),
                    "no-table",
                    f"{explicit} has no [tool.{TABLE}] table",
                    "add one, or leave out --config",
                )
            )
        return got
    try:
        found = find(Path(os.getcwd()))
    except OSError:  # the current directory was removed: nothing to find from
        return None
    if found is None:
        return None
    file, root = found
    return _read(file, (root / FILE_NAME).as_posix(), root)


def _read(file: Path, shown: str, root: Path, *, contained: bool = True) -> Config | None:
    try:
        data = bounded.read_regular(file, MAX_BYTES, follow_links=True)
    except bounded.Unreadable as exc:
        raise UsageError(
            error(
                Span(shown),
                "io",
                f"cannot read the configuration file: {exc.reason}",
                "run with --no-config to ignore it",
            )
        ) from None
    text = _decode(data, shown)
    import tomllib  # here: only a run that has a pyproject.toml pays for it

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line, col = _toml_position(str(exc), text)
        message = _TOML_POSITION.sub("", str(exc)).strip() or "not valid TOML"
        raise UsageError(
            error(
                Span(shown, line, col),
                "malformed-toml",
                f"not valid TOML: {message}",
                "see https://toml.io for the syntax",
            )
        ) from None
    except RecursionError:  # tomllib parses nested arrays and inline tables recursively
        raise UsageError(
            error(
                Span(shown, 1, 1),
                "malformed-toml",
                "not read: arrays or tables nested too deep",
                "a configuration file nests a few levels at most",
            )
        ) from None
    tool = doc.get("tool")
    if not isinstance(tool, dict) or TABLE not in tool:
        return None
    table = tool[TABLE]
    if not isinstance(table, dict):
        line, col = _locate(text, TABLE)
        raise UsageError(
            error(Span(shown, line, col), "wrong-type", f"[tool.{TABLE}] must be a table, not {_type_name(table)}")
        )
    config = Config(shown, root, contained=contained, at=_locate(text, TABLE))
    problems = [(key, p) for key in sorted(table) if (p := _check(key, table[key], config)) is not None]
    # Each problem is located by a scan of the text: a bounded number of them, and the rest counted.
    diags = [error(Span(shown, *_locate(text, key)), *problem) for key, problem in problems[:MAX_PROBLEMS]]
    if len(problems) > MAX_PROBLEMS:
        diags.append(
            error(
                Span(shown, *_locate(text, TABLE)),
                problems[MAX_PROBLEMS][1][0],
                f"[tool.{TABLE}] has {len(problems) - MAX_PROBLEMS} more problems; fix these first",
            )
        )
    if diags:
        raise UsageError(diags)
    return config


def _decode(data: bytes, shown: str) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[: exc.start]
        line, col = before.count(b"\n") + 1, exc.start - (before.rfind(b"\n") + 1) + 1
        raise UsageError(
            error(
                Span(shown, line, col),
                "encoding",
                f"the file is not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})",
                "save the file as UTF-8, as TOML requires",
            )
        ) from None
    return text[1:] if text.startswith("\ufeff") else text


# tomllib (Python 3.11 to 3.13) puts the position at the end of its message, as "(at line L, column C)".
_TOML_POSITION = re.compile(r"\(at (?:line (\d{1,9}), column (\d{1,9})|end of document)\)\s*\Z")


def _toml_position(message: str, text: str) -> tuple[int, int]:
    m = _TOML_POSITION.search(message[-200:])
    if m and m.group(1):
        return int(m.group(1)), int(m.group(2))
    lines = text.split("\n")  # "at end of document", or no position: the end of the text
    return len(lines), len(lines[-1]) + 1


# ------------------------------------------------------------------------------------------------------ the keys


def _check(key: str, value: Any, config: Config) -> tuple[str, str, str | None] | None:
    """The problem with one key of the table, as ``(code, message, hint)``; or None, and its value is kept."""
    if key not in KEYS:
        hint = suggest(key, KEYS) or f"the keys are: {', '.join(KEYS)}"
        return "unknown-key", f"unknown key '{key}' in [tool.{TABLE}]", hint
    problem = _CHECKS[key](value)
    if problem is not None:
        command = key == "tools-from" and isinstance(value, str) and value.strip()
        given = "a command line" if command else _describe(value)
        return "wrong-type", f"'{key}' in [tool.{TABLE}] must be {problem}, not {given}", _HINTS.get(key)
    outside = _outside(value) if key in _PATH_KEYS and config.contained else None
    if outside is not None:
        return (
            "outside-project",
            f"'{key}' in [tool.{TABLE}] must be a relative path that stays inside the folder "
            f"of {FILE_NAME}, not {printable_quote(outside[:200])}",
            _OUTSIDE_HINT.format(flag=_PATH_KEYS[key]),
        )
    linked = _linked_out(value, config) if key in _PATH_KEYS and config.contained else None
    if linked is not None:
        return (
            "outside-project",
            f"'{key}' in [tool.{TABLE}] must stay inside the folder of {FILE_NAME}, but "
            f"{printable_quote(linked[0][:200])} leads out of it through a link, to {printable_quote(linked[1][:200])}",
            _LINKED_HINT.format(flag=_PATH_KEYS[key]),
        )
    config.values[key] = _RESOLVE.get(key, lambda v, _c: v)(value, config)
    return None


def _linked_out(value: str | list[str], config: Config) -> tuple[str, str] | None:
    """The first path of ``value`` (each relative, inside the file's folder as written: :func:`_outside`) that a
    link on the way to it leads out of that folder once resolved, with where it leads; or None. A URL is no path."""
    for path in [value] if isinstance(value, str) else value:
        real = None if path.startswith(("http://", "https://")) else _leads_out(config.path(path), config)
        if real is not None:
            return path, real
    return None


def _leads_out(path: str, config: Config) -> str | None:
    """Where ``path`` (from the current folder) resolves to when that is outside the file's folder, else None. A
    path that is not there yet is resolved as far as it is (a link to its folder is followed)."""
    top, real = os.path.realpath(config.root), os.path.realpath(path)
    return None if real == top or real.startswith(top.rstrip(os.sep) + os.sep) else real


def _is_bool(value: Any) -> str | None:
    return None if isinstance(value, bool) else "true or false"


def _is_path(value: Any) -> str | None:
    return None if isinstance(value, str) and value and "\x00" not in value else "a non-empty string (a path)"


def _is_paths(value: Any) -> str | None:
    if _is_path(value) is None or (isinstance(value, list) and value and all(_is_path(v) is None for v in value)):
        return None
    return "a path or a non-empty array of paths"


def _is_tools(value: Any) -> str | None:
    """A tools snapshot or a server's URL. Never a command line: the file comes with the repository (a clone, a pull
    request, and the hooks run on it), and a command in it would start any program for whoever runs ``check``."""
    if isinstance(value, str) and (value.startswith(("http://", "https://")) or _snapshot_path(value)):
        return None
    return "a tools snapshot (a .json path) or a server's http(s):// URL"


def _outside(value: str | list[str]) -> str | None:
    """The first path of ``value`` that is absolute or leaves the file's folder once its ``..`` are resolved, as
    written (a link on the way is :func:`_linked_out`'s), or None. A URL is no path."""
    for path in [value] if isinstance(value, str) else value:
        if path.startswith(("http://", "https://")):
            continue
        if os.path.isabs(path) or posixpath.normpath(path).split("/")[0] == "..":
            return path
    return None


def _snapshot_path(value: str) -> bool:
    return value.endswith(".json") and "://" not in value and not any(c.isspace() for c in value)


def _is_prefix(value: Any) -> str | None:
    from .naming import parse_prefix

    if not isinstance(value, str):
        return "a URI prefix such as a/b"
    try:
        parse_prefix(value)
    except ValueError as exc:
        return f"a URI prefix such as a/b ({exc})"
    return None


_CHECKS: dict[str, Callable[[Any], str | None]] = {
    "workflows": _is_paths,
    "out": _is_path,
    "evals-out": _is_path,
    "tools-from": _is_tools,
    "strict": _is_bool,
    "uri-prefix": _is_prefix,
    "skills-only": _is_bool,
    "workflow-tools": _is_bool,
}


def _tools(value: str, config: Config) -> str:
    """A tools snapshot (a ``.json`` path, no spaces, not a URL) is a path from the file's folder; a URL is used as
    written."""
    return config.path(value) if _snapshot_path(value) else value


# The keys that name paths, and the flag that may still name any path.
_PATH_KEYS = {"workflows": "PATH ...", "out": "--out", "evals-out": "--evals-out", "tools-from": "--tools-from"}
_OUTSIDE_HINT = (
    "the file comes with the repository (a clone, a pull request), so it may not decide where a build "
    "writes or what it reads outside it; a path elsewhere is given on the command line ({flag})"
)

_LINKED_HINT = (
    "the file comes with the repository, and so may a link in it: a build may not write or read outside it "
    "through one; name a folder inside the project, remove the link, or give the path on the command line ({flag})"
)

_HINTS = {
    "tools-from": "a server to start is given on the command line (--tools-from COMMAND), never in the file: "
    "the file comes with the repository, and a command in it would run for whoever builds"
}

_RESOLVE: dict[str, Callable[[Any, Config], Any]] = {
    "workflows": lambda v, c: [c.path(p) for p in ([v] if isinstance(v, str) else v)],
    "out": lambda v, c: c.path(v),
    "evals-out": lambda v, c: c.path(v),
    "tools-from": _tools,
}


def expects(key: str) -> str:
    """What ``key`` takes, in words (for the docs)."""
    return _CHECKS[key](None) or ""


def _type_name(value: Any) -> str:
    return {
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        str: "a string",
        list: "an array",
        dict: "a table",
    }.get(type(value), "a date or time")


def _describe(value: Any) -> str:
    if isinstance(value, str) and not value:
        return "an empty string"
    if isinstance(value, list) and not value:
        return "an empty array"
    return _type_name(value)


def _locate(text: str, key: str) -> tuple[int, int]:
    """Where ``key`` is set in the ``[tool.project-skill]`` table of ``text``, as (line, column): its line under the
    table's header, else a sub-table header for it, else any line that sets it (a dotted or inline form), else the
    header, else the first line. Each pattern is anchored and linear; the text is bounded."""
    table = rf"^[ \t]*\[[ \t]*tool[ \t]*\.[ \t]*([\"']?){re.escape(TABLE)}\1[ \t]*"
    name = rf"([\"']?){re.escape(key)}\2?[ \t]*"
    header = re.compile(table + r"\]", re.M).search(text)
    if header is not None:
        end = re.compile(r"^[ \t]*\[", re.M).search(text, header.end())
        m = re.compile(rf"^[ \t]*(){name}=", re.M).search(text, header.end(), end.start() if end else len(text))
        if m:
            return _line_col(text, m.start(2))
    m = re.compile(rf"{table}\.[ \t]*{name}[\].]", re.M).search(text)
    if m:
        return _line_col(text, m.start() + len(m.group(0)) - len(m.group(0).lstrip()))
    m = re.compile(rf"(?:^|[ \t.{{,])(){name}=", re.M).search(text)
    if m:
        return _line_col(text, m.start(2))
    if header is None:
        return 1, 1
    return _line_col(text, header.start() + len(header.group(0)) - len(header.group(0).lstrip()))


def _line_col(text: str, offset: int) -> tuple[int, int]:
    before = text[:offset]
    return before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1


# ------------------------------------------------------------------------------------------------------ the flags


def settle(args: Any, config: Config | None) -> None:
    """Give every flag of :data:`KEYS` that the command line left unset (None, or no paths) the file's value, else
    its default; the default paths are relative to the file's folder when there is a table. The evals folder left
    unset goes beside the output folder (:func:`evals_beside`)."""
    out_given = getattr(args, "out", None) is not None
    for key, dest in KEYS.items():
        if not hasattr(args, dest):
            continue
        given = getattr(args, dest)
        if given is not None and given != []:
            continue
        if config is not None and key in config.values:
            setattr(args, dest, config.values[key])
        elif config is not None and key in _RESOLVE and DEFAULTS[key] is not None:
            _default_stays_inside(key, config)
            setattr(args, dest, _RESOLVE[key](DEFAULTS[key], config))
        else:
            setattr(args, dest, DEFAULTS[key])
    if getattr(args, "evals_out", "") is None and getattr(args, "out", None):
        args.evals_out = evals_beside(args.out)
        if config is not None and not out_given:  # beside the file's out, so the file's too
            _default_stays_inside("evals-out", config, args.evals_out)


def evals_beside(out: str) -> str:
    """Where the eval cases go when nothing says: the folder beside ``out`` named as it, with a last ``skills`` made
    ``evals`` (``generated_skills`` -> ``generated_evals``), else ``-evals`` added (``gen`` -> ``gen-evals``)."""
    head, name = os.path.split(out.rstrip("/") or out)
    if name in ("", ".", ".."):
        head, name = os.path.split(os.path.abspath(out))
    name = name[: -len("skills")] + "evals" if name.endswith("skills") else f"{name}-evals"
    return Path(head, name).as_posix()


def _default_stays_inside(key: str, config: Config, path: str | None = None) -> None:
    """Raise :class:`UsageError` (``outside-project``, at the table) when the default path of ``key``, which is
    relative to the file's folder as the table's own paths are, leads out of that folder through a link. ``path``:
    that default as a path from the current folder, when it is not :data:`DEFAULTS`'s."""
    if path is not None:
        real = _leads_out(path, config) if config.contained else None
        linked = None if real is None else (path, real)
    else:
        linked = _linked_out(DEFAULTS[key], config) if config.contained else None
    if linked is not None:
        raise UsageError(
            error(
                Span(config.shown, *config.at),
                "outside-project",
                f"the default '{key}' ({printable_quote(linked[0])}, from the folder of {FILE_NAME}) leads out of "
                f"that folder through a link, to {printable_quote(linked[1][:200])}",
                _LINKED_HINT.format(flag=_PATH_KEYS[key]),
            )
        )


def workflows_folder(config: Config | None) -> str:
    """Where ``init`` writes a new workflow file: the first folder (not a ``.yaml`` file) of the table's
    ``workflows``, else ``workflows`` (in the file's folder when there is a table)."""
    if config is None:
        return DEFAULTS["workflows"][0]
    if "workflows" not in config.values:
        _default_stays_inside("workflows", config)
    paths = config.values.get("workflows") or _RESOLVE["workflows"](DEFAULTS["workflows"], config)
    return next((p for p in paths if not p.endswith((".yaml", ".yml"))), config.path(DEFAULTS["workflows"][0]))


def summary(config: Config | None) -> str:
    """The words a command's summary line ends with: which configuration file it read, if any."""
    return "" if config is None else f" (configuration: {config.shown})"
