"""``--out``: verified bundles land at the path their URI names, every segment checked, staged then swapped."""

from __future__ import annotations

from pathlib import Path

import pytest

from projector import exits
from projector.remote.client import LoadedSkill
from projector.remote.errors import OutputError
from projector.remote.output import STAGE_PREFIX, write_bundles
from projector.sep2640 import digest as sha256, parse_entry


def skill(uri: str, files: dict[str, bytes]) -> LoadedSkill:
    root = uri[: -len("/SKILL.md")]
    entry = parse_entry({"uri": uri, "frontmatter": {"name": root.rsplit("/", 1)[-1], "description": "d"},
                         "resources": [{"uri": f"{root}/{rel}", "digest": sha256(b), "size": len(b)}
                                       for rel, b in files.items()]})
    return LoadedSkill(entry, {f"{root}/{rel}": b for rel, b in files.items()}, {})


def tree(root: Path, index: bool = False) -> dict[str, bytes]:
    """The files under ``root``; the index (skills.json) only when ``index``."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and (index or p.relative_to(root).as_posix() != "skills.json")}


def test_prefixed_and_encoded_paths(tmp_path):
    a = skill("skill://acme/billing/refunds/SKILL.md", {"SKILL.md": b"a", "references/my%20notes.md": b"n"})
    b = skill("skill://hello/SKILL.md", {"SKILL.md": b"h"})
    assert write_bundles(tmp_path, [b, a]) == ["acme/billing/refunds", "hello"]
    assert tree(tmp_path) == {"acme/billing/refunds/SKILL.md": b"a",
                              "acme/billing/refunds/references/my notes.md": b"n", "hello/SKILL.md": b"h"}
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(STAGE_PREFIX)]


def test_a_skill_folder_it_wrote_is_replaced_whole_and_others_kept(tmp_path):
    """As build does: a folder the previous skills.json lists is the tool's, and replaced whole."""
    write_bundles(tmp_path, [skill("skill://hello/SKILL.md", {"SKILL.md": b"old"})])
    (tmp_path / "hello" / "old.md").write_bytes(b"old")
    (tmp_path / "keep").mkdir()
    (tmp_path / "keep" / "SKILL.md").write_bytes(b"k")
    write_bundles(tmp_path, [skill("skill://hello/SKILL.md", {"SKILL.md": b"new"})])
    assert tree(tmp_path) == {"hello/SKILL.md": b"new", "keep/SKILL.md": b"k"}


@pytest.mark.parametrize("uris", [
    ["skill://a/SKILL.md", "skill://a/b/SKILL.md"],  # one skill folder inside another
])
def test_overlapping_skill_folders_refused(tmp_path, uris):
    with pytest.raises(OutputError) as info:
        write_bundles(tmp_path / "o", [skill(u, {"SKILL.md": b"x"}) for u in uris])
    assert info.value.code == "overlapping-skills" and not (tmp_path / "o").exists()


@pytest.mark.parametrize("uri", ["skill://a/%2e%2e/SKILL.md", "skill://%2E/SKILL.md", "skill://a%2fb/SKILL.md",
                                 "skill://a%5cb/SKILL.md", f"skill://{STAGE_PREFIX}x/SKILL.md"])
def test_bad_segments_refused_even_after_verification(tmp_path, uri):
    s = LoadedSkill(parse_entry({"uri": uri, "frontmatter": {}, "resources": "dynamic"}), {uri: b"x"}, {}, False)
    with pytest.raises(OutputError) as info:
        write_bundles(tmp_path / "o", [s])
    assert info.value.code == "bad-output-path" and not (tmp_path / "o").exists()


def test_a_file_where_a_folder_should_be_is_refused(tmp_path):
    (tmp_path / "acme").write_bytes(b"not a folder")
    with pytest.raises(OutputError):
        write_bundles(tmp_path, [skill("skill://acme/x/SKILL.md", {"SKILL.md": b"x"})])
    assert (tmp_path / "acme").read_bytes() == b"not a folder"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(STAGE_PREFIX)]


def test_out_naming_a_file_is_a_usage_error_and_a_symlink_is_followed(tmp_path):
    from projector.errors import UsageError

    (tmp_path / "file").write_bytes(b"precious")
    with pytest.raises(UsageError) as info:
        write_bundles(tmp_path / "file", [skill("skill://hello/SKILL.md", {"SKILL.md": b"h"})])
    assert exits.exit_code(info.value) == 2 and (tmp_path / "file").read_bytes() == b"precious"
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "mine.txt").write_bytes(b"mine")
    (tmp_path / "link").symlink_to("real")
    write_bundles(tmp_path / "link", [skill("skill://hello/SKILL.md", {"SKILL.md": b"h"})])
    assert (tmp_path / "link").is_symlink()
    assert tree(tmp_path / "real") == {"hello/SKILL.md": b"h", "mine.txt": b"mine"}


def test_a_failure_while_staging_writes_nothing_at_all(tmp_path, monkeypatch):
    """All or nothing for the whole set: main swapped skill folders in one by one, and a kill between two left a mix."""
    from projector import disk
    from projector.errors import DiskError

    out = tmp_path / "out"
    write_bundles(out, [skill(f"skill://s{i}/SKILL.md", {"SKILL.md": b"old"}) for i in range(5)])
    before = tree(out)
    real_write = disk._write

    def full_disk(path, data):
        if "s3" in str(path):
            raise OSError(28, "No space left on device", str(path))
        real_write(path, data)

    monkeypatch.setattr(disk, "_write", full_disk)
    with pytest.raises(DiskError) as info:
        write_bundles(out, [skill(f"skill://s{i}/SKILL.md", {"SKILL.md": b"new"}) for i in range(5)])
    assert info.value.diagnostics[0].code == "io"
    assert tree(out) == before and sorted(p.name for p in tmp_path.iterdir()) == ["out"]


