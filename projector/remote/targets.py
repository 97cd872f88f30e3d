"""Which served skills a remote command means: the names and URIs a user gave, ``--all``, or the pins of a lock.

``project-skill remote load`` and ``project-skill pin`` take a skill's name, its SKILL.md URI, or the URI of one file
in it (then only SKILL.md and that file are read). Turning those into the server's entries is a rule of the client,
not of the command line, so it lives here, below the shell (:mod:`projector.remote.cli`), and both commands use it.
Choosing lists skills (``skills/list``, read once and only when a target needs it) or gets one (``skills/get``); it
never reads a file of a skill.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from .errors import LockError, ServerError

if TYPE_CHECKING:
    from .pins import Lock

# A target: a served entry, and the files of it to read (None: all of them).
Target = tuple[Any, tuple[str, ...] | None]


class _Listing:
    """The server's ``skills/list``, read once, and only when a target needs it."""

    def __init__(self, remote: Any):
        self.remote = remote
        self._entries: list[Any] | None = None

    async def entries(self) -> list[Any]:
        if self._entries is None:
            self._entries = await self.remote.list_skills()
        return self._entries


class _Chosen:
    """The targets chosen so far, by URI: a skill named whole once is read whole; files of it add up."""

    def __init__(self) -> None:
        self._by_uri: dict[str, tuple[Any, set[str] | None]] = {}

    def add(self, entry: Any, file: str | None) -> None:
        prev = self._by_uri.get(entry.uri)
        if prev is None:
            self._by_uri[entry.uri] = (entry, None if file is None else {file})
        elif prev[1] is not None:
            self._by_uri[entry.uri] = (prev[0], None if file is None else prev[1] | {file})

    def targets(self) -> list[Target]:
        return [(e, None if files is None else tuple(sorted(files))) for _, (e, files) in sorted(self._by_uri.items())]


async def _skill_uri(listing: _Listing, uri: str) -> Any:
    """A SKILL.md URI: its listed entry, else the one ``skills/get`` returns (a skill need not be listed)."""
    found = [e for e in await listing.entries() if e.uri == uri]
    if found:
        return found[0]
    try:
        return await listing.remote.get_skill(uri)
    except ServerError as exc:
        raise ServerError("unknown-skill", uri, f"the server does not serve this skill ({exc.message})") from None


async def _file_uri(listing: _Listing, uri: str) -> Any:
    """The URI of one file: the listed skill that holds it."""
    from .client import skill_of

    entry = skill_of(await listing.entries(), uri)
    if entry is None:
        raise ServerError("unknown-skill", uri, "no listed skill holds this file")
    return entry


async def _named(listing: _Listing, name: str) -> Any:
    """A skill's name (its frontmatter name, or the last segment of its root): exactly one listed skill."""
    entries = await listing.entries()
    found = [e for e in entries if e.name == name or e.root.rsplit("/", 1)[-1] == name]
    if not found:
        names = ", ".join(sorted({e.name for e in entries})) or "none"
        raise ServerError("unknown-skill", name, f"no listed skill is named {name!r}", f"listed: {names}")
    if len(found) > 1:
        raise ServerError(
            "ambiguous-skill",
            name,
            f"{len(found)} listed skills are named {name!r}: " + ", ".join(sorted(e.uri for e in found)),
            "name one by its URI",
        )
    return found[0]


async def _target(listing: _Listing, target: str) -> tuple[Any, str | None]:
    from ..sep2640 import SKILL_FILE

    if "://" not in target:
        return await _named(listing, target), None
    if target.endswith("/" + SKILL_FILE):
        return await _skill_uri(listing, target), None
    return await _file_uri(listing, target), target


async def resolve(remote: Any, targets: Sequence[str], everything: bool) -> list[Target]:
    """Targets -> [(entry, files or None for all)], sorted by URI. Lists skills (never reads a file)."""
    listing = _Listing(remote)
    chosen = _Chosen()
    if everything:
        for e in await listing.entries():
            chosen.add(e, None)
    for t in targets:
        chosen.add(*await _target(listing, t))
    return chosen.targets()


async def pinned(remote: Any, lock: Lock, server: str, lock_path: str) -> list[Target]:
    """Every skill ``lock`` pins for ``server``, as the server serves it now (listed, else by ``skills/get``)."""
    pins = lock.for_server(server)
    if not pins:
        servers = ", ".join(lock.servers()) or "none"
        raise LockError(
            "not-pinned",
            lock_path,
            f"the lock pins no skill of the server {server!r}",
            f"servers in the lock: {servers}; a lock knows a server by the name given with --name, else by its "
            "serverInfo name",
        )
    listing = {e.uri: e for e in await remote.list_skills()}
    targets: list[Target] = []
    for p in pins:
        entry = listing.get(p.uri)
        if entry is None:
            try:
                entry = await remote.get_skill(p.uri)
            except ServerError as exc:
                raise LockError(
                    "lock-mismatch", p.uri, f"pinned in {lock_path}, but the server no longer serves it ({exc.message})"
                ) from None
        targets.append((entry, None))
    return targets


async def choose(
    remote: Any,
    server: str,
    names: Sequence[str],
    *,
    everything: bool,
    lock: Lock | None,
    lock_path: str | None,
    allow_empty: bool,
) -> list[Target]:
    """What ``remote load`` loads: with a lock and no NAME nor ``--all``, every skill the lock pins for ``server``;
    else the named skills (and every listed one with ``--all``, which refuses an empty listing unless
    ``allow_empty``)."""
    if lock is not None and lock_path is not None and not names and not everything:
        return await pinned(remote, lock, server, lock_path)
    targets = await resolve(remote, names, everything)
    if everything and not targets and not allow_empty:
        raise ServerError(
            "no-skills",
            server,
            f"the server {server} lists no skills, so --all has nothing to load",
            "pass --allow-empty to accept an empty listing (then the exit is 0, and --out writes an empty set)",
        )
    return targets
