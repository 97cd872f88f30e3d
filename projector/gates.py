"""Gate warnings: guidance that reads like a condition on a step that changes the world.

A skill's reader applies a step's guidance with its own judgment. The server-accelerated workflow prompt cannot: it
runs every step unconditionally. So "only refund if eligible" on a refund step is a promise the prompt breaks. These
checks return diagnostics as data; nothing here prints.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from .errors import Diagnostic
from .model import FromArg, FromStep, Step, Workflow

# Each pattern is one family of gate-like wording. The first match (leftmost) is quoted in the warning.
GATE_WORDING: tuple[tuple[str, str], ...] = (
    ("condition", r"\bonly\b(?:\s+[\w'-]+){0,6}?\s+(?:if|when|after|once|for|with)\b"),
    ("condition", r"\bunless\b"),
    ("condition", r"\b(?:do\s+not|don't|never)\b(?:\s+[\w'-]+){0,8}?\s+(?:if|when|unless|without|before)\b"),
    ("condition", r"\b(?:provided\s+that|as\s+long\s+as|in\s+case|on\s+condition)\b"),
    ("condition", r"\bif\b"),
    ("order", r"\bbefore\b"),
    ("order", r"\bfirst\s+(?:check|make\s+sure|ensure)\b"),
    ("verification", r"\bverif(?:y|ies|ied|ication)\b"),
    ("verification", r"\bconfirm(?:s|ed|ation)?\b"),
    ("verification", r"\b(?:make\s+sure|ensure|double-check|check\s+(?:that|whether))\b"),
    ("eligibility", r"\b(?:in)?eligib(?:le|ility)\b"),
    ("permission", r"\b(?:approv(?:al|e|ed)|authori[sz](?:e|ed|ation)|permi(?:t|tted|ssion)|consent|sign-off)\b"),
    ("stop", r"\b(?:skip|abort|refuse|decline|halt)\b"),
)


@lru_cache(maxsize=1)
def gate_patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """Compiled on first use: most runs of ``check`` never need them, and compiling costs start-up time."""
    return tuple((family, re.compile(rx, re.IGNORECASE)) for family, rx in GATE_WORDING)


@dataclass(frozen=True)
class GateMatch:
    family: str
    phrase: str
    start: int = field(default=0, compare=False)


def find_gate(text: str) -> GateMatch | None:
    """The leftmost gate-like phrase in ``text``, or None."""
    best: tuple[int, GateMatch] | None = None
    for family, rx in gate_patterns():
        m = rx.search(text)
        if m and (best is None or m.start() < best[0]):
            best = (m.start(), GateMatch(family, " ".join(m.group(0).split()), m.start()))
    return best[1] if best else None


CODES = {
    "gate-on-side-effect": "warning",
    "unverifiable-step": "warning",
    "guidance-on-side-effect": "note",
    "ask-for-input": "note",
    "unused-acknowledgement": "warning",
    "uses-skippable-result": "warning",
}
ACKNOWLEDGEABLE = ("gate-on-side-effect", "unverifiable-step", "guidance-on-side-effect", "uses-skippable-result")


def named_result(wf: Workflow, index: int, text: str, after: int = 0) -> str | None:
    """The saved result (a bind of a step before step ``index``, 1-based) that ``text`` names, by its bind or its
    step's name, words split on ``_`` and ``-``: the first one named from ``after`` on, else the first one named."""
    names: list[tuple[str, str]] = []
    for s in wf.steps[:index - 1]:
        if s.bind:
            names += [(s.bind, s.bind), (s.name, s.bind)]
    found: list[tuple[int, int, str]] = []
    for order, (name, bind) in enumerate(names):
        words = [w for w in re.split(r"[_\-\s]+", name) if w]
        if not words:
            continue
        m = re.search(r"\b" + r"[\s_-]+".join(re.escape(w) for w in words) + r"\b", text, re.IGNORECASE)
        if m:
            found.append((0 if m.start() >= after else 1, m.start(), bind))
    return min(found)[2] if found else None


def asks_user(wf: Workflow, step: Step, key: str, src: object) -> bool:
    """Whether an argument must be asked of the user rather than worked out: an optional input that feeds a
    parameter the step's side-effecting tool requires. The model may not invent the value of a side effect."""
    if not isinstance(src, FromArg):
        return False
    declared = wf.argument(src.name)
    tool = wf.tool(step.tool) if step.tool else None
    if declared is None or declared.required or tool is None or not tool.side_effecting:
        return False
    schema = tool.input_schema if isinstance(tool.input_schema, dict) else {}
    required = schema.get("required")
    return isinstance(required, list) and key in required


def _diag(step: Step, code: str, message: str, hint: str | None) -> Diagnostic:
    return Diagnostic(step.guidance_span if code != "unverifiable-step" else step.span, CODES[code], code,
                      message, hint, acknowledged=step.acknowledged.get(code), extra={"step": step.name})


