"""Pins: the lock file format, the manifest digest, and ``remote load --locked`` refusing a changed manifest before
any file is read."""

from __future__ import annotations

import hashlib
import json

import pytest

from projector.remote.errors import LockError
from projector.remote.pins import (Lock, changes, dumps_lock, manifest_digest, parse_lock, pin_entry, read_lock,
                                   server_key)
from projector.sep2640 import FileRef, parse_entry
from remote_fixtures import cli, SCHEME, Served, honest, serve, sha

SKILL = f"{SCHEME}refund-flow/SKILL.md"
TOOLS = f"{SCHEME}refund-flow/references/tools.md"


# ------------------------------------------------------------------------------------------------------ format

def test_manifest_digest_is_sha256_of_the_sorted_pairs():
    files = [FileRef("skill://a/b.md", "sha256:" + "b" * 64, 3), FileRef("skill://a/SKILL.md", "sha256:" + "a" * 64, 9)]
    canonical = json.dumps(sorted([f.uri, f.digest] for f in files), separators=(",", ":")).encode()
    assert manifest_digest(files) == "sha256:" + hashlib.sha256(canonical).hexdigest()
    assert manifest_digest(files) == manifest_digest(list(reversed(files)))
    changed = [files[0], FileRef("skill://a/SKILL.md", "sha256:" + "c" * 64, 9)]
    assert manifest_digest(changed) != manifest_digest(files)
    assert manifest_digest(files[:1]) != manifest_digest(files)


def test_server_key_normalizes_command_lines_only():
    assert server_key("python  -m   x 'a b'") == server_key('python -m x "a b"') == "python -m x 'a b'"
    assert server_key("http://h:1/mcp") == "http://h:1/mcp"


def test_lock_round_trip_is_stable():
    entries = honest().entries
    pins = [pin_entry("srv", parse_entry(e)) for e in entries]
    lock = Lock().updated("srv", pins, replace_server=True)
    data = dumps_lock(lock)
    assert data.endswith(b"}\n") and b"\r" not in data
    doc = json.loads(data)
    assert doc["version"] == 1 and [s["uri"] for s in doc["skills"]] == sorted(e["uri"] for e in entries)
    assert list(doc["skills"][0]) == ["server", "uri", "manifest", "files"]
    assert dumps_lock(parse_lock(data)) == data


def test_a_lock_named_through_a_symbolic_link_is_read(tmp_path):
    """The user named the lock (``--lock``/``--locked``), so a link to a regular lock file is followed."""
    pins = [pin_entry("srv", parse_entry(e)) for e in honest().entries]
    data = dumps_lock(Lock().updated("srv", pins, replace_server=True))
    (tmp_path / "real.lock").write_bytes(data)
    (tmp_path / "skills.lock").symlink_to("real.lock")
    assert dumps_lock(read_lock(tmp_path / "skills.lock")) == data


@pytest.mark.parametrize("data, fragment", [
    (b"not json", "not a JSON lock file"),
    (b'{"version": 2, "skills": []}', "version 1"),
    (b'{"version": 1, "skills": [{"server": "s", "uri": "u"}]}', "needs the strings"),
    (b'{"version": 1, "skills": [{"server": "s", "uri": "u", "manifest": "m", "files": [{"uri": "u"}]}]}',
     "valid uri, digest and size"),
])
def test_bad_locks(data, fragment):
    with pytest.raises(LockError) as info:
        parse_lock(data, "x.lock")
    assert info.value.code == "bad-lock" and fragment in str(info.value)


def test_hand_edited_lock_is_refused():
    pin = pin_entry("srv", parse_entry(honest().entry("refund-flow")))
    doc = json.loads(dumps_lock(Lock([pin])))
    doc["skills"][0]["files"][0]["digest"] = "sha256:" + "0" * 64
    with pytest.raises(LockError) as info:
        parse_lock(json.dumps(doc).encode())
    assert "edited by hand" in str(info.value)


def test_changes_name_what_changed():
    served = honest()
    pin = pin_entry("srv", parse_entry(served.entry("refund-flow")))
    e = served.entry("refund-flow")
    e["resources"][1]["digest"] = sha(b"new")
    e["resources"].append({"uri": f"{SCHEME}refund-flow/new.md", "digest": sha(b"n"), "size": 1})
    e["resources"] = [r for r in e["resources"] if r["uri"] != SKILL] + [
        {"uri": f"{SCHEME}refund-flow/SKILL.md", "digest": pin.files[0].digest if pin.files[0].uri == SKILL
         else pin.files[1].digest, "size": 1}]
    got = changes(pin, parse_entry(e))
    assert got[0] == f"changed size of {SKILL} ({next(f.size for f in pin.files if f.uri == SKILL)} bytes -> 1 byte)"
    assert got[1] == f"added {SCHEME}refund-flow/new.md"
    assert got[2].startswith(f"changed {TOOLS} (sha256:")


def test_dynamic_cannot_be_pinned():
    e = parse_entry({"uri": "skill://a/SKILL.md", "frontmatter": {}, "resources": "dynamic"})
    with pytest.raises(LockError):
        pin_entry("srv", e)


