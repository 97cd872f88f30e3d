"""Issue 19 item 3: YAML 1.1 publishers. FastMCP's skills provider reads SKILL.md frontmatter with PyYAML (YAML 1.1),
so a file saying ``approved: yes`` is listed with the entry ``true``. ``remote load`` refuses it by default (a YAML
1.2 host reads the string "yes"), and now says why and what the fix is; ``--frontmatter-yaml 1.1`` accepts it, says
so per skill, and a pin records that reading. Tested against FastMCP's own SkillsDirectoryProvider over stdio and
Streamable HTTP (bench/fastmcp_directory_server.py), the real peer, and against in-process servers for the pins.

Issue 19 item 6, last bullet: ``remote load --all`` from a server that lists nothing exits 1 (``no-skills``) unless
``--allow-empty`` is given (tests/bad_inputs/no-skills.server.py)."""

from __future__ import annotations

import json
import shlex
import shutil
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from projector.remote.errors import LockError, VerificationError
from projector.remote.pins import Pin, compare, parse_lock, pin_entry, read_lock, server_key
from projector.remote.verify import check_frontmatter, frontmatter_note
from projector.sep2640 import digest as sha256, parse_entry
from remote_fixtures import SCHEME, Served, cli, serve

ROOT = Path(__file__).resolve().parents[2]
BAD = ROOT / "tests" / "bad_inputs"
PUBLISHED = BAD / "frontmatter-mismatch.yaml-1.1.SKILL.md"
DIRECTORY_SERVER = ROOT / "bench" / "fastmcp_directory_server.py"
NAME = "approved-skill"
URI = f"skill://{NAME}/SKILL.md"

EXPLAINED = ("SKILL.md frontmatter differs from the entry's in fields 'approved' (file: string 'yes', entry: boolean "
             "true); 'metadata.reviewed' (file: string 'on', entry: boolean true); the file and the entry agree "
             "under YAML 1.1 but not under YAML 1.2: 'approved: yes' reads as string 'yes' under YAML 1.2 and as "
             "boolean true under YAML 1.1; 'metadata.reviewed: on' reads as string 'on' under YAML 1.2 and as "
             "boolean true under YAML 1.1")
HINT_12 = ("a host must not load a skill whose file and entry disagree (frontmatter is read as YAML 1.2, as the "
           "reference SDK reads it); the publisher read it as YAML 1.1 (as PyYAML, and so FastMCP, does) and should "
           "quote these values in SKILL.md (approved: \"yes\"), which every YAML reader reads as the same string; to "
           "accept this publisher's YAML 1.1 reading, pass --frontmatter-yaml 1.1 (frontmatter_yaml=\"1.1\" in the "
           "library)")
HINT_12_PINNED = ("a host must not load a skill whose file and entry disagree (frontmatter is read as YAML 1.2, as "
                  "the reference SDK reads it); the publisher read it as YAML 1.1 (as PyYAML, and so FastMCP, does) "
                  "and should quote these values in SKILL.md (approved: \"yes\"), which every YAML reader reads as "
                  "the same string; the lock pins this skill read as YAML 1.2: to accept the YAML 1.1 reading, pin it "
                  "again with --frontmatter-yaml 1.1")
REFRESHED = "; still refused after refreshing the entry once with skills/get"
NOTE = (f"{URI}: note[frontmatter-yaml-1.1]: accepted with its frontmatter read as YAML 1.1 (--frontmatter-yaml "
        "1.1), as its entry reads it; a YAML 1.2 host (the reference SDK) refuses it: 'approved: yes' reads as string "
        "'yes' under YAML 1.2 and as boolean true under YAML 1.1; 'metadata.reviewed: on' reads as string 'on' under "
        "YAML 1.2 and as boolean true under YAML 1.1")


def entry(data: bytes, fm: dict, uri: str = URI):
    return parse_entry({"uri": uri, "frontmatter": fm,
                        "resources": [{"uri": uri, "digest": sha256(data), "size": len(data)}]})


