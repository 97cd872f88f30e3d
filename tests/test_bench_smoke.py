"""The benchmark's workflow generator: deterministic, valid, and covering what the benchmark claims to cover.

No timing is asserted here; timing lives in bench/.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from projector.load import load_all
from projector.model import Const, FromArg, FromStep
from projector.output import compile_workflows

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def workgen():
    spec = importlib.util.spec_from_file_location("bench_workgen", ROOT / "bench" / "workgen.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_same_seed_same_bytes(workgen) -> None:
    assert workgen.generate(40, seed=7) == workgen.generate(40, seed=7)


def test_other_seed_other_bytes(workgen) -> None:
    a, b = workgen.generate(40, seed=7), workgen.generate(40, seed=8)
    assert list(a) == list(b)  # same file names
    assert a != b


def test_generated_workflows_load_and_compile(workgen, tmp_path: Path) -> None:
    folder = workgen.write_set(60, tmp_path / "wf", seed=3)
    workflows = load_all([folder.as_posix()])  # raises LoadError on any problem
    assert len(workflows) == 60
    assert all(3 <= len(wf.steps) <= 8 for wf in workflows)
    build = compile_workflows(workflows)
    assert len(build.bundles) == 60
    assert not [d for d in build.diagnostics if d.severity == "error"]


def test_every_feature_appears(workgen, tmp_path: Path) -> None:
    workflows = load_all([workgen.write_set(60, tmp_path / "wf", seed=3).as_posix()])
    sources = [src for wf in workflows for step in wf.steps for _, src in step.sources()]
    kinds = {type(s).__name__ + ("+field" if isinstance(s, FromStep) and s.field else "") for s in sources}
    assert kinds == {"FromArg", "FromStep", "FromStep+field", "Const"}
    assert any(isinstance(s, Const) and s.placeholders for s in sources)
    assert any(isinstance(s, FromArg) for wf in workflows for st in wf.steps if st.tool is None
               for _, s in st.template)
    steps = [st for wf in workflows for st in wf.steps]
    assert any(st.tool is None and st.resources and st.template for st in steps)
    assert any(st.tool is None and st.resources and not st.template for st in steps)
    assert any(st.guidance for st in steps)
    assert any(st.acknowledge for st in steps)
    assert any(wf.instructions for wf in workflows)
    tools = [t for wf in workflows for t in wf.tools]
    assert any(not t.annotated for t in tools)
    assert any(t.annotated and not t.side_effecting for t in tools)
    assert any(t.annotated and t.side_effecting and t.destructive for t in tools)
    assert any(t.annotated and t.side_effecting and not t.destructive for t in tools)
    codes = {d.code for d in compile_workflows(workflows).diagnostics}
    assert {"gate-on-side-effect", "unverifiable-step"} <= codes


def test_parallel_build_is_byte_equal_to_serial(workgen, tmp_path: Path) -> None:
    from projector.errors import LoadError
    from projector.output import compile_paths, default_jobs

    folder = workgen.write_set(120, tmp_path / "wf", seed=11).as_posix()
    serial = compile_paths([folder], jobs=1)
    parallel = compile_paths([folder], jobs=3)
    assert parallel.files == serial.files
    assert parallel.diagnostics == serial.diagnostics
    assert serial.files == compile_workflows(load_all([folder])).files
    assert default_jobs(10) == 1 and default_jobs(10_000) >= 1
    # errors, collisions included, come back the same way too
    (tmp_path / "wf" / "zz-bad.yaml").write_text("name: [unclosed\n")
    first = sorted((tmp_path / "wf").glob("*.yaml"))[0].read_text()
    (tmp_path / "wf" / "zz-twin.yaml").write_text(first)
    with pytest.raises(LoadError) as one:
        compile_paths([folder], jobs=1)
    with pytest.raises(LoadError) as many:
        compile_paths([folder], jobs=3)
    assert one.value.diagnostics == many.value.diagnostics
    assert {d.code for d in one.value.diagnostics} == {"yaml-syntax", "slug-collision"}


def test_revised_set_changes_every_workflow_and_keeps_every_name(workgen, tmp_path: Path) -> None:
    """bench's "over a stale tree" case: the same workflows, every one reworded, all still valid."""
    files = workgen.generate(30, seed=4)
    revised = workgen.revise(files)
    assert list(revised) == list(files) and all(revised[k] != files[k] for k in files)
    for name, data in revised.items():
        (tmp_path / name).write_bytes(data)
    workflows = load_all([tmp_path.as_posix()])
    originals = {wf.name for wf in load_all([workgen.write_set(30, tmp_path / "orig", seed=4).as_posix()])}
    assert {wf.name for wf in workflows} == originals
    old, new = compile_workflows(load_all([(tmp_path / "orig").as_posix()])), compile_workflows(workflows)
    assert set(old.files) == set(new.files)
    assert all(old.files[rel] != new.files[rel] for rel in old.files)  # every file of the tree is stale


# --- the bench itself: floors, ratios, the page (issue 23). No time is asserted: only that each is measured. ------

