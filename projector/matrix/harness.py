"""The surface harness: each task, surface and scenario, run over stdio against a freshly started server.

Every run spawns ``python -m projector.matrix.serve`` (the demo server plus the server-side agent) and talks to it
with the MCP SDK's ``Client`` over stdio, through a transport wrapper that records every JSON-RPC message on the
wire. A run opens a measuring window around the surface's own requests; what happens outside it (the session set-up,
``tools/list``, reading the ledger afterwards, reading the agent's trace) is not counted.

The figures, per run:

- **round trips**: JSON-RPC requests the client sent inside the window (each waits for its response);
- **model turns**: client-side model inferences. Skill: one per request (the model makes them one at a time, each
  after reading the last result) plus one for the final answer. Workflow, gated or not: one (the user picks the
  prompt; the model reads the transcript and answers). Agent: two (call the agent tool; answer from its message).
  Workflow with confirmation: one, as for the workflow; the question goes to a simulated person, not to a model
  (see below);
- **server model turns** (agent only): the agent's own inferences, from its trace: one per step plus one for its
  final message. Its instructions are composed from the lock its server made at set-up, before its loop, so the
  SKILL.md is not one of its steps; **instructions bytes** is their size;
- **context bytes**: for each response received inside the window, the ``result`` object as it came off the wire,
  less the protocol envelope (``_meta`` and ``resultType``), serialized as compact JSON with sorted keys
  (``separators=(",", ":")``, UTF-8, non-ASCII kept); summed. An ``InputRequiredResult``'s sealed
  ``requestState`` is left out too (see the confirmed surface below);
- **refund issued**: whether the server's ledger (the read-only ``list_refunds`` tool, read after the run) holds a
  refund for the scenario's order. The ledger is read before the run too, and must be empty.

The **confirmed** surface (B3) is the workflow prompt of a workflow with a ``confirm:`` on its side-effecting step,
got through mcp's ``Client`` with an elicitation callback: a **simulated person** who answers every confirmation with
the scenario's yes or no, and is counted each time they are asked. When the server asks, its ``prompts/get`` answers
with an ``InputRequiredResult`` and the client retries with the answer, so the run makes two ``prompts/get``
requests, both counted (round trips and context bytes, by the same rules, but for the sealed ``requestState``,
which no model reads and whose length changes with the expiry time mcp stamps into it); when the run stops before
the question (a failed ``when:``), it makes one and nobody is asked.

The **confirmed task** surface (B3t) is the same workflow and scenarios called as a workflow tool that runs as an MCP
task (the server adds ``--tasks``; :mod:`projector.matrix.taskrun` drives it): the task-augmented ``tools/call``, the
``tasks/get`` polls (each after the server's ``pollIntervalMs``), and a ``tasks/update`` with the person's answer
when the task is ``input_required``, all counted by the same rules.
"""

from __future__ import annotations

import json
import sys
import tempfile
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types import ElicitResult, TextContent

from ..errors import PlainError
from .agent import AGENT_TOOL, TRACE_TOOL
from .policy import DESCRIPTION as POLICY
from .reader import StepFailed, follow, parse, result_value
from .taskrun import call_as_task, task_client

SURFACES = ("skill", "workflow", "gated", "agent")
CONFIRMED = "confirmed"  # B3: run on the tasks with a confirmed workflow, with their own scenarios (a person's answer)
CONFIRMED_TASK = "confirmed-task"  # B3t: B3's workflow as a workflow tool called as an MCP task, the same scenarios
PERSON_SURFACES = (CONFIRMED, CONFIRMED_TASK)
LEDGER_TOOL = "list_refunds"
ENVELOPE = ("_meta", "resultType")
# An InputRequiredResult's sealed state: opaque, echoed back by the client, never read by a model or a person, and of
# no fixed length (mcp's seal stamps an expiry time into it), so it is left out with the envelope.
OPAQUE = ("requestState",)


