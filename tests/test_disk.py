"""The output tree (projector/disk.py): what belongs to the user, recovery after a kill, stale staging, modes,
symlinks, non-folders and I/O errors, and a kill at every file-system step (at the end)."""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import signal
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import EXAMPLES, GENERATED, snapshot_tree

from projector import disk
from projector.cli import main

WF = (
    "name: {}\ndescription: d\ntools:\n  - name: t\n    annotations: {{readOnlyHint: true}}\n"
    "steps:\n  - name: s\n    tool: t\n"
)


def leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir() if p.name.startswith("."))


def test_a_new_bundle_on_a_hand_written_folder_is_an_output_conflict(cli, tree, tmp_path):
    root = tree({"wf/a.yaml": WF.format("alpha"), "out/beta/notes.md": "mine"})
    out = root / "out"
    assert cli("build", str(root / "wf"), "--out", str(out)).code == 0
    (root / "wf" / "b.yaml").write_text("\n\n" + WF.format("beta"))
    before = snapshot_tree(out)
    run = cli("build", str(root / "wf"), "--out", str(out))
    assert run.code == 1
    assert f"{(root / 'wf' / 'b.yaml').as_posix()}:3:7: error[output-conflict]" in run.err.replace("\\", "/")
    assert "the previous skills.json does not list it" in run.err and "Traceback" not in run.err
    assert snapshot_tree(out) == before and (out / "beta" / "notes.md").read_text() == "mine"
    assert leftovers(root) == []


def test_a_folder_the_previous_build_wrote_is_rebuilt_not_a_conflict(cli, tree):
    root = tree({"wf/a.yaml": WF.format("alpha")})
    out = root / "out"
    assert cli("build", str(root / "wf"), "--out", str(out)).code == 0
    (out / "alpha" / "stray.md").write_text("x")  # inside a bundle this tool owns: the user's, carried over
    (out / "alpha" / "SKILL.md").write_text("edited")  # the tool's: repaired
    assert cli("build", str(root / "wf"), "--out", str(out)).code == 0
    assert (out / "alpha" / "stray.md").read_text() == "x"
    assert (out / "alpha" / "SKILL.md").read_text().startswith("---\nname: alpha")


@pytest.mark.parametrize("blocker", ["file", "symlink"])
def test_a_non_folder_on_the_way_to_a_bundle_is_an_output_conflict(cli, tree, blocker):
    root = tree({"wf/a.yaml": WF.format("alpha"), "out/acme": "not a folder"})
    out = root / "out"
    if blocker == "symlink":
        (out / "acme").unlink()
        (out / "acme").symlink_to(root / "wf")
    run = cli("build", str(root / "wf"), "--out", str(out), "--uri-prefix", "acme")
    assert run.code == 1 and "error[output-conflict]" in run.err and "out/acme is already there" in run.err
    assert not (root / "wf" / "alpha").exists()


def test_the_folder_mode_and_the_users_folder_modes_are_kept(cli, tree):
    root = tree({"out/notes/keep.md": "keep"})
    out = root / "out"
    os.chmod(out, 0o751)
    os.chmod(out / "notes", 0o700)
    os.chmod(out / "notes" / "keep.md", 0o640)
    assert cli("build", str(EXAMPLES), "--out", str(out)).code == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o751
    assert stat.S_IMODE((out / "notes").stat().st_mode) == 0o700
    assert stat.S_IMODE((out / "notes" / "keep.md").stat().st_mode) == 0o640
    assert (out / "notes" / "keep.md").read_text() == "keep"


def test_a_new_output_folder_gets_the_umask_mode_not_0700(cli, tmp_path):
    old = os.umask(0o022)
    try:
        assert cli("build", str(EXAMPLES), "--out", str(tmp_path / "new" / "out")).code == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new" / "out").stat().st_mode) == 0o755


@pytest.mark.parametrize("command", ["build", "check"])
def test_out_naming_a_file_is_a_usage_error_and_the_file_stays(cli, tmp_path, command):
    target = tmp_path / "file.txt"
    target.write_text("precious")
    run = cli(command, str(EXAMPLES), "--out", str(target))
    assert run.code == 2 and "exists and is not a folder" in run.err
    assert target.read_text() == "precious" and sorted(p.name for p in tmp_path.iterdir()) == ["file.txt"]


def test_out_naming_a_symlink_to_a_file_is_a_usage_error(cli, tmp_path):
    (tmp_path / "file.txt").write_text("precious")
    (tmp_path / "link").symlink_to(tmp_path / "file.txt")
    assert cli("build", str(EXAMPLES), "--out", str(tmp_path / "link")).code == 2
    assert (tmp_path / "link").is_symlink() and (tmp_path / "file.txt").read_text() == "precious"


@pytest.mark.parametrize("exists", [True, False], ids=["target-exists", "dangling"])
def test_out_naming_a_symlink_is_followed_and_the_link_kept(cli, tmp_path, exists):
    real = tmp_path / "real" / "skills"
    if exists:
        real.mkdir(parents=True)
        (real / "mine.txt").write_text("mine")
    else:
        real.parent.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    assert cli("build", str(EXAMPLES), "--out", str(link)).code == 0
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert (real / "refund-flow" / "SKILL.md").read_bytes() == (GENERATED / "refund-flow" / "SKILL.md").read_bytes()
    if exists:
        assert (real / "mine.txt").read_text() == "mine"
    assert cli("check", str(EXAMPLES), "--out", str(link)).code == 0
    assert leftovers(tmp_path) == [] and leftovers(real.parent) == []


@pytest.mark.parametrize("out", ["{tmp}/a-file/out", "/", "/proc/projector-test/out"])
def test_an_unwritable_place_is_an_io_error_without_traceback(cli, tmp_path, out):
    (tmp_path / "a-file").write_text("x")
    run = cli("build", str(EXAMPLES), "--out", out.format(tmp=tmp_path))
    assert run.code == 1, run.err
    assert "error[io]" in run.err and "Traceback" not in run.err and "nothing was written" in run.err
    if out != "/":  # the root has its own words (test_the_root_and_two_old_copies_are_io_errors_with_their_words)
        assert "error[io]: cannot write the output folder: " in run.err
        assert (
            "hint: check that the folder's parent exists, is a folder and is writable; nothing was changed" in run.err
        )
    assert (tmp_path / "a-file").read_text() == "x"


