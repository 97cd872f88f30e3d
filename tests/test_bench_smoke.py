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
