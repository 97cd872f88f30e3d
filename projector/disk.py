"""Writing to disk has one owner: this module. ``build`` and ``remote load --out`` both call :func:`replace_tree`.

The promise: at every instant the output folder is a complete tree, the old one or the new one, with the user's
files in it; a run that fails, or is killed, loses nothing.

How:

1. The output folder's parent is locked (``flock``), so two runs never interleave.
2. :func:`recover` first repairs what a killed run left beside the folder (see below).
3. The caller's plan names the new files and which old paths are the tool's to drop. The whole new tree is staged
   beside the folder, in ``.NAME.stage-XXXXXXXXXXXX``: the new files are written, and everything else of the old
   tree (the user's files) is carried over by hard link (a copy where a link is refused), with folder modes kept.
   A carried path that a new file needs is a conflict (``output-conflict``), found before anything is swapped.
   A folder on the way to a dropped path that nothing is carried into (a URI prefix no longer used) is not kept.
   A fresh build (the folder is not there yet) makes its stage first, under the lock, and each process that compiles
   writes its bundles into it as it goes (:func:`fresh_stage`, :func:`stage_bundle`), so the writing runs beside the
   compiling; the rest (the index, what needs every bundle) is written after, and the stage swapped in the same way.
   Which old paths are the tool's is proven by :mod:`projector.ownership`, never taken from an index's word.
4. The staged tree is swapped in. On Linux ``renameat2(RENAME_EXCHANGE)`` exchanges the two folders in one atomic
   step; the stage name then holds the old tree, which is removed. Where the exchange is missing (another OS, or a
   file system that refuses it) the swap takes two renames: the folder goes to ``.NAME.old-XXXXXXXXXXXX``, then
   the stage takes its place. The old folder is renamed to a stage name before it is removed, so a half-removed
   tree never carries the ``old`` name.

Recovery, before anything else: when the folder is missing and one ``old`` folder exists, a kill fell between the
two renames, and the old folder is renamed back. Every other leftover (any ``stage`` folder, an ``old`` folder when
the output exists) is garbage of a finished or killed run, and is removed. The lock makes sure it is not a live
run's.

Every file-system change goes through the few small functions at the end (``_rename``, ``_exchange``,
``_remove``, ``_write``), which the crash tests wrap to kill the process at each boundary.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import shutil
import stat
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Any

from .errors import DiskError, ProjectorError, Span, UsageError, error

STAGE, OLD = "stage", "old"
_TAG = 12  # hex digits of the random part of a side folder's name


@dataclass
class Plan:
    """What the new tree holds: ``files`` (POSIX path relative to the folder -> bytes, written fresh), and every
    path of the old tree except those in ``drop`` (a dropped folder goes with everything in it)."""

    files: dict[str, bytes]
    drop: set[str] = field(default_factory=set)
    # Those of ``files`` already in the stage that :func:`fresh_stage` made (a fresh build writes each bundle as it
    # compiles it): not written again.
    staged: frozenset[str] = frozenset()


# ----------------------------------------------------------------------------------------------- the target folder


def folder(out: Path, flag: str = "--out") -> Path:
    """``out`` with symlinks followed (a symlinked output folder is read and written where it points).
    Raises :class:`UsageError` when it names something that exists and is not a folder."""
    real = Path(os.path.realpath(out))
    if real.is_symlink() or (real.exists() and not real.is_dir()):
        raise UsageError(f"{flag} {out}: exists and is not a folder")
    return real


def target(out: Path, flag: str = "--out") -> Path:
    """:func:`folder`, and one that can be replaced whole: not the root, not the current folder or one holding it."""
    real = folder(out, flag)
    if real.parent == real:
        raise DiskError(error(Span(str(out)), "io", "the root folder cannot be replaced", "name a folder inside it"))
    here = Path(os.path.realpath(os.getcwd()))
    if here == real or real in here.parents:
        raise UsageError(
            f"{flag} {out}: the output folder is replaced whole, so it cannot be the current folder or "
            "one that holds it; name a folder inside it"
        )
    return real


def side_folder(root: Path, kind: str) -> Path:
    return root.parent / f".{root.name}.{kind}-{secrets.token_hex(_TAG // 2)}"


def side_of(side: Path) -> Path:
    """The folder whose side folder (:func:`side_folder`) ``side`` is."""
    return side.parent / side.name[1:].rpartition(".")[0]


def _side_kind(root: Path, name: str) -> str | None:
    """``stage`` or ``old`` for a side folder of ``root``, else None. Also the names that earlier versions used
    (made by ``tempfile.mkdtemp``: eight of ``[a-z0-9_]``), so a tree they left half-swapped is restored too."""
    m = re.fullmatch(rf"\.{re.escape(root.name)}\.({STAGE}|{OLD})-(?:[0-9a-f]{{{_TAG}}}|[a-z0-9_]{{8}})", name)
    return m.group(1) if m else None


def leftovers(root: Path) -> dict[str, list[Path]]:
    """The side folders of ``root`` that runs left behind, by kind, sorted."""
    found: dict[str, list[Path]] = {STAGE: [], OLD: []}
    try:
        names = sorted(os.listdir(root.parent))
    except FileNotFoundError:
        return found
    for name in names:
        kind = _side_kind(root, name)
        if kind is not None:
            found[kind].append(root.parent / name)
    return found


# -------------------------------------------------------------------------------------------------- recovery


def recover(root: Path) -> None:
    """Restore an interrupted two-rename swap, then remove every leftover side folder of ``root``."""
    left = leftovers(root)
    olds = left[OLD]
    if olds and not os.path.lexists(root):
        if len(olds) > 1:
            raise DiskError(
                error(
                    Span(str(root)),
                    "io",
                    f"the folder is missing and {len(olds)} interrupted "
                    f"swaps left old copies of it: {', '.join(p.name for p in olds)}",
                    "rename the one to keep back to the folder's name, then run again",
                )
            )
        _rename(olds[0], root)
        olds = []
    for p in [*left[STAGE], *olds]:
        _remove(p)


# ---------------------------------------------------------------------------------------- what is the user's own


def not_own(st: os.stat_result) -> str | None:
    """Why the file or folder that ``st`` describes is not the current user's own to keep state in, or None when it
    is: it must be theirs, and neither its group nor others may write it. ``st`` comes from a stat that did not
    follow a link (the caller refuses links). The rule for the server's replay database:
    state that someone else can write, someone else can empty."""
    if st.st_uid != os.geteuid():
        return "is another user's"
    if st.st_mode & 0o022:
        return "can be written by its group or by others"
    return None


# --------------------------------------------------------------------------------------------------- staging


def _mode_owner(src: os.stat_result, dst: Path) -> None:
    os.chmod(dst, stat.S_IMODE(src.st_mode))
    if (src.st_uid, src.st_gid) != (os.geteuid(), os.getegid()):
        try:
            os.chown(dst, src.st_uid, src.st_gid)
        except PermissionError:
            pass


def _folders(stage: Path, rel: str, made: set[str]) -> None:
    """Make the folders of ``rel`` (a POSIX path relative to ``stage``), parents first."""
    if rel in made:
        return
    parent = rel.rpartition("/")[0]
    _folders(stage, parent, made)
    os.mkdir(stage / rel)
    made.add(rel)


def _conflict(root: Path, rel: str) -> DiskError:
    return DiskError(
        error(
            Span(f"{root.name}/{rel}"),
            "output-conflict",
            "this path is not this tool's, and the new tree needs it",
            "move or rename it, then run again; nothing was changed",
        )
    )


def _carry_entry(entry: os.DirEntry, dst: Path) -> None:
    """One non-folder entry of the old tree into the stage: a symlink as a symlink, a file by hard link."""
    if entry.is_symlink():
        os.symlink(os.readlink(entry.path), dst)
    elif entry.is_file(follow_symlinks=False):
        try:
            os.link(entry.path, dst, follow_symlinks=False)
        except OSError:  # a file system without hard links, or one that refuses this one
            shutil.copy2(entry.path, dst, follow_symlinks=False)
    else:
        raise DiskError(
            error(
                Span(entry.path),
                "io",
                "not a file, folder or symlink: it cannot be carried into the new tree",
                "move it out of the output folder",
            )
        )


def _carry(root: Path, stage: Path, rel: str, drop: set[str], made: set[str], above: set[str]) -> None:
    """Everything under ``root/rel`` that is not dropped, into ``stage/rel``. A folder ``above`` a dropped path
    (a URI prefix's, or one inside a dropped bundle's parent) that is left empty is the tool's, and goes too."""
    with os.scandir(root / rel if rel else root) as it:
        entries = sorted(it, key=lambda e: e.name)
    for entry in entries:
        sub = f"{rel}/{entry.name}" if rel else entry.name
        if sub in drop:
            continue
        dst = stage / sub
        if entry.is_dir(follow_symlinks=False):
            if sub not in made:
                if os.path.lexists(dst):
                    raise _conflict(root, sub)
                os.mkdir(dst)
                made.add(sub)
            _mode_owner(entry.stat(follow_symlinks=False), dst)
            _carry(root, stage, sub, drop, made, above)
            if sub in above and not os.listdir(dst):
                os.rmdir(dst)
                made.discard(sub)
        elif os.path.lexists(dst) or sub in made:
            raise _conflict(root, sub)
        else:
            _carry_entry(entry, dst)


