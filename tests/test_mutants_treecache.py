"""The whole-tree entry's survivors of the mutation run (issue 20): payload FORMAT 2, whose diagnostics carry indexes
into tables of files, hints and extras. A payload this code did not write decodes as a miss (an exception decode
names, which lookup takes as None): never a traceback, and never a diagnostic that was not written."""

from __future__ import annotations

import json

import pytest

from projector import treecache
from projector.cache import Cache
from projector.output import Options

# One diagnostic, its file, hint and extra each at index 0 of their tables; a row is
# [file, line, col, severity, code, message, hint, acknowledged, extra].
GOOD = {"sources": ["wf/a.yaml"], "hints": ["a hint"], "extras": [{"step": "s"}],
        "diagnostics": [[0, 3, 5, "warning", "lint", "a message", 0, None, 0]],
        "skills": [["a", "skill://a/SKILL.md", 1, 12, 1]], "files": [["a/SKILL.md", 12, "f" * 64]], "owned": ["a"]}
AT = {"sources": 0, "hints": 6, "extras": 8}  # where each table's index sits in a row


def _payload(**changes) -> bytes:
    return json.dumps({**GOOD, **changes}).encode("ascii")


def _row(table: str, index) -> list:
    row = list(GOOD["diagnostics"][0])
    row[AT[table]] = index
    return [row]


def _decoded(payload: bytes) -> list[tuple]:
    return [(d.span.file, d.span.line, d.span.col, d.severity, d.code, d.message, d.hint, d.acknowledged, d.extra)
            for d in treecache.decode(payload).diagnostics]


def _sealed_lookup(tmp_path, payload: bytes) -> treecache.Summary | None:
    """What lookup makes of ``payload`` sealed by this user in the whole-tree slot of one input."""
    store = Cache(tmp_path / "cache", Options(()))
    keys = [("wf/a.yaml", "a" * 64)]
    slot, key = treecache._where(store, keys)
    store.write(slot, key, payload)
    assert store.read(slot, key) == payload
    return treecache.lookup(store, keys)


def test_a_payload_as_encode_writes_it_gives_back_its_diagnostic(tmp_path):
    """The hand-made payload the tests below spoil is one encode could write: it decodes to its one diagnostic."""
    assert _decoded(_payload()) == [("wf/a.yaml", 3, 5, "warning", "lint", "a message", "a hint", None,
                                     {"step": "s"})]
    assert _decoded(_payload(diagnostics=_row("hints", None), hints=[])) == [
        ("wf/a.yaml", 3, 5, "warning", "lint", "a message", None, None, {"step": "s"})]
    found = _sealed_lookup(tmp_path, _payload())
    assert found is not None and found == treecache.decode(_payload())
    assert found.skills == [("a", "skill://a/SKILL.md", 1, 12, 1)] and found.owned == {"a"}


# Each index a row may not carry: out of range either side, negative, bool (an int to Python, but not as written),
# float, string, None where None means nothing (files and extras), and an index into an empty table.
BAD_INDEXES = [("sources", 1), ("sources", -1), ("sources", True), ("sources", False), ("sources", 0.0),
               ("sources", "0"), ("sources", None), ("sources", [0]),
               ("hints", 1), ("hints", -1), ("hints", True), ("hints", False), ("hints", 0.0), ("hints", "0"),
               ("hints", {"0": 0}),
               ("extras", 1), ("extras", -1), ("extras", -2), ("extras", True), ("extras", False), ("extras", 1.0),
               ("extras", "0"), ("extras", None)]


@pytest.mark.parametrize("table, index", BAD_INDEXES)
def test_an_index_that_is_not_one_of_its_table_is_refused_and_a_miss(tmp_path, table, index):
    """treecache._index: anything but an int (bool is not one) within its table is ValueError('not an index of its
    table'), and lookup takes the entry as a miss."""
    payload = _payload(diagnostics=_row(table, index))
    with pytest.raises(ValueError) as info:
        treecache.decode(payload)
    assert type(info.value) is ValueError and info.value.args == ("not an index of its table",)
    assert _sealed_lookup(tmp_path, payload) is None


@pytest.mark.parametrize("table", ["sources", "hints", "extras"])
def test_an_index_into_an_empty_table_is_refused(table):
    with pytest.raises(ValueError) as info:
        treecache.decode(_payload(**{table: []}))
    assert info.value.args == ("not an index of its table",)


# Tables that are not lists. A string answers len() and [0] as a list would: were it taken as a table, index 0 would
# read its first character ("w" as the file, "a" as the hint), a diagnostic that was never written.
BAD_TABLES = [{"sources": "wf/a.yaml"}, {"hints": "a hint"}, {"extras": "{}"}, {"sources": {"0": "wf/a.yaml"}},
              {"hints": {"0": "a hint"}}, {"extras": {"0": {}}}, {"sources": None}, {"hints": None},
              {"extras": None}, {"sources": "wf/a.yaml", "hints": "a hint"}, {"hints": "a hint", "extras": "{}"},
              {"sources": "wf/a.yaml", "extras": "{}"}, {"sources": "s", "hints": "h", "extras": "e"}]


@pytest.mark.parametrize("tables", BAD_TABLES, ids=lambda t: "-".join(f"{k}={type(v).__name__}" for k, v in t.items()))
def test_a_table_that_is_not_a_list_is_refused_and_a_miss(tmp_path, tables):
    """treecache._diagnostics: sources, hints and extras must each be a list, else TypeError('tables') before any
    row is read; lookup takes the entry as a miss."""
    payload = _payload(**tables)
    with pytest.raises(TypeError) as info:
        treecache.decode(payload)
    assert type(info.value) is TypeError and info.value.args == ("tables",)
    assert _sealed_lookup(tmp_path, payload) is None


def test_tables_are_checked_even_when_no_row_reads_them():
    """No diagnostics, so no index is read: a table that is not a list is still TypeError('tables')."""
    for tables in BAD_TABLES:
        with pytest.raises(TypeError) as info:
            treecache.decode(_payload(diagnostics=[], **tables))
        assert info.value.args == ("tables",), tables
    assert treecache.decode(_payload(diagnostics=[])).diagnostics == []
