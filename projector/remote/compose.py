"""Pinned skills composed into an agent's instructions, under spike 010's trust rules. No model inside.

``project-skill pin`` approves a skill by its manifest digest, and ``remote load --locked`` verifies one. This module
is the other half: it hands verified skills to an agent. :func:`compose` reads a lock file, resolves each selected
skill on the server that pinned it, and verifies it against its pin before any byte is used. Then it returns a
:class:`Composition`:

- ``instructions``: the system instructions. Only pinned skills enter them, each inside an origin tag that names
  the server (as the lock names it: its name, never how it is started or reached, :mod:`.pins`; the caller says
  how to reach each one, ``targets``), the skill URI and the manifest digest (:func:`.origin.origin_tag`). Anything in a skill's text that looks
  like the tag, look-alike characters included, is escaped (:func:`.origin.escape_tags`), so a skill can neither close
  its own tag nor open another. The bytes are a pure function of the lock and the verified files, so composing twice gives the same bytes.
- ``user_turns``: skills the lock does not pin. They are refused, unless the caller opts in with
  ``unpinned="user-turn"``. Then each one goes into a user-role turn, verified only against the manifest its server
  serves now, and tagged ``pinned="no"``. It never enters the system instructions.
- ``reader``: a :class:`FileReader` over the verified bytes of each pinned skill. It is keyed by the server that
  pinned the skill, and it refuses a URI outside that skill's pinned manifest and any other server. It holds what
  was verified at composition and never goes back to the server, so a server that changes later cannot change what
  the agent reads.

These are refused before anything is returned: a manifest that differs from its pin (revocation, fatal before the
agent's loop), bytes that do not match the manifest (one byte of one file), a frontmatter that no longer matches
its entry, a pinned skill that is no longer served, an unpinned skill without the opt-in, and a ``"dynamic"`` skill
(it has no manifest, so nothing in it can be verified, and it is refused even as a user-role turn). Every problem of
the run is reported at once in one :class:`CompositionRefused`. Each diagnostic sits at the ``line:col`` of the
skill's entry in the lock file and names the changed files. The codes are the client's own (``lock-mismatch``,
``digest-mismatch``, ``frontmatter-mismatch``, ``not-pinned``, ``dynamic-declined``, …; see
:mod:`projector.remote.errors`).

The SEP-2640 wire (pins, the manifest digest, the verified load) belongs to :mod:`.pins`, :mod:`.verify` and
:mod:`.client`. This module reaches them in one place, :class:`_Wire`, and calls only their public functions.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..errors import Diagnostic, ProjectorError, Span, UsageError, plural
from .errors import DynamicDeclined, LockError, RemoteError
from .origin import PREAMBLE, USER_TURN_PREAMBLE, escape_tags, origin_tag  # noqa: F401 (escape_tags: public here too)


# ------------------------------------------------------------------------------------------------------ the wire


class _Wire:
    """Every call this module makes into the client library's wire (:mod:`.pins`, :mod:`.verify`, :mod:`.client`,
    :mod:`.targets`), in one place, so that they can be re-pointed when the wire moves. ``client`` (which imports
    ``mcp``) is imported on first use."""

    @staticmethod
    def read_lock(path: str) -> Any:
        from .pins import read_lock

        return read_lock(path)

    @staticmethod
    def lock_bytes(path: str) -> bytes:
        from .. import bounded
        from .pins import MAX_LOCK_BYTES

        return bounded.read_regular(Path(path), MAX_LOCK_BYTES, follow_links=True)

    @staticmethod
    def parse_lock(data: bytes, path: str) -> Any:
        from .pins import parse_lock

        return parse_lock(data, path)

    @staticmethod
    def manifest_digest(files: Any) -> str:
        from .pins import manifest_digest

        return manifest_digest(files)

    @staticmethod
    def connect(target: Any, label: str) -> Any:
        from . import client  # looked up on each call, so a test can stand a server in for a name

        return client.connect(target, label)

    @staticmethod
    async def resolve(remote: Any, name: str) -> Any:
        from .targets import resolve

        [(entry, _files)] = await resolve(remote, [name], False)
        return entry

    @staticmethod
    def skill_file() -> str:
        from ..sep2640 import SKILL_FILE

        return SKILL_FILE


# ------------------------------------------------------------------------------------------------------ results


@dataclass(frozen=True)
class ComposedSkill:
    """One verified skill: where it came from, the manifest it was verified against (the pin's, or for an unpinned
    skill the served one), its SKILL.md text, and the verified bytes of its files (SKILL.md only when unpinned)."""

    server: str
    uri: str
    manifest: str
    pinned: bool
    text: str
    files: Mapping[str, bytes]

    @property
    def root(self) -> str:
        return self.uri.rsplit("/", 1)[0]

    def tagged(self) -> str:
        return origin_tag(self.server, self.uri, self.manifest, self.text, pinned=self.pinned)


class FileReader:
    """The supporting files of the pinned skills, as verified at composition, each bound to its pinning server."""

    def __init__(self, skills: Sequence[ComposedSkill], lock_path: str):
        self._skills = tuple(s for s in skills if s.pinned)
        self._lock_path = lock_path

    def uris(self, server: str) -> list[str]:
        """Every file the reader will hand out for ``server`` (as the lock names it), sorted."""
        return sorted(u for s in self._skills if s.server == server for u in s.files)

    def read(self, server: str, uri: str) -> bytes:
        """The verified bytes of ``uri`` from ``server``: ``not-pinned`` when no skill pinned from that server holds
        the URI, ``unlisted-file`` when one does but its pinned manifest does not list it."""
        mine = [s for s in self._skills if s.server == server and uri.startswith(s.root + "/")]
        if not mine:
            owners = sorted({s.server for s in self._skills if uri.startswith(s.root + "/")})
            where = f"; it was pinned from {', '.join(owners)}" if owners else ""
            raise LockError(
                "not-pinned",
                uri,
                f"no skill composed from {server} holds this file{where}",
                "a skill's files are read only from the server that pinned it",
            )
        skill = max(mine, key=lambda s: len(s.root))
        if uri not in skill.files:
            from .errors import VerificationError

            raise VerificationError(
                "unlisted-file",
                uri,
                f"the manifest pinned for {skill.uri} in {self._lock_path} does not list this file",
                "a host reads only the files a skill's pinned manifest lists",
            )
        return skill.files[uri]

    def read_text(self, server: str, uri: str) -> str:
        data = self.read(server, uri)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            from .errors import VerificationError

            raise VerificationError("bad-content", uri, "the file is not UTF-8 text") from None


@dataclass(frozen=True)
class Composition:
    """What :func:`compose` returns: the system instructions, the user-role turns, and the file reader."""

    skills: tuple[ComposedSkill, ...]  # the pinned skills, sorted by (server, uri)
    user_turns: tuple[ComposedSkill, ...]  # the unpinned skills accepted as user-role turns, sorted the same way
    reader: FileReader

    @property
    def instructions(self) -> str:
        """The system instructions: the preamble, then each pinned skill in its origin tag, a blank line between.
        Empty when no skill is pinned."""
        return compose_instructions(self.skills)

    def user_turn_texts(self) -> tuple[str, ...]:
        return tuple(USER_TURN_PREAMBLE + s.tagged() for s in self.user_turns)

    def servers(self) -> list[str]:
        return sorted({s.server for s in (*self.skills, *self.user_turns)})


def compose_instructions(skills: Sequence[ComposedSkill]) -> str:
    pinned = sorted((s for s in skills if s.pinned), key=lambda s: (s.server, s.uri))
    if not pinned:
        return ""
    return PREAMBLE + "".join("\n" + s.tagged() for s in pinned)


class CompositionRefused(ProjectorError):
    """The composition was refused: one diagnostic per problem, each at its skill's entry in the lock file. Nothing
    was returned, so no byte of any skill reached an agent."""

    @property
    def codes(self) -> list[str]:
        return [d.code for d in self.diagnostics]


# ------------------------------------------------------------------------------------------------------ the lock


def entry_offsets(text: str) -> list[int]:
    """The offset of each element of the top-level ``"skills"`` array of a lock file's JSON text (which
    :func:`~.pins.parse_lock` has accepted), in order."""
    decoder = json.JSONDecoder()
    ws = re.compile(r"[ \t\n\r]*")
    i = ws.match(text, 0).end() + 1  # past '{'
    while True:
        i = ws.match(text, i).end()
        if text[i] == "}":
            return []
        key, i = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
        i = ws.match(text, ws.match(text, i).end() + 1).end()  # past ':'
        if key == "skills":
            return _elements(text, i + 1, decoder, ws)
        _, i = decoder.raw_decode(text, i)
        i = ws.match(text, i).end()
        i += text[i] == ","


def _elements(text: str, i: int, decoder: json.JSONDecoder, ws: re.Pattern[str]) -> list[int]:
    out = []
    while True:
        i = ws.match(text, i).end()
        if text[i] == "]":
            return out
        out.append(i)
        _, i = decoder.raw_decode(text, i)
        i = ws.match(text, i).end()
        i += text[i] == ","


def _span(path: str, text: str, offset: int) -> Span:
    line = text.count("\n", 0, offset) + 1
    return Span(path, line, offset - (text.rfind("\n", 0, offset) + 1) + 1)


@dataclass(frozen=True)
class PositionedLock:
    """A lock file and the ``file:line:col`` of each of its entries, by (server, uri)."""

    path: str
    lock: Any
    spans: Mapping[tuple[str, str], Span]

    def span(self, server: str, uri: str) -> Span:
        return self.spans.get((server, uri), Span(self.path))


def read_positioned(path: str | Path) -> PositionedLock:
    """Read a lock file as :func:`~.pins.read_lock` does (and with its refusals), with each entry's position."""
    path = str(path)
    lock = _Wire.read_lock(path)
    data = _Wire.lock_bytes(path)
    if _Wire.parse_lock(data, path).pins != lock.pins:
        raise LockError("bad-lock", path, "the lock file changed while it was read", "compose again")
    text = data.decode("utf-8")
    try:
        offsets = entry_offsets(text)
    except (IndexError, ValueError):  # pragma: no cover: parse_lock accepted this JSON, so it can be walked
        offsets = []
    spans = {(p.server, p.uri): _span(path, text, off) for p, off in zip(lock.pins, offsets)}
    return PositionedLock(path, lock, spans)


