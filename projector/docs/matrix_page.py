"""The decision matrix page, generated from ``docs/data/matrix.json`` (written by ``project-skill matrix``).

The table is raw HTML (so the browser test can find it by id and each cell by its data attributes); the chart is an
inline SVG drawn here, with no script and nothing fetched from the network.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from . import matrix_cases, matrix_person
from .matrix_chart import bar_chart
from .matrix_rule import decision_rule
from .matrix_terms import BLIND_SPOT_CLASS, JUDGMENT_LOCUS, MARKER, SURFACE_LABEL, is_blind_spot, plural
from .common import DocsError

DATA = "docs/data/matrix.json"

# Spike 011 of pmcp (the Rust MCP SDK): one refund task as a skill, a workflow prompt and an agent. Quoted from its
# write-up (SPIKE_011_URL, "Results": eligible / ineligible figures), not measured here; the page compares the
# ineligible order, so these are that scenario's figures.
SPIKE_011_URL = (
    "https://github.com/paiml/rust-mcp-sdk/blob/ccbb5fbc8d4845b06c3e52193aa07a899b5467f4/.claude/skills/"
    "spike-findings-rust-mcp-sdk/sources/011-three-mechanisms-one-task/README.md"
)
SPIKE_011 = {
    "skill": {"bytes": 587, "refunded_ineligible": False},
    "workflow": {"bytes": 1405, "refunded_ineligible": True},
    "agent": {"bytes": 106, "refunded_ineligible": False},
}

SURFACES = ("skill", "workflow", "agent")  # the three that spike 011 measured too


def load(root: Path) -> dict[str, Any] | None:
    path = root / DATA
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise DocsError(f"{DATA} is not JSON ({exc}); run: project-skill matrix") from None
    if not isinstance(data, dict) or data.get("format") != 1 or not isinstance(data.get("tasks"), list):
        raise DocsError(f"{DATA} is not matrix data of format 1; run: project-skill matrix")
    return data


def _task(data: dict[str, Any], name: str) -> dict[str, Any] | None:
    return next((t for t in data["tasks"] if t.get("task") == name), None)


def _yes(flag: bool | None) -> str:
    return "n/a" if flag is None else ("yes" if flag else "no")


def html_table(table_id: str, task: dict[str, Any], with_refund: bool) -> str:
    """A raw-HTML table of one task's runs. Each numeric cell carries data attributes naming its run and field."""
    cols = [
        ("round_trips", "round trips"),
        ("model_turns", "model turns: client"),
        ("server_model_turns", "model turns: server"),
        ("context_bytes", "context bytes"),
    ]
    if with_refund:
        cols.append(("refund_issued", "refund issued"))
    head = "".join(f"<th>{html.escape(label)}</th>" for _, label in cols)
    lines = [f'<table id="{table_id}">', f"<thead><tr><th>surface</th><th>scenario</th>{head}</tr></thead>", "<tbody>"]
    for run in task["runs"]:
        surface, scenario = run["surface"], run["scenario"]
        cells = []
        for key, _ in cols:
            value = run.get(key)
            text = html.escape(_yes(value) if key == "refund_issued" else ("n/a" if value is None else str(value)))
            mark = ""
            if key == "refund_issued" and is_blind_spot(run):
                mark = f' class="{BLIND_SPOT_CLASS}"'
                text = f'<strong>{text}</strong> <span class="matrix-marker">{html.escape(MARKER)}</span>'
            cells.append(
                f'<td{mark} data-surface="{html.escape(surface)}" data-scenario="{html.escape(scenario)}" '
                f'data-field="{key}">{text}</td>'
            )
        locus = JUDGMENT_LOCUS.get(surface, "")
        lines.append(
            f'<tr><td title="judgment runs in: {html.escape(locus)}">'
            f"{html.escape(SURFACE_LABEL.get(surface, surface))}</td>"
            f"<td>{html.escape(scenario)}</td>{''.join(cells)}</tr>"
        )
    lines += ["</tbody>", "</table>"]
    return "\n".join(lines)