FASTMCP_ENTRY = {"name": NAME, "description": "A skill whose publisher reads its frontmatter as YAML 1.1 (PyYAML, as "
                 "FastMCP does).", "approved": True, "metadata": {"reviewed": True}}


# ------------------------------------------------------------------------------------------------ the pure check


def test_a_yaml_1_1_only_match_is_refused_by_default_and_says_why():
    data = PUBLISHED.read_bytes()
    e = entry(data, FASTMCP_ENTRY)
    with pytest.raises(VerificationError) as info:
        check_frontmatter(e, data)
    assert (info.value.code, info.value.where, info.value.message, info.value.hint) == \
        ("frontmatter-mismatch", URI, EXPLAINED, HINT_12)
    with pytest.raises(VerificationError) as info:
        check_frontmatter(e, data, "1.2", pinned=True)
    assert info.value.hint == HINT_12_PINNED


def test_a_yaml_1_1_match_is_accepted_when_asked_and_noted():
    data = PUBLISHED.read_bytes()
    e = entry(data, FASTMCP_ENTRY)
    assert check_frontmatter(e, data, "1.1") == FASTMCP_ENTRY
    assert frontmatter_note(e, data, "1.1") == NOTE.split(": note[frontmatter-yaml-1.1]: ", 1)[1]
    neutral = b"---\nname: demo\ndescription: d\napproved: true\n---\n"
    assert frontmatter_note(entry(neutral, {"name": "demo", "description": "d", "approved": True},
                                  "skill://demo/SKILL.md"), neutral, "1.1") is None  # both readings agree: no note


def test_the_yaml_1_1_reading_refuses_what_only_yaml_1_2_matches_and_says_why():
    data = b"---\nname: demo\ndescription: d\nmode: 0o17\nsize: 1_000\n---\n"
    e = entry(data, {"name": "demo", "description": "d", "mode": 15, "size": "1_000"}, "skill://demo/SKILL.md")
    assert check_frontmatter(e, data)["mode"] == 15
    with pytest.raises(VerificationError) as info:
        check_frontmatter(e, data, "1.1")
    assert info.value.message == (
        "SKILL.md frontmatter differs from the entry's in fields 'mode' (file: string '0o17', entry: integer 15); "
        "'size' (file: integer 1000, entry: string '1_000'); the file and the entry agree under YAML 1.2 but not "
        "under YAML 1.1: 'mode: 0o17' reads as integer 15 under YAML 1.2 and as string '0o17' under YAML 1.1; "
        "'size: 1_000' reads as string '1_000' under YAML 1.2 and as integer 1000 under YAML 1.1")
    assert info.value.hint == (
        "a host must not load a skill whose file and entry disagree (frontmatter is read as YAML 1.1, as "
        "--frontmatter-yaml 1.1 asks); the publisher read it as YAML 1.2 and can quote these values in SKILL.md "
        "(mode: \"0o17\"), which every YAML reader reads as the same string; to accept its YAML 1.2 reading, load it "
        "without --frontmatter-yaml 1.1 (frontmatter_yaml=\"1.2\" in the library)")
    with pytest.raises(VerificationError) as info:
        check_frontmatter(e, data, "1.1", pinned=True)
    assert info.value.hint.endswith("the lock pins this skill read as YAML 1.1: to accept the YAML 1.2 reading, pin "
                                    "it again with --frontmatter-yaml 1.2")


def test_a_mismatch_under_both_readings_gets_no_yaml_explanation():
    data = b"---\nname: demo\ndescription: other\napproved: yes\n---\n"
    e = entry(data, {"name": "demo", "description": "d", "approved": True}, "skill://demo/SKILL.md")
    for version in ("1.2", "1.1"):
        with pytest.raises(VerificationError) as info:
            check_frontmatter(e, data, version)
        assert "agree under" not in info.value.message
        assert info.value.hint == ("a host must not load a skill whose file and entry disagree (frontmatter is read "
                                   + ("as YAML 1.2, as the reference SDK reads it)" if version == "1.2" else
                                      "as YAML 1.1, as --frontmatter-yaml 1.1 asks)"))


