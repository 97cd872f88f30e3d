"""The command line: build, check, pruning, atomicity, formats, strictness and exit codes."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EXAMPLES, GENERATED, ROOT, snapshot_tree
from projector import __version__
from projector import cli as cli_module

GATE_WF = """name: {name}
description: d
tools:
  - name: t
    annotations: {{destructiveHint: true}}
steps:
  - name: s
    tool: t
    guidance: Only if eligible.
"""


def test_build_writes_the_committed_tree(cli, tmp_path):
    run = cli("build", str(EXAMPLES), "--out", str(tmp_path / "out"))
    assert run.code == 0
    assert snapshot_tree(tmp_path / "out") == snapshot_tree(GENERATED)
    assert "refund-flow: skill://refund-flow/SKILL.md" in run.out
    assert "1 warning" in run.out
    assert (
        "workflows/refunds.yaml:52:15: warning[gate-on-side-effect]"
        in cli("build", "workflows", "--out", str(tmp_path / "x"), cwd=ROOT).err
    )


def test_default_paths_and_check_on_committed_tree(cli):
    run = cli("check", cwd=ROOT)
    assert run.code == 0, run.out + run.err
    assert "up to date" in run.out


def test_check_reports_stale_missing_and_extra_with_a_diff(cli, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(GENERATED, out)
    skill = out / "refund-flow" / "SKILL.md"
    skill.write_text(skill.read_text().replace("Save the result as `order`.", "Save it."))
    (out / "hello-world" / "references" / "tools.md").unlink()
    (out / "code-mode" / "stray.txt").write_text("x")  # the user's: carried over by build, so not extra
    (out / "code-mode" / "references" / "old.md").write_text("x")  # as an older build wrote it, listed below
    index = json.loads((out / "skills.json").read_text())
    (entry,) = [e for e in index["skills"] if e["uri"] == "skill://code-mode/SKILL.md"]
    entry["resources"].append({"uri": "skill://code-mode/references/old.md", "digest": "sha256:0", "size": 1})
    (out / "skills.json").write_text(json.dumps(index))
    run = cli("check", str(EXAMPLES), "--out", str(out))
    assert run.code == 1
    assert "--- a/refund-flow/SKILL.md" in run.out and "+++ b/refund-flow/SKILL.md" in run.out
    assert "-Save it." in run.out and "+Save the result as `order`." in run.out
    assert f"stale: {out.as_posix()}/refund-flow/SKILL.md" in run.out
    assert f"missing: {out.as_posix()}/hello-world/references/tools.md" in run.out
    assert f"extra: {out.as_posix()}/code-mode/references/old.md" in run.out and "stray" not in run.out
    # build repairs it, and then check is clean
    assert cli("build", str(EXAMPLES), "--out", str(out)).code == 0
    (out / "code-mode" / "stray.txt").unlink()
    assert snapshot_tree(out) == snapshot_tree(GENERATED)
    assert cli("check", str(EXAMPLES), "--out", str(out)).code == 0


def test_build_prunes_only_its_own_bundles(cli, tree, tmp_path):
    root = tree(
        {
            "wf/a.yaml": GATE_WF.format(name="alpha"),
            "wf/b.yaml": GATE_WF.format(name="beta"),
            "out/README.txt": "mine",
            "out/notes/keep.md": "keep",
        }
    )
    out = root / "out"
    assert cli("build", str(root / "wf"), "--out", str(out)).code == 0
    assert (out / "beta" / "SKILL.md").exists()
    (root / "wf" / "b.yaml").unlink()
    assert cli("build", str(root / "wf"), "--out", str(out)).code == 0
    assert not (out / "beta").exists()
    assert (out / "alpha" / "SKILL.md").exists()
    assert (out / "README.txt").read_text() == "mine"
    assert (out / "notes" / "keep.md").read_text() == "keep"
    index = json.loads((out / "skills.json").read_text())
    assert [e["uri"] for e in index["skills"]] == ["skill://alpha/SKILL.md"]


def test_build_on_an_up_to_date_tree_touches_nothing(cli, tmp_path):
    out = tmp_path / "out"
    cli("build", str(EXAMPLES), "--out", str(out))
    mtimes = {p: p.stat().st_mtime_ns for p in out.rglob("*")}
    run = cli("build", str(EXAMPLES), "--out", str(out))
    assert "up to date" in run.out
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*")} == mtimes


def test_failed_build_leaves_the_tree_untouched(cli, tree, tmp_path):
    root = tree({"wf/a.yaml": GATE_WF.format(name="alpha"), "wf/bad.yaml": "name: [unclosed\n"})
    out = tmp_path / "out"
    shutil.copytree(GENERATED, out)
    before = snapshot_tree(out)
    assert cli("build", str(root / "wf"), "--out", str(out)).code == 1
    assert snapshot_tree(out) == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.")]


@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "two-renames"])
def test_a_failed_swap_keeps_the_old_tree_and_is_an_io_error(cli, tmp_path, monkeypatch, exchange):
    import os

    from projector import disk

    out = tmp_path / "out"
    shutil.copytree(GENERATED, out)
    (out / "refund-flow" / "SKILL.md").write_text("old")
    before = snapshot_tree(out)
    real_rename = os.rename

    def failing_rename(src, dst):
        if ".stage-" in str(src):
            raise OSError(28, "No space left on device", str(src))
        return real_rename(src, dst)

    def failing_exchange(a, b):
        raise OSError(28, "No space left on device", str(a))

    monkeypatch.setattr(disk.os, "rename", failing_rename)
    monkeypatch.setattr(disk, "_exchange", failing_exchange if exchange else lambda a, b: False)
    run = cli("build", str(EXAMPLES), "--out", str(out))
    assert run.code == 1 and "error[io]: cannot write the output folder: No space left on device" in run.err
    assert "Traceback" not in run.err
    assert snapshot_tree(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_strict_turns_warnings_into_exit_1_and_writes_nothing(cli, tree):
    root = tree({"wf/a.yaml": GATE_WF.format(name="alpha")})
    run = cli("build", str(root / "wf"), "--out", str(root / "out"), "--strict")
    assert run.code == 1
    assert not (root / "out").exists()
    assert cli("check", str(root / "wf"), "--out", str(root / "out"), "--strict").code == 1


def test_check_strict_that_fails_never_says_up_to_date(cli, tree):
    """A check that fails under --strict leads with the failure; "up to date" is said only by a check that passes."""
    root = tree({"wf/a.yaml": GATE_WF.format(name="alpha")})
    assert cli("build", str(root / "wf"), "--out", str(root / "out")).code == 0
    run = cli("check", str(root / "wf"), "--out", str(root / "out"), "--strict")
    assert run.code == 1
    assert "up to date" not in run.out + run.err
    assert f"error: --strict: 1 warning, 0 notes; the files in {(root / 'out').as_posix()} match the workflows" in run.err
    run = cli("check", str(root / "wf"), "--out", str(root / "out"))
    assert run.code == 0 and "is up to date: 1 skill; 1 warning" in run.out


def test_check_never_says_it_wrote_nothing(cli, tree):
    """A check writes nothing by definition, so its closing line does not say so; a build's does."""
    root = tree({"wf/a.yaml": "name: x\ndescription: d\nsteps: [{name: a, tool: nope}]\n"})
    run = cli("check", str(root / "wf"), "--out", str(root / "o"))
    assert run.code == 1 and run.err.splitlines()[-1] == "error: 1 problem"
    run = cli("build", str(root / "wf"), "--out", str(root / "o"))
    assert run.code == 1 and run.err.splitlines()[-1] == "error: 1 problem; nothing was written"


