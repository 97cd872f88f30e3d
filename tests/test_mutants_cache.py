"""The build cache's survivors of the mutation run (issue 17): behaviour the build tests cannot see, because the
cache turns every failure into a miss."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import re

import pytest

from projector import cachefmt, treecache
from projector.cache import Cache
from projector.output import Options


def test_a_cache_pickled_while_its_writer_threads_run_goes_without_them(tmp_path):
    """Within writes_in_background() the cache holds a thread pool, which cannot be pickled: the pickled copy has
    no pool (it writes entries itself), and pickling does not fail."""
    c = Cache(tmp_path / "cache", Options(()))
    with c.writes_in_background():
        assert c._pool is not None
        copy = pickle.loads(pickle.dumps(c))
        assert copy._pool is None and c._pool is not None
        assert "XX_poolXX" not in vars(copy) and "_POOL" not in vars(copy)
    assert sorted(vars(copy)) == sorted(vars(c))
    assert copy._fd is None and copy._closer is None and copy._secret == c._secret


GOOD_DIAG = (["wf/a.yaml", 3, 5], "error", "schema", "a message", "a hint", None, {"k": 1})


@pytest.mark.parametrize("at, bad", [(0, ["wf/a.yaml", "3", 5]), (0, [b"wf/a.yaml", 3, 5]), (0, ["wf/a.yaml", 3, True]),
                                     (1, None), (2, 7), (3, b"a message"), (4, 1), (5, ["ack"]), (6, [["k", 1]])])
def test_a_diagnostic_field_of_the_wrong_type_is_refused_with_its_message(at, bad):
    """cachefmt.diagnostic refuses what the cache never writes, with one TypeError and its message."""
    d = cachefmt.diagnostic(*GOOD_DIAG)
    assert (d.span.file, d.span.line, d.span.col, d.severity, d.code, d.message, d.hint, d.acknowledged, d.extra) == (
        "wf/a.yaml", 3, 5, "error", "schema", "a message", "a hint", None, {"k": 1})
    fields = list(GOOD_DIAG)
    fields[at] = bad
    with pytest.raises(TypeError) as info:
        cachefmt.diagnostic(*fields)
    assert info.value.args == ("not a diagnostic as the cache writes it",)


def test_the_whole_tree_entry_has_one_slot_and_key_per_list_of_inputs(tmp_path):
    """treecache._where: the slot is ``tree-`` and 40 hex digits of the SHA-256 of the options and the display paths
    (a name that is not UTF-8 taken with its surrogate escapes), the key the SHA-256 of the format and the files'
    keys, each NUL-separated."""
    store = Cache(tmp_path / "cache", Options(("team",)))
    keys = [("wf/a.yaml", "a" * 64), (os.fsdecode(b"wf/\xff.yaml"), "b" * 64), ("wf/\ud800.yaml", "c" * 64)]
    names = "wf/a.yaml\0wf/\udcff.yaml\0wf/\ud800.yaml"
    slot = hashlib.sha256(f"{store.options}\0tree\0{names}".encode("utf-8", "surrogatepass")).hexdigest()[:40]
    key = hashlib.sha256(b"tree-2\0" + b"a" * 64 + b"\0" + b"b" * 64 + b"\0" + b"c" * 64).hexdigest()
    assert treecache.FORMAT == 2
    where = treecache._where(store, keys)
    assert where == (f"tree-{slot}", key)
    assert re.fullmatch(r"tree-[0-9a-f]{40}", where[0]) and re.fullmatch(r"[0-9a-f]{64}", where[1])
    assert treecache._where(store, keys[:1]) == (
        "tree-" + hashlib.sha256(f"{store.options}\0tree\0wf/a.yaml".encode()).hexdigest()[:40],
        hashlib.sha256(b"tree-2\0" + b"a" * 64).hexdigest())


def test_the_whole_tree_payload_is_compact_json():
    """treecache.encode writes JSON without spaces (``,`` and ``:`` only), ASCII: these exact bytes."""
    d = cachefmt.diagnostic(["wf/a.yaml", 3, 5], "warning", "lint", "naïve", None, None, {})
    e = cachefmt.diagnostic(["wf/b.yaml", 1, 2], "note", "lint", "m", "a hint", "why", {"step": "s"})
    f = cachefmt.diagnostic(["wf/a.yaml", 4, 1], "error", "x", "m2", "a hint", None, {})
    summary = treecache.Summary([d, e, f], [("a", "skill://a/SKILL.md", 1, 12, 0)], {"a/SKILL.md": (12, "f" * 64)},
                                {"b", "a"})
    assert treecache.encode(summary) == (
        b'{"sources":["wf/a.yaml","wf/b.yaml"],"hints":["a hint"],"extras":[{},{"step":"s"}],'
        b'"diagnostics":[[0,3,5,"warning","lint","na\\u00efve",null,null,0],[1,1,2,"note","lint","m",0,"why",1],'
        b'[0,4,1,"error","x","m2",0,null,0]],'
        b'"skills":[["a","skill://a/SKILL.md",1,12,0]],"files":[["a/SKILL.md",12,"' + b"f" * 64 + b'"]],'
        b'"owned":["a","b"]}')
    assert treecache.decode(treecache.encode(summary)) == summary


@pytest.mark.parametrize("owned", [[1], ["a", None], [["a"]]])
def test_a_whole_tree_payload_owning_a_folder_that_is_not_a_name_is_refused(owned):
    """treecache.decode refuses an ``owned`` list holding anything but strings: TypeError('owned'), which
    lookup takes as a miss."""
    payload = json.dumps({"sources": [], "hints": [], "extras": [], "diagnostics": [], "skills": [], "files": [],
                          "owned": owned}).encode()
    with pytest.raises(TypeError) as info:
        treecache.decode(payload)
    assert info.value.args == ("owned",)
    assert treecache.decode(payload.replace(json.dumps(owned).encode(), b'["a"]')) == treecache.Summary(
        [], [], {}, {"a"})