def test_out_holding_the_current_folder_is_a_usage_error(cli, tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "mine.txt").write_text("mine")
    for out in (".", "..", str(tmp_path)):
        run = cli("build", str(EXAMPLES), "--out", out, cwd=tmp_path / "sub")
        assert run.code == 2 and "cannot be the current folder" in run.err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sub"]
    assert sorted(p.name for p in (tmp_path / "sub").iterdir()) == ["mine.txt"]


def test_stale_staging_folders_are_removed_and_others_kept(cli, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(GENERATED, out)
    for name in (".out.stage-0123456789ab", ".out.old-ba9876543210"):
        (tmp_path / name / "deep").mkdir(parents=True)
        (tmp_path / name / "deep" / "f").write_text("left by a killed run")
    for name in (".out.stage-notours", ".other.stage-0123456789ab", ".out.stage-0123456789abc"):
        (tmp_path / name).mkdir()
    assert cli("build", str(EXAMPLES), "--out", str(out)).code == 0  # up to date: still cleans up
    assert leftovers(tmp_path) == [".other.stage-0123456789ab", ".out.stage-0123456789abc", ".out.stage-notours"]


@pytest.mark.parametrize("command", [("build", str(EXAMPLES)), ("remote-load",)])
def test_an_interrupted_two_rename_swap_is_restored_before_anything_else(cli, tmp_path, command):
    """A kill between the two renames leaves no folder and the old tree under .out.old-*. The next run must put
    it back first; main's build instead wrote a fresh tree and dropped the user's files."""
    from remote.test_output import skill

    from projector.remote.output import write_bundles

    old = tmp_path / ".out.old-00000000000f"
    shutil.copytree(GENERATED, old)
    (old / "notes.md").write_text("mine")
    (tmp_path / ".out.stage-0000000000aa").mkdir()  # the half-written stage of the same killed run
    out = tmp_path / "out"
    if command[0] == "build":
        assert cli("build", command[1], "--out", str(out)).code == 0
    else:
        write_bundles(out, [skill("skill://hello/SKILL.md", {"SKILL.md": b"h"})])
        assert (out / "hello" / "SKILL.md").read_bytes() == b"h"
    assert (out / "notes.md").read_text() == "mine"
    assert (out / "refund-flow" / "SKILL.md").read_bytes() == (GENERATED / "refund-flow" / "SKILL.md").read_bytes()
    assert leftovers(tmp_path) == []


def test_a_tree_left_half_swapped_by_the_previous_version_is_restored(cli, tmp_path):
    """Earlier versions named their side folders with tempfile.mkdtemp: eight of [a-z0-9_]."""
    shutil.copytree(GENERATED, tmp_path / ".out.old-k2_x9a0q")
    (tmp_path / ".out.old-k2_x9a0q" / "mine.md").write_text("mine")
    (tmp_path / ".out.stage-ab_cd012").mkdir()
    assert cli("build", str(EXAMPLES), "--out", str(tmp_path / "out")).code == 0
    assert (tmp_path / "out" / "mine.md").read_text() == "mine" and leftovers(tmp_path) == []


def test_two_old_copies_and_no_folder_is_an_io_error_that_changes_nothing(cli, tmp_path):
    for tag in ("00000000000a", "00000000000b"):
        (tmp_path / f".out.old-{tag}").mkdir()
    run = cli("build", str(EXAMPLES), "--out", str(tmp_path / "out"))
    assert run.code == 1 and "error[io]" in run.err and "rename the one to keep" in run.err
    assert leftovers(tmp_path) == [".out.old-00000000000a", ".out.old-00000000000b"]
    assert not (tmp_path / "out").exists()


def test_carried_files_are_copied_where_hard_links_are_refused(cli, tree, monkeypatch):
    root = tree({"out/notes/keep.md": "keep", "out/link-to-notes": ""})
    out = root / "out"
    (out / "link-to-notes").unlink()
    (out / "link-to-notes").symlink_to("notes")

    def no_link(*args, **kwargs):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(disk.os, "link", no_link)
    assert cli("build", str(EXAMPLES), "--out", str(out)).code == 0
    assert (out / "notes" / "keep.md").read_text() == "keep"
    assert (out / "link-to-notes").is_symlink() and os.readlink(out / "link-to-notes") == "notes"


def test_a_special_file_in_the_folder_is_an_io_error_and_nothing_changes(cli, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(GENERATED, out)
    os.mkfifo(out / "pipe")
    (out / "refund-flow" / "SKILL.md").write_text("stale")
    before = snapshot_tree(out)
    run = cli("build", str(EXAMPLES), "--out", str(out))
    assert run.code == 1 and "error[io]" in run.err
    assert "not a file, folder or symlink: it cannot be carried into the new tree" in run.err
    assert "move it out of the output folder" in run.err
    assert snapshot_tree(out) == before and stat.S_ISFIFO((out / "pipe").lstat().st_mode)
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "two-renames"])
def test_both_swaps_give_the_same_tree(cli, tree, monkeypatch, exchange):
    if not exchange:
        monkeypatch.setattr(disk, "_exchange", lambda a, b: False)
    root = tree({"out/notes/keep.md": "keep"})
    out = root / "out"
    assert cli("build", str(EXAMPLES), "--out", str(out)).code == 0
    (out / "refund-flow" / "SKILL.md").write_text("stale")
    assert cli("build", str(EXAMPLES), "--out", str(out)).code == 0
    got = snapshot_tree(out)
    assert got.pop("notes/keep.md") and got == snapshot_tree(GENERATED)
    assert leftovers(root) == []


# ---------------------------------------------------------------- disk.py's own edges (they kill its mutants)


def _diag(exc: pytest.ExceptionInfo) -> tuple[str, str, str, str | None]:
    (d,) = exc.value.diagnostics
    return d.span.file, d.code, d.message, d.hint


@pytest.mark.parametrize("old", ["file", "folder"])
def test_a_users_path_that_a_new_file_needs_is_an_output_conflict(tree, old):
    """The plan's new files meet a path of the old tree that is not dropped: refused before anything is swapped."""
    root = tree({"out/x/keep.md": "keep"} if old == "folder" else {"out/x": "keep"})
    out = root / "out"
    before = snapshot_tree(out)
    with pytest.raises(disk.DiskError) as info:
        disk.replace_tree(out, lambda r: disk.Plan({"x": b"new"}))
    assert _diag(info) == (
        "out/x",
        "output-conflict",
        "this path is not this tool's, and the new tree needs it",
        "move or rename it, then run again; nothing was changed",
    )
    assert snapshot_tree(out) == before and leftovers(root) == []


