"""The output tree's survivors of the mutation run (issue 17): the exact bounds the other tests leave loose."""

from __future__ import annotations

import errno
import os
import stat

import pytest

from projector import disk


@pytest.mark.parametrize("taken", [1, 4, 7, 8, 9])
def test_write_file_tries_exactly_eight_temporary_names(tmp_path, monkeypatch, taken):
    """Planted files hold the first ``taken`` temporary names: another name is drawn for each, up to
    disk._TEMP_TRIES (8) in all; a write whose eight names are all taken fails with FileExistsError, and leaves the
    planted files as they were."""
    assert disk._TEMP_TRIES == 8
    names = [f"{i:08x}" for i in range(12)]
    for name in names[:taken]:
        (tmp_path / f".f.txt.{name}.tmp").write_bytes(b"theirs " + name.encode())
    drawn: list[str] = []

    def token_hex(n: int) -> str:
        assert n == 4
        drawn.append(names[len(drawn)])
        return drawn[-1]

    monkeypatch.setattr(disk.secrets, "token_hex", token_hex)
    planted = sorted(f".f.txt.{name}.tmp" for name in names[:taken])
    if taken < 8:
        disk.write_file(tmp_path / "f.txt", b"ours")
        assert drawn == names[:taken + 1]
        assert sorted(p.name for p in tmp_path.iterdir()) == [*planted, "f.txt"]
        assert (tmp_path / "f.txt").read_bytes() == b"ours"
    else:
        with pytest.raises(FileExistsError):
            disk.write_file(tmp_path / "f.txt", b"ours")
        assert drawn == names[:8]
        assert sorted(p.name for p in tmp_path.iterdir()) == planted
    for name in names[:taken]:
        assert (tmp_path / f".f.txt.{name}.tmp").read_bytes() == b"theirs " + name.encode()


def test_removing_a_tree_under_a_uri_prefix_touches_nothing_in_the_current_folder(tmp_path, monkeypatch):
    """disk._remove walks a chain of single subfolders (a URI prefix) down by folder descriptor: the old tree goes
    whole, and the current folder (here a scratch one, with files and folders of its own) keeps all it holds. A walk
    that lost its descriptor would list and empty the current folder instead (os.scandir(None) is '.')."""
    here = tmp_path / "here"
    (here / "keep").mkdir(parents=True)
    (here / "keep" / "a.txt").write_bytes(b"a")
    (here / "other").mkdir()
    (here / "file.txt").write_bytes(b"f")
    old = tmp_path / ".out.stage-000000000000"
    for rel in ("acme/team/one/SKILL.md", "acme/team/two/SKILL.md", "acme/team/two/notes/x.md", "acme/top.txt"):
        (old / rel).parent.mkdir(parents=True, exist_ok=True)
        (old / rel).write_bytes(rel.encode())
    monkeypatch.chdir(here)
    disk._remove(old)
    assert not old.exists()
    assert sorted(p.relative_to(here).as_posix() for p in here.rglob("*")) == ["file.txt", "keep", "keep/a.txt",
                                                                                "other"]
    assert (here / "keep" / "a.txt").read_bytes() == b"a" and (here / "file.txt").read_bytes() == b"f"


def _old_tree(tmp_path, rels):
    old = tmp_path / ".out.stage-000000000000"
    for rel in rels:
        (old / rel).parent.mkdir(parents=True, exist_ok=True)
        (old / rel).write_bytes(rel.encode())
    return old


def _left(old):
    return sorted(p.relative_to(old).as_posix() for p in old.rglob("*")) if old.exists() else None


TREE = ("acme/top.txt", "acme/stuck.txt", "acme/a/SKILL.md", "acme/a/gone.txt", "acme/a/z.md", "acme/b/SKILL.md")


@pytest.mark.parametrize("fail, left", [
    ("stuck.txt", ["acme", "acme/stuck.txt"]),  # a file that will not go: the rest goes, and no error is raised
    ("gone.txt", None),  # a file that another process removed first: the removal goes on, and the tree goes whole
])
def test_a_removal_that_meets_an_error_goes_on_and_raises_nothing(tmp_path, monkeypatch, fail, left):
    """disk._remove ignores errors (what is left, the next run's recover removes): a file whose unlink fails is
    left, everything else goes; one that vanished under it (FileNotFoundError) does not stop its folder's removal."""
    old = _old_tree(tmp_path, TREE)
    real_unlink = os.unlink

    def unlink(name, *args, **kwargs):
        if os.fsdecode(name).endswith(fail):
            if fail == "gone.txt":
                real_unlink(name, *args, **kwargs)
                raise FileNotFoundError(errno.ENOENT, "removed by another process", name)
            raise PermissionError(errno.EPERM, "refused", name)
        return real_unlink(name, *args, **kwargs)

    monkeypatch.setattr(disk.os, "unlink", unlink)
    disk._remove(old)
    monkeypatch.undo()
    assert _left(old) == left


def test_the_removal_without_fd_functions_removes_the_tree_and_ignores_errors(tmp_path, monkeypatch):
    """Where shutil.rmtree cannot work by folder descriptors, disk._remove is shutil.rmtree with errors ignored:
    the tree goes, and a path that is not there raises nothing."""
    monkeypatch.setattr(disk, "_FD_RMTREE", False)
    old = _old_tree(tmp_path, TREE)
    disk._remove(old)
    assert not old.exists() and sorted(p.name for p in tmp_path.iterdir()) == []
    disk._remove(tmp_path / "missing")
    assert not (tmp_path / "missing").exists()


@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_written_files_are_mode_0666_under_the_umask(tmp_path, umask):
    """disk._write makes every new file 0666 under the umask (never executable): write_file's, and the staged
    tree's files."""
    old = os.umask(umask)
    try:
        disk.write_file(tmp_path / "f.txt", b"x")
        disk.write_file(tmp_path / "g.txt", b"y", exclusive=True)
        disk.replace_tree(tmp_path / "out", lambda root: disk.Plan({"a/SKILL.md": b"a", "skills.json": b"{}"}))
    finally:
        os.umask(old)
    for rel in ("f.txt", "g.txt", "out/a/SKILL.md", "out/skills.json"):
        assert stat.S_IMODE((tmp_path / rel).stat().st_mode) == 0o666 & ~umask, rel