# ------------------------------------------------------------------------------------------------------ CLI

def test_pin_reads_no_file_and_is_byte_stable(cli, tmp_path):
    servers, run = cli
    servers["srv"], rec = serve()
    lock = tmp_path / "skills.lock"
    rc, out, err = run("pin", "srv", "--lock", str(lock))
    assert rc == 0, err
    assert "5 skills of srv pinned; no file read" in out
    first = lock.read_bytes()
    assert run("pin", "srv", "--lock", str(lock))[0] == 0
    assert lock.read_bytes() == first
    assert rec.reads == []
    doc = json.loads(first)
    assert [s["server"] for s in doc["skills"]] == ["srv"] * 5
    refund = next(s for s in doc["skills"] if s["uri"] == SKILL)
    assert refund["manifest"] == manifest_digest(FileRef(**f) for f in refund["files"])
    assert refund["files"] == sorted(honest().entry("refund-flow")["resources"], key=lambda r: r["uri"])


def test_pin_merges_servers_and_skills(cli, tmp_path):
    servers, run = cli
    servers["a"], _ = serve()
    servers["b"], _ = serve()
    lock = tmp_path / "skills.lock"
    assert run("pin", "a", "refund-flow", "--lock", str(lock))[0] == 0
    assert run("pin", "b", "hello-world", "--lock", str(lock))[0] == 0
    assert run("pin", "a", "code-mode", "--lock", str(lock))[0] == 0
    doc = json.loads(lock.read_text())
    assert [(s["server"], s["uri"].split("/")[2]) for s in doc["skills"]] == [
        ("a", "code-mode"), ("a", "refund-flow"), ("b", "hello-world")]


def test_locked_load_of_the_pinned_manifest_succeeds(cli, tmp_path):
    servers, run = cli
    servers["srv"], _ = serve()
    lock = tmp_path / "skills.lock"
    run("pin", "srv", "--lock", str(lock))
    rc, out, err = run("remote", "load", "srv", "--locked", str(lock), "--out", str(tmp_path / "o"))
    assert rc == 0, err
    assert out.count("verified") == 5


def changed_tools(served: Served) -> None:
    data = served.data[TOOLS].replace(b"Refund", b"Refunf", 1)
    served.set_file(TOOLS, data, recompute=True)  # a consistent, honest-looking change: only the lock can tell


@pytest.mark.parametrize("mutate, phrase", [
    (changed_tools, f"changed {TOOLS} (sha256:"),
    (lambda s: s.entry("refund-flow")["resources"].append(
        {"uri": f"{SCHEME}refund-flow/extra.md", "digest": sha(b"x"), "size": 1}),
     f"added {SCHEME}refund-flow/extra.md"),
    (lambda s: s.entry("refund-flow").__setitem__("resources", s.entry("refund-flow")["resources"][:1]),
     f"removed {TOOLS}"),
    (lambda s: s.entry("refund-flow").__setitem__("resources", "dynamic"), "now served as \"dynamic\""),
])
def test_locked_load_refuses_a_changed_manifest_before_any_read(cli, tmp_path, mutate, phrase):
    servers, run = cli
    servers["srv"], _ = serve()
    lock = tmp_path / "skills.lock"
    run("pin", "srv", "refund-flow", "--lock", str(lock))
    servers["srv"], rec = serve(mutate=mutate)
    out = tmp_path / "o"
    rc, stdout, err = run("remote", "load", "srv", "--locked", str(lock), "--out", str(out))
    assert rc == 1
    assert "error[lock-mismatch]" in err and phrase in err and "project-skill pin" in err
    assert rec.reads == [] and not out.exists() and stdout == ""
    assert "skills/get" not in rec.methods()  # a lock mismatch is final: no refresh, no fetch


def test_locked_load_of_unpinned_skill_or_server(cli, tmp_path):
    servers, run = cli
    servers["srv"], _ = serve()
    lock = tmp_path / "skills.lock"
    run("pin", "srv", "refund-flow", "--lock", str(lock))
    rc, _, err = run("remote", "load", "srv", "hello-world", "--locked", str(lock))
    assert rc == 1 and "error[not-pinned]" in err
    servers["other"], _ = serve()
    rc, _, err = run("remote", "load", "other", "--locked", str(lock))
    assert rc == 1 and "error[not-pinned]" in err and "servers in the lock: srv" in err
    rc, _, err = run("remote", "load", "srv", "--locked", str(tmp_path / "missing.lock"))
    assert rc == 1 and "error[bad-lock]" in err


def test_locked_skill_no_longer_served(cli, tmp_path):
    servers, run = cli
    servers["srv"], _ = serve()
    lock = tmp_path / "skills.lock"
    run("pin", "srv", "--lock", str(lock))

    def remove(served: Served) -> None:
        served.entries = [e for e in served.entries if e["uri"] != SKILL]

    servers["srv"], rec = serve(mutate=remove)
    rc, _, err = run("remote", "load", "srv", "--locked", str(lock))
    assert rc == 1 and "error[lock-mismatch]" in err and "no longer serves it" in err
