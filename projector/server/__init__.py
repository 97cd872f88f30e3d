"""Serve skills and workflows over MCP (mcp >= 2.3): one call adds them to a server author's own ``MCPServer``.

::

    from mcp.server.mcpserver import MCPServer
    from mcp_types import ToolAnnotations
    from projector.server import attach, serve_http

    server = MCPServer("greeter")

    @server.tool(description="Return a friendly greeting for a name.",
                 annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True))
    def greet(name: str) -> str:
        return f"Hello, {name}!"

    # the skills of the workflows this server runs: project-skill build workflows/hello-world.yaml --out greeter_skills
    attach(server, skills="greeter_skills", workflows=["workflows/hello-world.yaml"])
    serve_http(server, host="127.0.0.1", port=8000)  # Host/Origin allow-list and connection bound: projector.server.http

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

from .. import fit
from ..errors import Diagnostic, Span, error
from ..model import PLACEHOLDER, Workflow
from .bootstrap import BootstrapPrompt, bootstrap_name
from .errors import ServeError
from .http import serve_http, serve_http_async
from .skills import (DEFAULT_CACHE, DEFAULT_PAGE_SIZE, SKILLS_EXTENSION, SkillsExtension, SkillTree,
                     legacy_extensions_middleware)
from .skill_tools import add_to_mcpserver, check_names
from .workflow import WorkflowPrompt

__all__ = ["SKILLS_EXTENSION", "ServeError", "SkillTree", "SkillsExtension", "attach", "attach_async", "build_server",
           "bootstrap_name", "check_workflows", "load_workflows", "serve_http", "serve_http_async"]

Workflows = str | Path | Sequence[Workflow | str | Path] | None
# lead the hints of unknown-tool and unknown-resource; `project-skill serve` says them for the command line instead
ATTACH_HINT = "register it on the server before calling attach()"
ATTACH_RESOURCE_HINT = "register the resource on the server before calling attach()"


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

    # The server's own tools are the truth here: a step may call a tool its file does not list, and the steps are
    # fitted to the server's tools by check_workflows().
    if isinstance(workflows, (str, Path)):
        return load_all([str(workflows)], tools_from_server=True)
    items = list(workflows)
    paths = [str(w) for w in items if isinstance(w, (str, Path))]
    return [w for w in items if isinstance(w, Workflow)] + (load_all(paths, tools_from_server=True) if paths else [])


def check_workflows(workflows: Sequence[Workflow], tools: dict[str, Any],
                    resources: Sequence[str] = (), templates: Sequence[str] = ()) -> list[Diagnostic]:
    """Every way the steps do not fit the server. ``tools`` maps tool names to their input schemas (dicts), to
    ``mcp_types.Tool`` objects or to model :class:`~projector.model.Tool` objects (then output schemas are checked
    too). The steps are fitted to the tools by the core (:func:`projector.fit.check_workflows`), exactly as ``build``
    fits them; resources are checked here, against the server's resources and templates."""
    problems = fit.check_workflows(workflows, tools, hint=ATTACH_HINT)
    parsed = [UriTemplate.parse(t) for t in templates]
    for wf in workflows:
        for step in wf.steps:
            if step.tool is not None:
                continue
            where = step.span if step.span.line else Span(wf.source)
            for uri in step.resources:
                sample = PLACEHOLDER.sub("x", uri)
                if sample not in resources and not any(t.match(sample) is not None for t in parsed):
                    problems.append(error(where, "unknown-resource",
                                          f"workflow '{wf.name}', step '{step.name}': the server has no resource or "
                                          f"template matching '{uri}'",
                                          ATTACH_RESOURCE_HINT))
    return sorted(problems, key=Diagnostic.sort_key)


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


