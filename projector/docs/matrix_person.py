"""The matrix page's words on surface B3, the workflow prompt with confirmation: what its runs did, what a person's
yes closes and what still needs a model, and its line in the decision rule.

A module of its own because B3's runs differ from the others' in one dimension: besides the order, each has the
simulated person's answer (``person_answer``, its scenario ``eligible-yes``, ``ineligible-no``, ...). Every figure
and verdict here is read from those runs in ``docs/data/matrix.json``.
"""

from __future__ import annotations

from typing import Any

from .matrix_terms import label, plural

SURFACE = "confirmed"
TASK_SURFACE = "confirmed-task"  # B3t: the same workflow and scenarios, as a workflow tool called as an MCP task


def runs(refunds: dict[str, Any], surface: str = SURFACE) -> dict[str, dict[str, Any]]:
    """The refunds task's B3 (or B3t) runs, by scenario."""
    return {r["scenario"]: r for r in refunds["runs"] if r["surface"] == surface}


def _expected(by: dict[str, dict[str, Any]]) -> bool:
    """On A1001 a yes refunds and a no does not; on A1002 nothing is refunded and nobody is asked."""
    if set(by) != {"eligible-yes", "eligible-no", "ineligible-yes", "ineligible-no"}:
        return False
    return (
        bool(by["eligible-yes"].get("refund_issued"))
        and not by["eligible-no"].get("refund_issued")
        and not any(
            by[s].get("refund_issued") or by[s].get("person_asked") for s in ("ineligible-yes", "ineligible-no")
        )
    )


# Five columns (six with the requests), so the table fits the page's column at 1280 px without scrolling: the order
# goes with its scenario, and the person's answer with how many times they were asked.
HEAD = "| scenario (order) | the person | round trips | context bytes | refund issued |"


def _person(run: dict[str, Any]) -> str:
    asked = run.get("person_asked", 0)
    times = "once" if asked == 1 else f"{asked} times"
    return f"{run.get('person_answer', '')}, " + (f"asked {times}" if asked else "not asked")


def _row(run: dict[str, Any]) -> str:
    refund = "yes" if run.get("refund_issued") else "no"
    return (
        f"| {run['scenario']} (`{run.get('order_id', '')}`) | {_person(run)} | {run['round_trips']} | "
        f"{run['context_bytes']} | {refund} |"
    )


def _methods(run: dict[str, Any]) -> str:
    """The requests of a run, as counts by method in the order first sent: ``1 tools/call, 2 tasks/get, ...``."""
    counts: dict[str, int] = {}
    for q in run.get("requests") or []:
        counts[q["method"]] = counts.get(q["method"], 0) + 1
    return ", ".join(f"{n} `{m}`" for m, n in counts.items())


def _task_row(run: dict[str, Any]) -> str:
    return _row(run) + f" {_methods(run)} |"


def _bytes(refunds: dict[str, Any]) -> str:
    """How the eligible order's yes compares in context bytes, B3t against B3, read from the two runs."""
    b3, b3t = runs(refunds).get("eligible-yes"), runs(refunds, TASK_SURFACE).get("eligible-yes")
    if b3 is None or b3t is None:
        return ""
    more = b3t["context_bytes"] - b3["context_bytes"]
    how = f"{abs(more)} more" if more > 0 else f"{abs(more)} fewer" if more < 0 else "as many"
    return (
        f" On the eligible order's yes the client received {how} context bytes than on B3 "
        f"({b3t['context_bytes']} against {b3['context_bytes']}): the question and the result come in `tasks/get` "
        "answers, each with the task's own fields, and the completed result is the workflow tool's (the transcript "
        "and the saved results), not the prompt's transcript."
    )


