"""The server the matrix measures:
``python -m projector.matrix.serve [--skills DIR] [--workflows DIR] [--framework mcp|fastmcp]``.

It is exactly the demo server of ``project-skill serve`` (:func:`projector.server.demo.demo_server`: the demo tools,
the skills, the workflow prompts), plus the server-side agent of :mod:`projector.matrix.agent`, on the same stdio
transport as ``project-skill serve --stdio``, on either framework (``mcp``'s MCPServer by default, or FastMCP).
"""

from __future__ import annotations

import argparse
import sys

from ..exits import EXIT_OK, Shell, run
from ..server import adapters
from .agent import register_agent

PROG = "python -m projector.matrix.serve"


def build(skills: str, workflows: str, framework: str = adapters.DEFAULT):
    from ..server.demo import demo_server

    server, store = demo_server(skills, workflows, framework=framework)
    register_agent(server)
    return server, store


def main(argv: list[str] | None = None) -> int:
    return run(Shell(PROG, closing=lambda _: f"{PROG}: nothing is served"), lambda: _serve(argv))


def _serve(argv: list[str] | None) -> int:
    ap = argparse.ArgumentParser(prog=PROG,
                                 description="The demo server plus the server-side agent, on stdio.")
    ap.add_argument("--skills", default="generated_skills")
    ap.add_argument("--workflows", default="workflows")
    ap.add_argument("--framework", choices=adapters.names(), default=adapters.DEFAULT)
    args = ap.parse_args(argv)
    server, _ = build(args.skills, args.workflows, args.framework)
    adapters.get(args.framework).run_stdio(server)  # the same stdio transport as project-skill serve --stdio
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
