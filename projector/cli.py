"""``project-skill``: a thin shell. It parses arguments, calls the library and prints. Exit codes come from the one
map, :mod:`projector.exits`: 0 ok, 1 findings (errors; warnings under --strict; a stale tree in check), 2 usage.

``build`` and ``check`` import only the core (yaml, jinja2, slugify). Everything that needs ``mcp`` is imported
inside its own command.
"""

from __future__ import annotations

import gc

# A run of build or check is short-lived and allocates many objects that live to its end (the imports, the parser,
# then the compile): full collections would walk them again and again. Collect less often from this module's first
# line on (the console script imports it first); a command that may run long (serve...) gets the default back in
# _run_lazy.
_GC_DEFAULT = gc.get_threshold()
gc.set_threshold(50_000, 20, 100)

import argparse  # after the thresholds, so that they hold for every import below (E402: pyproject.toml)
import json
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from . import __version__
from .errors import Diagnostic, DiskError, Span, UsageError, plural
from .exits import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, Shell, report, run, say


def _tally(diags: list[Diagnostic]) -> str:
    errors = sum(d.severity == "error" for d in diags)
    warnings = sum(d.severity == "warning" and d.acknowledged is None for d in diags)
    acked = sum(d.acknowledged is not None for d in diags)
    notes = sum(d.severity == "note" and d.acknowledged is None for d in diags)
    parts = [plural(errors, "error")] if errors else []
    parts.append(plural(warnings, "warning"))
    if acked:
        parts.append(f"{acked} acknowledged")
    parts.append(plural(notes, "note"))
    return ", ".join(parts)


def _load_and_compile(args: argparse.Namespace, stage: Path | None = None):
    """The build of the workflows ``args`` names (a :class:`~projector.output.Build`): one straight pass. With
    ``stage``, each bundle is written there as it is compiled (a fresh build's, :func:`projector.disk.fresh_stage`)."""
    from .load import discover
    from .naming import parse_prefix
    from .output import compile_files

    try:
        prefix = parse_prefix(args.uri_prefix)
    except ValueError as exc:
        raise UsageError(f"--uri-prefix: {exc}") from None
    if args.skills_only and args.workflow_tools:
        raise UsageError("--skills-only and --workflow-tools: a skill served without its workflow names no tool")
    paths = args.paths or ["workflows"]
    found = discover(paths)
    if not found:
        raise UsageError(f"no workflow files (*.yaml, *.yml) under {', '.join(paths)}")
    if getattr(args, "tools_from", None):
        from .remote.tools import compile_with_tools

        return compile_with_tools(
            paths, args.tools_from, prefix, skills_only=args.skills_only, workflow_tools=args.workflow_tools
        )
    return compile_files(
        found, prefix, args.jobs or None, skills_only=args.skills_only, workflow_tools=args.workflow_tools, stage=stage
    )


def _strict_fail(args: argparse.Namespace, diags: list[Diagnostic]) -> bool:
    return args.strict and any(d.severity == "warning" and d.acknowledged is None for d in diags)


