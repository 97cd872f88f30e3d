"""projector benchmarks: ``.venv/bin/python bench/bench.py [--quick]``.

Measures, in one run, with medians of several runs:

a. cold-process wall time of ``project-skill build`` and ``check`` on the examples, against a floor process that only
   imports yaml, jinja2 and slugify (and against bare ``python -c pass``);
b. build and check of 10, 1,000 and 10,000 synthetic workflows (bench/workgen.py, seeded): a fresh build (empty
   folder, no cache), a rebuild over a stale tree (every workflow changed), an up-to-date build, and check with a
   warm cache and with ``--no-cache``; per-workflow cost and whether it is linear; and, round-robin with them, the
   machine's own floors for the same files (bench/floors.py: start-up, parse, write, read and hash), to which the
   build and check targets are ratios;
c. peak memory (max RSS) of every process measured;
d. over Streamable HTTP on loopback, against one ``project-skill serve --http`` process: requests per second and
   p50/p99 latency of skills/get plus resources/read, against plain resources/read of the same SKILL.md bytes;
e. skills/list paged over every skill of the 10,000-skill tree, several full passes, and the server's memory after
   each pass (does it stay flat?);
f. FastMCP (the ``project-skill[fastmcp]`` extra): skills/get + resources/read throughput of ``project-skill serve
   --framework fastmcp`` against FastMCP's own ``SkillsDirectoryProvider`` (bench/fastmcp_directory_server.py)
   serving the same tree (the shipped examples), paired round by round.

g. where the time goes: each stage of a fresh build of 1,000 timed alone, and cProfile of a fresh build and of a
   rebuild over a stale tree (serial, one process).

``--only PART`` runs some parts and merges them into the committed results (the other parts keep their numbers).

It writes bench/results.json (every number) and bench/results.md (tables, targets with PASS/MISS, the machine).
``--only targets`` measures just what the build and check targets need (a, and b at 1,000 and 10,000, with g) in a
few minutes; ``--sizes`` picks other workflow counts.
``--quick`` shrinks everything for a smoke test (under a minute); its verdicts on size-bound targets are marked
as not applicable. Only the project's own dependencies are needed.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as _dt
import hashlib
import importlib.metadata as metadata
import importlib.util
import json
import os
import platform
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

import baseline  # bench/baseline.py, floors.py and workgen.py: this script's folder is on sys.path
import floors
import workgen

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
PY = sys.executable

TARGETS = {
    "check_vs_floor": 1.5,        # a cold check of the examples (no cache yet, as in CI) takes <= 1.5x the import floor
    "build_vs_floor": 0.8,        # a fresh build of 1,000 on 2 cores <= 0.8x (parse floor + write floor - start-up)
    "stale_vs_fresh": 1.1,        # a rebuild over a stale tree costs <= 1.1x a fresh build
    "check_warm_vs_floor": 1.5,   # a warm up-to-date check of 1,000 <= 1.5x the read-and-hash floor
    "build_10000_vs_1000": 11.0,  # 10,000 in <= 11x the time of 1,000
    "skill_vs_plain": 0.9,        # skills/get + read at >= 0.9x the throughput of a plain read
    "list_memory_growth": 0.05,   # RSS after the last skills/list pass within 5 % of the first pass
    "fastmcp_vs_directory": 1.0,  # our FastMCP path serves skills/get + read at >= 1.0x FastMCP's own provider
}
# Absolute times are no targets any more (issue 23): on a shared VM they move by 2x from one run to the next, and
# the disk alone can take most of a second to write 2,000 small files. They are still measured and shown.
RETIRED = {
    "build_1000_s": (1.0, "1,000 workflows, fresh and over a stale tree, in <= 1.0 s: below this disk's own write "
                          "floor; replaced by the ratio to the parse and write floors"),
    "check_1000_warm_s": (0.3, "a warm check of 1,000 in <= 0.3 s: replaced by the ratio to the read-and-hash "
                               "floor"),
}


# ------------------------------------------------------------------------------------------------------ processes

@dataclass
class Sample:
    wall: float      # seconds, perf_counter around spawn..exit
    cpu: float       # seconds, user + system of the child
    maxrss_kb: int   # peak resident set of the child (os.wait4)
    code: int


def project_skill() -> list[str]:
    """The console script next to this interpreter, as users run it; else ``python -m projector.cli``."""
    script = Path(PY).with_name("project-skill")
    return [str(script)] if script.exists() else [PY, "-m", "projector.cli"]


def run_once(argv: list[str], cwd: Path = ROOT) -> Sample:
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode not in (0,):
            err.seek(0)
            tail = err.read()[-2000:].decode("utf-8", "replace")
            raise SystemExit(f"bench: {' '.join(argv)} exited {proc.returncode}:\n{tail}")
    rss = usage.ru_maxrss if sys.platform != "darwin" else usage.ru_maxrss // 1024  # macOS reports bytes
    return Sample(wall, usage.ru_utime + usage.ru_stime, rss, proc.returncode)


@dataclass
class Case:
    name: str
    argv: list[str]
    before: Callable[[], None] | None = None  # untimed preparation before each run (e.g. remove the output)


def median_of(samples: list[Sample]) -> dict[str, Any]:
    return {
        "runs": len(samples),
        "wall_s": statistics.median(s.wall for s in samples),
        "wall_min_s": min(s.wall for s in samples),
        "wall_max_s": max(s.wall for s in samples),
        "cpu_s": statistics.median(s.cpu for s in samples),
        "maxrss_mb": statistics.median(s.maxrss_kb for s in samples) / 1024,
    }


def measure(cases: list[Case], runs: int, label: str) -> dict[str, dict[str, Any]]:
    """Round-robin: every case once per round, so drift in machine load hits all of them alike. One untimed
    warm-up round first (page cache, .pyc files)."""
    samples: dict[str, list[Sample]] = {c.name: [] for c in cases}
    for r in range(runs + 1):
        for c in cases:
            if c.before:
                c.before()
            # Untimed, before every case: flush what the preparation and the previous case wrote (a restored tree, a
            # removed folder, a built tree), so its write-back does not land in this timed run.
            if hasattr(os, "sync"):
                os.sync()
            s = run_once(c.argv)
            if r:
                samples[c.name].append(s)
        if r:
            print(f"  {label}: round {r}/{runs}", file=sys.stderr, flush=True)
    return {name: median_of(ss) for name, ss in samples.items()}


def remover(path: Path) -> Callable[[], None]:
    return lambda: shutil.rmtree(path, ignore_errors=True)


# ------------------------------------------------------------------------------------------------------ a, b, c

CACHE = ".projector_cache"  # projector/cache.py: beside the workflows


def _cold_cases(work: Path, ps: list[str], tag: str = "") -> list[Case]:
    """The four project-skill cases of a: ``tag`` keeps a baseline's folders (and so its cache) apart."""
    examples = work / f"examples{tag}"  # a copy: the build cache goes beside the workflows, never into the repository
    shutil.copytree(ROOT / "workflows", examples, dirs_exist_ok=True)
    cache = examples / CACHE
    out = work / f"examples-out{tag}"
    run_once([*ps, "build", str(examples), "--out", str(out)])
    fresh = work / f"examples-fresh{tag}"

    def clean_fresh() -> None:
        remover(fresh)()
        remover(cache)()

    return [
        Case("project-skill check (examples, no cache yet)", [*ps, "check", str(examples), "--out", str(out)],
             remover(cache)),
        Case("project-skill check (examples, warm cache)", [*ps, "check", str(examples), "--out", str(out)]),
        Case("project-skill build (examples, fresh)", [*ps, "build", str(examples), "--out", str(fresh)],
             clean_fresh),
        Case("project-skill build (examples, up to date)", [*ps, "build", str(examples), "--out", str(out)]),
    ]


def twins(ours: list[Case], base: list[Case] | None) -> list[Case]:
    """Each of our cases followed by the baseline's twin (named with baseline.PREFIX), when there is a baseline."""
    if not base:
        return ours
    return [c for pair in zip(ours, base) for c in (pair[0], Case(baseline.name(pair[1].name), pair[1].argv,
                                                                   pair[1].before))]


def bench_cold(work: Path, runs: int, base: baseline.Baseline | None = None) -> dict[str, Any]:
    cases = [
        Case("python -c pass", [PY, "-c", "pass"]),
        Case("floor: import yaml, jinja2, slugify", [PY, "-c", "import yaml, jinja2, slugify"]),
        *twins(_cold_cases(work, project_skill()), _cold_cases(work, base.command, base.tag) if base else None),
    ]
    return measure(cases, runs, "cold start")


def ensure_tree(work: Path, n: int, seed: int, ps: list[str] | None = None, tag: str = "") -> tuple[Path, Path]:
    """The set of ``n`` workflows and its built tree, made once per bench run (``ps`` and ``tag``: a baseline's
    command and the suffix of its own folders)."""
    src, out = work / f"wf-{n}{tag}", work / f"out-{n}{tag}"
    if not (out / "skills.json").exists():
        workgen.write_set(n, src, seed)
        run_once([*(ps or project_skill()), "build", str(src), "--out", str(out)])
    return src, out