PARALLEL_WRITES_FROM = 64  # files; below this, the threads cost more than they save


def _write_all(stage: Path, files: dict[str, bytes], made: set[str]) -> None:
    """:func:`_write` every file into ``stage``, their folders first, by threads: like a removal, each mkdir and
    each new file waits on the disk, and it serves many at once. The folders are made a level at a time (a folder's
    parent is there before it), then the files, in any order: what the stage holds in the end is the same."""
    from concurrent.futures import ThreadPoolExecutor

    folders: set[str] = set()
    for rel in files:
        parent = rel.rpartition("/")[0]
        while parent and parent not in folders and parent not in made:
            folders.add(parent)
            parent = parent.rpartition("/")[0]
    levels: dict[int, list[str]] = {}
    for rel in sorted(folders):
        levels.setdefault(rel.count("/"), []).append(rel)
    with ThreadPoolExecutor(_THREADS) as pool:
        for depth in sorted(levels):
            list(pool.map(lambda rel: os.mkdir(stage / rel), levels[depth]))
            made.update(levels[depth])
        list(pool.map(lambda item: _write(stage / item[0], item[1]), sorted(files.items())))


def stage_tree(root: Path, plan: Plan, stage: Path | None = None) -> Path:
    """Stage the new tree beside ``root``, or finish ``stage`` (from :func:`fresh_stage`, holding ``plan.staged``);
    returns the stage folder. Removes it again on any failure."""
    if stage is None:
        stage = side_folder(root, STAGE)
        os.mkdir(stage)
    try:
        if os.path.isdir(root):
            _mode_owner(os.stat(root), stage)
        made = {""}
        for rel in plan.staged:  # the folders of what is staged are there: each folder's parents, then the next
            parent = rel.rpartition("/")[0]
            while parent not in made:
                made.add(parent)
                parent = parent.rpartition("/")[0]
        files = {rel: data for rel, data in plan.files.items() if rel not in plan.staged}
        if len(files) < PARALLEL_WRITES_FROM:
            for rel, data in sorted(files.items()):
                _folders(stage, rel.rpartition("/")[0], made)
                _write(stage / rel, data)
        else:
            _write_all(stage, files, made)
        if os.path.isdir(root):
            above = {p.as_posix() for d in plan.drop for p in PurePosixPath(d).parents} - {"."}
            _carry(root, stage, "", plan.drop, made, above)
    except BaseException:
        _remove(stage)
        raise
    return stage


