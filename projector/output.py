"""Compile a set of workflows into the output tree, write it atomically, or check it against disk.

The tree is derived whole in memory. ``write`` stages it beside the output folder and swaps it in, so a failed run
leaves the old tree byte-for-byte as it was. Only bundles this tool generated (those listed in the previous
``skills.json``) are pruned; anything else in the folder is carried over untouched.
"""

from __future__ import annotations

import difflib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from .bundle import INDEX_FILE, Bundle, bundle, index
from .disk import Plan, replace_tree
from .errors import BuildError, Diagnostic, LoadError, Span, error
from .model import Workflow
from .load import discover, load_file
from .validate import collisions, name_collisions
from .render import project


@dataclass
class Build:
    bundles: list[Bundle]
    files: dict[str, bytes]  # POSIX path relative to the output root -> bytes, skills.json included
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def bundle_dirs(self) -> set[str]:
        return {b.path for b in self.bundles}


def compile_workflows(workflows: list[Workflow], prefix: tuple[str, ...] = (), *, skills_only: bool = False
                      ) -> Build:
    """Project, bundle and index ``workflows``. Raises :class:`BuildError` for collisions and limits.
    ``skills_only``: bundles whose SKILL.md names no workflow prompt (see :func:`~projector.render.project`)."""
    problems = collisions(workflows)
    if problems:
        raise BuildError(problems)
    bundles: list[Bundle] = []
    for wf in workflows:
        try:
            bundles.append(bundle(project(wf, prefix, skills_only=skills_only)))
        except BuildError as exc:
            problems.extend(exc.diagnostics)
    if problems:
        raise BuildError(problems)
    return _assemble(bundles)


def _assemble(bundles: list[Bundle]) -> Build:
    bundles = sorted(bundles, key=lambda b: b.path)
    files: dict[str, bytes] = {}
    for b in bundles:
        for rel, data in b.files.items():
            files[f"{b.path}/{rel}"] = data
    files[INDEX_FILE] = index(bundles)
    diagnostics = sorted((d for b in bundles for d in b.diagnostics), key=Diagnostic.sort_key)
    return Build(bundles, dict(sorted(files.items())), diagnostics)


# A worker's answer for one file: the workflow's name and where it came from (for collisions), and its bundle; or
# the file's problems.
_Result = tuple[str, Span, str, "Bundle | None", list[Diagnostic]]


def _compile_chunk(chunk: list[tuple[Path, str]], prefix: tuple[str, ...], skills_only: bool = False
                   ) -> list[_Result]:
    out: list[_Result] = []
    for path, display in chunk:
        try:
            wf = load_file(path, display)
        except LoadError as exc:
            out.append(("", Span(display), display, None, exc.diagnostics))
            continue
        try:
            out.append((wf.name, wf.span, wf.source, bundle(project(wf, prefix, skills_only=skills_only)), []))
        except BuildError as exc:
            out.append((wf.name, wf.span, wf.source, None, exc.diagnostics))
    return out


def _can_fork() -> bool:
    import multiprocessing  # only for a large set: it costs a few milliseconds of imports

    return "fork" in multiprocessing.get_all_start_methods()


def die_with_parent(parent: int) -> None:
    """In a worker process: end when ``parent`` ends, even when it is killed (SIGKILL runs no clean-up)."""
    import signal

    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: Linux kills us with it
    except (ImportError, OSError, AttributeError):  # pragma: no cover - not Linux: watch the parent instead
        import threading
        import time

        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(0.5)
            os._exit(1)

        threading.Thread(target=watch, daemon=True).start()
    if os.getppid() != parent:  # it died before the line above took effect
        os._exit(1)


PARALLEL_FROM = 200  # files; below this, starting workers costs more than it saves


def default_jobs(files: int) -> int:
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, 8, files // (PARALLEL_FROM // 2))) if files >= PARALLEL_FROM else 1


def compile_paths(paths: list[str], prefix: tuple[str, ...] = (), jobs: int | None = None, *,
                  skills_only: bool = False) -> Build:
    """:func:`compile_files` over every workflow file under ``paths``."""
    return compile_files(discover(paths), prefix, jobs, skills_only=skills_only)


