"""Core behaviour pinned where the mutation run found it loose (scripts/mutation, issue 20): each test names the
target whose survivors it kills. They check what a user reads: the exact words, codes and refusals."""

from __future__ import annotations

import json
import os
import stat
from types import MappingProxyType

import pytest

from projector import bounded, conditions, gates
from projector.errors import Span
from projector.load import parse
from projector.model import Condition, Confirm, FromArg, FromStep, Step, Tool, Workflow

# ------------------------------------------------------------------------------------------------ conditions


@pytest.mark.parametrize("subject, op, value, needs", [
    (FromArg("a"), "equals", 1, "`1`"),
    (FromStep("r", "f"), "equals", "x", '`"x"`'),
    (FromArg("a"), "not_equals", None, "anything but `null`"),
    (FromStep("r"), "not_equals", [1], "anything but `[1]`"),
    (FromArg("a"), "in", [1, "b"], 'one of `1`, `"b"`'),
    (FromStep("r"), "in", [True], "one of `true`"),
    (FromArg("a"), "not_in", [{"k": 1}], 'none of `{"k": 1}`'),
    (FromStep("r", "f"), "not_in", [], "none of nothing"),
    (FromArg("a"), "exists", True, "it"),
    (FromArg("a"), "exists", False, "it to be absent"),
    (FromStep("r"), "exists", True, "it"),
    (FromStep("r", "f"), "exists", False, "it to be absent"),
])
def test_what_the_step_needs_for_every_operator_and_subject(subject, op, value, needs):
    """The runner's "the step needs ..." words (:func:`conditions.requirement`), for an argument and for a result
    alike, of every operator: ``exists`` says ``it`` or ``it to be absent`` whatever the subject."""
    assert conditions.requirement(Condition(subject, op, value)) == needs


@pytest.mark.parametrize("subject, op, value, args, results, line", [
    (FromArg("reason"), "exists", False, {"reason": "late"}, {},
     'the argument `reason` is `"late"`, the step needs it to be absent'),
    (FromStep("lookup"), "exists", True, {}, {}, "`lookup` is missing, the step needs it"),
    (FromStep("lookup", "order.id"), "exists", True, {}, {"lookup": {"order": {}}},
     "`lookup.order.id` is missing, the step needs it"),
])
def test_the_failure_line_of_an_exists_condition(subject, op, value, args, results, line):
    found = conditions.first_failure([Condition(subject, op, value)], args, results)
    assert found is not None
    assert conditions.failure_text(found) == line


def test_a_fixed_wording_is_the_same_for_every_operand_and_subject():
    words = conditions.Words("n {operand}", "p {subject}", "s {subject}")
    say = conditions._worded(words)
    assert [say(operand, of_argument) for operand in (1, [2], None) for of_argument in (True, False)] == [words] * 6


@pytest.mark.parametrize("op, value, text", [
    ("equals", {"b": 1, "a": "é"}, '<{"a": "é", "b": 1}>'),
    ("not_equals", "x", '<"x">'),
    ("in", [1, None], "<1>, <null>"),
    ("not_in", [], "nothing"),
    ("exists", True, ""),
    ("exists", False, ""),
])
def test_the_operand_as_a_rendering_writes_it(op, value, text):
    """A value by ``show``; a list as its items (``nothing`` when empty); a boolean not at all: the words of
    ``exists`` say it, so the operand is the empty text."""
    show = lambda v: f"<{conditions.literal(v)}>"  # noqa: E731
    assert conditions.operand_text(Condition(FromArg("a"), op, value), show) == text


def test_an_operator_of_an_unknown_kind_of_operand_is_not_rendered_silently(monkeypatch):
    """A new kind of operand added to the table without a rendering fails loudly, naming the kind, rather than
    render as nothing."""
    odd = conditions.Operator("bigger", "range", conditions._equals, conditions._never,  # type: ignore[arg-type]
                              conditions._worded(conditions.Words("{operand}", "{subject}", "{subject}")))
    monkeypatch.setattr(conditions, "OPERATORS", MappingProxyType({**conditions.OPERATORS, "bigger": odd}))
    with pytest.raises(AssertionError, match="'range'"):
        conditions.operand_text(Condition(FromArg("a"), "bigger", [1, 2]), conditions.literal)


