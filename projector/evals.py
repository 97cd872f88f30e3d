"""Evals derived from the workflow itself: the cases are already data, so none is written by hand.

Each ``when:`` condition has a case where it holds and one where it does not, each ``confirm:`` a yes, a no and no
answer, each ``ask: true`` input an answer given and one refused; and the server's own state (which tool was called,
with which arguments) says what should have happened, so no model judges a case. The build writes them in the Agent
Skills format (``evals.json``, and ``eval_queries.json`` for triggering, whose should-not-trigger queries are the
nearest other workflows' descriptions) into a tree of their own beside the skills (``generated_evals/<skill>/``
beside ``generated_skills/``), never in a skill's folder: an agent that could read a skill's expected answers would
be graded on what it read, and a generic skills server (FastMCP's ``SkillsDirectoryProvider``, the TypeScript SDK's
``SkillCatalog``) pointed at the skills serves every file of a skill's folder (skill-creator leaves ``evals/`` out
of the packages it makes, for the same reason).

Everything here is derived from the model alone, with the one condition evaluator
(:func:`projector.conditions.first_failure`): every case is checked against it before it is written, and a case
that cannot be made (conditions that contradict each other) is left out and reported (``eval-uncovered``), so no
written case states an outcome the server would not produce. The format and the rules are in ``docs/evals.md``.
"""

from __future__ import annotations

import re
from itertools import chain
from dataclasses import dataclass, field
from typing import Any

from .conditions import MISSING, first_failure, holds, statement
from .errors import Diagnostic
from .model import Condition, Const, FromArg, FromStep, Source, Step, Workflow
from .render import json_text

# Each skill's two files, by their path in its folder of the evals tree (``generated_evals/<skill>/``).
EVALS_FILE = "evals.json"
QUERIES_FILE = "eval_queries.json"
NEGATIVES = 10  # should-not-trigger queries per skill: the Agent Skills guide asks for 8 to 10
COMMON_WORD = 50  # a word in more descriptions than this says nothing about nearness (and would make it quadratic)


def json_bytes(value: Any) -> bytes:
    """Stable JSON, as ``skills.json`` is written: fixed separators, keys in construction order, one newline."""
    return (json_text(value, indent=2, sort_keys=False) + "\n").encode("utf-8")


# ------------------------------------------------------------------------------------------------ what is given


@dataclass
class Given:
    """What a case starts from: the prompt's arguments, the results the tools return (by bind; only those a
    condition reads), and the answers a person gives (by step name and question)."""

    arguments: dict[str, Any]
    results: dict[str, Any] = field(default_factory=dict)
    answers: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    def copy(self) -> Given:
        return Given(dict(self.arguments), _deep(self.results), dict(self.answers))


def _deep(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _deep(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep(v) for v in value]
    return value


def sample(name: str, kind: str | None) -> Any:
    """The value a case gives an argument no condition reads."""
    return {"integer": 1, "number": 1, "boolean": True}.get(kind or "string", f"example-{name}")


_KINDS = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,)}


def _candidates(cond: Condition, kind: str | None, may_be_absent: bool) -> list[Any]:
    """Values a subject could take, in the order tried: the operand's own, then one of each JSON kind, then ones that
    equal none of the operand's; :data:`MISSING` last, where the subject may have no value."""
    operand = cond.value if isinstance(cond.value, list) else [cond.value]
    strings = [v for v in operand if isinstance(v, str)]
    numbers = [v for v in operand if isinstance(v, (int, float)) and not isinstance(v, bool)]
    found = [
        *operand,
        True,
        False,
        0,
        1,
        max(numbers, default=0) + 1,
        "example",
        "other",
        "x" * (max(map(len, strings), default=0) + 1),
        None,
    ]
    if kind is not None:  # an argument of a declared type takes values of that type only
        found = [v for v in found if isinstance(v, _KINDS[kind]) and (kind == "boolean") == isinstance(v, bool)]
    return [*found, MISSING] if may_be_absent else found


