"""Bundles and the index: the SEP-2640 ``skills/list`` entry of each projected skill, and ``skills.json``.

An entry's frontmatter is what the SKILL.md bytes that were rendered say, never taken from the model, so the index
can only say what the file says; it is read by the one frontmatter reader (:mod:`projector.sep2640`), which also owns
the limits, the URIs and the digest. The one shortcut (:func:`reads_back`): when the file's frontmatter block is, to
the byte, the YAML the renderer dumped from a mapping of one-line printable texts, the reader would give that mapping
back, so it is taken as is (tests/test_bundle.py compares the two on the examples and on generated hostile texts).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from .errors import BuildError, Diagnostic, Span, error
from .render import Projection, json_text
from .sep2640 import MAX_BYTES, MAX_FILES, SKILL_FILE, digest, parse_frontmatter, skill_uri
from .sep2640.frontmatter import FRONTMATTER, MAX_FRONTMATTER_DEPTH


@dataclass(frozen=True)
class Bundle:
    """One skill ready to write: its name and path, its files (relative path -> bytes), its SEP-2640 entry and the
    findings of its projection. Small and self-contained, so that build workers can hand it back cheaply."""

    name: str
    path: str
    files: dict[str, bytes]
    entry: dict[str, Any]
    diagnostics: tuple[Diagnostic, ...] = ()
    span: Span = Span()  # where the workflow is: where a problem with the whole bundle is reported
    # evals.json, no file of the bundle: written in the evals tree beside the skills, not in its entry, not served
    # (projector.evals says why)
    evals: bytes = b""

    @cached_property
    def index_text(self) -> str:
        """This bundle's entry as it stands in ``skills.json`` (indented for its place in the array), made once: the
        worker that renders the bundle makes it."""
        return "    " + stable_json(self.entry).decode("utf-8")[:-1].replace("\n", "\n    ")


def _one_line_texts(value: Any, depth: int) -> bool:
    """Whether ``value`` is a mapping, nested at most ``depth`` deep, whose keys and leaves are strings of printable
    characters of the Basic Multilingual Plane (no line break, no control, format or private character, no
    surrogate)."""
    if type(value) is not dict or depth < 1:
        return False
    for k, v in value.items():
        if type(k) is not str or not k.isprintable() or (not k.isascii() and max(k) >= "\U00010000"):
            return False
        if type(v) is str:
            if not v.isprintable() or (not v.isascii() and max(v) >= "\U00010000"):
                return False
        elif not _one_line_texts(v, depth - 1):
            return False
    return True


def reads_back(skill_md: bytes, frontmatter: dict[str, Any], dumped: str) -> bool:
    """Whether :func:`parse_frontmatter` (the YAML 1.1 reading) of ``skill_md`` is ``frontmatter`` itself, known
    without parsing: ``dumped`` is what :func:`projector.render.dump_frontmatter` wrote for ``frontmatter``, and

    - the block the reader finds in ``skill_md`` is ``dumped``, to the byte (:data:`FRONTMATTER`);
    - ``frontmatter`` is a mapping of one-line printable texts (:func:`_one_line_texts`). PyYAML's safe dumper
      writes such a text plain only when the safe loader's own resolver reads it back as that string (else quoted,
      and the frontmatter dumper quotes what YAML 1.2 reads otherwise too), never escaped, folded or tagged, and
      never with an anchor; the keys of a mapping are distinct strings. So the reading is the mapping, in its
      order, and nothing in it is refused (``frontmatter-ambiguous``, ``bad-frontmatter``)."""
    head = b"---\n" + dumped.encode("utf-8") + b"---\n"
    if not skill_md.startswith(head) or not _one_line_texts(frontmatter, MAX_FRONTMATTER_DEPTH):
        return False
    m = FRONTMATTER.match(head.decode("utf-8"))
    return m is not None and m.group(1) + "\n" == dumped


def _copy(value: dict[str, Any]) -> dict[str, Any]:
    return {k: _copy(v) if type(v) is dict else v for k, v in value.items()}


def make_entry(
    path: str, files: dict[str, bytes], frontmatter: tuple[dict[str, Any], str] | None = None
) -> dict[str, Any]:
    """The SEP-2640 entry: uri, frontmatter (what the bytes say), resources (SKILL.md first, then by path).

    ``frontmatter``: the mapping the renderer dumped into SKILL.md and its YAML, taken as the entry's frontmatter
    when SKILL.md's block :func:`reads_back` as it; else the bytes are parsed."""
    order = [SKILL_FILE, *sorted(k for k in files if k != SKILL_FILE)]
    uri = skill_uri(path)
    if frontmatter is not None and reads_back(files[SKILL_FILE], *frontmatter):
        said = _copy(frontmatter[0])
    else:
        # YAML 1.1, PyYAML's reading, as the build wrote it: the build never imports ruamel.yaml, and the two
        # readings of what it writes are the same (projector.sep2640.frontmatter)
        said = parse_frontmatter(files[SKILL_FILE], uri, "1.1")
    return {
        "uri": uri,
        "frontmatter": said,
        "resources": [
            {"uri": skill_uri(path, rel), "digest": digest(files[rel]), "size": len(files[rel])} for rel in order
        ],
    }


def limit_problems(path: str, files: dict[str, bytes], span: Span) -> list[Diagnostic]:
    problems = []
    if len(files) > MAX_FILES:
        problems.append(
            error(
                span,
                "too-many-files",
                f"skill '{path}' has {len(files)} files; SEP-2640 allows {MAX_FILES}, SKILL.md included",
            )
        )
    total = sum(len(b) for b in files.values())
    if total > MAX_BYTES:
        problems.append(
            error(span, "bundle-too-large", f"skill '{path}' is {total} bytes; SEP-2640 allows {MAX_BYTES} (16 MiB)")
        )
    return problems


def bundle(projection: Projection) -> Bundle:
    problems = limit_problems(projection.path, projection.files, projection.workflow.span)
    if problems:
        raise BuildError(problems)
    from .evals import evals_json

    entry = make_entry(projection.path, projection.files, projection.frontmatter)
    evals, uncovered = evals_json(projection.workflow, entry["frontmatter"]["name"])
    b = Bundle(
        projection.name,
        projection.path,
        projection.files,
        entry,
        (*projection.diagnostics, *uncovered),
        projection.workflow.span,
        evals,
    )
    b.index_text  # noqa: B018 - made here, in the worker that rendered the bundle
    return b


def stable_json(value: Any) -> bytes:
    """Stable JSON: fixed separators, keys in construction order, UTF-8, one trailing newline."""
    return (json_text(value, indent=2, sort_keys=False) + "\n").encode("utf-8")


def index(bundles: list[Bundle]) -> bytes:
    """``skills.json``: exactly the ``skills`` array that ``skills/list`` serves, sorted by URI. The same bytes as
    ``stable_json({"skills": [entries]})``, joined from each bundle's :attr:`Bundle.index_text` (the indenting encoder
    is pure Python, and slow)."""
    ordered = sorted(bundles, key=lambda b: b.entry["uri"])
    if not ordered:
        return stable_json({"skills": []})
    return ('{\n  "skills": [\n' + ",\n".join(b.index_text for b in ordered) + "\n  ]\n}\n").encode("utf-8")