@dataclass(frozen=True)
class Task:
    task: str
    skill: str
    workflow: str
    description: str
    scenarios: tuple[tuple[str, dict[str, str]], ...]
    refunds: bool = False
    not_applicable: dict[str, str] = field(default_factory=dict)
    gated_workflow: str | None = None  # the same workflow with its gate stated as data (when:)
    confirmed_workflow: str | None = None  # the gated workflow with a person's yes before its side effect (confirm:)
    # the confirmed surface's scenarios: (name, arguments, the simulated person's answer to every confirmation)
    confirmed_scenarios: tuple[tuple[str, dict[str, str], str], ...] = ()


NO_GATE = "no step of this workflow has a condition to state, so it has no gated variant"
NO_CONFIRM = (
    "no confirmed workflow: no step of this workflow has a side effect for a person to confirm, so it has "
    "no confirmed variant"
)
REASON = "It arrived broken."  # the confirmed prompt's `reason`, given, so the person is asked only to confirm

TASKS = (
    Task(
        "refunds",
        "refund-flow",
        "refund_flow",
        "The `refund-flow` skill and the `refund_flow` workflow prompt (`workflows/refunds.yaml`), and the gated "
        "prompt `refund_flow_gated` (`workflows/refunds-gated.yaml`), on order A1001, "
        "which the demo store's policy finds eligible, and on order A1002, a final-sale item, which it does not.",
        (("eligible", {"order_id": "A1001"}), ("ineligible", {"order_id": "A1002"})),
        refunds=True,
        gated_workflow="refund_flow_gated",
        confirmed_workflow="refund_flow_approved",
        confirmed_scenarios=tuple(
            (f"{name}-{said}", {"order_id": order, "reason": REASON}, said)
            for name, order in (("eligible", "A1001"), ("ineligible", "A1002"))
            for said in ("yes", "no")
        ),
    ),
    Task(
        "hello-world",
        "hello-world",
        "hello_world",
        "The `hello-world` skill and the `hello_world` prompt: one read-only tool call, no judgment.",
        (("greet", {"name": "Ada"}),),
        not_applicable={"gated": NO_GATE, CONFIRMED: NO_CONFIRM, CONFIRMED_TASK: NO_CONFIRM},
    ),
    Task(
        "code-mode",
        "code-mode",
        "code_mode",
        "The `code-mode` skill and the `code_mode` prompt: read the database schema, then run one read-only query. "
        "The question comes with its SQL, so the simulated model does not have to write any.",
        (
            (
                "query",
                {
                    "question": "How many orders are in each status?",
                    "sql": "SELECT status, COUNT(*) AS orders FROM orders GROUP BY status ORDER BY status",
                },
            ),
        ),
        not_applicable={"gated": NO_GATE, CONFIRMED: NO_CONFIRM, CONFIRMED_TASK: NO_CONFIRM},
    ),
)


def canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def context_bytes(result: dict[str, Any]) -> int:
    return len(canonical({k: v for k, v in result.items() if k not in ENVELOPE and k not in OPAQUE}))


# ------------------------------------------------------------------------------------------------ the wire recorder


class WireLog:
    """Every JSON-RPC request the client sends and every response it receives, while ``recording`` is on."""

    def __init__(self) -> None:
        self.recording = False
        self.requests: list[dict[str, Any]] = []  # {"id", "method", "params"}
        self.responses: dict[Any, dict[str, Any]] = {}  # id -> {"result": ...} or {"error": ...}
        self._window: set[Any] = set()

    def sent(self, message: Any) -> None:
        data = _as_dict(message)
        if "method" in data and "id" in data and self.recording:
            self.requests.append({"id": data["id"], "method": data["method"], "params": data.get("params") or {}})
            self._window.add(data["id"])

    def received(self, message: Any) -> None:
        data = _as_dict(message)
        if "method" not in data and data.get("id") in self._window:
            self.responses[data["id"]] = data


def _as_dict(message: Any) -> dict[str, Any]:
    inner = getattr(message, "message", message)
    inner = getattr(inner, "root", inner)
    if hasattr(inner, "model_dump"):
        return inner.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return inner if isinstance(inner, dict) else {}


