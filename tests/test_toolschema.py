"""What a tool's JSON Schema says (projector.toolschema), through what users touch: a step's constants checked against
a schema's ``pattern`` by ``check`` and the Python builder, matched as ECMA-262 (the dialect JSON Schema names, and
the one a TypeScript server matches with) matches them."""

from __future__ import annotations

import pytest

from projector.builder import WorkflowBuilder, const
from projector.errors import LoadError

WF = """\
name: codes
description: Look a code up.
tools:
  - name: lookup
    input_schema:
      type: object
      properties:
        code: {type: string, pattern: "%s"}
    annotations: {readOnlyHint: true}
steps:
  - name: find
    tool: lookup
    args:
      code: {const: "%s"}
"""


@pytest.mark.parametrize("separator", ["\\u2028", "\\u2029", "\\r"])
def test_a_dot_does_not_match_a_line_terminator_as_in_ecma(cli, tmp_path, separator):
    """Review of wave 2: RE2's ``.`` matches U+2028, U+2029 and CR, ECMA-262's does not, so ``check`` passed a
    constant that a TypeScript server refuses. Now ``a.b`` refuses ``a<U+2028>b`` as ECMA does."""
    wf = tmp_path / "codes.yaml"
    wf.write_text(WF % ("^a.b$", f"a{separator}b"), encoding="utf-8")
    run = cli("check", str(wf), "--out", str(tmp_path / "out"))
    assert run.code == 1, run.err
    assert f"{wf.as_posix()}:14:13: error[parameter-type]: step 'find' passes the string" in run.err, run.err
    assert "does not match '^a.b$'" in run.err and "Traceback" not in run.err


@pytest.mark.parametrize(("pattern", "ok", "refused"), [
    ("^a.b$", "a-b", "a\nb"),
    ("^[.]$", ".", "x"),  # a dot in a class is the dot itself
    ("^\\\\.$", ".", "x"),  # so is an escaped dot
    ("^[^.]$", "x", "."),
    ("^[].]$", "]", "x"),  # RE2 reads a ] first in a class as itself
    ("^[[:alpha:].]+$", "a.b", "a-b"),
    ("^\\\\Q.\\\\E.$", ".x", "x\u2028"),  # RE2's literal text, then a dot
])
def test_the_dots_that_are_not_the_any_character_keep_their_meaning(pattern, ok, refused):
    schema = {"type": "object", "properties": {"code": {"type": "string", "pattern": pattern.replace("\\\\", "\\")}}}

    def build(value: str) -> None:
        (WorkflowBuilder("codes", "Codes.").tool("t", input_schema=schema, annotations={"readOnlyHint": True})
         .step("find", tool="t", args={"code": const(value)}).build())

    build(ok)
    with pytest.raises(LoadError) as info:
        build(refused)
    assert info.value.diagnostics[0].code == "parameter-type"
