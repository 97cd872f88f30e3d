"""Issue 17, the verifying client's part: a server or a lock file that lies is refused with a clear error, never a
traceback. Name identity (13), bounded locks and URIs (14), frontmatter that YAML 1.2 readers read differently (6).
Each test fails on the main of before the issue."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from projector.remote import connect
from projector.remote.errors import LockError, VerificationError
from projector.remote.pins import manifest_digest, parse_lock, read_lock
from projector.remote.verify import check_frontmatter
from projector.sep2640 import FileRef, check_manifest, parse_entry
from projector.sep2640 import digest as sha256
from remote_fixtures import SCHEME, Served, cli, serve, sha

ROOT = Path(__file__).resolve().parents[2]
BAD = ROOT / "tests" / "bad_inputs"
MAX_URI_LENGTH = 2048  # projector.sep2640's bounds, pinned here
MAX_URI_SEGMENTS = 64
NAME_HINT = ("a skill's frontmatter name and the last segment of its URI are one and the same; a host must not load "
             "a skill under another name than the one it is served at")


def move(served: Served, name: str, new_root: str) -> None:
    """Serve the skill ``name`` at ``skill://{new_root}/``, its entry and files unchanged otherwise."""
    e = served.entry(name)
    old = e["uri"][: -len("/SKILL.md")]
    for r in e["resources"]:
        data = served.data.pop(r["uri"])
        r["uri"] = f"{SCHEME}{new_root}" + r["uri"][len(old):]
        served.data[r["uri"]] = data
    e["uri"] = f"{SCHEME}{new_root}/SKILL.md"


def entry_of(uri: str, frontmatter: dict, files: dict[str, bytes] | None = None):
    root = uri[: -len("/SKILL.md")]
    files = files if files is not None else {"SKILL.md": b"x"}
    return parse_entry({"uri": uri, "frontmatter": frontmatter,
                        "resources": [{"uri": f"{root}/{rel}", "digest": sha256(b), "size": len(b)}
                                      for rel, b in files.items()]})


# ------------------------------------------------------------------------------------------------ 13: name identity

def test_a_skill_served_under_another_name_is_refused_before_any_read(cli, tmp_path):
    """``skill://evil`` whose frontmatter (entry and file alike) says ``name: hello-world``: main verified it, and
    ``remote load SERVER hello-world`` loaded it. ``serve`` refuses the same tree."""
    servers, run = cli
    servers["evil"], rec = serve(mutate=lambda s: move(s, "hello-world", "evil"))
    rc, out, err = run("remote", "load", "evil", "hello-world")
    assert rc == 1 and out == ""
    assert ("skill://evil/SKILL.md: error[name-mismatch]: the entry's frontmatter name is string 'hello-world', "
            "but the last segment of its URI is string 'evil'") in err
    assert "nothing was written" in err and "Traceback" not in err
    assert rec.reads == []  # refused from the manifest: no file was read
    rc, _, err = run("pin", "evil", "hello-world", "--lock", str(tmp_path / "l.lock"))
    assert rc == 1 and "error[name-mismatch]" in err and not (tmp_path / "l.lock").exists()


@pytest.mark.anyio
async def test_name_identity_in_the_library_also_for_a_dynamic_skill():
    server, rec = serve(mutate=lambda s: move(s, "hello-world", "evil"))
    async with connect(server) as remote:
        with pytest.raises(VerificationError) as info:
            await remote.load(f"{SCHEME}evil/SKILL.md")
    assert info.value.code == "name-mismatch" and rec.reads == []
    dynamic = parse_entry({"uri": "skill://a/evil/SKILL.md", "frontmatter": {"name": "good"}, "resources": "dynamic"})
    with pytest.raises(VerificationError) as info:
        check_manifest(dynamic)
    e = info.value
    assert (e.code, e.where, e.message, e.hint) == (
        "name-mismatch", "skill://a/evil/SKILL.md",
        "the entry's frontmatter name is string 'good', but the last segment of its URI is string 'evil'", NAME_HINT)


@pytest.mark.parametrize("frontmatter, shown", [
    ({}, "missing"),
    ({"name": None}, "null"),
    ({"name": 7}, "integer 7"),
    ({"name": ["hello"]}, 'sequence ["hello"]'),
    ({"name": "Hello"}, "string 'Hello'"),
    ({"name": "hello "}, "string 'hello '"),
])
def test_name_must_be_exactly_the_last_segment(frontmatter, shown):
    with pytest.raises(VerificationError) as info:
        check_manifest(entry_of("skill://hello/SKILL.md", frontmatter))
    assert info.value.code == "name-mismatch"
    assert info.value.message == (f"the entry's frontmatter name is {shown}, but the last segment of its URI is "
                                  "string 'hello'")


