"""The demo shop with its workflows as tools that also run as tasks (SEP-2663), for a real peer to drive over HTTP.

Not part of the product: ``project-skill serve`` has no flag yet that turns tasks on, so the tests serve this::

    python tests/server/tasks/workflow_server.py --framework mcp --http 127.0.0.1:PORT

It is the demo server (its tools, ``attach(..., workflow_tools=True)``) with ``tasks=Tasks()``: a client that declares
the Tasks extension gets a task for each workflow tool; any other client gets the plain tool.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # run as a script from the repository
    sys.path.insert(0, str(ROOT))

from projector.server import adapters, attach  # noqa: E402
from projector.server.demo import INSTRUCTIONS, add_demo_tools  # noqa: E402
from projector.server.tasks import Tasks  # noqa: E402


def server(framework: str = "mcp") -> Any:
    srv = adapters.get(framework).make_server("projector-tasks", version="1", instructions=INSTRUCTIONS, page_size=50)
    add_demo_tools(srv)
    attach(srv, ROOT / "generated_skills", ROOT / "workflows", workflow_tools=True, tasks=Tasks(poll_ms=100))
    return srv


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--framework", default="mcp")
    ap.add_argument("--http", required=True, metavar="HOST:PORT")
    args = ap.parse_args()
    host, _, port = args.http.rpartition(":")
    from projector.server import serve_http

    serve_http(server(args.framework), host, int(port))


if __name__ == "__main__":
    main()