# ------------------------------------------------------------------ what the index claims is not proof (issue 29)

def _claim(out: Path, folder: str, skill_md: bytes) -> None:
    """Add an entry for ``folder`` to out/skills.json, as a hand edit (or a hostile one) would."""
    import json

    index = json.loads((out / "skills.json").read_text("utf-8"))
    index["skills"].append({"uri": f"skill://{folder}/SKILL.md", "frontmatter": {"name": folder, "description": "d"},
                            "resources": [{"uri": f"skill://{folder}/SKILL.md", "digest": sha256(skill_md),
                                           "size": len(skill_md)}]})
    (out / "skills.json").write_text(json.dumps(index), "utf-8")


def test_an_entry_added_to_the_index_does_not_give_a_users_folder_to_the_load(tmp_path):
    """--out replaces a skill folder only when it can prove it wrote it (a SKILL.md, and a file as the index records
    it): a folder of the user's that an edited index lists is a conflict, named, and nothing is written; a load of
    other skills leaves it alone and does not carry the claim on."""
    write_bundles(tmp_path, [skill("skill://hello/SKILL.md", {"SKILL.md": b"h"})])
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "SKILL.md").write_bytes(b"my own skill")
    (tmp_path / "notes" / "todo.md").write_bytes(b"mine")
    _claim(tmp_path, "notes", b"what a load wrote, once")
    before = tree(tmp_path, index=True)
    with pytest.raises(OutputError) as info:
        write_bundles(tmp_path, [skill("skill://notes/SKILL.md", {"SKILL.md": b"theirs"})])
    assert info.value.code == "output-conflict" and "notes" in str(info.value)
    assert tree(tmp_path, index=True) == before
    write_bundles(tmp_path, [skill("skill://other/SKILL.md", {"SKILL.md": b"o"})])
    assert tree(tmp_path) == {"hello/SKILL.md": b"h", "notes/SKILL.md": b"my own skill", "notes/todo.md": b"mine",
                              "other/SKILL.md": b"o"}
    assert "skill://notes/" not in (tmp_path / "skills.json").read_text("utf-8")


def test_a_folder_without_a_skill_md_is_never_the_loads(tmp_path):
    """Even when the index records the size and digest of the user's own file in it."""
    import json

    write_bundles(tmp_path, [skill("skill://hello/SKILL.md", {"SKILL.md": b"h"})])
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.md").write_bytes(b"mine")
    index = json.loads((tmp_path / "skills.json").read_text("utf-8"))
    index["skills"].append({"uri": "skill://notes/SKILL.md", "frontmatter": {"name": "notes", "description": "d"},
                            "resources": [{"uri": "skill://notes/todo.md", "digest": sha256(b"mine"), "size": 4}]})
    (tmp_path / "skills.json").write_text(json.dumps(index), "utf-8")
    with pytest.raises(OutputError) as info:
        write_bundles(tmp_path, [skill("skill://notes/SKILL.md", {"SKILL.md": b"theirs"})])
    assert info.value.code == "output-conflict" and "holds no SKILL.md" in str(info.value)
    assert (tmp_path / "notes" / "todo.md").read_bytes() == b"mine"


def test_a_folder_a_load_wrote_is_still_replaced_after_a_hand_edit(tmp_path):
    write_bundles(tmp_path, [skill("skill://hello/SKILL.md", {"SKILL.md": b"h", "a.md": b"a"})])
    (tmp_path / "hello" / "SKILL.md").write_bytes(b"edited")  # a.md is still as recorded: the folder is the tool's
    write_bundles(tmp_path, [skill("skill://hello/SKILL.md", {"SKILL.md": b"new"})])
    assert tree(tmp_path) == {"hello/SKILL.md": b"new"}


# ---------------------------------------------------------- what the client writes, the server serves (issue 29)

@pytest.mark.slow
@pytest.mark.parametrize("framework", ["mcp", "fastmcp"])
def test_a_tree_loaded_from_a_peer_that_percent_encodes_file_names_is_served(tmp_path, framework):
    """FastMCP's skills provider lists ``my notes.md`` as ``skill://notes-skill/my%20notes.md``; ``remote load
    --out`` verifies it and writes ``my notes.md``, with the URI as served in skills.json. ``serve --skills`` on that
    tree serves it (it refused it as ``foreign-file``), and a verifying client loads the same bytes back from it."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    published = tmp_path / "published" / "notes-skill"
    published.mkdir(parents=True)
    (published / "SKILL.md").write_bytes(b"---\nname: notes-skill\ndescription: A skill with a spaced name.\n---\n\n"
                                         b"# Notes\n\nRead my notes.md.\n")
    (published / "my notes.md").write_bytes(b"hello notes\n")

    def load(server: str, out: Path) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "projector.cli", "remote", "load", server, "--all", "--out",
                               str(out)], cwd=root, capture_output=True, text=True, timeout=180)

    out = tmp_path / "out"
    peer = f"{sys.executable} {root / 'bench' / 'fastmcp_directory_server.py'} {published.parent}"
    loaded = load(peer, out)
    assert loaded.returncode == 0, loaded.stderr
    assert (out / "notes-skill" / "my notes.md").read_bytes() == b"hello notes\n"
    assert "skill://notes-skill/my%20notes.md" in (out / "skills.json").read_text("utf-8")

    again = tmp_path / "again"
    ours = f"{sys.executable} -m projector.cli serve --stdio --framework {framework} --skills {out}"
    served = load(ours, again)
    assert served.returncode == 0, served.stderr
    assert tree(again, index=True) == tree(out, index=True)
