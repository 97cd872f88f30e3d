"""Compile a set of workflows into the output tree, write it atomically, or check it against disk.

The tree is derived whole in memory. ``write`` stages it beside the output folder and swaps it in, so a failed run
leaves the old tree byte-for-byte as it was. Only bundles this tool generated (those the previous ``skills.json``
lists and the disk proves its own, :mod:`projector.ownership`) are pruned, and in them only the files it wrote (those
the previous index lists); anything else in the folder, a file the user put inside a bundle folder too, is carried
over untouched.

The derived eval cases (:mod:`projector.evals`) go to a tree of their own beside it (``generated_evals/`` beside
``generated_skills/``, :func:`evals_root`), never into a skill's folder, which a generic skills server serves whole.
``write_evals`` writes it the same way; there the tool's files are each skill's two eval files, for the skills the
previous ``skills.json`` listed and those the build writes, and anything else is carried over.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from .bounded import BadJSON, Unreadable, loads, read_regular
from .bundle import Bundle, bundle, index
from .disk import Plan, folder, io_error, replace_tree, side_of, stage_bundle, target
from .errors import BuildError, Diagnostic, LoadError, Span, UsageError, error, printable
from .evaltree import EVALS_FILE, QUERIES_FILE, tree_files
from .load import discover, load_data, read_source
from .model import Workflow
from .ownership import disk_path, proven
from .render import project
from .sep2640 import INDEX_FILE, MAX_BYTES, MAX_FILES, MAX_INDEX_BYTES, SCHEME, SKILL_FILE, skill_path_of
from .validate import collisions, name_collisions


@dataclass
class Build:
    bundles: list[Bundle]
    files: dict[str, bytes]  # POSIX path relative to the output root -> bytes, skills.json included
    diagnostics: list[Diagnostic] = field(default_factory=list)
    staged: frozenset[str] = frozenset()  # those of ``files`` already written into a fresh build's stage
    evals: dict[str, bytes] = field(default_factory=dict)  # the evals tree: POSIX path relative to its root -> bytes


def compile_workflows(
    workflows: list[Workflow], prefix: tuple[str, ...] = (), *, skills_only: bool = False, workflow_tools: bool = False
) -> Build:
    """Project, bundle and index ``workflows``. Raises :class:`BuildError` for collisions and limits.
    ``skills_only``: bundles whose SKILL.md names no workflow prompt (see :func:`~projector.render.project`)."""
    problems = collisions(workflows)
    if problems:
        raise BuildError(problems)
    bundles: list[Bundle] = []
    for wf in workflows:
        try:
            bundles.append(bundle(project(wf, prefix, skills_only=skills_only, workflow_tools=workflow_tools)))
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
    evals = dict(sorted(tree_files(bundles).items()))  # in a tree of their own, not the skills' (projector.evals)
    return Build(bundles, dict(sorted(files.items())), diagnostics, evals=evals)


# A worker's answer for one file: the workflow's name and where it came from (for collisions), and its bundle; or
# the file's problems. Last, whether the bundle was written into the stage.
_Result = tuple[str, Span, str, "Bundle | None", list[Diagnostic], bool]


@dataclass(frozen=True)
class Options:
    """Everything besides a workflow file's bytes and path that changes what it compiles to (what a worker is
    handed with its files)."""

    prefix: tuple[str, ...] = ()
    skills_only: bool = False
    workflow_tools: bool = False
    stage: Path | None = None  # a fresh build's stage (projector.disk.fresh_stage): each bundle is written there


def _compile_one(data: bytes, display: str, options: Options) -> _Result:
    try:
        wf = load_data(data, display)
    except LoadError as exc:
        return ("", Span(display), display, None, exc.diagnostics, False)
    try:
        b = bundle(project(wf, options.prefix, skills_only=options.skills_only, workflow_tools=options.workflow_tools))
    except BuildError as exc:
        return (wf.name, wf.span, wf.source, None, exc.diagnostics, False)
    if options.stage is None:
        return (wf.name, wf.span, wf.source, b, [], False)
    try:
        staged = stage_bundle(options.stage, b.path, b.files)
    except OSError as exc:
        return (wf.name, wf.span, wf.source, None, io_error(exc, side_of(options.stage)).diagnostics, False)
    return (wf.name, wf.span, wf.source, b, [], staged)


def _compile_chunk(chunk: list[tuple[bytes, str]], options: Options) -> list[_Result]:
    return [_compile_one(data, display, options) for data, display in chunk]


def _can_fork() -> bool:
    # Imported here: a run in one process (any set under PARALLEL_FROM files, the examples) never needs
    # multiprocessing, a tenth of a cold check's imports.
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()


def die_with_parent(parent: int) -> None:
    """In a worker process: end when ``parent`` ends, even when it is killed (SIGKILL runs no clean-up)."""
    import signal

    try:
        import ctypes

        if ctypes.CDLL(None).prctl(1, signal.SIGKILL) != 0:  # PR_SET_PDEATHSIG: Linux kills us with it
            raise OSError  # refused: nobody reads why, the fallback below takes over
    except (ImportError, OSError, AttributeError):  # not Linux, or refused: watch the parent instead
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


def compile_paths(
    paths: list[str],
    prefix: tuple[str, ...] = (),
    jobs: int | None = None,
    *,
    skills_only: bool = False,
    workflow_tools: bool = False,
) -> Build:
    """:func:`compile_files` over every workflow file under ``paths``."""
    return compile_files(discover(paths), prefix, jobs, skills_only=skills_only, workflow_tools=workflow_tools)


def compile_files(
    found: list[tuple[Path, str]],
    prefix: tuple[str, ...] = (),
    jobs: int | None = None,
    *,
    skills_only: bool = False,
    workflow_tools: bool = False,
    stage: Path | None = None,
) -> Build:
    """Read, load and compile every workflow file ``found`` (:func:`~projector.load.discover`'s pairs): what
    ``project-skill build`` does, in one pass. With ``stage`` (a fresh build's, :func:`projector.disk.fresh_stage`),
    each bundle is also written there as soon as it is compiled, so the writing runs beside the compiling, in every
    worker; :attr:`Build.staged` says which files are there.

    The files are split over ``jobs`` processes when there are many (this one and ``jobs - 1`` forked workers; by
    default one per usable core from :data:`PARALLEL_FROM` files on, where ``fork`` is available). Each worker loads, projects and bundles whole
    files and hands back only bundles, so the result, the diagnostics and the errors are the same as
    ``compile_workflows(load_all(paths))`` to the byte (tests/test_bench_smoke.py checks this)."""
    results: list[_Result | None] = []
    work: list[tuple[bytes, str]] = []
    for path, display in found:
        try:
            work.append((read_source(path, display), display))
            results.append(None)
        except LoadError as exc:
            results.append(("", Span(display), display, None, exc.diagnostics, False))
    compiled = iter(_compile_all(work, Options(prefix, skills_only, workflow_tools, stage), jobs))
    return _finish_files([r if r is not None else next(compiled) for r in results])


def _compile_all(work: list[tuple[bytes, str]], options: Options, jobs: int | None) -> list[_Result]:
    """:func:`_compile_chunk` over ``work``, split over forked worker processes when there are many."""
    jobs = default_jobs(len(work)) if jobs is None else max(1, min(jobs, len(work) or 1))
    if jobs > 1 and _can_fork():
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        size = -(-len(work) // jobs)
        chunks = [work[i : i + size] for i in range(0, len(work), size)]
        # One chunk is this process's own: it would only wait for the workers otherwise.
        with ProcessPoolExecutor(
            len(chunks) - 1,
            mp_context=multiprocessing.get_context("fork"),
            initializer=die_with_parent,
            initargs=(os.getpid(),),
        ) as pool:
            theirs = pool.map(_compile_chunk, chunks[1:], [options] * (len(chunks) - 1))
            mine = _compile_chunk(chunks[0], options)
            return [*mine, *(r for part in theirs for r in part)]
    return _compile_chunk(work, options)


def _finish_files(results: list[_Result]) -> Build:
    """The cross-file checks over every file's result, then the tree."""
    load_errors = [d for name, span, source, b, diags, _ in results if not name for d in diags]
    named = [(name, span, source) for name, span, source, b, diags, _ in results if name]
    clashes = name_collisions(named)
    if load_errors or clashes:
        raise LoadError(load_errors + clashes)
    # each: once (a disk error in the workers is the same for every bundle they could not write)
    limits = list(dict.fromkeys(d for name, span, source, b, diags, _ in results if b is None for d in diags))
    if limits:
        raise BuildError(limits)
    built = _assemble([r[3] for r in results if r[3] is not None])
    built.staged = frozenset(f"{b.path}/{rel}" for *_, b, _, staged in results if staged for rel in b.files)
    return built


def _index_limit(build: Build) -> int:
    """How large a previous skills.json is read: :data:`~projector.bundle.MAX_INDEX_BYTES`, or twice the new one,
    so a build of more skills than that limit foresees still reads back the index it wrote."""
    return max(MAX_INDEX_BYTES, 2 * len(build.files[INDEX_FILE]))


def _owned_dirs(out: Path, limit: int) -> tuple[set[str], str, dict[str, str], set[str]]:
    """Bundle folders a previous run generated: those its skills.json lists AND the disk proves this tool's
    (:func:`projector.ownership.proven`), the index read with bounds (at most ``limit`` bytes, a regular file, no
    link followed, bounded JSON). An index that cannot be read lists none, and the second item says why; it is empty
    when the index is read, or missing. The third: each listed folder that is there and not proven, and why not.
    The fourth: the files the previous run wrote in those folders (:func:`_written`)."""
    path = out / INDEX_FILE
    if not os.path.lexists(path):
        return set(), "", {}, set()
    try:
        entries, why = _entries(read_regular(path, limit))
    except Unreadable as exc:
        return set(), str(exc), {}, set()
    if why:
        return set(), why, {}, set()
    owned, unproven = proven(out, entries)
    return owned, "", unproven, _written(entries, owned)


def _written(entries: list[dict], owned: set[str]) -> set[str]:
    """The paths (POSIX, relative to the output folder) of the files a previous run wrote in the ``owned`` folders:
    each one's SKILL.md (not in the index) and the eval files that earlier versions wrote there (so a build drops
    them), and every resource its entry (the first that lists the folder) records, at most
    :data:`~projector.sep2640.MAX_FILES` each. Nothing else in those folders is the tool's."""
    written: set[str] = set()
    seen: set[str] = set()
    for entry in entries:
        folder = skill_path_of(entry["uri"])
        if folder not in owned or folder in seen:
            continue
        seen.add(folder)
        written.update(f"{folder}/{rel}" for rel in (SKILL_FILE, *_EVALS_IN_FOLDER))
        resources, base = entry.get("resources"), f"{SCHEME}{folder}/"
        for ref in resources[:MAX_FILES] if isinstance(resources, list) else []:
            uri = ref.get("uri") if isinstance(ref, dict) else None
            parts = disk_path(uri[len(base) :]) if isinstance(uri, str) and uri.startswith(base) else None
            if parts:
                written.add("/".join([folder, *parts]))
    return written


# Where versions before the evals tree wrote a bundle's eval cases: in its folder, which a skills server serves.
_EVALS_IN_FOLDER = ("evals/evals.json", "evals/eval_queries.json")


def _entries(index_bytes: bytes) -> tuple[list[dict], str]:
    """The entries of a skills.json that holds these bytes, each a mapping with a string ``uri``; or [] and why
    it is not a skills index."""
    try:
        entries = loads(index_bytes)["skills"]
    except BadJSON as exc:
        return [], str(exc)
    except (KeyError, TypeError, AttributeError):
        return [], "it is not a skills index"
    if not isinstance(entries, list) or not all(isinstance(e, dict) and isinstance(e.get("uri"), str) for e in entries):
        return [], "it is not a skills index"
    return entries, ""


def listed_dirs(index_bytes: bytes) -> tuple[set[str], str]:
    """The bundle folders a skills.json that holds these bytes lists (the build's own: no proof is needed)."""
    entries, why = _entries(index_bytes)
    return {skill_path_of(e["uri"]) for e in entries}, why


def _disk_files(out: Path) -> dict[str, str]:
    """Everything under ``out`` that is not a folder (files, symlinks, FIFOs, devices...; symlinked folders are not
    entered), by POSIX relative path, sorted; each with its path."""
    found: dict[str, str] = {}

    def walk(folder: str, prefix: str) -> None:
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError:
            return
        for entry in entries:
            rel = prefix + entry.name
            if entry.is_dir(follow_symlinks=False):
                walk(entry.path, rel + "/")
            else:
                found[rel] = entry.path

    if out.is_dir():
        walk(str(out), "")
    return dict(sorted(found.items()))


@dataclass
class Comparison:
    stale: list[str]
    missing: list[str]
    extra: list[str]
    diff: str
    unread: dict[str, str] = field(default_factory=dict)  # a stale file that was not read -> why not

    @property
    def clean(self) -> bool:
        return not (self.stale or self.missing or self.extra)


def _on_disk(path: str, limit: int) -> tuple[bytes | None, str]:
    """A file of the output tree, read with bounds: its bytes, or None and why not. The build writes regular files
    only, so anything else (a link, a FIFO, a device) is not what it writes, and is not opened for reading."""
    try:
        return read_regular(path, limit), ""
    except Unreadable as exc:
        return None, str(exc)


def compare(
    build: Build,
    out: Path,
    *,
    written: set[str] | None = None,
    disk: dict[str, str] | None = None,
    diff: bool = True,
    files: dict[str, bytes] | None = None,
) -> Comparison:
    """What differs between the derived tree and the one on disk, among the files this tool owns: those it writes,
    and ``written``, those the previous run wrote (by default read from the previous index, :func:`_written`); a
    file the user put beside them, which ``build`` carries over, is not extra. The unified diff
    of the stale files is built only when ``diff`` is true (``check`` prints it; ``write`` needs only the verdict).
    A file is read up to the size the build writes or SEP-2640's 16 MiB, whichever is larger: past that it is stale
    unread, like a file that is not a regular file (:attr:`Comparison.unread` says why). ``files``: the tree to
    compare, by default the skills (:attr:`Build.files`)."""
    files = build.files if files is None else files
    written = _owned_dirs(out, _index_limit(build))[3] if written is None else written
    disk = _disk_files(out) if disk is None else disk
    stale, missing, lines, unread = [], [], [], {}
    for rel, data in files.items():
        path = disk.get(rel)
        if path is None:
            missing.append(rel)
            continue
        current, why = _on_disk(path, max(len(data), MAX_BYTES))
        if current == data:
            continue
        stale.append(rel)
        if current is None:
            unread[rel] = why
            if diff:
                lines.append(printable(f"a/{rel} is not what the build writes: {why}") + "\n")
        elif diff:
            import difflib  # here: only a stale file's diff needs it, not the start-up of every build and check

            lines.extend(
                _diff_line(line)
                for line in difflib.unified_diff(
                    current.decode("utf-8", "replace").splitlines(keepends=True),
                    data.decode("utf-8").splitlines(keepends=True),
                    fromfile=f"a/{rel}",
                    tofile=f"b/{rel}",
                )
            )
    extra = [rel for rel in disk if rel not in files and rel in written]
    return Comparison(stale, missing, extra, "".join(lines), unread)


def _diff_line(line: str) -> str:
    """One line of ``check``'s diff, safe for a terminal or a CI log: what a file on disk holds (a pull request may
    have put escape sequences there) is escaped, each line ends in one newline, and a last line without one is
    marked as git marks it."""
    if line.endswith("\n"):
        return printable(line[:-1]) + "\n"
    if line and len((line + "x").splitlines()) > 1:  # ends in another line break (\r, \x0b, \u2028...): escaped
        return printable(line) + "\n"
    return printable(line) + "\n\\ No newline at end of file\n"


def _same(files: dict[str, bytes], written: set[str], disk: dict[str, str]) -> bool:
    """:func:`compare`'s ``clean``, stopping at the first difference and building no diff: what ``write`` needs."""
    if any(rel not in files and rel in written for rel in disk):
        return False
    for rel, data in files.items():
        path = disk.get(rel)
        if path is None or _on_disk(path, len(data))[0] != data:  # a longer file is not read: it differs
            return False
    return True


def conflicts(
    build: Build, root: Path, previous: set[str], unread: str = "", unproven: dict[str, str] | None = None
) -> list[Diagnostic]:
    """New bundle folders that would overwrite what the previous build did not write: a folder (or file) at the
    bundle's path that is not among ``previous`` (the folders proven this tool's), or a non-folder on the way to it.
    ``unread``: why the previous ``skills.json`` could not be read, when it could not (then it lists nothing);
    ``unproven``: why each folder it lists is not proven this tool's (:func:`projector.ownership.proven`)."""
    why, fix = (
        (
            f"the previous {INDEX_FILE}, which would list it, is not read: {unread}",
            f"restore {root.name}/{INDEX_FILE} as the build wrote it, or move that folder away",
        )
        if unread
        else (f"the previous {INDEX_FILE} does not list it", "rename the workflow, or move that folder away")
    )
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
            claimed = (unproven or {}).get(rel)
            problems.append(
                error(
                    b.span,
                    "output-conflict",
                    f"the skill '{b.name}' goes to {root.name}/{b.path}/, but {root.name}/{rel} is "
                    f"already there and is not a bundle this tool wrote ({claimed or why})",
                    f"{_CLAIMED if claimed else fix}; nothing was written",
                )
            )
            break
    return problems


_CLAIMED = "move that folder away (or restore the files this tool wrote in it), and build again"


def taken(build: Build, root: Path, previous: set[str], written: set[str], disk: dict[str, str]) -> list[Diagnostic]:
    """Files of a rebuilt bundle (its folder among ``previous``) whose path, or a path on the way to it inside the
    folder, holds something the previous run did not write (not among ``written``, or a folder where the file goes):
    the user's, which ``write`` carries over and so never overwrites. One problem for each such path."""
    bundles = {b.path: b for b in build.bundles if b.path in previous}
    problems, seen = [], set()
    for rel in build.files:
        parts = rel.split("/")
        b = next((bundles[f] for k in range(1, len(parts)) if (f := "/".join(parts[:k])) in bundles), None)
        if b is None:
            continue
        for k in range(b.path.count("/") + 2, len(parts) + 1):
            sub = "/".join(parts[:k])
            mine = sub in written if sub in disk else k < len(parts) or not os.path.lexists(root / sub)
            if mine:
                continue
            if sub not in seen:
                seen.add(sub)
                problems.append(
                    error(
                        b.span,
                        "output-conflict",
                        f"the skill '{b.name}' writes {root.name}/{rel}, but {root.name}/{sub} is already there "
                        f"and is not a file this tool wrote (the previous {INDEX_FILE} does not list it)",
                        "move or rename it, and build again; nothing was written",
                    )
                )
            break
    return problems


def write(build: Build, out: Path, stage: Path | None = None) -> bool:
    """Make ``out`` hold the build, atomically (see :mod:`projector.disk`). Returns False when it already did
    (nothing is touched). Raises :class:`BuildError` (``output-conflict``) when a new bundle would overwrite a
    folder this tool did not write, or a rebuilt one a file in its folder that it did not write (:func:`taken`).
    Of the old tree, only the files the previous run wrote are dropped: a user's file inside a bundle folder is
    carried over, even when its bundle is gone. ``stage``: the fresh build's stage the build was compiled into."""

    def plan(root: Path) -> Plan | None:
        owned, disk = _owned_dirs(root, _index_limit(build)), _disk_files(root)
        _refuse(build, root, owned, disk)
        written = owned[3]
        if _same(build.files, written, disk):  # no diff: only check prints one
            return None
        return Plan(build.files, {rel for rel in disk if rel in written} | {INDEX_FILE}, build.staged)

    return replace_tree(out, plan, stage=stage)


def refuse(build: Build, out: Path) -> None:
    """Raise what :func:`write` would for the tree on disk now (``output-conflict``), writing nothing."""
    root = folder(out)
    _refuse(build, root, _owned_dirs(root, _index_limit(build)), _disk_files(root))


def _refuse(
    build: Build, root: Path, owned: tuple[set[str], str, dict[str, str], set[str]], disk: dict[str, str]
) -> None:
    previous, unread, unproven, written = owned
    problems = conflicts(build, root, previous, unread, unproven) + taken(build, root, previous, written, disk)
    if problems:
        raise BuildError(problems)


# --------------------------------------------------------------------------------------------------- the evals tree


def evals_root(out: Path, evals_out: Path, *, replaced: bool = False) -> Path:
    """``evals_out`` as :func:`projector.disk.folder` makes it (:func:`projector.disk.target`, with ``out``, when
    both are to be ``replaced``); refused (:class:`UsageError`) where it is the output folder, inside it or holds it,
    for then writing one tree would replace the other."""
    checked = target if replaced else folder
    root, evals = checked(out), checked(evals_out, "--evals-out")
    if evals == root or root in evals.parents or evals in root.parents:
        where = "is" if evals == root else "is inside" if root in evals.parents else "holds"
        raise UsageError(
            f"--evals-out {evals_out}: {where} the output folder ({out}); the eval cases go to a folder of their "
            "own, beside it, which a skills server pointed at the output folder does not serve"
        )
    return evals


def previous_skills(build: Build, out: Path) -> set[str]:
    """The bundle folders of ``out`` that its ``skills.json`` lists and the disk proves this tool's: their eval files
    in the evals tree are the tool's to drop. Read before :func:`write` replaces the index."""
    return _owned_dirs(folder(out), _index_limit(build))[0]


def _evals_written(build: Build, previous: set[str]) -> set[str]:
    """The files of the evals tree that are the tool's: each skill's two, for the ``previous`` skills and those the
    build writes. Anything else there is the user's, and carried over."""
    return {f"{path}/{name}" for path in previous for name in (EVALS_FILE, QUERIES_FILE)} | set(build.evals)


def write_evals(build: Build, evals_out: Path, previous: set[str]) -> bool:
    """Make the folder ``evals_out`` hold the build's eval cases (:attr:`Build.evals`), atomically, as :func:`write`
    does the skills; False when it already did. ``previous``: :func:`previous_skills`, read before the skills were
    written. Raises as :func:`projector.disk.replace_tree` does."""
    written = _evals_written(build, previous)

    def plan(root: Path) -> Plan | None:
        disk = _disk_files(root)
        if _same(build.evals, written, disk):
            return None
        mine = {f"{path}/{name}" for path in previous for name in (EVALS_FILE, QUERIES_FILE)}
        problems = _evals_taken(build, root, mine, disk)
        if problems:
            raise BuildError(problems)
        return Plan(build.evals, {rel for rel in disk if rel in written})

    return replace_tree(evals_out, plan)


def _evals_taken(build: Build, root: Path, mine: set[str], disk: dict[str, str]) -> list[Diagnostic]:
    """The eval files the build writes where a file is that a previous build did not write (not among ``mine``, the
    previous skills' eval files) and that differs: the user's, in a folder named by ``--evals-out``, never written
    over."""
    problems = []
    for b in build.bundles:
        for rel in (f"{b.path}/{EVALS_FILE}", f"{b.path}/{QUERIES_FILE}"):
            if rel in disk and rel not in mine and _on_disk(disk[rel], len(build.evals[rel]))[0] != build.evals[rel]:
                problems.append(
                    error(
                        b.span,
                        "output-conflict",
                        f"the skill '{b.name}' writes its eval cases to {root.name}/{rel}, but a file is already "
                        "there that this tool did not write (the skills' previous index does not list the skill)",
                        "move or rename it, or choose another --evals-out, and build again; nothing was written",
                    )
                )
    return problems


def compare_evals(build: Build, out: Path, evals_out: Path, *, diff: bool = True) -> Comparison:
    """:func:`compare` for the evals tree: what differs among the files of it that are the tool's."""
    written = _evals_written(build, previous_skills(build, out))
    return compare(build, folder(evals_out), written=written, files=build.evals, diff=diff)