def test_name_mismatch_corpus_case():
    raw = json.loads((BAD / "name-mismatch.entry.json").read_text("utf-8"))
    with pytest.raises(VerificationError) as info:
        check_manifest(parse_entry(raw))
    assert info.value.code == "name-mismatch" and info.value.where == raw["uri"]


def test_the_same_name_passes():
    check_manifest(entry_of("skill://acme/hello/SKILL.md", {"name": "hello"}))


# ------------------------------------------------------------------------------------------------ 14: lock files

def lock_doc(**over) -> dict:
    files = [{"uri": "skill://a/SKILL.md", "digest": sha(b"x"), "size": 1}]
    refs = [FileRef(**f) for f in files]
    doc = {"version": 1, "skills": [{"server": "srv", "uri": "skill://a/SKILL.md", "manifest": manifest_digest(refs),
                                     "files": files}]}
    doc.update(over)
    return doc


NOT_V1 = 'not a version 1 lock file (expected {"version": 1, "skills": [...]})'
LOCK_HINT = "write it again with: project-skill pin SERVER --lock FILE"


@pytest.mark.parametrize("version", [True, 1.0, "1", [1], None])
def test_lock_version_is_exactly_the_integer_1(version):
    """``True == 1`` and ``1.0 == 1`` in Python: main accepted both."""
    with pytest.raises(LockError) as info:
        parse_lock(json.dumps(lock_doc(version=version)).encode(), "l.lock")
    e = info.value
    assert (e.code, e.where, e.message, e.hint) == ("bad-lock", "l.lock", NOT_V1, LOCK_HINT)


def test_lock_version_1_is_accepted():
    assert len(parse_lock(json.dumps(lock_doc()).encode()).pins) == 1


def test_a_pin_that_lists_one_file_twice_is_refused():
    doc = lock_doc()
    files = doc["skills"][0]["files"] * 2
    doc["skills"][0]["files"] = files
    doc["skills"][0]["manifest"] = manifest_digest(FileRef(**f) for f in files)
    with pytest.raises(LockError) as info:
        parse_lock(json.dumps(doc).encode(), "l.lock")
    e = info.value
    assert (e.code, e.where, e.message, e.hint) == (
        "bad-lock", "l.lock", "skills[0] (skill://a/SKILL.md) lists the file skill://a/SKILL.md twice", LOCK_HINT)


@pytest.mark.parametrize("case, message", [
    ("bad-lock.deep.lock.json", "not a JSON lock file (nested deeper than 64 levels)"),
    ("bad-lock.huge-int.lock.json", "not a JSON lock file (an integer of 5000 digits, over the limit of 64)"),
    ("bad-lock.duplicate-key.lock.json",
     'not a JSON lock file (the key "version" appears twice in one object)'),
    ("bad-lock.nan.lock.json", "not a JSON lock file (NaN is not a JSON value)"),
])
def test_hostile_lock_files_are_clear_errors(case, message):
    """A deeply nested lock and one with a 5,000-digit integer gave tracebacks on main (RecursionError, ValueError)."""
    path = BAD / case
    with pytest.raises(LockError) as info:
        read_lock(path)
    e = info.value
    assert (e.code, e.where, e.message, e.hint) == ("bad-lock", str(path), message, LOCK_HINT)


def test_a_lock_that_is_not_json_names_line_and_column():
    with pytest.raises(LockError) as info:
        parse_lock(b'{\n  "version": 1,\n  oops\n}', "l.lock")
    assert info.value.message == ("not a JSON lock file (not JSON: Expecting property name enclosed in double quotes "
                                  "at line 3, column 3)")


@pytest.mark.parametrize("case", ["bad-lock.deep.lock.json", "bad-lock.huge-int.lock.json"])
def test_hostile_lock_files_in_the_cli(cli, tmp_path, case):
    servers, run = cli
    servers["honest"], rec = serve()
    lock = BAD / case
    for argv in (("remote", "load", "honest", "--locked", str(lock)), ("pin", "honest", "--lock", str(lock))):
        rc, out, err = run(*argv)
        assert rc == 1 and out == "" and "Traceback" not in err
        assert f"{lock}: error[bad-lock]: not a JSON lock file (" in err
    assert rec.reads == []


