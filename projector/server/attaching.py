"""``attach()``: the one algorithm that adds the skills, the workflow prompts and the bootstrap prompts to a server.

It runs on every framework through the adapter interface (:class:`projector.server.adapters.base.Adapter`): list
what the server has; check, before anything is added, that every step fits the server's tools and resources
(:func:`check_served_workflows`, the core's :mod:`projector.fit` plus the resources), that the skill tools and the
prompt names are free, and that every workflow prompt a skill names is offered; then register the extension, the
prompts and the tools. Nothing is added to the server when it raises.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from mcp.server.caching import CacheHint
from mcp.shared.uri_template import UriTemplate

from .. import fit, gates
from ..errors import Diagnostic, Span, error
from ..model import PLACEHOLDER, Workflow
from . import adapters
from .adapters.base import Adapter, Listing, OwnStatePolicy
from .bound import Bound, nothing
from .errors import AttachError, serve_error
from .refit import Refit, as_served
from .replay import REPLAY_DB_ENV, ReplayGuard, from_env
from .skill_tools import TOOL_NAMES, check_names
from .skills import DEFAULT_CACHE, DEFAULT_PAGE_SIZE, SkillsExtension, SkillTree

Workflows = str | Path | Sequence[Workflow | str | Path] | None
Skills = str | Path | SkillTree | SkillsExtension | None
# lead the hints of unknown-tool and unknown-resource; `project-skill serve` says them for the command line instead
STATE_KEY_ENV = "PROJECT_SKILL_STATE_KEY"
ATTACH_HINT = "register it on the server before calling attach()"
ATTACH_RESOURCE_HINT = "register the resource on the server before calling attach()"


def load_workflows(workflows: Workflows) -> list[Workflow]:
    """A folder or file of workflow YAML, workflows built in code (``projector.builder``), or a list mixing
    both, as a list of workflows."""
    if workflows is None:
        return []
    from ..load import load_all

    # The server's own tools are the truth here: a step may call a tool its file does not list, and the steps are
    # fitted to the server's tools by check_served_workflows().
    if isinstance(workflows, (str, Path)):
        return load_all([str(workflows)], tools_from_server=True)
    items = list(workflows)
    paths = [str(w) for w in items if isinstance(w, (str, Path))]
    return [w for w in items if isinstance(w, Workflow)] + (load_all(paths, tools_from_server=True) if paths else [])


def _unknown_resources(wf: Workflow, resources: Sequence[str], parsed: Sequence[UriTemplate]) -> list[Diagnostic]:
    problems = []
    for step in wf.steps:
        if step.tool is not None:
            continue
        where = step.span if step.span.line else Span(wf.source)
        for uri in step.resources:
            sample = PLACEHOLDER.sub("x", uri)
            if sample not in resources and not any(t.match(sample) is not None for t in parsed):
                problems.append(
                    error(
                        where,
                        "unknown-resource",
                        f"workflow '{wf.name}', step '{step.name}': the server has no resource or "
                        f"template matching '{uri}'",
                        ATTACH_RESOURCE_HINT,
                    )
                )
    return problems


def check_served_workflows(
    workflows: Sequence[Workflow], tools: dict[str, Any], resources: Sequence[str] = (), templates: Sequence[str] = ()
) -> list[Diagnostic]:
    """Every way the steps do not fit the server. ``tools`` maps tool names to their input schemas (dicts), to
    ``mcp_types.Tool`` objects or to model :class:`~projector.model.Tool` objects (then output schemas are checked
    too). The steps are fitted to the tools by the core (:func:`projector.fit.check_workflows`), exactly as ``build``
    fits them; resources are checked here, against the server's resources and templates. A condition that the
    tool's result can never decide, on a step that changes the world, is refused too
    (:func:`projector.gates.refused_on_server`, ``dead-condition``) unless the step acknowledges it."""
    problems = fit.check_workflows(workflows, tools, hint=ATTACH_HINT)
    parsed = [UriTemplate.parse(t) for t in templates]
    for wf in workflows:
        problems += _unknown_resources(wf, resources, parsed)
        problems += gates.refused_on_server(as_served(wf, tools))
    return sorted(problems, key=Diagnostic.sort_key)


def _check_prompt_names(names: Sequence[str], taken: set[str], tree: SkillTree | None = None) -> None:
    """Raise :class:`AttachError` when a new prompt's name is taken, on the server or twice among ``names``, or when
    a served skill names a workflow prompt (``metadata.workflow``) that is neither on the server nor among ``names``."""
    unoffered = (
        []
        if tree is None
        else fit.check_prompts(
            ((f"{tree.root}/{s.path}/SKILL.md", s.name, s.entry.get("frontmatter")) for s in tree.skills),
            set(taken) | set(names),
        )
    )
    seen: set[str] = set()
    clashes = []
    for name in names:
        if name in taken or name in seen:
            clashes.append(
                error(
                    Span("<attach>"),
                    "prompt-collision",
                    f"the prompt name '{name}' is taken twice (a workflow, a skill's bootstrap "
                    f"prompt, or a prompt already on the server)",
                    "rename the workflow",
                )
            )
        seen.add(name)
    if clashes or unoffered:
        raise AttachError(clashes + unoffered)


def _extension(skills: Skills, page_size: int, cache: CacheHint) -> SkillsExtension | None:
    if skills is None or isinstance(skills, SkillsExtension):
        return skills
    return SkillsExtension(skills, page_size=page_size, cache=cache)


def _prompts(
    adapter: Adapter,
    wfs: Sequence[Workflow],
    tree: SkillTree | None,
    bootstrap_prompts: bool,
    guard: ReplayGuard | None,
) -> list[Any]:
    prompts = [adapter.workflow_prompt(wf, guard) for wf in wfs] if guard is not None else []
    if tree is not None and bootstrap_prompts:
        prompts += [adapter.bootstrap_prompt(s) for s in tree.skills]
    return prompts


def _check(listing: Listing, wfs: Sequence[Workflow], tree: SkillTree | None, skill_tools: bool) -> None:
    if skill_tools:
        check_names(tree, listing.tools)
    problems = check_served_workflows(wfs, listing.tools, listing.resources, listing.templates)
    if problems:
        raise AttachError(problems)


def _seal_with(adapter: Adapter, server: Any, key: str) -> Callable[[], None]:
    """How to seal under ``key`` (checked now, applied by the caller once every check has passed)."""
    try:
        return adapter.set_state_key(server, key)
    except (ValueError, TypeError) as exc:
        raise AttachError(
            error(
                Span("<attach>"),
                "bad-state-key",
                f"cannot seal requestState under the given key "
                f"(state_key, or ${STATE_KEY_ENV}): {str(exc).split('. Generate')[0]}",
                'generate one with: python -c "import secrets; print(secrets.token_hex(32))"',
            )
        ) from None
    except OwnStatePolicy:
        raise AttachError(
            error(
                Span("<attach>"),
                "own-state-policy",
                "the server seals requestState under a policy "
                "of its own (request_state_security=, with its own keys, expiry, audience, codec or "
                f"principal binding), which does not take the given key (state_key, or "
                f"${STATE_KEY_ENV}); projector keeps the server's policy and will not replace it",
                f"leave the key out (unset ${STATE_KEY_ENV}), or put it in the server's own policy: "
                "RequestStateSecurity(keys=[key, ...], ...)",
            )
        ) from None


def _check_replay(key: str | None, wfs: Sequence[Workflow], guard: ReplayGuard) -> None:
    """A state key makes a paused run's state valid in every process that holds the key, and after a restart; its
    confirmations' yes must then be claimed where all those processes see it, or a replay runs the step again."""
    if key is None or guard.shared or not any(step.confirm for wf in wfs for step in wf.steps):
        return
    raise AttachError(
        error(
            Span("<attach>"),
            "replay-not-shared",
            f"a state key (state_key, or ${STATE_KEY_ENV}) "
            "makes a confirmation's state valid in every process that holds the key and after a "
            "restart, but its yes would be claimed only in this process's memory: the same yes, "
            "sent again to another process or after a restart, would run its step again",
            f"set ${REPLAY_DB_ENV} to one SQLite file that every process with this key shares (or "
            "pass attach(..., replay=SqliteGuard(path)))",
        )
    )


