"""Gate warnings: guidance that reads like a condition on a step that changes the world.

A skill's reader applies a step's guidance with its own judgment. The server-accelerated workflow prompt cannot: it
runs every step unconditionally. So "only refund if eligible" on a refund step is a promise the prompt breaks. Built
with ``--skills-only``, no prompt is served: the findings stay, worded for that case (the model's judgment is all that
applies the guidance). The
step's other warnings are reported here too, so that ``acknowledge:`` and ``unused-acknowledgement`` cover them:
``uses-skippable-result``, and ``unstructured-result`` (a field path into a result that is text), whose rule is
:func:`projector.fit.unstructured_reads`. (``eval-uncovered`` can be acknowledged too;
:func:`projector.evals.evals_json` reports it, and its unused acknowledgement, with the derived cases.) When the
guidance names a saved result, the gate hint suggests a condition on one of its fields, or, when its tool returns
text (:func:`projector.fit.returns_text`), on an input the user supplies. A step with ``confirm:`` gets no
``gate-on-side-effect`` for guidance about approval (a person's yes is enforced by the server-side run), and a
``confirm:`` on a step that changes nothing is ``confirm-on-read-only``.
These checks return diagnostics, and the steps they gate, as data; nothing here prints.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from .errors import Diagnostic, Span
from .conditions import Known, dead_end, never_decided, statement, subject_label
from .fit import ARG_JSON_TYPES, returns_text, unstructured_reads
from .results import saved_schema
from .toolschema import json_types
from .model import Condition, FromArg, FromStep, Step, Tool, Workflow

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
    "unstructured-result": "warning",  # projector.fit.unstructured_reads makes it; reported with its step's findings
    "confirm-on-read-only": "warning",
    "dead-condition": "warning",
}
# The gate wording that a step's ``confirm:`` answers: a person's yes is the approval, or the verification, that the
# guidance asks for, so such a step gets no gate-on-side-effect (its guidance is still shown, and not applied).
CONFIRMED_FAMILIES = ("permission", "verification")
ACKNOWLEDGEABLE = (
    "gate-on-side-effect",
    "unverifiable-step",
    "guidance-on-side-effect",
    "uses-skippable-result",
    "unstructured-result",
    "dead-condition",
    "eval-uncovered",  # reported with the derived evals (projector.evals), which also says when it is unused
)


_SEPARATORS = re.compile(r"[\s_-]+")
_TOKEN = re.compile(r"[^\W_]+")  # a run of letters and digits


def _name_key(name: str) -> tuple[str, ...] | None:
    """How a step's name or bind is looked for in a text: its runs of letters and digits, case-folded, and the text
    between them with every run of whitespace, ``_`` and ``-`` as one space, alternately. None for a name without a
    letter or digit, or one that starts or ends with other punctuation: such a name is never looked for."""
    core = _SEPARATORS.sub(" ", name).strip(" ")
    tokens = list(_TOKEN.finditer(core))
    if not tokens or tokens[0].start() != 0 or tokens[-1].end() != len(core):
        return None
    key: list[str] = []
    for i, m in enumerate(tokens):
        if i:
            key.append(core[tokens[i - 1].end() : m.start()])
        key.append(m.group(0).casefold())
    return tuple(key)


class ResultNames:
    """The saved results that earlier steps make, looked up by their binds and step names in a text.

    A name is named where the text holds its words (runs of letters and digits, case-insensitively) as whole words,
    joined by whitespace, ``_`` or ``-`` where the name has any of these, and by the same punctuation where the name
    has other punctuation: ``fetch order``, ``Fetch_Order`` and ``fetch-order`` all name the step ``fetch-order``,
    ``prefetch order`` names only a bind ``order``. Built step by step (:meth:`add`), and looked up in one pass over
    the text's words (:meth:`named`), so the gate check stays linear in the number of steps."""

    def __init__(self) -> None:
        self._trie: dict[str, Any] = {}  # token -> {gap -> {token -> ...}}; "" -> the least bind ending there
        self._added: list[tuple[str, str]] = []  # not in the trie yet: most checks never look a name up

    def add(self, name: str, bind: str) -> None:
        self._added.append((name, bind))

    def _grow(self) -> None:
        for name, bind in self._added:
            key = _name_key(name)
            if key is None:
                continue
            node = self._trie
            for part in key:
                node = node.setdefault(part, {})
            node[""] = min(node.get("", bind), bind)  # same words, same places in every text: the least bind wins
        self._added.clear()

    def named(self, text: str, after: int = 0) -> str | None:
        """The bind named in ``text``: the first one named at or after the offset ``after``, else the first one
        named; a tie goes to the least bind. Each name counts at its first place in the text only."""
        self._grow()
        words = list(_TOKEN.finditer(text))
        gaps = [_SEPARATORS.sub(" ", text[a.end() : b.start()]) for a, b in zip(words, words[1:])]
        first: dict[int, tuple[int, str]] = {}  # id of the name's node -> (start, bind)
        for i, word in enumerate(words):
            if word.start() and text[word.start() - 1] == "_":  # "_order" does not name "order": no word boundary
                continue
            node = self._trie.get(word.group(0).casefold())
            j = i
            while node is not None:
                end = words[j].end()
                if "" in node and id(node) not in first and not text.startswith("_", end):
                    first[id(node)] = (word.start(), node[""])
                if j + 1 == len(words):
                    break
                node = node.get(gaps[j])
                node = node.get(words[j + 1].group(0).casefold()) if node is not None else None
                j += 1
        found = [(0 if start >= after else 1, start, bind) for start, bind in first.values()]
        return min(found)[2] if found else None