def test_a_key_read_differently_is_explained_as_a_key():
    data = b"---\nname: demo\ndescription: d\nyes: 1\n---\n"
    e = entry(data, {"name": "demo", "description": "d", "true": 1}, "skill://demo/SKILL.md")
    with pytest.raises(VerificationError) as info:
        check_frontmatter(e, data)
    assert info.value.message == ("SKILL.md frontmatter and the entry's do not have the same keys: 'true', 'yes'; "
                                  "the file and the entry agree under YAML 1.1 but not under YAML 1.2: the key "
                                  "'yes' reads as string 'yes' under YAML 1.2 and as boolean true under YAML 1.1")
    assert check_frontmatter(e, data, "1.1") == {"name": "demo", "description": "d", True: 1}


@pytest.mark.parametrize("data, message", [
    (b"---\nname: demo\nn: " + b"9" * 5000 + b"\n---\n", "SKILL.md frontmatter is not valid YAML 1.1"),
    (b"---\nname: demo\nbad: [x\nc: d\n---\n", "SKILL.md frontmatter is not valid YAML 1.1 at frontmatter line 3"),
    (b"---\na: " + b"[" * 65 + b"]" * 65 + b"\n---\n", "SKILL.md frontmatter nests more than 64 levels deep"),
])
def test_the_yaml_1_1_reading_is_bounded_as_the_yaml_1_2_one(data, message):
    e = entry(data, {"name": "demo"}, "skill://demo/SKILL.md")
    with pytest.raises(VerificationError) as info:
        check_frontmatter(e, data, "1.1")
    assert (info.value.code, info.value.message) == ("bad-frontmatter", message)


def test_an_unknown_reading_is_a_programming_error():
    with pytest.raises(ValueError, match="frontmatter_yaml must be '1.2' or '1.1', not '1.0'"):
        check_frontmatter(entry(b"x", {}), b"x", "1.0")


# ------------------------------------------------------------------------------------- the real peer: FastMCP


def published(tmp_path: Path) -> Path:
    root = tmp_path / "published"
    (root / NAME).mkdir(parents=True)
    shutil.copyfile(PUBLISHED, root / NAME / "SKILL.md")
    return root


def run_cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "projector.cli", *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=180)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def fastmcp_http(root: Path):
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(DIRECTORY_SERVER), str(root), "--http", str(port)], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        for _ in range(300):  # at most 300 tries, 0.2 s apart
            assert proc.poll() is None, "the FastMCP server exited"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.2)
        else:
            raise AssertionError("the FastMCP server did not listen")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@contextmanager
