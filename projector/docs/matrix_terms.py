"""The words and the one predicate the matrix page's table, chart and decision rule share.

A module of its own so that the table (``matrix_page``), the chart (``matrix_chart``) and the rule
(``matrix_rule``) name the surfaces the same way and mark the same cell, without importing each other.
"""

from __future__ import annotations

from typing import Any

SURFACE_LABEL = {
    "skill": "A. skill",
    "workflow": "B. workflow prompt",
    "gated": "B2. gated workflow prompt",
    "agent": "C. agent",
    "confirmed": "B3. workflow prompt with confirmation",
    "confirmed-task": "B3t. workflow tool as a task, with confirmation",
}
JUDGMENT_LOCUS = {
    "skill": "the host's model, step by step",
    "workflow": "nowhere: the server runs every step",
    "gated": "the server, for the conditions stated as data (when:); nowhere for the rest",
    "agent": "the server's own model",
    "confirmed": "the server, for the conditions stated as data; a person, asked by the server, for the yes on the "
    "side effect; nowhere for the rest",
    "confirmed-task": "as B3: the server, for the conditions stated as data; a person, asked through the task, "
    "for the yes on the side effect; nowhere for the rest",
}
COLOURS = {
    "skill": "#3f51b5",
    "workflow": "#e65100",
    "gated": "#ad1457",
    "agent": "#2e7d32",
    "confirmed": "#6a1b9a",
    "confirmed-task": "#00838f",
}

# The class and the visible note on the cell and the bar that carry the page's message.
BLIND_SPOT_CLASS = "matrix-blind-spot"
MARKER = "\u2190 the blind spot"


def label(surface: str) -> str:
    return SURFACE_LABEL.get(surface, surface)


def is_blind_spot(run: dict[str, Any]) -> bool:
    """The page's message, read from the data: an order the store's policy finds ineligible, refunded anyway (the
    confirmed surface's scenarios name the order first: ``ineligible-yes``)."""
    return run.get("scenario", "").split("-")[0] == "ineligible" and bool(run.get("refund_issued"))


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
