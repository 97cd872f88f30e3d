"""Which folders of an output tree this tool may replace: those it can prove it wrote, never those an index claims.

``skills.json`` is an index anyone can edit (by hand, in a merge, in a pull request), so a line in it proves nothing.
A folder that the index lists is this tool's (``build``'s or ``remote load --out``'s) only when the disk agrees:

1. the listed path is plain (no empty, ``.``, ``..`` or dot-name segment) and every folder on the way is a real
   folder, no link;
2. the folder is a bundle: it holds a ``SKILL.md``;
3. the bytes prove it: a file the entry records is there, a regular file of the recorded size and sha256; or, when
   none is (a hand edit of every file, or a "dynamic" entry that records none), SKILL.md's frontmatter is the
   entry's, read by the one frontmatter reader.

A hand edit survives this (a generated bundle whose SKILL.md was edited still has a file as recorded, or its
frontmatter), and ``build`` repairs it as before. An edit of ``skills.json`` alone cannot claim a user's folder: it
would also need a SKILL.md in it, and the bytes of one of the user's files. What is not proven is the user's: it is
never replaced or deleted, the callers refuse to write over it (``output-conflict``, with the reason this module
gives), and their new index no longer lists it.

Every read is bounded: a file is read only when its size on disk is the recorded one and at most SEP-2640's 16 MiB,
each listed folder once, and a folder stops at its first proof.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from .bounded import Unreadable, read_regular
from .sep2640 import MAX_BYTES, MAX_FILES, SCHEME, SKILL_FILE, bad_segment, digest, skill_path_of

NOT_FILES = (
    "none of its files has the size and sha256 that skills.json records for it, nor its SKILL.md the frontmatter"
)


def disk_path(rest: str) -> list[str] | None:
    """The path on disk of a file of a skill, from its URI's path inside the skill (``references/my%20notes.md`` ->
    ``["references", "my notes.md"]``): each segment percent-decoded, as a verifying client decodes it
    (:func:`projector.sep2640.relative_path`) and as ``remote load --out`` writes it. None when a segment, raw or
    decoded, could step outside its folder or name none (:func:`~projector.sep2640.bad_segment`)."""
    parts = []
    for raw in rest.split("/"):
        seg = unquote(raw) if "%" in raw else raw
        if bad_segment(raw) or bad_segment(seg):
            return None
        parts.append(seg)
    return parts


def proven(root: Path, entries: list[dict[str, Any]]) -> tuple[set[str], dict[str, str]]:
    """The folders (POSIX, relative to ``root``) that ``entries`` (an index's, each a mapping with a string
    ``uri``) list and the disk proves this tool's; and each listed folder that is there but not proven, with why
    not. A listed folder that is not there is in neither."""
    owned: set[str] = set()
    unproven: dict[str, str] = {}
    for entry in entries:
        folder = skill_path_of(entry["uri"])
        if folder in owned or folder in unproven:
            continue  # an index that lists a folder twice: the first entry is the one read
        why = _why_not(root, folder, entry)
        if why is None:
            continue
        if why:
            unproven[folder] = why
        else:
            owned.add(folder)
    return owned, unproven


def _why_not(root: Path, folder: str, entry: dict[str, Any]) -> str | None:
    """Why ``folder`` is not proven this tool's: "" when it is, None when it is not there at all."""
    parts = folder.split("/")
    if not entry["uri"].startswith(SCHEME) or any(bad_segment(p) or p.startswith(".") for p in parts):
        return "skills.json lists it by a path that is not a plain folder path"
    where = root
    for part in parts:
        where = where / part
        try:
            mode = os.lstat(where).st_mode
        except OSError:
            return None
        if not stat.S_ISDIR(mode):
            return "skills.json lists it, but it is not a folder"
    try:
        os.lstat(where / SKILL_FILE)  # of any kind: the build replaces a SKILL.md made a link or a FIFO
    except OSError:
        return f"skills.json lists it, but it holds no {SKILL_FILE}: it is not a bundle"
    resources = entry.get("resources")
    if isinstance(resources, list) and any(_as_recorded(where, folder, r) for r in resources[:MAX_FILES]):
        return ""
    return "" if _same_frontmatter(where / SKILL_FILE, entry) else f"skills.json lists it, but {NOT_FILES}"


def _as_recorded(where: Path, folder: str, ref: Any) -> bool:
    """Whether the file that the manifest line ``ref`` names is in ``where`` with the size and digest it records."""
    if not isinstance(ref, dict) or not isinstance(ref.get("uri"), str):
        return False
    size, base = ref.get("size"), f"{SCHEME}{folder}/"
    if type(size) is not int or not 0 <= size <= MAX_BYTES or not ref["uri"].startswith(base):
        return False
    parts = disk_path(ref["uri"][len(base) :])
    if parts is None:
        return False
    path = where
    try:
        for part in parts[:-1]:
            path = path / part
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                return False  # a link on the way is not followed
        path = path / parts[-1]
        if os.lstat(path).st_size != size:
            return False  # not read: only a file of the recorded size can be the one recorded
        return digest(read_regular(path, size)) == ref.get("digest")  # a regular file, no link followed
    except (OSError, Unreadable):
        return False


def _same_frontmatter(skill_md: Path, entry: dict[str, Any]) -> bool:
    from .sep2640 import VerificationError, frontmatter_diff, parse_frontmatter

    try:
        fm = parse_frontmatter(read_regular(skill_md, MAX_BYTES), entry["uri"])
    except (Unreadable, VerificationError):
        return False
    recorded = entry.get("frontmatter")
    return isinstance(recorded, dict) and not any(frontmatter_diff(fm, recorded))


def private_temp_folder(name: str) -> Path | None:
    """The folder ``NAME-UID`` in the temporary folder, made there (0700) when missing, or the one there already when it
    is the user's own, a real folder (no link) that no one else can open; else None. Nothing is changed there first:
    Jinja's own default chmods the path before it looks, so through a link that another user put in its place."""
    path = Path(tempfile.gettempdir(), f"{name}-{os.geteuid()}")
    try:
        with contextlib.suppress(FileExistsError):
            path.mkdir(0o700)
        info = path.lstat()
    except OSError:
        return None
    mine = stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o077
    return path if mine else None
