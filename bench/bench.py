"""projector benchmarks: ``python bench/bench.py [--quick] [--before DIR]``.

The targets of issue 31, each a ratio to what the machine itself takes in the same run, so that a busy shared VM
moves the target and its floor alike:

- a fresh build of 1,000 workflows <= 1.5x (parse floor + write floor - one start-up), on the cores there are;
- ``check`` of the same 1,000 after a build <= 1.0x that fresh build;
- the cold ``check`` of the examples (``workflows/`` against ``generated_skills/``) <= 1.5x the import floor
  (``python -c "import yaml, jinja2, slugify"``);
- a fresh build of 10,000 / a fresh build of 1,000 <= 11x.

The floors are bench/floors.py's scripts (the standard library and PyYAML only); the workflow sets are
bench/workgen.py's (seeded, deterministic). Every command is timed by hyperfine (Debian's package: ``apt-get install
-y hyperfine``), a fresh process each run, round-robin over the cases so that a change of load hits them all;
the time of a case is the median of all its runs. Before each run of a build or of the write floor, the previous
run's tree is moved aside (see :data:`PUT_ASIDE`), deleted only with the bench's folder, and before every run of a
set's cases what the runs before it wrote is flushed to disk (``sync``). The package's bytecode is
compiled first (``compileall``), as an installed package has it. Then cProfile says where a serial fresh build of 1,000 spends its
time, by stage and by function; ``--before DIR`` profiles another checkout's ``projector`` the same way (a worktree
of an older commit) for the before-and-after note.

It writes bench/results.json (every number) and bench/results.md, which ``project-skill docs`` copies into
docs/performance.md. ``--quick`` (sizes 12 and 60, one round) is a smoke test whose verdicts are not applicable.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import floors  # bench/floors.py and workgen.py: this script's folder is on sys.path
import workgen

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
LIMITS = {"build_vs_floor": 1.5, "check_vs_build": 1.0, "cold_check_vs_import": 1.5, "scaling": 11.0}
IMPORT_CASE = "floor: import yaml, jinja2, slugify"
COLD_CHECK = "check of the examples (cold)"
# Before each build and each write floor, the tree of the previous run is moved aside, not deleted: ext4 skips the
# inodes freed in the last few seconds when it makes new ones (``recently_deleted``), so a run right after deleting
# 7,000 of them spent up to 2 s of system time on the search, more or less by the folder's block group: noise that
# hit a case and its floor unequally. What is moved aside is deleted with the bench's folder, after every timing.
# Then, before every run of a set's cases, what earlier runs wrote is flushed (``sync``), so that no run pays for the
# write-back of another's 4,000 files (a check right after three builds did: 1.1-1.8 s for the same work).
ASIDE = "aside"
SYNC = "import os; os.sync()"
PUT_ASIDE = (  # each folder named (a build's skills and its eval cases) into the last one
    "import os, secrets, sys\n"
    "for path in sys.argv[1:-1]:\n"
    "    if os.path.lexists(path):\n"
    "        os.rename(path, os.path.join(sys.argv[-1], secrets.token_hex(8)))\n"
    "os.sync()"
)


def project_skill() -> list[str]:
    """The console script next to this interpreter, as users run it; else ``python -m projector.cli``."""
    script = Path(PY).with_name("project-skill")
    return [str(script)] if script.exists() else [PY, "-m", "projector.cli"]


def compile_bytecode(package: Path) -> None:
    """Write current bytecode for every module of ``package``, as pip does at install: without it, a checkout run
    under ``PYTHONDONTWRITEBYTECODE`` (or one whose modules changed since their bytecode) compiles every such module
    from source on every run, which a user's installed package never does."""
    subprocess.run([PY, "-m", "compileall", "-q", str(package)], check=True, capture_output=True, timeout=600)


def hyperfine(argv: list[str], runs: int, prepare: list[str] | None, report: Path, warmup: int = 1) -> dict[str, Any]:
    """``argv`` timed by hyperfine (no shell between: ``-N``), ``runs`` runs after ``warmup`` untimed ones, each
    after ``prepare``: the per-run wall times, and the mean user + system time of one run."""
    cmd = ["hyperfine", "-N", "--style", "none", "--warmup", str(warmup), "--runs", str(runs), "--export-json",
           str(report)]
    if prepare:
        cmd += ["--prepare", shlex.join(prepare)]
    proc = subprocess.run([*cmd, shlex.join(argv)], cwd=ROOT, capture_output=True, text=True, timeout=3600)
    if proc.returncode:
        raise SystemExit(f"bench: hyperfine {shlex.join(argv)} failed:\n{proc.stderr[-2000:]}")
    result = json.loads(report.read_text("utf-8"))["results"][0]
    return {"times": result["times"], "cpu_s": result["user"] + result["system"]}