def test_a_users_file_where_a_new_file_goes_is_an_output_conflict_not_an_io_error(tree):
    root = tree({"out/a/keep.md": "keep"})
    out = root / "out"
    with pytest.raises(disk.DiskError) as info:
        disk.replace_tree(out, lambda r: disk.Plan({"a/keep.md": b"new"}))
    assert _diag(info)[:2] == ("out/a/keep.md", "output-conflict")
    assert (out / "a" / "keep.md").read_text() == "keep"


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
def test_the_owner_of_a_carried_folder_is_kept(cli, tree):
    root = tree({"out/notes/keep.md": "keep"})
    out = root / "out"
    os.chown(out / "notes", 12345, 23456)
    assert cli("build", str(EXAMPLES), "--out", str(out)).code == 0
    st = (out / "notes").stat()
    assert (st.st_uid, st.st_gid) == (12345, 23456)


def test_the_root_and_two_old_copies_are_io_errors_with_their_words(tmp_path):
    with pytest.raises(disk.DiskError) as info:
        disk.target(Path("/"))
    assert _diag(info) == ("/", "io", "the root folder cannot be replaced", "name a folder inside it")
    root = tmp_path / "out"
    for tag in ("0123456789ab", "ba9876543210"):
        (tmp_path / f".out.old-{tag}").mkdir()
    with pytest.raises(disk.DiskError) as info:
        disk.recover(root)
    assert _diag(info) == (
        str(root),
        "io",
        "the folder is missing and 2 interrupted swaps left old copies of it: "
        ".out.old-0123456789ab, .out.old-ba9876543210",
        "rename the one to keep back to the folder's name, then run again",
    )


def test_side_folder_names_carry_twelve_hex_digits(tmp_path):
    import re

    assert re.fullmatch(r"\.out\.stage-[0-9a-f]{12}", disk.side_folder(tmp_path / "out", "stage").name)


def test_a_file_with_a_side_folders_name_does_not_stop_the_build(cli, tmp_path):
    (tmp_path / ".out.stage-0123456789ab").write_text("not a folder")
    assert cli("build", str(EXAMPLES), "--out", str(tmp_path / "out")).code == 0
    assert snapshot_tree(tmp_path / "out") == snapshot_tree(GENERATED)


def test_replace_tree_makes_missing_parents_says_whether_it_wrote_and_names_out_in_io_errors(tmp_path):
    out = tmp_path / "a" / "b" / "out"
    assert disk.replace_tree(out, lambda r: disk.Plan({"x/y.md": b"y"})) is True
    assert (out / "x" / "y.md").read_bytes() == b"y"
    assert disk.replace_tree(out, lambda r: None) is False
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(disk.DiskError) as info:
        disk.replace_tree(tmp_path / "file" / "out", lambda r: disk.Plan({}))
    assert _diag(info)[:2] == (str(tmp_path / "file" / "out"), "io")


