"""The skills tree ``serve`` serves: a ``generated_skills/`` tree read once, verified, and held in memory.

:meth:`SkillTree.load` reads ``skills.json`` and every file it lists, into memory. Each file's size and sha256 must
equal the manifest, and each SKILL.md's frontmatter must say what its entry says, read by the one frontmatter reader
(:mod:`projector.sep2640`: YAML 1.2 core, ambiguity refused), or nothing is served
(:class:`~projector.server.errors.AttachError`): the server refuses what a verifying client would refuse. From then
on every request is answered from memory, so the bytes served are exactly the bytes digested, and no request can make
the server open a file.

No framework: MCPServer's extension (:mod:`projector.server.skills`), the skill tools and the FastMCP adapter all
serve this one tree.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from ..bounded import BadJSON, Unreadable, loads, read_regular
from ..errors import plural
from ..ownership import disk_path
from ..naming import NAME_RULE, RESERVED, RESERVED_WORDS, SEGMENT_RULE
from ..sep2640 import (
    INDEX_FILE,
    MAX_BYTES,
    MAX_INDEX_BYTES,
    SCHEME,
    SKILL_FILE,
    VerificationError,
    bad_segment,
    check_manifest,
    digest,
    file_matches,
    frontmatter_diff,
    last_segment,
    parse_entry,
    parse_frontmatter,
    same_name,
    skill_path_of,
)
from ..texts import TOOLS_KEY
from .errors import AttachError, serve_error

DIRECTORY_MIME = "inode/directory"
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
    def path(self) -> str:
        """``rel`` percent-decoded: the file's name on disk, and in a FastMCP manifest (which encodes it again)."""
        return "/".join(disk_path(self.rel) or ()) if "%" in self.rel else self.rel

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

    @property
    def tools(self) -> frozenset[str] | None:
        """The tools the skill's steps call (``metadata.tools``, :func:`projector.render.tools_value`), or None for a
        skill that does not say (built before the key existed, or by hand): such a skill is never hidden."""
        metadata = self.frontmatter.get("metadata")
        value = metadata.get(TOOLS_KEY) if isinstance(metadata, dict) else None
        return frozenset(value.split()) if isinstance(value, str) else None

    def usable(self, visible: Collection[str] | None, has: Collection[str]) -> bool:
        """Whether a caller who sees the tools ``visible`` (None: every tool), on a server that has the tools
        ``has``, can carry the skill out: every tool it calls that the server has is one the caller sees. A tool
        the server does not have at all does not count: it is served elsewhere (a skills catalog, a host whose
        tools live on another server)."""
        tools = self.tools
        if visible is None or tools is None:
            return True
        return tools & frozenset(has) <= frozenset(visible)


# The deepest supporting file that gets a level-1 template of its own (one ``{pN}`` per segment). A verifying client
# refuses a URI of more segments (projector.sep2640.MAX_URI_SEGMENTS), and mcp's template parser refuses a
# template of more than 256 variables, so a hand-made deeper tree must not stop the server from starting.
MAX_TEMPLATE_DEPTH = 64
MAX_VIEWS = 64  # trees kept for callers who see different tools (SkillTree.for_caller)


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
    decoded: dict[str, SkillFile] = field(init=False, repr=False, compare=False)
    # a file suffix, as written -> its mimeType: the file types that get resource templates of their own
    typed: dict[str, str] = field(init=False, repr=False, compare=False)
    views: dict[frozenset[str], SkillTree] = field(init=False, repr=False, compare=False)  # :meth:`for_caller`

    def __post_init__(self) -> None:
        object.__setattr__(self, "views", {})
        object.__setattr__(self, "by_uri", {s.uri: s for s in self.skills})
        # a file listed by a percent-encoded URI, by its decoded one too: the URI a template matcher that decodes
        # its variables (MCPServer's) puts together
        object.__setattr__(
            self,
            "decoded",
            {f.uri[: len(f.uri) - len(f.rel)] + f.path: f for f in self.files.values() if f.path != f.rel},
        )
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

    def for_caller(
        self, visible: Collection[str] | None, has: Collection[str], without: Collection[str] = ()
    ) -> SkillTree:
        """The tree as a caller who sees the tools ``visible`` (None: every tool) is served it by a server that has
        the tools ``has``: without the skills that call a tool the server has and the caller cannot see
        (:meth:`Skill.usable`), nor those at the paths ``without`` (withdrawn), their files and directories. The
        whole tree when it loses nothing; the same object for the same hidden skills (the last :data:`MAX_VIEWS`
        kept)."""
        has, without = frozenset(has), frozenset(without)
        hidden = frozenset(s.path for s in self.skills if s.path in without or not s.usable(visible, has))
        if not hidden:
            return self
        view = self.views.get(hidden)
        if view is None:
            kept = [s for s in self.skills if s.path not in hidden]
            files = {f.uri: f for s in kept for f in s.files}
            view = SkillTree(self.root, tuple(kept), files, _directories(kept))
            if len(self.views) >= MAX_VIEWS:
                self.views.pop(next(iter(self.views)))
            self.views[hidden] = view
        return view

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
            depth = f.uri[len(SCHEME) :].count("/") + 1
            if depth <= MAX_TEMPLATE_DEPTH:  # deeper files stay readable through the {+path} templates only
                wanted.add((suffix if suffix in typed else "", depth))
        out = []
        for suffix, depth in sorted(wanted, key=lambda w: (w[0] == "", w[0], w[1])):
            segments = "/".join(f"{{p{i}}}" for i in range(1, depth + 1))
            out.append(
                (
                    f"{SCHEME}{segments}{suffix}",
                    f"skill-file{suffix.replace('.', '-')}-{depth}",
                    typed.get(suffix, "text/plain"),
                    suffix,
                    depth,
                )
            )
        return out

    def template_file(self, uri: str, suffix: str) -> SkillFile | None:
        """The file a template of type ``suffix`` (``""``: the catch-all) serves at ``uri``, or None. The catch-all
        serves only the files that no typed template matches, so a file has one mimeType."""
        f = self.files.get(uri) or self.decoded.get(uri)
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
            raise serve_error(
                where,
                "no-index",
                f"cannot read the skills index: {exc}",
                "point --skills at a folder written by `project-skill build`",
            ) from None
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
    """A path inside a skill as a tree holds it: segments by the wire's rule (:func:`~projector.sep2640.bad_segment`),
    and no ``%`` (the build writes none). A path with one is read from its decoded name
    (:func:`projector.ownership.disk_path`), and still served by the URI as listed, never decoded."""
    return all(not bad_segment(p) and "%" not in p for p in rel.split("/"))


