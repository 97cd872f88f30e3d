"""The gateway (``serve --upstream``) applies the start-up rule of a dead gate (``dead-condition`` by the tool's
output schema, issue 38 item 0) to the upstream's tools as they are at start-up and after each list change (item 2),
without refusing a gate that the output schema leaves alive. Driven through a real client over the wire, in front of
a scripted upstream (``tests/server/gateway/retyping_upstream.py``).

All slow: each starts the upstream as a subprocess."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from projector.server import gateway
from projector.server.adapters import for_server
from tests.conftest import ROOT
from tests.server.test_gateway import workflows
from tests.server.test_gateway_listing import by_name, python_command, until

pytestmark = pytest.mark.slow

RETYPING = Path(__file__).parent / "gateway" / "retyping_upstream.py"
PUBLISH = """
name: publish_unless_false
description: Publish a draft unless its status says false.
arguments:
  - {{name: draft, description: The draft, required: true, type: string}}
steps:
  - {{name: status, tool: read_status, bind: status}}
  - name: go
    tool: publish
    args: {{name: {{arg: draft}}}}
    when: {{step: status, field: {field}, not_equals: false}}
"""


def _content_is(kind: str):
    def done(tools: list[dict[str, Any]]) -> bool:
        schema = by_name(tools)["read_status"].get("outputSchema", {})
        return schema.get("properties", {}).get("content", {}).get("type") == kind

    return done


async def _prompts(client: Client) -> list[str]:
    return sorted(p.name for p in (await client.list_prompts()).prompts)


async def _served_then_retyped(wfs: Path) -> tuple[list[str], list[str], list[str]]:
    async with gateway(python_command(RETYPING), None, wfs, framework="mcp") as server:
        async with Client(for_server(server).in_process(server), cache=None) as client:
            first = await _prompts(client)
            await client.call_tool("retype", {"how": "string"})
            await until(client, _content_is("string"))
            retyped = await _prompts(client)
            await client.call_tool("retype", {"how": ""})
            await until(client, _content_is("boolean"))
            again = await _prompts(client)
    return first, retyped, again


def test_a_gate_the_upstream_makes_dead_withdraws_its_workflow_until_it_lives_again(tmp_path):
    """At start-up the gateway refuses a gate before a side effect that the tool's output schema can never decide
    (``not_equals: false`` on a field that is a string). The same gate, made dead by a list change (the upstream now
    says ``content`` is a string, so the gate never stops ``publish``), left the workflow served: refit checked the
    steps' fit and their risk, not the dead gate. Now the workflow is withdrawn until the schema lets the gate decide
    again."""
    wfs = workflows(tmp_path, PUBLISH.format(field="content"))
    first, retyped, again = anyio.run(_served_then_retyped, wfs)
    assert "publish_unless_false" in first
    assert "publish_unless_false" not in retyped
    assert again == first


async def _starts(wfs: Path) -> list[str]:
    async with gateway(python_command(RETYPING) + " pattern", None, wfs, framework="mcp") as server:
        async with Client(for_server(server).in_process(server), cache=None) as client:
            return await _prompts(client)


def test_a_gate_on_a_field_typed_by_pattern_properties_is_not_refused_at_start_up(tmp_path):
    """A field named by ``patternProperties`` (``^ok$``: a boolean) was read as ``additionalProperties`` (a string),
    so ``not_equals: false`` on it was called dead and the gateway refused to start: a legitimate gate refused."""
    wfs = workflows(tmp_path, PUBLISH.format(field="ok"))
    assert "publish_unless_false" in anyio.run(_starts, wfs)


HOLDING = Path(__file__).parent / "gateway" / "holding_upstream.py"
HOLD_THEN_LOOK = """
name: hold_then_look
description: Wait, then look an order up.
arguments:
  - {name: order_id, description: The order, required: true, type: string}
steps:
  - {name: wait, tool: hold}
  - name: look
    tool: lookup
    args: {order_id: {arg: order_id}}
