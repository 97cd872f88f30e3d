"""The build cache against a hostile checkout (issue 17, items 1, 12, 13 and 16).

- Nothing follows a link it did not make: the cache writes only into a real folder of the current user that no one
  else can write, creates every file under a random name with ``O_CREAT|O_EXCL|O_NOFOLLOW`` and mode 0600, relative
  to a folder descriptor, and reads entries with :func:`projector.bounded.read_regular`. Anything else in its place
  (a link, a FIFO, another user's folder) turns the cache off for the run: nothing is written, the build goes on.
- An entry this machine did not write is never trusted: its checksum is an HMAC-SHA256 under a per-user secret kept
  outside the checkout, and every path inside it is checked before it is used.
- A full disk leaves nothing half-written, the ``.gitignore`` is repaired, and temporary files of killed runs go.
- A workflow file whose name is not UTF-8 builds with the cache on.

Every test here also checks that the output is exactly the uncached build's.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import json
import os
import re
import shutil
import stat
from pathlib import Path

import pytest

from conftest import make_tree, snapshot_tree
from projector import bounded, output
from projector import cache as cache_mod
from projector.cache import CACHE_DIR, GITIGNORE, Cache
from projector.output import Options
from test_cache import GOOD, entries, forbid_compiling, outcome

TEMP = re.compile(r"\.tmp-[0-9a-f]{32}")


def old_slot(display: str, options: Options = Options(())) -> str:
    """The slot name of an entry (the same formula since the cache began)."""
    return hashlib.sha256(f"{options!r}\0{display}".encode()).hexdigest()[:40]


def listing(root: Path) -> dict[str, str]:
    """Every path under ``root`` (links not followed) with its kind, to prove that nothing was written."""
    out = {}
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        out[p.relative_to(root).as_posix()] = ("link" if stat.S_ISLNK(st.st_mode) else "dir"
                                               if stat.S_ISDIR(st.st_mode) else f"file {st.st_size}")
    return out


@pytest.fixture
def wf(tmp_path):
    """A workflows folder with two workflows; the cache goes to wf/.projector_cache."""
    return make_tree(tmp_path, {"wf/a.yaml": GOOD.format(name="alpha"), "wf/b.yaml": GOOD.format(name="beta")}) / "wf"


def build(src: Path, **kwargs) -> dict:
    return outcome(src, src / CACHE_DIR, **kwargs)


# ------------------------------------------------------------------------------------------------ the key

def test_the_key_lives_in_the_users_cache_folder_and_is_made_once(tmp_path, monkeypatch, wf):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_mod.key_file() == tmp_path / "xdg" / "project-skill" / "cache-key"
    assert build(wf) == outcome(wf, None)
    key = tmp_path / "xdg" / "project-skill" / "cache-key"
    assert stat.S_IMODE(key.lstat().st_mode) == 0o600 and stat.S_ISREG(key.lstat().st_mode)
    assert stat.S_IMODE(key.parent.lstat().st_mode) == 0o700
    secret = key.read_bytes()
    assert len(secret) == cache_mod.KEY_SIZE == 32
    assert sorted(p.name for p in key.parent.iterdir()) == ["cache-key"]  # its temporary file is gone
    plain = outcome(wf, None)
    forbid_compiling(monkeypatch)
    assert build(wf) == plain  # the same key again: every entry a hit
    assert key.read_bytes() == secret


def test_the_key_defaults_to_dot_cache_in_home(tmp_path, monkeypatch):
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_mod.key_file() == tmp_path / "home" / ".cache" / "project-skill" / "cache-key"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/path")  # not absolute: ignored, as the XDG spec says
    assert cache_mod.key_file() == tmp_path / "home" / ".cache" / "project-skill" / "cache-key"
    monkeypatch.setenv("XDG_CACHE_HOME", "")
    assert cache_mod.key_file() == tmp_path / "home" / ".cache" / "project-skill" / "cache-key"
    monkeypatch.setenv("HOME", "not/absolute")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_mod.key_file() is None


def test_the_suite_never_writes_a_key_into_the_real_home():
    """tests/conftest.py points XDG_CACHE_HOME at a temporary folder for every test."""
    where = cache_mod.key_file()
    assert where is not None and os.environ["XDG_CACHE_HOME"] in str(where)
    assert not str(where).startswith(os.path.expanduser("~/.cache"))


def foreign(monkeypatch, path: Path) -> None:
    """Make ``path`` look like another user's to the cache (``os.stat`` and ``os.fstat`` of its inode)."""
    ino, uid = path.lstat().st_ino, os.geteuid()
    real_stat, real_fstat = os.stat, os.fstat

    def other(st):
        if st.st_ino != ino:
            return st
        return os.stat_result((st.st_mode, st.st_ino, st.st_dev, st.st_nlink, uid + 7, *tuple(st)[5:]))

    monkeypatch.setattr(cache_mod.os, "stat", lambda *a, **k: other(real_stat(*a, **k)))
    monkeypatch.setattr(cache_mod.os, "fstat", lambda fd: other(real_fstat(fd)))


def _no_cache_was_used(wf: Path, monkeypatch) -> None:
    before = listing(wf.parent)
    assert build(wf) == outcome(wf, None)
    assert listing(wf.parent) == before  # nothing written anywhere


@pytest.mark.parametrize("damage", ["link", "folder-link", "short", "long", "group-readable", "fifo", "folder",
                                    "foreign", "foreign-folder", "folder-writable", "under-a-file"])
