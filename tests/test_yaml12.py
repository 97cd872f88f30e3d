"""YAML 1.1 and 1.2 agree on our frontmatter (projector.yaml12), checked against real parsers: PyYAML (1.1),
ruamel.yaml in its own YAML 1.2 mode, and ruamel.yaml's parser with the YAML 1.2 core schema (what the verifier and
the reference TypeScript SDK read)."""

from __future__ import annotations

import json

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from projector.bundle import split_frontmatter
from projector.render import dump_frontmatter
from projector.yaml12 import load_core

TRAPS = ["yes", "no", "on", "off", "y", "n", "~", "null", "Null", "NULL", "true", "False", "TRUE", "017", "0o17",
         "0x1F", "0b101", "1e3", "1E3", "1.0e3", "1e-3", "1_000", "1_0e3", "0o1_7", ".inf", "-.inf", "+.INF", ".nan",
         ".NaN", "2026-01-01", "2026-01-01 10:00:00", "+1", "-0", "1.", ".5", "1:20", "190:20:30", "=", "<<",
         "0", "00", "+0o17", "-0x1F", "1,000", "0.1.2", "1__0", "_1", "1_", "12e", "e3"]


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
TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x85\u2028\u2029\ufeff"),
               min_size=1, max_size=30)


@settings(max_examples=400, deadline=None)
@given(st.one_of(NUMERIC, TEXT, st.sampled_from(TRAPS)))
@example("0o17")
@example("1e3")
def test_random_strings_read_the_same_everywhere(value):
    assert_every_reader_agrees(value)


def test_a_workflow_named_like_numbers_builds_frontmatter_that_every_reader_agrees_on(cli, tmp_path):
    wf = tmp_path / "w.yaml"
    wf.write_text('name: "0o17"\ndescription: "1e3"\ntools: [{name: t, annotations: {readOnlyHint: true}}]\n'
                  "steps: [{name: s, tool: t}]\n", "utf-8")
    out = tmp_path / "out"
    assert cli("build", str(wf), "--out", str(out)).code == 0
    entry = json.loads((out / "skills.json").read_text("utf-8"))["skills"][0]["frontmatter"]
    assert entry == {"name": "0o17", "description": "1e3", "metadata": {"workflow": "0o17"}}
    fm_text, _ = split_frontmatter((out / "0o17" / "SKILL.md").read_text("utf-8"))
    assert fm_text.splitlines()[0] == "name: '0o17'"
    for reader, got in readings(fm_text).items():
        assert got == entry, reader


def test_the_core_reader_follows_the_core_schema_exactly():
    got = load_core("a: yes\nb: 0o17\nc: 017\nd: 1e3\ne: 1_000\nf: 2026-01-01\ng: .inf\nh: ~\ni: +1\nj: 0x1F\n"
                    "k: 0b11\nl: True\nm: '='\n")
    assert got == {"a": "yes", "b": 15, "c": 17, "d": 1000.0, "e": "1_000", "f": "2026-01-01", "g": float("inf"),
                   "h": None, "i": 1, "j": 31, "k": "0b11", "l": True, "m": "="}