def _put(given: Given, subject: FromArg | FromStep, value: Any) -> None:
    """Set the subject's value (or take it away, for :data:`MISSING`)."""
    if isinstance(subject, FromArg):
        given.arguments.pop(subject.name, None) if value is MISSING else given.arguments.__setitem__(
            subject.name, value
        )
        return
    path = subject.path
    if not path:
        given.results.pop(subject.bind, None) if value is MISSING else given.results.__setitem__(subject.bind, value)
        return
    node = given.results.setdefault(subject.bind, {} if isinstance(path[0], str) else [])
    for part, after in zip(path, (*path[1:], None)):
        last = after is None
        if isinstance(node, dict):
            if last:
                node.pop(str(part), None) if value is MISSING else node.__setitem__(str(part), value)
                return
            node = node.setdefault(str(part), {} if isinstance(after, str) else [])
        elif isinstance(node, list) and isinstance(part, int):
            while len(node) <= part:
                node.append(None)
            if last:
                node[part] = None if value is MISSING else value
                return
            if not isinstance(node[part], (dict, list)):
                node[part] = {} if isinstance(after, str) else []
            node = node[part]
        else:
            return  # a path through a value a condition already set: verification decides


def _value_for(wf: Workflow, cond: Condition, want: bool, given: Given, check: Any) -> bool:
    """Give ``cond``'s subject the first candidate value for which the condition holds (``want``) or fails, and
    ``check(given)`` agrees; True when one was found (``given`` is changed), False when none (it is unchanged)."""
    subject = cond.subject
    arg = wf.argument(subject.name) if isinstance(subject, FromArg) else None
    kind = arg.type if arg is not None else None
    absent_ok = (arg is not None and not arg.required) or (isinstance(subject, FromStep) and subject.field is not None)
    for value in _candidates(cond, kind, absent_ok):
        if holds(cond.op, cond.value, value) != want:
            continue
        trial = given.copy()
        _put(trial, subject, value)
        if check(trial):
            given.arguments, given.results = trial.arguments, trial.results
            return True
    return False


# ---------------------------------------------------------------------------------------------------- the cases


@dataclass
class Case:
    covers: list[str]
    given: Given
    step: Step | None  # the step the case is about (None: the whole run)
    called: bool
    why: str


def _reachable(wf: Workflow, given: Given) -> list[Step]:
    """The steps that run with ``given`` (all conditions of a step hold, every confirmation is answered yes), in
    order, up to the first that stops the run."""
    out: list[Step] = []
    for step in wf.steps:
        ok = first_failure(step.when, given.arguments, given.results) is None
        yes = step.confirm is None or given.answers.get((step.name, "confirm"), {}).get("action") == "accept"
        if ok and yes:
            out.append(step)
        elif step.on_fail != "skip":
            break
    return out


def _base(wf: Workflow) -> Given:
    """Every argument given, each condition holding where it can (in order: a later condition may not undo an
    earlier one), every confirmation answered yes."""
    given = Given({a.name: sample(a.name, a.type) for a in wf.arguments})
    for n, step in enumerate(wf.steps):
        for i, cond in enumerate(step.when):
            done = [s.when for s in wf.steps[:n] if s.when] + [step.when[: i + 1]]

            def still(trial: Given, done: list[tuple[Condition, ...]] = done) -> bool:
                return all(first_failure(when, trial.arguments, trial.results) is None for when in done)

            _value_for(wf, cond, True, given, still)
        if step.confirm is not None:
            given.answers[(step.name, "confirm")] = {"action": "accept"}
    return given


def derive(wf: Workflow) -> tuple[list[Case], list[Step]]:
    """The cases of ``wf``, and its gated or confirmed side-effecting steps that no case covers."""
    base = _base(wf)
    ran = _reachable(wf, base)
    names = {s.name for s in ran}
    cases = [Case(["the run, every condition holding and every confirmation a yes"], base, None, True, "")]
    covered: set[str] = set()
    for step in ran:
        before = wf.steps[: wf.steps.index(step)]

        def earlier_hold(trial: Given, before: tuple[Step, ...] = before) -> bool:
            now = {s.name for s in _reachable(wf, trial)}
            return all(s.name in now for s in before if s.name in names)

        for i, cond in enumerate(step.when):
            trial = base.copy()
            if _value_for(wf, cond, False, trial, earlier_hold):
                cases.append(
                    Case(
                        [f"{step.name}: when[{i}] fails"],
                        trial,
                        step,
                        False,
                        f"the condition {statement(cond)} fails ({_on_fail(step)})",
                    )
                )
                covered.add(f"{step.name}:when{i}")
        if step.confirm is not None:
            for action, words in (("decline", "the person says no"), ("cancel", "the person gives no answer")):
                trial = base.copy()
                trial.answers[(step.name, "confirm")] = {"action": action}
                cases.append(
                    Case([f"{step.name}: confirm {action}"], trial, step, False, f"{words} ({_on_fail(step)})")
                )
    cases += _ask_cases(wf, base, ran)
    tool_of = {t.name: t for t in wf.tools}
    uncovered = [
        s
        for s in wf.steps
        if s.tool is not None
        and (s.when or s.confirm)
        and tool_of.get(s.tool)
        and tool_of[s.tool].side_effecting
        and (s not in ran or any(f"{s.name}:when{i}" not in covered for i in range(len(s.when))))
    ]
    return cases, uncovered


