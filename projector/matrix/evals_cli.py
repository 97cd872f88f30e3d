"""``project-skill evals run``: the derived eval cases of a project, run against its real server on each surface and
graded from what the server recorded.

It takes the project as ``build`` does: the workflow paths, the skills folder (``out``), ``--tools-from`` and
``--workflow-tools`` from the command line, else from ``[tool.project-skill]`` (:mod:`projector.config`), so a
workflow checked against a tools snapshot runs as it builds. Each case's server is ``project-skill serve`` on the
case (:mod:`projector.server.evalcase`) with the flags the skills were built with, so a skill that names its
workflow's tool is served beside it. A case server that does not start stops the run with its own error in one line.

The surfaces that need no model (the workflow prompt, the workflow tool, the task, the skill and the agent followed
by the simulated policy) are :mod:`projector.matrix.evalruns`; ``--surface inspect`` runs the cases through Inspect
AI on ``--model`` (:mod:`projector.matrix.evals_inspect`, the ``evals`` extra).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from .. import config
from ..errors import UsageError, plural
from ..exits import EXIT_FINDINGS, EXIT_OK
from ..naming import skill_name
from ..sep2640.wire import INDEX_FILE
from .evalruns import SURFACES, load_workflows, run_surface

PROG = "project-skill evals run"
INSPECT = "inspect"
MOCK = "mockllm/model"  # Inspect's mock model (projector.matrix.evals_inspect.MOCK; not imported: it needs the extra)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog=PROG,
        description="Run the derived eval cases of the workflows on the real server (project-skill serve on each "
        "case), surface by surface, graded from what the server recorded. Exit 1 when a case fails.",
        epilog="The nearest pyproject.toml's [tool.project-skill] table gives the defaults of PATH (workflows), "
        "--skills (out), --tools-from and --workflow-tools, as for build. A flag overrides the file.",
    )
    ap.add_argument("paths", nargs="*", metavar="PATH", help="the workflows folder (default: workflows)")
    ap.add_argument("--skills", dest="out", metavar="DIR", help="the built skills (default: generated_skills)")
    ap.add_argument("--tools-from", metavar="SERVER|FILE", help="the tools, from a server or a snapshot, as build")
    ap.add_argument(
        "--workflow-tools",
        action=argparse.BooleanOptionalAction,
        help="the skills were built with --workflow-tools: serve each case with them",
    )
    ap.add_argument(
        "--surface",
        action="append",
        choices=[*sorted(SURFACES), INSPECT],
        help="a surface to run (repeat the option; default: prompt, and tool and task when the skills were built "
        "with --workflow-tools). prompt: prompts/get of the workflow; tool: tools/call of its tool; task: that "
        "tool as an MCP task; skill, agent: the skill followed by the simulated policy; inspect: a model, through "
        "Inspect AI (the evals extra)",
    )
    ap.add_argument("--workflow", default="", metavar="NAME", help="only this workflow's cases")
    ap.add_argument("--parallel", type=int, default=2, metavar="N", help="cases run at once (default 2)")
    ap.add_argument("--json", action="store_true", help="print every run as JSON")
    inspect = ap.add_argument_group("the inspect surface")
    inspect.add_argument("--model", default=MOCK, help=f"an Inspect model name (default: {MOCK}, no network)")
    inspect.add_argument("--epochs", type=int, default=1, metavar="K", help="runs per case, for pass@K (default 1)")
    inspect.add_argument("--limit", type=int, default=None, metavar="N", help="only the first N cases")
    inspect.add_argument("--log-dir", default="logs", metavar="DIR", help="where Inspect writes its log")
    ap.set_defaults(skills_only=None)  # read from the file only, to refuse a tree built without its workflows
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--config", metavar="FILE", help="read [tool.project-skill] from FILE")
    where.add_argument("--no-config", action="store_true", help="read no configuration file")
    return ap


def _settled(argv: list[str]) -> argparse.Namespace:
    """The command line, its gaps filled from the configuration file as ``build`` fills them."""
    args = parser().parse_args(argv)
    found = config.load(args.config, disabled=args.no_config)
    config.settle(args, found)
    if len(args.paths) != 1:
        raise UsageError(f"one workflows folder is served at a time; name it (got {len(args.paths)})")
    if args.parallel < 1 or args.epochs < 1:
        raise UsageError("--parallel and --epochs must be at least 1")
    if args.skills_only:
        raise UsageError("the skills were built with --skills-only: there is no workflow to serve beside them")
    args.surfaces = args.surface or ["prompt", *(["tool", "task"] if args.workflow_tools else [])]
    args.summary = config.summary(found)
    return args


def _inspect(args: argparse.Namespace) -> tuple[dict[str, Any], bool]:
    """The inspect surface: its summary as a report, and whether it succeeded."""
    try:
        from . import evals_inspect
    except ModuleNotFoundError as exc:
        raise UsageError(
            f"--surface inspect needs the evals extra (pip install 'project-skill[evals]'): {exc}"
        ) from None
    log = evals_inspect.run(
        args.model,
        workflows=args.paths[0],
        skills=args.out,
        workflow=args.workflow,
        epochs=args.epochs,
        log_dir=args.log_dir,
        limit=args.limit,
        tools_from=args.tools_from or "",
        workflow_tools=bool(args.workflow_tools),
    )
    return {"surface": "inspect", "summary": evals_inspect.summary(log)}, log.status == "success"


def _workflow(name: str, loaded: list[Any]) -> str:
    """``--workflow``: a workflow's name, or its skill's (as ``evals --workflow`` takes it), as the workflow's name;
    a name that is neither is refused, since a run of no case would pass."""
    if not name:
        return name
    for wf in loaded:
        if name in (wf.name, skill_name(wf.name)):
            return wf.name
    names = ", ".join(sorted(wf.name for wf in loaded)) or "none"
    raise UsageError(f"no workflow '{name}' (one of: {names})")


def _print(report: dict[str, Any]) -> None:
    if "summary" in report:
        print(report["summary"])
        return
    print(f"{report['surface']}: {report['passed']}/{report['cases']} cases passed, {report['unsafe']} unsafe")
    for r in report["runs"]:
        if not r["passed"]:
            print(f"  {r['id']} ({'; '.join(r['covers'])}): {'; '.join(r['problems'])}")


def main(argv: list[str]) -> int:
    """Run the command line ``argv`` (what follows ``evals run``); errors are the caller's to print."""
    import anyio

    args = _settled(argv)
    loaded = load_workflows(args.paths, args.tools_from)
    args.workflow = _workflow(args.workflow, loaded)
    if not (Path(args.out) / INDEX_FILE).is_file():  # else every case server refuses to start, for no fault of its own
        raise UsageError(
            f"{args.out}: no built skills ({INDEX_FILE} is missing); build them first: project-skill build"
        )
    built_with = ("--workflow-tools",) if args.workflow_tools else ()
    reports, ok = [], True
    for surface in args.surfaces:
        if surface == INSPECT:
            report, passed = _inspect(args)
        else:
            report = anyio.run(
                lambda s=surface: run_surface(
                    args.paths[0], args.out, args.workflow, s, args.parallel, loaded=loaded, built_with=built_with
                )
            )
            passed = report["passed"] == report["cases"]
        ok = ok and passed
        reports.append(report)
        if not args.json:
            _print(report)
    if args.json:
        print(json.dumps(reports, indent=2))
    else:
        print(f"{plural(len(reports), 'surface')} run{args.summary}")
    return EXIT_OK if ok else EXIT_FINDINGS
