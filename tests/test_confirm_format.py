"""The format of issue 22: ``confirm:`` on a step and ``ask: true`` on an argument, loaded from YAML and built in
Python alike, checked by the core's rules, and stated by the skill."""

from __future__ import annotations

from conftest import ROOT
from projector import builder, gates, model
from projector.builder import WorkflowBuilder, arg, condition, step
from projector.load import load_file, parse
from projector.render import project

APPROVED = ROOT / "workflows" / "refunds-approved.yaml"


def _codes(diags):
    return [d.code for d in diags]


def test_confirm_and_ask_load_into_the_model():
    wf = load_file(APPROVED)
    refund = next(s for s in wf.steps if s.name == "issue_refund")
    assert refund.confirm is not None
    assert refund.confirm.message == "Issue this refund? It cannot be undone."
    assert refund.confirm.show == (model.FromStep("order", "id"), model.FromStep("order", "total"),
                                   model.FromArg("reason"))
    assert wf.argument("reason").ask is True and wf.argument("order_id").ask is False


def test_the_builder_makes_the_same_workflow_as_the_yaml():
    wf = load_file(APPROVED)
    tools = {t.name: t for t in wf.tools}
    b = (WorkflowBuilder(wf.name, wf.description)
         .argument("order_id", "The order to refund", required=True, type="string")
         .argument("reason", "Why the customer asked for the refund", type="string", ask=True)
         .instruction("system", wf.instructions[0].text))
    for t in wf.tools:
        b.tool(t.name, t.description, input_schema=t.input_schema, annotations=t.annotations,
               output_schema=t.output_schema)
    assert tools
    wf2 = (b.step("fetch_order", tool="get_order", args={"id": arg("order_id")}, bind="order")
           .step("check_eligibility", tool="check_eligibility", args={"order": step("order")}, bind="eligibility")
           .step("issue_refund", tool="issue_refund",
                 args={"order_id": step("order", "id"), "amount": step("order", "total")},
                 when=condition(step("eligibility", "eligible"), equals=True),
                 confirm=builder.confirm("Issue this refund? It cannot be undone.", step("order", "id"),
                                         step("order", "total"), arg("reason")), bind="refund")
           .step("read_policy", resources=["docs://refund-policy/{region}"],
                 template={"region": step("order", "region")})
           .build())
    assert model.canonical(wf2) == model.canonical(wf)
    assert project(wf2).files == project(wf).files


def test_a_workflow_without_the_new_keys_keeps_its_canonical_form():
    wf = load_file(ROOT / "workflows" / "refunds-gated.yaml")
    text = repr(model.canonical(wf))
    assert "'confirm'" not in text and "'ask'" not in text


def test_on_fail_skip_goes_with_confirm_alone():
    src = b"""name: w
description: d
tools: [{name: t, annotations: {destructiveHint: true}}]
steps:
  - name: s
    tool: t
    confirm: {message: Go?}
    on_fail: skip
"""
    wf, diags = parse(src, "w.yaml")
    assert wf is not None and not [d for d in diags if d.severity == "error"], diags


def test_confirm_show_field_is_fitted_to_the_output_schema():
    src = b"""name: w
description: d
tools:
  - {name: get, annotations: {readOnlyHint: true}, output_schema: {type: object, properties: {total: {type: number}}, additionalProperties: false}}
  - {name: pay, annotations: {destructiveHint: true}}
steps:
  - {name: a, tool: get, bind: order}
  - name: b
    tool: pay
    confirm: {message: Pay?, show: [{step: order, field: totl}]}
"""
    _wf, diags = parse(src, "w.yaml")
    found = [d for d in diags if d.severity == "error"]
    assert found and "confirm.show" in found[0].message, diags


def test_a_confirmed_step_gets_no_gate_warning_for_approval_wording():
    def wf(confirm):
        return (WorkflowBuilder("w", "d")
                .tool("pay", annotations={"destructiveHint": True})
                .step("pay", tool="pay", guidance="Get the supervisor's approval first.", confirm=confirm)
                .build())
    assert "gate-on-side-effect" in _codes(gates.check(wf(None)).diagnostics)
    found = gates.check(wf(builder.confirm("Pay now?"))).diagnostics
    assert "gate-on-side-effect" not in _codes(found)
    assert "guidance-on-side-effect" in _codes(found)


def test_a_confirmed_step_still_gets_the_gate_warning_for_a_condition_in_words():
    wf = (WorkflowBuilder("w", "d")
          .tool("pay", annotations={"destructiveHint": True})
          .step("pay", tool="pay", guidance="Only pay if the order is paid.", confirm=builder.confirm("Pay now?"))
          .build())
    assert "gate-on-side-effect" in _codes(gates.check(wf).diagnostics)


def test_the_skill_states_the_confirmation_before_the_call_and_the_asked_input():
    text = project(load_file(APPROVED)).files["SKILL.md"].decode()
    confirmation = text.index("**Confirmation:** just before you call `issue_refund`, ask the user this question")
    assert confirmation < text.index("Call the tool `issue_refund`")
    assert "Call `issue_refund` only on an explicit yes." in text
    assert "stop the procedure here, and tell the user that it was not confirmed." in text
    assert "- the field `total` of `order` (step 1)" in text
    assert "ask the user for it when a step first needs it; never work it out yourself" in text
