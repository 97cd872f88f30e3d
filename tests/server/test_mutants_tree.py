"""The served skills tree's SKILL.md and file-path checks, pinned where the mutation run found them loose
(scripts/mutation, target ``skills-paths``): a refusal the frontmatter reader raises keeps its code and its hint,
and a listed file is read from the folders its URI names, whatever its segments hold."""

from __future__ import annotations

import hashlib

import pytest

from projector.server.errors import AttachError
from projector.server.tree import _load_skill

SKILL = "skill://hello-world/SKILL.md"

AMBIGUOUS_HINT = ("YAML parsers disagree on such frontmatter (which duplicate wins, what a tag means), so a host "
                  "could show other text than the one verified; a skill's frontmatter is plain YAML")
BREAK_HINT = ("YAML 1.1 readers take it for a line break and YAML 1.2 readers (eemeli/yaml, js-yaml) for text, so "
              "hosts would read different frontmatter; write it as an escape in a double-quoted string "
              "(\"\\u2028\"), or leave it out")


def _r(uri: str, data: bytes) -> dict:
    return {"uri": uri, "digest": "sha256:" + hashlib.sha256(data).hexdigest(), "size": len(data)}


def _tree(tmp_path, skill_md: bytes, files: dict[str, bytes] | None = None):
    """A one-skill tree ``hello-world`` holding SKILL.md and ``files`` (by path inside the skill), and its entry."""
    root = tmp_path / "t"
    (root / "hello-world").mkdir(parents=True)
    (root / "hello-world" / "SKILL.md").write_bytes(skill_md)
    resources = [_r(SKILL, skill_md)]
    for rel, data in (files or {}).items():
        (root / "hello-world" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "hello-world" / rel).write_bytes(data)
        resources.append(_r(f"skill://hello-world/{rel}", data))
    entry = {"uri": SKILL, "frontmatter": {"name": "hello-world", "description": "d"}, "resources": resources}
    return root.resolve(), entry


@pytest.mark.parametrize("skill_md, code, message, hint", [
    (b"---\nname: &n hello-world\ndescription: d\n---\n", "frontmatter-ambiguous",
     f"{SKILL}: SKILL.md frontmatter holds the anchor &n", AMBIGUOUS_HINT),
    (b"---\nname: hello-world\nname: hello-world\ndescription: d\n---\n", "frontmatter-ambiguous",
     f"{SKILL}: SKILL.md frontmatter holds the key 'name' twice", AMBIGUOUS_HINT),
    ("---\nname: hello-world\ndescription: a\u2028b\n---\n".encode(), "frontmatter-ambiguous",
     f"{SKILL}: SKILL.md frontmatter holds U+2028 LINE SEPARATOR at line 3, column 15", BREAK_HINT),
])
def test_a_refusal_of_the_frontmatter_reader_keeps_its_code_and_hint(tmp_path, skill_md, code, message, hint):
    """What the one frontmatter reader refuses, the server refuses with the reader's code (``bad-frontmatter``
    becomes ``bad-skill-md``), the URI before its message, and its hint, which says how to fix the file."""
    root, entry = _tree(tmp_path, skill_md)
    with pytest.raises(AttachError) as info:
        _load_skill(root, entry, "w")
    (d,) = info.value.diagnostics
    assert (d.span.file, d.code, d.message, d.hint) == ("w", code, message, hint)


@pytest.mark.parametrize("rel", ["notesXX/XXa.md", "a/b/c.md", "XX/XX/x.md"])
def test_a_nested_file_is_read_from_the_folders_its_uri_names(tmp_path, rel):
    """A file's path inside the skill is split at ``/`` only: its folders are the URI's segments, whatever
    letters they hold."""
    data = f"the file {rel}\n".encode()
    root, entry = _tree(tmp_path, b"---\nname: hello-world\ndescription: d\n---\n", {rel: data})
    skill = _load_skill(root, entry, "w")
    assert [(f.rel, f.data) for f in skill.files[1:]] == [(rel, data)]
