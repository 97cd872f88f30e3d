"""output.py's edges, pinned: how the compile entry points pass their options on, how files that cannot be read
are reported, the worker count, compare's and write's verdicts, and output-conflict's wording (they kill the
mutants of ``output.py``; scripts/mutation)."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import EXAMPLES, GENERATED, ROOT

from projector import output
from projector.builder import WorkflowBuilder
from projector.errors import BuildError, LoadError

WF = (
    "name: {}\ndescription: d\ntools:\n  - name: t\n    annotations: {{readOnlyHint: true}}\n"
    "steps:\n  - name: s\n    tool: t\n"
)


def _wf(name: str = "alpha"):
    return WorkflowBuilder(name, "d").tool("t", annotations={"readOnlyHint": True}).step("s", tool="t").build()


def test_compile_workflows_passes_the_prefix_and_serves_the_prompt_by_default():
    plain = output.compile_workflows([_wf()])
    assert plain.files == output.compile_workflows([_wf()], skills_only=False).files
    assert plain.files != output.compile_workflows([_wf()], skills_only=True).files
    assert "p/alpha/SKILL.md" in output.compile_workflows([_wf()], ("p",)).files


def test_compile_workflows_refuses_a_name_collision():
    with pytest.raises(BuildError) as info:
        output.compile_workflows([_wf(), _wf()])
    assert info.value.diagnostics and all(d.severity == "error" for d in info.value.diagnostics)


def test_every_unreadable_file_is_a_load_error_at_its_own_path(tmp_path):
    found = [(tmp_path / "gone-1.yaml", "wf/gone-1.yaml"), (tmp_path / "gone-2.yaml", "wf/gone-2.yaml")]
    with pytest.raises(LoadError) as info:
        output.compile_files(found)
    assert [d.span.file for d in info.value.diagnostics] == ["wf/gone-1.yaml", "wf/gone-2.yaml"]
    assert all(d.code == "io" for d in info.value.diagnostics)


def test_a_file_that_does_not_load_is_a_load_error_not_a_build_error(tmp_path):
    (tmp_path / "a.yaml").write_text("name: [unclosed\n")
    with pytest.raises(LoadError) as info:
        output.compile_paths([str(tmp_path)])
    assert [d.span.file for d in info.value.diagnostics] == [(tmp_path / "a.yaml").as_posix()]


def test_default_jobs(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(16)), raising=False)
    assert [output.default_jobs(n) for n in (0, 1, 199, 200, 299, 300, 650, 1000, 10**6)] == [1, 1, 1, 2, 2, 3, 6, 8, 8]
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    assert [output.default_jobs(n) for n in (199, 200, 10**6)] == [1, 2, 2]
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert output.default_jobs(10**6) == 1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork is Linux's start method here")
def test_fork_is_available_on_linux():
    assert output._can_fork() is True


def _built(tmp_path: Path) -> tuple[output.Build, Path]:
    (tmp_path / "wf").mkdir()
    (tmp_path / "wf" / "a.yaml").write_text(WF.format("alpha"))
    build = output.compile_paths([str(tmp_path / "wf")])
    out = tmp_path / "out"
    assert output.write(build, out) is True
    return build, out


def test_compare_uses_the_written_set_and_the_listing_it_is_given(tmp_path):
    build, out = _built(tmp_path)
    (out / "alpha" / "stray.md").write_text("x")
    assert output.compare(build, out).extra == []  # the user's: build carries it over
    assert output.compare(build, out, written={"alpha/stray.md"}).extra == ["alpha/stray.md"]  # the tool's, then
    assert output.compare(build, out, disk={}).missing == sorted(build.files)


def _recorded(rel: str, data: bytes) -> dict:
    import hashlib

    return {"uri": f"skill://{rel}", "digest": "sha256:" + hashlib.sha256(data).hexdigest(), "size": len(data)}


def test_compare_counts_what_the_previous_index_lists_as_owned(tmp_path):
    """A folder the previous skills.json lists, holding a SKILL.md as it records it: the tool's, so its files are
    extra; listed with bytes that are not there, it is the user's (projector.ownership)."""
    build, out = _built(tmp_path)
    (out / "gone").mkdir()
    (out / "gone" / "SKILL.md").write_text("old")
    index = json.loads((out / "skills.json").read_text())
    index["skills"].append({"uri": "skill://gone/SKILL.md", "resources": [_recorded("gone/SKILL.md", b"old")]})
    (out / "skills.json").write_text(json.dumps(index))
    assert output.compare(build, out).extra == ["gone/SKILL.md"]
    index["skills"][-1]["resources"] = [_recorded("gone/SKILL.md", b"what it was")]  # a claim, not a proof
    (out / "skills.json").write_text(json.dumps(index))
    assert output.compare(build, out).extra == []


def test_the_previous_index_is_read_as_utf8_whatever_the_locale(tmp_path):
    """skills.json is UTF-8 (a description may hold any text): read under an ASCII locale, it must still list the
    folders this tool owns, or a rebuild would take its own stale files for the user's."""
    import locale

    build, out = _built(tmp_path)
    (out / "gone").mkdir()
    (out / "gone" / "SKILL.md").write_text("old")
    index = json.loads((out / "skills.json").read_text("utf-8"))
    index["skills"].append(
        {
            "uri": "skill://gone/SKILL.md",
            "description": "caf\u00e9 \u2014 d\u00e9j\u00e0 vu",
            "resources": [_recorded("gone/SKILL.md", b"old")],
        }
    )
    (out / "skills.json").write_text(json.dumps(index, ensure_ascii=False), "utf-8")
    before = locale.setlocale(locale.LC_CTYPE)
    try:
        locale.setlocale(locale.LC_CTYPE, "C")
        assert locale.getencoding().lower() != "utf-8"  # the case under test: not a UTF-8 locale
        assert output.compare(build, out).extra == ["gone/SKILL.md"]
    finally:
        locale.setlocale(locale.LC_CTYPE, before)


