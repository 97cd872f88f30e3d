"""The distribution is `project-skill` (the command's name; `projector` on PyPI is an unrelated package), the import
package stays `projector`, and no page, docstring or message tells a user to install `projector`."""
from __future__ import annotations

import email.parser
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# `pip install projector`, `pip install 'projector[fastmcp]'`, `pip install "projector"`, and any `projector[extra]`
# (an extra of the wrong distribution), but not `projector.server` or a path like `projector/`.
WRONG_INSTALL = re.compile(r"""pip\s+install\s+(?:-\S+\s+)*['"]?projector\b(?![./_-])|\bprojector\[""")


def _texts() -> list[Path]:
    """Every page a user reads and every source file whose strings and docstrings a user sees."""
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    files += sorted(p for p in (ROOT / "projector").rglob("*") if p.suffix in {".py", ".j2", ".json"})
    files += sorted((ROOT / "bench").glob("*.py")) + sorted((ROOT / "scripts").glob("*"))
    files += sorted((ROOT / "tests").rglob("*.py"))
    return [f for f in files if f.is_file() and f != Path(__file__).resolve()]


@pytest.mark.parametrize("text", [
    "pip install projector", "pip install 'projector[fastmcp]'", 'pip install "projector"',
    "pip install -U projector", "needs the projector[fastmcp] extra",
])
def test_the_pattern_catches_the_old_name(text: str) -> None:
    assert WRONG_INSTALL.search(text)


@pytest.mark.parametrize("text", [
    "pip install 'project-skill[fastmcp]'", "pip install project-skill", "from projector.server import attach",
    "pip install -e '.[fastmcp]'", "pip install /path/to/checkout", "projector/templates",
])
def test_the_pattern_spares_the_new_name(text: str) -> None:
    assert not WRONG_INSTALL.search(text)


def test_no_page_docstring_or_message_says_to_install_projector() -> None:
    found = []
    for path in _texts():
        for n, line in enumerate(path.read_text("utf-8", errors="replace").splitlines(), 1):
            if WRONG_INSTALL.search(line):
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert found == [], "these tell users to install the unrelated PyPI package `projector`:\n" + "\n".join(found)


def test_the_distribution_is_named_like_the_command() -> None:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]
    assert meta["name"] == "project-skill"
    assert meta["scripts"] == {"project-skill": "projector.cli:main"}


@pytest.mark.slow
def test_pip_wheel_makes_a_project_skill_wheel_with_the_projector_package(tmp_path: Path) -> None:
    # Built from a copy of what the wheel is made of, so the checkout gets no build/ or egg-info; offline: no build
    # isolation (the dev extra installs setuptools into the venv) and no index.
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "projector", src / "projector",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".projector_cache"))
    out = tmp_path / "wheels"
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", ".", "--no-deps", "--no-build-isolation",
                           "--no-index", "--disable-pip-version-check", "-q", "-w", str(out)],
                          cwd=src, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    wheels = sorted(out.glob("*.whl"))
    assert [w.name.split("-")[0] for w in wheels] == ["project_skill"], wheels
    with zipfile.ZipFile(wheels[0]) as whl:
        names = set(whl.namelist())
        meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        meta = email.parser.Parser().parsestr(whl.read(meta_name).decode("utf-8"))
        entry_points = whl.read(meta_name.replace("METADATA", "entry_points.txt")).decode("utf-8")
    assert meta["Name"] == "project-skill"
    assert "project-skill = projector.cli:main" in entry_points
    for part in ("projector/__init__.py", "projector/cli.py", "projector/server/__init__.py",
                 "projector/remote/__init__.py", "projector/templates/SKILL.md.j2", "projector/templates/tools.md.j2",
                 "projector/schemas/workflow.schema.json", "projector/server/demo.sql", "projector/py.typed"):
        assert part in names, f"{part} is not in {wheels[0].name}"
    assert not any(n.startswith(("tests/", "bench/", "workflows/")) for n in names)


def test_the_test_run_silences_only_the_third_party_warnings_it_names(tmp_path: Path) -> None:
    """pyproject's pytest configuration drops inspect_ai's deprecation warning (13 of them in a green run), by its
    message and module; the same warning from any other module, ours included, is still shown."""
    (tmp_path / "test_w.py").write_text(
        "import warnings\n\n\n"
        "def test_w():\n"
        "    for module in ('inspect_ai.model._retry', 'projector.evals'):\n"
        "        warnings.warn_explicit(\"The 'initial' parameter is deprecated, use 'multiplier' instead\",\n"
        "                               DeprecationWarning, module.replace('.', '/') + '.py', 1, module=module)\n",
        "utf-8",
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path),
         "-p", "no:cacheprovider", "-p", "no:xdist", "-q", str(tmp_path / "test_w.py")],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )
    assert "1 passed, 1 warning" in done.stdout, done.stdout + done.stderr
    assert "projector/evals.py:1: DeprecationWarning" in done.stdout
    assert "inspect_ai/model/_retry.py" not in done.stdout