def cmd_build(args: argparse.Namespace) -> int:
    from .disk import fresh_stage
    from .output import evals_root, previous_skills, refuse, write, write_evals

    read = _configure(args)
    out, evals_out = Path(args.out), Path(args.evals_out)
    evals_root(out, evals_out, replaced=True)
    with fresh_stage(out) as stage:  # into a folder that is not there yet: each bundle is written as it is compiled
        build = _load_and_compile(args, stage)
        report(build.diagnostics, args.format)
        if _strict_fail(args, build.diagnostics):
            print(f"error: --strict: {_tally(build.diagnostics)}; nothing was written", file=sys.stderr)
            return EXIT_FINDINGS
        previous = previous_skills(build, out)  # whose eval cases are the build's to drop
        # A rebuild writes the cases first: killed before the skills, it leaves the skills.json that names the cases
        # the next build drops (a gone skill's); a fresh build holds the lock its stage's folder may share with them.
        changed = False
        if stage is None:
            refuse(build, out)  # a skills tree the build may not write is refused before the cases are written
            changed = write_evals(build, evals_out, previous)
        changed = write(build, out, stage) or changed
    if stage is not None:  # the stage's lock is let go: it may be the same
        changed = write_evals(build, evals_out, previous) or changed
    for b in build.bundles:
        n = len(b.diagnostics)
        size = sum(r["size"] for r in b.entry["resources"])
        print(
            f"{b.name}: {b.entry['uri']} ({plural(len(b.entry['resources']), 'file')}, {plural(size, 'byte')}, "
            f"{plural(n, 'finding')})",
            file=sys.stderr if args.format == "json" else sys.stdout,
        )
    print(
        f"{'wrote' if changed else 'up to date:'} {out.as_posix()}: {plural(len(build.bundles), 'skill')}; "
        f"{_tally(build.diagnostics)}{read}",
        file=sys.stderr if args.format == "json" else sys.stdout,
    )
    return EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    from .disk import folder
    from .output import compare, compare_evals, evals_root

    args.configuration = _configure(args)
    out, evals_out = Path(args.out), Path(args.evals_out)
    evals_root(out, evals_out)
    build = _load_and_compile(args)
    report(build.diagnostics, args.format)
    trees = [(out, compare(build, folder(out))), (evals_out, compare_evals(build, out, evals_out))]
    if all(cmp.clean for _, cmp in trees):
        return _up_to_date(args, len(build.bundles), build.diagnostics)
    stream = sys.stderr if args.format == "json" else sys.stdout
    for _, cmp in trees:
        if cmp.diff:
            stream.write(cmp.diff if cmp.diff.endswith("\n") else cmp.diff + "\n")
    for shown, cmp in trees:
        for label, files in (("stale", cmp.stale), ("missing", cmp.missing), ("extra", cmp.extra)):
            for f in files:
                print(f"{label}: {shown.as_posix()}/{f}", file=stream)
    stale, missing, extra = (sum(len(getattr(cmp, k)) for _, cmp in trees) for k in ("stale", "missing", "extra"))
    named = [shown.as_posix() for shown, cmp in trees if not cmp.clean]
    print(
        f"{' and '.join(named)} {'is' if len(named) == 1 else 'are'} out of date ({stale} stale, {missing} missing, "
        f"{extra} extra){args.configuration}; run: {rebuild_command(args)}",
        file=stream,
    )
    return EXIT_FINDINGS


def _up_to_date(args: argparse.Namespace, skills: int, diags: list[Diagnostic]) -> int:
    """The tree matches the workflows: said so, unless ``--strict`` fails on a warning, which is then said first and
    alone (a failing check never reads "up to date")."""
    out, configuration = Path(args.out).as_posix(), getattr(args, "configuration", "")
    if _strict_fail(args, diags):
        print(
            f"error: --strict: {_tally(diags)}; the files in {out} match the workflows "
            f"({plural(skills, 'skill')}){configuration}, but a warning fails --strict",
            file=sys.stderr,
        )
        return EXIT_FINDINGS
    print(
        f"{out} is up to date: {plural(skills, 'skill')}; {_tally(diags)}{configuration}",
        file=sys.stderr if args.format == "json" else sys.stdout,
    )
    return EXIT_OK


def cmd_schema(args: argparse.Namespace) -> int:
    """Print the workflow JSON Schema this version ships, byte for byte."""
    from importlib import resources

    data = resources.files("projector").joinpath("schemas/workflow.schema.json").read_bytes()
    sys.stdout.buffer.write(data)
    sys.stdout.flush()
    return EXIT_OK


