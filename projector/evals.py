"""Evals derived from the workflow itself: the cases are already data, so none is written by hand.

Each ``when:`` condition has a case where it holds and one where it does not, each ``confirm:`` a yes, a no and no
answer, each ``ask: true`` input an answer given and one refused; and the server's own state (which tool was called,
with which arguments) says what should have happened, so no model judges a case. The build writes them in the Agent
Skills format (``evals.json``, and ``eval_queries.json`` for triggering, whose should-not-trigger queries are the
nearest other workflows' descriptions: :mod:`projector.evaltree`) into a tree of their own beside the skills
(``generated_evals/<skill>/`` beside ``generated_skills/``), never in a skill's folder: an agent that could read a
skill's expected answers would be graded on what it read, and a generic skills server (FastMCP's
``SkillsDirectoryProvider``, the TypeScript SDK's ``SkillCatalog``) pointed at the skills serves every file of a
skill's folder (skill-creator leaves ``evals/`` out of the packages it makes, for the same reason).

Everything here is derived from the model alone, with the one condition evaluator
(:func:`projector.conditions.first_failure`): every case is checked against it before it is written, and a case
that cannot be made is left out and reported (``eval-uncovered``, with which condition and why, unless
``dead-condition`` names it), so no written case states an outcome the server would not produce. The format and the
rules are in ``docs/evals.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .conditions import MISSING, OPERATORS, first_failure, holds, json_equal, literal, statement, subject_value
from .gates import decided, unused_acknowledgement
from .errors import Diagnostic
from .model import Condition, Const, FromArg, FromStep, Source, Step, Workflow
from .render import json_text
from .results import saved_schema
from .toolschema import argument_errors, json_type, json_types


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


_ARG_KINDS = {"string": {"string"}, "integer": {"integer"}, "number": {"number", "integer"}, "boolean": {"boolean"}}


@dataclass(frozen=True)
class Allowed:
    """The values a case may give a subject: those of ``kinds`` (JSON types; None: any), one of ``values`` when
    given (an output schema's ``enum`` or ``const``), and no value at all when ``absent``. A prompt argument takes
    values of its declared type; a result, or a field of one, what the output schema of its tool allows (a
    required field is always there), so no case gives a tool a result the server can never send."""

    kinds: frozenset[str] | None = None
    values: tuple[Any, ...] | None = None
    absent: bool = False
    schema: dict[str, Any] | None = None  # the field's whole schema (its bounds, its pattern), with the root's $defs

    def admits(self, value: Any) -> bool:
        if value is MISSING:
            return self.absent
        if self.values is not None and not any(json_equal(value, v) for v in self.values):
            return False
        kind = json_type(value)
        if not (self.kinds is None or kind in self.kinds or (kind == "integer" and "number" in self.kinds)):
            return False
        # the rest of the schema (minimum, pattern, ...), by the bounded check; a schema it cannot apply admits it
        found = argument_errors(self.schema, {"value": value}) if self.schema is not None else {}
        return isinstance(found, str) or "value" not in found


def _allowed(wf: Workflow, subject: FromArg | FromStep) -> Allowed:
    if isinstance(subject, FromArg):
        arg = wf.argument(subject.name)
        if arg is None:
            return Allowed()
        kinds = frozenset(_ARG_KINDS.get(arg.type, {"string"})) if arg.type else None
        return Allowed(kinds, absent=not arg.required)
    made = wf.step_for_bind(subject.bind)
    tool = wf.tool(made[1].tool) if made is not None and made[1].tool is not None else None
    path = subject.path
    schema = saved_schema(tool, path)
    absent = bool(path)
    if path:
        parent = saved_schema(tool, path[:-1])
        required = parent.get("required") if parent is not None else None
        absent = not (isinstance(required, list) and str(path[-1]) in required)
    if schema is None:
        return Allowed(absent=absent)
    kinds = json_types(schema)
    values = (
        (schema["const"],)
        if "const" in schema
        else tuple(schema["enum"])
        if isinstance(schema.get("enum"), list)
        else None
    )
    whole = tool.output_schema if tool is not None and isinstance(tool.output_schema, dict) else {}
    within = {
        "type": "object",
        "properties": {"value": schema},
        **{k: whole[k] for k in ("$defs", "definitions") if k in whole},
    }
    return Allowed(frozenset(kinds) if kinds is not None else None, values, absent, within)


def _candidates(cond: Condition, allowed: Allowed) -> list[Any]:
    """Values a subject could take, in the order tried: its operator's samples, the operand's own (the values of an
    ``in`` list; an ``equals`` list is one value), then one of each JSON kind, then ones that equal none of the
    operand's, then those of an ``enum``; :data:`MISSING` last, where the subject may have no value. Only those
    ``allowed``."""
    listed = OPERATORS[cond.op].operand == "list" and isinstance(cond.value, list)
    operand = cond.value if listed else [cond.value]
    strings = [v for v in operand if isinstance(v, str)]
    numbers = [v for v in operand if isinstance(v, (int, float)) and not isinstance(v, bool)]
    found = [
        *OPERATORS[cond.op].samples(cond.value),
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
        [],
        ["example"],
        {},
        {"example": "example"},
        *(allowed.values or ()),
        MISSING,
    ]
    return [v for v in found if allowed.admits(v)]


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


def _same(now: Any, value: Any) -> bool:
    """Whether giving a subject ``value`` leaves it as it is ``now``: the case is then the state it came from."""
    return (now is MISSING) == (value is MISSING) and (now is MISSING or literal(now) == literal(value))


def _value_for(wf: Workflow, cond: Condition, want: bool, given: Given, check: Any, settled: bool) -> bool:
    """Give ``cond``'s subject the first candidate value for which the condition holds (``want``) or fails, and
    ``check(given)`` agrees (a value that changes nothing needs no check when ``given`` passes it: ``settled``); True
    when one was found (``given`` is changed), False when none (it is unchanged). ``check`` is told only of states
    that differ from ``given`` in this subject: it need look only at the conditions that read it."""
    subject = cond.subject
    now = subject_value(subject, given.arguments, given.results)
    for value in _candidates(cond, _allowed(wf, subject)):
        if holds(cond.op, cond.value, value) != want:
            continue
        trial = given.copy()
        _put(trial, subject, value)
        if (settled and _same(now, value)) or check(trial):
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


def _key(subject: FromArg | FromStep) -> tuple[str, str]:
    """What a case changes when it gives a subject a value: one prompt argument, or one saved result (a field's
    value is part of its result). A condition on another key reads the same before and after."""
    return ("arg", subject.name) if isinstance(subject, FromArg) else ("step", subject.bind)


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
    earlier one), every confirmation answered yes.

    A value is kept when every condition so far holds with it. Only those that read what it changes (:func:`_key`)
    are evaluated again; the others are counted once, when they are set, as holding or not (``failing``). So the
    work is linear in the conditions, whatever the number of steps."""
    given = Given({a.name: sample(a.name, a.type) for a in wf.arguments})
    read: dict[tuple[str, str], list[Condition]] = {}  # the conditions so far, by what they read
    failing: dict[tuple[str, str], int] = {}  # by what they read: how many of those do not hold in `given`
    for step in wf.steps:
        for cond in step.when:
            key = _key(cond.subject)
            conds = read.setdefault(key, [])
            conds.append(cond)
            others = sum(failing.values()) - failing.get(key, 0)

            def still(trial: Given, conds: list[Condition] = conds, others: int = others) -> bool:
                return not others and first_failure(conds, trial.arguments, trial.results) is None

            settled = not sum(failing.values())
            if _value_for(wf, cond, True, given, still, settled):
                failing[key] = 0
            elif first_failure((cond,), given.arguments, given.results) is not None:
                failing[key] = failing.get(key, 0) + 1
        if step.confirm is not None:
            given.answers[(step.name, "confirm")] = {"action": "accept"}
    return given


def derive(wf: Workflow) -> tuple[list[Case], list[tuple[Step, str]]]:
    """The cases of ``wf``, and its gated or confirmed side-effecting steps that no case covers, each with why (in
    words, for ``eval-uncovered``).

    A failing case changes one subject of the run's state: the steps that ran before still run when each of them
    that reads that subject still holds (:func:`_key`; the others read what they read before), so each trial looks
    at those steps only, and deriving stays linear in the steps."""
    base = _base(wf)
    ran = _reachable(wf, base)
    names = {s.name for s in ran}
    readers: dict[tuple[str, str], list[Step]] = {}  # the steps that ran so far, by what their conditions read
    cases = [Case(["the run, every condition holding and every confirmation a yes"], base, None, True, "")]
    why: dict[str, str] = {}  # by step: why the first of its conditions that no case makes fail has none
    for step in ran:

        def earlier_hold(trial: Given, key: tuple[str, str]) -> bool:
            return all(first_failure(s.when, trial.arguments, trial.results) is None for s in readers.get(key, ()))

        for i, cond in enumerate(step.when):
            trial = base.copy()
            key = _key(cond.subject)
            if _value_for(wf, cond, False, trial, lambda t, key=key: earlier_hold(t, key), True):
                cases.append(
                    Case(
                        [f"{step.name}: when[{i}] fails"],
                        trial,
                        step,
                        False,
                        f"the condition {statement(cond)} fails ({_on_fail(step)})",
                    )
                )
            elif not why.get(step.name):  # "": dead-condition names it; a later one may have another cause
                why[step.name] = _never_fails(wf, step, i, base, readers.get(key, []))
        for key in dict.fromkeys(_key(c.subject) for c in step.when):
            readers.setdefault(key, []).append(step)
        if step.confirm is not None:
            for action, words in (("decline", "the person says no"), ("cancel", "the person gives no answer")):
                trial = base.copy()
                trial.answers[(step.name, "confirm")] = {"action": action}
                cases.append(
                    Case([f"{step.name}: confirm {action}"], trial, step, False, f"{words} ({_on_fail(step)})")
                )
    cases += _ask_cases(wf, base, ran)
    uncovered = []
    for s in wf.steps:
        tool = wf.tool(s.tool) if s.tool is not None else None
        if tool is None or not tool.side_effecting or not (s.when or s.confirm):
            continue
        said = _never_reached(wf, s, base, names) if s.name not in names else why.get(s.name)
        if said:  # "": dead-condition already says why (one word for one cause)
            uncovered.append((s, said))
    return cases, uncovered


def _condition(step: Step, i: int, own: Step | None = None) -> str:
    """The ``i``-th condition of ``step`` in words: "its condition that …", or "step 'a''s condition that …"."""
    whose = "its" if step is own else f"step '{step.name}''s"
    return f"{whose} condition that {statement(step.when[i])} (when[{i}])"


def _never_fails(wf: Workflow, step: Step, i: int, base: Given, earlier: list[Step]) -> str:
    """Why no case makes the ``i``-th condition of ``step`` fail with the steps before it running: no value of its
    subject makes it fail, or every such value makes an ``earlier`` step's condition on the same subject fail first
    (a guard repeated, or one that an earlier guard implies). "" when ``dead-condition`` says so already."""
    cond = step.when[i]
    if decided(wf, cond):
        return ""
    trial = base.copy()
    if not _value_for(wf, cond, False, trial, lambda _t: True, True):
        return f"no value its subject can have makes {_condition(step, i, step)} fail"
    for before in earlier:
        found = first_failure(before.when, trial.arguments, trial.results)
        if found is not None:
            j = before.when.index(found.condition)
            other = found.condition
            same = (other.subject, other.op, literal(other.value)) == (cond.subject, cond.op, literal(cond.value))
            same = "it repeats that condition" if same else "that condition decides it"
            return (
                f"{_condition(step, i, step)} can never fail on its own: whenever it would, "
                f"{_condition(before, j)} fails first ({_on_fail(before)}): {same}"
            )
    return f"{_condition(step, i, step)} can never fail with the earlier steps' conditions holding"


def _never_reached(wf: Workflow, step: Step, base: Given, ran: set[str]) -> str:
    """Why no case runs ``step``: one of its conditions can never hold with the conditions before it holding, or an
    earlier step's can never, and the run stops there. "" when ``dead-condition`` says so already."""
    found = first_failure(step.when, base.arguments, base.results)
    if found is None:
        stop = next((s for s in wf.steps if s.name not in ran and s.on_fail != "skip"), None)
        if stop is None or stop is step:
            return "no case reaches it"
        said = _never_reached(wf, stop, base, ran)
        return f"the run never reaches it: step '{stop.name}' before it never runs ({said})" if said else ""
    i = step.when.index(found.condition)
    if decided(wf, found.condition):
        return ""
    key = _key(found.condition.subject)
    order = [s for s in wf.steps[: wf.steps.index(step)] if s.name in ran] + [step]
    before = [
        _condition(s, j, step)
        for s in order
        for j, c in enumerate(s.when if s is not step else step.when[:i])
        if _key(c.subject) == key
    ]
    if not before:
        return f"no value its subject can have makes {_condition(step, i, step)} hold"
    shown = ", ".join(before[:2]) + (f" and {len(before) - 2} more" if len(before) > 2 else "")
    return f"{_condition(step, i, step)} can never hold together with {shown}"


def _on_fail(step: Step) -> str:
    return "on_fail: skip, so the run goes on" if step.on_fail == "skip" else "the run stops there"


def _ask_cases(wf: Workflow, base: Given, ran: list[Step]) -> list[Case]:
    """For each ``ask: true`` input: the prompt called without it, the person giving it, or refusing it, when the
    first step that reads it is about to run."""
    cases: list[Case] = []
    first_reader: dict[str, Step] = {}
    if any(arg.ask for arg in wf.arguments):
        for s in ran:
            for name in s.arguments_read():
                first_reader.setdefault(name, s)
    for arg in wf.arguments:
        if not arg.ask or arg.required or arg.name not in base.arguments:
            continue
        first = first_reader.get(arg.name)
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
        uses = src.uses(arguments)
        if uses and all(p in arguments for p in uses):
            return src.filled({name: str(arguments[name]) for name in uses})
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


def _entry(wf: Workflow, n: int, case: Case, order: dict[str, int]) -> dict[str, Any]:
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
    made = sorted((found for bind in given.results if (found := wf.step_for_bind(bind))), key=lambda f: f[0])
    results = [{"step": s.name, "tool": s.tool, "returns": given.results[s.bind]} for _, s in made if s.bind]
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
    order = {s.name: i for i, s in enumerate(wf.steps)}  # the steps' places, by name: the order the run asks in
    doc = {"skill_name": skill_name, "evals": [_entry(wf, n, c, order) for n, c in enumerate(cases, 1)]}
    problems = [
        Diagnostic(
            step.span,
            "warning",
            "eval-uncovered",
            f"step '{step.name}' calls the side-effecting tool '{step.tool}' behind conditions or a "
            f"confirmation, and no eval case can be derived for each of them: {why}",
            "remove a repeated condition, or make each able to fail on its own with the earlier ones holding; "
            "if the step is meant so, acknowledge it (acknowledge: {eval-uncovered: why})",
            acknowledged=step.acknowledged.get("eval-uncovered"),
            extra={"step": step.name},
        )
        for step, why in uncovered
    ]
    fired = {step.name for step, _ in uncovered}
    problems += [
        unused_acknowledgement(s, f"step {n} '{s.name}'", "eval-uncovered")
        for n, s in enumerate(wf.steps, 1)
        if "eval-uncovered" in s.acknowledged and s.name not in fired
    ]
    return json_bytes(doc), problems
