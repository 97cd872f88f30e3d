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
import json

import pytest

from projector import shape
from projector.errors import Span
from projector.shape import _Builder, near_miss, parse
from projector.positioned import Reader

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
    assert shape._schema() == json.loads(shape.SCHEMA_PATH.read_text("utf-8")) == shape.SCHEMA


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


def test_the_builder_alone_reports_into_the_list_it_was_given():
    diags: list = []
    doc = Reader("name: 5\n", FILE).read()
    wf = _Builder(FILE, diags).workflow(doc)
    assert wf is not None and wf.source == FILE
    assert [(d.code, d.span.line, d.span.col) for d in diags] == [
        ("missing-key", 1, 1), ("missing-key", 1, 1), ("wrong-type", 1, 7)]