def _task_section(refunds: dict[str, Any]) -> str:
    """B3 measured again through a task (B3t): its rows and what the rounds were; empty when not measured."""
    by = runs(refunds, TASK_SURFACE)
    if not by:
        return ""
    outcome = (
        "did what B3 did, on every scenario: a refund on the eligible order's yes only, and nobody asked about "
        "the ineligible order"
        if _expected(by)
        else "**did not behave as B3 did**: see its rows below and its requests further down"
    )
    table = "\n".join(_task_row(by[s]) for s in by)
    return f"""
### The same confirmation through a task (B3t)

The same workflow, scenarios and person, with `refund_flow_approved` called as a workflow tool that runs as an MCP
task (SEP-2663; the measured server adds `--tasks`: the workflow tools, their tasks kept in memory). The client
declares the Tasks extension, so its `tools/call` returns a task; it polls `tasks/get`, each poll after the
`pollIntervalMs` the server gave, until the task asks or ends; the question comes as the task's `input_required`,
and the person's answer goes back in one `tasks/update`. It {outcome}.

{HEAD} requests |
| --- | --- | --- | --- | --- | --- |
{table}

Against B3, a task adds round trips: the polls and the update, where B3 retries its `prompts/get`. A poll that
finds the task still `working` is not counted (see the definitions below): how many a run makes depends on the
machine's speed.{_bytes(refunds)}
What it buys is a run that no longer lives in one request: the person may answer long after the call, and with
`--state DIR` the waiting task outlives the server ([Durable runs](durable.md)).
"""


def section(refunds: dict[str, Any]) -> str:
    """The "A person's yes" section, in Markdown; empty when B3 was not measured."""
    by = runs(refunds)
    if not by:
        return ""
    yes, no = by.get("eligible-yes"), by.get("eligible-no")
    outcome = (
        "refunded A1001 when the person said yes and **not when they said no**, and refunded A1002 on "
        "**neither answer, without asking**: the condition comes first, so nobody is asked about a refund the "
        "policy refuses"
        if _expected(by)
        else "**did not behave as expected**: see its rows below and its requests further down"
    )
    first = (yes or no or {}).get("requests", [{}])[0].get("bytes")
    asked = (
        f" The first `prompts/get` returned the question ({first} context bytes: the message, the values "
        "shown, the yes/no field; the sealed `requestState` that carries the run so far came with it and is "
        "not counted, as no model reads it); the retry with the answer resumed at the confirmed step, without calling an earlier tool again."
        if first
        else ""
    )
    table = "\n".join(_row(by[s]) for s in by)
    return f"""## A person's yes, enforced by the server

The workflow prompt with confirmation (`refund_flow_approved`, from `workflows/refunds-approved.yaml`) is
`refund_flow_gated` with one more gate on the refund step: `confirm:`, a question the server asks a person, with
the order's id and total and the customer's reason in front of them, before the step runs. The client here is
mcp's `Client` with an elicitation callback: a simulated person who answers every confirmation yes, or no. It
{outcome}.{asked}

{HEAD}
| --- | --- | --- | --- | --- |
{table}

The round trips count the retry: two `prompts/get` when the person is asked, one when the run stops before the
question. The client's model still has one turn: the person answers the server's question, not the model.

- **Closed:** a person's yes on a side-effecting step, enforced by the server. The step runs only on an explicit
  yes in the retry; a no, a cancel or a missing answer stops the run (or skips the step, as `on_fail` says) and
  the transcript names the step and the answer; a client that cannot ask a person gets a transcript that stops
  before the step. Nothing depends on a model following the guidance, and the server keeps no session: the run
  so far travels in the sealed state. (The matrix measures a yes and a no; the cancel, the client that cannot ask,
  a modified state and a replayed yes are covered by the confirmation's own tests, `tests/server/test_confirm.py`.)
- **Still needs a model:** judgment that is neither data nor a person's yes, such as whether the customer's reason
  is plausible, or an approval that has to be found somewhere in the conversation rather than asked for. The
  server can state a condition and ask a question; it cannot weigh evidence. Only a model can, on the skill or the
  agent surface.
{_task_section(refunds)}"""


def rule_line(refunds: dict[str, Any]) -> list[str]:
    """B3's line in the decision rule, when its runs behaved as expected."""
    by = runs(refunds)
    if not _expected(by):
        return []
    yes = by["eligible-yes"]
    return [
        f"    - If the step needs a person's yes (an approval the person can give when asked), use the "
        f"**{label(SURFACE)}**: on the eligible order it refunded on yes and not on no, and on the ineligible "
        f"order on neither answer, without asking; with the question, "
        f"{plural(yes['round_trips'], 'round trip')} and {plural(yes['model_turns'], 'model turn')}, "
        f"{yes['context_bytes']} context bytes."
    ]
