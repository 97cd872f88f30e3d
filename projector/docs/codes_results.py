"""The prose of the codes about what a step's result is (:mod:`projector.results`): a field path into a text
(``unstructured-result``) and a condition that the text-result rule decides before any run (``dead-condition``).
Part of the warnings reference that :mod:`projector.docs.codes` generates; each entry is that module's ``Prose``.
"""

from __future__ import annotations

from typing import Any

RESULT_PROSE: dict[str, dict[str, Any]] = {
    "unstructured-result": dict(
        fires="A field path (`{step: BIND, field: PATH}`, in a step's `args` or `template`, or as the subject of "
        "a `when:` condition) reads into the result of a tool that declares no `output_schema`. Such a tool "
        "returns text: an MCP server sends structured content only for a tool that declares an "
        "`outputSchema`, so the result has no fields, and the path never resolves. The server-side run then "
        'stops at a condition on it on every call ("`BIND.PATH` is missing"), skips the step under '
        "`on_fail: skip`, and leaves an optional argument out or hands the step over when the tool requires "
        "it. With `--tools-from` (a server or a snapshot) the rule rests on the server's own declaration: "
        "many servers (`mcp-server-git` among them) declare no output schema for any tool.",
        fix="Use the whole result (`{step: BIND}`), or state the condition on an input the user supplies "
        "(`when: {arg: approved, equals: true}`, with the argument declared). If the server does send "
        "structured content, declare the tool's `output_schema` as the server does (field paths are then "
        "checked against it: `bad-field-path`). If the tool's text is JSON that has the field (the server-side "
        "run parses JSON text), acknowledge the warning on the step and say so.",
        reason="our server's git_diff_staged returns JSON text with a diff field.",
        example="""name: commit_staged
description: Commit what is staged.
arguments:
  - {name: message, required: true}
tools:
  - name: git_diff_staged
    annotations: {readOnlyHint: true}
  - name: git_commit
    annotations: {readOnlyHint: false}
steps:
  - name: staged
    tool: git_diff_staged
    bind: staged_diff
  - name: commit
    tool: git_commit
    args:
      message: {arg: message}
    when: {step: staged_diff, field: diff, exists: true}
""",
    ),
    "dead-condition": dict(
        fires="A `when:` operand can never equal its subject, so the condition never holds (`equals`, `in`) or never "
        'fails while the subject has a value (`not_equals`, `not_in`): `"true"` against a `type: boolean` '
        'argument, a number against a string argument, JSON text (`"[]"`) against the whole result of a '
        "tool that returns text, which is read as JSON when the whole text is JSON, on every server, or a value "
        "that the tool's output schema rules out for the result or the field: `not_equals: false` against a "
        'field it declares `type: string` (the text `false` is the string `"false"`, never the boolean), a '
        "value outside its `enum`. The output schema is the server's (`--tools-from`, `attach`, `serve`), or "
        "the workflow's `output_schema` where the server declares none. `contains` never holds (and "
        "`not_contains` never fails) on a subject that can be neither a string nor a list (a number, a boolean), "
        'nor with an operand that is not text on a string (`contains: 7` against a string: write `"7"`).\n\n'
        "On a step that calls a side-effecting tool, `attach()`, `project-skill serve` and the gateway refuse "
        "such a condition (an error, `dead-condition`, as they refuse an unknown tool), unless the step "
        "acknowledges it: a gate that never stops the call must not run quietly on a server, where nobody reads "
        "the build's warning. The derived evals give a tool only results its output schema allows, so no case "
        "rests on a result the server can never send; such a condition gets no case and this one warning (no "
        "`eval-uncovered` besides).",
        fix='Write the operand as the value the subject has (`equals: true`, `equals: "7"`, `equals: []`, '
        '`not_equals: "false"`). If the step is meant to run so, acknowledge the warning on the step and say why.',
        reason="close_day itself refuses while an order is open.",
        example="""name: close_day
description: Close the day when no order is open.
tools: [{name: open_orders, annotations: {readOnlyHint: true}}, {name: close_day, annotations: {readOnlyHint: false}}]
steps:
  - {name: find, tool: open_orders, bind: orders}
  - name: close
    tool: close_day
    when: {step: orders, not_equals: "[]"}
""",
    ),
}