def ensure_stale(work: Path, n: int, seed: int, ps: list[str] | None = None, tag: str = "") -> tuple[Path, Path]:
    """A tree and a cache built from :func:`workgen.revise` of the set, at the set's own paths (so its cache entries
    sit in the same slots): every workflow has changed since. Returns that tree and that cache, kept as pristine
    copies that each run restores. The set's folder holds the unrevised files again afterwards."""
    src, _ = ensure_tree(work, n, seed, ps, tag)
    tree, cache = work / f"stale-out-{n}{tag}", work / f"stale-cache-{n}{tag}"
    if not (tree / "skills.json").exists():
        originals = workgen.generate(n, seed)
        shutil.rmtree(src / CACHE, ignore_errors=True)
        for name, data in workgen.revise(originals).items():
            (src / name).write_bytes(data)
        run_once([*(ps or project_skill()), "build", str(src), "--out", str(tree)])
        shutil.move(str(src / CACHE), str(cache))
        for name, data in originals.items():
            (src / name).write_bytes(data)
    return tree, cache


def restorer(stale_tree: Path, stale_cache: Path, over: Path, cache: Path) -> Callable[[], None]:
    """Untimed preparation of a rebuild over a stale tree: ``over`` and ``cache`` as :func:`ensure_stale` keeps
    them."""

    def restore() -> None:
        remover(over)()
        remover(cache)()
        shutil.copytree(stale_tree, over, symlinks=True)
        shutil.copytree(stale_cache, cache, symlinks=True)

    return restore


def _scale_cases(work: Path, n: int, seed: int, ps: list[str], tag: str = "") -> tuple[list[Case], Path]:
    """The five project-skill cases of one size, in bench_scale's order, and the built tree; ``tag`` keeps a
    baseline's folders (and so its cache, beside its workflows) apart."""
    src, out = ensure_tree(work, n, seed, ps, tag)
    stale_tree, stale_cache = ensure_stale(work, n, seed, ps, tag)
    fresh, over = work / f"fresh-{n}{tag}", work / f"over-{n}{tag}"
    cache = src / CACHE

    def clean_fresh() -> None:
        remover(fresh)()
        remover(cache)()

    return [
        Case("build", [*ps, "build", str(src), "--out", str(fresh)], clean_fresh),
        Case("build over a stale tree", [*ps, "build", str(src), "--out", str(over)],
             restorer(stale_tree, stale_cache, over, cache)),
        Case("build, up to date", [*ps, "build", str(src), "--out", str(out)]),
        Case("check", [*ps, "check", str(src), "--out", str(out)]),
        Case("check, no cache", [*ps, "check", str(src), "--out", str(out), "--no-cache"]),
    ], out


BASELINE_UP_TO = 1000  # a baseline runs beside the sizes up to this: the targets' size, not the 10,000 scaling


def bench_scale(work: Path, sizes: tuple[int, ...], runs: dict[int, int], seed: int,
                base: baseline.Baseline | None = None) -> dict[str, Any]:
    """Per size, round-robin in this order (the cache state each case starts from is the one it names), the floors
    (bench/floors.py) between them:

    - *build*: into an empty folder, with no cache (a fresh clone): it writes the tree and fills the cache;
    - *build over a stale tree*: over a tree built from the revised set, with that set's cache: every workflow changed;
    - *build, up to date*: the tree and the cache are current (the previous case left both so);
    - *check*: an unchanged tree with a warm cache;
    - *check, no cache*: the same with ``--no-cache`` (every workflow compiled).
    """
    results: dict[str, Any] = {}
    for n in sizes:
        ours, out = _scale_cases(work, n, seed, project_skill())
        src = work / f"wf-{n}"
        theirs, base_out = _scale_cases(work, n, seed, base.command, base.tag) if base and n <= BASELINE_UP_TO \
            else (None, None)
        blob, written = floors.capture(out, work / f"tree-{n}.marshal"), work / f"floor-write-{n}"

        def floor(case: str, before: Callable[[], None] | None = None, src: Path = src, out: Path = out,
                  blob: Path = blob, written: Path = written) -> Case:
            return Case(case, floors.argv(case, src, out, blob, written), before)

        files = sum(1 for p in out.rglob("*") if p.is_file())
        paired = twins(ours, theirs)
        per = 2 if theirs else 1  # our case and, with a baseline, its twin
        cases = [*paired[:per], floor(floors.PARSE_CASE), *paired[per:2 * per], floor(floors.WRITE_CASE,
                 remover(written)), *paired[2 * per:4 * per], floor(floors.HASH_CASE), *paired[4 * per:],
                 floor(floors.START_CASE)]
        r, r_base = baseline.split(measure(cases, runs[n], f"{n} workflows"))
        for path in (work / f"fresh-{n}", work / f"over-{n}", written, work / f"fresh-{n}{baseline.TAG}",
                     work / f"over-{n}{baseline.TAG}"):
            shutil.rmtree(path, ignore_errors=True)
        input_bytes = sum(p.stat().st_size for p in src.iterdir() if p.is_file())
        output_bytes = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
        results[str(n)] = {"workflows": n, "input_bytes": input_bytes, "output_files": files,
                           "output_bytes": output_bytes, **r}
        results[str(n)]["ratios"] = floors.ratios(results[str(n)])
        if base and base_out is not None:
            results[str(n)]["baseline"] = baseline.scale_entry(r, r_base, baseline.same_tree(out, base_out), base)
    return results


STAGE_SCRIPT = r"""
import json, os, shutil, sys, time
from pathlib import Path
t0 = time.perf_counter()
from projector import bundle as B, disk as D, output as O
from projector.cache import Cache
from projector.load import discover, load_data, read_source
from projector.render import project
t_imports = time.perf_counter() - t0
src, work = Path(sys.argv[1]), Path(sys.argv[2])
opts = O.Options(())
best = {}
for _ in range(int(sys.argv[3])):
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    t = {}

    def timed(label, fn):
        a = time.perf_counter()
        value = fn()
        t[label] = time.perf_counter() - a
        return value

    found = timed("discover", lambda: discover([str(src)]))
    datas = timed("read workflow files", lambda: [(read_source(p, d), d) for p, d in found])
    wfs = timed("load: YAML, model, validate", lambda: [load_data(x, d) for x, d in datas])
    projs = timed("project: gates, Jinja2, JSON", lambda: [project(w) for w in wfs])
    bundles = timed("bundle: frontmatter, digests, entry", lambda: [B.bundle(x) for x in projs])
    results = [(w.name, w.span, w.source, b, []) for w, b in zip(wfs, bundles)]
    store = Cache(work / "cache", opts)
    timed("cache: write entries", lambda: [store.put(d, store.key(d, x), r) for (x, d), r in zip(datas, results)])
    timed("cache: read entries (a warm run)", lambda: [store.get(d, store.key(d, x)) for x, d in datas])
    build = timed("cross-file checks, index", lambda: O._finish_files(results))
    timed("write: stage and swap (empty folder)", lambda: O.write(build, work / "out"))
    timed("compare with disk (check)", lambda: O.compare(build, work / "out"))
    for b in build.bundles:  # untimed: make every bundle stale
        with open(work / "out" / b.path / "SKILL.md", "ab") as f:
            f.write(b"stale\n")
    os.sync()  # untimed: an old tree is on disk, as in a real rebuild (freeing written blocks costs more)
    removing = []
    remove = D._remove

    def timed_remove(path):
        a = time.perf_counter()
        try:
            remove(path)
        finally:
            removing.append(time.perf_counter() - a)

    D._remove = timed_remove
    try:
        timed("write: over a stale tree", lambda: O.write(build, work / "out"))
    finally:
        D._remove = remove
    t["write: over a stale tree, of it removing the old tree"] = sum(removing)
    for k, v in t.items():
        best[k] = min(best.get(k, v), v)
print(json.dumps({"imports_s": t_imports, "stages": best}))
"""


def stage_profile(work: Path, n: int, seed: int, runs: int) -> dict[str, Any]:
    """Where a fresh build of ``n`` workflows spends its time: each stage timed alone, serially (one core) in one
    process, best of ``runs``. The cache rows are not part of a --no-cache build; compare is ``check``'s."""
    src, _ = ensure_tree(work, n, seed)
    proc = subprocess.run([PY, "-c", STAGE_SCRIPT, str(src), str(work / f"stages-{n}"), str(runs)], cwd=ROOT,
                          capture_output=True, text=True, timeout=1800)
    if proc.returncode:
        raise SystemExit(f"bench: stage profile failed:\n{proc.stderr[-2000:]}")
    shutil.rmtree(work / f"stages-{n}", ignore_errors=True)
    return {"workflows": n, "runs": runs, **json.loads(proc.stdout)}


