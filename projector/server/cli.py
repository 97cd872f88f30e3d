"""``project-skill serve [MODULE:ATTR] [--stdio | --http [HOST:]PORT] [--framework mcp|fastmcp]``: serve the skills
and the workflow prompts on your own server, or on the demo server of the shipped examples.

With a target (``MODULE:ATTR`` or ``path/to/file.py:ATTR``, found as ``uvicorn`` and ``fastmcp run`` find theirs:
:mod:`projector.server.target`), the skills and workflows are attached to that server (:func:`projector.server.attach`,
which checks every step against the server's own tools) and it is run; its framework is detected from the object.
Without one, the demo tools of the shipped examples are served, on mcp's MCPServer (the default) or on FastMCP.

stdio is the default. ``--http`` serves Streamable HTTP at ``http://HOST:PORT/mcp``, stateless (any request may reach
any process, so it scales out behind a load balancer); HOST defaults to 127.0.0.1. Where it listens goes to stderr.
Over HTTP, a request whose Host or Origin names another server is refused (DNS rebinding); ``--allow-host`` and
``--allow-origin`` add the names a real deployment is reached by (:mod:`projector.server.http`).

``--upstream SERVER`` (a stdio command line or an ``http(s)://`` URL) serves them in front of any other MCP server,
of any language, SDK or protocol era: its tools are passed through, and the workflows' steps call them
(:mod:`projector.server.gateway`). Its stderr is shown only when it fails, or with ``--verbose``.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import re
import sys
from dataclasses import replace
from typing import Any

from ..errors import Diagnostic, UsageError
from ..exits import EXIT_OK, Shell, run
from . import adapters
from .attaching import ATTACH_HINT, ATTACH_RESOURCE_HINT
from .errors import AttachError

DEFAULT_HOST = "127.0.0.1"
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # --upstream-env: a variable's name, never NAME=VALUE


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


def _allowed_host(value: str) -> str:
    from .http import parse_host

    try:
        parse_host(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return value


def _allowed_origin(value: str) -> str:
    from .http import parse_origin

    try:
        return parse_origin(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _env_name(value: str) -> str:
    if not _ENV_NAME.fullmatch(value):
        raise argparse.ArgumentTypeError(
            f"give a variable's name (letters, digits, _), not {value!r}: its value comes from this environment, "
            "since a value on the command line is shown to every user of the machine"
        )
    return value


def parser(name: str) -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog=f"project-skill {name}",
        description="Serve the skills (SEP-2640), the workflow prompts and the bootstrap prompts over MCP: on your own "
        "server (MODULE:ATTR), or, without one, on the demo server with the demo tools of the shipped "
        "examples.",
        epilog="exit codes: 0 ok, 1 the tree or workflows cannot be served, 2 usage (a TARGET that cannot be "
        "imported or is not a server included)",
    )
    ap.add_argument(
        "target",
        nargs="?",
        metavar="MODULE:ATTR",
        help="your server: MODULE:ATTR or path/to/file.py:ATTR, where ATTR is an MCPServer or a "
        "fastmcp.FastMCP, or a factory with no required arguments that returns one (as uvicorn "
        "module:app and fastmcp run server.py:mcp take it). The current directory is put first on "
        "sys.path before the import, as uvicorn does (for the file form, the file's directory "
        "too). The skills and workflows are attached to it and it is run. Without a target, the "
        "demo server is served",
    )
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--stdio", action="store_true", help="serve on stdin/stdout (the default)")
    mode.add_argument(
        "--http",
        metavar="[HOST:]PORT",
        type=parse_address,
        help=f"serve Streamable HTTP at http://HOST:PORT/mcp (HOST defaults to {DEFAULT_HOST})",
    )
    ap.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME[:PORT]",
        type=_allowed_host,
        help="HTTP: also accept requests whose Host header is NAME (on any port, or on PORT only), and "
        "the origins http(s)://NAME; repeatable. The loopback names and the bound address are "
        "always accepted; any other Host is refused with 421",
    )
    ap.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        type=_allowed_origin,
        help="HTTP: also accept requests sent by a browser page of ORIGIN (e.g. https://app.example.com); "
        "repeatable. Any other Origin is refused with 403",
    )
    ap.add_argument(
        "--upstream",
        metavar="SERVER",
        help="serve in front of another MCP server, of any language, SDK or protocol era: a stdio "
        "command line (one argument, split like a shell would) or an http(s)://…/mcp URL. Its "
        "tools are passed through unchanged, and every workflow step is checked against them at "
        "start-up and calls them. Not with MODULE:ATTR",
    )
    ap.add_argument(
        "--upstream-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="--upstream: how long to wait for its handshake and tools/list at start-up, and for each "
        "forwarded tool call (default: 30 at start-up, 60 for a call); past it the start fails, and "
        "a call is a tool error",
    )
    ap.add_argument(
        "--upstream-env",
        action="append",
        default=[],
        metavar="NAME",
        type=_env_name,
        help="--upstream: pass this variable of the gateway's environment on to a stdio upstream (e.g. "
        "DATABASE_URL); repeatable. The upstream gets only PATH, HOME, USER, LOGNAME, SHELL, TERM, "
        "the locale (LANG, LANGUAGE, LC_*), TZ, the temporary folder (TMPDIR, TEMP, TMP) and these",
    )
    ap.add_argument(
        "--verbose",
        action="store_true",
        help="--http: show the HTTP server's INFO lines (uvicorn's and the framework's; by default only warnings "
        "and errors); --upstream: show a stdio upstream's stderr as it comes (by default it is shown only when "
        "the upstream fails)",
    )
    ap.add_argument(
        "--framework",
        choices=adapters.names(),
        default=None,
        help="the demo's framework: mcp's MCPServer (the default) or FastMCP (needs the "
        "project-skill[fastmcp] extra). A target's framework is detected from the object; when "
        "given, it must agree",
    )
    ap.add_argument(
        "--skills",
        default=None,
        metavar="DIR",
        help="the skills tree, with its skills.json (default: `out` in [tool.project-skill], else generated_skills)",
    )
    ap.add_argument(
        "--workflows",
        default=None,
        metavar="DIR",
        help="the workflow files, served as prompts (default: `workflows` in [tool.project-skill], else workflows)",
    )
    ap.add_argument("--page-size", type=_positive, default=50, metavar="N", help="skills/list page size (default: 50)")
    ap.add_argument(
        "--ttl-ms", type=int, default=0, metavar="MS", help="ttlMs on skills/list and skills/get (default 0)"
    )
    ap.add_argument(
        "--cache-scope",
        choices=("private", "public"),
        default="private",
        help="cacheScope on skills/list and skills/get (default: private)",
    )
    ap.add_argument(
        "--skill-tools",
        action="store_true",
        help="also add the read-only tools load_skill(name) and read_skill_file(uri), which return a "
        "skill's SKILL.md and its files (the same verified bytes as resources/read), for hosts that "
        "call tools but never read resources; refused when the server already has a tool of either "
        "name (tool-collision)",
    )
    ap.add_argument(
        "--workflow-tools",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="also offer each workflow as a tool of its name, for hosts that only call tools: its input "
        "schema is the workflow's arguments, and a call runs the steps on the server as the prompt "
        "does (conditions, confirmations) and returns the transcript and the saved results; refused "
        "when the server already has a tool of that name (tool-collision). Build with "
        "`project-skill build --workflow-tools` so that each SKILL.md names its tool (default: "
        "`workflow-tools` in [tool.project-skill], else off)",
    )
    ap.add_argument(
        "--state",
        metavar="DIR|URL",
        help="with --workflow-tools: run each workflow tool as a durable task too (the Tasks extension), "
        "on DBOS (the project-skill[durable] extra), kept in DIR (made if missing, yours only): "
        "each step's tool call is checkpointed, and the tasks a killed server left running go on "
        "when it starts again on the same DIR. Or a Postgres URL (postgresql://USER:PASSWORD@HOST:PORT/DB) "
        "that several processes share: a task made on one is read, answered and finished on any other, "
        "and the rounds of a process that died are taken up by a live one after "
        "$PROJECT_SKILL_STATE_LEASE seconds (default 30). It keeps at most $PROJECT_SKILL_STATE_MAX_TASKS "
        "tasks (default 10000), of $PROJECT_SKILL_STATE_MAX_TASK_BYTES each (4 MiB) and "
        "$PROJECT_SKILL_STATE_MAX_BYTES in all (256 MiB), each for $PROJECT_SKILL_STATE_TTL seconds (86400): "
        "a task past a bound is refused, an expired one removed. Without the extra, the workflow tools run "
        "without tasks, and serve says so at start-up",
    )
    ap.add_argument(
        "--tasks",
        action="store_true",
        help="with --workflow-tools: run each workflow tool as a task too (the Tasks extension) for a "
        "client that declares it, kept in memory: a task and its pending question are gone when the "
        "server stops (for tasks that outlive it, --state DIR instead)",
    )
    where = ap.add_mutually_exclusive_group()
    where.add_argument(
        "--config",
        metavar="FILE",
        help="read [tool.project-skill] from FILE instead of the nearest pyproject.toml (its paths are "
        "relative to FILE's folder)",
    )
    where.add_argument("--no-config", action="store_true", help="read no configuration file")
    ap.add_argument(
        "--max-line-bytes",
        type=_positive,
        default=4 * 1024 * 1024,
        metavar="N",
        help="stdio: answer a longer line with an error instead of reading it (default: 4 MiB)",
    )
    return ap


MODULE_ATTR = (
    "project-skill serve MODULE:ATTR (your MCPServer or FastMCP, or a factory with no required "
    "arguments that returns one, e.g. project-skill serve my_server:mcp)"
)
DEMO_HINTS = {
    ATTACH_HINT: f"the demo serves only its own tools; to serve these workflows with your server's tools, run "
    f"{MODULE_ATTR}",
    ATTACH_RESOURCE_HINT: f"the demo serves only its own resources; to serve these workflows with your server's "
    f"resources, run {MODULE_ATTR}",
}


def _on_the_command_line(problems: list[Diagnostic], hints: dict[str, str]) -> list[Diagnostic]:
    """attach()'s diagnostics, with the hints that say "before calling attach()" said for the command line (the
    command calls attach, not the user)."""
    out = []
    for d in problems:
        hint = d.hint
        for old, new in hints.items():
            hint = hint.replace(old, new) if hint else hint
        out.append(replace(d, hint=hint) if hint != d.hint else d)
    return out


def _server(args: argparse.Namespace) -> tuple[Any, str]:
    """The server to run, attached, and its framework. A UsageError or a ProjectorError (an AttachError) otherwise."""
    from mcp.server.caching import CacheHint

    from . import attach
    from .replay import REPLAY_DB_ENV, from_env

    cache = CacheHint(ttl_ms=args.ttl_ms, scope=args.cache_scope)
    state = _state(args)
    # $PROJECT_SKILL_REPLAY_DB, checked now, before anyone can say yes; unset, attach's default (the claims of a
    # Postgres --state, shared by every process on it; else this process's memory)
    replay = from_env() if os.environ.get(REPLAY_DB_ENV) or state is None else None
    tasks = _tasks(args)
    if args.target is not None:
        from .target import load_server

        server, framework = load_server(args.target)
        if args.framework is not None and args.framework != framework:
            raise UsageError(
                f"{args.target}: --framework {args.framework}, but the target is "
                f"{adapters.REGISTRY[framework].a_server}; leave --framework out (it is detected from "
                f"the object)"
            )
        try:
            attach(
                server,
                args.skills,
                args.workflows,
                page_size=args.page_size,
                cache=cache,
                skill_tools=args.skill_tools,
                workflow_tools=args.workflow_tools,
                replay=replay,
                state=state,
                tasks=tasks,
            )
        except AttachError as exc:
            raise AttachError(
                _on_the_command_line(
                    exc.diagnostics,
                    {
                        ATTACH_HINT: f"register it on {args.target}",
                        ATTACH_RESOURCE_HINT: f"register the resource on {args.target}",
                    },
                )
            ) from None
        return server, framework

    from .demo import demo_server

    framework = args.framework or adapters.DEFAULT
    missing = adapters.missing(framework)
    if missing is not None:
        raise UsageError(f"--framework {framework} {missing}")
    try:
        server, _ = demo_server(
            args.skills,
            args.workflows,
            page_size=args.page_size,
            cache=cache,
            framework=framework,
            skill_tools=args.skill_tools,
            workflow_tools=args.workflow_tools,
            replay=replay,
            state=state,
            tasks=tasks,
        )
    except AttachError as exc:
        raise AttachError(_on_the_command_line(exc.diagnostics, DEMO_HINTS)) from None
    return server, framework


def _tasks(args: argparse.Namespace) -> Any:
    """``--tasks``, once checked: the in-memory :class:`~projector.server.tasks.Tasks`, or None."""
    if not args.tasks:
        return None
    if not args.workflow_tools:
        raise UsageError("--tasks runs the workflow tools as tasks; add --workflow-tools")
    if args.state is not None:
        raise UsageError("give --tasks (kept in memory) or --state DIR|URL (kept in a folder or a database), not both")
    from .tasks import Tasks

    return Tasks()


def _state(args: argparse.Namespace) -> str | None:
    """``--state DIR``, once checked: None (and one line on stderr) when DBOS, the durable extra, is missing."""
    if args.state is None:
        return None
    if not args.workflow_tools:
        raise UsageError("--state keeps the tasks of the workflow tools; add --workflow-tools")
    from .durable import NO_TASKS, available

    if not available():
        print(f"project-skill serve: {NO_TASKS}", file=sys.stderr, flush=True)
        return None
    state: str = args.state
    return state


def main(name: str = "serve", argv: list[str] | None = None) -> int:
    prog = f"project-skill {name}"
    shell = Shell(prog, closing=lambda _: f"{prog}: nothing is served")
    return run(shell, lambda: _serve(name, sys.argv[1:] if argv is None else argv))


def configure(args: argparse.Namespace) -> None:
    """Fill ``--skills``, ``--workflows`` and ``--workflow-tools`` when the command line left them out: from
    ``out``, ``workflows`` and ``workflow-tools`` in ``[tool.project-skill]`` (:mod:`projector.config`, the table
    ``build`` reads, its paths relative to the pyproject.toml's folder), else their defaults. A flag overrides."""
    from .. import config

    found = config.load(args.config, disabled=args.no_config)
    table = argparse.Namespace(
        out=args.skills, paths=[args.workflows] if args.workflows else [], workflow_tools=args.workflow_tools
    )
    config.settle(table, found)  # the one rule build follows: given flag, else the table, else the default
    args.skills, args.workflow_tools = table.out, table.workflow_tools
    args.workflows = table.paths[0] if len(table.paths) == 1 else table.paths


def _serve(name: str, argv: list[str]) -> int:
    args = parser(name).parse_args(argv)
    configure(args)
    if args.ttl_ms < 0:
        raise UsageError("--ttl-ms must be 0 or more")
    if args.upstream is not None:
        return _serve_upstream(name, args)
    server, framework = _server(args)
    what = f"{args.target}, {framework}" if args.target is not None else framework
    try:
        if args.http is None:
            print(f"project-skill {name}: serving MCP on stdio ({what})", file=sys.stderr, flush=True)
            adapters.get(framework).run_stdio(server, args.max_line_bytes)
        else:
            host, port = args.http
            shown = f"[{host}]" if _is_v6(host) else host
            print(
                f"project-skill {name}: serving MCP at http://{shown}:{port}/mcp ({what})", file=sys.stderr, flush=True
            )
            from .http import serve_http

            serve_http(
                server, host, port, allow_hosts=args.allow_host, allow_origins=args.allow_origin, verbose=args.verbose
            )
    except KeyboardInterrupt:  # pragma: no cover
        return EXIT_OK
    return EXIT_OK


def _serve_upstream(name: str, args: argparse.Namespace) -> int:
    """``serve --upstream SERVER``: the gateway (:mod:`projector.server.gateway`), on stdio or HTTP."""
    import anyio
    from mcp.server.caching import CacheHint

    from .gateway import serve_gateway_async

    if args.target is not None:
        raise UsageError(f"give MODULE:ATTR ({args.target}) or --upstream, not both")
    if args.state is not None or args.tasks:
        raise UsageError(
            f"{'--state' if args.state is not None else '--tasks'} is not supported with --upstream yet: "
            "serve the gateway without it"
        )
    if args.upstream_timeout is not None and not args.upstream_timeout > 0:
        raise UsageError("--upstream-timeout must be a positive number of seconds")
    framework = args.framework or adapters.DEFAULT
    missing = adapters.missing(framework)
    if missing is not None:
        raise UsageError(f"--framework {framework} {missing}")
    where = "on stdio" if args.http is None else f"at http://{_shown(args.http[0])}:{args.http[1]}/mcp"

    def ready(_: Any) -> None:
        print(
            f"project-skill {name}: serving MCP {where} (in front of {args.upstream}, {framework})",
            file=sys.stderr,
            flush=True,
        )

    timeouts = (
        {}
        if args.upstream_timeout is None
        else {"start_timeout": args.upstream_timeout, "timeout": args.upstream_timeout}
    )
    from .replay import from_env

    replay = from_env()  # $PROJECT_SKILL_REPLAY_DB, checked now: before anyone can say yes
    options = dict(
        framework=framework,
        verbose=args.verbose,
        upstream_env=args.upstream_env,
        page_size=args.page_size,
        cache=CacheHint(ttl_ms=args.ttl_ms, scope=args.cache_scope),
        skill_tools=args.skill_tools,
        workflow_tools=args.workflow_tools,
        replay=replay,
        **timeouts,
    )
    try:
        anyio.run(
            lambda: serve_gateway_async(
                args.upstream,
                args.skills,
                args.workflows,
                http=args.http,
                allow_hosts=args.allow_host,
                allow_origins=args.allow_origin,
                max_line_bytes=args.max_line_bytes,
                ready=ready,
                **options,
            )
        )
    except AttachError as exc:
        raise AttachError(
            _on_the_command_line(
                exc.diagnostics,
                {
                    ATTACH_HINT: f"the upstream {args.upstream} has no such tool; fix the step, or serve an upstream that "
                    f"has it",
                    ATTACH_RESOURCE_HINT: "the gateway serves none of the upstream's resources; steps that read resources "
                    "need MODULE:ATTR",
                },
            )
        ) from None
    except KeyboardInterrupt:  # pragma: no cover
        return EXIT_OK
    return EXIT_OK


def _shown(host: str) -> str:
    return f"[{host}]" if _is_v6(host) else host


def _is_v6(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).version == 6
    except ValueError:
        return False
