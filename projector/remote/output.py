"""Write verified bundles to a folder, all or nothing. No ``mcp``.

A skill's folder comes from its URI: ``skill://a/b/name/SKILL.md`` -> ``DIR/a/b/name/``. The server chooses those
names, so only names that cannot mean anything else are written (:func:`skill_dir_of`): the URI is a ``skill://``
URI, and every folder segment passes the skill-name rule of :mod:`projector.naming` (the prefix segments its
``SEGMENT_RULE``, the skill's own folder its ``NAME_RULE``), so no dot-name (``.git``), no ``~``, ``$HOME``, space,
uppercase or percent sign reaches the disk. The files inside a skill folder are checked too: no empty, ``.`` or
``..`` segment, no separator or NUL after percent-decoding, no dot-name.

What the tool owns is what ``build`` owns: the folders that ``DIR/skills.json`` (the index, in ``build``'s format:
one SEP-2640 entry per skill) lists AND the disk proves its own (:mod:`projector.ownership`: a SKILL.md, and a file
as the index records it). ``remote load --out`` writes that index too, so a skill folder it wrote is replaced whole
the next time, and anything else is never replaced or deleted: a skill whose folder (or a file on the way to it) is
already there and not proven the tool's is a conflict (``output-conflict``, found by
:func:`projector.output.conflicts`, the check ``build`` makes), and nothing is written. The new index keeps the
previous entries of the proven folders it did not replace, and gives each loaded skill an entry whose ``resources``
are the files written (the whole manifest, unless only some files were asked for), with their URIs as served: a
file of a percent-encoded URI is written under its decoded name, and ``serve --skills`` finds it there.

The whole set is written as one change: DIR's new tree (every loaded skill, the index, plus everything else DIR
held) is staged beside it and swapped in atomically (:mod:`projector.disk`), so DIR is at every instant either all
old or all new.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from ..errors import Span
from ..sep2640 import (
    INDEX_FILE,
    MAX_INDEX_BYTES,
    MAX_URI_SEGMENTS,
    SCHEME,
    SKILL_FILE,
    URI_RULE,
    bad_segment,
    clip,
    skill_path_of,
)
from .client import LoadedSkill
from .errors import OutputError

STAGE_PREFIX = ".project-skill-stage-"
CONFLICT_HINT = "move that path away, or load into another --out folder; nothing was written"
_NAME_HINT = (
    "remote load --out writes only folders whose names pass the Agent Skills name rule; load without --out "
    "to inspect the skill"
)


def _refuse_folder(uri: str, seg: str, why: str) -> OutputError:
    return OutputError("bad-output-path", clip(uri), f"{clip(seg, 64)!r} cannot name a folder: {why}", _NAME_HINT)


def skill_dir_of(uri: str) -> tuple[str, ...]:
    """The folder of the skill at ``uri`` (``skill://a/b/name/SKILL.md``) as path segments relative to the output
    folder, or ``bad-output-path`` when the URI is not ``skill://`` or a segment is not a skill name. Needs nothing
    read: the CLI calls it before it loads a skill."""
    from ..naming import NAME_RULE, RESERVED, RESERVED_WORDS, SEGMENT_RULE

    m = URI_RULE.match(uri)
    if m is None or not uri.startswith(SCHEME) or not uri.endswith("/" + SKILL_FILE):
        raise OutputError("bad-output-path", clip(uri), f"only a skill://…/{SKILL_FILE} URI names a skill folder")
    parts = m.group(2).split("/")[:-1]
    if len(parts) + 1 > MAX_URI_SEGMENTS:
        raise OutputError(
            "bad-output-path",
            clip(uri),
            f"the URI has {len(parts) + 1} path segments; at most {MAX_URI_SEGMENTS} are accepted",
        )
    for i, seg in enumerate(parts):
        if seg.startswith("."):
            raise _refuse_folder(uri, seg, "a dot-name (hidden, or another tool's folder such as .git)")
        if seg in RESERVED:
            raise _refuse_folder(uri, seg, f"a Windows device name ({RESERVED_WORDS})")
        last = i == len(parts) - 1
        if not (NAME_RULE if last else SEGMENT_RULE).fullmatch(seg):
            raise _refuse_folder(
                uri,
                seg,
                "not a skill name (lowercase ASCII letters, digits and single hyphens"
                + (", at most 64 characters)" if last else ")"),
            )
    return tuple(parts)


def skill_dir(skill: LoadedSkill) -> tuple[str, ...]:
    """The skill root as path segments relative to the output folder (:func:`skill_dir_of`)."""
    return skill_dir_of(skill.entry.uri)


def bundle_files(skill: LoadedSkill) -> dict[tuple[str, ...], bytes]:
    """``{path segments relative to the skill folder: bytes}``, each segment percent-decoded and checked."""
    root = skill_dir(skill)
    prefix = f"{SCHEME}{'/'.join(root)}/"
    out: dict[tuple[str, ...], bytes] = {}
    for uri, data in skill.files.items():
        if not uri.startswith(prefix):
            raise OutputError("bad-output-path", clip(uri), f"outside the skill folder {'/'.join(root)}")
        segs = []
        for raw in uri[len(prefix) :].split("/"):
            seg = unquote(raw)
            if bad_segment(seg) or seg.startswith("."):
                raise OutputError(
                    "bad-output-path",
                    clip(uri),
                    f"the path segment {clip(raw, 64)!r} cannot name a "
                    "file (empty, '.', '..', a dot-name, or a separator or NUL once decoded)",
                )
            segs.append(seg)
        out[tuple(segs)] = data
    return out


def index_entry(skill: LoadedSkill) -> dict[str, Any]:
    """The skill's entry in the index: its URI and frontmatter as served (and verified), and the manifest lines of
    the files written, in served order (``"dynamic"`` for a dynamic skill)."""
    e = skill.entry
    resources: Any = "dynamic" if e.resources is None else [r.to_json() for r in e.resources if r.uri in skill.files]
    return {"uri": e.uri, "frontmatter": e.frontmatter, "resources": resources}


def _previous_entries(real: Path, out: str | Path) -> list[Any]:
    """The entries of the index already in the folder ([] when there is none). A path of that name that is not an
    index (a folder, a link, a file of other JSON) is not this tool's: a conflict."""
    from .. import bounded

    path = real / INDEX_FILE
    if not os.path.lexists(path):
        return []

    def conflict(why: str) -> OutputError:
        return OutputError(
            "output-conflict",
            (Path(out) / INDEX_FILE).as_posix(),
            f"this path is not an index this tool wrote ({why}), and the new tree needs it",
            CONFLICT_HINT,
        )

    try:
        doc = bounded.loads(bounded.read_regular(path, MAX_INDEX_BYTES))
    except (bounded.Unreadable, bounded.BadJSON) as exc:
        raise conflict(str(exc)) from None
    skills = doc.get("skills") if isinstance(doc, dict) else None
    if not isinstance(skills, list) or not all(isinstance(e, dict) and isinstance(e.get("uri"), str) for e in skills):
        raise conflict("no 'skills' array of entries")
    return skills


@dataclass(frozen=True)
class _Folder:
    """A skill folder as :func:`projector.output.conflicts` reads a bundle: its path, a name and a span."""

    path: str
    name: str
    span: Span


@dataclass(frozen=True)
class _Folders:
    bundles: list[_Folder]


def write_bundles(out: str | Path, skills: list[LoadedSkill]) -> list[str]:
    """Write every skill under ``out``, and the index, all or nothing (:func:`projector.disk.replace_tree`).
    Returns the skill folders written (POSIX, relative to ``out``), sorted. Raises :class:`OutputError` (and writes
    nothing) when a path is bad, two skill folders nest, or a skill's folder is taken by something this tool did not
    write."""
    from ..bundle import stable_json
    from ..disk import Plan, replace_tree
    from ..output import conflicts

    plan = sorted(((skill_dir(s), bundle_files(s), s) for s in skills), key=lambda p: p[0])
    for i, (a, _, _) in enumerate(plan):
        for b, _, _ in plan[i + 1 :]:
            if b[: len(a)] == a:
                raise OutputError(
                    "overlapping-skills",
                    "/".join(b),
                    f"the skill folder {'/'.join(b)} is inside (or is) {'/'.join(a)}; load them into different folders",
                )
    files = {"/".join((*root, *rel)): data for root, fs, _ in plan for rel, data in fs.items()}
    roots = ["/".join(root) for root, _, _ in plan]

    def check(real: Path) -> Plan:
        from ..ownership import proven

        previous_entries = _previous_entries(real, out)
        previous, unproven = proven(real, previous_entries)
        folders = _Folders([_Folder("/".join(root), s.uri, Span(s.uri)) for root, _, s in plan])
        problems = conflicts(folders, real, previous, unproven=unproven)  # type: ignore[arg-type]
        if problems:
            d = problems[0]
            raise OutputError("output-conflict", d.span.file, d.message, CONFLICT_HINT)
        replaced = set(roots)
        kept = [e for e in previous_entries if _dir_of(e["uri"]) in previous and _dir_of(e["uri"]) not in replaced]
        entries = sorted([*kept, *(index_entry(s) for _, _, s in plan)], key=lambda e: e["uri"])
        return Plan({**files, INDEX_FILE: stable_json({"skills": entries})}, replaced | {INDEX_FILE})

    replace_tree(Path(out), check)
    return roots


def _dir_of(uri: str) -> str:
    """An index entry's folder, as :func:`projector.output._owned_dirs` reads it."""
    return skill_path_of(uri)
