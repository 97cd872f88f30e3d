"""Issue 20, the wire's one owner: ``serve`` refuses a tree exactly as ``remote load`` refuses what it serves.

Each hostile tree is the generated one with hello-world's SKILL.md (and its manifest line, digest and size
recomputed) changed by hand. ``serve`` loads the tree from disk (:meth:`SkillTree.load`); the client loads the same
entry and bytes from a server that serves them anyway (:func:`remote_fixtures.serve` builds its tree directly). Both
must refuse with the same code. On the main of before the issue ``serve`` read frontmatter as YAML 1.1 (PyYAML) and
took duplicate keys, anchors and tags, so it served every one of these trees, which every YAML 1.2 client refuses.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from projector.errors import ProjectorError
from projector.server.skills import SkillTree
from remote_fixtures import GENERATED, SCHEME, Served, cli, serve  # noqa: F401 - cli is a fixture

URI = f"{SCHEME}hello-world/SKILL.md"
DESCRIPTION = "Greet someone by name with the server's greeter."

# (what replaces the description line of SKILL.md, the entry's frontmatter fields instead of the description, code)
CASES = {
    # YAML 1.1 reads the file as its entry says, YAML 1.2 does not: frontmatter-mismatch on both sides
    "yes, listed as true": (f"description: {DESCRIPTION}\napproved: yes", {"approved": True}, "frontmatter-mismatch"),
    "on, listed as true": (f"description: {DESCRIPTION}\nenabled: on", {"enabled": True}, "frontmatter-mismatch"),
    "010, listed as 8": (f"description: {DESCRIPTION}\nversion: 010", {"version": 8}, "frontmatter-mismatch"),
    "1:30, listed as 90": (f"description: {DESCRIPTION}\nduration: 1:30", {"duration": 90}, "frontmatter-mismatch"),
    "description: no, listed as false": ("description: no", {"description": False}, "frontmatter-mismatch"),
    # what YAML readers read differently is refused before it is read: frontmatter-ambiguous on both sides
    "a duplicate key": (f"description: {DESCRIPTION}\ndescription: {DESCRIPTION}", {}, "frontmatter-ambiguous"),
    "an anchor and an alias": (f"description: &d {DESCRIPTION}\nsummary: *d", {"summary": DESCRIPTION},
                               "frontmatter-ambiguous"),
    "an explicit tag": (f"description: !!str {DESCRIPTION}", {}, "frontmatter-ambiguous"),
}


def hostile(served_lines: str, fields: dict) -> tuple[bytes, dict]:
    """hello-world's SKILL.md with its description line replaced, and its entry with ``fields`` merged in."""
    data = (GENERATED / "hello-world" / "SKILL.md").read_bytes()
    old = f"description: {DESCRIPTION}\n".encode()
    assert old in data
    data = data.replace(old, served_lines.encode() + b"\n", 1)
    index = json.loads((GENERATED / "skills.json").read_text("utf-8"))
    entry = next(e for e in index["skills"] if e["uri"] == URI)
    entry["frontmatter"] = {**entry["frontmatter"], **fields}
    return data, entry


def tree_on_disk(tmp_path: Path, data: bytes, entry: dict) -> Path:
    root = tmp_path / "tree"
    shutil.copytree(GENERATED, root)
    (root / "hello-world" / "SKILL.md").write_bytes(data)
    index = json.loads((root / "skills.json").read_text("utf-8"))
    for r in entry["resources"]:
        if r["uri"] == URI:
            r["digest"], r["size"] = "sha256:" + hashlib.sha256(data).hexdigest(), len(data)
    index["skills"] = [entry if e["uri"] == URI else e for e in index["skills"]]
    (root / "skills.json").write_text(json.dumps(index, indent=2) + "\n", "utf-8")
    return root


@pytest.mark.parametrize("case", sorted(CASES))
def test_serve_refuses_what_remote_load_refuses(cli, tmp_path, case):
    lines, fields, code = CASES[case]
    data, entry = hostile(lines, fields)
    root = tree_on_disk(tmp_path, data, entry)
    with pytest.raises(ProjectorError) as info:  # AttachError (AttachError on later mains)
        SkillTree.load(root)
    (d,) = info.value.diagnostics
    assert d.code == code and d.message.startswith(f"{URI}: "), d

    def swap(served: Served) -> None:
        e = served.entry("hello-world")
        e["frontmatter"] = entry["frontmatter"]
        served.set_file(URI, data, recompute=True)

    servers, run = cli
    servers["hostile"], _ = serve(mutate=swap)
    rc, out, err = run("remote", "load", "hostile", "hello-world")
    assert rc == 1 and out == "" and f"{URI}: error[{code}]: " in err


def test_a_tree_that_reads_the_same_under_yaml_1_2_is_served_as_remote_load_loads_it(cli, tmp_path):
    """The other way round: ``description: "no"`` quoted, or ``mode: 0o17`` listed as 15 (its YAML 1.2 reading),
    is what every YAML 1.2 client accepts; ``serve`` (which read it as YAML 1.1) refused both on main."""
    for lines, fields in ((f"description: {DESCRIPTION}\nmode: 0o17", {"mode": 15}),
                          ("description: no", {"description": "no"})):
        data, entry = hostile(lines, fields)
        tree = SkillTree.load(tree_on_disk(tmp_path / str(len(fields)) / lines[-2:], data, entry))
        assert tree.skill(URI).frontmatter == entry["frontmatter"]

        def swap(served: Served) -> None:
            served.entry("hello-world")["frontmatter"] = entry["frontmatter"]
            served.set_file(URI, data, recompute=True)

        servers, run = cli
        servers["s"], _ = serve(mutate=swap)
        rc, _, err = run("remote", "load", "s", "hello-world")
        assert rc == 0, err
