"""The workflow model (projector/model.py): the canonical form that digests and equality read."""

from __future__ import annotations

import dataclasses
import enum
import math
from typing import Any

import pytest

from conftest import ROOT
from projector import model
from projector.model import Argument, Const, Step, Workflow


class _Str(str):
    pass


class _Int(enum.IntEnum):
    ONE = 1


# The canonical form: the field table per class gives what dataclasses.fields gives.


def _canonical_by_fields(value: Any) -> Any:
    """model.canonical as it was written before the per-class table (the reference)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        node: dict[str, Any] = {"kind": type(value).__name__}
        for f in dataclasses.fields(value):
            if f.compare and not (f.metadata.get("additive") and getattr(value, f.name) == f.default):
                node[f.name] = _canonical_by_fields(getattr(value, f.name))
        return node
    if isinstance(value, (tuple, list)):
        return [_canonical_by_fields(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _canonical_by_fields(v) for k, v in value.items()}
    return value


@dataclasses.dataclass(frozen=True)
class _Sub(Const):
    extra: int = 0


@pytest.mark.parametrize(
    "value",
    [
        Workflow(
            "w",
            "d",
            arguments=(Argument("a", ask=True), Argument("b")),
            steps=(Step("s", tool="t", args=(("x", Const({1: [_Str("s"), 1.5, math.inf, (2, 3)]})),)),),
        ),
        [Const(_Sub(1, extra=2)), Const, {"k": (Argument, _Int.ONE, True, None)}],
        _Str("s"),
    ],
    ids=["workflow", "subclasses-and-classes", "str-subclass"],
)
def test_canonical_is_the_fields_reading(value):
    got, expected = model.canonical(value), _canonical_by_fields(value)
    assert repr(got) == repr(expected)
    assert [type(x) for x in _flat(got)] == [type(x) for x in _flat(expected)]


def test_canonical_of_every_example_is_the_fields_reading():
    from projector.load import load_file

    for path in sorted((ROOT / "workflows").glob("*.yaml")):
        wf = load_file(path)
        assert model.canonical(wf) == _canonical_by_fields(wf), path.name


def _flat(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [x for k, v in value.items() for x in (k, *_flat(v))]
    if isinstance(value, list):
        return [x for v in value for x in _flat(v)]
    return [value]