def test_compare_diffs_a_stale_file_that_is_not_utf8(tmp_path):
    build, out = _built(tmp_path)
    (out / "alpha" / "SKILL.md").write_bytes(b"\xff\n")
    cmp = output.compare(build, out)
    assert cmp.stale == ["alpha/SKILL.md"]
    assert cmp.diff.startswith("--- a/alpha/SKILL.md\n+++ b/alpha/SKILL.md\n@@ ")
    assert "-\ufffd\n" in cmp.diff and "\n+---\n+name: alpha\n" in cmp.diff


def test_the_diff_prints_nothing_from_disk_raw(tmp_path):
    """A stale file may hold anything (a pull request can put escape sequences in it, and CI prints check's diff):
    control characters are escaped, a line break other than \\n shows, and a last line without a newline is marked
    as git marks it, so the next file's header still starts a line of its own."""
    build, out = _built(tmp_path)
    skill = out / "alpha" / "SKILL.md"
    (out / "skills.json").write_bytes(b"{}")
    skill.write_bytes(build.files["alpha/SKILL.md"] + b"\x1b[2J\x07ring\r\nno end\x0bhere")
    cmp = output.compare(build, out)
    assert cmp.stale == ["alpha/SKILL.md", "skills.json"]
    assert not any(c in cmp.diff for c in "\x1b\x07\r\x0b")
    assert "\n-\\x1b[2J\\x07ring\\r\n-no end\\x0b\n-here\n\\ No newline at end of file\n" in cmp.diff
    assert "\n-{}\n\\ No newline at end of file\n" in cmp.diff  # skills.json: no newline, then the next hunk
    assert all(line.startswith(("---", "+++", "@@", " ", "-", "+", "\\")) for line in cmp.diff.splitlines())


def test_write_is_a_no_op_when_only_the_users_files_are_beside_the_tree(tmp_path):
    build, out = _built(tmp_path)
    (out / "notes.md").write_text("mine")
    assert output.write(build, out) is False
    (out / "alpha" / "stray.md").write_text("x")  # inside a bundle folder: the user's too
    assert output.write(build, out) is False and (out / "alpha" / "stray.md").read_text() == "x"


def test_a_new_prefixed_bundle_on_a_hand_written_folder_is_a_conflict_with_its_hint(tmp_path):
    (tmp_path / "wf").mkdir()
    (tmp_path / "wf" / "a.yaml").write_text(WF.format("alpha"))
    (tmp_path / "out" / "acme" / "alpha").mkdir(parents=True)
    build = output.compile_paths([str(tmp_path / "wf")], ("acme",))
    (d,) = output.conflicts(build, tmp_path / "out", set())
    assert d.code == "output-conflict" and "out/acme/alpha is already there" in d.message
    assert d.hint == "rename the workflow, or move that folder away; nothing was written"


def test_a_bundle_over_the_limits_is_a_build_error_in_both_entry_points(tmp_path, monkeypatch):
    from projector import bundle

    monkeypatch.setattr(bundle, "MAX_FILES", 0)
    with pytest.raises(BuildError) as info:
        output.compile_workflows([_wf("alpha"), _wf("beta")])
    assert [d.code for d in info.value.diagnostics] == ["too-many-files", "too-many-files"]
    (tmp_path / "a.yaml").write_text(WF.format("alpha"))
    with pytest.raises(BuildError) as info:
        output.compile_paths([str(tmp_path)])
    assert [d.code for d in info.value.diagnostics] == ["too-many-files"]