def named_result(wf: Workflow, index: int, text: str, after: int = 0) -> str | None:
    """The saved result (a bind of a step before step ``index``, 1-based) that ``text`` names, by its bind or its
    step's name (:class:`ResultNames`): the first one named from ``after`` on, else the first one named."""
    names = ResultNames()
    for s in wf.steps[: index - 1]:
        if s.bind:
            names.add(s.bind, s.bind)
            names.add(s.name, s.bind)
    return names.named(text, after)


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


ASK_HINT = (
    "if asking is right, say so with ask: true on the argument (the server-side run then asks for it too, and this "
    "note goes); if the step cannot run without it, make the argument required"
)


def _ask_notes(wf: Workflow, step: Step, label: str, asked: set[str]) -> list[Diagnostic]:
    """``ask-for-input``: once per input (at its first use), and not for one declared ``ask: true``, whose author
    has already said that asking is right. ``asked`` holds the inputs named so far."""
    out = []
    for key, src in step.args:
        if not asks_user(wf, step, key, src) or src.name in asked:
            continue
        assert isinstance(src, FromArg)
        asked.add(src.name)
        declared = wf.argument(src.name)
        if declared is not None and declared.ask:
            continue
        out.append(
            Diagnostic(
                src.span if src.span.line else step.span,
                "note",
                "ask-for-input",
                f"{label} passes the optional input '{src.name}' as '{key}', which the "
                f"side-effecting tool '{step.tool}' requires: the skill tells the model to ask "
                "the user for it and never to work it out itself",
                ASK_HINT,
                extra={"step": step.name},
            )
        )
    return out


def _diag(step: Step, code: str, message: str, hint: str | None) -> Diagnostic:
    return Diagnostic(
        step.guidance_span if code != "unverifiable-step" else step.span,
        CODES[code],
        code,
        message,
        hint,
        acknowledged=step.acknowledged.get(code),
        extra={"step": step.name},
    )


@dataclass(frozen=True)
class GateFindings:
    """What :func:`check` finds: its ``diagnostics`` (acknowledged ones kept, marked with their reason), and, as
    data beside them, the ``gated`` steps (by name, in step order): those that call a side-effecting tool under
    gate-like guidance with no ``when:`` condition. :func:`projector.render.project` lays those steps out with the
    gate's "decide before you call" sentence."""

    diagnostics: list[Diagnostic]
    gated: tuple[str, ...] = ()


