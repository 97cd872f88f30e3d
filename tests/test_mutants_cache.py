"""The build cache's survivors of the mutation run (issue 17): behaviour the build tests cannot see, because the
cache turns every failure into a miss."""

from __future__ import annotations

import pickle

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