def measure(cases: dict[str, tuple[list[str], list[str] | None]], rounds: int, runs: int, work: Path,
            warmup: int = 1) -> dict[str, dict[str, Any]]:
    """Every case (name -> argv, prepare), round-robin: ``rounds`` rounds of ``runs`` runs each."""
    seen: dict[str, dict[str, list[float]]] = {name: {"times": [], "cpu": []} for name in cases}
    for _ in range(rounds):
        for name, (argv, prepare) in cases.items():
            got = hyperfine(argv, runs, prepare, work / "hyperfine.json", warmup)
            seen[name]["times"] += got["times"]
            seen[name]["cpu"].append(got["cpu_s"])
    return {name: {"wall_s": statistics.median(s["times"]), "wall_min_s": min(s["times"]),
                   "wall_max_s": max(s["times"]), "cpu_s": statistics.median(s["cpu"]), "runs": len(s["times"])}
            for name, s in seen.items()}


def size_cases(work: Path, n: int) -> dict[str, tuple[list[str], list[str] | None]]:
    """The cases of one set size: a fresh build, a check after it, and the floors of the same files."""
    src = workgen.write_set(n, work / f"wf-{n}")
    built, fresh, target = work / f"built-{n}", work / f"fresh-{n}", work / f"floor-{n}"
    subprocess.run([*project_skill(), "build", str(src), "--out", str(built)], cwd=ROOT, check=True,
                   capture_output=True, timeout=3600)
    blob = floors.capture(built, work / f"tree-{n}.marshal", work / f"built-{n}-evals")
    aside = work / ASIDE
    aside.mkdir(exist_ok=True)
    cases: dict[str, tuple[list[str], list[str] | None]] = {
        "build": ([*project_skill(), "build", str(src), "--out", str(fresh)],
                  [PY, "-c", PUT_ASIDE, str(fresh), f"{fresh}-evals", str(aside)]),
        "check after a build": ([*project_skill(), "check", str(src), "--out", str(built)], [PY, "-c", SYNC])}
    for case in floors.SCRIPTS:
        prepare = [PY, "-c", PUT_ASIDE, str(target), str(aside)] if case == floors.WRITE_CASE else [PY, "-c", SYNC]
        cases[case] = (floors.argv(case, src, built, blob, target), prepare)
    return cases


def cold_cases() -> dict[str, tuple[list[str], list[str] | None]]:
    return {COLD_CHECK: ([*project_skill(), "check", "workflows", "--out", "generated_skills"], None),
            IMPORT_CASE: ([PY, "-c", "import yaml, jinja2, slugify"], None),
            floors.START_CASE: ([PY, "-c", "pass"], None)}


# The stages of a build, each the time under its entry points (the load's includes validate's: subtracted). A fresh
# build writes each bundle as it compiles it (disk.stage_bundle), the rest in output.write.
STAGES = {"load: YAML with positions, shape": [("projector/load.py", "load_data")],
          "validate: rules, tool fit, gates, texts": [("projector/validate.py", "validate")],
          "render: Jinja2, JSON, frontmatter": [("projector/render.py", "project")],
          "bundle: wire, digests, entry": [("projector/bundle.py", "bundle")],
          "write: stage, swap": [("projector/output.py", "write"), ("projector/disk.py", "stage_bundle")]}
OTHER = "other: start-up, imports, discovery, the shell, the index"

PROFILE = r"""
import cProfile, json, os, pstats, sys
from projector.cli import main
report, argv = sys.argv[1], sys.argv[2:]
sys.stdout = sys.stderr = open(os.devnull, "w")
prof = cProfile.Profile()
prof.enable()
code = main(argv)
prof.disable()
rows = [{"file": file, "line": line, "function": name, "calls": nc, "own_s": tt, "cum_s": ct}
        for (file, line, name), (cc, nc, tt, ct, callers) in pstats.Stats(prof).stats.items()]
json.dump({"code": code, "rows": rows}, open(report, "w"))
"""


def where(file: str) -> str:
    for mark in ("/site-packages/", "/projector/"):
        if mark in file:
            return ("projector/" if mark == "/projector/" else "") + file.rsplit(mark, 1)[1]
    return file if file == "~" else "stdlib " + os.path.basename(file)


