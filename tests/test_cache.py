"""The incremental build cache (projector/cache.py) and a write() that computes nothing to throw away.

The cache must never change a byte: every test here compares a cached build against an uncached one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import multiprocessing
import os
import shutil
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import EXAMPLES, GENERATED, ROOT, make_tree, snapshot_tree
from projector import cache as cache_mod
from projector import output
from projector.bundle import Bundle, stable_json, index
from projector.cache import CACHE_DIR, Cache, location
from projector.errors import ProjectorError
from projector.load import discover
from projector.output import Options, compile_files, write
from test_properties import workflows

GOOD = """name: {name}
description: A workflow named {name}.
tools:
  - name: t
    annotations: {{readOnlyHint: true}}
steps:
  - name: s
    tool: t
    bind: r
"""


def outcome(folder: Path, cache: Path | None, prefix: tuple[str, ...] = (), jobs: int = 1, **options) -> dict:
    """Everything a compile yields, as comparable data: the files and the diagnostics, or the error raised."""
    try:
        build = compile_files(discover([folder.as_posix()]), prefix, jobs, cache, **options)
    except ProjectorError as exc:
        return {"error": type(exc).__name__, "diagnostics": [d.to_json() for d in exc.diagnostics]}
    return {"files": build.files, "diagnostics": [d.to_json() for d in build.diagnostics],
            "bundles": [(b.name, b.path, b.entry, b.diagnostics, b.span, b.index_text) for b in build.bundles]}


def entries(root: Path) -> list[Path]:
    """The per-file entries (not the whole-tree ones, projector/treecache.py, nor temporary files)."""
    return sorted(p for p in (root / "entries").iterdir() if not p.name.startswith((".", "tree-")))


def forbid_compiling(monkeypatch) -> None:
    def boom(*args, **kwargs):
        raise AssertionError("a workflow was compiled although the cache held it")

    monkeypatch.setattr(output, "_compile_one", boom)


# ------------------------------------------------------------------------------------------------ item 1: write()

def test_write_over_a_stale_tree_builds_no_diff(tmp_path, monkeypatch):
    """write() only needs to know whether the tree differs; the old code built (and dropped) a unified diff."""
    import difflib

    out = tmp_path / "out"
    shutil.copytree(GENERATED, out)
    skill = out / "refund-flow" / "SKILL.md"
    skill.write_bytes(skill.read_bytes() + b"stale\n")
    build = compile_files(discover([EXAMPLES.as_posix()]))

    def no_diff(*args, **kwargs):
        raise AssertionError("write() built a diff")

    monkeypatch.setattr(difflib, "unified_diff", no_diff)
    assert write(build, out) is True
    assert snapshot_tree(out) == snapshot_tree(GENERATED)
    assert write(build, out) is False  # now up to date: nothing touched, still no diff


def test_check_still_prints_the_diff(tmp_path):
    out = tmp_path / "out"
    shutil.copytree(GENERATED, out)
    skill = out / "hello-world" / "SKILL.md"
    skill.write_bytes(skill.read_bytes() + b"stale line\n")
    cmp = output.compare(compile_files(discover([EXAMPLES.as_posix()])), out)
    assert cmp.stale == ["hello-world/SKILL.md"]
    assert "-stale line" in cmp.diff


# ------------------------------------------------------------------------------------------------ where it lives

def test_location_is_beside_the_workflows_and_never_inside_the_output(tmp_path):
    wf = make_tree(tmp_path, {"wf/a.yaml": GOOD.format(name="a")}) / "wf"
    assert location([wf.as_posix()], tmp_path / "out") == wf / CACHE_DIR
    assert location([(wf / "a.yaml").as_posix()], tmp_path / "out") == wf / CACHE_DIR
    assert location([wf.as_posix()], wf) is None  # output folder == workflows folder
    assert location([wf.as_posix()], wf / CACHE_DIR) is None
    assert location([tmp_path.as_posix()], tmp_path) is None
    assert location([], tmp_path / "out") is None


def test_cli_uses_the_cache_and_no_cache_bypasses_it(cli, tmp_path, monkeypatch):
    root = make_tree(tmp_path, {"wf/a.yaml": GOOD.format(name="alpha"), "wf/b.yaml": GOOD.format(name="beta")})
    assert cli("build", "wf", "--out", "out1", "--no-cache", cwd=root).code == 0
    assert not (root / "wf" / CACHE_DIR).exists()
    assert cli("build", "wf", "--out", "out2", cwd=root).code == 0
    store = root / "wf" / CACHE_DIR
    assert len(entries(store)) == 2
    assert (store / ".gitignore").read_text().splitlines()[-1] == "*"
    assert snapshot_tree(root / "out1") == snapshot_tree(root / "out2")
    forbid_compiling(monkeypatch)  # from here on, the cache answers every file
    run = cli("check", "wf", "--out", "out1", cwd=root)
    assert run.code == 0 and "up to date" in run.out
    assert cli("build", "wf", "--out", "out3", cwd=root).code == 0
    assert snapshot_tree(root / "out3") == snapshot_tree(root / "out1")
    # the cache folder is skipped by discovery: its files are never taken for workflows
    assert [d for _, d in discover([(root / "wf").as_posix()])] == [
        (root / "wf" / "a.yaml").as_posix(), (root / "wf" / "b.yaml").as_posix()]


def test_examples_with_and_without_the_cache_are_byte_equal(tmp_path, monkeypatch):
    src = tmp_path / "workflows"
    shutil.copytree(EXAMPLES, src)
    store = tmp_path / "cache"
    plain = outcome(src, None)
    assert plain["files"] == {rel: (GENERATED / rel).read_bytes() for rel in snapshot_tree(GENERATED)}
    assert outcome(src, store) == plain  # cold: fills the cache
    assert len(entries(store)) == len(list(EXAMPLES.glob("*.yaml")))
    forbid_compiling(monkeypatch)
    assert outcome(src, store) == plain  # warm: every file from the cache


def test_parallel_workers_fill_the_cache(tmp_path, monkeypatch):
    src = make_tree(tmp_path, {f"wf/w{i}.yaml": GOOD.format(name=f"w{i}") for i in range(12)}) / "wf"
    store = tmp_path / "cache"
    plain = outcome(src, None)
    assert outcome(src, store, jobs=3) == plain
    assert len(entries(store)) == 12
    forbid_compiling(monkeypatch)
    assert outcome(src, store, jobs=3) == plain


# ------------------------------------------------------------------------------------------------ the key

def test_options_and_file_paths_are_in_the_key(tmp_path):
    src = make_tree(tmp_path, {"wf/a.yaml": GOOD.format(name="alpha")}) / "wf"
    store = tmp_path / "cache"
    assert outcome(src, store) == outcome(src, None)
    assert outcome(src, store, ("team", "x")) == outcome(src, None, ("team", "x"))  # another prefix: a miss
    index_bytes = outcome(src, store, ("team", "x"))["files"]["skills.json"]
    assert index_bytes.count(b"skill://team/x/alpha/") == 3 and b"skill://alpha/" not in index_bytes
    assert len(entries(store)) == 2  # one slot per (file, options)
    skills_only = outcome(src, store, skills_only=True)
    assert skills_only == outcome(src, None, skills_only=True) != outcome(src, None)  # --skills-only: a miss too
    assert b"\n  workflow: " not in skills_only["files"]["alpha/SKILL.md"].split(b"\n---\n")[0]
    assert len(entries(store)) == 3
    c = Cache(store, Options(("team",)))
    assert c.key("wf/a.yaml", b"x") != c.key("wf/b.yaml", b"x") != c.key("wf/b.yaml", b"y")
    assert c.key("wf/a.yaml", b"x") != Cache(store, Options(())).key("wf/a.yaml", b"x")


def test_every_output_changing_parameter_is_an_option():
    """A new option of project() or compile_files() must be a field of Options, or the cache would ignore it."""
    from projector.render import project

    fields = {f.name for f in dataclasses.fields(Options)}
    assert set(inspect.signature(project).parameters) - {"wf"} <= fields
    assert set(inspect.signature(compile_files).parameters) - {"found", "jobs", "cache"} <= fields


def test_every_field_of_a_result_is_cached():
    """A field added to Bundle, Diagnostic or Span must be written into entries too, or a hit would drop it."""
    from projector.errors import Diagnostic, Span

    for cls in (Bundle, Diagnostic, Span):
        assert tuple(f.name for f in dataclasses.fields(cls)) == cache_mod.ENCODED_FIELDS[cls.__name__]


def test_the_environment_digest_covers_code_templates_and_schemas(tmp_path, monkeypatch):
    package = tmp_path / "projector"
    shutil.copytree(cache_mod.PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(cache_mod, "PACKAGE", package)
    digests = set()
    for rel in ("render.py", "templates/SKILL.md.j2", "schemas/workflow.schema.json", "server/__init__.py"):
        cache_mod.environment_digest.cache_clear()
        digests.add(cache_mod.environment_digest())
        with (package / rel).open("a", encoding="utf-8") as f:
            f.write("\n")
    cache_mod.environment_digest.cache_clear()
    digests.add(cache_mod.environment_digest())
    cache_mod.environment_digest.cache_clear()
    assert len(digests) == 5  # every change gave a new digest, so every entry becomes a miss
    monkeypatch.undo()
    cache_mod.environment_digest.cache_clear()


# ------------------------------------------------------------------------------------------------ bad entries

def _sha(data: bytes) -> bytes:
    return hashlib.sha256(data).hexdigest().encode()


def _damages(raw: bytes, foreign: bytes) -> dict[str, bytes]:
    key, _, payload = raw.split(b"\n", 2)
    bad_json = b"5\n{nope" + payload[payload.index(b"\n") + 1 + int(payload.split(b"\n", 1)[0]):]
    short_files = payload[:-10]
    return {
        "empty": b"",
        "truncated": raw[: len(raw) // 2],
        "one byte short": raw[:-1],
        "flipped byte": raw[:-5] + bytes([raw[-5] ^ 0x20]) + raw[-4:],
        "foreign": foreign,  # a whole, valid entry of another file
        "garbage": os.urandom(64),
        "not utf-8 header": b"\xff\xfe\n\x00\n" + payload,
        # right key and a matching checksum, but a payload this version did not write:
        "bad header json": b"%s\n%s\n%s" % (key, _sha(bad_json), bad_json),
        "files cut short": b"%s\n%s\n%s" % (key, _sha(short_files), short_files),
        "json list": b"%s\n%s\n%s" % (key, _sha(b"2\n[]"), b"2\n[]"),
        "wrong shape": b"%s\n%s\n%s" % (key, _sha(b'17\n{"bundle":"x"}   '), b'17\n{"bundle":"x"}   '),
    }


def test_corrupt_truncated_and_foreign_entries_are_ignored_and_rewritten(tmp_path):
    src = tmp_path / "workflows"
    shutil.copytree(EXAMPLES, src)
    store = tmp_path / "cache"
    plain = outcome(src, None)
    assert outcome(src, store) == plain
    slots = entries(store)
    good = {p: p.read_bytes() for p in slots}
    for name, _ in _damages(good[slots[0]], good[slots[1]]).items():
        for i, slot in enumerate(slots):
            damaged = _damages(good[slot], good[slots[(i + 1) % len(slots)]])[name]
            assert damaged != good[slot]
            slot.write_bytes(damaged)
        assert outcome(src, store) == plain, name
        assert {p: p.read_bytes() for p in slots} == good, f"{name}: not rewritten"


def test_a_cache_that_cannot_be_written_costs_only_speed(tmp_path, monkeypatch):
    src = make_tree(tmp_path, {"wf/a.yaml": GOOD.format(name="alpha")}) / "wf"
    blocker = tmp_path / "file"
    blocker.write_text("a file where the cache folder should be")
    assert outcome(src, blocker / "cache") == outcome(src, None)

    def refuse(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cache_mod.os, "replace", refuse)
    assert outcome(src, tmp_path / "cache") == outcome(src, None)
    assert entries(tmp_path / "cache") == []  # and no temporary file left behind


# ------------------------------------------------------------------------------------------------ random edits

EDIT = st.sampled_from(["replace-word", "delete-line", "duplicate-line", "append-comment", "copy-other-file",
                        "rename", "break-yaml", "restore"])
WORDS = ["order", "refund", "value", "Only if", "name", "tool", "step", "true", "42", "é", "{x}", ":", "- "]


@pytest.fixture(scope="module")
def random_set():
    """A folder of generated workflows and a cache folder, shared by the hypothesis examples."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("bench_workgen_cache", ROOT / "bench" / "workgen.py")
    workgen = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = workgen
    spec.loader.exec_module(workgen)
    tmp = Path(tempfile.mkdtemp(prefix="projector-cache-test-"))
    originals = workgen.generate(8, seed=5)
    yield tmp, originals
    shutil.rmtree(tmp, ignore_errors=True)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_edits_of_random_workflows_build_the_same_with_and_without_the_cache(random_set, data):
    tmp, originals = random_set
    # Every example starts from the same files (plus one random workflow) and edits them; the cache folder is kept
    # from example to example, so it holds entries for earlier versions of the same paths.
    src = tmp / "wf"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir()
    for name, text in originals.items():
        (src / name).write_bytes(text)
    extra = data.draw(workflows())
    (src / "zz-random.yaml").write_text(yaml.safe_dump(extra, sort_keys=False, allow_unicode=True), "utf-8")
    names = sorted(p.name for p in src.iterdir() if p.suffix == ".yaml")
    for _ in range(data.draw(st.integers(1, 3))):
        target = src / data.draw(st.sampled_from(names))
        lines = target.read_text("utf-8").split("\n")
        at = data.draw(st.integers(0, max(0, len(lines) - 1)))
        kind = data.draw(EDIT)
        if kind == "replace-word":
            word = data.draw(st.sampled_from(WORDS))
            lines[at] = lines[at].replace(data.draw(st.sampled_from(WORDS)), word, 1)
        elif kind == "delete-line":
            del lines[at]
        elif kind == "duplicate-line":
            lines.insert(at, lines[at])
        elif kind == "append-comment":
            lines.insert(at, "# " + data.draw(st.text(max_size=10)).replace("\n", " "))
        elif kind == "copy-other-file":
            lines = (src / data.draw(st.sampled_from(names))).read_text("utf-8").split("\n")
        elif kind == "rename":
            lines = [f"name: {data.draw(st.sampled_from(['alpha', 'beta', 'Alpha', 'x' * 70]))}"
                     if ln.startswith("name:") else ln for ln in lines]
        elif kind == "break-yaml":
            lines.insert(at, "  - : [")
        else:  # restore: back to a version the cache has seen
            lines = originals.get(target.name, b"name: restored\n").decode("utf-8").split("\n")
        target.write_text("\n".join(lines), "utf-8")
    prefix = data.draw(st.sampled_from([(), ("p",)]))
    store = tmp / "cache"
    cold = outcome(src, None, prefix)
    assert outcome(src, store, prefix) == cold
    assert outcome(src, store, prefix) == cold  # the second time, every file is a hit