# ------------------------------------------------------------------------------------------------------ swap


def swap_in(stage: Path, root: Path) -> None:
    """Put the staged tree at ``root``: one atomic exchange where the system has it, else two renames."""
    if not os.path.lexists(root):
        _rename(stage, root)
        return
    if _exchange(stage, root):
        _remove(stage)  # it holds the old tree now
        return
    old = side_folder(root, OLD)
    _rename(root, old)
    try:
        _rename(stage, root)
    except BaseException:
        _rename(old, root)
        raise
    trash = side_folder(root, STAGE)
    _rename(old, trash)
    _remove(trash)


@contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``folder`` (where flock works; elsewhere, run unlocked)."""
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        try:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)
        except (ImportError, OSError):  # pragma: no cover - no flock here
            pass
        yield
    finally:
        os.close(fd)


def io_error(exc: OSError, out: Path) -> DiskError:
    what = exc.strerror or str(exc)
    where = f": {exc.filename}" if exc.filename else ""
    return DiskError(
        error(
            Span(str(out)),
            "io",
            f"cannot write the output folder: {what}{where}",
            "check that the folder's parent exists, is a folder and is writable; nothing was changed",
        )
    )


def replace_tree(out: Path, plan: Callable[[Path], Plan | None], *, stage: Path | None = None) -> bool:
    """Make the folder ``out`` hold the tree that ``plan`` describes, atomically, and return True; or return False
    when ``plan`` returns None (nothing to do; nothing is touched). ``plan`` is called with the real folder, after
    recovery and under the lock, so what it reads is what will be replaced. Raises :class:`UsageError` for a bad
    ``out``, :class:`DiskError` for I/O problems and conflicts, and whatever ``plan`` raises; in every case the
    folder is as it was. With ``stage``, the one :func:`fresh_stage` made and holds the lock for, the tree is finished
    there."""
    root = target(out)
    try:
        if stage is not None:
            return _finish(root, plan, stage)
        root.parent.mkdir(parents=True, exist_ok=True)
        with _locked(root.parent):
            recover(root)
            return _finish(root, plan, None)
    except OSError as exc:
        raise io_error(exc, out) from None


def _finish(root: Path, plan: Callable[[Path], Plan | None], stage: Path | None) -> bool:
    wanted = plan(root)
    if wanted is None:
        return False
    stage = stage_tree(root, wanted, stage)
    try:
        swap_in(stage, root)
    except BaseException:
        if os.path.lexists(stage):
            _remove(stage)
        raise
    return True


@contextmanager
def fresh_stage(out: Path) -> Iterator[Path | None]:
    """For a build into a folder that is not there yet: the stage folder beside it, made under the lock, which the
    lock is held for until the end of the ``with``. The build writes each bundle into it as it compiles it
    (:func:`stage_bundle`, the workers in parallel) and :func:`replace_tree` finishes it; it is removed if it was not
    swapped in. None when ``out`` exists, its parent folder does not, or it cannot be locked here: the build then
    stages after comparing (making the parent only then), and says what is wrong with ``out``."""
    stage, locked = None, ExitStack()
    try:
        root = target(out)
        if not os.path.lexists(root):  # its parent is not made here: a build that fails makes no folder
            locked.enter_context(_locked(root.parent))
            recover(root)
            if not os.path.lexists(root):
                made = side_folder(root, STAGE)
                os.mkdir(made)
                stage = made
    except (OSError, ProjectorError):
        pass
    if stage is None:
        locked.close()
        yield None
        return
    with locked:
        try:
            yield stage
        finally:
            if os.path.lexists(stage):
                _remove(stage)


def stage_bundle(stage: Path, path: str, files: dict[str, bytes]) -> bool:
    """Write one bundle's ``files`` (by path relative to its folder) into the folder ``path`` of ``stage``, made here.
    False, with nothing written, when that folder is there already: another workflow's with the same path, a
    collision the build reports before anything is swapped in."""
    folder = stage / path
    if folder.parent != stage:
        os.makedirs(folder.parent, exist_ok=True)  # a URI prefix's folders, shared by every bundle
    try:
        os.mkdir(folder)
    except FileExistsError:
        return False
    made = {""}
    for rel, data in sorted(files.items()):
        _folders(folder, rel.rpartition("/")[0], made)
        _write(folder / rel, data)
    return True


def write_file(path: Path | str, data: bytes, *, exclusive: bool = False) -> None:
    """Write one file atomically: the bytes go to a new temporary file beside it (``.NAME.XXXXXXXX.tmp``, created
    ``O_CREAT|O_EXCL|O_NOFOLLOW`` by :func:`_write`), which then takes the name (``os.replace``), so a reader never
    sees half a file and a failure or a kill leaves the old file (or none) in place. On any failure the temporary
    is removed again. Like the tree's files, it is not fsync'd. With ``exclusive`` the name is taken only if
    nothing has it (a hard link, which refuses an existing name as ``O_EXCL`` does; where links are refused, the
    file is created with ``O_EXCL`` and written in place): an existing file is never replaced, and
    :class:`FileExistsError` is raised. Other problems raise :class:`OSError`. The docs pages, the matrix data,
    lock files, tool snapshots and ``init``'s files are all written here."""
    path = Path(path)
    if exclusive and os.path.lexists(path):
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temporary(path, data)
    try:
        if exclusive:
            _take_free_name(tmp, path, data)
        else:
            os.replace(tmp, path)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