def profile(work: Path, n: int, checkout: Path, extra: list[str]) -> dict[str, Any]:
    """cProfile of a fresh serial build (``--jobs 1``: workers would escape the profiler) of ``n`` workflows with
    ``checkout``'s projector: the time under each stage's entry point, and the functions with the most own time. The profiler's
    overhead inflates Python code against C: read it for shares, not for times."""
    src, out, report = work / f"wf-{n}", work / "profiled", work / "profile.json"
    shutil.rmtree(out, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    subprocess.run([PY, "-c", PROFILE, str(report), "build", str(src), "--out", str(out), "--jobs", "1", *extra],
                   cwd=checkout, env=env, check=True, timeout=3600)
    rows = json.loads(report.read_text("utf-8"))["rows"]
    total = sum(r["own_s"] for r in rows)

    def under(file: str, function: str) -> float:
        return sum(r["cum_s"] for r in rows if where(r["file"]) == file and r["function"] == function)

    stages = {name: sum(under(*entry) for entry in entries) for name, entries in STAGES.items()}
    stages["load: YAML with positions, shape"] -= stages["validate: rules, tool fit, gates, texts"]
    stages[OTHER] = total - sum(stages.values())
    top = sorted(rows, key=lambda r: -r["own_s"])[:12]
    return {"workflows": n, "total_s": total, "stages": stages,
            "functions": [{"function": f"{where(r['file'])}:{r['line']}({r['function']})", "calls": r["calls"],
                           "own_s": r["own_s"]} for r in top]}


def machine() -> dict[str, Any]:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    version = subprocess.run(["hyperfine", "--version"], capture_output=True, text=True)
    return {"date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
            "os": f"{platform.system()} {platform.release()}", "python": platform.python_version(),
            "hyperfine": version.stdout.strip(), "commit": commit.stdout.strip() or "-",
            "loadavg_start": os.getloadavg()}


def evaluate(res: dict[str, Any], quick: bool) -> list[dict[str, Any]]:
    """One row per target: its ratio, its limit and its verdict (None: not applicable, as in a --quick run)."""
    scale, cold = res["scale"], res["cold"]
    sizes = sorted(scale, key=int)
    at = "1000" if "1000" in scale else sizes[-1]
    k = scale[at]
    floor = k[floors.PARSE_CASE]["wall_s"] + k[floors.WRITE_CASE]["wall_s"] - k[floors.START_CASE]["wall_s"]
    rows = [("build_vs_floor", f"fresh build of {at} / (parse + write - start-up)", k["build"]["wall_s"] / floor),
            ("check_vs_build", f"check of {at} after a build / its fresh build",
             k["check after a build"]["wall_s"] / k["build"]["wall_s"]),
            ("cold_check_vs_import", "cold check of the examples / the import floor",
             cold[COLD_CHECK]["wall_s"] / cold[IMPORT_CASE]["wall_s"])]
    if len(sizes) > 1:
        big, small = sizes[-1], at if at != sizes[-1] else sizes[0]
        rows.append(("scaling", f"fresh build of {big} / of {small}",
                     scale[big]["build"]["wall_s"] / scale[small]["build"]["wall_s"]))
    out = []
    for ident, target, ratio in rows:
        limit = LIMITS[ident]
        applies = not quick and (ident == "cold_check_vs_import" or at == "1000") and (
            ident != "scaling" or sizes[-1] == "10000")
        out.append({"id": ident, "target": target, "ratio": ratio, "limit": limit,
                    "ok": (ratio <= limit) if applies else None})
    return out


def verdict(ok: bool | None) -> str:
    return "n/a (quick)" if ok is None else ("PASS" if ok else "MISS")


def _profile_md(title: str, prof: dict[str, Any]) -> list[str]:
    lines = [f"### {title}", "", "| stage | time | share |", "|---|---:|---:|"]
    lines += [f"| {name} | {t * 1000:,.0f} ms | {t / prof['total_s']:.0%} |" for name, t in prof["stages"].items()]
    lines += ["", "| function | calls | own time |", "|---|---:|---:|"]
    lines += [f"| `{f['function']}` | {f['calls']:,} | {f['own_s'] * 1000:,.0f} ms |" for f in prof["functions"]]
    return [*lines, ""]


def render_md(res: dict[str, Any]) -> str:
    m = res["machine"]
    lines = ["# Performance", "", "Measured by `bench/bench.py` (see its docstring). Reproduce with:", "", "```sh",
             "apt-get install -y hyperfine                    # the timing tool (Debian's package)",
             ".venv/bin/python bench/bench.py                 # the full run",
             ".venv/bin/python bench/bench.py --quick         # a smoke test", "```", "",
             "Each time is the median of every run of its case: a fresh process each, timed by hyperfine, with the "
             "package's bytecode compiled first as an installed package has it, the cases taken round-robin so that "
             "a change of machine load hits them all, and the tree of the previous run of a build or a write floor "
             "moved aside (not deleted: ext4 is slow to make inodes right after freeing thousands), and what earlier runs wrote "
             "flushed before each run of the sets' cases. The targets are "
             "ratios to floors "
             "measured in the same run (bench/floors.py). On a shared VM one run moves by 10-20 %: read the "
             "verdicts with the load average beside them.", "", "## Machine", "", "| | |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in m.items()]
    lines += ["", "## Targets", "", "| target | ratio | limit | verdict |", "|---|---:|---:|---|"]
    lines += [f"| {r['target']} | {r['ratio']:.2f}x | {r['limit']}x | {verdict(r['ok'])} |" for r in res["verdicts"]]
    lines += ["", "## Times", "", "| set | case | median | min | max | CPU (user + system) | runs |",
              "|---|---|---:|---:|---:|---:|---:|"]
    groups = [("examples", res["cold"])] + [(f"{n} workflows", res["scale"][n]) for n in sorted(res["scale"], key=int)]
    for label, cases in groups:
        lines += [f"| {label} | {name} | {c['wall_s'] * 1000:,.0f} ms | {c['wall_min_s'] * 1000:,.0f} ms | "
                  f"{c['wall_max_s'] * 1000:,.0f} ms | {c['cpu_s'] * 1000:,.0f} ms | {c['runs']} |"
                  for name, c in cases.items()]
    lines += ["", "## Where a fresh build spends its time", "",
              "cProfile of a serial fresh build (`--jobs 1`): the time under each stage's entry point, then the "
              "functions with the most time of their own.", ""]
    if "before" in res:
        lines += _profile_md(f"Before: {res['before']['label']}, {res['before']['workflows']} workflows",
                             res["before"])
    lines += _profile_md(f"This commit, {res['profile']['workflows']} workflows", res["profile"])
    lines += ["## Closing note", "", *res.get("note", ["(none)"]), ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="a smoke test: small sizes, one round, no verdicts")
    ap.add_argument("--sizes", type=int, nargs="+", help="workflow counts (default 1000 10000; quick: 12 60)")
    ap.add_argument("--rounds", type=int, help="round-robin rounds (default 3; quick: 1)")
    ap.add_argument("--runs", type=int, help="runs of each case per round (default 3; quick: 1)")
    ap.add_argument("--before", type=Path, metavar="DIR", help="also profile the projector of this checkout")
    ap.add_argument("--note", type=Path, metavar="FILE", help="the closing note (Markdown) to put on the page")
    ap.add_argument("--out", type=Path, default=ROOT / "bench", help="where results.json and results.md go")
    ap.add_argument("--rerender", action="store_true", help="measure nothing: write results.md again from "
                                                            "results.json (with --note: a new closing note)")
    args = ap.parse_args(argv)
    if args.rerender:
        res = json.loads((args.out / "results.json").read_text("utf-8"))
        if args.note:
            res["note"] = args.note.read_text("utf-8").splitlines()
        (args.out / "results.json").write_text(json.dumps(res, indent=2) + "\n", "utf-8")
        (args.out / "results.md").write_text(render_md(res), "utf-8")
        return 0
    if shutil.which("hyperfine") is None:
        raise SystemExit("bench: hyperfine is not installed (Debian: apt-get install -y hyperfine)")
    sizes = args.sizes or ([12, 60] if args.quick else [1000, 10000])
    rounds, runs = args.rounds or (1 if args.quick else 3), args.runs or (1 if args.quick else 3)
    res: dict[str, Any] = {"machine": machine(), "rounds": rounds, "runs_per_round": runs}
    compile_bytecode(ROOT / "projector")
    if args.before:
        compile_bytecode(args.before.resolve() / "projector")
    with tempfile.TemporaryDirectory(prefix="projector-bench-") as tmp:
        work = Path(tmp)
        res["cold"] = measure(cold_cases(), rounds, runs * 3, work)
        res["scale"] = {}
        for n in sizes:
            print(f"bench: {n} workflows", file=sys.stderr)
            big = n > 1000  # one round, no warm-up: the set is built once before, which warms the disk cache
            res["scale"][str(n)] = measure(size_cases(work, n), 1 if big else rounds, runs, work, 0 if big else 1)
        at = 1000 if 1000 in sizes else max(s for s in sizes if s <= 1000) if min(sizes) <= 1000 else min(sizes)
        res["profile"] = profile(work, at, ROOT, [])
        if args.before:
            res["before"] = {"label": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=args.before,
                                                     capture_output=True, text=True).stdout.strip() or "before",
                             **profile(work, at, args.before.resolve(), ["--no-cache"])}
    res["machine"]["loadavg_end"] = os.getloadavg()
    res["verdicts"] = evaluate(res, args.quick)
    if args.note:
        res["note"] = args.note.read_text("utf-8").splitlines()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(res, indent=2) + "\n", "utf-8")
    (args.out / "results.md").write_text(render_md(res), "utf-8")
    for r in res["verdicts"]:
        print(f"{r['target']}: {r['ratio']:.2f}x (limit {r['limit']}x) {verdict(r['ok'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