"""


def _lookup_destructive(tools: list[dict[str, Any]]) -> bool:
    return by_name(tools)["lookup"].get("annotations", {}).get("destructiveHint") is True


async def _changed_mid_run(framework: str, wfs: Path) -> tuple[str, list[str], list[str]]:
    async with gateway(python_command(HOLDING), None, wfs, framework=framework, workflow_tools=True) as server:
        adapter = for_server(server)
        async with (
            Client(adapter.in_process(server), cache=None) as runner,
            Client(adapter.in_process(server), cache=None) as other,
        ):
            said: list[str] = []

            async def run() -> None:
                got = await runner.get_prompt("hold_then_look", {"order_id": "A1"})
                said.extend(m.content.text for m in got.messages)

            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                with anyio.fail_after(30):  # the run waits in its first step
                    while (await other.call_tool("holding", {})).structured_content != {"result": True}:
                        await anyio.sleep(0.05)
                await other.call_tool("change", {})
                await until(other, _lookup_destructive)  # the gateway has re-listed: the workflow is withdrawn
                prompts = await _prompts(other)
                await other.call_tool("release", {})
            called = (await other.call_tool("called", {})).structured_content["result"]
    return "\n".join(said), prompts, called


@pytest.mark.parametrize("framework", ["mcp", "fastmcp"])
def test_a_run_under_way_does_not_call_a_tool_made_destructive_since_it_started(tmp_path, framework):
    """A workflow whose read-only step the upstream makes destructive is withdrawn; but a run that started before
    the change went on and called the now-destructive tool with no question (the withdrawal only stopped new runs).
    Now a run checks, before each call, that its workflow is still served as it was, and stops instead."""
    wfs = workflows(tmp_path, HOLD_THEN_LOOK)
    said, prompts, called = anyio.run(_changed_mid_run, framework, wfs)
    assert "hold_then_look" not in prompts  # withdrawn while the run waited
    assert called == ["hold"], said
    assert "`lookup`" in said and "not called" in said


HOSTILE = Path(__file__).parent / "gateway" / "hostile_schema_upstream.py"
FIND = """
name: find_it
description: Find it.
arguments:
  - {name: q, description: What to find, required: true, type: string}
steps:
  - {name: find, tool: find, args: {q: {arg: q}}}
"""


async def _run_against(how: str, q: str, wfs: Path, skills: Path) -> str:
    """``project-skill serve --upstream`` over stdio (its own process: a check that holds its event loop cannot
    hold the test's), asked for the prompt within a bounded time."""
    from mcp.client.stdio import StdioServerParameters

    serve = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "projector.cli",
            "serve",
            "--upstream",
            python_command(HOSTILE) + f" {how}",
            "--workflows",
            str(wfs),
            "--skills",
            str(skills),
        ],
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])},
        cwd=str(wfs.parent),
    )
    async with Client(serve) as client:
        with anyio.fail_after(30):
            got = await client.get_prompt("find_it", {"q": q})
    return "\n".join(m.content.text for m in got.messages)


@pytest.mark.parametrize(("how", "q"), [("branches", "x"), ("pattern", "ab" * 2000)])
def test_the_run_time_check_of_a_steps_arguments_is_bounded_against_a_hostile_schema(cli, tmp_path, how, q):
    """A step's arguments are checked against the tool's input schema at run time (issue 38 item 10d), on the event
    loop, by the schema the upstream lists. A schema of thirty nested ``anyOf`` levels made that check walk 2**30
    paths (the run, and with it the gateway, never answered); a pattern of 12,000 characters against a text of 4,000
    took most of a minute for each call. Now the check stops at a bound of work and leaves the schema to the server, which
    applies its own: the run answers, and the tool is called."""
    wfs, skills = workflows(tmp_path, FIND), tmp_path / "skills"
    built = cli("build", str(wfs), "--tools-from", python_command(HOSTILE) + f" {how}", "--out", str(skills))
    assert built.code == 0, built.err
    said = anyio.run(_run_against, how, q, wfs, skills)
    assert "Calling the tool `find`" in said and f"found {len(q)}" in said


async def _task_changed_mid_run(framework: str, wfs: Path) -> tuple[dict[str, Any], list[str]]:
    from mcp.client.extension import advertise

    from projector.server.tasks import TASKS_EXTENSION, Tasks
    from tests.server.test_tasks import Wire

    async with gateway(python_command(HOLDING), None, wfs, framework=framework, workflow_tools=True, tasks=Tasks()) as (
        server
    ):
        adapter = for_server(server)
        async with (
            Client(adapter.in_process(server), extensions=[advertise(TASKS_EXTENSION)], cache=None) as runner,
            Client(adapter.in_process(server), cache=None) as other,
        ):
            wire = Wire(runner)
            created = await wire.send("tools/call", name="hold_then_look", arguments={"order_id": "A1"})
            with anyio.fail_after(30):
                while (await other.call_tool("holding", {})).structured_content != {"result": True}:
                    await anyio.sleep(0.05)
            await other.call_tool("change", {})
            await until(other, _lookup_destructive)
            await other.call_tool("release", {})
            task = await wire.settle(created["taskId"], ("completed", "failed", "cancelled"))
            called = (await other.call_tool("called", {})).structured_content["result"]
    return task, called


@pytest.mark.parametrize("framework", ["mcp", "fastmcp"])
def test_a_task_under_way_does_not_call_a_tool_made_destructive_since_it_started(tmp_path, framework):
    """The same, for the workflow tool run as a task (``gateway(..., tasks=Tasks())``): the task's run, in the
    background, stops before the now-destructive call."""
    task, called = anyio.run(_task_changed_mid_run, framework, workflows(tmp_path, HOLD_THEN_LOOK))
    assert called == ["hold"], task
    assert "`lookup` was not called" in json.dumps(task)