# ------------------------------------------------------------------------------------------------ 14: URI bounds

def deep_root(n: int) -> str:
    return "/".join(["a"] * (n - 1) + ["hello-world"])


def test_990_segments_are_refused_not_a_traceback(cli, tmp_path):
    """main: ``remote load --out`` died in a RecursionError; without ``--out`` it loaded the skill."""
    servers, run = cli
    servers["deep"], rec = serve(mutate=lambda s: move(s, "hello-world", deep_root(1000)))
    uri = f"skill://{deep_root(1000)}/SKILL.md"
    rc, out, err = run("remote", "load", "deep", "hello-world")
    assert rc == 1 and out == "" and "Traceback" not in err
    assert (f"{uri[:120]}...: error[bad-manifest-uri]: the URI '{uri[:120]}...' has 1001 path segments; at most "
            f"{MAX_URI_SEGMENTS} are accepted") in err
    rc, out, err = run("remote", "load", "deep", "hello-world", "--out", str(tmp_path / "out"))
    assert rc == 1 and out == "" and "Traceback" not in err
    assert (f"{uri[:120]}...: error[bad-output-path]: the URI has 1001 path segments; at most {MAX_URI_SEGMENTS} "
            "are accepted") in err
    assert rec.reads == [] and not (tmp_path / "out").exists()
    rc, _, err = run("pin", "deep", "--lock", str(tmp_path / "l.lock"))
    assert rc == 1 and "error[bad-manifest-uri]" in err and not (tmp_path / "l.lock").exists()


@pytest.mark.parametrize("n, ok", [(MAX_URI_SEGMENTS, True), (MAX_URI_SEGMENTS + 1, False)])
def test_segment_bound_is_exact(n, ok):
    entry = entry_of(f"skill://{deep_root(n - 1)}/SKILL.md", {"name": "hello-world"})
    if ok:
        check_manifest(entry)
    else:
        with pytest.raises(VerificationError) as info:
            check_manifest(entry)
        assert info.value.code == "bad-manifest-uri"
        assert info.value.message.endswith(f"has {n} path segments; at most {MAX_URI_SEGMENTS} are accepted")


@pytest.mark.parametrize("extra, ok", [(0, True), (1, False)])
def test_uri_length_bound_is_exact(extra, ok):
    name = "x"
    base = f"skill://{name}/"
    long_file = "f" * (MAX_URI_LENGTH - len(base) + extra)
    entry = entry_of(f"{base}SKILL.md", {"name": name}, {"SKILL.md": b"x", long_file: b"y"})
    if ok:
        check_manifest(entry)
    else:
        with pytest.raises(VerificationError) as info:
            check_manifest(entry)
        e = info.value
        assert (e.code, e.where) == ("bad-manifest-uri", "skill://x/SKILL.md")
        assert e.message == (f"the URI '{(base + long_file)[:120]}...' is {MAX_URI_LENGTH + 1} characters long; at "
                             f"most {MAX_URI_LENGTH} are accepted")


def test_a_long_skill_uri_is_clipped_in_the_span():
    uri = f"skill://{'a' * 5000}/SKILL.md"
    with pytest.raises(VerificationError) as info:
        check_manifest(entry_of(uri, {"name": "a" * 5000}))
    assert info.value.where == uri[:120] + "..."


# ------------------------------------------------------------------------------------------------ 6: line breaks

HELLO = "skill://hello-world/SKILL.md"


@pytest.mark.parametrize("char, name, yaml11", [("\u2028", "LINE SEPARATOR", "Say hello\u2028more"),
                                                ("\u2029", "PARAGRAPH SEPARATOR", "Say hello\u2029more"),
                                                ("\x85", "NEXT LINE (NEL)", "Say hello more")])
def test_frontmatter_that_yaml_1_2_reads_differently_is_refused(cli, char, name, yaml11):
    """YAML 1.1 (PyYAML, which main verified with) breaks the line at the character and folds the next one in,
    dropping its indentation, as the entry says; eemeli/yaml and js-yaml read the character and the spaces as text
    (``Say hello<U+2028>  more``). main loaded it."""
    data = f"---\nname: hello-world\ndescription: Say hello{char}  more\n---\n\n# Hello\n".encode("utf-8")

    def mutate(s: Served) -> None:
        s.entry("hello-world")["frontmatter"] = {"name": "hello-world", "description": yaml11}
        s.set_file(HELLO, data, recompute=True)

    servers, run = cli
    servers["split"], _ = serve(mutate=mutate)
    rc, out, err = run("remote", "load", "split", "hello-world")
    assert rc == 1 and out == ""
    assert (f"{HELLO}: error[frontmatter-ambiguous]: SKILL.md frontmatter holds U+{ord(char):04X} {name} at line 3, "
            "column 23") in err


