"""Serve skills and workflows over MCP (mcp >= 2.3): one call adds them to a server author's own ``MCPServer``.

::

    from mcp.server.mcpserver import MCPServer
    from mcp_types import ToolAnnotations
    from projector.server import attach

    server = MCPServer("greeter")

    @server.tool(description="Return a friendly greeting for a name.",
                 annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True))
    def greet(name: str) -> str:
        return f"Hello, {name}!"

    attach(server, skills="generated_skills", workflows=["workflows/hello-world.yaml"])
    server.run("streamable-http", host="127.0.0.1", port=8000)

:func:`attach` adds

- the SEP-2640 skills extension (:mod:`projector.server.skills`), serving the tree from its ``skills.json``;
- one server-accelerated prompt per workflow, under the workflow's raw name (:mod:`projector.server.workflow`);
- one bootstrap prompt per skill, ``skill.<path>`` (:mod:`projector.server.bootstrap`).

Call it after the tools are registered: it checks, before anything is served, that every step's tool exists and that
its input schema accepts the step's arguments, and raises :class:`~projector.server.errors.ServeError` naming the
workflow, the step and the tool otherwise.

MCPServer takes extensions only at construction; its one entry point for adding one later is private. So
:func:`attach` registers the extension through ``MCPServer._apply_extension`` (the method the constructor itself
uses), unless the server was already built with it: ``MCPServer("shop", extensions=[ext])`` followed by
``attach(server, skills=ext, ...)`` uses public API only. :func:`build_server` does the latter in one call.
"""

from __future__ import annotations

import sys
from collections.abc import Coroutine, Sequence
from pathlib import Path
from typing import Any

from mcp.server.caching import CacheHint
from mcp.server.mcpserver import MCPServer
from mcp.shared.uri_template import UriTemplate

from ..errors import Diagnostic, Span, error
from ..model import PLACEHOLDER, Const, FromArg, Workflow
from .bootstrap import BootstrapPrompt, bootstrap_name
from .errors import ServeError
from .skills import (DEFAULT_CACHE, DEFAULT_PAGE_SIZE, SKILLS_EXTENSION, SkillsExtension, SkillTree,
                     legacy_extensions_middleware)
from .workflow import WorkflowPrompt

__all__ = ["SKILLS_EXTENSION", "ServeError", "SkillTree", "SkillsExtension", "attach", "attach_async", "build_server",
           "bootstrap_name", "check_workflows", "load_workflows"]

Workflows = str | Path | Sequence[Workflow | str | Path] | None