# ------------------------------------------------------------------------------------------------------ resolving

Unpinned = Literal["refuse", "user-turn"]
UNPINNED: tuple[str, ...] = ("refuse", "user-turn")


@dataclass(frozen=True)
class _Want:
    """One skill asked for: a pin of the lock (every pin of a server), or a name or SKILL.md URI the user gave."""

    pin: Any = None
    name: str | None = None


def _plan(lock: PositionedLock, selection: Mapping[str, Sequence[str]] | None) -> dict[str, list[_Want]]:
    """``selection`` -> {server key: what to compose from it}. None: every pin of the lock. A server with no
    names: every pin of that server (``not-pinned`` when it has none)."""
    if selection is None:
        selection = {s: () for s in lock.lock.servers()}
        if not selection:
            raise LockError(
                "not-pinned",
                lock.path,
                "the lock pins no skill",
                "pin one first: project-skill pin SERVER NAME --lock FILE",
            )
    plan: dict[str, list[_Want]] = {}
    for key, names in selection.items():
        for name in names:
            if "://" in name and not name.endswith("/" + _Wire.skill_file()):
                raise UsageError(f"compose whole skills (a name or a SKILL.md URI), not files: {name}")
        if names:
            plan.setdefault(key, []).extend(_Want(name=n) for n in names)
            continue
        pins = lock.lock.for_server(key)
        if not pins:
            servers = ", ".join(lock.lock.servers()) or "none"
            raise LockError(
                "not-pinned",
                lock.path,
                f"the lock pins no skill of the server {key!r}",
                f"servers in the lock: {servers}",
            )
        plan.setdefault(key, []).extend(_Want(pin=p) for p in pins)
    return plan


