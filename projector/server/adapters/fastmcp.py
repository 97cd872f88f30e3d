"""FastMCP (``fastmcp`` >= 4.2) as a framework projector serves on: the adapter.

Install it with ``pip install 'project-skill[fastmcp]'``. Nothing in the core imports this module; the registry
(:mod:`projector.server.adapters`) imports it only when a FastMCP server is asked for by name or given to ``attach``.

What :func:`projector.server.attach` adds here, through FastMCP's public API:

- :class:`TreeProvider`, a ``SkillManifestProvider`` serving the verified in-memory :class:`SkillTree` (the bytes
  checked against ``skills.json`` at load, exactly as on ``MCPServer``). ``resources/list`` shows each SKILL.md only,
  named by its frontmatter name, and ``resources/read`` serves every listed file with the same mimeType as on
  ``MCPServer``. FastMCP's ``_manifest`` side file is not served: the manifest is ``skills/get``.
  ``resources/templates/list`` shows the level-1 templates of the supporting files (:class:`TreeFileTemplate`, the
  same as on ``MCPServer``), so that FastMCP's proxy and ``mount()`` forward every skill whole.
- :class:`TreeSkillsExtension`, a ``fastmcp.skills.extension.SkillsExtension`` that declares
  ``{"directoryRead": true}`` and binds ``resources/directory/read`` to the same handler ``MCPServer`` uses (found
  among that extension's public method bindings).
  ``skills/list`` and ``skills/get`` are FastMCP's own handlers (sorted by URI, paged by
  ``FastMCP(list_page_size=...)``), with ``attach``'s ``cache`` stamped on as ``ttlMs`` and ``cacheScope``
  (the directory handler stamps the same values).
- a :class:`FastMCPWorkflowPrompt` per workflow, which runs the one server-side runner
  (:func:`projector.server.workflow.run_workflow`) through :class:`FastMCPHost`: tools are called through the server
  itself, resources read through it, and one progress notification is sent per step.
- a :class:`FastMCPBootstrapPrompt` per skill, the same text as on ``MCPServer``.
- with ``skill_tools=True``, ``load_skill`` and ``read_skill_file`` as :class:`~.fastmcp_bound.SkillTool` (the same functions as on
  ``MCPServer``, from :mod:`projector.server.skill_tools`).

None of these components carries FastMCP's unprefixed ``_meta.fastmcp`` block.

:func:`in_process_http` connects projector's verifying client (built on ``mcp.Client``) to a FastMCP server in this
process through public API only: the server's Streamable HTTP app and its lifespan, over an ASGI transport.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import mcp_types
from fastmcp import FastMCP
from fastmcp.prompts import Message as FastMCPMessage
from fastmcp.prompts import Prompt as FastMCPPrompt
from fastmcp.prompts import PromptArgument as FastMCPPromptArgument
from fastmcp.exceptions import NotFoundError, ToolError
from fastmcp.resources.base import ResourceContent, ResourceResult
from fastmcp.resources.template import ResourceTemplate
from fastmcp.server.dependencies import get_context
from fastmcp.server.extensions import MethodBinding
from fastmcp.server.middleware import Middleware
from fastmcp.skills import SkillFile as FastMCPSkillFile
from fastmcp.skills import SkillFrontmatter, SkillManifest
from fastmcp.skills.extension import SkillsExtension as FastMCPSkillsExtension
from fastmcp.skills.provider import SkillFileResource, SkillManifestProvider
from fastmcp.tools.base import InputRequiredToolResult, ToolResult
from fastmcp.tools.base import Tool as FastMCPTool
from mcp.server.caching import CacheHint
from pydantic import AnyUrl, BaseModel, Field

from ... import fit
from ...model import Workflow
from ...sep2640 import SKILL_FILE, digest
from .. import bootstrap, confirm
from ..errors import AttachError
from ..replay import ReplayGuard
from ..skills import SKILLS_EXTENSION, TEMPLATE_DESCRIPTION, DirectoryReadParams, Skill, SkillTree
from ..skills import SkillsExtension as MCPSkillsExtension
from ..skill_tools import SkillTools
from ..workflow import ToolSpec, WorkflowHost, prompt_spec, run_workflow
from ..workflow_tool import WorkflowToolSpec
from . import fastmcp_refusals
from .fastmcp_bound import add_skill_tools
from .fastmcp_bound import bind as bind_to_caller
from .base import Adapter, Listing, seal_with, with_host

T = TypeVar("T")


# ------------------------------------------------------------------------------------------------------ skills


class TreeFileResource(SkillFileResource):
    """One file of the tree, read from memory."""

    async def read(self) -> ResourceResult:
        f = self.provider.tree.files[str(self.uri)]  # type: ignore[attr-defined]
        return ResourceResult([ResourceContent(f.content, mime_type=f.mime_type)])

    def to_mcp_resource(self, **overrides: Any) -> mcp_types.Resource:
        return super().to_mcp_resource(**{**overrides, "_meta": None})


class TreeFileTemplate(ResourceTemplate):
    """One level-1 template of the tree's supporting files (:meth:`SkillTree.segment_templates`), the same list as
    on MCPServer. It is listed so that FastMCP's proxy and ``mount()`` find a template for every file of a skill, and
    so forward the skill. Reads of the tree's files are answered by the provider's concrete resources before any
    template, and the template matches only those files, so it serves nothing else."""

    provider: Any = Field(default=None, exclude=True, repr=False)
    suffix: str = Field(default="", exclude=True)

    def matches(self, uri: str) -> dict[str, Any] | None:
        # only the tree's files of this type: any other URI matches no template, and so is an unknown resource
        # (-32602), as it is without templates
        if self.provider.tree.template_file(uri, self.suffix) is None:
            return None
        return super().matches(uri)

    async def create_resource(self, uri: str, params: dict[str, Any]) -> Any:
        if self.provider.tree.template_file(uri, self.suffix) is None:
            raise NotFoundError(f"Unknown resource: {uri!r}")
        return self.provider._files[uri]

    def to_mcp_template(self, **overrides: Any) -> mcp_types.ResourceTemplate:
        return super().to_mcp_template(**{**overrides, "_meta": None})


class TreeProvider(SkillManifestProvider):
    """The verified in-memory tree as a FastMCP skills source (``load_manifests`` and ``read_file``)."""

    def __init__(self, tree: SkillTree):
        super().__init__()
        self.tree = tree
        self._manifests: dict[str, SkillManifest] = {}
        self._files: dict[str, TreeFileResource] = {}
        self._listed: list[TreeFileResource] = []
        for skill in tree.skills:
            self._manifests[skill.path] = SkillManifest(
                frontmatter=SkillFrontmatter.model_validate(skill.frontmatter),
                files={f.path: FastMCPSkillFile(digest=digest(f.data), size=len(f.data)) for f in skill.files},
            )
            for f in skill.files:
                is_md = f.rel == SKILL_FILE
                res = TreeFileResource(
                    uri=AnyUrl(f.uri),
                    name=skill.frontmatter["name"] if is_md else f"{skill.path}/{f.rel}",
                    description=skill.frontmatter["description"] if is_md else None,
                    mime_type=f.mime_type,
                    provider=self,
                    skill_path=skill.path,
                    file_path=f.path,
                    file=self._manifests[skill.path].files[f.path],
                )
                self._files[f.uri] = res
                if is_md:
                    self._listed.append(res)
        self._templates = [
            TreeFileTemplate(
                uri_template=t,
                name=name,
                mime_type=mime,
                provider=self,
                suffix=suffix,
                description=TEMPLATE_DESCRIPTION,
                parameters={
                    "type": "object",
                    "required": [f"p{i}" for i in range(1, depth + 1)],
                    "properties": {f"p{i}": {"type": "string"} for i in range(1, depth + 1)},
                },
            )
            for t, name, mime, suffix, depth in tree.segment_templates()
        ]

    def required_extensions(self) -> Sequence[Any]:
        return ()  # attach() registers TreeSkillsExtension explicitly

    async def load_manifests(self) -> Mapping[str, SkillManifest]:
        return self._manifests

    async def read_file(self, resource: SkillFileResource) -> bytes:
        return self.tree.files[str(resource.uri)].data

    # Provider's documented override points (FastMCP names its provider hooks with a leading underscore).
    async def _list_resources(self) -> Sequence[Any]:
        return list(self._listed)

    async def _get_resource(self, uri: str, version: Any = None) -> Any:
        return self._files.get(uri)

    async def _list_resource_templates(self) -> Sequence[Any]:
        return list(self._templates)

    def __repr__(self) -> str:
        return f"TreeProvider({self.tree.root!r})"


class TreeSkillsExtension(FastMCPSkillsExtension):
    """FastMCP's skills extension, plus ``directoryRead``: ``resources/directory/read`` from the tree, and the
    ``ttlMs``/``cacheScope`` of ``attach(cache=...)`` on ``skills/list``, ``skills/get`` and
    ``resources/directory/read``, as on MCPServer."""

    def __init__(self, tree: SkillTree, provider: TreeProvider, *, page_size: int, cache: CacheHint):
        super().__init__()
        self.tree = tree
        self.provider = provider
        self.cache = cache
        self.page_size = page_size
        # resources/directory/read: MCPServer's extension's handler (on the caller's tree: .fastmcp_bound)
        self.read_directory = next(
            b.handler
            for b in MCPSkillsExtension(tree, page_size=page_size, cache=cache).methods()
            if b.method == "resources/directory/read"
        )

    def clone(self) -> TreeSkillsExtension:
        return TreeSkillsExtension(self.tree, self.provider, page_size=self.page_size, cache=self.cache)

    def settings(self) -> dict[str, Any]:
        return {"directoryRead": True}

    def methods(self) -> Sequence[MethodBinding]:
        # protocol_versions=None: served on every protocol version, as on MCPServer (FastMCP's own bindings admit
        # only 2026-07-28, which shuts out handshake-era clients such as the TypeScript SDK 1.x)
        own = [
            MethodBinding(method=b.method, params_type=b.params_type, handler=self._stamped(b.handler))
            for b in super().methods()
        ]
        return (
            *own,
            MethodBinding(
                method="resources/directory/read",
                params_type=DirectoryReadParams,
                handler=lambda ctx, params: self.read_directory(ctx, params),
            ),
        )

    def _stamped(self, handler: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def stamped(ctx: Any, params: Any) -> Any:
            result = await handler(ctx, params)
            return result.model_copy(update={"ttl_ms": self.cache.ttl_ms, "cache_scope": self.cache.scope})

        return stamped


class LegacyExtensionsMiddleware(Middleware):
    """Show the skills extension to handshake-era clients too (see
    :func:`projector.server.skills.legacy_extensions_middleware`, its MCPServer twin): the SDK sieves
    ``capabilities.extensions`` out of a 2025-11-25 ``initialize`` result, and this puts it back."""

    def __init__(self, settings: dict[str, Any]):
        self.settings = settings

    async def on_initialize(self, context: Any, call_next: Any) -> Any:
        result = await call_next(context)
        if result is None:
            return None
        data = (
            result.model_dump(by_alias=True, mode="json", exclude_none=True)
            if isinstance(result, BaseModel)
            else dict(result)
        )
        caps = dict(data.get("capabilities") or {})
        exts = dict(caps.get("extensions") or {})
        exts.setdefault(SKILLS_EXTENSION, dict(self.settings))
        caps["extensions"] = exts
        return {**data, "capabilities": caps}  # a dict goes to the wire as it is


# ------------------------------------------------------------------------------------------------------ prompts


class FastMCPHost(WorkflowHost):
    """The runner on a FastMCP server, through the request's FastMCP ``Context``."""

    def __init__(self, ctx: Any):
        self.ctx = ctx
        self.server: FastMCP = ctx.fastmcp

    async def tools(self) -> dict[str, ToolSpec]:
        return {t.name: ToolSpec(t.parameters, t.output_schema) for t in await self.server.list_tools()}

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        result = (await self.server.call_tool(name, arguments)).to_mcp_result()
        if isinstance(result, mcp_types.CallToolResult):
            return result
        if isinstance(result, tuple):
            content, structured = result
            return mcp_types.CallToolResult(content=list(content), structured_content=structured)
        return mcp_types.CallToolResult(content=list(result))

    async def read_resource(self, uri: str) -> Sequence[Any]:
        return list((await self.server.read_resource(uri)).contents)

    async def report_progress(self, progress: float, total: float, message: str) -> None:
        await self.ctx.report_progress(progress, total, message)


