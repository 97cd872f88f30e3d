"""A workflow as a tool: ``tools/call`` runs a workflow's steps on the server, for hosts that only call tools.

A workflow prompt is picked by a person; a host that offers its model nothing but tools never shows it.
``attach(..., workflow_tools=True)`` (``project-skill serve --workflow-tools``) also offers each workflow as a tool of
the same name, which the model can call itself:

- its input schema is the workflow's arguments: each one's type (``string`` when none is declared), description and
  whether it is required; no other property is accepted;
- its annotations follow from its steps, as the server declares their tools: read-only only when every step is (a
  resource read is), destructive when any step is (:attr:`projector.model.Tool.destructive`), idempotent only when
  every step is read-only or idempotent, open-world when any tool step does not say otherwise;
- a call runs the one runner (:func:`projector.server.workflow.run_workflow`) exactly as ``prompts/get`` does: the
  same conditions, the same ``confirm:`` and ``ask:`` round trips (an ``InputRequiredResult`` on ``tools/call``,
  which the 2026-07-28 protocol allows there too), the same stop before the step for a client that cannot be asked;
- its result is the transcript, one text block per message in the prompt's order and with the prompt's texts, and
  the results the steps saved as ``structuredContent`` (``{"results": {bind: value}}``), which its ``outputSchema``
  declares.

Arguments that do not fit the schema are a tool error (``isError``) that names the argument, so the model can
correct the call; a ``requestState`` that does not verify, or a yes given twice, stays a protocol error (-32602), as
for the prompt, and runs nothing.

:func:`call_workflow` is the framework-free entry: a call in, an :class:`Outcome` (or a
:class:`~projector.server.confirm.Asking`) out. Each framework's adapter wraps it in its own tool object; a task
layer (SEP-2663, later) can wrap the same function, since all a call's state is in its arguments and its round.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, ToolAnnotations

from ..errors import Span, error
from ..model import Tool, Workflow
from . import confirm
from .errors import AttachError
from .workflow import Turn, WorkflowHost, check_arguments, run_workflow


@dataclass(frozen=True)
class WorkflowToolSpec:
    """A workflow's tool as ``tools/list`` shows it, on every framework."""

    name: str
    title: str | None
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    annotations: ToolAnnotations


@dataclass(frozen=True)
class Outcome:
    """A finished call: the transcript and the results its steps saved (by binding)."""

    turns: list[Turn]
    results: dict[str, Any]

    def texts(self) -> list[str]:
        """The transcript's messages, one text each, in order: the prompt's texts."""
        return [t.text for t in self.turns]

    def structured(self) -> dict[str, Any]:
        return {"results": self.results}


class BadArguments(Exception):
    """The call's arguments do not fit the workflow: the frameworks turn it into a tool error (``isError``)."""


# --------------------------------------------------------------------------------------------------- the listing


def input_schema(wf: Workflow) -> dict[str, Any]:
    """The workflow's arguments as a JSON Schema object: types, descriptions, required; nothing else accepted."""
    props: dict[str, Any] = {}
    for a in wf.arguments:
        prop: dict[str, Any] = {"type": a.type or "string"}
        description = a.description.strip()
        if a.ask:
            description = (description + ". " if description else "") + (
                "Leave it out to have the server ask the person when a step first needs it."
            )
        if description:
            prop["description"] = description
        props[a.name] = prop
    schema: dict[str, Any] = {"type": "object", "properties": props}
    required = [a.name for a in wf.arguments if a.required]
    if required:
        schema["required"] = required
    schema["additionalProperties"] = False
    return schema


def output_schema(wf: Workflow) -> dict[str, Any]:
    """``{"results": {bind: value}}``: each binding a step may save, any JSON value; a binding whose step did not
    run is absent."""
    binds = {
        s.bind: {"description": f"The result of step {n} `{s.name}` (the tool `{s.tool}`)."}
        for n, s in enumerate(wf.steps, 1)
        if s.bind
    }
    results = {
        "type": "object",
        "description": "The results the steps saved, by the name each is saved under.",
        "properties": binds,
        "additionalProperties": False,
    }
    return {"type": "object", "properties": {"results": results}, "required": ["results"]}


def _step_tools(wf: Workflow, server_tools: Mapping[str, Tool]) -> list[Tool]:
    """Each tool step's tool with the annotations the server declares, else those the workflow declares."""
    out = []
    for step in wf.steps:
        if step.tool is None:
            continue
        served, declared = server_tools.get(step.tool), wf.tool(step.tool)
        if served is not None and served.annotated:
            out.append(served)
        else:
            out.append(declared or served or Tool(step.tool))
    return out