@pytest.fixture(scope="module")
def bench_modules():
    """bench/bench.py and bench/floors.py, imported as the bench runs them (its folder on sys.path)."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        spec = importlib.util.spec_from_file_location("bench_main", ROOT / "bench" / "bench.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        yield module, sys.modules["floors"]
    finally:
        sys.path.remove(str(ROOT / "bench"))


def test_write_floor_writes_the_builds_own_tree(workgen, bench_modules, tmp_path: Path) -> None:
    import subprocess

    from projector.output import write

    _, floors = bench_modules
    out = tmp_path / "out"
    write(compile_workflows(load_all([workgen.write_set(15, tmp_path / "wf", seed=5).as_posix()])), out)
    blob = floors.capture(out, tmp_path / "tree.marshal")
    target = tmp_path / "floor"
    for case in floors.SCRIPTS:
        subprocess.run(floors.argv(case, tmp_path / "wf", out, blob, target), check=True, timeout=120)
    assert floors.tree_files(target) == floors.tree_files(out)  # the same folders, names and bytes
    assert len(floors.tree_files(out)) == 31  # 15 bundles of 2 files, and skills.json


def _scale_entry(fresh: float, over: float, check: float, start: float, parse: float, write: float,
                 hashed: float, floors) -> dict:
    def m(wall: float) -> dict:
        return {"wall_s": wall, "cpu_s": wall, "wall_min_s": wall, "wall_max_s": wall, "maxrss_mb": 30.0, "runs": 1}

    entry = {"build": m(fresh), "build over a stale tree": m(over), "build, up to date": m(check), "check": m(check),
             "check, no cache": m(fresh), floors.START_CASE: m(start), floors.PARSE_CASE: m(parse),
             floors.WRITE_CASE: m(write), floors.HASH_CASE: m(hashed)}
    entry["ratios"] = floors.ratios(entry)
    return entry


def test_targets_are_ratios_to_the_floors(bench_modules) -> None:
    bench, floors = bench_modules
    machine = {"cpus_usable": 2}
    # parse 1.1 + write 0.8 - start-up 0.1 = 1.8 s: a build of 1.44 s is 0.8x (the limit), 1.62 s is 0.9x
    passing = _scale_entry(1.44, 1.5, 0.3, 0.1, 1.1, 0.8, 0.2, floors)
    missing = _scale_entry(1.62, 1.9, 0.4, 0.1, 1.1, 0.8, 0.2, floors)
    for entry, ok in ((passing, True), (missing, False)):
        rows = {r["id"]: r for r in bench.evaluate({"machine": machine, "scale": {"1000": entry}}, quick=False)
                if "id" in r}
        assert set(rows) == {"build_vs_floor", "stale_vs_fresh", "check_warm_vs_floor"}
        assert all(r["ok"] is ok for r in rows.values()), rows
    assert floors.ratios(missing)["build_vs_floor"] == pytest.approx(0.9)
    assert floors.ratios(missing)["check_vs_floor"] == pytest.approx(2.0)
    assert "build_1000_s" not in bench.TARGETS and "check_1000_warm_s" not in bench.TARGETS  # retired
    # --quick: the same rows at its largest size, without a verdict
    quick = bench.evaluate({"machine": machine, "scale": {"300": missing}}, quick=True)
    assert [r["ok"] for r in quick] == [None] * len(quick) and quick[0]["id"] == "build_vs_floor"
    # results of an older bench (no floors) render, and say so
    old = {k: v for k, v in missing.items() if not k.startswith("floor:")}
    assert bench.evaluate({"machine": machine, "scale": {"1000": old}}, quick=False)[0]["ok"] is None


def test_quick_bench_measures_the_floors_and_the_ratios(tmp_path: Path) -> None:
    """One round of a tiny --quick run of part b: every floor is measured in the run, the ratios computed, and the
    page shows them with the profile."""
    import json
    import subprocess

    subprocess.run([sys.executable, str(ROOT / "bench" / "bench.py"), "--quick", "--only", "scale", "--sizes", "12",
                    "--runs", "1", "--out", str(tmp_path)], check=True, cwd=ROOT, timeout=600,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    res = json.loads((tmp_path / "results.json").read_text("utf-8"))
    entry = res["scale"]["12"]
    for case in ("floor: start-up (python -c pass)", "floor: read and parse the workflows (libyaml)",
                 "floor: write the output tree into an empty folder",
                 "floor: read and hash the workflows and the tree"):
        assert entry[case]["runs"] == 1 and entry[case]["wall_s"] > 0, case
    assert set(entry["ratios"]) == {"floor_build_s", "build_vs_floor", "stale_vs_fresh", "check_vs_floor"}
    assert all(v > 0 for v in entry["ratios"].values())
    ids = {r.get("id"): r for r in res["verdicts"]}
    assert {"build_vs_floor", "stale_vs_fresh", "check_warm_vs_floor"} <= set(ids)
    assert all(ids[i]["ok"] is None for i in ("build_vs_floor", "stale_vs_fresh", "check_warm_vs_floor"))
    for label in ("build", "build over a stale tree"):
        assert res["profile"][label]["own"] and res["profile"][label]["modules"], label
    page = (tmp_path / "results.md").read_text("utf-8")
    assert "parse + write - start-up" in page and "### cProfile: `build` of 12 workflows" in page
    assert "Retired (issue 23)" in page
