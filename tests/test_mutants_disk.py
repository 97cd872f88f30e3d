"""The output tree's survivors of the mutation run (issue 17): the exact bounds the other tests leave loose."""

from __future__ import annotations

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
