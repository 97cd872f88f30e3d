"""``project-skill serve [--stdio | --http [HOST:]PORT] [--framework mcp|fastmcp]``: serve the shipped examples with
the demo tools, on mcp's MCPServer (the default) or on FastMCP.

stdio is the default. ``--http`` serves Streamable HTTP at ``http://HOST:PORT/mcp``, stateless (any request may reach
any process, so it scales out behind a load balancer); HOST defaults to 127.0.0.1. Where it listens goes to stderr.
"""

from __future__ import annotations

import argparse
import importlib.util
import ipaddress
import sys

from ..errors import ProjectorError, UsageError, format_text

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
DEFAULT_HOST = "127.0.0.1"


def parse_address(value: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[v6]:PORT`` or ``PORT`` (host 127.0.0.1)."""
    host, sep, port_text = value.rpartition(":")
    if not sep:
        host, port_text = DEFAULT_HOST, value
    host = host.strip("[]") or DEFAULT_HOST
    try:
        port = int(port_text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT or PORT, got {value!r}") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"the port must be 1-65535, got {port}")
    return host, port


def _positive(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}")
    return n


def parser(name: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog=f"project-skill {name}",
        description="Serve the skills (SEP-2640), the workflow prompts and the bootstrap prompts over MCP, with the "
                    "demo tools of the shipped examples.",
        epilog="exit codes: 0 ok, 1 the tree or workflows cannot be served, 2 usage")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--stdio", action="store_true", help="serve on stdin/stdout (the default)")
    mode.add_argument("--http", metavar="[HOST:]PORT", type=parse_address,
                      help=f"serve Streamable HTTP at http://HOST:PORT/mcp (HOST defaults to {DEFAULT_HOST})")
    ap.add_argument("--framework", choices=("mcp", "fastmcp"), default="mcp",
                    help="the server framework: mcp's MCPServer (the default) or FastMCP (needs the "
                         "project-skill[fastmcp] extra)")
    ap.add_argument("--skills", default="generated_skills", metavar="DIR",
                    help="the skills tree, with its skills.json (default: generated_skills)")
    ap.add_argument("--workflows", default="workflows", metavar="DIR",
                    help="the workflow files, served as prompts (default: workflows)")
    ap.add_argument("--page-size", type=_positive, default=50, metavar="N", help="skills/list page size (default: 50)")
    ap.add_argument("--ttl-ms", type=int, default=0, metavar="MS", help="ttlMs on skills/list and skills/get (default 0)")
    ap.add_argument("--cache-scope", choices=("private", "public"), default="private",
                    help="cacheScope on skills/list and skills/get (default: private)")
    ap.add_argument("--max-line-bytes", type=_positive, default=4 * 1024 * 1024, metavar="N",
                    help="stdio: answer a longer line with an error instead of reading it (default: 4 MiB)")
    return ap


def main(name: str = "serve", argv: list[str] | None = None) -> int:
    args = parser(name).parse_args(sys.argv[1:] if argv is None else argv)
    if args.ttl_ms < 0:
        print(f"project-skill {name}: --ttl-ms must be 0 or more", file=sys.stderr)
        return EXIT_USAGE
    from mcp.server.caching import CacheHint

    from .demo import demo_server

    if args.framework == "fastmcp" and importlib.util.find_spec("fastmcp") is None:
        print(f"project-skill {name}: --framework fastmcp needs FastMCP: pip install 'project-skill[fastmcp]'",
              file=sys.stderr)
        return EXIT_USAGE
    try:
        server, _ = demo_server(args.skills, args.workflows, page_size=args.page_size,
                                cache=CacheHint(ttl_ms=args.ttl_ms, scope=args.cache_scope), framework=args.framework)
    except UsageError:
        raise
    except ProjectorError as exc:
        for d in exc.diagnostics:
            print(format_text(d), file=sys.stderr)
        print(f"project-skill {name}: nothing is served", file=sys.stderr)
        return EXIT_FINDINGS
    try:
        if args.http is None:
            print(f"project-skill {name}: serving MCP on stdio ({args.framework})", file=sys.stderr, flush=True)
            if args.framework == "fastmcp":
                server.run("stdio", show_banner=False)
            else:
                import anyio

                from .stdio import serve_stdio

                anyio.run(serve_stdio, server, args.max_line_bytes)
        else:
            host, port = args.http
            shown = f"[{host}]" if _is_v6(host) else host
            print(f"project-skill {name}: serving MCP at http://{shown}:{port}/mcp ({args.framework})",
                  file=sys.stderr, flush=True)
            if args.framework == "fastmcp":
                server.run("http", host=host, port=port, path="/mcp", stateless_http=True, show_banner=False)
            else:
                server.run("streamable-http", host=host, port=port, stateless_http=True)
    except KeyboardInterrupt:  # pragma: no cover
        return EXIT_OK
    return EXIT_OK


def _is_v6(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).version == 6
    except ValueError:
        return False