def check(wf: Workflow) -> list[Diagnostic]:
    """Every gate finding of ``wf``. Acknowledged ones are kept, marked with their reason."""
    out: list[Diagnostic] = []
    for index, step in enumerate(wf.steps, 1):
        fired: set[str] = set()
        tool = wf.tool(step.tool) if step.tool else None
        label = f"step {index} '{step.name}'"
        if tool is not None and not tool.annotated:
            gate = find_gate(step.guidance) if step.guidance else None
            extra = f", and its guidance reads like a gate (\"{gate.phrase}\")" if gate else ""
            out.append(_diag(step, "unverifiable-step",
                             f"{label} calls '{tool.name}', which has no annotations, so nobody can tell whether it "
                             f"has side effects{extra}",
                             "declare the tool's annotations (readOnlyHint, destructiveHint) as the server does"))
            fired.add("unverifiable-step")
        elif tool is not None and tool.side_effecting and step.guidance:
            gate = find_gate(step.guidance)
            if gate and not step.when:
                out.append(_diag(step, "gate-on-side-effect",
                                 f"{label} calls the side-effecting tool '{tool.name}' under gate-like guidance "
                                 f"(\"{gate.phrase}\"). Guidance prose cannot stop a server-side run: the "
                                 f"'{wf.name}' workflow prompt will run this step anyway",
                                 _gate_hint(wf, index, step.guidance, gate)))
                fired.add("gate-on-side-effect")
            else:
                enforced = " (it enforces only the step's when: conditions)" if step.when else ""
                out.append(_diag(step, "guidance-on-side-effect",
                                 f"{label} calls the side-effecting tool '{tool.name}' with guidance; the server-side "
                                 f"prompt shows the guidance but does not act on it{enforced}", None))
                fired.add("guidance-on-side-effect")
        for code in _skippable_uses(wf, index, step, label):
            out.append(code)
            fired.add(code.code)
        for key, src in step.args:
            if asks_user(wf, step, key, src):
                assert isinstance(src, FromArg)
                out.append(Diagnostic(src.span if src.span.line else step.span, "note", "ask-for-input",
                                      f"{label} passes the optional input '{src.name}' as '{key}', which the "
                                      f"side-effecting tool '{step.tool}' requires: the skill tells the model to ask "
                                      "the user for it and never to work it out itself",
                                      "make the argument required if the step cannot run without it",
                                      extra={"step": step.name}))
        for code, reason in step.acknowledge:
            if code not in fired:
                out.append(Diagnostic(step.span, "warning", "unused-acknowledgement",
                                      f"{label} acknowledges '{code}', which does not fire here ({reason})",
                                      "remove the stale acknowledgement"))
    return out


def _gate_hint(wf: Workflow, index: int, guidance: str, gate: GateMatch) -> str:
    tail = ("make the tool enforce the condition itself and acknowledge the warning on the step "
            "(acknowledge: {gate-on-side-effect: why}), or end the workflow before this step")
    bind = named_result(wf, index, guidance, gate.start)
    if bind is None:
        return tail
    return (f"the guidance names the saved result '{bind}': state the condition as data, "
            f"when: {{step: {bind}, field: FIELD, equals: VALUE}}, and the server-side run enforces it; or " + tail)


def _skippable_uses(wf: Workflow, index: int, step: Step, label: str) -> list[Diagnostic]:
    """``uses-skippable-result``: ``step`` uses the result of an earlier step that ``on_fail: skip`` may leave out."""
    skippable = {s.bind: (i, s) for i, s in enumerate(wf.steps[:index - 1], 1)
                 if s.bind and s.when and s.on_fail == "skip"}
    guarded = {c.subject.bind for c in step.when if isinstance(c.subject, FromStep)}  # the author decided
    used: list[str] = []
    for _key, src in step.sources():
        if isinstance(src, FromStep) and src.bind in skippable and src.bind not in guarded and src.bind not in used:
            used.append(src.bind)
    out = []
    for bind in used:
        i, earlier = skippable[bind]
        out.append(Diagnostic(step.span, CODES["uses-skippable-result"], "uses-skippable-result",
                              f"{label} uses '{bind}', the result of step {i} '{earlier.name}', which is skipped when "
                              "its condition fails (on_fail: skip); the server-side run then has no value for it: "
                              "it leaves an optional argument out, and hands the step over when the tool requires it",
                              "make step '" + earlier.name + "' stop instead (on_fail: stop), give this step a "
                              f"condition on '{bind}' (when: {{step: {bind}, exists: true}}, on_fail: skip), or "
                              "acknowledge the warning",
                              acknowledged=step.acknowledged.get("uses-skippable-result"), extra={"step": step.name}))
    return out
