"""The server-side runner (:mod:`projector.server.workflow`), through mcp's public in-memory ``Client``: the work a
run does grows with its steps, not with their square, and a confirmation on the first step does not repeat the
opening of the transcript."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp_types import ElicitResult

from projector.builder import WorkflowBuilder, arg, condition, confirm, step
from projector.model import Workflow
from projector.server import attach

pytestmark = pytest.mark.anyio


class CountingSteps(tuple):
    """A workflow's steps that count how many step records are read, by iteration, index or slice (as
    tests/test_gates.py counts the compile's passes)."""

    reads = 0

    def __iter__(self):
        for item in tuple.__iter__(self):
            CountingSteps.reads += 1
            yield item

    def __getitem__(self, key):
        got = tuple.__getitem__(self, key)
        CountingSteps.reads += len(got) if isinstance(key, slice) else 1
        return got


def skipping(n: int) -> Workflow:
    """n steps, each saving a result that the next one reads, each skipped (its condition fails, on_fail: skip)."""
    b = WorkflowBuilder("many_skipped", "Many steps, all skipped.")
    b.argument("go", "Whether to run the steps", required=True, type="string")
    b.tool("noop", "Does nothing.", input_schema={"type": "object", "properties": {"x": {}}},
           annotations={"readOnlyHint": True})
    for i in range(n):
        b.step(f"s{i}", tool="noop", bind=f"r{i}", args={"x": step(f"r{i - 1}")} if i else {},
               when=condition(arg("go"), equals="yes"), on_fail="skip")
    wf = b.build()
    return Workflow(wf.name, wf.description, wf.arguments, wf.instructions, wf.tools, CountingSteps(wf.steps))


def noop_server(*workflows: Workflow) -> MCPServer:
    server = MCPServer("runner")

    @server.tool()
    def noop(x: Any = None) -> str:
        """Does nothing."""
        return "ok"

    attach(server, None, list(workflows))
    return server


async def test_a_run_of_skipped_steps_reads_each_step_a_bounded_number_of_times():
    """Linear, by counting: ten times the skipped steps read ten times the step records (each skipped step used to
    scan every step after it for the ones that read its result: a hundredfold)."""
    reads = {}
    for n in (100, 1000):
        server = noop_server(skipping(n))
        async with Client(server) as c:
            CountingSteps.reads = 0
            result = await c.get_prompt("many_skipped", {"go": "no"})
            reads[n] = CountingSteps.reads
        last = result.messages[-1].content.text
        assert last == f"Done: 0 of the {n} steps of `many_skipped` ran on the server; {n} were skipped."
        assert "Step 2 (`s1`) will not have `r0`." in result.messages[2].content.text
    assert reads[1000] <= 10 * reads[100] + 10, reads


async def test_a_confirmation_on_the_first_step_keeps_one_opening():
    wf = (WorkflowBuilder("first_confirmed", "A first step that needs a yes.")
          .tool("noop", "Does nothing.", input_schema={"type": "object", "properties": {"x": {}}},
                annotations={"readOnlyHint": False})
          .step("only", tool="noop", confirm=confirm("Run it?"))
          .build())

    async def yes(_ctx: Any, _params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"confirm": True})

    async with Client(noop_server(wf), elicitation_callback=yes) as c:
        result = await c.get_prompt("first_confirmed", {})
    texts = [m.content.text for m in result.messages]
    assert [t.split("\n")[0].split(":")[0] for t in texts] == [
        "Run the workflow `first_confirmed`", "Plan", "Step 1 of 1", "Result of `noop`", "Done"]
