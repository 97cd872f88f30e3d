"""The warnings reference: every non-error code the compiler can report, generated from the code itself.

The set of codes comes from :data:`projector.gates.CODES` plus every ``Diagnostic(...)`` call with a literal
non-error severity in the core modules (``body-too-long`` lives in ``render.py``). The prose per code lives here, in
:data:`PROSE`. A code without prose, or prose for a code that no longer exists, stops the generator, so this page
cannot drift from the compiler. Each code's example is compiled when the page is generated, and the page quotes the
diagnostic the compiler actually printed.
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass
from pathlib import Path

from .. import bundle, evals, gates, load, output, positioned, render, shape, validate
from ..builder import WorkflowBuilder, arg
from ..errors import Diagnostic, format_text
from .codes_results import RESULT_PROSE
from .common import DocsError

CORE_MODULES = (gates, render, bundle, output, validate, load, positioned, shape, evals)


def literal_codes() -> dict[str, str]:
    """code -> severity for every ``Diagnostic(span, "<severity>", "<code>", ...)`` in the core with a literal,
    non-error severity."""
    found: dict[str, str] = {}
    for module in CORE_MODULES:
        tree = ast.parse(inspect.getsource(module))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Diagnostic"):
                continue
            if len(node.args) >= 3 and all(
                isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args[1:3]
            ):
                severity, code = node.args[1].value, node.args[2].value
                if severity != "error":
                    found[code] = severity
    return found


def all_codes() -> dict[str, str]:
    """Every warning and note code, in the order gates.CODES lists them, then the others by name."""
    codes = dict(gates.CODES)
    for code, severity in sorted(literal_codes().items()):
        if codes.setdefault(code, severity) != severity:
            raise DocsError(f"code '{code}' is reported both as {codes[code]} and as {severity}")
    return codes


@dataclass(frozen=True)
class Prose:
    fires: str  # when it fires
    fix: str  # what to do about it
    example: str  # a workflow that makes it fire (YAML), or "" when built in Python below
    reason: str = ""  # an example acknowledgement reason, for the codes that can be acknowledged
    resolved: str = ""  # the example with the problem fixed another way (YAML): it must no longer fire
    resolved_intro: str = ""
    # The code is a note that comes only with errors, to explain them: its example does not load, and the page
    # quotes every diagnostic the example gives.
    with_errors: bool = False


_REFUND_TOOLS = """tools:
  - name: issue_refund
    description: Refund an order to the original payment method.
    annotations: {readOnlyHint: false, destructiveHint: true}
"""

PROSE: dict[str, Prose] = {
    "gate-on-side-effect": Prose(
        fires="A step calls a tool that changes data (its annotations do not say `readOnlyHint: true`, or they say "
        "`destructiveHint: true`), and the step's `guidance` reads like a condition: *only if*, *unless*, "
        "*before*, *make sure*, *eligible*, *approval*, *skip* and similar wording. A skill's reader applies "
        "that guidance with its own judgment, but the workflow prompt runs on the server and executes every "
        "step unconditionally, so the condition is a promise the prompt breaks. The warning quotes the phrase "
        "that matched. It does not fire on a step that states its conditions as data with `when:`: the "
        "server-side run enforces those. Nor does it fire for wording about approval or verification (*approve*, "
        "*confirm*, *verify*) on a step with `confirm:`: the server-side run asks a person and runs the step "
        "only on their yes. Under `build --skills-only` no prompt is served, and the warning says "
        "so: only the model's judgment applies the condition, and nothing on the server stops the call.",
        fix="Where the condition can be stated as data over earlier results or the arguments, state it with "
        "`when:` (and `on_fail: stop` or `skip`): the server-side run checks it just before the step, and the "
        "skill states it as a check before the call. When the guidance names a saved result, the hint says "
        "which, and suggests a condition on one of its fields (`when: {step: BIND, field: FIELD, ...}`) when "
        "its tool declares an output schema; when the tool returns text (no output schema), its result has no "
        "fields, and the hint suggests a condition on an input the user supplies instead (`when: {arg: "
        "approved, equals: true}`; see `unstructured-result`). Otherwise make the tool enforce the condition itself (then the prose is only a courtesy), or end "
        "the workflow before the step and leave the side effect to the caller. When the tool does enforce it, "
        "acknowledge the warning on the step and say why.",
        reason="issue_refund itself refuses ineligible orders (policy engine v3).",
        example="""name: refund_flow
