"""The HTTP front of ``project-skill serve``, the same on both frameworks: :func:`serve_http`.

Who may call it. A web page can rebind a name it controls to 127.0.0.1 and then reach a server on loopback from
the user's browser (DNS rebinding), so every request's ``Host`` must name this server, and its ``Origin``, when the
request has one, must be one of this server's origins; anything else is refused before it reaches the MCP endpoint
(421 for a foreign Host, 403 for a foreign Origin). The allow-list is built in one place, :func:`transport_security`:
the loopback names (``127.0.0.1``, ``localhost``, ``[::1]``) and the address the server is bound to, on any port, plus
the names given with ``allow_hosts`` (``serve --allow-host``); the origins are ``http://`` and ``https://`` of each of
those names, plus ``allow_origins`` (``serve --allow-origin``). The check itself is mcp's own
(:class:`mcp.server.transport_security.TransportSecurityMiddleware`, the one MCPServer runs on loopback), applied by
:class:`HostOriginGuard` in front of the whole app on both frameworks, whatever address the server is bound to.

How many connections it holds. Every accepted connection costs a file descriptor. :func:`serve_http` raises the soft
``RLIMIT_NOFILE`` to the hard limit, accepts at most ``max_connections`` connections at a time (a connection beyond
that is closed as soon as it is accepted, and a request beyond it is answered 503), and keeps serving when ``accept``
fails for lack of descriptors: the event loop's report of it is one line on stderr, written without importing or
opening anything, where a logging handler that imports lazily (rich's) would fail again and stop the loop.

What it says. Nothing but warnings and errors by default: uvicorn's INFO lines ("Started server process", "Uvicorn
running on ...", one line per request) and the frameworks' own ("StreamableHTTP session manager started", "Processing
request of type ...") are shown only with ``verbose`` (``serve --verbose``). The command's own line says where it
serves.
"""

from __future__ import annotations

import errno
import ipaddress
import logging
import os
import re
import sys
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings

LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
MAX_CONNECTIONS = 4096
_LABEL = re.compile(r"(?!-)[a-z0-9-]{1,63}(?<!-)")


def _host_name(text: str) -> str | None:
    """``text`` as an allow-list host name (lowercase; an IPv6 address in brackets), or None when it is not a DNS
    name, an IPv4 address or a bracketed IPv6 address."""
    name = text.lower()
    if name.startswith("[") and name.endswith("]"):
        try:
            return f"[{ipaddress.IPv6Address(name[1:-1]).compressed}]"
        except ValueError:
            return None
    try:
        return str(ipaddress.IPv4Address(name))
    except ValueError:
        pass
    labels = name.removesuffix(".").split(".")
    return name if len(name) <= 253 and all(_LABEL.fullmatch(x) for x in labels) else None


def parse_host(value: str) -> tuple[str, int | None]:
    """``NAME`` or ``NAME:PORT`` (NAME a DNS name, an IPv4 address or ``[IPv6]``): the name and the port (None for
    any port). A ValueError says what is wrong."""
    name, port = value, None
    if value.count(":") == 1 or (value.startswith("[") and "]:" in value):
        name, _, port_text = value.rpartition(":")
        if not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
            raise ValueError(f"expected NAME or NAME:PORT with a port 1-65535, got {value!r}")
        port = int(port_text)
    host = _host_name(name)
    if host is None:
        raise ValueError(f"expected a host name, an IPv4 address or [IPv6] (optionally with :PORT), got {value!r}")
    return host, port


def parse_origin(value: str) -> str:
    """An origin, ``http(s)://NAME[:PORT]``, in the form browsers send it. A ValueError says what is wrong."""
    parts = urlsplit(value)
    scheme, _, rest = value.partition("://")
    if parts.scheme not in ("http", "https") or not rest or "/" in rest or "?" in rest or "#" in rest or "@" in rest:
        raise ValueError(f"expected an origin such as https://app.example.com (no path), got {value!r}")
    host, port = parse_host(rest)
    return f"{scheme.lower()}://{host}" + (f":{port}" if port is not None else "")


def _bound_name(host: str) -> str | None:
    """The Host-header form of the address the server listens on, or None for all interfaces (0.0.0.0, ::)."""
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return _host_name(host)
    if ip.is_unspecified:
        return None
    return f"[{ip.compressed}]" if ip.version == 6 else str(ip)


def transport_security(
    host: str, allow_hosts: Sequence[str] = (), allow_origins: Sequence[str] = ()
) -> TransportSecuritySettings:
    """The one allow-list of the HTTP front (see the module docstring), as mcp's settings. ``allow_hosts`` entries
    are ``NAME`` (any port) or ``NAME:PORT``; ``allow_origins`` entries are origins. A ValueError names a malformed
    entry."""
    names: list[tuple[str, int | None]] = [(n, None) for n in LOOPBACK]
    bound = _bound_name(host)
    if bound is not None:
        names.append((bound, None))
    names += [parse_host(h) for h in allow_hosts]
    hosts: list[str] = []
    origins: list[str] = []
    for name, port in names:
        exact = name if port is None else f"{name}:{port}"
        hosts += [exact] + ([f"{name}:*"] if port is None else [])
        for scheme in ("http", "https"):
            origins += [f"{scheme}://{exact}"] + ([f"{scheme}://{name}:*"] if port is None else [])
    origins += [parse_origin(o) for o in allow_origins]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=list(dict.fromkeys(hosts)),
        allowed_origins=list(dict.fromkeys(origins)),
    )