def test_a_key_that_cannot_be_had_turns_the_cache_off(tmp_path, monkeypatch, wf, damage):
    xdg = tmp_path / "xdg"
    folder, key = xdg / "project-skill", xdg / "project-skill" / "cache-key"
    folder.mkdir(parents=True, mode=0o700)
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "cache-key").write_bytes(b"k" * 32)
    if damage == "link":
        key.symlink_to(other / "cache-key")
    elif damage == "folder-link":
        folder.rmdir()
        folder.symlink_to(other)
    elif damage == "short":
        key.write_bytes(b"k" * 31)
    elif damage == "long":
        key.write_bytes(b"k" * 33)
    elif damage == "group-readable":
        key.write_bytes(b"k" * 32)
        key.chmod(0o640)
    elif damage == "fifo":
        os.mkfifo(key, 0o600)
    elif damage == "folder":
        key.mkdir()
    elif damage in ("foreign", "foreign-folder"):
        key.write_bytes(b"k" * 32)
        key.chmod(0o600)
        foreign(monkeypatch, key if damage == "foreign" else folder)
    elif damage == "folder-writable":
        key.write_bytes(b"k" * 32)
        key.chmod(0o600)
        folder.chmod(0o720)
    else:
        shutil.rmtree(xdg)
        xdg.write_text("a file where the cache home should be")
        folder = xdg
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
    before = listing(tmp_path)
    assert build(wf) == outcome(wf, None)
    assert listing(tmp_path) == before  # no cache folder, no entry, no new key
    assert (other / "cache-key").read_bytes() == b"k" * 32


def test_no_home_at_all_means_no_cache(tmp_path, monkeypatch, wf):
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", "relative")
    _no_cache_was_used(wf, monkeypatch)


def test_a_full_disk_at_the_keys_creation_means_no_cache_and_no_leftover(tmp_path, monkeypatch, wf):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cache_mod.os, "write", full)
    assert build(wf) == outcome(wf, None)
    assert listing(tmp_path / "xdg") == {"project-skill": "dir"}  # no key, no temporary file
    assert not (wf / CACHE_DIR).exists()


