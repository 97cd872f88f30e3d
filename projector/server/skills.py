"""The SEP-2640 skills extension: serve a ``generated_skills/`` tree from its committed ``skills.json``.

The tree is read once, when the extension is built (:class:`~projector.server.tree.SkillTree`): ``skills.json`` and
every file it lists, into memory, each file's size and sha256 checked against the manifest and each SKILL.md's
frontmatter against its entry, by the wire's rules (:mod:`projector.sep2640`), or nothing is served
(:class:`~projector.server.errors.AttachError`). From then on every request is answered from memory, so the bytes
served are exactly the bytes digested, and no request can make the server open a file: traversal, foreign URIs and
files on disk that the manifest does not list are all simply unknown (``-32602``).

What is served (SEP-2640, extension ``io.modelcontextprotocol/skills``, settings ``{"directoryRead": true}``):

- ``skills/list``: the manifest's entries in manifest order, paged by an opaque cursor; ``ttlMs`` and ``cacheScope``.
- ``skills/get``: one entry; ``-32602`` for any URI that is not a listed SKILL.md.
- ``resources/list``: each SKILL.md, ``text/markdown``, with name and description from its frontmatter.
- ``resources/read``: SKILL.md and every supporting file. Supporting files are read through resource templates (one
  per file type, so each file gets its own mimeType) and are not listed. Beside the ``skill://{+path}`` templates
  the server lists level-1 ones (``skill://{p1}/{p2}/{p3}.md``), which FastMCP's proxy and ``mount()`` can match.
- ``resources/directory/read``: the children of a skill directory or of one of its sub-directories, directories with
  mimeType ``inode/directory``; with the same ``ttlMs`` and ``cacheScope`` as ``skills/list``.
"""

from __future__ import annotations

import base64
import binascii
import copy
import inspect
import json
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Sequence

from mcp.server.caching import CacheHint
from mcp.server.context import ServerRequestContext
from mcp.server.extension import Extension, MethodBinding, ResourceBinding
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.server.mcpserver.resources import FunctionResource
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, RequestParams

from ..sep2640 import EXTENSION_ID, SCHEME
from .errors import AttachError

# The tree is framework-free (projector.server.tree); its names are here too, for the adapters and the skill tools.
from .tree import DIRECTORY_MIME, MIME_TYPES, Skill, SkillFile, SkillTree, mime_type

SKILLS_EXTENSION = EXTENSION_ID  # the id this extension declares (projector.sep2640 owns it)
DEFAULT_PAGE_SIZE = 50
DEFAULT_CACHE = CacheHint(ttl_ms=0, scope="private")
TEMPLATE_DESCRIPTION = "A supporting file of a served skill: listed in skills/list, read here, not in resources/list."

# The tree this request's caller is served (projector.server.bound): (the whole tree, the caller's), set by the
# adapter for the request; unset, or set for another tree, the whole tree is served.
CALLER_TREE: ContextVar[tuple[SkillTree, SkillTree] | None] = ContextVar("projector_caller_tree", default=None)


def served_tree(tree: SkillTree) -> SkillTree:
    """``tree`` as this request's caller is served it (:data:`CALLER_TREE`)."""
    caller = CALLER_TREE.get()
    return caller[1] if caller is not None and caller[0] is tree else tree


# ---------------------------------------------------------------------------------------------------------- cursors


