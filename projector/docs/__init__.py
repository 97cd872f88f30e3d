"""``project-skill docs [--check]``: write (or check) the generated pages of the docs site.

Generated pages are plain Markdown committed under ``docs/``, so the site builds with no hooks and no plugins that
write pages (mkdocs and Zensical alike). Each one starts with :data:`HEADER`. Their only inputs are files in the
tree: the workflow JSON Schema, the warning codes of the core, ``generated_skills/`` (its ``skills.json`` and the
files it lists), ``docs/data/matrix.json`` (written by ``project-skill matrix``), ``bench/results.md``, the
README's set-up block, and the extras and the ``slow`` marker of ``pyproject.toml`` with the extras that
``scripts/test`` installs. The same tree always gives the same bytes.

``--check`` writes nothing. It exits 1 and prints a unified diff for every page that is stale, missing, or a
leftover generated page that nothing generates any more.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

from ..disk import write_file
from ..errors import UsageError, plural
from ..exits import EXIT_FINDINGS, EXIT_OK, Shell, run
from .common import HEADER, DocsError
from .pages import generate

__all__ = ["HEADER", "DocsError", "generate", "compare", "write", "main"]


def _generated_on_disk(docs: Path) -> dict[str, Path]:
    """Every Markdown page under ``docs`` that carries the generated header (POSIX path relative to docs)."""
    found: dict[str, Path] = {}
    if not docs.is_dir():
        return found
    for path in sorted(docs.rglob("*.md")):
        try:
            with path.open("rb") as fh:
                head = fh.read(len(HEADER.encode()))
        except OSError:
            continue
        if head == HEADER.encode():
            found[path.relative_to(docs).as_posix()] = path
    return found


def compare(root: Path, pages: dict[str, bytes]) -> tuple[list[str], str]:
    """Problems (one line each) and a unified diff of the committed pages against ``pages``."""
    docs = root / "docs"
    problems: list[str] = []
    diff: list[str] = []
    for rel, data in pages.items():
        path = docs / rel
        try:
            old = path.read_bytes()
        except FileNotFoundError:
            problems.append(f"missing: docs/{rel}")
            old = b""
        if old == data:
            continue
        if path.exists():
            problems.append(f"stale: docs/{rel}")
        diff.extend(
            difflib.unified_diff(
                old.decode("utf-8", "replace").splitlines(keepends=True),
                data.decode("utf-8").splitlines(keepends=True),
                fromfile=f"a/docs/{rel}",
                tofile=f"b/docs/{rel}",
            )
        )
    for rel in sorted(set(_generated_on_disk(docs)) - set(pages)):
        problems.append(f"extra: docs/{rel} (generated, but nothing generates it any more)")
    return problems, "".join(line if line.endswith("\n") else line + "\n" for line in diff)


def write(root: Path, pages: dict[str, bytes]) -> list[str]:
    """Write the pages that changed and delete leftover generated pages. Returns what was touched."""
    docs = root / "docs"
    touched = []
    for rel in sorted(set(_generated_on_disk(docs)) - set(pages)):
        (docs / rel).unlink()
        touched.append(f"removed docs/{rel}")
    for rel, data in pages.items():
        path = docs / rel
        if path.exists() and path.read_bytes() == data:
            continue
        write_file(path, data)
        touched.append(f"wrote docs/{rel}")
    return touched


def main(name: str = "docs", argv: list[str] | None = None) -> int:
    shell = Shell(f"project-skill {name}", lead="error: ")  # a DocsError (or any finding): exit 1
    return run(shell, lambda: _docs(name, list(sys.argv[1:] if argv is None else argv)))


def _docs(name: str, argv: list[str]) -> int:
    ap = argparse.ArgumentParser(
        prog=f"project-skill {name}",
        description="Write the generated pages of the docs site into docs/ (or, with --check, exit 1 with a diff "
        "when a committed page is stale).",
        epilog="exit codes: 0 ok, 1 stale pages or bad inputs, 2 usage",
    )
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 listing stale pages with a diff")
    ap.add_argument("--root", default=".", help="the project tree (default: the current folder)")
    args = ap.parse_args(argv)
    root = Path(args.root)
    if not (root / "docs").is_dir():
        raise UsageError(f"{root.as_posix()}/docs is not a folder; run it from the project tree or pass --root")
    pages = generate(root)
    if args.check:
        problems, diff = compare(root, pages)
        if not problems:
            print(f"docs are up to date: {plural(len(pages), 'generated page')}")
            return EXIT_OK
        sys.stdout.write(diff)
        for line in problems:
            print(line)
        print(f"docs are out of date ({len(problems)} page{'s' * (len(problems) != 1)}); run: project-skill docs")
        return EXIT_FINDINGS
    touched = write(root, pages)
    for line in touched:
        print(line)
    print(f"{'wrote' if touched else 'up to date:'} docs: {plural(len(pages), 'generated page')}")
    return EXIT_OK