def test_two_runs_making_the_key_at_once_agree_on_the_first(tmp_path, monkeypatch):
    """The key is published by a hard link, which never replaces: the run that loses takes the winner's key."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    real_link = os.link

    def raced(src, dst, **kwargs):
        (tmp_path / "xdg" / "project-skill" / "cache-key").write_bytes(b"w" * 32)  # the other run, just before
        os.chmod(tmp_path / "xdg" / "project-skill" / "cache-key", 0o600)
        return real_link(src, dst, **kwargs)

    monkeypatch.setattr(cache_mod.os, "link", raced)
    assert cache_mod.user_key() == b"w" * 32
    assert sorted(os.listdir(tmp_path / "xdg" / "project-skill")) == ["cache-key"]
    monkeypatch.setattr(cache_mod.os, "link", real_link)
    assert cache_mod.user_key() == b"w" * 32


def test_read_regular_reads_relative_to_a_folder_descriptor(tmp_path):
    (tmp_path / "f").write_bytes(b"data")
    (tmp_path / "link").symlink_to(tmp_path / "f")
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert bounded.read_regular("f", 4, dir_fd=fd) == b"data"
        with pytest.raises(bounded.Unreadable, match="symbolic link"):
            bounded.read_regular("link", 4, dir_fd=fd)
        with pytest.raises(bounded.Unreadable, match="over the limit of 3"):
            bounded.read_regular("f", 3, dir_fd=fd)
        with pytest.raises(bounded.Unreadable, match="No such file"):
            bounded.read_regular("missing", 3, dir_fd=fd)
    finally:
        os.close(fd)


def test_entries_under_another_key_are_misses_and_rewritten(tmp_path, monkeypatch, wf):
    assert build(wf) == outcome(wf, None)
    written = {p.name: p.read_bytes() for p in entries(wf / CACHE_DIR)}
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "another-machine"))
    compiled = []
    real = output._compile_one
    monkeypatch.setattr(output, "_compile_one", lambda *a: compiled.append(a[1]) or real(*a))
    assert build(wf) == outcome(wf, None)
    assert sorted(compiled) == sorted([(wf / "a.yaml").as_posix(), (wf / "b.yaml").as_posix()] * 2)  # all missed
    rewritten = {p.name: p.read_bytes() for p in entries(wf / CACHE_DIR)}
    assert rewritten.keys() == written.keys() and all(rewritten[k] != written[k] for k in written)


# ------------------------------------------------------------------------------------------------ item 12: trust

def _entry(store: Path, display: str) -> tuple[bytes, bytes, bytes]:
    key, mac, payload = (store / "entries" / old_slot(display)).read_bytes().split(b"\n", 2)
    return key, mac, payload


def test_the_checksum_is_an_hmac_under_the_users_key(wf):
    assert build(wf) == outcome(wf, None)
    display = (wf / "a.yaml").as_posix()
    key, mac, payload = _entry(wf / CACHE_DIR, display)
    secret = cache_mod.key_file().read_bytes()
    assert mac == hmac.new(secret, key + b"\n" + payload, hashlib.sha256).hexdigest().encode()
    assert Cache(wf / CACHE_DIR, Options(())).seal(key.decode(), payload) == mac


def test_an_entry_with_a_recomputed_checksum_is_not_trusted(cli, wf):
    """A tampered entry whose checksum was recomputed (as anyone can who reads the code) is a miss, so `check`
    compiles the file and finds the tampered tree stale, as `--no-cache` does."""
    root = wf.parent
    assert cli("build", "wf", "--out", "out", cwd=root).code == 0
    store = wf / CACHE_DIR
    slot = store / "entries" / old_slot("wf/a.yaml")
    key, _, payload = slot.read_bytes().split(b"\n", 2)
    n, _, rest = payload.partition(b"\n")
    head, blobs = rest[:int(n)], rest[int(n):]  # the bundle's bytes only: the index in the header stays as it was
    tampered = b"%s\n%s%s" % (n, head, blobs.replace(b"A workflow named alpha.", b"A workflow named ALPHA."))
    assert tampered != payload and len(tampered) == len(payload)
    skill = root / "out" / "alpha" / "SKILL.md"
    skill.write_bytes(skill.read_bytes().replace(b"A workflow named alpha.", b"A workflow named ALPHA."))
    for forged in (hashlib.sha256(tampered).hexdigest().encode(),  # what the checksum was before issue 17
                   hashlib.sha256(key + b"\n" + tampered).hexdigest().encode(),
                   hmac.new(b"", key + b"\n" + tampered, hashlib.sha256).hexdigest().encode()):
        slot.write_bytes(b"%s\n%s\n%s" % (key, forged, tampered))
        run = cli("check", "wf", "--out", "out", cwd=root)
        assert run.code == 1 and "out/ is out of date (1 stale" in run.out.replace("out is", "out/ is"), forged
        assert cli("check", "wf", "--out", "out", "--no-cache", cwd=root).code == 1


BAD_PATHS = ["/etc", "/abs/x", "../x", "a/../../x", "..", ".", "./a", "a/.", "a//b", "a/", "", "a\\b", "a\0b",
             "\\\\server\\share"]


def _payload_with(bundle_path: str | None = None, file: str | None = None) -> bytes:
    src = output._compile_one(GOOD.format(name="alpha").encode(), "wf/a.yaml", Options(()))
    payload = cache_mod.encode(src)
    n, _, rest = payload.partition(b"\n")
    head = json.loads(rest[:int(n)])
    if bundle_path is not None:
        head["bundle"]["path"] = bundle_path
    if file is not None:
        head["bundle"]["files"][0][0] = file
    text = json.dumps(head).encode()
    return b"%d\n%s%s" % (len(text), text, rest[int(n):])


@pytest.mark.parametrize("bad", BAD_PATHS)
def test_a_bad_bundle_path_in_an_entry_is_refused(bad):
    with pytest.raises(ValueError, match="path"):
        cache_mod.decode(_payload_with(bundle_path=bad))


@pytest.mark.parametrize("bad", [*BAD_PATHS, "SKILL.md/../../x"])
def test_a_bad_file_path_in_an_entry_is_refused(bad):
    with pytest.raises(ValueError, match="path"):
        cache_mod.decode(_payload_with(file=bad))


def test_a_bundle_path_outside_the_prefix_is_refused():
    assert cache_mod.decode(_payload_with(bundle_path="alpha"))[3].path == "alpha"
    assert cache_mod.decode(_payload_with(bundle_path="team/alpha"), ("team",))[3].path == "team/alpha"
    for bad, prefix in (("alpha", ("team",)), ("team/alpha", ()), ("other/alpha", ("team",)), ("team", ("team",)),
                        ("team/x/alpha", ("team",))):
        with pytest.raises(ValueError, match="path"):
            cache_mod.decode(_payload_with(bundle_path=bad), prefix)


def test_a_duplicate_file_in_an_entry_is_refused():
    payload = _payload_with()
    n, _, rest = payload.partition(b"\n")
    head = json.loads(rest[:int(n)])
    files = head["bundle"]["files"]
    head["bundle"]["files"] = [files[0], files[0], *files[1:]]
    blob0 = rest[int(n):int(n) + files[0][1]]
    text = json.dumps(head).encode()
    with pytest.raises(ValueError, match="twice"):
        cache_mod.decode(b"%d\n%s%s%s" % (len(text), text, blob0, rest[int(n):]))


def test_a_sealed_entry_with_an_absolute_path_writes_nothing_outside_out(cli, tmp_path, wf):
    """Even an entry that passes its checksum (the key is this user's) cannot name a path outside the bundle."""
    root = wf.parent
    victim = tmp_path / "victim"
    assert cli("build", "wf", "--out", "out", cwd=root).code == 0
    c = Cache(wf / CACHE_DIR, Options(()))
    slot = wf / CACHE_DIR / "entries" / old_slot("wf/a.yaml")
    key = slot.read_bytes().split(b"\n", 1)[0].decode()
    for bad in (f"{victim}/alpha", "../../victim/alpha"):
        payload = _payload_with(bundle_path=bad)
        slot.write_bytes(b"%s\n%s\n%s" % (key.encode(), c.seal(key, payload), payload))
        assert cli("build", "wf", "--out", "out2", cwd=root).code == 0
        assert not victim.exists()
        assert snapshot_tree(root / "out2") == snapshot_tree(root / "out")
        assert slot.read_bytes().split(b"\n", 2)[2] != payload  # the miss was rewritten with the real result


# ------------------------------------------------------------------------------------------------ item 1: links

def test_every_cache_file_is_made_fresh_under_a_random_name(tmp_path, monkeypatch, wf):
    """O_CREAT always with O_EXCL and O_NOFOLLOW, mode 0600, relative to a folder descriptor, a random name; every
    rename stays inside one folder descriptor."""
    made, renamed = [], []
    real_open, real_replace = os.open, os.replace

    folders = set()

    def spy_open(path, flags, mode=0o777, *, dir_fd=None):
        if flags & os.O_CREAT:
            made.append((path, flags, mode, dir_fd))
        elif flags & os.O_DIRECTORY:
            folders.add((os.path.basename(path), flags, dir_fd is None))
        return real_open(path, flags, mode, dir_fd=dir_fd)

    def spy_replace(src, dst, *, src_dir_fd=None, dst_dir_fd=None):
        renamed.append((src, dst, src_dir_fd, dst_dir_fd))
        return real_replace(src, dst, src_dir_fd=src_dir_fd, dst_dir_fd=dst_dir_fd)

    plain = outcome(wf, None)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "new-user"))
    monkeypatch.setattr(cache_mod.os, "open", spy_open)
    monkeypatch.setattr(cache_mod.os, "replace", spy_replace)
    assert build(wf) == plain
    monkeypatch.undo()
    # the key's temporary file, the .gitignore's and one per entry
    assert len(made) == 4 and len({p for p, *_ in made}) == 4
    want = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for path, flags, mode, dir_fd in made:
        assert TEMP.fullmatch(path), path
        assert flags == want and mode == 0o600 and isinstance(dir_fd, int)
    assert [dst for _, dst, *_ in renamed] == [".gitignore", old_slot((wf / "a.yaml").as_posix()),
                                               old_slot((wf / "b.yaml").as_posix())]
    for src, dst, a, b in renamed:
        assert TEMP.fullmatch(src) and isinstance(a, int) and a == b
    real = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC  # a parent named by the user: followed
    mine = real | os.O_NOFOLLOW  # a folder of the cache's own: never a link
    assert folders == {("new-user", real, True), ("project-skill", mine, False), ("wf", real, True),
                       (CACHE_DIR, mine, False), ("entries", mine, False)}
    store = wf / CACHE_DIR
    assert stat.S_IMODE(store.lstat().st_mode) == 0o700
    assert stat.S_IMODE((store / "entries").lstat().st_mode) == 0o700
    assert stat.S_IMODE((store / ".gitignore").lstat().st_mode) == 0o600
    assert (store / ".gitignore").read_bytes() == GITIGNORE == (
        b"# Created by project-skill: the build cache is never committed.\n*\n")
    assert all(stat.S_IMODE(p.lstat().st_mode) == 0o600 for p in entries(store))
    assert sorted(p.name for p in store.iterdir()) == [".gitignore", "entries"]


