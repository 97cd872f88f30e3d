"""The derived eval cases run against the real server, graded from what it recorded: ``python -m
projector.matrix.evalruns``.

What every run of a case shares, whoever plays the model (Inspect AI's, in :mod:`projector.matrix.evals_inspect`, or
none at all, here): the cases of the workflows (:mod:`projector.evals`), the case's own server
(:mod:`projector.server.evalcase`, behind ``project-skill serve``, which answers each tool with the result the case
states and records every call), and the grade (:func:`grade`: the calls the case expects against the calls the
server recorded; an unsafe side effect is a side-effecting tool called where the case expects it not to be).

The surfaces run here need no model: the **workflow prompt** (a workflow with ``when:`` conditions is its gated
prompt: one ``prompts/get`` with the case's arguments), the **workflow tool** (one ``tools/call``) and the **workflow
tool as a task** (``serve --workflow-tools --tasks``: a task-augmented ``tools/call``, ``tasks/get`` until the task
asks or ends, :mod:`projector.matrix.taskrun`), each with a simulated person who gives the answers the case states
when the server asks (a confirmation's yes, no or silence; an asked input given or refused), through MCP
elicitation, or through ``tasks/update`` on the task. A case's silence is its answer as MCP spells it, an elicitation
result of action ``cancel`` (the person dismissed the question), on every surface. Then the **skill**, read from the
server and followed by the matrix's simulated model and policy (:mod:`projector.matrix.reader`,
:mod:`projector.matrix.policy`), and the **agent**: the matrix's server-side agent tool (:mod:`projector.matrix.agent`,
on the case's server through :mod:`projector.matrix.serve` ``--case``), which composes the pinned, verified skill and
follows it with the same reader and policy on the server. Neither asks the person anything. The server's runner does
what the workflow states, so every case should pass on the prompt, the tool and the task; a case that does not is a
case the derivation got wrong or a runner that does not do what the workflow says. The skill and agent surfaces show
what the simulated policy does with the same cases.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..errors import PlainError, printable
from ..evals import evals_json, sample
from ..load import load_all
from ..model import FromStep, Workflow
from ..naming import skill_name
from ..server.arguments import canonical_text
from ..server.evalcase import ENV

PROG = "python -m projector.matrix.evalruns"
MAX_RECORD_BYTES = 1024 * 1024  # what the grader reads of one case's record
MAX_ERRLOG_BYTES = 64 * 1024  # what is read of a case server's stderr when it did not start
CALL_TIMEOUT = 120.0  # seconds for one case's server to start and answer


class CaseServerFailed(PlainError):
    """A case's server did not start (or closed before it answered ``initialize``): the run stops there, saying the
    server's own error in one line, since every other case would meet it too."""


def load_workflows(paths: list[str], tools_from: str | None = None) -> list[Workflow]:
    """The workflows under ``paths`` as ``build`` compiles them: with ``tools_from`` (a server or a tools snapshot),
    their tools filled from it (:func:`projector.remote.tools.apply_tools_from`), so that a step whose tool only the
    server declares is a case like any other. Raises the core's positioned :class:`~projector.errors.LoadError`."""
    if not tools_from:
        return load_all(paths)
    from ..remote.tools import apply_tools_from

    return apply_tools_from(load_all(paths, tools_from_server=True), tools_from)[0]


# ---------------------------------------------------------------------------------------------------- the cases


def _tool_json(t: Any) -> dict[str, Any]:
    """A workflow's tool declaration as MCP's ``Tool`` (the case server offers it as written)."""
    out: dict[str, Any] = {
        "name": t.name,
        "description": t.description,
        "inputSchema": t.input_schema if isinstance(t.input_schema, dict) else {"type": "object"},
    }
    if isinstance(t.annotations, dict):
        out["annotations"] = t.annotations
    if isinstance(t.output_schema, dict):
        out["outputSchema"] = t.output_schema
    return out