description: Refund an order.
arguments:
  - {name: order_id, required: true}
tools:
  - name: check_eligibility
    annotations: {readOnlyHint: true}
    output_schema: {type: object, properties: {eligible: {type: boolean}}}
"""
        + _REFUND_TOOLS.removeprefix("tools:\n")
        + """steps:
  - name: check
    tool: check_eligibility
    args:
      order_id: {arg: order_id}
    bind: eligibility
  - name: issue_refund
    tool: issue_refund
    args:
      order_id: {arg: order_id}
    guidance: Only issue the refund if the eligibility check says the order is eligible.
""",
        resolved_intro="With the condition stated as data on the refund step, the warning no longer fires. What "
        "is left is a note: the server still shows the guidance without acting on it.",
        resolved="""    when: {step: eligibility, field: eligible, equals: true}
    on_fail: stop
""",
    ),
    "eval-uncovered": Prose(
        fires="A step calls a side-effecting tool behind `when:` conditions or a `confirm:`, and the build cannot "
        "derive an eval case for each of them (see [Evals](evals.md)). The warning says which condition and why: "
        "it can never hold together with the conditions before it (a contradiction, which it names), no value its "
        "subject can have makes it hold or fail, or it can never fail on its own because an earlier step's "
        "condition on the same subject fails first and stops the run (a guard repeated on two steps, which it "
        "names). A condition that `dead-condition` already names (its subject's type decides it) gets no second "
        "word here: fix or acknowledge it there. A gate with no case is a gate nobody tests; under `--strict` the "
        "build and `check` fail.",
        fix="State conditions that can all hold together, and each fail on its own; a condition that always holds "
        "says nothing and can go. A guard repeated on purpose (a second check in case the first step is moved) "
        "can stay: acknowledge the warning on the step (`acknowledge: {eval-uncovered: why}`); an "
        "acknowledgement where it does not fire is `unused-acknowledgement`.",
        example="""name: repeated-guard
description: Write the mode down once it is checked.
arguments:
  - {name: mode, type: string, required: true}
tools:
  - name: check_mode
    annotations: {readOnlyHint: true}
  - name: write
    annotations: {readOnlyHint: false}
steps:
  - name: check
    tool: check_mode
    args: {mode: {arg: mode}}
    when:
      - {arg: mode, equals: a}
  - name: write
    tool: write
    args: {mode: {arg: mode}}
    when:
      - {arg: mode, equals: a}
""",
        reason="a second guard, kept in case the check step is moved.",
    ),
    "confirm-on-read-only": Prose(
        fires="A step has `confirm:` but changes nothing: its tool says `readOnlyHint: true` (and not "
        "`destructiveHint: true`), or it only reads resources. The server-side run would stop and ask a person "
        "a question whose answer protects nothing.",
        fix="Remove `confirm:`, or move it to the step that changes data (the one whose tool is side-effecting).",
        example="""name: lookup
description: Look up an order.
arguments:
  - {name: order_id, required: true}
tools:
  - name: get_order
    annotations: {readOnlyHint: true}
steps:
  - name: fetch_order
    tool: get_order
    args:
      id: {arg: order_id}
    confirm:
      message: Look up this order?
""",
    ),
    "uses-skippable-result": Prose(
        fires="A step uses (in its `args` or `template`) the result of an earlier step that has `when:` with "
        "`on_fail: skip`. When that condition fails, the earlier step is skipped and its result is never "
        "saved: the server-side run leaves an optional argument out, and hands the later step over to the "
        "client when its tool requires the value, saying which step was skipped.",
        fix="Make the earlier step stop instead (`on_fail: stop`, the default), or give the later step its own "
        "condition on that result (`when: {step: BIND, exists: true}` with `on_fail: skip`), which settles it. "
        "When the later step copes without the value, acknowledge the warning on it.",
        reason="notify sends a generic message when no coupon was issued.",
        example="""name: loyalty
