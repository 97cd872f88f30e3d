"""The whole-tree cache entry (projector/treecache.py): a warm ``check`` answered by it says, to the byte, what a
check without any cache says, whatever was done to the tree; it is used only when this user's secret sealed it; and
the diagnostics it reads back are the ones the build made (projector/cachefmt.py's ``diagnostic``)."""

from __future__ import annotations

import hashlib
import json
import importlib.util
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import ROOT
from projector import cachefmt, output, treecache
from projector.cache import CACHE_DIR
from projector.errors import Diagnostic, Span

_spec = importlib.util.spec_from_file_location("bench_workgen", ROOT / "bench" / "workgen.py")
workgen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(workgen)  # type: ignore[union-attr]


@pytest.fixture(autouse=True)
def _small_sets_too(monkeypatch):
    """The tree entry is kept from output.TREE_FROM files on; these tests run on fewer (see the last test)."""
    monkeypatch.setattr(output, "TREE_FROM", 1)


def _workflows(folder: Path) -> None:
    """Twelve synthetic workflows (warnings, acknowledged ones, notes), the acknowledgements quoting control
    characters, a bidirectional override and non-ASCII text, which every diagnostic escapes when it is made."""
    folder.mkdir(parents=True)
    for name, data in workgen.generate(12, seed=23).items():
        data = data.replace(b"The tool enforces this itself:", b"Enforced \\u001b[31m\\u202e by the tool, \xc3\xa9t\xc3\xa9:")
        (folder / name).write_bytes(data)


def trees(folder: Path) -> list[Path]:
    return sorted((folder / CACHE_DIR / "entries").glob("tree-*"))


def _mutations(out: Path) -> dict[str, Callable[[], object]]:
    def skill(n: int = 0) -> Path:
        return sorted(p for p in out.iterdir() if p.is_dir())[n] / "SKILL.md"

    def flip() -> None:  # same size, one byte changed
        data = bytearray(skill().read_bytes())
        data[-2] ^= 1
        skill().write_bytes(bytes(data))

    def link() -> None:  # the same bytes, but through a link: compare never reads it
        real = out.parent / "real-skill.md"
        real.write_bytes(skill().read_bytes())
        skill().unlink()
        skill().symlink_to(real)

    def fifo() -> None:
        skill(1).unlink()
        os.mkfifo(skill(1))

    return {
        "nothing": lambda: None,
        "a byte flipped": flip,
        "a line added": lambda: skill().write_bytes(skill().read_bytes() + b"more\n"),
        "truncated": lambda: skill().write_bytes(skill().read_bytes()[:-1]),
        "a file removed": lambda: (sorted(out.glob("*/references/tools.md"))[0]).unlink(),
        "a bundle removed": lambda: shutil.rmtree(skill().parent),
        "an extra file in a bundle": lambda: (skill().parent / "extra.md").write_text("x"),
        "a user file beside the bundles": lambda: (out / "NOTES.md").write_text("mine"),
        "a user folder": lambda: (out / "mine" / "a").mkdir(parents=True),
        "skills.json reformatted": lambda: (out / "skills.json").write_bytes(
            (out / "skills.json").read_bytes().replace(b"\n", b"\n ")),
        "skills.json removed": lambda: (out / "skills.json").unlink(),
        "a file replaced by a link": link,
        "a file replaced by a FIFO": fifo,
        "an empty folder where a file was": lambda: (skill().unlink(), skill().mkdir()),
    }


MUTATIONS = sorted(_mutations(Path("/nonexistent")))