def test_out_holding_the_current_folder_says_why(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(disk.UsageError) as info:
        disk.target(tmp_path)
    assert str(info.value).endswith("so it cannot be the current folder or one that holds it; name a folder inside it")


def test_a_special_file_names_itself_and_says_what_to_do(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "pipe")
    with pytest.raises(disk.DiskError) as info:
        disk.replace_tree(out, lambda r: disk.Plan({"a.md": b"a"}))
    assert _diag(info) == (
        str(out / "pipe"),
        "io",
        "not a file, folder or symlink: it cannot be carried into the new tree",
        "move it out of the output folder",
    )


# ------------------------------------------------------------------------------------------------ write_file (mutation)


def test_write_file_replaces_by_default_and_makes_missing_folders(tmp_path):
    target = tmp_path / "a" / "b" / "c" / "f.txt"
    disk.write_file(target, b"one\n")
    disk.write_file(target, b"two\n")  # not exclusive: the old file is replaced
    assert target.read_bytes() == b"two\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["f.txt"]  # no temporary left


def test_write_file_exclusive_names_the_file_it_refuses(tmp_path):
    target = tmp_path / "f.txt"
    target.write_bytes(b"theirs")
    with pytest.raises(FileExistsError) as info:
        disk.write_file(target, b"ours", exclusive=True)
    e = info.value
    assert (e.errno, e.strerror, e.filename) == (errno.EEXIST, os.strerror(errno.EEXIST), str(target))
    assert target.read_bytes() == b"theirs"


def _no_links(monkeypatch, plant=None):
    def refuse(src, dst, *a, **k):
        if plant is not None:
            plant(Path(dst))
        raise OSError(errno.EPERM, "links are refused here")

    monkeypatch.setattr(disk.os, "link", refuse)


def test_write_file_exclusive_without_links_creates_the_file_with_mode_666_under_the_umask(tmp_path, monkeypatch):
    _no_links(monkeypatch)
    old = os.umask(0o022)
    try:
        disk.write_file(tmp_path / "f.txt", b"ours", exclusive=True)
    finally:
        os.umask(old)
    assert (tmp_path / "f.txt").read_bytes() == b"ours"
    assert stat.S_IMODE((tmp_path / "f.txt").stat().st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.txt"]


def test_write_file_exclusive_without_links_never_writes_into_a_file_that_appeared(tmp_path, monkeypatch):
    """A file (or a link) that takes the name between the check and the create is refused, not written into."""
    _no_links(monkeypatch, plant=lambda dst: dst.write_bytes(b"theirs"))
    with pytest.raises(FileExistsError):
        disk.write_file(tmp_path / "f.txt", b"ours", exclusive=True)
    assert (tmp_path / "f.txt").read_bytes() == b"theirs"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.txt"]


def test_write_file_removes_its_temporary_when_the_write_fails(tmp_path, monkeypatch):
    """A write that fails half-way (a full disk) leaves the old file and no temporary beside it."""
    target = tmp_path / "f.txt"
    target.write_bytes(b"old")
    real = disk._write

    def half(path, data):
        real(path, data[: len(data) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(disk, "_write", half)
    with pytest.raises(OSError):
        disk.write_file(target, b"new bytes")
    assert target.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["f.txt"]


def test_write_file_never_writes_into_or_removes_a_planted_temporary(tmp_path, monkeypatch):
    """A file or a link already at the temporary's name is left alone: another name is tried."""
    planted = tmp_path / ".f.txt.00000000.tmp"
    planted.symlink_to(tmp_path / "elsewhere")
    names = iter(["00000000", "11111111"])
    monkeypatch.setattr(disk.secrets, "token_hex", lambda n: next(names))
    disk.write_file(tmp_path / "f.txt", b"ours")
    assert (tmp_path / "f.txt").read_bytes() == b"ours" and planted.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".f.txt.00000000.tmp", "f.txt"]
    assert not (tmp_path / "elsewhere").exists()


def test_write_file_gives_up_after_a_few_taken_temporary_names(tmp_path, monkeypatch):
    (tmp_path / ".f.txt.00000000.tmp").write_bytes(b"theirs")
    monkeypatch.setattr(disk.secrets, "token_hex", lambda n: "00000000")
    with pytest.raises(FileExistsError):
        disk.write_file(tmp_path / "f.txt", b"ours")
    assert (tmp_path / ".f.txt.00000000.tmp").read_bytes() == b"theirs"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".f.txt.00000000.tmp"]


# ------------------------------------------------------------------ the old tree's removal (threads, issue 23)


def _many(n: int) -> dict[str, str]:
    return {f"wf/w{i:03d}.yaml": WF.format(f"w{i:03d}") for i in range(n)}


@pytest.mark.slow
@pytest.mark.parametrize("prefix", [(), ("acme", "team")], ids=["flat", "uri-prefix"])
def test_a_rebuild_over_many_bundles_removes_the_old_tree_whole_and_keeps_the_users_files(cli, tree, prefix):
    """The old tree goes in parallel threads (disk._remove): when the command returns, nothing of it is left (no
    side folder, no old file), and every user file is in the new tree, a link inside it not followed."""
    root = tree({**_many(40), "out/notes/keep.md": "mine", "elsewhere/precious.txt": "precious"})
    out, args = root / "out", ["--uri-prefix", "/".join(prefix)] if prefix else []
    assert cli("build", str(root / "wf"), "--out", str(out), *args).code == 0
    (out / "notes" / "to-elsewhere").symlink_to(root / "elsewhere")
    for i in range(0, 40, 2):  # half the workflows change, a quarter go
        (root / "wf" / f"w{i:03d}.yaml").write_text(WF.format(f"w{i:03d}").replace("d\n", "changed\n", 1))
    for i in range(1, 40, 4):
        (root / "wf" / f"w{i:03d}.yaml").unlink()
    base = out.joinpath(*prefix)
    gone = {base / f"w{i:03d}" for i in range(1, 40, 4)}
    assert all(p.is_dir() for p in gone)
    assert cli("build", str(root / "wf"), "--out", str(out), *args).code == 0
    assert leftovers(root) == [] and not any(p.exists() for p in gone)
    assert (out / "notes" / "keep.md").read_text() == "mine"
    assert (out / "notes" / "to-elsewhere").is_symlink() and (root / "elsewhere" / "precious.txt").exists()
    assert "changed" in (base / "w000" / "SKILL.md").read_text()
    assert cli("check", str(root / "wf"), "--out", str(out), *args).code == 0


def test_remove_never_follows_a_link_and_takes_every_kind_of_entry(tmp_path):
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "sub" / "precious.txt").write_text("precious")
    trash = tmp_path / ".out.stage-0123456789ab"
    for i in range(20):
        (trash / f"b{i}" / "references").mkdir(parents=True)
        (trash / f"b{i}" / "SKILL.md").write_text("x")
        (trash / f"b{i}" / "references" / "tools.md").write_text("y")
        (trash / f"b{i}" / "link-to-outside").symlink_to(outside)
    (trash / "top-link").symlink_to(outside / "sub")
    (trash / "file").write_text("z")
    (trash / "only" / "one" / "chain").mkdir(parents=True)
    disk._remove(trash)
    assert not os.path.lexists(trash) and (outside / "sub" / "precious.txt").read_text() == "precious"
    (tmp_path / "a-link").symlink_to(outside)
    disk._remove(tmp_path / "a-link")  # a side folder replaced by a link: neither it nor its target is touched
    assert (tmp_path / "a-link").is_symlink() and (outside / "sub" / "precious.txt").exists()


@pytest.mark.slow
def test_a_run_killed_in_the_middle_of_the_parallel_removal_is_finished_by_the_next(cli, tree, monkeypatch):
    """SIGKILL while the threads remove the old tree (after the swap): the folder holds the new tree, and the next
    run removes the half-removed old one it left under a stage name."""

    root = tree({**_many(30), "out/notes/keep.md": "mine"})
    out = root / "out"
    assert cli("build", str(root / "wf"), "--out", str(out)).code == 0
    (root / "wf" / "w000.yaml").write_text(WF.format("w000").replace("d\n", "changed\n", 1))
    # the tenth removal in the skills tree's old copy (the eval cases' tree, written first, is swapped in already)
    _build_killed(cli, root, out, monkeypatch, disk.shutil, "rmtree", _kill_at(10, shutil.rmtree, ".out.stage-"))
    left = leftovers(root)
    assert len(left) == 1 and left[0].startswith(".out.stage-")
    assert "changed" in (out / "w000" / "SKILL.md").read_text() and (out / "notes" / "keep.md").exists()
    check = cli("check", str(root / "wf"), "--out", str(out))  # both trees are the new ones
    assert check.code == 0, check.out + check.err
    assert cli("build", str(root / "wf"), "--out", str(out)).code == 0
    assert leftovers(root) == [] and cli("check", str(root / "wf"), "--out", str(out)).code == 0


@pytest.mark.slow
def test_a_large_tree_is_staged_by_threads_into_the_same_tree_as_one_by_one(cli, tree, monkeypatch):
    """From disk.PARALLEL_WRITES_FROM files on, the stage's folders and files are made by threads: the tree (bytes,
    modes, the user's files) is the one the one-by-one path makes."""
    root = tree({**_many(40), "a/notes/keep.md": "mine", "b/notes/keep.md": "mine"})
    assert len(_many(40)) * 2 + 1 >= disk.PARALLEL_WRITES_FROM
    for side in ("a", "b"):
        if side == "b":
            monkeypatch.setattr(disk, "PARALLEL_WRITES_FROM", 10**9)
        for prefix in ([], ["--uri-prefix", "acme/team"]):
            assert cli("build", str(root / "wf"), "--out", str(root / side), *prefix).code == 0
    assert snapshot_tree(root / "a") == snapshot_tree(root / "b")
    assert leftovers(root) == []


@pytest.mark.slow
def test_a_run_killed_while_the_threads_stage_the_tree_loses_nothing(cli, tree, monkeypatch):

    root = tree({**_many(40), "out/notes/keep.md": "mine"})
    out = root / "out"
    assert cli("build", str(root / "wf"), "--out", str(out)).code == 0
    before = snapshot_tree(out)
    (root / "wf" / "w000.yaml").write_text(WF.format("w000").replace("d\n", "changed\n", 1))
    # at the thirtieth file of the skills tree's stage (the eval cases' tree, written first, is swapped in already)
    _build_killed(cli, root, out, monkeypatch, disk, "_write", _kill_at(30, disk._write, ".out.stage-"))
    assert snapshot_tree(out) == before  # the old tree, whole
    assert [p[: len(".out.stage-")] for p in leftovers(root)] == [".out.stage-"]
    assert cli("build", str(root / "wf"), "--out", str(out)).code == 0
    assert leftovers(root) == [] and "changed" in (out / "w000" / "SKILL.md").read_text()
    assert (out / "notes" / "keep.md").read_text() == "mine"


def _kill_at(n: int, real: Callable, where: str = "") -> Callable:
    """``real``, which SIGKILLs the process on its ``n``-th call (of those whose first argument's path has ``where``
    in it), before doing it."""
    calls = []

    def killing(*args, **kwargs):
        path = str(args[0] if args else "")
        if "dir_fd" in kwargs:  # a name in an open folder (rmtree's parallel removal): the folder's path, by /proc
            path = os.readlink(f"/proc/self/fd/{kwargs['dir_fd']}") + "/" + path
        if where not in path:
            return real(*args, **kwargs)
        calls.append(args)
        if len(calls) == n:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*args, **kwargs)

    return killing


