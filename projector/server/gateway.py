"""``project-skill serve --upstream SERVER``: the skills, the workflow prompts and the bootstrap prompts in front of any
MCP server, whatever its language, SDK or protocol era.

::

    from projector.server import gateway, serve_http_async

    async with gateway("mcp-server-sqlite --db-path shop.db", "shop_skills", "shop_workflows") as server:
        await serve_http_async(server, "127.0.0.1", 8000)

SERVER is a stdio command line or an ``http(s)://`` URL, as ``remote`` and ``--tools-from`` take it
(:func:`projector.remote.client.parse_server`). The gateway connects to it as a client, through the connection of
projector's verifying client (:func:`projector.remote.connect`): ``mcp``'s :class:`mcp.Client`, which probes
``server/discover`` and falls back to the initialize handshake, so a server of either era answers; every message
bounded where its bytes arrive; a stdio server's stderr kept and shown only when it fails, or with ``verbose``.

Then it builds a server of the chosen framework (mcp's ``MCPServer``, or FastMCP) whose tools are the upstream's,
forwarding: each tool listed as the upstream last listed it, field for field (:mod:`projector.server.forwarded`),
and each ``tools/call`` sent upstream and its result returned unchanged (an upstream's JSON-RPC error stays that
error). On that server it calls the one
:func:`~projector.server.attach`, so every step is checked against the upstream's tools at start-up by the same
rules, and the workflow prompts' steps call the upstream's tools through the forwarding ones. When the upstream says
its tools changed, they are listed again, and a workflow that no longer fits them is withdrawn until it fits again
(:mod:`projector.server.refit`).

Why ``mcp``'s client session and not FastMCP's proxy: one connection serves both frameworks, FastMCP stays an optional
extra, and the client already has the bounds, the stderr capture and the era fallback that the commands use
(FastMCP's proxy client must be told ``mode="auto"`` for a handshake-era server and has neither bound).

Bounds: the handshake and ``tools/list`` must each end within ``start_timeout`` seconds, or the gateway stops with an
error naming the upstream; ``tools/list`` is read as ``project-skill tools`` reads it
(:func:`projector.remote.tools.listed_tools`), so a listing that never ends, repeats a cursor or passes the 16 MiB of
a tools snapshot is refused too, naming the upstream. Each forwarded call waits ``timeout`` seconds at most. A call
to an upstream that has died or does not answer in time is a tool error (``isError``), never a hang.

What is the operator's stays the operator's: the tool error (and so a workflow's transcript) says only that the
upstream did not answer and that the call's effect is unknown; why (the transport's error, the exit status, the last
lines of the upstream's stderr, which may hold a password it printed) goes to the gateway's stderr. A stdio upstream
is started with only the environment a server needs (:func:`projector.remote.client.server_environment`) and the
variables the operator names (``--upstream-env NAME``), never the gateway's keys.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types
from mcp.client.subscriptions import ListenNotSupportedError
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

from ..errors import printable
from ..remote.client import RemoteSkills, _describe, connect, parse_server, server_environment
from ..remote.errors import ServerError
from ..remote.tools import listed_tools
from . import adapters
from .attaching import Skills, Workflows, attach_async
from .forwarded import Forwarded, as_listed

START_TIMEOUT = 30.0  # seconds for the upstream's handshake and tools/list
CALL_TIMEOUT = 60.0  # seconds for each forwarded call
ENDING_GRACE = 2.0  # seconds the first call on a closed connection waits for the upstream's exit status and stderr

Forward = Callable[[str, dict[str, Any]], Any]  # (name, arguments) -> awaitable CallToolResult


class UpstreamGone(Exception):
    """A forwarded call that the upstream did not answer: it has exited, closed the connection, or timed out."""


# What mcp's client says, with these codes, when no answer came: the connection closed (its end, or the HTTP
# client's own words for a stream that ended) or the call timed out. A server uses -32000 for errors of its own too
# (the first of JSON-RPC's server-defined codes): with any other message, the error is the upstream's answer.
_NO_ANSWER = ("Connection closed", "SSE stream ")


def _unanswered(exc: MCPError) -> bool:
    """Whether ``exc`` is mcp's client saying that no answer came, not an error the upstream answered with."""
    if exc.code == REQUEST_TIMEOUT:
        return exc.message.startswith("Request ") and exc.message.endswith(" timed out")
    return exc.code == CONNECTION_CLOSED and exc.message.startswith(_NO_ANSWER)