def _check_prompt_names(names: Sequence[str], taken: set[str], tree: SkillTree | None = None) -> None:
    """Raise :class:`ServeError` when a new prompt's name is taken, on the server or twice among ``names``, or when
    a served skill names a workflow prompt (``metadata.workflow``) that is neither on the server nor among ``names``."""
    unoffered = [] if tree is None else fit.check_prompts(
        ((f"{tree.root}/{s.path}/SKILL.md", s.name, s.entry.get("frontmatter")) for s in tree.skills),
        set(taken) | set(names))
    seen: set[str] = set()
    clashes = []
    for name in names:
        if name in taken or name in seen:
            clashes.append(error(Span("<attach>"), "prompt-collision",
                                 f"the prompt name '{name}' is taken twice (a workflow, a skill's bootstrap "
                                 f"prompt, or a prompt already on the server)", "rename the workflow"))
        seen.add(name)
    if clashes or unoffered:
        raise ServeError(clashes + unoffered)


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
                    f"(fastmcp.FastMCP, with the project-skill[fastmcp] extra), "
                    f"not {kind.__module__}.{kind.__qualname__}")


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
           bootstrap_prompts: bool = True, skill_tools: bool = False) -> Any:
    """Add the skills extension, the workflow prompts and the bootstrap prompts to ``server``: an ``mcp``
    ``MCPServer`` or a ``fastmcp.FastMCP`` (any other object is a ``TypeError``).

    ``skills``: a ``generated_skills`` folder, a loaded :class:`SkillTree`, a :class:`SkillsExtension` (for example
    the one the server was built with), or None for prompts only. ``workflows``: a folder or file of workflow YAML,
    a list of :class:`~projector.model.Workflow` (e.g. from the builder), or None. Returns the extension.

    On FastMCP, ``skills/list`` is paged by the server's own ``FastMCP(list_page_size=...)``; ``page_size`` pages
    ``resources/directory/read`` there.

    ``skill_tools=True`` also adds two read-only tools, ``load_skill(name)`` and ``read_skill_file(uri)``, serving
    the same verified bytes as ``resources/read``, for hosts that call tools but never read resources
    (:mod:`projector.server.skill_tools`). It needs ``skills``; a tool of either name already on the server is a
    :class:`ServeError` (``tool-collision``).

    It is synchronous, so it runs at import time; it also works inside a running event loop (or use
    :func:`attach_async` there). Raises :class:`ServeError` when the tree does not match its manifest, when a step
    does not fit the server's tools, when a skill names a workflow prompt (``metadata.workflow``) that the server
    will not offer (build such skills with ``project-skill build --skills-only``), or when a prompt name is already
    taken. Nothing is added to the server when it raises.
    """
    if _framework(server) == "fastmcp":
        from .fastmcp_adapter import run_sync

        return run_sync(lambda: attach_async(server, skills, workflows, page_size=page_size, cache=cache,
                                             workflow_prompts=workflow_prompts,
                                             bootstrap_prompts=bootstrap_prompts, skill_tools=skill_tools))
    ext, wfs = _prepare(skills, workflows, page_size, cache, workflow_prompts)
    listing = (_now(server.list_tools()), _now(server.list_resource_templates()), _now(server.list_resources()),
               _now(server.list_prompts()))
    return _attach_mcp(server, ext, wfs, listing, bootstrap_prompts, skill_tools)


async def attach_async(server: Any, skills: str | Path | SkillTree | SkillsExtension | None = "generated_skills",
                       workflows: Workflows = "workflows", *, page_size: int = DEFAULT_PAGE_SIZE,
                       cache: CacheHint = DEFAULT_CACHE, workflow_prompts: bool = True,
                       bootstrap_prompts: bool = True, skill_tools: bool = False) -> Any:
    """:func:`attach`, awaited: for an ``async def main()`` that builds its server before running it."""
    framework = _framework(server)
    ext, wfs = _prepare(skills, workflows, page_size, cache, workflow_prompts)
    if framework == "fastmcp":
        from .fastmcp_adapter import attach_fastmcp

        return await attach_fastmcp(server, ext.tree if ext is not None else None, wfs,
                                    page_size=ext.page_size if ext is not None else page_size,
                                    cache=ext.cache if ext is not None else cache,
                                    bootstrap_prompts=bootstrap_prompts, skill_tools=skill_tools)
    listing = (await server.list_tools(), await server.list_resource_templates(), await server.list_resources(),
               await server.list_prompts())
    return _attach_mcp(server, ext, wfs, listing, bootstrap_prompts, skill_tools)


def _attach_mcp(server: MCPServer, ext: SkillsExtension | None, wfs: list[Workflow],
                listing: tuple[Any, Any, Any, Any], bootstrap_prompts: bool,
                skill_tools: bool = False) -> SkillsExtension | None:
    listed_tools, listed_templates, listed_resources, listed_prompts = listing
    tools = {t.name: fit.from_listing(t) for t in listed_tools}
    if skill_tools:
        check_names(ext.tree if ext is not None else None, tools)
    templates = [t.uri_template for t in listed_templates]
    resources = [str(r.uri) for r in listed_resources]
    problems = check_workflows(wfs, tools, resources, templates)
    if problems:
        raise ServeError(problems)

    prompts: list[Any] = [WorkflowPrompt.for_workflow(wf) for wf in wfs]
    if ext is not None and bootstrap_prompts:
        prompts += [BootstrapPrompt.for_skill(s) for s in ext.tree.skills]
    _check_prompt_names([p.name for p in prompts], {p.name for p in listed_prompts},
                        ext.tree if ext is not None else None)

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
    if skill_tools and ext is not None:
        add_to_mcpserver(server, ext.tree)
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
