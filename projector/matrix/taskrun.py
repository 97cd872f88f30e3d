"""A workflow tool called as an MCP task (SEP-2663), as a client of the Tasks extension drives it: the surface that
the eval runs (:mod:`projector.matrix.evalruns`) and the matrix's refunds task (:mod:`projector.matrix.harness`,
surface B3t) share.

The client is mcp's ``Client``, declaring the Tasks extension for its session. One task-augmented ``tools/call``
gets a ``CreateTaskResult``; then ``tasks/get``, each after the ``pollIntervalMs`` the server gave (at most
:data:`MAX_POLL_S`), until the task is ``input_required`` or over. For each pending input request (an elicitation:
the runner's question, with its message and schema), the simulated person answers, and one ``tasks/update`` carries
every answer of the round. A person who answers nothing (``None``) leaves the task unanswered: the client cancels it
with ``tasks/cancel``. The whole run is bounded by :data:`MAX_ROUNDS` rounds and :data:`MAX_POLLS` polls.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mcp_types import Request, RequestParams
from pydantic import ConfigDict, TypeAdapter

from ..errors import PlainError

MAX_POLL_S = 1.0  # the longest wait between two polls, whatever the server asks
MAX_POLLS = 600  # polls of one run
MAX_ROUNDS = 16  # input_required rounds of one run

# The person: one input request's params (``message``, ``requestedSchema``) -> the elicitation result to send
# (``{"action": ..., "content": ...}``), or None to leave it unanswered.
Answerer = Callable[[dict[str, Any]], Awaitable[dict[str, Any] | None]]


class TaskRunError(PlainError):
    """The server did not answer as the Tasks extension says (no task made, a run past its bounds)."""


@dataclass
class TaskOutcome:
    """How a task ended: its last status, its inlined result (a ``CallToolResult`` as wire JSON) or error, how many
    times the person was asked, and the methods the client sent, in order."""

    status: str = ""
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    asked: int = 0
    methods: list[str] = field(default_factory=list)

    def text(self) -> str:
        """The result's last text, or what ended the task."""
        if self.result is not None:
            texts = [c.get("text", "") for c in self.result.get("content") or [] if isinstance(c, dict)]
            return texts[-1] if texts else ""
        if self.error is not None:
            return f"the task failed: {self.error.get('message', '')}"
        return f"the task is {self.status}"


def task_client(client_stream: Any, **kwargs: Any) -> Any:
    """mcp's ``Client`` on ``client_stream``, declaring the Tasks extension for its session."""
    from mcp import Client
    from mcp.client.extension import advertise

    from ..server.tasks import TASKS_EXTENSION

    return Client(client_stream, extensions=[advertise(TASKS_EXTENSION)], **kwargs)


class _Params(RequestParams):
    model_config = ConfigDict(extra="allow")


class _Raw(Request[_Params, str]):
    method: str
    params: _Params


_JSON = TypeAdapter(dict[str, Any])


async def send(client: Any, method: str, **params: Any) -> dict[str, Any]:
    """One request as it is on the wire, its result as JSON."""
    result: dict[str, Any] = await client.session.send_request(_Raw(method=method, params=_Params(**params)), _JSON)
    return result


async def _settle(client: Any, task_id: str, task: dict[str, Any], out: TaskOutcome) -> dict[str, Any]:
    import anyio

    while task.get("status") not in ("input_required", "completed", "failed", "cancelled"):
        if out.methods.count("tasks/get") >= MAX_POLLS:
            raise TaskRunError(f"the task was still {task.get('status')!r} after {MAX_POLLS} polls")
        poll = task.get("pollIntervalMs")
        await anyio.sleep(min(MAX_POLL_S, poll / 1000) if isinstance(poll, int) and poll > 0 else 0.05)
        out.methods.append("tasks/get")
        task = await send(client, "tasks/get", taskId=task_id)
    return task


async def call_as_task(client: Any, name: str, arguments: dict[str, Any], person: Answerer) -> TaskOutcome:
    """Call the tool ``name`` as a task on ``client`` (made by :func:`task_client`) and see it to its end, ``person``
    answering each input request."""
    out = TaskOutcome()
    out.methods.append("tools/call")
    task = await send(client, "tools/call", name=name, arguments=arguments)
    if task.get("resultType") != "task" or not isinstance(task.get("taskId"), str):
        raise TaskRunError(f"`{name}` did not make a task: {str(task)[:300]}")
    task_id = task["taskId"]
    for _ in range(MAX_ROUNDS):
        task = await _settle(client, task_id, task, out)
        if task.get("status") != "input_required":
            break
        answers: dict[str, Any] = {}
        requests = task.get("inputRequests") or {}
        if not isinstance(requests, dict) or not all(isinstance(r, dict) for r in requests.values()):
            raise TaskRunError(f"the task's inputRequests are not a map of requests: {str(requests)[:300]}")
        for key, request in sorted(requests.items()):
            out.asked += 1
            said = await person(request.get("params") or {})
            if said is not None:
                answers[key] = said
        if not answers:  # nobody answered: the client gives up on the task
            out.methods.append("tasks/cancel")
            await send(client, "tasks/cancel", taskId=task_id)
            out.methods.append("tasks/get")
            task = await send(client, "tasks/get", taskId=task_id)
            break
        out.methods.append("tasks/update")
        await send(client, "tasks/update", taskId=task_id, inputResponses=answers)
        task = {**task, "status": "working"}
    else:
        raise TaskRunError(f"the task asked for input more than {MAX_ROUNDS} times")
    out.status = task.get("status", "")
    out.result = task.get("result") if isinstance(task.get("result"), dict) else None
    out.error = task.get("error") if isinstance(task.get("error"), dict) else None
    return out