def test_acknowledged_warning_passes_strict(cli, tree):
    acked = GATE_WF.format(name="alpha") + "    acknowledge:\n      gate-on-side-effect: the tool checks itself\n"
    root = tree({"wf/a.yaml": acked})
    run = cli("build", str(root / "wf"), "--out", str(root / "out"), "--strict")
    assert run.code == 0, run.err
    assert "warning[gate-on-side-effect]" in run.err and "(acknowledged: the tool checks itself)" in run.err
    assert "0 warnings, 1 acknowledged" in run.out


def test_format_json_is_one_array(cli, tmp_path):
    run = cli("build", str(EXAMPLES), "--out", str(tmp_path / "o"), "--format", "json")
    data = json.loads(run.out)
    assert [d["code"] for d in data] == ["guidance-on-side-effect", "gate-on-side-effect"]  # refunds-gated, refunds
    assert data[0]["file"].endswith("workflows/refunds-gated.yaml") and data[0]["severity"] == "note"
    data = data[1:]
    assert data[0]["line"] == 52 and data[0]["col"] == 15 and data[0]["severity"] == "warning"
    assert data[0]["file"].endswith("workflows/refunds.yaml")


def test_format_json_reports_errors_too(cli, tree):
    root = tree({"wf/a.yaml": "name: x\ndescription: d\nsteps: [{name: a, tool: nope}]\n"})
    run = cli("build", str(root / "wf"), "--out", str(root / "o"), "--format", "json")
    assert run.code == 1
    assert [d["code"] for d in json.loads(run.out)] == ["unknown-tool"]


