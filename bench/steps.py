"""Compile time against the number of steps in one workflow: ``.venv/bin/python bench/steps.py [--quick]``.

One workflow of N steps (generated here, deterministic): a read-only and a side-effecting tool taking turns, each step
using the previous step's result, every other step with gate-like guidance that names that result, a ``when:`` on a
prompt argument and ``on_fail: skip``. That exercises every per-step pass: the loader, validate, the tool fit, the
gate check (the one that names saved results), the renderer, and the derived evals (a case for each condition, each
checked against the run). ``project-skill build`` runs it as a user does, in a fresh process, median of a few runs,
for 1,000 and 10,000 steps. The target (issue 38): ten times the steps take at most twelve times the time. A pass
that scans the steps before each step makes it a hundred times (the derived evals did: 61 s for 10,000 steps).

The conditions read one prompt argument, not each step's result: a case states every result a condition reads, so
with a condition on each result the evals themselves (not their derivation) grow with the square of the steps.

It prints the times, the ratio and PASS or MISS; it writes nothing into the project (the workflows and the output go
to a temporary folder). No test times this: tests/test_gates.py and tests/test_evals.py prove the same by counting
the step records read.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from bench import hyperfine, project_skill  # bench/bench.py: this script's folder is on sys.path

TARGET = 12.0  # ten times the steps in at most twelve times the time


def workflow(n: int) -> str:
    """The YAML of one workflow of ``n`` steps (see the module docstring)."""
    lines = ["name: many_steps", "description: One workflow of many steps.",
             "arguments:", "  - {name: who, type: string, required: true}",
             "  - {name: go, type: boolean, required: true}",
             "tools:",
             "  - name: look", "    description: Look something up.",
             "    input_schema: {type: object, properties: {x: {}}}", "    annotations: {readOnlyHint: true}",
             "  - name: act", "    description: Act on it.",
             "    input_schema: {type: object, properties: {x: {}}}", "    annotations: {readOnlyHint: false}",
             "steps:"]
    for i in range(n):
        lines += [f"  - name: s{i}", f"    tool: {'act' if i % 2 else 'look'}",
                  f"    args: {{x: {{step: r{i - 1}, field: a.b}}}}" if i else "    args: {x: {arg: who}}",
                  f"    bind: r{i}"]
        if i % 2:
            lines += [f"    guidance: Only act if r{i - 1} is eligible.",
                      "    when: {arg: go, equals: true}", "    on_fail: skip",
                      "    acknowledge: {uses-skippable-result: the bench reads a skipped result on purpose}"]
    return "\n".join(lines) + "\n"


def build_seconds(work: Path, n: int, runs: int) -> float:
    src = work / f"steps-{n}" / "many_steps.yaml"
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text(workflow(n), "utf-8")
    out = work / f"out-{n}"
    argv = [*project_skill(), "build", str(src), "--out", str(out)]
    return statistics.median(hyperfine(argv, runs, None, work / "hyperfine.json")["times"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="100 and 1,000 steps, one run each (a smoke test)")
    parser.add_argument("--runs", type=int, default=3, help="runs per size; the median counts (default 3)")
    args = parser.parse_args(argv)
    small, large = (100, 1000) if args.quick else (1000, 10000)
    runs = 1 if args.quick else args.runs
    with tempfile.TemporaryDirectory(prefix="projector-steps-") as tmp:
        work = Path(tmp)
        t_small, t_large = build_seconds(work, small, runs), build_seconds(work, large, runs)
    ratio = t_large / t_small
    ok = ratio <= TARGET
    print(f"{small:>6} steps: {t_small:7.2f} s")
    print(f"{large:>6} steps: {t_large:7.2f} s")
    print(f"ratio {ratio:.1f}x for {large // small}x the steps (target <= {TARGET:g}x): "
          f"{'PASS' if ok else 'MISS'}{' (quick: not the target sizes)' if args.quick else ''}")
    return 0 if ok or args.quick else 1


if __name__ == "__main__":
    sys.exit(main())
