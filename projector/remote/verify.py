"""Pure verification of what a SEP-2640 server serves: entries, manifests, bytes and frontmatter. No I/O, no ``mcp``.

The order a host must follow, and the functions that do each part:

1. :func:`parse_entry` checks the entry's shape; :func:`check_manifest` checks the skill's name (its frontmatter
   ``name`` is the last segment of its URI), every manifest URI (at most :data:`MAX_URI_LENGTH` characters and
   :data:`MAX_URI_SEGMENTS` segments each) and the limits (512 files, 16 MiB) before anything is read.
2. :func:`verify_bytes` checks the size, then the sha256 digest, of every file read.
3. :func:`check_frontmatter` parses SKILL.md's YAML frontmatter with the YAML 1.2 core schema, as the reference SDK
   and the conformance suite do, and compares it field by field with the entry's, as YAML values
   (:func:`yaml_equal`). The 1.1 reading is not accepted as well: a file that only a YAML 1.1 reader sees as equal to
   its entry shows every YAML 1.2 host something else. When that is why the file and its entry disagree (a YAML 1.1
   publisher, such as FastMCP's skills provider, listed ``approved: yes`` as ``true``), ``frontmatter-mismatch`` says
   so, names both readings of each value and the fix (the publisher quotes them). A caller that trusts such a
   publisher reads with ``yaml_version="1.1"`` instead (PyYAML's SafeLoader, after the same refusals and bounds), and
   :func:`frontmatter_note` says what a YAML 1.2 host would see. Frontmatter that YAML readers read differently is
   refused before it is parsed (``frontmatter-ambiguous``): U+0085, U+2028 and U+2029 (line breaks to YAML 1.1, text
   to YAML 1.2), duplicate keys, anchors, aliases, merge keys and tags.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import math
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

import yaml

from ..bundle import MAX_BYTES, MAX_FILES
from ..errors import plural
from ..yaml12 import load_core, yaml_error
from .errors import VerificationError

SKILLS_EXT = "io.modelcontextprotocol/skills"
SKILL_FILE = "SKILL.md"
DIGEST_RULE = re.compile(r"^sha256:[0-9a-f]{64}$")
# The frontmatter block as the conformance suite finds it: an optional BOM, a '---' line, the YAML, a '---' line.
FRONTMATTER = re.compile(r"\A\ufeff?---\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://(.*)$", re.DOTALL)


def sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


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
            raise VerificationError("bad-manifest", uri, f"resources[{i}] ({r['uri']}) has no valid digest",
                                    "a digest is 'sha256:' and 64 lowercase hex digits")
        if not _is_int(size) or size < 0:
            raise VerificationError("bad-manifest", uri, f"resources[{i}] ({r['uri']}) has no valid size",
                                    "a size is a non-negative integer count of bytes")
        refs.append(FileRef(r["uri"], digest, size))
    return SkillEntry(uri, fm, tuple(refs), raw)


_BAD_ENCODED = ("%2e", "%2f", "%5c", "%00")
MAX_URI_LENGTH = 2048  # characters in one URI: far beyond any real skill path, and within every OS's path limit
MAX_URI_SEGMENTS = 64  # path segments in one URI (authority included): deep enough for any prefix, and no deeper


def clip(text: str, limit: int = 120) -> str:
    """``text`` cut to ``limit`` characters for a message or a span (a hostile URI may be megabytes long)."""
    return text if len(text) <= limit else text[:limit] + "..."


def uri_segments(uri: str, where: str) -> tuple[str, list[str]]:
    """``scheme://a/b/c`` -> (scheme, [a, b, c]), refusing anything that could step outside its folder:
    empty, ``.`` or ``..`` segments (also percent-encoded), backslashes, control characters, queries and fragments;
    and anything longer than :data:`MAX_URI_LENGTH` characters or deeper than :data:`MAX_URI_SEGMENTS` segments."""
    if len(uri) > MAX_URI_LENGTH:
        raise VerificationError("bad-manifest-uri", clip(where), f"the URI {clip(uri)!r} is {len(uri)} characters "
                                f"long; at most {MAX_URI_LENGTH} are accepted")
    m = SCHEME.match(uri)
    if not m:
        raise VerificationError("bad-manifest-uri", where, f"{uri!r} is not a scheme://path URI")
    scheme, rest = m.group(1), m.group(2)
    if any(c in rest for c in "\\?#") or any(ord(c) < 0x20 or ord(c) == 0x7F for c in rest):
        raise VerificationError("bad-manifest-uri", where,
                                f"{uri!r} holds a backslash, a query, a fragment or a control character")
    lowered = rest.lower()
    for bad in _BAD_ENCODED:
        if bad in lowered:
            raise VerificationError("bad-manifest-uri", where, f"{uri!r} holds a percent-encoded '.', '/', '\\' or NUL")
    segments = rest.split("/")
    if len(segments) > MAX_URI_SEGMENTS:
        raise VerificationError("bad-manifest-uri", clip(where), f"the URI {clip(uri)!r} has {len(segments)} path "
                                f"segments; at most {MAX_URI_SEGMENTS} are accepted")
    for seg in segments:
        try:
            decoded = unquote(seg, errors="strict") if "%" in seg else seg
        except UnicodeDecodeError:
            raise VerificationError("bad-manifest-uri", where, f"{uri!r} percent-encodes bytes that are not UTF-8") \
                from None
        if seg in ("", ".", "..") or decoded in ("", ".", ".."):
            raise VerificationError("bad-manifest-uri", where,
                                    f"{uri!r} has an empty, '.' or '..' path segment")
    return scheme, segments


def check_name(entry: SkillEntry) -> None:
    """The skill's name is one: the entry's frontmatter ``name`` is the last segment of the skill URI (and the file's
    frontmatter, compared with the entry's by :func:`check_frontmatter`, says the same), as ``serve`` requires of a
    tree. Else ``name-mismatch``: a skill served at ``skill://evil`` must not load as ``hello-world``."""
    last = entry.root.rsplit("/", 1)[-1]
    name = entry.frontmatter.get("name", _MISSING)
    if not isinstance(name, str) or name != last:
        raise VerificationError("name-mismatch", entry.uri, f"the entry's frontmatter name is "
                                f"{describe_value(name)}, but the last segment of its URI is {describe_value(last)}",
                                "a skill's frontmatter name and the last segment of its URI are one and the same; "
                                "a host must not load a skill under another name than the one it is served at")


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
        raise VerificationError("too-many-files", entry.uri,
                                f"the manifest lists {n} files; SEP-2640 allows {MAX_FILES}, SKILL.md included")
    total = entry.total_size
    if total > MAX_BYTES:
        raise VerificationError("too-large", entry.uri,
                                f"the manifest adds up to {total} bytes; SEP-2640 allows {MAX_BYTES} (16 MiB)")
    root_segs = root_segs[:-1]
    seen: set[str] = set()
    for ref in entry.resources:
        s, segs = uri_segments(ref.uri, entry.uri)
        if s != scheme or len(segs) <= len(root_segs) or segs[: len(root_segs)] != root_segs:
            raise VerificationError("bad-manifest-uri", entry.uri,
                                    f"the manifest URI {ref.uri!r} is outside the skill root {entry.root!r}")
        if ref.uri in seen:
            raise VerificationError("bad-manifest", entry.uri, f"the manifest lists {ref.uri!r} twice")
        seen.add(ref.uri)
    if entry.uri not in seen:
        raise VerificationError("unlisted-file", entry.uri, f"the manifest does not list {SKILL_FILE} itself",
                                "a host reads only files its manifest lists, SKILL.md included")


def relative_path(entry: SkillEntry, uri: str) -> str:
    """A manifest URI's path inside the skill root (``references/a.md``), percent-decoded."""
    rest = uri[len(entry.root) + 1:]
    return "/".join(unquote(seg) for seg in rest.split("/"))


# ------------------------------------------------------------------------------------------------------ bytes


def verify_bytes(ref: FileRef, data: bytes) -> None:
    """Size first (a size mismatch is a digest mismatch, found without hashing), then the sha256 digest."""
    if len(data) != ref.size:
        raise VerificationError("size-mismatch", ref.uri,
                                f"served {plural(len(data), 'byte')}; the manifest says {ref.size}")
    got = sha256(data)
    if got != ref.digest:
        raise VerificationError("digest-mismatch", ref.uri,
                                f"served bytes hash to {got}; the manifest says {ref.digest}")


# ------------------------------------------------------------------------------------------------------ frontmatter


FRONTMATTER_YAML = ("1.2", "1.1")  # the readings of frontmatter a caller may ask for; the first is the default


def check_reading(yaml_version: str) -> str:
    """``yaml_version`` if it is one of :data:`FRONTMATTER_YAML`; else ``ValueError`` (a caller's mistake)."""
    if yaml_version not in FRONTMATTER_YAML:
        raise ValueError(f"frontmatter_yaml must be '1.2' or '1.1', not {yaml_version!r}")
    return yaml_version


def frontmatter_text(data: bytes, where: str) -> str:
    """The YAML text of SKILL.md's frontmatter block, after the refusals every reading shares: not UTF-8, no block
    (``bad-frontmatter``), and whatever YAML readers read differently (``frontmatter-ambiguous``), with the nesting
    bound (:data:`MAX_FRONTMATTER_DEPTH`) that keeps either parser's recursion safe."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise VerificationError("bad-frontmatter", where, "SKILL.md is not UTF-8") from None
    m = FRONTMATTER.match(text)
    if not m:
        raise VerificationError("bad-frontmatter", where, "SKILL.md has no '---' frontmatter block")
    refuse_line_breaks(text, m.end(), where)
    refuse_ambiguous(m.group(1), where)
    return m.group(1)


def parse_frontmatter(data: bytes, where: str, yaml_version: str = "1.2") -> dict[str, Any]:
    """SKILL.md bytes -> the YAML frontmatter as a mapping, read with the YAML 1.2 core schema as the reference SDK
    and the conformance suite read it (so ``yes`` is the string "yes" and ``0o17`` the integer 15); with
    ``yaml_version="1.1"``, with PyYAML's SafeLoader as FastMCP reads it (``yes`` is true, ``0o17`` a string)."""
    check_reading(yaml_version)
    text = frontmatter_text(data, where)
    if yaml_version == "1.2":
        errors: tuple[type[BaseException], ...] = (yaml_error(),)
        version = ""
    else:  # integers past Python's digit limit are a ValueError; the depth bound makes RecursionError moot
        errors = (yaml.YAMLError, ValueError, RecursionError)
        version = " 1.1"
    try:
        value = load_core(text) if yaml_version == "1.2" else yaml.load(text, Loader=yaml.SafeLoader)
    except errors as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at frontmatter line {mark.line + 1}" if mark is not None else ""
        raise VerificationError("bad-frontmatter", where,
                                f"SKILL.md frontmatter is not valid YAML{version}{at}") from None
    if not isinstance(value, dict):
        raise VerificationError("bad-frontmatter", where, "SKILL.md frontmatter is not a mapping")
    return value


# Line breaks to a YAML 1.1 reader (PyYAML, and so this module's own parser) and ordinary text to a YAML 1.2 reader
# (eemeli/yaml, which the conformance suite uses, and js-yaml): a file holding one reads as two different mappings.
YAML11_ONLY_BREAKS = {"\x85": "NEXT LINE (NEL)", "\u2028": "LINE SEPARATOR", "\u2029": "PARAGRAPH SEPARATOR"}
_YAML11_ONLY_BREAK = re.compile("[\x85\u2028\u2029]")


def refuse_line_breaks(text: str, end: int, where: str) -> None:
    """Refuse ``frontmatter-ambiguous`` when ``text[:end]`` (SKILL.md up to the end of its frontmatter block) holds
    U+0085, U+2028 or U+2029, naming the character and its line and column in SKILL.md (lines counted at ``\n``,
    columns from 1)."""
    m = _YAML11_ONLY_BREAK.search(text, 0, end)
    if m is None:
        return
    i = m.start()
    line = text.count("\n", 0, i) + 1
    col = i - (text.rfind("\n", 0, i) + 1) + 1
    ch = m.group()
    raise VerificationError("frontmatter-ambiguous", where,
                            f"SKILL.md frontmatter holds U+{ord(ch):04X} {YAML11_ONLY_BREAKS[ch]} at line {line}, "
                            f"column {col}", "YAML 1.1 readers take it for a line break and YAML 1.2 readers "
                            "(eemeli/yaml, js-yaml) for text, so hosts would read different frontmatter; write it "
                            "as an escape in a double-quoted string (\"\\u2028\"), or leave it out")


_AMBIGUOUS_HINT = ("YAML parsers disagree on such frontmatter (which duplicate wins, what a tag means), so a host "
                   "could show other text than the one verified; a skill's frontmatter is plain YAML")
_MERGE = "tag:yaml.org,2002:merge"
MAX_FRONTMATTER_DEPTH = 64  # far beyond any real frontmatter; keeps the recursive parser and comparisons safe


def _ambiguous(where: str, what: str) -> VerificationError:
    return VerificationError("frontmatter-ambiguous", where, f"SKILL.md frontmatter holds {what}", _AMBIGUOUS_HINT)


def _scalar_key(loader: Any, ev: Any) -> str:
    """A mapping key's scalar event as the JSON key it becomes (``1``, ``1.0`` and ``"1"`` are all ``"1"``)."""
    tag = loader.resolve(yaml.ScalarNode, ev.value, ev.implicit)
    if tag == _MERGE:
        raise _ambiguous(loader.where, "a merge key (<<)")
    try:
        return _key(loader.construct_object(yaml.ScalarNode(tag, ev.value, style=ev.style)))
    except Exception:  # a value no constructor takes (an integer over Python's digit limit): its text
        return ev.value


def refuse_ambiguous(text: str, where: str) -> None:
    """Refuse frontmatter whose meaning depends on the parser (``frontmatter-ambiguous``): duplicate keys (also
    keys that JSON cannot tell apart, like ``1`` and ``"1"``), anchors, aliases, merge keys, explicit tags and
    collections used as keys (a directive cannot occur: its ``---`` would end the block). One pass over the parser's events, without recursion, so no nesting
    depth can exhaust the stack (deeper than :data:`MAX_FRONTMATTER_DEPTH` is ``bad-frontmatter``). Text that is not YAML at all is left to the parser's own error."""
    loader = yaml.SafeLoader("")
    loader.where = where  # type: ignore[attr-defined]
    # One frame per open collection: [is a mapping, the next node is a key, the keys seen so far].
    stack: list[list[Any]] = []
    try:
        for ev in yaml.parse(text, Loader=yaml.SafeLoader):
            if not isinstance(ev, yaml.NodeEvent):
                if isinstance(ev, yaml.CollectionEndEvent):
                    stack.pop()
                continue
            if isinstance(ev, yaml.AliasEvent):
                raise _ambiguous(where, f"the alias *{ev.anchor}")
            if ev.anchor is not None:
                raise _ambiguous(where, f"the anchor &{ev.anchor}")
            if ev.tag is not None:
                raise _ambiguous(where, f"the explicit tag {ev.tag}")
            frame = stack[-1] if stack else None
            is_key = frame is not None and frame[0] and frame[1]
            if frame is not None and frame[0]:
                frame[1] = not frame[1]
            if isinstance(ev, yaml.CollectionStartEvent):
                if is_key:
                    raise _ambiguous(where, "a mapping or sequence used as a key")
                stack.append([isinstance(ev, yaml.MappingStartEvent), True, set()])
                if len(stack) > MAX_FRONTMATTER_DEPTH:
                    raise VerificationError("bad-frontmatter", where, "SKILL.md frontmatter nests more than "
                                            f"{MAX_FRONTMATTER_DEPTH} levels deep")
            elif is_key:
                key = _scalar_key(loader, ev)
                if key in frame[2]:  # type: ignore[index]
                    raise _ambiguous(where, f"the key {key!r} twice")
                frame[2].add(key)  # type: ignore[index]
    except yaml.YAMLError:
        return
    finally:
        loader.dispose()


def key_set_diff(a: Any, b: Any, path: str = "") -> list[str]:
    """The keys (dotted paths, sorted) present in one mapping and not the other, at any depth: a null value is a
    value, never the same as an absent key. Mappings nested in both sides, and sequences of the same length, are
    compared item by item."""
    out: list[str] = []
    if isinstance(a, dict) and isinstance(b, dict):
        ka = {_key(k): v for k, v in a.items()}
        kb = {_key(k): v for k, v in b.items()}
        for k in sorted(set(ka) | set(kb)):
            sub = f"{path}.{k}" if path else k
            if (k in ka) != (k in kb):
                out.append(sub)
            else:
                out.extend(key_set_diff(ka[k], kb[k], sub))
    elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            out.extend(key_set_diff(x, y, f"{path}.{i}" if path else str(i)))
    return out


def _key(k: Any) -> str:
    """Mapping keys as JSON carries them: YAML may key by number, bool or null; JSON keys are strings."""
    if isinstance(k, str):
        return k
    if k is None:
        return "null"
    if isinstance(k, bool):
        return "true" if k else "false"
    if isinstance(k, float) and k.is_integer():
        return str(int(k))
    return str(k)


def _date_equal(d: _dt.date, s: str) -> bool:
    """A YAML timestamp has no JSON type, so a JSON entry carries it as a string; equal if it parses to the same."""
    try:
        other = yaml.safe_load(s)
    except yaml.YAMLError:
        return False
    return type(other) is type(d) and other == d


def yaml_equal(a: Any, b: Any) -> bool:
    """Equality of YAML/JSON values: 1 == 1.0; booleans are not numbers; every null is equal, and a missing mapping
    key equals null; mappings compare key by key, sequences item by item, recursively."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
            return True
        return a == b
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    if isinstance(a, _dt.date) and isinstance(b, str):
        return _date_equal(a, b)
    if isinstance(b, _dt.date) and isinstance(a, str):
        return _date_equal(b, a)
    if isinstance(a, _dt.date) and isinstance(b, _dt.date):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return not mapping_diff(a, b)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(yaml_equal(x, y) for x, y in zip(a, b))
    return False


def mapping_diff(a: dict[Any, Any], b: dict[Any, Any]) -> list[str]:
    """The keys (as strings, sorted) whose values differ; a key missing on one side counts as null there."""
    ka = {_key(k): v for k, v in a.items()}
    kb = {_key(k): v for k, v in b.items()}
    if len(ka) != len(a) or len(kb) != len(b):  # two keys that JSON cannot tell apart: never equal
        return sorted(set(ka) | set(kb))
    return sorted(k for k in set(ka) | set(kb) if not yaml_equal(ka.get(k), kb.get(k)))


_MISSING = object()


def describe_value(value: Any, limit: int = 60) -> str:
    """A YAML/JSON value with its type, for a message: ``string 'yes'``, ``boolean true``, ``integer 15``. Text is
    escaped (no control characters reach the terminal) and cut to ``limit`` characters."""
    if value is _MISSING:
        return "missing"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {'true' if value else 'false'}"
    if isinstance(value, int):
        return f"integer {value}"
    if isinstance(value, float):
        return f"number {value!r}"
    if isinstance(value, str):
        shown = "".join(("\\" + c) if c in "\\'" else c if c.isprintable() else repr(c)[1:-1]
                        for c in value[:limit])
        return f"string '{shown}{'...' if len(value) > limit else ''}'"
    if isinstance(value, _dt.datetime):
        return f"timestamp {value.isoformat()}"
    if isinstance(value, _dt.date):
        return f"date {value.isoformat()}"
    import json

    text = json.dumps(value, ensure_ascii=True, sort_keys=True, default=str)
    kind = "mapping" if isinstance(value, dict) else "sequence" if isinstance(value, (list, tuple)) else "value"
    return f"{kind} {text[:limit]}{'...' if len(text) > limit else ''}"


def value_diff(a: Any, b: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """Where two YAML/JSON values differ: ``(dotted path, a's value, b's value)``, mappings followed key by key."""
    if isinstance(a, dict) and isinstance(b, dict):
        ka = {_key(k): v for k, v in a.items()}
        kb = {_key(k): v for k, v in b.items()}
        if len(ka) == len(a) and len(kb) == len(b):
            out = []
            for k in sorted(set(ka) | set(kb)):
                va, vb = ka.get(k, _MISSING), kb.get(k, _MISSING)
                if not yaml_equal(None if va is _MISSING else va, None if vb is _MISSING else vb):
                    out.extend(value_diff(va, vb, f"{path}.{k}" if path else k))
            return out
    return [] if yaml_equal(a, b) else [(path, a, b)]


_MISMATCH_HINT = "a host must not load a skill whose file and entry disagree"
_READ_AS = {"1.2": "frontmatter is read as YAML 1.2, as the reference SDK reads it",
            "1.1": "frontmatter is read as YAML 1.1, as --frontmatter-yaml 1.1 asks"}
_OTHER = {"1.2": "1.1", "1.1": "1.2"}


def _mismatch(fm: dict[str, Any], entry: SkillEntry, yaml_version: str) -> tuple[str, str] | None:
    """Why the frontmatter ``fm`` (read as ``yaml_version``) is not the entry's, as (message, hint); None if it is."""
    keys = key_set_diff(fm, entry.frontmatter)
    if keys:
        return (f"SKILL.md frontmatter and the entry's do not have the same keys: {', '.join(repr(k) for k in keys)}",
                _MISMATCH_HINT)
    diff = value_diff(fm, entry.frontmatter)
    if diff:
        detail = "; ".join(f"'{path}' (file: {describe_value(a)}, entry: {describe_value(b)})" for path, a, b in diff)
        return (f"SKILL.md frontmatter differs from the entry's in field{'s' * (len(diff) != 1)} {detail}",
                f"{_MISMATCH_HINT} ({_READ_AS[yaml_version]})")
    return None


@dataclass(frozen=True)
class _Reading:
    """One place where YAML 1.2 and YAML 1.1 read the frontmatter differently: a value (``key`` is the last key's
    text and ``text`` the value as written, when it is a plain scalar), or a key (``is_key``)."""

    path: str
    key: str | None
    text: str | None
    v12: Any
    v11: Any
    is_key: bool = False

    def phrase(self) -> str:
        both = f"reads as {describe_value(self.v12)} under YAML 1.2 and as {describe_value(self.v11)} under YAML 1.1"
        if self.is_key:
            return f"the key {self.text!r} {both}"
        return f"'{self.path}: {self.text}' {both}" if self.text is not None else f"'{self.path}' {both}"

    def quoted(self) -> str | None:
        """The fix, as the publisher would write it: ``approved: "yes"``."""
        if self.is_key or self.text is None or self.key is None:
            return None
        return f'{self.key}: "{self.text}"'  # the values the readings disagree on hold no quote or backslash


def _plain(node: Any) -> str | None:
    return node.value if isinstance(node, yaml.ScalarNode) and node.style is None and len(node.value) <= 60 else None


def _readings(node: Any, v12: Any, v11: Any, path: str = "", key: str | None = None) -> list[_Reading]:
    """Where the two readings of one composed YAML node differ, in document order. Both readings were built from the
    same text, so their mappings hold the node's pairs in the node's order (duplicates were refused before); the
    depth is bounded by :data:`MAX_FRONTMATTER_DEPTH`."""
    if isinstance(node, yaml.MappingNode) and isinstance(v12, dict) and isinstance(v11, dict) \
            and len(node.value) == len(v12) == len(v11):
        out = []
        for (kn, vn), (k12, x12), (k11, x11) in zip(node.value, v12.items(), v11.items()):
            text = kn.value if isinstance(kn, yaml.ScalarNode) else None
            sub = f"{path}.{_key(k12)}" if path else _key(k12)
            if _key(k12) != _key(k11):
                out.append(_Reading(sub, None, text, k12, k11, is_key=True))
            else:
                out.extend(_readings(vn, x12, x11, sub, text))
        return out
    if isinstance(node, yaml.SequenceNode) and isinstance(v12, list) and isinstance(v11, list) \
            and len(node.value) == len(v12) == len(v11):
        out = []
        for i, (item, x12, x11) in enumerate(zip(node.value, v12, v11)):
            out.extend(_readings(item, x12, x11, f"{path}.{i}" if path else str(i)))
        return out
    return [] if yaml_equal(v12, v11) else [_Reading(path, key, _plain(node), v12, v11)]


def _reading_diffs(data: bytes, where: str) -> list[_Reading] | None:
    """Where YAML 1.2 and YAML 1.1 read SKILL.md's frontmatter differently; None when one of them cannot read it."""
    try:
        fm12, fm11 = parse_frontmatter(data, where, "1.2"), parse_frontmatter(data, where, "1.1")
        node = yaml.compose(frontmatter_text(data, where), Loader=yaml.SafeLoader)
    except (VerificationError, yaml.YAMLError):
        return None
    return _readings(node, fm12, fm11)


def _explain(readings: list[_Reading]) -> str:
    return "; ".join(r.phrase() for r in readings)


def check_frontmatter(entry: SkillEntry, data: bytes, yaml_version: str = "1.2", *,
                      pinned: bool = False) -> dict[str, Any]:
    """Parse the verified SKILL.md bytes (YAML 1.2 core schema; with ``yaml_version="1.1"``, PyYAML's SafeLoader)
    and compare the frontmatter field by field with the entry's. The message names each field and both values with
    their types; when the file and the entry agree under the other reading, it says so, names both readings of
    each value that differs, and the hint gives the fix (the publisher quotes them) and the opt-in (``pinned``: the
    reading comes from a lock, so the opt-in is to pin again)."""
    fm = parse_frontmatter(data, entry.uri, yaml_version)
    problem = _mismatch(fm, entry, yaml_version)
    if problem is None:
        return fm
    message, hint = problem
    other = _OTHER[yaml_version]
    readings = _reading_diffs(data, entry.uri)
    if readings and _mismatch(parse_frontmatter(data, entry.uri, other), entry, other) is None:
        message += (f"; the file and the entry agree under YAML {other} but not under YAML {yaml_version}: "
                    + _explain(readings))
        example = readings[0].quoted()
        publisher = " (as PyYAML, and so FastMCP, does) and should" if other == "1.1" else " and can"
        hint = (f"{_MISMATCH_HINT} ({_READ_AS[yaml_version]}); the publisher read it as YAML {other}{publisher} "
                f"quote these values in SKILL.md{f' ({example})' if example else ''}, which every YAML reader reads "
                "as the same string; ")
        if pinned:
            hint += (f"the lock pins this skill read as YAML {yaml_version}: to accept the YAML {other} reading, pin "
                     f"it again with --frontmatter-yaml {other}")
        elif other == "1.1":
            hint += ("to accept this publisher's YAML 1.1 reading, pass --frontmatter-yaml 1.1 "
                     "(frontmatter_yaml=\"1.1\" in the library)")
        else:
            hint += ("to accept its YAML 1.2 reading, load it without --frontmatter-yaml 1.1 "
                     "(frontmatter_yaml=\"1.2\" in the library)")
    raise VerificationError("frontmatter-mismatch", entry.uri, message, hint)


def frontmatter_note(entry: SkillEntry, data: bytes, yaml_version: str) -> str | None:
    """For a SKILL.md that :func:`check_frontmatter` accepted with ``yaml_version="1.1"``: what a YAML 1.2 host
    would see, when that is not its entry (the note ``remote load`` prints per skill accepted that way); None when
    both readings agree with the entry, or the reading was YAML 1.2."""
    if check_reading(yaml_version) == "1.2":
        return None
    try:
        if _mismatch(parse_frontmatter(data, entry.uri, "1.2"), entry, "1.2") is None:
            return None
        why = _explain(_reading_diffs(data, entry.uri) or [])
    except VerificationError:
        why = "its frontmatter is not valid YAML 1.2"
    return ("accepted with its frontmatter read as YAML 1.1 (--frontmatter-yaml 1.1), as its entry reads it; a YAML "
            f"1.2 host (the reference SDK) refuses it: {why}")