def _on_fail(step: Step) -> str:
    return "on_fail: skip, so the run goes on" if step.on_fail == "skip" else "the run stops there"


def _ask_cases(wf: Workflow, base: Given, ran: list[Step]) -> list[Case]:
    """For each ``ask: true`` input: the prompt called without it, the person giving it, or refusing it, when the
    first step that reads it is about to run."""
    cases: list[Case] = []
    for arg in wf.arguments:
        if not arg.ask or arg.required or arg.name not in base.arguments:
            continue
        first = next((s for s in ran if arg.name in s.arguments_read()), None)
        if first is None:
            continue
        value = base.arguments[arg.name]
        for action in ("accept", "decline"):
            trial = base.copy()
            del trial.arguments[arg.name]
            answer: dict[str, Any] = {"action": action}
            if action == "accept":
                answer["content"] = {arg.name: value}
            trial.answers[(first.name, "ask")] = answer
            why = "" if action == "accept" else f"the person does not give `{arg.name}` (the run stops there)"
            cases.append(
                Case(
                    [f"{arg.name}: asked, {'given' if action == 'accept' else 'refused'}"],
                    trial,
                    first,
                    action == "accept",
                    why,
                )
            )
    return cases


# ------------------------------------------------------------------------------------------------- as written


def _source(src: Source, arguments: dict[str, Any]) -> Any:
    """A tool argument as the case expects it: a prompt argument's value, a constant (placeholders filled), or a
    reference to an earlier result that the case does not state (``{"step": bind, "field": path}``)."""
    if isinstance(src, FromArg):
        return arguments.get(src.name, {"arg": src.name})
    if isinstance(src, Const):
        if isinstance(src.value, str) and all(p in arguments for p in src.placeholders):
            return re.sub(r"\{([A-Za-z_][A-Za-z0-9_.-]*)\}", lambda m: str(arguments[m.group(1)]), src.value)
        return src.value
    ref: dict[str, Any] = {"step": src.bind}
    if src.field is not None:
        ref["field"] = src.field
    return ref


def _call(step: Step, called: bool, arguments: dict[str, Any]) -> dict[str, Any]:
    call: dict[str, Any] = {"step": step.name, "tool": step.tool, "called": called}
    if called:
        call["arguments"] = {k: _source(src, arguments) for k, src in step.args}
    return call


def _said(step: Step, called: bool, arguments: dict[str, Any]) -> str:
    """The expectation in words: the tool was not called, or was, with each argument's value (an earlier result's
    field as ``bind.field``, which the case does not state)."""
    if not called:
        return f"`{step.tool}` (step `{step.name}`) was not called"
    parts = []
    for key, src in step.args:
        value = _source(src, arguments)
        if isinstance(src, FromStep):
            text = f"the result `{src.bind}`" + (f"'s field `{src.field}`" if src.field is not None else "")
        else:
            text = json_text(value, indent=None, sort_keys=True)
        parts.append(f"{key} = {text}")
    return f"`{step.tool}` (step `{step.name}`) was called" + (f" with {', '.join(parts)}" if parts else "")


