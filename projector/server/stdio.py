"""stdio with an answer for every bad line.

mcp 2.3's stdio transport drops a line that is not a JSON-RPC message without a word, and reads a line of any
length into memory. This transport sits in front of it: each line is read with a bound (``max_line_bytes``); a longer
line is discarded as it streams in and answered with ``-32600``, a line that is not JSON with ``-32700`` (Parse
error), JSON nested deeper than the parser's fixed limit with ``-32600`` (no recursion, whatever the depth), JSON
that is not a JSON-RPC message with ``-32600``, and a request whose id is not a string or integer (which the SDK
would take for a notification and never answer) with ``-32600``; each as a JSON-RPC error response with the
request's id when one can be read, else ``null``. The server keeps serving. Valid lines go to the SDK untouched.

At end of input the server answers every request it has already read before it exits: the SDK stops serving as soon
as its input ends, cancelling what is still in hand, so the end of input is passed on only once each request read so
far has its response on the way out (a request the client cancelled, and an open-ended ``subscriptions/listen``, are
not waited for). A client that closes stdin and then waits for the server to exit gets every answer.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from typing import Any, BinaryIO

import anyio
import anyio.to_thread
import mcp_types as types
import pydantic_core
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

MAX_LINE_BYTES = 4 * 1024 * 1024
_DRAIN = 64 * 1024

Answer = tuple["int | str | None", int, str]
PARSE = "Parse error: the line is not valid JSON"
NOT_JSONRPC = "Invalid Request: not a JSON-RPC 2.0 message"
TOO_DEEP = "Invalid Request: the JSON nests too deeply"
BAD_ID = "Invalid Request: the id must be a string or an integer"


_NOT_JSON, _TOO_DEEP = object(), object()


def _parse(text: str) -> Any:
    """The JSON value of ``text``, or ``_NOT_JSON``, or ``_TOO_DEEP``. pydantic's parser (jiter) stops at a fixed
    depth with a ValueError, where the standard library's recurses until RecursionError."""
    try:
        return pydantic_core.from_json(text)
    except ValueError as exc:
        return _TOO_DEEP if "recursion limit" in str(exc) else _NOT_JSON


def _request_id(value: Any) -> int | str | None:
    rid = value.get("id") if isinstance(value, dict) else None
    return rid if isinstance(rid, (int, str)) and not isinstance(rid, bool) else None


# A request id as the last member of the top-level object, at the very end of a line: where SDKs that write the
# method and params first (the TypeScript SDK) put it. A bounded id, a bounded pattern, on the line's last bytes only.
_TAIL_ID = re.compile(rb'[{,][ \t]*"id"[ \t]*:[ \t]*(-?[0-9]{1,18}|"(?:[^"\\\r\n]|\\.){0,256}")[ \t]*}[ \t\r\n]*\Z')


def oversized_id(head: bytes, tail: bytes) -> int | str | None:
    """The id of a request too long to read, from the bytes that were seen: its start, parsed as far as it goes (the
    id comes before the params as mcp writes a message), or its end, when the id is the last member; else None. A
    request answered by its id is one the client stops waiting for."""
    try:
        rid = _request_id(pydantic_core.from_json(head, allow_partial=True))
    except ValueError:
        rid = None
    if rid is None and (m := _TAIL_ID.search(tail)):
        try:
            rid = _request_id({"id": json.loads(m.group(1))})
        except ValueError:
            rid = None
    return rid


def classify(line: bytes) -> str | Answer | None:
    """One stdio line: the text to hand to the SDK, or the error to answer instead, or None (a blank line).

    Never raises: whatever the line holds, the answer is a value."""
    return _classify(line)[0]


def _classify(line: bytes) -> tuple[str | Answer | None, Any]:
    """:func:`classify`, and the JSON-RPC message when the line is one for the SDK."""
    text = line.decode("utf-8", errors="replace")
    if not text.strip():
        return None, None
    try:
        message = types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except (ValidationError, ValueError, RecursionError):
        value = _parse(text)
        if value is _TOO_DEEP:
            return (None, types.INVALID_REQUEST, TOO_DEEP), None
        if value is _NOT_JSON:
            return (None, types.PARSE_ERROR, PARSE), None
        return (_request_id(value), types.INVALID_REQUEST, NOT_JSONRPC), None
    if isinstance(message, types.JSONRPCNotification):
        value = _parse(text)
        if isinstance(value, dict) and "id" in value:
            # mcp 2.3 takes {"id": {}} (or [], true, 1.5, null) for a notification and answers nothing.
            return (None, types.INVALID_REQUEST, BAD_ID), None
    return text, message


