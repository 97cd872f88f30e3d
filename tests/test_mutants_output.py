"""output.py's survivors of scripts/mutation, killed through what ``build`` and ``check`` print, write and refuse:
the wording of an output-conflict when the previous skills.json cannot be read, how large a previous skills.json is
read, a linked folder inside a bundle, a built workflow file that can no longer be read, and a parallel build
whatever the default start method of ``multiprocessing`` is."""

from __future__ import annotations

import multiprocessing
import sys
from pathlib import Path

import pytest

from projector import output


WF = ("name: {}\ndescription: d\ntools:\n  - name: t\n    annotations: {{readOnlyHint: true}}\n"
      "steps:\n  - name: s\n    tool: t\n")


def _workflows(folder: Path, *names: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names or ("alpha", "beta"):
        (folder / f"{name}.yaml").write_text(WF.format(name), "utf-8")
    return folder


def _tree(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def _conflict(out: str, name: str, why: str, hint: str) -> str:
    return (f"{name}:1:7: error[output-conflict]: the skill '{Path(name).stem}' goes to {out}/{Path(name).stem}/, but "
            f"{out}/{Path(name).stem} is already there and is not a bundle this tool wrote ({why})\n"
            f"  hint: {hint}; nothing was written\n")


# ------------------------------------------------------------------------------------------ output-conflict's why

UNREAD_HINT = "restore out/skills.json as the build wrote it, or move that folder away"
UNLISTED_HINT = "rename the workflow, or move that folder away"


@pytest.mark.parametrize("index, why, hint", [
    ("{", "the previous skills.json, which would list it, is not read: not JSON: Expecting property name enclosed "
          "in double quotes", UNREAD_HINT),
    ("[1]", "the previous skills.json, which would list it, is not read: it is not a skills index", UNREAD_HINT),
    ('{"skills": []}', "the previous skills.json does not list it", UNLISTED_HINT),
], ids=["not JSON", "not an index", "lists nothing"])
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
    assert run.err == (_conflict("out", "wf/alpha.yaml", why, hint) + _conflict("out", "wf/beta.yaml", why, hint)
                       + "error: 2 problems; nothing was written\n")
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
    assert run.err == (_conflict("out", "wf/alpha.yaml", why, UNREAD_HINT)
                       + _conflict("out", "wf/beta.yaml", why, UNREAD_HINT) + "error: 2 problems; nothing was written\n")


# ------------------------------------------------------------------------------- a linked folder inside a bundle

def test_a_linked_folder_in_a_bundle_is_one_extra_entry_not_entered(cli, tmp_path, monkeypatch):
    """check lists a symlink to a folder as one extra path (it does not walk into it), and build removes the link,
    not what it points to."""
    monkeypatch.chdir(tmp_path)
    _workflows(Path("wf"))
    assert cli("build", "wf", "--out", "out", "--no-cache").code == 0
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "deeper").mkdir(parents=True)
    (elsewhere / "f.md").write_text("mine", "utf-8")
    (elsewhere / "deeper" / "g.md").write_text("mine too", "utf-8")
    Path("out/alpha/linked").symlink_to(elsewhere, target_is_directory=True)
    run = cli("check", "wf", "--out", "out", "--no-cache")
    assert run.code == 1
    assert run.out == ("extra: out/alpha/linked\n"
                       "out is out of date (0 stale, 0 missing, 1 extra); run: project-skill build wf --out out "
                       "--no-cache\n")
    run = cli("build", "wf", "--out", "out", "--no-cache")
    assert run.code == 0 and run.out.splitlines()[-1] == "wrote out: 2 skills; 0 warnings, 0 notes"
    assert not Path("out/alpha/linked").is_symlink() and not Path("out/alpha/linked").exists()
    assert sorted(p.relative_to(elsewhere).as_posix() for p in elsewhere.rglob("*")) == ["deeper", "deeper/g.md",
                                                                                          "f.md"]
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
    assert run.err == ("wf/beta.yaml: error[outside-root]: the file is a link to a file outside every folder "
                       "being compiled; it was not read\n"
                       "  hint: name the file on the command line to compile it anyway, or copy it into the "
                       "folder\nerror: 1 problem; nothing was written\n")


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