def _entry(wf: Workflow, n: int, case: Case) -> dict[str, Any]:
    given = case.given
    if case.step is None:
        ran = {s.name for s in _reachable(wf, given)}
        steps = [s for s in wf.steps if s.tool is not None]
        calls = [_call(s, s.name in ran, given.arguments) for s in steps]
        said = [_said(s, s.name in ran, given.arguments) for s in steps]
        stop = next((s for s in wf.steps if s.name not in ran), None)
        expected = (
            (
                f"Step `{stop.name}` cannot run (its conditions cannot all hold): "
                if stop is not None
                else "Every step runs: "
            )
            + ("; ".join(said) or "no tool is called")
            + "."
        )
    elif case.step.tool is None:
        calls, said = [], []
        expected = f"Step `{case.step.name}` {'reads its resources' if case.called else 'does not run'}."
    else:
        done = dict(given.arguments)
        for (_, question), answer in given.answers.items():
            if question == "ask" and answer.get("action") == "accept":
                done.update(answer.get("content", {}))
        calls = [_call(case.step, case.called, done)]
        said = [_said(case.step, case.called, done)]
        expected = said[0] + (f": {case.why}." if case.why else ".")
    inputs = "; ".join(f"{k} = {json_text(v, indent=None, sort_keys=True)}" for k, v in given.arguments.items())
    results = [
        {"step": s.name, "tool": s.tool, "returns": given.results[s.bind]}
        for s in wf.steps
        if s.bind is not None and s.bind in given.results and wf.step_for_bind(s.bind) == (wf.steps.index(s), s)
    ]
    order = {s.name: i for i, s in enumerate(wf.steps)}
    answers = [
        {"step": step, "question": q, **a}
        for (step, q), a in sorted(  # in the order the run asks: by step, ask first
            given.answers.items(), key=lambda item: (order.get(item[0][0], 0), item[0][1])
        )
    ]
    return {
        "id": n,
        "prompt": wf.description.strip() + (f"\n\nInputs: {inputs}." if inputs else ""),
        "expected_output": expected,
        "expectations": said or [expected],
        # The project's own data, beside the Agent Skills fields: what the case gives and the server state it expects.
        "projector": {
            "covers": case.covers,
            "arguments": given.arguments,
            "results": results,
            "answers": answers,
            "calls": calls,
        },
    }


def evals_json(wf: Workflow, skill_name: str) -> tuple[bytes, list[Diagnostic]]:
    """``evals.json`` of ``wf``, and an ``eval-uncovered`` warning for each gated or confirmed side-effecting
    step that no case covers."""
    cases, uncovered = derive(wf)
    doc = {"skill_name": skill_name, "evals": [_entry(wf, n, c) for n, c in enumerate(cases, 1)]}
    problems = [
        Diagnostic(
            s.span,
            "warning",
            "eval-uncovered",
            f"step '{s.name}' calls the side-effecting tool '{s.tool}' behind conditions or a "
            "confirmation, and no eval case can be derived for each of them: its conditions "
            "contradict each other or an earlier step's, so they can never all hold, or never fail",
            "make the conditions satisfiable, each on its own, with the earlier steps' conditions holding",
            extra={"step": s.name},
        )
        for s in uncovered
    ]
    return json_bytes(doc), problems


# ----------------------------------------------------------------------------------------- the trigger queries

_WORD = re.compile(r"[^\W_]{3,}")
_STOP = frozenset(
    "the and for with from that this into your its are was not but any all one has have can use "
    "when then than only once after before each".split()
)


def _words(text: str) -> frozenset[str]:
    return frozenset(w for w in (m.group(0).casefold() for m in _WORD.finditer(text)) if w not in _STOP)


def tree_files(bundles: list[Any]) -> dict[str, bytes]:
    """Each bundle's (a :class:`projector.bundle.Bundle`, which imports this module) two eval files by their path in
    the evals tree (the bundle's path, then the file's). The trigger queries: the skill's description
    should trigger it; the :data:`NEGATIVES` other descriptions nearest to it (most words shared, then by path, a
    word shared by more than :data:`COMMON_WORD` descriptions not counted) should not, filled up with the next
    skills by path when fewer share a word. Linear in the skills, so a build of thousands stays fast."""
    ordered = sorted(bundles, key=lambda b: b.path)
    texts = [str(b.entry["frontmatter"].get("description", "")) for b in ordered]
    words = [_words(t) for t in texts]
    posting: dict[str, list[int]] = {}
    for i, ws in enumerate(words):
        for w in ws:
            posting.setdefault(w, []).append(i)
    files: dict[str, bytes] = {}
    for i, b in enumerate(ordered):
        shared: dict[int, int] = {}
        for w in sorted(words[i]):
            if len(posting[w]) <= COMMON_WORD:
                for j in posting[w]:
                    shared[j] = shared.get(j, 0) + 1
        near = sorted((j for j in shared if j != i), key=lambda j: (-shared[j], j))
        rest = ((i + k) % len(ordered) for k in range(1, len(ordered)))
        picked: list[int] = []
        for j in chain(near, rest):
            if len(picked) == NEGATIVES:
                break
            if j not in picked and texts[j].strip() and texts[j] != texts[i]:
                picked.append(j)
        queries = [{"query": texts[i], "should_trigger": True}]
        queries += [{"query": texts[j], "should_trigger": False} for j in picked]
        files[f"{b.path}/{EVALS_FILE}"] = b.evals
        files[f"{b.path}/{QUERIES_FILE}"] = json_bytes(queries)
    return files
