"""mcp's ``MCPServer`` (mcp >= 2.3) as a framework projector serves on: the adapter, and the package's default.

What :func:`projector.server.attach` adds here:

- the SEP-2640 skills extension (:class:`projector.server.skills.SkillsExtension`), its resource templates for the
  supporting files, and a middleware that shows the extension to handshake-era clients;
- a :class:`WorkflowPrompt` per workflow, run by the one runner (:func:`projector.server.workflow.run_workflow`)
  through :class:`MCPServerHost`;
- a :class:`BootstrapPrompt` per skill (:mod:`projector.server.bootstrap`);
- with ``skill_tools=True``, ``load_skill`` and ``read_skill_file`` (:mod:`projector.server.skill_tools`);
- a middleware that answers ``prompts/get`` for an unknown name with -32602.

MCPServer takes extensions only at construction; its one entry point for adding one later is private. So the
extension is registered through ``MCPServer._apply_extension`` (the method the constructor itself uses), unless the
server was already built with it: ``MCPServer("shop", extensions=[ext])`` followed by ``attach(server, skills=ext,
...)`` uses public API only. :func:`build_server` does the latter in one call.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

from mcp.server.caching import CacheHint
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError as MCPToolError
from mcp.server.mcpserver.prompts.base import AssistantMessage, Message, Prompt, PromptArgument, UserMessage
from mcp.server.mcpserver.tools.base import Tool as MCPServerTool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp_types import CallToolResult, TextContent

from ...model import Workflow
from .. import bootstrap, confirm
from ..errors import AttachError
from ..replay import ReplayGuard
from ..skill_tools import SkillTools, add_to_mcpserver
from ..skills import (
    DEFAULT_CACHE,
    DEFAULT_PAGE_SIZE,
    SKILLS_EXTENSION,
    Skill,
    SkillsExtension,
    SkillTree,
    legacy_extensions_middleware,
)
from ..workflow import ToolSpec, Turn, WorkflowHost, prompt_spec, run_workflow
from ..workflow_tool import BadArguments, WorkflowToolSpec, call_workflow
from .base import Adapter, Listing, seal_with, with_host

T = TypeVar("T")


class MCPServerHost(WorkflowHost):
    """The runner on ``mcp``'s MCPServer, through the request's :class:`~mcp.server.mcpserver.Context`."""

    def __init__(self, ctx: Context):
        self.ctx = ctx

    async def tools(self) -> dict[str, ToolSpec]:
        return {t.name: ToolSpec(t.input_schema, t.output_schema) for t in await self.ctx.mcp_server.list_tools()}

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        return await self.ctx.mcp_server.call_tool(name, arguments, self.ctx)

    async def read_resource(self, uri: str) -> Sequence[Any]:
        return list(await self.ctx.read_resource(uri))

    async def report_progress(self, progress: float, total: float, message: str) -> None:
        await self.ctx.report_progress(progress, total, message)


def messages(turns: Sequence[Turn]) -> list[Message]:
    return [UserMessage(t.text) if t.role == "user" else AssistantMessage(t.text) for t in turns]


class WorkflowPrompt(Prompt):
    """A workflow as an MCP prompt that runs on the server (:mod:`projector.server.workflow`)."""

    workflow: Any = None
    replay: Any = None  # the ReplayGuard where a yes is claimed (projector.server.replay)

    @classmethod
    def for_workflow(cls, wf: Workflow, replay: ReplayGuard | None = None) -> WorkflowPrompt:
        spec = prompt_spec(wf)
        args = [PromptArgument(name=a.name, required=a.required, description=a.description) for a in spec.arguments]
        return cls(
            name=spec.name,
            title=spec.title,
            description=spec.description,
            arguments=args,
            fn=_unused,
            workflow=wf,
            replay=replay,
        )

    async def render(self, arguments: dict[str, Any] | None, context: Context) -> Any:  # type: ignore[override]
        rnd = confirm.Round.of(
            can_ask=confirm.can_elicit(context.client_capabilities, context.protocol_version),
            state=context.request_state,
            responses=context.input_responses,
            guard=self.replay,
        )
        result = await run_workflow(self.workflow, arguments or {}, MCPServerHost(context), rnd)
        return confirm.input_required(result) if isinstance(result, confirm.Asking) else messages(result)


def _round(context: Context, replay: ReplayGuard | None) -> confirm.Round:
    return confirm.Round.of(
        can_ask=confirm.can_elicit(context.client_capabilities, context.protocol_version),
        state=context.request_state,
        responses=context.input_responses,
        guard=replay,
    )


class WorkflowTool(MCPServerTool):
    """A workflow as a tool that runs on the server (:mod:`projector.server.workflow_tool`): its input schema is the
    workflow's arguments (checked by the runner, not by a function signature), its output schema the saved results."""

    workflow: Any = None
    replay: Any = None  # the ReplayGuard where a yes is claimed (projector.server.replay)

    @classmethod
    def for_workflow(cls, wf: Workflow, spec: WorkflowToolSpec, replay: ReplayGuard) -> WorkflowTool:
        return cls(
            fn=_unused,
            name=spec.name,
            title=spec.title,
            description=spec.description,
            parameters=spec.input_schema,
            is_async=True,
            annotations=spec.annotations,
            workflow=wf,
            fn_metadata=FuncMetadata(arg_model=ArgModelBase, output_schema=spec.output_schema),
            replay=replay,
        )

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        try:
            outcome = await call_workflow(
                self.workflow, arguments, MCPServerHost(context), _round(context, self.replay)
            )
        except BadArguments as exc:
            raise MCPToolError(str(exc)) from None
        if isinstance(outcome, confirm.Asking):
            return confirm.input_required(outcome)
        return CallToolResult(
            content=[TextContent(type="text", text=t) for t in outcome.texts()], structured_content=outcome.structured()
        )