class _Read:
    def __init__(self, stream: Any, log: WireLog):
        self._stream, self._log = stream, log

    def __getattr__(self, name: str) -> Any:  # last_context and anything else the dispatcher may read
        return getattr(self._stream, name)

    async def receive(self) -> Any:
        item = await self._stream.receive()
        if not isinstance(item, Exception):
            self._log.received(item)
        return item

    def __aiter__(self) -> _Read:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> _Read:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._stream.__aexit__(*exc)


class _Write:
    def __init__(self, stream: Any, log: WireLog):
        self._stream, self._log = stream, log

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    async def send(self, item: Any) -> None:
        self._log.sent(item)
        await self._stream.send(item)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> _Write:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._stream.__aexit__(*exc)


@asynccontextmanager
async def recorded_stdio(params: StdioServerParameters, log: WireLog, errlog: Any) -> AsyncIterator[Any]:
    async with stdio_client(params, errlog=errlog) as (read, write):
        yield _Read(read, log), _Write(write, log)


def server_params(
    root: Path, framework: str = "mcp", lock: Path | None = None, tasks: bool = False
) -> StdioServerParameters:
    """The measured server's command line. ``lock``: where its set-up writes the lock its agent composes from (the
    run's temporary folder); by default a temporary folder of the server's own. ``tasks``: the workflows are tools
    too, run as tasks (in memory) for a client that declares the Tasks extension."""
    root = root.resolve()
    return StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "projector.matrix.serve",
            "--skills",
            str(root / "generated_skills"),
            "--workflows",
            str(root / "workflows"),
            "--framework",
            framework,
            *(["--lock", str(lock)] if lock is not None else []),
            *(["--tasks"] if tasks else []),
        ],
        cwd=str(root),
    )


# ---------------------------------------------------------------------------------------------------- the surfaces


class _ClientBackend:
    """The simulated model's hands on the skill surface: one MCP request per step."""

    def __init__(self, client: Client, output_schemas: dict[str, Any]):
        self.client, self.output_schemas = client, output_schemas

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        result = await self.client.call_tool(name, arguments)
        texts = [c.text for c in result.content if isinstance(c, TextContent)]
        if result.is_error:
            raise StepFailed(f"the tool `{name}` failed: {' '.join(texts)}")
        return result_value(result.structured_content, texts, self.output_schemas.get(name))

    async def read_resource(self, uri: str) -> str:
        result = await self.client.read_resource(uri)
        return "".join(getattr(c, "text", "") or "" for c in result.contents)


def _tool_value(result: Any) -> Any:
    texts = [c.text for c in result.content if isinstance(c, TextContent)]
    return result_value(result.structured_content, texts, None)


async def _ledger(client: Client) -> list[dict[str, Any]]:
    value = _tool_value(await client.call_tool(LEDGER_TOOL, {}))
    if isinstance(value, dict) and set(value) == {"result"}:
        value = value["result"]
    return value


class Person:
    """The simulated person of the confirmed surface: answers every confirmation ``said`` (yes or no), declines any
    other question (an asked input; the matrix gives every input), and counts what they were asked."""

    def __init__(self, said: str):
        self.said, self.asked = said, 0

    def answer(self, schema: Any) -> dict[str, Any]:
        self.asked += 1
        if "confirm" not in (((schema if isinstance(schema, dict) else None) or {}).get("properties") or {}):
            return {"action": "decline"}
        return {"action": "accept", "content": {"confirm": self.said == "yes"}}

    async def __call__(self, _context: Any, params: Any) -> ElicitResult:
        return ElicitResult(**self.answer(getattr(params, "requested_schema", None)))

    async def in_task(self, params: dict[str, Any]) -> dict[str, Any]:
        """The same answer to a task's input request, which the client sends through ``tasks/update``."""
        return self.answer(params.get("requestedSchema"))


