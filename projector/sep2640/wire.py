"""The SEP-2640 wire's names, limits, digests and URIs: the one place each is spelled.

The build writes them, ``serve`` loads a tree by them and the verifying client refuses what breaks them, so each is
defined here once: the extension id, the ``skill://`` scheme, the file names, the limits of a skill (512 files,
16 MiB), the ``sha256:`` digest, a skill's URI and its inverse, and the rule a path segment inside a skill keeps.
The refusals are :class:`VerificationError` (the client's error, which the server words as its own).
"""

from __future__ import annotations

import hashlib
import re
from urllib.parse import unquote

from ..errors import Diagnostic, ProjectorError, Span

EXTENSION_ID = "io.modelcontextprotocol/skills"
SCHEME = "skill://"
SKILL_FILE = "SKILL.md"
INDEX_FILE = "skills.json"
MAX_FILES = 512  # files in one skill, SKILL.md included
MAX_BYTES = 16 * 1024 * 1024  # bytes of one skill's files together
# How large a skills.json is read back from a tree (serve; build and check read the previous one; remote load --out
# too). SEP-2640 bounds each skill (MAX_FILES, MAX_BYTES), not the index: an entry of a skill of a few files is
# under 1 KiB (about 700 bytes for the examples), so this holds some 90,000 skills. Build and check also read up to
# twice the index they derive (projector.output), so a larger build still reads back what it wrote.
MAX_INDEX_BYTES = 64 * 1024 * 1024
MAX_URI_LENGTH = 2048  # characters in one URI: far beyond any real skill path, and within every OS's path limit
MAX_URI_SEGMENTS = 64  # path segments in one URI (authority included): deep enough for any prefix, and no deeper
DIGEST_RULE = re.compile(r"^sha256:[0-9a-f]{64}$")
URI_RULE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://(.*)$", re.DOTALL)  # any scheme://path, as served
_BAD_ENCODED = ("%2e", "%2f", "%5c", "%00")


class WireError(ProjectorError):
    """A refusal with one stable kebab-case code; its span names the URI (or file) it is about. The remote client's
    errors have this shape (:class:`projector.remote.errors.RemoteError` is this class)."""

    def __init__(self, code: str, where: str, message: str, hint: str | None = None):
        super().__init__(Diagnostic(Span(where or "<server>"), "error", code, message, hint))
        self.code = code
        self.where = where
        self.message = message
        self.hint = hint

    def with_hint(self, hint: str) -> "WireError":
        joined = f"{self.hint}; {hint}" if self.hint else hint
        return type(self)(self.code, self.where, self.message, joined)


class VerificationError(WireError):
    """Served bytes or a served manifest failed verification. Nothing from them was used."""


def digest(data: bytes) -> str:
    """The SEP-2640 digest of ``data``: ``sha256:`` and 64 lowercase hex digits."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def skill_uri(path: str, file: str = SKILL_FILE) -> str:
    """``a/b/name`` (and a file inside the skill) -> ``skill://a/b/name/SKILL.md``."""
    return f"{SCHEME}{path}/{file}"


def skill_path_of(uri: str) -> str:
    """The inverse of :func:`skill_uri` for a SKILL.md: ``skill://a/b/name/SKILL.md`` -> ``a/b/name``. A URI of
    another form comes back with only what matches taken off; callers that need the form check it first."""
    return uri.removeprefix(SCHEME).removesuffix("/" + SKILL_FILE)


def bad_segment(segment: str) -> bool:
    """Whether a path segment (decoded) could step outside its folder or name none: empty, ``.`` or ``..``, or it
    holds a separator (``/``, ``\\``) or NUL. The server, the client and ``remote load --out`` each add their own
    stricter rule on top (no ``%`` in a tree, no dot-name on disk)."""
    return segment in ("", ".", "..") or any(c in segment for c in "/\\\0")


def clip(text: str, limit: int = 120) -> str:
    """``text`` cut to ``limit`` characters for a message or a span (a hostile URI may be megabytes long)."""
    return text if len(text) <= limit else text[:limit] + "..."


def uri_segments(uri: str, where: str) -> tuple[str, list[str]]:
    """``scheme://a/b/c`` -> (scheme, [a, b, c]), refusing anything that could step outside its folder:
    empty, ``.`` or ``..`` segments (also percent-encoded), backslashes, control characters, queries and fragments;
    and anything longer than :data:`MAX_URI_LENGTH` characters or deeper than :data:`MAX_URI_SEGMENTS` segments."""
    if len(uri) > MAX_URI_LENGTH:
        raise VerificationError(
            "bad-manifest-uri",
            clip(where),
            f"the URI {clip(uri)!r} is {len(uri)} characters long; at most {MAX_URI_LENGTH} are accepted",
        )
    m = URI_RULE.match(uri)
    if not m:
        raise VerificationError("bad-manifest-uri", where, f"{uri!r} is not a scheme://path URI")
    scheme, rest = m.group(1), m.group(2)
    if any(c in rest for c in "\\?#") or any(ord(c) < 0x20 or ord(c) == 0x7F for c in rest):
        raise VerificationError(
            "bad-manifest-uri", where, f"{uri!r} holds a backslash, a query, a fragment or a control character"
        )
    lowered = rest.lower()
    for bad in _BAD_ENCODED:
        if bad in lowered:
            raise VerificationError("bad-manifest-uri", where, f"{uri!r} holds a percent-encoded '.', '/', '\\' or NUL")
    segments = rest.split("/")
    if len(segments) > MAX_URI_SEGMENTS:
        raise VerificationError(
            "bad-manifest-uri",
            clip(where),
            f"the URI {clip(uri)!r} has {len(segments)} path segments; at most {MAX_URI_SEGMENTS} are accepted",
        )
    for seg in segments:
        try:
            decoded = unquote(seg, errors="strict") if "%" in seg else seg
        except UnicodeDecodeError:
            raise VerificationError(
                "bad-manifest-uri", where, f"{uri!r} percent-encodes bytes that are not UTF-8"
            ) from None
        if bad_segment(seg) or bad_segment(decoded):
            raise VerificationError("bad-manifest-uri", where, f"{uri!r} has an empty, '.' or '..' path segment")
    return scheme, segments
