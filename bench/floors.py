"""The machine's own floors: what one fresh interpreter takes to do the unavoidable part of a build or a check.

An absolute second means little on a shared VM whose disk alone takes 0.1-0.9 s to write 2,000 small files, so the
build and check targets are ratios to floors measured in the same run, on the same files, round-robin with the
targets' own cases (bench/bench.py, issue 23):

- **start-up**: ``python -c pass``;
- **parse**: a fresh interpreter that reads every workflow file and parses it with libyaml
  (``yaml.load(data, Loader=yaml.CSafeLoader)``), building no model;
- **write**: a fresh interpreter that writes the build's own output tree (the same folders and bytes, captured from
  a build by :func:`capture`) into an empty folder, with nothing else: no staging, no swap, no sync;
- **read and hash**: a fresh interpreter that reads and hashes (SHA-256) every workflow file and every file of the
  output tree, finding the latter by walking the folder as ``check`` does.

Each floor is a :data:`SCRIPTS` entry run as ``python -c SCRIPT ARGS``: only the standard library and PyYAML, never
projector, so a change to projector never moves a floor.
"""

from __future__ import annotations

import marshal
import os
import sys
from pathlib import Path

# Inputs as the build finds them: *.yaml and *.yml, sorted by name, hidden folders (the cache) skipped.
_INPUTS = r"""
import os
def inputs(folder):
    out = []
    with os.scandir(folder) as it:
        entries = sorted(it, key=lambda e: e.name)
    for e in entries:
        if e.is_dir(follow_symlinks=False):
            if not e.name.startswith("."):
                out += inputs(e.path)
        elif e.name.endswith((".yaml", ".yml")):
            out.append(e.path)
    return out
"""

PARSE = _INPUTS + r"""
import sys, yaml
loader = yaml.CSafeLoader
for path in inputs(sys.argv[1]):
    with open(path, "rb") as f:
        yaml.load(f.read(), Loader=loader)
"""

WRITE = r"""
import marshal, os, sys
with open(sys.argv[1], "rb") as f:
    files = marshal.load(f)
root = sys.argv[2]
os.mkdir(root)
made = {""}
for rel, data in files:
    folder = rel.rpartition("/")[0]
    if folder not in made:
        os.makedirs(os.path.join(root, folder), exist_ok=True)
        made.add(folder)
    with open(os.path.join(root, rel), "xb") as f:
        f.write(data)
"""

READ_AND_HASH = _INPUTS + r"""
import hashlib, sys
def tree(folder):
    out = []
    with os.scandir(folder) as it:
        entries = sorted(it, key=lambda e: e.name)
    for e in entries:
        if e.is_dir(follow_symlinks=False):
            out += tree(e.path)
        else:
            out.append(e.path)
    return out
for path in inputs(sys.argv[1]) + tree(sys.argv[2]):
    with open(path, "rb") as f:
        hashlib.sha256(f.read()).digest()
"""

START = "pass"

# case name -> script; the names are the keys of the results (bench/results.json) and of the rows of the page.
START_CASE = "floor: start-up (python -c pass)"
PARSE_CASE = "floor: read and parse the workflows (libyaml)"
WRITE_CASE = "floor: write the output tree into an empty folder"
HASH_CASE = "floor: read and hash the workflows and the tree"
SCRIPTS = {START_CASE: START, PARSE_CASE: PARSE, WRITE_CASE: WRITE, HASH_CASE: READ_AND_HASH}


def tree_files(out: Path) -> list[tuple[str, bytes]]:
    """Every file under ``out`` as ``(POSIX relative path, bytes)``, sorted by path: what a build wrote."""
    found: list[tuple[str, bytes]] = []

    def walk(folder: Path, prefix: str) -> None:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                walk(Path(e.path), f"{prefix}{e.name}/")
            else:
                found.append((prefix + e.name, Path(e.path).read_bytes()))

    walk(out, "")
    return found


def capture(out: Path, blob: Path, *beside: Path) -> Path:
    """Capture the tree a build wrote at ``out`` (and the trees ``beside`` it, its eval cases', each under its folder's
    name) into one file (``marshal``: the write floor loads it in milliseconds, as the build has its bytes in
    memory), once per bench run; returns ``blob``."""
    if not blob.exists():
        files = tree_files(out) + [(f"{b.name}/{rel}", data) for b in beside for rel, data in tree_files(b)]
        blob.write_bytes(marshal.dumps(files))
    return blob


def argv(case: str, src: Path, out: Path, blob: Path, target: Path) -> list[str]:
    """The command line of a floor case: ``src`` the workflows, ``out`` the built tree, ``blob`` its capture,
    ``target`` the empty folder the write floor writes into."""
    extra = {START_CASE: [], PARSE_CASE: [str(src)], WRITE_CASE: [str(blob), str(target)],
             HASH_CASE: [str(src), str(out)]}[case]
    return [sys.executable, "-c", SCRIPTS[case], *extra]


def ratios(r: dict) -> dict[str, float] | None:
    """A size's target ratios from its medians (a bench_scale entry), or None when its floors were not measured
    (results of an older bench):

    - ``floor_build_s``: parse + write - one start-up, what one interpreter doing only those would take;
    - ``build_vs_floor``: a fresh build / that;
    - ``stale_vs_fresh``: a rebuild over a stale tree / a fresh build;
    - ``check_vs_floor``: a warm up-to-date check / the read-and-hash floor.
    """
    if not all(case in r for case in SCRIPTS):
        return None
    start, parse, write, hashed = (r[c]["wall_s"] for c in (START_CASE, PARSE_CASE, WRITE_CASE, HASH_CASE))
    floor = parse + write - start
    return {"floor_build_s": floor, "build_vs_floor": r["build"]["wall_s"] / floor,
            "stale_vs_fresh": r["build over a stale tree"]["wall_s"] / r["build"]["wall_s"],
            "check_vs_floor": r["check"]["wall_s"] / hashed}