# ----------------------------------------------------------------------------------------------------- gates

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
        {"file": "c.yaml", "line": 10, "col": 7, "severity": "warning", "code": "confirm-on-read-only",
         "message": "step 1 'fetch_order' asks a person to confirm, but it calls the read-only tool 'get_order': "
                    "nothing needs their yes", "hint": _NO_YES, "extra": {"step": "fetch_order"}},
        {"file": "c.yaml", "line": 13, "col": 14, "severity": "warning", "code": "confirm-on-read-only",
         "message": "step 2 'read_docs' asks a person to confirm, but it only reads resources: nothing needs their "
                    "yes", "hint": _NO_YES, "extra": {"step": "read_docs"}},
    ]
    assert [(d["extra"]["step"], d["code"]) for d in found[2:]] == [
        ("pay_if", "gate-on-side-effect"), ("pay_approved", "guidance-on-side-effect")]


def test_a_confirmation_without_a_position_is_reported_at_its_step():
    read = Tool("read", annotations={"readOnlyHint": True})
    step = Step("s", tool="read", confirm=Confirm("Sure?"), span=Span("w.yaml", 4, 5))
    [d] = gates.check(Workflow("w", "d", tools=(read,), steps=(step,))).diagnostics
    assert (d.code, d.span, d.message) == ("confirm-on-read-only", Span("w.yaml", 4, 5),
                                           "step 1 's' asks a person to confirm, but it calls the read-only tool "
                                           "'read': nothing needs their yes")
    placed = Step("s", tool="read", confirm=Confirm("Sure?", span=Span("w.yaml", 6, 7)), span=Span("w.yaml", 4, 5))
    [d] = gates.check(Workflow("w", "d", tools=(read,), steps=(placed,))).diagnostics
    assert d.span == Span("w.yaml", 6, 7)


def test_a_confirmation_on_a_step_whose_tool_is_not_declared_is_not_read_only():
    """Nothing is known of a tool the workflow does not declare (the loader reports it), so it is not called
    read-only."""
    step = Step("s", tool="elsewhere", confirm=Confirm("Sure?"))
    assert gates.check(Workflow("w", "d", steps=(step,))).diagnostics == []


@pytest.mark.parametrize("adds, text, after, bind", [
    ([("order", "order")], "order, first result, order", 0, "order"),  # each name at its first place only
    ([("order", "order"), ("first", "first")], "order, first, order", 0, "order"),
    ([("fetch-order", "a"), ("fetch_order", "b")], "the fetch order", 0, "a"),  # the least bind, whatever the order
    ([("fetch_order", "b"), ("fetch-order", "a")], "the fetch order", 0, "a"),
    ([("Xref", "x")], "see the xref", 0, "x"),  # a name's letters are all its own
    ([("order_X", "o")], "the order x", 0, "o"),
    ([("$order", "o")], "the order", 0, None),  # a name that starts or ends with other punctuation: never looked for
    ([("order$", "o")], "the order", 0, None),
    ([("$order$", "o")], "the order", 0, None),
])
def test_result_names(adds, text, after, bind):
    names = gates.ResultNames()
    for name, b in adds:
        names.add(name, b)
    assert names.named(text, after) == bind


# --------------------------------------------------------------------------------------------------- bounded

@pytest.mark.parametrize("text, reason", [
    ('{"a": 1, "b": 2, "b": 3}', 'the key "b" appears twice in one object'),  # the key that repeats, not the first
    ('{"b": 1, "a": 2, "a": 3, "b": 4}', 'the key "a" appears twice in one object'),  # the first one repeated
    ('{"\\u00e9": 1, "é": 2}', 'the key "\\u00e9" appears twice in one object'),  # escape and letter: one key
    ('{"a\u2028": 1, "a\u2028": 2}', 'the key "a\\u2028" appears twice in one object'),
])
def test_the_key_named_twice_is_quoted_as_ascii_json(text, reason):
    with pytest.raises(bounded.BadJSON) as info:
        bounded.loads(text)
    assert str(info.value) == reason


def test_any_other_error_of_the_json_reader_is_bad_json_with_its_text(monkeypatch):
    """json's own limits (none known to reach here: the integer digits are refused first) still come back as
    :class:`BadJSON`, with the reader's words."""

    def refuse(*_args, **_kw):
        raise ValueError("a limit of the reader")

    monkeypatch.setattr(bounded.json, "loads", refuse)
    with pytest.raises(bounded.BadJSON) as info:
        bounded.loads("[]")
    said = "not JSON: a limit of the reader"
    assert (str(info.value), info.value.args) == (said, (said,))


