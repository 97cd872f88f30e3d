"""Gate warnings, pinned: which wording counts as a gate (each family, each alternative), the leftmost phrase quoted
with its whitespace normalized, and every field of every finding (code, severity, position, message, hint,
acknowledgement). These tests exist to kill the mutants of ``gates.py`` (scripts/mutation)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from projector import builder, gates
from projector.builder import WorkflowBuilder
from projector.errors import Span
from projector.gates import ResultNames, asks_user, find_gate, named_result
from projector.load import parse
from projector.model import Argument, Condition, Confirm, FromArg, FromStep, Step, Tool, Workflow


@pytest.mark.parametrize(
    "text, family, phrase",
    [
        ("Only issue it if asked", "condition", "Only issue it if"),
        ("only when the user agrees", "condition", "only when"),
        ("Go on unless told otherwise", "condition", "unless"),
        ("Do not send it if they opted out", "condition", "Do not send it if"),
        ("Don't send it without a ticket", "condition", "Don't send it without"),
        ("never delete before the backup", "condition", "never delete before"),
        ("do   not\tsend\n it  unless  asked", "condition", "do not send it unless"),
        ("provided that the stock allows", "condition", "provided that"),
        ("as long as it is paid", "condition", "as long as"),
        ("in case of doubt", "condition", "in case"),
        ("on condition of payment", "condition", "on condition"),
        ("If so, go", "condition", "If"),
        ("Call it before noon", "order", "before"),
        ("First check the stock", "order", "First check"),
        ("first  make   sure it is paid", "order", "first make sure"),
        ("first ensure it is paid", "order", "first ensure"),
        ("Verify it", "verification", "Verify"),
        ("It verifies the order", "verification", "verifies"),
        ("once verified", "verification", "verified"),
        ("needs verification", "verification", "verification"),
        ("Confirm it", "verification", "Confirm"),
        ("it confirms", "verification", "confirms"),
        ("when confirmed", "verification", "confirmed"),
        ("needs confirmation", "verification", "confirmation"),
        ("make sure it is paid", "verification", "make sure"),
        ("ensure it is paid", "verification", "ensure"),
        ("double-check the total", "verification", "double-check"),
        ("check that it is paid", "verification", "check that"),
        ("check whether it is paid", "verification", "check whether"),
        ("Refuse ineligible orders", "stop", "Refuse"),
        ("ineligible orders", "eligibility", "ineligible"),
        ("eligible orders", "eligibility", "eligible"),
        ("the eligibility rule", "eligibility", "eligibility"),
        ("needs approval", "permission", "approval"),
        ("approve it", "permission", "approve"),
        ("approved orders", "permission", "approved"),
        ("authorise it", "permission", "authorise"),
        ("authorized orders", "permission", "authorized"),
        ("needs authorization", "permission", "authorization"),
        ("permit it", "permission", "permit"),
        ("permitted orders", "permission", "permitted"),
        ("needs permission", "permission", "permission"),
        ("needs consent", "permission", "consent"),
        ("needs sign-off", "permission", "sign-off"),
        ("skip it", "stop", "skip"),
        ("abort the run", "stop", "abort"),
        ("refuse the order", "stop", "refuse"),
        ("decline the order", "stop", "decline"),
        ("halt the run", "stop", "halt"),
        ("Verify it, and only go on if it holds", "verification", "Verify"),  # the leftmost phrase wins
        ("Send it, then verify it", "verification", "verify"),
    ],
)
def test_gate_wording(text, family, phrase):
    assert find_gate(text) == gates.GateMatch(family, phrase)


@pytest.mark.parametrize(
    "text",
    [
        "Send the email.",
        "Use the customer's currency.",
        "the onlyif flag",
        "beforehand",
        "unlessly",
        "verifying",
        "eligibles",
        "skipped",
        "halting",
    ],
)
def test_not_gate_wording(text):
    assert find_gate(text) is None


WORKFLOW = """\
name: gates
description: Every gate finding.
tools:
  - {name: raw}
  - {name: refund, annotations: {destructiveHint: true}}
  - {name: write, annotations: {readOnlyHint: false}}
  - {name: read, annotations: {readOnlyHint: true}}
steps:
  - name: unannotated_gate
    tool: raw
    guidance: Only  call it
      if asked.
  - name: unannotated_plain
    tool: raw
    guidance: Use the default currency.
  - name: unannotated_bare
    tool: raw
    acknowledge: {unverifiable-step: the server is ours}
  - name: refund_gate
    tool: refund
    guidance: Refuse ineligible orders.
  - name: write_note
    tool: write
    guidance: Use the default currency.
    acknowledge: {guidance-on-side-effect: shown to the user}
  - name: read_stale
    tool: read
    guidance: Only if asked.
    acknowledge: {gate-on-side-effect: an old reason}
  - name: resource_only
    resources: ["docs://x"]