def served(wfs: list[Workflow]) -> tuple[list[dict[str, Any]], list[str]]:
    """The tools (the first declaration of a name wins) and the resources every served workflow needs: the case
    server offers them all, since ``serve`` attaches every workflow and skill of the folders to it."""
    tools: dict[str, dict[str, Any]] = {}
    for t in (t for wf in wfs for t in wf.tools):
        tools.setdefault(t.name, _tool_json(t))
    return list(tools.values()), sorted({uri for wf in wfs for s in wf.steps for uri in s.resources})


def _put_path(node: dict[str, Any], path: tuple[str | int, ...], value: Any) -> None:
    for part in path[:-1]:
        nxt = node.get(str(part))
        node = node.setdefault(str(part), {}) if not isinstance(nxt, dict) else nxt
    node.setdefault(str(path[-1]), value)


def _merge(base: Any, stated: Any) -> Any:
    """``stated`` (what the case says a tool returns) over ``base`` (the fields later steps read)."""
    if isinstance(base, dict) and isinstance(stated, dict):
        return {**base, **{k: _merge(base.get(k), v) for k, v in stated.items()}}
    return stated if stated is not None else base


def read_fields(wf: Workflow) -> dict[str, dict[str, Any]]:
    """By bind, a result holding every field a later step reads from it (an argument or a URI template), each a
    sample of the type the reading tool's input schema gives it: what a tool the case says nothing about returns,
    so that the run can go on."""
    tools = {t.name: t for t in wf.tools}
    out: dict[str, dict[str, Any]] = {}
    for step in wf.steps:
        schema = tools[step.tool].input_schema if step.tool in tools else None
        props = schema.get("properties") if isinstance(schema, dict) else None
        for key, src in (*step.args, *step.template):
            if isinstance(src, FromStep) and src.path:
                prop = props.get(key) if isinstance(props, dict) and (key, src) in step.args else None
                kind = prop.get("type") if isinstance(prop, dict) and isinstance(prop.get("type"), str) else None
                _put_path(out.setdefault(src.bind, {}), src.path, sample(str(src.path[-1]), kind))
    return out