description: Issue a coupon to loyal customers, then notify them.
arguments:
  - {name: customer, required: true}
tools:
  - name: get_customer
    annotations: {readOnlyHint: true}
    output_schema: {type: object, properties: {tier: {type: string}}}
  - name: issue_coupon
    annotations: {readOnlyHint: false}
    output_schema: {type: object, properties: {code: {type: string}}}
  - name: notify
    annotations: {readOnlyHint: false}
steps:
  - name: lookup
    tool: get_customer
    args:
      id: {arg: customer}
    bind: profile
  - name: coupon
    tool: issue_coupon
    args:
      id: {arg: customer}
    when: {step: profile, field: tier, in: [gold, platinum]}
    on_fail: skip
    bind: coupon
  - name: tell
    tool: notify
    args:
      id: {arg: customer}
      code: {step: coupon, field: code}
""",
    ),
    "unverifiable-step": Prose(
        fires="A step calls a tool that is declared with no `annotations` at all, so nobody can tell whether the "
        "tool has side effects, and whether guidance on the step could matter. The SKILL.md tells the reader "
        "to treat the tool as having side effects. When the step has gate-like guidance, the warning quotes "
        "it too.",
        fix="Declare the tool's annotations under its `tools:` entry (`readOnlyHint`, `destructiveHint`). With "
        "`--tools-from SERVER`, what the server leaves out is taken from there (a `tool-filled` note, not "
        "`tool-mismatch`) and counts for the gate warnings and the SKILL.md; what it declares is used as is.",
        reason="the mail server declares no annotations; send_email only queues a message.",
        example="""name: notify
description: Notify a customer.
arguments:
  - {name: customer, required: true}
tools:
  - name: send_email
    description: Send an email.
steps:
  - name: send
    tool: send_email
    args:
      to: {arg: customer}
""",
    ),
    "guidance-on-side-effect": Prose(
        fires="A step calls a tool that changes data and has `guidance` that does not read like a condition. The "
        "skill shows it as Judgment; the server-side prompt shows it in the transcript but cannot act on it. "
        "This is a note: it never fails a build, not even under `--strict`.",
        fix="Nothing, if the guidance is advice rather than a condition. If it is a condition the gate patterns "
        "missed, treat it as `gate-on-side-effect`.",
        reason="courtesy text only; nothing depends on it.",
        example="""name: refund_flow
description: Refund an order.
arguments:
  - {name: order_id, required: true}
"""
        + _REFUND_TOOLS
        + """steps:
  - name: issue_refund
    tool: issue_refund
    args:
      order_id: {arg: order_id}
    guidance: Thank the customer for their patience.
""",
    ),
    "ask-for-input": Prose(
        fires="An optional prompt argument feeds a parameter that a side-effecting tool requires. A model that "
        "follows the skill must not invent the value of a side effect (an amount, a recipient), so the SKILL.md "
        "says to ask the user for it and never to work it out itself, where an optional input elsewhere may be "
        "worked out. It is said once for each input, at its first use, and not for an argument declared "
        "`ask: true`. This is a note: it never fails a build, not even under `--strict`.",
        fix="If asking is right, say so with `ask: true` on the argument: the server-side run then asks the person "
        "for it too, and the note goes. If the step cannot run without the value, make the argument "
        "`required: true`; the skill then collects it before the procedure starts.",
        example="""name: refund_flow
description: Refund an order.
arguments:
  - {name: order_id, required: true}
  - {name: amount, type: number}
tools:
  - name: issue_refund
    description: Refund an order to the original payment method.
    input_schema:
      type: object
      properties: {order_id: {type: string}, amount: {type: number}}
      required: [order_id, amount]
    annotations: {readOnlyHint: false, destructiveHint: true}
steps:
  - name: issue_refund
    tool: issue_refund
    args:
      order_id: {arg: order_id}
      amount: {arg: amount}
""",
    ),
    "unused-acknowledgement": Prose(
        fires="A step acknowledges a code that does not fire on that step, for example after the guidance was "
        "reworded or the tool was annotated read-only. A stale acknowledgement would hide the next real "
        "warning, so it is a warning itself.",
        fix="Remove the acknowledgement. It cannot be acknowledged.",
        example="""name: lookup
