"""Write verified bundles to a folder, all or nothing. No ``mcp``.

A skill's folder comes from its URI: ``skill://a/b/name/SKILL.md`` -> ``DIR/a/b/name/``. Every segment is checked
again here (no empty, ``.`` or ``..`` segment, no separator or NUL after percent-decoding), so no URI can name a path
outside DIR. The whole set is written as one change: DIR's new tree (every loaded skill, plus everything else DIR
held) is staged beside it and swapped in atomically (:mod:`projector.disk`), so DIR is at every instant either all
old or all new. A skill folder that already exists is replaced whole.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote

from .client import LoadedSkill
from .errors import OutputError
from .verify import SCHEME

STAGE_PREFIX = ".project-skill-stage-"


def _segments(uri: str) -> list[str]:
    m = SCHEME.match(uri)
    if not m:
        raise OutputError("bad-output-path", uri, "not a scheme://path URI")
    out = []
    for raw in m.group(2).split("/"):
        seg = unquote(raw)
        if seg in ("", ".", "..") or any(c in seg for c in "/\\\0") or seg.startswith(STAGE_PREFIX):
            raise OutputError("bad-output-path", uri, f"the path segment {raw!r} cannot name a folder or file")
        out.append(seg)
    return out


def skill_dir(skill: LoadedSkill) -> tuple[str, ...]:
    """The skill root as path segments relative to the output folder."""
    return tuple(_segments(skill.entry.uri)[:-1])


def bundle_files(skill: LoadedSkill) -> dict[tuple[str, ...], bytes]:
    """``{path segments relative to the skill folder: bytes}``."""
    root = skill_dir(skill)
    out: dict[tuple[str, ...], bytes] = {}
    for uri, data in skill.files.items():
        segs = tuple(_segments(uri))
        if segs[: len(root)] != root or len(segs) <= len(root):
            raise OutputError("bad-output-path", uri, f"outside the skill folder {'/'.join(root)}")
        out[segs[len(root):]] = data
    return out


def write_bundles(out: str | Path, skills: list[LoadedSkill]) -> list[str]:
    """Write every skill under ``out``, all or nothing (:func:`projector.disk.replace_tree`). Returns the skill
    folders written (POSIX, relative to ``out``), sorted. Raises :class:`OutputError` (and writes nothing) when a
    path is bad or two skill folders nest."""
    from ..disk import Plan, replace_tree

    plan = sorted(((skill_dir(s), bundle_files(s)) for s in skills), key=lambda p: p[0])
    for i, (a, _) in enumerate(plan):
        for b, _ in plan[i + 1:]:
            if b[: len(a)] == a:
                raise OutputError("overlapping-skills", "/".join(b),
                                  f"the skill folder {'/'.join(b)} is inside (or is) {'/'.join(a)}; "
                                  "load them into different folders")
    files = {"/".join((*root, *rel)): data for root, fs in plan for rel, data in fs.items()}
    roots = ["/".join(root) for root, _ in plan]

    def check(real: Path) -> Plan:
        for root, _ in plan:
            for k in range(1, len(root) + 1):
                p = real.joinpath(*root[:k])
                if p.is_symlink() or (p.exists() and not p.is_dir()):
                    raise OutputError("bad-output-path", (Path(out) / "/".join(root[:k])).as_posix(),
                                      "exists and is not a folder")
        return Plan(files, set(roots))

    replace_tree(Path(out), check)
    return roots
