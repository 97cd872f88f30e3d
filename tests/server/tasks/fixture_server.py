"""The fixtures the official conformance suite's Tasks scenarios call (SEP-2663), on projector's Tasks layer.

Not part of the product: the suite names these tools (``greet``, ``slow_compute``, ``failing_job``,
``protocol_error_job``, ``confirm_delete``, ``multi_input``, ``test_tool_with_task``), and
``scripts/conformance.py --tasks [--framework mcp|fastmcp]`` serves them with::

    python tests/server/tasks/fixture_server.py --framework mcp --http 127.0.0.1:PORT

Each tool is a plain tool of the framework (what a client that did not declare the extension calls) and a job of
:class:`projector.server.tasks.Tasks` (what a task runs).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # run as a script from the repository
    sys.path.insert(0, str(ROOT))

from projector.server.tasks import Call, Done, Failure, NeedInput, Tasks  # noqa: E402


def text(t: str, *, is_error: bool = False) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": t}], **({"isError": True} if is_error else {})}


def ask(message: str, properties: dict[str, Any]) -> dict[str, Any]:
    return {"method": "elicitation/create", "params": {"mode": "form", "message": message, "requestedSchema": {
        "type": "object", "properties": properties}}}


def accepted(answer: Any) -> dict[str, Any]:
    if isinstance(answer, dict) and answer.get("action") == "accept" and isinstance(answer.get("content"), dict):
        return answer["content"]
    return {}


async def slow_compute_job(call: Call) -> Done:
    seconds = float(call.arguments.get("seconds", 0) or 0)
    await asyncio.sleep(min(seconds, 600))
    return Done(text(f"computed {call.arguments.get('label', '')} after {seconds:g}s"))


async def failing_job_job(call: Call) -> Done:
    await asyncio.sleep(1)
    return Done(text("the job failed", is_error=True))


async def protocol_error_job_job(call: Call) -> Done:
    raise Failure(-32603, "the job hit an internal error")


async def confirm_delete_job(call: Call) -> Done | NeedInput:
    name = str(call.arguments.get("filename", ""))
    if call.state is None:
        return NeedInput({"confirm": ask(f"Delete {name}?", {"confirm": {"type": "boolean"}})}, "asked")
    yes = accepted(call.answers.get("confirm")).get("confirm") is True
    return Done(text(f"deleted {name}" if yes else f"kept {name}"))


async def multi_input_job(call: Call) -> Done | NeedInput:
    if call.state is None:
        return NeedInput({"name": ask("Your name?", {"name": {"type": "string"}}),
                          "confirm": ask("Go on?", {"confirm": {"type": "boolean"}})}, "asked")
    return Done(text(f"hello {accepted(call.answers.get('name')).get('name', '')}"))


def gather_user_name(arguments: dict[str, Any], answers: dict[str, Any]) -> dict[str, Any] | None:
    if "user_name" in answers:
        return None
    return {"resultType": "input_required",
            "inputRequests": {"user_name": ask("What is your name?", {"name": {"type": "string"}})}}


async def with_task_job(call: Call) -> Done:
    return Done(text(f"Hello, {accepted(call.answers.get('user_name')).get('name', 'nobody')}!"))


def tasks() -> Tasks:
    t = Tasks(poll_ms=200)
    t.support("slow_compute", slow_compute_job)
    t.support("failing_job", failing_job_job, required=True)
    t.support("protocol_error_job", protocol_error_job_job)
    t.support("confirm_delete", confirm_delete_job)
    t.support("multi_input", multi_input_job)
    t.support("test_tool_with_task", with_task_job, required=True, gather=gather_user_name)
    return t


# The plain tools, for a client that did not declare the extension.

def greet(name: str) -> str:
    return f"Hello, {name}!"


async def slow_compute(seconds: float = 0, label: str = "") -> str:
    await asyncio.sleep(min(seconds, 600))
    return f"computed {label} after {seconds:g}s"


def failing_job() -> str:
    raise ValueError("the job failed")


def protocol_error_job() -> str:
    raise ValueError("the job hit an internal error")


def confirm_delete(filename: str) -> str:
    return f"a person must confirm deleting {filename}: call it as a task"


def multi_input() -> str:
    return "call it as a task"


def test_tool_with_task() -> str:
    return "call it as a task"


TOOLS = (greet, slow_compute, failing_job, protocol_error_job, confirm_delete, multi_input, test_tool_with_task)


def server(framework: str) -> Any:
    from projector.server import adapters

    adapter = adapters.get(framework)
    srv = adapter.make_server("tasks-fixtures", version="1.0.0", instructions="SEP-2663 conformance fixtures",
                              page_size=50)
    for fn in TOOLS:
        adapter.add_tool(srv, fn, name=fn.__name__, description=f"the conformance fixture {fn.__name__}",
                         annotations=None, text_only=True)
    adapter.add_tasks(srv, tasks())
    return srv


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--framework", default="mcp")
    ap.add_argument("--http", required=True, metavar="HOST:PORT")
    args = ap.parse_args()
    host, _, port = args.http.rpartition(":")
    from projector.server import serve_http

    serve_http(server(args.framework), host, int(port))


if __name__ == "__main__":
    main()