_TEMP_TRIES = 8  # a temporary's name is taken only by a planted file: after this many, give up


def _temporary(path: Path, data: bytes) -> Path:
    """A new file beside ``path`` of a random name, holding ``data``. A name that exists (planted, or a rare clash)
    is never written into or removed: another name is tried. A failed write removes the file it made."""
    tries = _TEMP_TRIES
    while True:
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            _write(tmp, data)
            return tmp
        except FileExistsError:
            tries -= 1
            if not tries:
                raise
        except BaseException:
            if os.path.lexists(tmp):
                os.unlink(tmp)
            raise


def _take_free_name(tmp: Path, path: Path, data: bytes) -> None:
    """``tmp`` (holding ``data``) also at ``path``, only if nothing has that name: a hard link; where links are
    refused, a new file made with ``O_EXCL`` and written in place."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise
    except OSError as exc:
        if exc.errno not in _UNSUPPORTED | {errno.EXDEV, errno.EMLINK}:
            raise
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o666)
        with os.fdopen(fd, "wb") as f:
            f.write(data)


# ------------------------------------------------------------------- the file-system changes (crash tests wrap these)

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _write(path: Path, data: bytes) -> None:
    """A new file (never one that exists, nor through a link) holding ``data``; mode 0666 under the umask."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o666)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