def _no_meta(prompt: FastMCPPrompt, overrides: dict[str, Any]) -> mcp_types.Prompt:
    return FastMCPPrompt.to_mcp_prompt(prompt, **{**overrides, "_meta": None})


class FastMCPWorkflowPrompt(FastMCPPrompt):
    """A workflow as a FastMCP prompt, run on the server by the same runner as on ``MCPServer``."""

    workflow: Any = Field(default=None, exclude=True)
    replay: Any = Field(default=None, exclude=True)  # the ReplayGuard where a yes is claimed

    @classmethod
    def for_workflow(cls, wf: Workflow, replay: ReplayGuard | None = None) -> FastMCPWorkflowPrompt:
        spec = prompt_spec(wf)
        args = [
            FastMCPPromptArgument(name=a.name, description=a.description, required=bool(a.required))
            for a in spec.arguments
        ]
        return cls(name=spec.name, description=spec.description, arguments=args, workflow=wf, replay=replay)

    async def render(self, arguments: dict[str, Any] | None = None) -> Any:  # type: ignore[override]
        ctx = get_context()
        rc = ctx.request_context
        can_ask = rc is not None and confirm.can_elicit(rc.session.client_capabilities, rc.protocol_version)
        rnd = confirm.Round.of(
            can_ask=can_ask, state=ctx.request_state, responses=ctx.input_responses, guard=self.replay
        )
        result = await run_workflow(self.workflow, arguments or {}, FastMCPHost(ctx), rnd)
        if isinstance(result, confirm.Asking):
            return confirm.input_required(result)  # FastMCP passes it through (InputRequiredPromptResult)
        return [FastMCPMessage(t.text, role=t.role) for t in result]

    def to_mcp_prompt(self, **overrides: Any) -> mcp_types.Prompt:
        return _no_meta(self, overrides)