def cmd_tools(args: argparse.Namespace) -> int:
    """Print (or write with --out, or compare with --check) a server's tools/list as a tools snapshot: stable JSON
    to commit (tools.json), so build, check and the pre-commit hook can run offline with --tools-from tools.json."""
    import difflib

    from .remote.tools import SNAPSHOT_LIMIT, tools_snapshot

    data = tools_snapshot(args.server, verbose=args.verbose)
    count = len(json.loads(data)["tools"])
    if args.check:
        from . import bounded

        try:
            old = bounded.read_regular(args.check, SNAPSHOT_LIMIT)
        except bounded.Unreadable as exc:
            old = f"(cannot read it: {exc})\n".encode()
        if old == data:
            print(f"{args.check} is up to date: {plural(count, 'tool')}")
            return EXIT_OK
        diff = difflib.unified_diff(
            old.decode("utf-8", "replace").splitlines(keepends=True),
            data.decode("utf-8").splitlines(keepends=True),
            f"a/{args.check}",
            f"b/{args.check}",
        )
        sys.stdout.writelines(diff)
        print(f"{args.check} is out of date; run: {_tools_command(args.server, args.check)}")
        return EXIT_FINDINGS
    if args.out:
        from .disk import write_file

        try:
            write_file(args.out, data)
        except OSError as exc:
            raise DiskError(
                Diagnostic(Span(args.out), "error", "io", f"cannot write the tools snapshot: {exc.strerror or exc}")
            ) from None
        print(f"wrote {args.out}: {plural(count, 'tool')}", file=sys.stderr)
        return EXIT_OK
    sys.stdout.buffer.write(data)
    sys.stdout.flush()
    return EXIT_OK


def _tools_command(server: str, out: str) -> str:
    import shlex

    return shlex.join(["project-skill", "tools", server, "--out", out])


def cmd_init(args: argparse.Namespace) -> int:
    """Write a new workflow file that calls the given tools in order, their declarations copied from a server or a
    tools snapshot. Never over an existing file. Replace the description placeholder, then build."""
    import shlex

    from . import config
    from .remote.tools import load_tools
    from .scaffold import scaffold

    found = config.load(args.config, disabled=args.no_config)
    tools_from = args.tools_from or (found.values.get("tools-from") if found else None)
    if not tools_from:
        raise UsageError("init: give --tools-from SERVER|FILE, or set tools-from in [tool.project-skill]")
    out = Path(args.out or f"{config.workflows_folder(found)}/{args.name}.yaml")
    if out.exists() or out.is_symlink():
        raise UsageError(f"init: {out.as_posix()} already exists; choose another --out (nothing was written)")
    tools, _source = load_tools(tools_from)
    text = scaffold(args.name, tools, args.tool)
    from .disk import write_file

    try:
        write_file(out, text.encode("utf-8"), exclusive=True)
    except FileExistsError:
        raise UsageError(f"init: {out.as_posix()} already exists; choose another --out (nothing was written)") from None
    except OSError as exc:
        raise DiskError(
            Diagnostic(Span(out.as_posix()), "error", "io", f"cannot write the workflow file: {exc.strerror or exc}")
        ) from None
    build = "project-skill build" if found else f"project-skill build {shlex.quote(out.parent.as_posix())}"
    print(
        f"wrote {out.as_posix()}: {plural(len(args.tool), 'step')}; replace its description, then run: {build}"
        f"{config.summary(found)}",
        file=sys.stderr,
    )
    if not (out.parent / "workflow.schema.json").exists():
        print(
            f"for your editor, save the schema beside it: project-skill schema > "
            f"{(out.parent / 'workflow.schema.json').as_posix()}",
            file=sys.stderr,
        )
    return EXIT_OK


def cmd_evals(args: argparse.Namespace) -> int:
    """Print one workflow's derived eval cases (evals.json, Agent Skills format), or with --queries its trigger
    queries (eval_queries.json): the bytes `build` writes in the evals tree (generated_evals/SKILL/). To run the
    cases against the real server on each surface: project-skill evals run --help. See docs/evals.md."""
    from .evaltree import EVALS_FILE, QUERIES_FILE

    _configure(args)
    args.no_cache, args.jobs, args.skills_only, args.workflow_tools = True, 0, False, False
    build = _load_and_compile(args)
    names = sorted(b.name for b in build.bundles)
    if args.workflow is None and len(names) != 1:
        raise UsageError(f"evals: name the workflow with --workflow (one of: {', '.join(names)})")
    found = [
        b
        for b in build.bundles
        if args.workflow in (None, b.name, (b.entry["frontmatter"].get("metadata") or {}).get("workflow"))
    ]
    if not found:
        raise UsageError(f"evals: no workflow '{args.workflow}' (one of: {', '.join(names)})")
    sys.stdout.buffer.write(build.evals[f"{found[0].path}/{QUERIES_FILE if args.queries else EVALS_FILE}"])
    sys.stdout.flush()
    return EXIT_OK