def test_planted_links_at_the_old_temporary_names_are_not_followed(tmp_path, monkeypatch, wf):
    """The old temporary name was .tmp-<pid>-<slot>: a checkout could plant a link there to any file."""
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's file\n")
    store = wf / CACHE_DIR
    (store / "entries").mkdir(parents=True)
    for name in ("a", "b"):
        slot = old_slot((wf / f"{name}.yaml").as_posix())
        (store / "entries" / f".tmp-{os.getpid()}-{slot}").symlink_to(victim)
    assert build(wf) == outcome(wf, None)
    assert victim.read_text() == "the user's file\n"
    plain = outcome(wf, None)
    forbid_compiling(monkeypatch)
    assert build(wf) == plain  # and the cache works


def _plant(wf: Path, tmp_path: Path, kind: str) -> Path:
    """Plant ``kind`` in the cache folder; returns the place a follower would write."""
    store = wf / CACHE_DIR
    elsewhere = tmp_path / "elsewhere"
    if kind == "cache-folder-link":
        elsewhere.mkdir()
        store.symlink_to(elsewhere)
    elif kind == "entries-link":
        elsewhere.mkdir()
        store.mkdir()
        (store / "entries").symlink_to(elsewhere)
    elif kind == "dangling-gitignore":
        store.mkdir()
        (store / ".gitignore").symlink_to(elsewhere)
    elif kind == "gitignore-link":
        store.mkdir()
        elsewhere.write_text("# Created by project-skill: the build cache is never committed.\n*\n")
        (store / ".gitignore").symlink_to(elsewhere)
    elif kind == "gitignore-fifo":
        store.mkdir()
        os.mkfifo(store / ".gitignore")
    elif kind == "gitignore-folder":
        store.mkdir()
        (store / ".gitignore").mkdir()
    elif kind == "cache-folder-file":
        store.write_text("not a folder")
    elif kind == "entries-file":
        store.mkdir()
        (store / "entries").write_text("not a folder")
    elif kind == "group-writable":
        store.mkdir()
        store.chmod(0o775)
    elif kind == "other-writable":
        store.mkdir()
        store.chmod(0o703)
    elif kind == "entries-group-writable":
        (store / "entries").mkdir(parents=True)
        store.chmod(0o700)
        (store / "entries").chmod(0o770)
    else:
        raise AssertionError(kind)
    return elsewhere


PLANTS = ["cache-folder-link", "entries-link", "dangling-gitignore", "gitignore-link", "gitignore-fifo",
          "gitignore-folder", "cache-folder-file", "entries-file", "group-writable", "other-writable",
          "entries-group-writable"]


