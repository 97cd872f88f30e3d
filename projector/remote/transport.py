"""Bounded client transports: no message from a server is buffered past its limit, on either transport the client
supports. Imports ``mcp`` and ``httpx2``.

The ``mcp`` SDK's own transports buffer without a limit: its stdio reader joins chunks until a newline comes, and
its Streamable HTTP transport reads a JSON body whole (``response.aread()``). So the bound sits where the bytes
arrive:

- **stdio** (:func:`bounded_stdio_client`): the SDK's stdio client with the reader replaced by one that counts the
  bytes of the line it is collecting, and stops at the limit. Process start and shutdown are the SDK's own.
- **Streamable HTTP** (:func:`bounded_http_client`): the SDK's transport over an ``httpx2`` client whose response
  hook wraps every response body in a byte-counting stream: a JSON body is counted whole, an SSE body event by event
  (the bytes since the last blank line). The client asks for ``Accept-Encoding: identity``; a compressed body cannot
  be counted before it is decoded, so one is refused.

A message that is JSON but nested deeper than the JSON reader allows can never be read: on stdio it ends the
connection at once (:func:`_pump`), instead of leaving its request to wait out the timeout; over HTTP the SDK
answers the request with the parse error, which the client says in the same words (:func:`too_deep_message`). The
SDK's logged traceback for such a message (or a line that is not JSON at all, which is skipped) is not shown.

The limit is the :class:`Budget` the client sets before each request (:meth:`Budget.expect`): a ``resources/read``
may take :func:`read_limit` of the manifest's size for that file, any other message (the handshake, every page of
``skills/list``, ``skills/get``, ``tools/list``) :data:`MAX_MESSAGE`. A message past its limit trips the budget:
the transport stops reading, the connection is closed (the stdio reader ends the session's stream; every later HTTP
body is refused at once), and the client raises ``response-too-large`` instead of the transport's error.

A stdio server's stderr never reaches the terminal unasked: :class:`ServerLog` keeps its last
:data:`LOG_TAIL_BYTES` (read as it comes, so the pipe never fills), shown when the server fails
(:meth:`ServerLog.note`) and passed through as it comes with ``verbose=True``. One block is left out of what is
shown: the warning an ``mcp`` 1.x server logs for the ``server/discover`` probe that ``mcp`` 2.x clients send first
(``Failed to validate request: 31 validation errors for ClientRequest``, about 94 lines) before they fall back to
the initialize handshake. The server's stderr is its own, so that block is dropped there, not in the client's
logging.
"""

from __future__ import annotations

import logging
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TextIO

import anyio
import anyio.lowlevel
import httpx2
import mcp_types
from mcp.client.stdio import StdioServerParameters
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from ..sep2640 import MAX_BYTES
from .errors import ServerError

logger = logging.getLogger(__name__)

MAX_MESSAGE = 16 * 1024 * 1024  # bytes in any message but a file's content: a listing page, an entry, the handshake
READ_EXPANSION = 6  # JSON text escapes one byte as at most six (\u0000); base64 takes four for three
READ_OVERHEAD = 64 * 1024  # a read's envelope: JSON-RPC, the URI, the MIME type, _meta
MAX_LISTING = 64 * 1024 * 1024  # bytes of every skills/list page of one listing together
_SSE_BOUNDARIES = (b"\n\n", b"\r\r", b"\n\r\n")  # a blank line ends an SSE event (\r\n\r\n holds \n\r\n)
LOG_TAIL_BYTES = 64 * 1024  # of a stdio server's stderr, kept to show when it fails
LOG_SHOWN_LINES = 12  # of that tail, shown in an error
LOG_SHOWN_CHARS = 2000
_STDERR_GRACE = 2.0  # seconds to read the rest of a stopped server's stderr (a child may hold the pipe open)
# the warning an mcp 1.x server logs for the server/discover probe: this line, then pydantic's error list (a field
# path, then indented lines, per error)
_NOISE_HEAD = re.compile(r"Failed to validate request: \d+ validation errors? for ClientRequest")
_ERROR_PATH = re.compile(r"[A-Za-z_][\w.\[\]-]*")
_HINT = (
    "a file's read is bounded by its size in the manifest (6 times it, plus 64 KiB, for JSON escaping), any other "
    "message by 16 MiB"
)


def read_limit(size: int) -> int:
    """The most bytes the answer to a ``resources/read`` of a file of ``size`` bytes may take."""
    return READ_EXPANSION * size + READ_OVERHEAD


MAX_READ = read_limit(MAX_BYTES)  # the largest limit ever set: a 16 MiB file