def attach(
    server: Any,
    skills: Skills = "generated_skills",
    workflows: Workflows = "workflows",
    *,
    page_size: int = DEFAULT_PAGE_SIZE,
    cache: CacheHint = DEFAULT_CACHE,
    workflow_prompts: bool = True,
    bootstrap_prompts: bool = True,
    skill_tools: bool = False,
    state_key: str | None = None,
    workflow_tools: bool = False,
    replay: ReplayGuard | None = None,
    tasks: Any = None,
    state: str | Path | None = None,
) -> Any:
    """Add the skills extension, the workflow prompts and the bootstrap prompts to ``server``: an ``mcp``
    ``MCPServer`` or a ``fastmcp.FastMCP`` (any other object is a ``TypeError``).

    ``skills``: a ``generated_skills`` folder, a loaded :class:`SkillTree`, a :class:`SkillsExtension` (for example
    the one the server was built with), or None for prompts only. ``workflows``: a folder or file of workflow YAML,
    a list of :class:`~projector.model.Workflow` (e.g. from the builder), or None. Returns the extension.

    On FastMCP, ``skills/list`` is paged by the server's own ``FastMCP(list_page_size=...)``; ``page_size`` pages
    ``resources/directory/read`` there.

    ``skill_tools=True`` also adds two read-only tools, ``load_skill(name)`` and ``read_skill_file(uri)``, serving
    the same verified bytes as ``resources/read``, for hosts that call tools but never read resources
    (:mod:`projector.server.skill_tools`). It needs ``skills``; a tool of either name already on the server is an
    :class:`AttachError` (``tool-collision``).

    ``workflow_tools=True`` also offers each workflow as a tool of its name, for hosts that only call tools
    (:mod:`projector.server.workflow_tool`): its input schema is the workflow's arguments, its annotations follow from
    its steps, and a call runs the steps on the server as the prompt does (conditions, confirmations, asked inputs),
    returning the transcript and the saved results. A tool of that name already on the server (or a skill tool) is
    an :class:`AttachError` (``tool-collision``). Build the skills with ``project-skill build --workflow-tools`` so
    that their SKILL.md names the tool.

    ``state_key``: the secret (at least 32 characters) that seals the ``requestState`` of the workflow prompts'
    confirmations and asked inputs; default ``$PROJECT_SKILL_STATE_KEY``. Processes that share it accept each
    other's state; without one the framework seals under a random key per process, so a state is accepted only by
    the process that made it (a restart or another worker refuses it, and the person is asked again). The key
    replaces only the framework's default policy: a server built with a ``request_state_security=`` of its own that
    does not take the key is an :class:`AttachError` (``own-state-policy``), never silently resealed.

    ``replay``: where each confirmation's yes is claimed, so that it runs its step once
    (:mod:`projector.server.replay`); default: a :class:`~projector.server.replay.SqliteGuard` on
    ``$PROJECT_SKILL_REPLAY_DB`` when it is set (checked now, ``replay-db``), else this process's memory. With a
    state key and workflows that confirm, a guard in this process's memory is an :class:`AttachError`
    (``replay-not-shared``): another process, or this one after a restart, would accept the same yes again.

    ``tasks``: a :class:`~projector.server.tasks.Tasks` (with ``workflow_tools=True``): each workflow tool also runs
    as a task (SEP-2663) for a client that declares the Tasks extension, and the server serves ``tasks/get``,
    ``tasks/update`` and ``tasks/cancel`` (:mod:`projector.server.workflow_task`). A confirmation or an asked input
    puts the task in ``input_required``; a cancel stops the run before its next step.

    ``state``: a folder (with ``workflow_tools=True``, instead of ``tasks``): the workflow tools run as durable
    tasks on DBOS, kept in that folder (:class:`~projector.server.durable.DurableTasks`, the
    ``project-skill[durable]`` extra; ``state-needs-dbos`` without it): each step's tool call is checkpointed, and the
    rounds a killed process left running are recovered at the next start on the same folder. Or a Postgres URL
    (``postgresql://...``, :mod:`projector.server.durable_pg`) that several processes share: any of them reads,
    answers and finishes any task, and takes up the rounds of one that died; the confirmations' yes are then
    claimed in that database too, unless ``replay`` is given (the tasks' own claims always are).

    It is synchronous, so it runs at import time; it also works inside a running event loop (or use
    :func:`attach_async` there). Raises :class:`AttachError` when the tree does not match its manifest, when a step
    does not fit the server's tools, when a step that calls a side-effecting tool has a condition that the tool's
    result, or an argument's type, decides before any run (``dead-condition``) and does not acknowledge it, when a skill names a workflow prompt (``metadata.workflow``) that the server
    will not offer (build such skills with ``project-skill build --skills-only``), or when a prompt name is already
    taken. Nothing is added to the server when it raises.
    """
    adapter = adapters.for_server(server)
    return adapter.run_sync(
        lambda: attach_async(
            server,
            skills,
            workflows,
            page_size=page_size,
            cache=cache,
            workflow_prompts=workflow_prompts,
            bootstrap_prompts=bootstrap_prompts,
            skill_tools=skill_tools,
            state_key=state_key,
            workflow_tools=workflow_tools,
            replay=replay,
            tasks=tasks,
            state=state,
        )
    )


