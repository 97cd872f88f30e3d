"""``project-skill matrix [--check] [--out FILE] [--framework mcp|fastmcp]``: measure skill vs. workflow vs. agent,
and write the data file.

Writes ``docs/data/matrix.json`` (committed; ``project-skill docs`` makes the decision-matrix page from it) and prints
the refunds table. With ``--check`` it writes nothing and exits 1, with a diff, when a fresh measurement differs from
the committed file. Every figure is deterministic, so a fresh run on the same tree gives the same bytes.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import sys
from pathlib import Path

from ..disk import write_file
from ..errors import UsageError
from ..exits import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, Shell, run
from ..server import adapters

DEFAULT_OUT = "docs/data/matrix.json"


def table(data: dict) -> str:
    rows = ["task         surface   scenario    round trips  model turns  context bytes  refund issued"]
    for task in data["tasks"]:
        for r in task["runs"]:
            refund = "" if "refund_issued" not in r else ("yes" if r["refund_issued"] else "no")
            rows.append(
                f"{task['task']:<12} {r['surface']:<9} {r['scenario']:<11} {r['round_trips']:>11}  "
                f"{r['model_turns']:>11}  {r['context_bytes']:>13}  {refund:>13}"
            )
    return "\n".join(rows)


def main(name: str = "matrix", argv: list[str] | None = None) -> int:
    shell = Shell(f"project-skill {name}", lead="a run failed: ")
    return run(shell, lambda: _matrix(name, list(sys.argv[1:] if argv is None else argv)))


def _matrix(name: str, argv: list[str]) -> int:
    ap = argparse.ArgumentParser(
        prog=f"project-skill {name}",
        description="Run every derived eval case of the shipped workflows on each surface (skill, workflow "
        "prompt, workflow tool, workflow tool as a task, server-side agent), graded from the server's record, "
        "and the refunds task (and hello-world and code-mode) on each surface (skill, workflow prompt, gated "
        "workflow prompt, with confirmation, as a task, server-side agent) over stdio against the demo server; "
        "write the measured data.",
        epilog="exit codes: 0 ok, 1 a run failed or (--check) the committed data is stale, 2 usage",
    )
    ap.add_argument("--root", default=".", help="the project tree (default: the current folder)")
    ap.add_argument("--out", default=DEFAULT_OUT, help=f"the data file, relative to --root (default: {DEFAULT_OUT})")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 with a diff if the data is stale")
    ap.add_argument(
        "--framework",
        choices=adapters.names(),
        default=adapters.DEFAULT,
        help="the demo server's framework: mcp's MCPServer (the default; the committed data is measured "
        "on it) or FastMCP (needs the project-skill[fastmcp] extra). On FastMCP every figure is the "
        "same except the skill surface's context bytes: FastMCP prints a tool's structured result "
        "as compact JSON text, MCPServer with a two-space indent",
    )
    args = ap.parse_args(argv)
    root = Path(args.root)
    if not (root / "generated_skills" / "skills.json").is_file():
        raise UsageError(
            f"{root.as_posix()}/generated_skills/skills.json is missing; run project-skill build first (or pass --root)"
        )

    missing = adapters.missing(args.framework)
    if missing is not None:
        print(f"project-skill {name}: --framework {args.framework} {missing}", file=sys.stderr)
        return EXIT_USAGE
    import anyio

    from . import harness

    data = anyio.run(functools.partial(harness.measure, root, framework=args.framework))  # a MatrixError: exit 1
    new = harness.matrix_json(data)
    out = root / args.out
    print(table(data))
    if args.check:
        old = out.read_bytes() if out.is_file() else b""
        if old == new:
            print(f"{args.out} is up to date")
            return EXIT_OK
        sys.stdout.writelines(
            difflib.unified_diff(
                old.decode("utf-8", "replace").splitlines(keepends=True),
                new.decode().splitlines(keepends=True),
                fromfile=f"a/{args.out}",
                tofile=f"b/{args.out}",
            )
        )
        print(f"\n{args.out} is out of date; run: project-skill matrix")
        if args.framework != adapters.DEFAULT:
            print(
                f"(the committed data is measured on mcp; on {args.framework} the skill surface's tool results "
                "are compact JSON text, so its context bytes differ by design)"
            )
        return EXIT_FINDINGS
    if out.is_file() and out.read_bytes() == new:
        print(f"up to date: {args.out}")
        return EXIT_OK
    write_file(out, new)
    print(f"wrote {args.out}; run project-skill docs to regenerate the matrix page")
    return EXIT_OK
