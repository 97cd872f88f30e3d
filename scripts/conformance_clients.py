#!/usr/bin/env python3
"""Run the official SEP-2640 *client* conformance scenarios against ``project-skill remote``.

    python scripts/conformance_clients.py            # all four; exit 0 only if every check of every scenario passed
    python scripts/conformance_clients.py --json     # the same, with one JSON summary on stdout

Node 22 and the conformance suite are installed from the npm registry with the machine's ``npm`` into
``$PROJECTOR_CACHE`` (default: ``.cache/conformance`` under the repository), once; later runs reuse them. That is
the folder ``scripts/conformance.py`` (the server scenarios) uses too.
The harness starts a mock skills server per scenario and runs the client command with the server URL appended:

    sep-2640-client-no-prefetch          -> project-skill remote list URL        (must list, read nothing, exit 0)
    sep-2640-client-verify-digest        -> project-skill remote load --all URL  (must refuse the tampered SKILL.md
    sep-2640-client-verify-size          -> project-skill remote load --all URL   before reading any other file)
    sep-2640-client-verify-frontmatter   -> project-skill remote load --all URL

A scenario passes when the harness exits 0 and its ``checks.json`` holds at least one check, all SUCCESS. Any
failure, warning or skipped check fails it; so does a missing Node or npm.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CONFORMANCE_PKG = "@modelcontextprotocol/conformance"
CONFORMANCE_VERSION = "0.2.0-alpha.12"
NODE_VERSION = "22.23.5"

SCENARIOS: dict[str, list[str]] = {
    "sep-2640-client-no-prefetch": ["remote", "list"],
    "sep-2640-client-verify-digest": ["remote", "load", "--all"],
    "sep-2640-client-verify-size": ["remote", "load", "--all"],
    "sep-2640-client-verify-frontmatter": ["remote", "load", "--all"],
}


class SetupError(RuntimeError):
    """Node or the conformance suite could not be installed or found."""


def cache_dir() -> Path:
    """``$PROJECTOR_CACHE`` if set, else ``.cache/conformance`` under the repository: the same folder that
    ``scripts/conformance.py`` (the server scenarios) installs into, so one install serves both."""
    env = os.environ.get("PROJECTOR_CACHE")
    return Path(env) if env else REPO / ".cache" / "conformance"


def _node_package() -> str:
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine().lower())
    system = {"Linux": "linux", "Darwin": "darwin"}.get(platform.system())
    if arch is None or system is None:
        raise SetupError(f"no Node {NODE_VERSION} package for {platform.system()}/{platform.machine()}")
    return f"node-{system}-{arch}"


def paths(cache: Path) -> tuple[Path, Path]:
    """(node binary, conformance CLI) inside the cache."""
    node = cache / "node_modules" / _node_package() / "bin" / "node"
    cli = cache / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    return node, cli


def _installed_version(cache: Path, package: str) -> str | None:
    try:
        doc = json.loads((cache / "node_modules" / package / "package.json").read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return doc.get("version")


def ensure_installed(cache: Path | None = None, *, quiet: bool = False) -> tuple[Path, Path]:
    """Install Node and the conformance suite (pinned versions) into ``cache`` unless they are already there.
    The cache's package.json is written the way ``scripts/conformance.py`` writes it."""
    cache = (cache or cache_dir()).resolve()
    node, cli = paths(cache)
    node_pkg = _node_package()
    if not (node.exists() and cli.exists() and _installed_version(cache, CONFORMANCE_PKG) == CONFORMANCE_VERSION
            and _installed_version(cache, node_pkg) == NODE_VERSION):
        npm = shutil.which("npm")
        if npm is None:
            raise SetupError("npm is not on PATH; it is needed once, to install Node "
                             f"{NODE_VERSION} and {CONFORMANCE_PKG}@{CONFORMANCE_VERSION} into {cache}")
        cache.mkdir(parents=True, exist_ok=True)
        manifest = {"name": "projector-conformance-cache", "private": True, "version": "0.0.0",
                    "dependencies": {node_pkg: NODE_VERSION, CONFORMANCE_PKG: CONFORMANCE_VERSION}}
        (cache / "package.json").write_text(json.dumps(manifest, indent=2) + "\n", "utf-8")
        if not quiet:
            print(f"installing {node_pkg}@{NODE_VERSION} and {CONFORMANCE_PKG}@{CONFORMANCE_VERSION} into {cache}",
                  file=sys.stderr)
        proc = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--no-save", "--loglevel=error",
                               "--prefix", str(cache)], cwd=cache, capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            raise SetupError(f"npm install failed ({proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
        if not node.exists() or not cli.exists():
            raise SetupError(f"npm install finished but {node} or {cli} is missing")
    out = subprocess.run([str(node), "--version"], capture_output=True, text=True, timeout=60)
    if out.returncode != 0 or not out.stdout.strip().startswith("v22."):
        raise SetupError(f"{node} does not run as Node 22: {out.stdout}{out.stderr}")
    return node, cli


def client_command(args: list[str], python: str | None = None) -> str:
    """The client command for the harness. It splits on single spaces, so no part may hold whitespace."""
    parts = [python or sys.executable, "-m", "projector.cli", *args]
    bad = [p for p in parts if any(c.isspace() for c in p) or not p]
    if bad:
        raise SetupError(f"the conformance harness splits --command on spaces; cannot pass {bad[0]!r}")
    return " ".join(parts)


@dataclass
class ScenarioResult:
    scenario: str
    command: str
    exit_code: int
    passed: int = 0
    failed: int = 0
    warnings: int = 0
    other: int = 0
    checks: list[dict] = field(default_factory=list)
    output: str = ""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and self.passed > 0 and not (self.failed or self.warnings or self.other)

    def summary(self) -> str:
        total = self.passed + self.failed + self.warnings + self.other
        verdict = "PASSED" if self.ok else "FAILED"
        return (f"{self.scenario}: {verdict}: {self.passed}/{total} checks passed, {self.failed} failed, "
                f"{self.warnings} warnings, {self.other} other (harness exit {self.exit_code})")


def run_scenario(scenario: str, node: Path, cli: Path, *, timeout_ms: int = 30000,
                 python: str | None = None) -> ScenarioResult:
    command = client_command(SCENARIOS[scenario], python)
    env = dict(os.environ)
    # The client runs from the repository so `-m projector.cli` finds the package even without an install.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    with tempfile.TemporaryDirectory(prefix="conformance-client-") as out:
        proc = subprocess.run([str(node), str(cli), "client", "--command", command, "--scenario", scenario,
                               "--timeout", str(timeout_ms), "-o", out],
                              cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout_ms / 1000 + 120)
        result = ScenarioResult(scenario, command, proc.returncode, output=proc.stdout + proc.stderr)
        for path in sorted(Path(out).rglob("checks.json")):
            result.checks.extend(json.loads(path.read_text("utf-8")))
    for check in result.checks:
        status = check.get("status")
        if status == "SUCCESS":
            result.passed += 1
        elif status == "FAILURE":
            result.failed += 1
        elif status == "WARNING":
            result.warnings += 1
        else:
            result.other += 1
    return result


def run_all(scenarios: list[str] | None = None, *, cache: Path | None = None, quiet: bool = False,
            python: str | None = None) -> list[ScenarioResult]:
    node, cli = ensure_installed(cache, quiet=quiet)
    return [run_scenario(s, node, cli, python=python) for s in (scenarios or list(SCENARIOS))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", action="append", choices=sorted(SCENARIOS), help="run only this one (repeatable)")
    ap.add_argument("--json", action="store_true", help="print a JSON summary on stdout")
    ap.add_argument("--verbose", action="store_true", help="print the harness output of every scenario")
    ap.add_argument("--python", help="the Python that runs project-skill (default: this one)")
    args = ap.parse_args(argv)
    try:
        results = run_all(args.scenario, python=args.python)
    except SetupError as exc:
        print(f"conformance_clients: {exc}", file=sys.stderr)
        return 1
    for r in results:
        if args.verbose or not r.ok:
            print(r.output, file=sys.stderr)
        print(r.summary(), file=sys.stderr if args.json else sys.stdout)
    n_ok = sum(r.ok for r in results)
    line = f"{n_ok} passed, {len(results) - n_ok} failed"
    if args.json:
        print(json.dumps({"scenarios": [{k: v for k, v in asdict(r).items() if k != "output"} | {"ok": r.ok}
                                        for r in results], "passed": n_ok, "failed": len(results) - n_ok},
                         indent=2))
    print(f"client scenarios: {line}", file=sys.stderr if args.json else sys.stdout)
    return 0 if n_ok == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