async def attach_async(
    server: Any,
    skills: Skills = "generated_skills",
    workflows: Workflows = "workflows",
    *,
    page_size: int = DEFAULT_PAGE_SIZE,
    cache: CacheHint = DEFAULT_CACHE,
    workflow_prompts: bool = True,
    bootstrap_prompts: bool = True,
    skill_tools: bool = False,
    state_key: str | None = None,
    workflow_tools: bool = False,
    replay: ReplayGuard | None = None,
    tasks: Any = None,
    state: str | Path | None = None,
    changing: Callable[[], Mapping[str, Any]] | None = None,
) -> Any:
    """:func:`attach`, awaited: for an ``async def main()`` that builds its server before running it.

    ``changing``: for a server whose tools change while it serves (the gateway's, :mod:`projector.server.gateway`),
    those tools as they are now, by name; a workflow that no longer fits them by the rules checked here is withdrawn
    until it fits again (:mod:`projector.server.refit`)."""
    adapter = adapters.for_server(server)
    if state is not None:
        tasks = _durable(tasks, state, workflow_tools)
    if tasks is not None and not workflow_tools:
        raise serve_error(
            "<attach>",
            "tasks-without-tools",
            "attach(tasks=...) runs the workflow tools as tasks, and no workflow tools were asked for",
            "pass workflow_tools=True too",
        )
    ext = _extension(skills, page_size, cache)
    wfs = load_workflows(workflows) if workflow_prompts or workflow_tools else []
    tree = ext.tree if ext is not None else None
    listing = await adapter.listing(server)
    has = await adapter.registered_tools(server, listing)
    _check(listing, wfs, tree, skill_tools)
    tools = _workflow_tools(wfs, listing, skill_tools) if workflow_tools else []
    if tree is not None:
        from .workflow_tool import check_named

        check_named(tree, {spec.name for _, spec in tools})
    key = state_key if state_key is not None else os.environ.get(STATE_KEY_ENV) or None
    guard = _guard(replay, tasks) if wfs else None
    prompts = _prompts(adapter, wfs if workflow_prompts else [], tree, bootstrap_prompts, guard)
    _check_prompt_names([p.name for p in prompts], listing.prompts, tree)
    seal = _seal_with(adapter, server, key) if key is not None and guard is not None else None
    if guard is not None:
        _check_replay(key, wfs, guard)
    if seal is not None:
        seal()
    served = adapter.add_extension(server, ext, listing) if ext is not None else None
    adapter.add_prompts(server, prompts)
    if skill_tools and tree is not None:
        adapter.add_skill_tools(server, tree)
    if tools and guard is not None:
        adapter.add_workflow_tools(server, tools, guard)
        if tasks is not None:
            _add_tasks(adapter, server, tasks, tools, guard, listing.tools)
    adapter.bind(
        server,
        Bound.of(
            tree,
            wfs if workflow_prompts and guard is not None else [],
            [wf for wf, _ in tools] if guard is not None else [],
            bootstrap_prompts,
            skill_tools and tree is not None,
            has=has,
            withdrawn=Refit(wfs, listing.tools, changing).withdrawn if changing is not None and wfs else nothing,
        ),
        served,
    )
    return served