def check(wf: Workflow, *, skills_only: bool = False) -> GateFindings:
    """Every gate finding of ``wf``, and the steps it gates (:class:`GateFindings`).

    ``skills_only``: the build serves no workflow prompt (``build --skills-only``). The same findings fire, with the
    same codes and severities (so acknowledgements and ``--strict`` mean the same in both builds), but their words
    say what happens there: the model's judgment is all that applies the guidance, and a ``when:`` condition
    becomes a check the skill states before the call, not one a server-side run enforces."""
    out: list[Diagnostic] = []
    gated: list[str] = []
    names = ResultNames()  # the results saved before the current step, by bind and step name
    skippable: dict[str, tuple[int, Step]] = {}  # bind -> the earlier step that on_fail: skip may leave out
    asked: set[str] = set()  # the inputs an ask-for-input note has named already
    for index, step in enumerate(wf.steps, 1):
        fired: set[str] = set()
        tool = wf.tool(step.tool) if step.tool else None
        label = f"step {index} '{step.name}'"
        if tool is not None and not tool.annotated:
            gate = find_gate(step.guidance) if step.guidance else None
            extra = f', and its guidance reads like a gate ("{gate.phrase}")' if gate else ""
            out.append(
                _diag(
                    step,
                    "unverifiable-step",
                    f"{label} calls '{tool.name}', which has no annotations, so nobody can tell whether it "
                    f"has side effects{extra}",
                    "declare the tool's annotations (readOnlyHint, destructiveHint) under its tools: entry; "
                    "with --tools-from, a server that declares none takes them from there",
                )
            )
            fired.add("unverifiable-step")
        elif tool is not None and tool.side_effecting and step.guidance:
            gate = find_gate(step.guidance)
            if gate and not step.when and not (step.confirm and gate.family in CONFIRMED_FAMILIES):
                why = (
                    "Only the model's judgment applies it: no workflow prompt is served (--skills-only), and "
                    "nothing on the server stops the call if the model decides wrong"
                    if skills_only
                    else f"Guidance prose cannot stop a server-side run: the '{wf.name}' workflow prompt will run this "
                    "step anyway"
                )
                out.append(
                    _diag(
                        step,
                        "gate-on-side-effect",
                        f"{label} calls the side-effecting tool '{tool.name}' under gate-like guidance "
                        f'("{gate.phrase}"). {why}',
                        _gate_hint(wf, names, step.guidance, gate, skills_only),
                    )
                )
                fired.add("gate-on-side-effect")
                gated.append(step.name)
            else:
                if skills_only:
                    stated = " (the skill states its when: conditions as checks before the call)" if step.when else ""
                    what = f"only the model's judgment applies it: no workflow prompt is served{stated}"
                else:
                    enforced = " (it enforces only the step's when: conditions)" if step.when else ""
                    what = f"the server-side prompt shows the guidance but does not act on it{enforced}"
                out.append(
                    _diag(
                        step,
                        "guidance-on-side-effect",
                        f"{label} calls the side-effecting tool '{tool.name}' with guidance; {what}",
                        None,
                    )
                )
                fired.add("guidance-on-side-effect")
        for found in [
            *_skippable_uses(skippable, step, label, skills_only),
            *unstructured_reads(wf, step, skills_only=skills_only),
            *_dead_conditions(wf, step, label),
        ]:
            out.append(found)
            fired.add(found.code)
        out.extend(_ask_notes(wf, step, label, asked))
        out.extend(_confirm_on_read_only(tool, step, label))
        for code, _reason in step.acknowledge:
            if code not in fired and code != "eval-uncovered":  # projector.evals.evals_json decides that one
                out.append(unused_acknowledgement(step, label, code))
        if step.bind:
            names.add(step.bind, step.bind)
            names.add(step.name, step.bind)
            if step.when and step.on_fail == "skip":
                skippable[step.bind] = (index, step)
    return GateFindings(out, tuple(gated))


def unused_acknowledgement(step: Step, label: str, code: str) -> Diagnostic:
    """``unused-acknowledgement``: ``step`` (``label``) acknowledges ``code``, which does not fire on it."""
    return Diagnostic(
        step.span,
        "warning",
        "unused-acknowledgement",
        f"{label} acknowledges '{code}', which does not fire here ({step.acknowledged[code]})",
        "remove the stale acknowledgement",
    )


_JSON_TYPES = frozenset({"string", "integer", "number", "boolean", "array", "object", "null"})
_NEVER = {"hold": "can never hold", "fail": "can never fail while {subject} has a value"}


