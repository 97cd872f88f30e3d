"""The matrix page's chart: an inline SVG bar chart of context bytes per run of the refunds task.

A ``<figure>`` with a visible ``<figcaption>`` (the SVG ``<title>`` only shows as a tooltip), both axes labelled in
the SVG, and the run that carries the page's message (:func:`matrix_terms.is_blind_spot`) drawn outlined, in bold,
with a note beside it. No script, nothing fetched from the network.
"""

from __future__ import annotations

import html
import math
from typing import Any

from .matrix_terms import BLIND_SPOT_CLASS, COLOURS, MARKER, is_blind_spot, label

TITLE = "Bytes that entered the client's context, per surface and scenario (refunds task)"
X_AXIS = "context bytes the client received during the run"
Y_AXIS = "surface, scenario"
FONT_PX = 13  # the chart's font size; the small tick labels are never the widest text

# Advance widths, in em, that no common sans-serif exceeds (they are DejaVu Sans's, Debian's default sans-serif and
# one of the widest, rounded up). The chart measures its own labels with them, so the margins fit the longest label
# on every machine, deterministically: a narrower font leaves some space, never a clipped label.
_NARROW, _WIDE = frozenset(" il.,:;'!|()[]-ftjrI"), frozenset("mwMW")
BOLD = 1.15  # a bold face is at most this much wider


def text_width(text: str, bold: bool = False) -> int:
    """The width, in pixels at :data:`FONT_PX`, that ``text`` takes at most."""
    ems = sum(
        0.4 if c in _NARROW else 1.0 if c in _WIDE or not c.isascii() else 0.8 if c.isupper() else 0.65 for c in text
    )
    return math.ceil(ems * FONT_PX * (BOLD if bold else 1))


def _ticks(most: int) -> list[int]:
    """Round tick values from 0 up to ``most``: a step of 1, 2 or 5 times a power of ten, at most 6 ticks."""
    step = next(m * 10**e for e in range(len(str(most)) + 1) for m in (1, 2, 5) if most // (m * 10**e) <= 5)
    return list(range(0, most + 1, step))


def _caption(runs: list[dict[str, Any]]) -> str:
    spots = [r for r in runs if is_blind_spot(r)]
    note = ""
    if spots:
        who = "; ".join(f"{label(r['surface'])}, {r['scenario']}" for r in spots)
        note = (
            f" The outlined bar, marked &#8220;{html.escape(MARKER)}&#8221;, is the run that refunded an "
            f"order the policy finds ineligible ({html.escape(who)})."
        )
    return (
        f'<figcaption id="matrix-chart-caption"><span class="matrix-caption-title">Figure: '
        f"{html.escape(TITLE)}.</span> One bar per run.{note}</figcaption>"
    )


def _value(run: dict[str, Any]) -> str:
    """The label beside a bar: its bytes, whether a refund was issued, and the marker on the blind spot."""
    return (
        f"{run['context_bytes']} B"
        + (" (refund issued)" if run.get("refund_issued") else "")
        + (f" {MARKER}" if is_blind_spot(run) else "")
    )


def _name(run: dict[str, Any]) -> str:
    """The label left of a bar: the surface and the scenario."""
    return f"{label(run['surface'])}, {run['scenario']}"


def _bar(run: dict[str, Any], y: int, x0: int, bar_w: int, most: int, row_h: int) -> list[str]:
    w = max(round(bar_w * run["context_bytes"] / most), 1)
    colour = COLOURS.get(run["surface"], "#607d8b")
    refunded = " (refund issued)" if run.get("refund_issued") else ""
    name = _name(run)
    spot = is_blind_spot(run)
    weight = ' font-weight="bold"' if spot else ""
    outline = ' stroke="#bf360c" stroke-width="3"' if spot else ""
    value = _value(run)
    parts = [
        f'<text x="{x0 - 8}" y="{y + 19}" text-anchor="end" fill="currentColor"{weight}>{html.escape(name)}</text>',
        f'<rect x="{x0}" y="{y + 5}" width="{w}" height="{row_h - 10}" fill="{colour}"{outline}>'
        f"<title>{html.escape(name)}: {run['context_bytes']} bytes{refunded}</title></rect>",
        f'<text x="{x0 + w + 6}" y="{y + 19}" fill="{"#bf360c" if spot else "currentColor"}"{weight}>'
        f"{html.escape(value)}</text>",
    ]
    if spot:
        parts = [
            f'<g class="{BLIND_SPOT_CLASS}" data-surface="{html.escape(run["surface"])}" '
            f'data-scenario="{html.escape(run["scenario"])}">',
            *parts,
            "</g>",
        ]
    return parts


def bar_chart(task: dict[str, Any]) -> str:
    """The figure: caption, then the SVG with its axis labels, one labelled bar per run."""
    runs = task["runs"]
    most = max((r["context_bytes"] for r in runs), default=0) or 1
    bar_w, row_h, top, pad = 300, 30, 28, 10
    # the left margin holds the longest row label (and the y-axis title), the right one the longest value label
    x0 = pad + 8 + max(text_width(Y_AXIS), *(text_width(_name(r), is_blind_spot(r)) for r in runs))
    axis_y = top + row_h * len(runs) + 4
    right = max(round(bar_w * r["context_bytes"] / most) + 6 + text_width(_value(r), is_blind_spot(r)) for r in runs)
    right = max(right, bar_w // 2 + math.ceil(text_width(X_AXIS) / 2))  # the x-axis title, centred under the bars
    width, height = x0 + max(bar_w, right) + pad, axis_y + 46
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-labelledby="matrix-chart-title" '
        f'aria-describedby="matrix-chart-caption" '
        f'style="max-width:100%;height:auto;font-family:sans-serif;font-size:13px">',
        f'<title id="matrix-chart-title">{html.escape(TITLE)}</title>',
        f'<text class="matrix-axis-y" x="{x0 - 8}" y="{top - 8}" text-anchor="end" fill="currentColor" '
        f'font-style="italic">{html.escape(Y_AXIS)}</text>',
    ]
    for tick in _ticks(most):
        x = x0 + round(bar_w * tick / most)
        parts.append(
            f'<line x1="{x}" y1="{top}" x2="{x}" y2="{axis_y + 4}" stroke="currentColor" '
            f'stroke-opacity="{1 if tick == 0 else 0.15}" stroke-width="1"/>'
        )
        parts.append(
            f'<text x="{x}" y="{axis_y + 18}" text-anchor="middle" fill="currentColor" font-size="11">{tick}</text>'
        )
    for i, run in enumerate(runs):
        parts += _bar(run, top + i * row_h, x0, bar_w, most, row_h)
    parts.append(
        f'<line x1="{x0}" y1="{axis_y}" x2="{x0 + bar_w}" y2="{axis_y}" stroke="currentColor" stroke-width="1"/>'
    )
    parts.append(
        f'<text class="matrix-axis-x" x="{x0 + bar_w // 2}" y="{axis_y + 38}" text-anchor="middle" '
        f'fill="currentColor" font-style="italic">{html.escape(X_AXIS)}</text>'
    )
    parts.append("</svg>")
    return (
        '<figure class="matrix-chart" id="matrix-chart">\n' + _caption(runs) + "\n" + "\n".join(parts) + "\n</figure>"
    )