def test_a_build_with_warnings_is_not_an_error(tmp_path):
    (tmp_path / "a.yaml").write_text(
        WF.format("alpha").replace("readOnlyHint: true", "destructiveHint: true") + "    guidance: Only if asked.\n"
    )
    build = output.compile_paths([str(tmp_path)])
    assert [d.code for d in build.diagnostics] == ["gate-on-side-effect"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork is Linux's start method here")
@pytest.mark.parametrize("jobs", [1, 2, 5])
def test_jobs_chooses_where_the_files_are_compiled(tmp_path, monkeypatch, jobs):
    """jobs=1 compiles here; more compiles here and in worker processes, never more than there are files."""
    seen = tmp_path / "pids"
    seen.mkdir()
    real = output._compile_one

    def spy(data, display, options):
        (seen / f"{os.getpid()}-{Path(display).name}").write_text("")
        return real(data, display, options)

    monkeypatch.setattr(output, "_compile_one", spy)
    (tmp_path / "wf").mkdir()
    for n in ("alpha", "beta", "gamma"):
        (tmp_path / "wf" / f"{n}.yaml").write_text(WF.format(n))
    build = output.compile_paths([str(tmp_path / "wf")], jobs=jobs)
    assert sorted(b.name for b in build.bundles) == ["alpha", "beta", "gamma"]
    pids = {p.name.split("-")[0] for p in seen.iterdir()}
    assert len(list(seen.iterdir())) == 3
    if jobs == 1:
        assert pids == {str(os.getpid())}
    else:  # this process compiles the first chunk; which worker takes which other chunk is the pool's choice
        assert str(os.getpid()) in pids and 2 <= len(pids) <= min(jobs, 3)


def _in_child(fn) -> int:
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 99
        try:
            code = fn()
        finally:
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_worker_asks_to_be_killed_with_its_parent():
    import ctypes
    import signal

    def worker() -> int:
        output.die_with_parent(os.getppid())
        sig = ctypes.c_int(0)
        ctypes.CDLL(None, use_errno=True).prctl(2, ctypes.byref(sig))  # PR_GET_PDEATHSIG
        return sig.value

    assert _in_child(worker) == signal.SIGKILL
    assert _in_child(lambda: output.die_with_parent(os.getppid() + 1) or 0) == 1  # its parent is gone already


class _Exited(Exception):
    pass


def _no_exit(monkeypatch) -> list[int]:
    """os._exit made harmless for an in-process call: it records the code and raises instead."""
    codes: list[int] = []

    def fake_exit(code: int) -> None:
        codes.append(code)
        raise _Exited

    monkeypatch.setattr(os, "_exit", fake_exit)
    return codes


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_die_with_parent_in_this_process_sets_the_death_signal_and_keeps_running(monkeypatch):
    """The worker's call made in the test process itself (the forked case is above; a mutation tool sees only
    in-process calls). The death signal is put back afterwards."""
    import ctypes
    import signal

    libc = ctypes.CDLL(None, use_errno=True)

    def death_signal() -> int:
        sig = ctypes.c_int(-1)
        assert libc.prctl(2, ctypes.byref(sig)) == 0  # PR_GET_PDEATHSIG
        return sig.value

    before = death_signal()
    codes = _no_exit(monkeypatch)
    try:
        libc.prctl(1, 0)
        output.die_with_parent(os.getppid())
        assert (death_signal(), codes) == (signal.SIGKILL, [])
        libc.prctl(1, 0)
        with pytest.raises(_Exited):  # the parent is not who it should be: gone already
            output.die_with_parent(os.getppid() + 1)
        assert (death_signal(), codes) == (signal.SIGKILL, [1])
    finally:
        libc.prctl(1, before)


class _RefusingLibc:
    def __init__(self, name):
        assert name is None

    def prctl(self, option, value):
        return -1


def _no_libc(*args, **kwargs):
    raise OSError("no C library here")


@pytest.mark.parametrize("libc", [_no_libc, _RefusingLibc], ids=["no-prctl", "prctl-refused"])
def test_without_prctl_a_thread_watches_the_parent(monkeypatch, libc):
    """Where prctl is missing (not Linux) or fails, a daemon thread polls the parent every half second and ends the
    worker when it changes. Run here by hand: the thread is captured, not started."""
    import ctypes
    import threading
    import time

    threads: list = []

    class Thread:
        def __init__(self, *, target, daemon):
            threads.append([target, daemon, False])

        def start(self):
            threads[-1][2] = True

    ppids = iter([100, 100, 100, 7])  # die_with_parent's own check, then the watch: alive, alive, gone
    sleeps: list[float] = []
    monkeypatch.setattr(ctypes, "CDLL", libc)
    monkeypatch.setattr(threading, "Thread", Thread)
    monkeypatch.setattr(os, "getppid", lambda: next(ppids))
    monkeypatch.setattr(time, "sleep", sleeps.append)
    codes = _no_exit(monkeypatch)
    output.die_with_parent(100)
    [[watch, daemon, started]] = threads
    assert (daemon, started, codes, sleeps) == (True, True, [], [])
    with pytest.raises(_Exited):
        watch()
    assert (codes, sleeps) == ([1], [0.5, 0.5])


def test_default_jobs_without_sched_getaffinity_counts_cpus(monkeypatch):
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    assert [output.default_jobs(n) for n in (199, 10**6)] == [1, 4]
    monkeypatch.setattr(os, "cpu_count", lambda: None)  # unknown: one
    assert output.default_jobs(10**6) == 1


def test_default_jobs_is_a_whole_number(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    assert all(type(output.default_jobs(n)) is int for n in (0, 199, 200, 250, 650, 10**6))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork is Linux's start method here")
def test_workers_are_forked_and_die_with_the_build(tmp_path, monkeypatch):
    import concurrent.futures

    started = []
    real = concurrent.futures.ProcessPoolExecutor

    def pool(*args, **kwargs):
        started.append(
            (args, kwargs["mp_context"].get_start_method(), kwargs.get("initializer"), kwargs.get("initargs"))
        )
        return real(*args, **kwargs)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", pool)
    (tmp_path / "a.yaml").write_text(WF.format("alpha"))
    (tmp_path / "b.yaml").write_text(WF.format("beta"))
    (tmp_path / "c.yaml").write_text(WF.format("gamma"))
    output.compile_paths([str(tmp_path)], jobs=3)  # this process compiles one share, two workers the others
    assert started == [((2,), "fork", output.die_with_parent, (os.getpid(),))]


# output.py's survivors of scripts/mutation, killed through what ``build`` and ``check`` print, write and refuse:
# the wording of an output-conflict when the previous skills.json cannot be read, how large a previous skills.json is
# read, a linked folder inside a bundle, a built workflow file that can no longer be read, and a parallel build
# whatever the default start method of ``multiprocessing`` is.


def _workflows(folder: Path, *names: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names or ("alpha", "beta"):
        (folder / f"{name}.yaml").write_text(WF.format(name), "utf-8")
    return folder


def _tree(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def _conflict(out: str, name: str, why: str, hint: str) -> str:
    return (
        f"{name}:1:7: error[output-conflict]: the skill '{Path(name).stem}' goes to {out}/{Path(name).stem}/, but "
        f"{out}/{Path(name).stem} is already there and is not a bundle this tool wrote ({why})\n"
        f"  hint: {hint}; nothing was written\n"
    )


# ------------------------------------------------------------------------------------------ output-conflict's why

UNREAD_HINT = "restore out/skills.json as the build wrote it, or move that folder away"
UNLISTED_HINT = "rename the workflow, or move that folder away"


@pytest.mark.parametrize(
    "index, why, hint",
    [
        (
            "{",
            "the previous skills.json, which would list it, is not read: not JSON: Expecting property name enclosed "
            "in double quotes",
            UNREAD_HINT,
        ),
        ("[1]", "the previous skills.json, which would list it, is not read: it is not a skills index", UNREAD_HINT),
        (
            '{"skills": [1]}',
            "the previous skills.json, which would list it, is not read: it is not a skills index",
            UNREAD_HINT,
        ),
        (
            '{"skills": [{"uri": 1}]}',
            "the previous skills.json, which would list it, is not read: it is not a skills index",
            UNREAD_HINT,
        ),
        (
            '{"skills": [], "skills": []}',
            'the previous skills.json, which would list it, is not read: the key "skills" appears twice in one object',
            UNREAD_HINT,
        ),
        ('{"skills": []}', "the previous skills.json does not list it", UNLISTED_HINT),
    ],
    ids=["not JSON", "not an index", "an entry not an object", "a uri not a string", "a key twice", "lists nothing"],
)
def test_a_conflict_says_whether_the_previous_index_was_read(cli, tmp_path, monkeypatch, index, why, hint):
    """Over an unreadable skills.json the conflict says why it was not read, and how to restore it; over one that
    lists nothing, that it does not list the folder (conflicts' ``unread``, as write passes it on)."""
    monkeypatch.chdir(tmp_path)
    _workflows(Path("wf"))
    assert cli("build", "wf", "--out", "out", "--no-cache").code == 0
    Path("out/skills.json").write_text(index, "utf-8")
    before = _tree(Path("out"))
    run = cli("build", "wf", "--out", "out", "--no-cache")
    assert run.code == 1 and run.out == ""
    assert run.err == (
        _conflict("out", "wf/alpha.yaml", why, hint)
        + _conflict("out", "wf/beta.yaml", why, hint)
        + "error: 2 problems; nothing was written\n"
    )
    assert _tree(Path("out")) == before


# ------------------------------------------------------------------------------- how much of the old index is read


def test_the_previous_index_is_read_up_to_twice_the_new_one(cli, tmp_path, monkeypatch):
    """A build reads back a previous skills.json of up to max(MAX_INDEX_BYTES, twice the one it derives) bytes. With
    the fixed bound made tiny, twice the new index decides: exactly that many bytes is read (the build replaces the
    padded index), one more is not (the bundles it lists are not known to be this tool's: output-conflict)."""
    monkeypatch.setattr(output, "MAX_INDEX_BYTES", 1)
    monkeypatch.chdir(tmp_path)
    _workflows(Path("wf"))
    index = Path("out/skills.json")
    assert cli("build", "wf", "--out", "out", "--no-cache").code == 0
    built = index.read_bytes()
    limit = 2 * len(built)
    run = cli("build", "wf", "--out", "out", "--no-cache")  # its own index, read back under the limit
    assert (run.code, run.out.splitlines()[-1]) == (0, "up to date: out: 2 skills; 0 warnings, 0 notes")
    index.write_bytes(built + b" " * (limit - len(built)))  # still JSON, exactly at the limit
    run = cli("build", "wf", "--out", "out", "--no-cache")
    assert (run.code, run.err, run.out.splitlines()[-1]) == (0, "", "wrote out: 2 skills; 0 warnings, 0 notes")
    assert index.read_bytes() == built
    index.write_bytes(built + b" " * (limit + 1 - len(built)))
    run = cli("build", "wf", "--out", "out", "--no-cache")
    why = f"the previous skills.json, which would list it, is not read: it is {limit + 1} bytes, over the limit of {limit}"
    assert run.code == 1
    assert run.err == (
        _conflict("out", "wf/alpha.yaml", why, UNREAD_HINT)
        + _conflict("out", "wf/beta.yaml", why, UNREAD_HINT)
        + "error: 2 problems; nothing was written\n"
    )


# ------------------------------------------------------------------------------- a linked folder inside a bundle


def test_a_linked_folder_in_a_bundle_is_carried_as_a_link_not_entered(cli, tmp_path, monkeypatch):
    """check does not walk into a symlink to a folder that the user put in a bundle folder, nor call it extra; when
    the bundle goes, build removes the bundle's files and keeps the link, never what it points to."""
    monkeypatch.chdir(tmp_path)
    _workflows(Path("wf"))
    assert cli("build", "wf", "--out", "out", "--no-cache").code == 0
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "deeper").mkdir(parents=True)
    (elsewhere / "f.md").write_text("mine", "utf-8")
    (elsewhere / "deeper" / "g.md").write_text("mine too", "utf-8")
    Path("out/beta/linked").symlink_to(elsewhere, target_is_directory=True)
    run = cli("check", "wf", "--out", "out", "--no-cache")
    assert run.code == 0 and run.out == "out is up to date: 2 skills; 0 warnings, 0 notes\n"
    Path("wf/beta.yaml").unlink()
    run = cli("build", "wf", "--out", "out", "--no-cache")
    assert run.code == 0 and run.out.splitlines()[-1] == "wrote out: 1 skill; 0 warnings, 0 notes"
    assert sorted(p.name for p in Path("out/beta").iterdir()) == ["linked"]
    assert os.readlink("out/beta/linked") == str(elsewhere)
    assert sorted(p.relative_to(elsewhere).as_posix() for p in elsewhere.rglob("*")) == [
        "deeper",
        "deeper/g.md",
        "f.md",
    ]
    assert cli("check", "wf", "--out", "out", "--no-cache").code == 0


# --------------------------------------------------------------------- a file that cannot be read, beside its entry


def test_a_built_file_that_is_now_a_link_outside_is_refused_unread(cli, tmp_path, monkeypatch):
    """A workflow that was built and is now a link outside the folder is refused unread (outside-root)."""
    monkeypatch.chdir(tmp_path)
    _workflows(Path("wf"))
    assert cli("build", "wf", "--out", "out").code == 0
    outside = tmp_path / "outside.yaml"
    outside.write_text(WF.format("beta"), "utf-8")
    Path("wf/beta.yaml").unlink()
    Path("wf/beta.yaml").symlink_to(outside)
    run = cli("build", "wf", "--out", "out")
    assert run.code == 1 and run.out == ""
    assert run.err == (
        "wf/beta.yaml: error[outside-root]: the file is a link to a file outside every folder "
        "being compiled; it was not read\n"
        "  hint: name the file on the command line to compile it anyway, or copy it into the "
        "folder\nerror: 1 problem; nothing was written\n"
    )


# ------------------------------------------------------------------ a parallel build and the default start method


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork and forkserver")
def test_a_parallel_build_forks_whatever_the_default_start_method(cli, tmp_path, monkeypatch):
    """The workers are forked (they inherit the loaded modules, and die with the build: see die_with_parent), even
    where the default start method is another (forkserver is Python 3.14's on Linux, and its workers' parent is the
    server, not the build): the tree is the one a build in one process writes."""
    monkeypatch.chdir(tmp_path)
    _workflows(Path("wf"), "alpha", "beta", "gamma", "delta")
    assert cli("build", "wf", "--out", "one", "--no-cache", "--jobs", "1").code == 0
    was = multiprocessing.get_start_method(allow_none=True)
    multiprocessing.set_start_method("forkserver", force=True)
    try:
        run = cli("build", "wf", "--out", "four", "--no-cache", "--jobs", "4")
    finally:
        multiprocessing.set_start_method(was, force=True)
    assert (run.code, run.err, run.out.splitlines()[-1]) == (0, "", "wrote four: 4 skills; 0 warnings, 0 notes")
    assert _tree(Path("four")) == _tree(Path("one"))


def test_build_and_check_write_nothing_but_the_output_tree(cli, tmp_path, monkeypatch):
    """No cache: after ``build``, ``check`` and ``build`` again (a large set too, compiled by workers), the folders
    hold the workflows and the output tree, nothing else: no ``.projector_cache`` beside the workflows or in the
    working folder, and nothing in the user's cache folder."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    examples = Path(__file__).resolve().parent.parent / "workflows"
    small = {f"workflows/{f.name}": f.read_bytes() for f in sorted(examples.glob("*.yaml"))}
    large = {f"many/w{i:03d}.yaml": WF.format(f"w{i:03d}").encode() for i in range(output.PARALLEL_FROM)}
    for rel, data in {**small, **large}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(data)
    for source, out in (("workflows", "generated_skills"), ("many", "many_skills")):
        for command in ("build", "check", "build"):
            run = cli(command, source, "--out", out, cwd=tmp_path)
            assert run.code == 0, run.err
    left = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if not p.is_dir())
    assert [p for p in left if ".projector_cache" in p] == []
    trees = ("generated_skills/", "generated_evals/", "many_skills/", "many_evals/")  # each with its eval cases
    assert [p for p in left if not p.startswith(trees)] == sorted({**small, **large})


# ------------------------------------------------------------------------------------ workers die with it

WORKER = """
import os, sys, time
from projector import output

def hang(chunk, *options):
    open(os.path.join(sys.argv[1], str(os.getpid())), "w").close()
    time.sleep(600)

output._compile_chunk = hang
from projector.cli import main
main(["build", sys.argv[2], "--out", os.path.join(os.path.dirname(sys.argv[1]), "out"), "--jobs", "2", "--no-cache"])
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().split(b") ", 1)[1][:1] != b"Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_workers_die_when_the_build_is_killed(tmp_path):
    import subprocess
    import sys
    import time

    pids = tmp_path / "pids"
    pids.mkdir()
    proc = subprocess.Popen([sys.executable, "-c", WORKER, str(pids), str(EXAMPLES)], cwd=tmp_path)
    try:
        deadline = time.monotonic() + 60  # a bound on waiting, not a timed assertion
        while len(list(pids.iterdir())) < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        workers = [int(p.name) for p in pids.iterdir()]
        assert len(workers) == 2 and all(_alive(w) for w in workers), "the workers did not start"
        proc.kill()
        proc.wait(30)
        while any(_alive(w) for w in workers) and time.monotonic() < deadline + 60:
            time.sleep(0.05)
        assert not any(_alive(w) for w in workers), "a worker outlived its killed parent"
    finally:
        if proc.poll() is None:
            proc.kill()
        for p in pids.iterdir():
            try:
                os.kill(int(p.name), signal.SIGKILL)
            except ProcessLookupError:
                pass


# ---------------------------------------------------------------------- the output tree as input

# The output tree as input (issue 17, items 9 and 14): a committed tree may hold a link to ``/dev/zero``, a FIFO, or
# a ``skills.json`` nested deeper than any parser's stack. ``check``, ``build`` and ``serve`` read it through
# :mod:`projector.bounded` (regular files only, a size cap before reading, no link followed, bounded JSON), and answer
# with a diagnostic: never a traceback, never a hang, never all the memory.
#
# Each hostile case runs in a subprocess with a timeout and an address-space limit, so that on a build that still reads
# without bounds it fails as a test (a timeout, a MemoryError) instead of hanging the suite or the machine.

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="FIFOs, /dev/zero and RLIMIT_AS")

TIMEOUT = 60  # seconds for one run, far beyond what a build of the examples takes; a hang fails the test
MEMORY = 1 << 30  # the address space one run may use: /dev/zero read whole would pass it

_BOXED = textwrap.dedent("""
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, ({memory}, {memory}))
    {body}
""")


def boxed(body: str, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    code = _BOXED.format(memory=MEMORY, body=textwrap.dedent(body).strip())
    try:
        return subprocess.run(
            [sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"no answer in {TIMEOUT} s: a read of the output tree blocks")


def boxed_cli(*args: str) -> subprocess.CompletedProcess:
    return boxed("from projector.cli import main\nsys.exit(main(sys.argv[1:]))", *args)


def serve_load(root: Path) -> subprocess.CompletedProcess:
    return boxed(
        """
        from projector.server.errors import AttachError
        from projector.server.skills import SkillTree
        try:
            SkillTree.load(sys.argv[1])
        except AttachError as exc:
            print(exc)
            sys.exit(1)
        print("served")
    """,
        str(root),
    )


@pytest.fixture
def out(tmp_path) -> Path:
    """A copy of the committed tree: what ``build workflows`` writes (and its eval cases, beside it)."""
    dst = tmp_path / "out"
    shutil.copytree(GENERATED, dst)
    shutil.copytree(GENERATED.with_name("generated_evals"), tmp_path / "out-evals")
    return dst


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def hostile(kind: str, path: Path, tmp_path: Path) -> None:
    """Put ``kind`` at ``path`` instead of the file there."""
    path.unlink()
    if kind == "link to /dev/zero":
        path.symlink_to("/dev/zero")
    elif kind == "link to a FIFO":
        path.symlink_to(fifo(tmp_path / "pipe"))
    elif kind == "FIFO":
        fifo(path)
    else:
        raise AssertionError(kind)


KINDS = ["link to /dev/zero", "link to a FIFO", "FIFO"]
REASON = {
    "link to /dev/zero": "it is a symbolic link, which is not followed",
    "link to a FIFO": "it is a symbolic link, which is not followed",
    "FIFO": "it is a FIFO, not a regular file",
}


def no_traceback(done: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr, done.stderr[-3000:]


# ------------------------------------------------------------------------------------------------------- check


@linux_only
@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_check_calls_a_skill_md_that_is_not_a_regular_file_stale_with_the_reason(out, tmp_path, kind):
    hostile(kind, out / "hello-world" / "SKILL.md", tmp_path)
    done = boxed_cli("check", str(EXAMPLES), "--out", str(out), "--no-cache")
    no_traceback(done)
    assert done.returncode == 1, done.stderr
    assert f"a/hello-world/SKILL.md is not what the build writes: {REASON[kind]}\n" in done.stdout
    assert f"stale: {out.as_posix()}/hello-world/SKILL.md\n" in done.stdout
    assert "(1 stale, 0 missing, 0 extra)" in done.stdout


@linux_only
@pytest.mark.parametrize("kind", KINDS)
def test_check_calls_a_skills_json_that_is_not_a_regular_file_stale_with_the_reason(out, tmp_path, kind):
    hostile(kind, out / "skills.json", tmp_path)
    done = boxed_cli("check", str(EXAMPLES), "--out", str(out), "--no-cache")
    no_traceback(done)
    assert done.returncode == 1, done.stderr
    assert f"a/skills.json is not what the build writes: {REASON[kind]}\n" in done.stdout
    assert "(1 stale, 0 missing, 0 extra)" in done.stdout


def deep_json(depth: int = 10_000) -> str:
    return '{"skills": ' + "[" * depth + "]" * depth + "}"


@linux_only
@pytest.mark.slow
def test_check_with_a_deeply_nested_skills_json_is_stale_not_a_traceback(out):
    (out / "skills.json").write_text(deep_json(), "utf-8")
    done = boxed_cli("check", str(EXAMPLES), "--out", str(out), "--no-cache")
    no_traceback(done)
    assert done.returncode == 1, done.stderr
    assert f"stale: {out.as_posix()}/skills.json\n" in done.stdout and "(1 stale, 0 missing, 0 extra)" in done.stdout


# ------------------------------------------------------------------------------------------------------- build


@linux_only
@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_build_replaces_a_skill_md_that_is_not_a_regular_file(out, tmp_path, kind):
    skill = out / "hello-world" / "SKILL.md"
    hostile(kind, skill, tmp_path)
    done = boxed_cli("build", str(EXAMPLES), "--out", str(out), "--no-cache")
    no_traceback(done)
    assert done.returncode == 0, done.stderr
    assert not skill.is_symlink() and skill.read_bytes() == (GENERATED / "hello-world" / "SKILL.md").read_bytes()
    assert boxed_cli("check", str(EXAMPLES), "--out", str(out), "--no-cache").returncode == 0


@linux_only
@pytest.mark.parametrize("kind", KINDS)
def test_build_over_a_skills_json_that_is_not_a_regular_file_names_it(out, tmp_path, kind):
    """The previous index cannot say which folders this tool wrote, so none counts as its own: the build refuses to
    replace them, and says why."""
    hostile(kind, out / "skills.json", tmp_path)
    done = boxed_cli("build", str(EXAMPLES), "--out", str(out), "--no-cache")
    no_traceback(done)
    assert done.returncode == 1
    assert "error[output-conflict]" in done.stderr
    assert f"the previous skills.json, which would list it, is not read: {REASON[kind]}" in done.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in GENERATED.iterdir())  # nothing written


@linux_only
@pytest.mark.slow
def test_build_over_a_deeply_nested_skills_json_names_it(out):
    (out / "skills.json").write_text(deep_json(), "utf-8")
    done = boxed_cli("build", str(EXAMPLES), "--out", str(out), "--no-cache")
    no_traceback(done)
    assert done.returncode == 1
    assert "the previous skills.json, which would list it, is not read: nested deeper than 64 levels" in done.stderr
    assert (out / "skills.json").read_text("utf-8") == deep_json()


@linux_only
@pytest.mark.slow
def test_build_over_a_skills_json_alone_in_the_folder_replaces_it(tmp_path):
    """With no bundle folder in the way there is nothing to protect: the unreadable index is the tool's to replace."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "skills.json").symlink_to("/dev/zero")
    done = boxed_cli("build", str(EXAMPLES), "--out", str(out), "--no-cache")
    no_traceback(done)
    assert done.returncode == 0, done.stderr
    assert (out / "skills.json").read_bytes() == (GENERATED / "skills.json").read_bytes()


# ------------------------------------------------------------------------------------------------------- serve


@linux_only
@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_serve_refuses_a_skill_md_that_is_not_a_regular_file_naming_it(out, tmp_path, kind):
    skill = out / "hello-world" / "SKILL.md"
    hostile(kind, skill, tmp_path)
    done = serve_load(out)
    no_traceback(done)
    assert done.returncode == 1, done.stdout + done.stderr
    if kind == "FIFO":
        assert (
            f"error[missing-file]: skill://hello-world/SKILL.md: cannot read {skill.as_posix()}: "
            "it is a FIFO, not a regular file"
        ) in done.stdout
    else:  # the link leads out of the tree; one inside it is refused too (tests/server/test_tree.py)
        assert f"error[missing-file]: skill://hello-world/SKILL.md: {skill.as_posix()} " in done.stdout


@linux_only
@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_serve_refuses_a_skills_json_that_is_not_a_regular_file_naming_it(out, tmp_path, kind):
    hostile(kind, out / "skills.json", tmp_path)
    done = serve_load(out)
    no_traceback(done)
    assert done.returncode == 1, done.stdout + done.stderr
    assert (
        f"{(out / 'skills.json').as_posix()}: error[no-index]: cannot read the skills index: {REASON[kind]}"
        in done.stdout
    )


@linux_only
@pytest.mark.slow
def test_serve_refuses_a_deeply_nested_skills_json_naming_it(out):
    (out / "skills.json").write_text(deep_json(), "utf-8")
    done = serve_load(out)
    no_traceback(done)
    assert done.returncode == 1, done.stdout + done.stderr
    assert (
        f"{(out / 'skills.json').as_posix()}: error[bad-index]: the skills index is not valid JSON: "
        "nested deeper than 64 levels"
    ) in done.stdout


@linux_only
@pytest.mark.slow
def test_the_bad_inputs_corpus_case_is_refused_by_serve_check_and_build(out):
    """tests/bad_inputs/bad-index-too-deep.skills.json: the hostile index, for every reader of the tree."""
    shutil.copyfile(ROOT / "tests" / "bad_inputs" / "bad-index-too-deep.skills.json", out / "skills.json")
    assert "error[bad-index]" in serve_load(out).stdout
    assert boxed_cli("check", str(EXAMPLES), "--out", str(out), "--no-cache").returncode == 1
    done = boxed_cli("build", str(EXAMPLES), "--out", str(out), "--no-cache")
    no_traceback(done)
    assert done.returncode == 1 and "nested deeper than 64 levels" in done.stderr


# ------------------------------------------------------------------------------------- the verdicts, in process


def _examples():
    return output.compile_paths([str(EXAMPLES)])


@linux_only
def test_compare_records_why_a_file_is_not_read(out, tmp_path):
    (out / "hello-world" / "SKILL.md").unlink()
    (out / "hello-world" / "SKILL.md").symlink_to(GENERATED / "hello-world" / "SKILL.md")  # the right bytes, by a link
    fifo(out / "code-mode" / "stray")  # the user's, in a bundle folder: carried over, not extra
    cmp = output.compare(_examples(), out)
    assert cmp.stale == ["hello-world/SKILL.md"] and cmp.missing == [] and cmp.extra == []
    assert cmp.unread == {"hello-world/SKILL.md": "it is a symbolic link, which is not followed"}
    assert (
        cmp.diff == "a/hello-world/SKILL.md is not what the build writes: it is a symbolic link, which is not "
        "followed\n"
    )
    assert output.compare(_examples(), out, diff=False).diff == ""


@linux_only
def test_compare_reads_a_stale_file_up_to_the_sep_limit_or_the_expected_size(out, monkeypatch):
    build = _examples()
    skill = out / "hello-world" / "SKILL.md"
    expected = build.files["hello-world/SKILL.md"]
    skill.write_bytes(expected + b"x")  # one byte more: still read, and diffed
    monkeypatch.setattr(output, "MAX_BYTES", len(expected) + 1)
    assert output.compare(build, out).unread == {}
    skill.write_bytes(expected + b"xy")
    assert output.compare(build, out).unread == {
        "hello-world/SKILL.md": f"it is {len(expected) + 2} bytes, over the limit of {len(expected) + 1}"
    }
    monkeypatch.setattr(output, "MAX_BYTES", 1)  # then the size the build writes bounds the read
    skill.write_bytes(expected[:-1] + b"y")
    cmp = output.compare(build, out)
    assert cmp.stale == ["hello-world/SKILL.md"] and cmp.unread == {}
    assert cmp.diff.startswith("--- a/hello-world/SKILL.md\n+++ b/hello-world/SKILL.md\n@@ ")
    assert "procedure does.y\n\\ No newline at end of file\n" in cmp.diff
    skill.write_bytes(expected + b"x")
    assert output.compare(build, out).unread == {
        "hello-world/SKILL.md": f"it is {len(expected) + 1} bytes, over the limit of {len(expected)}"
    }


@linux_only
def test_write_reads_no_more_than_the_size_it_expects(out, monkeypatch):
    from projector import bounded

    build = _examples()
    limits = []
    real = bounded.read_regular
    monkeypatch.setattr(output, "read_regular", lambda p, limit: limits.append(limit) or real(p, limit))
    assert output.write(build, out) is False
    index = build.files["skills.json"]
    assert sorted(limits) == sorted(
        [max(output.MAX_INDEX_BYTES, 2 * len(index)), *(len(data) for data in build.files.values())]
    )


# ------------------------------------------------------------- a file the user put inside a generated bundle folder

NO_TOOLS = 'name: {}\ndescription: d\nsteps:\n  - name: s\n    resources: ["file:///guide.md"]\n'  # no references/


def _listing(out: Path) -> dict[str, tuple[str, bytes | str]]:
    """Every entry under ``out``, no link followed: a folder, a link and where it points, a file and its bytes."""
    found: dict[str, tuple[str, bytes | str]] = {}
    for folder, dirs, files in os.walk(out):
        for name in dirs + files:
            p = Path(folder, name)
            rel = p.relative_to(out).as_posix()
            if p.is_symlink():
                found[rel] = ("link", os.readlink(p))
            elif p.is_dir():
                found[rel] = ("folder", "")
            else:
                found[rel] = ("file", p.read_bytes())
    return dict(sorted(found.items()))


@pytest.mark.parametrize("prefix", [(), ("acme", "team")], ids=["flat", "uri-prefix"])
def test_a_rebuild_keeps_the_files_and_links_the_user_put_in_a_bundle_folder(cli, tmp_path, monkeypatch, prefix):
    """A file, a file in references/, and links (to a folder and to a file outside) the user put in a bundle folder
    are carried into the new tree untouched, links not followed; check does not call them extra."""
    monkeypatch.chdir(tmp_path)
    _workflows(Path("wf"))
    args = ["--uri-prefix", "/".join(prefix)] if prefix else []
    assert cli("build", "wf", "--out", "out", *args).code == 0
    bundle = Path("out", *prefix, "alpha")
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "deeper").mkdir(parents=True)
    (elsewhere / "f.md").write_text("theirs", "utf-8")
    (bundle / "NOTES.md").write_bytes(b"my notes\r\n")
    (bundle / "references" / "mine.md").write_text("my reference", "utf-8")
    (bundle / "linked").symlink_to(elsewhere, target_is_directory=True)
    (bundle / "references" / "to-file.md").symlink_to(elsewhere / "f.md")
    mine = {rel: v for rel, v in _listing(Path("out")).items() if rel.rsplit("/", 1)[-1] in MINE}
    assert len(mine) == 4
    assert cli("check", "wf", "--out", "out", *args).code == 0  # not extra: the build keeps them
    assert cli("build", "wf", "--out", "out", *args).out.splitlines()[-1].startswith("up to date: out")
    Path("wf/alpha.yaml").write_text(WF.format("alpha").replace("description: d", "description: changed"), "utf-8")
    run = cli("build", "wf", "--out", "out", *args)
    assert run.code == 0, run.err
    after = _listing(Path("out"))
    assert {rel: after.get(rel) for rel in mine} == mine
    assert b"changed" in (bundle / "SKILL.md").read_bytes()
    assert sorted(p.relative_to(elsewhere).as_posix() for p in elsewhere.rglob("*")) == ["deeper", "f.md"]
    assert (elsewhere / "f.md").read_text("utf-8") == "theirs"
    assert cli("check", "wf", "--out", "out", *args).code == 0


MINE = {"NOTES.md", "mine.md", "linked", "to-file.md"}


@pytest.mark.parametrize("prefix", [(), ("acme",)], ids=["flat", "uri-prefix"])
def test_a_file_the_previous_build_wrote_and_the_new_one_does_not_is_removed_the_users_kept(
    cli, tmp_path, monkeypatch, prefix
):
    """Stale: alpha's references/tools.md (no tools any more) and all of beta's files (its workflow is gone) are
    removed; the user's files in those folders stay, and what is left of beta is theirs, not a bundle."""
    monkeypatch.chdir(tmp_path)
    _workflows(Path("wf"))
    args = ["--uri-prefix", "/".join(prefix)] if prefix else []
    assert cli("build", "wf", "--out", "out", *args).code == 0
    base = Path("out", *prefix)
    (base / "alpha" / "references" / "mine.md").write_text("mine", "utf-8")
    (base / "beta" / "NOTES.md").write_text("beta notes", "utf-8")
    (base / "beta" / "references" / "mine.md").write_text("beta reference", "utf-8")
    Path("wf/alpha.yaml").write_text(NO_TOOLS.format("alpha"), "utf-8")
    Path("wf/beta.yaml").unlink()
    run = cli("build", "wf", "--out", "out", *args)
    assert run.code == 0, run.err
    assert sorted(rel for rel, (kind, _) in _listing(base).items() if kind == "file") == [
        "alpha/SKILL.md",
        "alpha/references/mine.md",
        "beta/NOTES.md",
        "beta/references/mine.md",
        *([] if prefix else ["skills.json"]),
    ]
    cases = Path("out-evals", *prefix)  # beta's cases go with it
    assert sorted(p.relative_to(cases).as_posix() for p in cases.rglob("*")) == [
        "alpha",
        "alpha/eval_queries.json",
        "alpha/evals.json",
    ]
    assert (base / "beta" / "NOTES.md").read_text("utf-8") == "beta notes"
    assert [e["uri"] for e in json.loads(Path("out/skills.json").read_text())["skills"]] == [
        "skill://" + "/".join([*prefix, "alpha", "SKILL.md"])
    ]
    assert cli("check", "wf", "--out", "out", *args).code == 0


@pytest.mark.parametrize("kind", ["file", "link", "folder"])
def test_a_users_file_where_a_rebuilt_bundle_now_writes_is_refused_and_nothing_changes(
    cli, tmp_path, monkeypatch, kind
):
    """The previous build wrote no references/tools.md; the user put one there (a file, a link, a folder); the new
    build writes one: output-conflict at the workflow, naming the path, and the tree stays byte for byte."""
    monkeypatch.chdir(tmp_path)
    Path("wf").mkdir()
    Path("wf/alpha.yaml").write_text(NO_TOOLS.format("alpha"), "utf-8")
    assert cli("build", "wf", "--out", "out").code == 0
    tools = Path("out/alpha/references/tools.md")
    tools.parent.mkdir()
    if kind == "file":
        tools.write_text("my tools", "utf-8")
    elif kind == "link":
        tools.symlink_to(tmp_path / "wf" / "alpha.yaml")
    else:
        (tools / "inner.md").parent.mkdir()
        (tools / "inner.md").write_text("mine", "utf-8")
    before = _listing(Path("out"))
    Path("wf/alpha.yaml").write_text(WF.format("alpha"), "utf-8")
    run = cli("build", "wf", "--out", "out")
    assert run.code == 1 and run.out == ""
    assert run.err == (
        "wf/alpha.yaml:1:7: error[output-conflict]: the skill 'alpha' writes out/alpha/references/tools.md, but "
        "out/alpha/references/tools.md is already there and is not a file this tool wrote (the previous skills.json "
        "does not list it)\n"
        "  hint: move or rename it, and build again; nothing was written\n"
        "error: 1 problem; nothing was written\n"
    )
    assert _listing(Path("out")) == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")]


def test_a_users_link_on_the_way_to_a_file_a_rebuilt_bundle_writes_is_refused(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("wf").mkdir()
    Path("wf/alpha.yaml").write_text(NO_TOOLS.format("alpha"), "utf-8")
    assert cli("build", "wf", "--out", "out").code == 0
    (tmp_path / "elsewhere").mkdir()
    Path("out/alpha/references").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    before = _listing(Path("out"))
    Path("wf/alpha.yaml").write_text(WF.format("alpha"), "utf-8")
    run = cli("build", "wf", "--out", "out")
    assert run.code == 1 and "but out/alpha/references is already there and is not a file this tool" in run.err
    assert _listing(Path("out")) == before and list((tmp_path / "elsewhere").iterdir()) == []
