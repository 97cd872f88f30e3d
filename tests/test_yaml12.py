"""YAML 1.1 and 1.2 agree on our frontmatter (projector.yaml12), checked against real parsers: PyYAML (1.1),
ruamel.yaml in its own YAML 1.2 mode, and ruamel.yaml's parser with the YAML 1.2 core schema (what the verifier and
the reference TypeScript SDK read)."""

from __future__ import annotations

import json

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from projector.sep2640 import split_frontmatter
from projector.render import dump_frontmatter
from projector import yaml12
from projector.yaml12 import load_core

TRAPS = [
    "yes",
    "no",
    "on",
    "off",
    "y",
    "n",
    "~",
    "null",
    "Null",
    "NULL",
    "true",
    "False",
    "TRUE",
    "017",
    "0o17",
    "0x1F",
    "0b101",
    "1e3",
    "1E3",
    "1.0e3",
    "1e-3",
    "1_000",
    "1_0e3",
    "0o1_7",
    ".inf",
    "-.inf",
    "+.INF",
    ".nan",
    ".NaN",
    "2026-01-01",
    "2026-01-01 10:00:00",
    "+1",
    "-0",
    "1.",
    ".5",
    "1:20",
    "190:20:30",
    "=",
    "<<",
    "0",
    "00",
    "+0o17",
    "-0x1F",
    "1,000",
    "0.1.2",
    "1__0",
    "_1",
    "1_",
    "12e",
    "e3",
]


def _ruamel_12():
    from ruamel.yaml import YAML

    return YAML(typ="safe", pure=True)  # ruamel.yaml reads YAML 1.2 by default


RUAMEL = _ruamel_12()


def readings(text: str) -> dict[str, object]:
    return {"pyyaml 1.1": yaml.safe_load(text), "ruamel 1.2": RUAMEL.load(text), "1.2 core": load_core(text)}


def assert_every_reader_agrees(value: str) -> None:
    data = {"name": value, "description": value, "metadata": {"workflow": value}}
    for fast in (True, False):
        text = dump_frontmatter(data, fast=fast)
        for reader, got in readings(text).items():
            assert got == data, (reader, fast, text)


@pytest.mark.parametrize("value", TRAPS)
def test_known_traps_read_the_same_everywhere(value):
    assert_every_reader_agrees(value)


# Characters YAML can carry in a flow scalar; the interesting ones for resolution are digits, signs, dots, letters.
NUMERIC = st.text(alphabet="0123456789+-._eEoxXbBaAfF:~nNuUlLtTrRsyY ", min_size=1, max_size=10)
TEXT = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x85\u2028\u2029\ufeff"), min_size=1, max_size=30
)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(st.one_of(NUMERIC, TEXT, st.sampled_from(TRAPS)))
@example("0o17")
@example("1e3")
def test_random_strings_read_the_same_everywhere(value):
    assert_every_reader_agrees(value)


def test_a_workflow_named_like_numbers_builds_frontmatter_that_every_reader_agrees_on(cli, tmp_path):
    wf = tmp_path / "w.yaml"
    wf.write_text(
        'name: "0o17"\ndescription: "1e3"\ntools: [{name: t, annotations: {readOnlyHint: true}}]\n'
        "steps: [{name: s, tool: t}]\n",
        "utf-8",
    )
    out = tmp_path / "out"
    assert cli("build", str(wf), "--out", str(out)).code == 0
    entry = json.loads((out / "skills.json").read_text("utf-8"))["skills"][0]["frontmatter"]
    assert entry == {
        "name": "0o17",
        "description": "1e3",
        "metadata": {"workflow": "0o17", "workflow-digest": entry["metadata"]["workflow-digest"], "tools": "t"},
    }
    assert entry["metadata"]["workflow-digest"].startswith("sha256:")
    fm_text, _ = split_frontmatter((out / "0o17" / "SKILL.md").read_text("utf-8"))
    assert fm_text.splitlines()[0] == "name: '0o17'"
    for reader, got in readings(fm_text).items():
        assert got == entry, reader


def test_the_core_reader_follows_the_core_schema_exactly():
    got = load_core(
        "a: yes\nb: 0o17\nc: 017\nd: 1e3\ne: 1_000\nf: 2026-01-01\ng: .inf\nh: ~\ni: +1\nj: 0x1F\n"
        "k: 0b11\nl: True\nm: '='\n"
    )
    assert got == {
        "a": "yes",
        "b": 15,
        "c": 17,
        "d": 1000.0,
        "e": "1_000",
        "f": "2026-01-01",
        "g": float("inf"),
        "h": None,
        "i": 1,
        "j": 31,
        "k": "0b11",
        "l": True,
        "m": "=",
    }