def rebuild_command(args: argparse.Namespace) -> str:
    """The ``build`` command that brings the tree up to date: the paths and flags the user gave ``check``, exactly,
    quoted for a POSIX shell."""
    import shlex

    given = list(getattr(args, "argv", None) or ["check"])
    return shlex.join(["project-skill", "build", *given[1:]])


CONFIG_EPILOG = (
    "The nearest pyproject.toml (from the current folder up) may set these flags' defaults in its "
    "[tool.project-skill] table: workflows (the PATHs), out, evals-out, tools-from, strict, uri-prefix, skills-only, "
    "workflow-tools. Its paths are relative to its folder. A flag overrides the file."
)


def _add_config_args(p: argparse.ArgumentParser) -> None:
    where = p.add_mutually_exclusive_group()
    where.add_argument(
        "--config", metavar="FILE", help="read [tool.project-skill] from FILE instead of the nearest pyproject.toml"
    )
    where.add_argument("--no-config", action="store_true", help="read no configuration file")


def _add_compile_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATH", help="workflow files or folders (default: workflows)")
    p.add_argument("--out", help="output folder (default: generated_skills)")
    p.add_argument(
        "--evals-out",
        metavar="DIR",
        help="folder of the derived eval cases, kept out of the skills' folders (default: beside --out, "
        "generated_evals for generated_skills, NAME-evals for another NAME)",
    )
    p.add_argument("--uri-prefix", metavar="P", help="skill path prefix: a/b gives skill://a/b/<name>/SKILL.md")
    p.add_argument(
        "--strict", action=argparse.BooleanOptionalAction, help="unacknowledged warnings fail the run (exit 1)"
    )
    p.add_argument("--format", choices=("text", "json", "github"), default="text", help="how to print findings")
    p.add_argument(
        "--jobs",
        type=int,
        default=0,
        metavar="N",
        help="worker processes (default 0: one per core for 200 files or more, else none)",
    )
    p.add_argument(
        "--skills-only",
        action=argparse.BooleanOptionalAction,
        help="for skills served without their workflows: SKILL.md names no workflow prompt "
        "(no metadata.workflow, no server-accelerated alternative)",
    )
    p.add_argument(
        "--workflow-tools",
        action=argparse.BooleanOptionalAction,
        help="for skills served with `serve --workflow-tools`: each SKILL.md also names its workflow's "
        "tool (metadata.workflow-tool, and the server-accelerated alternative)",
    )
    # Accepted and ignored: CI lines written for the build cache of earlier versions (gone) still run.
    p.add_argument("--no-cache", action="store_true", help=argparse.SUPPRESS)
    p.add_argument(
        "--tools-from",
        metavar="SERVER|FILE",
        help="take tool descriptions, schemas and annotations from a live server's tools/list "
        "(a stdio command or an http(s)://.../mcp URL), or from a tools snapshot that "
        "`project-skill tools SERVER --out tools.json` wrote (a path ending in .json: offline)",
    )
    _add_config_args(p)


def _configure(args: argparse.Namespace) -> str:
    """Fill the flags the command line left out from [tool.project-skill] (:mod:`projector.config`), else their
    defaults; returns what the summary line says about it."""
    from . import config

    found = config.load(args.config, disabled=args.no_config)
    config.settle(args, found)
    return config.summary(found)


