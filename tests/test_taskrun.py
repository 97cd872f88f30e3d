"""``projector.matrix.taskrun``: the client that drives a workflow tool as an MCP task, against a server that does
not answer as the Tasks extension says. Each bad answer is a :class:`TaskRunError` naming it, never a ``KeyError``."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from projector.matrix.taskrun import TaskRunError, call_as_task


def hostile(*answers: dict[str, Any]) -> Any:
    """A client whose server gives these answers, one per request, in order."""
    left = list(answers)

    async def send_request(request: Any, adapter: Any) -> dict[str, Any]:
        return left.pop(0)

    return SimpleNamespace(session=SimpleNamespace(send_request=send_request))


async def person(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"confirm": True}}


CREATED = {"resultType": "task", "taskId": "t1", "status": "working", "pollIntervalMs": 1}


@pytest.mark.parametrize(
    "answers, said",
    [
        ([{"content": []}], "did not make a task"),
        ([CREATED, {"status": "input_required", "inputRequests": ["not", "a", "map"]}], "not a map of requests"),
        ([CREATED, {"status": "input_required", "inputRequests": {"r1": "text"}}], "not a map of requests"),
    ],
)
def test_a_server_that_answers_out_of_the_extension_is_a_clear_error(answers, said):
    with pytest.raises(TaskRunError) as bad:
        anyio.run(call_as_task, hostile(*answers), "refund_flow_approved", {}, person)
    assert said in str(bad.value)


def test_a_poll_answer_without_its_task_id_is_followed_by_the_id_the_task_was_made_with():
    outcome = anyio.run(
        call_as_task,
        hostile(CREATED, {"status": "working"}, {"status": "completed", "result": {"content": []}}),
        "refund_flow_approved",
        {},
        person,
    )
    assert outcome.status == "completed" and outcome.methods == ["tools/call", "tasks/get", "tasks/get"]
