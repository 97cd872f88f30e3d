"""Gate warnings, pinned: which wording counts as a gate (each family, each alternative), the leftmost phrase quoted
with its whitespace normalized, and every field of every finding (code, severity, position, message, hint,
acknowledgement). These tests exist to kill the mutants of ``gates.py`` (scripts/mutation)."""

from __future__ import annotations

import pytest

from projector import gates
from projector.gates import find_gate
from projector.load import parse


@pytest.mark.parametrize("text, family, phrase", [
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
])
def test_gate_wording(text, family, phrase):
    assert find_gate(text) == gates.GateMatch(family, phrase)


@pytest.mark.parametrize("text", ["Send the email.", "Use the customer's currency.", "the onlyif flag",
                                  "beforehand", "unlessly", "verifying", "eligibles", "skipped", "halting"])
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
    {'file': 'gates.yaml', 'line': 9, 'col': 5, 'severity': 'warning', 'code': 'unverifiable-step', 'message': 'step 1 \'unannotated_gate\' calls \'raw\', which has no annotations, so nobody can tell whether it has side effects, and its guidance reads like a gate ("Only call it if")', 'hint': "declare the tool's annotations (readOnlyHint, destructiveHint) as the server does", 'extra': {'step': 'unannotated_gate'}},
    {'file': 'gates.yaml', 'line': 13, 'col': 5, 'severity': 'warning', 'code': 'unverifiable-step', 'message': "step 2 'unannotated_plain' calls 'raw', which has no annotations, so nobody can tell whether it has side effects", 'hint': "declare the tool's annotations (readOnlyHint, destructiveHint) as the server does", 'extra': {'step': 'unannotated_plain'}},
    {'file': 'gates.yaml', 'line': 16, 'col': 5, 'severity': 'warning', 'code': 'unverifiable-step', 'message': "step 3 'unannotated_bare' calls 'raw', which has no annotations, so nobody can tell whether it has side effects", 'hint': "declare the tool's annotations (readOnlyHint, destructiveHint) as the server does", 'acknowledged': 'the server is ours', 'extra': {'step': 'unannotated_bare'}},
    {'file': 'gates.yaml', 'line': 21, 'col': 15, 'severity': 'warning', 'code': 'gate-on-side-effect', 'message': 'step 4 \'refund_gate\' calls the side-effecting tool \'refund\' under gate-like guidance ("Refuse"). Guidance prose cannot stop a server-side run: the \'gates\' workflow prompt will run this step anyway', 'hint': 'make the tool enforce the condition itself and acknowledge the warning on the step (acknowledge: {gate-on-side-effect: why}), or end the workflow before this step', 'extra': {'step': 'refund_gate'}},
    {'file': 'gates.yaml', 'line': 24, 'col': 15, 'severity': 'note', 'code': 'guidance-on-side-effect', 'message': "step 5 'write_note' calls the side-effecting tool 'write' with guidance; the server-side prompt shows the guidance but does not act on it", 'acknowledged': 'shown to the user', 'extra': {'step': 'write_note'}},
    {'file': 'gates.yaml', 'line': 26, 'col': 5, 'severity': 'warning', 'code': 'unused-acknowledgement', 'message': "step 6 'read_stale' acknowledges 'gate-on-side-effect', which does not fire here (an old reason)", 'hint': 'remove the stale acknowledgement', 'extra': {}},
]


def test_every_field_of_every_finding():
    wf, diags = parse(WORKFLOW, "gates.yaml")
    assert diags == []
    found = []
    for d in gates.check(wf):
        j = d.to_json()
        j["extra"] = d.extra
        found.append(j)
    assert found == EXPECTED


def test_a_step_without_guidance_or_tool_raises_nothing():
    wf, _ = parse(WORKFLOW, "gates.yaml")
    assert all(d.extra.get("step") != "resource_only" for d in gates.check(wf))