@pytest.mark.parametrize("kind", PLANTS)
def test_a_planted_cache_folder_is_ignored_and_nothing_is_written(tmp_path, wf, kind):
    elsewhere = _plant(wf, tmp_path, kind)
    Cache(wf / CACHE_DIR, Options(())).put("x", "y", output._compile_one(b"", "x", Options(())))  # makes the key
    before = listing(tmp_path)
    after_elsewhere = elsewhere.read_bytes() if elsewhere.is_file() else None
    assert build(wf) == outcome(wf, None)
    assert listing(tmp_path) == before
    assert (elsewhere.read_bytes() if elsewhere.is_file() else None) == after_elsewhere
    if kind == "dangling-gitignore":
        assert not os.path.lexists(elsewhere)


@pytest.mark.parametrize("mode", [0o755, 0o711, 0o700, 0o750])
def test_a_cache_folder_readable_by_others_is_used(monkeypatch, wf, mode):
    """Folders made by earlier versions (mode 0755 under the usual umask) stay in use: only write bits matter."""
    assert build(wf) == outcome(wf, None)
    (wf / CACHE_DIR).chmod(mode)
    (wf / CACHE_DIR / "entries").chmod(mode)
    plain = outcome(wf, None)
    forbid_compiling(monkeypatch)
    assert build(wf) == plain


@pytest.mark.parametrize("who", ["cache", "entries"])
def test_a_cache_folder_of_another_user_is_ignored(tmp_path, monkeypatch, wf, who):
    assert build(wf) == outcome(wf, None)
    for p in entries(wf / CACHE_DIR):
        p.write_bytes(b"stale")
    foreign(monkeypatch, wf / CACHE_DIR / ("entries" if who == "entries" else "."))
    before = listing(tmp_path)
    assert build(wf) == outcome(wf, None)
    assert listing(tmp_path) == before
    assert all(p.read_bytes() == b"stale" for p in entries(wf / CACHE_DIR))


@pytest.mark.parametrize("kind", ["link", "fifo", "folder"])
def test_a_link_fifo_or_folder_in_place_of_an_entry_is_a_miss_and_left_alone(tmp_path, monkeypatch, wf, kind):
    assert build(wf) == outcome(wf, None)
    slot = wf / CACHE_DIR / "entries" / old_slot((wf / "a.yaml").as_posix())
    good = slot.read_bytes()
    target = tmp_path / "target"
    target.write_bytes(good)  # even a link to a whole, valid entry is not read
    slot.unlink()
    if kind == "link":
        slot.symlink_to(target)
    elif kind == "fifo":
        os.mkfifo(slot)
    else:
        slot.mkdir()
    compiled = []
    real = output._compile_one
    monkeypatch.setattr(output, "_compile_one", lambda *a: compiled.append(a[1]) or real(*a))
    assert build(wf) == outcome(wf, None)
    assert compiled.count((wf / "a.yaml").as_posix()) == 2 and compiled.count((wf / "b.yaml").as_posix()) == 1
    assert {"link": stat.S_ISLNK, "fifo": stat.S_ISFIFO, "folder": stat.S_ISDIR}[kind](slot.lstat().st_mode)
    assert target.read_bytes() == good


def test_an_entry_over_the_size_cap_is_a_miss(monkeypatch, wf):
    assert build(wf) == outcome(wf, None)
    slot = wf / CACHE_DIR / "entries" / old_slot((wf / "a.yaml").as_posix())
    size = slot.stat().st_size
    monkeypatch.setattr(cache_mod, "MAX_ENTRY", size - 1)
    plain = outcome(wf, None)
    compiled = []
    real = output._compile_one
    monkeypatch.setattr(output, "_compile_one", lambda *a: compiled.append(a[1]) or real(*a))
    assert build(wf) == plain
    assert compiled == [(wf / "a.yaml").as_posix()]
    monkeypatch.setattr(cache_mod, "MAX_ENTRY", size)
    assert build(wf) == plain
    assert compiled == [(wf / "a.yaml").as_posix()]  # exactly at the cap: read


def test_the_entry_cap_holds_the_largest_bundle():
    from projector.bundle import MAX_BYTES

    assert cache_mod.MAX_ENTRY == 4 * MAX_BYTES


# ------------------------------------------------------------------------------------------------ item 16: full disk

def test_a_full_disk_at_the_first_write_leaves_nothing_half_written(monkeypatch, wf):
    real = os.write

    def full(fd, data):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(cache_mod.os, "write", full)
    assert build(wf) == outcome(wf, None)
    store = wf / CACHE_DIR
    assert not (store / ".gitignore").exists()
    assert sorted(p.name for p in store.iterdir()) == ["entries"]
    assert list((store / "entries").iterdir()) == []
    monkeypatch.setattr(cache_mod.os, "write", real)
    assert build(wf) == outcome(wf, None)
    assert (store / ".gitignore").read_bytes() == GITIGNORE
    assert len(entries(store)) == 2


@pytest.mark.parametrize("content", [b"", b"*\n", b"# Created by project-skill: the build cache is never committed.\n",
                                     GITIGNORE + b"x", GITIGNORE[:-1], b"x" * 10_000])
def test_a_wrong_gitignore_is_repaired(monkeypatch, wf, content):
    store = wf / CACHE_DIR
    store.mkdir(mode=0o700)
    (store / ".gitignore").write_bytes(content)
    assert build(wf) == outcome(wf, None)
    assert (store / ".gitignore").read_bytes() == GITIGNORE
    plain = outcome(wf, None)
    forbid_compiling(monkeypatch)
    (store / ".gitignore").write_bytes(content)
    assert build(wf) == plain  # repaired by a run that only reads, too
    assert (store / ".gitignore").read_bytes() == GITIGNORE