class HostOriginGuard:
    """ASGI middleware: refuse a request whose Host or Origin is not allowed by ``settings``, with mcp's own check
    (421 or 403), before anything of ``app`` runs. Lifespan events pass through."""

    def __init__(self, app: Any, settings: TransportSecuritySettings):
        self.app = app
        self.settings = settings
        self.check = TransportSecurityMiddleware(settings)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] in ("http", "websocket"):
            from starlette.requests import HTTPConnection

            refusal = await self.check.validate_request(HTTPConnection(scope), is_post=False)  # type: ignore[arg-type]
            if refusal is not None:
                if scope["type"] == "websocket":
                    await send({"type": "websocket.close", "code": 1008})
                    return
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)


# ------------------------------------------------------------------------------------------- file descriptors


def raise_nofile_limit() -> int:
    """Raise the soft RLIMIT_NOFILE to the hard limit where the platform allows; the soft limit in force after."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return MAX_CONNECTIONS * 2
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
    if soft != resource.RLIM_INFINITY and target > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError):
            pass
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return soft if soft != resource.RLIM_INFINITY else 1 << 20


def connection_bound(nofile: int, max_connections: int | None = None) -> int:
    """How many connections to hold at once with ``nofile`` descriptors: a reserve is kept for everything else the
    process opens (half of a small limit, 64 of a large one)."""
    fit = nofile - min(64, nofile // 2)
    return max(1, min(fit, max_connections if max_connections is not None else MAX_CONNECTIONS))


def bounded_protocol(limit: int) -> type:
    """uvicorn's HTTP protocol, closing a connection at once when ``limit`` connections are already open."""
    from uvicorn.protocols.http.auto import AutoHTTPProtocol

    base: Any = AutoHTTPProtocol

    class BoundedHTTPProtocol(base):  # type: ignore[misc, valid-type]
        refused = False

        def connection_made(self, transport: Any) -> None:
            if len(self.connections) >= limit:
                self.refused = True
                transport.abort()
                return
            super().connection_made(transport)

        def data_received(self, data: bytes) -> None:
            if not self.refused:
                super().data_received(data)

        def eof_received(self) -> None:
            if not self.refused:
                super().eof_received()

        def connection_lost(self, exc: Exception | None) -> None:
            if not self.refused:
                super().connection_lost(exc)

    return BoundedHTTPProtocol


_OUT_OF_DESCRIPTORS = (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM)


def install_loop_guard() -> None:
    """Make the running asyncio loop survive its own error reports. Running out of descriptors on ``accept`` is
    reported as one plain line, at most once a second (the loop retries the accept by itself); any other report goes
    to the usual handler, and if that handler fails, a plain line is written instead of stopping the loop."""
    import asyncio

    loop = asyncio.get_running_loop()
    last = [float("-inf")]

    def plain(text: str) -> None:
        try:
            os.write(2, text.encode("utf-8", "replace") + b"\n")
        except OSError:
            pass

    def handler(lp: Any, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, OSError) and exc.errno in _OUT_OF_DESCRIPTORS:
            now = lp.time()
            if now - last[0] >= 1.0:
                last[0] = now
                plain(f"project-skill serve: out of file descriptors ({exc.strerror}); new connections wait")
            return
        try:
            lp.default_exception_handler(context)
        except Exception:  # noqa: BLE001 - the report failed; the loop must not
            plain(f"project-skill serve: {context.get('message', 'error in the event loop')}: {exc!r}")

    loop.set_exception_handler(handler)


def _preload() -> None:
    """Import now what error paths import lazily, so that they do not need a file descriptor later."""
    if "rich" in sys.modules:
        import rich.traceback  # noqa: F401 - mcp's and FastMCP's log handlers import it on their first traceback


# ------------------------------------------------------------------------------------------------------ serve


async def serve_http_async(
    server: Any,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    path: str = "/mcp",
    allow_hosts: Sequence[str] = (),
    allow_origins: Sequence[str] = (),
    max_connections: int | None = None,
    stateless: bool = True,
    verbose: bool = False,
) -> None:
    """Serve ``server`` (an mcp ``MCPServer`` or a ``fastmcp.FastMCP``) over Streamable HTTP at
    ``http://host:port/path`` behind the Host/Origin allow-list and the connection bound of the module docstring.
    ``verbose``: show the INFO lines of uvicorn and of the framework (by default only warnings and errors)."""
    from .adapters import for_server, names

    adapter = for_server(server)  # a TypeError for anything that is not a server of a known framework
    settings = transport_security(host, allow_hosts, allow_origins)
    limit = connection_bound(raise_nofile_limit(), max_connections)
    install_loop_guard()
    _preload()
    level = "info" if verbose else "warning"
    # the frameworks' own start-up and per-request lines: each logs under its package's name, its registry name (a
    # FastMCP server logs through mcp's too, so every framework's logger is held to warnings)
    for name in names() if not verbose else ():
        logging.getLogger(name).setLevel(logging.WARNING)
    options: dict[str, Any] = {"http": bounded_protocol(limit), "limit_concurrency": limit + 1, "log_level": level}
    await adapter.serve_http(
        server,
        host=host,
        port=port,
        path=path,
        stateless=stateless,
        security=settings,
        guard=HostOriginGuard,
        options=options,
    )


def serve_http(server: Any, host: str = "127.0.0.1", port: int = 8000, **kwargs: Any) -> None:
    """:func:`serve_http_async`, run to completion (what ``project-skill serve --http`` calls)."""
    import anyio

    anyio.run(lambda: serve_http_async(server, host, port, **kwargs))