def test_format_github_annotations(cli, tmp_path):
    run = cli("check", "workflows", "--format", "github", cwd=ROOT)
    notice, line = run.out.splitlines()[:2]
    assert notice.startswith(
        "::notice file=workflows/refunds-gated.yaml,line=55,col=15,title=guidance-on-side-effect::"
    )
    assert line.startswith("::warning file=workflows/refunds.yaml,line=52,col=15,title=gate-on-side-effect::")


def test_uri_prefix(cli, tmp_path):
    out = tmp_path / "o"
    assert cli("build", str(EXAMPLES), "--out", str(out), "--uri-prefix", "acme/billing").code == 0
    index = json.loads((out / "skills.json").read_text())
    uris = [e["uri"] for e in index["skills"]]
    assert "skill://acme/billing/refund-flow/SKILL.md" in uris
    assert (out / "acme" / "billing" / "refund-flow" / "SKILL.md").exists()
    for e in index["skills"]:
        assert e["uri"].split("/")[-2] == e["frontmatter"]["name"]
    assert cli("build", str(EXAMPLES), "--out", str(out), "--uri-prefix", "Bad Prefix").code == 2


def test_usage_errors_exit_2(cli, tmp_path):
    assert cli().code == 2
    assert cli("build", "--format", "xml").code == 2
    assert cli("frobnicate").code == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli("build", str(empty), "--out", str(tmp_path / "o")).code == 2


def test_missing_path_is_a_finding(cli, tmp_path):
    run = cli("build", str(tmp_path / "nope.yaml"), "--out", str(tmp_path / "o"))
    assert run.code == 1 and "no such file" in run.err


def test_version_and_help(cli):
    run = cli("--version")
    assert run.code == 0 and __version__ in run.out
    run = cli("--help")
    assert run.code == 0 and "build" in run.out and "check" in run.out and "exit codes" in run.out


# ------------------------------------------------------------ the one-command parser

# ``project-skill COMMAND ...`` is parsed by a parser that holds only that command (``projector.cli.parser`` with
# ``only``): it must give what the full parser gives, to the byte, for every command line that starts with a
# command: the namespace, the help, every error and its exit status. And ``--no-cache`` (there is no cache) is
# still parsed, hidden from the help.

LINES = [
    ["build"],
    ["check"],
    ["build", "w", "--out", "o", "--jobs", "2", "--strict", "--format", "json"],
    ["check", "a", "b", "--uri-prefix", "x/y", "--skills-only", "--no-cache", "--tools-from", "t.json"],
    ["build", "--help"],
    ["check", "-h"],
    ["schema", "--help"],
    ["tools", "--help"],
    ["init", "--help"],
    ["check", "--bogus"],
    ["build", "--jobs", "many"],
    ["check", "--format", "xml"],
    ["check", "--version"],
    ["build", "--out"],
    ["check", "--", "--out"],
    ["check", "--no-c"],
    ["check", "--form", "json"],
    ["schema"],
    ["schema", "extra"],
    ["tools"],
    ["tools", "srv", "--out", "a", "--check", "b"],
    ["tools", "srv", "--check", "f.json"],
    ["init"],
    ["init", "n"],
    ["init", "n", "--tools-from", "t.json"],
    ["init", "n", "--tools-from", "t.json", "--tool", "a", "--tool", "b", "--out", "x.yaml"],
    ["build", "-h", "--bogus"],
    ["check", "ünïcode", "--out", "\u2028"],
    ["build", "check"],
    ["check", "build"],
]


