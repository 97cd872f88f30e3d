"""The simulated model's judgment: one deterministic policy function.

The matrix measures surfaces, not models, so a language model would only add noise. This function stands in for the
model wherever a model decides whether a gated step may run: in the client on the skill surface, and in the server's
agent on the agent surface. The workflow surface has no model between its steps, so it never consults it.

The policy, in full:

1. It is consulted only for a step that the SKILL.md gates ("Decide this yourself before you call ..."). Guidance on
   any other step is advice, and the step runs.
2. A Judgment about eligibility ("eligible", "eligibility") holds when the latest saved result that carries a
   boolean ``eligible`` says ``true``. When it says ``false``, the step is declined, with that result's ``reasons``.
   When no saved result carries one, the condition cannot be verified and the step is declined.
3. Any other gated Judgment cannot be verified from the saved results, so the step is declined. A careful model
   does not take an irreversible action on a condition it cannot check.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

DESCRIPTION = (
    'wherever a skill gates a step ("Decide this yourself before you call it"), the same function decides. If the '
    "Judgment is about eligibility, it follows the boolean `eligible` of the latest saved result that has one (the "
    "eligibility check's), and declines the step when it is false or missing; any other gated Judgment it cannot "
    "verify, so it declines. Guidance on a step that is not gated is advice, and the step runs."
)


@dataclass(frozen=True)
class Decision:
    proceed: bool
    reason: str


def _latest_with(memory: dict[str, Any], key: str) -> dict[str, Any] | None:
    found = None
    for value in memory.values():  # insertion order: the order the results were saved in
        if isinstance(value, dict) and isinstance(value.get(key), bool):
            found = value
    return found


def judge(judgment: str, memory: dict[str, Any]) -> Decision:
    """Whether a gated step may run, given its Judgment text and the results saved so far."""
    if re.search(r"\beligib", judgment, re.IGNORECASE):
        result = _latest_with(memory, "eligible")
        if result is None:
            return Decision(False, "the Judgment needs the eligibility check's result, and there is none")
        if result["eligible"]:
            return Decision(True, "the eligibility check says the order is eligible")
        reasons = result.get("reasons") or []
        why = "; ".join(str(r) for r in reasons) if reasons else "no reason given"
        return Decision(False, f"the eligibility check says the order is not eligible ({why})")
    return Decision(False, f"the Judgment cannot be verified from the results so far: {judgment.strip()}")
