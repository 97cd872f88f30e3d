"""Pins: a lock file that binds (server, skill URI) to the exact manifest that was approved. No I/O but the lock file
itself, no ``mcp``.

A pinned digest is the approval; a changed manifest revokes it before anything is read. The manifest digest is the
sha256 of the canonical JSON of the sorted ``[uri, digest]`` pairs (``[["skill://a/SKILL.md","sha256:…"],…]``,
separators ``,`` and ``:``, UTF-8, no whitespace), so any added, removed or changed file changes it.

A pin names its server by a name, never by how the server is started or reached here: the name the author gives
(``project-skill pin SERVER --name NAME``), else the server's own identity, the ``name`` of the ``serverInfo`` it
sends in its handshake. So a lock written on one machine verifies on another, and in CI, where the same server is
started from another path or reached at another address; ``remote load SERVER --locked`` and ``compose`` find the
pins by the same name (``--name``, else the ``serverInfo`` name). A name is 1 to :data:`MAX_NAME` printable
characters, with no line break and no space at either end.

The lock file is stable JSON (indent 2, fixed key order, one trailing newline)::

    {
      "version": 2,
      "skills": [
        {
          "server": "refund-server",
          "uri": "skill://refund-flow/SKILL.md",
          "manifest": "sha256:…",
          "files": [{"uri": "skill://refund-flow/SKILL.md", "digest": "sha256:…", "size": 1234}, …]
        }
      ]
    }

Skills are sorted by (server, uri); files by uri.

A skill pinned with its frontmatter read as YAML 1.1 (``project-skill pin --frontmatter-yaml 1.1``, for a publisher
such as FastMCP that lists ``approved: yes`` as ``true``) carries ``"frontmatter_yaml": "1.1"`` after ``manifest``;
a pin without it reads YAML 1.2, the default, so a lock that pins nothing as YAML 1.1 is byte for byte what it was,
and the format stays version 1. ``remote load --locked`` reads each skill's frontmatter as its pin says: a pin of 1.2
refuses a skill that matches its entry only under YAML 1.1, and a pin of 1.1 one that matches only under YAML 1.2.
A reader that predates the field ignores it and reads YAML 1.2, so it refuses such a skill: it fails closed.

A version 1 lock named each server by its command line or URL, which holds on one
machine only. It is refused (``bad-lock`` at its ``version``, naming each server in it and the command that pins it
again), not read: reading its command lines as names would match nothing, or, worse, quietly keep a lock that fails
on the next machine; and guessing a name for each would approve a server under a name nobody chose. Pinning reads
only manifests, so pinning again is one command per server, after the review that any new pin takes.
"""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from .. import bounded
from ..bundle import stable_json
from ..disk import write_file
from ..errors import UsageError, plural
from .errors import LockError
from ..sep2640 import DIGEST_RULE, FRONTMATTER_YAML, FileRef, SkillEntry, check_manifest, check_reading, clip, digest

LOCK_VERSION = 2
MAX_NAME = 128  # characters in a server's name