async def run_one(
    root: Path,
    task: Task,
    surface: str,
    scenario: str,
    arguments: dict[str, str],
    framework: str = "mcp",
    said: str | None = None,
) -> dict[str, Any]:
    log = WireLog()
    with (
        tempfile.TemporaryFile(mode="w+", encoding="utf-8") as errlog,
        tempfile.TemporaryDirectory(prefix="projector-matrix-") as folder,
    ):
        try:
            params = server_params(root, framework, Path(folder) / "skills.lock", tasks=surface == CONFIRMED_TASK)
            return await _run_one(task, surface, scenario, arguments, log, errlog, params, said)
        except MatrixError as exc:
            raise MatrixError(f"{task.task}/{surface}/{scenario}: {exc}") from None
        except Exception as exc:
            leaf = _leaf(exc)
            errlog.seek(0)
            log_tail = "\n".join(errlog.read().splitlines()[-12:])
            raise MatrixError(
                f"{task.task}/{surface}/{scenario}: {type(leaf).__name__}: {leaf}"
                + (f"\nthe server's last words:\n{log_tail}" if log_tail else "")
            ) from None


def waiting(request: dict[str, Any], response: dict[str, Any]) -> bool:
    """A ``tasks/get`` that found the task still ``working``: the client waited on the server's round. How many of
    these a run makes depends on how fast the machine is, not on the surface, so the figures leave them out."""
    result = response.get("result")
    return request["method"] == "tasks/get" and isinstance(result, dict) and result.get("status") == "working"


class MatrixError(PlainError):
    """A run of the matrix failed: which task, surface and scenario, and why."""


async def _surface_run(
    client: Client, task: Task, surface: str, arguments: dict[str, str], tools: dict[str, Any], person: Person | None
) -> str:
    """The surface's own requests (the measuring window); the final answer."""
    if surface == "skill":
        read = await client.read_resource(f"skill://{task.skill}/SKILL.md")
        proc = parse("".join(getattr(c, "text", "") or "" for c in read.contents))
        backend = _ClientBackend(client, {n: t.output_schema for n, t in tools.items()})
        return (await follow(proc, arguments, backend)).answer
    if surface in ("workflow", "gated", CONFIRMED):
        name = {"workflow": task.workflow, "gated": task.gated_workflow, CONFIRMED: task.confirmed_workflow}[surface]
        if name is None:
            raise MatrixError(f"the task has no {surface} workflow")
        if surface == CONFIRMED and person is None:
            raise MatrixError("the confirmed surface needs the person's answer")
        prompt = await client.get_prompt(name, arguments)
        return getattr(prompt.messages[-1].content, "text", "")
    if surface == CONFIRMED_TASK:
        if task.confirmed_workflow is None or person is None:
            raise MatrixError("the confirmed task needs a confirmed workflow and the person's answer")
        outcome = await call_as_task(client, task.confirmed_workflow, arguments, person.in_task)
        if outcome.status != "completed":
            raise MatrixError(f"the task ended {outcome.status}: {outcome.text()}")
        return outcome.text()
    result = await client.call_tool(AGENT_TOOL, {"skill": task.skill, "arguments": arguments})
    value = _tool_value(result)
    answer = value["result"] if isinstance(value, dict) and set(value) == {"result"} else str(value)
    if result.is_error:
        raise MatrixError(f"the agent failed: {answer}")
    return answer