def _build_killed(cli, root, out, monkeypatch, owner, name, replacement):
    """Run ``build`` in a forked child with ``owner.name`` replaced (the replacement SIGKILLs the child at some call),
    and check that the child died by that signal (it exits 3 if the build ends first)."""

    pid = os.fork()
    if pid == 0:
        monkeypatch.setattr(owner, name, replacement)
        try:
            cli("build", str(root / "wf"), "--out", str(out))
        finally:
            os._exit(3)
    status = os.waitpid(pid, 0)[1]
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


# ------------------------------------------------------------------ what skills.json claims is not proof (issue 29)


def _claim(out: Path, folder: str, files: dict[str, bytes]) -> None:
    """Add an entry for ``folder`` to out/skills.json, as a hand edit (or a hostile one) would: its files recorded
    with their true sizes and digests."""
    import hashlib
    import json

    index = json.loads((out / "skills.json").read_text("utf-8"))
    index["skills"].append(
        {
            "uri": f"skill://{folder}/SKILL.md",
            "frontmatter": {"name": folder.rsplit("/", 1)[-1], "description": "d"},
            "resources": [
                {
                    "uri": f"skill://{folder}/{rel}",
                    "size": len(data),
                    "digest": "sha256:" + hashlib.sha256(data).hexdigest(),
                }
                for rel, data in files.items()
            ],
        }
    )
    (out / "skills.json").write_text(json.dumps(index), "utf-8")


@pytest.mark.parametrize("recorded", [{}, {"guide.md": b"mine\n"}], ids=["named", "digests-recorded"])
def test_an_entry_added_to_skills_json_does_not_give_a_users_folder_to_the_build(cli, tree, recorded):
    """A folder that is not a bundle (no SKILL.md) is the user's, whatever skills.json lists: the build keeps it,
    even when the entry records the size and sha256 of the user's own file."""
    root = tree({"wf/a.yaml": WF.format("alpha")})
    out = root / "out"
    assert cli("build", str(root / "wf"), "--out", str(out)).code == 0
    (out / "docs").mkdir()
    (out / "docs" / "guide.md").write_bytes(b"mine\n")
    _claim(out, "docs", {"SKILL.md": b"x", **recorded})
    assert cli("build", str(root / "wf"), "--out", str(out)).code == 0
    assert (out / "docs" / "guide.md").read_bytes() == b"mine\n"
    assert "docs" not in (out / "skills.json").read_text("utf-8")  # the claim is not carried into the new index
    assert cli("check", str(root / "wf"), "--out", str(out)).code == 0  # and the user's folder is no "extra"


def test_a_bundle_the_index_claims_but_cannot_prove_is_an_output_conflict(cli, tree):
    """A hand-written skill folder at a new bundle's path, which an edited skills.json lists with a made-up digest:
    the build refuses, names the folder and says why, and changes nothing."""
    root = tree(
        {
            "wf/a.yaml": WF.format("alpha"),
            "out/beta/SKILL.md": "---\nname: beta\n---\nmine\n",
            "out/beta/notes.md": "mine",
        }
    )
    out = root / "out"
    assert cli("build", str(root / "wf"), "--out", str(out)).code == 0
    _claim(out, "beta", {"SKILL.md": b"what the build wrote, once"})
    (root / "wf" / "b.yaml").write_text(WF.format("beta"))
    before = snapshot_tree(out)
    run = cli("build", str(root / "wf"), "--out", str(out))
    assert run.code == 1 and "Traceback" not in run.err
    assert "error[output-conflict]: the skill 'beta' goes to out/beta/, but out/beta is already there" in run.err
    assert "skills.json lists it, but none of its files has the size and sha256 that skills.json records" in run.err
    assert snapshot_tree(out) == before


def test_a_bundle_edited_by_hand_is_still_the_builds(cli, tree):
    """What proves a folder the build's survives a hand edit: a SKILL.md whose body was edited (its frontmatter as
    recorded) in a bundle of no other file, or any file of a bundle that is still as recorded."""
    root = tree(
        {
            "wf/a.yaml": "name: alpha\ndescription: d\nsteps:\n  - name: s\n    resources: ['docs://x']\n",
            "wf/b.yaml": WF.format("beta"),
        }
    )
    out = root / "out"
    assert cli("build", str(root / "wf"), "--out", str(out)).code == 0
    built = snapshot_tree(out)
    skill = out / "alpha" / "SKILL.md"
    skill.write_bytes(skill.read_bytes() + b"\nmy edit\n")
    (out / "beta" / "SKILL.md").write_text("stale")
    assert cli("build", str(root / "wf"), "--out", str(out)).code == 0
    assert snapshot_tree(out) == built