@dataclass(frozen=True)
class _Run:
    """What one composition needs to know while it resolves skills."""

    lock: PositionedLock
    unpinned: str


async def _entry_of(remote: Any, key: str, want: _Want) -> Any:
    """The served entry for a wanted skill: a pin's URI as listed, else by ``skills/get``; a name as the client's
    targets resolve it."""
    if want.pin is None:
        return await _Wire.resolve(remote, want.name or "")
    listed = {e.uri: e for e in await remote.list_skills()}
    entry = listed.get(want.pin.uri)
    if entry is not None:
        return entry
    try:
        return await remote.get_skill(want.pin.uri)
    except RemoteError as exc:
        raise LockError(
            "lock-mismatch",
            want.pin.uri,
            f"pinned, but {key} no longer serves it ({exc.message})",
            "if it was withdrawn on purpose, pin the server again",
        ) from None


def _text(loaded: Any) -> str:
    """SKILL.md's verified bytes as text (the frontmatter check has already decoded them as UTF-8)."""
    return loaded.files[loaded.uri].decode("utf-8")


async def _one(remote: Any, key: str, want: _Want, run: _Run, seen: list[str]) -> ComposedSkill:
    """Resolve and verify one skill, or raise the refusal. ``seen`` gets the skill's URI once it is known."""
    entry = await _entry_of(remote, key, want)
    seen.append(entry.uri)
    pin = want.pin or run.lock.lock.find(key, entry.uri)
    if pin is not None:
        loaded = await remote.load(entry, pin=pin, lock_path=run.lock.path)  # the pin is compared before any read
        return ComposedSkill(key, entry.uri, pin.manifest, True, _text(loaded), dict(loaded.files))
    if entry.resources is None:
        raise DynamicDeclined(
            "dynamic-declined",
            entry.uri,
            'the skill\'s resources are "dynamic": it has no '
            "manifest, so nothing in it can be verified or pinned, and it is refused even as a "
            "user-role turn",
            "ask the publisher to list its files with digests, then pin it",
        )
    if run.unpinned != "user-turn":
        raise LockError(
            "not-pinned",
            entry.uri,
            f"{run.lock.path} does not pin this skill for {key}",
            f"pin it after review (project-skill pin SERVER {entry.uri} --lock {run.lock.path} --name {key}), or pass "
            "--unpinned user-turn to hand it to the agent as a user-role turn, outside its instructions",
        )
    loaded = await remote.load(entry, files=())  # SKILL.md only, verified against the served manifest
    return ComposedSkill(
        key,
        entry.uri,
        _Wire.manifest_digest(entry.resources),
        False,
        _text(loaded),
        {entry.uri: loaded.files[entry.uri]},
    )


