"""Errors as a new user meets them (issue 19, item 6): a misspelled parameter is one error at the misspelled key, a
misspelled top-level key hides the errors that follow only from its absence (and says so in a note), and a YAML
syntax error carries a hint for its common causes. Each message, hint and position is pinned exactly."""

from __future__ import annotations

import inspect

import textwrap

import pytest
import yaml

from conftest import ROOT
from projector import positioned
from projector.builder import WorkflowBuilder, arg, const
from projector.errors import LoadError, format_text
from projector.load import parse

CORPUS = "tests/bad_inputs"


def shown(text: str, file: str = "wf.yaml") -> list[str]:
    """Every diagnostic of a workflow text, as the CLI prints it."""
    _wf, found = parse(textwrap.dedent(text).encode("utf-8"), file)
    return [format_text(d) for d in sorted(found, key=lambda d: d.sort_key())]


def corpus(name: str) -> list[str]:
    path = f"{CORPUS}/{name}"
    _wf, found = parse((ROOT / path).read_bytes(), path)
    return [format_text(d) for d in sorted(found, key=lambda d: d.sort_key())]


@pytest.fixture(params=["libyaml", "pure"])
def both_loaders(request, monkeypatch):
    """The hints come from the parser's problem text, which libyaml and PyYAML word differently: both are held to
    the same hint."""
    if request.param == "pure":
        monkeypatch.setattr(positioned, "_Loader", positioned.loader_class(yaml.SafeLoader))
    elif not positioned.HAVE_LIBYAML:  # pragma: no cover - depends on how PyYAML was built
        pytest.skip("PyYAML without libyaml")
    return request.param


# ------------------------------------------------------------------------------------------- misspelled parameters


def test_misspelled_parameter_is_one_error_at_the_key_with_the_suggestion():
    f = f"{CORPUS}/misspelled-parameter.yaml"
    assert corpus("misspelled-parameter.yaml") == [
        f"{f}:14:7: error[unknown-parameter]: step 'log' passes 'repo', which is not a parameter of the tool "
        "'git_log'; the tool requires 'repo_path', which is not given\n  hint: did you mean 'repo_path'?"]


def test_the_build_prints_the_one_error(cli):
    run = cli("build", f"{CORPUS}/misspelled-parameter.yaml", "--out", "/nonexistent/never-written", cwd=ROOT)
    assert run.code == 1
    assert run.err.count("error[") == 1 and "missing-parameter" not in run.err


def test_an_unknown_parameter_that_misspells_nothing_missing_keeps_its_error_at_the_key():
    f = f"{CORPUS}/unknown-parameter.yaml"
    assert corpus("unknown-parameter.yaml") == [
        f"{f}:13:12: error[unknown-parameter]: step 'fetch' passes 'order', which is not a parameter of the tool "
        "'get_order'\n  hint: its parameters: id"]


TOOL = """\
name: w
description: d
arguments: [{name: who}]
tools:
  - name: git_log
    input_schema:
      type: object
      properties: {repo_path: {type: string}, repos: {type: string}, branch: {type: string}}
      required: [repo_path, branch]
    annotations: {readOnlyHint: true}
steps:
  - name: log
    tool: git_log
    args:
"""


def test_a_near_miss_of_a_parameter_that_is_given_or_optional_is_not_a_misspelling_of_a_missing_one():
    # 'repo' is closer to the optional 'repos' (given) than to 'repo_path', but only a missing parameter can be
    # what it misspells; 'brnch' misspells the missing 'branch'; 'labels' misspells nothing: its own error
    out = shown(TOOL + "      repo: {arg: who}\n      brnch: {arg: who}\n      labels: {arg: who}\n"
                       "      repos: {arg: who}\n")
    assert out == [
        "wf.yaml:15:7: error[unknown-parameter]: step 'log' passes 'repo', which is not a parameter of the tool "
        "'git_log'; the tool requires 'repo_path', which is not given\n  hint: did you mean 'repo_path'?",
        "wf.yaml:16:7: error[unknown-parameter]: step 'log' passes 'brnch', which is not a parameter of the tool "
        "'git_log'; the tool requires 'branch', which is not given\n  hint: did you mean 'branch'?",
        "wf.yaml:17:7: error[unknown-parameter]: step 'log' passes 'labels', which is not a parameter of the tool "
        "'git_log'\n  hint: its parameters: branch, repo_path, repos"]