async def _run_one(
    task: Task,
    surface: str,
    scenario: str,
    arguments: dict[str, str],
    log: WireLog,
    errlog: Any,
    params: StdioServerParameters,
    said: str | None = None,
) -> dict[str, Any]:
    person = Person(said) if surface in PERSON_SURFACES and said is not None else None
    stream = recorded_stdio(params, log, errlog)
    if surface == CONFIRMED_TASK:  # the client declares the Tasks extension; the person answers by tasks/update
        connected = task_client(stream, cache=None)
    else:
        connected = Client(stream, cache=None, **({"elicitation_callback": person} if person is not None else {}))
    async with connected as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        if task.refunds and await _ledger(client):
            raise MatrixError("the server's ledger is not empty before the run")
        log.recording = True
        answer = await _surface_run(client, task, surface, arguments, tools, person)
        log.recording = False
        ledger = await _ledger(client) if task.refunds else None
        trace = _tool_value(await client.call_tool(TRACE_TOOL, {})) if surface == "agent" else None
    requests = []
    total = 0
    for req in log.requests:
        resp = log.responses.get(req["id"])
        if resp is None:
            raise MatrixError(f"no response to {req['method']}")
        if waiting(req, resp):
            continue
        size = context_bytes(resp["result"]) if "result" in resp else len(canonical(resp.get("error")))
        total += size
        params = req["params"]
        target = params.get("uri") or params.get("name") or ""
        requests.append({"method": req["method"], "target": target, "bytes": size})
    turns = {"skill": len(requests) + 1, "workflow": 1, "gated": 1, "agent": 2, CONFIRMED: 1, CONFIRMED_TASK: 1}[
        surface
    ]
    run: dict[str, Any] = {
        "surface": surface,
        "scenario": scenario,
        "arguments": arguments,
        "round_trips": len(requests),
        "model_turns": turns,
        "server_model_turns": (trace or {}).get("model_turns", 0) if surface == "agent" else 0,
        "context_bytes": total,
    }
    if task.refunds:
        order = arguments["order_id"]
        run["order_id"] = order
        run["refund_issued"] = any(r.get("order_id") == order for r in ledger or [])
        run["ledger"] = ledger
    if person is not None:
        run["person_answer"] = person.said
        run["person_asked"] = person.asked
    run["requests"] = requests
    if surface == "agent":
        run["server_requests"] = (trace or {}).get("requests", [])
        run["instructions_bytes"] = (trace or {}).get("instructions_bytes", 0)
        run["skill_md_bytes"] = (trace or {}).get("skill_bytes", 0)
    run["answer"] = answer
    return run


DEFINITIONS = {
    "round_trips": "JSON-RPC requests the client sent during the run, counted on the wire (each waits for its "
    "response). Session set-up (discovery, `tools/list`) and the harness's own reads of the ledger "
    "and the agent's trace are outside the run and not counted, and so, on the confirmed task (B3t), is a "
    "`tasks/get` that finds the task still `working` (a wait whose number depends on the machine's speed).",
    "model_turns": "inferences of the client's model. Skill: one per request (each needs the last result) plus one "
    "for the final answer. Workflow, gated or not: one (the user picks the prompt; the model reads "
    "the transcript and answers). Agent: two (call the agent tool; answer from its message). The agent's own turns "
    "run on the server and are listed separately as server model turns.",
    "server_model_turns": "agent only: inferences of the agent's model, on the server: one per step it takes (a "
    "tool call or a read) plus one for its final message. The SKILL.md is not one of its steps: "
    "the agent's instructions are composed before its loop, from the lock its server's set-up "
    "made (`projector.remote.compose`), with the skill in them.",
    "instructions_bytes": "agent only: the UTF-8 bytes of the system instructions composed for the run: a preamble, "
    "then the SKILL.md (`skill_md_bytes`) inside its origin tag. They stay on the server; none "
    "of them reaches the client.",
    "context_bytes": "the sum, over the responses the client received during the run, of the JSON-RPC `result` "
    "object as it came off the wire, less the protocol envelope (`_meta`, `resultType`, and a "
    "sealed `requestState`, opaque to the client and stamped with its expiry), "
    "serialized as compact JSON with sorted keys (separators `,` and `:`, UTF-8, non-ASCII kept). "
    "Everything a host could put in its model's context: for the skill, the SKILL.md and every "
    "result; for the workflow, the transcript; for the agent, its final message.",
    "refund_issued": "whether the server's ledger, read with the read-only `list_refunds` tool after the run, holds "
    "a refund for the scenario's order. Each run starts a fresh server, whose ledger is checked to be "
    "empty first.",
    "person_answer": "confirmed workflow prompt (B3) and confirmed task (B3t) only: the simulated person's answer "
    "to every confirmation the "
    "server asks for (`yes` or `no`). The prompt's `reason` is given, so nothing else is asked. "
    "When the server asks, the client retries `prompts/get` with the answer: two round trips, both "
    "counted, the first one's context bytes being the question (the message, the values shown, "
    "the yes/no field). The sealed `requestState` that comes with it is left out of the context "
    "bytes: no model or person reads it (the client only sends it back), and its length changes "
    "with the expiry time sealed into it. The client's model turn is still one. On B3t the question comes as the "
    "task's `input_required` in a `tasks/get` answer, and the answer goes back in one `tasks/update`: the "
    "task-augmented `tools/call`, the `tasks/get` polls and the `tasks/update` are round trips, their results "
    "context bytes, and the client's model turn is one. A poll that finds the task still `working` (the server's "
    "round outlasted the `pollIntervalMs` the client waited) is left out of both: how many such polls a run "
    "makes depends on the machine's speed, not on the surface, so B3t counts the polls that found the task "
    "`input_required` or ended, one per round, as a client makes when each round ends within its poll interval.",
    "person_asked": "confirmed workflow prompt (B3) and confirmed task (B3t) only: how many times the simulated "
    "person was asked. Zero when "
    "the run stopped at a condition before the confirmed step.",
}


