"""``project-skill serve MODULE:ATTR``: find the author's own server, as ``uvicorn module:app`` and
``fastmcp run server.py:mcp`` find theirs.

TARGET is ``MODULE:ATTR`` (``MODULE`` a dotted module name, ``ATTR`` a dotted attribute path inside it) or
``path/to/file.py:ATTR``. The attribute is a server (mcp's ``MCPServer`` or a ``fastmcp.FastMCP``) or a factory that
takes no required arguments and returns one (a coroutine function is awaited). Before the import, the current
directory goes first on ``sys.path``, as uvicorn does; for the file form, the file's own directory too, as fastmcp
does.

Every way this fails is a :class:`~projector.errors.UsageError` naming the target and the problem (the command
exits 2): a target that is not ``MODULE:ATTR``, a module that cannot be found or whose import raises, a missing
attribute, an object that is neither a server nor a no-argument factory, a factory that raises or returns something
else. The target's own exception, whatever it is (``SystemExit`` and any other ``BaseException`` too), is quoted
(type and message), never printed as a traceback; only ``KeyboardInterrupt`` goes on, as the Ctrl-C it is (exit 130).

While the target's own code runs (its import, its factory), its standard output goes to standard error, at the file
descriptor too: on stdio, standard output is the JSON-RPC stream, and a ``print()`` there would break it.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import UsageError, suggest

USAGE = (
    "MODULE:ATTR or path/to/file.py:ATTR (a server object, mcp's MCPServer or a fastmcp.FastMCP, or a factory "
    "with no required arguments that returns one)"
)


def _fail(target: str, problem: str) -> UsageError:
    return UsageError(f"{target}: {problem}")


def _raised(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return type(exc).__name__ + (f": {text[0]}" if text else "")


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """Standard output goes to standard error inside: ``sys.stdout``, and file descriptor 1 when there is one (so a
    C extension's or a child process's output goes too); both are put back after."""
    for stream in (sys.stdout, sys.__stdout__):
        with contextlib.suppress(Exception):
            stream.flush()  # type: ignore[union-attr]
    try:
        saved: int | None = os.dup(1)
    except OSError:
        saved = None
    try:
        if saved is not None:
            try:
                os.dup2(2, 1)
            except OSError:
                os.close(saved)
                saved = None
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        for stream in (sys.stderr, sys.__stdout__):
            with contextlib.suppress(Exception):
                stream.flush()  # type: ignore[union-attr]
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)


def split(target: str) -> tuple[str, str]:
    """``MODULE:ATTR`` as its two halves; a UsageError for anything else."""
    module, sep, attr = target.rpartition(":")
    if not sep or not module or not attr or not all(part.isidentifier() for part in attr.split(".")):
        raise _fail(target, f"expected {USAGE}")
    return module, attr


def _is_file(module: str) -> bool:
    return module.endswith(".py") or "/" in module or os.sep in module


def _on_path(directory: str) -> None:
    if directory not in sys.path:
        sys.path.insert(0, directory)


def import_target(target: str, module: str) -> ModuleType:
    """Import ``module`` (a dotted name, or a ``.py`` file), with the current directory first on ``sys.path``."""
    _on_path(os.getcwd())
    if _is_file(module):
        path = Path(module)
        if not path.is_file():
            raise _fail(target, f"no such file: {module}")
        _on_path(str(path.resolve().parent))
        name = path.stem if path.stem.isidentifier() and path.stem not in sys.modules else "_project_skill_target"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise _fail(target, f"{module} cannot be imported as Python")
        loaded = importlib.util.module_from_spec(spec)
        sys.modules[name] = loaded
        try:
            spec.loader.exec_module(loaded)
        except BaseException as exc:
            sys.modules.pop(name, None)
            if isinstance(exc, KeyboardInterrupt):
                raise
            raise _fail(target, f"importing {module} raised {_raised(exc)}") from None
        return loaded
    if not all(part.isidentifier() for part in module.split(".")):
        raise _fail(target, f"'{module}' is not a module name; expected {USAGE}")
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and (module == exc.name or module.startswith(exc.name + ".")):
            raise _fail(
                target,
                f"no module named '{exc.name}' (looked in the current directory, {os.getcwd()}, and on sys.path)",
            ) from None
        raise _fail(target, f"importing {module} raised {_raised(exc)}") from None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        raise _fail(target, f"importing {module} raised {_raised(exc)}") from None


def _attribute(target: str, loaded: ModuleType, module: str, attr: str) -> Any:
    obj: Any = loaded
    where = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            names = [n for n in dir(obj) if not n.startswith("_")]
            close = suggest(part, names)
            raise _fail(
                target,
                f"{'module ' if where == module else ''}{where} has no attribute '{part}'"
                + (f"; {close}" if close else ""),
            )
        obj = getattr(obj, part)
        where = f"{where}:{part}" if where == module else f"{where}.{part}"
    return obj


def _framework(obj: Any) -> str | None:
    from .adapters import detect

    adapter = detect(obj)
    return adapter.name if adapter is not None else None


def _kind(obj: Any) -> str:
    kind = type(obj)
    return f"{kind.__module__}.{kind.__qualname__}" if kind.__module__ != "builtins" else kind.__qualname__


def _required(fn: Any) -> list[str] | None:
    """The names of ``fn``'s required parameters (None when its signature cannot be read)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    return [
        p.name
        for p in sig.parameters.values()
        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]


def load_server(target: str) -> tuple[Any, str]:
    """The server TARGET names, and its framework's name (:mod:`projector.server.adapters`). A UsageError
    otherwise. What the target prints meanwhile goes to standard error."""
    with _stdout_to_stderr():
        return _load_server(target)


def _load_server(target: str) -> tuple[Any, str]:
    module, attr = split(target)
    obj = _attribute(target, import_target(target, module), module, attr)
    framework = _framework(obj)
    if framework is not None:
        return obj, framework
    if not callable(obj):
        raise _fail(
            target,
            f"{module}:{attr} is of type {_kind(obj)}; expected a server (mcp's MCPServer or a "
            f"fastmcp.FastMCP) or a factory with no required arguments that returns one",
        )
    required = _required(obj)
    if required:
        raise _fail(
            target,
            f"{module}:{attr} is a factory with required arguments ({', '.join(required)}); serve "
            f"calls it with none. Write a module whose factory calls it, for example "
            f"`def make(): return {attr.rpartition('.')[2]}(...)`, and serve that module's make",
        )
    try:
        made = obj()
        if inspect.isawaitable(made):
            import anyio

            async def wait() -> Any:
                return await made

            made = anyio.run(wait)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        raise _fail(target, f"calling {module}:{attr}() raised {_raised(exc)}") from None
    framework = _framework(made)
    if framework is None:
        raise _fail(
            target,
            f"{module}:{attr}() returned a value of type {_kind(made)}, not a server (mcp's MCPServer or a "
            f"fastmcp.FastMCP)",
        )
    return made, framework
