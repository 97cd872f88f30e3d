"""What projector needs from a framework it serves on: the adapter interface.

:func:`projector.server.attach` is one algorithm (:mod:`projector.server.attaching`) over this interface, and the
runner (:mod:`projector.server.workflow`) knows only :class:`~projector.server.workflow.WorkflowHost` and neutral
:class:`~projector.server.workflow.Turn` objects. An adapter turns those into one framework's objects:

- recognise a server object, and list what is on it (:class:`Listing`);
- register the SEP-2640 skills extension, the workflow and bootstrap prompts, the skill tools and the workflow
  tools;
- make a :class:`~projector.server.workflow.WorkflowHost` for a request, and a tool that gets one (the matrix's agent);
- make a server and add a plain tool or resource to it (the demo server);
- run a transport (stdio, Streamable HTTP), and connect projector's verifying client to a server in this process
  (the matrix's agent verifies its own server's skills through it).

These are exactly what mcp's MCPServer (:mod:`.mcp`) and FastMCP (:mod:`.fastmcp`) need today. An adapter calls
nothing private of another adapter; what two adapters share lives in a framework-free module (the runner, the
bootstrap text, the skills tree).
"""

from __future__ import annotations

import importlib
import inspect
import typing
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ...model import Workflow
from ..replay import ReplayGuard
from ..skills import Skill, SkillsExtension, SkillTree
from ..workflow import WorkflowHost
from ..workflow_tool import WorkflowToolSpec

T = TypeVar("T")


@dataclass(frozen=True)
class Listing:
    """What a server has before ``attach()`` adds anything: its tools, those it registered and hides included (by
    name, as :func:`projector.fit.from_listing` reads them; the steps are fitted to them all), the URIs of its resources and resource templates, and the names of its prompts."""

    tools: dict[str, Any]
    templates: list[str]
    resources: list[str]
    prompts: set[str]