_OPEN_ENDED = frozenset({"subscriptions/listen"})  # answered only when the stream ends, so never waited for


class _Lines:
    """An async iterator of the valid lines of ``raw``; it answers the others on ``write`` itself."""

    def __init__(self, raw: BinaryIO, limit: int):
        self.raw = raw
        self.limit = limit
        self.write: Any = None
        self.ready = anyio.Event()
        self.pending: Counter[int | str] = Counter()  # the ids of the requests handed to the SDK, not answered yet
        self.oversized_id: int | str | None = None  # the id of the last line too long to read, when it was seen
        self._drained = anyio.Event()

    def _track(self, message: Any) -> None:
        if isinstance(message, types.JSONRPCRequest) and message.method not in _OPEN_ENDED:
            self.pending[message.id] += 1
        elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            rid = (message.params or {}).get("requestId")
            if isinstance(rid, (int, str)):
                self.answered(rid)

    def answered(self, rid: Any) -> None:
        """A response with this id is on its way out."""
        if self.pending[rid] > 1:
            self.pending[rid] -= 1
        else:
            self.pending.pop(rid, None)
        if not self.pending:
            self._drained.set()

    async def _drain(self) -> None:
        while self.pending:
            self._drained = anyio.Event()
            await self._drained.wait()

    def _readline(self) -> tuple[bytes | None, bool]:
        line = self.raw.readline(self.limit + 1)
        if not line:
            return None, False
        if len(line) > self.limit and not line.endswith(b"\n"):
            tail = b""
            while True:  # discard the rest of the line without holding it, but for its last bytes
                rest = self.raw.readline(_DRAIN)
                tail = (tail + rest)[-_DRAIN:]
                if not rest or rest.endswith(b"\n"):
                    self.oversized_id = oversized_id(line, tail)
                    return b"", True
        return line, False

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        while True:
            line, too_long = await anyio.to_thread.run_sync(self._readline, abandon_on_cancel=True)
            if line is None:
                await self._drain()  # the SDK stops at end of input: first let it answer what it has read
                raise StopAsyncIteration
            if too_long:
                await self._answer(
                    self.oversized_id,
                    types.INVALID_REQUEST,
                    f"Invalid Request: the line is longer than {self.limit} bytes",
                )
                continue
            verdict, message = _classify(line)
            if isinstance(verdict, str):
                self._track(message)
                return verdict
            if verdict is not None:
                await self._answer(*verdict)

    async def _answer(self, rid: int | str | None, code: int, message: str) -> None:
        await self.ready.wait()
        error = types.JSONRPCError(jsonrpc="2.0", id=rid, error=types.ErrorData(code=code, message=message))
        await self.write.send(SessionMessage(error))


class _Answers:
    """The SDK's write stream, telling :class:`_Lines` which requests have their response on the way out."""

    def __init__(self, inner: Any, lines: _Lines):
        self.inner = inner
        self.lines = lines

    async def send(self, item: SessionMessage) -> None:
        await self.inner.send(item)
        message = item.message
        if isinstance(message, (types.JSONRPCResponse, types.JSONRPCError)) and message.id is not None:
            self.lines.answered(message.id)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> _Answers:
        await self.inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> bool | None:
        return await self.inner.__aexit__(*exc)


async def serve_stdio(server: MCPServer, max_line_bytes: int = MAX_LINE_BYTES) -> None:
    """Run ``server`` on this process's stdin and stdout, the way ``MCPServer.run("stdio")`` does, through
    :class:`_Lines`."""
    lines = _Lines(sys.stdin.buffer, max_line_bytes)
    async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
        lines.write = write_stream
        lines.ready.set()
        lowlevel = server._lowlevel_server  # what MCPServer.run_stdio_async runs, with our stdin in front
        await lowlevel.run(read_stream, _Answers(write_stream, lines), lowlevel.create_initialization_options())