def test_a_missing_parameter_is_claimed_by_the_first_of_two_misspellings():
    out = shown(TOOL + "      branch: {arg: who}\n      repo_pth: {arg: who}\n      repo_pat: {arg: who}\n")
    assert out == [
        "wf.yaml:16:7: error[unknown-parameter]: step 'log' passes 'repo_pth', which is not a parameter of the tool "
        "'git_log'; the tool requires 'repo_path', which is not given\n  hint: did you mean 'repo_path'?",
        "wf.yaml:17:7: error[unknown-parameter]: step 'log' passes 'repo_pat', which is not a parameter of the tool "
        "'git_log'\n  hint: did you mean 'repo_path'?"]


def test_an_unknown_parameter_close_to_nothing_missing_leaves_the_missing_parameter_reported():
    out = shown(TOOL + "      repo_path: {arg: who}\n      brunch_menu: {const: 1}\n")
    assert out == [
        "wf.yaml:12:5: error[missing-parameter]: step 'log' does not give 'branch', which the tool 'git_log' "
        "requires\n  hint: add it under args: branch: {arg: ...}, {step: ...} or {const: ...}",
        "wf.yaml:16:7: error[unknown-parameter]: step 'log' passes 'brunch_menu', which is not a parameter of the "
        "tool 'git_log'\n  hint: its parameters: branch, repo_path, repos"]


def test_a_step_built_in_python_gets_the_same_one_error():
    wf = (WorkflowBuilder("w", "d").argument("who")
          .tool("git_log", input_schema={"type": "object", "properties": {"repo_path": {"type": "string"}},
                                         "required": ["repo_path"]}, annotations={"readOnlyHint": True})
          .step("log", tool="git_log", args={"repo": arg("who"), "n": const(1)}))
    line = inspect.currentframe().f_lineno - 1  # the .step(...) call: the builder names its caller's line
    with pytest.raises(LoadError) as info:
        wf.build()
    assert [(d.span.file.endswith("test_errors_sharper.py"), d.span.line, d.code, d.message, d.hint)
            for d in info.value.diagnostics] == [
        (True, line, "unknown-parameter", "step 'log' passes 'n', which is not a parameter of the tool 'git_log'",
         "its parameters: repo_path"),
        (True, line, "unknown-parameter", "step 'log' passes 'repo', which is not a parameter of the tool "
         "'git_log'; the tool requires 'repo_path', which is not given", "did you mean 'repo_path'?")]


# --------------------------------------------------------------------------------------- near-miss top-level keys


def test_a_misspelled_top_level_key_hides_what_follows_from_its_absence_and_says_so():
    f = f"{CORPUS}/near-miss-top-level-key.yaml"
    assert corpus("near-miss-top-level-key.yaml") == [
        f"{f}:5:1: note[errors-not-shown]: 3 errors that follow from 'arguments' being absent are not shown\n"
        "  hint: rename 'agruments' to 'arguments': they are checked then",
        f"{f}:5:1: error[unknown-key]: unknown key 'agruments' in the workflow\n  hint: did you mean 'arguments'?",
        # not a consequence of the missing key: still shown
        f"{f}:13:5: error[unknown-tool]: step 'again' calls the tool 'get_ordr', which is not listed under tools\n"
        "  hint: did you mean 'get_order'?; declare the tool under tools, or take it from a live server with "
        "--tools-from SERVER"]


def test_the_note_reaches_the_cli_with_the_errors(cli):
    run = cli("build", f"{CORPUS}/near-miss-top-level-key.yaml", "--out", "/nonexistent/never-written", cwd=ROOT)
    assert run.code == 1
    assert "near-miss-top-level-key.yaml:5:1: note[errors-not-shown]: 3 errors" in run.err
    assert "undeclared-argument" not in run.err


def test_a_misspelled_tools_key_hides_the_unknown_tools():
    out = shown("""\
    name: w
    description: d
    tols:
      - {name: get_order, annotations: {readOnlyHint: true}}
    steps:
      - {name: a, tool: get_order}
      - {name: b, tool: get_order}
    """)
    assert out == [
        "wf.yaml:3:1: note[errors-not-shown]: 2 errors that follow from 'tools' being absent are not shown\n"
        "  hint: rename 'tols' to 'tools': they are checked then",
        "wf.yaml:3:1: error[unknown-key]: unknown key 'tols' in the workflow\n  hint: did you mean 'tools'?"]


def test_a_misspelled_steps_key_hides_the_missing_steps():
    out = shown("""\
    name: w
    description: d
    setps:
      - {name: a, tool: t}
    """)
    assert out == [
        # the missing 'steps' key, said once (validate's "no steps" no longer repeats it)
        "wf.yaml:3:1: note[errors-not-shown]: 1 error that follows from 'steps' being absent is not shown\n"
        "  hint: rename 'setps' to 'steps': they are checked then",
        "wf.yaml:3:1: error[unknown-key]: unknown key 'setps' in the workflow\n  hint: did you mean 'steps'?"]