class BootstrapPrompt(Prompt):
    """One skill, inlined into a user message (:mod:`projector.server.bootstrap`)."""

    skill: Any = None

    @classmethod
    def for_skill(cls, skill: Skill) -> BootstrapPrompt:
        return cls(
            name=bootstrap.bootstrap_name(skill),
            fn=_unused,
            arguments=[],
            skill=skill,
            title=bootstrap.title(skill),
            description=bootstrap.description(skill),
        )

    async def render(self, arguments: dict[str, Any] | None, context: Any) -> list[Message]:  # type: ignore[override]
        bootstrap.refuse_arguments(self.name, arguments)
        return [UserMessage(bootstrap.render(self.skill))]


def _unused() -> str:  # pragma: no cover - the prompts' render never calls fn
    raise AssertionError("unreachable")


def unknown_prompt_middleware(server: MCPServer) -> Any:
    """Answer ``prompts/get`` for a name the server does not list with -32602 (Invalid params).

    mcp 2.3 turns its own "Unknown prompt" ValueError into error code 0 in memory and -32603 over HTTP; the name is
    a parameter the client got wrong, so the answer is -32602, as for an unknown skill. Anything else goes through.
    """

    async def middleware(ctx: Any, call_next: Any) -> Any:
        params = ctx.params if ctx.method == "prompts/get" and ctx.request_id is not None else None
        name = params.get("name") if isinstance(params, dict) else None
        if isinstance(name, str) and name not in {p.name for p in await server.list_prompts()}:
            from mcp.shared.exceptions import MCPError
            from mcp_types import INVALID_PARAMS

            raise MCPError(code=INVALID_PARAMS, message=f"Unknown prompt: {name}", data={"name": name})
        return await call_next(ctx)

    middleware.projector_unknown_prompt = True  # type: ignore[attr-defined]
    return middleware