# ------------------------------------------- reading a plain scalar under both versions (issue 17, item 4; the loader)


def _loaded_1_1(text: str) -> object:
    """What the workflow loader (PyYAML, YAML 1.1) makes of a plain scalar; timestamps stay text there."""
    import datetime

    value = yaml.load(f"v: {text}\n", Loader=yaml.SafeLoader)["v"]
    return text if isinstance(value, (datetime.date, datetime.datetime, bytes)) else value


PLAIN_SCALAR = st.text(alphabet="0123456789+-._eEoxXbBaAfF:~nNuUlLtTrRsyYiI", min_size=1, max_size=10)


@pytest.mark.slow
@settings(max_examples=600, deadline=None)
@given(st.one_of(PLAIN_SCALAR, st.sampled_from(TRAPS)))
@example("0o17")
@example("010")
@example("-.INF")
@example(".NaN")
def test_core_value_is_what_the_core_reader_reads(text):
    try:
        expected = load_core(f"v: {text}\n")["v"]
    except Exception:  # noqa: BLE001 - not a plain scalar in this position (": ", "- ", "--- "...)
        return
    if not isinstance(expected, str) or expected == text:  # a plain scalar, read whole
        assert yaml12.same_value(yaml12.core_value(text), expected), (text, expected)


@pytest.mark.slow
@settings(max_examples=600, deadline=None)
@given(st.one_of(PLAIN_SCALAR, st.sampled_from(TRAPS)))
@example("no")
@example("1:30")
@example("y")
def test_reads_differently_exactly_when_pyyaml_and_the_core_reader_disagree(text):
    try:
        v11, v12 = _loaded_1_1(text), load_core(f"v: {text}\n")["v"]
    except Exception:  # noqa: BLE001 - not YAML in this position, or no JSON value (=, <<): refused elsewhere
        return
    if isinstance(v11, float) and v11 != v11 or isinstance(v12, float) and v12 != v12:
        return
    differs, got = yaml12.reads_differently(text, v11)
    assert differs is (not yaml12.same_value(v11, v12)), (text, v11, v12)
    assert yaml12.same_value(got, v12 if differs else v11)


def test_same_value_is_json_equality_with_nan_equal_to_itself():
    same = yaml12.same_value
    assert (
        same(1, 1.0) and same(True, True) and same(None, None) and same("a", "a") and same(float("nan"), float("nan"))
    )
    assert not same(True, 1) and not same(1, True) and not same(False, 0) and not same("1", 1)
    assert not same(None, "") and not same(8, 10) and not same(None, False) and not same("no", False)


def test_a_scalar_that_cannot_be_typed_is_never_read_differently():
    # the fast path: a first character that no resolver of either version looks at
    for text in ("hello", "s123", "Zero", "_1", "@x", "%"):
        assert text[:1] not in yaml12.MAYBE_TYPED
        assert yaml12.reads_differently(text, text) == (False, text)
    assert yaml12.core_value("9" * 5000) == "9" * 5000  # over the digit limit: left as text (bad-number elsewhere)


# ---------------------------------------------------------------------- fast paths


class _Str(str):
    pass


# YAML 1.2 readings: remembered, and for a string the same verdict as same_value's.


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.sampled_from(
            [
                "yes",
                "No",
                "0o17",
                "0x1F",
                "1e3",
                "1_000",
                "~",
                "null",
                "Null",
                "",
                "true",
                "TRUE",
                ".inf",
                "-.Inf",
                ".nan",
                "+12",
                "0b1",
                "9" * 5000,
                "n",
                "o",
            ]
        ),
        st.text(st.sampled_from("0123456789+-.eExXoOnNuUlLtTrRfFaAsS~_"), max_size=6),
    ),
    st.sampled_from(["text", "str-subclass", "bool", "int", "none"]),
    st.booleans(),
)
def test_reads_differently_agrees_with_core_value_and_same_value(text, kind, subclass_text):
    value = {"text": text, "str-subclass": _Str(text), "bool": True, "int": 12, "none": None}[kind]
    text = _Str(text) if subclass_text else text
    for _ in range(2):  # the second time from the cache
        differs, got = yaml12.reads_differently(text, value)
        if text[:1] not in yaml12.MAYBE_TYPED and isinstance(value, str):
            assert (differs, got) == (False, value)
            continue
        core = yaml12.core_value(text)
        assert differs == (not yaml12.same_value(value, core))
        assert repr(got) == repr(core if differs else value) and type(got) is type(core if differs else value)