class FastMCPBootstrapPrompt(FastMCPPrompt):
    """One skill inlined into a user message, the same text as on ``MCPServer``."""

    skill: Any = Field(default=None, exclude=True)

    @classmethod
    def for_skill(cls, skill: Any) -> FastMCPBootstrapPrompt:
        return cls(
            name=bootstrap.bootstrap_name(skill),
            title=bootstrap.title(skill),
            description=bootstrap.description(skill),
            arguments=[],
            skill=skill,
        )

    async def render(self, arguments: dict[str, Any] | None = None) -> list[FastMCPMessage]:  # type: ignore[override]
        bootstrap.refuse_arguments(self.name, arguments)
        return [FastMCPMessage(bootstrap.render(self.skill))]

    def to_mcp_prompt(self, **overrides: Any) -> mcp_types.Prompt:
        return _no_meta(self, overrides)


# ------------------------------------------------------------------------------------------------------ tools


class FastMCPWorkflowTool(FastMCPTool):
    """A workflow as a FastMCP tool, run on the server by the same runner and the same call as on ``MCPServer``
    (:mod:`projector.server.workflow_tool`), without FastMCP's ``_meta.fastmcp`` block."""

    workflow: Any = Field(default=None, exclude=True)
    replay: Any = Field(default=None, exclude=True)  # the ReplayGuard where a yes is claimed

    @classmethod
    def for_workflow(cls, wf: Workflow, spec: WorkflowToolSpec, replay: ReplayGuard) -> FastMCPWorkflowTool:
        return cls(
            name=spec.name,
            title=spec.title,
            description=spec.description,
            parameters=spec.input_schema,
            output_schema=spec.output_schema,
            annotations=spec.annotations,
            workflow=wf,
            replay=replay,
        )

    async def run(self, arguments: dict[str, Any]) -> ToolResult:
        ctx = get_context()
        rc = ctx.request_context
        can_ask = rc is not None and confirm.can_elicit(rc.session.client_capabilities, rc.protocol_version)
        rnd = confirm.Round.of(
            can_ask=can_ask, state=ctx.request_state, responses=ctx.input_responses, guard=self.replay
        )
        outcome = await fastmcp_refusals.call(self.workflow, arguments, FastMCPHost(ctx), rnd)  # refusals: -32602
        if isinstance(outcome, confirm.Asking):
            return InputRequiredToolResult(confirm.input_required(outcome))
        return ToolResult(
            content=[mcp_types.TextContent(type="text", text=t) for t in outcome.texts()],
            structured_content=outcome.structured(),
        )

    def to_mcp_tool(self, **overrides: Any) -> mcp_types.Tool:
        # the title as declared (FastMCP would make one from the name), as on MCPServer
        return super().to_mcp_tool(**{"title": self.title, **overrides, "_meta": None})