def test_line_break_position_and_hint_pinned():
    entry = entry_of(HELLO, {"name": "hello-world", "description": "a\u2028b"})
    data = "\ufeff---\nname: hello-world\ndescription: \"a\u2028b\"\n---\n".encode()
    with pytest.raises(VerificationError) as info:
        check_frontmatter(entry, data)
    e = info.value
    assert (e.code, e.where, e.message) == ("frontmatter-ambiguous", HELLO, "SKILL.md frontmatter holds U+2028 LINE "
                                            "SEPARATOR at line 3, column 16")
    assert e.hint == ("YAML 1.1 readers take it for a line break and YAML 1.2 readers (eemeli/yaml, js-yaml) for "
                      "text, so hosts would read different frontmatter; write it as an escape in a double-quoted "
                      "string (\"\\u2028\"), or leave it out")


def test_escaped_and_body_line_separators_are_fine():
    """The escape ``\\u2028`` in a double-quoted string reads the same everywhere; the body is not frontmatter."""
    entry = entry_of(HELLO, {"name": "hello-world", "description": "a\u2028b"})
    data = "---\nname: hello-world\ndescription: \"a\\u2028b\"\n---\n\nbody \u2028 \u2029 \x85\n".encode()
    assert check_frontmatter(entry, data)["description"] == "a\u2028b"


def test_a_separator_in_a_would_be_closing_line_is_refused():
    """``---<U+2028>`` closes the block for a reader that breaks lines there; here it does not, so the block runs on
    to the next ``---`` line, and the character is inside it."""
    entry = entry_of(HELLO, {"name": "hello-world", "description": "d"})
    data = "---\nname: hello-world\ndescription: d\n---\u2028evil: 1\n---\n".encode()
    with pytest.raises(VerificationError) as info:
        check_frontmatter(entry, data)
    assert info.value.message == "SKILL.md frontmatter holds U+2028 LINE SEPARATOR at line 4, column 4"


# ------------------------------------------------------------------------------------------------ 2: --out names

def rename(served: Served, name: str, new: str) -> None:
    """Serve the skill ``name`` as ``new``: at ``skill://{new}/``, its frontmatter name ``new`` (entry and file), so
    that name identity holds and only the folder name is in question."""
    e = served.entry(name)
    skill_md = f"{SCHEME}{name}/SKILL.md"
    text = served.data[skill_md].decode("utf-8").replace(f"name: {name}\n", f"name: {json.dumps(new)}\n", 1)
    served.set_file(skill_md, text.encode("utf-8"), recompute=True)
    e["frontmatter"]["name"] = new
    move(served, name, new)


