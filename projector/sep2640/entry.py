"""SEP-2640 entries and manifests: the wire models, and every check made before and as a skill's files are read.

The order a host follows, and the functions that do each part:

1. :func:`parse_entry` checks the entry's shape; :func:`check_manifest` checks the skill's name (its frontmatter
   ``name`` is the last segment of its URI: :func:`check_name`), every manifest URI (at most
   :data:`~.wire.MAX_URI_LENGTH` characters and :data:`~.wire.MAX_URI_SEGMENTS` segments each) and the limits
   (512 files, 16 MiB) before anything is read.
2. :func:`verify_bytes` checks the size, then the sha256 digest, of every file read.
3. SKILL.md's frontmatter is read by :mod:`.frontmatter` and compared with the entry's by :mod:`.values`.

``serve`` loads a tree by the same rules (:func:`same_name`, :func:`file_matches`), worded as its own refusals.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from ..errors import plural
from .values import MISSING, describe_value
from .wire import DIGEST_RULE, MAX_BYTES, MAX_FILES, SKILL_FILE, VerificationError, digest, uri_segments


@dataclass(frozen=True)
class FileRef:
    """One manifest line: a file's URI, its ``sha256:`` digest and its size in bytes."""

    uri: str
    digest: str
    size: int

    def to_json(self) -> dict[str, Any]:
        return {"uri": self.uri, "digest": self.digest, "size": self.size}


@dataclass(frozen=True)
class SkillEntry:
    """A ``skills/list`` (or ``skills/get``) entry. ``resources`` is None for a ``"dynamic"`` skill."""

    uri: str
    frontmatter: dict[str, Any]
    resources: tuple[FileRef, ...] | None
    raw: dict[str, Any]

    @property
    def dynamic(self) -> bool:
        return self.resources is None

    @property
    def root(self) -> str:
        """The skill root: the SKILL.md URI minus ``/SKILL.md``."""
        return self.uri[: -len("/" + SKILL_FILE)]

    @property
    def name(self) -> str:
        value = self.frontmatter.get("name")
        return value if isinstance(value, str) else self.root.rsplit("/", 1)[-1]

    @property
    def description(self) -> str:
        value = self.frontmatter.get("description")
        return value if isinstance(value, str) else ""

    @property
    def total_size(self) -> int:
        return sum(r.size for r in self.resources or ())

    def ref(self, uri: str) -> FileRef | None:
        for r in self.resources or ():
            if r.uri == uri:
                return r
        return None


# ------------------------------------------------------------------------------------------------------ entries


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def parse_entry(raw: Any, where: str = "<server>") -> SkillEntry:
    """A served entry as a :class:`SkillEntry`, or ``bad-entry`` / ``bad-manifest`` when its shape is wrong."""
    if not isinstance(raw, dict):
        raise VerificationError("bad-entry", where, "a skills entry is not an object")
    uri = raw.get("uri")
    if not isinstance(uri, str) or not uri:
        raise VerificationError("bad-entry", where, "a skills entry has no 'uri' string")
    if not uri.endswith("/" + SKILL_FILE):
        raise VerificationError("bad-entry", uri, f"the entry URI does not end in /{SKILL_FILE}")
    fm = raw.get("frontmatter")
    if not isinstance(fm, dict):
        raise VerificationError("bad-entry", uri, "the entry has no 'frontmatter' object")
    res = raw.get("resources")
    if res == "dynamic":
        return SkillEntry(uri, fm, None, raw)
    if not isinstance(res, list):
        raise VerificationError("bad-manifest", uri, "the entry's 'resources' is neither a list nor \"dynamic\"")
    refs = []
    for i, r in enumerate(res):
        if not isinstance(r, dict) or not isinstance(r.get("uri"), str):
            raise VerificationError("bad-manifest", uri, f"resources[{i}] has no 'uri' string")
        digest, size = r.get("digest"), r.get("size")
        if not isinstance(digest, str) or not DIGEST_RULE.fullmatch(digest):
            raise VerificationError(
                "bad-manifest",
                uri,
                f"resources[{i}] ({r['uri']}) has no valid digest",
                "a digest is 'sha256:' and 64 lowercase hex digits",
            )
        if not _is_int(size) or size < 0:
            raise VerificationError(
                "bad-manifest",
                uri,
                f"resources[{i}] ({r['uri']}) has no valid size",
                "a size is a non-negative integer count of bytes",
            )
        refs.append(FileRef(r["uri"], digest, size))
    return SkillEntry(uri, fm, tuple(refs), raw)