def _refunded_ineligible(task: dict[str, Any]) -> list[str]:
    return [r["surface"] for r in task["runs"] if is_blind_spot(r)]


def _skill_breakdown(run: dict[str, Any] | None) -> str:
    if not run:
        return ""
    skill = sum(r["bytes"] for r in run.get("requests", []) if r["target"].endswith("/SKILL.md"))
    rest = run["context_bytes"] - skill
    return (
        f"On the skill surface, {skill} of the {run['context_bytes']} bytes are the SKILL.md itself, read once "
        f"when the skill is loaded; the other {rest} are the results of the steps the client ran."
    )


def _order_text(values: dict[str, int]) -> str:
    ranked = sorted(values.items(), key=lambda kv: (-kv[1], SURFACES.index(kv[0])))
    return " > ".join(f"{s} ({v} B)" for s, v in ranked)


def _ordering(by: dict[tuple[str, str], dict[str, Any]]) -> str:
    runs = {s: by.get((s, "ineligible")) for s in SURFACES}
    if not all(runs.values()):
        return ""
    full = {s: r["context_bytes"] for s, r in runs.items()}
    steps = {
        s: r["context_bytes"] - sum(q["bytes"] for q in r.get("requests", []) if q["target"].endswith("/SKILL.md"))
        for s, r in runs.items()
    }
    spike = {s: SPIKE_011[s]["bytes"] for s in SURFACES}
    shape = [s for s, _ in sorted(spike.items(), key=lambda kv: -kv[1])]
    same = [s for s, _ in sorted(steps.items(), key=lambda kv: -kv[1])] == shape
    return (
        f"Ordered by context cost on the ineligible order, spike 011 gives {_order_text(spike)}. This project "
        f"gives {_order_text(full)} counting everything the client received, and {_order_text(steps)} leaving "
        f"out the SKILL.md, which "
        + ("has the same order as spike 011's figures." if same else "still differs from spike 011's order.")
        + (
            " The agent is the cheapest for the client's context either way, because it returns only its answer."
            if min(full, key=full.get) == "agent" and min(steps, key=steps.get) == "agent"
            else ""
        )
        + (
            " The workflow transcript costs more than the skill's step results, because it carries the plan, "
            "every call and every result."
            if steps["workflow"] > steps["skill"]
            else ""
        )
    )


def _blind_spot(by: dict[tuple[str, str], dict[str, Any]]) -> str:
    """What closes the workflow surface's blind spot, and what does not, from the gated runs."""
    ok, no, ungated = by.get(("gated", "eligible")), by.get(("gated", "ineligible")), by.get(("workflow", "ineligible"))
    if not (ok and no and ungated):
        return ""
    closes = ok.get("refund_issued") and not no.get("refund_issued")
    outcome = (
        "refunded the eligible order and **left the ineligible one unrefunded** in the ledger"
        if closes
        else "**did not behave as expected**: see its requests and final message below"
    )
    return f"""## What closes the blind spot, and what does not

The gated workflow prompt (`refund_flow_gated`, from `workflows/refunds-gated.yaml`) is `refund_flow` with one
addition: its refund step states the eligibility check as data,
`when: {{step: eligibility, field: eligible, equals: true}}`. It {outcome}. On the ineligible order its transcript
ends with the failing condition and the value the server saw:

> {no.get("answer", "")}

Like the ungated prompt it costs one round trip and one model turn. On the ineligible order it returned
{no["context_bytes"]} context bytes, against {ungated["context_bytes"]} for the ungated prompt, because it stops
before the refund and the policy read.

- **Closed:** a condition that can be stated as data over the results and arguments the workflow already has (an
  equality, a membership, a field that must exist). The server checks it, the skill states it as a check before the
  call, and the build no longer warns about the step (`gate-on-side-effect` does not fire on a step with `when:`).
- **Still open:** judgment that cannot be stated as data, such as whether a refund above the policy ceiling has a
  supervisor's approval somewhere in the conversation, or whether the customer's reason is plausible. The server
  shows that guidance in the transcript and cannot act on it; only a model can, on the skill or the agent surface.
  The SKILL.md keeps it as the step's Judgment, listed apart from the enforced conditions. A supervisor's or the
  user's approval that a person can give when asked is closed by the next surface, B3.
"""