# ------------------------------------------------------------------------------------------------ races

def _hammer(store: str, seed: int, rounds: int, expected: dict, conn) -> None:
    """Write and read one shared set of slots; report any hit that is not exactly its key's result."""
    import random

    rng = random.Random(seed)
    c = Cache(Path(store), Options(()))
    bad = 0
    for _ in range(rounds):
        key = rng.choice(sorted(expected))
        display, result = expected[key]
        if rng.random() < 0.5:
            c.put(display, key, result)
        else:
            got = c.get(display, key)
            if got is not None and _comparable(got) != _comparable(result):
                bad += 1
    conn.send(bad)
    conn.close()


def _comparable(result):
    name, span, source, b, diags = result
    return (name, span, source, diags, None if b is None else (b.name, b.path, b.files, b.entry, b.diagnostics,
                                                               b.span, b.index_text))


def test_two_processes_racing_on_one_cache_do_not_corrupt_it(tmp_path):
    """Two writers and readers on the same slots, with two different contents for each file path: every hit is
    exactly its own key's result, and the cache is whole afterwards."""
    versions = [make_tree(tmp_path / f"v{v}", {f"wf/w{i}.yaml": GOOD.format(name=f"w{i}_{v}") for i in range(6)})
                for v in (0, 1)]
    expected = {}
    for root in versions:
        for path, display in discover([(root / "wf").as_posix()]):
            shared = "wf/" + Path(display).name  # the same display path for both versions: the same slot
            data = path.read_bytes()
            result = output._compile_one(data, shared, Options(()))
            expected[Cache(tmp_path / "cache", Options(())).key(shared, data)] = (shared, result)
    ctx = multiprocessing.get_context("fork")
    pipes, procs = [], []
    for seed in range(3):
        parent, child = ctx.Pipe(duplex=False)
        p = ctx.Process(target=_hammer, args=(str(tmp_path / "cache"), seed, 400, expected, child))
        p.start()
        pipes.append(parent)
        procs.append(p)
    bad = [pipe.recv() for pipe in pipes]
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    assert bad == [0, 0, 0]
    c = Cache(tmp_path / "cache", Options(()))
    whole = 0
    for key, (display, result) in expected.items():
        got = c.get(display, key)
        if got is not None:
            whole += 1
            assert _comparable(got) == _comparable(result)
    assert whole == 6  # each slot holds one whole entry, of one version or the other
    assert not [p for p in (tmp_path / "cache" / "entries").iterdir() if p.name.startswith(".tmp-")]