def _add_tasks(
    adapter: Any,
    server: Any,
    tasks: Any,
    tools: Sequence[tuple[Workflow, Any]],
    guard: ReplayGuard,
    served: dict[str, Any],
) -> None:
    """Each workflow tool as a task too (:mod:`.workflow_task`), run on the server's own host, never interrupted
    mid-step (a cancel stops it before its next step). A durable runner (:mod:`.durable`) wraps the host and the
    guard, and is told which tools may be called again after a crash (read-only or idempotent, as served)."""
    from .workflow_task import workflow_job

    safe = {
        name
        for name, t in served.items()
        if isinstance(getattr(t, "annotations", None), dict)
        and (t.annotations.get("readOnlyHint") is True or t.annotations.get("idempotentHint") is True)
    }
    host, guard = tasks.wrap(lambda: adapter.task_host(server), guard, [wf for wf, _ in tools], safe)
    for wf, spec in tools:
        tasks.support(spec.name, workflow_job(wf, host, guard), interruptible=False)
    adapter.add_tasks(server, tasks)
    tasks.ready()


def _guard(replay: ReplayGuard | None, tasks: Any) -> ReplayGuard:
    """The replay guard given, else the one the tasks bring (a Postgres state's claims), else :func:`from_env`'s."""
    if replay is not None:
        return replay
    brought = getattr(tasks, "replay", None)
    return brought if isinstance(brought, ReplayGuard) else from_env()