async def measure(
    root: Path, tasks: tuple[Task, ...] = TASKS, *, parallel: int = 2, framework: str = "mcp"
) -> dict[str, Any]:
    """Run every task, surface and scenario, and (for the whole of :data:`TASKS`) every derived eval case on the
    workflow prompt, workflow tool and skill surfaces (:func:`projector.matrix.evalruns.measured`); return the
    matrix data. Each run has its own server process, so up to ``parallel`` of them run at once; the data does not
    depend on it (no times, fixed order). ``framework`` is the demo server's framework (``mcp`` or ``fastmcp``); the
    data does not name it, so both give comparable bytes (the eval cases' servers are mcp's, whatever it is)."""
    jobs = [
        (ti, task, surface, scenario, arguments, None)
        for ti, task in enumerate(tasks)
        for surface in SURFACES
        if surface not in task.not_applicable
        for scenario, arguments in task.scenarios
    ]
    jobs += [
        (ti, task, surface, scenario, arguments, said)
        for ti, task in enumerate(tasks)
        if task.confirmed_workflow is not None
        for surface in PERSON_SURFACES
        for scenario, arguments, said in task.confirmed_scenarios
    ]
    jobs.sort(key=lambda job: job[0])  # stable: each task's runs together, the confirmed ones after the others
    results: list[dict[str, Any] | None] = [None] * len(jobs)
    limiter = anyio.CapacityLimiter(max(1, parallel))

    async def one(i: int) -> None:
        _, task, surface, scenario, arguments, said = jobs[i]
        async with limiter:
            results[i] = await run_one(root, task, surface, scenario, arguments, framework, said)

    try:
        async with anyio.create_task_group() as tg:
            for i in range(len(jobs)):
                tg.start_soon(one, i)
    except BaseExceptionGroup as group:  # report the first failed run plainly
        first = _leaf(group)
        if isinstance(first, MatrixError):
            raise first from None
        raise
    from .evalruns import measured  # the derived eval cases (projector.evals), on the prompt, tool and skill

    cases = await measured(root, parallel) if tasks == TASKS else None  # with the whole measurement only
    out_tasks = []
    for ti, task in enumerate(tasks):
        out_tasks.append(
            {
                "task": task.task,
                "skill": task.skill,
                "workflow": task.workflow,
                "description": task.description,
                "not_applicable": dict(task.not_applicable),
                "runs": [results[i] for i, job in enumerate(jobs) if job[0] == ti],
            }
        )
    return {
        "format": 1,
        "generator": "project-skill matrix",
        "transport": "stdio: `python -m projector.matrix.serve`, the demo server of `project-skill serve` plus the "
        "server-side agent tool, whose set-up pins the served skills into a lock in the run's temporary "
        "folder before the first request",
        "policy": POLICY,
        "definitions": DEFINITIONS,
        "tasks": out_tasks,
        **({"cases": cases} if cases is not None else {}),
    }


def _leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup):
        exc = exc.exceptions[0]
    return exc


def matrix_json(data: dict[str, Any]) -> bytes:
    """The bytes of ``docs/data/matrix.json``: indent 2, keys in the measurement's order, UTF-8, one newline."""
    return (json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False) + "\n").encode("utf-8")
