"""The frameworks projector serves on, by name: the one place that names them.

Each framework is an adapter (:class:`~projector.server.adapters.base.Adapter`) in a module of its own, listed once in
:data:`REGISTRY`. Every ``--framework`` choice (``project-skill serve``, ``project-skill matrix``,
``python -m projector.matrix.serve``), the demo server, ``attach()``'s detection of a server object and the target
loader of ``project-skill serve MODULE:ATTR`` come from here, so no other module compares framework names.

An adapter module is imported only when it is needed: by name (:func:`get`), or to recognise a server object
(:func:`for_server`), and then only once the framework itself is imported (a framework's server objects cannot exist
before that). So ``fastmcp`` stays an optional extra: nothing imports it unless a FastMCP server is asked for.

A third framework is one new adapter module (a subclass of :class:`~projector.server.adapters.base.Adapter` exposed
as ``ADAPTER``), its line in :data:`REGISTRY`, and its extra in ``pyproject.toml``.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .base import Adapter


@dataclass(frozen=True)
class Entry:
    """One framework: its ``--framework`` name, the adapter module (imported only when needed), the framework's
    top-level import name, how messages name it and its server class, and the ``project-skill`` extra that installs
    it (None: always installed)."""

    name: str
    module: str
    requires: str
    label: str
    a_server: str
    server_class: str
    extra: str | None = None

    def kind(self) -> str:
        """``a FastMCP server (fastmcp.FastMCP, with the project-skill[fastmcp] extra)``: what attach() takes."""
        extra = f", with the project-skill[{self.extra}] extra" if self.extra else ""
        return f"{self.a_server} ({self.server_class}{extra})"

    def install(self) -> str:
        return f"pip install 'project-skill[{self.extra}]'" if self.extra else "pip install project-skill"


# The order is the order of every --framework choice; the first is the default.
REGISTRY: dict[str, Entry] = {
    e.name: e
    for e in (
        Entry(
            "mcp",
            "projector.server.adapters.mcp",
            requires="mcp",
            label="mcp's MCPServer",
            a_server="an mcp MCPServer",
            server_class="mcp.server.mcpserver.MCPServer",
        ),
        Entry(
            "fastmcp",
            "projector.server.adapters.fastmcp",
            requires="fastmcp",
            label="FastMCP",
            a_server="a FastMCP server",
            server_class="fastmcp.FastMCP",
            extra="fastmcp",
        ),
    )
}
DEFAULT = next(iter(REGISTRY))


def names() -> tuple[str, ...]:
    """Every framework's name, in :data:`REGISTRY` order: the ``--framework`` choices."""
    return tuple(REGISTRY)


def missing(name: str) -> str | None:
    """Why the framework ``name`` cannot be used here (``needs FastMCP: pip install ...``), or None when it can."""
    entry = REGISTRY[name]
    if importlib.util.find_spec(entry.requires) is not None:
        return None
    return f"needs {entry.label}: {entry.install()}"


def get(name: str) -> Adapter:
    """The adapter of the framework ``name`` (a KeyError for a name not in :data:`REGISTRY`)."""
    adapter: Adapter = importlib.import_module(REGISTRY[name].module).ADAPTER
    return adapter


def detect(obj: Any) -> Adapter | None:
    """The adapter whose framework ``obj`` is a server of, or None. Only frameworks already imported are asked."""
    for entry in REGISTRY.values():
        if entry.requires in sys.modules:
            adapter = get(entry.name)
            if adapter.recognises(obj):
                return adapter
    return None


def for_server(obj: Any) -> Adapter:
    """:func:`detect`, or a TypeError naming every framework ``attach()`` takes."""
    adapter = detect(obj)
    if adapter is not None:
        return adapter
    kinds = [e.kind() for e in REGISTRY.values()]
    kind = type(obj)
    takes = " or ".join([", ".join(kinds[:-1]), kinds[-1]] if len(kinds) > 1 else kinds)
    raise TypeError(f"attach() takes {takes}, not {kind.__module__}.{kind.__qualname__}")