# ------------------------------------------------------------------------------------------------------ attach


def run_sync(fn: Callable[[], Awaitable[T]]) -> T:
    """Run ``fn()`` to completion from synchronous code, whether or not this thread runs an event loop: inside a
    running loop it runs on a fresh loop in a helper thread, which this call waits for."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        import anyio

        return anyio.run(fn)
    box: dict[str, Any] = {}

    def worker() -> None:
        try:
            box["value"] = asyncio.run(fn())  # type: ignore[arg-type]
        except BaseException as exc:  # noqa: BLE001 - handed back to the caller's thread
            box["error"] = exc

    t = threading.Thread(target=worker, name="projector-attach")
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


@asynccontextmanager
async def in_process_http(server: FastMCP) -> AsyncIterator[Any]:
    """A transport that ``mcp.Client`` takes, to ``server`` in this process, through FastMCP's public API only: its
    Streamable HTTP app (``http_app()``, stateless, JSON responses) with its ``lifespan``, reached through an
    ``httpx2`` ASGI transport, so no socket is opened. (``fastmcp.Client(server)`` is FastMCP's own in-process
    client, but projector's verifying client is built on ``mcp.Client``.)"""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    app = server.http_app(path=IN_PROCESS_PATH, stateless_http=True, json_response=True, host_origin_protection=False)
    async with app.lifespan(app):
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=IN_PROCESS_URL) as http:
            async with streamable_http_client(IN_PROCESS_URL + IN_PROCESS_PATH, http_client=http) as streams:
                yield streams[0], streams[1]