class Upstream:
    """The connection to the upstream server, held while the gateway serves."""

    def __init__(self, remote: RemoteSkills, spec: str, timeout: float = CALL_TIMEOUT):
        self.remote, self.spec, self.timeout = remote, spec, timeout
        self._told = ""  # the upstream's ending last said on the gateway's stderr
        self._ended = False  # whether a call has waited for how the upstream ended (once: see ENDING_GRACE)
        self.listed: Forwarded | None = None  # the tools as last listed (None: not listed yet)
        self.changed = False  # whether the last listing changed what a client sees
        # a change the upstream announced and the gateway has not re-listed yet (one is enough: it re-lists all)
        self.changed_in, self.changed_out = anyio.create_memory_object_stream[None](1)

    async def tools(self) -> list[mcp_types.Tool]:
        """Every page of the upstream's ``tools/list``, by the one bounded listing of a server's tools
        (:func:`projector.remote.tools.listed_tools`: pages, bytes, a repeated cursor), naming the upstream."""
        tools = await listed_tools(self.remote)
        entries = await as_listed(self.remote, tools)
        if self.listed is None:
            self.listed = Forwarded(tools, self.call, UpstreamGone, entries)
        else:
            self.changed = self.listed.update(tools, entries)
        return tools

    def current(self) -> dict[str, mcp_types.Tool]:
        """The upstream's tools as it lists them now, by name."""
        return self.listed.tools if self.listed is not None else {}

    async def on_message(self, message: Any) -> None:
        """The connection's message handler: a ``notifications/tools/list_changed`` asks for a re-listing."""
        if isinstance(message, mcp_types.ToolListChangedNotification):
            self.announce()

    def announce(self) -> None:
        try:
            self.changed_in.send_nowait(None)
        except anyio.WouldBlock:  # a re-listing is already due; it will see this change too
            pass

    async def follow(self, start_timeout: float) -> None:
        """Re-list the upstream's tools each time it says they changed, until cancelled."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._listen)
            async for _ in self.changed_out:
                try:
                    await _tools(self, self.spec, start_timeout)
                except ServerError as exc:  # the last listing stays
                    self._note(f"its tools/list failed; the gateway keeps its last listing: {exc}")
                    continue
                if self.changed and self.listed is not None:
                    await self.listed.announce()

    async def _listen(self) -> None:
        """On the 2026-07-28 wire, changes come as ``subscriptions/listen`` events (before it, as notifications,
        which :meth:`on_message` takes)."""
        try:
            async with self.remote.client.listen(tools_list_changed=True) as events:
                async for _ in events:
                    self.announce()
        except ListenNotSupportedError:
            return
        except Exception as exc:  # a server without subscriptions, or a closed connection: no more changes come
            self._note(f"its tool changes are no longer followed: {_describe(exc)}")

    def _note(self, text: str) -> None:
        print(f"project-skill serve: the upstream {printable(self.spec)}: {text}", file=sys.stderr, flush=True)

    async def call(self, name: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        """``tools/call`` upstream; its result as it came. :class:`UpstreamGone` when no answer can come."""
        try:
            return await self.remote.client.call_tool(name, arguments, read_timeout_seconds=self.timeout)
        except MCPError as exc:
            if not _unanswered(exc):
                raise  # the upstream's own answer: passed on as that JSON-RPC error
            raise self._gone(name, exc) from None
        except Exception as exc:  # a closed stream, a transport's error
            if not self._ended:  # once: how the upstream ended, for the operator (bounded; never if it lives on)
                self._ended = True
                await self.remote.server_ended(ENDING_GRACE)
            raise self._gone(name, exc) from None

    def _gone(self, name: str, exc: BaseException) -> UpstreamGone:
        """The error a client gets: that the upstream did not answer, and that the call's effect is unknown. Why (the
        transport's error, the exit status, the last lines of its stderr) is the operator's: it goes to the gateway's
        stderr (the stderr once for each new ending of it), never to a client, where it could hand on a password the
        upstream printed."""
        timed_out = isinstance(exc, MCPError) and exc.code == REQUEST_TIMEOUT
        why = f"within {self.timeout:g} s" if timed_out else "(it has stopped, or closed the connection)"
        note = self.remote.server_note()
        told, self._told = (note if note != self._told else ""), note
        self._note(printable(f"tools/call {name} got no answer: {_describe(exc)}{told}"))
        return UpstreamGone(
            f"the upstream server did not answer tools/call {name} {why}; whether the call had any effect there is "
            "unknown"
        )


# ------------------------------------------------------------------------------------------------------ the gateway


async def _tools(connection: Upstream, spec: str, start_timeout: float) -> list[mcp_types.Tool]:
    try:
        with anyio.fail_after(start_timeout):
            return await connection.tools()
    except TimeoutError:
        raise ServerError(
            "server-error",
            spec,
            f"the upstream server did not answer tools/list within "
            f"{start_timeout:g} s{connection.remote.server_note()}",
        ) from None
    except ServerError:
        raise
    except Exception as exc:
        raise ServerError(
            "server-error",
            spec,
            f"the upstream server's tools/list failed: {_describe(exc)}{connection.remote.server_note()}",
        ) from None


@asynccontextmanager
async def gateway(
    upstream: str,
    skills: Skills = "generated_skills",
    workflows: Workflows = "workflows",
    *,
    framework: str = adapters.DEFAULT,
    name: str = "projector-gateway",
    verbose: bool = False,
    start_timeout: float = START_TIMEOUT,
    timeout: float = CALL_TIMEOUT,
    upstream_env: Iterable[str] = (),
    **attach_options: Any,
) -> AsyncIterator[Any]:
    """Connect to ``upstream`` (a stdio command line or an ``http(s)://`` URL), build a ``framework`` server
    (``"mcp"`` or ``"fastmcp"``) whose tools forward to the upstream's, :func:`~projector.server.attach` ``skills``
    and ``workflows`` to it (``attach_options`` are attach's: ``page_size``, ``cache``, ``skill_tools``,
    ``state_key``, ...), and yield it; the upstream is stopped (a stdio one) when the block ends.

    Raises :class:`~projector.remote.errors.ServerError` when the upstream cannot be reached, dies, or does not
    answer its handshake and ``tools/list`` within ``start_timeout`` seconds each, and
    :class:`~projector.server.errors.AttachError` when a step does not fit the upstream's tools. ``timeout`` bounds
    each forwarded call. ``verbose`` passes a stdio upstream's stderr through. A stdio upstream gets only the
    environment a server needs (:func:`~projector.remote.client.server_environment`: PATH, HOME, the locale, ...)
    and the variables named in ``upstream_env``; never the rest of the gateway's (``$PROJECT_SKILL_STATE_KEY``)."""
    missing = adapters.missing(framework)
    if missing is not None:
        raise ValueError(f"framework {framework!r} {missing}")
    # the connection's own timeout bounds the handshake; each forwarded call is bounded by ``timeout``
    target = parse_server(upstream, env=server_environment(upstream_env))
    remote = connect(target, upstream, timeout=start_timeout, verbose=verbose)
    connection = Upstream(remote, upstream, timeout)
    remote.message_handler = connection.on_message
    async with remote:
        tools = await _tools(connection, upstream, start_timeout)
        assert connection.listed is not None  # listed just now
        server = adapters.get(framework).forwarding_server(
            name, tools, connection.call, UpstreamGone, listed=connection.listed
        )
        await attach_async(server, skills, workflows, changing=connection.current, **attach_options)
        connection.listed.own = frozenset((await adapters.for_server(server).listing(server)).tools) - frozenset(
            t.name for t in tools
        )
        failed: Exception | None = None  # the caller's, raised as it came, not in a task group's ExceptionGroup
        async with anyio.create_task_group() as tg:
            tg.start_soon(connection.follow, start_timeout)  # never raises: it says what failed on stderr
            try:
                yield server
            except Exception as exc:
                failed = exc
            finally:
                tg.cancel_scope.cancel()
        if failed is not None:
            raise failed


async def serve_gateway_async(
    upstream: str,
    skills: Skills = "generated_skills",
    workflows: Workflows = "workflows",
    *,
    http: tuple[str, int] | None = None,
    allow_hosts: Any = (),
    allow_origins: Any = (),
    max_line_bytes: int | None = None,
    ready: Callable[[Any], None] | None = None,
    **options: Any,
) -> None:
    """:func:`gateway`, served on stdio (the default) or Streamable HTTP at ``http=(host, port)``, until the input
    ends or the process is stopped. ``ready(server)`` is called once the server is attached, before it serves."""
    async with gateway(upstream, skills, workflows, **options) as server:
        if ready is not None:
            ready(server)
        if http is not None:
            from .http import serve_http_async

            await serve_http_async(
                server,
                http[0],
                http[1],
                allow_hosts=allow_hosts,
                allow_origins=allow_origins,
                verbose=options.get("verbose", False),
            )
        else:
            await adapters.for_server(server).serve_stdio_async(server, max_line_bytes)