def test_a_short_write_is_completed(monkeypatch, wf):
    real = os.write
    monkeypatch.setattr(cache_mod.os, "write", lambda fd, data: real(fd, bytes(data[:7])))
    assert build(wf) == outcome(wf, None)
    monkeypatch.setattr(cache_mod.os, "write", real)
    assert (wf / CACHE_DIR / ".gitignore").read_bytes() == GITIGNORE
    plain = outcome(wf, None)
    forbid_compiling(monkeypatch)
    assert build(wf) == plain


def test_stale_temporary_files_of_killed_runs_are_removed(tmp_path, monkeypatch, wf):
    assert build(wf) == outcome(wf, None)
    store = wf / CACHE_DIR
    now = 1_900_000_000
    monkeypatch.setattr(cache_mod.time, "time", lambda: float(now))
    victim = tmp_path / "victim"
    victim.write_text("keep")
    names = {
        "entries/.tmp-" + "a" * 32: ("file", now - 601, False),  # ours, old: removed
        ".tmp-" + "b" * 32: ("file", now - 601, False),  # a .gitignore's, old: removed
        "entries/.tmp-123-" + "c" * 40: ("file", now - 3600, False),  # the old naming, old: removed
        "entries/.tmp-" + "d" * 32 + "x": ("file", now - 3600, True),  # not our pattern
        "entries/.tmp-" + "D" * 32: ("file", now - 3600, True),  # not our pattern (upper case)
        "entries/.tmp-" + "e" * 32: ("file", now - 600, True),  # exactly at the limit: kept
        "entries/.tmp-" + "f" * 32: ("file", now, True),  # fresh: a live run's
        "entries/.tmp-" + "0" * 32: ("link", now - 3600, True),  # a link: never touched
        "entries/.tmp-" + "1" * 32: ("dir", now - 3600, True),  # a folder: never touched
        "entries/.tmp-" + "2" * 31: ("file", now - 3600, True),  # one digit short
        "entries/notes": ("file", now - 3600, True),
        "entries/.tmp-": ("file", now - 3600, True),
        "entries/.tmp-12-" + "3" * 40: ("link", now - 3600, True),
    }
    for rel, (kind, mtime, _) in names.items():
        p = store / rel
        if kind == "file":
            p.write_text("x")
        elif kind == "dir":
            p.mkdir()
        else:
            p.symlink_to(victim)
        os.utime(p, (mtime, mtime), follow_symlinks=False)
    plain = outcome(wf, None)
    forbid_compiling(monkeypatch)
    assert build(wf) == plain  # a run that only reads sweeps too
    for rel, (_, _, kept) in names.items():
        assert os.path.lexists(store / rel) == kept, rel
    assert victim.read_text() == "keep"
    assert cache_mod.STALE_AFTER == 600


def test_a_run_with_no_cache_folder_yet_writes_nothing_on_reads(wf):
    c = Cache(wf / CACHE_DIR, Options(()))
    assert c.get("wf/a.yaml", "0" * 64) is None
    assert not (wf / CACHE_DIR).exists()


# ------------------------------------------------------------------------------------------------ item 13: names

def test_a_workflow_file_whose_name_is_not_utf8_builds_with_the_cache(cli, tmp_path, monkeypatch):
    root = tmp_path / "proj"
    (root / "wf").mkdir(parents=True)
    name = os.fsdecode(b"\xffbad.yaml")
    (root / "wf" / name).write_text(GOOD.format(name="bad"), "utf-8")
    (root / "wf" / "good.yaml").write_text(GOOD.format(name="good"), "utf-8")
    assert cli("build", "wf", "--out", "plain", "--no-cache", cwd=root).code == 0
    assert cli("build", "wf", "--out", "cached", cwd=root).code == 0
    assert snapshot_tree(root / "cached") == snapshot_tree(root / "plain")
    assert len(entries(root / "wf" / CACHE_DIR)) == 2  # the odd name's result was cached too
    src = root / "wf"
    assert outcome(src, src / CACHE_DIR) == outcome(src, None)  # absolute display paths, with the escape
    forbid_compiling(monkeypatch)
    assert cli("check", "wf", "--out", "plain", cwd=root).code == 0


def test_keys_and_slots_of_odd_names_are_distinct():
    c = Cache(Path("/nonexistent"), Options(()))
    odd = [os.fsdecode(b"wf/\xff.yaml"), os.fsdecode(b"wf/\xfe.yaml"), "wf/\udcff.yaml", "wf/\ud800.yaml", "wf/ÿ.yaml"]
    assert len({c.key(d, b"x") for d in odd}) == len({c.slot(d) for d in odd}) == 4  # \xff is \udcff
    assert c.slot("wf/a.yaml").name == old_slot("wf/a.yaml")



