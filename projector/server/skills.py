"""The SEP-2640 skills extension: serve a ``generated_skills/`` tree from its committed ``skills.json``.

The tree is read once, when the extension is built: ``skills.json`` and every file it lists, into memory. Each file's
size and sha256 must equal the manifest, or nothing is served (:class:`~projector.server.errors.AttachError`). From then
on every request is answered from memory, so the bytes served are exactly the bytes digested, and no request can make
the server open a file: traversal, foreign URIs and files on disk that the manifest does not list are all simply
unknown (``-32602``).

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
import hashlib
import inspect
import json
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Sequence

from mcp.server.caching import CacheHint
from mcp.server.context import ServerRequestContext
from mcp.server.extension import Extension, MethodBinding, ResourceBinding
from mcp.server.mcpserver.exceptions import ResourceNotFoundError
from mcp.server.mcpserver.resources import FunctionResource
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, RequestParams

from ..bounded import BadJSON, Unreadable, loads, read_regular
from ..bundle import INDEX_FILE, MAX_BYTES, MAX_INDEX_BYTES, parse_frontmatter
from ..naming import NAME_RULE, RESERVED, RESERVED_WORDS, SEGMENT_RULE
from ..errors import plural
from .errors import AttachError, serve_error

SKILLS_EXTENSION = "io.modelcontextprotocol/skills"
DIRECTORY_MIME = "inode/directory"
SCHEME = "skill://"
SKILL_FILE = "SKILL.md"
DEFAULT_PAGE_SIZE = 50
DEFAULT_CACHE = CacheHint(ttl_ms=0, scope="private")
TEMPLATE_DESCRIPTION = "A supporting file of a served skill: listed in skills/list, read here, not in resources/list."

# By file suffix. A file whose suffix is not here is text/plain when it is UTF-8, else application/octet-stream.
MIME_TYPES = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".txt": "text/plain",
    ".json": "application/json",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".toml": "application/toml",
    ".csv": "text/csv",
    ".html": "text/html",
    ".xml": "application/xml",
    ".py": "text/x-python",
    ".sh": "text/x-shellscript",
    ".js": "text/javascript",
    ".ts": "text/typescript",
    ".sql": "application/sql",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".svg": "image/svg+xml",
    ".pdf": "application/pdf",
}


def _decode(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def mime_type(path: str, data: bytes) -> str:
    suffix = PurePosixPath(path).suffix.lower()
    if suffix in MIME_TYPES:
        return MIME_TYPES[suffix]
    return "text/plain" if _decode(data) is not None else "application/octet-stream"


@dataclass(frozen=True)
class SkillFile:
    uri: str
    rel: str  # the path inside the skill directory, e.g. references/tools.md
    data: bytes
    mime_type: str

    @property
    def text(self) -> str | None:
        """The file as text when it is UTF-8 (served as ``text``), else None (served as a base64 ``blob``)."""
        return _decode(self.data)

    @property
    def content(self) -> str | bytes:
        text = self.text
        return self.data if text is None else text


@dataclass(frozen=True)
class Skill:
    path: str  # the skill path: the directory under the tree root, and the URI authority+path (a/b/name)
    entry: dict[str, Any]  # the manifest entry, exactly as committed
    files: tuple[SkillFile, ...]  # in manifest order; SKILL.md is one of them

    @property
    def uri(self) -> str:
        return self.entry["uri"]

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]

    @property
    def frontmatter(self) -> dict[str, Any]:
        return self.entry["frontmatter"]

    @property
    def skill_md(self) -> SkillFile:
        return next(f for f in self.files if f.rel == SKILL_FILE)

    @property
    def directory(self) -> str:
        return SCHEME + self.path


# The deepest supporting file that gets a level-1 template of its own (one ``{pN}`` per segment). A verifying client
# refuses a URI of more segments (projector.remote.verify.MAX_URI_SEGMENTS), and mcp's template parser refuses a
# template of more than 256 variables, so a hand-made deeper tree must not stop the server from starting.
MAX_TEMPLATE_DEPTH = 64


@dataclass(frozen=True)
class SkillTree:
    """A verified skills tree, held in memory."""

    root: str  # for messages only
    skills: tuple[Skill, ...]
    files: dict[str, SkillFile] = field(repr=False)  # every served file, by URI
    directories: dict[str, tuple[dict[str, str], ...]] = field(repr=False)  # directory URI -> children
    by_uri: dict[str, Skill] = field(init=False, repr=False, compare=False)
    # listing -> {key: position}, so that a cursor is found in O(1): the skills, and each directory
    positions: dict[str, dict[str, int]] = field(init=False, repr=False, compare=False)
    # a file suffix, as written -> its mimeType: the file types that get resource templates of their own
    typed: dict[str, str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "by_uri", {s.uri: s for s in self.skills})
        typed = {}
        for f in self.files.values():
            suffix = PurePosixPath(f.rel).suffix
            if suffix.lower() in MIME_TYPES:
                typed[suffix] = MIME_TYPES[suffix.lower()]
        object.__setattr__(self, "typed", dict(sorted(typed.items())))
        positions = {"skills/list": {s.uri: i for i, s in enumerate(self.skills)}}
        for uri, kids in self.directories.items():
            positions["dir:" + uri] = {c["uri"]: i for i, c in enumerate(kids)}
        object.__setattr__(self, "positions", positions)

    def skill(self, uri: str) -> Skill | None:
        return self.by_uri.get(uri)

    def segment_templates(self) -> list[tuple[str, str, str, str, int]]:
        """``(uri_template, name, mime_type, suffix, depth)``: a level-1 template per file type and per depth (the
        number of segments after ``skill://``) that a supporting file of the tree has; typed ones first, then the
        catch-all of each depth (``text/plain``). The same list on MCPServer and on FastMCP (see
        :meth:`SkillsExtension.templates`)."""
        typed = self.typed
        wanted: set[tuple[str, int]] = set()
        for f in self.files.values():
            if f.rel == SKILL_FILE:
                continue  # a listed resource of its own
            suffix = PurePosixPath(f.rel).suffix
            depth = f.uri[len(SCHEME):].count("/") + 1
            if depth <= MAX_TEMPLATE_DEPTH:  # deeper files stay readable through the {+path} templates only
                wanted.add((suffix if suffix in typed else "", depth))
        out = []
        for suffix, depth in sorted(wanted, key=lambda w: (w[0] == "", w[0], w[1])):
            segments = "/".join(f"{{p{i}}}" for i in range(1, depth + 1))
            out.append((f"{SCHEME}{segments}{suffix}", f"skill-file{suffix.replace('.', '-')}-{depth}",
                        typed.get(suffix, "text/plain"), suffix, depth))
        return out

    def template_file(self, uri: str, suffix: str) -> SkillFile | None:
        """The file a template of type ``suffix`` (``""``: the catch-all) serves at ``uri``, or None. The catch-all
        serves only the files that no typed template matches, so a file has one mimeType."""
        f = self.files.get(uri)
        if f is None or (not suffix and PurePosixPath(f.rel).suffix in self.typed):
            return None
        return f

    @classmethod
    def load(cls, root: str | Path) -> SkillTree:
        """Read ``root/skills.json`` and every file it lists; raise :class:`AttachError` on any mismatch."""
        root_path = Path(root)
        index_path = root_path / INDEX_FILE
        where = index_path.as_posix()
        try:
            raw = read_regular(index_path, MAX_INDEX_BYTES)
        except Unreadable as exc:
            raise serve_error(where, "no-index", f"cannot read the skills index: {exc}",
                              "point --skills at a folder written by `project-skill build`") from None
        try:
            manifest = loads(raw)
        except BadJSON as exc:
            raise serve_error(where, "bad-index", f"the skills index is not valid JSON: {exc}") from None
        if not isinstance(manifest, dict) or not isinstance(manifest.get("skills"), list):
            raise serve_error(where, "bad-index", "the skills index must be an object with a 'skills' array")
        real_root = root_path.resolve()
        skills: list[Skill] = []
        uris: set[str] = set()
        files: dict[str, SkillFile] = {}
        problems = []
        for i, entry in enumerate(manifest["skills"]):
            try:
                skill = _load_skill(real_root, entry, f"{where}: skills[{i}]")
            except AttachError as exc:
                problems.extend(exc.diagnostics)
                continue
            if skill.uri in uris:
                problems.extend(serve_error(where, "duplicate-skill", f"{skill.uri} is listed twice").diagnostics)
                continue
            for f in skill.files:
                if f.uri in files:
                    problems.extend(serve_error(where, "duplicate-file", f"{f.uri} belongs to two skills").diagnostics)
                files[f.uri] = f
            skills.append(skill)
            uris.add(skill.uri)
        if problems:
            raise AttachError(problems)
        return cls(root_path.as_posix(), tuple(skills), files, _directories(skills))


def _check_rel(rel: str) -> bool:
    parts = rel.split("/")
    return all(p not in ("", ".", "..") and "\\" not in p and "\0" not in p and "%" not in p for p in parts)


def _load_skill(real_root: Path, entry: Any, where: str) -> Skill:
    if not isinstance(entry, dict):
        raise serve_error(where, "bad-entry", "an entry must be an object")
    uri = entry.get("uri")
    suffix = "/" + SKILL_FILE
    if not isinstance(uri, str) or not uri.startswith(SCHEME) or not uri.endswith(suffix):
        raise serve_error(where, "bad-entry", f"the entry uri {uri!r} is not skill://<path>/SKILL.md")
    path = uri[len(SCHEME):-len(suffix)]
    if not path or not all(SEGMENT_RULE.fullmatch(p) for p in path.split("/")):
        raise serve_error(where, "bad-entry", f"the skill path {path!r} in {uri} is not lowercase slug segments")
    device = next((p for p in path.split("/") if p in RESERVED), None)
    if device is not None:  # as build refuses it (reserved-name): a folder no Windows checkout can hold
        raise serve_error(where, "bad-entry", f"the skill path {path!r} in {uri} holds {device!r}, a Windows device "
                          f"name ({RESERVED_WORDS})")
    name = path.rsplit("/", 1)[-1]
    if not NAME_RULE.fullmatch(name):
        raise serve_error(where, "bad-entry", f"the skill name {name!r} breaks the Agent Skills name rule")
    resources = entry.get("resources")
    if not isinstance(resources, list) or not resources:
        raise serve_error(where, "bad-entry", f"{uri}: 'resources' must be a non-empty array")
    base = SCHEME + path + "/"
    skill_dir = real_root / path
    loaded: list[SkillFile] = []
    seen: set[str] = set()
    budget = MAX_BYTES  # SEP-2640: a skill holds at most 16 MiB, so no file is read past what is left of it
    for r in resources:
        if not isinstance(r, dict) or not isinstance(r.get("uri"), str):
            raise serve_error(where, "bad-entry", f"{uri}: every resource needs a string 'uri'")
        ruri = r["uri"]
        rel = ruri[len(base):] if ruri.startswith(base) else ""
        if not rel or not _check_rel(rel):
            raise serve_error(where, "foreign-file", f"{uri}: the resource {ruri!r} is not a plain path inside the "
                              f"skill ({base}...)")
        if ruri in seen:
            raise serve_error(where, "bad-entry", f"{uri}: {ruri} is listed twice")
        seen.add(ruri)
        disk = skill_dir.joinpath(*rel.split("/"))
        try:
            real = disk.resolve(strict=True)
            real.relative_to(real_root)
        except (OSError, ValueError):
            raise serve_error(where, "missing-file", f"{ruri}: {disk.as_posix()} does not exist inside the tree",
                              "rebuild the tree with `project-skill build`") from None
        if real != disk:  # the build writes no link: one in the tree (a checkout can hold any) is not followed
            raise serve_error(where, "missing-file", f"{ruri}: {disk.as_posix()} is reached through a symbolic link, "
                              "which is not followed", "rebuild the tree with `project-skill build`")
        try:
            data = read_regular(disk, budget)
        except Unreadable as exc:
            raise serve_error(where, "missing-file", f"{ruri}: cannot read {disk.as_posix()}: {exc}",
                              f"a skill is regular files of at most {MAX_BYTES} bytes in all (SEP-2640); rebuild "
                              "the tree with `project-skill build`") from None
        budget -= len(data)
        got = "sha256:" + hashlib.sha256(data).hexdigest()
        if r.get("digest") != got or r.get("size") != len(data):
            raise serve_error(where, "digest-mismatch",
                              f"{ruri}: the file on disk ({plural(len(data), 'byte')}, {got}) does not match the manifest "
                              f"({r.get('size')} bytes, {r.get('digest')}); refusing to serve the tree",
                              "rebuild the tree with `project-skill build`, or restore the committed files")
        loaded.append(SkillFile(ruri, rel, data, mime_type(rel, data)))
    skill_md = next((f for f in loaded if f.rel == SKILL_FILE), None)
    if skill_md is None:
        raise serve_error(where, "bad-entry", f"{uri}: the entry does not list its own SKILL.md")
    if skill_md.text is None:
        raise serve_error(where, "bad-skill-md", f"{uri}: SKILL.md is not UTF-8")
    try:
        fm = parse_frontmatter(skill_md.data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise serve_error(where, "bad-skill-md", f"{uri}: {exc}") from None
    except Exception as exc:  # yaml.YAMLError
        raise serve_error(where, "bad-skill-md", f"{uri}: the frontmatter is not YAML: {exc}") from None
    if entry.get("frontmatter") != fm:
        raise serve_error(where, "frontmatter-mismatch",
                          f"{uri}: the entry's frontmatter differs from the one in SKILL.md",
                          "rebuild the tree with `project-skill build`")
    if fm.get("name") != name or not isinstance(fm.get("description"), str) or not fm["description"]:
        raise serve_error(where, "bad-skill-md", f"{uri}: the frontmatter needs name '{name}' and a description")
    return Skill(path, entry, tuple(loaded))


def _directories(skills: list[Skill]) -> dict[str, tuple[dict[str, str], ...]]:
    children: dict[str, dict[str, dict[str, str]]] = {}
    for s in skills:
        children.setdefault(s.directory, {})
        for f in s.files:
            parts = f.rel.split("/")
            parent = s.directory
            for depth, part in enumerate(parts):
                uri = f"{parent}/{part}"
                last = depth == len(parts) - 1
                node = ({"uri": uri, "name": part, "mimeType": f.mime_type} if last else
                        {"uri": uri, "name": part, "mimeType": DIRECTORY_MIME})
                children.setdefault(parent, {})[part] = node
                if not last:
                    children.setdefault(uri, {})
                parent = uri
    return {d: tuple(kids[k] for k in sorted(kids)) for d, kids in sorted(children.items())}


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
        if (isinstance(value, list) and len(value) == 2 and value[0] == scope and isinstance(value[1], str)
                and encode_cursor(scope, value[1]) == cursor):
            return value[1]
    except (UnicodeError, ValueError, binascii.Error):
        pass
    raise MCPError(code=INVALID_PARAMS, message="Invalid cursor", data={"cursor": cursor})


def _page(items: Sequence[Any], positions: dict[str, int], key: Any, cursor: str | None, scope: str,
          size: int) -> tuple[list[Any], str | None]:
    start = 0
    if cursor is not None:
        last = decode_cursor(cursor, scope)
        index = positions.get(last)
        if index is None:
            raise MCPError(code=INVALID_PARAMS, message="Invalid cursor: it names nothing in this listing",
                           data={"cursor": cursor})
        start = index + 1
    page = list(items[start:start + size])
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

    def __init__(self, tree: SkillTree | str | Path = "generated_skills", *, page_size: int = DEFAULT_PAGE_SIZE,
                 cache: CacheHint = DEFAULT_CACHE):
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
            out.append(ResourceBinding(FunctionResource.from_function(
                fn=lambda text=text: text, uri=s.uri, name=s.frontmatter["name"],
                description=s.frontmatter["description"], mime_type="text/markdown")))
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
        out = [(f"{SCHEME}{{+path}}{suffix}", f"skill-file{suffix.replace('.', '-')}", mime,
                self._path_reader(suffix)) for suffix, mime in self.tree.typed.items()]
        out.append((SCHEME + "{+path}", "skill-file", "text/plain", self._path_reader("")))
        out += [(t, name, mime, self._segment_reader(suffix, depth))
                for t, name, mime, suffix, depth in self.tree.segment_templates()]
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
            [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, annotation=str) for n in names])
        read.__annotations__ = {n: str for n in names}
        read.__name__ = f"read_skill_file_{depth}"
        return read

    def _stamp(self, result: dict[str, Any]) -> dict[str, Any]:
        result["ttlMs"] = self.cache.ttl_ms
        result["cacheScope"] = self.cache.scope
        return result

    async def _list(self, ctx: ServerRequestContext[Any, Any], params: SkillsListParams) -> dict[str, Any]:
        page, nxt = _page(self.tree.skills, self.tree.positions["skills/list"], lambda s: s.uri, params.cursor,
                          "skills/list", self.page_size)
        result: dict[str, Any] = {"skills": [copy.deepcopy(s.entry) for s in page]}
        if nxt is not None:
            result["nextCursor"] = nxt
        return self._stamp(result)

    async def _get(self, ctx: ServerRequestContext[Any, Any], params: SkillsGetParams) -> dict[str, Any]:
        skill = self.tree.skill(params.uri)
        if skill is None:
            raise _invalid(f"Unknown skill: {params.uri}", params.uri)
        return self._stamp({"skill": copy.deepcopy(skill.entry)})

    async def _directory_read(self, ctx: ServerRequestContext[Any, Any], params: DirectoryReadParams) -> dict[str, Any]:
        uri = params.uri
        key = uri if uri in self.tree.directories or not uri.endswith("/") else uri.rstrip("/")
        kids = self.tree.directories.get(key)
        if kids is None:
            what = "a file, not a directory" if uri in self.tree.files else "not a skill directory this server serves"
            raise _invalid(f"Not a directory: {uri} is {what}", uri)
        page, nxt = _page(kids, self.tree.positions["dir:" + key], lambda c: c["uri"], params.cursor,
                          "dir:" + uri.rstrip("/"), self.page_size)
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
