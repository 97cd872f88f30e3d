"""Which served workflows no longer fit the tools they call, after those tools changed while the server serves (the
gateway's upstream re-listed its tools: :mod:`projector.server.gateway`).

``attach`` fits the steps to the server's tools once, at start-up, and derives from them what it serves: the
workflow tool's annotations, which steps run with no question. A tool that changes afterwards can break both, so
each workflow is fitted again against the tools as they are now, by the start-up rules:

- the steps must fit the tools as ``attach`` fits them (:func:`projector.fit.check_workflows`: a tool that is gone,
  a parameter the new schema requires or refuses, a field path its new output schema does not have);
- no gate before a side effect may have become one that the tool's result can never decide (``dead-condition``,
  :func:`projector.gates.refused_on_server`: a field whose type the new output schema changed);
- no step's tool may have become riskier than it was when the workflow was attached: side-effecting where it was
  read-only, destructive where it was not, or neither read-only nor idempotent where it was one of them (the
  workflow tool announced, and the durable runner retries, by what the steps' tools said then).

A workflow that fails either is withdrawn (its prompt, its workflow tool, its skill and the skill's bootstrap prompt:
:mod:`projector.server.bound`) until it fits again. Computed once per listing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from .. import fit, gates
from ..model import Tool, Workflow


def as_served(wf: Workflow, tools: Mapping[str, Any]) -> Workflow:
    """``wf`` with the server's tools, each filled in from the workflow's declaration of it where the server leaves
    a field out (its annotations, its output schema: :func:`projector.fit.fill_declared`), as ``--tools-from`` does:
    what the run will meet."""
    served = []
    for name in dict.fromkeys(step.tool for step in wf.steps if step.tool is not None and step.tool in tools):
        tool = fit.as_tool(name, tools[name])
        declared = wf.tool(name)
        served.append(fit.fill_declared(declared, tool)[0] if declared is not None else tool)
    return replace(wf, tools=tuple(served))


def _effective(wf: Workflow, name: str, tools: Mapping[str, Tool]) -> Tool | None:
    """The tool a step runs as the server serves it: its annotations, or the workflow's declaration where the server
    declares none (as the workflow tool's annotations are derived)."""
    served = tools.get(name)
    if served is not None and served.annotated:
        return served
    return wf.tool(name) or served


def _risk(tool: Tool | None) -> tuple[bool, bool, bool]:
    if tool is None:
        return (True, True, True)
    ann = tool.annotations if isinstance(tool.annotations, dict) else {}
    retry_safe = ann.get("readOnlyHint") is True or ann.get("idempotentHint") is True
    return (tool.side_effecting, tool.destructive, not retry_safe)


def riskier(wf: Workflow, before: Mapping[str, Tool], now: Mapping[str, Tool]) -> bool:
    """Whether a step of ``wf`` calls a tool that is riskier ``now`` than ``before``."""
    for step in wf.steps:
        if step.tool is None:
            continue
        then, later = _risk(_effective(wf, step.tool, before)), _risk(_effective(wf, step.tool, now))
        if any(b and not a for a, b in zip(then, later, strict=True)):
            return True
    return False


class Refit:
    """The workflows withdrawn while ``current()`` (the tools that changed, by name) differs from the tools they were
    attached with; the server's other tools (``start`` less the changing ones) stay as they were."""

    def __init__(
        self, workflows: Sequence[Workflow], start: Mapping[str, Any], current: Callable[[], Mapping[str, Any]]
    ):
        self.workflows, self.current = list(workflows), current
        self._first = current()
        self._start = {name: fit.as_tool(name, value) for name, value in start.items()}
        self._seen: Any = self._first
        self._withdrawn: frozenset[str] = frozenset()

    def withdrawn(self) -> frozenset[str]:
        """The names of the workflows that do not fit the tools as they are now."""
        now = self.current()
        if now is self._seen:
            return self._withdrawn
        tools = {name: tool for name, tool in self._start.items() if name not in self._first}
        tools.update({name: fit.as_tool(name, value) for name, value in now.items()})
        out = set()
        for wf in self.workflows:
            if (  # attach refuses any problem
                fit.check_workflows([wf], tools)
                or riskier(wf, self._start, tools)
                or gates.refused_on_server(as_served(wf, tools))
            ):
                out.add(wf.name)
        self._seen, self._withdrawn = now, frozenset(out)
        return self._withdrawn
