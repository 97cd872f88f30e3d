"""Loading a chosen set of skills: all or nothing, or (``--keep-going``) every one that verifies.

``project-skill remote load`` loads the targets :mod:`projector.remote.targets` chose, one by one, each verified by
:meth:`projector.remote.client.Remote.load`. Before a skill is read, its output folder name is checked (when it will
be written) and, with a lock, its pin is found; a skill the lock does not pin is refused (``not-pinned``). By default
the first refusal stops the run and nothing is written; with ``keep_going`` each refusal is kept beside the skills
that loaded, and the command names them. This is the pipeline below the shell (:mod:`projector.remote.cli`), which
only prints what it returns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import ProjectorError
from .errors import DynamicDeclined, LockError, OutputError, ServerError, VerificationError

if TYPE_CHECKING:
    from .pins import Lock
    from .targets import Target

# What keep-going keeps going past: a refused skill. Anything else (a bad lock file, a usage error) still stops.
REFUSALS = (VerificationError, DynamicDeclined, LockError, ServerError, OutputError)


@dataclass(frozen=True)
class Options:
    """How each skill is loaded: the server (as the lock names it), the lock and its path, whether the skills will
    be written (their folder names are checked first), and the client's own options."""

    server: str
    lock: Lock | None = None
    lock_path: str | None = None
    writing: bool = False
    allow_dynamic: bool = False
    frontmatter_yaml: str | None = None
    keep_going: bool = False


@dataclass
class Batch:
    """The skills loaded, in target order, and (with keep-going) each refused skill's URI and error."""

    loaded: list[Any] = field(default_factory=list)
    refused: list[tuple[str, ProjectorError]] = field(default_factory=list)


def _pin(entry: Any, opts: Options) -> Any:
    """The pin of ``entry`` in the lock (None without a lock); a skill the lock does not pin is refused."""
    if opts.lock is None:
        return None
    pin = opts.lock.find(opts.server, entry.uri)
    if pin is None:
        raise LockError(
            "not-pinned",
            entry.uri,
            f"{opts.lock_path} does not pin this skill for {opts.server}",
            "pin it first: project-skill pin SERVER NAME --lock FILE",
        )
    return pin


async def _load_one(remote: Any, entry: Any, files: tuple[str, ...] | None, opts: Options) -> Any:
    from .output import skill_dir_of

    if opts.writing:
        skill_dir_of(entry.uri)  # a folder name the server chose: checked before anything is read
    pin = _pin(entry, opts)
    return await remote.load(
        entry,
        files=files,
        pin=pin,
        lock_path=opts.lock_path or "skills.lock",
        allow_dynamic=opts.allow_dynamic,
        frontmatter_yaml=opts.frontmatter_yaml,
    )


async def load_targets(remote: Any, targets: list[Target], opts: Options) -> Batch:
    """Load each target in order; the first refusal is raised, unless ``opts.keep_going`` keeps it and goes on."""
    batch = Batch()
    for entry, files in targets:
        try:
            batch.loaded.append(await _load_one(remote, entry, files, opts))
        except REFUSALS as exc:
            if not opts.keep_going:
                raise
            batch.refused.append((entry.uri, exc))
    return batch