def test_bad_json_carries_its_reason_as_its_argument():
    """As any exception: its args (and so its repr in a traceback) hold the reason."""
    e = bounded.BadJSON("bad", 3, 4)
    assert (e.args, repr(e)) == (("bad",), "BadJSON('bad')")


@pytest.mark.parametrize("mode, kind", [
    (stat.S_IFDIR | 0o755, "a folder"), (stat.S_IFIFO, "a FIFO"), (stat.S_IFCHR, "a character device"),
    (stat.S_IFBLK, "a block device"), (stat.S_IFSOCK, "a socket"), (stat.S_IFLNK | 0o777, "a symbolic link"),
    (0, "not a regular file"),  # no file type at all (as a platform's own kinds, a door or a whiteout, read here)
    (0o170000, "not a regular file"),
])
def test_kind_of_every_file_type(mode, kind):
    assert bounded.kind_of(mode) == kind


@pytest.mark.parametrize("missing", [("O_NONBLOCK",), ("O_CLOEXEC",), ("O_NONBLOCK", "O_CLOEXEC", "O_NOFOLLOW")])
def test_a_file_is_read_where_the_platform_lacks_an_open_flag(tmp_path, monkeypatch, missing):
    """Windows has no O_NONBLOCK, O_CLOEXEC or O_NOFOLLOW: a file is read all the same, the flag left out."""
    p = tmp_path / "f.json"
    p.write_bytes(b'{"a": 1}')
    flags = []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda path, fl, *a, **kw: flags.append(fl) or real_open(path, fl, *a, **kw))
    wanted = os.O_RDONLY
    for name in ("O_NONBLOCK", "O_CLOEXEC", "O_NOFOLLOW"):
        if name in missing:
            monkeypatch.delattr(os, name)
        else:
            wanted |= getattr(os, name)
    assert json.loads(bounded.read_regular(p, 100)) == {"a": 1}
    assert flags == [wanted]


def test_an_os_error_is_said_in_the_systems_words(tmp_path, monkeypatch):
    """An error of the system is its own words (``strerror``), without the errno and path ``str()`` adds; an
    ``OSError`` without them is its text. Both on opening and on reading."""
    with pytest.raises(bounded.Unreadable) as info:
        bounded.read_regular(tmp_path / "nope", 10)
    assert str(info.value) == "No such file or directory"
    p = tmp_path / "f"
    p.write_bytes(b"x")
    real_open = os.open

    def refuse_open(*_a, **_kw):
        raise OSError("the descriptor table is full")

    monkeypatch.setattr(os, "open", refuse_open)
    with pytest.raises(bounded.Unreadable) as info:
        bounded.read_regular(p, 10)
    assert str(info.value) == "the descriptor table is full"
    monkeypatch.setattr(os, "open", real_open)
    for error, said in ((OSError(5, "Input/output error"), "Input/output error"),
                        (OSError("the disk went away"), "the disk went away")):
        def refuse_read(_fd, _n, error=error):
            raise error

        monkeypatch.setattr(os, "read", refuse_read)
        with pytest.raises(bounded.Unreadable) as info:
            bounded.read_regular(p, 10)
        assert str(info.value) == said


def test_a_file_read_a_byte_at_a_time_is_still_bounded(tmp_path, monkeypatch):
    """A read may return fewer bytes than asked (a slow file system): the file is read on until it ends or holds
    one byte past the limit, so a file that grew after its size was taken is still refused."""
    p = tmp_path / "f"
    p.write_bytes(b"0123456789")
    real_read = os.read
    asked: list[int] = []
    monkeypatch.setattr(os, "read", lambda fd, n: asked.append(n) or real_read(fd, min(n, 1)))
    assert bounded.read_regular(p, 10) == b"0123456789"
    p.write_bytes(b"0123456789A")
    real_fstat = os.fstat

    class Small:  # the size taken before the file grew
        def __init__(self, st):
            self.st_mode, self.st_size = st.st_mode, 10

    monkeypatch.setattr(os, "fstat", lambda fd: Small(real_fstat(fd)))
    asked.clear()
    with pytest.raises(bounded.Unreadable) as info:
        bounded.read_regular(p, 10)
    assert str(info.value) == "it grew past the limit of 10 bytes while being read"
    assert asked == list(range(11, 0, -1))