@dataclass
class Budget:
    """The limit of the message awaited now, shared by a transport (which counts) and the client (which sets it).
    ``received`` counts every byte of every message; ``tripped`` is the error once a message went past its limit."""

    where: str = "<server>"
    limit: int = MAX_MESSAGE
    what: str = "a message"
    received: int = 0
    tripped: ServerError | None = None

    def expect(self, limit: int, what: str, where: str) -> None:
        """Set the limit (and, for the message, what is awaited and the URI it is about) of the next answer."""
        self.limit, self.what, self.where = limit, what, where

    def trip(self, reason: str | None = None, code: str = "response-too-large") -> ServerError:
        """Record (once) and return the error of the message that went past its limit (or, with ``reason``, that
        could not be read for that reason)."""
        if self.tripped is None:
            message = reason or (
                f"the answer to {self.what} passed {self.limit} bytes, its limit; it was refused "
                "before being buffered whole, and the connection was closed"
            )
            self.tripped = ServerError(code, self.where, message, _HINT if reason is None else None)
        return self.tripped


# ------------------------------------------------------------------------------------------------------ stdio


def without_discover_noise(lines: list[str]) -> list[str]:
    """``lines`` without the warnings an ``mcp`` 1.x server logs for a ``server/discover`` request (each one a
    :data:`_NOISE_HEAD` line and pydantic's error list after it, which quotes 'server/discover'). Any other
    validation warning is kept."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        if _NOISE_HEAD.search(lines[i]):
            j = i + 1
            while j < len(lines) and (lines[j][:1] in (" ", "\t") or _ERROR_PATH.fullmatch(lines[j])):
                j += 1
            if any("'server/discover'" in line for line in lines[i:j]):
                i = j
                continue
        out.append(lines[i])
        i += 1
    return out


@dataclass
class ServerLog:
    """A stdio server's stderr: the last ``limit`` bytes kept, to show when the server fails; with ``verbose``, also
    written to this process's stderr as it comes."""

    verbose: bool = False
    limit: int = LOG_TAIL_BYTES
    tail: bytearray = field(default_factory=bytearray)
    exited: int | None = None  # the server's exit status, once it is known to have exited
    ended: bool = False  # its stderr is closed and read to the end (and its exit status noted, when it exited)

    def write(self, chunk: bytes) -> None:
        if self.verbose:
            sys.stderr.buffer.write(chunk)
            sys.stderr.buffer.flush()
        self.tail += chunk
        if len(self.tail) > self.limit:
            del self.tail[: len(self.tail) - self.limit]

    def text(self) -> str:
        """What the server wrote last (at most :data:`LOG_SHOWN_LINES` lines, :data:`LOG_SHOWN_CHARS` characters),
        without the ``server/discover`` warning of an ``mcp`` 1.x server, on one line: " | " between lines."""
        lines = [x.strip() for x in without_discover_noise(self.tail.decode("utf-8", "replace").splitlines())]
        said = " | ".join([x for x in lines if x][-LOG_SHOWN_LINES:])
        return said if len(said) <= LOG_SHOWN_CHARS else "…" + said[-LOG_SHOWN_CHARS:]

    def note(self) -> str:
        """For an error message: how the server ended and what it wrote last, or "" when there is nothing to say.
        (A diagnostic is one line: its control characters are escaped when it is made.)"""
        said = "" if self.verbose else self.text()  # verbose: it is on the terminal already
        ended = f"the server exited with status {self.exited}" if self.exited is not None else ""
        if not said:
            return f"; {ended}" if ended else ""
        head = f"{ended}; its stderr" if ended else "the server's stderr"
        return f"; {head} ended with: {said}"


_RECURSION = re.compile(r"recursion limit exceeded(?: at line \d{1,12} column \d{1,12})?")


def too_deep(words: str) -> str | None:
    """The JSON reader's words when a message (an error's text) says an answer was JSON nested past its depth, else
    None: over HTTP the SDK answers the request with that parse error (the body was read whole, within its limit)."""
    m = _RECURSION.search(words[:4000])
    return m.group(0) if m else None


def too_deep_message(words: str) -> str:
    """What the client says of an answer nested past the JSON reader's depth, on either transport."""
    return (
        f"the server sent a JSON message nested deeper than a JSON reader allows ({words}); it was refused, and "
        "the connection was closed"
    )


