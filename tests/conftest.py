"""Shared fixtures: the repo root, fixture trees from a {path: text} mapping, and the CLI run in-process."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from projector.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "workflows"
GENERATED = ROOT / "generated_skills"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def make_tree(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8")
    return root


def snapshot_tree(root: Path) -> dict[str, str]:
    """Every file under ``root`` with its sha256: to prove a failed run touched nothing."""
    if not root.exists():
        return {}
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@dataclass
class Run:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(capsys, monkeypatch):
    def run(*args: str, cwd: Path | None = None) -> Run:
        if cwd is not None:
            monkeypatch.chdir(cwd)
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse: --help, --version, usage errors
            code = int(exc.code or 0)
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)

    return run


@pytest.fixture
def tree(tmp_path):
    def build(files: dict[str, str | bytes]) -> Path:
        return make_tree(tmp_path, files)

    return build


@pytest.fixture(autouse=True)
def _stable_env(monkeypatch):
    # Nothing may depend on the locale or the time zone: run every test under unusual ones.
    monkeypatch.setenv("TZ", "Pacific/Kiritimati")
    monkeypatch.setenv("LC_ALL", os.environ.get("LC_ALL", "C.UTF-8"))


@pytest.fixture(autouse=True)
def _disposable_cwd(tmp_path_factory, monkeypatch):
    # scripts/mutation --empty-cwd sets this (for disk.py): a mutant that drops a dir_fd= removes names relative to the
    # working directory, which under mutmut is its own copy of the repository. Such a test runs from an empty folder.
    if os.environ.get("PROJECTOR_MUTATION_DISPOSABLE_CWD"):
        monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))
