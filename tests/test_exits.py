"""One exit-code map, one wrapper, one root error (projector/exits.py, projector/errors.py).

Every command line of the project returns what :func:`projector.exits.run` returns, so each error class maps to the
same exit code on every entry point: the console script and each command it loads, and the ``python -m`` entries.
No other module spells an exit code as a number, and every exception class a user can see is under
``ProjectorError``.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import runpy
from pathlib import Path

import pytest

import projector
from projector import exits
from projector.docs.pages import DocsError
from projector.errors import (BuildError, Diagnostic, DiskError, LoadError, PlainError, ProjectorError, Span,
                              UsageError)
from projector.matrix.harness import MatrixError
from projector.matrix.reader import ReadError
from projector.remote.errors import DynamicDeclined, LockError, OutputError, ServerError, VerificationError
from projector.server.errors import AttachError

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "projector"


def _diag() -> Diagnostic:
    return Diagnostic(Span("w.yaml", 1, 2), "error", "some-code", "a problem")


# The one table every entry point must agree with: an error, and the exit code it means.
TABLE: list[tuple[type[BaseException], BaseException, int]] = [
    (UsageError, UsageError("a bad command line"), 2),
    (LoadError, LoadError(_diag()), 1),
    (BuildError, BuildError(_diag()), 1),
    (DiskError, DiskError(_diag()), 1),
    (AttachError, AttachError("a tree that cannot be served"), 1),
    (VerificationError, VerificationError("digest-mismatch", "skill://a/SKILL.md", "no"), 1),
    (DynamicDeclined, DynamicDeclined("dynamic-declined", "skill://a/SKILL.md", "no"), 1),
    (LockError, LockError("bad-lock", "skills.lock", "no"), 1),
    (ServerError, ServerError("server-error", "srv", "no"), 1),
    (OutputError, OutputError("bad-output-path", "out", "no"), 1),
    (DocsError, DocsError("README.md is missing"), 1),
    (MatrixError, MatrixError("hello/skill/ok: it failed"), 1),
    (ReadError, ReadError("no steps"), 1),
    (KeyboardInterrupt, KeyboardInterrupt(), 130),
]


def test_the_map_gives_each_error_its_code():
    assert (exits.EXIT_OK, exits.EXIT_FINDINGS, exits.EXIT_USAGE, exits.EXIT_INTERRUPTED) == (0, 1, 2, 130)
    for cls, exc, code in TABLE:
        assert isinstance(exc, cls)
        assert exits.exit_code(exc) == code, cls.__name__


def _raising(exc: BaseException):
    def sync(*_args, **_kwargs):
        raise exc

    async def coro(*_args, **_kwargs):
        raise exc

    return sync, coro


def _entry_points(monkeypatch, exc: BaseException):
    """(name, a call that runs the entry point with its command raising ``exc``) for every entry point."""
    import projector.cli as cli
    import projector.docs as docs
    import projector.matrix.harness as harness
    import projector.matrix.evalruns as matrix_evalruns
    import projector.matrix.serve as matrix_serve
    import projector.remote.cli as remote_cli
    import projector.server.cli as server_cli

    sync, coro = _raising(exc)
    monkeypatch.setattr(cli, "_load_and_compile", sync)
    monkeypatch.setattr(server_cli, "_server", sync)
    monkeypatch.setattr(remote_cli, "cmd_list", coro)
    monkeypatch.setattr(remote_cli, "cmd_load", coro)
    monkeypatch.setattr(remote_cli, "cmd_pin", coro)
    monkeypatch.setattr(harness, "measure", coro)
    monkeypatch.setattr(docs, "generate", sync)
    monkeypatch.setattr(matrix_serve, "build", sync)
    monkeypatch.setattr(matrix_evalruns, "_main", sync)

    def python_m_server() -> int:
        with pytest.raises(SystemExit) as info:
            runpy.run_module("projector.server", run_name="__main__")
        return info.value.code

    root = ROOT.as_posix()
    return [
        ("project-skill build", lambda: cli.main(["build", "workflows"])),
        ("project-skill check", lambda: cli.main(["check", "workflows"])),
        ("project-skill serve", lambda: cli.main(["serve"])),
        ("project-skill remote list", lambda: cli.main(["remote", "list", "srv"])),
        ("project-skill remote load", lambda: cli.main(["remote", "load", "srv", "--all"])),
        ("project-skill pin", lambda: cli.main(["pin", "srv"])),
        ("project-skill matrix", lambda: cli.main(["matrix", "--root", root])),
        ("project-skill docs", lambda: cli.main(["docs", "--root", root])),
        ("projector.server.cli.main", lambda: server_cli.main("serve", [])),
        ("projector.remote.cli.main", lambda: remote_cli.main("remote", ["list", "srv"])),
        ("python -m projector.server", python_m_server),
        ("python -m projector.matrix.serve", lambda: matrix_serve.main([])),
        ("python -m projector.matrix.evalruns", lambda: matrix_evalruns.main([])),
    ]


def _maps(capsys, cls, exc, code, entries) -> None:
    for name, call in entries:
        assert call() == code, f"{name}: {cls.__name__}"
        err = capsys.readouterr().err
        assert "Traceback" not in err
        if isinstance(exc, ProjectorError):
            assert err.strip(), f"{name} printed nothing for {cls.__name__}"


@pytest.mark.parametrize("cls, exc, code", TABLE, ids=[row[0].__name__ for row in TABLE])
def test_every_entry_point_maps_an_error_to_the_same_code(monkeypatch, capsys, cls, exc, code):
    monkeypatch.setattr("sys.argv", ["projector"])  # python -m projector.server reads its arguments from here
    _maps(capsys, cls, exc, code, _entry_points(monkeypatch, exc))


@pytest.mark.parametrize("cls, exc, code", TABLE, ids=[row[0].__name__ for row in TABLE])
def test_the_inspect_entry_point_maps_an_error_to_the_same_code(monkeypatch, capsys, cls, exc, code):
    """``python -m projector.matrix.evals_inspect`` imports Inspect AI, which only the ``evals`` extra installs:
    without it, this entry point (and only it) is skipped."""
    pytest.importorskip("inspect_ai", reason="the evals extra (inspect-ai) is not installed")
    import projector.matrix.evals_inspect as matrix_evals_inspect

    monkeypatch.setattr(matrix_evals_inspect, "_main", _raising(exc)[0])
    _maps(capsys, cls, exc, code, [("python -m projector.matrix.evals_inspect", lambda: matrix_evals_inspect.main([]))])


def test_every_python_m_entry_is_in_the_table():
    """A module that runs as ``python -m`` (a ``__main__`` block or a ``__main__.py``) is an entry point: it is one
    of those the table above drives, or it calls one of their ``main()``s."""
    runnable = sorted(p.relative_to(ROOT).as_posix() for p in PACKAGE.rglob("*.py")
                      if p.name == "__main__.py" or 'if __name__ == "__main__":' in p.read_text("utf-8"))
    assert runnable == ["projector/cli.py", "projector/matrix/evalruns.py", "projector/matrix/evals_inspect.py",
                        "projector/matrix/serve.py", "projector/remote/cli.py", "projector/server/__main__.py"]
    for rel in runnable:
        tail = (ROOT / rel).read_text("utf-8").rsplit("\n\n", 1)[-1]
        assert re.search(r"sys\.exit\(main\(", tail), rel


def test_no_module_but_the_owner_spells_an_exit_code():
    """``sys.exit(2)``, ``raise SystemExit(1)``, ``EXIT_USAGE = 2`` and ``exit_code = 1`` are written once: in
    projector/exits.py."""
    literal_exit = re.compile(r"\b(?:sys\.exit|SystemExit)\(\s*-?\d")
    defines = re.compile(r"(?m)^\s*(?:EXIT_\w+\s*(?:,\s*EXIT_\w+\s*)*=|exit_code\s*=\s*\d)")
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "projector/exits.py":
            continue
        text = path.read_text("utf-8")
        offenders += [f"{rel}: {m.group(0)}" for m in literal_exit.finditer(text)]
        offenders += [f"{rel}: {m.group(0).strip()}" for m in defines.finditer(text)]
    assert offenders == []
    owner = (PACKAGE / "exits.py").read_text("utf-8")
    assert defines.search(owner) and not literal_exit.search(owner)


# Exception classes of the package that are not under ProjectorError, and why each may stay so.
OUTSIDE_THE_ROOT = {
    "projector.bounded.Unreadable": "an OSError: callers catch a bounded read's failure as one",
    "projector.bounded.BadJSON": "a ValueError: callers catch a bounded parse's failure as one",
    "projector.server.confirm.Pause": "control flow of the runner: a check pauses the run, which returns its "
                                      "asking (an InputRequiredResult)",
    "projector.server.demo.DemoError": "a demo tool's refusal: mcp's ToolError, which the model sees as a tool error",
    "projector.server.demo._Refused": "raised inside a SQL function of the demo; the query fails with its reason",
    "projector.server.skill_tools.Refusal": "a ValueError the frameworks turn into a tool error (isError)",
    "projector.remote.transport.Refused": "an httpx stream error inside the transport; the client raises a "
                                          "ServerError (response-too-large) for it",
    "projector.matrix.reader.StepFailed": "control flow of follow(): a failed call stops the run, in its outcome",
    "projector.matrix.reader.Unresolved": "control flow of follow(): an unresolved source declines the step",
    "projector.server.adapters.base.OwnStatePolicy": "control flow of attach(): the server's own request-state "
                                                     "policy is kept; attach raises an AttachError (own-state-policy)",
    "projector.server.gateway.UpstreamGone": "a forwarded call the upstream cannot answer: the adapter turns it into "
                                             "a tool error (isError)",
    "projector.server.replay._Unusable": "why a replay database's path breaks the rule; the guard raises an "
                                         "AttachError (replay-db) or refuses the yes (-32603) with it",
    "projector.server.workflow_tool.BadArguments": "a workflow tool's arguments that do not fit: the frameworks turn "
                                                   "it into a tool error (isError) naming the argument",
    "projector.toolschema.Unchecked": "control flow of the argument checks: a pattern RE2 cannot read is not guessed",
    "projector.server.adapters.fastmcp_refusals.Refused": "the runner's -32602 carried through FastMCP's tool error "
                                                          "handling; a middleware answers it as that protocol error",
    "projector.server.arguments._Invalid": "what is wrong with an argument's value; convert_argument words the "
                                           "-32602 or tool error around it",
    "projector.server.tasks.Failure": "a task job's protocol-level failure: the task is failed, with the error "
                                      "inlined in tasks/get",
    "projector.server.durable.InFlight": "a tool call in flight when the process died: the durable round stops and "
                                         "the task asks the person whether to retry that step",
    "projector.server.evalcase.CaseGone": "never raised: the forwarding server's 'upstream gone' type, which an eval "
                                          "case server has no use for",
    "projector.server.tasks.TooMuch": "an MCPError: a write past the durable state's bounds, answered to the client "
                                      "as that protocol error; nothing of it was kept",
    "projector.server.workflow_task._Stopped": "a cancelled task's round stops before its next step (a "
                                               "CancelledError); tasks/get then shows cancelled",
}


# The modules that import an optional extra's package at their top, and that package: without the extra, they are
# not walked (and define no exception class).
NEEDS_AN_EXTRA = {"projector.matrix.evals_inspect": "inspect_ai"}


def _installed(package: str) -> bool:
    try:
        importlib.import_module(package)
    except ImportError:
        return False
    return True


def _exception_classes() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(projector.__path__, "projector."):
        if info.name.rsplit(".", 1)[-1] == "__main__":
            continue  # runs the server when imported
        if info.name in NEEDS_AN_EXTRA and not _installed(NEEDS_AN_EXTRA[info.name]):
            continue
        module = importlib.import_module(info.name)
        for _, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, BaseException) and obj.__module__ == info.name:
                found[f"{info.name}.{obj.__qualname__}"] = obj
    return found


def test_every_error_a_user_sees_is_under_the_root():
    pytest.importorskip("fastmcp")
    classes = _exception_classes()
    outside = sorted(name for name, cls in classes.items() if not issubclass(cls, ProjectorError))
    assert outside == sorted(OUTSIDE_THE_ROOT)
    for name in ("projector.docs.common.DocsError", "projector.matrix.harness.MatrixError",
                 "projector.matrix.reader.ReadError"):
        assert issubclass(classes[name], PlainError), name


def test_a_plain_error_reads_as_its_sentence():
    """DocsError, MatrixError and ReadError are quoted in messages (``a run failed: ...``, ``error: ...``) as the
    sentence itself, as they were before they were under the root."""
    for cls in (DocsError, MatrixError, ReadError):
        exc = cls("README.md is missing")
        assert str(exc) == "README.md is missing" and exc.args == ("README.md is missing",)
        assert [(d.span.file, d.code, d.message) for d in exc.diagnostics] == [
            ("<projector>", "error", "README.md is missing")]


def test_each_command_prints_an_error_its_own_way(cli, monkeypatch):
    """The wrapper prints what each command printed before it: a usage sentence with the command's name, the
    findings then the command's closing line, or (docs, matrix) the error on one line after a lead."""
    import projector.cli as cli_module
    import projector.docs as docs
    import projector.remote.cli as remote_cli
    import projector.server.cli as server_cli

    sync, coro = _raising(LoadError(_diag()))
    monkeypatch.setattr(cli_module, "_load_and_compile", sync)
    monkeypatch.setattr(server_cli, "_server", sync)
    monkeypatch.setattr(remote_cli, "cmd_list", coro)
    monkeypatch.setattr(docs, "generate", _raising(DocsError("README.md is missing"))[0])
    text = "w.yaml:1:2: error[some-code]: a problem\n"
    assert cli("build").err == text + "error: 1 problem; nothing was written\n"
    assert cli("serve").err == text + "project-skill serve: nothing is served\n"
    assert cli("remote", "list", "srv").err == text + "project-skill remote: refused; nothing was written\n"
    assert cli("docs", "--root", ROOT.as_posix()).err == "project-skill docs: error: README.md is missing\n"
    run = cli("build", "--format", "json")
    assert '"code": "some-code"' in run.out and run.err == "error: 1 problem; nothing was written\n"
    usage = cli("serve", "--ttl-ms", "-1")
    assert (usage.code, usage.err) == (2, "project-skill serve: --ttl-ms must be 0 or more\n")