class _QuietParseErrors(logging.Filter):
    """Drops the traceback the SDK's HTTP transport logs for a response that is not a JSON-RPC message (pydantic's
    ValidationError, or this module's :class:`Refused`): the request it answered gets that error, and the client
    says it once, in its own words."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, (ValidationError, Refused))


_QUIET = _QuietParseErrors()


def _too_deep(exc: Exception) -> str | None:
    """The JSON reader's words when ``exc`` says a line is JSON nested past its depth (pydantic's ``json_invalid``,
    "recursion limit exceeded"), else None."""
    if not isinstance(exc, ValidationError):
        return None
    for error in exc.errors(include_url=False, include_input=False):
        said = str((error.get("ctx") or {}).get("error", ""))
        if error.get("type") == "json_invalid" and "recursion limit" in said:
            return said[:200]
    return None


def _parse(line: bytes, server: StdioServerParameters) -> SessionMessage | Exception:
    """One line as the SDK's stdio client reads it, without its logged traceback: a line that is not a JSON-RPC
    message is handed to the session as an exception, which skips it."""
    try:
        text = line.decode(server.encoding, server.encoding_error_handler)
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(text, by_name=False))
    except ValueError as exc:  # UnicodeDecodeError, pydantic's ValidationError
        logger.debug("a line from the server is not a JSON-RPC message: %s", str(exc)[:200])
        return exc


async def _pump(stdout: Any, writer: Any, server: StdioServerParameters, budget: Budget) -> None:
    """Newline-delimited messages from ``stdout`` to ``writer``, the line being collected never past
    ``budget.limit``. Returns at end of input, when the session is gone, or when the budget trips: past the limit,
    or on a line that is JSON nested deeper than the JSON reader allows (no answer can be read from it, so waiting
    for one would only run out the timeout). A line that is not JSON at all is skipped, as the SDK skips it."""
    pending = bytearray()
    async for chunk in stdout:
        start = 0
        while True:
            nl = chunk.find(b"\n", start)
            end = len(chunk) if nl < 0 else nl
            if len(pending) + (end - start) > budget.limit:
                budget.trip()
                return
            pending += chunk[start:end]
            if nl < 0:
                break
            line = bytes(pending)
            pending.clear()
            start = nl + 1
            budget.received += len(line) + 1
            message = _parse(line, server)
            if (deep := _too_deep(message)) is not None:  # JSON that cannot be read: no answer will ever come
                budget.trip(too_deep_message(deep), code="server-error")
                return
            try:
                await writer.send(message)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return


@asynccontextmanager
async def bounded_stdio_client(
    server: StdioServerParameters, budget: Budget, errlog: TextIO | ServerLog = sys.stderr
) -> AsyncIterator[Any]:
    """:func:`mcp.client.stdio.stdio_client` with a bounded reader (:func:`_pump`). The process is started, and
    stopped (stdin closed, a grace period, then the whole process tree killed), by the SDK's own functions. With a
    :class:`ServerLog` for ``errlog``, the server's stderr is read into it (and its exit status noted)."""
    from mcp.client import stdio as sdk

    command = await sdk._get_executable_command(server.command)
    log = errlog if isinstance(errlog, ServerLog) else None
    process = await sdk._create_platform_compatible_process(
        command=command,
        args=server.args,
        env=sdk.get_default_environment() | (server.env or {}),
        errlog=subprocess.PIPE if log is not None else errlog,
        cwd=server.cwd,
    )  # type: ignore[arg-type]
    read_stream_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_stream_reader = anyio.create_memory_object_stream[SessionMessage](0)
    shutting_down = False
    writer_done = anyio.Event()

    async def stdout_reader() -> None:
        assert process.stdout, "Opened process is missing stdout"
        try:
            try:
                async with read_stream_writer:  # closed before the drain: the session sees the end at once
                    await _pump(process.stdout, read_stream_writer, server, budget)
            finally:
                await sdk._drain_stdout(process)  # discards, buffering nothing, until shutdown closes the pipe
        except anyio.ClosedResourceError:
            pass
        except (anyio.BrokenResourceError, ConnectionError):
            if not shutting_down:
                logger.exception("Reading from the MCP server's stdout failed mid-session")

    stderr_done = anyio.Event()

    async def stderr_reader() -> None:
        assert log is not None and process.stderr is not None
        try:
            async for chunk in process.stderr:
                log.write(chunk)
            log.exited = await process.wait()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            pass
        finally:
            log.ended = True
            stderr_done.set()

    async def stdin_writer() -> None:
        assert process.stdin, "Opened process is missing stdin"
        try:
            async with write_stream_reader:
                async for session_message in write_stream_reader:
                    json = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send((json + "\n").encode(server.encoding, server.encoding_error_handler))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_stream_writer.aclose()
        finally:
            writer_done.set()

    async def shutdown() -> None:
        read_stream.close()
        write_stream.close()
        with anyio.move_on_after(sdk._WRITER_FLUSH_TIMEOUT):
            await writer_done.wait()
        await sdk._stop_server_process(process)
        if log is not None:
            with anyio.move_on_after(_STDERR_GRACE):  # what the server wrote as it ended, for the error
                await stderr_done.wait()
        await sdk._aclose_all(read_stream, write_stream, read_stream_writer, write_stream_reader)
        await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as tg:
        tg.start_soon(stdout_reader)
        tg.start_soon(stdin_writer)
        if log is not None:
            tg.start_soon(stderr_reader)
        try:
            yield read_stream, write_stream
        finally:
            shutting_down = True
            with anyio.CancelScope(shield=True):
                await shutdown()
            tg.cancel_scope.cancel()