# Commands that need more than the core register here lazily: name -> (module, help).
LAZY_COMMANDS: dict[str, tuple[str, str]] = {
    "serve": ("projector.server.cli", "serve the skills and workflows over MCP"),
    "remote": ("projector.remote.cli", "list or load skills from any SEP-2640 server, verifying every byte"),
    "pin": ("projector.remote.cli", "pin a server's skill manifests in a lock file"),
    "compose": ("projector.remote.compose_cli", "compose an agent's instructions from pinned skills, verified first"),
    "matrix": ("projector.matrix.cli", "measure skill vs. workflow vs. agent on the refunds task"),
    "docs": ("projector.docs", "write (or --check) the generated pages of the docs site"),
}


def _add_build(sub: Any) -> None:
    b = sub.add_parser(
        "build", help="compile workflows into the output folder", description=cmd_build.__doc__, epilog=CONFIG_EPILOG
    )
    _add_compile_args(b)
    b.set_defaults(func=cmd_build)


def _add_check(sub: Any) -> None:
    c = sub.add_parser("check", help="exit 1 with a diff when the output folder is stale", epilog=CONFIG_EPILOG)
    _add_compile_args(c)
    c.set_defaults(func=cmd_check)


def _add_schema(sub: Any) -> None:
    sc = sub.add_parser(
        "schema",
        help="print the workflow JSON Schema (for editors outside this repository)",
        description="Print the workflow file's JSON Schema, as this version ships it. Save it beside "
        "your workflows and point the yaml-language-server comment at it: "
        "project-skill schema > workflow.schema.json",
    )
    sc.set_defaults(func=cmd_schema)


def _add_tools(sub: Any) -> None:
    t = sub.add_parser(
        "tools",
        help="print a server's tools/list as a tools snapshot (tools.json) to commit",
        description=cmd_tools.__doc__,
    )
    t.add_argument("server", metavar="SERVER", help="a stdio command line or an http(s)://.../mcp URL")
    mode = t.add_mutually_exclusive_group()
    mode.add_argument("--out", metavar="FILE", help="write the snapshot to FILE atomically instead of printing it")
    mode.add_argument("--check", metavar="FILE", help="exit 1 with a diff when FILE is not the server's snapshot")
    t.add_argument(
        "--verbose",
        action="store_true",
        help="show a stdio server's stderr as it comes (by default it is shown only when the server fails)",
    )
    t.set_defaults(func=cmd_tools)


def _add_init(sub: Any) -> None:
    i = sub.add_parser(
        "init",
        help="write a new workflow file from a server's tools (or a tools snapshot)",
        description=cmd_init.__doc__,
    )
    i.add_argument("name", metavar="NAME", help="the workflow's name (also its prompt's; the skill is its slug)")
    i.add_argument(
        "--tools-from",
        metavar="SERVER|FILE",
        help="a stdio command line, an http(s)://.../mcp URL, or a tools snapshot (.json) (default: "
        "tools-from in [tool.project-skill])",
    )
    i.add_argument(
        "--tool",
        metavar="T",
        action="append",
        required=True,
        help="a tool to call, one step each, in the order given (repeat the option)",
    )
    i.add_argument(
        "--out",
        metavar="FILE",
        help="the file to write (default: workflows/NAME.yaml, in the first "
        "folder of workflows in [tool.project-skill]); never replaced",
    )
    _add_config_args(i)
    i.set_defaults(func=cmd_init)


def _add_evals(sub: Any) -> None:
    e = sub.add_parser(
        "evals",
        help="print one workflow's derived eval cases; `evals run` runs them on the real server",
        description=cmd_evals.__doc__,
        epilog=CONFIG_EPILOG,
    )
    e.add_argument("paths", nargs="*", metavar="PATH", help="workflow files or folders (default: workflows)")
    e.add_argument("--workflow", metavar="NAME", help="the workflow (or skill) name; needed when PATH holds several")
    e.add_argument(
        "--queries",
        action="store_true",
        help="print the trigger queries (eval_queries.json) instead of the cases",
    )
    e.add_argument("--uri-prefix", metavar="P", help="skill path prefix, as for build")
    e.add_argument("--tools-from", metavar="SERVER|FILE", help="take the tools from a server or a snapshot, as build")
    _add_config_args(e)
    e.set_defaults(func=cmd_evals)