class Adapter(ABC):
    """One framework. Every method takes the framework's own server object."""

    name: str  # as in the registry (projector.server.adapters.REGISTRY)
    # what a tool raises so that its message reaches the client as an ``isError`` result (not masked)
    tool_error: type[Exception] = ValueError
    # the module that serves the Tasks extension on this framework (``add_tasks``, ``ServerHost``), loaded when used
    tasks_module: str | None = None

    @abstractmethod
    def recognises(self, obj: Any) -> bool:
        """Whether ``obj`` is a server of this framework."""

    @abstractmethod
    def run_sync(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Run ``fn()`` (``attach_async``) to completion from synchronous code, at import time or inside a loop."""

    @abstractmethod
    async def listing(self, server: Any) -> Listing: ...

    async def registered_tools(self, server: Any, listing: Listing) -> set[str]:
        """The names of every tool ``server`` has, whoever may see them (:mod:`projector.server.bound`): by default
        the ones ``listing`` shows; a framework whose listing leaves out disabled or unauthorized tools adds them."""
        return set(listing.tools)

    @abstractmethod
    def add_extension(self, server: Any, ext: SkillsExtension, listing: Listing) -> Any:
        """Serve ``ext``'s tree (SEP-2640) on ``server``; returns the extension as the framework holds it."""

    @abstractmethod
    def workflow_prompt(self, wf: Workflow, replay: ReplayGuard) -> Any:
        """A prompt object (with a ``name``) whose ``prompts/get`` runs ``wf`` with the one runner, and claims each
        confirmation's yes in ``replay``."""

    def set_state_key(self, server: Any, key: str) -> Callable[[], None]:
        """How to seal the server's ``requestState`` under ``key`` (shared by every process that serves with it), in
        place of the framework's default policy (a random key per process): checked now, applied when the returned
        function is called, so that ``attach`` changes nothing until every check has passed. Raises ``ValueError``
        for a key that is too short, and :class:`OwnStatePolicy` when the server was built with a request-state
        policy of its own that does not take ``key`` (:func:`seal_with`). A framework that cannot (this default)
        refuses: its confirmations would not verify across processes."""
        raise ValueError(f"the {self.name} adapter cannot seal requestState under a given key")

    @abstractmethod
    def bootstrap_prompt(self, skill: Skill) -> Any:
        """A prompt object (with a ``name``) that inlines ``skill`` (:mod:`projector.server.bootstrap`)."""

    @abstractmethod
    def add_prompts(self, server: Any, prompts: Sequence[Any]) -> None: ...

    @abstractmethod
    def add_skill_tools(self, server: Any, tree: SkillTree) -> Any:
        """``load_skill`` and ``read_skill_file`` (:mod:`projector.server.skill_tools`), their names checked."""

    def bind(self, server: Any, bound: Any, served: Any = None) -> None:
        """Serve each request's caller only what it can carry out (:class:`projector.server.bound.Bound`): ask the
        framework, once per request, which tools the caller sees. A framework that cannot (this default) serves every
        caller everything, as servers did before skills were bound to their tools."""

    def add_workflow_tools(
        self, server: Any, tools: Sequence[tuple[Workflow, WorkflowToolSpec]], replay: ReplayGuard
    ) -> None:
        """Add each workflow as a tool (:mod:`projector.server.workflow_tool`): the spec's name, schemas and
        annotations, and a call that runs :func:`~projector.server.workflow_tool.call_workflow` with the request's
        host and round, claiming each yes in ``replay``. Names are already checked. A framework that cannot (this
        default) refuses."""
        raise TypeError(f"the {self.name} adapter cannot serve workflows as tools")

    def add_tasks(self, server: Any, tasks: Any) -> None:
        """Serve the Tasks extension (SEP-2663) over ``tasks`` (:class:`projector.server.tasks.Tasks`): the three
        ``tasks/*`` methods, and a task for a ``tools/call`` of each tool ``tasks`` supports. Through the adapter's
        :attr:`tasks_module` (its ``add_tasks``); a framework without one refuses."""
        if self.tasks_module is None:
            raise TypeError(f"the {self.name} adapter cannot serve tasks")
        importlib.import_module(self.tasks_module).add_tasks(server, tasks)

    def task_host(self, server: Any) -> WorkflowHost:
        """The server's own :class:`~projector.server.workflow.WorkflowHost`, outside any request: the host a
        task's workflow runs on (the :attr:`tasks_module`'s ``ServerHost``)."""
        if self.tasks_module is None:
            raise TypeError(f"the {self.name} adapter cannot run a workflow outside a request")
        host: WorkflowHost = importlib.import_module(self.tasks_module).ServerHost(server)
        return host

    @abstractmethod
    def add_tool(
        self,
        server: Any,
        fn: Callable[..., Any],
        *,
        name: str,
        description: str,
        annotations: Any,
        text_only: bool = False,
        host: bool = False,
    ) -> None:
        """Add ``fn`` as a tool. ``text_only``: its result is text content, with no output schema. ``host``: ``fn``
        takes the request's :class:`~projector.server.workflow.WorkflowHost` as its first argument, and the tool's
        parameters are the rest of ``fn``'s."""

    @abstractmethod
    def add_resource(
        self, server: Any, uri: str, fn: Callable[..., Any], *, name: str, mime_type: str, description: str
    ) -> None:
        """Add ``fn`` as the resource ``uri``, or as a resource template when ``uri`` has ``{variables}``."""

    @abstractmethod
    def make_server(self, name: str, *, version: str, instructions: str, page_size: int) -> Any:
        """A new, empty server (the demo's); ``page_size`` pages ``skills/list`` where the framework pages it."""

    @abstractmethod
    def run_stdio(self, server: Any, max_line_bytes: int | None = None) -> None:
        """Serve on this process's stdin and stdout until the input ends."""

    def forwarding_server(
        self,
        name: str,
        tools: Sequence[Any],
        forward: Callable[[str, dict[str, Any]], Any],
        gone: type[Exception],
        listed: Any = None,
    ) -> Any:
        """A new server of this framework whose tools are ``tools`` (``mcp_types.Tool``, as an upstream lists them),
        each call handed to ``forward(name, arguments)`` and its ``CallToolResult`` returned as it came; ``gone``
        (raised by ``forward`` when the upstream cannot answer) becomes a tool error. ``listed``
        (:class:`~projector.server.forwarded.Forwarded`): its middleware goes in the low-level server's, so that
        ``tools/list`` shows each tool as the upstream lists it now, and its changes are announced. The gateway's
        server (:mod:`projector.server.gateway`). A framework that cannot keeps this default, a TypeError."""
        raise TypeError(f"the {self.name} adapter cannot build a gateway's server")

    async def serve_stdio_async(self, server: Any, max_line_bytes: int | None = None) -> None:
        """:meth:`run_stdio`, awaited in a running event loop (the gateway holds its upstream open around it). A
        framework that cannot keeps this default, a TypeError."""
        raise TypeError(f"the {self.name} adapter cannot serve stdio inside a running event loop")

    def in_process(self, server: Any) -> Any:
        """What projector's verifying client (:func:`projector.remote.connect`, over :class:`mcp.Client`) connects
        to for ``server`` in this process, through the framework's public API: a server object that
        :class:`mcp.Client` takes, or a transport. A transport is entered once: ask again for each connection. A
        framework that cannot be reached in process keeps this default, a TypeError."""
        raise TypeError(f"projector's verifying client cannot connect to a {self.name} server in process")

    @abstractmethod
    async def serve_http(
        self,
        server: Any,
        *,
        host: str,
        port: int,
        path: str,
        stateless: bool,
        security: Any,
        guard: Any,
        options: dict[str, Any],
    ) -> None:
        """Serve Streamable HTTP behind ``guard`` (:class:`projector.server.http.HostOriginGuard`, with
        ``security``), with the uvicorn ``options`` of :mod:`projector.server.http`."""


class OwnStatePolicy(Exception):
    """The server seals ``requestState`` under a policy of its own that does not take the given key: projector keeps
    the server's policy, and will not seal under the key."""


def seal_with(lowlevel: Any, key: str, *, own: bool = False) -> Callable[[], None]:
    """How to replace the request-state boundary (``mcp.server.request_state``) that mcp's and FastMCP's low-level
    server installs at construction with one that seals under ``key``, for the same audience (the server's name).
    Both frameworks take the policy only at construction (``request_state_security=``); this is for a server that
    ``attach()`` is given already built.

    Only the framework's default policy (``RequestStateSecurity.ephemeral()``: a random key, mcp's expiry, no
    audience of its own, the default principal binding) is replaced. A policy that already takes ``key`` is kept as
    it is. Any other (``own``: the framework recorded that one was given; or one whose codec, key ring, expiry,
    audience or principal binding differs from the default) is the server's own, and is never replaced:
    :class:`OwnStatePolicy`. On MCPServer, which does not record it, a policy that differs from the default only in
    its one key cannot be told from the default."""
    from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity

    security = RequestStateSecurity(keys=[key])  # ValueError, TypeError: a bad key, before anything is changed
    found = [i for i, m in enumerate(lowlevel.middleware) if isinstance(m, RequestStateBoundary)]
    if found and _takes(lowlevel.middleware[found[0]], security):
        return lambda: None
    if found and (own or not _default_policy(lowlevel.middleware[found[0]], lowlevel.name)):
        raise OwnStatePolicy()
    boundary = RequestStateBoundary(security, default_audience=lowlevel.name)

    def install() -> None:
        if found:
            lowlevel.middleware[found[0]] = boundary
        else:  # pragma: no cover - both frameworks install one
            lowlevel.middleware.insert(0, boundary)

    return install


def _policy(boundary: Any) -> Any:
    return getattr(boundary, "_security", None)  # mcp keeps the boundary's policy private


def _takes(boundary: Any, security: Any) -> bool:
    """Whether the boundary's policy opens what ``security`` seals: it already holds the key."""
    policy = _policy(boundary)
    try:
        return policy is not None and policy.codec.unseal(security.codec.seal(b"projector")) == b"projector"
    except Exception:  # any codec's refusal (InvalidRequestState, or its own error) means: not this key
        return False


def _default_policy(boundary: Any, name: str) -> bool:
    """Whether the boundary's policy is indistinguishable from the one the framework installs when it is given
    none. Anything this cannot read counts as the server's own (it is kept, never replaced)."""
    from mcp.server.request_state import AESGCMRequestStateCodec, RequestStateSecurity, authenticated_principal

    policy = _policy(boundary)
    default_ttl = inspect.signature(RequestStateSecurity.ephemeral).parameters["ttl"].default
    return (
        type(policy) is RequestStateSecurity
        and type(policy.codec) is AESGCMRequestStateCodec
        and len(getattr(policy.codec, "_ring", ())) == 1
        and policy.ttl == default_ttl
        and policy.audience is None
        and policy.bind_principal is authenticated_principal
        and getattr(boundary, "_audience", None) == name
    )


def with_host(
    fn: Callable[..., Awaitable[Any]],
    host: Callable[[dict[str, Any]], WorkflowHost],
    extra: Sequence[inspect.Parameter] = (),
) -> Callable[..., Awaitable[Any]]:
    """A tool function whose parameters are ``fn``'s after the first (plus ``extra``, which a framework fills in),
    and which calls ``fn`` with ``host(kwargs)`` first (``host`` takes out what ``extra`` put in). The annotations
    are resolved, so a framework reads the same parameter types as on ``fn``: the ``host=True`` of
    :meth:`Adapter.add_tool`."""
    hints = typing.get_type_hints(fn)
    params = [
        p.replace(annotation=hints.get(p.name, p.annotation))
        for p in list(inspect.signature(fn).parameters.values())[1:]
    ] + list(extra)
    returns = hints.get("return", inspect.Signature.empty)

    async def tool(**kwargs: Any) -> Any:
        return await fn(host(kwargs), **kwargs)

    tool.__signature__ = inspect.Signature(params, return_annotation=returns)  # type: ignore[attr-defined]
    tool.__annotations__ = {p.name: p.annotation for p in params} | ({"return": returns} if "return" in hints else {})
    tool.__name__, tool.__qualname__, tool.__doc__ = fn.__name__, fn.__qualname__, fn.__doc__
    return tool