def files_under(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_server_cannot_replace_dot_git(cli, tmp_path):
    """main: ``skill://.git/SKILL.md`` replaced ``DIR/.git`` whole, exit 0."""
    out = tmp_path / "out"
    (out / ".git").mkdir(parents=True)
    (out / ".git" / "config").write_bytes(b"[core]\n")
    servers, run = cli
    servers["git"], rec = serve(mutate=lambda s: rename(s, "hello-world", ".git"))
    rc, stdout, err = run("remote", "load", "git", "--all", "--out", str(out))
    assert rc == 1 and stdout == ""
    assert ("skill://.git/SKILL.md: error[bad-output-path]: '.git' cannot name a folder: a dot-name (hidden, or "
            "another tool's folder such as .git)") in err
    assert "hint: remote load --out writes only folders whose names pass the Agent Skills name rule" in err
    assert "nothing was written" in err
    assert files_under(out) == {".git/config": b"[core]\n"} and sorted(p.name for p in out.iterdir()) == [".git"]
    assert rec.reads == []  # refused from its URI, before a byte of it was read


def test_a_server_cannot_delete_the_users_files(cli, tmp_path):
    """main: ``skill://notes/SKILL.md`` replaced ``DIR/notes`` whole and deleted the user's ``diary.md``."""
    out = tmp_path / "out"
    (out / "notes").mkdir(parents=True)
    (out / "notes" / "diary.md").write_bytes(b"dear diary")
    servers, run = cli
    servers["notes"], _ = serve(mutate=lambda s: rename(s, "hello-world", "notes"))
    rc, stdout, err = run("remote", "load", "notes", "--all", "--out", str(out))
    assert rc == 1
    assert ("skill://notes/SKILL.md: error[output-conflict]: the skill 'skill://notes/SKILL.md' goes to out/notes/, "
            "but out/notes is already there and is not a bundle this tool wrote (the previous skills.json does not "
            "list it)\n  hint: move that path away, or load into another --out folder; nothing was written") in err
    assert files_under(out) == {"notes/diary.md": b"dear diary"} and sorted(p.name for p in out.iterdir()) == ["notes"]


def test_a_file_in_the_way_is_a_conflict_too(cli, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "hello-world").write_bytes(b"mine")
    servers, run = cli
    servers["honest"], _ = serve()
    rc, _, err = run("remote", "load", "honest", "hello-world", "--out", str(out))
    assert rc == 1 and "error[output-conflict]: the skill 'skill://hello-world/SKILL.md' goes to out/hello-world/" in err
    assert files_under(out) == {"hello-world": b"mine"}


@pytest.mark.parametrize("segment, uri_segment, why", [
    ("~", "~", "not a skill name (lowercase ASCII letters, digits and single hyphens, at most 64 characters)"),
    ("$HOME", "$HOME", "not a skill name (lowercase ASCII letters, digits and single hyphens, at most 64 characters)"),
    ("my notes", "my%20notes", "not a skill name (lowercase ASCII letters, digits and single hyphens, at most 64 "
                               "characters)"),
    ("Notes", "Notes", "not a skill name (lowercase ASCII letters, digits and single hyphens, at most 64 characters)"),
    ("a--b", "a--b", "not a skill name (lowercase ASCII letters, digits and single hyphens, at most 64 characters)"),
    ("-a", "-a", "not a skill name (lowercase ASCII letters, digits and single hyphens, at most 64 characters)"),
    ("a" * 65, "a" * 65, "not a skill name (lowercase ASCII letters, digits and single hyphens, at most 64 "
                         "characters)"),
    (".hidden", ".hidden", "a dot-name (hidden, or another tool's folder such as .git)"),
    ("con", "con", "a Windows device name (con, prn, aux, nul, com0-com9, lpt0-lpt9)"),
    ("lpt9", "lpt9", "a Windows device name (con, prn, aux, nul, com0-com9, lpt0-lpt9)"),
    ("..", "%2e%2e", "not a skill name (lowercase ASCII letters, digits and single hyphens, at most 64 characters)"),
])
def test_folder_names_must_pass_the_skill_name_rule(tmp_path, segment, uri_segment, why):
    from projector.remote.client import LoadedSkill
    from projector.remote.errors import OutputError
    from projector.remote.output import write_bundles

    uri = f"skill://{uri_segment}/SKILL.md"
    s = LoadedSkill(entry_of(uri, {"name": uri_segment}), {uri: b"x"}, {})
    with pytest.raises(OutputError) as info:
        write_bundles(tmp_path / "o", [s])
    e = info.value
    assert (e.code, e.where) == ("bad-output-path", uri)
    shown = uri_segment if len(uri_segment) <= 64 else uri_segment[:64] + "..."
    assert e.message == f"{shown!r} cannot name a folder: {why}"
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("prefix, ok", [("acme/billing", True), ("acme/Billing", False), ("acme/.git", False),
                                        ("acme/~", False), ("a" * 70, True)])
def test_prefix_segments_follow_the_uri_prefix_rule(tmp_path, prefix, ok):
    """The prefix folders take naming.SEGMENT_RULE (what ``build --uri-prefix`` accepts, no length cap); the skill's
    own folder NAME_RULE."""
    from projector.remote.client import LoadedSkill
    from projector.remote.errors import OutputError
    from projector.remote.output import write_bundles

    uri = f"skill://{prefix}/hello/SKILL.md"
    s = LoadedSkill(entry_of(uri, {"name": "hello"}), {uri: b"x"}, {})
    if ok:
        assert write_bundles(tmp_path / "o", [s]) == [f"{prefix}/hello"]
    else:
        with pytest.raises(OutputError) as info:
            write_bundles(tmp_path / "o", [s])
        assert info.value.code == "bad-output-path" and not (tmp_path / "o").exists()


@pytest.mark.parametrize("rel", [".hooks/pre-commit", "references/.env", "a/%2e%2e/b"])
def test_file_names_inside_a_skill_refuse_dot_names(tmp_path, rel):
    from projector.remote.client import LoadedSkill
    from projector.remote.errors import OutputError
    from projector.remote.output import write_bundles

    uri = "skill://hello/SKILL.md"
    s = LoadedSkill(entry_of(uri, {"name": "hello"}), {uri: b"x", f"skill://hello/{rel}": b"y"}, {})
    with pytest.raises(OutputError) as info:
        write_bundles(tmp_path / "o", [s])
    assert info.value.code == "bad-output-path" and info.value.where == f"skill://hello/{rel}"
    assert not (tmp_path / "o").exists()


def test_only_skill_uris_name_folders(tmp_path):
    from projector.remote.client import LoadedSkill
    from projector.remote.errors import OutputError
    from projector.remote.output import write_bundles

    uri = "file://hello/SKILL.md"
    s = LoadedSkill(entry_of(uri, {"name": "hello"}), {uri: b"x"}, {})
    with pytest.raises(OutputError) as info:
        write_bundles(tmp_path / "o", [s])
    assert (info.value.code, info.value.message) == ("bad-output-path",
                                                     "only a skill://…/SKILL.md URI names a skill folder")


def test_ownership_is_the_index_it_wrote(cli, tmp_path):
    """A folder is the tool's while its skills.json lists it, as with build: loaded again, it is replaced; with the
    index gone (or one that is not an index), it is the user's."""
    out = tmp_path / "out"
    servers, run = cli
    servers["honest"], _ = serve()
    assert run("remote", "load", "honest", "hello-world", "--out", str(out))[0] == 0
    index = json.loads((out / "skills.json").read_text("utf-8"))
    assert [e["uri"] for e in index["skills"]] == ["skill://hello-world/SKILL.md"]
    (out / "hello-world" / "stray.md").write_bytes(b"x")
    assert run("remote", "load", "honest", "refund-flow", "--out", str(out))[0] == 0
    assert [e["uri"] for e in json.loads((out / "skills.json").read_text("utf-8"))["skills"]] == [
        "skill://hello-world/SKILL.md", "skill://refund-flow/SKILL.md"]  # the earlier entry kept
    assert run("remote", "load", "honest", "hello-world", "--out", str(out))[0] == 0
    assert not (out / "hello-world" / "stray.md").exists()  # its own folder: replaced whole
    (out / "skills.json").unlink()
    rc, _, err = run("remote", "load", "honest", "hello-world", "--out", str(out))
    assert rc == 1 and "error[output-conflict]" in err
    (out / "skills.json").write_bytes(b'{"mine": true}\n')
    rc, _, err = run("remote", "load", "honest", "code-mode", "--out", str(out))
    assert rc == 1 and (f"out/skills.json: error[output-conflict]: this path is not an index this tool wrote (no "
                        "'skills' array of entries), and the new tree needs it") in err
    assert (out / "skills.json").read_bytes() == b'{"mine": true}\n' and not (out / "code-mode").exists()


def test_an_index_path_that_is_a_folder_is_left_alone(tmp_path):
    from projector.remote.client import LoadedSkill
    from projector.remote.errors import OutputError
    from projector.remote.output import write_bundles

    (tmp_path / "o" / "skills.json").mkdir(parents=True)
    (tmp_path / "o" / "skills.json" / "keep").write_bytes(b"k")
    uri = "skill://hello/SKILL.md"
    with pytest.raises(OutputError) as info:
        write_bundles(tmp_path / "o", [LoadedSkill(entry_of(uri, {"name": "hello"}), {uri: b"x"}, {})])
    assert info.value.code == "output-conflict"
    assert info.value.message == ("this path is not an index this tool wrote (it is a folder, not a regular file), "
                                  "and the new tree needs it")
    assert files_under(tmp_path / "o") == {"skills.json/keep": b"k"}


def test_keep_going_refuses_a_bad_folder_name_and_writes_the_rest(cli, tmp_path):
    out = tmp_path / "out"
    servers, run = cli
    servers["home"], rec = serve(mutate=lambda s: rename(s, "hello-world", "$HOME"))
    rc, _, err = run("remote", "load", "home", "--all", "--keep-going", "--out", str(out))
    assert rc == 1 and "skill://$HOME/SKILL.md: error[bad-output-path]: '$HOME' cannot name a folder" in err
    assert sorted(p.name for p in out.iterdir()) == ["code-mode", "refund-flow", "refund-flow-approved",
                                                "refund-flow-gated", "skills.json"]
    assert not any("$HOME" in uri for uri in rec.reads)
