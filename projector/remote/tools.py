"""Tools from a server or from a snapshot of it: ``project-skill tools SERVER`` and ``build|check --tools-from``.

``project-skill tools SERVER`` freezes a server's ``tools/list`` (every page, within :data:`MAX_PAGES` pages and
:data:`SNAPSHOT_LIMIT` bytes, the one bound of a snapshot: ``tools --out`` never writes one that ``--tools-from``
would refuse) into a tools snapshot, stable JSON for committing as ``tools.json``::

    {"tools": [{"name": ..., "title": ..., "description": ..., "inputSchema": {...}, "outputSchema": {...},
                "annotations": {...}, ...}, ...]}

Tools are sorted by name (a server that lists a name twice is refused); each tool's keys come in that fixed order,
then any others by name; every nested mapping has its keys sorted; indent 2, UTF-8, one trailing newline.

``--tools-from SOURCE`` takes each tool's description, input and output schema and annotations from SOURCE instead
of from the workflow file, so the gate warnings and the argument checks rest on what the server really declares.
SOURCE is a snapshot file (a path that exists and ends in ``.json``; read offline, without ``mcp``) or a server
(a stdio command line or an ``http(s)://`` URL). A live server's listing is written as snapshot bytes and read back
by the very code that reads a snapshot file, so the two can never be compared differently.

- A tool that a step calls but SOURCE lacks is an error (``unknown-tool`` at the step, raised as
  :class:`~projector.errors.LoadError`, every one at once). A tool that a step calls and the file does not list is
  taken from SOURCE, so a workflow file may name its tools and nothing else.
- The steps' arguments and field paths are then checked against SOURCE's schemas
  (:func:`projector.fit.check_steps`, as ``build`` checks the file's), and SOURCE's tool texts are held to the
  rules of a file's (:func:`projector.texts.tool_problems`): every problem is raised at once too.
- The Python builder's ``WorkflowBuilder.tools_from`` goes through this same code (:func:`merge_tools`); a parsed
  listing it is given is read by :func:`parse_listing`, as the snapshot it would be written as.
- Drift: a file's ``tools:`` entry that disagrees with SOURCE is a warning (``tool-mismatch``) at the declaration,
  one per differing field (``description``, ``input_schema``, ``output_schema``, ``annotations``), naming the
  paths inside it and both values; its hint says how to refresh the snapshot. ``--strict`` fails on it. Fields the
  file leaves out are not disagreements, and a field SOURCE leaves out (``annotations``, ``output_schema``) is
  taken from the file (:func:`projector.fit.fill_declared`), with the note ``tool-filled``. JSON Schema annotation keywords (``title``, ``description``,
  ``examples``, ``$comment``) and the default ``additionalProperties: true`` do not count when comparing schemas;
  values compare as YAML values (1 == 1.0).
- A snapshot that is not one (unreadable: ``io``; not bounded JSON, or a tool of the wrong shape:
  ``bad-snapshot``) is an error at ``file:line:col``.

The offline half (the snapshot, :func:`merge_tools`, the drift) is the core's, :mod:`projector.toolset`, and is
re-exported here; this module adds the live server, and ``mcp`` is imported only when a server is asked.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import Diagnostic, LoadError, Span
from ..fit import from_listing
from ..model import Tool, Workflow
from ..render import json_text
from ..toolset import (
    SNAPSHOT_FILE,
    SNAPSHOT_LIMIT,
    TOOL_KEYS,
    ToolSource,
    canonical_tool,
    drift,
    is_snapshot,
    merge_tools,
    parse_listing,
    parse_snapshot,
    read_snapshot,
    snapshot_bytes,
    wire_tool,
)
from ..toolset import _schema_core as _schema_core  # noqa: F401 - where the tests of the drift find it

if TYPE_CHECKING:
    from ..output import Build

MAX_PAGES = 1000
_MIB = SNAPSHOT_LIMIT // (1024 * 1024)
__all__ = [
    "SNAPSHOT_FILE",
    "SNAPSHOT_LIMIT",
    "TOOL_KEYS",
    "ToolSource",
    "canonical_tool",
    "drift",
    "is_snapshot",
    "merge_tools",
    "parse_listing",
    "parse_snapshot",
    "read_snapshot",
    "snapshot_bytes",
    "wire_tool",
    "MAX_PAGES",
    "server_tool",
    "fetch_snapshot",
    "list_server_tools",
    "load_tools_async",
    "load_tools",
    "tools_snapshot",
    "apply_tools_from_async",
    "apply_tools_from",
    "compile_with_tools",
]


def _source(spec: Any, label: str | None) -> ToolSource:
    if isinstance(spec, ToolSource):
        return spec
    return ToolSource(label or (spec if isinstance(spec, str) else type(spec).__name__))


# ------------------------------------------------------------------------------------------------------ the server


def server_tool(t: Any) -> Tool:
    """An ``mcp_types.Tool`` as a model :class:`~projector.model.Tool`."""
    return from_listing(t)


def _too_large(where: str, what: str) -> Exception:
    from .errors import ServerError

    return ServerError(
        "response-too-large",
        where,
        f"{what}, over {_MIB} MiB, the limit of a tools snapshot (what "
        "`tools --out` writes and `--tools-from` reads); the rest was not read, and nothing was written",
        "snapshot a server that lists fewer or smaller tools; a listing this large is not a server's tools",
    )


def _listed_twice(where: str, name: str) -> Exception:
    from ..errors import printable
    from .errors import ServerError

    return ServerError(
        "server-error",
        where,
        f"tools/list lists the tool '{printable(name[:80])}' twice; a client "
        "takes one of the two schemas and the server may run the other, so a step could be checked "
        "against what the tool does not receive; nothing was served or written",
        "a server's tool names are unique (MCP): rename or remove one of the two on the server",
    )


async def listed_tools(remote: Any) -> list[Any]:
    """Every page of ``tools/list`` on the open connection ``remote`` (a
    :class:`~projector.remote.client.RemoteSkills`), as ``mcp_types.Tool``, within :data:`MAX_PAGES` pages and
    :data:`SNAPSHOT_LIMIT` bytes: the tools kept are counted page by page, so a listing that never ends, or ends past
    the limit, is refused as soon as it passes it, naming the server (``remote.label``); so is a name listed twice
    (two schemas for one name: which one the server runs cannot be told). The one listing of a server's
    tools: :func:`fetch_snapshot` writes it, and ``serve --upstream`` (:mod:`projector.server.gateway`) serves it."""
    from .client import _describe
    from .errors import ServerError
    from .transport import too_deep, too_deep_message

    tools: list[Any] = []
    kept = 0  # characters of the tools' compact JSON so far: never more than the snapshot's bytes
    cursor: str | None = None
    seen: set[str] = set()
    names: set[str] = set()
    for page_no in range(1, MAX_PAGES + 1):
        try:
            page = await remote.client.list_tools(cursor=cursor)
        except Exception as exc:
            remote._tripped()  # the transport's refusal (too large, too deep), when that is why it failed
            if deep := too_deep(_describe(exc)):  # over HTTP: the SDK's parse error answered the request
                raise ServerError("server-error", remote.label, too_deep_message(deep)) from None
            raise ServerError(
                "server-error", remote.label, f"tools/list failed: {_describe(exc)}{remote.server_note()}"
            ) from None
        for t in page.tools:
            if t.name in names:
                raise _listed_twice(remote.label, t.name)
            names.add(t.name)
            tools.append(t)
            kept += len(json_text(wire_tool(t), indent=None, sort_keys=False))
        if kept > SNAPSHOT_LIMIT:
            raise _too_large(remote.label, f"tools/list passed {kept} bytes in {page_no} pages")
        cursor = page.next_cursor
        if cursor is None:
            return tools
        if cursor in seen:
            raise ServerError("server-error", remote.label, "tools/list repeated a cursor")
        seen.add(cursor)
    raise ServerError("server-error", remote.label, f"tools/list did not end within {MAX_PAGES} pages")


async def fetch_snapshot(server: Any, label: str | None = None, verbose: bool = False) -> bytes:
    """The snapshot bytes of every page of ``tools/list`` from ``server`` (a spec string or anything
    :class:`mcp.Client` takes), listed by :func:`listed_tools` (within :data:`MAX_PAGES` pages and
    :data:`SNAPSHOT_LIMIT` bytes, naming the server). A stdio server's stderr is shown only when it fails, or with
    ``verbose``."""
    from .client import connect

    async with connect(server, label, verbose=verbose) as remote:
        data = snapshot_bytes([wire_tool(t) for t in await listed_tools(remote)])
        if len(data) > SNAPSHOT_LIMIT:
            raise _too_large(remote.label, f"the tools snapshot of tools/list takes {len(data)} bytes")
        return data


async def list_server_tools(server: Any, label: str | None = None) -> dict[str, Tool]:
    """Every tool of ``server``, read back from its snapshot bytes exactly as a snapshot file is read."""
    label = _source(server, label).name
    return parse_snapshot(await fetch_snapshot(server, label), label, code="server-error")


async def load_tools_async(spec: Any, label: str | None = None) -> tuple[dict[str, Tool], ToolSource]:
    """The tools of ``spec`` (a snapshot path, a server spec or a server object), and how to name it."""
    if is_snapshot(spec):
        return read_snapshot(spec), ToolSource(Path(spec).as_posix(), snapshot=True)
    if isinstance(spec, str) and spec.endswith(".json") and not any(c.isspace() for c in spec):
        raise LoadError(
            Diagnostic(
                Span(spec),
                "error",
                "io",
                "the tools snapshot does not exist",
                f"write it with: project-skill tools SERVER --out {shlex.quote(spec)}",
            )
        )
    source = _source(spec, label)
    return await list_server_tools(spec, source.name), source


def load_tools(spec: Any, label: str | None = None) -> tuple[dict[str, Tool], ToolSource]:
    """The synchronous :func:`load_tools_async`; a snapshot is read without an event loop, and without ``mcp``."""
    if is_snapshot(spec):
        return read_snapshot(spec), ToolSource(Path(spec).as_posix(), snapshot=True)
    import anyio

    return anyio.run(load_tools_async, spec, label)


def tools_snapshot(server: Any, label: str | None = None, verbose: bool = False) -> bytes:
    """``project-skill tools SERVER``: the snapshot bytes (checked by reading them back, as ``--tools-from`` will)."""
    import anyio

    data = anyio.run(fetch_snapshot, server, label, verbose)
    parse_snapshot(data, label or str(server), code="server-error")
    return data


async def apply_tools_from_async(
    workflows: list[Workflow], server: Any, label: str | None = None
) -> tuple[list[Workflow], list[Diagnostic]]:
    tools, source = await load_tools_async(server, label)
    return merge_tools(workflows, tools, source)


def apply_tools_from(
    workflows: list[Workflow], server: Any, label: str | None = None
) -> tuple[list[Workflow], list[Diagnostic]]:
    """The synchronous :func:`apply_tools_from_async`: ``server`` is a snapshot path, a server spec or a server
    object."""
    tools, source = load_tools(server, label)
    return merge_tools(workflows, tools, source)


def compile_with_tools(
    paths: list[str],
    server: Any,
    prefix: tuple[str, ...] = (),
    *,
    skills_only: bool = False,
    workflow_tools: bool = False,
) -> Build:
    """``project-skill build|check --tools-from SERVER``: the workflows under ``paths``, loaded with their tools
    left to ``server`` (:func:`projector.validate.validate`), fitted to its tools (:func:`merge_tools`) and
    compiled; the drift warnings join the build's diagnostics, in order. Raises :class:`LoadError` for a workflow
    that does not load or does not fit."""
    from ..load import load_all
    from ..output import compile_workflows

    workflows, drift = apply_tools_from(load_all(paths, tools_from_server=True), server)
    build = compile_workflows(workflows, prefix, skills_only=skills_only, workflow_tools=workflow_tools)
    build.diagnostics = sorted([*drift, *build.diagnostics], key=Diagnostic.sort_key)
    return build
