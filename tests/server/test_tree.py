"""The loading of a whole skills tree, pinned where the mutation run found it loose (scripts/mutation, target
``skills-paths``): every refusal of the index itself, every problem of its entries in order (one bad entry does not
hide the next, a skill listed twice, a file two skills claim), the root a loaded tree names, and a refusal the
wire's own entry checks raise, in full."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from projector.server.errors import AttachError
from projector.server.tree import SkillTree

NO_INDEX_HINT = "point --skills at a folder written by `project-skill build`"


def _r(uri: str, data: bytes) -> dict:
    return {"uri": uri, "digest": "sha256:" + hashlib.sha256(data).hexdigest(), "size": len(data)}


def _skill(root: Path, path: str, files: dict[str, bytes] | None = None) -> dict:
    """Write the skill ``path`` (its SKILL.md, then ``files`` by path inside it) under ``root``; its index entry."""
    name = path.rsplit("/", 1)[-1]
    skill_md = f"---\nname: {name}\ndescription: d\n---\n".encode()
    resources = []
    for rel, data in {"SKILL.md": skill_md, **(files or {})}.items():
        disk = root / path / rel
        disk.parent.mkdir(parents=True, exist_ok=True)
        disk.write_bytes(data)
        resources.append(_r(f"skill://{path}/{rel}", data))
    return {"uri": f"skill://{path}/SKILL.md", "frontmatter": {"name": name, "description": "d"},
            "resources": resources}


def _index(root: Path, text: str) -> str:
    root.mkdir(parents=True, exist_ok=True)
    (root / "skills.json").write_text(text, "utf-8")
    return (root / "skills.json").as_posix()


def _problems(root: Path) -> list[tuple]:
    with pytest.raises(AttachError) as info:
        SkillTree.load(root)
    return [(d.span.file, d.code, d.message, d.hint) for d in info.value.diagnostics]


def _no_index(root: Path) -> str:
    root.mkdir()
    return (root / "skills.json").as_posix()


def _index_is_a_folder(root: Path) -> str:
    (root / "skills.json").mkdir(parents=True)
    return (root / "skills.json").as_posix()


@pytest.mark.parametrize("make, code, message, hint", [
    (_no_index, "no-index", "cannot read the skills index: No such file or directory", NO_INDEX_HINT),
    (_index_is_a_folder, "no-index", "cannot read the skills index: it is a folder, not a regular file",
     NO_INDEX_HINT),
    (lambda root: _index(root, "{"), "bad-index",
     "the skills index is not valid JSON: not JSON: Expecting property name enclosed in double quotes", None),
    (lambda root: _index(root, "[]"), "bad-index", "the skills index must be an object with a 'skills' array", None),
    (lambda root: _index(root, '{"skills": {}}'), "bad-index",
     "the skills index must be an object with a 'skills' array", None),
    (lambda root: _index(root, '{"skill": []}'), "bad-index",
     "the skills index must be an object with a 'skills' array", None),
], ids=["missing", "a folder", "not JSON", "an array", "skills not an array", "no skills"])
def test_every_refusal_of_the_index_in_full(tmp_path, make, code, message, hint):
    """An index that cannot be read, is not JSON, or is not an object with a ``skills`` array: one diagnostic at the
    index's path, with its code, its reason, and (when it is not there at all) how to get one."""
    where = make(tmp_path / "t")
    assert _problems(tmp_path / "t") == [(where, code, message, hint)]


