"""The decision matrix page's report of the derived eval cases (``cases`` in ``docs/data/matrix.json``): every case
:mod:`projector.evals` derives from the shipped workflows, run by :mod:`projector.matrix.evalruns` on each surface
of the real server (the skill, the workflow prompt, the workflow tool, plain and as a task, the agent), graded from
what the server recorded: the page's lead (:func:`summary`) and its case-by-case tables (:func:`section`)."""

from __future__ import annotations

from typing import Any

# The surfaces' order on the page, from the host's model doing everything to the server doing everything, by the
# labels projector.matrix.evalruns gives them; a surface the data has and this does not know comes last.
ORDER = (
    "skill, simulated policy",
    "workflow prompt",
    "workflow tool",
    "workflow tool as a task",
    "agent, simulated policy",
)
HEADS = {
    "skill, simulated policy": "A. skill (simulated policy)",
    "workflow prompt": "B/B2/B3. workflow prompt (gated where the workflow states a gate)",
    "workflow tool": "workflow tool",
    "workflow tool as a task": "workflow tool as a task",
    "agent, simulated policy": "C. agent (simulated policy)",
}


def _surfaces(data: dict[str, Any]) -> list[dict[str, Any]]:
    surfaces = data.get("cases")
    if not isinstance(surfaces, list):
        return []
    known = {name: i for i, name in enumerate(ORDER)}
    return sorted(surfaces, key=lambda s: known.get(s.get("surface"), len(ORDER)))


def _cell(runs: list[dict[str, Any]]) -> str:
    passed, unsafe = sum(r["passed"] for r in runs), sum(r["unsafe"] for r in runs)
    cell = f"{passed}/{len(runs)}"
    if passed < len(runs):
        cell = f"**{cell}**"
    return cell + (f", **{unsafe} unsafe**" if unsafe else ", 0 unsafe")


def summary(data: dict[str, Any]) -> str:
    """The page's lead: for each shipped workflow, the derived cases passed and the unsafe side effects on each
    surface, read from the runs; nothing when the data has no cases."""
    surfaces = _surfaces(data)
    if not surfaces:
        return ""
    workflows = list(dict.fromkeys(r["workflow"] for s in surfaces for r in s["runs"]))
    head = " | ".join(HEADS.get(s["surface"], s["surface"]) for s in surfaces)
    rows = []
    for wf in workflows:
        count = max(sum(r["workflow"] == wf for r in s["runs"]) for s in surfaces)
        cells = " | ".join(_cell([r for r in s["runs"] if r["workflow"] == wf]) for s in surfaces)
        rows.append(f"| `{wf}` | {count} | {cells} |")
    total = " | ".join(_cell(s["runs"]) for s in surfaces)
    rows.append(f"| every shipped workflow | {max(len(s['runs']) for s in surfaces)} | {total} |")
    whole = [f"the {s['surface']}" for s in surfaces if s["passed"] == s["cases"]]
    verdict = (
        "Every case passed on " + (", ".join(whole[:-1]) + " and " + whole[-1] if len(whole) > 1 else whole[0])
        if whole
        else "No surface passed every case"
    )
    return f"""## The derived eval cases of every shipped example

Each cell: the cases that passed, of the cases [derived](evals.md) from the workflow (each `when:` holding and
failing, each confirmation's yes, no and no answer, each asked input given and refused), and the **unsafe** runs:
a side-effecting tool called where the case expects it not to be. Each case ran against the real server, a server
of its own answering with what the case says the tools return, and was graded from what that server recorded, never
from a transcript. Nobody wrote a case or a figure here: `project-skill matrix` derives, runs and counts them.

| workflow | cases | {head} |
| --- | --- | {" | ".join("---" for _ in surfaces)} |
{chr(10).join(rows)}

{verdict}. The skill and the agent follow the skill with the simulated policy stated above, which asks the
person nothing and reads no **Condition:** line, so they fail the cases whose gate is a condition, a confirmation
or an asked input; their failures are the policy's, and are listed case by case in
[The derived eval cases on each surface](#the-derived-eval-cases-on-each-surface). The hand-built refunds task
after this is the detailed measurement of one such case: the wire, the bytes and the ledger, surface by surface.
"""


def _row(run: dict[str, Any]) -> str:
    called = ", ".join(f"`{t}`" for t in run["called"]) or "none"
    covers = "; ".join(run["covers"]).replace("|", "\\|")
    return (
        f"| `{run['id']}` | {covers} | {'yes' if run['passed'] else '**no**'} | "
        f"{'**yes**' if run['unsafe'] else 'no'} | {called} | {run['person_asked']} |"
    )


def section(data: dict[str, Any]) -> str:
    """The section, or nothing when the data has no cases (a measurement of some tasks only)."""
    surfaces = _surfaces(data)
    if not surfaces:
        return ""
    parts = [
        """## The derived eval cases on each surface

Every eval case that `project-skill build` derives from the shipped workflows ([Evals](evals.md): each `when:`
holding and failing, each confirmation's yes, no and silence, each asked input given and refused) ran against the
real server, on each surface: the workflow prompt (`prompts/get`; for a workflow with conditions, its gated
prompt), the workflow tool (`tools/call`, `serve --workflow-tools`), the workflow tool as an MCP task (`serve
--workflow-tools --tasks`: a task-augmented `tools/call`, `tasks/get` until the task asks or ends, the answers
through `tasks/update`), the skill, read from the server and followed step by step by the simulated model and
policy described above, and the server's own agent tool, which composes the pinned, verified skill from the lock
its server's set-up made and follows it with the same reader and policy. Each case had its own server
(`projector.server.evalcase`, behind `project-skill serve`, or behind the matrix's server for the agent): the
workflows' tools, answering with what the case says they return, recording every call. On the prompt, the tool and
the task, a simulated person gave the case's answers when the server asked; a case's silence is an elicitation
result of action `cancel` (the person dismissed the question), on the task too. The grade is the server's record
against the case's expected calls; **unsafe** is a side-effecting tool called where the case expects it not to be.

The prompt, the tool and the task run what the workflow states, so every case should pass there. The skill and the
agent show the simulated policy as it is today: it decides only the steps its SKILL.md gates ("Decide this
yourself"), from the eligibility check's result; it does not read a step's **Condition:** line, and it asks the
person nothing (no confirmation, no asked input). So on the skills whose gate is a condition or a confirmation it
calls the tool the case says must not be called, and on `refund-flow`, whose gate is a Judgment, it declines where
the case (which cannot know what a Judgment means) expects the refund. The agent runs the same reader and policy on
the server, so it calls what the skill surface calls. A real model on the skill surface runs the same cases through
Inspect AI ([Running the cases on a model](evals.md#running-the-cases-on-a-model-inspect-ai)).
"""
    ]
    for s in surfaces:
        parts.append(f"""
### {s["surface"]}: {s["passed"]} of {s["cases"]} cases passed, {s["unsafe"]} unsafe

| case | covers | passed | unsafe | tools called | person asked |
| --- | --- | --- | --- | --- | --- |
{chr(10).join(_row(r) for r in s["runs"])}
""")
    return "".join(parts)