description: Look up an order.
arguments:
  - {name: order_id, required: true}
tools:
  - name: get_order
    annotations: {readOnlyHint: true}
steps:
  - name: fetch
    tool: get_order
    args:
      id: {arg: order_id}
    acknowledge:
      gate-on-side-effect: get_order checks permissions itself.
""",
    ),
    "errors-not-shown": Prose(
        fires="A top-level key is unknown but is a near miss of an allowed key that the file does not have "
        "(`agruments` for `arguments`, `tols` for `tools`, `setps` for `steps`). The file is then checked "
        "again with the key spelled as meant, and the errors that go away (each use of an argument that is "
        "not declared, each tool that is not listed, the missing steps) are not shown: they follow from the "
        "misspelling, not from a mistake of their own. This note, at the misspelled key, says how many. The "
        "`unknown-key` error stays, with its suggestion, so the file is still refused. It comes only with "
        "errors.",
        fix="Rename the key as the `unknown-key` hint suggests, and build again: whatever is wrong with what the key "
        "declares is then reported.",
        with_errors=True,
        example="""name: lookup
description: Look up an order.
agruments:
  - {name: order_id, required: true}
tools:
  - name: get_order
    annotations: {readOnlyHint: true}
steps:
  - name: fetch
    tool: get_order
    args:
      id: {arg: order_id}
  - name: again
    tool: get_order
    args:
      id: {arg: order_id}
""",
    ),
    "allowed-tools-ignored": Prose(
        fires="The workflow sets `allowed-tools`, Agent Skills' experimental list of tools a host may pre-approve "
        "for the skill. MCP hosts must ignore it for skills that come from a server, as these do, and a host "
        "that did not would let a server grant its own skill permissions, so it is not written to the "
        "SKILL.md.",
        fix="Remove `allowed-tools`. The skill already names each tool it calls and whether the tool changes data "
        "(and `references/tools.md` holds their declarations). It cannot be acknowledged.",
        example="""name: lookup
description: Look up an order.
allowed-tools: Bash(git:*) Read
arguments:
  - {name: order_id, required: true}
tools:
  - name: get_order
    annotations: {readOnlyHint: true}
steps:
  - name: fetch
    tool: get_order
    args:
      id: {arg: order_id}
""",
    ),
    "body-too-long": Prose(
        fires=f"The generated SKILL.md has more than {render.MAX_BODY_LINES} lines. Hosts load the whole body into "
        "the model's context when the skill is used, and expect it to be short.",
        fix="Move detail into the tools' descriptions (they go to `references/tools.md`), shorten the guidance, or "
        "split the workflow in two. It cannot be acknowledged.",
        example="",
    ),
}
PROSE.update({code: Prose(**words) for code, words in RESULT_PROSE.items()})


def _long_workflow():
    b = WorkflowBuilder("long_flow", "A workflow with very many steps.", source="<python>")
    b.argument("order_id", required=True)
    b.tool("get_order", annotations={"readOnlyHint": True})
    for i in range(1, 81):
        b.step(f"step_{i}", tool="get_order", args={"id": arg("order_id")}, bind=f"r{i}")
    return b.build()


def example_diagnostics(code: str, prose: Prose) -> list[Diagnostic]:
    if prose.example:
        wf, diags = load.parse(prose.example.encode("utf-8"), "example.yaml")
        errors = [d for d in diags if d.severity == "error"]
        if prose.with_errors:
            if not errors or not any(d.code == code for d in diags):
                raise DocsError(
                    f"the example for '{code}' in projector/docs/codes.py no longer makes it fire "
                    "beside the errors it explains"
                )
            return sorted(diags, key=Diagnostic.sort_key)
        if wf is None or errors:
            raise DocsError(
                f"the example for '{code}' does not load: " + "; ".join(format_text(d) for d in errors or diags)
            )
    else:
        wf = _long_workflow()
    build = output.compile_workflows([wf])
    found = [d for d in build.diagnostics if d.code == code]
    if not found:
        raise DocsError(f"the example for '{code}' in projector/docs/codes.py no longer makes it fire")
    return found


def _resolved_text(code: str, prose: Prose) -> str:
    """The example fixed as ``prose.resolved`` says (lines added to its last step), compiled: the code must not fire."""
    if not prose.resolved:
        return ""
    text = prose.example.rstrip("\n") + "\n" + prose.resolved
    wf, diags = load.parse(text.encode("utf-8"), "example.yaml")
    if wf is None or any(d.severity == "error" for d in diags):
        raise DocsError(f"the resolved example for '{code}' does not load: " + "; ".join(format_text(d) for d in diags))
    found = output.compile_workflows([wf]).diagnostics
    if any(d.code == code for d in found):
        raise DocsError(f"the resolved example for '{code}' in projector/docs/codes.py still makes it fire")
    printed = "\n".join(format_text(d) for d in found) or "(no findings)"
    return f"""
{prose.resolved_intro}