def _named(want: _Want, seen: list[str]) -> str:
    """The skill a refusal is about: its URI once resolved, else what was asked for."""
    return seen[-1] if seen else (want.pin.uri if want.pin is not None else want.name or "")


def positioned(exc: RemoteError, span: Span, skill: str, key: str) -> Diagnostic:
    """A client refusal moved to the skill's entry in the lock file, naming the skill, its server and (when the
    refusal is about another file) the file."""
    about = f"{exc.where}: " if exc.where and exc.where not in (skill, key) else ""
    return Diagnostic(span, "error", exc.code, f"{skill} from {key}: {about}{exc.message}", exc.hint)


async def _server(key: str, wants: list[_Want], run: _Run, target: Any) -> tuple[list[ComposedSkill], list[Diagnostic]]:
    """Every wanted skill of one server: the verified ones, and a diagnostic for each refused one, at its entry."""
    done: list[ComposedSkill] = []
    problems: list[Diagnostic] = []
    try:
        async with _Wire.connect(target, key) as remote:
            for want in wants:
                seen: list[str] = []
                try:
                    done.append(await _one(remote, key, want, run, seen))
                except RemoteError as exc:
                    skill = _named(want, seen)
                    problems.append(positioned(exc, run.lock.span(key, skill), skill, key))
    except RemoteError as exc:  # the server itself: unreachable, or not a skills server
        skill = _named(wants[0], [])
        problems.append(positioned(exc, run.lock.span(key, skill), skill, key))
    return done, problems


async def compose(
    lock_path: str | Path,
    selection: Mapping[str, Sequence[str]] | None = None,
    *,
    unpinned: Unpinned = "refuse",
    targets: Mapping[str, Any] | None = None,
) -> Composition:
    """Compose the skills of ``selection`` from the lock at ``lock_path``.

    ``selection``: {server as the lock names it: names or SKILL.md URIs}; a server with no names means every skill
    the lock pins for it; None means every skill the lock pins. ``unpinned``: ``"refuse"`` (the default) or
    ``"user-turn"``, for a named skill that the lock does not pin. ``targets``: {server as the lock names it: what
    to connect to} (a command line or URL, an in-process server, a transport). A lock names a server by its name,
    not by how it is started (:mod:`.pins`), so that is said here; a server without a target is reached at its name
    taken as a command line or URL.

    Raises :class:`CompositionRefused` with every refusal, each at its entry in the lock, before anything is
    returned; a bad lock file is :class:`~.errors.LockError` (``bad-lock``), a bad selection
    :class:`~projector.errors.UsageError`."""
    if unpinned not in UNPINNED:
        raise UsageError(f"unpinned must be one of {', '.join(UNPINNED)}, not {unpinned!r}")
    lock = read_positioned(lock_path)
    run = _Run(lock, unpinned)
    done: list[ComposedSkill] = []
    problems: list[Diagnostic] = []
    for key, wants in sorted(_plan(lock, selection).items()):
        target = (targets or {}).get(key, key)
        ok, bad = await _server(key, wants, run, target)
        done += ok
        problems += bad
    if problems:
        raise CompositionRefused(problems)
    return _assemble(done, lock.path)


def _assemble(done: list[ComposedSkill], lock_path: str) -> Composition:
    by_key = {(s.server, s.uri): s for s in done}  # a skill asked for twice is composed once
    ordered = [by_key[k] for k in sorted(by_key)]
    pinned = tuple(s for s in ordered if s.pinned)
    return Composition(pinned, tuple(s for s in ordered if not s.pinned), FileReader(pinned, lock_path))


def summary(composition: Composition) -> str:
    """One line: how many skills went where."""
    return (
        f"{plural(len(composition.skills), 'pinned skill')} in the instructions, "
        f"{plural(len(composition.user_turns), 'user-role turn')}"
    )