def _agent_section(data: dict[str, Any]) -> str:
    """How surface C gets its skill: the lock made at set-up, the composition before each run, and what it moved."""
    runs = [(t["task"], r) for t in data["tasks"] for r in t["runs"] if r["surface"] == "agent"]
    if not runs or any("instructions_bytes" not in r for _, r in runs):
        return ""
    sizes = dict.fromkeys((t, r["skill_md_bytes"], r["instructions_bytes"]) for t, r in runs)  # in task order
    # A nested list needs a blank line before it and a 4-space indent, or Python-Markdown runs it into the paragraph;
    # and the bullet after an indented paragraph needs a blank line before it, or it runs into that paragraph.
    size_text = "\n" + "".join(f"\n    - {t}: {i} bytes, the SKILL.md's {m} plus {i - m};" for t, m, i in sizes)
    turns = "\n" + "".join(
        f"\n    - {t}, {r['scenario']}: {r['server_model_turns']} server model turns (it was "
        f"{r['server_model_turns'] + 1});"
        for t, r in runs
    )
    return f"""## How the agent gets its skill

When the measured server starts, before the first request, its set-up connects projector's verifying client to the
server in process and pins every skill it serves into a lock file in the run's temporary folder, as
`project-skill pin` does: the approval, made from the manifests, reading no file. Each run of the agent tool then
composes its system instructions from that lock with `projector.remote.compose`, before its loop: the skill is
resolved on the server and verified against its pin, and enters the instructions inside an origin tag that names
the server, the skill and the manifest digest. A skill that no longer matches the lock is refused there, and the
tool fails with the refusal before the agent calls a single tool (a test changes one byte of one file after set-up
and checks it). A read of one of the skill's own files would come from the composition's reader, which holds the
verified bytes of the pinned manifest only; none of these tasks reads one. The agent's reads here (the refund policy,
the database schema) are the server's own resources, not files of any skill, so they remain requests to the server.

What this changes, and what it does not:

- **The client's figures do not change.** Round trips, client model turns, context bytes and the refund are what
  they were before the agent composed: the client still sends one `tools/call` and receives only the final message.
  The composition adds no byte that reaches the client.

- **The agent's own loop is one step shorter.** The SKILL.md is in its instructions, so the agent no longer reads it
  from its server as its first request: its server requests are the skill surface's requests less that first
  read, and it has one server model turn fewer than when it read the SKILL.md itself:{turns}

    The composition's own requests (opening the in-process connection, `skills/list`, then a `resources/read` of
    each file of the pinned manifest, each checked against the pin) run before the loop, with no model involved, so
    they count as neither the agent's requests nor its turns.

- **The instructions are larger than the SKILL.md** by the preamble and the origin tag (`instructions_bytes` and
  `skill_md_bytes` in the data):{size_text}

    These bytes stay on the server, in the agent's own context, which the page does not otherwise measure.
"""


def _requests_section(task: dict[str, Any]) -> str:
    out = []
    for run in task["runs"]:
        person = (
            f", the person answering {run['person_answer']}, asked {plural(run.get('person_asked', 0), 'time')}"
            if "person_answer" in run
            else ""
        )
        out.append(
            f"\n**{SURFACE_LABEL.get(run['surface'], run['surface'])}, {run['scenario']}** "
            f"(order `{run.get('order_id', '')}`{person})\n\n| # | request | bytes received |\n| --- | --- | --- |\n"
        )
        for i, req in enumerate(run.get("requests", []), 1):
            out.append(f"| {i} | `{req['method']}` {req.get('target', '')} | {req['bytes']} |\n")
        if run.get("answer"):
            out.append(f"\nFinal answer: {run['answer']}\n")
    return "".join(out)