def annotations(wf: Workflow, server_tools: Mapping[str, Tool]) -> ToolAnnotations:
    """What the steps' tools say, combined: read-only only if every one is (a resource read is), destructive if any
    one is, idempotent only if every one is read-only or idempotent, open-world if any one does not say it is not."""
    tools = _step_tools(wf, server_tools)
    hints = [t.annotations if isinstance(t.annotations, dict) else {} for t in tools]
    read_only = all(h.get("readOnlyHint") is True for h in hints)
    return ToolAnnotations(
        title=wf.title,
        read_only_hint=read_only,
        destructive_hint=any(t.destructive for t in tools),
        idempotent_hint=all(h.get("readOnlyHint") is True or h.get("idempotentHint") is True for h in hints),
        open_world_hint=any(h.get("openWorldHint") is not False for h in hints),
    )


def description(wf: Workflow) -> str:
    n = len(wf.steps)
    text = (
        f"{wf.description.strip()} Runs the workflow's {n} step{'s' * (n != 1)} on the server, in order, and "
        "returns the transcript; the results the steps saved are in the structured result."
    )
    if any(s.confirm is not None for s in wf.steps) or any(a.ask for a in wf.arguments):
        text += (
            " A step that needs a person (a confirmation, or an input left out) asks them through the client; "
            "a client that cannot ask gets a transcript that stops before that step."
        )
    return text


def tool_spec(wf: Workflow, server_tools: Mapping[str, Tool]) -> WorkflowToolSpec:
    """``wf``'s tool; ``server_tools``: the server's own tools by name, as :func:`projector.fit.from_listing` reads
    them."""
    return WorkflowToolSpec(
        name=wf.name,
        title=wf.title,
        description=description(wf),
        input_schema=input_schema(wf),
        output_schema=output_schema(wf),
        annotations=annotations(wf, server_tools),
    )


def check_names(wfs: Sequence[Workflow], taken: Collection[str]) -> None:
    """Raise :class:`AttachError` (``tool-collision``) when a workflow's tool name is a tool the server has (or
    will have: the skill tools), or two workflows share it."""
    seen: set[str] = set()
    clashes = []
    for wf in wfs:
        if wf.name in taken or wf.name in seen:
            where = "another workflow's" if wf.name in seen else "a tool already on the server"
            clashes.append(
                error(
                    wf.span if wf.span.line else Span(wf.source),
                    "tool-collision",
                    f"the workflow '{wf.name}' cannot be offered as a tool: its name is {where}",
                    "rename the workflow or that tool, or leave workflow_tools off (serve: drop --workflow-tools)",
                )
            )
        seen.add(wf.name)
    if clashes:
        raise AttachError(clashes)


def check_named(tree: Any, offered: Collection[str]) -> None:
    """Raise :class:`AttachError` (``missing-workflow-tool``) for each served skill whose SKILL.md names a workflow
    tool (``metadata.workflow-tool``, from ``build --workflow-tools``) that the server will not offer: it would send
    a model looking for it. ``tree``: the served :class:`~projector.server.tree.SkillTree`; ``offered``: the
    workflow tools the server will have."""
    missing = []
    for s in tree.skills:
        meta = s.frontmatter.get("metadata") if isinstance(s.frontmatter, dict) else None
        named = meta.get("workflow-tool") if isinstance(meta, dict) else None
        if isinstance(named, str) and named not in offered:
            missing.append(
                error(
                    Span(f"{tree.root}/{s.path}/SKILL.md"),
                    "missing-workflow-tool",
                    f"skill '{s.name}' names the workflow tool '{named}' (its metadata.workflow-tool), "
                    "which this server does not offer; its SKILL.md would send a model looking for it",
                    "serve the workflows as tools too (attach(workflow_tools=True), serve "
                    "--workflow-tools), or build the skills without --workflow-tools",
                )
            )
    if missing:
        raise AttachError(missing)


# ------------------------------------------------------------------------------------------------------ the call


async def call_workflow(
    wf: Workflow, arguments: Mapping[str, Any] | None, host: WorkflowHost, round: confirm.Round | None = None
) -> Outcome | confirm.Asking:
    """Run ``wf`` for one ``tools/call``: its transcript and saved results, or the questions to ask (as for the
    prompt). Raises :class:`BadArguments` for arguments that do not fit; a ``requestState`` that does not verify is
    the runner's -32602."""
    given = dict(arguments or {})
    try:
        check_arguments(wf, given, surface="tool")
    except MCPError as exc:
        if exc.code != INVALID_PARAMS:  # pragma: no cover - check_arguments raises only -32602
            raise
        raise BadArguments(exc.message) from None
    saved: dict[str, Any] = {}
    result = await run_workflow(wf, given, host, round, saved=saved)
    if isinstance(result, confirm.Asking):
        return result
    return Outcome(list(result), saved)
