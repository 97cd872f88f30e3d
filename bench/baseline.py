"""Before and after in one run: ``bench.py --baseline DIR`` times an older checkout's ``project-skill`` beside this
one's, case by case in the same round-robin rounds, against the same floors.

A before-and-after comparison made from two bench runs compares two machine states as much as two versions of the
code: on a shared VM the load moves the absolute times by 2x between runs. Here every baseline case runs right after
its twin, on its own copy of the inputs (the build cache lives beside the workflows, so the two versions never share
one), and the ratios of both versions are computed from the floors of the same rounds.

``DIR`` is a checkout (``git worktree add /tmp/base COMMIT``) with its own virtual environment holding that checkout
installed (``python -m venv DIR/.venv && DIR/.venv/bin/pip install -e DIR``): its ``DIR/.venv/bin/project-skill``
is run. The two versions' output trees are compared byte for byte, and the run says whether they are the same.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import floors

PREFIX = "baseline: "
TAG = "-baseline"  # the suffix of the baseline's own folders
# bench_scale's case names of the targets (floors.ratios reads these), and the cold part's.
SCALE_CASES = ("build", "build over a stale tree", "build, up to date", "check", "check, no cache")


class Baseline:
    """The older checkout: its command, its commit, and the tag that keeps its folders apart."""

    def __init__(self, folder: str):
        self.folder = Path(folder).resolve()
        script = self.folder / ".venv" / "bin" / "project-skill"
        if not script.is_file():
            raise SystemExit(f"bench: --baseline {folder}: no {script} (make a venv there and pip install -e it)")
        self.command = [str(script)]
        proc = subprocess.run(["git", "-C", str(self.folder), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True)
        self.commit = proc.stdout.strip() or "unknown"
        self.tag = TAG

    def info(self) -> dict[str, str]:
        return {"folder": str(self.folder), "commit": self.commit}


def name(case: str) -> str:
    return PREFIX + case


def split(results: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(this version's cases, the baseline's cases under their plain names)`` from one ``measure`` result."""
    ours = {k: v for k, v in results.items() if not k.startswith(PREFIX)}
    theirs = {k[len(PREFIX):]: v for k, v in results.items() if k.startswith(PREFIX)}
    return ours, theirs


def scale_entry(ours: dict[str, Any], theirs: dict[str, Any], same_tree: bool, base: Baseline) -> dict[str, Any]:
    """The baseline's part of a size: its medians, its ratios to this size's floors (from ``ours``), and whether
    its tree is byte-identical to ours."""
    with_floors = {**{c: ours[c] for c in floors.SCRIPTS if c in ours}, **theirs}
    return {**base.info(), "cases": theirs, "ratios": floors.ratios(with_floors), "same_tree": same_tree}


def same_tree(a: Path, b: Path) -> bool:
    return floors.tree_files(a) == floors.tree_files(b)


def md_rows(res: dict[str, Any], cold_check: str, cold_floor: str) -> list[str]:
    """The markdown of the before-and-after table, or nothing when no baseline ran."""
    cold = res.get("cold") or {}
    with_base = sorted((n for n, r in res.get("scale", {}).items() if "baseline" in r), key=int)
    n = "1000" if "1000" in with_base else (with_base[-1] if with_base else "")  # --quick: its largest size
    scale = res.get("scale", {}).get(n, {})
    base = scale.get("baseline") or res.get("cold_baseline")
    if not base:
        return []
    rows: list[tuple[str, float, float]] = []
    if name(cold_check) in cold and cold_floor in cold:
        f = cold[cold_floor]["wall_s"]
        rows.append(("cold check of the examples / the import floor", cold[name(cold_check)]["wall_s"] / f,
                     cold[cold_check]["wall_s"] / f))
    q_new = floors.ratios(scale) if scale else None
    q_old = scale.get("baseline", {}).get("ratios")
    if q_new and q_old:
        size = f"{int(n):,}"
        rows += [(f"{size} workflows, fresh build / (parse + write - start-up)", q_old["build_vs_floor"],
                  q_new["build_vs_floor"]),
                 (f"{size}, rebuild over a stale tree / fresh build", q_old["stale_vs_fresh"],
                  q_new["stale_vs_fresh"]),
                 (f"{size}, warm check / read-and-hash floor", q_old["check_vs_floor"], q_new["check_vs_floor"])]
        c_old, c_new = scale["baseline"]["cases"], scale
        rows += [(f"{size}, {case}: wall (s)", c_old[case]["wall_s"], c_new[case]["wall_s"])
                 for case in SCALE_CASES if case in c_old]
        rows += [(f"{size}, {case}: CPU (s)", c_old[case]["cpu_s"], c_new[case]["cpu_s"])
                 for case in ("build", "build over a stale tree", "check", "check, no cache") if case in c_old]
    same = scale.get("baseline", {}).get("same_tree")
    lines = ["", "## Before and after, in this run", "",
             f"`--baseline`: commit {base['commit']} (before) against this checkout (after), each case of the "
             "baseline run right after its twin in the same rounds, on its own copy of the inputs, against the same "
             "floors (bench/baseline.py)."
             + ("" if same is None else f" The two {int(n):,}-workflow trees are "
                                          f"{'byte-identical' if same else 'DIFFERENT'}."),
             "", "| | before | after | after / before |", "|---|---:|---:|---:|"]
    for label, old, new in rows:
        unit = "" if label.endswith("(s)") else "x"
        lines.append(f"| {label} | {old:.2f}{unit} | {new:.2f}{unit} | {new / old:.2f} |")
    return lines