def test_a_cache_with_an_open_folder_goes_to_workers(tmp_path, monkeypatch):
    """Worker processes get the cache pickled, without the folder descriptor of the main process (each opens and
    checks its own), and the secret with it."""
    import pickle

    src = make_tree(tmp_path, {f"wf/w{i}.yaml": GOOD.format(name=f"w{i}") for i in range(12)}) / "wf"
    assert outcome(src, src / CACHE_DIR, jobs=3) == outcome(src, None)
    for i in range(0, 12, 2):
        (src / f"w{i}.yaml").write_text(GOOD.format(name=f"w{i}x"), "utf-8")
    assert outcome(src, src / CACHE_DIR, jobs=3) == outcome(src, None)  # hits in the main process, misses in workers
    c = Cache(src / CACHE_DIR, Options(()))
    assert c.get((src / "w1.yaml").as_posix(), c.key((src / "w1.yaml").as_posix(), (src / "w1.yaml").read_bytes()))
    copy = pickle.loads(pickle.dumps(c))
    assert copy._fd is None and c._fd is not None and copy._secret == c._secret == cache_mod.user_key()
    plain = outcome(src, None)
    forbid_compiling(monkeypatch)
    assert outcome(src, src / CACHE_DIR, jobs=3) == plain


# ------------------------------------------------------------------------------------------------ exact internals
# (each pins a behaviour that the build tests above cannot see, because the cache turns every failure into a miss)

def _head(payload: bytes) -> tuple[dict, bytes]:
    n, _, rest = payload.partition(b"\n")
    return json.loads(rest[:int(n)]), rest[int(n):]


def _payload(head: dict, blobs: bytes) -> bytes:
    text = json.dumps(head).encode()
    return b"%d\n%s%s" % (len(text), text, blobs)


def test_encode_writes_a_compact_ascii_header_and_decode_gives_back_every_field():
    from projector.errors import Diagnostic, Span

    d = Diagnostic(Span("wf/x.yaml", 2, 3), "error", "load", "bad \u00fc", None, None, {"k": "v"})
    result = ("", Span("wf/x.yaml", 1, 1), "wf/x.yaml", None, [d])
    data = cache_mod.encode(result)
    head = (b'{"name":"","span":["wf/x.yaml",1,1],"source":"wf/x.yaml","diags":[{"span":["wf/x.yaml",2,3],'
            b'"severity":"error","code":"load","message":"bad \\u00fc","hint":null,"acknowledged":null,'
            b'"extra":{"k":"v"}}],"bundle":null}')
    assert data == b"%d\n%s" % (len(head), head)
    back = cache_mod.decode(data)
    assert back == result and back[3] is None and back[4][0].extra == {"k": "v"}
    with pytest.raises(ValueError, match=r"^trailing bytes in entry$"):
        cache_mod.decode(data + b"x")


def test_decode_keeps_empty_files_and_the_written_index_text():
    head, blobs = _head(_payload_with())
    head["bundle"]["files"].append(["references/empty.md", 0])
    head["bundle"]["index_text"] = "the index as written"
    bundle = cache_mod.decode(_payload(head, blobs))[3]
    assert bundle.files["references/empty.md"] == b"" and bundle.index_text == "the index as written"
    head["bundle"]["index_text"] = 5
    with pytest.raises(TypeError, match=r"^index_text$"):
        cache_mod.decode(_payload(head, blobs))


@pytest.mark.parametrize("damage, message", [
    ("longer", "truncated entry"), ("negative", "truncated entry"), ("trailing", "trailing bytes in entry")])
def test_decode_refuses_lengths_that_do_not_match_the_bytes(damage, message):
    head, blobs = _head(_payload_with())
    files = head["bundle"]["files"]
    if damage == "longer":  # the last file claims one byte more than is there
        files[-1][1] += 1
    elif damage == "negative":
        files[0][1] = -1
    else:
        blobs += b"x"
    with pytest.raises(ValueError, match=f"^{message}$"):
        cache_mod.decode(_payload(head, blobs))


def _dir_fd(path: Path) -> int:
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY)


def test_folder_checks_name_what_they_refuse(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to("real")
    (tmp_path / "open").mkdir()
    (tmp_path / "open").chmod(0o777)
    parent = _dir_fd(tmp_path)
    try:
        assert cache_mod._folder(parent, "missing", False) is None
        with pytest.raises(cache_mod._Off, match=r"^link is not a folder$"):
            cache_mod._folder(parent, "link", False)
        with pytest.raises(cache_mod._Off, match=r"^open is another user's, or others can write it$"):
            cache_mod._folder(parent, "open", False)
        with pytest.raises(cache_mod._Off, match=r"^\.gitignore is not a regular file$"):
            (tmp_path / ".gitignore").mkdir()
            cache_mod._gitignore(parent)
    finally:
        os.close(parent)


def test_an_exact_gitignore_is_left_as_it_is(tmp_path):
    (tmp_path / ".gitignore").write_bytes(GITIGNORE)
    ino = (tmp_path / ".gitignore").stat().st_ino
    top = _dir_fd(tmp_path)
    try:
        cache_mod._gitignore(top)
    finally:
        os.close(top)
    assert (tmp_path / ".gitignore").stat().st_ino == ino  # not rewritten (a rewrite is a new file, replaced in)


def test_library_names_where_a_library_is_and_its_entry_files_size_and_mtime():
    import importlib.util

    origin = importlib.util.find_spec("jinja2").origin
    st = os.stat(origin)
    assert cache_mod._library("jinja2") == ["jinja2", origin, st.st_size, st.st_mtime_ns]
    assert cache_mod._library("projector_no_such_library") == ["projector_no_such_library", None, None, None]


def test_stats_lists_source_files_with_their_relative_paths_and_skips_pycache(tmp_path):
    make_tree(tmp_path, {"a.py": "1", "sub/deeper/b.j2": "22", "__pycache__/c.py": "3", "sub/x.txt": "4"})
    got = sorted(cache_mod._stats(tmp_path))
    assert [(rel, size) for rel, size, _ in got] == [("a.py", 1), ("sub/deeper/b.j2", 2)]
    assert got[0][2] == (tmp_path / "a.py").stat().st_mtime_ns


def test_the_key_file_is_read_without_following_a_link_and_whole(tmp_path, monkeypatch):
    (tmp_path / "secret").write_bytes(b"k" * cache_mod.KEY_SIZE)
    (tmp_path / "secret").chmod(0o600)
    (tmp_path / "cache-key").symlink_to("secret")
    folder = _dir_fd(tmp_path)
    try:
        with pytest.raises(cache_mod._Off, match=r"^the cache key is not a private file of the right size$"):
            cache_mod._read_key(folder)
        (tmp_path / "cache-key").unlink()
        (tmp_path / "secret").rename(tmp_path / "cache-key")
        assert cache_mod._read_key(folder) == b"k" * cache_mod.KEY_SIZE
        monkeypatch.setattr(cache_mod.bounded, "read_regular", lambda *a, **k: b"short")  # shrank after the stat
        with pytest.raises(cache_mod._Off, match=r"^the cache key changed while it was read$"):
            cache_mod._read_key(folder)
    finally:
        os.close(folder)


def test_the_users_cache_home_is_made_private(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "fresh"))
    assert cache_mod.user_key() is not None
    assert stat.S_IMODE((tmp_path / "fresh").stat().st_mode) == 0o700