# ------------------------------------------------------------------------------------------------------ HTTP


class Refused(httpx2.StreamError, httpx2.SSEError):
    """Raised inside a response body past its limit. Both kinds, so that the SDK's JSON path (which catches a
    ``StreamError``) and its SSE path (an ``SSEError``) each answer the waiting request with an error at once."""

    def __init__(self, message: str) -> None:
        httpx2.StreamError.__init__(self, message)


class BoundedBody(httpx2.AsyncByteStream):
    """A response body that counts its bytes: all of them (``sse=False``), or those since the last blank line (an
    SSE event). Past ``budget.limit`` it trips the budget and raises :class:`Refused`; once the budget has tripped,
    every body is refused at its first byte."""

    def __init__(self, inner: Any, budget: Budget, *, sse: bool) -> None:
        self.inner, self.budget, self.sse = inner, budget, sse

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self.budget.tripped is not None:
            raise Refused(self.budget.tripped.message)
        since = 0  # bytes of the current message (the whole body, or the current SSE event)
        tail = b""
        async for chunk in self.inner:
            if self.sse:
                window = tail + chunk
                end = max((window.rfind(b) + len(b) if window.rfind(b) >= 0 else -1) for b in _SSE_BOUNDARIES)
                since = len(window) - end if end > len(tail) else since + len(chunk)
                tail = window[-2:]
            else:
                since += len(chunk)
            if since > self.budget.limit:
                raise Refused(self.budget.trip().message)
            self.budget.received += len(chunk)
            yield chunk

    async def aclose(self) -> None:
        await self.inner.aclose()


CONNECTION_FAILED = "the connection to the server failed: "  # the no-answer of a failed connection, then why


class _Unreached(httpx2.AsyncByteStream):
    """The body of the answer that stands for one the connection failed to bring: it fails at its first byte."""

    def __init__(self, why: str) -> None:
        self.why = why

    async def __aiter__(self) -> AsyncIterator[bytes]:
        raise Refused(self.why)
        yield b""  # pragma: no cover - makes this a generator

    async def aclose(self) -> None:
        return None


class _Client(httpx2.AsyncClient):
    """An ``httpx2`` client whose transport's failure (the server cannot be reached, or dropped the connection) is an
    SSE answer that fails at once, which the SDK turns into "no answer" for the waiting request (a closed connection,
    -32000). Raised as it was, the SDK's HTTP transport let it out of its task group, which cancelled the caller's
    task: a server that went away mid-session stopped the whole process (the gateway, for every client)."""

    async def send(self, request: httpx2.Request, **kwargs: Any) -> httpx2.Response:
        try:
            return await super().send(request, **kwargs)
        except httpx2.TransportError as exc:
            why = f"{CONNECTION_FAILED}{type(exc).__name__}: {exc}"[:300]
            headers = {"content-type": "text/event-stream"}
            return httpx2.Response(200, headers=headers, stream=_Unreached(why), request=request)


@asynccontextmanager
async def bounded_http_client(url: str, budget: Budget) -> AsyncIterator[Any]:
    """:func:`mcp.client.streamable_http.streamable_http_client` over an ``httpx2`` client (the SDK's defaults) whose
    every response body is a :class:`BoundedBody`."""
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

    async def bound(response: httpx2.Response) -> None:
        encoding = response.headers.get("content-encoding", "").strip().lower()
        if encoding not in ("", "identity"):
            budget.trip(
                f"the server sent a compressed body (Content-Encoding: {encoding[:40]}) although the client "
                "asked for none; its size cannot be bounded before it is decoded, so it was refused and the "
                "connection was closed"
            )
        sse = response.headers.get("content-type", "").lower().startswith("text/event-stream")
        response.stream = BoundedBody(response.stream, budget, sse=sse)

    sdk_log = logging.getLogger("mcp.client.streamable_http")
    if _QUIET not in sdk_log.filters:
        sdk_log.addFilter(_QUIET)
    # create_mcp_http_client's client (its timeouts), of the class that answers for an unreachable server
    timeout = httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT)
    http = _Client(headers={"Accept-Encoding": "identity"}, timeout=timeout)
    http.event_hooks = {**http.event_hooks, "response": [*http.event_hooks.get("response", []), bound]}
    async with http:
        async with streamable_http_client(url, http_client=http, max_sse_event_size=MAX_READ) as streams:
            yield streams