def _known(wf: Workflow, cond: Condition) -> tuple[Known, str]:
    """What the build knows of the subject of ``cond`` (:class:`Known`), and where that comes from, for the message
    ("" when said otherwise): a prompt argument's declared type; the whole result of a tool that returns text; or the
    type and ``enum`` that the output schema of the tool that made the result gives it, or the field."""
    subject = cond.subject
    if isinstance(subject, FromArg):
        declared = wf.argument(subject.name)
        if declared is None:
            return Known(), ""
        return Known(kinds=frozenset(ARG_JSON_TYPES.get(declared.type or "string", {"string"}))), ""
    made = wf.step_for_bind(subject.bind)
    tool = wf.tool(made[1].tool) if made is not None and made[1].tool is not None else None
    if tool is None:
        return Known(), ""
    if subject.field is None and returns_text(tool):
        return Known(text=True), ""
    schema = saved_schema(tool, subject.path)
    if schema is None:
        return Known(), ""
    kinds = json_types(schema)
    if not kinds or not kinds <= _JSON_TYPES:  # no type, or one JSON Schema does not have (a typo): not known
        kinds = None
    values = (
        (schema["const"],)
        if "const" in schema
        else tuple(schema["enum"])
        if isinstance(schema.get("enum"), list) and schema["enum"]
        else None
    )
    return Known(
        frozenset(kinds) if kinds is not None else None, values
    ), f", as the output schema of the tool '{tool.name}' declares it"


def decided(wf: Workflow, cond: Condition) -> bool:
    """Whether ``dead-condition`` says that ``cond`` as a whole can never hold, or never fail: no value of its
    operand can match its subject (:func:`_dead_conditions`)."""
    if dead_end(cond) is None:
        return False
    found = never_decided(cond, _known(wf, cond)[0])
    return bool(found) and len(found) == (len(cond.value) if isinstance(cond.value, (list, tuple)) else 1)


def _dead_conditions(wf: Workflow, step: Step, label: str) -> list[Diagnostic]:
    """``dead-condition``: a ``when:`` operand that its subject can never match (:func:`never_decided`), at the
    operand. When no value of the operand can, the condition never holds (``equals``, ``in``) or never fails
    (``not_equals``, ``not_in``), as the operator's entry says; otherwise the one value never matters."""
    out: list[Diagnostic] = []
    for cond in step.when:
        known, source = _known(wf, cond)
        found = never_decided(cond, known)
        end = dead_end(cond)
        whole = end is not None and len(found) == (len(cond.value) if isinstance(cond.value, (list, tuple)) else 1)
        for i, why, instead in found:
            at = cond.operand_spans[i] if i < len(cond.operand_spans) else cond.span
            if whole and end is not None:
                message = (
                    f"{label}: the condition that {statement(cond)} "
                    f"{_NEVER[end].format(subject=subject_label(cond.subject))}: {why}{source}"
                )
            else:
                message = (
                    f"{label}: in the condition that {statement(cond)}, the value {i + 1} can never match: "
                    f"{why}{source}"
                )
            fix = (
                (
                    f"write {cond.op}: {instead}"
                    if whole and not isinstance(cond.value, list)
                    else f"write the value as {instead}"
                )
                if instead
                else "compare with a value of the subject's type"
            )
            out.append(
                Diagnostic(
                    at if at.line else step.span,
                    "warning",
                    "dead-condition",
                    message,
                    fix,
                    acknowledged=step.acknowledged.get("dead-condition"),
                    extra={"step": step.name, **({"never": end} if whole and end is not None else {})},
                )
            )
    return out