def manifest_digest(files: Iterable[FileRef]) -> str:
    pairs = sorted([f.uri, f.digest] for f in files)
    canonical = json.dumps(pairs, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return digest(canonical)


def name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a server in a lock (see the module), or None."""
    if not isinstance(name, str) or not name:
        return "a server's name is a non-empty string"
    if len(name) > MAX_NAME:
        return f"a server's name is at most {MAX_NAME} characters, not {len(name)}"
    if name != name.strip() or not name.isprintable():
        return "a server's name has no line break, no control character and no space at either end"
    return None


def server_name(given: str | None, identity: str | None, spec: str) -> str:
    """The name a lock knows the server started by ``spec`` by: ``given`` (``--name``), else ``identity`` (the
    ``name`` of its ``serverInfo``). A usage error when neither is a good name."""
    name = given if given is not None else identity
    if name is None:
        raise UsageError(
            f"the server {clip(spec)} sends no serverInfo name, so a lock cannot know it by one; name it with --name NAME"
        )
    problem = name_problem(name)
    if problem:
        how = "--name" if given is not None else f"the server's serverInfo name {clip(repr(name))}"
        raise UsageError(f"{how}: {problem}; give another with --name NAME")
    return name


@dataclass(frozen=True)
class Pin:
    server: str
    uri: str
    manifest: str
    files: tuple[FileRef, ...]
    frontmatter_yaml: str = "1.2"  # how the skill's frontmatter is read when loaded with this pin

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"server": self.server, "uri": self.uri, "manifest": self.manifest}
        if self.frontmatter_yaml != FRONTMATTER_YAML[0]:
            doc["frontmatter_yaml"] = self.frontmatter_yaml
        doc["files"] = [f.to_json() for f in sorted(self.files, key=lambda f: f.uri)]
        return doc


@dataclass
class Lock:
    pins: list[Pin] = field(default_factory=list)

    def for_server(self, server: str) -> list[Pin]:
        """The pins of the server the lock names ``server``."""
        return [p for p in self.pins if p.server == server]

    def find(self, server: str, uri: str) -> Pin | None:
        for p in self.pins:
            if p.server == server and p.uri == uri:
                return p
        return None

    def servers(self) -> list[str]:
        return sorted({p.server for p in self.pins})

    def updated(self, server: str, pins: list[Pin], *, replace_server: bool) -> "Lock":
        """A new lock with ``pins`` added or replaced; with ``replace_server`` every other pin of that server goes."""
        new = {p.uri for p in pins}
        kept = [p for p in self.pins if p.server != server or (not replace_server and p.uri not in new)]
        return Lock(sorted([*kept, *pins], key=lambda p: (p.server, p.uri)))

    def to_json(self) -> dict[str, Any]:
        return {
            "version": LOCK_VERSION,
            "skills": [p.to_json() for p in sorted(self.pins, key=lambda p: (p.server, p.uri))],
        }


def pin_entry(server: str, entry: SkillEntry, *, frontmatter_yaml: str = "1.2") -> Pin:
    """Pin a served entry from its manifest alone: approval reads no file. The manifest is checked first.
    ``server``: the server's name (:func:`server_name`). ``frontmatter_yaml``: the reading of its frontmatter that the
    pin approves ("1.2", or "1.1")."""
    check_reading(frontmatter_yaml)
    problem = name_problem(server)
    if problem:
        raise LockError("bad-lock", str(server), problem)
    if entry.resources is None:
        raise LockError(
            "lock-mismatch",
            entry.uri,
            'a "dynamic" skill has no manifest to pin',
            "only skills that list their files with digests can be pinned",
        )
    check_manifest(entry)
    files = tuple(sorted(entry.resources, key=lambda f: f.uri))
    return Pin(server, entry.uri, manifest_digest(files), files, frontmatter_yaml)


def dumps_lock(lock: Lock) -> bytes:
    return stable_json(lock.to_json())


def write_lock(path: str | Path, lock: Lock) -> None:
    """Write atomically, by :func:`projector.disk.write_file` (a temporary file beside the target, then a rename)."""
    write_file(path, dumps_lock(lock))


def _bad(path: str, message: str) -> LockError:
    return LockError("bad-lock", path, message, "write it again with: project-skill pin SERVER --lock FILE")


def parse_lock(data: bytes, path: str = "skills.lock") -> Lock:
    """A lock file's bytes as a :class:`Lock`, or ``bad-lock``. The JSON is read with bounds
    (:func:`projector.bounded.loads`: nesting depth, integer digits, no NaN, no duplicate key); ``version`` is exactly
    the integer :data:`LOCK_VERSION` (not ``true``, not ``1.0``); no pin lists a file twice; a pin's
    ``frontmatter_yaml``, when there is one, is "1.2" or "1.1"."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _bad(path, f"not a JSON lock file ({exc})") from None
    try:
        doc = bounded.loads(text)
    except bounded.BadJSON as exc:
        at = f" at line {exc.line}, column {exc.col}" if exc.line else ""
        raise _bad(path, f"not a JSON lock file ({exc}{at})") from None
    version = doc.get("version") if isinstance(doc, dict) else None
    if type(version) is int and version == 1 and isinstance(doc.get("skills"), list):
        raise _old_version(path, text, doc["skills"])
    if type(version) is not int or version != LOCK_VERSION or not isinstance(doc.get("skills"), list):
        raise _bad(
            path, f'not a version {LOCK_VERSION} lock file (expected {{"version": {LOCK_VERSION}, "skills": [...]}})'
        )
    pins = []
    for i, s in enumerate(doc["skills"]):
        where = f"skills[{i}]"
        if not isinstance(s, dict) or not all(isinstance(s.get(k), str) for k in ("server", "uri", "manifest")):
            raise _bad(path, f"{where} needs the strings 'server', 'uri' and 'manifest'")
        if not isinstance(s.get("files"), list):
            raise _bad(path, f"{where} needs a 'files' list")
        files = []
        seen: set[str] = set()
        for f in s["files"]:
            ok = (
                isinstance(f, dict)
                and isinstance(f.get("uri"), str)
                and isinstance(f.get("digest"), str)
                and DIGEST_RULE.fullmatch(f["digest"])
                and isinstance(f.get("size"), int)
                and not isinstance(f.get("size"), bool)
                and f["size"] >= 0
            )
            if not ok:
                raise _bad(path, f"{where} has a file without a valid uri, digest and size")
            if f["uri"] in seen:
                raise _bad(path, f"{where} ({clip(s['uri'])}) lists the file {clip(f['uri'])} twice")
            seen.add(f["uri"])
            files.append(FileRef(f["uri"], f["digest"], f["size"]))
        if manifest_digest(files) != s["manifest"]:
            raise _bad(
                path,
                f"{where} ({s['uri']}): its manifest digest does not match its own files; the lock was edited by hand",
            )
        problem = name_problem(s["server"])
        if problem:
            raise _bad(path, f"{where} ({clip(s['uri'])}): {problem}")
        reading = s.get("frontmatter_yaml", FRONTMATTER_YAML[0])
        if reading not in FRONTMATTER_YAML:
            raise _bad(path, f'{where} ({clip(s["uri"])}) has a \'frontmatter_yaml\' that is neither "1.2" nor "1.1"')
        pins.append(Pin(s["server"], s["uri"], s["manifest"], tuple(files), reading))
    keys = [(p.server, p.uri) for p in pins]
    if len(set(keys)) != len(keys):
        raise _bad(path, "a (server, uri) pair is pinned twice")
    return Lock(pins)


def _old_version(path: str, text: str, skills: list[Any]) -> LockError:
    """``bad-lock`` for a version 1 lock, at its ``version`` (see the module): it names its servers by how they were
    started on one machine. The hint pins each of them again."""
    at = text.find('"version"')
    line = text.count("\n", 0, at) + 1
    col = at - (text.rfind("\n", 0, at) + 1) + 1
    servers = sorted({s["server"] for s in skills if isinstance(s, dict) and isinstance(s.get("server"), str)})
    again = "; ".join(f"project-skill pin {shlex.quote(clip(s))} --lock {shlex.quote(path)}" for s in servers[:5])
    more = f" (and {len(servers) - 5} more)" if len(servers) > 5 else ""
    return LockError(
        "bad-lock",
        f"{path}:{line}:{col}" if at >= 0 else path,
        "a version 1 lock names each server by the command line or URL it was started with on one machine, so it "
        f"cannot be verified anywhere else; version {LOCK_VERSION} names a server by its name (--name, else its "
        "serverInfo name)",
        f"review the servers' skills and pin them again, which writes version {LOCK_VERSION}: "
        + (again + more if servers else "project-skill pin SERVER --lock FILE"),
    )


MAX_LOCK_BYTES = 64 * 1024 * 1024  # room for thousands of pinned skills of 512 files each


def read_lock(path: str | Path, *, missing_ok: bool = False) -> Lock:
    """Read a lock file (a regular file of at most :data:`MAX_LOCK_BYTES`, read by :func:`projector.bounded.
    read_regular`; a symbolic link to one is followed, as the user named it). ``missing_ok``: no file is an empty
    lock."""
    p = Path(path)
    if not os.path.exists(p):
        if missing_ok:
            return Lock()
        raise LockError(
            "bad-lock",
            str(path),
            "the lock file does not exist",
            "write one with: project-skill pin SERVER --lock FILE",
        )
    try:
        data = bounded.read_regular(p, MAX_LOCK_BYTES, follow_links=True)
    except bounded.Unreadable as exc:
        raise LockError("bad-lock", str(path), f"cannot read the lock file: {exc}") from None
    return parse_lock(data, str(path))


def _short(d: str) -> str:
    return d[: len("sha256:") + 12] + "..."


def changes(pin: Pin, entry: SkillEntry) -> list[str]:
    """What differs between a pin and a served entry, one phrase per change, sorted by URI."""
    if entry.resources is None:
        return ['the skill is now served as "dynamic" (no manifest)']
    old = {f.uri: f for f in pin.files}
    new = {f.uri: f for f in entry.resources}
    out = []
    for uri in sorted(set(old) | set(new)):
        if uri not in new:
            out.append(f"removed {uri}")
        elif uri not in old:
            out.append(f"added {uri}")
        elif old[uri].digest != new[uri].digest:
            out.append(f"changed {uri} ({_short(old[uri].digest)} -> {_short(new[uri].digest)})")
        elif old[uri].size != new[uri].size:
            out.append(f"changed size of {uri} ({plural(old[uri].size, 'byte')} -> {plural(new[uri].size, 'byte')})")
    return out


def compare(
    pin: Pin, entry: SkillEntry, lock_path: str = "skills.lock", *, frontmatter_yaml: str | None = None
) -> None:
    """Raise ``lock-mismatch`` naming what changed when the served manifest is not the pinned one, or when the caller
    asks for another reading of the frontmatter (``frontmatter_yaml``; None: the pin's) than the pin approved."""
    diff = changes(pin, entry)
    again = (
        f"project-skill pin SERVER {shlex.quote(entry.uri)} --lock {shlex.quote(lock_path)} "
        f"--name {shlex.quote(pin.server)}"
    )
    server = f" (SERVER: how the server the lock names {pin.server!r} is started or reached here)"
    if diff:
        raise LockError(
            "lock-mismatch",
            entry.uri,
            f"the served manifest differs from the one pinned in {lock_path}: " + "; ".join(diff),
            f"if the change is expected, pin it again: {again}"
            + (f" --frontmatter-yaml {pin.frontmatter_yaml}" if pin.frontmatter_yaml != "1.2" else "")
            + server,
        )
    if frontmatter_yaml is not None and check_reading(frontmatter_yaml) != pin.frontmatter_yaml:
        raise LockError(
            "lock-mismatch",
            entry.uri,
            f"{lock_path} pins this skill with its frontmatter read as YAML "
            f"{pin.frontmatter_yaml}, not as YAML {frontmatter_yaml}",
            "read it as the lock says (leave out --frontmatter-yaml), or pin it again after review: "
            f"{again} --frontmatter-yaml {frontmatter_yaml}{server}",
        )
