"""``project-skill remote list|load`` and ``project-skill pin``: the command-line face of :mod:`projector.remote`.

Exit codes: 0 ok, 1 a refusal or a server problem (every unverified byte was dropped, nothing was written), 2 usage.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..errors import Diagnostic, ProjectorError, Span, format_text, plural, printable
from ..exits import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, Shell, run, say

SERVER_HELP = (
    "the server: an http(s):// URL (used as given, e.g. http://127.0.0.1:8000/mcp), or a command line "
    "that starts an MCP server on stdio (quote it as one argument)"
)
TARGET_HELP = (
    "a skill name, a SKILL.md URI, or the URI of one file in a skill (then only SKILL.md and that file are read)"
)


def _seconds(value: str) -> float:
    try:
        n = float(value)
    except ValueError:
        n = -1.0
    if not n > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {value!r}")
    return n


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--timeout",
        type=_seconds,
        default=60.0,
        metavar="SECONDS",
        help="how long to wait for each server response (default: 60)",
    )
    p.add_argument(
        "--verbose",
        action="store_true",
        help="show a stdio server's stderr as it comes (by default it is shown only when the server fails)",
    )


FRONTMATTER_YAML_HELP = (
    "how SKILL.md frontmatter is read to compare it with its entry: 1.2 (the default, as the "
    "reference SDK reads it) or 1.1 (PyYAML's reading, as FastMCP's skills provider lists it: "
    "'approved: yes' is true); 1.1 is for a publisher you trust"
)


NAME_HELP = (
    "the name the lock knows the server by (default: the name in the server's serverInfo); the same on every "
    "machine, however the server is started there"
)


def _add_name(p: argparse.ArgumentParser, help_tail: str = "") -> None:
    p.add_argument("--name", metavar="NAME", default=None, help=NAME_HELP + help_tail)


def _add_frontmatter_yaml(p: argparse.ArgumentParser, help_tail: str) -> None:
    p.add_argument(
        "--frontmatter-yaml",
        choices=("1.2", "1.1"),
        default=None,
        metavar="{1.2,1.1}",
        help=f"{FRONTMATTER_YAML_HELP}; {help_tail}",
    )


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _remote_parser() -> argparse.ArgumentParser:
    ap = _Parser(
        prog="project-skill remote",
        description="List or load skills from any SEP-2640 server, verifying every byte before use.",
        epilog="exit codes: 0 ok, 1 refused or server problem (nothing written), 2 usage",
    )
    sub = ap.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser)
    ls = sub.add_parser(
        "list",
        help="print every skills/list entry; reads no file",
        description="Read every page of skills/list and print the entries. No file is read.",
    )
    ls.add_argument("server", metavar="SERVER", help=SERVER_HELP)
    ls.add_argument("--format", choices=("text", "json"), default="text")
    _add_frontmatter_yaml(ls, "list reads no file, and only says how loading will read it")
    _add_common(ls)
    ld = sub.add_parser(
        "load",
        help="read and verify skills; --out writes the verified bundles",
        description="Verify each skill's manifest, then SKILL.md (size, digest, frontmatter), then "
        "each listed file (size, digest). On the first failure the entry is refreshed "
        "once with skills/get; a second failure refuses the skill and exits 1.",
    )
    ld.add_argument("server", metavar="SERVER", help=SERVER_HELP)
    ld.add_argument("targets", nargs="*", metavar="NAME|URI", help=TARGET_HELP)
    ld.add_argument("--all", action="store_true", help="load every listed skill")
    ld.add_argument("--out", metavar="DIR", help="write the verified bundles here (skill://a/b/SKILL.md -> DIR/a/b/)")
    ld.add_argument(
        "--allow-dynamic",
        action="store_true",
        help='load a skill whose resources are "dynamic": only its SKILL.md, with no integrity check',
    )
    ld.add_argument(
        "--locked",
        metavar="LOCK",
        help="compare each served manifest with this lock file before any read; without NAMEs or --all, "
        "load every skill the lock pins for SERVER",
    )
    _add_name(ld, "; with --locked, the pins of that name are used")
    ld.add_argument(
        "--keep-going",
        action="store_true",
        help="load every skill that verifies and name the ones refused, still exiting 1 when any is "
        "refused (default: all or nothing)",
    )
    ld.add_argument(
        "--allow-empty",
        action="store_true",
        help="with --all, accept a server that lists no skill (exit 0; --out writes an empty set); "
        "without it that is refused (no-skills)",
    )
    _add_frontmatter_yaml(
        ld,
        "a note names each skill that only the YAML 1.1 reading accepts; with --locked, each pin's own reading is used",
    )
    ld.add_argument("--format", choices=("text", "json"), default="text")
    _add_common(ld)
    return ap


def _pin_parser() -> argparse.ArgumentParser:
    ap = _Parser(
        prog="project-skill pin",
        description="Pin skill manifests in a lock file: the server's name, uri, the manifest digest and each "
        "file's digest. Reads no file of the skills: the manifest is the approval. The server is named by --name, "
        "else by its serverInfo name, never by its command line or URL, so the lock verifies on any machine.",
        epilog="exit codes: 0 ok, 1 refused or server problem, 2 usage",
    )
    ap.add_argument("server", metavar="SERVER", help=SERVER_HELP)
    ap.add_argument(
        "targets", nargs="*", metavar="NAME|URI", help="skills to pin (default, as with --all: every listed skill)"
    )
    ap.add_argument(
        "--all",
        action="store_true",
        help="pin every listed skill, and drop the lock's other pins of this server (what pinning with no "
        "NAME|URI does)",
    )
    _add_name(ap)
    ap.add_argument("--lock", default="skills.lock", metavar="FILE", help="the lock file (default: skills.lock)")
    _add_frontmatter_yaml(ap, "the pin records it, and remote load --locked reads the skill that way")
    _add_common(ap)
    return ap


# ------------------------------------------------------------------------------------------------------ commands


def _entry_line(e: Any) -> str:
    size = "dynamic" if e.dynamic else f"{plural(len(e.resources), 'file')}, {plural(e.total_size, 'byte')}"
    desc = " ".join(e.description.split())
    return printable(f"{e.uri}  ({size})  {desc}".rstrip())  # a server's words: nothing reaches the terminal raw


async def cmd_list(args: argparse.Namespace) -> int:
    from ..bundle import stable_json
    from .client import connect

    async with connect(args.server, timeout=args.timeout, verbose=args.verbose) as remote:
        entries = sorted(await remote.list_skills(), key=lambda e: e.uri)
    if args.format == "json":
        sys.stdout.write(stable_json({"skills": [e.raw for e in entries]}).decode("utf-8"))
    else:
        for e in entries:
            print(_entry_line(e))
        how = (
            f" (their frontmatter will be read as YAML {args.frontmatter_yaml} when loaded)"
            if args.frontmatter_yaml
            else ""
        )
        print(f"{len(entries)} skill{'s' * (len(entries) != 1)} listed; no file read{how}", file=sys.stderr)
    return EXIT_OK


async def cmd_load(args: argparse.Namespace) -> int:
    from .batch import Options, load_targets
    from .client import connect
    from .output import write_bundles
    from .pins import read_lock, server_name
    from .targets import choose

    if not args.targets and not args.all and not args.locked:
        raise _usage("name at least one skill (NAME or URI), or pass --all or --locked LOCK")
    lock = read_lock(args.locked) if args.locked else None
    async with connect(args.server, timeout=args.timeout, verbose=args.verbose) as remote:
        name = server_name(args.name, remote.identity(), args.server) if lock is not None else args.server
        opts = Options(
            name,
            lock,
            args.locked,
            writing=bool(args.out),
            allow_dynamic=args.allow_dynamic,
            frontmatter_yaml=args.frontmatter_yaml,
            keep_going=args.keep_going,
        )
        targets = await choose(
            remote,
            name,
            args.targets,
            everything=args.all,
            lock=lock,
            lock_path=args.locked,
            allow_empty=args.allow_empty,
        )
        batch = await load_targets(remote, targets, opts)
    written = write_bundles(args.out, batch.loaded) if args.out else []
    if args.format == "json":
        _print_json(args, batch, written)
    else:
        _print_text(args, batch.loaded, written)
    if batch.refused:
        _print_refused(args, batch.refused, written)
        return EXIT_FINDINGS
    return EXIT_OK


def _print_json(args: argparse.Namespace, batch: Any, written: list[str]) -> None:
    from ..bundle import stable_json
    from .pins import manifest_digest

    doc: dict[str, Any] = {
        "skills": [_skill_json(s, manifest_digest) for s in batch.loaded],
        "out": args.out,
        "written": written,
    }
    if args.keep_going:
        doc["refused"] = [{"uri": uri, "errors": [d.to_json() for d in exc.diagnostics]} for uri, exc in batch.refused]
    sys.stdout.write(stable_json(doc).decode("utf-8"))


def _print_text(args: argparse.Namespace, loaded: list[Any], written: list[str]) -> None:
    for s in loaded:
        n, size = len(s.files), sum(len(b) for b in s.files.values())
        how = "verified" if s.verified else "loaded UNVERIFIED (dynamic)"
        extra = " after refreshing its entry" if s.refreshed else ""
        print(f"{how} {printable(s.uri)}: {n} file{'s' * (n != 1)}, {size} bytes{extra}")
        for note in s.notes:
            print(format_text(Diagnostic(Span(s.uri), "note", NOTE_CODE, note)))
    if args.out:
        print(f"wrote {plural(len(written), 'skill folder')} under {args.out}")


def _print_refused(args: argparse.Namespace, refused: list[tuple[str, ProjectorError]], written: list[str]) -> None:
    for _uri, exc in refused:
        for d in exc.diagnostics:
            print(format_text(d), file=sys.stderr)
    print(
        f"project-skill remote: refused {plural(len(refused), 'skill')}: "
        f"{', '.join(printable(uri) for uri, _ in refused)}; "
        f"{'wrote the other ' + plural(len(written), 'skill') if args.out else 'loaded the others'}",
        file=sys.stderr,
    )


NOTE_CODE = "frontmatter-yaml-1.1"  # a skill accepted only because its frontmatter was read as YAML 1.1


def _skill_json(s: Any, manifest_digest: Any) -> dict[str, Any]:
    """One loaded skill in ``--format json``; ``frontmatter_yaml`` and ``notes`` only when it was read as YAML 1.1,
    so the default output is what it was."""
    doc: dict[str, Any] = {
        "uri": s.uri,
        "manifest": manifest_digest(s.entry.resources) if s.entry.resources is not None else None,
        "verified": s.verified,
        "refreshed": s.refreshed,
    }
    if s.frontmatter_yaml != "1.2":
        doc["frontmatter_yaml"] = s.frontmatter_yaml
        doc["notes"] = list(s.notes)
    doc["files"] = [_file_json(s, u, b) for u, b in s.files.items()]
    return doc


def _file_json(skill: Any, uri: str, data: bytes) -> dict[str, Any]:
    ref = skill.entry.ref(uri)
    return {"uri": uri, "digest": ref.digest if ref is not None else None, "size": len(data)}


async def cmd_pin(args: argparse.Namespace) -> int:
    from .client import connect
    from .pins import pin_entry, read_lock, server_name, write_lock
    from .targets import resolve

    if args.all and args.targets:
        raise _usage("pin either the skills you name or --all, not both")
    lock = read_lock(args.lock, missing_ok=True)
    everything = args.all or not args.targets
    async with connect(args.server, timeout=args.timeout, verbose=args.verbose) as remote:
        name = server_name(args.name, remote.identity(), args.server)
        targets = await resolve(remote, args.targets, everything)
    for entry, files in targets:
        if files is not None:
            raise _usage(f"pin whole skills, not files: {', '.join(files)}")
    pins = [pin_entry(name, entry, frontmatter_yaml=args.frontmatter_yaml or "1.2") for entry, _ in targets]
    new = lock.updated(name, pins, replace_server=everything)
    write_lock(args.lock, new)
    for p in pins:
        how = f", frontmatter read as YAML {p.frontmatter_yaml}" if p.frontmatter_yaml != "1.2" else ""
        print(f"pinned {printable(p.uri)}: {len(p.files)} file{'s' * (len(p.files) != 1)}, manifest {p.manifest}{how}")
    kept = {(p.server, p.uri) for p in new.pins}
    for p in lock.pins:  # with --all, the server's pins that it no longer lists go: say so, and why it may be wrong
        if (p.server, p.uri) not in kept:
            print(
                f"unpinned {printable(p.uri)}: the server {printable(repr(name))} does not list it now (if another "
                f"server is pinned under that name, pin this one with --name)"
            )
    print(
        f"{args.lock}: {plural(len(pins), 'skill')} of the server {printable(repr(name))} pinned "
        f"({printable(args.server)}); no file read"
    )
    return EXIT_OK


def _usage(message: str) -> ProjectorError:
    from ..errors import UsageError

    return UsageError(message)


def _shell(name: str) -> Shell:
    """How ``project-skill remote`` and ``pin`` print an error: a sentence with the command's name, anything with a
    place as its text, then that nothing was written."""
    prog = f"project-skill {name}"
    return Shell(
        prog, findings=lambda diags: say(prog, diags), closing=lambda _: f"{prog}: refused; nothing was written"
    )


def _command(name: str, argv: list[str]) -> int:
    import anyio

    ap = _pin_parser() if name == "pin" else _remote_parser()
    args = ap.parse_args(argv)
    if name != "pin" and args.action is None:
        ap.print_help(sys.stderr)
        return EXIT_USAGE
    command = cmd_pin if name == "pin" else {"list": cmd_list, "load": cmd_load}[args.action]
    return anyio.run(command, args)


def main(name: str, argv: list[str]) -> int:
    return run(_shell(name), lambda: _command(name, argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "remote", sys.argv[2:]))
