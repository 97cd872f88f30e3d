"""The lazy names of projector.load and projector.sep2640 (a warm check imports neither the loader nor the entry
checks), pinned where the mutation run found them loose (scripts/mutation load and sep2640, issue 20)."""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize("module", ["projector.load", "projector.sep2640"])
def test_an_unknown_name_is_the_usual_attribute_error(module):
    mod = importlib.import_module(module)
    with pytest.raises(AttributeError) as caught:
        mod.no_such_name  # noqa: B018 - the look-up is the test
    assert str(caught.value) == f"module {module!r} has no attribute 'no_such_name'"
    assert not hasattr(mod, "no_such_name")


def test_the_loader_re_exports_the_shape_builders_parse(monkeypatch):
    from projector import load, shape

    monkeypatch.delitem(vars(load), "parse", raising=False)
    assert load.parse is shape.parse


def test_every_wire_name_is_its_owners_object_and_listed(monkeypatch):
    """Each name is looked up in its owner on first use, then kept: the test forgets every name first, since an
    earlier import in this process has looked them all up already."""
    import projector.sep2640 as wire

    for name in wire.__all__:
        monkeypatch.delitem(vars(wire), name, raising=False)
    for name in wire.__all__:
        owner = importlib.import_module(f"projector.sep2640.{wire._OWNER[name]}")
        assert getattr(wire, name) is getattr(owner, name), name
        assert vars(wire)[name] is getattr(owner, name), name
        assert getattr(wire, name) is getattr(owner, name), name
    assert set(wire._OWNER) == set(wire.__all__)
    assert set(wire.__all__) <= set(dir(wire))
    assert dir(wire) == sorted(dir(wire))