def fastmcp_server(root: Path, transport: str):
    if transport == "stdio":
        yield f"{sys.executable} {DIRECTORY_SERVER} {root}"
    else:
        with fastmcp_http(root) as url:
            yield url


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_fastmcp_yaml_1_1_publisher_refused_by_default_accepted_with_the_option(tmp_path, transport):
    root = published(tmp_path)
    with fastmcp_server(root, transport) as server:
        listed = run_cli("remote", "list", server, "--format", "json")
        assert listed.returncode == 0, listed.stderr
        (served,) = json.loads(listed.stdout)["skills"]
        assert served["frontmatter"] == FASTMCP_ENTRY  # what FastMCP's YAML 1.1 reading lists

        refused = run_cli("remote", "load", server, "--all", "--out", str(tmp_path / "refused"))
        assert refused.returncode == 1
        assert f"{URI}: error[frontmatter-mismatch]: {EXPLAINED}\n  hint: {HINT_12}{REFRESHED}\n" in refused.stderr
        assert not (tmp_path / "refused").exists()

        out = tmp_path / "out"
        done = run_cli("remote", "load", server, "--all", "--frontmatter-yaml", "1.1", "--out", str(out))
        assert done.returncode == 0, done.stderr
        assert done.stdout == (f"verified {URI}: 1 file, {PUBLISHED.stat().st_size} bytes\n{NOTE}\n"
                               f"wrote 1 skill folder under {out}\n")
        assert (out / NAME / "SKILL.md").read_bytes() == PUBLISHED.read_bytes()
        assert json.loads((out / "skills.json").read_text("utf-8")) == {"skills": [served]}

        as_json = run_cli("remote", "load", server, NAME, "--frontmatter-yaml", "1.1", "--format", "json")
        assert as_json.returncode == 0, as_json.stderr
        (skill,) = json.loads(as_json.stdout)["skills"]
        assert skill["frontmatter_yaml"] == "1.1"
        assert skill["notes"] == [NOTE.split(": note[frontmatter-yaml-1.1]: ", 1)[1]]

        lock = tmp_path / "skills.lock"
        pinned = run_cli("pin", server, "--frontmatter-yaml", "1.1", "--lock", str(lock))
        assert pinned.returncode == 0, pinned.stderr
        assert ", frontmatter read as YAML 1.1\n" in pinned.stdout
        (pin,) = json.loads(lock.read_text("utf-8"))["skills"]
        assert list(pin) == ["server", "uri", "manifest", "frontmatter_yaml", "files"]
        assert pin["frontmatter_yaml"] == "1.1"
        locked = run_cli("remote", "load", server, "--locked", str(lock))
        assert locked.returncode == 0, locked.stderr  # the lock's reading is used: no option needed
        assert NOTE in locked.stdout

        pinned = run_cli("pin", server, "--lock", str(lock))  # pinned again, by default as YAML 1.2
        assert pinned.returncode == 0, pinned.stderr
        assert "frontmatter_yaml" not in lock.read_text("utf-8")
        locked = run_cli("remote", "load", server, "--locked", str(lock))
        assert locked.returncode == 1
        assert f"hint: {HINT_12_PINNED}{REFRESHED}\n" in locked.stderr
        clash = run_cli("remote", "load", server, "--locked", str(lock), "--frontmatter-yaml", "1.1")
        assert clash.returncode == 1
        assert (f"{URI}: error[lock-mismatch]: {lock} pins this skill with its frontmatter read as YAML 1.2, not as "
                f"YAML 1.1\n  hint: read it as the lock says (leave out --frontmatter-yaml), or pin it again after "
                f"review: project-skill pin {shlex.quote(server_key(server))} {URI} --lock {lock} "
                "--frontmatter-yaml 1.1\n") in clash.stderr


def test_remote_list_takes_the_option_and_says_it_reads_no_file(cli):
    servers, run = cli
    servers["s"], rec = serve()
    rc, out, err = run("remote", "list", "s", "--frontmatter-yaml", "1.1")
    assert rc == 0 and out.count("\n") == 5
    assert err == "5 skills listed; no file read (their frontmatter will be read as YAML 1.1 when loaded)\n"
    assert rec.reads == []
    rc, _, err = run("remote", "list", "s", "--frontmatter-yaml", "1.0")
    assert rc == 2 and "invalid choice: '1.0'" in err


# ------------------------------------------------------------------------------------------------------ pins


def only_yaml_1_2(served: Served) -> None:
    """refund-flow's SKILL.md gains ``mode: 0o17``, and its entry the YAML 1.2 reading, 15."""
    e = served.entry("refund-flow")
    uri = e["uri"]
    data = served.data[uri].replace(b"\n---\n", b"\nmode: 0o17\n---\n", 1)
    e["frontmatter"] = {**e["frontmatter"], "mode": 15}
    served.set_file(uri, data, recompute=True)


