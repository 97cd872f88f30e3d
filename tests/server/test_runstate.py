"""The state a paused run carries to its retry (:mod:`projector.server.runstate`), through real transports.

A person's yes comes back with the sealed state, and a server takes at most 4 MiB in one message (mcp's HTTP body
limit, ``serve``'s stdio line limit). So each saved result is carried once, a run whose state would still make the
retry too large stops before it asks (the person is never asked a question whose yes cannot come back), and the
client is never left waiting without an answer. The server here is a small MCPServer of our own with a tool whose
result is as large as the test asks, served by projector's own stdio and HTTP transports in a subprocess.
"""

from __future__ import annotations

import dataclasses
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import ElicitResult

from projector.load import load_file
from projector.server.runstate import RunState

from .test_serve_skills import ROOT, free_port, stop

pytestmark = pytest.mark.anyio

SERVER = '''
import sys

from mcp.server.mcpserver import MCPServer

from projector.builder import WorkflowBuilder, arg, confirm, step
from projector.server import attach

server = MCPServer("big")
acted = []


@server.tool()
def fetch(size: int) -> dict:
    """A record whose blob is `size` characters."""
    return {"id": "X1", "blob": "a" * size}


@server.tool()
def act(id: str) -> str:
    """Act on the record (counted)."""
    acted.append(id)
    return f"acted on {id}"


@server.tool()
def acted_count() -> int:
    """How many times act ran."""
    return len(acted)


def workflow():
    obj = {"type": "object"}
    return (WorkflowBuilder("big_then_confirm", "Fetch a large record, then act on it once a person says yes.")
            .argument("size", "How large the record's blob is", required=True, type="integer")
            .tool("fetch", "A record.", input_schema={**obj, "properties": {"size": {"type": "integer"}},
                                                      "required": ["size"]}, annotations={"readOnlyHint": True})
            .tool("act", "Act on it.", input_schema={**obj, "properties": {"id": {"type": "string"}},
                                                     "required": ["id"]}, annotations={"readOnlyHint": False})
            .step("fetch", tool="fetch", args={"size": arg("size")}, bind="big")
            .step("act", tool="act", args={"id": step("big", "id")}, bind="done",
                  confirm=confirm("Act on this record?", step("big", "id")))
            .build())


attach(server, None, [workflow()])

if __name__ == "__main__":
    import anyio

    if sys.argv[1] == "stdio":
        from projector.server.stdio import serve_stdio

        anyio.run(serve_stdio, server)
    else:
        from projector.server.http import serve_http

        serve_http(server, "127.0.0.1", int(sys.argv[2]))
'''

PROMPT = "big_then_confirm"
CARRIED = 1_800_000  # over the old bound (the results twice: about 1.6 MB), well under the new one (once)
TOO_LARGE = 3_300_000  # carried once and sealed (base64), still more than 4 MiB


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "big_server.py"
    path.write_text(SERVER, encoding="utf-8")
    return path


def yes_counter() -> Any:
    async def on_elicit(_ctx: Any, params: Any) -> ElicitResult:
        on_elicit.asked.append(params.message)  # type: ignore[attr-defined]
        return ElicitResult(action="accept", content={"confirm": True})

    on_elicit.asked = []  # type: ignore[attr-defined]
    return on_elicit


async def run_and_count(transport: Any, size: int) -> tuple[list[str], list[str], int]:
    """The prompt with a yes to every question: its transcript, the questions asked, and how often `act` ran."""
    on_elicit = yes_counter()
    with anyio.fail_after(120):  # a bound on a hang, not a timing: a client left waiting fails here
        async with Client(transport, cache=None, elicitation_callback=on_elicit) as c:
            result = await c.get_prompt(PROMPT, {"size": str(size)})
            count = (await c.call_tool("acted_count", {})).structured_content["result"]
    return [m.content.text for m in result.messages], on_elicit.asked, count


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def start_http(script: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(script), "http", str(port)],
        cwd=ROOT,
        env=env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {proc.stderr.read().decode()}")  # type: ignore[union-attr]
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc, port
        except OSError:
            time.sleep(0.1)
    stop(proc)
    raise RuntimeError("server did not start")


@pytest.mark.slow
async def test_a_large_result_is_confirmed_over_http_and_its_step_runs_once(script):
    proc, port = start_http(script)
    try:
        transcript, asked, acted = await run_and_count(streamable_http_client(f"http://127.0.0.1:{port}/mcp"), CARRIED)
    finally:
        stop(proc)
    assert len(asked) == 1 and acted == 1
    assert transcript[-1] == f"Done: all 2 steps of `{PROMPT}` ran on the server."
    assert sum('"blob": "aaa' in t for t in transcript) == 1  # the result turn, written once, as before the pause


@pytest.mark.slow
async def test_a_large_result_is_confirmed_over_stdio_and_its_step_runs_once(script):
    params = StdioServerParameters(command=sys.executable, args=[str(script), "stdio"], env=env(), cwd=str(ROOT))
    transcript, asked, acted = await run_and_count(stdio_client(params), CARRIED)
    assert len(asked) == 1 and acted == 1
    assert transcript[-1] == f"Done: all 2 steps of `{PROMPT}` ran on the server."


@pytest.mark.slow
async def test_a_state_too_large_to_come_back_stops_before_asking_and_names_the_bound(script):
    params = StdioServerParameters(command=sys.executable, args=[str(script), "stdio"], env=env(), cwd=str(ROOT))
    transcript, asked, acted = await run_and_count(stdio_client(params), TOO_LARGE)
    assert asked == [] and acted == 0  # nobody is asked a question whose yes could not come back
    last = transcript[-1]
    assert last.startswith("Stopped before step 2 of 2 (`act`): a person's answer must come back with the run's state")
    assert "over the 4,194,304 bytes (4 MiB) a server takes in one message" in last
    assert "The server did not call `act`" in last


# ---------------------------------------------------------------------- a paused run's state is bound to its workflow

APPROVED = ROOT / "workflows" / "refunds-approved.yaml"


def _state() -> RunState:
    return RunState(2, "confirm", "t" * 32, {1: {"id": "A1001"}}, {"order": 1}, {}, 0, {}, [("user", "hi"), 1])


def test_a_state_is_refused_once_the_workflow_it_paused_on_has_changed():
    wf = load_file(APPROVED)
    text = _state().dumps(wf)
    assert RunState.loads(text, wf).step == 2
    changed = dataclasses.replace(wf, steps=(wf.steps[0], wf.steps[2], wf.steps[1], *wf.steps[3:]))
    with pytest.raises(MCPError) as raised:
        RunState.loads(text, changed)
    assert "the workflow has changed" in raised.value.error.message