def _skill_path(entry: Any, where: str) -> tuple[str, str]:
    """The entry's SKILL.md URI and its skill path (``a/b/name``), or ``bad-entry``: a ``skill://<path>/SKILL.md``
    URI whose segments are lowercase slugs, none a Windows device name, the last one a skill name."""
    if not isinstance(entry, dict):
        raise serve_error(where, "bad-entry", "an entry must be an object")
    uri = entry.get("uri")
    if not isinstance(uri, str) or not uri.startswith(SCHEME) or not uri.endswith("/" + SKILL_FILE):
        raise serve_error(where, "bad-entry", f"the entry uri {uri!r} is not skill://<path>/SKILL.md")
    path = skill_path_of(uri)
    if not path or not all(SEGMENT_RULE.fullmatch(p) for p in path.split("/")):
        raise serve_error(where, "bad-entry", f"the skill path {path!r} in {uri} is not lowercase slug segments")
    device = next((p for p in path.split("/") if p in RESERVED), None)
    if device is not None:  # as build refuses it (reserved-name): a folder no Windows checkout can hold
        raise serve_error(
            where,
            "bad-entry",
            f"the skill path {path!r} in {uri} holds {device!r}, a Windows device name ({RESERVED_WORDS})",
        )
    name = path.rsplit("/", 1)[-1]
    if not NAME_RULE.fullmatch(name):
        raise serve_error(where, "bad-entry", f"the skill name {name!r} breaks the Agent Skills name rule")
    return uri, path


def _read_file(real_root: Path, disk: Path, ruri: str, budget: int, where: str) -> bytes:
    """The bytes of one listed file: a regular file inside the tree, reached through no link, at most ``budget``
    bytes (what is left of the skill's 16 MiB); else ``missing-file``."""
    try:
        real = disk.resolve(strict=True)
        real.relative_to(real_root)
    except (OSError, ValueError):
        raise serve_error(
            where,
            "missing-file",
            f"{ruri}: {disk.as_posix()} does not exist inside the tree",
            "rebuild the tree with `project-skill build`",
        ) from None
    if real != disk:  # the build writes no link: one in the tree (a checkout can hold any) is not followed
        raise serve_error(
            where,
            "missing-file",
            f"{ruri}: {disk.as_posix()} is reached through a symbolic link, which is not followed",
            "rebuild the tree with `project-skill build`",
        )
    try:
        return read_regular(disk, budget)
    except Unreadable as exc:
        raise serve_error(
            where,
            "missing-file",
            f"{ruri}: cannot read {disk.as_posix()}: {exc}",
            f"a skill is regular files of at most {MAX_BYTES} bytes in all (SEP-2640); rebuild "
            "the tree with `project-skill build`",
        ) from None