def test_every_problem_of_the_entries(tmp_path):
    """Every entry is checked, so one refusal names every problem of the tree: a bad entry does not stop the check
    of the next, a skill listed twice is named once at its second listing (and the check goes on), and
    a file that two skills list (skill ``a`` listing ``b/SKILL.md``, the SKILL.md of skill ``a/b``) is named too."""
    root = tmp_path / "t"
    a = _skill(root, "a", {"b/SKILL.md": b"---\nname: b\ndescription: d\n---\n"})
    ab = _skill(root, "a/b")
    c = _skill(root, "c")
    where = _index(root, json.dumps({"skills": ["x", a, a, {"uri": "skill://Bad/SKILL.md"}, ab, c, 1]}))
    assert _problems(root) == [  # sorted, as every refusal's diagnostics are: by place, then code
        (where, "duplicate-file", "skill://a/b/SKILL.md belongs to two skills", None),
        (where, "duplicate-skill", "skill://a/SKILL.md is listed twice", None),
        (f"{where}: skills[0]", "bad-entry", "an entry must be an object", None),
        (f"{where}: skills[3]", "bad-entry", "the skill path 'Bad' in skill://Bad/SKILL.md is not lowercase slug "
                                             "segments", None),
        (f"{where}: skills[6]", "bad-entry", "an entry must be an object", None),
    ]


def test_a_good_tree_loads_every_skill_in_index_order(tmp_path):
    """A tree without problems loads: its skills in index order, every file by URI, and the root it was read from,
    as given (for messages)."""
    root = tmp_path / "t"
    entries = [_skill(root, "z"), _skill(root, "a/b", {"notes.md": b"n"})]
    _index(root, json.dumps({"skills": entries}))
    tree = SkillTree.load(root)
    assert tree.root == root.as_posix()
    assert SkillTree.load(str(root)).root == root.as_posix()
    assert [s.uri for s in tree.skills] == ["skill://z/SKILL.md", "skill://a/b/SKILL.md"]
    assert sorted(tree.files) == ["skill://a/b/SKILL.md", "skill://a/b/notes.md", "skill://z/SKILL.md"]


@pytest.mark.parametrize("rel, size, code, message, hint", [
    ("ok.md", True, "bad-manifest", "resources[1] (skill://hello-world/ok.md) has no valid size",
     "a size is a non-negative integer count of bytes"),
    ("a#b.md", None, "bad-manifest-uri",
     "'skill://hello-world/a#b.md' holds a backslash, a query, a fragment or a control character", None),
])
def test_a_refusal_of_the_wire_entry_checks_in_full(tmp_path, rel, size, code, message, hint):
    """What the wire's own entry and manifest checks refuse (a tree every verifying client refuses), the server
    refuses with their code, message and hint, at the entry's place in the index."""
    root = tmp_path / "t"
    entry = _skill(root, "hello-world", {rel: b"x"})
    if size is not None:
        entry["resources"][1]["size"] = size
    where = _index(root, json.dumps({"skills": [entry]}))
    assert _problems(root) == [(f"{where}: skills[0]", code, message, hint)]


# The served skills tree's SKILL.md and file-path checks, pinned where the mutation run found them loose
# through SkillTree.load: a refusal the frontmatter reader raises keeps its code and its hint,
# and a listed file is read from the folders its URI names, whatever its segments hold.


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
    (root / "skills.json").write_text(json.dumps({"skills": [entry]}), "utf-8")
    return root


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
    root = _tree(tmp_path, skill_md)
    with pytest.raises(AttachError) as info:
        SkillTree.load(root)
    (d,) = info.value.diagnostics
    assert (d.span.file, d.code, d.message, d.hint) == ((root / "skills.json").as_posix() + ": skills[0]", code, message, hint)


@pytest.mark.parametrize("rel", ["notesXX/XXa.md", "a/b/c.md", "XX/XX/x.md"])
def test_a_nested_file_is_read_from_the_folders_its_uri_names(tmp_path, rel):
    """A file's path inside the skill is split at ``/`` only: its folders are the URI's segments, whatever
    letters they hold."""
    data = f"the file {rel}\n".encode()
    root = _tree(tmp_path, b"---\nname: hello-world\ndescription: d\n---\n", {rel: data})
    (skill,) = SkillTree.load(root).skills
    assert [(f.rel, f.data) for f in skill.files[1:]] == [(rel, data)]