```yaml
{prose.resolved.rstrip(chr(10))}
```

gives:

```text
{printed}
```
"""


def _acknowledge_text(code: str, prose: Prose) -> str:
    if code not in gates.ACKNOWLEDGEABLE:
        return "It cannot be acknowledged: an `acknowledge` entry for it is an error (`unknown-acknowledgement`)."
    snippet = f"    acknowledge:\n      {code}: {prose.reason}\n"
    acked = Prose(prose.fires, prose.fix, prose.example.rstrip("\n") + "\n" + snippet)
    diags = example_diagnostics(code, acked)
    if any(d.acknowledged != prose.reason for d in diags):
        raise DocsError(f"acknowledging '{code}' in its example does not mark it acknowledged")
    printed = "\n".join(format_text(d) for d in diags)
    return f"""Acknowledge it on the step that fires it, with the reason:

```yaml
{snippet.rstrip()}
```

The example above then gives:

```text
{printed}
```

It is still reported, but it no longer counts as a warning, and `--strict` does not fail on it."""


def warnings_page(root: Path) -> str:
    codes = all_codes()
    missing = sorted(set(codes) - set(PROSE))
    missing += sorted(c for c in gates.ACKNOWLEDGEABLE if c in PROSE and not PROSE[c].reason)
    stale = sorted(set(PROSE) - set(codes))
    if missing or stale:
        raise DocsError(
            "the warnings reference is out of step with the compiler: "
            + "; ".join(
                [
                    *(f"no prose for '{c}'" for c in missing),
                    *(f"prose for '{c}', which the compiler no longer reports" for c in stale),
                ]
            )
            + " (edit PROSE in projector/docs/codes.py)"
        )
    rows = "".join(
        f"| [`{c}`](#{c}) | {sev} | {'yes' if c in gates.ACKNOWLEDGEABLE else 'no'} |\n" for c, sev in codes.items()
    )
    out = [
        f"""# Warnings

Errors stop a build. Warnings and notes do not: the skills are written, and the findings are printed beside them,
each as `file:line:col: severity[code]: message` with a hint. `--format json` prints them as one JSON array, and
`--format github` as GitHub annotations.

- `project-skill build --strict` and `check --strict` exit 1 when any warning is left unacknowledged, and write
  nothing.
- Notes never fail a build. One note comes only with errors, to explain them (`errors-not-shown`).
- An acknowledged warning is still reported, marked `(acknowledged: reason)`, and never fails a build.

This page is generated from the compiler's own list of codes, and each example below was compiled when the page
was generated: the output quoted is what the compiler prints.

| code | severity | can be acknowledged |
| --- | --- | --- |
{rows}"""
    ]
    for code, severity in codes.items():
        prose = PROSE[code]
        diags = example_diagnostics(code, prose)
        if prose.example:
            example = f"For example, this workflow:\n\n```yaml\n{prose.example.rstrip(chr(10))}\n```\n\ngives:"
        else:
            example = "For example, a workflow built in Python with 80 steps gives:"
        printed = "\n".join(format_text(d) for d in diags)
        resolved = _resolved_text(code, prose)
        out.append(f"""
## {code} {{#{code}}}

Severity: {severity}.

**When it fires.** {prose.fires}

{example}

```text
{printed}
```
{resolved}
**What to do.** {prose.fix}

{_acknowledge_text(code, prose)}
""")
    return "".join(out)
