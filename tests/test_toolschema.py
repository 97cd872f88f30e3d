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


OBJECT_WF = """\
name: notes
description: Write a note.
tools:
  - name: note
    input_schema:
      type: object
      properties: {title: {type: string}, body: {type: string}, Tag: {type: string}}
      %s
    annotations: {readOnlyHint: true}
steps:
  - name: write
    tool: note
    args:
      title: {const: "t"}
      Tag: {const: "x"}
"""


@pytest.mark.parametrize(("keyword", "expected"), [
    pytest.param('propertyNames: {pattern: "^[a-z]+$"}', ":15:7: error[unknown-parameter]: step 'write' passes 'Tag', "
                 "a name the tool 'note' does not accept: 'Tag' does not match '^[a-z]+$'", id="propertyNames"),
    pytest.param("dependentRequired: {title: [body]}", ":11:5: error[missing-parameter]: step 'write' gives 'title' "
                 "but not 'body', which the tool 'note' requires with it", id="dependentRequired"),
    pytest.param("maxProperties: 1", ":11:5: error[unknown-parameter]: step 'write' passes 2 parameters, but the tool "
                 "'note' takes at most 1", id="maxProperties"),
])
def test_the_object_keywords_of_an_input_schema_are_checked_against_the_steps_names(cli, tmp_path, keyword, expected):
    """Review of wave 2: only each property's own schema was checked; the keywords about the object's names as a
    whole (``propertyNames``, ``dependentRequired``, ``maxProperties``) let a step pass what the tool refuses."""
    wf = tmp_path / "notes.yaml"
    wf.write_text(OBJECT_WF % keyword, encoding="utf-8")
    run = cli("check", str(wf), "--out", str(tmp_path / "out"))
    assert run.code == 1, run.err
    assert wf.as_posix() + expected in run.err, run.err
    assert "Traceback" not in run.err
    wf.write_text(OBJECT_WF % keyword.replace("^[a-z]+$", "^[A-Za-z]+$").replace("[body]", "[Tag]")
                  .replace(": 1", ": 2"), encoding="utf-8")
    assert "error[" not in cli("check", str(wf), "--out", str(tmp_path / "out")).err


def test_a_hostile_name_is_said_as_it_is():
    """A parameter name with braces reaches the message as data, never as a template."""
    schema = {"type": "object", "properties": {"{tool}": {"type": "string"}}, "propertyNames": {"maxLength": 2},
              "dependentRequired": {"{tool}": ["{0}"]}}
    with pytest.raises(LoadError) as info:
        (WorkflowBuilder("w", "W.").tool("t", input_schema=schema, annotations={"readOnlyHint": True})
         .step("s", tool="t", args={"{tool}": const("x")}).build())
    codes = sorted(d.code for d in info.value.diagnostics)
    assert codes == ["missing-parameter", "unknown-parameter"], info.value.diagnostics
    assert all("Traceback" not in d.message for d in info.value.diagnostics)