def _parse(ap, argv: list[str]) -> tuple[object, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            ns = vars(ap.parse_args(argv))
            got: object = {k: (v.__name__ if callable(v) else v) for k, v in ns.items()}
        except SystemExit as exc:
            got = ("exit", exc.code)
    return got, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("argv", LINES, ids=[" ".join(a) for a in LINES])
def test_the_one_command_parser_parses_as_the_full_one(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    full = _parse(cli_module.parser(), argv)
    one = _parse(cli_module.parser(argv[0]), argv)
    assert one == full
    assert full[0] != {} and (full[1] or full[2] or isinstance(full[0], dict))


def test_no_command_prints_the_help_with_every_command_and_exits_2(cli) -> None:
    run = cli()
    assert run.code == 2
    assert all(name in run.out for name in [*cli_module.COMMANDS, *cli_module.LAZY_COMMANDS])


def test_no_cache_is_accepted_for_old_ci_lines_and_changes_nothing(cli, tmp_path: Path) -> None:
    """There is no build cache: --no-cache, which CI lines of earlier versions pass, still runs and changes nothing,
    and --help no longer offers it."""
    for command in ("build", "check"):
        shown = cli(command, "--help")
        assert shown.code == 0 and "--no-cache" not in shown.out and "cache" not in shown.out
    out = (tmp_path / "out").as_posix()
    plain, flagged = (
        cli("build", "workflows", "--out", out, cwd=ROOT),
        cli("build", "workflows", "--out", out, "--no-cache", cwd=ROOT),
    )
    assert (plain.code, flagged.code) == (0, 0) and flagged.out == plain.out.replace("wrote", "up to date:")
    assert (
        cli("check", "workflows", "--out", out, "--no-cache", cwd=ROOT).out
        == cli("check", "workflows", "--out", out, cwd=ROOT).out
    )


# ---------------------------------------------------------------------- the bad-input corpus

# The bad-input corpus: one file (or folder) per class of mistake. Each declares its expected error on its first
# line (``# expect: CODE LINE:COL``). Every case must exit 1, name the position, print no traceback, and leave an
# existing output tree exactly as it was. A folder case may hold ``_out/``: hand-written files put into that output
# tree before the case is built (for mistakes that need one, like ``output-conflict``).
#
# A mistake that is a warning, not an error, declares ``# expect: warning CODE LINE:COL``: a plain ``build`` reports
# it there and writes the skills (exit 0); ``build --strict`` and ``check --strict`` report it there, exit 1, and
# leave an existing output tree exactly as it was. It must be the case's only unacknowledged warning, so that
# ``--strict`` fails on that code alone.

CORPUS = ROOT / "tests" / "bad_inputs"
CASES = sorted(p for p in CORPUS.iterdir() if not p.name.startswith(".") and (p.suffix == ".yaml" or p.is_dir()))
EXPECT = re.compile(rb"# expect: (?:(warning) )?(\S+)(?: (\d+):(\d+))?")


def _expect(case: Path) -> re.Match[bytes]:
    first = sorted(case.glob("*.yaml"))[0] if case.is_dir() else case
    m = EXPECT.match(first.read_bytes())
    assert m, f"{first} lacks an '# expect:' line"
    return m


def expectation(case: Path) -> tuple[str, int | None, int | None]:
    _warning, code, line, col = _expect(case).groups()
    return code.decode(), int(line) if line else None, int(col) if col else None


def is_warning(case: Path) -> bool:
    """Whether the case expects a warning (``# expect: warning CODE LINE:COL``), which only ``--strict`` refuses."""
    return _expect(case).group(1) is not None


def test_corpus_has_every_class():
    names = {p.stem if p.is_file() else p.name for p in CASES}
    required = {
        "malformed-yaml",
        "duplicate-key",
        "alias",
        "unknown-key",
        "wrong-type",
        "forward-binding",
        "unknown-binding",
        "undeclared-argument",
        "unknown-tool",
        "empty-slug",
        "slug-collision",
        "name-over-64",
        "description-over-1024",
        "non-utf8",
        "nul-byte",
        "crlf-input",
        "resource-step-args",
        "output-conflict",
        "when-unknown-operator",
        "when-multiple-operators",
        "when-missing-operator",
        "when-operator-needs-list",
        "when-bad-on-fail",
        "when-on-fail-without-when",
        "when-forward-binding",
        "when-undeclared-argument",
        "when-bad-field-path",
        "missing-parameter",
        "unknown-parameter",
        "parameter-type",
        "bad-field-path",
        "bad-input-schema",
        "yaml-tag",
        "yaml-tag-collection",
        "bad-number",
        "bad-number-huge-integer",
        "too-deep",
        "control-character",
        "line-break",
        "outside-root",
        "placeholder-description",
        "reserved-name",
        "control-character-bidi",
        "ambiguous-scalar",
        "unstructured-result",
        "misspelled-parameter",
        "near-miss-top-level-key",
        "yaml-syntax-tab",
        "yaml-syntax-colon",
        "yaml-syntax-indentation",
        "yaml-syntax-quote",
        "reserved-metadata-key",
        "compatibility-too-long",
        "empty-field",
        "allowed-tools-ignored",
        "ask-on-required",
        "empty-confirm-message",
        "confirm-undeclared-argument",
        "confirm-on-read-only",
        "dead-condition-json-text",
        "dead-condition-boolean",
        "dead-condition-number",
        "dead-condition-output-schema",
        "bad-workflow-name",
    }
    assert required <= names


@pytest.mark.parametrize(
    "case", [c for c in CASES if expectation(c)[0] != "ok" and not is_warning(c)], ids=lambda p: p.name
)
def test_bad_input_is_refused_with_position_and_nothing_written(case, cli, tmp_path):
    out = tmp_path / "out"
    assert cli("build", str(ROOT / "workflows"), "--out", str(out)).code == 0
    if (case / "_out").is_dir():
        shutil.copytree(case / "_out", out, dirs_exist_ok=True)
    before = snapshot_tree(out)
    code, line, col = expectation(case)
    display = case.relative_to(ROOT).as_posix()
    run = cli("build", display, "--out", str(out), cwd=ROOT)
    assert run.code == 1
    assert f"error[{code}]" in run.err
    target = sorted(case.glob("*.yaml"))[-1].relative_to(ROOT).as_posix() if case.is_dir() else display
    where = f"{target}:{line}:{col}" if line is not None else target  # a problem of the file as a whole
    assert f"{where}: error[{code}]" in run.err, run.err
    assert "Traceback" not in run.err + run.out
    assert snapshot_tree(out) == before
    # check reports the same problem and exits 1 too
    assert cli("check", display, "--out", str(out), cwd=ROOT).code == 1


@pytest.mark.slow
def test_bad_input_in_a_real_process_prints_no_traceback(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "projector.cli", "build", "tests/bad_inputs", "--out", str(tmp_path / "o")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "o").exists()
    # all files' problems come back in one run (a warning case's is not among them: errors stop before projection)
    for case in CASES:
        code, _, _ = expectation(case)
        if code != "ok" and not is_warning(case) and not (case / "_out").is_dir():
            assert f"error[{code}]" in proc.stderr, code


@pytest.mark.parametrize("case", [c for c in CASES if is_warning(c)], ids=lambda p: p.name)
def test_warning_case_is_refused_under_strict_with_position_and_nothing_written(case, cli, tmp_path):
    code, line, col = expectation(case)
    display = case.relative_to(ROOT).as_posix()
    target = sorted(case.glob("*.yaml"))[-1].relative_to(ROOT).as_posix() if case.is_dir() else display
    where = f"{target}:{line}:{col}: warning[{code}]"
    plain = cli("build", display, "--out", str(tmp_path / "plain"), cwd=ROOT)
    assert plain.code == 0, plain.err
    assert where in plain.err, plain.err
    assert plain.err.count("warning[") == 1  # the only warning: --strict below fails on this code alone
    # check: the tree the plain build wrote is up to date, and only --strict fails, on the warning
    assert cli("check", display, "--out", str(tmp_path / "plain"), cwd=ROOT).code == 0
    checked = cli("check", "--strict", display, "--out", str(tmp_path / "plain"), cwd=ROOT)
    assert checked.code == 1 and where in checked.err, checked.err
    # build --strict: refused, and an existing (different) tree is left exactly as it was
    out = tmp_path / "out"
    assert cli("build", str(ROOT / "workflows"), "--out", str(out)).code == 0
    before = snapshot_tree(out)
    strict = cli("build", "--strict", display, "--out", str(out), cwd=ROOT)
    assert strict.code == 1
    assert where in strict.err, strict.err
    assert "Traceback" not in strict.err + strict.out
    assert snapshot_tree(out) == before


def test_crlf_input_is_accepted_and_normalized(cli, tmp_path):
    crlf = CORPUS / "crlf-input.yaml"
    assert b"\r\n" in crlf.read_bytes()
    lf = tmp_path / "lf" / "crlf-input.yaml"
    lf.parent.mkdir()
    lf.write_bytes(crlf.read_bytes().replace(b"\r\n", b"\n"))
    assert cli("build", str(crlf), "--out", str(tmp_path / "a")).code == 0
    assert cli("build", str(lf), "--out", str(tmp_path / "b")).code == 0
    assert snapshot_tree(tmp_path / "a") == snapshot_tree(tmp_path / "b")
    body = (tmp_path / "a" / "crlf-input" / "SKILL.md").read_bytes()
    assert b"\r" not in body and b"Two lines\nof guidance." in body