def test_switching_a_uri_prefix_off_removes_the_folders_it_made(cli, tree):
    """The prefix's folders go with the bundles in them; a folder the user made, or put a file in, stays."""
    root = tree({"wf/a.yaml": WF.format("alpha"), "out/x/notes.md": "mine", "out/empty/.keep": ""})
    out = root / "out"
    (out / "empty" / ".keep").unlink()
    assert cli("build", str(root / "wf"), "--out", str(out), "--uri-prefix", "x/y/z").code == 0
    assert cli("build", str(root / "wf"), "--out", str(out), "--uri-prefix", "p/q").code == 0
    assert (out / "p" / "q" / "alpha" / "SKILL.md").is_file()
    assert not (out / "x" / "y").exists() and (out / "x" / "notes.md").read_text() == "mine"
    assert cli("build", str(root / "wf"), "--out", str(out)).code == 0
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == [
        "alpha",
        "alpha/SKILL.md",
        "alpha/references",
        "alpha/references/tools.md",
        "empty",
        "skills.json",
        "x",
        "x/notes.md",
    ]
    cases = root / "out-evals"  # the prefixes' folders of the eval cases go too
    assert sorted(p.relative_to(cases).as_posix() for p in cases.rglob("*")) == [
        "alpha",
        "alpha/eval_queries.json",
        "alpha/evals.json",
    ]


# The output tree: the current folder through a rebuild, and the mode of written files.


def test_a_rebuild_under_a_uri_prefix_touches_nothing_in_the_current_folder(cli, tmp_path):
    """The old tree under a URI prefix (a chain of single subfolders) goes whole, and the current folder, with files
    and folders of its own, keeps all it holds: the removal walks the old tree, never the folder it runs from."""
    here = tmp_path / "here"
    (here / "keep").mkdir(parents=True)
    (here / "keep" / "a.txt").write_bytes(b"a")
    (here / "other").mkdir()
    (here / "file.txt").write_bytes(b"f")
    wf = tmp_path / "wf"
    wf.mkdir()
    for name in ("one", "two"):
        (wf / f"{name}.yaml").write_text(WF.format(name))
    out, args = tmp_path / "out", ["--uri-prefix", "acme/team"]
    assert cli("build", str(wf), "--out", str(out), *args, cwd=here).code == 0
    (wf / "two.yaml").unlink()
    assert cli("build", str(wf), "--out", str(out), *args, cwd=here).code == 0
    assert not (out / "acme" / "team" / "two").exists() and (out / "acme" / "team" / "one" / "SKILL.md").is_file()
    assert sorted(p.relative_to(here).as_posix() for p in here.rglob("*")) == [
        "file.txt",
        "keep",
        "keep/a.txt",
        "other",
    ]
    assert (here / "keep" / "a.txt").read_bytes() == b"a" and (here / "file.txt").read_bytes() == b"f"


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


# -------------------------------------------------------------------------------- a kill at every step

# Each kill point runs in a child process (a fork of this one, so it starts in milliseconds) that wraps disk's
# file-system steps (``_write``, ``_rename``, ``_exchange``, ``_remove``) and SIGKILLs itself at one of them: before
# the step, in the middle of it (half a file written, half a tree removed), or after the last one. The parent then
# checks the promise:
#
# - with the atomic exchange, the folder is at that instant exactly the old tree or the new one, the user's files
#   (a file, a symlink, an empty folder, a 0700 folder) included;
# - with the two-rename fallback, it is that, or missing with exactly one ``.out.old-*`` copy holding the old tree;
# - the next run recovers first (any interrupted swap restored, every leftover removed), and then writes the new
#   tree, with nothing left beside it.
#
# ``KILL_POINTS`` counts them all; the note of issue 10 quotes it.

STEPS = ("_write", "_rename", "_exchange", "_remove")
KILL_POINTS: dict[str, int] = {}


# the tree


def snap(root: Path) -> dict[str, tuple] | None:
    """Everything under ``root``: files by digest and mode, symlinks by target, folders by mode. None: missing."""
    if not os.path.lexists(root):
        return None
    out: dict[str, tuple] = {".": ("dir", stat.S_IMODE(root.stat().st_mode))}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in sorted(dirnames + filenames):
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            st = p.lstat()
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", stat.S_IMODE(st.st_mode))
            else:
                out[rel] = ("file", hashlib.sha256(p.read_bytes()).hexdigest(), stat.S_IMODE(st.st_mode))
    return dict(sorted(out.items()))


def side(box: Path) -> list[Path]:
    return sorted(p for p in box.iterdir() if p.name != "out")


def user_files(out: Path) -> None:
    (out / "notes" / "private").mkdir(parents=True)
    (out / "notes" / "keep.md").write_text("mine")
    os.chmod(out / "notes" / "private", 0o700)
    (out / "empty").mkdir()
    (out / "README.txt").write_text("hand-written")
    (out / "to-readme").symlink_to("README.txt")
    os.chmod(out, 0o751)


# -------------------------------------------------------------------------------------------- the scenarios


def build_update(base: Path) -> Callable[[], None]:
    out = base / "box" / "out"
    shutil.copytree(GENERATED, out)
    (out / "refund-flow" / "SKILL.md").write_text("stale")
    (out / "hello-world" / "references" / "tools.md").unlink()
    user_files(out)

    def run() -> None:
        assert main(["build", str(EXAMPLES), "--out", str(out), "--evals-out", str(base / "cases")]) == 0

    return run


def build_first(base: Path) -> Callable[[], None]:
    (base / "box").mkdir(parents=True)

    def run() -> None:
        assert (
            main(["build", str(EXAMPLES), "--out", str(base / "box" / "out"), "--evals-out", str(base / "cases")]) == 0
        )

    return run


def build_after_a_killed_swap(base: Path) -> Callable[[], None]:
    """A kill fell between the two renames of the fallback: no folder, the old tree as .out.old-*, and a stage."""
    run = build_update(base)
    box = base / "box"
    (box / "out").rename(box / ".out.old-0123456789ab")
    (box / ".out.stage-ba9876543210" / "refund-flow").mkdir(parents=True)
    return run