PROFILE_SCRIPT = r"""
import cProfile, json, os, pstats, sys, time
from projector.cli import main
report, argv = sys.argv[1], sys.argv[2:]
sys.stdout = open(os.devnull, "w")
prof = cProfile.Profile()
t0 = time.perf_counter()
prof.enable()
try:
    code = main(argv)
except SystemExit as exc:
    code = exc.code
prof.disable()
wall = time.perf_counter() - t0
if code:
    sys.exit(f"exit {code}")

def short(file):
    for mark in ("/site-packages/", "/projector/"):
        if mark in file:
            return ("projector/" if mark == "/projector/" else "") + file.rsplit(mark, 1)[1]
    return "stdlib " + os.path.basename(file)

def label(key):
    file, line, name = key
    if file == "~":  # a builtin: "<built-in method posix.open>", "<method 'write' of '_io.BufferedWriter' objects>"
        name = name.strip("<>").removeprefix("built-in method ").removeprefix("built-in function ")
        if name.startswith("method '"):
            meth, _, owner = name[len("method '"):].partition("' of '")
            name = owner.removesuffix("' objects") + "." + meth
        return name, name
    where = short(file)
    module = where.split("/")[0] if not where.startswith(("projector/", "stdlib ")) else where
    return f"{where}:{line}({name})", module

rows, modules, total = [], {}, 0.0
for key, (cc, nc, tt, ct, callers) in pstats.Stats(prof).stats.items():
    name, module = label(key)
    rows.append({"function": name, "calls": nc, "own_s": tt, "cum_s": ct})
    modules[module] = modules.get(module, 0.0) + tt
    total += tt
own = sorted(rows, key=lambda r: -r["own_s"])[:15]
cum = sorted((r for r in rows if r["function"].startswith("projector/") and r["cum_s"] < 0.9 * total),
             key=lambda r: -r["cum_s"])[:15]
mods = [{"module": m, "own_s": t} for m, t in sorted(modules.items(), key=lambda kv: -kv[1])[:12]]
with open(report, "w") as f:
    json.dump({"argv": argv, "wall_s": wall, "total_s": total, "own": own, "cumulative": cum, "modules": mods}, f)
"""


def cprofile(work: Path, n: int, seed: int) -> dict[str, Any]:
    """cProfile of a fresh build of ``n`` workflows and of a rebuild over a stale tree, each serial (``--jobs 1``:
    a parallel build's workers would escape the profiler) in one process: the functions with the most time of their
    own, the projector functions with the most time under them, and the own time by module. The profiler's
    overhead inflates Python-heavy code against C: read it for shares, not for times."""
    src, _ = ensure_tree(work, n, seed)
    stale_tree, stale_cache = ensure_stale(work, n, seed)
    fresh, over, cache = work / f"prof-fresh-{n}", work / f"prof-over-{n}", src / CACHE
    out: dict[str, Any] = {"workflows": n}
    for label, target, prepare in (
            ("build", fresh, lambda: (remover(fresh)(), remover(cache)())),
            ("build over a stale tree", over, restorer(stale_tree, stale_cache, over, cache))):
        prepare()
        report = work / "profile.json"
        proc = subprocess.run([PY, "-c", PROFILE_SCRIPT, str(report), "build", str(src), "--out", str(target),
                               "--jobs", "1"], cwd=ROOT, capture_output=True, text=True, timeout=1800)
        if proc.returncode:
            raise SystemExit(f"bench: the profile of {label} failed:\n{proc.stderr[-2000:]}")
        out[label] = json.loads(report.read_text("utf-8"))
        remover(target)()
    return out


def mcp_free(work: Path) -> dict[str, bool]:
    """Is ``mcp`` (or any SDK module) in sys.modules after build and after check? (tests/test_imports.py asserts it.)"""
    probe = ("import sys\nfrom projector.cli import main\nmain(sys.argv[1:])\n"
             "sys.stderr.write('\\nMCP-LOADED=%s\\n' % any(m == 'mcp' or m.startswith(('mcp.', 'mcp_types')) "
             "for m in sys.modules))\n")
    out: dict[str, bool] = {}
    for cmd in ("build", "check"):
        target = work / "examples-out" if cmd == "check" else work / "probe-out"
        proc = subprocess.run([PY, "-c", probe, cmd, str(work / "examples"), "--out", str(target)], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
        out[cmd] = "MCP-LOADED=False" in proc.stderr
    return out


# ------------------------------------------------------------------------------------------------------ d, e

def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_memory(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM of a process in MiB (Linux /proc); empty elsewhere."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) / 1024
    return out


class Server:
    """``project-skill serve --http 127.0.0.1:PORT`` in a child process, stopped on exit."""

    def __init__(self, skills: Path, workflows: Path, log: Path, command: Callable[[int], list[str]] | None = None):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.log = log
        self.argv = command(self.port) if command else [
            *project_skill(), "serve", "--http", f"127.0.0.1:{self.port}", "--skills", str(skills),
            "--workflows", str(workflows)]

    def __enter__(self) -> Server:
        self._err = self.log.open("wb")
        start = time.perf_counter()
        self.proc = subprocess.Popen(self.argv, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=self._err,
                                     stderr=subprocess.STDOUT)
        deadline = start + 600
        while time.perf_counter() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"bench: the server exited {self.proc.returncode}:\n{self.log.read_text()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    break
            except OSError:
                time.sleep(0.05)
        else:
            raise SystemExit("bench: the server did not start listening within 600 s")
        self.startup_s = time.perf_counter() - start
        return self

    def memory(self) -> dict[str, float]:
        return proc_memory(self.proc.pid)

    def cpu_seconds(self) -> float | None:
        """User + system CPU of the server process so far (Linux /proc), all threads."""
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def __exit__(self, *exc: Any) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._err.close()


def pct(values: list[float], q: float) -> float:
    """The q-quantile (0..1) by the nearest-rank method."""
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, int(round(q * len(ordered) + 0.5)) - 1))
    return ordered[k]


@lru_cache(maxsize=1)
def _raw_result() -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(dict[str, Any])


async def _raw(client: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """An extension request (skills/list, skills/get) through the SDK's session; the raw result dict back."""
    import mcp_types

    req = mcp_types.Request[dict[str, Any] | None, str](method=method, params=params)
    return await client.session.send_request(req, _raw_result())


async def _workload(url: str, kind: str, units: list[dict[str, Any]], workers: int) -> dict[str, Any]:
    """Drive ``units`` (skills) through ``workers`` concurrent clients. kind "plain": one resources/read of the
    SKILL.md per unit; "skill": skills/get then resources/read of the same SKILL.md per unit. Every answer is
    checked against the manifest (uri, sha256)."""
    from mcp import Client

    latencies: dict[str, list[float]] = {"skills/get": [], "resources/read": []}
    errors: list[str] = []
    queue = iter(units)

    async def worker() -> None:
        async with Client(url, cache=None) as client:
            for entry in queue:
                uri = entry["uri"]
                try:
                    if kind == "skill":
                        t = time.perf_counter()
                        got = await _raw(client, "skills/get", {"uri": uri})
                        latencies["skills/get"].append(time.perf_counter() - t)
                        if got["skill"]["uri"] != uri:
                            errors.append(f"skills/get {uri}: wrong entry")
                    t = time.perf_counter()
                    res = await client.read_resource(uri)
                    latencies["resources/read"].append(time.perf_counter() - t)
                    data = res.contents[0].text.encode("utf-8")
                    if "sha256:" + hashlib.sha256(data).hexdigest() != entry["resources"][0]["digest"]:
                        errors.append(f"resources/read {uri}: digest mismatch")
                except Exception as exc:  # counted and reported, not raised
                    errors.append(f"{uri}: {exc!r}")

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(workers)))
    elapsed = time.perf_counter() - start
    every = latencies["skills/get"] + latencies["resources/read"]
    return {"requests": len(every), "elapsed_s": elapsed, "rps": len(every) / elapsed,
            "p50_ms": 1000 * pct(every, 0.50), "p99_ms": 1000 * pct(every, 0.99),
            "by_method": {m: {"n": len(v), "p50_ms": 1000 * pct(v, 0.5), "p99_ms": 1000 * pct(v, 0.99)}
                          for m, v in latencies.items() if v},
            "errors": errors[:10], "error_count": len(errors)}


async def _connect_all(url: str, workers: int) -> None:
    """Untimed warm-up: connect (server/discover) and read once per worker."""
    from mcp import Client

    async def one() -> None:
        async with Client(url, cache=None) as client:
            await _raw(client, "skills/list", {})

    await asyncio.gather(*(one() for _ in range(workers)))