# The commands this module runs, in the order --help lists them (then LAZY_COMMANDS).
COMMANDS: dict[str, Callable[[Any], None]] = {
    "build": _add_build,
    "check": _add_check,
    "schema": _add_schema,
    "tools": _add_tools,
    "init": _add_init,
    "evals": _add_evals,
}


def parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line. With ``only`` (one of :data:`COMMANDS`), the top-level parser with that one command: what
    parses a command line that starts with it, the same to the byte, without building the ten other commands'
    parsers (milliseconds of every cold start). The top level names its commands only in its own --help and in the
    error for an unknown command, which such a line never reaches (tests/test_cli.py compares the two on
    every command's errors and help)."""
    ap = argparse.ArgumentParser(
        prog="project-skill",
        description="Compile MCP sequential workflows into byte-stable SEP-2640 SKILL.md bundles.",
        epilog="exit codes: 0 ok, 1 findings, 2 usage",
    )
    ap.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    if only is not None:
        COMMANDS[only](sub)
        return ap
    for add in COMMANDS.values():
        add(sub)
    for name, (_module, help_text) in LAZY_COMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)  # listed in --help; main() dispatches it
    return ap


def _run_lazy(name: str, rest: list[str]) -> int:
    import importlib

    gc.set_threshold(*_GC_DEFAULT)  # a server or a client may run for hours: the collector as Python sets it
    module = LAZY_COMMANDS[name][0]
    try:
        command: Callable[[str, list[str]], int] = importlib.import_module(module).main
    except ModuleNotFoundError as exc:
        if exc.name and exc.name.startswith("projector"):
            print(f"project-skill {name}: not available in this version", file=sys.stderr)
            return EXIT_USAGE
        raise
    return command(name, rest)


def _run_evals(rest: list[str]) -> int:
    from .matrix.evals_cli import main as evals_run

    gc.set_threshold(*_GC_DEFAULT)
    return evals_run(rest)


def _shell(fmt: str, command: str | None = None) -> Shell:
    """How ``project-skill`` prints an error: the findings in the chosen format, then how many there were (and, for
    a command that writes, that it wrote nothing: ``check`` never writes)."""
    written = "" if command == "check" else "; nothing was written"
    return Shell(
        "project-skill",
        findings=lambda diags: report(diags, fmt),
        closing=lambda exc: f"error: {plural(len(exc.diagnostics), 'problem')}{written}",
    )


def _parsed(argv: list[str]) -> int:
    ap = parser(argv[0] if argv and argv[0] in COMMANDS else None)
    args = ap.parse_args(argv)
    args.argv = argv
    if args.command is None:
        ap.print_help()
        return EXIT_USAGE
    return run(_shell(getattr(args, "format", "text"), args.command), lambda: args.func(args))


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command line: ``argv``, or the process's own (the console script's call) when it is None."""
    own = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    # Commands beyond the core parse their own arguments (options first included), and import only then.
    if argv and argv[0] in LAZY_COMMANDS:
        return run(_shell("text"), lambda: _run_lazy(argv[0], argv[1:]))
    if argv[:2] == ["evals", "run"]:  # runs servers: needs mcp, so it is imported only here (a folder named run: ./run)
        return run(
            Shell("project-skill evals run", findings=lambda d: say("project-skill evals run", d)),
            lambda: _run_evals(argv[2:]),
        )
    if own:
        # The process ends with this command. At its exit Python collects twice, walking every object the imports
        # and the run made (tens of milliseconds after a build of 1,000 workflows; a few in a cold check). Frozen,
        # they are left to the system whole; every file the command writes is written and closed before it returns.
        import atexit

        atexit.register(gc.freeze)
    return run(_shell("text"), lambda: _parsed(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