IN_PROCESS_URL, IN_PROCESS_PATH = "http://in-process", "/mcp"


class FastMCPAdapter(Adapter):
    """FastMCP's ``fastmcp.FastMCP``."""

    name = "fastmcp"
    tasks_module = "projector.server.adapters.fastmcp_tasks"
    tool_error = ToolError

    def recognises(self, obj: Any) -> bool:
        return isinstance(obj, FastMCP)

    def run_sync(self, fn: Callable[[], Awaitable[T]]) -> T:
        return run_sync(fn)

    async def listing(self, server: FastMCP) -> Listing:
        # the tools as tools/list shows them (input and output schemas, annotations), as on MCPServer; and the tools
        # it leaves out, disabled or bound to an auth the caller (none here) fails, as the providers list them
        # (AggregateProvider's listing, which FastMCP's filters): a tool the server registered and hides is a tool
        # it has, the steps are fitted to it, and what calls it is hidden while it is (projector.server.bound)
        shown = {t.name: fit.from_listing(t.to_mcp_tool()) for t in await server.list_tools()}
        hidden = {t.name: fit.from_listing(t.to_mcp_tool()) for t in await super(FastMCP, server).list_tools()}
        return Listing(
            tools=dict(sorted((hidden | shown).items())),
            templates=[t.uri_template for t in await server.list_resource_templates()],
            resources=[str(r.uri) for r in await server.list_resources()],
            prompts={p.name for p in await server.list_prompts()},
        )

    def add_extension(self, server: FastMCP, ext: MCPSkillsExtension, listing: Listing) -> TreeSkillsExtension:
        provider = TreeProvider(ext.tree)
        served = TreeSkillsExtension(ext.tree, provider, page_size=ext.page_size, cache=ext.cache)
        try:
            server.add_extension(served)
        except (ValueError, RuntimeError) as exc:
            raise AttachError(f"cannot add the skills extension to this FastMCP server: {exc}") from None
        server.add_provider(provider)
        if not any(isinstance(m, LegacyExtensionsMiddleware) for m in server.middleware):
            server.middleware.insert(0, LegacyExtensionsMiddleware(served.settings()))  # outermost: no one else sees it
        return served

    def workflow_prompt(self, wf: Workflow, replay: ReplayGuard) -> FastMCPWorkflowPrompt:
        return FastMCPWorkflowPrompt.for_workflow(wf, replay)

    def set_state_key(self, server: FastMCP, key: str) -> Callable[[], None]:
        return seal_with(server._mcp_server, key, own=server._request_state_security is not None)

    def bootstrap_prompt(self, skill: Skill) -> FastMCPBootstrapPrompt:
        return FastMCPBootstrapPrompt.for_skill(skill)

    def add_prompts(self, server: FastMCP, prompts: Sequence[Any]) -> None:
        for p in prompts:
            server.add_prompt(p)

    def add_skill_tools(self, server: FastMCP, tree: SkillTree) -> SkillTools:
        return add_skill_tools(server, tree)

    def bind(self, server: FastMCP, bound: Any, served: Any = None) -> None:
        bind_to_caller(server, bound, served)

    def add_workflow_tools(
        self, server: FastMCP, tools: Sequence[tuple[Workflow, WorkflowToolSpec]], replay: ReplayGuard
    ) -> None:
        fastmcp_refusals.install(server)  # a refused retry stays a protocol error, as on MCPServer
        for wf, spec in tools:
            server.add_tool(FastMCPWorkflowTool.for_workflow(wf, spec, replay))

    def add_tool(
        self,
        server: FastMCP,
        fn: Callable[..., Any],
        *,
        name: str,
        description: str,
        annotations: Any,
        text_only: bool = False,
        host: bool = False,
    ) -> None:
        if host:
            fn = with_host(fn, lambda kwargs: FastMCPHost(get_context()))
        server.tool(
            fn,
            name=name,
            description=description,
            annotations=annotations,
            **({"output_schema": None} if text_only else {}),
        )

    def add_resource(
        self, server: Any, uri: str, fn: Callable[..., Any], *, name: str, mime_type: str, description: str
    ) -> None:
        server.resource(uri, name=name, mime_type=mime_type, description=description)(fn)

    def make_server(self, name: str, *, version: str, instructions: str, page_size: int) -> FastMCP:
        return FastMCP(name, instructions=instructions, version=version, list_page_size=page_size)

    def run_stdio(self, server: FastMCP, max_line_bytes: int | None = None) -> None:
        server.run("stdio", show_banner=False)

    async def serve_stdio_async(self, server: FastMCP, max_line_bytes: int | None = None) -> None:
        await server.run_stdio_async(show_banner=False)

    def forwarding_server(
        self,
        name: str,
        tools: Sequence[Any],
        forward: Callable[[str, dict[str, Any]], Any],
        gone: type[Exception],
        listed: Any = None,
    ) -> FastMCP:
        from .fastmcp_forward import forwarding_server

        return forwarding_server(name, tools, forward, gone, listed)

    def in_process(self, server: FastMCP) -> Any:
        return in_process_http(server)

    async def serve_http(
        self,
        server: FastMCP,
        *,
        host: str,
        port: int,
        path: str,
        stateless: bool,
        security: Any,
        guard: Any,
        options: dict[str, Any],
    ) -> None:
        from starlette.middleware import Middleware as ASGIMiddleware

        await server.run_http_async(
            show_banner=False,
            log_level=options.get("log_level"),  # FastMCP's own logger too, for the run
            transport="http",
            host=host,
            port=port,
            path=path,
            stateless_http=stateless,
            host_origin_protection=False,
            middleware=[ASGIMiddleware(guard, settings=security)],
            uvicorn_config=options,
        )


ADAPTER = FastMCPAdapter()
