"""The bad-input corpus: one file (or folder) per class of mistake. Each declares its expected error on its first
line (``# expect: CODE LINE:COL``). Every case must exit 1, name the position, print no traceback, and leave an
existing output tree exactly as it was. A folder case may hold ``_out/``: hand-written files put into that output
tree before the case is built (for mistakes that need one, like ``output-conflict``).

A mistake that is a warning, not an error, declares ``# expect: warning CODE LINE:COL``: a plain ``build`` reports
it there and writes the skills (exit 0); ``build --strict`` and ``check --strict`` report it there, exit 1, and
leave an existing output tree exactly as it was. It must be the case's only unacknowledged warning, so that
``--strict`` fails on that code alone."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, snapshot_tree

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
    required = {"malformed-yaml", "duplicate-key", "alias", "unknown-key", "wrong-type", "forward-binding",
                "unknown-binding", "undeclared-argument", "unknown-tool", "empty-slug", "slug-collision",
                "name-over-64", "description-over-1024", "non-utf8", "nul-byte", "crlf-input", "resource-step-args",
                "output-conflict",
                "when-unknown-operator", "when-multiple-operators", "when-missing-operator", "when-operator-needs-list",
                "when-bad-on-fail", "when-on-fail-without-when", "when-forward-binding", "when-undeclared-argument",
                "when-bad-field-path",
                "missing-parameter", "unknown-parameter", "parameter-type", "bad-field-path", "bad-input-schema",
                "yaml-tag", "yaml-tag-collection", "bad-number", "bad-number-huge-integer", "too-deep",
                "control-character", "line-break", "outside-root",
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
                "ask-on-required", "empty-confirm-message", "confirm-undeclared-argument", "confirm-on-read-only",
                "dead-condition-json-text", "dead-condition-boolean", "dead-condition-number",
                "bad-workflow-name",
                }
    assert required <= names


@pytest.mark.parametrize("case", [c for c in CASES if expectation(c)[0] != "ok" and not is_warning(c)],
                         ids=lambda p: p.name)
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
    proc = subprocess.run([sys.executable, "-m", "projector.cli", "build", "tests/bad_inputs", "--out",
                           str(tmp_path / "o")], cwd=ROOT, capture_output=True, text=True)
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