"""

EXPECTED = [
    {
        "file": "gates.yaml",
        "line": 9,
        "col": 5,
        "severity": "warning",
        "code": "unverifiable-step",
        "message": "step 1 'unannotated_gate' calls 'raw', which has no annotations, so nobody can tell whether it has side effects, and its guidance reads like a gate (\"Only call it if\")",
        "hint": "declare the tool's annotations (readOnlyHint, destructiveHint) under its tools: entry; with --tools-from, a server that declares none takes them from there",
        "extra": {"step": "unannotated_gate"},
    },
    {
        "file": "gates.yaml",
        "line": 13,
        "col": 5,
        "severity": "warning",
        "code": "unverifiable-step",
        "message": "step 2 'unannotated_plain' calls 'raw', which has no annotations, so nobody can tell whether it has side effects",
        "hint": "declare the tool's annotations (readOnlyHint, destructiveHint) under its tools: entry; with --tools-from, a server that declares none takes them from there",
        "extra": {"step": "unannotated_plain"},
    },
    {
        "file": "gates.yaml",
        "line": 16,
        "col": 5,
        "severity": "warning",
        "code": "unverifiable-step",
        "message": "step 3 'unannotated_bare' calls 'raw', which has no annotations, so nobody can tell whether it has side effects",
        "hint": "declare the tool's annotations (readOnlyHint, destructiveHint) under its tools: entry; with --tools-from, a server that declares none takes them from there",
        "acknowledged": "the server is ours",
        "extra": {"step": "unannotated_bare"},
    },
    {
        "file": "gates.yaml",
        "line": 21,
        "col": 15,
        "severity": "warning",
        "code": "gate-on-side-effect",
        "message": "step 4 'refund_gate' calls the side-effecting tool 'refund' under gate-like guidance (\"Refuse\"). Guidance prose cannot stop a server-side run: the 'gates' workflow prompt will run this step anyway",
        "hint": "make the tool enforce the condition itself and acknowledge the warning on the step (acknowledge: {gate-on-side-effect: why}), or end the workflow before this step",
        "extra": {"step": "refund_gate"},
    },
    {
        "file": "gates.yaml",
        "line": 24,
        "col": 15,
        "severity": "note",
        "code": "guidance-on-side-effect",
        "message": "step 5 'write_note' calls the side-effecting tool 'write' with guidance; the server-side prompt shows the guidance but does not act on it",
        "acknowledged": "shown to the user",
        "extra": {"step": "write_note"},
    },
    {
        "file": "gates.yaml",
        "line": 26,
        "col": 5,
        "severity": "warning",
        "code": "unused-acknowledgement",
        "message": "step 6 'read_stale' acknowledges 'gate-on-side-effect', which does not fire here (an old reason)",
        "hint": "remove the stale acknowledgement",
        "extra": {},
    },
]


def test_every_field_of_every_finding():
    wf, diags = parse(WORKFLOW, "gates.yaml")
    assert diags == []
    found = []
    for d in gates.check(wf).diagnostics:
        j = d.to_json()
        j["extra"] = d.extra
        found.append(j)
    assert found == EXPECTED


def test_the_gated_steps_come_back_as_data_beside_the_diagnostics():
    """``gated`` names exactly the steps that the gate warning is about, acknowledged or not, in step order."""
    wf, _ = parse(WORKFLOW, "gates.yaml")
    found = gates.check(wf)
    assert found.gated == ("refund_gate",)
    acked = parse(
        WORKFLOW.replace(
            "guidance: Refuse ineligible orders.",
            "guidance: Refuse ineligible orders.\n    acknowledge: {gate-on-side-effect: the tool refuses them}",
        ),
        "gates.yaml",
    )[0]
    assert [d.acknowledged for d in gates.check(acked).diagnostics if d.code == "gate-on-side-effect"] == [
        "the tool refuses them"
    ]
    assert gates.check(acked).gated == ("refund_gate",)


def test_the_layout_follows_the_gated_steps_not_the_warning_codes(monkeypatch):
    """render.project lays a step out as gated because check says so in its data, not by reading its diagnostics
    back by code: the same diagnostics with no gated step give no "decide before you call" sentence."""
    from projector import render

    wf, _ = parse(WORKFLOW, "gates.yaml")
    sentence = b"Decide this yourself before you call `refund`."
    assert sentence in render.project(wf).files["SKILL.md"]
    real = gates.check
    monkeypatch.setattr(gates, "check", lambda wf, **kw: gates.GateFindings(real(wf, **kw).diagnostics, ()))
    assert sentence not in render.project(wf).files["SKILL.md"]


def test_a_step_without_guidance_or_tool_raises_nothing():
    wf, _ = parse(WORKFLOW, "gates.yaml")
    assert all(d.extra.get("step") != "resource_only" for d in gates.check(wf).diagnostics)


# The findings about saved results and inputs (issue 12's analysis): a step using a result that on_fail: skip may
# leave out, the gate hint that names a saved result, the note on an optional input a side effect requires, and the
# wording of each in both builds (served with the workflow prompt, and --skills-only).
MORE = """\
name: more
description: The findings about saved results and inputs.
arguments:
  - {name: go, type: boolean}
  - {name: who}
  - {name: order_id, required: true}
  - {name: amount}
tools:
  - {name: look, annotations: {readOnlyHint: true}, output_schema: {type: object}}
  - name: pay
    annotations: {destructiveHint: true}
    input_schema:
      type: object
      properties: {to: {}, amount: {}, order: {}, note: {}, ref: {}}
      required: [to, amount, order]
  - name: peek
    annotations: {readOnlyHint: true}
    input_schema: {type: object, properties: {to: {}, a: {}, b: {}}, required: [to]}
steps:
  - name: fetch-order
    tool: look
    bind: the_order
  - name: maybe_check
    tool: look
    bind: check
    when: {arg: go, equals: true}
    on_fail: skip
  - name: peek_it
    tool: peek
    args:
      to: {arg: who}
      a: {step: check, field: id}
      b: {step: check}
    guidance: Only if asked.
  - name: pay_it
    tool: pay
    args:
      to: {arg: who}
      amount: {arg: amount}
      order: {arg: order_id}
      note: {arg: who}
    guidance: Given the fetch order, only pay if the check passed.
  - name: pay_when
    tool: pay
    args:
      to: {arg: order_id}
      amount: {step: check, field: total}
      order: {arg: order_id}
    when: {step: check, exists: true}
    on_fail: skip
    guidance: Pay the usual way.
  - name: pay_plain
    tool: pay
    args:
      to: {arg: order_id}
      amount: {step: the_order, field: total}
      order: {step: check}
    guidance: Use the default currency.
    acknowledge: {uses-skippable-result: the tool copes}
