"""A workflow tool's run as a task (SEP-2663): the job that :class:`projector.server.tasks.Tasks` runs for it.

Each round is one :func:`~projector.server.workflow_tool.call_workflow`, exactly as a plain ``tools/call`` and the
prompt run it, so the three give the same tool calls for the same inputs and answers. A ``confirm:`` or ``ask:``
step stops the round with the runner's own question (the prompt's text and schema), which the task shows as
``input_required``; the runner's state stays on the server, in the task, and the answers of ``tasks/update`` are
the next round's (a no, or a cancelled answer, runs nothing more, as for the prompt). A task is asked whatever the
client's elicitation capability: it declared the Tasks extension, and answers through ``tasks/update``.

The host a task runs on belongs to the server, not to the request that started it (that request has been answered
long before a person says yes). Before each step's tool call or resource read, the job looks whether the task was
cancelled, and stops there: a cancel between steps is followed by no call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from ..model import Workflow
from . import confirm
from .replay import ReplayGuard
from .tasks import Call, Done, Job, NeedInput
from .workflow import ToolSpec, WorkflowHost
from .workflow_tool import BadArguments, call_workflow


class _Stopped(asyncio.CancelledError):
    """The task was cancelled: the round stops before the next step (a BaseException, which no step catches)."""


class TaskHost(WorkflowHost):
    """A server's host inside a task: each step first looks whether the task was cancelled; the progress goes to the
    server's host (which sends none: the request that started the task has been answered; a durable host follows
    the steps with it)."""

    def __init__(self, host: WorkflowHost, cancelled: Callable[[], bool]):
        self.host, self.cancelled = host, cancelled

    def _check(self) -> None:
        if self.cancelled():
            raise _Stopped()

    async def tools(self) -> dict[str, ToolSpec]:
        return await self.host.tools()

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        self._check()
        return await self.host.call_tool(name, arguments)

    async def read_resource(self, uri: str) -> Sequence[Any]:
        self._check()
        return await self.host.read_resource(uri)

    async def report_progress(self, progress: float, total: float, message: str) -> None:
        await self.host.report_progress(progress, total, message)


def elicitation(message: str, schema: dict[str, Any]) -> dict[str, Any]:
    """One of the runner's questions as a task's input request: a form elicitation."""
    return {"method": "elicitation/create", "params": {"mode": "form", "message": message, "requestedSchema": schema}}


def result(texts: Sequence[str], structured: dict[str, Any] | None = None, *, is_error: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"content": [{"type": "text", "text": t} for t in texts]}
    if structured is not None:
        out["structuredContent"] = structured
    if is_error:
        out["isError"] = True
    return out


def workflow_job(wf: Workflow, host: Callable[[], WorkflowHost], guard: ReplayGuard | None) -> Job:
    """The job of ``wf``'s tool: ``host()`` makes the server's host for a round."""

    async def job(call: Call) -> Done | NeedInput:
        rnd = confirm.Round.of(
            can_ask=True, state=call.state, responses=call.answers if call.state else None, guard=guard
        )
        try:
            outcome = await call_workflow(wf, call.arguments, TaskHost(host(), call.cancelled), rnd)
        except BadArguments as exc:
            return Done(result([str(exc)], is_error=True))
        if isinstance(outcome, confirm.Asking):
            return NeedInput({k: elicitation(m, s) for k, (m, s) in outcome.requests.items()}, outcome.state)
        return Done(result(outcome.texts(), outcome.structured()))

    return job