def test_unlink_of_nothing_and_a_failed_replace_leave_no_temporary(tmp_path):
    (tmp_path / "target").mkdir()
    (tmp_path / "target" / "x").write_text("a folder that cannot be replaced by a file")
    folder = _dir_fd(tmp_path)
    try:
        cache_mod._unlink(folder, "nothing-here")
        with pytest.raises(OSError):
            cache_mod._write_whole(folder, "target", b"x")
    finally:
        os.close(folder)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["target"]


def test_an_entry_goes_to_its_slot_under_entries(wf):
    c = Cache(wf / CACHE_DIR, Options(()))
    assert c.entries == wf / CACHE_DIR / "entries" and c.slot("wf/a.yaml") == c.entries / old_slot("wf/a.yaml")
    r = output._compile_one(GOOD.format(name="alpha").encode(), "wf/a.yaml", Options(()))
    c.put("wf/a.yaml", c.key("wf/a.yaml", b"x"), r)
    assert c.slot("wf/a.yaml").is_file() and c.get("wf/a.yaml", c.key("wf/a.yaml", b"x")) == r


def test_entries_under_a_uri_prefix_are_hits(wf):
    options = Options(("team",))
    c = Cache(wf / CACHE_DIR, options)
    r = output._compile_one(GOOD.format(name="alpha").encode(), "wf/a.yaml", options)
    assert r[3].path == "team/alpha"
    c.put("wf/a.yaml", "k", r)
    assert c.get("wf/a.yaml", "k") == r


def test_an_entry_is_read_only_in_the_layout_it_was_written(wf):
    """key, newline, checksum, newline, payload: the same bytes with other whitespace between are not an entry."""
    c = Cache(wf / CACHE_DIR, Options(()))
    r = output._compile_one(GOOD.format(name="alpha").encode(), "wf/a.yaml", Options(()))
    c.put("wf/a.yaml", "k", r)
    slot = c.slot("wf/a.yaml")
    slot.write_bytes(slot.read_bytes().replace(b"\n", b" ", 1))
    assert c.get("wf/a.yaml", "k") is None


def test_a_cache_found_not_to_be_its_own_stays_off_for_the_run(tmp_path, wf):
    r = output._compile_one(GOOD.format(name="alpha").encode(), "wf/a.yaml", Options(()))
    (tmp_path / "elsewhere").mkdir()
    (wf / CACHE_DIR).symlink_to(tmp_path / "elsewhere")
    c = Cache(wf / CACHE_DIR, Options(()))
    assert c.get("wf/a.yaml", "k") is None
    (wf / CACHE_DIR).unlink()  # repaired during the run: still off until the next
    c.put("wf/a.yaml", "k", r)
    assert not (wf / CACHE_DIR).exists()
    gone = Cache(tmp_path / "not-yet" / CACHE_DIR, Options(()))
    gone.put("wf/a.yaml", "k", r)  # cannot be made: off for the run too
    (tmp_path / "not-yet").mkdir()
    gone.put("wf/a.yaml", "k", r)
    assert list((tmp_path / "not-yet").iterdir()) == []


def test_the_entries_folder_is_closed_with_its_cache(wf):
    import gc

    c = Cache(wf / CACHE_DIR, Options(()))
    c.put("wf/a.yaml", "k", output._compile_one(GOOD.format(name="alpha").encode(), "wf/a.yaml", Options(())))
    fd = c._fd
    assert fd is not None and stat.S_ISDIR(os.fstat(fd).st_mode)
    del c
    gc.collect()
    with pytest.raises(OSError):
        os.fstat(fd)


def test_seal_without_a_key_refuses(monkeypatch):
    monkeypatch.setattr(cache_mod, "user_key", lambda: None)
    c = Cache(Path("/nonexistent"), Options(()))
    with pytest.raises(cache_mod._Off, match=r"^no cache key$"):
        c.seal("k", b"payload")