"""

_USES = "the result of step 2 'maybe_check', which is skipped when its condition fails (on_fail: skip); "
_USES_HINT = (
    "make step 'maybe_check' stop instead (on_fail: stop), give this step a condition on 'check' (when: "
    "{step: check, exists: true}, on_fail: skip), or acknowledge the warning"
)
_ASK = (
    "which the side-effecting tool 'pay' requires: the skill tells the model to ask the user for it and never to "
    "work it out itself"
)
_ASK_HINT = (
    "if asking is right, say so with ask: true on the argument (the server-side run then asks for it too, and this "
    "note goes); if the step cannot run without it, make the argument required"
)
_GATE_HINT = (
    "the guidance names the saved result 'check': state the condition as data, when: {step: check, field: "
    "FIELD, equals: VALUE}, and {then}; or make the tool enforce the condition itself and acknowledge the "
    "warning on the step (acknowledge: {gate-on-side-effect: why}), or end the workflow before this step"
)


def _more_expected(skills_only: bool) -> list[dict]:
    served = not skills_only
    no_value = (
        "the server-side run then has no value for it: it leaves an optional argument out, and hands the step "
        "over when the tool requires it"
        if served
        else "the model then has no value for it"
    )
    then = (
        "the server-side run enforces it"
        if served
        else "the skill states it as an exact check before the call "
        "(served with its workflow prompt, the server-side run enforces it too)"
    )
    why = (
        "Guidance prose cannot stop a server-side run: the 'more' workflow prompt will run this step anyway"
        if served
        else "Only the model's judgment applies it: no workflow prompt is served (--skills-only), and "
        "nothing on the server stops the call if the model decides wrong"
    )
    guided = (
        "the server-side prompt shows the guidance but does not act on it"
        if served
        else "only the model's judgment applies it: no workflow prompt is served"
    )
    with_when = (
        " (it enforces only the step's when: conditions)"
        if served
        else " (the skill states its when: conditions as checks before the call)"
    )
    return [
        {
            "file": "more.yaml",
            "line": 28,
            "col": 5,
            "severity": "warning",
            "code": "uses-skippable-result",
            "message": f"step 3 'peek_it' uses 'check', {_USES}{no_value}",
            "hint": _USES_HINT,
            "extra": {"step": "peek_it"},
        },
        {
            "file": "more.yaml",
            "line": 42,
            "col": 15,
            "severity": "warning",
            "code": "gate-on-side-effect",
            "message": f"step 4 'pay_it' calls the side-effecting tool 'pay' under gate-like guidance (\"only pay if\"). "
            f"{why}",
            "hint": _GATE_HINT.replace("{then}", then),
            "extra": {"step": "pay_it"},
        },
        {
            "file": "more.yaml",
            "line": 38,
            "col": 17,
            "severity": "note",
            "code": "ask-for-input",
            "message": f"step 4 'pay_it' passes the optional input 'who' as 'to', {_ASK}",
            "hint": _ASK_HINT,
            "extra": {"step": "pay_it"},
        },
        {
            "file": "more.yaml",
            "line": 39,
            "col": 21,
            "severity": "note",
            "code": "ask-for-input",
            "message": f"step 4 'pay_it' passes the optional input 'amount' as 'amount', {_ASK}",
            "hint": _ASK_HINT,
            "extra": {"step": "pay_it"},
        },
        {
            "file": "more.yaml",
            "line": 51,
            "col": 15,
            "severity": "note",
            "code": "guidance-on-side-effect",
            "message": f"step 5 'pay_when' calls the side-effecting tool 'pay' with guidance; {guided}{with_when}",
            "extra": {"step": "pay_when"},
        },
        {
            "file": "more.yaml",
            "line": 58,
            "col": 15,
            "severity": "note",
            "code": "guidance-on-side-effect",
            "message": f"step 6 'pay_plain' calls the side-effecting tool 'pay' with guidance; {guided}",
            "extra": {"step": "pay_plain"},
        },
        {
            "file": "more.yaml",
            "line": 52,
            "col": 5,
            "severity": "warning",
            "code": "uses-skippable-result",
            "message": f"step 6 'pay_plain' uses 'check', {_USES}{no_value}",
            "hint": _USES_HINT,
            "acknowledged": "the tool copes",
            "extra": {"step": "pay_plain"},
        },
    ]


@pytest.mark.parametrize("skills_only", [False, True], ids=["served", "skills-only"])
def test_every_field_of_the_saved_result_and_input_findings(skills_only):
    """Step 3: a read-only tool (no gate, no ask) using a skippable result twice (one warning). Step 4: the gate
    names 'fetch order' before the gate and 'check' after it, so the hint names 'check'; two optional inputs feed
    required parameters of a side effect, a required input and an unrequired parameter do not. Step 5: guarded by
    its own condition on the skippable result. Step 6: an acknowledged use, next to a use of an unskippable one."""
    wf, diags = parse(MORE, "more.yaml")
    assert diags == []
    found = []
    for d in gates.check(wf, skills_only=skills_only).diagnostics:
        j = d.to_json()
        j["extra"] = d.extra
        found.append(j)
    assert found == _more_expected(skills_only)


# A field path into the result of a tool that returns text (issue 18, item 5): unstructured-result, at the path, for
# every kind of read (a required and an optional argument, a template binding, a condition that stops and one that
# skips); none for the whole result, nor for a tool with an output schema; acknowledgeable, and a stale
# acknowledgement is reported. And the gate hint: field: only for a result that has fields.
TEXT = """\
name: text
description: Field paths into a tool's text.
tools:
  - {name: diff, annotations: {readOnlyHint: true}}
  - {name: get, annotations: {readOnlyHint: true}, output_schema: {type: object}}
  - name: post
    annotations: {readOnlyHint: false}
    input_schema: {type: object, properties: {body: {}, note: {}}, required: [body]}