def test_a_near_miss_of_a_key_that_is_there_hides_nothing():
    out = shown("""\
    name: w
    description: d
    arguments: []
    agruments: [{name: x}]
    steps:
      - {name: a, tool: t, args: {x: {arg: x}}}
    """)
    assert [line.split(": ", 1)[1].split(":")[0] for line in out] == [
        "error[unknown-key]", "error[unknown-tool]", "error[undeclared-argument]"]


def test_errors_that_remain_when_the_key_is_renamed_are_shown():
    # the misspelled arguments declare 'x' only: 'y' stays undeclared, so it is shown; 'x' is hidden
    out = shown("""\
    name: w
    description: d
    agruments: [{name: x}]
    tools: [{name: t, annotations: {readOnlyHint: true}}]
    steps:
      - {name: a, tool: t, args: {x: {arg: x}, y: {arg: y}}}
    """)
    assert out == [
        "wf.yaml:3:1: note[errors-not-shown]: 1 error that follows from 'arguments' being absent is not shown\n"
        "  hint: rename 'agruments' to 'arguments': they are checked then",
        "wf.yaml:3:1: error[unknown-key]: unknown key 'agruments' in the workflow\n  hint: did you mean 'arguments'?",
        "wf.yaml:6:53: error[undeclared-argument]: step 'a', 'y' uses the argument 'y', which is not declared\n"
        "  hint: declare it under arguments"]


def test_a_near_miss_that_explains_nothing_adds_no_note():
    out = shown("""\
    name: w
    description: d
    tool: [{name: t}]
    steps:
      - {name: a, resources: ["docs://x"]}
    """)
    assert out == ["wf.yaml:3:1: error[unknown-key]: unknown key 'tool' in the workflow\n"
                   "  hint: did you mean 'tools'?"]


# ------------------------------------------------------------------------------------------------ yaml-syntax hints


def test_a_tab_in_the_indentation(both_loaders):
    f = f"{CORPUS}/yaml-syntax-tab.yaml"
    (out,) = corpus("yaml-syntax-tab.yaml")
    assert out.startswith(f"{f}:6:3: error[yaml-syntax]: invalid YAML: ")
    assert out.endswith("\n  hint: line 6 is indented with a tab: YAML indents with spaces only; replace the tab "
                        "with spaces")


def test_an_unquoted_colon_in_a_value(both_loaders):
    f = f"{CORPUS}/yaml-syntax-colon.yaml"
    (out,) = corpus("yaml-syntax-colon.yaml")
    assert out.startswith(f"{f}:3:18: error[yaml-syntax]: invalid YAML: mapping values are not allowed ")
    assert out.endswith("\n  hint: the value of 'description' holds ': ', which starts a mapping in YAML; quote "
                        "the value: description: \"Note: the colon after Note makes this a mapping.\"")


def test_an_unquoted_colon_in_a_list_item(both_loaders):
    (out,) = shown("name: w\nsteps:\n  - guidance: Step one: do it # why\n")
    assert out.endswith("\n  hint: the value of 'guidance' holds ': ', which starts a mapping in YAML; quote the "
                        "value: guidance: \"Step one: do it\"")


def test_an_unquoted_colon_in_a_flow_mapping(both_loaders):
    (out,) = shown("name: w\nargs: {a: b: c}\n")
    assert out.startswith("wf.yaml:2:12: error[yaml-syntax]")
    assert out.endswith("\n  hint: a ': ' inside a value starts a mapping in YAML; quote the value that holds it")


def test_a_key_indented_under_a_value(both_loaders):
    (out,) = shown("name: w\ndescription: d\n  steps: []\n")
    assert out.startswith("wf.yaml:3:8: error[yaml-syntax]")
    assert out.endswith("\n  hint: line 3 is indented more than the line above it, so YAML reads 'steps' as part "
                        "of the value above; indent 'steps' as far as the other keys of its mapping")


def test_a_key_indented_less_than_its_siblings(both_loaders):
    f = f"{CORPUS}/yaml-syntax-indentation.yaml"
    (out,) = corpus("yaml-syntax-indentation.yaml")
    assert out.startswith(f"{f}:7:4: error[yaml-syntax]: invalid YAML: ")
    assert out.endswith("\n  hint: check the indentation of line 7: it starts at column 4, the line above it at "
                        "column 5; the keys of one mapping, and the items of one list, start in the same column")