def test_two_builds_racing_on_one_cache(tmp_path):
    src = make_tree(tmp_path, {f"wf/w{i}.yaml": GOOD.format(name=f"w{i}") for i in range(30)}) / "wf"
    store = tmp_path / "cache"
    ctx = multiprocessing.get_context("fork")

    def build(n: int) -> None:
        for _ in range(3):
            compile_files(discover([src.as_posix()]), (), 1, store)

    procs = [ctx.Process(target=build, args=(n,)) for n in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
        assert p.exitcode == 0
    plain = outcome(src, None)
    assert outcome(src, store) == plain


# ------------------------------------------------------------------------------------------------ the index

@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=20), min_size=0, max_size=4, unique=True))
def test_the_index_joined_from_entry_texts_is_the_plain_dump(texts):
    bundles = [Bundle(f"s{i}", f"s{i}", {}, {"uri": f"skill://{t!r}{i}/SKILL.md", "frontmatter": {"description": t,
                      "metadata": {"list": [t, 1, 2.5, None, True], "empty": {}, "nothing": []}}, "resources": []})
               for i, t in enumerate(texts)]
    expected = stable_json({"skills": sorted((b.entry for b in bundles), key=lambda e: e["uri"])})
    assert index(bundles) == expected
    assert json.loads(expected)["skills"] == sorted((b.entry for b in bundles), key=lambda e: e["uri"])


def test_many_entries_are_written_by_threads_and_all_there_when_the_compile_returns(tmp_path, monkeypatch):
    """From output.WRITE_BEHIND_FROM files on, the entries are written by threads while the compile goes on
    (Cache.writes_in_background): when compile_files returns, every one is there, whole, over the old ones too."""
    import threading

    files = {f"wf/w{i:02d}.yaml": GOOD.format(name=f"w{i:02d}") for i in range(output.WRITE_BEHIND_FROM + 8)}
    src = make_tree(tmp_path, files) / "wf"
    store = tmp_path / "cache"
    writers: set[int] = set()
    real = Cache.write

    def write(self, *args):
        writers.add(threading.get_ident())
        return real(self, *args)

    for round in ("new", "over the old entries"):
        if round != "new":
            for name in files:
                (tmp_path / name).write_text(files[name].replace("description: A workflow", "description: An edited workflow"))
        with monkeypatch.context() as m:
            m.setattr(Cache, "write", write)
            first = outcome(src, store)
        assert writers and threading.get_ident() not in writers, round
        assert len(entries(store)) == len(files)
        assert first == outcome(src, None), round
        with monkeypatch.context() as m:
            forbid_compiling(m)
            assert outcome(src, store) == first, round
