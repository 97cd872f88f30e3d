"""The cost of durability: a 4-step workflow run as a task against the same run as a plain tool call.

    .venv/bin/python bench/tasks.py [--runs N] [--rounds R]

One workflow of 4 steps (built here: each step calls the tool ``bump`` with the previous step's result) is served as a
workflow tool on mcp's MCPServer, with ``attach(..., workflow_tools=True, tasks=Tasks(store))``, and driven in process
through mcp's ``Client`` in memory, the way a host drives it:

- **plain**: a client that did not declare the Tasks extension sends ``tools/call`` and gets the ``CallToolResult``;
- **task**: a client that declared it sends ``tools/call``, gets a ``CreateTaskResult``, and polls ``tasks/get``
  (yielding to the event loop between polls, no sleep) until the task is ``completed`` with its result inlined;

each with the tasks kept in this process's memory (:class:`~projector.server.tasks.MemoryStore`) and in a SQLite file
(:class:`~projector.server.taskstore.SqliteStore`, in a temporary folder, removed after). It prints, for each, the
median over ``--rounds`` rounds of ``--runs`` runs, in milliseconds per run, the polls a task took, and the ratio
task / plain. Both paths run the same steps with the same results (checked before timing). Nothing is written into
the project, and no test times this.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from the repository
    sys.path.insert(0, str(ROOT))

from mcp import Client  # noqa: E402
from mcp.client.extension import advertise  # noqa: E402
from mcp.server.mcpserver import MCPServer  # noqa: E402
from mcp_types import Request, RequestParams  # noqa: E402
from pydantic import ConfigDict, TypeAdapter  # noqa: E402

from projector.builder import WorkflowBuilder, arg, step  # noqa: E402
from projector.server import attach  # noqa: E402
from projector.server.tasks import TASKS_EXTENSION, MemoryStore, Tasks, TaskStore  # noqa: E402

STEPS = 4
TOOL = "four_steps"
RAW = TypeAdapter(dict[str, Any])


class _Params(RequestParams):
    model_config = ConfigDict(extra="allow")


class _Raw(Request[_Params, str]):
    method: str
    params: _Params


async def send(client: Client, method: str, **params: Any) -> dict[str, Any]:
    """One request as it is on the wire (the same client path for the plain call and the task)."""
    return await client.session.send_request(_Raw(method=method, params=_Params(**params)), RAW)


def server(store: TaskStore) -> MCPServer:
    srv = MCPServer("bench-tasks")

    @srv.tool()
    def bump(x: int) -> int:
        """Add one."""
        return x + 1

    b = WorkflowBuilder(TOOL, "Bump a number four times.", source="bench/tasks.py")
    b.argument("start", "The number to start from", required=True, type="integer")
    b.tool(
        "bump",
        "Add one.",
        input_schema={"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
        annotations={"readOnlyHint": True},
    )
    for i in range(STEPS):
        b.step(f"s{i}", tool="bump", args={"x": step(f"r{i - 1}") if i else arg("start")}, bind=f"r{i}")
    attach(
        srv,
        None,
        [b.build()],
        workflow_prompts=False,
        bootstrap_prompts=False,
        workflow_tools=True,
        tasks=Tasks(store, poll_ms=1),
    )
    return srv


async def plain(client: Client) -> tuple[dict[str, Any], int]:
    return await send(client, "tools/call", name=TOOL, arguments={"start": 1}), 0


async def as_task(client: Client) -> tuple[dict[str, Any], int]:
    created = await send(client, "tools/call", name=TOOL, arguments={"start": 1})
    assert created["resultType"] == "task", created
    polls = 0
    while True:
        polls += 1
        task = await send(client, "tasks/get", taskId=created["taskId"])
        if task["status"] != "working":
            break
        await anyio.sleep(0)
    assert task["status"] == "completed", task
    return task["result"], polls


async def measure(store: TaskStore, runs: int, rounds: int) -> dict[str, Any]:
    srv = server(store)
    async with Client(srv) as bare, Client(srv, extensions=[advertise(TASKS_EXTENSION)]) as declared:
        plain_result, _ = await plain(bare)
        task_result, _ = await as_task(declared)
        assert (
            plain_result["structuredContent"]
            == task_result["structuredContent"]
            == {"results": {f"r{i}": 2 + i for i in range(STEPS)}}
        ), (plain_result, task_result)
        kinds = (("plain", bare, plain), ("task", declared, as_task))
        per_run: dict[str, list[float]] = {name: [] for name, _, _ in kinds}
        polls: list[int] = []
        for _ in range(rounds):  # the two take turns, so that a busy machine slows both alike
            for name, client, run in kinds:
                start = time.perf_counter()
                for _ in range(runs):
                    polls.append((await run(client))[1])
                per_run[name].append((time.perf_counter() - start) / runs * 1e3)
        out = {name: statistics.median(times) for name, times in per_run.items()}
        out["polls"] = statistics.median(p for p in polls if p)
    return out


async def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=50, help="runs per round (default 50)")
    ap.add_argument("--rounds", type=int, default=5, help="rounds; the median counts (default 5)")
    args = ap.parse_args(argv)
    if args.runs < 1 or args.rounds < 1:
        ap.error("--runs and --rounds must be at least 1")
    from projector.server.taskstore import SqliteStore

    folder = Path(tempfile.mkdtemp(prefix="projector-bench-tasks-"))
    try:
        stores: list[tuple[str, TaskStore]] = [("memory", MemoryStore()), ("sqlite", SqliteStore(folder / "t.db"))]
        print(
            f"a {STEPS}-step workflow tool, mcp MCPServer in memory; median of {args.rounds} rounds of {args.runs} runs"
        )
        for label, store in stores:
            m = await measure(store, args.runs, args.rounds)
            print(
                f"{label:>7} store: plain {m['plain']:7.2f} ms/run   task {m['task']:7.2f} ms/run "
                f"({m['polls']:g} polls)   task/plain {m['task'] / m['plain']:5.2f}x"
            )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(anyio.run(main))
