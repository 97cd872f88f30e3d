"""A plain FastMCP server with FastMCP's own ``SkillsDirectoryProvider`` (no projector code), for the interop tests (tests/server/test_fastmcp.py)
and the bench.

    python bench/fastmcp_directory_server.py ROOT              # stdio
    python bench/fastmcp_directory_server.py ROOT --http PORT  # Streamable HTTP at http://127.0.0.1:PORT/mcp
"""

from __future__ import annotations

import argparse

from fastmcp import FastMCP
from fastmcp.skills.provider import SkillsDirectoryProvider


def build(root: str) -> FastMCP:
    return FastMCP("fastmcp-skills-directory", providers=[SkillsDirectoryProvider(root)])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("root")
    ap.add_argument("--http", type=int)
    args = ap.parse_args()
    server = build(args.root)
    if args.http is None:
        server.run("stdio", show_banner=False)
    else:
        server.run("http", host="127.0.0.1", port=args.http, path="/mcp", stateless_http=True, show_banner=False,
                   log_level="WARNING")


if __name__ == "__main__":
    main()