def last_segment(uri: str) -> str:
    """The last segment of a skill's root: ``skill://a/b/name/SKILL.md`` -> ``name``, the skill's name."""
    return uri[: -len("/" + SKILL_FILE)].rsplit("/", 1)[-1]


def same_name(frontmatter: dict[str, Any], uri: str) -> bool:
    """Name identity, as FastMCP's ``MCPSkill.validate_entry`` has it: the frontmatter ``name`` is a string, and it
    is the last segment of the skill's URI (:func:`last_segment`)."""
    name = frontmatter.get("name")
    return isinstance(name, str) and name == last_segment(uri)


def check_name(entry: SkillEntry) -> None:
    """The skill's name is one: the entry's frontmatter ``name`` is the last segment of the skill URI (and the file's
    frontmatter, compared with the entry's by the client's ``check_frontmatter``, says the same), as ``serve`` requires of a
    tree. Else ``name-mismatch``: a skill served at ``skill://evil`` must not load as ``hello-world``."""
    if not same_name(entry.frontmatter, entry.uri):
        last = last_segment(entry.uri)
        name = entry.frontmatter.get("name", MISSING)
        raise VerificationError(
            "name-mismatch",
            entry.uri,
            f"the entry's frontmatter name is "
            f"{describe_value(name)}, but the last segment of its URI is {describe_value(last)}",
            "a skill's frontmatter name and the last segment of its URI are one and the same; "
            "a host must not load a skill under another name than the one it is served at",
        )


def check_manifest(entry: SkillEntry) -> None:
    """Everything that can be checked before a single file is read: the SKILL.md URI, the skill's name
    (:func:`check_name`), every manifest URI (inside the skill root, no dot segments, same scheme), no duplicates,
    SKILL.md listed, and the limits."""
    scheme, root_segs = uri_segments(entry.uri, entry.uri)
    check_name(entry)
    if entry.resources is None:
        return
    n = len(entry.resources)
    if n > MAX_FILES:
        raise VerificationError(
            "too-many-files", entry.uri, f"the manifest lists {n} files; SEP-2640 allows {MAX_FILES}, SKILL.md included"
        )
    total = entry.total_size
    if total > MAX_BYTES:
        raise VerificationError(
            "too-large", entry.uri, f"the manifest adds up to {total} bytes; SEP-2640 allows {MAX_BYTES} (16 MiB)"
        )
    root_segs = root_segs[:-1]
    seen: set[str] = set()
    for ref in entry.resources:
        s, segs = uri_segments(ref.uri, entry.uri)
        if s != scheme or len(segs) <= len(root_segs) or segs[: len(root_segs)] != root_segs:
            raise VerificationError(
                "bad-manifest-uri", entry.uri, f"the manifest URI {ref.uri!r} is outside the skill root {entry.root!r}"
            )
        if ref.uri in seen:
            raise VerificationError("bad-manifest", entry.uri, f"the manifest lists {ref.uri!r} twice")
        seen.add(ref.uri)
    if entry.uri not in seen:
        raise VerificationError(
            "unlisted-file",
            entry.uri,
            f"the manifest does not list {SKILL_FILE} itself",
            "a host reads only files its manifest lists, SKILL.md included",
        )


def relative_path(entry: SkillEntry, uri: str) -> str:
    """A manifest URI's path inside the skill root (``references/a.md``), percent-decoded."""
    rest = uri[len(entry.root) + 1 :]
    return "/".join(unquote(seg) for seg in rest.split("/"))


def verify_bytes(ref: FileRef, data: bytes) -> None:
    """Size first (a size mismatch is a digest mismatch, found without hashing), then the sha256 digest."""
    if len(data) != ref.size:
        raise VerificationError(
            "size-mismatch", ref.uri, f"served {plural(len(data), 'byte')}; the manifest says {ref.size}"
        )
    got = digest(data)
    if got != ref.digest:
        raise VerificationError(
            "digest-mismatch", ref.uri, f"served bytes hash to {got}; the manifest says {ref.digest}"
        )


def file_matches(size: Any, expected: Any, data: bytes) -> bool:
    """Whether ``data`` is the file a manifest line of ``size`` and digest ``expected`` names: the size first (no
    hashing when it differs), then the digest. For a tree on disk, whose manifest has not been parsed."""
    return len(data) == size and digest(data) == expected
