"""The matrix page's decision rule: which surface to choose, derived from the measured rows.

Every figure and every verdict in the rule is read from ``docs/data/matrix.json``: a surface is recommended for a
step that needs judgment only if, on the refunds task, it refunded the eligible order and declined the ineligible
one; a surface that did not is named as the one to avoid, with what it did. For procedures without judgment the
rule picks, on each other task, the surface with the fewest round trips, then the fewest model inferences (client
and server), then the least context. So a new measurement cannot leave the rule saying something the table does
not.
"""

from __future__ import annotations

from typing import Any

from . import matrix_person
from .matrix_terms import label, plural

# When each surface fits a step that needs judgment, in the order the rule offers them. The condition is the
# surface's design (where its judgment runs); whether it actually held is read from the data.
JUDGMENT_FIT = (
    (
        "gated",
        "If the judgment can be stated as data over the results and arguments the workflow already has (an "
        "equality, a membership, a field that must exist), use",
    ),
    ("skill", "If it needs a model, and the host's model should make it in the user's sight, use"),
    ("agent", "If the host should hold nothing and can trust the server's model, use"),
)


def _cost(run: dict[str, Any]) -> str:
    server = run.get("server_model_turns") or 0
    turns = plural(run["model_turns"], "model turn") + (f" (plus {server} on the server)" if server else "")
    return f"{plural(run['round_trips'], 'round trip')} and {turns}, {run['context_bytes']} context bytes"


def _outcome(eligible: dict[str, Any] | None, ineligible: dict[str, Any] | None) -> tuple[bool, str]:
    """Whether the surface got both orders right on the refunds task, and what it did wrong if not."""
    if not (eligible and ineligible):
        return False, "it was not measured on both orders"
    if ineligible.get("refund_issued"):
        return False, "on the ineligible order it issued the refund anyway (the marked cell above)"
    if not eligible.get("refund_issued"):
        return False, "it did not refund the eligible order either"
    return True, ""


def _judgment(by: dict[tuple[str, str], dict[str, Any]], surfaces: list[str]) -> list[str]:
    lines = [
        "1. **A step with a side effect depends on a judgment** (on the refunds task: refund only an order "
        "the policy finds eligible)."
    ]
    outcome = {s: _outcome(by.get((s, "eligible")), by.get((s, "ineligible"))) for s in surfaces}
    lines += [f"    - Not the **{label(s)}**: {why}." for s, (ok, why) in outcome.items() if not ok]
    good = [(s, when) for s, when in JUDGMENT_FIT if outcome.get(s, (False, ""))[0]]
    cheapest = min((s for s, _ in good), key=lambda s: by[(s, "ineligible")]["context_bytes"], default=None)
    for surface, when in good:
        extra = ", the least context of these" if surface == cheapest and len(good) > 1 else ""
        lines.append(
            f"    - {when} the **{label(surface)}**: it refunded the eligible order and declined the "
            f"ineligible one, in {_cost(by[(surface, 'ineligible')])}{extra}."
        )
    if not good:
        lines.append(
            "    - No measured surface refunded the eligible order and declined the ineligible one: see the "
            "verdict above before choosing."
        )
    return lines


def _rank(run: dict[str, Any]) -> tuple[int, int, int]:
    return (run["round_trips"], run["model_turns"] + (run.get("server_model_turns") or 0), run["context_bytes"])


def _no_judgment(others: list[dict[str, Any]]) -> list[str]:
    best = {t["task"]: min(t["runs"], key=_rank) for t in others if t.get("runs")}
    if not best:
        return []
    lines = []
    for task in others:
        if task["task"] not in best:
            continue
        win = best[task["task"]]
        rest = "; ".join(f"the {label(r['surface'])} {_cost(r)}" for r in task["runs"] if r is not win)
        lines.append(f"{task['task']}: the {label(win['surface'])} took {_cost(win)}; {rest}")
    winners = sorted({w["surface"] for w in best.values()})
    rank = "Ranked by round trips, then model inferences (client and server), then context bytes"
    if len(winners) == 1:
        choice = (
            f"use the **{label(winners[0])}**. {rank}, it came first on every such task measured "
            "([Other tasks](#other-tasks)):"
        )
    else:
        choice = (
            f"no one surface came first on every such task measured ([Other tasks](#other-tasks)); choose "
            f"as on the closest task. {rank}:"
        )
    names = ", ".join(f"`{name}`" for name in best)
    return [f"2. **No step needs judgment** ({names}): {choice}", *(f"    - {line}." for line in lines)]


def decision_rule(refunds: dict[str, Any], others: list[dict[str, Any]]) -> str:
    """The "Choosing a surface" section, in Markdown."""
    by = {(r["surface"], r["scenario"]): r for r in refunds["runs"]}
    # the surfaces measured on the two orders alone; the confirmed one (B3) also depends on a person's answer, and
    # has its own section
    surfaces = list(dict.fromkeys(r["surface"] for r in refunds["runs"] if r["scenario"] in ("eligible", "ineligible")))
    body = "\n".join(_judgment(by, surfaces) + matrix_person.rule_line(refunds) + _no_judgment(others))
    return f"""## Choosing a surface

A rule derived from the measured rows: the refunds task above for a step that needs judgment, the other tasks
below for a procedure that needs none. Its figures are generated from the same data as the tables.

{body}

Judgment that cannot be stated as data (a supervisor's approval somewhere in the conversation, whether a reason is
plausible) rules out the gated prompt for that step: only a model can apply it, on the skill or the agent surface.
"""