def remote_load(base: Path) -> Callable[[], None]:
    from remote.test_output import skill

    from projector.remote.output import write_bundles

    out = base / "box" / "out"
    # An earlier load wrote these (its skills.json lists them), so the next load may replace them.
    write_bundles(
        out,
        [
            skill(f"skill://acme/{name}/SKILL.md", {"SKILL.md": f"old {name}".encode()})
            for name in ("alpha", "beta", "gamma")
        ],
    )
    user_files(out)
    skills = [
        skill(f"skill://acme/{name}/SKILL.md", {"SKILL.md": f"new {name}".encode(), "references/tools.md": b"tools"})
        for name in ("alpha", "beta", "delta", "epsilon")
    ]

    def run() -> None:
        write_bundles(out, skills)

    return run


SCENARIOS = {
    "build-update": build_update,
    "build-first": build_first,
    "build-after-a-killed-swap": build_after_a_killed_swap,
    "remote-load": remote_load,
}


# ------------------------------------------------------------------------------------------ the kill points


class Killer:
    """Wraps disk's steps. ``at``: (index of the step, "before" | "mid" | "after"); None counts only."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, at: tuple[int, str] | None):
        self.at = at
        self.steps: list[str] = []
        for name in STEPS:
            monkeypatch.setattr(disk, name, self.wrap(name, getattr(disk, name)))

    def wrap(self, name: str, fn: Callable) -> Callable:
        def step(*args):
            i = len(self.steps)
            self.steps.append(name)
            if self.at == (i, "before"):
                os.kill(os.getpid(), signal.SIGKILL)
            if self.at == (i, "mid"):
                self.half(name, *args)
            result = fn(*args)
            if self.at == (i, "after"):
                os.kill(os.getpid(), signal.SIGKILL)
            return result

        return step

    @staticmethod
    def half(name: str, path: Path, *rest) -> None:
        if name == "_write":
            data = rest[0]
            with open(path, "xb") as f:
                f.write(data[: len(data) // 2])
        else:  # _remove: half the tree goes, then the kill
            files = sorted(p for p in Path(path).rglob("*") if p.is_file() or p.is_symlink())
            for p in files[: len(files) // 2 + 1]:
                p.unlink()
        os.kill(os.getpid(), signal.SIGKILL)


def kill_points(steps: list[str]) -> list[tuple[int, str]]:
    points = [(i, "before") for i in range(len(steps))]
    points += [(i, "mid") for i, s in enumerate(steps) if s in ("_write", "_remove")]
    return points + [(len(steps) - 1, "after")]


def in_child(fn: Callable[[], None]) -> int:
    """Run ``fn`` in a forked child; returns its wait status."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 0
        try:
            fn()
        except BaseException:  # pragma: no cover - a failure shows as exit 3
            code = 3
        os._exit(code)
    return os.waitpid(pid, 0)[1]


def allowed(box: Path, old: dict | None, new: dict | None, may_be_missing: bool) -> None:
    """The tree right after a kill: old or new; or, where a two-rename swap was cut, missing with one old copy."""
    now = snap(box / "out")
    if now is not None:
        assert now in (old, new), "the folder is neither the old tree nor the new one"
        return
    olds = [p for p in side(box) if ".old-" in p.name]
    assert old is None or may_be_missing and len(olds) == 1 and snap(olds[0]) == old, (
        "the folder is missing, and not because of one interrupted two-rename swap"
    )


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(os, "fork"), reason="kill points run in forked children")
@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "two-renames"])
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_a_kill_at_any_step_leaves_a_complete_tree_and_the_next_run_finishes(
    tmp_path, monkeypatch, scenario, exchange, capsys
):
    if exchange and disk._renameat2() is None:  # pragma: no cover - not Linux with glibc >= 2.28
        pytest.skip("no renameat2 here")
    if not exchange:
        monkeypatch.setattr(disk, "_exchange", lambda a, b: False)
    setup = SCENARIOS[scenario]

    # The run without a kill: its steps, and the tree it makes.
    base = tmp_path / "plain"
    run = setup(base)
    old = snap(base / "box" / "out")
    if scenario == "build-after-a-killed-swap":
        old = snap(base / "box" / ".out.old-0123456789ab")
    with monkeypatch.context() as m:
        counter = Killer(m, None)
        run()
    new, cases = snap(base / "box" / "out"), snap(base / "cases")
    assert new is not None and new != old and side(base / "box") == []
    if old is not None:
        assert all(new[k] == old[k] for k in ("notes/keep.md", "notes/private", "empty", "to-readme", "."))
    swap = [s for s in counter.steps if s in ("_rename", "_exchange")]
    if scenario.startswith("build"):  # the eval cases' tree, written fresh: on a rebuild before the skills' tree is
        # swapped in (so that a kill between the two leaves no gone skill's cases for good), on a first build after it
        assert cases is not None and swap[0 if old is not None else -1] == "_rename"
        swap = swap[1:] if old is not None else swap[:-1]
    expected = {
        (True, True): ["_exchange"],
        (True, False): ["_rename"] * 3,
        (False, True): ["_rename"],
        (False, False): ["_rename"],
    }[(old is not None, exchange)]
    assert swap[-len(expected) :] == expected, counter.steps

    points = kill_points(counter.steps)
    KILL_POINTS[f"{scenario}/{'exchange' if exchange else 'two-renames'}"] = len(points)
    for n, at in enumerate(points):
        base = tmp_path / f"k{n}"
        run = setup(base)
        box = base / "box"

        def killed() -> None:
            with monkeypatch.context() as m:
                Killer(m, at)
                run()

        status = in_child(killed)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, (at, counter.steps, status)
        allowed(box, old, new, not exchange or scenario == "build-after-a-killed-swap")
        run()  # the next run, in this process: recovers first, then writes
        assert snap(box / "out") == new, at
        assert snap(base / "cases") == cases, at
        assert side(box) == [] and not [p for p in base.iterdir() if p.name.startswith(".cases.")], (at, side(box))
    capsys.readouterr()