steps:
  - name: staged
    tool: diff
    bind: staged_diff
  - name: fetch
    tool: get
    bind: order
    acknowledge: {unstructured-result: an old reason}
  - name: post_it
    tool: post
    args:
      body: {step: staged_diff, field: diff}
      note: {step: staged_diff, field: files.0}
    when: {step: staged_diff, field: diff, exists: true}
  - name: post_skip
    tool: post
    args:
      body: {step: staged_diff}
      note: {step: order, field: id}
    when:
      - {step: order, field: id, exists: true}
      - {step: staged_diff, field: diff, exists: true}
    on_fail: skip
    acknowledge: {unstructured-result: the server's text is JSON}
  - name: read_it
    resources: ["docs://{x}"]
    template:
      x: {step: staged_diff, field: name}
"""

_TEXT_HINT = (
    "use the whole result ({step: staged_diff}), or a condition on an input the user supplies (when: {arg: "
    "approved, equals: true}); if the server sends structured content, declare the tool's output_schema; if "
    "its text is JSON that has the field, acknowledge the warning on the step (acknowledge: "
    "{unstructured-result: why})"
)


def _text_expected(skills_only: bool) -> list[dict]:
    def then(run: str, why: str) -> str:
        if skills_only:
            return "the model is told to read a field that the text does not have"
        return f"the server-side run {run} on every call ({why})"

    def warn(line: int, col: int, step: str, subject: str, run: str, why: str, ack: str | None = None) -> dict:
        found = {
            "file": "text.yaml",
            "line": line,
            "col": col,
            "severity": "warning",
            "code": "unstructured-result",
            "message": f"step '{step}' reads '{subject}', but the tool 'diff' (which saves 'staged_diff') "
            f"declares no output schema: it returns text, its result has no fields, and '{subject}' "
            f"will never resolve; {then(run, why)}",
            "hint": _TEXT_HINT,
            "extra": {"step": step},
        }
        if ack:
            found["acknowledged"] = ack
        return found

    return [
        {
            "file": "text.yaml",
            "line": 13,
            "col": 5,
            "severity": "warning",
            "code": "unused-acknowledgement",
            "message": "step 2 'fetch' acknowledges 'unstructured-result', which does not fire here (an old reason)",
            "hint": "remove the stale acknowledgement",
            "extra": {},
        },
        warn(
            20,
            20,
            "post_it",
            "staged_diff.diff",
            "hands the step over to the client",
            "the result saved as `staged_diff` has no field `diff`",
        ),
        warn(
            21,
            20,
            "post_it",
            "staged_diff.files.0",
            "leaves 'note' out",
            "the result saved as `staged_diff` has no field `files.0`",
        ),
        warn(22, 18, "post_it", "staged_diff.diff", "stops there", "`staged_diff.diff` is missing"),
        warn(
            30,
            16,
            "post_skip",
            "staged_diff.diff",
            "skips the step",
            "`staged_diff.diff` is missing",
            ack="the server's text is JSON",
        ),
        warn(
            36,
            17,
            "read_it",
            "staged_diff.name",
            "hands the step over to the client",
            "the result saved as `staged_diff` has no field `name`",
        ),
    ]


@pytest.mark.parametrize("skills_only", [False, True], ids=["served", "skills-only"])
def test_every_field_of_the_unstructured_result_findings(skills_only):
    wf, diags = parse(TEXT, "text.yaml")
    assert diags == []
    found = []
    for d in gates.check(wf, skills_only=skills_only).diagnostics:
        j = d.to_json()
        j["extra"] = d.extra
        found.append(j)
    assert found == _text_expected(skills_only)


HINTED = """\
name: hinted
description: The gate hint, for a result that is text and for one that has fields.
tools:
  - {name: diff, annotations: {readOnlyHint: true}}
  - {name: review, annotations: {readOnlyHint: true}, output_schema: {type: object}}
  - {name: commit, annotations: {readOnlyHint: false}}
steps:
  - {name: staged, tool: diff, bind: staged_diff}
  - {name: reviewed, tool: review, bind: verdict}
  - {name: commit_text, tool: commit, guidance: Only commit if the staged diff is clean.}
  - {name: commit_data, tool: commit, guidance: Only commit if the verdict says so.}
"""

_TAIL = (
    "make the tool enforce the condition itself and acknowledge the warning on the step (acknowledge: "
    "{gate-on-side-effect: why}), or end the workflow before this step"
)


@pytest.mark.parametrize("skills_only", [False, True], ids=["served", "skills-only"])
def test_the_gate_hint_suggests_field_only_for_a_result_that_has_fields(skills_only):
    wf, diags = parse(HINTED, "hinted.yaml")
    assert diags == []
    then = (
        "the skill states it as an exact check before the call (served with its workflow prompt, the server-side "
        "run enforces it too)"
        if skills_only
        else "the server-side run enforces it"
    )
    hints = {
        d.extra["step"]: d.hint
        for d in gates.check(wf, skills_only=skills_only).diagnostics
        if d.code == "gate-on-side-effect"
    }
    assert hints == {
        "commit_text": "the guidance names the saved result 'staged_diff', but the tool 'diff' returns text (it "
        "declares no output schema), which has no field to test: state the condition as data on an "
        "input the user supplies, when: {arg: approved, equals: true} (declared under arguments, "
        f"type: boolean), and {then}; or {_TAIL}",
        "commit_data": "the guidance names the saved result 'verdict': state the condition as data, when: {step: "
        f"verdict, field: FIELD, equals: VALUE}}, and {then}; or {_TAIL}",
    }
    assert "field:" not in hints["commit_text"]


def test_returns_text_is_a_tool_that_declares_no_output_schema():
    from projector.fit import returns_text

    assert returns_text(Tool("t")) is True
    assert returns_text(Tool("t", output_schema={"type": "object"})) is False
    assert returns_text(Tool("t", output_schema={})) is False  # declared, even if it says nothing
    assert returns_text(None) is False  # a tool nobody declared: nothing is known


def _wf(*steps: Step, tools=(), arguments=()) -> Workflow:
    return Workflow("w", "d", arguments=tuple(arguments), tools=tuple(tools), steps=tuple(steps))


NAMED = _wf(
    Step("first", tool="t", bind="first_result"),
    Step("zzz", tool="t"),
    Step("__", tool="t", bind="q"),  # a name with no words is passed over, not the end of the search
    Step("fetch-order", tool="t", bind="order"),
    Step("own", tool="t", bind="own_result"),
    Step("later", tool="t", bind="later_result"),
)


@pytest.mark.parametrize(
    "text, after, bind",
    [
        ("the first result", 0, "first_result"),
        ("the first_result", 0, "first_result"),
        ("THE FIRST-RESULT", 0, "first_result"),
        ("the fetch order", 0, "order"),  # by the step's name, split on '-'
        ("the Fetch_Order", 0, "order"),
        ("fetch \t order", 0, "order"),
        ("the order", 0, "order"),  # by the bind
        ("the fetchorder", 0, None),  # words need a separator
        ("prefetch order", 0, "order"),  # 'order' alone still names the bind
        ("the orders", 0, None),  # whole words only
        ("the zzz step", 0, None),  # a step without a bind saves no result
        ("the own result", 0, None),  # the step itself is not before itself
        ("the later result", 0, None),
        ("the q", 0, "q"),
        ("order, then first result", 0, "order"),  # the leftmost
        ("order, then first result", 12, "first_result"),  # the first one named from `after` on
        ("order, first result", 7, "first_result"),  # exactly at `after` counts as after it
        ("order, then first result", 100, "order"),  # none after: the first one named
        ("first result, order", 0, "first_result"),
    ],
)
def test_named_result(text, after, bind):
    assert named_result(NAMED, 5, text, after) == bind


def test_named_result_skips_a_wordless_name_and_goes_on():
    wf = _wf(Step("__", tool="t", bind="q"), Step("b", tool="t", bind="later_one"))
    assert named_result(wf, 3, "the later one", 0) == "later_one"


PAY = Tool("pay", annotations={"destructiveHint": True}, input_schema={"type": "object", "required": ["to"]})


@pytest.mark.parametrize(
    "tool, arguments, key, src, asks",
    [
        (PAY, [Argument("who")], "to", FromArg("who"), True),
        (PAY, [Argument("who")], "cc", FromArg("who"), False),  # not a required parameter
        (PAY, [Argument("who", required=True)], "to", FromArg("who"), False),  # a required input is given
        (PAY, [], "to", FromArg("who"), False),  # not a declared input
        (PAY, [Argument("who")], "to", FromStep("who"), False),  # not an input at all
        (
            Tool("pay", annotations={"readOnlyHint": True}, input_schema=PAY.input_schema),
            [Argument("who")],
            "to",
            FromArg("who"),
            False,
        ),  # no side effect
        (Tool("pay", annotations={"destructiveHint": True}), [Argument("who")], "to", FromArg("who"), False),
        (
            Tool("pay", annotations={"destructiveHint": True}, input_schema=["to"]),
            [Argument("who")],
            "to",
            FromArg("who"),
            False,
        ),  # a schema that is not an object
        (
            Tool("pay", annotations={"destructiveHint": True}, input_schema={"required": "to"}),
            [Argument("who")],
            "to",
            FromArg("who"),
            False,
        ),  # 'required' that is not a list
    ],
)
def test_asks_user(tool, arguments, key, src, asks):
    st = Step("s", tool="pay", args=((key, src),))
    assert asks_user(_wf(st, tools=[tool], arguments=arguments), st, key, src) is asks
    other = Step("s", tool="other", args=((key, src),))  # a tool the workflow does not declare
    assert asks_user(_wf(other, tools=[tool], arguments=arguments), other, key, src) is False


def test_an_input_without_a_position_is_reported_at_its_step():
    st = Step("s", tool="pay", args=(("to", FromArg("who")),), span=Span("w.yaml", 7, 5))
    [d] = gates.check(_wf(st, tools=[PAY], arguments=[Argument("who")])).diagnostics
    assert (d.code, d.span) == ("ask-for-input", Span("w.yaml", 7, 5))
    placed = Step("s", tool="pay", args=(("to", FromArg("who", Span("w.yaml", 8, 11))),), span=Span("w.yaml", 7, 5))
    [d] = gates.check(_wf(placed, tools=[PAY], arguments=[Argument("who")])).diagnostics
    assert (d.code, d.span) == ("ask-for-input", Span("w.yaml", 8, 11))


def test_ask_for_input_is_said_once_per_input_and_not_when_the_argument_says_ask():
    """The note names an input once, at its first use, with a hint that agrees with ``ask: true``; an argument that
    already says ``ask: true`` gets none (its author chose asking)."""
    steps = [
        Step(n, tool="pay", args=(("to", FromArg("who")),), span=Span("w.yaml", i, 5)) for i, n in ((7, "a"), (9, "b"))
    ]
    [d] = gates.check(_wf(*steps, tools=[PAY], arguments=[Argument("who")])).diagnostics
    assert (d.code, d.span, d.extra) == ("ask-for-input", Span("w.yaml", 7, 5), {"step": "a"})
    assert "ask: true" in d.hint and "make the argument required" in d.hint
    assert gates.check(_wf(*steps, tools=[PAY], arguments=[Argument("who", ask=True)])).diagnostics == []


READ = Tool("t", annotations={"readOnlyHint": True}, output_schema={"type": "object"})
_MAYBE = dict(tool="t", when=(Condition(FromArg("go"), "equals", True),))


@pytest.mark.parametrize(
    "earlier, fires",
    [
        (Step("maybe", bind="m", on_fail="skip", **_MAYBE), True),
        (Step("maybe", bind="m", on_fail="stop", **_MAYBE), False),  # a failed condition ends the run
        (Step("maybe", tool="t", bind="m", on_fail="skip"), False),  # no condition: never skipped
    ],
)
def test_only_a_conditional_step_that_skips_leaves_its_result_out(earlier, fires):
    user = Step("user", tool="t", args=(("x", FromStep("m", "id")),))
    found = [d.code for d in gates.check(_wf(earlier, user, tools=[READ])).diagnostics]
    assert found == (["uses-skippable-result"] if fires else [])


def test_only_an_earlier_step_can_leave_a_result_out():
    """The check looks back only: a step after this one (or the step itself) is not a result it can be missing."""
    user = Step("user", tool="t", args=(("x", FromStep("m", "id")),))
    later = Step("maybe", bind="m", on_fail="skip", **_MAYBE)
    assert gates.check(_wf(user, later, tools=[READ])).diagnostics == []


# -------------------------------------------------------------------- linear in the steps (issue 17, item 15)


def _reference_named_result(wf: Workflow, index: int, text: str, after: int = 0) -> str | None:
    """named_result as it was written first: one regular expression per earlier name (quadratic over the steps)."""
    import re

    names: list[tuple[str, str]] = []
    for s in wf.steps[: index - 1]:
        if s.bind:
            names += [(s.bind, s.bind), (s.name, s.bind)]
    found: list[tuple[int, int, str]] = []
    for name, bind in names:
        words = [w for w in re.split(r"[_\-\s]+", name) if w]
        if not words:
            continue
        m = re.search(r"\b" + r"[\s_-]+".join(re.escape(w) for w in words) + r"\b", text, re.IGNORECASE)
        if m:
            found.append((0 if m.start() >= after else 1, m.start(), bind))
    return min(found)[2] if found else None


NAME_CHARS = "abAB1_- .,"


@pytest.mark.slow
@settings(max_examples=500, deadline=None)
@given(
    st.lists(
        st.tuples(st.text(NAME_CHARS, min_size=1, max_size=6), st.text(NAME_CHARS, min_size=1, max_size=6)),
        min_size=1,
        max_size=6,
    ),
    st.text(NAME_CHARS + "xy(", max_size=30),
    st.integers(0, 30),
)
@example([("fetch-order", "order")], "prefetch order", 0)
@example([("a.b", "q")], "x a.b y", 0)
@example([("a", "r"), ("b", "a")], "_a b_ a", 0)
def test_named_result_finds_what_one_expression_per_name_found(named, text, after):
    steps = [Step(name, tool="t", bind=bind) for name, bind in named] + [Step("last", tool="t")]
    wf = _wf(*steps)
    for words in (name for pair in named for name in pair):
        if words.strip(" _-") and not (words.strip(" _-")[0].isalnum() and words.strip(" _-")[-1].isalnum()):
            return  # a name that starts or ends with punctuation is no longer looked for (the expression needed a
            # letter next to it in the text, which prose does not have)
    assert named_result(wf, len(steps), text, after) == _reference_named_result(wf, len(steps), text, after)


class CountingSteps(tuple):
    """A workflow's steps that count how many step records are read, by iteration, index or slice."""

    reads = 0

    def __iter__(self):
        for item in tuple.__iter__(self):
            CountingSteps.reads += 1
            yield item

    def __getitem__(self, key):
        got = tuple.__getitem__(self, key)
        CountingSteps.reads += len(got) if isinstance(key, slice) else 1
        return got


def _many_steps(n: int) -> Workflow:
    """n steps on a side-effecting tool, each using the previous result, with gate-like guidance that names it;
    every third step has a condition and is skipped when it fails."""
    steps = [
        Step(
            f"s{i}",
            tool="act",
            bind=f"r{i}",
            guidance=f"Only act if r{i - 1} is eligible.",
            when=(Condition(FromStep(f"r{i - 1}", "ok"), "equals", True),) if i % 3 == 1 else (),
            on_fail="skip" if i % 3 == 1 else "stop",
            args=(("x", FromStep(f"r{i - 1}")),) if i else (),
            acknowledge=(("uses-skippable-result", "a test"),) if i % 3 == 2 else (),
        )
        for i in range(n)
    ]
    wf = _wf(
        *steps,
        tools=[
            Tool("act", annotations={"readOnlyHint": False}, input_schema={"type": "object", "properties": {"x": {}}})
        ],
    )
    return Workflow(wf.name, wf.description, wf.arguments, wf.instructions, wf.tools, CountingSteps(wf.steps))


@pytest.mark.slow
@pytest.mark.parametrize("stage", ["gates", "validate", "project"])
def test_every_pass_over_the_steps_is_linear(stage):
    """Linear, by counting: the step records read grow tenfold for ten times the steps (quadratic was a
    hundredfold: every step scanned the steps before it)."""
    from projector.render import project
    from projector.validate import validate

    run = {"gates": lambda wf: gates.check(wf).diagnostics, "validate": validate, "project": project}[stage]
    reads = {}
    for n in (300, 3000):
        wf = _many_steps(n)
        CountingSteps.reads = 0
        found = run(wf)
        reads[n] = CountingSteps.reads
        if stage == "gates":
            assert len([d for d in found if d.code == "gate-on-side-effect"]) == n - (n + 1) // 3
    assert reads[3000] <= 10 * reads[300] + 10, reads


def test_a_gated_step_looks_its_guidance_up_once_in_one_pass_over_its_words(monkeypatch):
    calls: list[str] = []
    real = gates.ResultNames.named
    monkeypatch.setattr(
        gates.ResultNames, "named", lambda self, text, after=0: calls.append(text) or real(self, text, after)
    )
    found = gates.check(_many_steps(30)).diagnostics
    gated = [d for d in found if d.code == "gate-on-side-effect"]
    assert len(calls) == len(gated) == 20
    assert "the guidance names the saved result" not in gated[0].hint  # step 1 has no result before it
    assert "the guidance names the saved result 'r1'" in gated[1].hint


def test_the_steps_bench_workflow_is_valid_and_gated():
    """bench/steps.py times this workflow at 1,000 and 10,000 steps; it must stay a valid one that fires the gates."""
    import importlib.util
    import sys
    from pathlib import Path

    bench = Path(__file__).resolve().parent.parent / "bench"
    sys.path.insert(0, str(bench))
    try:
        spec = importlib.util.spec_from_file_location("bench_steps", bench / "steps.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(bench))
    wf, diags = parse(module.workflow(40), "many_steps.yaml")
    assert wf is not None and len(wf.steps) == 40
    assert [d for d in diags if d.severity == "error"] == []
    assert len([d for d in gates.check(wf).diagnostics if d.code == "guidance-on-side-effect"]) == 20


# How the gate check finds a saved result named in a text (projector.gates.ResultNames), pinned where the mutation
# run found it loose (scripts/mutation gates, issue 20).


def _names(*pairs: tuple[str, str]) -> ResultNames:
    names = ResultNames()
    for name, bind in pairs:
        names.add(name, bind)
    return names


@pytest.mark.parametrize(
    "text, named",
    [
        ("check the order first", "order"),
        ("check the order_total first", None),  # joined by "_" to a longer word: another name
        ("check the Order, then", "order"),
        ("check the order_", None),
        ("the order_total and the order", "order"),  # its first whole-word place counts
    ],
)
def test_a_name_followed_by_an_underscore_is_another_word(text, named):
    assert _names(("order", "order")).named(text) == named


@pytest.mark.parametrize(
    "text, named",
    [
        ("after send refund email, confirm", "mail"),
        ("send refund email", "mail"),
        ("then send-refund-email now", "mail"),
        ("after send refund, confirm", None),
        ("after send refund sms, confirm", None),
        ("one two send refund email three four", "mail"),
    ],
)
def test_a_name_of_three_words_is_matched_word_after_word(text, named):
    assert _names(("send refund email", "mail")).named(text) == named


# Confirmations on steps that change nothing, and the saved results a text names.


CONFIRMS = """\
name: confirms
description: Confirmations on steps that change nothing, and on steps that do.
tools:
  - {name: get_order, annotations: {readOnlyHint: true}}
  - {name: refund, annotations: {destructiveHint: true}}
steps:
  - name: fetch_order
    tool: get_order
    confirm:
      message: Look up this order?
  - name: read_docs
    resources: ["docs://policy"]
    confirm: {message: Read the policy?}
  - name: pay
    tool: refund
    confirm: {message: Refund it?}
  - name: pay_if
    tool: refund
    guidance: Only refund it if the order is recent.
    confirm: {message: Refund it?}
  - name: pay_approved
    tool: refund
    guidance: Get the manager's approval.
    confirm: {message: Refund it?}
"""

_NO_YES = "remove confirm, or put it on the step that changes data"


def _found(wf, **kw) -> list[dict]:
    out = []
    for d in gates.check(wf, **kw).diagnostics:
        j = d.to_json()
        j["extra"] = d.extra
        out.append(j)
    return out


def test_a_confirmation_before_a_step_that_changes_nothing_in_full():
    """``confirm-on-read-only`` on a read-only tool's step and on a resources step, at the ``confirm:`` key, and on
    no side-effecting step. A confirmation answers approval and verification guidance only: guidance that sets a
    condition is still a gate."""
    wf, diags = parse(CONFIRMS, "c.yaml")
    assert diags == []
    found = _found(wf)
    assert found[:2] == [
        {
            "file": "c.yaml",
            "line": 10,
            "col": 7,
            "severity": "warning",
            "code": "confirm-on-read-only",
            "message": "step 1 'fetch_order' asks a person to confirm, but it calls the read-only tool 'get_order': "
            "nothing needs their yes",
            "hint": _NO_YES,
            "extra": {"step": "fetch_order"},
        },
        {
            "file": "c.yaml",
            "line": 13,
            "col": 14,
            "severity": "warning",
            "code": "confirm-on-read-only",
            "message": "step 2 'read_docs' asks a person to confirm, but it only reads resources: nothing needs their "
            "yes",
            "hint": _NO_YES,
            "extra": {"step": "read_docs"},
        },
    ]
    assert [(d["extra"]["step"], d["code"]) for d in found[2:]] == [
        ("pay_if", "gate-on-side-effect"),
        ("pay_approved", "guidance-on-side-effect"),
    ]


def test_a_confirmation_without_a_position_is_reported_at_its_step():
    read = Tool("read", annotations={"readOnlyHint": True})
    step = Step("s", tool="read", confirm=Confirm("Sure?"), span=Span("w.yaml", 4, 5))
    [d] = gates.check(Workflow("w", "d", tools=(read,), steps=(step,))).diagnostics
    assert (d.code, d.span, d.message) == (
        "confirm-on-read-only",
        Span("w.yaml", 4, 5),
        "step 1 's' asks a person to confirm, but it calls the read-only tool 'read': nothing needs their yes",
    )
    placed = Step("s", tool="read", confirm=Confirm("Sure?", span=Span("w.yaml", 6, 7)), span=Span("w.yaml", 4, 5))
    [d] = gates.check(Workflow("w", "d", tools=(read,), steps=(placed,))).diagnostics
    assert d.span == Span("w.yaml", 6, 7)


def test_a_confirmation_on_a_step_whose_tool_is_not_declared_is_not_read_only():
    """Nothing is known of a tool the workflow does not declare (the loader reports it), so it is not called
    read-only."""
    step = Step("s", tool="elsewhere", confirm=Confirm("Sure?"))
    assert gates.check(Workflow("w", "d", steps=(step,))).diagnostics == []


@pytest.mark.parametrize(
    "adds, text, after, bind",
    [
        ([("order", "order")], "order, first result, order", 0, "order"),  # each name at its first place only
        ([("order", "order"), ("first", "first")], "order, first, order", 0, "order"),
        ([("fetch-order", "a"), ("fetch_order", "b")], "the fetch order", 0, "a"),  # the least bind, whatever the order
        ([("fetch_order", "b"), ("fetch-order", "a")], "the fetch order", 0, "a"),
        ([("Xref", "x")], "see the xref", 0, "x"),  # a name's letters are all its own
        ([("order_X", "o")], "the order x", 0, "o"),
        (
            [("$order", "o")],
            "the order",
            0,
            None,
        ),  # a name that starts or ends with other punctuation: never looked for
        ([("order$", "o")], "the order", 0, None),
        ([("$order$", "o")], "the order", 0, None),
    ],
)
def test_result_names(adds, text, after, bind):
    names = gates.ResultNames()
    for name, b in adds:
        names.add(name, b)
    assert names.named(text, after) == bind


# ---------------------------------------------------------------------- confirm: on a step and ask: on an argument (issue 22)


def _codes(diags):
    return [d.code for d in diags]


def test_a_confirmed_step_gets_no_gate_warning_for_approval_wording():
    def wf(confirm):
        return (
            WorkflowBuilder("w", "d")
            .tool("pay", annotations={"destructiveHint": True})
            .step("pay", tool="pay", guidance="Get the supervisor's approval first.", confirm=confirm)
            .build()
        )

    assert "gate-on-side-effect" in _codes(gates.check(wf(None)).diagnostics)
    found = gates.check(wf(builder.confirm("Pay now?"))).diagnostics
    assert "gate-on-side-effect" not in _codes(found)
    assert "guidance-on-side-effect" in _codes(found)


def test_a_confirmed_step_still_gets_the_gate_warning_for_a_condition_in_words():
    wf = (
        WorkflowBuilder("w", "d")
        .tool("pay", annotations={"destructiveHint": True})
        .step("pay", tool="pay", guidance="Only pay if the order is paid.", confirm=builder.confirm("Pay now?"))
        .build()
    )
    assert "gate-on-side-effect" in _codes(gates.check(wf).diagnostics)


# ------------------------------------------------- what the tool's output schema decides (issue 38, item 0)

SCHEMA_GATE = """\
name: ship
description: Ship an order.
tools:
  - name: status
    annotations: {{readOnlyHint: true}}
    output_schema:
      type: object
      properties:
        state: {{enum: [new, packed]}}
        lines: {{type: array, items: {{$ref: "#/$defs/line"}}}}
        note: {{}}
      $defs: {{line: {{type: object, properties: {{qty: {{type: integer}}}}}}}}
  - name: ship
    annotations: {{readOnlyHint: false}}
steps:
  - {{name: look, tool: status, bind: order}}
  - name: go
    tool: ship
    when: {when}
"""


@pytest.mark.parametrize(
    ("when", "found"),
    [
        ("{step: order, field: state, equals: shipped}", 'can never hold: "shipped" is none of the values it can have'),
        (
            '{step: order, field: lines.0.qty, not_equals: "2"}',
            "can never fail while `order.lines.0.qty` has a value: a string never equals an integer",
        ),
        ("{step: order, not_in: [[]]}", "can never fail while `order` has a value: a list never equals an object"),
        ("{step: order, field: state, in: [packed, gone]}", "the value 2 can never match"),
        ("{step: order, field: note, equals: 3}", None),  # the schema says nothing of `note`: anything goes
        ("{step: order, field: state, equals: packed}", None),
        ("{step: order, field: state, exists: false}", None),  # its type says nothing of whether it is there
    ],
)
def test_a_condition_the_output_schema_decides_is_dead_at_the_operand(when, found):
    wf, diags = parse(SCHEMA_GATE.format(when=when), "ship.yaml")
    assert wf is not None and not [d for d in diags if d.severity == "error"], diags
    dead = [d for d in gates.check(wf).diagnostics if d.code == "dead-condition"]
    if found is None:
        assert dead == []
    else:
        assert len(dead) == 1 and found in dead[0].message, dead
        assert "as the output schema of the tool 'status' declares it" in dead[0].message
        assert dead[0].span.line == 19  # at the operand


def test_an_output_schema_type_json_schema_does_not_have_is_not_known_and_build_says_no_traceback(cli, tmp_path):
    """An output schema's field typed ``int`` (a typo, or a hostile upstream's listing) made ``build`` end in a
    traceback (KeyError: 'int') while it worded a ``dead-condition``; a type JSON Schema does not have says nothing
    of the field's values, so no gate on it is called dead."""
    folder = tmp_path / "wf"
    folder.mkdir()
    text = (Path(__file__).parent / "bad_inputs" / "dead-condition-output-schema.yaml").read_text("utf-8")
    (folder / "typo.yaml").write_text(text.replace("content: {type: string}", "content: {type: int}"), "utf-8")
    done = cli("build", str(folder), "--out", str(tmp_path / "out"))
    assert done.code == 0, done.err
    assert "Traceback" not in done.err and "dead-condition" not in done.err