def _load_files(real_root: Path, uri: str, path: str, resources: list[Any], where: str) -> list[SkillFile]:
    """Every file the entry lists, in manifest order: a plain path inside the skill (else ``foreign-file``), listed
    once, read from the tree (:func:`_read_file`), of the listed size and digest (else ``digest-mismatch``)."""
    base = SCHEME + path + "/"
    skill_dir = real_root / path
    loaded: list[SkillFile] = []
    seen: set[str] = set()
    budget = MAX_BYTES  # SEP-2640: a skill holds at most 16 MiB, so no file is read past what is left of it
    for r in resources:
        if not isinstance(r, dict) or not isinstance(r.get("uri"), str):
            raise serve_error(where, "bad-entry", f"{uri}: every resource needs a string 'uri'")
        ruri = r["uri"]
        rel = ruri[len(base) :] if ruri.startswith(base) else ""
        # A percent-encoded name (FastMCP and the TypeScript SDK v2 serve ``my%20notes.md``) is on disk decoded, as
        # ``remote load --out`` wrote it: served under the URI as listed, read from the decoded name.
        on_disk = rel.split("/") if rel and _check_rel(rel) else disk_path(rel) if rel else None
        if on_disk is None:
            raise serve_error(
                where, "foreign-file", f"{uri}: the resource {ruri!r} is not a plain path inside the skill ({base}...)"
            )
        if ruri in seen or "/".join(on_disk) in seen:
            raise serve_error(where, "bad-entry", f"{uri}: {ruri} is listed twice")
        seen.update((ruri, "/".join(on_disk)))
        data = _read_file(real_root, skill_dir.joinpath(*on_disk), ruri, budget, where)
        budget -= len(data)
        if not file_matches(r.get("size"), r.get("digest"), data):
            raise serve_error(
                where,
                "digest-mismatch",
                f"{ruri}: the file on disk ({plural(len(data), 'byte')}, {digest(data)}) does not match "
                f"the manifest ({r.get('size')} bytes, {r.get('digest')}); refusing to serve the tree",
                "rebuild the tree with `project-skill build`, or restore the committed files",
            )
        loaded.append(SkillFile(ruri, rel, data, mime_type(rel, data)))
    return loaded


def _check_skill_md(uri: str, data: bytes, frontmatter: Any, where: str) -> None:
    """SKILL.md's frontmatter, read by the one reader (:func:`~projector.sep2640.parse_frontmatter`, YAML 1.2 core)
    as a verifying client reads it: unreadable is ``bad-skill-md``, read differently by YAML readers
    ``frontmatter-ambiguous``; not what the entry says (:func:`~projector.sep2640.frontmatter_diff`) is
    ``frontmatter-mismatch``; a name that is not the URI's last segment (:func:`~projector.sep2640.same_name`) or no
    description is ``bad-skill-md``."""
    try:
        fm = parse_frontmatter(data, uri)
    except VerificationError as exc:
        code = "bad-skill-md" if exc.code == "bad-frontmatter" else exc.code
        raise serve_error(where, code, f"{uri}: {exc.message}", exc.hint) from None
    if not isinstance(frontmatter, dict) or any(frontmatter_diff(fm, frontmatter)):
        raise serve_error(
            where,
            "frontmatter-mismatch",
            f"{uri}: the entry's frontmatter differs from the one in SKILL.md",
            "rebuild the tree with `project-skill build`",
        )
    description = fm.get("description")
    if not same_name(fm, uri) or not isinstance(description, str) or not description:
        raise serve_error(
            where, "bad-skill-md", f"{uri}: the frontmatter needs name '{last_segment(uri)}' and a description"
        )


def _load_skill(real_root: Path, entry: Any, where: str) -> Skill:
    """One entry of the index, loaded and checked: its URI (:func:`_skill_path`), its files (:func:`_load_files`),
    its SKILL.md (:func:`_check_skill_md`)."""
    uri, path = _skill_path(entry, where)
    resources = entry.get("resources")
    if not isinstance(resources, list) or not resources:
        raise serve_error(where, "bad-entry", f"{uri}: 'resources' must be a non-empty array")
    loaded = _load_files(real_root, uri, path, resources, where)
    skill_md = next((f for f in loaded if f.rel == SKILL_FILE), None)
    if skill_md is None:
        raise serve_error(where, "bad-entry", f"{uri}: the entry does not list its own SKILL.md")
    _check_skill_md(uri, skill_md.data, entry.get("frontmatter"), where)
    _check_as_a_client_would(entry, where)
    return Skill(path, entry, tuple(loaded))


def _check_as_a_client_would(entry: Any, where: str) -> None:
    """The wire's own entry and manifest checks (:func:`~projector.sep2640.parse_entry`,
    :func:`~projector.sep2640.check_manifest`: sizes that are integers, URIs without a query or fragment, the
    limits on files and segments), which every verifying client runs: a tree they would refuse is not served. The
    server's stricter rules above run first, so a tree they refuse keeps their code."""
    try:
        check_manifest(parse_entry(entry, where))
    except VerificationError as exc:
        raise serve_error(where, exc.code, exc.message, exc.hint) from None


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
                node = (
                    {"uri": uri, "name": part, "mimeType": f.mime_type}
                    if last
                    else {"uri": uri, "name": part, "mimeType": DIRECTORY_MIME}
                )
                children.setdefault(parent, {})[part] = node
                if not last:
                    children.setdefault(uri, {})
                parent = uri
    return {d: tuple(kids[k] for k in sorted(kids)) for d, kids in sorted(children.items())}
