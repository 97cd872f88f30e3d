"""The path checks of the skills tree, pinned: every refusal of a bad ``skills.json`` entry field by field (they kill
the mutants of ``server/skills.py``'s ``_check_rel`` and ``_load_skill``; scripts/mutation)."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import shutil

import pytest

from conftest import GENERATED
from projector.server.errors import AttachError
from projector.server.tree import _check_rel, _load_skill

SKILL = "skill://hello-world/SKILL.md"
TOOLS = "skill://hello-world/references/tools.md"


def r(uri: str, data: bytes = b"x") -> dict:
    return {"uri": uri, "digest": "sha256:" + hashlib.sha256(data).hexdigest(), "size": len(data)}


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
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
    'not an object': ('bad-entry', 'an entry must be an object', None),
    'no uri': ('bad-entry', 'the entry uri None is not skill://<path>/SKILL.md', None),
    'wrong scheme': ('bad-entry', "the entry uri 'file://hello-world/SKILL.md' is not skill://<path>/SKILL.md", None),
    'not SKILL.md': ('bad-entry', "the entry uri 'skill://hello-world/README.md' is not skill://<path>/SKILL.md", None),
    'empty path': ('bad-entry', "the skill path '' in skill:///SKILL.md is not lowercase slug segments", None),
    'bad segment': ('bad-entry',
        "the skill path 'Hello/hello-world' in skill://Hello/hello-world/SKILL.md is not lowercase "
        'slug segments',
        None),
    'segment with newline': ('bad-entry',
        "the skill path 'a\\n/hello-world' in skill://a\\n/hello-world/SKILL.md is not lowercase slug"
        ' segments',
        None),
    'bad name': ('bad-entry',
        "the skill path 'a/x--y' in skill://a/x--y/SKILL.md is not lowercase slug segments",
        None),
    'no resources': ('bad-entry', "skill://hello-world/SKILL.md: 'resources' must be a non-empty array", None),
    'resources not a list': ('bad-entry', "skill://hello-world/SKILL.md: 'resources' must be a non-empty array", None),
    'resource not an object': ('bad-entry', "skill://hello-world/SKILL.md: every resource needs a string 'uri'", None),
    'resource uri not a string': ('bad-entry',
        "skill://hello-world/SKILL.md: every resource needs a string 'uri'",
        None),
    'foreign file': ('foreign-file',
        "skill://hello-world/SKILL.md: the resource 'skill://other/x.md' is not a plain path inside"
        ' the skill (skill://hello-world/...)',
        None),
    'dot segment': ('foreign-file',
        "skill://hello-world/SKILL.md: the resource 'skill://hello-world/./x.md' is not a plain pat"
        'h inside the skill (skill://hello-world/...)',
        None),
    'dotdot segment': ('foreign-file',
        "skill://hello-world/SKILL.md: the resource 'skill://hello-world/../x.md' is not a plain pa"
        'th inside the skill (skill://hello-world/...)',
        None),
    'empty segment': ('foreign-file',
        "skill://hello-world/SKILL.md: the resource 'skill://hello-world/a//x.md' is not a plain pa"
        'th inside the skill (skill://hello-world/...)',
        None),
    'backslash': ('foreign-file',
        "skill://hello-world/SKILL.md: the resource 'skill://hello-world/a\\\\x.md' is not a plain pa"
        'th inside the skill (skill://hello-world/...)',
        None),
    'nul': ('foreign-file',
        "skill://hello-world/SKILL.md: the resource 'skill://hello-world/a\\x00x.md' is not a plain "
        'path inside the skill (skill://hello-world/...)',
        None),
    'percent': ('foreign-file',
        "skill://hello-world/SKILL.md: the resource 'skill://hello-world/a%2fx.md' is not a plain p"
        'ath inside the skill (skill://hello-world/...)',
        None),
    'listed twice': ('bad-entry', 'skill://hello-world/SKILL.md: skill://hello-world/SKILL.md is listed twice', None),
    'missing file': ('missing-file',
        'skill://hello-world/none.md: {root}/hello-world/none.md does not exist inside the tree',
        'rebuild the tree with `project-skill build`'),
    'link outside the root': ('missing-file',
        'skill://hello-world/references/outside.md: {root}/hello-world/references/outside.md does n'
        'ot exist inside the tree',
        'rebuild the tree with `project-skill build`'),
    'link inside the root': ('missing-file',
        'skill://hello-world/references/inside.md: {root}/hello-world/references/inside.md is reached through a '
        'symbolic link, which is not followed',
        'rebuild the tree with `project-skill build`'),
    'under a linked folder': ('missing-file',
        'skill://hello-world/linked/tools.md: {root}/hello-world/linked/tools.md is reached through a symbolic link, '
        'which is not followed',
        'rebuild the tree with `project-skill build`'),
    'a folder': ('missing-file',
        'skill://hello-world/references: cannot read {root}/hello-world/references: it is a folder, not a regular '
        'file',
        'a skill is regular files of at most 16777216 bytes in all (SEP-2640); rebuild the tree with `project-skill '
        'build`'),
    'a FIFO': ('missing-file',
        'skill://hello-world/references/pipe.md: cannot read {root}/hello-world/references/pipe.md: it is a FIFO, '
        'not a regular file',
        'a skill is regular files of at most 16777216 bytes in all (SEP-2640); rebuild the tree with `project-skill '
        'build`'),
    'no SKILL.md': ('bad-entry', 'skill://hello-world/SKILL.md: the entry does not list its own SKILL.md', None),
}


def _refusal(root, entry):
    with pytest.raises(AttachError) as info:
        _load_skill(root, copy.deepcopy(entry), "w")
    (d,) = info.value.diagnostics
    return d


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_every_refusal_in_full(tree, case):
    root, base = tree
    d = _refusal(root, cases(base)[case])
    code, message, hint = EXPECTED[case]
    assert (d.span.file, d.code, d.message, d.hint) == ("w", code, message.replace("{root}", root.as_posix()), hint)


@pytest.mark.parametrize("case, size, digest", [("wrong size", 5, None), ("wrong digest", None, "sha256:" + "0" * 64)])
def test_a_file_that_differs_from_its_manifest_line(tree, case, size, digest):
    root, base = tree
    data = (root / "hello-world/references/tools.md").read_bytes()
    got = "sha256:" + hashlib.sha256(data).hexdigest()
    d = _refusal(root, cases(base)[case])
    assert (d.code, d.message, d.hint) == (
        "digest-mismatch",
        f"{TOOLS}: the file on disk ({len(data)} bytes, {got}) does not match the manifest "
        f"({size or len(data)} bytes, {digest or got}); refusing to serve the tree",
        "rebuild the tree with `project-skill build`, or restore the committed files")


def test_the_honest_entry_loads(tree):
    root, base = tree
    skill = _load_skill(root, copy.deepcopy(base), "w")
    assert [f.rel for f in skill.files] == ["SKILL.md", "references/tools.md"]


def test_no_file_is_read_past_the_sep_limit_of_its_skill(tree, monkeypatch):
    """The files of one skill hold at most 16 MiB together (SEP-2640): each is read with what is left, never more."""
    from projector.server import tree as skills

    root, base = tree
    sizes = [r["size"] for r in base["resources"]]
    limits = []
    real = skills.read_regular
    monkeypatch.setattr(skills, "read_regular", lambda p, limit: limits.append(limit) or real(p, limit))
    monkeypatch.setattr(skills, "MAX_BYTES", sum(sizes))
    _load_skill(root, copy.deepcopy(base), "w")
    assert limits == [sum(sizes), sizes[1]]
    monkeypatch.setattr(skills, "MAX_BYTES", sum(sizes) - 1)
    d = _refusal(root, base)
    assert (d.code, d.message) == ("missing-file", f"{TOOLS}: cannot read {root.as_posix()}/hello-world/references/"
                                   f"tools.md: it is {sizes[1]} bytes, over the limit of {sizes[1] - 1}")


@pytest.mark.parametrize("rel, ok", [("a", True), ("a/b.md", True), ("a b/c~d", True), ("", False), ("a/", False),
                                     ("/a", False), (".", False), ("a/./b", False), ("..", False), ("a/../b", False),
                                     ("a\\b", False), ("a\0b", False), ("a%20b", False), ("...", True),
                                     (".hidden", True)])
def test_check_rel(rel, ok):
    assert _check_rel(rel) is ok


# ------------------------------------------------------------------------------------------------------ SKILL.md

def _one_file_tree(tmp_path, data: bytes, frontmatter=None, path="hello-world"):
    root = tmp_path / "t"
    (root / path).mkdir(parents=True)
    (root / path / "SKILL.md").write_bytes(data)
    uri = f"skill://{path}/SKILL.md"
    entry = {"uri": uri, "frontmatter": frontmatter if frontmatter is not None else {"name": path.rsplit("/", 1)[-1],
                                                                                      "description": "d"},
             "resources": [r(uri, data)]}
    return root.resolve(), entry


@pytest.mark.parametrize("data, frontmatter, code, message, hint", [
    (b"\xff", None, "bad-skill-md", f"{SKILL}: SKILL.md is not UTF-8", None),
    (b"# no frontmatter\n", None, "bad-skill-md", f"{SKILL}: SKILL.md has no '---' frontmatter block", None),
    (b"---\n- a list\n---\n", None, "bad-skill-md", f"{SKILL}: SKILL.md frontmatter is not a mapping", None),
    (b"---\nname: hello-world\ndescription: other\n---\n", None, "frontmatter-mismatch",
     f"{SKILL}: the entry's frontmatter differs from the one in SKILL.md", "rebuild the tree with `project-skill build`"),
    (b"---\nname: other\ndescription: d\n---\n", {"name": "other", "description": "d"}, "bad-skill-md",
     f"{SKILL}: the frontmatter needs name 'hello-world' and a description", None),
    (b"---\nname: hello-world\ndescription: 1\n---\n", {"name": "hello-world", "description": 1}, "bad-skill-md",
     f"{SKILL}: the frontmatter needs name 'hello-world' and a description", None),
    (b"---\nname: hello-world\ndescription: ''\n---\n", {"name": "hello-world", "description": ""}, "bad-skill-md",
     f"{SKILL}: the frontmatter needs name 'hello-world' and a description", None),
])
def test_skill_md_refusals_in_full(tmp_path, data, frontmatter, code, message, hint):
    root, entry = _one_file_tree(tmp_path, data, frontmatter)
    d = _refusal(root, entry)
    assert (d.span.file, d.code, d.message, d.hint) == ("w", code, message, hint)


def test_skill_md_that_is_not_yaml(tmp_path):
    root, entry = _one_file_tree(tmp_path, b"---\nname: [\n---\n")
    d = _refusal(root, entry)
    assert (d.span.file, d.code, d.hint) == ("w", "bad-skill-md", None)
    assert d.message == f"{SKILL}: SKILL.md frontmatter is not valid YAML at frontmatter line 1"


def test_nested_skill_paths_and_names(tmp_path):
    data = b"---\nname: demo\ndescription: d\n---\n"
    root, entry = _one_file_tree(tmp_path, data, path="a/b/demo")
    assert _load_skill(root, entry, "w").uri == "skill://a/b/demo/SKILL.md"
    long = "x" * 65
    d = _refusal(root, {**entry, "uri": f"skill://a/b/{long}/SKILL.md"})
    assert (d.code, d.message) == ("bad-entry", f"the skill name '{long}' breaks the Agent Skills name rule")


@pytest.mark.parametrize("path, device", [("con", "con"), ("a/nul/demo", "nul"), ("com1", "com1")])
def test_a_windows_device_name_in_a_skill_path_is_refused_as_build_refuses_it(tmp_path, path, device):
    data = b"---\nname: demo\ndescription: d\n---\n"
    root, entry = _one_file_tree(tmp_path, data, path="a/b/demo")
    d = _refusal(root, {**entry, "uri": f"skill://{path}/SKILL.md"})
    assert (d.code, d.message) == ("bad-entry", f"the skill path '{path}' in skill://{path}/SKILL.md holds "
                                   f"'{device}', a Windows device name (con, prn, aux, nul, com0-com9, lpt0-lpt9)")


def test_a_file_name_with_a_space(tmp_path):
    root, entry = _one_file_tree(tmp_path, b"---\nname: hello-world\ndescription: d\n---\n")
    (root / "hello-world" / "a b.md").write_bytes(b"x")
    entry["resources"].append(r("skill://hello-world/a b.md"))
    assert _load_skill(root, entry, "w").files[-1].rel == "a b.md"


@pytest.mark.parametrize("name, size, code", [
    ("a#b.md", None, "bad-manifest-uri"),  # a fragment: the client refuses the URI
    ("a?b.md", None, "bad-manifest-uri"),  # a query
    ("ok.md", True, "bad-manifest"),  # a size that is a boolean: True == 1 in Python, not an integer on the wire
])
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
        _load_skill(root.resolve(), entry, "skills.json: skills[0]")
    assert [d.code for d in raised.value.diagnostics] == [code]