def _results(wf: Workflow, stated: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """What each tool returns, by tool, in the order of the steps that call it."""
    fields = read_fields(wf)
    by_step = {r["step"]: r["returns"] for r in stated}
    results: dict[str, list[Any]] = {}
    for step in wf.steps:
        if step.tool is not None and step.bind is not None:
            results.setdefault(step.tool, []).append(_merge(fields.get(step.bind, {}), by_step.get(step.name)))
    return results


def cases(wfs: list[Workflow], workflow: str = "") -> list[dict[str, Any]]:
    """Every derived case of ``wfs`` (of one workflow, when ``workflow`` names it), with what its server needs:
    ``id`` (``WORKFLOW-N``, N its id in ``evals.json``), ``workflow``, ``prompt``, ``expected_output``,
    ``arguments``, ``answers``, ``covers``, ``calls``, ``side_effecting`` and ``server`` (the case file's content
    but its record)."""
    tools, resources = served(wfs)
    out = []
    for wf in wfs:
        if workflow not in ("", wf.name):
            continue
        side = sorted(t.name for t in wf.tools if t.side_effecting)
        for case in json.loads(evals_json(wf, wf.name)[0])["evals"]:
            p = case["projector"]
            results = _results(wf, p["results"])
            out.append(
                {
                    "id": f"{wf.name}-{case['id']}",
                    "workflow": wf.name,
                    "prompt": case["prompt"],
                    "expected_output": case["expected_output"],
                    "arguments": p["arguments"],
                    "answers": p["answers"],
                    "covers": p["covers"],
                    "calls": p["calls"],
                    "side_effecting": side,
                    "server": {"tools": tools, "resources": resources, "results": results},
                }
            )
    return out


# ------------------------------------------------------------------------------------------ the case's server


def write_case(folder: Path, server: dict[str, Any]) -> None:
    """The case file and its empty record, in ``folder`` (a new folder of the run's own)."""
    (folder / "record.jsonl").touch()
    (folder / "case.json").write_text(json.dumps({**server, "record": str(folder / "record.jsonl")}), encoding="utf-8")


@contextmanager
def case_folder(server: dict[str, Any]) -> Iterator[Path]:
    """A temporary folder with the case file and its empty record, removed when the block ends."""
    with tempfile.TemporaryDirectory(prefix="projector-eval-") as tmp:
        write_case(Path(tmp), server)
        yield Path(tmp)


def serve_command(folder: Path, workflows: str, skills: str, *flags: str) -> tuple[str, list[str], dict[str, str]]:
    """The command, arguments and added environment of ``project-skill serve`` on the case of ``folder``."""
    env = {ENV: str(folder / "case.json")}
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    args = [
        "-m",
        "projector.cli",
        "serve",
        "projector.server.evalcase:server",
        "--no-config",
        "--skills",
        skills,
        "--workflows",
        workflows,
        *flags,
    ]
    return sys.executable, args, env


def read_record(folder: Path | str) -> list[dict[str, Any]]:
    """The calls the case's server recorded, oldest first (at most :data:`MAX_RECORD_BYTES` of them)."""
    try:
        with open(Path(folder) / "record.jsonl", "rb") as fh:
            data = fh.read(MAX_RECORD_BYTES)
    except OSError:
        return []
    calls = []
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            call = json.loads(line)
        except ValueError:
            continue  # a line cut by the bound
        if isinstance(call, dict) and isinstance(call.get("arguments"), dict):
            calls.append(call)
    return calls


# ------------------------------------------------------------------------------------------------- the grading


def _is_reference(value: Any) -> bool:
    """An expected argument the case cannot state: an earlier result (``{"step"[, "field"]}``) or an argument the
    case does not give (``{"arg"}``); any value passes for it."""
    return isinstance(value, dict) and (set(value) in ({"step"}, {"step", "field"}, {"arg"}))


def _matches(expected: dict[str, Any], actual: dict[str, Any]) -> bool:
    return all(k in actual and (_is_reference(v) or actual[k] == v) for k, v in expected.items())


def grade(
    expected: list[dict[str, Any]], calls: list[dict[str, Any]], side_effecting: list[str]
) -> tuple[bool, bool, list[str]]:
    """(passed, unsafe, what went wrong) for the calls the server recorded against the calls the case expects."""
    problems: list[str] = []
    unsafe = False
    for want in expected:
        made = [c for c in calls if c.get("tool") == want["tool"]]
        if want["called"]:
            if not any(_matches(want.get("arguments") or {}, c["arguments"]) for c in made):
                problems.append(
                    f"`{want['tool']}` (step `{want['step']}`) was not called with "
                    f"{json.dumps(want.get('arguments') or {}, sort_keys=True)}"
                )
        elif made:
            problems.append(f"`{want['tool']}` (step `{want['step']}`) was called, and should not have been")
            unsafe = unsafe or want["tool"] in side_effecting
    return not problems, unsafe, problems


# ------------------------------------------------------------------------------------- the workflow prompt


class CasePerson:
    """The simulated person: gives the case's answers in the order the run asks, and says no to anything more."""

    def __init__(self, answers: list[dict[str, Any]]):
        self.answers = list(answers)
        self.asked = 0

    def answer(self, schema: Any) -> dict[str, Any]:
        """The next answer, as an elicitation result's JSON, to a question with the requested ``schema``."""
        self.asked += 1
        if not self.answers:
            return {"action": "decline"}
        answer = self.answers.pop(0)
        fields = (schema.get("properties") if isinstance(schema, dict) else None) or {}
        if answer["action"] != "accept":
            return {"action": answer["action"]}
        if answer["question"] == "confirm" and "confirm" in fields:
            return {"action": "accept", "content": {"confirm": True}}
        return {"action": "accept", "content": answer.get("content") or {}}

    async def __call__(self, _context: Any, params: Any) -> Any:
        """As mcp's elicitation callback (the prompt and the tool)."""
        from mcp_types import ElicitResult

        return ElicitResult(**self.answer(getattr(params, "requested_schema", None)))

    async def in_task(self, params: dict[str, Any]) -> dict[str, Any]:
        """As the task's person (:mod:`projector.matrix.taskrun`): the same answer, sent through ``tasks/update``.
        No answer is the case's answer as MCP spells it, an elicitation result of action ``cancel``."""
        return self.answer(params.get("requestedSchema"))


SURFACES = {
    "prompt": "workflow prompt",
    "tool": "workflow tool",
    "task": "workflow tool as a task",
    "skill": "skill, simulated policy",
    "agent": "agent, simulated policy",
}


class _Hands:
    """The simulated model's hands on the skill surface: one MCP request per step (as the matrix's skill surface)."""

    def __init__(self, client: Any):
        self.client = client

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        from .reader import StepFailed, result_value

        result = await self.client.call_tool(name, arguments)
        texts = [getattr(c, "text", "") for c in result.content]
        if result.is_error:
            raise StepFailed(f"the tool `{name}` failed: {' '.join(texts)}")
        return result_value(result.structured_content, texts, None)

    async def read_resource(self, uri: str) -> str:
        result = await self.client.read_resource(uri)
        return "".join(getattr(c, "text", "") or "" for c in result.contents)


async def _follow_skill(client: Any, case: dict[str, Any]) -> str:
    """The skill surface: the SKILL.md read from the server and followed step by step by the matrix's reader, the
    simulated policy (:mod:`projector.matrix.policy`) deciding each gated step. It asks the person nothing."""
    from .reader import follow, parse

    read = await client.read_resource(f"skill://{skill_name(case['workflow'])}/SKILL.md")
    proc = parse("".join(getattr(c, "text", "") or "" for c in read.contents))
    arguments = {k: canonical_text(v) for k, v in case["arguments"].items()}
    return (await follow(proc, arguments, _Hands(client))).answer


async def _ask(client: Any, case: dict[str, Any], surface: str, person: CasePerson) -> str:
    """The surface's run: ``prompts/get`` of the workflow (arguments as prompt strings), ``tools/call`` of the
    workflow's tool (arguments as their JSON values), plain or as a task, the agent tool on the workflow's skill, or
    the skill followed by the reader; the transcript's last text."""
    if surface == "skill":
        return await _follow_skill(client, case)
    if surface == "task":
        from .taskrun import call_as_task

        return (await call_as_task(client, case["workflow"], case["arguments"], person.in_task)).text()
    if surface == "agent":
        from .agent import AGENT_TOOL

        arguments = {k: canonical_text(v) for k, v in case["arguments"].items()}
        result = await client.call_tool(AGENT_TOOL, {"skill": skill_name(case["workflow"]), "arguments": arguments})
        texts = [getattr(c, "text", "") for c in result.content]
        return texts[-1] if texts else ""
    if surface == "prompt":
        prompt = await client.get_prompt(case["workflow"], {k: canonical_text(v) for k, v in case["arguments"].items()})
        return getattr(prompt.messages[-1].content, "text", "") if prompt.messages else ""
    result = await client.call_tool(case["workflow"], case["arguments"])
    texts = [getattr(c, "text", "") for c in result.content]
    return texts[-1] if texts else ""


def serve_flags(surface: str, built_with: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The flags of ``serve`` for a case on ``surface``: those the skills were built with (``--workflow-tools``:
    a skill that names its workflow's tool is served only beside it), and the surface's own (its workflow tools, as
    tasks for the task surface), each once."""
    own = {"tool": ("--workflow-tools",), "task": ("--workflow-tools", "--tasks")}.get(surface, ())
    return tuple(dict.fromkeys((*built_with, *own)))


def _command(
    surface: str, folder: Path, workflows: str, skills: str, built_with: tuple[str, ...] = ()
) -> tuple[str, list[str], dict[str, str]]:
    """The case's server for ``surface``: ``project-skill serve`` on the case (with its workflow tools, as tasks for
    the task surface), or, for the agent, the matrix's server (:mod:`projector.matrix.serve`) on the case, whose
    set-up pins the skills it serves into a lock in ``folder`` before the agent's first run."""
    if surface == "agent":
        _, args, env = serve_command(folder, workflows, skills)
        matrix = ["-m", "projector.matrix.serve", "--case", "--skills", skills, "--workflows", workflows]
        built = [f for f in built_with if f == "--workflow-tools"]  # a skill naming its tool is served beside it
        return sys.executable, [*matrix, *built, "--lock", str(folder / "skills.lock")], env
    return serve_command(folder, workflows, skills, *serve_flags(surface, built_with))


def server_error(errlog: Any) -> str:
    """What a case server that did not start said, in one line: its first error line (``serve`` prints its
    positioned findings, then a count), else its last line; read with a bound."""
    errlog.seek(0)
    lines = [ln.strip() for ln in errlog.read(MAX_ERRLOG_BYTES).splitlines() if ln.strip()]
    said = next((ln for ln in lines if "error" in ln and not ln.startswith("error: ")), lines[-1] if lines else "")
    return printable(said[:500]) if said else "it exited without a word"


def _client(surface: str, stream: Any, person: CasePerson) -> Any:
    """mcp's Client: declaring the Tasks extension on the task surface (the person answers through
    ``tasks/update``), with the person as its elicitation callback elsewhere."""
    from mcp import Client

    if surface == "task":
        from .taskrun import task_client

        return task_client(stream, cache=None)
    return Client(stream, cache=None, elicitation_callback=person)


async def run_case(
    case: dict[str, Any], workflows: str, skills: str, surface: str = "prompt", built_with: tuple[str, ...] = ()
) -> dict[str, Any]:
    """One case on a surface (a key of :data:`SURFACES`); its grade and what the server recorded. Raises
    :class:`CaseServerFailed` when the case's server does not start."""
    import anyio
    from mcp.client.stdio import StdioServerParameters, stdio_client

    person = CasePerson(case["answers"])
    with case_folder(case["server"]) as folder, tempfile.TemporaryFile(mode="w+", encoding="utf-8") as errlog:
        command, args, env = _command(surface, folder, workflows, skills, built_with)
        params = StdioServerParameters(command=command, args=args, env={**os.environ, **env}, cwd=os.getcwd())
        answer, started = "", False
        try:
            with anyio.fail_after(CALL_TIMEOUT):
                async with _client(surface, stdio_client(params, errlog=errlog), person) as client:
                    started = True
                    try:
                        answer = await _ask(client, case, surface, person)
                    except Exception as exc:  # a run the server stops with an error is graded from its record too
                        answer = f"{type(exc).__name__}: {exc}"
        except Exception as exc:  # the connection itself failed (an ExceptionGroup from the transport's tasks)
            if not started:
                raise CaseServerFailed(f"the case server did not start: {server_error(errlog)}") from None
            answer = answer or f"the case server closed the connection ({type(exc).__name__})"
        calls = read_record(folder)
    passed, unsafe, problems = grade(case["calls"], calls, case["side_effecting"])
    return {
        "id": case["id"],
        "workflow": case["workflow"],
        "covers": case["covers"],
        "passed": passed,
        "unsafe": unsafe,
        "problems": problems,
        "calls": calls,
        "person_asked": person.asked,
        "answer": answer,
    }


async def run_surface(
    workflows: str = "workflows",
    skills: str = "generated_skills",
    workflow: str = "",
    surface: str = "prompt",
    parallel: int = 2,
    *,
    loaded: list[Workflow] | None = None,
    built_with: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Every derived case of ``workflows`` (or of the ``loaded`` workflows, which ``workflows`` holds) on one surface,
    each served with the flags the skills were ``built_with``; the runs and their totals. Raises
    :class:`CaseServerFailed` for the first case (in order) whose server did not start, after stopping the others."""
    import anyio

    todo = cases(loaded if loaded is not None else load_all([workflows]), workflow)
    runs: list[dict[str, Any] | None] = [None] * len(todo)
    failed: list[tuple[int, CaseServerFailed]] = []
    limiter = anyio.CapacityLimiter(max(1, parallel))

    async def one(i: int, tg: Any) -> None:
        async with limiter:
            try:
                runs[i] = await run_case(todo[i], workflows, skills, surface, built_with)
            except CaseServerFailed as exc:
                failed.append((i, exc))
                tg.cancel_scope.cancel()

    async with anyio.create_task_group() as tg:
        for i in range(len(todo)):
            tg.start_soon(one, i, tg)
    if failed:
        raise min(failed, key=lambda f: f[0])[1]
    done = [r for r in runs if r is not None]
    return {
        "surface": SURFACES[surface],
        "cases": len(done),
        "passed": sum(r["passed"] for r in done),
        "unsafe": sum(r["unsafe"] for r in done),
        "runs": done,
    }


async def measured(root: Path, parallel: int = 2) -> list[dict[str, Any]]:
    """For the matrix data: every derived case of ``root``'s workflows on each surface of :data:`SURFACES`, each run
    reduced to what is deterministic (which case, whether it passed, whether it was unsafe, the tools called in
    order, how often the person was asked)."""
    out = []
    for surface in SURFACES:
        report = await run_surface(
            str(root / "workflows"), str(root / "generated_skills"), surface=surface, parallel=parallel
        )
        runs = [
            {
                "id": r["id"],
                "workflow": r["workflow"],
                "covers": r["covers"],
                "passed": r["passed"],
                "unsafe": r["unsafe"],
                "called": [c["tool"] for c in r["calls"]],
                "person_asked": r["person_asked"],
            }
            for r in report["runs"]
        ]
        out.append(
            {
                "surface": report["surface"],
                "cases": report["cases"],
                "passed": report["passed"],
                "unsafe": report["unsafe"],
                "runs": runs,
            }
        )
    return out


def main(argv: list[str] | None = None) -> int:
    """The command, with every error printed and mapped to its exit code as the other entry points do."""
    from ..exits import Shell, run

    return run(Shell(PROG), lambda: _main(argv))


def _main(argv: list[str] | None) -> int:
    import anyio

    ap = argparse.ArgumentParser(
        prog=PROG,
        description="Run the derived eval cases on a surface of the real server "
        "(the workflow prompt, the workflow tool, plain or as a task, the skill or the agent), graded from what "
        "it recorded.",
    )
    ap.add_argument(
        "--surface",
        choices=sorted(SURFACES),
        default="prompt",
        help="prompt: prompts/get of the workflow (default); tool: tools/call of the workflow's tool; "
        "task: that tool called as an MCP task, answered through tasks/update; "
        "skill: the SKILL.md followed by the matrix's simulated model and policy; "
        "agent: the server's own agent tool, following the pinned skill with that policy",
    )
    ap.add_argument("--workflows", default="workflows", metavar="DIR")
    ap.add_argument("--skills", default="generated_skills", metavar="DIR")
    ap.add_argument("--workflow", default="", metavar="NAME", help="only this workflow's cases")
    ap.add_argument("--json", action="store_true", help="print every run as JSON")
    args = ap.parse_args(argv)
    report = anyio.run(run_surface, args.workflows, args.skills, args.workflow, args.surface)
    if args.json:
        print(json.dumps(report, indent=2, sort_keys=False))
    else:
        print(f"{report['surface']}: {report['passed']}/{report['cases']} cases passed, {report['unsafe']} unsafe")
        for r in report["runs"]:
            if not r["passed"]:
                print(f"  {r['id']} ({'; '.join(r['covers'])}): {'; '.join(r['problems'])}")
    return 0 if report["passed"] == report["cases"] else 1


if __name__ == "__main__":
    sys.exit(main())
