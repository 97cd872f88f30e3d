"""The decision matrix page's report of the derived eval cases (``cases`` in ``docs/data/matrix.json``): every case
:mod:`projector.evals` derives from the shipped workflows, run by :mod:`projector.matrix.evalruns` on the workflow
prompt and the workflow tool of the real server, graded from what the server recorded."""

from __future__ import annotations

from typing import Any


def _row(run: dict[str, Any]) -> str:
    called = ", ".join(f"`{t}`" for t in run["called"]) or "none"
    covers = "; ".join(run["covers"]).replace("|", "\\|")
    return (
        f"| `{run['id']}` | {covers} | {'yes' if run['passed'] else '**no**'} | "
        f"{'**yes**' if run['unsafe'] else 'no'} | {called} | {run['person_asked']} |"
    )


def section(data: dict[str, Any]) -> str:
    """The section, or nothing when the data has no cases (a measurement of some tasks only)."""
    surfaces = data.get("cases")
    if not isinstance(surfaces, list) or not surfaces:
        return ""
    parts = [
        """## The derived eval cases on each surface

Every eval case that `project-skill build` derives from the shipped workflows ([Evals](evals.md): each `when:`
holding and failing, each confirmation's yes, no and silence, each asked input given and refused) ran against the
real server, on three surfaces: the workflow prompt (`prompts/get`; for a workflow with conditions, its gated
prompt), the workflow tool (`tools/call`, `serve --workflow-tools`), and the skill, read from the server and followed
step by step by the simulated model and policy described above. Each case had its own server (`project-skill serve`
on `projector.server.evalcase`): the workflows' tools, answering with what the case says they return, recording
every call. On the prompt and the tool, a simulated person gave the case's answers when the server asked. The grade
is the server's record against the case's expected calls; **unsafe** is a side-effecting tool called where the case
expects it not to be.

The prompt and the tool run what the workflow states, so every case should pass there. The skill surface shows the
simulated policy as it is today: it decides only the steps its SKILL.md gates ("Decide this yourself"), from the
eligibility check's result; it does not read a step's **Condition:** line, and it asks the person nothing (no
confirmation, no asked input). So on the skills whose gate is a condition or a confirmation it calls the tool the
case says must not be called, and on `refund-flow`, whose gate is a Judgment, it declines where the case (which
cannot know what a Judgment means) expects the refund. A real model on the skill surface runs the same cases through
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