@pytest.mark.slow  # it counts what the kill tests (slow) did
def test_kill_points_are_counted():
    """Runs last in this module (pytest keeps file order): the total the note quotes."""
    if not KILL_POINTS:
        pytest.skip("the kill tests did not run")
    total = sum(KILL_POINTS.values())
    print(f"\nkill points: {total} ({', '.join(f'{k} {v}' for k, v in sorted(KILL_POINTS.items()))})")
    assert total >= 8 * 8


# ------------------------------------------------------------------ a fresh build writes as it compiles


@pytest.mark.slow
def test_a_fresh_build_killed_while_it_writes_leaves_no_folder_and_the_next_build_finishes(cli, tree, monkeypatch):
    """Into a folder that is not there yet, each bundle is written into the stage as soon as it is compiled. A kill
    in the middle leaves no output folder, only the stage, which the next run removes."""

    root = tree({**_many(40), "elsewhere/keep.md": "mine"})
    out = root / "out"
    # at the thirtieth file of the skills tree's stage (the eval cases' tree, written first, is swapped in already)
    _build_killed(cli, root, out, monkeypatch, disk, "_write", _kill_at(30, disk._write, ".out.stage-"))
    assert not os.path.lexists(out)
    assert [p[: len(".out.stage-")] for p in leftovers(root)] == [".out.stage-"]
    assert cli("build", str(root / "wf"), "--out", str(out)).code == 0
    assert leftovers(root) == [] and cli("check", str(root / "wf"), "--out", str(out)).code == 0
    assert cli("build", str(root / "wf"), "--out", str(root / "again")).code == 0
    assert snapshot_tree(out) == snapshot_tree(root / "again")


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_fresh_build_that_fails_leaves_no_folder_and_no_stage(cli, tree, jobs):
    """A name collision (two workflows, one skill folder) and --strict both fail after bundles were written into the
    stage: nothing is left, on one process or several."""
    root = tree({"wf/a.yaml": WF.format("alpha"), "wf/b.yaml": WF.format("alpha"), "wf/c.yaml": WF.format("gamma")})
    run = cli("build", str(root / "wf"), "--out", str(root / "out"), "--jobs", jobs)
    assert run.code == 1 and "alpha" in run.err and "Traceback" not in run.err
    assert sorted(p.name for p in root.iterdir()) == ["wf"]
    (root / "wf" / "b.yaml").write_text(WF.format("beta").replace("readOnlyHint: true", "destructiveHint: true"))
    (root / "wf" / "b.yaml").write_text(
        (root / "wf" / "b.yaml").read_text() + "    guidance: Only continue if the user agrees.\n"
    )
    run = cli("build", str(root / "wf"), "--out", str(root / "out"), "--jobs", jobs, "--strict")
    assert run.code == 1 and "--strict" in run.err and "Traceback" not in run.err
    assert sorted(p.name for p in root.iterdir()) == ["wf"]
    assert cli("build", str(root / "wf"), "--out", str(root / "out"), "--jobs", jobs).code == 0
    assert sorted(p.name for p in root.iterdir()) == ["out", "out-evals", "wf"]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_fresh_build_that_fails_makes_no_parent_folder(cli, tree, jobs):
    """--out in folders that are not there yet: a build that fails (a collision, --strict) makes none of them; one
    that succeeds makes them all."""
    root = tree({"wf/a.yaml": WF.format("alpha"), "wf/b.yaml": WF.format("alpha"), "wf/c.yaml": WF.format("gamma")})
    out = root / "new" / "deeper" / "out"
    run = cli("build", str(root / "wf"), "--out", str(out), "--jobs", jobs)
    assert run.code == 1 and "alpha" in run.err
    assert sorted(p.name for p in root.iterdir()) == ["wf"]
    (root / "wf" / "b.yaml").write_text(
        WF.format("beta").replace("readOnlyHint: true", "destructiveHint: true")
        + "    guidance: Only continue if the user agrees.\n"
    )
    run = cli("build", str(root / "wf"), "--out", str(out), "--jobs", jobs, "--strict")
    assert run.code == 1 and "--strict" in run.err
    assert sorted(p.name for p in root.iterdir()) == ["wf"]
    assert cli("build", str(root / "wf"), "--out", str(out), "--jobs", jobs).code == 0
    assert sorted(p.name for p in out.parent.iterdir()) == ["out", "out-evals"]


# The limited runs write no .pyc: under RLIMIT_FSIZE, with SIGXFSZ ignored, Python writes a cut one and keeps it
_NO_PYC = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="RLIMIT_FSIZE")
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_fresh_build_that_cannot_write_a_file_says_so_and_leaves_nothing(tree, jobs):
    """A file the disk refuses (here: larger than RLIMIT_FSIZE allows, as a full disk would refuse it), written by
    the process that compiled it: one error naming the problem, no traceback, no folder, no stage."""
    import resource
    import subprocess
    import sys

    root = tree({**_many(3), "wf/big.yaml": WF.format("big") + "    guidance: " + "w " * 2000 + "\n"})

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the write fails with EFBIG instead of killing the process
        resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))

    run = subprocess.run(
        [sys.executable, "-m", "projector.cli", "build", "wf", "--out", "out", "--jobs", jobs],
        cwd=root,
        env=_NO_PYC,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limit,
    )
    assert run.returncode == 1, run.stderr
    assert "cannot write the output folder" in run.stderr and "File too large" in run.stderr
    assert "Traceback" not in run.stderr
    assert sorted(p.name for p in root.iterdir()) == ["wf"]


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(signal, "SIGXFSZ"), reason="RLIMIT_FSIZE")
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_fresh_build_whose_every_bundle_the_disk_refuses_names_the_output_folder_once(tree, jobs):
    """Every bundle larger than the disk allows (RLIMIT_FSIZE, as a full disk): one error, naming the output folder
    (not its parent), whichever process wrote the bundles."""
    import resource
    import subprocess
    import sys

    root = tree(_many(6))

    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))

    run = subprocess.run(
        [sys.executable, "-m", "projector.cli", "build", "wf", "--out", "out", "--jobs", jobs],
        cwd=root,
        env=_NO_PYC,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=limit,
    )
    assert run.returncode == 1 and "Traceback" not in run.stderr, run.stderr
    errors = [line for line in run.stderr.splitlines() if "error[io]" in line]
    assert len(errors) == 1 and errors[0].startswith(f"{(root / 'out').resolve()}: "), run.stderr
    assert "File too large" in errors[0]
    assert sorted(p.name for p in root.iterdir()) == ["wf"]