def test_a_lock_that_says_1_1_refuses_a_skill_that_only_matches_under_1_2(cli, tmp_path):
    servers, run = cli
    servers["s"], rec = serve(mutate=only_yaml_1_2)
    lock = tmp_path / "l.lock"
    assert run("remote", "load", "s", "refund-flow")[0] == 0  # the default reading accepts it
    rc, out, err = run("pin", "s", "refund-flow", "--frontmatter-yaml", "1.1", "--lock", str(lock))
    assert rc == 0, err
    rc, out, err = run("remote", "load", "s", "--locked", str(lock))
    assert rc == 1 and out == ""
    assert ("the file and the entry agree under YAML 1.2 but not under YAML 1.1: 'mode: 0o17' reads as integer 15 "
            "under YAML 1.2 and as string '0o17' under YAML 1.1") in err
    assert ("the lock pins this skill read as YAML 1.1: to accept the YAML 1.2 reading, pin it again with "
            "--frontmatter-yaml 1.2") in err


def test_the_lock_stays_version_1_and_byte_stable_without_yaml_1_1(cli, tmp_path):
    servers, run = cli
    servers["s"], _ = serve()
    a, b = tmp_path / "a.lock", tmp_path / "b.lock"
    assert run("pin", "s", "--lock", str(a))[0] == 0
    assert run("pin", "s", "--lock", str(b), "--frontmatter-yaml", "1.2")[0] == 0
    assert a.read_bytes() == b.read_bytes() and b'"frontmatter_yaml"' not in a.read_bytes()
    assert json.loads(a.read_bytes())["version"] == 1
    assert run("pin", "s", "hello-world", "--lock", str(a), "--frontmatter-yaml", "1.1")[0] == 0
    doc = json.loads(a.read_bytes())
    assert doc["version"] == 1
    assert {p["uri"]: p.get("frontmatter_yaml") for p in doc["skills"]}[f"{SCHEME}hello-world/SKILL.md"] == "1.1"
    assert sum("frontmatter_yaml" in p for p in doc["skills"]) == 1
    lock = read_lock(a)
    assert lock.find("s", f"{SCHEME}hello-world/SKILL.md").frontmatter_yaml == "1.1"
    assert lock.find("s", f"{SCHEME}refund-flow/SKILL.md").frontmatter_yaml == "1.2"
    assert parse_lock(a.read_bytes()).to_json() == doc  # round trip


def test_a_lock_with_another_reading_is_bad_lock():
    path = BAD / "bad-lock.frontmatter-yaml.lock.json"
    with pytest.raises(LockError) as info:
        read_lock(path)
    assert (info.value.code, info.value.where, info.value.message) == \
        ("bad-lock", str(path), "skills[0] (skill://hello-world/SKILL.md) has a 'frontmatter_yaml' that is neither "
                                "\"1.2\" nor \"1.1\"")


def test_pin_entry_and_compare_carry_the_reading():
    data = b"---\nname: demo\ndescription: d\n---\n"
    e = entry(data, {"name": "demo", "description": "d"}, "skill://demo/SKILL.md")
    pin = pin_entry("srv", e, frontmatter_yaml="1.1")
    assert pin.frontmatter_yaml == "1.1" and pin.to_json()["frontmatter_yaml"] == "1.1"
    assert "frontmatter_yaml" not in pin_entry("srv", e).to_json()
    compare(pin, e, "l.lock")
    compare(pin, e, "l.lock", frontmatter_yaml="1.1")
    with pytest.raises(LockError) as info:
        compare(pin, e, "l.lock", frontmatter_yaml="1.2")
    assert (info.value.code, info.value.where, info.value.message, info.value.hint) == (
        "lock-mismatch", "skill://demo/SKILL.md",
        "l.lock pins this skill with its frontmatter read as YAML 1.1, not as YAML 1.2",
        "read it as the lock says (leave out --frontmatter-yaml), or pin it again after review: project-skill pin "
        "srv skill://demo/SKILL.md --lock l.lock --frontmatter-yaml 1.2")
    assert Pin("s", "u", "m", ()).frontmatter_yaml == "1.2"
    changed = entry(b"---\nname: demo\ndescription: e\n---\n", {"name": "demo", "description": "e"},
                    "skill://demo/SKILL.md")
    for p, tail in ((pin, " --frontmatter-yaml 1.1"), (pin_entry("srv", e), "")):
        with pytest.raises(LockError) as info:
            compare(p, changed, "l.lock")
        assert info.value.hint == ("if the change is expected, pin it again: project-skill pin srv "
                                   f"skill://demo/SKILL.md --lock l.lock{tail}")  # the same reading, pinned again