@pytest.mark.parametrize("fmt", ["text", "json", "github"])
@pytest.mark.parametrize("mutation", MUTATIONS)
def test_a_check_answered_by_the_tree_entry_says_what_a_check_without_cache_says(cli, tmp_path, monkeypatch,
                                                                                  mutation, fmt):
    wf, out = tmp_path / "wf", tmp_path / "out"
    _workflows(wf)
    assert cli("build", str(wf), "--out", str(out)).code == 0
    assert len(trees(wf)) == 1
    _mutations(out)[mutation]()
    for strict in ([], ["--strict"]):
        args = ["check", str(wf), "--out", str(out), "--format", fmt, *strict]
        plain = cli(*args, "--no-cache")
        used = []
        real = treecache.lookup
        with monkeypatch.context() as m:
            m.setattr(treecache, "lookup", lambda *a: used.append(real(*a)) or used[-1])
            if mutation == "nothing":  # the tree entry alone answers: nothing is compiled, no per-file entry read
                m.setattr(output.Inputs, "compile", lambda *a: pytest.fail("compiled"))
            cached = cli(*args)
        assert used and used[0] is not None, "the tree entry was not used"
        said = [text.replace(" --no-cache", "") for text in (plain.out, plain.err)]  # check echoes its options
        assert [cached.code, cached.out, cached.err] == [plain.code, *said], (mutation, strict)
        assert (plain.code == 0) == (mutation in ("nothing", "a user file beside the bundles", "a user folder")
                                     and not strict)
    if fmt == "text":
        assert "\\x1b[31m" in plain.err and "\\u202e" in plain.err and "été" in plain.err


def test_a_tree_entry_this_user_did_not_seal_is_never_used(cli, tmp_path, monkeypatch):
    """A tree entry whose seal does not verify (planted, or sealed with another secret) is a miss: even one that
    says exactly what the stale tree now holds."""
    wf, out = tmp_path / "wf", tmp_path / "out"
    _workflows(wf)
    assert cli("build", str(wf), "--out", str(out)).code == 0
    (slot,) = trees(wf)
    skill = sorted(out.glob("*/SKILL.md"))[0]
    skill.write_bytes(skill.read_bytes() + b"tampered\n")
    key, mac, payload = slot.read_bytes().split(b"\n", 2)
    summary = treecache.decode(payload)
    rel = skill.relative_to(out).as_posix()
    files = {**summary.files, rel: (skill.stat().st_size, hashlib.sha256(skill.read_bytes()).hexdigest())}
    forged = treecache.encode(treecache.Summary(summary.diagnostics, summary.skills, files, summary.owned))
    for seal in (mac, b"0" * 64, mac[:-1] + (b"0" if mac[-1:] != b"0" else b"1")):
        slot.write_bytes(b"%s\n%s\n%s" % (key, seal, forged))
        run = cli("check", str(wf), "--out", str(out))
        assert run.code == 1 and f"stale: {out.as_posix()}/{rel}" in run.out
    monkeypatch.setattr(treecache, "lookup", lambda *a: pytest.fail("looked up"))
    assert cli("check", str(wf), "--out", str(out), "--no-cache").code == 1  # no cache: no tree entry either


def test_the_tree_entry_follows_the_inputs(cli, tmp_path):
    """An edited, added or removed workflow gives another key: the entry of the old inputs answers nothing."""
    wf, out = tmp_path / "wf", tmp_path / "out"
    _workflows(wf)
    assert cli("build", str(wf), "--out", str(out)).code == 0
    first = sorted(wf.glob("*.yaml"))[0]
    first.write_bytes(first.read_bytes().replace(b'description: "', b'description: "Edited: ', 1))
    run = cli("check", str(wf), "--out", str(out))
    assert run.code == 1 and "is out of date" in run.out
    assert cli("build", str(wf), "--out", str(out)).code == 0
    assert cli("check", str(wf), "--out", str(out)).code == 0
    first.unlink()
    assert cli("check", str(wf), "--out", str(out)).code == 1
    assert cli("check", str(first), "--out", str(tmp_path / "other")).code == 1  # its own slot
    assert len(trees(wf)) == 2


@pytest.mark.parametrize("text", ["plain", "esc \x1b[31m red", "bidi \u202e override", "line\nbreak\ttab",
                                  "été ünïcødé", "surrogate \udcff name", "C1 \x85 \x9b", ""])