def compile_files(found: list[tuple[Path, str]], prefix: tuple[str, ...] = (), jobs: int | None = None, *,
                  skills_only: bool = False) -> Build:
    """Load and compile every workflow file under ``paths``: what ``project-skill build`` does.

    Large sets are split over worker processes (``jobs``; by default one per usable core from
    :data:`PARALLEL_FROM` files on, where ``fork`` is available). Each worker loads, projects and bundles whole
    files and hands back only bundles, so the result, the diagnostics and the errors are the same as
    ``compile_workflows(load_all(paths))`` to the byte (tests/test_bench_smoke.py checks this)."""
    jobs = default_jobs(len(found)) if jobs is None else max(1, jobs)
    if jobs > 1 and _can_fork():
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        size = -(-len(found) // jobs)
        chunks = [found[i:i + size] for i in range(0, len(found), size)]
        with ProcessPoolExecutor(len(chunks), mp_context=multiprocessing.get_context("fork"),
                                 initializer=die_with_parent, initargs=(os.getpid(),)) as pool:
            results = [r for part in pool.map(_compile_chunk, chunks, [prefix] * len(chunks),
                                              [skills_only] * len(chunks)) for r in part]
    else:
        results = _compile_chunk(found, prefix, skills_only)
    load_errors = [d for name, span, source, b, diags in results if not name for d in diags]
    named = [(name, span, source) for name, span, source, b, diags in results if name]
    clashes = name_collisions(named)
    if load_errors or clashes:
        raise LoadError(load_errors + clashes)
    limits = [d for name, span, source, b, diags in results if b is None for d in diags]
    if limits:
        raise BuildError(limits)
    return _assemble([b for *_, b, _ in results if b is not None])


def _owned_dirs(out: Path) -> set[str]:
    """Bundle folders the previous build generated, from its skills.json. Unreadable index: none."""
    try:
        data = json.loads((out / INDEX_FILE).read_text("utf-8"))
        return {e["uri"].removeprefix("skill://").removesuffix("/SKILL.md") for e in data["skills"]}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return set()


def _inside(rel: str, dirs: set[str]) -> bool:
    parents = {p.as_posix() for p in PurePosixPath(rel).parents}
    return bool(parents & dirs)


def _disk_files(out: Path) -> dict[str, Path]:
    if not out.is_dir():
        return {}
    found = {}
    for p in out.rglob("*"):
        if p.is_file() or p.is_symlink():
            found[p.relative_to(out).as_posix()] = p
    return dict(sorted(found.items()))


@dataclass
class Comparison:
    stale: list[str]
    missing: list[str]
    extra: list[str]
    diff: str

    @property
    def clean(self) -> bool:
        return not (self.stale or self.missing or self.extra)


def compare(build: Build, out: Path, *, owned: set[str] | None = None,
            disk: dict[str, Path] | None = None) -> Comparison:
    """What differs between the derived tree and the one on disk, among the files this tool owns."""
    owned = (_owned_dirs(out) | build.bundle_dirs) if owned is None else owned
    disk = _disk_files(out) if disk is None else disk
    stale, missing, diff = [], [], []
    for rel, data in build.files.items():
        path = disk.get(rel)
        if path is None:
            missing.append(rel)
            continue
        current = path.read_bytes()
        if current != data:
            stale.append(rel)
            diff.extend(difflib.unified_diff(current.decode("utf-8", "replace").splitlines(keepends=True),
                                             data.decode("utf-8").splitlines(keepends=True),
                                             fromfile=f"a/{rel}", tofile=f"b/{rel}"))
    extra = [rel for rel in disk if rel not in build.files and (rel == INDEX_FILE or _inside(rel, owned))]
    return Comparison(stale, missing, extra, "".join(diff))


def conflicts(build: Build, root: Path, previous: set[str]) -> list[Diagnostic]:
    """New bundle folders that would overwrite what the previous build did not write: a folder (or file) at the
    bundle's path that the previous ``skills.json`` does not list, or a non-folder on the way to it."""
    problems = []
    for b in build.bundles:
        if b.path in previous:
            continue
        parts = PurePosixPath(b.path).parts
        for k in range(1, len(parts) + 1):
            rel = "/".join(parts[:k])
            p = root / rel
            if not os.path.lexists(p) or (k < len(parts) and p.is_dir() and not p.is_symlink()):
                continue
            problems.append(error(b.span, "output-conflict",
                                  f"the skill '{b.name}' goes to {root.name}/{b.path}/, but {root.name}/{rel} is "
                                  "already there and is not a bundle this tool wrote (the previous skills.json does "
                                  "not list it)", "rename the workflow, or move that folder away; nothing was "
                                  "written"))
            break
    return problems


def write(build: Build, out: Path) -> bool:
    """Make ``out`` hold the build, atomically (see :mod:`projector.disk`). Returns False when it already did
    (nothing is touched). Raises :class:`BuildError` (``output-conflict``) when a new bundle would overwrite a
    folder this tool did not write."""

    def plan(root: Path) -> Plan | None:
        previous = _owned_dirs(root)
        problems = conflicts(build, root, previous)
        if problems:
            raise BuildError(problems)
        owned = previous | build.bundle_dirs
        if compare(build, root, owned=owned).clean:
            return None
        return Plan(build.files, owned | {INDEX_FILE})

    return replace_tree(out, plan)
