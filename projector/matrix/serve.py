"""The server the matrix measures:
``python -m projector.matrix.serve [--skills DIR] [--workflows DIR] [--framework mcp|fastmcp] [--lock FILE] [--case] [--tasks]``.

It is exactly the demo server of ``project-skill serve`` (:func:`projector.server.demo.demo_server`: the demo tools,
the skills, the workflow prompts), plus the server-side agent of :mod:`projector.matrix.agent`, on the same stdio
transport as ``project-skill serve --stdio``, on either framework (``mcp``'s MCPServer by default, or FastMCP).

Before it serves, the set-up pins the skills it serves into ``--lock`` (by default a file in a temporary folder of
its own, removed when it exits); the agent composes every run from that lock.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from ..exits import EXIT_OK, Shell, run
from ..server import adapters
from .agent import make_lock, register_agent

PROG = "python -m projector.matrix.serve"
LOCK = "skills.lock"


def build(
    skills: str,
    workflows: str,
    framework: str = adapters.DEFAULT,
    *,
    lock: str | Path,
    case: bool = False,
    tasks: bool = False,
    workflow_tools: bool = False,
):
    """The measured server, its agent composing from ``lock``, which :func:`projector.matrix.agent.make_lock`
    makes at set-up. With ``case``, the server is a derived eval case's (:mod:`projector.server.evalcase`, named by
    its environment variable; mcp's MCPServer), with the skills and workflows attached (the workflows as tools too
    with ``workflow_tools``, for skills built with ``--workflow-tools``), and no store. With ``tasks``,
    the demo's workflows are tools too, each run as a task (in memory) for a client that declares the Tasks
    extension, as ``project-skill serve --workflow-tools --tasks`` serves them."""
    if case:
        from ..server import attach
        from ..server.evalcase import server as case_server

        server, store = case_server(), None
        attach(server, skills, workflows, workflow_tools=workflow_tools)
    else:
        from ..server.demo import demo_server

        from ..server.tasks import Tasks

        more = {"workflow_tools": True, "tasks": Tasks()} if tasks else {}
        server, store = demo_server(skills, workflows, framework=framework, **more)
    register_agent(server, lock=lock)
    return server, store


def main(argv: list[str] | None = None) -> int:
    return run(Shell(PROG, closing=lambda _: f"{PROG}: nothing is served"), lambda: _serve(argv))


def _serve(argv: list[str] | None) -> int:
    import anyio

    ap = argparse.ArgumentParser(prog=PROG, description="The demo server plus the server-side agent, on stdio.")
    ap.add_argument("--skills", default="generated_skills")
    ap.add_argument("--workflows", default="workflows")
    ap.add_argument("--framework", choices=adapters.names(), default=adapters.DEFAULT)
    ap.add_argument(
        "--case",
        action="store_true",
        help="serve the derived eval case named by $PROJECTOR_EVAL_CASE (projector.server.evalcase, on mcp) "
        "instead of the demo's tools (projector.matrix.evalruns --surface agent)",
    )
    ap.add_argument(
        "--tasks",
        action="store_true",
        help="offer the workflows as tools too, run as tasks in memory (serve --workflow-tools --tasks)",
    )
    ap.add_argument(
        "--workflow-tools",
        action="store_true",
        help="with --case: the workflows are tools too, as serve --workflow-tools serves skills built with it",
    )
    ap.add_argument(
        "--lock",
        default=None,
        help="where the set-up writes the lock the agent composes from (default: a temporary folder, removed on exit)",
    )
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="projector-matrix-") as tmp:
        lock = Path(args.lock) if args.lock else Path(tmp) / LOCK
        framework = "mcp" if args.case else args.framework
        server, _ = build(
            args.skills,
            args.workflows,
            framework,
            lock=lock,
            case=args.case,
            tasks=args.tasks,
            workflow_tools=args.workflow_tools,
        )
        anyio.run(make_lock, server, lock)  # the set-up, before any request
        adapters.get(framework).run_stdio(server)  # the same stdio transport as project-skill serve --stdio
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
