"""What the shape builder (projector/shape.py) says about each small workflow, and what it builds from it.

One snippet per branch of the builder: every ``wrong-type``, ``unknown-key``, ``missing-key``, ``bad-source``,
``unknown-operator``, ``multiple-operators``, ``missing-operator`` and ``ambiguous-scalar`` it reports, and the good
snippets whose values it builds (defaults, optional keys, sources, conditions and their operands). Each case's
snapshot is the whole of :func:`projector.shape.parse`'s answer: every diagnostic (line:col, severity, code, message,
hint) in order, and the model, every field of every object with its position. A reworded message, a moved position, a
lost hint or a changed default is a snapshot diff; this is also what lets mutation testing see such a change
(scripts/mutation, target ``shape``).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import textwrap

import pytest
import yaml
from conftest import ROOT

from projector import positioned, shape
from projector.builder import WorkflowBuilder, arg, const
from projector.errors import LoadError, Span, format_text
from projector.load import parse
from projector.shape import near_miss

FILE = "wf.yaml"


def show(value, indent: int = 0) -> str:
    """A model value as indented text: every dataclass field that is not at its default (those left out of repr
    too), spans as ``@line:col``."""
    pad = "  " * indent
    if isinstance(value, Span):
        return f"@{value.line}:{value.col}" if value.file == FILE else f"@{value}"
    if dataclasses.is_dataclass(value):
        lines = [f"{type(value).__name__}"]
        for f in dataclasses.fields(value):
            v = getattr(value, f.name)
            if f.default is not dataclasses.MISSING and type(v) is type(f.default) and v == f.default:
                continue
            lines.append(f"{pad}  {f.name} = {show(v, indent + 1)}")
        return "\n".join(lines)
    if isinstance(value, tuple) and value:
        return "(\n" + "".join(f"{pad}  - {show(v, indent + 1)}\n" for v in value) + f"{pad})"
    return repr(value)


def report(wf, diags) -> str:
    out = []
    for d in diags:
        where = f"{d.span.line}:{d.span.col}" if d.span.file == FILE else str(d.span)
        out.append(f"{where} {d.severity}[{d.code}]: {d.message}")
        if d.hint is not None:
            out.append(f"    hint: {d.hint}")
    out.append("model: " + show(wf))
    return "\n".join(out) + "\n"


HEAD = "name: w\ndescription: d\n"
STEP = "steps:\n  - name: s\n    tool: t\n"

# id -> YAML text. HEAD/STEP fill in what a case does not test.
CASES: dict[str, str] = {
    # the workflow mapping itself
    "workflow-not-mapping": "- a\n- b\n",
    "workflow-scalar": "just text\n",
    "workflow-empty-mapping": "{}\n",
    "workflow-missing-keys": "title: T\n",
    "workflow-unknown-key-far": HEAD + STEP + "zzzzzz: 1\n",
    "workflow-unknown-key-near": HEAD + STEP + "titel: T\n",
    "workflow-unknown-key-near-cutoff": "name: w\n" + STEP + "desc: d\n",
    "workflow-full": HEAD + "title: The W\nlicense: MIT\ncompatibility: any host\nallowed-tools: t\n"
                     "metadata: {b: two, a: one}\n" + STEP,
    "workflow-minimal": HEAD + STEP,
    "workflow-name-wrong-types": "name: 5\ndescription: [d]\ntitle: 1.5\n" + STEP,
    "workflow-name-bool-null": "name: true\ndescription: null\ntitle: {a: b}\n" + STEP,
    "workflow-lists-wrong-type": HEAD + "arguments: 5\ninstructions: {a: b}\ntools: text\nsteps: 3\n",
    "workflow-steps-empty": HEAD + "steps: []\n",
    "workflow-steps-null": HEAD + "steps:\n",
    "workflow-no-sound-step": HEAD + "steps: [5, [a]]\n",  # each step's problem, and no "no steps" after them
    "workflow-no-name-no-sound-step": "description: d\nsteps: [5]\n",
    # frontmatter fields
    "frontmatter-wrong-types": HEAD + "license: 5\ncompatibility: [a]\nallowed-tools: {a: b}\n" + STEP,
    "frontmatter-ambiguous": HEAD + "license: yes\ncompatibility: 0o17\nallowed-tools: 1_000\n" + STEP,
    "frontmatter-null": HEAD + "license: null\n" + STEP,
    "metadata-not-mapping": HEAD + "metadata: [a, b]\n" + STEP,
    "metadata-scalar": HEAD + "metadata: 5\n" + STEP,
    "metadata-values": HEAD + "metadata:\n  z: last\n  n: 5\n  l: [1]\n  t: true\n  o: on\n  m: middle\n" + STEP,
    "metadata-boolean-key": HEAD + "metadata:\n  on: x\n  a: b\n" + STEP,
    "metadata-ambiguous-key": HEAD + "metadata:\n  0o7: x\n  a: b\n" + STEP,
    "metadata-empty": HEAD + "metadata: {}\n" + STEP,
    # arguments
    "argument-not-mapping": HEAD + "arguments:\n  - just a name\n  - [1]\n" + STEP,
    "argument-unknown-keys": HEAD + "arguments:\n  - name: a\n    nam: x\n    zzzzzz: 1\n" + STEP,
    "argument-no-name": HEAD + "arguments:\n  - description: x\n    required: yes please\n" + STEP,
    "argument-full": HEAD + "arguments:\n  - name: a\n    description: the a\n    required: true\n    type: integer\n"
                     "    ask: true\n  - name: b\n    required: false\n    ask: false\n" + STEP,
    "argument-defaults": HEAD + "arguments:\n  - name: a\n" + STEP,
    "argument-flags-wrong": HEAD + "arguments:\n  - name: a\n    required: 1\n    ask: 'yes'\n" + STEP,
    "argument-flags-wrong-no-name": HEAD + "arguments:\n  - required: [x]\n    ask: null\n" + STEP,
    "argument-type-typo": HEAD + "arguments:\n  - name: a\n    type: strng\n" + STEP,
    "argument-type-typo-cutoff": HEAD + "arguments:\n  - name: a\n    type: nu\n" + STEP,
    "argument-type-far": HEAD + "arguments:\n  - name: a\n    type: zzzzzz\n" + STEP,
    "argument-type-number": HEAD + "arguments:\n  - type: 5\n" + STEP,
    "argument-name-wrong-type": HEAD + "arguments:\n  - name: 5\n    description: [x]\n" + STEP,
    # instructions
    "instruction-not-mapping": HEAD + "instructions:\n  - be nice\n" + STEP,
    "instruction-roles": HEAD + "instructions:\n  - role: user\n    text: u\n  - role: assistant\n    text: a\n"
                        "  - role: system\n    text: s\n" + STEP,
    "instruction-missing-keys": HEAD + "instructions:\n  - {}\n" + STEP,
    "instruction-bad-role": HEAD + "instructions:\n  - text: t\n    role: boss\n" + STEP,
    "instruction-role-number": HEAD + "instructions:\n  - text: t\n    role: 5\n" + STEP,
    "instruction-text-wrong-type": HEAD + "instructions:\n  - role: user\n    text: 5\n" + STEP,
    "instruction-text-empty": HEAD + "instructions:\n  - role: user\n    text: ''\n" + STEP,
    "instruction-unknown-key": HEAD + "instructions:\n  - role: user\n    text: t\n    txt: x\n" + STEP,
    # tools
    "tool-not-mapping": HEAD + "tools:\n  - t\n" + STEP,
    "tool-full": HEAD + "tools:\n  - name: t\n    description: the t\n    input_schema: {type: object}\n"
                 "    output_schema: {type: object, properties: {x: {type: string}}}\n"
                 "    annotations: {readOnlyHint: true, destructiveHint: false, idempotentHint: true,"
                 " openWorldHint: false, title: T}\n" + STEP,
    "tool-defaults": HEAD + "tools:\n  - name: t\n" + STEP,
    "tool-wrong-types": HEAD + "tools:\n  - name: t\n    input_schema: [a]\n    output_schema: 5\n"
                        "    annotations: yes\n" + STEP,
    "tool-wrong-types-no-name": HEAD + "tools:\n  - input_schema: s\n    description: 5\n" + STEP,
    "tool-annotation-hints": HEAD + "tools:\n  - name: t\n    annotations:\n      readOnlyHint: 'true'\n"
                             "      destructiveHint: 1\n      idempotentHint: null\n      openWorldHint: [x]\n" + STEP,
    "tool-annotation-hint-no-name": HEAD + "tools:\n  - annotations: {readOnlyHint: 0}\n" + STEP,
    "tool-name-wrong-type": HEAD + "tools:\n  - name: 5\n" + STEP,
    # steps
    "step-not-mapping": HEAD + "steps:\n  - s\n  - name: ok\n    tool: t\n  - [1]\n",
    "step-missing-name": HEAD + "steps:\n  - tool: t\n    bind: r\n",
    "step-name-wrong-type": HEAD + "steps:\n  - name: 5\n    tool: t\n    resources: 3\n",
    "step-unknown-keys": HEAD + "steps:\n  - name: s\n    tool: t\n    tol: x\n    zzzzzz: 1\n",
    "step-full": HEAD + "arguments:\n  - name: a\n"
                 "steps:\n  - name: first\n    tool: t\n    bind: r\n    args:\n      x: {arg: a}\n"
                 "      y: {const: [1, two]}\n    guidance: do it\n    resources: [res://a, res://b]\n"
                 "  - name: second\n    tool: t\n    args:\n      z: {step: r}\n      w: {step: r, field: items.0}\n"
                 "    template:\n      p: {step: r, field: 2}\n      q: {const: 'hello {a}'}\n"
                 "    on_fail: skip\n    when: {step: r, field: ok, equals: true}\n"
                 "    acknowledge: {unstructured-result: the tool says so}\n",
    "step-resources-wrong": HEAD + "steps:\n  - name: s\n    tool: t\n    resources: [ok://x, '', 5, [y], null]\n",
    "step-resources-not-list": HEAD + "steps:\n  - name: s\n    tool: t\n    resources: {a: b}\n",
    "step-acknowledge-not-mapping": HEAD + "steps:\n  - name: s\n    tool: t\n    acknowledge: [a]\n",
    "step-acknowledge-reasons": HEAD + "steps:\n  - name: s\n    tool: t\n    acknowledge:\n      a: good reason\n"
                                "      b: ''\n      c: '   '\n      d: 5\n      e: null\n",
    "step-acknowledge-no-name": HEAD + "steps:\n  - tool: t\n    acknowledge: 5\n",
    "step-on-fail-number": HEAD + "steps:\n  - name: s\n    tool: t\n    on_fail: 5\n",
    "step-on-fail-stop": HEAD + "steps:\n  - name: s\n    tool: t\n    on_fail: stop\n",
    "step-strings-wrong": HEAD + "steps:\n  - name: s\n    tool: 5\n    bind: [b]\n    guidance: true\n",
    "step-args-not-mapping": HEAD + "steps:\n  - name: s\n    tool: t\n    args: [a]\n    template: 5\n",
    "step-args-no-name": HEAD + "steps:\n  - tool: t\n    args: 5\n",
    "steps-numbered": HEAD + "steps:\n  - name: a\n    tool: t\n  - tool: t\n    resources: [5]\n"
                      "  - name: ''\n    tool: t\n    resources: [5]\n",
    # data sources
    "source-not-mapping": HEAD + "steps:\n  - name: s\n    tool: t\n    args:\n      a: plain\n      b: [x]\n"
                          "      c: null\n",
    "source-unknown-key-near": HEAD + "steps:\n  - name: s\n    tool: t\n    args:\n      a: {args: x}\n"
                               "      b: {fields: y, step: r}\n",
    "source-unknown-key-cutoff": HEAD + "steps:\n  - name: s\n    tool: t\n    args:\n      a: {co: x}\n"
                                 "      b: {fi: x, step: r}\n",
    "source-unknown-key-far": HEAD + "steps:\n  - name: s\n    tool: t\n    args:\n      a: {zzzzzz: x}\n"
                              "      b: {arg: x, zzzzzz: y, qqqqqq: z}\n",
    "source-kinds": HEAD + "steps:\n  - name: s\n    tool: t\n    args:\n      none: {}\n"
                    "      two: {arg: a, step: r}\n      three: {arg: a, step: r, const: 1}\n"
                    "      field-arg: {arg: a, field: x}\n      field-const: {const: 1, field: x}\n"
                    "      field-only: {field: x}\n",
    "source-ref-not-string": HEAD + "steps:\n  - name: s\n    tool: t\n    args:\n      a: {arg: 5}\n"
                             "      b: {step: [r]}\n      c: {step: null, field: x}\n",
    "source-fields": HEAD + "steps:\n  - name: s\n    tool: t\n    args:\n      int: {step: r, field: 3}\n"
                     "      str: {step: r, field: a.b}\n      bool: {step: r, field: true}\n"
                     "      list: {step: r, field: [a]}\n      float: {step: r, field: 1.5}\n"
                     "      nul: {step: r, field: null}\n      zero: {step: r, field: 0}\n",
    "source-field-ambiguous": HEAD + "steps:\n  - name: s\n    tool: t\n    args:\n      a: {step: r, field: 0o7}\n"
                              "      b: {step: r, field: 1_0}\n      c: {step: r, field: on}\n",
    "source-const-ambiguous": HEAD + "steps:\n  - name: s\n    tool: t\n    args:\n      a: {const: yes}\n"
                              "      b: {const: [on, 'off', 1_0]}\n      c: {const: {no: x, y: 0o10}}\n"
                              "      d: {const: 1:20}\n      e: {const: 012}\n      f: {const: {0o10: x, k: [{1_0: y}]}}\n",
    "source-const-values": HEAD + "steps:\n  - name: s\n    tool: t\n    args:\n      a: {const: null}\n"
                           "      b: {const: {k: [1, 2.5, text, true]}}\n      c: {const: ''}\n",
    # confirm
    "confirm-full": HEAD + "arguments:\n  - name: a\nsteps:\n  - name: s\n    tool: t\n    bind: r\n"
                    "    confirm:\n      message: Go?\n      show: [{arg: a}, {const: 3}]\n",
    "confirm-not-mapping": HEAD + "steps:\n  - name: s\n    tool: t\n    confirm: yes\n",
    "confirm-missing-message": HEAD + "steps:\n  - name: s\n    tool: t\n    confirm: {show: [{arg: a}]}\n",
    "confirm-wrong-parts": HEAD + "steps:\n  - name: s\n    tool: t\n    confirm:\n      message: 5\n"
                           "      show: [plain, {zzzzzz: 1}, {arg: a}]\n      shw: x\n",
    "confirm-show-not-list": HEAD + "steps:\n  - tool: t\n    confirm: {message: m, show: {arg: a}}\n",
    "confirm-empty-message": HEAD + "steps:\n  - name: s\n    tool: t\n    confirm: {message: ''}\n",
    # when: and its conditions
    "when-not-condition": HEAD + "steps:\n  - name: s\n    tool: t\n    when: 5\n",
    "when-empty-list": HEAD + "steps:\n  - name: s\n    tool: t\n    when: []\n",
    "when-text": HEAD + "steps:\n  - name: s\n    tool: t\n    when: always\n",
    "when-empty-mapping": HEAD + "steps:\n  - name: s\n    tool: t\n    when: {}\n",
    "when-list": HEAD + "arguments:\n  - name: a\nsteps:\n  - name: s\n    tool: t\n    bind: r\n"
                 "  - name: u\n    tool: t\n    when:\n      - {arg: a, equals: x}\n      - {step: r, field: 1, in: [1, 2]}\n"
                 "      - {step: r, exists: true}\n      - {step: r, field: a.b, not_equals: null}\n"
                 "      - {arg: a, not_in: [p, q]}\n",
    "when-two": HEAD + "steps:\n  - name: s\n    tool: t\n    when:\n      - {arg: a, equals: x}\n      - {arg: a}\n",
    "when-list-bad-items": HEAD + "steps:\n  - name: s\n    tool: t\n    when:\n      - 5\n      - [x]\n"
                           "      - {arg: a, equals: x}\n",
    "condition-not-mapping": HEAD + "steps:\n  - name: s\n    tool: t\n    when: [text]\n",
    "condition-unknown-operator": HEAD + "steps:\n  - name: s\n    tool: t\n    when: {arg: a, equls: x}\n",
    "condition-unknown-operator-cutoff": HEAD + "steps:\n  - name: s\n    tool: t\n    when: {arg: a, eq: x}\n",
    "condition-unknown-operator-far": HEAD + "steps:\n  - name: s\n    tool: t\n    when: {arg: a, zzzzzz: x}\n",
    "condition-unknown-and-known": HEAD + "steps:\n  - name: s\n    tool: t\n    when: {arg: a, equals: x, ex: y}\n",
    "condition-multiple-operators": HEAD + "steps:\n  - name: s\n    tool: t\n"
                                    "    when: {arg: a, equals: x, in: [x], exists: true}\n",
    "condition-multiple-operators-two": HEAD + "steps:\n  - name: s\n    tool: t\n    when:\n      arg: a\n"
                                        "      not_in: [x]\n      not_equals: y\n",
    "condition-missing-operator": HEAD + "steps:\n  - name: s\n    tool: t\n    when: {arg: a}\n",
    "condition-missing-operator-step": HEAD + "steps:\n  - name: s\n    tool: t\n    when: {step: r, field: x}\n",
    "condition-const-subject": HEAD + "steps:\n  - name: s\n    tool: t\n    when: {const: 1, equals: 1}\n",
    "condition-const-and-arg": HEAD + "steps:\n  - name: s\n    tool: t\n    when:\n      arg: a\n      const: 1\n",
    "condition-no-subject": HEAD + "steps:\n  - name: s\n    tool: t\n    when: {equals: 1}\n",
    "condition-two-subjects": HEAD + "steps:\n  - name: s\n    tool: t\n    when: {arg: a, step: r, equals: 1}\n",
    "condition-field-with-arg": HEAD + "steps:\n  - name: s\n    tool: t\n    when: {arg: a, field: x, equals: 1}\n",
    "condition-field-only": HEAD + "steps:\n  - name: s\n    tool: t\n    when: {field: x, equals: 1}\n",
    "condition-arg-not-string": HEAD + "steps:\n  - name: s\n    tool: t\n    when: {arg: 5, equals: 1}\n",
    "condition-step-not-string": HEAD + "steps:\n  - name: s\n    tool: t\n    when: {step: [r], equals: 1}\n",
    "condition-bad-field": HEAD + "steps:\n  - name: s\n    tool: t\n    when: {step: r, field: [x], equals: 1}\n",
    "condition-bad-field-unsound": HEAD + "steps:\n  - name: s\n    tool: t\n    when: {step: r, field: 1.5}\n",
    "condition-bad-field-bool": HEAD + "steps:\n  - name: s\n    tool: t\n    when: {step: r, field: false, exists: true}\n",
    "condition-ambiguous-operand": HEAD + "steps:\n  - name: s\n    tool: t\n    when:\n      - {arg: a, equals: no}\n"
                                   "      - {arg: a, in: [y, 0o5, '1']}\n      - {step: r, field: on, exists: true}\n",
    "condition-unsound-but-good-subject": HEAD + "steps:\n  - name: s\n    tool: t\n"
                                          "    when: {step: r, field: 2, equals: 1, zzzzzz: 2}\n",
    "condition-multiple-and-unknown": HEAD + "steps:\n  - name: s\n    tool: t\n"
                                     "    when: {arg: a, equals: 1, exists: true, qqqqqq: 2}\n",
    # top-level near misses: the errors that follow from the misspelling are replaced by one note
    "typo-arguments": "name: w\ndescription: d\nargumnts:\n  - name: a\nsteps:\n  - name: s\n    tool: t\n"
                      "    args: {x: {arg: a}}\n  - name: u\n    tool: t\n    when: {arg: a, equals: 1}\n",
    "typo-tools-one-follower": HEAD + "tols:\n  - name: t\n" + STEP,
    "typo-twice": HEAD + "argumnts:\n  - name: a\nargumentz:\n  - name: b\n"
                  "steps:\n  - name: s\n    tool: t\n    args: {x: {arg: a}, y: {arg: b}}\n",
    "typo-key-present": HEAD + "arguments:\n  - name: a\nargumnts:\n  - name: b\n"
                        "steps:\n  - name: s\n    tool: t\n    args: {x: {arg: b}}\n",
    "typo-no-followers": HEAD + "titel: x\n" + STEP,
    "typo-first-key": "nme: w\ndescription: d\n" + STEP,
    "typo-steps": HEAD + "stpes:\n  - name: s\n    tool: t\n",
}


@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_what_the_shape_builder_says_and_builds(case, snapshot):
    # tools_from_server: a step's tool need not be declared, so the cases need no tools: list of their own
    wf, diags = parse(CASES[case], FILE, tools_from_server=True)
    assert report(wf, diags) == snapshot


@pytest.mark.parametrize("case", [c for c in CASES if c.startswith("typo-")])
def test_what_follows_from_a_misspelled_key_with_tools_declared(case, snapshot):
    # without tools_from_server a step's tool must be declared: a misspelled tools: key leaves it undeclared
    wf, diags = parse(CASES[case], FILE)
    assert report(wf, diags) == snapshot


def test_undeclared_tools_are_checked_unless_they_come_from_a_server():
    text = HEAD + "steps:\n  - name: s\n    tool: t\n"
    assert [d.code for d in parse(text, FILE)[1]] == ["unknown-tool"]
    assert parse(text, FILE, tools_from_server=True)[1] == []


def test_bytes_are_decoded_as_text_is():
    text = HEAD + "title: Ünïcode\n" + STEP
    assert report(*parse(text.encode("utf-8"), FILE)) == report(*parse(text, FILE))


def test_bytes_that_do_not_decode_stop_before_the_shape():
    wf, diags = parse(b"\xff\xfename: w\n", FILE)
    assert wf is None
    assert [d.code for d in diags] and all(d.severity == "error" for d in diags)


def test_syntax_errors_stop_before_the_shape():
    wf, diags = parse("name: [w\ndescription: d\n", FILE)
    assert wf is None
    assert [d.code for d in diags] == ["yaml-syntax"]


def test_an_empty_document_has_no_model():
    assert parse("", FILE)[0] is None


def test_the_schema_reads_as_the_module_read_it():
    assert shape.SCHEMA == json.loads(shape.SCHEMA_PATH.read_text("utf-8"))


@pytest.mark.parametrize(("key", "kind", "meant"), [
    ("desc", "workflow", "description"),  # a ratio of 0.53: over the 0.5 cutoff, under difflib's default 0.6
    ("stepz", "workflow", "steps"),
    ("zzzzzz", "workflow", None),
    ("nam", "argument", "name"),
    ("txt", "instruction", "text"),
    ("shw", "confirm", "show"),
    ("tol", "step", "tool"),
    ("descriptio", "tool", "description"),
])
def test_near_miss(key, kind, meant):
    assert near_miss(key, kind) == meant


# Errors as a new user meets them (issue 19, item 6): a misspelled parameter is one error at the misspelled key, a
# misspelled top-level key hides the errors that follow only from its absence (and says so in a note), and a YAML
# syntax error carries a hint for its common causes. Each message, hint and position is pinned exactly.


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
    assert [(d.span.file.endswith("test_shape.py"), d.span.line, d.code, d.message, d.hint)
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
        f"{f}:14:11: error[unknown-tool]: step 'again' calls the tool 'get_ordr', which is not listed under tools\n"
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
