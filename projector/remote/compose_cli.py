"""``project-skill compose``: the command-line face of :mod:`projector.remote.compose`.

It writes the system instructions composed from a lock file's pinned skills: to ``--out FILE`` (atomically), or to
standard output, byte for byte what :attr:`~.compose.Composition.instructions` holds. A user-role turn (an unpinned
skill accepted with ``--unpinned user-turn``) never goes there. It is printed to standard error after a header
line, so a pipe of standard output carries the instructions alone. On any refusal the command exits 1 and writes
nothing. It only parses, calls :func:`~.compose.compose` and prints.
"""

from __future__ import annotations

import argparse
import sys

from ..errors import Diagnostic, DiskError, Span, UsageError, printable
from ..exits import EXIT_OK, EXIT_USAGE, Shell, run, say

PROG = "project-skill compose"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def parser() -> argparse.ArgumentParser:
    ap = _Parser(
        prog=PROG,
        description="Compose an agent's system instructions from pinned skills. Each skill is resolved on the "
        "server that pinned it (reached as --server NAME=SPEC says) and verified against its pin before any byte "
        "is used, then put inside an origin tag that names the server by its name in the lock, the skill URI and "
        "the manifest digest. A changed "
        "manifest, a changed file or frontmatter, an unpinned skill (without --unpinned user-turn) or "
        'a "dynamic" skill is refused at the lock entry\'s line:col, and nothing is written.',
        epilog="exit codes: 0 ok, 1 refused (nothing written), 2 usage",
    )
    ap.add_argument("--locked", required=True, metavar="LOCK", help="the lock file made by project-skill pin")
    ap.add_argument(
        "server",
        nargs="?",
        metavar="SERVER",
        help="compose from this server only, by the name the lock knows it by (default: every skill the lock pins)",
    )
    ap.add_argument(
        "--server",
        dest="reach",
        action="append",
        default=[],
        metavar="NAME=SPEC",
        help="how to reach the server the lock names NAME here: an http(s):// URL, or a command line that starts it "
        "on stdio (quote it as one argument); once for each server composed from",
    )
    ap.add_argument(
        "skills",
        nargs="*",
        metavar="SKILL",
        help="a skill name or SKILL.md URI on SERVER (default: every skill the lock pins for SERVER)",
    )
    ap.add_argument(
        "--unpinned",
        choices=("refuse", "user-turn"),
        default="refuse",
        help="what to do with a named skill the lock does not pin: refuse it (the default), or hand it "
        "to the agent as a user-role turn, verified against the served manifest only and never in "
        "the instructions (printed to standard error)",
    )
    ap.add_argument(
        "--out", metavar="FILE", help="write the instructions to FILE, atomically (default: standard output)"
    )
    return ap


def _write(path: str, data: bytes) -> None:
    from ..disk import write_file

    try:
        write_file(path, data)
    except OSError as exc:
        raise DiskError(
            Diagnostic(Span(path), "error", "io", f"cannot write the instructions: {exc.strerror or exc}")
        ) from None


def _targets(args: argparse.Namespace) -> dict[str, str]:
    """``--server NAME=SPEC`` as {name: spec}, with one for each server composed from (a usage error names the
    ones missing)."""
    from .pins import read_lock

    targets: dict[str, str] = {}
    for given in args.reach:
        name, eq, spec = given.partition("=")
        if not eq or not name or not spec.strip():
            raise UsageError(
                f"--server takes NAME=SPEC (the lock's name for the server, then how to reach it): {given}"
            )
        if name in targets:
            raise UsageError(f"--server {name}=... is given twice")
        targets[name] = spec
    pinned = read_lock(args.locked).servers()
    wanted = pinned if args.server is None else [args.server]
    missing = [n for n in wanted if n not in targets and n in pinned]  # a server the lock lacks is refused there
    if missing:
        unknown = [n for n in targets if n not in pinned]  # a misspelt name, or how the server was reached
        raise UsageError(
            "say how to reach each server the lock names, on this machine: "
            + " ".join(f"--server {printable(repr(n + '=...'))}" for n in missing)
            + " (an http(s):// URL, or the command line that starts it)"
            + "".join(f"; --server {printable(repr(n + '=...'))} names no server of {args.locked}" for n in unknown)
        )
    return targets


async def _compose(args: argparse.Namespace) -> int:
    from .compose import compose, summary

    selection = None if args.server is None else {args.server: tuple(args.skills)}
    composition = await compose(args.locked, selection, unpinned=args.unpinned, targets=_targets(args))
    data = composition.instructions.encode("utf-8")
    if args.out:
        _write(args.out, data)
    else:
        sys.stdout.flush()
        sys.stdout.buffer.write(data)  # the bytes --out would write: no newline translation, no stream encoding
        sys.stdout.buffer.flush()
    for skill, text in zip(composition.user_turns, composition.user_turn_texts()):
        print(
            f"{PROG}: a user-role turn, not in the instructions (unpinned): {printable(skill.server)} "
            f"{printable(skill.uri)}",
            file=sys.stderr,
        )
        sys.stderr.write(text)
    where = f"wrote {args.out}" if args.out else "composed"
    print(f"{PROG}: {where}: {summary(composition)}", file=sys.stderr)
    return EXIT_OK


def _command(argv: list[str]) -> int:
    import anyio

    args = parser().parse_args(argv)
    if args.skills and args.server is None:  # pragma: no cover: argparse fills SERVER first
        raise UsageError("name the SERVER before its skills")
    return anyio.run(_compose, args)


def main(name: str, argv: list[str]) -> int:
    shell = Shell(
        PROG, findings=lambda diags: say(PROG, diags), closing=lambda _: f"{PROG}: refused; nothing was written"
    )
    return run(shell, lambda: _command(argv))