def test_a_diagnostic_read_back_is_the_one_its_constructor_makes(text):
    made = Diagnostic(Span(f"wf/{text}.yaml", 3, 7), "warning", "some-code", f"message {text}", f"hint {text}",
                      f"reason {text}", {"k": text})
    for hint, ack in ((made.hint, made.acknowledged), (None, None)):
        d = Diagnostic(made.span, made.severity, made.code, made.message, hint, ack, made.extra)
        back = cachefmt.undiag(cachefmt.diag(d))
        assert back == d and back.extra == d.extra and back.span == d.span and hash(back) == hash(d)
        assert vars(back) == vars(d) and vars(back.span) == vars(d.span)
        again = Diagnostic(back.span, back.severity, back.code, back.message, back.hint, back.acknowledged,
                           back.extra)
        assert vars(again) == vars(back)  # escaping escaped text changes nothing


@pytest.mark.parametrize("bad", [[["f", 1, 2], "warning", "c", 5, None, None, {}],
                                 [["f", "1", 2], "warning", "c", "m", None, None, {}],
                                 [["f", 1, 2], "warning", "c", "m", 3, None, {}],
                                 [["f", 1, 2], "warning", "c", "m", None, None, []],
                                 [["f", 1], "warning", "c", "m", None, None, {}]])
def test_a_diagnostic_of_the_wrong_shape_is_refused(bad):
    with pytest.raises((TypeError, ValueError)):
        cachefmt.diagnostic(*bad)


def test_the_tree_entry_is_kept_from_tree_from_files_on(cli, tmp_path, monkeypatch):
    monkeypatch.setattr(output, "TREE_FROM", 13)
    wf = tmp_path / "wf"
    _workflows(wf)  # 12 files
    assert cli("build", str(wf), "--out", str(tmp_path / "out")).code == 0
    assert trees(wf) == []
    shutil.copy(sorted(wf.glob("*.yaml"))[0], wf / "zz-copy.yaml")
    (wf / "zz-copy.yaml").write_bytes((wf / "zz-copy.yaml").read_bytes().replace(b"name: ", b"name: zz_", 1))
    assert cli("build", str(wf), "--out", str(tmp_path / "out")).code == 0
    assert len(trees(wf)) == 1
    assert cli("check", str(wf), "--out", str(tmp_path / "out")).code == 0


def _summary(diagnostics: list[Diagnostic]) -> treecache.Summary:
    return treecache.Summary(diagnostics, [("a", "skill://a/SKILL.md", 2, 10, 1)], {"a/SKILL.md": (10, "0" * 64)},
                             {"a"})


def test_the_tables_of_distinct_values_give_back_every_diagnostic():
    """The payload holds each file, hint and extra once (issue 23: a third of its bytes); what comes back is every
    diagnostic as it was, in order, each with its own extra dict."""
    texts = ["plain", "esc \x1b[31m", "été", "surrogate \udcff", ""]
    made = [Diagnostic(Span(f"wf/{a}.yaml", i, i + 1), ("warning", "note", "error")[i % 3], f"code-{i % 2}",
                       f"message {i}", None if i % 4 == 0 else f"hint {texts[i % 3]}", None if i % 2 else f"ack {a}",
                       {} if i % 5 == 0 else {"step": texts[i % 2], "z": "1"} if i % 3 else {"z": "1", "step": a})
            for i, a in enumerate(texts * 4)]
    payload = treecache.encode(_summary(made))
    back = treecache.decode(payload).diagnostics
    assert [vars(d) for d in back] == [vars(d) for d in made]
    assert [list(d.extra) for d in back] == [list(d.extra) for d in made]  # the keys' order too
    assert len({id(d.extra) for d in back}) == len(back)
    assert payload.count(b"hint \\u00e9t\\u00e9") == 1 and payload.count(b"wf/plain.yaml") == 1


@pytest.mark.parametrize("table, index", [("sources", -1), ("sources", 1), ("hints", True), ("hints", 9),
                                          ("extras", 1.0), ("extras", "0"), ("sources", None)])
def test_an_index_outside_its_table_is_a_miss(table, index):
    payload = treecache.encode(_summary([Diagnostic(Span("f.yaml", 1, 2), "warning", "c", "m", "h", None,
                                                    {"step": "s"})]))
    v = json.loads(payload)
    v["diagnostics"][0][{"sources": 0, "hints": 6, "extras": 8}[table]] = index
    with pytest.raises((TypeError, ValueError)):
        treecache.decode(json.dumps(v).encode())