# ------------------------------------------------------------------------------------------ item 6: no-skills

EMPTY = BAD / "no-skills.server.py"


@pytest.mark.slow
def test_load_all_from_an_empty_listing_is_no_skills_unless_allowed(tmp_path):
    server = f"{sys.executable} {EMPTY}"
    done = run_cli("remote", "load", server, "--all", "--out", str(tmp_path / "o"))
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (f"{server}: error[no-skills]: the server {server} lists no skills, so --all has nothing "
                           "to load\n  hint: pass --allow-empty to accept an empty listing (then the exit is 0, and "
                           "--out writes an empty set)\nproject-skill remote: refused; nothing was written\n")
    assert not (tmp_path / "o").exists()
    done = run_cli("remote", "load", server, "--all", "--allow-empty", "--out", str(tmp_path / "o"))
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"wrote 0 skill folders under {tmp_path / 'o'}\n"
    assert json.loads((tmp_path / "o" / "skills.json").read_text("utf-8")) == {"skills": []}
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["skills.json"]
    done = run_cli("remote", "load", server, "--all", "--allow-empty", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"skills": [], "out": None, "written": []}


def test_a_listing_with_skills_is_unaffected_by_allow_empty(cli):
    servers, run = cli
    servers["s"], _ = serve()
    rc, out, _ = run("remote", "load", "s", "--all", "--allow-empty")
    assert rc == 0 and out.count("verified ") == 5


def test_docs_quote_the_refusal_and_the_note_as_printed():
    from projector.errors import format_text

    data = b"---\nname: approved-skill\ndescription: d\napproved: yes\n---\n"
    e = entry(data, {"name": NAME, "description": "d", "approved": True})
    with pytest.raises(VerificationError) as info:
        check_frontmatter(e, data)
    page = (ROOT / "docs" / "verifying.md").read_text("utf-8")
    assert f"```text\n{format_text(info.value.diagnostics[0])}\n```" in page
    note = f"{URI}: note[frontmatter-yaml-1.1]: {frontmatter_note(e, data, '1.1')}"
    assert f"```text\n{note}\n```" in page


def test_a_value_too_long_to_quote_and_a_sequence_item_are_named_by_their_paths():
    long = "1" + "_0" * 40
    data = b"---\nname: demo\ndescription: d\nn: " + long.encode() + b"\ntags: [a, on]\n---\n"
    e = entry(data, {"name": "demo", "description": "d", "n": int(long.replace("_", "")), "tags": ["a", True]},
              "skill://demo/SKILL.md")
    with pytest.raises(VerificationError) as info:
        check_frontmatter(e, data)
    assert info.value.message.endswith(
        f"under YAML 1.1 but not under YAML 1.2: 'n' reads as string '{long[:60]}...' under YAML 1.2 and as "
        f"integer {long.replace('_', '')} under YAML 1.1; 'tags.1: on' reads as string 'on' under YAML 1.2 and as "
        "boolean true under YAML 1.1")
    assert "quote these values in SKILL.md, which" in info.value.hint  # no example: the first value is too long


def test_the_note_when_the_file_is_not_yaml_1_2_at_all():
    data = b"---\nname: demo\ndescription: d\n0o17: a\n15: b\n---\n"  # one key twice, to a YAML 1.2 reader
    e = entry(data, {"name": "demo", "description": "d", "0o17": "a", "15": "b"}, "skill://demo/SKILL.md")
    assert check_frontmatter(e, data, "1.1") == {"name": "demo", "description": "d", "0o17": "a", 15: "b"}
    assert frontmatter_note(e, data, "1.1").endswith("refuses it: its frontmatter is not valid YAML 1.2")
