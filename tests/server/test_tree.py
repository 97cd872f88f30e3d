"""The loading of a whole skills tree, pinned where the mutation run found it loose (scripts/mutation, target
``skills-paths``): every refusal of the index itself, every problem of its entries in order (one bad entry does not
hide the next, a skill listed twice, a file two skills claim), the root a loaded tree names, and a refusal the
wire's own entry checks raise, in full."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import GENERATED

from projector.server.errors import AttachError
from projector.server.tree import Skill, SkillTree

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
    return {
        "uri": f"skill://{path}/SKILL.md",
        "frontmatter": {"name": name, "description": "d"},
        "resources": resources,
    }


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


@pytest.mark.parametrize(
    "make, code, message, hint",
    [
        (_no_index, "no-index", "cannot read the skills index: No such file or directory", NO_INDEX_HINT),
        (
            _index_is_a_folder,
            "no-index",
            "cannot read the skills index: it is a folder, not a regular file",
            NO_INDEX_HINT,
        ),
        (
            lambda root: _index(root, "{"),
            "bad-index",
            "the skills index is not valid JSON: not JSON: Expecting property name enclosed in double quotes",
            None,
        ),
        (
            lambda root: _index(root, "[]"),
            "bad-index",
            "the skills index must be an object with a 'skills' array",
            None,
        ),
        (
            lambda root: _index(root, '{"skills": {}}'),
            "bad-index",
            "the skills index must be an object with a 'skills' array",
            None,
        ),
        (
            lambda root: _index(root, '{"skill": []}'),
            "bad-index",
            "the skills index must be an object with a 'skills' array",
            None,
        ),
    ],
    ids=["missing", "a folder", "not JSON", "an array", "skills not an array", "no skills"],
)
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
        (
            f"{where}: skills[3]",
            "bad-entry",
            "the skill path 'Bad' in skill://Bad/SKILL.md is not lowercase slug segments",
            None,
        ),
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


@pytest.mark.parametrize(
    "rel, size, code, message, hint",
    [
        (
            "ok.md",
            True,
            "bad-manifest",
            "resources[1] (skill://hello-world/ok.md) has no valid size",
            "a size is a non-negative integer count of bytes",
        ),
        (
            "a#b.md",
            None,
            "bad-manifest-uri",
            "'skill://hello-world/a#b.md' holds a backslash, a query, a fragment or a control character",
            None,
        ),
    ],
)
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

AMBIGUOUS_HINT = (
    "YAML parsers disagree on such frontmatter (which duplicate wins, what a tag means), so a host "
    "could show other text than the one verified; a skill's frontmatter is plain YAML"
)
BREAK_HINT = (
    "YAML 1.1 readers take it for a line break and YAML 1.2 readers (eemeli/yaml, js-yaml) for text, so "
    "hosts would read different frontmatter; write it as an escape in a double-quoted string "
    '("\\u2028"), or leave it out'
)


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


@pytest.mark.parametrize(
    "skill_md, code, message, hint",
    [
        (
            b"---\nname: &n hello-world\ndescription: d\n---\n",
            "frontmatter-ambiguous",
            f"{SKILL}: SKILL.md frontmatter holds the anchor &n",
            AMBIGUOUS_HINT,
        ),
        (
            b"---\nname: hello-world\nname: hello-world\ndescription: d\n---\n",
            "frontmatter-ambiguous",
            f"{SKILL}: SKILL.md frontmatter holds the key 'name' twice",
            AMBIGUOUS_HINT,
        ),
        (
            "---\nname: hello-world\ndescription: a\u2028b\n---\n".encode(),
            "frontmatter-ambiguous",
            f"{SKILL}: SKILL.md frontmatter holds U+2028 LINE SEPARATOR at line 3, column 15",
            BREAK_HINT,
        ),
    ],
)
def test_a_refusal_of_the_frontmatter_reader_keeps_its_code_and_hint(tmp_path, skill_md, code, message, hint):
    """What the one frontmatter reader refuses, the server refuses with the reader's code (``bad-frontmatter``
    becomes ``bad-skill-md``), the URI before its message, and its hint, which says how to fix the file."""
    root = _tree(tmp_path, skill_md)
    with pytest.raises(AttachError) as info:
        SkillTree.load(root)
    (d,) = info.value.diagnostics
    assert (d.span.file, d.code, d.message, d.hint) == (
        (root / "skills.json").as_posix() + ": skills[0]",
        code,
        message,
        hint,
    )


@pytest.mark.parametrize("rel", ["notesXX/XXa.md", "a/b/c.md", "XX/XX/x.md"])
def test_a_nested_file_is_read_from_the_folders_its_uri_names(tmp_path, rel):
    """A file's path inside the skill is split at ``/`` only: its folders are the URI's segments, whatever
    letters they hold."""
    data = f"the file {rel}\n".encode()
    root = _tree(tmp_path, b"---\nname: hello-world\ndescription: d\n---\n", {rel: data})
    (skill,) = SkillTree.load(root).skills
    assert [(f.rel, f.data) for f in skill.files[1:]] == [(rel, data)]


# ---------------------------------------------------------------------- one entry's paths and files

# Every refusal of a bad ``skills.json`` entry, field by field, as ``SkillTree.load`` (what ``serve`` calls) says it.

TOOLS = "skill://hello-world/references/tools.md"


def r(uri: str, data: bytes = b"x") -> dict:
    return {"uri": uri, "digest": "sha256:" + hashlib.sha256(data).hexdigest(), "size": len(data)}


@pytest.fixture(scope="module")
def served_tree(tmp_path_factory):
    base = tmp_path_factory.mktemp("skills")
    root = base / "tree"
    shutil.copytree(GENERATED, root)
    (root / "inside.md").write_text("x")
    os.symlink("../../inside.md", root / "hello-world/references/inside.md")
    (base / "outside.md").write_text("x")
    os.symlink(base / "outside.md", root / "hello-world/references/outside.md")
    os.symlink("references", root / "hello-world/linked")  # a folder reached through a link, inside the root
    os.mkfifo(root / "hello-world/references/pipe.md")
    entry = next(e for e in json.loads((root / "skills.json").read_text("utf-8"))["skills"] if e["uri"] == SKILL)
    return root.resolve(), entry


def cases(base: dict) -> dict:
    res = base["resources"]
    return {
        "not an object": "x",
        "no uri": {},
        "wrong scheme": {**base, "uri": "file://hello-world/SKILL.md"},
        "not SKILL.md": {**base, "uri": "skill://hello-world/README.md"},
        "empty path": {**base, "uri": "skill:///SKILL.md"},
        "bad segment": {**base, "uri": "skill://Hello/hello-world/SKILL.md"},
        "segment with newline": {**base, "uri": "skill://a\n/hello-world/SKILL.md"},
        "bad name": {**base, "uri": "skill://a/x--y/SKILL.md"},
        "no resources": {**base, "resources": []},
        "resources not a list": {**base, "resources": "dynamic"},
        "resource not an object": {**base, "resources": [*res, "x"]},
        "resource uri not a string": {**base, "resources": [*res, {"uri": 1}]},
        "foreign file": {**base, "resources": [*res, r("skill://other/x.md")]},
        "dot segment": {**base, "resources": [*res, r("skill://hello-world/./x.md")]},
        "dotdot segment": {**base, "resources": [*res, r("skill://hello-world/../x.md")]},
        "empty segment": {**base, "resources": [*res, r("skill://hello-world/a//x.md")]},
        "backslash": {**base, "resources": [*res, r("skill://hello-world/a\\x.md")]},
        "nul": {**base, "resources": [*res, r("skill://hello-world/a\0x.md")]},
        "percent": {**base, "resources": [*res, r("skill://hello-world/a%2fx.md")]},
        "listed twice": {**base, "resources": [*res, res[0]]},
        "missing file": {**base, "resources": [*res, r("skill://hello-world/none.md")]},
        "link outside the root": {**base, "resources": [*res, r("skill://hello-world/references/outside.md")]},
        "link inside the root": {**base, "resources": [*res, r("skill://hello-world/references/inside.md")]},
        "under a linked folder": {**base, "resources": [*res, r("skill://hello-world/linked/tools.md")]},
        "a FIFO": {**base, "resources": [*res, r("skill://hello-world/references/pipe.md")]},
        "a folder": {**base, "resources": [*res, r("skill://hello-world/references")]},
        "wrong size": {**base, "resources": [res[0], {**res[1], "size": 5}]},
        "wrong digest": {**base, "resources": [res[0], {**res[1], "digest": "sha256:" + "0" * 64}]},
        "no SKILL.md": {**base, "resources": res[1:]},
    }


EXPECTED = {
    "not an object": ("bad-entry", "an entry must be an object", None),
    "no uri": ("bad-entry", "the entry uri None is not skill://<path>/SKILL.md", None),
    "wrong scheme": ("bad-entry", "the entry uri 'file://hello-world/SKILL.md' is not skill://<path>/SKILL.md", None),
    "not SKILL.md": ("bad-entry", "the entry uri 'skill://hello-world/README.md' is not skill://<path>/SKILL.md", None),
    "empty path": ("bad-entry", "the skill path '' in skill:///SKILL.md is not lowercase slug segments", None),
    "bad segment": (
        "bad-entry",
        "the skill path 'Hello/hello-world' in skill://Hello/hello-world/SKILL.md is not lowercase slug segments",
        None,
    ),
    "segment with newline": (
        "bad-entry",
        "the skill path 'a\\n/hello-world' in skill://a\\n/hello-world/SKILL.md is not lowercase slug segments",
        None,
    ),
    "bad name": (
        "bad-entry",
        "the skill path 'a/x--y' in skill://a/x--y/SKILL.md is not lowercase slug segments",
        None,
    ),
    "no resources": ("bad-entry", "skill://hello-world/SKILL.md: 'resources' must be a non-empty array", None),
    "resources not a list": ("bad-entry", "skill://hello-world/SKILL.md: 'resources' must be a non-empty array", None),
    "resource not an object": ("bad-entry", "skill://hello-world/SKILL.md: every resource needs a string 'uri'", None),
    "resource uri not a string": (
        "bad-entry",
        "skill://hello-world/SKILL.md: every resource needs a string 'uri'",
        None,
    ),
    "foreign file": (
        "foreign-file",
        "skill://hello-world/SKILL.md: the resource 'skill://other/x.md' is not a plain path inside"
        " the skill (skill://hello-world/...)",
        None,
    ),
    "dot segment": (
        "foreign-file",
        "skill://hello-world/SKILL.md: the resource 'skill://hello-world/./x.md' is not a plain pat"
        "h inside the skill (skill://hello-world/...)",
        None,
    ),
    "dotdot segment": (
        "foreign-file",
        "skill://hello-world/SKILL.md: the resource 'skill://hello-world/../x.md' is not a plain pa"
        "th inside the skill (skill://hello-world/...)",
        None,
    ),
    "empty segment": (
        "foreign-file",
        "skill://hello-world/SKILL.md: the resource 'skill://hello-world/a//x.md' is not a plain pa"
        "th inside the skill (skill://hello-world/...)",
        None,
    ),
    "backslash": (
        "foreign-file",
        "skill://hello-world/SKILL.md: the resource 'skill://hello-world/a\\\\x.md' is not a plain pa"
        "th inside the skill (skill://hello-world/...)",
        None,
    ),
    "nul": (
        "foreign-file",
        "skill://hello-world/SKILL.md: the resource 'skill://hello-world/a\\x00x.md' is not a plain "
        "path inside the skill (skill://hello-world/...)",
        None,
    ),
    "percent": (
        "foreign-file",
        "skill://hello-world/SKILL.md: the resource 'skill://hello-world/a%2fx.md' is not a plain p"
        "ath inside the skill (skill://hello-world/...)",
        None,
    ),
    "listed twice": ("bad-entry", "skill://hello-world/SKILL.md: skill://hello-world/SKILL.md is listed twice", None),
    "missing file": (
        "missing-file",
        "skill://hello-world/none.md: {root}/hello-world/none.md does not exist inside the tree",
        "rebuild the tree with `project-skill build`",
    ),
    "link outside the root": (
        "missing-file",
        "skill://hello-world/references/outside.md: {root}/hello-world/references/outside.md does n"
        "ot exist inside the tree",
        "rebuild the tree with `project-skill build`",
    ),
    "link inside the root": (
        "missing-file",
        "skill://hello-world/references/inside.md: {root}/hello-world/references/inside.md is reached through a "
        "symbolic link, which is not followed",
        "rebuild the tree with `project-skill build`",
    ),
    "under a linked folder": (
        "missing-file",
        "skill://hello-world/linked/tools.md: {root}/hello-world/linked/tools.md is reached through a symbolic link, "
        "which is not followed",
        "rebuild the tree with `project-skill build`",
    ),
    "a folder": (
        "missing-file",
        "skill://hello-world/references: cannot read {root}/hello-world/references: it is a folder, not a regular file",
        "a skill is regular files of at most 16777216 bytes in all (SEP-2640); rebuild the tree with `project-skill "
        "build`",
    ),
    "a FIFO": (
        "missing-file",
        "skill://hello-world/references/pipe.md: cannot read {root}/hello-world/references/pipe.md: it is a FIFO, "
        "not a regular file",
        "a skill is regular files of at most 16777216 bytes in all (SEP-2640); rebuild the tree with `project-skill "
        "build`",
    ),
    "no SKILL.md": ("bad-entry", "skill://hello-world/SKILL.md: the entry does not list its own SKILL.md", None),
}


def _load(root: Path, entry) -> Skill:
    """The tree at ``root`` with ``entry`` as its one skill, loaded as ``serve`` loads it."""
    (root / "skills.json").write_text(json.dumps({"skills": [copy.deepcopy(entry)]}), "utf-8")
    (skill,) = SkillTree.load(root).skills
    return skill


def _where(root: Path) -> str:
    return f"{root.as_posix()}/skills.json: skills[0]"


def _refusal(root, entry):
    with pytest.raises(AttachError) as info:
        _load(root, entry)
    (d,) = info.value.diagnostics
    return d


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_every_refusal_in_full(served_tree, case):
    root, base = served_tree
    d = _refusal(root, cases(base)[case])
    code, message, hint = EXPECTED[case]
    assert (d.span.file, d.code, d.message, d.hint) == (
        _where(root),
        code,
        message.replace("{root}", root.as_posix()),
        hint,
    )


@pytest.mark.parametrize("case, size, digest", [("wrong size", 5, None), ("wrong digest", None, "sha256:" + "0" * 64)])
def test_a_file_that_differs_from_its_manifest_line(served_tree, case, size, digest):
    root, base = served_tree
    data = (root / "hello-world/references/tools.md").read_bytes()
    got = "sha256:" + hashlib.sha256(data).hexdigest()
    d = _refusal(root, cases(base)[case])
    assert (d.code, d.message, d.hint) == (
        "digest-mismatch",
        f"{TOOLS}: the file on disk ({len(data)} bytes, {got}) does not match the manifest "
        f"({size or len(data)} bytes, {digest or got}); refusing to serve the tree",
        "rebuild the tree with `project-skill build`, or restore the committed files",
    )


def test_the_honest_entry_loads(served_tree):
    root, base = served_tree
    skill = _load(root, base)
    assert [f.rel for f in skill.files] == ["SKILL.md", "references/tools.md"]


def test_no_file_is_read_past_the_sep_limit_of_its_skill(served_tree, monkeypatch):
    """The files of one skill hold at most 16 MiB together (SEP-2640): each is read with what is left, never more."""
    from projector.server import tree as skills

    root, base = served_tree
    sizes = [r["size"] for r in base["resources"]]
    limits = []
    real = skills.read_regular
    monkeypatch.setattr(skills, "read_regular", lambda p, limit: limits.append(limit) or real(p, limit))
    monkeypatch.setattr(skills, "MAX_BYTES", sum(sizes))
    _load(root, base)
    assert limits[1:] == [sum(sizes), sizes[1]]  # after the index's own read
    monkeypatch.setattr(skills, "MAX_BYTES", sum(sizes) - 1)
    d = _refusal(root, base)
    assert (d.code, d.message) == (
        "missing-file",
        f"{TOOLS}: cannot read {root.as_posix()}/hello-world/references/"
        f"tools.md: it is {sizes[1]} bytes, over the limit of {sizes[1] - 1}",
    )


# ------------------------------------------------------------------------------------------------------ SKILL.md


def _one_file_tree(tmp_path, data: bytes, frontmatter=None, path="hello-world"):
    root = tmp_path / "t"
    (root / path).mkdir(parents=True)
    (root / path / "SKILL.md").write_bytes(data)
    uri = f"skill://{path}/SKILL.md"
    entry = {
        "uri": uri,
        "frontmatter": frontmatter
        if frontmatter is not None
        else {"name": path.rsplit("/", 1)[-1], "description": "d"},
        "resources": [r(uri, data)],
    }
    return root.resolve(), entry


@pytest.mark.parametrize(
    "data, frontmatter, code, message, hint",
    [
        (b"\xff", None, "bad-skill-md", f"{SKILL}: SKILL.md is not UTF-8", None),
        (b"# no frontmatter\n", None, "bad-skill-md", f"{SKILL}: SKILL.md has no '---' frontmatter block", None),
        (b"---\n- a list\n---\n", None, "bad-skill-md", f"{SKILL}: SKILL.md frontmatter is not a mapping", None),
        (
            b"---\nname: hello-world\ndescription: other\n---\n",
            None,
            "frontmatter-mismatch",
            f"{SKILL}: the entry's frontmatter differs from the one in SKILL.md",
            "rebuild the tree with `project-skill build`",
        ),
        (
            b"---\nname: other\ndescription: d\n---\n",
            {"name": "other", "description": "d"},
            "bad-skill-md",
            f"{SKILL}: the frontmatter needs name 'hello-world' and a description",
            None,
        ),
        (
            b"---\nname: hello-world\ndescription: 1\n---\n",
            {"name": "hello-world", "description": 1},
            "bad-skill-md",
            f"{SKILL}: the frontmatter needs name 'hello-world' and a description",
            None,
        ),
        (
            b"---\nname: hello-world\ndescription: ''\n---\n",
            {"name": "hello-world", "description": ""},
            "bad-skill-md",
            f"{SKILL}: the frontmatter needs name 'hello-world' and a description",
            None,
        ),
    ],
)
def test_skill_md_refusals_in_full(tmp_path, data, frontmatter, code, message, hint):
    root, entry = _one_file_tree(tmp_path, data, frontmatter)
    d = _refusal(root, entry)
    assert (d.span.file, d.code, d.message, d.hint) == (_where(root), code, message, hint)


def test_skill_md_that_is_not_yaml(tmp_path):
    root, entry = _one_file_tree(tmp_path, b"---\nname: [\n---\n")
    d = _refusal(root, entry)
    assert (d.span.file, d.code, d.hint) == (_where(root), "bad-skill-md", None)
    assert d.message == f"{SKILL}: SKILL.md frontmatter is not valid YAML at frontmatter line 1"


def test_nested_skill_paths_and_names(tmp_path):
    data = b"---\nname: demo\ndescription: d\n---\n"
    root, entry = _one_file_tree(tmp_path, data, path="a/b/demo")
    assert _load(root, entry).uri == "skill://a/b/demo/SKILL.md"
    long = "x" * 65
    d = _refusal(root, {**entry, "uri": f"skill://a/b/{long}/SKILL.md"})
    assert (d.code, d.message) == ("bad-entry", f"the skill name '{long}' breaks the Agent Skills name rule")


@pytest.mark.parametrize("path, device", [("con", "con"), ("a/nul/demo", "nul"), ("com1", "com1")])
def test_a_windows_device_name_in_a_skill_path_is_refused_as_build_refuses_it(tmp_path, path, device):
    data = b"---\nname: demo\ndescription: d\n---\n"
    root, entry = _one_file_tree(tmp_path, data, path="a/b/demo")
    d = _refusal(root, {**entry, "uri": f"skill://{path}/SKILL.md"})
    assert (d.code, d.message) == (
        "bad-entry",
        f"the skill path '{path}' in skill://{path}/SKILL.md holds "
        f"'{device}', a Windows device name (con, prn, aux, nul, com0-com9, lpt0-lpt9)",
    )


@pytest.mark.parametrize("name", ["a b.md", "c~d.md", "...", ".hidden"])
def test_a_file_name_with_a_space_a_tilde_or_leading_dots_is_served(tmp_path, name):
    root, entry = _one_file_tree(tmp_path, b"---\nname: hello-world\ndescription: d\n---\n")
    (root / "hello-world" / name).write_bytes(b"x")
    entry["resources"].append(r(f"skill://hello-world/{name}"))
    assert _load(root, entry).files[-1].rel == name


@pytest.mark.parametrize(
    "name, size, code",
    [
        ("a#b.md", None, "bad-manifest-uri"),  # a fragment: the client refuses the URI
        ("a?b.md", None, "bad-manifest-uri"),  # a query
        ("ok.md", True, "bad-manifest"),  # a size that is a boolean: True == 1 in Python, not an integer on the wire
    ],
)
def test_the_server_refuses_an_entry_the_client_would_refuse(tmp_path, name, size, code):
    """The wire's own entry and manifest checks run on the server too (issue 20): a tree every verifying client
    refuses is not served. Before, these loaded and were served."""
    root = tmp_path / "tree"
    shutil.copytree(GENERATED / "hello-world", root / "hello-world")
    (root / "hello-world" / "references" / name).write_bytes(b"x")
    entry = json.loads((GENERATED / "skills.json").read_text("utf-8"))["skills"]
    entry = copy.deepcopy(next(e for e in entry if e["uri"] == SKILL))
    extra = r(f"skill://hello-world/references/{name}")
    if size is not None:
        extra["size"] = size
    entry["resources"].append(extra)
    with pytest.raises(AttachError) as raised:
        _load(root.resolve(), entry)
    assert [d.code for d in raised.value.diagnostics] == [code]
