"""The verifying client: an async library over the ``mcp`` SDK's :class:`mcp.Client`, for any SEP-2640 server.

::

    from projector.remote import connect

    async with connect("http://127.0.0.1:8000/mcp") as remote:
        entries = await remote.list_skills()             # every page of skills/list; reads no file
        skill = await remote.load(entries[0])            # verified bytes only, or VerificationError
        skill.files["skill://…/SKILL.md"]

``connect`` takes a server spec (an ``http(s)://`` URL, or a stdio command line split with :func:`shlex.split`), or
anything :class:`mcp.Client` accepts (an in-process ``MCPServer``, ``StdioServerParameters``, a transport).

Loading follows SEP-2640: the manifest is checked (URIs, limits, and a pin when one is given) before any read;
SKILL.md is read and checked for size, digest and frontmatter before any other file; every other file is read only
because its manifest lists it, and checked for size and digest. On the first failure the entry is refreshed once
with ``skills/get`` and the load is retried; a second failure raises. Nothing unverified is ever returned.
"""

from __future__ import annotations

import base64
import binascii
import os
import shlex
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

import anyio
import mcp_types
from mcp_types import METHOD_NOT_FOUND
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import TypeAdapter

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

from ..sep2640 import (
    EXTENSION_ID,
    SKILL_FILE,
    SkillEntry,
    check_manifest,
    check_reading,
    parse_entry,
    relative_path,
    verify_bytes,
)
from .errors import DynamicDeclined, RemoteError, ServerError, VerificationError
from .pins import Pin, compare
from .transport import (
    CONNECTION_FAILED,
    MAX_LISTING,
    MAX_MESSAGE,
    MAX_READ,
    Budget,
    ServerLog,
    bounded_http_client,
    bounded_stdio_client,
    read_limit,
)
from .verify import check_frontmatter, frontmatter_note

_RAW = TypeAdapter(dict[str, Any])
MAX_PAGES = 1000


# What a started server may need of this process's environment when it is not given the whole of it (the gateway's
# upstream): mcp's safe set (PATH, HOME, USER, LOGNAME, SHELL, TERM; on Windows, its system folders) with the locale,
# the time zone and the temporary folder.
INHERITED_ENV = ("LANG", "LANGUAGE", "TZ", "TMPDIR", "TEMP", "TMP")
INHERITED_ENV_PREFIXES = ("LC_",)


def server_environment(passed: Iterable[str] = ()) -> dict[str, str]:
    """The environment of a server started on behalf of others (``serve --upstream``): mcp's
    :func:`~mcp.client.stdio.get_default_environment`, :data:`INHERITED_ENV` and the ``LC_*`` variables, and the
    variables named in ``passed`` (the operator's choice, e.g. ``DATABASE_URL``), each as this process has it; a name
    it lacks is left out. Nothing else of this process's environment (its keys and tokens) is passed on."""
    from mcp.client.stdio import get_default_environment

    wanted = set(INHERITED_ENV) | set(passed)
    env = get_default_environment()
    for name, value in sorted(os.environ.items()):
        if (name in wanted or name.startswith(INHERITED_ENV_PREFIXES)) and not value.startswith("()"):
            env[name] = value  # "()": a shell function, left out as mcp leaves it out
    return env


def parse_server(spec: str, env: dict[str, str] | None = None) -> str | StdioServerParameters:
    """``http(s)://…`` -> the URL, as given; anything else -> a stdio command line split like a POSIX shell would.
    The child gets ``env``, or else this process's environment, and its working directory, as a shell would give
    it."""
    if spec.startswith(("http://", "https://")):
        return spec
    try:
        words = shlex.split(spec)
    except ValueError as exc:
        raise ServerError("server-error", spec, f"cannot split the server command line: {exc}") from None
    if not words:
        raise ServerError("server-error", "<server>", "the server command line is empty")
    environment = dict(os.environ) if env is None else env
    return StdioServerParameters(command=words[0], args=words[1:], env=environment, cwd=os.getcwd())