def test_a_list_item_indented_less_than_its_siblings(both_loaders):
    (out,) = shown("name: w\nsteps:\n  - name: a\n - name: b\n")
    assert out.startswith("wf.yaml:4:2: error[yaml-syntax]")
    assert out.endswith("\n  hint: check the indentation of line 4: it starts at column 2, the line above it at "
                        "column 3; the keys of one mapping, and the items of one list, start in the same column")


def test_an_unclosed_quote(both_loaders):
    f = f"{CORPUS}/yaml-syntax-quote.yaml"
    (out,) = corpus("yaml-syntax-quote.yaml")
    assert out.startswith(f"{f}:6:1: error[yaml-syntax]: invalid YAML: while scanning a quoted scalar found "
                          "unexpected end of stream")
    assert out.endswith("\n  hint: the quote (\") at line 3, column 14 is never closed: close it where the value "
                        "ends (inside double quotes write \\\" for a quote, inside single quotes '')")


def test_text_after_a_closing_quote(both_loaders):
    (out,) = shown("name: 'x' y\n")
    assert out.endswith("\n  hint: a quoted value ends at its closing quote; quote the whole value, or remove "
                        "what follows the quote")


def test_an_unclosed_bracket(both_loaders):
    f = f"{CORPUS}/malformed-yaml.yaml"
    (out,) = corpus("malformed-yaml.yaml")
    assert out.startswith(f"{f}:5:1: error[yaml-syntax]: invalid YAML: while parsing a flow mapping ")
    assert out.endswith("\n  hint: the '{' at line 4, column 10 is not closed, or two of its entries have no comma "
                        "between them: close it with '}', and separate its entries with commas")


def test_an_unclosed_list_bracket(both_loaders):
    (out,) = shown("name: w\nsteps: [a, b\ndescription: d\n")
    assert out.endswith("\n  hint: the '[' at line 2, column 8 is not closed, or two of its entries have no comma "
                        "between them: close it with ']', and separate its entries with commas")


def test_a_syntax_error_with_no_known_cause_has_no_hint(both_loaders):
    (out,) = shown('name: "C:\\path"\n')
    assert "hint:" not in out


def test_each_misspelled_key_gets_its_own_note_and_a_second_near_miss_of_the_same_key_none():
    out = shown("""\
    name: w
    description: d
    agruments: [{name: x}]
    arguements: [{name: x}]
    tols: [{name: t, annotations: {readOnlyHint: true}}]
    steps:
      - {name: a, tool: t, args: {x: {arg: x}}}
    """)
    assert out == [
        "wf.yaml:3:1: note[errors-not-shown]: 1 error that follows from 'arguments' being absent is not shown\n"
        "  hint: rename 'agruments' to 'arguments': they are checked then",
        "wf.yaml:3:1: error[unknown-key]: unknown key 'agruments' in the workflow\n  hint: did you mean 'arguments'?",
        "wf.yaml:4:1: error[unknown-key]: unknown key 'arguements' in the workflow\n  hint: did you mean 'arguments'?",
        "wf.yaml:5:1: note[errors-not-shown]: 1 error that follows from 'tools' being absent is not shown\n"
        "  hint: rename 'tols' to 'tools': they are checked then",
        "wf.yaml:5:1: error[unknown-key]: unknown key 'tols' in the workflow\n  hint: did you mean 'tools'?"]


def test_a_long_value_with_a_colon_is_not_quoted_back(both_loaders):
    (out,) = shown("name: w\ndescription: Note: " + "x" * 100 + "\n")
    assert out.endswith("\n  hint: the value of 'description' holds ': ', which starts a mapping in YAML; quote the "
                        "value")


def test_an_unclosed_quote_that_meets_a_document_marker(both_loaders):
    (out,) = shown("name: w\ndescription: 'never closed\n---\n")
    assert out.endswith("\n  hint: the quote (') at line 2, column 14 is never closed: close it where the value "
                        "ends (inside double quotes write \\\" for a quote, inside single quotes '')")


def test_a_line_at_the_column_of_the_line_above_gets_the_general_indentation_hint(both_loaders):
    (out,) = shown("name: w\n# a comment\n- a\n")
    assert out.startswith("wf.yaml:3:1: error[yaml-syntax]")
    assert out.endswith("\n  hint: check the indentation of line 3 against the lines above it: the keys of one "
                        "mapping, and the items of one list, start in the same column")


def test_the_line_above_skips_blank_and_comment_lines(both_loaders):
    (out,) = shown("name: w\nsteps:\n  - name: a\n    tool: t\n\n      # note\n   bind: b\n")
    assert out.endswith("\n  hint: check the indentation of line 7: it starts at column 4, the line above it at "
                        "column 5; the keys of one mapping, and the items of one list, start in the same column")