def bench_throughput(server: Server, manifest: list[dict[str, Any]], requests: int, rounds: int, workers: int,
                     seed: int) -> dict[str, Any]:
    rng = random.Random(f"projector-bench-http:{seed}")
    asyncio.run(_connect_all(server.url, workers))
    runs: dict[str, list[dict[str, Any]]] = {"plain": [], "skill": []}
    for r in range(rounds):
        # The same skills in both workloads; plain does one request per skill, skill two: same request count.
        picks = [rng.choice(manifest) for _ in range(requests)]
        for kind in ("plain", "skill") if r % 2 == 0 else ("skill", "plain"):
            units = picks if kind == "plain" else picks[: requests // 2]
            cpu0, own0 = server.cpu_seconds(), time.process_time()
            res = asyncio.run(_workload(server.url, kind, units, workers))
            cpu1, own1 = server.cpu_seconds(), time.process_time()
            res["client_cpu_ms_per_request"] = 1000 * (own1 - own0) / res["requests"]
            res["server_cpu_ms_per_request"] = (None if cpu0 is None or cpu1 is None
                                                else 1000 * (cpu1 - cpu0) / res["requests"])
            runs[kind].append(res)
            print(f"  http {kind}: round {r + 1}/{rounds}: {res['rps']:.0f} req/s", file=sys.stderr, flush=True)
    out: dict[str, Any] = {"workers": workers, "requests_per_run": requests, "rounds": rounds}
    for kind, rs in runs.items():
        out[kind] = {
            "rps": statistics.median(x["rps"] for x in rs),
            "server_cpu_ms_per_request": (statistics.median(x["server_cpu_ms_per_request"] for x in rs)
                                          if all(x["server_cpu_ms_per_request"] is not None for x in rs) else None),
            "client_cpu_ms_per_request": statistics.median(x["client_cpu_ms_per_request"] for x in rs),
            "p50_ms": statistics.median(x["p50_ms"] for x in rs),
            "p99_ms": statistics.median(x["p99_ms"] for x in rs),
            "by_method": rs[len(rs) // 2]["by_method"],
            "error_count": sum(x["error_count"] for x in rs),
            "errors": [e for x in rs for e in x["errors"]][:10],
            "runs": rs,
        }
    # Paired by round: the two workloads of one round ran back to back, so drift in machine load cancels out.
    out["round_ratios"] = [sk["rps"] / pl["rps"] for sk, pl in zip(runs["skill"], runs["plain"])]
    out["ratio"] = statistics.median(out["round_ratios"])
    return out


async def _list_pass(url: str) -> dict[str, Any]:
    from mcp import Client

    pages: list[float] = []
    uris: list[str] = []
    async with Client(url, cache=None) as client:
        cursor = None
        start = time.perf_counter()
        while True:
            t = time.perf_counter()
            res = await _raw(client, "skills/list", {"cursor": cursor} if cursor else {})
            pages.append(time.perf_counter() - t)
            uris += [e["uri"] for e in res["skills"]]
            cursor = res.get("nextCursor")
            if not cursor:
                break
        elapsed = time.perf_counter() - start
    return {"pages": len(pages), "skills": len(uris), "elapsed_s": elapsed, "uris": uris,
            "page_p50_ms": 1000 * pct(pages, 0.5), "page_p99_ms": 1000 * pct(pages, 0.99),
            "first_page_ms": 1000 * pages[0], "last_page_ms": 1000 * pages[-1]}


def bench_list(server: Server, manifest: list[dict[str, Any]], passes: int) -> dict[str, Any]:
    expected = [e["uri"] for e in manifest]
    results = []
    mem_before = server.memory()
    for p in range(passes):
        res = asyncio.run(_list_pass(server.url))
        res["complete_and_in_order"] = res.pop("uris") == expected
        res["memory_after"] = server.memory()
        results.append(res)
        print(f"  skills/list pass {p + 1}/{passes}: {res['pages']} pages in {res['elapsed_s']:.2f} s, "
              f"RSS {res['memory_after'].get('VmRSS', 0):.1f} MiB", file=sys.stderr, flush=True)
    first = results[0]["memory_after"].get("VmRSS")
    last = results[-1]["memory_after"].get("VmRSS")
    growth = (last - first) / first if first and last else None
    return {"passes": results, "memory_before": mem_before, "rss_growth_first_to_last": growth,
            "pages_per_pass": results[0]["pages"], "skills": len(expected)}


def bench_server(work: Path, tree: Path, n: int, requests: int, rounds: int, workers: int, passes: int,
                 seed: int) -> dict[str, Any]:
    # The synthetic workflows are not served as prompts (the demo's are), so their skills are built --skills-only:
    # a SKILL.md must not name a workflow prompt the server does not offer (attach() refuses it).
    served = work / f"served-{n}"
    if not (served / "skills.json").exists():
        src, _ = ensure_tree(work, n, seed)
        run_once([*project_skill(), "build", str(src), "--skills-only", "--no-cache", "--out", str(served)])
    tree = served
    manifest = json.loads((tree / "skills.json").read_text("utf-8"))["skills"]
    with Server(tree, ROOT / "workflows", work / "server.log") as server:
        idle = server.memory()
        print(f"  server up in {server.startup_s:.1f} s with {len(manifest)} skills, RSS "
              f"{idle.get('VmRSS', 0):.0f} MiB", file=sys.stderr, flush=True)
        http = bench_throughput(server, manifest, requests, rounds, workers, seed)
        listing = bench_list(server, manifest, passes)
        end = server.memory()
    return {"skills": n, "startup_s": server.startup_s, "memory_idle": idle, "memory_end": end,
            "throughput": http, "list": listing}


def bench_fastmcp(work: Path, requests: int, rounds: int, workers: int, seed: int,
                  tree: Path = ROOT / "generated_skills") -> dict[str, Any]:
    """f. Our FastMCP path against FastMCP's own SkillsDirectoryProvider, the same tree and workload, paired."""
    manifest = json.loads((tree / "skills.json").read_text("utf-8"))["skills"]

    def ours(port: int) -> list[str]:
        return [*project_skill(), "serve", "--framework", "fastmcp", "--http", f"127.0.0.1:{port}", "--skills",
                str(tree), "--workflows", str(ROOT / "workflows")]

    def theirs(port: int) -> list[str]:
        return [PY, str(BENCH / "fastmcp_directory_server.py"), str(tree), "--http", str(port)]

    rng = random.Random(f"projector-bench-fastmcp:{seed}")
    runs: dict[str, list[dict[str, Any]]] = {"projector": [], "directory": []}
    with Server(tree, ROOT / "workflows", work / "fastmcp-ours.log", ours) as a, \
            Server(tree, ROOT / "workflows", work / "fastmcp-theirs.log", theirs) as b:
        servers = {"projector": a, "directory": b}
        for srv in servers.values():
            asyncio.run(_connect_all(srv.url, workers))
        for r in range(rounds):
            picks = [rng.choice(manifest) for _ in range(requests // 2)]  # each pick: skills/get + resources/read
            for kind in ("projector", "directory") if r % 2 == 0 else ("directory", "projector"):
                srv = servers[kind]
                cpu0, own0 = srv.cpu_seconds(), time.process_time()
                res = asyncio.run(_workload(srv.url, "skill", picks, workers))
                cpu1, own1 = srv.cpu_seconds(), time.process_time()
                res["client_cpu_ms_per_request"] = 1000 * (own1 - own0) / res["requests"]
                res["server_cpu_ms_per_request"] = (None if cpu0 is None or cpu1 is None
                                                    else 1000 * (cpu1 - cpu0) / res["requests"])
                runs[kind].append(res)
                print(f"  fastmcp {kind}: round {r + 1}/{rounds}: {res['rps']:.0f} req/s", file=sys.stderr,
                      flush=True)
    out: dict[str, Any] = {"skills": len(manifest), "tree": tree.relative_to(ROOT).as_posix() if tree.is_relative_to(
        ROOT) else tree.as_posix(), "workers": workers, "requests_per_run": requests, "rounds": rounds,
        "machine": {k: v for k, v in machine().items() if k in ("date", "commit", "loadavg_start", "packages")}}
    for kind, rs in runs.items():
        out[kind] = {"rps": statistics.median(x["rps"] for x in rs),
                     "server_cpu_ms_per_request": (statistics.median(x["server_cpu_ms_per_request"] for x in rs)
                                                   if all(x["server_cpu_ms_per_request"] is not None for x in rs)
                                                   else None),
                     "client_cpu_ms_per_request": statistics.median(x["client_cpu_ms_per_request"] for x in rs),
                     "p50_ms": statistics.median(x["p50_ms"] for x in rs),
                     "p99_ms": statistics.median(x["p99_ms"] for x in rs),
                     "error_count": sum(x["error_count"] for x in rs),
                     "errors": [e for x in rs for e in x["errors"]][:10], "runs": rs}
    out["round_ratios"] = [p["rps"] / d["rps"] for p, d in zip(runs["projector"], runs["directory"])]
    out["ratio"] = statistics.median(out["round_ratios"])
    return out


# ------------------------------------------------------------------------------------------------------ report

def machine() -> dict[str, Any]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        cpu = platform.processor() or "unknown"
    mem = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = round(int(line.split()[1]) / 1024 / 1024, 1)
    except OSError:
        pass
    import yaml

    def version(dist: str) -> str:
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return "-"

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return {
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpus": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
        "cpu_model": cpu,
        "memory_gib": mem,
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "libyaml": bool(getattr(yaml, "__with_libyaml__", False)),
        "packages": {d: version(d) for d in ("project-skill", "PyYAML", "Jinja2", "python-slugify", "mcp", "fastmcp")},
        "commit": commit.stdout.strip() or "-",
        "loadavg_start": os.getloadavg() if hasattr(os, "getloadavg") else None,
    }


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("PASS" if ok else "MISS")


CHECK_COLD = "project-skill check (examples, no cache yet)"
FLOOR = "floor: import yaml, jinja2, slugify"


def evaluate(res: dict[str, Any], quick: bool) -> list[dict[str, Any]]:
    rows = []
    cold = res.get("cold")
    if cold and CHECK_COLD in cold:  # (results of an older bench name their cases otherwise)
        floor = cold[FLOOR]["wall_s"]
        check = cold[CHECK_COLD]["wall_s"]
        best = cold[CHECK_COLD]["wall_min_s"] / cold[FLOOR]["wall_min_s"]
        rows.append({"id": "check_vs_floor",
                     "target": "cold check of the examples (no cache yet, as in CI) / the import floor",
                     "measured": f"{check / floor:.2f}x ({1000 * check:.0f} ms vs {1000 * floor:.0f} ms; fastest "
                     f"runs: {best:.2f}x; warm cache: "
                     f"{cold['project-skill check (examples, warm cache)']['wall_s'] / floor:.2f}x)",
                     "limit": "1.5x", "ok": check / floor <= TARGETS["check_vs_floor"],
                     "by": f"{check / floor / TARGETS['check_vs_floor']:.2f}x"})
    rows += scale_rows(res, quick)
    srv = res.get("server")
    if srv:
        t = srv["throughput"]
        rows.append({"target": "skills/get + resources/read >= 0.9x plain resources/read (req/s)",
                     "measured": f"{t['ratio']:.2f}x ({t['skill']['rps']:.0f} vs {t['plain']['rps']:.0f} req/s)",
                     "limit": "0.9x", "ok": t["ratio"] >= TARGETS["skill_vs_plain"] and not t["skill"]["error_count"]
                     and not t["plain"]["error_count"]})
        g = srv["list"]["rss_growth_first_to_last"]
        complete = all(p["complete_and_in_order"] for p in srv["list"]["passes"])
        rows.append({"target": f"skills/list over {srv['skills']:,} skills: complete, memory flat",
                     "measured": ("n/a" if g is None else f"{100 * g:+.1f} % RSS first to last pass")
                     + ("" if complete else "; INCOMPLETE listing"),
                     "limit": "<= 5 % growth", "ok": None if g is None else (g <= TARGETS["list_memory_growth"]
                                                                             and complete)})
    mf = res.get("mcp_free")
    fm = res.get("fastmcp")
    if fm:
        rows.append({"target": "FastMCP: our path >= 1.0x FastMCP's own SkillsDirectoryProvider "
                               "(skills/get + resources/read, req/s)",
                     "measured": f"{fm['ratio']:.2f}x ({fm['projector']['rps']:.0f} vs {fm['directory']['rps']:.0f} "
                                 "req/s)", "limit": "1.0x",
                     "ok": fm["ratio"] >= TARGETS["fastmcp_vs_directory"] and not fm["projector"]["error_count"]
                     and not fm["directory"]["error_count"]})
    if mf:
        rows.append({"target": "build and check never import mcp", "measured":
                     ", ".join(f"{k}: {'no mcp' if v else 'IMPORTS mcp'}" for k, v in mf.items()),
                     "limit": "no mcp", "ok": all(mf.values())})
    if quick:
        for row in rows:
            if row.get("sized"):
                row["ok"] = None
    return rows


def _scale(res: dict[str, Any]) -> dict[str, Any]:
    """The sizes of b (results of an older bench name their cases otherwise, and are left out)."""
    return {n: r for n, r in res.get("scale", {}).items() if "build over a stale tree" in r}


def scale_rows(res: dict[str, Any], quick: bool) -> list[dict[str, Any]]:
    """The build and check targets: at 1,000 workflows (with ``--quick``, at the largest size, as n/a), each a
    ratio to this run's floors, the absolute times beside it; and 10,000 against 1,000."""
    scale = _scale(res)
    if not scale:
        return []
    n = "1000" if "1000" in scale else (max(scale, key=int) if quick else None)
    if n is None:
        rows = [{"target": "1,000 workflows: fresh build, rebuild over a stale tree, warm check", "sized": True,
                 "measured": "not run (no 1,000 size)", "limit": "0.8x, 1.1x, 1.5x", "ok": None}]
    else:
        rows = size_rows(int(n), scale[n], res["machine"].get("cpus_usable") or 1)
    if "1000" in scale and "10000" in scale:
        r = scale["10000"]["build"]["wall_s"] / scale["1000"]["build"]["wall_s"]
        rows.append({"id": "build_10000_vs_1000", "target": "10,000 / 1,000 workflows, fresh build", "sized": True,
                     "measured": f"{r:.2f}x", "limit": "11x", "ok": r <= TARGETS["build_10000_vs_1000"],
                     "by": f"{r / TARGETS['build_10000_vs_1000']:.2f}x"})
    else:
        rows.append({"target": "10,000 / 1,000 workflows, fresh build", "measured": "not run (sizes)",
                     "limit": "11x", "ok": None, "sized": True})
    return rows


def _row(ident: str, target: str, measured: str, ratio: float) -> dict[str, Any]:
    limit = TARGETS[ident]
    return {"id": ident, "target": target, "measured": measured, "limit": f"{limit:g}x", "ok": ratio <= limit,
            "over": ratio > limit, "by": f"{ratio / limit:.2f}x", "sized": True}


def size_rows(n: int, k: dict[str, Any], cores: int) -> list[dict[str, Any]]:
    """The three ratio targets of one size ``k`` (a bench_scale entry)."""
    q = floors.ratios(k)
    if q is None:
        return [{"target": f"{n:,} workflows: fresh build, rebuild over a stale tree, warm check, against the floors",
                 "measured": "floors not measured (results of an older bench)", "limit": "0.8x, 1.1x, 1.5x",
                 "ok": None, "sized": True}]
    fresh, over, check = (k[c]["wall_s"] for c in ("build", "build over a stale tree", "check"))
    start, parse, write, hashed = (k[c]["wall_s"] for c in (floors.START_CASE, floors.PARSE_CASE, floors.WRITE_CASE,
                                                              floors.HASH_CASE))
    return [
        _row("build_vs_floor", f"{n:,} workflows, fresh build ({cores} cores) / (parse floor + write floor - one "
             "start-up)", f"{q['build_vs_floor']:.2f}x ({fresh:.2f} s, CPU {k['build']['cpu_s']:.2f} s; floor "
             f"{parse:.2f} + {write:.2f} - {start:.2f} = {q['floor_build_s']:.2f} s)", q["build_vs_floor"]),
        _row("stale_vs_fresh", f"{n:,}, rebuild over a stale tree (every workflow changed) / fresh build",
             f"{q['stale_vs_fresh']:.2f}x ({over:.2f} s, CPU {k['build over a stale tree']['cpu_s']:.2f} s; fresh "
             f"{fresh:.2f} s)", q["stale_vs_fresh"]),
        _row("check_warm_vs_floor", f"{n:,}, warm up-to-date check / read-and-hash floor",
             f"{q['check_vs_floor']:.2f}x ({check:.2f} s vs {hashed:.2f} s; no cache: "
             f"{k['check, no cache']['wall_s']:.2f} s; build, up to date: {k['build, up to date']['wall_s']:.2f} s)",
             q["check_vs_floor"]),
    ]


def notes(res: dict[str, Any]) -> list[str]:
    """What the stage profile and the floors say about each missed build or check target (this run's numbers)."""
    st, out = res["stages"]["stages"], []
    cores = res["machine"].get("cpus_usable") or 1
    parallel = sum(st[k] for k in st if k.startswith(("load", "project", "bundle")))
    serial = sum(st[k] for k in st if k.startswith(("discover", "read", "cross-file", "write: stage", "cache: write")))
    # Missed, or (--quick, no verdict) over the limit at the size measured.
    missed = {r.get("id") for r in res.get("verdicts", []) if r["ok"] is False or r.get("over")}
    n = res["stages"]["workflows"]
    k = _scale(res).get(str(n), {})
    written = st["write: stage and swap (empty folder)"]
    if "build_vs_floor" in missed:
        floor = (f" The floors of this size: parsing alone takes {fmt_ms(k[floors.PARSE_CASE]['wall_s'])} and "
                 f"writing the same tree alone {fmt_ms(k[floors.WRITE_CASE]['wall_s'])}, each in one fresh "
                 "interpreter; the build's write stage is "
                 f"{written / k[floors.WRITE_CASE]['wall_s']:.2f}x the write floor." if floors.PARSE_CASE in k else "")
        out.append(f"- **Fresh build of {n:,}.** Load, project and bundle take {fmt_ms(parallel)} of CPU on one core; "
                   f"over {cores} cores at best {fmt_ms(parallel / cores)}. The main process adds "
                   f"{fmt_ms(serial)} (reading, cross-file checks, the cache's writes and, the largest, writing the "
                   f"tree: {fmt_ms(written)}), and the imports "
                   f"{fmt_ms(res['stages']['imports_s'])}: a floor of about "
                   f"{fmt_ms(parallel / cores + serial + res['stages']['imports_s'])} before process start-up."
                   + floor)
    if "stale_vs_fresh" in missed:
        d = st["write: over a stale tree"] - written
        removal = st.get("write: over a stale tree, of it removing the old tree")
        of_it = f"; the removal alone, timed within it: {fmt_ms(removal)}" if removal is not None else ""
        out.append(f"- **Rebuild over a stale tree.** Writing over the old tree takes "
                   f"{fmt_ms(st['write: over a stale tree'])} against {fmt_ms(written)} into an empty folder: "
                   f"{fmt_ms(d)} more, for walking the old tree and removing it after the atomic swap "
                   f"(projector/disk.py){of_it}. Freeing the blocks of files already on disk waits on the disk "
                   "(section h), and the rebuild also replaces every cache entry in the compile's writer threads.")
    if "check_warm_vs_floor" in missed:
        floor = (f" The read-and-hash floor, which reads every input and output file in one fresh interpreter: "
                 f"{fmt_ms(k[floors.HASH_CASE]['wall_s'])}." if floors.HASH_CASE in k else "")
        out.append(f"- **Warm check of {n:,}.** A check of 32 workflows or more that nothing changed is answered by "
                   "the whole-tree cache entry (projector/treecache.py): it reads and keys the workflows and hashes "
                   "the tree, as the floor does, and on top of that imports the tool, keys its environment (which "
                   "imports PyYAML for its version), opens and checks the sealed entry, and prints; section h gives "
                   "the parts. For comparison, the per-file path a smaller check takes: imports "
                   f"{fmt_ms(res['stages']['imports_s'])}, reading the cache entries "
                   f"{fmt_ms(st['cache: read entries (a warm run)'])}, comparing with the tree "
                   f"{fmt_ms(st['compare with disk (check)'])}, reading the workflows "
                   f"{fmt_ms(st['read workflow files'])}." + floor)
    out += _scaling_note(res, missed) + _fastmcp_note(res, missed)
    return out or ["Every build and check target measured in this run passes."]


def _scaling_note(res: dict[str, Any], missed: set[Any]) -> list[str]:
    """10,000 against 1,000: how the build grew beside the floors of the same rounds."""
    scale = _scale(res)
    a, b = scale.get("1000"), scale.get("10000")
    if "build_10000_vs_1000" not in missed or not a or not b or not (floors.ratios(a) and floors.ratios(b)):
        return []
    grew = {c: b[c]["wall_s"] / a[c]["wall_s"] for c in (floors.PARSE_CASE, floors.WRITE_CASE)}
    return [f"- **10,000 against 1,000.** The build took {b['build']['wall_s'] / a['build']['wall_s']:.2f}x the time "
            f"(CPU {b['build']['cpu_s'] / a['build']['cpu_s']:.2f}x); in the same rounds the floors grew "
            f"{grew[floors.PARSE_CASE]:.2f}x (parsing) and {grew[floors.WRITE_CASE]:.2f}x (writing the tree), so the "
            f"build stood at {floors.ratios(b)['build_vs_floor']:.2f}x its floor at 10,000 against "
            f"{floors.ratios(a)['build_vs_floor']:.2f}x at 1,000. Measured apart (section h), the compile is "
            "linear: its CPU per 1,000 workflows shows no trend as the heap grows, and the garbage collector takes "
            "under 1 s of the whole; what grows faster than the work is writing the tree, nearly all of it kernel "
            "time, as the write floor's own growth shows."]


def _fastmcp_note(res: dict[str, Any], missed: set[Any]) -> list[str]:
    fm = res.get("fastmcp")
    if "fastmcp_vs_directory" not in missed or not fm:
        return []
    p, d = fm["projector"], fm["directory"]
    if not (p.get("server_cpu_ms_per_request") and d.get("server_cpu_ms_per_request")
            and p.get("client_cpu_ms_per_request")):
        return []
    return [f"- **FastMCP.** Our path served {fm['ratio']:.2f}x the requests per second of FastMCP's own provider, "
            f"with {p['server_cpu_ms_per_request']:.2f} ms of server CPU per request against "
            f"{d['server_cpu_ms_per_request']:.2f} ms ({d['server_cpu_ms_per_request'] / p['server_cpu_ms_per_request']:.2f}x "
            f"the requests per CPU second). The client process kept {100 * (_busy(p, 'client') or 0):.0f} % of a core "
            f"busy and each server {100 * (_busy(p, 'server') or 0):.0f} % / {100 * (_busy(d, 'server') or 0):.0f} %: "
            "the requests per second move with the rounds' noise (see f), and the server CPU per request is the "
            "comparison that does not depend on the client's scheduling."]


def _cpu_cell(k: dict[str, Any], side: str) -> str:
    cpu = k.get(f"{side}_cpu_ms_per_request")
    return "-" if cpu is None else f"{cpu:.2f} ms"


def _busy(k: dict[str, Any], side: str) -> float | None:
    """The share of one core that side kept busy in the workload: CPU per request times requests per second."""
    cpu = k.get(f"{side}_cpu_ms_per_request")
    return None if cpu is None else cpu * k["rps"] / 1000


def _md_bound_by(a: dict[str, Any], b: dict[str, Any], labels: tuple[str, str]) -> list[str]:
    """Which process bounds a throughput run: the share of one core the client and the server kept busy."""
    parts = []
    for k, label in zip((a, b), labels):
        client, server = _busy(k, "client"), _busy(k, "server")
        if client is None or server is None:
            return []
        parts.append(f"{label}: the client process {100 * client:.0f} %, the server {100 * server:.0f} %")
    return ["", "Share of one core each process kept busy (its CPU per request x requests per second): "
            + "; ".join(parts) + ". A process near 100 % bounds the requests per second (the concurrent "
            "`mcp.Client`s share one process, so one core); where that is the client, requests per second measure "
            "the client, and the server CPU per request is what tells two servers apart."]


def fmt_ms(s: float) -> str:
    return f"{1000 * s:,.0f} ms" if s < 10 else f"{s:,.1f} s"


def _md_floors_intro() -> list[str]:
    return ["", "Each build and check target is a ratio to a floor measured in the same run, round-robin with the "
            "targets' cases (bench/floors.py): what one fresh interpreter takes to do only the unavoidable part. "
            "*parse floor*: read every workflow file and parse it with libyaml (`yaml.load(..., "
            "Loader=yaml.CSafeLoader)`), building no model. *write floor*: write the build's own output tree (the "
            "same folders and bytes, captured from a build) into an empty folder, with no staging, swap or sync. "
            "*read-and-hash floor*: read and SHA-256 every workflow file and every file of the output tree. "
            "*start-up*: `python -c pass`. A fresh build is held to 0.8x (parse + write - one start-up): it spreads "
            "the parsing over the cores.", "",
            "Retired (issue 23): " + "; ".join(f"`{k}`, {why}" for k, (_, why) in RETIRED.items()) + ". An absolute "
            "time on a shared VM moves by 2x from one run to the next; the absolute times are still shown beside "
            "each ratio and in b."]


def _md_floors(scale: dict[str, Any], sizes: list[str]) -> list[str]:
    """b's second table: the floors of each size and the targets' ratios to them."""
    measured = [n for n in sizes if floors.ratios(scale[n])]
    if not measured:
        return []
    lines = ["", "The floors of each size, in the same rounds as the cases above (medians; CPU in brackets), and the "
             "ratios the targets are held to:", "",
             "| workflows | start-up | parse | write | read and hash | parse + write - start-up | build / that | "
             "over a stale tree / build | check / read and hash |", "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for n in measured:
        r, q = scale[n], floors.ratios(scale[n])
        cells = [f"{fmt_ms(r[c]['wall_s'])} ({fmt_ms(r[c]['cpu_s'])})"
                 for c in (floors.START_CASE, floors.PARSE_CASE, floors.WRITE_CASE, floors.HASH_CASE)]
        lines.append(f"| {int(n):,} | {' | '.join(cells)} | {fmt_ms(q['floor_build_s'])} | "
                     f"{q['build_vs_floor']:.2f}x | {q['stale_vs_fresh']:.2f}x | {q['check_vs_floor']:.2f}x |")
    if len(measured) >= 2:
        a, b = measured[-2], measured[-1]
        for case in (floors.PARSE_CASE, floors.WRITE_CASE, floors.HASH_CASE):
            ta, tb = scale[a][case]["wall_s"], scale[b][case]["wall_s"]
            lines += ["", f"- {case}: {int(b):,} workflows take {tb / ta:.2f}x the time of {int(a):,}."]
    return lines


def _md_profile(prof: dict[str, Any] | None) -> list[str]:
    """g's cProfile tables: a fresh build and a rebuild over a stale tree, serial, under the profiler."""
    if not prof:
        return []
    lines: list[str] = []
    for label in ("build", "build over a stale tree"):
        p = prof.get(label)
        if not p:
            continue
        total = p["total_s"]
        lines += ["", f"### cProfile: `{label}` of {prof['workflows']:,} workflows, serial (`--jobs 1`)", "",
                  f"{fmt_ms(p['wall_s'])} under the profiler (its overhead inflates Python code against C: read the "
                  "shares). Own time by module, the functions with the most time of their own, and the projector "
                  "functions with the most time under them:", "",
                  "| module | own time | share |", "|---|---:|---:|"]
        lines += [f"| {m['module']} | {fmt_ms(m['own_s'])} | {100 * m['own_s'] / total:.0f} % |" for m in p["modules"]]
        lines += ["", "| function | calls | own time | share | with callees |", "|---|---:|---:|---:|---:|"]
        lines += [f"| `{f['function']}` | {f['calls']:,} | {fmt_ms(f['own_s'])} | {100 * f['own_s'] / total:.0f} % | "
                  f"{fmt_ms(f['cum_s'])} |" for f in p["own"][:12]]
        lines += ["", "| projector function | calls | with callees | share |", "|---|---:|---:|---:|"]
        lines += [f"| `{f['function']}` | {f['calls']:,} | {fmt_ms(f['cum_s'])} | {100 * f['cum_s'] / total:.0f} % |"
                  for f in p["cumulative"]]
    return lines


def render_md(res: dict[str, Any]) -> str:
    m = res["machine"]
    lines = ["# Performance", "",
             "Measured by `bench/bench.py`" + (" in `--quick` mode (reduced sizes: not a verdict)" if res["quick"]
                                               else "") + ". Reproduce with:", "",
             "```sh", ".venv/bin/python bench/bench.py                 # the full run: 12 to 17 minutes",
             ".venv/bin/python bench/bench.py --only targets  # the build and check targets only: a few minutes",
             ".venv/bin/python bench/bench.py --quick         # a smoke test: under a minute", "```", "",
             "Every time is the median of several cold runs of a fresh process, run round-robin so changes in machine "
             "load hit every case alike, each after an untimed sync of what the case before it wrote; CPU is user + system time of that process, and peak memory its maximum "
             "resident set. The workflow sets are synthetic and deterministic (`bench/workgen.py`, seed "
             f"{res['seed']}): 3 to 8 steps each, every data-source kind, guidance, acknowledged and unacknowledged "
             "gate warnings, resource-only steps with templates, and every kind of tool annotation.", "",
             "## Machine", "",
             "| | |", "|---|---|",
             f"| date | {m['date']} |",
             f"| CPUs | {m['cpus']} ({m['cpus_usable']} usable): {m['cpu_model']} |",
             f"| memory | {m['memory_gib']} GiB |",
             f"| OS | {m['os']} |",
             f"| Python | {m['implementation']} {m['python']} |",
             f"| libyaml | {'yes' if m['libyaml'] else 'no'} |",
             "| packages | " + ", ".join(f"{k} {v}" for k, v in m["packages"].items()) + " |",
             f"| commit | {m['commit']} |",
             "| load average (1, 5, 15 min) at start / end | "
             + " / ".join(", ".join(f"{x:.2f}" for x in la) if la else "-"
                          for la in (m["loadavg_start"], res.get("loadavg_end"))) + " |",
             *[f"| part {part}, measured by `--only` | {r['date']}, commit {r['commit']}, load average "
               + " / ".join(", ".join(f"{x:.2f}" for x in la) if la else "-"
                            for la in (r["loadavg_start"], r["loadavg_end"])) + " |"
               for part, r in sorted(res.get("part_runs", {}).items())],
             "", "## Targets", "",
             "| target | measured | limit | verdict |", "|---|---|---|---|"]
    for row in res["verdicts"]:
        by = f" by {row['by']}" if row.get("by") and row["ok"] is False else ""
        lines.append(f"| {row['target']} | {row['measured']} | {row['limit']} | **{verdict(row['ok'])}**{by} |")
    lines += _md_floors_intro()
    lines += baseline.md_rows(res, CHECK_COLD, FLOOR)

    cold = res.get("cold")
    if cold:
        floor = cold["floor: import yaml, jinja2, slugify"]
        lines += ["", "## a. Cold start", "",
                  "One process per run, as a pre-commit hook or CI step starts it. Output goes to /dev/null.", "",
                  "| command | wall (median) | vs floor | min – max | CPU | peak RSS |",
                  "|---|---:|---:|---:|---:|---:|"]
        for name, r in cold.items():
            lines.append(f"| {name} | {fmt_ms(r['wall_s'])} | {r['wall_s'] / floor['wall_s']:.2f}x | "
                         f"{fmt_ms(r['wall_min_s'])} – {fmt_ms(r['wall_max_s'])} | {fmt_ms(r['cpu_s'])} | "
                         f"{r['maxrss_mb']:.0f} MiB |")

    scale = {n: r for n, r in res.get("scale", {}).items() if "build over a stale tree" in r}
    sizes = sorted(scale, key=int) if scale else []
    if scale:
        lines += ["", "## b, c. Scaling and memory", "",
                  "*build*: into an empty folder with no cache, as on a fresh clone (it also fills the cache). "
                  "*over a stale tree*: over a tree and a cache built from the same workflows with every description "
                  "reworded (`workgen.revise`), so every file is rewritten and every cache entry misses. *up to date*: "
                  "`build` with nothing to write, warm cache. *check*: an unchanged tree, warm cache; *no cache*: "
                  "`check --no-cache`. Per workflow: the fresh build's median divided by the number of workflows.", "",
                  "| workflows | input | output files | build | per workflow | over a stale tree | up to date | "
                  "check | check, no cache | peak RSS build / check |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for n in sizes:
            r = scale[n]
            lines.append(f"| {int(n):,} | {r['input_bytes'] / 1e6:.1f} MB | {r['output_files']:,} | "
                         f"{fmt_ms(r['build']['wall_s'])} | {1000 * r['build']['wall_s'] / int(n):.2f} ms | "
                         f"{fmt_ms(r['build over a stale tree']['wall_s'])} | "
                         f"{fmt_ms(r['build, up to date']['wall_s'])} | {fmt_ms(r['check']['wall_s'])} | "
                         f"{fmt_ms(r['check, no cache']['wall_s'])} | "
                         f"{r['build']['maxrss_mb']:.0f} / {r['check']['maxrss_mb']:.0f} MiB |")
        if len(sizes) >= 2:
            a, b = sizes[-2], sizes[-1]
            na, nb = int(a), int(b)
            for cmd in ("build", "build over a stale tree", "check", "check, no cache"):
                ta, tb = scale[a][cmd]["wall_s"], scale[b][cmd]["wall_s"]
                marginal = 1000 * (tb - ta) / (nb - na)
                lines.append("")
                lines.append(f"- {cmd}: {nb:,} workflows take {tb / ta:.2f}x the time of {na:,} "
                             f"({nb / na:.0f}x the work); the marginal cost is {marginal:.2f} ms per workflow "
                             f"(CPU time: {scale[b][cmd]['cpu_s'] / scale[a][cmd]['cpu_s']:.2f}x).")
        lines += _md_floors(scale, sizes)

    srv = res.get("server")
    if srv:
        t = srv["throughput"]
        lines += ["", "## d. Serving over Streamable HTTP (loopback)", "",
                  f"One `project-skill serve --http` process (stateless) serving the {srv['skills']:,}-skill tree; "
                  f"{t['workers']} concurrent `mcp.Client`s in one client process on the same machine; "
                  f"{t['requests_per_run']:,} requests per run, {t['rounds']} run(s) per workload, alternating. "
                  "*plain*: `resources/read` of a SKILL.md (a concrete resource). *skill*: `skills/get` of the same "
                  "skills, each followed by the same `resources/read`. Every answer is checked (entry URI, sha256 of "
                  "the bytes).", "",
                  "| workload | requests/s | p50 | p99 | server CPU per request | client CPU per request | errors |",
                  "|---|---:|---:|---:|---:|---:|---:|"]
        for kind in ("plain", "skill"):
            k = t[kind]
            lines.append(f"| {kind} | {k['rps']:.0f} | {k['p50_ms']:.1f} ms | {k['p99_ms']:.1f} ms | "
                         f"{_cpu_cell(k, 'server')} | {_cpu_cell(k, 'client')} | {k['error_count']} |")
            for meth, bm in sorted(k["by_method"].items()):
                lines.append(f"| &nbsp;&nbsp;{kind}: {meth} | | {bm['p50_ms']:.1f} ms | {bm['p99_ms']:.1f} ms | | | |")
        lines += ["", f"skill / plain: **{t['ratio']:.2f}x** the requests per second (median of the per-round "
                  f"ratios {', '.join(f'{r:.2f}' for r in t.get('round_ratios', []))}; the two workloads of a round "
                  "run back to back).", *_md_bound_by(t["plain"], t["skill"], ("plain", "skill")), "",
                  f"Server start with {srv['skills']:,} skills: {srv['startup_s']:.1f} s to listening; RSS "
                  f"{srv['memory_idle'].get('VmRSS', 0):.0f} MiB idle, "
                  f"{srv['memory_end'].get('VmRSS', 0):.0f} MiB at the end (peak "
                  f"{srv['memory_end'].get('VmHWM', 0):.0f} MiB)."]
        lst = srv["list"]
        lines += ["", "## e. `skills/list` paged over every skill", "",
                  f"{len(lst['passes'])} full passes with one client, {lst['pages_per_pass']} pages of the server's "
                  "default page size each; server RSS after each pass.", "",
                  "| pass | pages | skills | complete, in order | time | page p50 | page p99 | first / last page | "
                  "RSS after |", "|---:|---:|---:|:---:|---:|---:|---:|---:|---:|"]
        for i, p in enumerate(lst["passes"], 1):
            lines.append(f"| {i} | {p['pages']} | {p['skills']:,} | {'yes' if p['complete_and_in_order'] else 'NO'} "
                         f"| {fmt_ms(p['elapsed_s'])} | {p['page_p50_ms']:.1f} ms | {p['page_p99_ms']:.1f} ms | "
                         f"{p['first_page_ms']:.1f} / {p['last_page_ms']:.1f} ms | "
                         f"{p['memory_after'].get('VmRSS', 0):.1f} MiB |")
        g = lst["rss_growth_first_to_last"]
        lines += ["", f"RSS growth from the first pass to the last: "
                  f"{'n/a' if g is None else f'{100 * g:+.2f} %'}."]
    elif res.get("server_skipped"):
        lines += ["", "## d, e. Serving", "", f"Not run: {res['server_skipped']}."]
    fm = res.get("fastmcp")
    if fm:
        fmm = fm["machine"]
        lines += ["", "## f. FastMCP: our path against FastMCP's own provider", "",
                  f"Two servers on this machine, in one run ({fmm['date']}, commit {fmm['commit']}, "
                  + ", ".join(f"{k} {v}" for k, v in fmm["packages"].items() if k in ("mcp", "fastmcp"))
                  + f"): `project-skill serve --framework fastmcp --http` (the demo: `attach()` on a FastMCP server) "
                  f"and a plain FastMCP server with `SkillsDirectoryProvider` (`bench/fastmcp_directory_server.py`), "
                  f"both stateless HTTP, serving `{fm['tree']}` ({fm['skills']} skills). {fm['workers']} concurrent "
                  f"`mcp.Client`s; per round the same {fm['requests_per_run'] // 2:,} random skills, each "
                  f"`skills/get` then `resources/read` of its SKILL.md (checked by sha256), on each server back to "
                  f"back, the order alternating; {fm['rounds']} rounds.", "",
                  "| server | requests/s | p50 | p99 | server CPU per request | client CPU per request | errors |",
                  "|---|---:|---:|---:|---:|---:|---:|"]
        for kind, label in (("projector", "projector on FastMCP"), ("directory", "FastMCP SkillsDirectoryProvider")):
            k = fm[kind]
            lines.append(f"| {label} | {k['rps']:.0f} | {k['p50_ms']:.1f} ms | {k['p99_ms']:.1f} ms | "
                         f"{_cpu_cell(k, 'server')} | {_cpu_cell(k, 'client')} | {k['error_count']} |")
        lines += ["", f"projector / FastMCP's provider: **{fm['ratio']:.2f}x** the requests per second (median of "
                  f"the per-round ratios {', '.join(f'{r:.2f}' for r in fm['round_ratios'])}). The medians of each "
                  "column and the paired ratio can point different ways when rounds are noisy (a shared machine); "
                  "the server CPU per request does not depend on the client's scheduling."]
        cpu_p, cpu_d = fm["projector"]["server_cpu_ms_per_request"], fm["directory"]["server_cpu_ms_per_request"]
        if cpu_p and cpu_d:
            lines += ["", f"Server CPU per request: {cpu_p:.2f} ms (projector) vs {cpu_d:.2f} ms (FastMCP's provider), "
                      f"so per CPU second projector serves {cpu_d / cpu_p:.2f}x the provider's requests."]
        lines += _md_bound_by(fm["projector"], fm["directory"], ("projector's run", "the provider's run"))
    stages = res.get("stages")
    if stages:
        extra = ("cache: read", "compare", "write: over")
        total = sum(v for k, v in stages["stages"].items() if not k.startswith(extra))
        lines += ["", f"## g. Where the time goes: a fresh build of {stages['workflows']:,} workflows, stage by stage",
                  "", "Each stage timed alone, serially on one core in one process (best of "
                  f"{stages['runs']}); the share is of the stages a fresh build runs (the cache read, the compare "
                  "and the write over a stale tree are a warm run's, `check`'s and a rebuild's). A build spreads "
                  "load, project and bundle over the cores; the rest runs in the main process.", "",
                  "| stage | time | share |", "|---|---:|---:|",
                  f"| imports of the core | {fmt_ms(stages['imports_s'])} | |"]
        for k, v in stages["stages"].items():
            share = "" if k.startswith(extra) else f"{100 * v / total:.0f} %"
            lines.append(f"| {k} | {fmt_ms(v)} | {share} |")
        lines += _md_profile(res.get("profile"))
        lines += ["", "### What the misses come from", "", *notes(res)]
    analysis = BENCH / "analysis.md"  # measurements too long for every run, made apart and dated there
    if analysis.is_file():
        lines += ["", analysis.read_text("utf-8").rstrip("\n")]
    lines += ["", "Raw numbers: `bench/results.json`."]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------------------ main

PART_KEYS = {"cold": ("cold", "mcp_free", "cold_baseline"), "scale": ("scale", "stages", "profile"), "server": ("server", "server_skipped"),
             "fastmcp": ("fastmcp", "fastmcp_skipped")}


def merge(old: dict[str, Any], new: dict[str, Any], parts: set[str]) -> dict[str, Any]:
    """The committed results with the parts just run replaced: ``--only`` never loses the other parts' numbers.
    The machine section stays the committed run's; a merged part records its own date and commit."""
    if old.get("quick") != new.get("quick"):
        return new
    merged = dict(old)
    for part in parts:
        for key in PART_KEYS[part]:
            merged.pop(key, None)
            if key in new:
                merged[key] = new[key]
    return merged


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes and few runs: a smoke test under a minute")
    ap.add_argument("--seed", type=int, default=2640)
    ap.add_argument("--runs", type=int, help="timed runs per case (default: 7 quick cases, 5 at 1,000, 3 at 10,000)")
    ap.add_argument("--no-server", action="store_true", help="skip d and e")
    ap.add_argument("--only", action="append", choices=("cold", "scale", "server", "fastmcp", "targets"),
                    help="run only this part (a; b, c and g; d and e; f) and merge it into the committed results; "
                         "repeatable. 'targets': a, and b at 1,000 and 10,000 workflows: every build and check "
                         "target")
    ap.add_argument("--sizes", help="workflow counts for b and c, comma-separated (default: 10,1000,10000; "
                                    "with --quick: 10,100,300)")
    ap.add_argument("--out", help="folder for results.md and results.json (default: bench/; with --quick, a "
                                  "temporary folder, so a smoke test never overwrites the committed results)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder (printed)")
    ap.add_argument("--baseline", metavar="DIR", help="also time an older checkout's project-skill "
                    "(DIR/.venv/bin/project-skill) beside this one, case by case in the same rounds, for a before "
                    "and after in one run (a, and b up to 1,000 workflows; bench/baseline.py)")
    args = ap.parse_args(argv)

    if args.quick:
        sizes, runs_small, runs = (10, 100, 300), 3, {10: 3, 100: 3, 300: 2}
        http = {"requests": 200, "rounds": 1, "workers": 4, "passes": 2}
    else:
        sizes, runs_small, runs = (10, 1000, 10000), 15, {10: 7, 1000: 5, 10000: 3}
        http = {"requests": 1000, "rounds": 7, "workers": 8, "passes": 5}
    if args.only and "targets" in args.only:
        args.only = sorted({*args.only, "cold", "scale"} - {"targets"})
        if not args.quick and not args.sizes:
            sizes = (1000, 10000)
    if args.sizes:
        sizes = tuple(sorted({int(x) for x in args.sizes.split(",")}))
        runs = {n: runs.get(n, 5 if n <= 1000 else 3) for n in sizes}
    if args.runs:
        runs_small = args.runs
        runs = {n: args.runs for n in sizes}

    # A terminated bench still stops its server and removes its temporary folder.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    base = baseline.Baseline(args.baseline) if args.baseline else None
    # Users' commands run from compiled bytecode: a shell with PYTHONDONTWRITEBYTECODE would make every timed run of a
    # checkout without __pycache__ compile its modules again. The untimed warm-up round writes the .pyc files.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    work = Path(tempfile.mkdtemp(prefix="projector-bench-"))
    res: dict[str, Any] = {"quick": args.quick, "seed": args.seed, "machine": machine()}
    started = time.perf_counter()
    try:
        parts = set(args.only or ("cold", "scale", "server", "fastmcp"))
        if "cold" in parts:
            print("a. cold start", file=sys.stderr)
            res["cold"] = bench_cold(work, runs_small, base)
            res["cold_baseline"] = base.info() if base else None
            res["mcp_free"] = mcp_free(work)
        if "scale" in parts:
            print("b, c. scaling", file=sys.stderr)
            res["scale"] = bench_scale(work, sizes, runs, args.seed, base)
            n = 1000 if 1000 in sizes else max(sizes)
            print(f"g. stages of a fresh build of {n}", file=sys.stderr)
            res["stages"] = stage_profile(work, n, args.seed, 3)
            print(f"g. cProfile of a fresh build and a stale rebuild of {n}", file=sys.stderr)
            res["profile"] = cprofile(work, n, args.seed)
        if args.no_server or "server" not in parts:
            res["server_skipped"] = "--no-server" if args.no_server else "--only " + " ".join(sorted(parts))
        else:
            try:
                import mcp  # noqa: F401  (the server side needs the SDK; build and check above do not)
            except ImportError:
                res["server_skipped"] = "the mcp package is not installed"
            else:
                n = sizes[-1]
                print(f"d, e. server with {n} skills", file=sys.stderr)
                _, tree = ensure_tree(work, n, args.seed)
                res["server"] = bench_server(work, tree, n, seed=args.seed, **http)
        if "fastmcp" in parts:
            if importlib.util.find_spec("fastmcp") is None:
                res["fastmcp_skipped"] = "fastmcp is not installed (pip install 'project-skill[fastmcp]')"
            else:
                print("f. FastMCP: our path against SkillsDirectoryProvider", file=sys.stderr)
                res["fastmcp"] = bench_fastmcp(work, seed=args.seed, requests=http["requests"],
                                               rounds=http["rounds"], workers=http["workers"])
    finally:
        if args.keep:
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    res["loadavg_end"] = os.getloadavg() if hasattr(os, "getloadavg") else None
    res["elapsed_s"] = time.perf_counter() - started
    out = Path(args.out) if args.out else (Path(tempfile.gettempdir()) / "projector-bench-quick" if args.quick
                                           else BENCH)
    if args.only and (out / "results.json").is_file():
        run = {"date": res["machine"]["date"], "commit": res["machine"]["commit"],
               "loadavg_start": res["machine"]["loadavg_start"], "loadavg_end": res["loadavg_end"]}
        res = merge(json.loads((out / "results.json").read_text("utf-8")), res, parts)
        res["part_runs"] = {**res.get("part_runs", {}), **{part: run for part in sorted(parts)}}
    res["targets"] = TARGETS
    res["verdicts"] = evaluate(res, args.quick)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(res, indent=2, default=str) + "\n", encoding="utf-8")
    (out / "results.md").write_text(render_md(res), encoding="utf-8")
    print(render_md(res))
    print(f"wrote {out / 'results.md'} and {out / 'results.json'} in {res['elapsed_s']:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