def _durable(tasks: Any, state: str | Path, workflow_tools: bool) -> Any:
    """``attach(state=DIR)``: the durable tasks kept in DIR (:mod:`.durable`)."""
    from . import durable

    if not workflow_tools:
        raise serve_error(
            "<attach>",
            "tasks-without-tools",
            "attach(state=...) keeps the workflow tools' tasks, and no workflow tools were asked for",
            "pass workflow_tools=True too",
        )
    if tasks is not None:
        raise serve_error(
            "<attach>",
            "state-and-tasks",
            "attach(state=...) makes the tasks itself, and tasks= was given too",
            "pass one of them",
        )
    if not durable.available():
        raise serve_error(
            "<attach>",
            "state-needs-dbos",
            f"attach(state=...) runs durable tasks on DBOS, the {durable.EXTRA} extra, which is not installed",
            f"pip install '{durable.EXTRA}'",
        )
    return durable.DurableTasks(state)


def _workflow_tools(wfs: Sequence[Workflow], listing: Listing, skill_tools: bool) -> list[tuple[Workflow, Any]]:
    """Each workflow and its tool (:mod:`.workflow_tool`), once no name collides with a tool the server has."""
    from . import workflow_tool

    workflow_tool.check_names(wfs, set(listing.tools) | (set(TOOL_NAMES) if skill_tools else set()))
    return [(wf, workflow_tool.tool_spec(wf, listing.tools)) for wf in wfs]