def _describe(exc: BaseException) -> str:
    """The innermost useful message of an exception, unwrapping exception groups and chains."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        if CONNECTION_FAILED in exc.error.message:  # no answer came: the connection's own error, as it was
            return exc.error.message.split(CONNECTION_FAILED, 1)[1]
        return f"JSON-RPC error {exc.code}: {exc.error.message}"
    text = str(exc) or type(exc).__name__
    cause = exc.__cause__ or exc.__context__
    if cause is not None and not str(exc):
        return _describe(cause)
    return f"{type(exc).__name__}: {text}" if not isinstance(exc, OSError) else text


@dataclass(frozen=True)
class LoadedSkill:
    """A skill whose files were all verified. ``files`` maps each file URI to its bytes, SKILL.md first.
    ``verified`` is False only for a "dynamic" skill loaded with ``allow_dynamic`` (then only SKILL.md is held,
    and only its frontmatter was checked). ``frontmatter_yaml`` is how its frontmatter was read ("1.2", or "1.1" when
    asked for or pinned), and ``notes`` says what a YAML 1.2 host would see when only the YAML 1.1 reading matched
    its entry (:func:`~.verify.frontmatter_note`)."""

    entry: SkillEntry
    files: dict[str, bytes]
    frontmatter: dict[str, Any]
    verified: bool = True
    refreshed: bool = False
    frontmatter_yaml: str = "1.2"
    notes: tuple[str, ...] = ()

    @property
    def uri(self) -> str:
        return self.entry.uri

    def paths(self) -> dict[str, bytes]:
        """``{path inside the skill root: bytes}``."""
        return {relative_path(self.entry, uri): data for uri, data in self.files.items()}


@dataclass
class RemoteSkills:
    """A connection to one skills server. Use ``async with connect(spec) as remote``.

    Over a URL or a command line (stdio), every message is bounded where its bytes arrive (:mod:`.transport`): a
    ``resources/read`` by the manifest's size for that file, any other message by ``max_message`` bytes, and all
    pages of one ``skills/list`` by ``max_listing``. A message past its limit is ``response-too-large``, and the
    connection is closed. Other targets (an in-process server, a transport of the caller's) are the caller's to
    bound.

    A command line's stderr is kept, not shown (:class:`~.transport.ServerLog`): its last lines join the error when
    the server fails; ``verbose=True`` passes it through as it comes."""

    server: Any
    label: str = "<server>"
    timeout: float | None = 60.0  # seconds to wait for each response; None waits forever
    max_message: int = MAX_MESSAGE
    max_listing: int = MAX_LISTING
    verbose: bool = False
    message_handler: Any = None  # mcp's Client message_handler: the server's notifications (the gateway follows them)
    _client: Client | None = field(default=None, init=False, repr=False)
    _log: ServerLog | None = field(default=None, init=False, repr=False)
    _budget: Budget = field(default_factory=Budget, init=False, repr=False)

    def _transport(self, target: Any) -> Any:
        self._budget = Budget(self.label, self.max_message, "the handshake")
        if isinstance(target, str):
            return bounded_http_client(target, self._budget)
        if isinstance(target, StdioServerParameters):
            self._log = ServerLog(verbose=self.verbose)
            return bounded_stdio_client(target, self._budget, self._log)
        return target

    def server_note(self) -> str:
        """For an error: how a stdio server ended and the last lines of its stderr ("" when there is nothing)."""
        return self._log.note() if self._log is not None else ""

    async def server_ended(self, within: float) -> None:
        """Wait, ``within`` seconds at most, for a stdio server whose connection closed to finish its stderr and
        exit, so that :meth:`server_note` can say how it ended (its stderr is read as it comes, its exit status once
        the process is reaped: a request that failed on the closed connection is told first)."""
        if self._log is None:
            return
        with anyio.move_on_after(within):
            while not self._log.ended:
                await anyio.sleep(0.02)

    def _expect(self, limit: int, what: str, where: str) -> None:
        """Bound the next answer; refuse at once when an earlier one went past its limit (the connection is
        closed)."""
        if self._budget.tripped is not None:
            raise ServerError(
                "server-error", where, f"{what}: the connection was closed after an earlier answer passed its limit"
            ) from None
        self._budget.expect(limit, what, where)

    def _tripped(self) -> None:
        """After a failed request: the budget's error, when that is why it failed."""
        if self._budget.tripped is not None:
            raise self._budget.tripped from None

    async def __aenter__(self) -> "RemoteSkills":
        target = parse_server(self.server) if isinstance(self.server, str) else self.server
        # No response cache: a refresh must reach the server, and a verifying host keeps no unverified copies.
        client = Client(
            self._transport(target), cache=None, read_timeout_seconds=self.timeout, message_handler=self.message_handler
        )
        try:
            await client.__aenter__()
        except RemoteError:
            raise
        except Exception as exc:  # transports raise many kinds: OSError, httpx errors, exception groups
            self._tripped()
            raise ServerError(
                "server-error",
                self.label,
                f"cannot connect: {_describe(exc)}{self.server_note()}",
                "give an http(s)://…/mcp URL or a command line that starts an MCP server on stdio",
            ) from None
        self._client = client
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        client, self._client = self._client, None
        if client is not None:
            try:
                await client.__aexit__(*exc_info)
            except Exception:  # a server that dies on shutdown changes nothing that was verified
                pass

    @property
    def client(self) -> Client:
        if self._client is None:
            raise RuntimeError("RemoteSkills must be used within 'async with'")
        return self._client

    @property
    def protocol_version(self) -> str:
        return self.client.protocol_version

    def identity(self) -> str | None:
        """The server's own name: the ``name`` of the ``serverInfo`` it sent (None when it sent none). A lock knows
        the server by it unless the user names it (:func:`~.pins.server_name`)."""
        info = self.client.server_info
        name = getattr(info, "name", None)
        return name if isinstance(name, str) else None

    def declares_skills(self) -> bool | None:
        """True/False from the server's capabilities; None when it sent no extensions map at all (a handshake-era
        server whose ``initialize`` result cannot carry one)."""
        ext = self.client.server_capabilities.extensions
        if ext is None:
            return False if self.client.protocol_version in MODERN_PROTOCOL_VERSIONS else None
        return EXTENSION_ID in ext

    # ---------------------------------------------------------------------------------------------- requests

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        req = mcp_types.Request[dict[str, Any] | None, str](method=method, params=params)
        self._expect(self.max_message, method, params.get("uri") or self.label)
        try:
            return await self.client.session.send_request(req, _RAW)
        except MCPError as exc:
            self._tripped()
            if exc.code == METHOD_NOT_FOUND and method.startswith("skills/"):
                raise ServerError(
                    "not-a-skills-server",
                    self.label,
                    f"the server does not implement {method}",
                    f"it does not serve the {EXTENSION_ID} extension",
                ) from None
            raise ServerError(
                "server-error",
                params.get("uri") or self.label,
                f"{method} failed: JSON-RPC error {exc.code}: {exc.error.message}",
            ) from None
        except RemoteError:
            raise
        except Exception as exc:
            self._tripped()
            raise ServerError(
                "server-error", self.label, f"{method} failed: {_describe(exc)}{self.server_note()}"
            ) from None

    def _require_skills(self) -> None:
        if self.declares_skills() is False:
            raise ServerError(
                "not-a-skills-server", self.label, f"the server does not declare the {EXTENSION_ID} extension"
            )

    async def list_skills(self) -> list[SkillEntry]:
        """Every page of ``skills/list``, in served order. Reads no file."""
        self._require_skills()
        entries: list[SkillEntry] = []
        seen_uris: set[str] = set()
        seen_cursors: set[str] = set()
        cursor: str | None = None
        start = self._budget.received
        for page in range(MAX_PAGES):
            result = await self.request("skills/list", {"cursor": cursor} if cursor is not None else {})
            if self._budget.received - start > self.max_listing:
                raise ServerError(
                    "response-too-large",
                    self.label,
                    f"skills/list passed {self.max_listing} bytes in {page + 1} pages, the limit for "
                    "one listing; the rest was not read",
                )
            skills = result.get("skills")
            if not isinstance(skills, list):
                raise ServerError("server-error", self.label, "skills/list returned no 'skills' array")
            for raw in skills:
                entry = parse_entry(raw, self.label)
                if entry.uri in seen_uris:
                    raise ServerError("server-error", entry.uri, "skills/list returned this skill twice")
                seen_uris.add(entry.uri)
                entries.append(entry)
            nxt = result.get("nextCursor")
            if nxt is None:
                return entries
            if not isinstance(nxt, str) or nxt in seen_cursors:
                raise ServerError("server-error", self.label, f"skills/list repeated or sent a bad cursor {nxt!r}")
            seen_cursors.add(nxt)
            cursor = nxt
        raise ServerError("server-error", self.label, f"skills/list did not end within {MAX_PAGES} pages")

    async def get_skill(self, uri: str) -> SkillEntry:
        """``skills/get``: the current entry of one skill."""
        self._require_skills()
        result = await self.request("skills/get", {"uri": uri})
        raw = result.get("skill")
        if not isinstance(raw, dict):
            raise ServerError("server-error", uri, "skills/get returned no 'skill' entry")
        entry = parse_entry(raw, uri)
        if entry.uri != uri:
            raise ServerError("server-error", uri, f"skills/get answered for another skill, {entry.uri}")
        return entry

    async def _read(self, uri: str, size: int | None) -> bytes:
        """``resources/read`` of one URI, as bytes, its answer bounded by :func:`~.transport.read_limit` of ``size``
        (the manifest's; None: a dynamic SKILL.md, bounded as a 16 MiB file). Callers verify them before any use."""
        if size is None:
            self._expect(MAX_READ, "resources/read of a file no manifest lists (at most 16 MiB)", uri)
        else:
            self._expect(read_limit(size), f"resources/read of a file the manifest lists as {size} bytes", uri)
        try:
            result = await self.client.read_resource(uri)
        except MCPError as exc:
            self._tripped()
            raise VerificationError(
                "read-failed", uri, f"resources/read failed: JSON-RPC error {exc.code}: {exc.error.message}"
            ) from None
        except Exception as exc:
            self._tripped()
            raise ServerError("server-error", uri, f"resources/read failed: {_describe(exc)}") from None
        contents = list(getattr(result, "contents", None) or [])
        matching = [c for c in contents if str(c.uri) == uri]
        if len(matching) == 1:
            item = matching[0]
        elif len(contents) == 1 and not matching:
            item = contents[0]
        else:
            raise VerificationError(
                "bad-content",
                uri,
                f"resources/read returned {len(contents)} contents; expected exactly one for this URI",
            )
        if isinstance(item, mcp_types.TextResourceContents):
            return item.text.encode("utf-8")
        try:
            return base64.b64decode(item.blob, validate=True)
        except (binascii.Error, ValueError):
            raise VerificationError("bad-content", uri, "resources/read returned a blob that is not base64") from None

    # ---------------------------------------------------------------------------------------------- verified reads

    async def read_verified(self, entry: SkillEntry, uri: str) -> bytes:
        """One file of a skill, verified against the entry's manifest. A URI the manifest does not list is refused
        before anything is read (``unlisted-file``)."""
        if entry.resources is None:
            raise DynamicDeclined(
                "dynamic-declined", entry.uri, f'a "dynamic" skill has no manifest to verify {uri} against'
            )
        ref = entry.ref(uri)
        if ref is None:
            raise VerificationError(
                "unlisted-file",
                uri,
                f"the manifest of {entry.uri} does not list this file",
                "a host reads only the files a skill's manifest lists",
            )
        data = await self._read(uri, ref.size)
        verify_bytes(ref, data)
        return data

    async def _load_once(
        self,
        entry: SkillEntry,
        only: tuple[str, ...] | None,
        pin: Pin | None,
        lock_path: str,
        allow_dynamic: bool,
        asked: str | None,
    ) -> LoadedSkill:
        if pin is not None:
            compare(pin, entry, lock_path, frontmatter_yaml=asked)  # before any read
        reading = pin.frontmatter_yaml if pin is not None else asked or "1.2"

        def frontmatter(data: bytes) -> tuple[dict[str, Any], dict[str, Any]]:
            fm = check_frontmatter(entry, data, reading, pinned=pin is not None)
            note = frontmatter_note(entry, data, reading)
            return fm, {"frontmatter_yaml": reading, "notes": (note,) if note else ()}

        if entry.resources is None:
            if not allow_dynamic:
                raise DynamicDeclined(
                    "dynamic-declined",
                    entry.uri,
                    'the skill\'s resources are "dynamic": no manifest, so nothing can be verified',
                    "pass --allow-dynamic (allow_dynamic=True) to load its SKILL.md unverified",
                )
            check_manifest(entry)
            data = await self._read(entry.uri, None)
            fm, how = frontmatter(data)
            return LoadedSkill(entry, {entry.uri: data}, fm, verified=False, **how)
        check_manifest(entry)
        wanted = [r.uri for r in entry.resources if r.uri != entry.uri]
        if only is not None:
            for uri in only:
                if entry.ref(uri) is None:
                    raise VerificationError(
                        "unlisted-file",
                        uri,
                        f"the manifest of {entry.uri} does not list this file",
                        "a host reads only the files a skill's manifest lists",
                    )
            wanted = [u for u in wanted if u in only]
        skill_md = await self.read_verified(entry, entry.uri)
        fm, how = frontmatter(skill_md)
        files = {entry.uri: skill_md}
        for uri in wanted:
            files[uri] = await self.read_verified(entry, uri)
        return LoadedSkill(entry, files, fm, **how)

    async def load(
        self,
        entry: SkillEntry | str,
        *,
        files: Iterable[str] | None = None,
        pin: Pin | None = None,
        lock_path: str = "skills.lock",
        allow_dynamic: bool = False,
        frontmatter_yaml: str | None = None,
    ) -> LoadedSkill:
        """Load one skill (an entry, or a SKILL.md URI to fetch with ``skills/get``), verifying every byte.

        ``files`` limits the supporting files read to those URIs (SKILL.md is always read first); each must be in
        the manifest. ``pin`` compares the served manifest with a lock entry before any read. On a verification
        failure the entry is refreshed once with ``skills/get`` and the load retried.

        ``frontmatter_yaml``: how SKILL.md's frontmatter is read to compare it with the entry's: "1.2" (the default,
        as the reference SDK reads it) or "1.1" (PyYAML's reading, for a publisher you trust that reads it so, such
        as FastMCP's skills provider; the skill's ``notes`` then say what a YAML 1.2 host would see). With a ``pin``,
        the pin's reading is used, and asking for another one is ``lock-mismatch``."""
        if frontmatter_yaml is not None:
            check_reading(frontmatter_yaml)
        if isinstance(entry, str):
            entry = await self.get_skill(entry)
        only = tuple(files) if files is not None else None
        try:
            return await self._load_once(entry, only, pin, lock_path, allow_dynamic, frontmatter_yaml)
        except VerificationError as first:
            try:
                fresh = await self.get_skill(entry.uri)
            except RemoteError as exc:
                raise first.with_hint(f"refreshing the entry with skills/get failed too: {exc.message}") from None
            try:
                loaded = await self._load_once(fresh, only, pin, lock_path, allow_dynamic, frontmatter_yaml)
            except VerificationError as second:
                raise second.with_hint("still refused after refreshing the entry once with skills/get") from None
            return replace(loaded, refreshed=True)


def connect(
    server: Any,
    label: str | None = None,
    *,
    timeout: float | None = 60.0,
    max_message: int = MAX_MESSAGE,
    max_listing: int = MAX_LISTING,
    verbose: bool = False,
) -> RemoteSkills:
    """A :class:`RemoteSkills` for ``server`` (a spec string, or anything :class:`mcp.Client` accepts).
    ``timeout``: seconds to wait for each response (None: no limit). ``max_message``: bytes in any message but a
    file's read; ``max_listing``: bytes of all pages of one ``skills/list``. ``verbose``: pass a stdio server's
    stderr through (by default it is kept and shown only when the server fails)."""
    if label is None:
        label = server if isinstance(server, str) else type(server).__name__
    return RemoteSkills(server, label, timeout, max_message, max_listing, verbose)


def skill_of(entries: list[SkillEntry], file_uri: str) -> SkillEntry | None:
    """The listed skill whose root holds ``file_uri`` (the deepest one, if roots nest)."""
    best = None
    for e in entries:
        if file_uri.startswith(e.root + "/") and (best is None or len(e.root) > len(best.root)):
            best = e
    return best


__all__ = ["LoadedSkill", "RemoteSkills", "SKILL_FILE", "connect", "parse_server", "skill_of"]
