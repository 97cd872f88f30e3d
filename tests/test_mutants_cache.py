"""The build cache's survivors of the mutation run (issue 17): behaviour the build tests cannot see, because the
cache turns every failure into a miss."""

from __future__ import annotations

import pickle

import pytest

from projector import cachefmt
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