def matrix_page(root: Path) -> str:
    data = load(root)
    intro = """# Skill, workflow or agent: the decision matrix

A server author can hand a procedure to a model three ways. They are not rivals: they differ in **where judgment
runs**.

- **A. Skill.** The host's model reads the SKILL.md and runs each step itself, one tool call at a time. It applies
  each step's judgment, because it is the one deciding what to call next.
- **B. Workflow prompt.** The user picks the server-accelerated prompt; one `prompts/get` makes the server run every
  step and return the transcript. Nobody applies judgment between the steps: guidance prose cannot gate a
  server-side run.
- **B2. Gated workflow prompt.** The same prompt, from a workflow whose side-effecting step states its condition as
  data (`when:`). The server checks it just before the step and stops the run, naming the condition and the value it
  saw, when it fails. Judgment that is not stated as data still runs nowhere.
- **B3. Workflow prompt with confirmation.** The gated prompt with a `confirm:` on its side-effecting step: once
  the conditions hold, the server stops before the step and asks a person, through the client (an elicitation in an
  `InputRequiredResult`); the step runs only when the client retries with their yes. See
  [A person's yes, enforced by the server](#a-persons-yes-enforced-by-the-server).
- **B3t. Workflow tool as a task, with confirmation.** B3's workflow called as a workflow tool that runs as an MCP
  task (the Tasks extension, SEP-2663): the call returns a task at once, the client polls it, the server's question
  comes as the task's `input_required`, and the person's answer goes back through `tasks/update`. See
  [The same confirmation through a task](#the-same-confirmation-through-a-task-b3t).
- **C. Agent.** A tool on the server runs the server's own model with the skill as its instructions, and returns only
  its final message. Judgment runs on the server, out of the host's sight. Here the instructions are composed
  through `projector.remote.compose` ([Skills for your agent](agents.md)) from a lock made at the server's set-up:
  see [How the agent gets its skill](#how-the-agent-gets-its-skill).
"""
    if data is None:
        return (
            intro
            + f"""
## No measurement yet

`{DATA}` does not exist. Run `project-skill matrix`, then `project-skill docs`.
"""
        )
    refunds = _task(data, "refunds")
    if refunds is None:
        raise DocsError(f"{DATA} has no refunds task; run: project-skill matrix")
    refunded = _refunded_ineligible(refunds)
    if refunded == ["workflow"]:
        verdict = (
            "The ineligible order was refunded **only by the workflow surface**, as expected: the server-side "
            "run executed `issue_refund` regardless of the eligibility check, while the skill's reader and "
            "the agent both read the Judgment and declined, and the gated workflow prompt checked its "
            "condition and stopped before the step."
        )
    else:
        who = ", ".join(refunded) if refunded else "no surface"
        odd = [
            r
            for r in refunds["runs"]
            if r["scenario"] == "ineligible" and bool(r.get("refund_issued")) != (r["surface"] == "workflow")
        ]
        why = " ".join(f'The {r["surface"]} surface\'s last message was: "{r.get("answer", "")}"' for r in odd)
        verdict = (
            f"**This measurement differs from the expected result**: the ineligible order was refunded by "
            f"{who}, where only the workflow surface was expected to refund it. {why} The requests each "
            "surface made are listed below."
        )
    by = {(r["surface"], r["scenario"]): r for r in refunds["runs"]}
    spike_rows = []
    for s in ("skill", "workflow", "gated", "agent"):
        ours = by.get((s, "ineligible"))
        ref = SPIKE_011.get(s)
        spike = f"{ref['bytes']} B | {_yes(ref['refunded_ineligible'])}" if ref else "not measured | not measured"
        spike_rows.append(
            f"| {SURFACE_LABEL[s]} | {spike} | "
            f"{ours['context_bytes'] if ours else 'n/a'} B | "
            f"{_yes(ours.get('refund_issued')) if ours else 'n/a'} |"
        )
    others = [t for t in data["tasks"] if t.get("task") != "refunds"]
    other_sections = []
    for t in others:
        skipped = t.get("not_applicable") or {}
        note = "".join(f"\n- {SURFACE_LABEL.get(s, s)}: not measured: {why}" for s, why in sorted(skipped.items()))
        other_sections.append(f"""
### {t["task"]}

{t.get("description", "")}

{html_table("matrix-" + t["task"], t, with_refund=False)}
{note}
""")
    d = data.get("definitions", {})
    definitions = "\n".join(f"- **{k.replace('_', ' ')}**: {v}" for k, v in d.items())
    return (
        intro
        + f"""
The rule for choosing one, derived from the measurement below, is in [Choosing a surface](#choosing-a-surface).

**Judgment is simulated by a deterministic policy**, not by a language model: {data.get("policy", "")}
So the numbers below are exactly reproducible, and the refund column says what each surface *can* do with the
judgment it is given, not how well a particular model follows it.

{matrix_cases.summary(data)}
## The refunds task

{refunds.get("description", "")} Each surface ran once per scenario, each run against a freshly started server
({data.get("transport", "")}), and whether a refund was issued was read from the server's ledger after the run.

{html_table("matrix-refunds", refunds, with_refund=True)}

{verdict}

{bar_chart(refunds)}

{_blind_spot(by)}
{matrix_person.section(refunds)}
{_agent_section(data)}
{decision_rule(refunds, others)}
{matrix_cases.section(data)}
## Beside spike 011

Spike 011 is an experiment in pmcp, the Rust MCP SDK, that ran one refund task as a skill, a workflow prompt and an
agent with the same tools and the same decision rule, and measured round trips, model turns, the bytes that entered
the client's context and whether an ineligible order got refunded ([its write-up]({SPIKE_011_URL})). Its figures
are quoted here as the reference, for its ineligible order; this project's are measured on its own ineligible order.

| surface | spike 011: context | spike 011: refunded the ineligible order | this project: context | this project: refunded the ineligible order |
| --- | --- | --- | --- | --- |
{chr(10).join(spike_rows)}

{_skill_breakdown(by.get(("skill", "ineligible")))}

{_ordering(by)}

The qualitative result is the point of comparison. Byte counts depend on what is counted and on each demo server's
payloads, so they differ between the two projects; this project's counting rule is defined below.

The demo server runs on `mcp`'s MCPServer here. On FastMCP (`project-skill matrix --framework fastmcp`) every figure
is the same except the skill rows' context bytes, which are smaller: both frameworks send a tool's structured result
as the same `structuredContent`, but FastMCP prints it in the text content as compact JSON and MCPServer with a
two-space indent. A test measures both and checks that this is the only difference. The agent composes on both
through each framework's public in-process connection (`mcp.Client` on an MCPServer; on FastMCP, its Streamable
HTTP app reached through an ASGI transport, with no socket), and its figures are the same on both.

## Definitions

{definitions}

## Other tasks

Where a surface applies, the hello-world and code-mode tasks ran the same way.
{"".join(other_sections)}
## Every request

What each client sent, and the bytes of each result it received, for the refunds task.
{_requests_section(refunds)}
## Reproduce

```sh
project-skill matrix     # runs every surface and scenario, writes {DATA}
project-skill docs       # regenerates this page from it
```

The raw data is [data/matrix.json](data/matrix.json). No timings are shown on this page: they are not
deterministic. Speed is measured in `bench/`; see [Performance](performance.md).
"""
    )