def _rename(src: Path, dst: Path) -> None:
    os.rename(src, dst)


def _remove(path: Path) -> None:
    """Remove the side folder ``path`` and everything in it, following no link (as ``shutil.rmtree`` does); errors
    are ignored (what is left, the next run's :func:`recover` removes). Its subfolders go in parallel threads: each
    unlink and rmdir waits on the disk (on a VM, or a file system mounted with ``discard``, a millisecond or more),
    and the kernel serves many at once, so an old tree of 1,000 bundles goes 10-20x faster than one by one."""
    if not _FD_RMTREE:  # pragma: no cover - no fd-based functions here: one by one
        shutil.rmtree(path, ignore_errors=True)
        return
    with suppress(OSError):
        fd = os.open(path, _FOLDER_NOFOLLOW)
        try:
            _clear(fd)
        finally:
            os.close(fd)
        os.rmdir(path)


_FOLDER_NOFOLLOW = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FD_RMTREE = shutil.rmtree.avoids_symlink_attacks  # it works relative to folder descriptors
_THREADS = 16  # for a removal or a stage: enough to keep a slow disk's queue full; they only wait


def _clear(fd: int) -> None:
    """Empty the open folder ``fd``: its files and links here, its subfolders by ``shutil.rmtree`` relative to
    ``fd`` (which never follows a link), several at once. A chain of single subfolders (a URI prefix) is walked
    down first, so the parallel part is where the bundles are."""
    with os.scandir(fd) as it:
        entries = sorted(it, key=lambda e: e.name)
    folders = []
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            folders.append(entry.name)
        else:
            with suppress(OSError):
                os.unlink(entry.name, dir_fd=fd)
    if len(folders) == 1:
        with suppress(OSError):
            sub = os.open(folders[0], _FOLDER_NOFOLLOW, dir_fd=fd)
            try:
                _clear(sub)
            finally:
                os.close(sub)
            os.rmdir(folders[0], dir_fd=fd)
    elif folders:
        from concurrent.futures import ThreadPoolExecutor

        def rmtree(name: str) -> None:
            shutil.rmtree(name, ignore_errors=True, dir_fd=fd)

        with ThreadPoolExecutor(min(_THREADS, len(folders))) as pool:
            list(pool.map(rmtree, folders))


_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
_UNSUPPORTED = {errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EPERM}


@lru_cache(maxsize=1)
def _renameat2() -> Any:
    try:
        import ctypes

        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (ImportError, OSError, AttributeError):  # not Linux, or a libc without it (glibc < 2.28)
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


def _exchange(a: Path, b: Path) -> bool:
    """Swap the two paths in one atomic step. False (and nothing done) where the system cannot."""
    fn = _renameat2()
    if fn is None:
        return False
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    import ctypes

    err = ctypes.get_errno()
    if err in _UNSUPPORTED:
        return False
    raise OSError(err, os.strerror(err), str(a), None, str(b))