def encode_cursor(scope: str, last: str) -> str:
    """An opaque cursor: which listing it belongs to and the last URI sent. Clients must not parse it."""
    raw = json.dumps([scope, last], separators=(",", ":")).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(cursor: str, scope: str) -> str:
    """The last URI sent, or ``-32602`` when the cursor is not one this server made for this listing."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        value = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")).decode("utf-8"))
        if (
            isinstance(value, list)
            and len(value) == 2
            and value[0] == scope
            and isinstance(value[1], str)
            and encode_cursor(scope, value[1]) == cursor
        ):
            return value[1]
    except (UnicodeError, ValueError, binascii.Error):
        pass
    raise MCPError(code=INVALID_PARAMS, message="Invalid cursor", data={"cursor": cursor})


def _page(
    items: Sequence[Any], positions: dict[str, int], key: Any, cursor: str | None, scope: str, size: int
) -> tuple[list[Any], str | None]:
    start = 0
    if cursor is not None:
        last = decode_cursor(cursor, scope)
        index = positions.get(last)
        if index is None:
            raise MCPError(
                code=INVALID_PARAMS, message="Invalid cursor: it names nothing in this listing", data={"cursor": cursor}
            )
        start = index + 1
    page = list(items[start : start + size])
    more = start + size < len(items)
    return page, (encode_cursor(scope, key(page[-1])) if more and page else None)


# ---------------------------------------------------------------------------------------------------- the extension


class SkillsListParams(RequestParams):
    cursor: str | None = None


class SkillsGetParams(RequestParams):
    uri: str


class DirectoryReadParams(RequestParams):
    uri: str
    cursor: str | None = None


def _invalid(message: str, uri: str) -> MCPError:
    return MCPError(code=INVALID_PARAMS, message=message, data={"uri": uri})


class SkillsExtension(Extension):
    """SEP-2640 skills for an :class:`~mcp.server.mcpserver.MCPServer`.

    Pass it at construction (``MCPServer(..., extensions=[ext])``) or let :func:`projector.server.attach` add it.
    ``skills/list`` pages hold ``page_size`` entries; ``cache`` sets ``ttlMs`` and ``cacheScope`` on
    ``skills/list``, ``skills/get`` and ``resources/directory/read`` results.
    """

    identifier = SKILLS_EXTENSION

    def __init__(
        self,
        tree: SkillTree | str | Path = "generated_skills",
        *,
        page_size: int = DEFAULT_PAGE_SIZE,
        cache: CacheHint = DEFAULT_CACHE,
    ):
        if not isinstance(page_size, int) or page_size < 1:
            raise AttachError(f"the page size must be a positive integer, not {page_size!r}")
        self.tree = tree if isinstance(tree, SkillTree) else SkillTree.load(tree)
        self.page_size = page_size
        self.cache = cache

    def settings(self) -> dict[str, Any]:
        return {"directoryRead": True}

    def methods(self) -> list[MethodBinding]:
        return [
            MethodBinding("skills/list", SkillsListParams, self._list),
            MethodBinding("skills/get", SkillsGetParams, self._get),
            MethodBinding("resources/directory/read", DirectoryReadParams, self._directory_read),
        ]

    def resources(self) -> list[ResourceBinding]:
        """Each SKILL.md as a listed resource. Supporting files are served by :meth:`templates` instead."""
        out = []
        for s in self.tree.skills:
            text = s.skill_md.text
            out.append(
                ResourceBinding(
                    FunctionResource.from_function(
                        fn=lambda text=text: text,
                        uri=s.uri,
                        name=s.frontmatter["name"],
                        description=s.frontmatter["description"],
                        mime_type="text/markdown",
                    )
                )
            )
        return out

    def templates(self) -> list[tuple[str, str, str, Any]]:
        """``(uri_template, name, mime_type, fn)`` for the supporting files, in two forms.

        A template has one mimeType for every URI it matches, so files are grouped by suffix: ``skill://{+path}.md``
        serves ``text/markdown``, and so on; a catch-all ``skill://{+path}`` (``text/plain``) comes last and serves
        the files whose type has no template of its own. These come first, so MCPServer routes every read through
        them (the SDK rejects ``..`` segments, absolute paths and NUL in ``path`` before the function runs).

        Then the same groups once more as :meth:`SkillTree.segment_templates`, one per file type and path depth
        (``skill://{p1}/{p2}/{p3}.md``): RFC 6570 level 1, which every matcher knows, FastMCP's included (it knows
        ``{var}`` and ``{var*}``, not ``{+var}``). FastMCP's proxy and ``mount()`` forward a skill only when each of
        its files matches a template the backend lists. Each function looks the URI up in memory; anything not in
        the manifest, or not of the template's type, is unknown.
        """
        out = [
            (f"{SCHEME}{{+path}}{suffix}", f"skill-file{suffix.replace('.', '-')}", mime, self._path_reader(suffix))
            for suffix, mime in self.tree.typed.items()
        ]
        out.append((SCHEME + "{+path}", "skill-file", "text/plain", self._path_reader("")))
        out += [
            (t, name, mime, self._segment_reader(suffix, depth))
            for t, name, mime, suffix, depth in self.tree.segment_templates()
        ]
        return out

    def _path_reader(self, suffix: str) -> Any:
        def read(path: str) -> str | bytes:
            uri = SCHEME + path + suffix
            f = self.tree.template_file(uri, suffix)
            if f is None:
                raise ResourceNotFoundError(f"Unknown resource: {uri}")
            return f.content

        return read

    def _segment_reader(self, suffix: str, depth: int) -> Any:
        names = [f"p{i}" for i in range(1, depth + 1)]

        def read(**segments: str) -> str | bytes:
            parts = [segments[n] for n in names]
            uri = SCHEME + "/".join(parts) + suffix
            # a segment is decoded by the matcher: one holding "/" (sent as %2F) names no file of ours
            f = None if any(not p or "/" in p for p in parts) else self.tree.template_file(uri, suffix)
            if f is None:
                raise ResourceNotFoundError(f"Unknown resource: {uri}")
            return f.content

        # MCPServer wants the template's variables as the function's parameters (and pydantic, their types)
        read.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, annotation=str) for n in names]
        )
        read.__annotations__ = {n: str for n in names}
        read.__name__ = f"read_skill_file_{depth}"
        return read

    def _stamp(self, result: dict[str, Any]) -> dict[str, Any]:
        result["ttlMs"] = self.cache.ttl_ms
        result["cacheScope"] = self.cache.scope
        return result

    async def _list(self, ctx: ServerRequestContext[Any, Any], params: SkillsListParams) -> dict[str, Any]:
        tree = served_tree(self.tree)
        page, nxt = _page(
            tree.skills, tree.positions["skills/list"], lambda s: s.uri, params.cursor, "skills/list", self.page_size
        )
        result: dict[str, Any] = {"skills": [copy.deepcopy(s.entry) for s in page]}
        if nxt is not None:
            result["nextCursor"] = nxt
        return self._stamp(result)

    async def _get(self, ctx: ServerRequestContext[Any, Any], params: SkillsGetParams) -> dict[str, Any]:
        skill = served_tree(self.tree).skill(params.uri)
        if skill is None:
            raise _invalid(f"Unknown skill: {params.uri}", params.uri)
        return self._stamp({"skill": copy.deepcopy(skill.entry)})

    async def _directory_read(self, ctx: ServerRequestContext[Any, Any], params: DirectoryReadParams) -> dict[str, Any]:
        uri = params.uri
        tree = served_tree(self.tree)
        key = uri if uri in tree.directories or not uri.endswith("/") else uri.rstrip("/")
        kids = tree.directories.get(key)
        if kids is None:
            what = "a file, not a directory" if uri in tree.files else "not a skill directory this server serves"
            raise _invalid(f"Not a directory: {uri} is {what}", uri)
        page, nxt = _page(
            kids,
            tree.positions["dir:" + key],
            lambda c: c["uri"],
            params.cursor,
            "dir:" + uri.rstrip("/"),
            self.page_size,
        )
        result: dict[str, Any] = {"resources": [dict(c) for c in page]}
        if nxt is not None:
            result["nextCursor"] = nxt
        # The SEP makes only skills/list and skills/get cacheable, but the 2026-07-28 clients (the TypeScript SDK v2,
        # the Inspector in its modern mode) require both fields on every directory page too: the same values.
        return self._stamp(result)


def legacy_extensions_middleware(identifier: str, settings: dict[str, Any]) -> Any:
    """Show the extension to handshake-era clients too.

    mcp 2.3 advertises ``capabilities.extensions`` on ``server/discover`` (protocol 2026-07-28) but sieves it out of
    the ``initialize`` result, whose 2025-11-25 schema has no such field. This middleware puts it back, so a client
    on the older handshake still sees ``io.modelcontextprotocol/skills``.
    """

    async def middleware(ctx: Any, call_next: Any) -> Any:
        result = await call_next(ctx)
        if ctx.method == "initialize" and isinstance(result, dict):
            caps = dict(result.get("capabilities") or {})
            exts = dict(caps.get("extensions") or {})
            exts.setdefault(identifier, dict(settings))
            caps["extensions"] = exts
            result = {**result, "capabilities": caps}
        return result

    middleware.projector_legacy_extension = identifier  # type: ignore[attr-defined]
    return middleware


__all__ = [
    "CALLER_TREE",
    "DEFAULT_CACHE",
    "DEFAULT_PAGE_SIZE",
    "DIRECTORY_MIME",
    "MIME_TYPES",
    "SKILLS_EXTENSION",
    "TEMPLATE_DESCRIPTION",
    "DirectoryReadParams",
    "Skill",
    "SkillFile",
    "SkillTree",
    "SkillsExtension",
    "SkillsGetParams",
    "SkillsListParams",
    "decode_cursor",
    "encode_cursor",
    "legacy_extensions_middleware",
    "mime_type",
    "served_tree",
]