def refused_on_server(wf: Workflow) -> list[Diagnostic]:
    """What a server refuses to serve (``attach``, ``serve``, the gateway; ``wf``'s tools are the server's, each
    filled in from the workflow's declaration): a ``dead-condition`` on a step that calls a side-effecting tool,
    unless the step acknowledges it. Such a gate never stops the call (or never lets it run), and on the server
    nobody reads the build's warning: the run would go on quietly. An error, at the operand."""
    out: list[Diagnostic] = []
    for index, step in enumerate(wf.steps, 1):
        tool = wf.tool(step.tool) if step.tool is not None else None
        if tool is None or not tool.side_effecting or "dead-condition" in step.acknowledged:
            continue
        label = f"workflow '{wf.name}', step {index} '{step.name}'"
        out.extend(
            Diagnostic(
                d.span if d.span.line else Span(wf.source),
                "error",
                "dead-condition",
                f"{d.message}; the step calls the side-effecting tool '{tool.name}', so the server will not run a "
                "gate that the tool's result can never decide",
                f"{d.hint}; or, if the step is meant to run so, acknowledge it on the step "
                "(acknowledge: {dead-condition: why})",
                extra=d.extra,
            )
            for d in _dead_conditions(wf, step, label)
            if "never" in d.extra  # a whole condition: one value of a list that never matters is the build's word
        )
    return out


def _confirm_on_read_only(tool: Tool | None, step: Step, label: str) -> list[Diagnostic]:
    """``confirm-on-read-only``: a confirmation before a step that changes nothing (a read-only tool, or resources)
    only costs the person a question."""
    if step.confirm is None or (step.tool is not None and (tool is None or tool.side_effecting)):
        return []
    what = f"calls the read-only tool '{tool.name}'" if tool is not None else "only reads resources"
    return [
        Diagnostic(
            step.confirm.span if step.confirm.span.line else step.span,
            "warning",
            "confirm-on-read-only",
            f"{label} asks a person to confirm, but it {what}: nothing needs their yes",
            "remove confirm, or put it on the step that changes data",
            extra={"step": step.name},
        )
    ]


def _gate_hint(wf: Workflow, names: ResultNames, guidance: str, gate: GateMatch, skills_only: bool = False) -> str:
    tail = (
        "make the tool enforce the condition itself and acknowledge the warning on the step "
        "(acknowledge: {gate-on-side-effect: why}), or end the workflow before this step"
    )
    bind = names.named(guidance, gate.start)
    if bind is None:
        return tail
    then = (
        "the skill states it as an exact check before the call (served with its workflow prompt, the "
        "server-side run enforces it too)"
        if skills_only
        else "the server-side run enforces it"
    )
    made = wf.step_for_bind(bind)
    tool = wf.tool(made[1].tool) if made is not None and made[1].tool else None
    if returns_text(tool):
        assert tool is not None
        return (
            f"the guidance names the saved result '{bind}', but the tool '{tool.name}' returns text (it declares "
            "no output schema), which has no field to test: state the condition as data on an input the user "
            "supplies, when: {arg: approved, equals: true} (declared under arguments, type: boolean), and "
            f"{then}; or " + tail
        )
    return (
        f"the guidance names the saved result '{bind}': state the condition as data, "
        f"when: {{step: {bind}, field: FIELD, equals: VALUE}}, and {then}; or " + tail
    )


def _skippable_uses(
    skippable: dict[str, tuple[int, Step]], step: Step, label: str, skills_only: bool = False
) -> list[Diagnostic]:
    """``uses-skippable-result``: ``step`` uses the result of an earlier step that ``on_fail: skip`` may leave out
    (``skippable``: bind -> that step and its number, of the steps before this one)."""
    guarded = {c.subject.bind for c in step.when if isinstance(c.subject, FromStep)}  # the author decided
    used: list[str] = []
    for _key, src in step.sources():
        if isinstance(src, FromStep) and src.bind in skippable and src.bind not in guarded and src.bind not in used:
            used.append(src.bind)
    out = []
    for bind in used:
        i, earlier = skippable[bind]
        out.append(
            Diagnostic(
                step.span,
                CODES["uses-skippable-result"],
                "uses-skippable-result",
                f"{label} uses '{bind}', the result of step {i} '{earlier.name}', which is skipped when "
                "its condition fails (on_fail: skip); "
                + (
                    "the model then has no value for it"
                    if skills_only
                    else "the server-side run then has no value for it: it leaves an optional argument out, "
                    "and hands the step over when the tool requires it"
                ),
                "make step '" + earlier.name + "' stop instead (on_fail: stop), give this step a "
                f"condition on '{bind}' (when: {{step: {bind}, exists: true}}, on_fail: skip), or "
                "acknowledge the warning",
                acknowledged=step.acknowledged.get("uses-skippable-result"),
                extra={"step": step.name},
            )
        )
    return out