def run_now(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine that never suspends (MCPServer's ``list_*``, and ``attach_async`` on an MCPServer) from
    synchronous code. ``attach`` is synchronous so that it can run at import time, before any event loop exists,
    and inside one."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coro.close()
    raise AttachError("MCPServer listing suspended unexpectedly; call attach() before the server starts")


def _register_extension(server: MCPServer, ext: SkillsExtension) -> None:
    extensions = getattr(server, "_extensions", ())
    if any(e is ext for e in extensions):
        return
    if any(getattr(e, "identifier", None) == SKILLS_EXTENSION for e in extensions):
        raise AttachError("this server already has a different skills extension; pass that one as attach(skills=...)")
    apply = getattr(server, "_apply_extension", None)
    if apply is None:  # pragma: no cover - a future mcp without the private hook
        raise AttachError(
            "this mcp version cannot add an extension to a built server; build it with "
            "MCPServer(..., extensions=[SkillsExtension(dir)]) and pass that extension to attach()"
        )
    apply(ext)


_CTX = "projector_ctx"


class MCPAdapter(Adapter):
    """mcp's MCPServer."""

    name = "mcp"
    tasks_module = "projector.server.adapters.mcp_tasks"
    tool_error = MCPToolError

    def recognises(self, obj: Any) -> bool:
        return isinstance(obj, MCPServer)

    def run_sync(self, fn: Callable[[], Awaitable[T]]) -> T:
        return run_now(fn())  # type: ignore[arg-type]

    async def listing(self, server: MCPServer) -> Listing:
        from ... import fit

        return Listing(
            tools={t.name: fit.from_listing(t) for t in await server.list_tools()},
            templates=[t.uri_template for t in await server.list_resource_templates()],
            resources=[str(r.uri) for r in await server.list_resources()],
            prompts={p.name for p in await server.list_prompts()},
        )

    def add_extension(self, server: MCPServer, ext: SkillsExtension, listing: Listing) -> SkillsExtension:
        _register_extension(server, ext)
        for uri_template, name, mime, fn in ext.templates():
            if uri_template not in listing.templates:
                server.resource(
                    uri_template,
                    name=name,
                    mime_type=mime,
                    description="A supporting file of a served skill: listed in skills/list, "
                    "read here, not in resources/list.",
                )(fn)
        if not any(getattr(m, "projector_legacy_extension", None) == SKILLS_EXTENSION for m in server.middleware):
            server.middleware.append(legacy_extensions_middleware(SKILLS_EXTENSION, ext.settings()))
        return ext

    def workflow_prompt(self, wf: Workflow, replay: ReplayGuard) -> WorkflowPrompt:
        return WorkflowPrompt.for_workflow(wf, replay)

    def set_state_key(self, server: MCPServer, key: str) -> Callable[[], None]:
        return seal_with(server._lowlevel_server, key)  # MCPServer does not record whether a policy was given

    def bootstrap_prompt(self, skill: Skill) -> BootstrapPrompt:
        return BootstrapPrompt.for_skill(skill)

    def add_prompts(self, server: MCPServer, prompts: Sequence[Any]) -> None:
        if not any(getattr(m, "projector_unknown_prompt", False) for m in server.middleware):
            server.middleware.append(unknown_prompt_middleware(server))
        for p in prompts:
            server.add_prompt(p)

    def add_skill_tools(self, server: MCPServer, tree: SkillTree) -> SkillTools:
        return add_to_mcpserver(server, tree)

    def bind(self, server: MCPServer, bound: Any, served: Any = None) -> None:
        from .mcp_bound import bind

        bind(server, bound)

    def add_workflow_tools(
        self, server: MCPServer, tools: Sequence[tuple[Workflow, WorkflowToolSpec]], replay: ReplayGuard
    ) -> None:
        # MCPServer adds tools from functions only, and a function's signature cannot carry a workflow's arguments
        # (any name, a schema of their own), so the tool object is put in the server's tool manager, where
        # add_tool() puts the ones it makes.
        for wf, spec in tools:
            server._tool_manager._tools[spec.name] = WorkflowTool.for_workflow(wf, spec, replay)

    def add_tool(
        self,
        server: MCPServer,
        fn: Callable[..., Any],
        *,
        name: str,
        description: str,
        annotations: Any,
        text_only: bool = False,
        host: bool = False,
    ) -> None:
        if host:
            ctx = inspect.Parameter(_CTX, inspect.Parameter.KEYWORD_ONLY, annotation=Context)
            fn = with_host(fn, lambda kwargs: MCPServerHost(kwargs.pop(_CTX)), [ctx])
        server.add_tool(
            fn,
            name=name,
            description=description,
            annotations=annotations,
            **({"structured_output": False} if text_only else {}),
        )

    def add_resource(
        self, server: Any, uri: str, fn: Callable[..., Any], *, name: str, mime_type: str, description: str
    ) -> None:
        server.resource(uri, name=name, mime_type=mime_type, description=description)(fn)

    def make_server(self, name: str, *, version: str, instructions: str, page_size: int) -> MCPServer:
        return MCPServer(name, version=version, instructions=instructions)

    def run_stdio(self, server: MCPServer, max_line_bytes: int | None = None) -> None:
        import anyio

        from ..stdio import serve_stdio

        if max_line_bytes is None:
            anyio.run(serve_stdio, server)
        else:
            anyio.run(serve_stdio, server, max_line_bytes)

    async def serve_stdio_async(self, server: MCPServer, max_line_bytes: int | None = None) -> None:
        from ..stdio import serve_stdio

        await (serve_stdio(server) if max_line_bytes is None else serve_stdio(server, max_line_bytes))

    def forwarding_server(
        self,
        name: str,
        tools: Sequence[Any],
        forward: Callable[[str, dict[str, Any]], Any],
        gone: type[Exception],
        listed: Any = None,
    ) -> MCPServer:
        """An ``MCPServer`` built with one forwarding tool per upstream tool (its ``tools=`` argument: public API),
        whose ``tools/list`` shows them as ``listed`` (:class:`~projector.server.forwarded.Forwarded`) has them, and
        whose ``subscriptions/listen`` streams hear of each change."""
        from mcp.server.mcpserver import MCPServer
        from mcp.server.subscriptions import InMemorySubscriptionBus, PromptsListChanged, ResourcesListChanged
        from mcp.server.subscriptions import ToolsListChanged
        from mcp.server.mcpserver.exceptions import ToolError
        from mcp.server.mcpserver.tools.base import Tool
        from mcp.server.mcpserver.utilities.func_metadata import func_metadata

        def _forwarded() -> None:  # pragma: no cover - the tool's run never calls it
            """Stands for the upstream tool: its arguments are checked upstream, against its own schema."""

        class ForwardingTool(Tool):
            upstream_output_schema: dict[str, Any] | None = None

            @property
            def output_schema(self) -> dict[str, Any] | None:  # type: ignore[override]
                return self.upstream_output_schema

            async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
                try:
                    return await forward(self.name, arguments)
                except gone as exc:
                    raise ToolError(str(exc)) from None

        made = [
            ForwardingTool(
                fn=_forwarded,
                name=t.name,
                title=t.title,
                description=t.description or "",
                parameters=t.input_schema,
                fn_metadata=func_metadata(_forwarded),
                is_async=True,
                annotations=t.annotations,
                icons=t.icons,
                meta=t.meta,
                upstream_output_schema=t.output_schema,
            )
            for t in tools
        ]
        bus = InMemorySubscriptionBus()
        server = MCPServer(name, tools=made, subscriptions=bus)
        if listed is not None:
            server.middleware.append(listed.middleware())

            async def publish() -> None:
                for event in (ToolsListChanged(), PromptsListChanged(), ResourcesListChanged()):
                    await bus.publish(event)

            listed.publisher(publish)
        return server

    def in_process(self, server: MCPServer) -> MCPServer:
        return server  # mcp.Client connects to an MCPServer in process

    async def serve_http(
        self,
        server: MCPServer,
        *,
        host: str,
        port: int,
        path: str,
        stateless: bool,
        security: Any,
        guard: Any,
        options: dict[str, Any],
    ) -> None:
        import uvicorn

        app = server.streamable_http_app(
            streamable_http_path=path, stateless_http=stateless, transport_security=security, host=host
        )
        config = uvicorn.Config(
            guard(app, security), host=host, port=port, **{"log_level": server.settings.log_level.lower(), **options}
        )
        await uvicorn.Server(config).serve()


ADAPTER = MCPAdapter()


def build_server(
    name: str = "projector",
    skills: str | Path | SkillTree = "generated_skills",
    workflows: Any = "workflows",
    *,
    tools: Sequence[Any] = (),
    page_size: int = DEFAULT_PAGE_SIZE,
    cache: CacheHint = DEFAULT_CACHE,
    **server_kwargs: Any,
) -> MCPServer:
    """An MCPServer built with the skills extension (public API only), with ``tools`` (functions) and then
    :func:`projector.server.attach`'s prompts added. For more control build the server yourself and call
    :func:`~projector.server.attach`."""
    from ..attaching import attach

    ext = SkillsExtension(skills, page_size=page_size, cache=cache)
    server: MCPServer = MCPServer(name, extensions=[ext], **server_kwargs)
    for fn in tools:
        server.add_tool(fn)
    attach(server, ext, workflows)
    return server