def _now(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run one of MCPServer's ``list_*`` coroutines, which never suspend, from synchronous code.

    ``attach`` is synchronous so that it can run at import time, before any event loop exists, and inside one.
    """
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise ServeError("MCPServer listing suspended unexpectedly; call attach() before the server starts")


def load_workflows(workflows: Workflows) -> list[Workflow]:
    """A folder or file of workflow YAML, workflows built in code (``projector.builder``), or a list mixing
    both, as a list of workflows."""
    if workflows is None:
        return []
    from ..load import load_all

    if isinstance(workflows, (str, Path)):
        return load_all([str(workflows)])
    items = list(workflows)
    paths = [str(w) for w in items if isinstance(w, (str, Path))]
    return [w for w in items if isinstance(w, Workflow)] + (load_all(paths) if paths else [])


_JSON_TYPES = {"string": {"string"}, "integer": {"integer", "number"}, "number": {"number"},
               "boolean": {"boolean"}}


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    return "array" if isinstance(value, list) else "object"


def _accepts(prop: Any, kinds: set[str]) -> bool:
    """Whether a property schema's ``type`` admits any of ``kinds`` (no ``type`` admits everything)."""
    if not isinstance(prop, dict) or "type" not in prop:
        return True
    declared = prop["type"] if isinstance(prop["type"], list) else [prop["type"]]
    if "number" in declared:
        declared = [*declared, "integer"]
    return bool(kinds & set(declared))


def check_workflows(workflows: Sequence[Workflow], tools: dict[str, dict[str, Any]],
                    resources: Sequence[str] = (), templates: Sequence[str] = ()) -> list[Diagnostic]:
    """Every way the steps do not fit the server: ``tools`` maps tool names to their input schemas."""
    problems: list[Diagnostic] = []
    parsed = [UriTemplate.parse(t) for t in templates]
    for wf in workflows:
        for step in wf.steps:
            where = step.span if step.span.line else Span(wf.source)
            label = f"workflow '{wf.name}', step '{step.name}'"
            if step.tool is None:
                for uri in step.resources:
                    sample = PLACEHOLDER.sub("x", uri)
                    if sample not in resources and not any(t.match(sample) is not None for t in parsed):
                        problems.append(error(where, "unknown-resource",
                                              f"{label}: the server has no resource or template matching '{uri}'",
                                              "register the resource on the server before calling attach()"))
                continue
            if step.tool not in tools:
                known = ", ".join(sorted(tools)) or "none"
                problems.append(error(where, "unknown-tool", f"{label}: the server has no tool '{step.tool}'",
                                      f"register it before calling attach(); the server's tools: {known}"))
                continue
            schema = tools[step.tool] or {}
            props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
            closed = bool(props) and schema.get("additionalProperties", False) is False
            for name, source in step.args:
                if closed and name not in props:
                    problems.append(error(where, "unknown-parameter",
                                          f"{label}, tool '{step.tool}': the tool's input schema has no parameter "
                                          f"'{name}'", f"its parameters: {', '.join(sorted(props))}"))
                    continue
                prop = props.get(name)
                if isinstance(source, Const) and not (isinstance(source.value, str) and source.placeholders):
                    kinds = {_json_type(source.value)}
                elif isinstance(source, (Const, FromArg)):
                    arg = wf.argument(source.name) if isinstance(source, FromArg) else None
                    kinds = _JSON_TYPES.get(arg.type or "string", {"string"}) if arg else {"string"}
                else:
                    continue  # a step result: its type is known only when the step has run
                if not _accepts(prop, kinds):
                    problems.append(error(where, "parameter-type",
                                          f"{label}, tool '{step.tool}': parameter '{name}' takes "
                                          f"{prop['type']}, but the step gives {'/'.join(sorted(kinds))}"))
            for name in schema.get("required") or ():
                if name not in step.args_dict:
                    problems.append(error(where, "missing-parameter",
                                          f"{label}, tool '{step.tool}': the required parameter '{name}' is not "
                                          f"given by the step"))
    return problems


def _has_extension(server: MCPServer, ext: SkillsExtension) -> bool:
    return any(e is ext for e in getattr(server, "_extensions", ()))


def _register_extension(server: MCPServer, ext: SkillsExtension) -> None:
    if _has_extension(server, ext):
        return
    if any(getattr(e, "identifier", None) == SKILLS_EXTENSION for e in getattr(server, "_extensions", ())):
        raise ServeError("this server already has a different skills extension; pass that one as attach(skills=...)")
    apply = getattr(server, "_apply_extension", None)
    if apply is None:  # pragma: no cover - a future mcp without the private hook
        raise ServeError("this mcp version cannot add an extension to a built server; build it with "
                         "MCPServer(..., extensions=[SkillsExtension(dir)]) and pass that extension to attach()")
    apply(ext)


def _check_prompt_names(names: Sequence[str], taken: set[str]) -> None:
    """Raise :class:`ServeError` when a new prompt's name is taken, on the server or twice among ``names``."""
    seen: set[str] = set()
    clashes = []
    for name in names:
        if name in taken or name in seen:
            clashes.append(error(Span("<attach>"), "prompt-collision",
                                 f"the prompt name '{name}' is taken twice (a workflow, a skill's bootstrap "
                                 f"prompt, or a prompt already on the server)", "rename the workflow"))
        seen.add(name)
    if clashes:
        raise ServeError(clashes)


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


def _framework(server: Any) -> str:
    """``"mcp"`` for mcp's MCPServer, ``"fastmcp"`` for a fastmcp.FastMCP; a TypeError for anything else."""
    if isinstance(server, MCPServer):
        return "mcp"
    fastmcp = sys.modules.get("fastmcp")  # a FastMCP instance exists only once fastmcp is imported
    if fastmcp is not None and isinstance(server, getattr(fastmcp, "FastMCP", ())):
        return "fastmcp"
    kind = type(server)
    raise TypeError(f"attach() takes an mcp MCPServer (mcp.server.mcpserver.MCPServer) or a FastMCP server "
                    f"(fastmcp.FastMCP, with the projector[fastmcp] extra), not {kind.__module__}.{kind.__qualname__}")


def _prepare(skills: Any, workflows: Workflows, page_size: int, cache: CacheHint,
             workflow_prompts: bool) -> tuple[SkillsExtension | None, list[Workflow]]:
    ext: SkillsExtension | None
    if skills is None or isinstance(skills, SkillsExtension):
        ext = skills
    else:
        ext = SkillsExtension(skills, page_size=page_size, cache=cache)
    return ext, (load_workflows(workflows) if workflow_prompts else [])


def attach(server: Any, skills: str | Path | SkillTree | SkillsExtension | None = "generated_skills",
           workflows: Workflows = "workflows", *, page_size: int = DEFAULT_PAGE_SIZE,
           cache: CacheHint = DEFAULT_CACHE, workflow_prompts: bool = True,
           bootstrap_prompts: bool = True) -> Any:
    """Add the skills extension, the workflow prompts and the bootstrap prompts to ``server``: an ``mcp``
    ``MCPServer`` or a ``fastmcp.FastMCP`` (any other object is a ``TypeError``).

    ``skills``: a ``generated_skills`` folder, a loaded :class:`SkillTree`, a :class:`SkillsExtension` (for example
    the one the server was built with), or None for prompts only. ``workflows``: a folder or file of workflow YAML,
    a list of :class:`~projector.model.Workflow` (e.g. from the builder), or None. Returns the extension.

    On FastMCP, ``skills/list`` is paged by the server's own ``FastMCP(list_page_size=...)``; ``page_size`` pages
    ``resources/directory/read`` there.

    It is synchronous, so it runs at import time; it also works inside a running event loop (or use
    :func:`attach_async` there). Raises :class:`ServeError` when the tree does not match its manifest, when a step
    does not fit the server's tools, or when a prompt name is already taken. Nothing is added to the server when it
    raises.
    """
    if _framework(server) == "fastmcp":
        from .fastmcp_adapter import run_sync

        return run_sync(lambda: attach_async(server, skills, workflows, page_size=page_size, cache=cache,
                                             workflow_prompts=workflow_prompts,
                                             bootstrap_prompts=bootstrap_prompts))
    ext, wfs = _prepare(skills, workflows, page_size, cache, workflow_prompts)
    listing = (_now(server.list_tools()), _now(server.list_resource_templates()), _now(server.list_resources()),
               _now(server.list_prompts()))
    return _attach_mcp(server, ext, wfs, listing, bootstrap_prompts)


async def attach_async(server: Any, skills: str | Path | SkillTree | SkillsExtension | None = "generated_skills",
                       workflows: Workflows = "workflows", *, page_size: int = DEFAULT_PAGE_SIZE,
                       cache: CacheHint = DEFAULT_CACHE, workflow_prompts: bool = True,
                       bootstrap_prompts: bool = True) -> Any:
    """:func:`attach`, awaited: for an ``async def main()`` that builds its server before running it."""
    framework = _framework(server)
    ext, wfs = _prepare(skills, workflows, page_size, cache, workflow_prompts)
    if framework == "fastmcp":
        from .fastmcp_adapter import attach_fastmcp

        return await attach_fastmcp(server, ext.tree if ext is not None else None, wfs,
                                    page_size=ext.page_size if ext is not None else page_size,
                                    cache=ext.cache if ext is not None else cache,
                                    bootstrap_prompts=bootstrap_prompts)
    listing = (await server.list_tools(), await server.list_resource_templates(), await server.list_resources(),
               await server.list_prompts())
    return _attach_mcp(server, ext, wfs, listing, bootstrap_prompts)


def _attach_mcp(server: MCPServer, ext: SkillsExtension | None, wfs: list[Workflow],
                listing: tuple[Any, Any, Any, Any], bootstrap_prompts: bool) -> SkillsExtension | None:
    listed_tools, listed_templates, listed_resources, listed_prompts = listing
    tools = {t.name: t.input_schema for t in listed_tools}
    templates = [t.uri_template for t in listed_templates]
    resources = [str(r.uri) for r in listed_resources]
    problems = check_workflows(wfs, tools, resources, templates)
    if problems:
        raise ServeError(problems)

    prompts: list[Any] = [WorkflowPrompt.for_workflow(wf) for wf in wfs]
    if ext is not None and bootstrap_prompts:
        prompts += [BootstrapPrompt.for_skill(s) for s in ext.tree.skills]
    _check_prompt_names([p.name for p in prompts], {p.name for p in listed_prompts})

    if ext is not None:
        _register_extension(server, ext)
        for uri_template, name, mime, fn in ext.templates():
            if uri_template not in templates:
                server.resource(uri_template, name=name, mime_type=mime,
                                description="A supporting file of a served skill: listed in skills/list, "
                                            "read here, not in resources/list.")(fn)
        if not any(getattr(m, "projector_legacy_extension", None) == SKILLS_EXTENSION for m in server.middleware):
            server.middleware.append(legacy_extensions_middleware(SKILLS_EXTENSION, ext.settings()))
    if not any(getattr(m, "projector_unknown_prompt", False) for m in server.middleware):
        server.middleware.append(unknown_prompt_middleware(server))
    for p in prompts:
        server.add_prompt(p)
    return ext


def build_server(name: str = "projector", skills: str | Path | SkillTree = "generated_skills",
                 workflows: Workflows = "workflows", *, tools: Sequence[Any] = (), page_size: int = DEFAULT_PAGE_SIZE,
                 cache: CacheHint = DEFAULT_CACHE, **server_kwargs: Any) -> MCPServer:
    """An MCPServer built with the skills extension (public API only), with ``tools`` (functions) and then
    :func:`attach`'s prompts added. For more control build the server yourself and call :func:`attach`."""
    ext = SkillsExtension(skills, page_size=page_size, cache=cache)
    server: MCPServer = MCPServer(name, extensions=[ext], **server_kwargs)
    for fn in tools:
        server.add_tool(fn)
    attach(server, ext, workflows)
    return server
