"""Pins (:mod:`projector.remote.pins`): the lock file format, the manifest digest, ``remote load --locked`` refusing a
changed manifest before any file is read, and every refusal of a bad lock field by field."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from projector.remote import pins
from projector.remote.errors import LockError
from projector.remote.pins import (Lock, Pin, changes, compare, dumps_lock, manifest_digest, parse_lock, pin_entry,
                                   read_lock)
from projector.sep2640 import FileRef, parse_entry
from projector.sep2640 import digest as sha256
from .remote_fixtures import SCHEME, Served, cli, honest, serve, sha  # noqa: F401 (cli is a fixture)

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


@pytest.mark.parametrize("name, problem", [("", "non-empty"), (" a", "no space at either end"),
                                           ("a\nb", "no line break"), ("x" * 129, "at most 128 characters"),
                                           (1, "non-empty string")])
def test_a_server_name_that_cannot_be_pinned(name, problem):
    assert problem in pins.name_problem(name)
    assert pins.name_problem("secure-filesystem-server") is None and pins.name_problem("a b") is None


def test_lock_round_trip_is_stable():
    entries = honest().entries
    pins = [pin_entry("srv", parse_entry(e)) for e in entries]
    lock = Lock().updated("srv", pins, replace_server=True)
    data = dumps_lock(lock)
    assert data.endswith(b"}\n") and b"\r" not in data
    doc = json.loads(data)
    assert doc["version"] == 2 and [s["uri"] for s in doc["skills"]] == sorted(e["uri"] for e in entries)
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
    (b'{"version": 3, "skills": []}', "version 2"),
    (b'{"version": 2, "skills": [{"server": "s", "uri": "u"}]}', "needs the strings"),
    (b'{"version": 2, "skills": [{"server": "s", "uri": "u", "manifest": "m", "files": [{"uri": "u"}]}]}',
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
    assert "5 skills of the server 'tamper-test' pinned (srv); no file read" in out
    first = lock.read_bytes()
    assert run("pin", "srv", "--lock", str(lock))[0] == 0
    assert lock.read_bytes() == first
    assert rec.reads == []
    doc = json.loads(first)
    assert [s["server"] for s in doc["skills"]] == ["tamper-test"] * 5  # its serverInfo name, not how it was reached
    refund = next(s for s in doc["skills"] if s["uri"] == SKILL)
    assert refund["manifest"] == manifest_digest(FileRef(**f) for f in refund["files"])
    assert refund["files"] == sorted(honest().entry("refund-flow")["resources"], key=lambda r: r["uri"])


def test_pin_merges_servers_and_skills(cli, tmp_path):
    servers, run = cli
    servers["a"], _ = serve(name="a")
    servers["b"], _ = serve(name="b")
    lock = tmp_path / "skills.lock"
    assert run("pin", "a", "refund-flow", "--lock", str(lock))[0] == 0
    assert run("pin", "b", "hello-world", "--lock", str(lock))[0] == 0
    assert run("pin", "a", "code-mode", "--lock", str(lock))[0] == 0
    doc = json.loads(lock.read_text())
    assert [(s["server"], s["uri"].split("/")[2]) for s in doc["skills"]] == [
        ("a", "code-mode"), ("a", "refund-flow"), ("b", "hello-world")]


def test_pin_all_and_a_name_of_the_author_s_choosing(cli, tmp_path):
    """``pin --all`` pins every listed skill (as pinning with no NAME does); ``--name`` is the name the lock knows the
    server by, and ``remote load --locked --name`` finds its pins by it."""
    servers, run = cli
    servers["srv"], _ = serve()
    lock = tmp_path / "skills.lock"
    rc, out, err = run("pin", "srv", "--all", "--name", "refunds", "--lock", str(lock))
    assert rc == 0, err
    assert "5 skills of the server 'refunds' pinned (srv)" in out
    assert {s["server"] for s in json.loads(lock.read_text())["skills"]} == {"refunds"}
    rc, out, err = run("remote", "load", "srv", "--locked", str(lock), "--name", "refunds")
    assert rc == 0 and out.count("verified") == 5, err
    rc, _, err = run("remote", "load", "srv", "--locked", str(lock))  # by its serverInfo name: not pinned
    assert rc == 1 and "the lock pins no skill of the server 'tamper-test'" in err and "refunds" in err
    rc, _, err = run("pin", "srv", "refund-flow", "--all", "--lock", str(lock))
    assert rc == 2 and "either the skills you name or --all" in err
    rc, _, err = run("pin", "srv", "--name", " padded", "--lock", str(lock))
    assert rc == 2 and "--name: a server's name has no line break" in err


def test_pin_all_says_which_pins_of_the_server_it_dropped(cli, tmp_path):
    """``pin --all`` replaces every pin of the server's name: a pin the server does not list now goes, and the
    command says so, with the likely cause (two servers sharing a serverInfo name, such as two gateways); pinning
    named skills drops nothing and says nothing of it."""
    servers, run = cli
    servers["srv"], _ = serve()
    lock = tmp_path / "skills.lock"
    lock.write_bytes(lock_json([skill([file(A)], server="tamper-test"), skill([file(A)], server="other")]))
    rc, out, err = run("pin", "srv", "refund-flow", "--lock", str(lock))
    assert rc == 0 and "unpinned" not in out, err
    rc, out, err = run("pin", "srv", "--all", "--lock", str(lock))
    assert rc == 0, err
    assert f"unpinned {A}: the server 'tamper-test' does not list it now (if another server is pinned under that " \
           "name, pin this one with --name)" in out
    assert out.count("unpinned") == 1
    doc = json.loads(lock.read_text())
    assert ("tamper-test", A) not in [(s["server"], s["uri"]) for s in doc["skills"]]
    assert ("other", A) in [(s["server"], s["uri"]) for s in doc["skills"]]


def test_a_version_1_lock_is_refused_at_its_version_with_the_commands_that_pin_again(tmp_path, cli):
    """A version 1 lock named servers by their local command line; it is refused, where its version is written,
    naming each server and the command that pins it again, and nothing is loaded."""
    servers, run = cli
    servers["srv"], rec = serve()
    lock = tmp_path / "old.lock"
    lock.write_text(json.dumps({"version": 1, "skills": [skill([file(A)], server="node /home/me/fs.js /data")]},
                               indent=2), "utf-8")
    rc, out, err = run("remote", "load", "srv", "--locked", str(lock))
    assert rc == 1 and out == "" and rec.reads == []
    assert f"{lock}:2:3: error[bad-lock]: a version 1 lock names each server by the command line or URL" in err
    assert f"hint: review the servers' skills and pin them again, which writes version 2: project-skill pin " \
           f"'node /home/me/fs.js /data' --lock {lock}" in err


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
    servers["other"], _ = serve(name="other")
    rc, _, err = run("remote", "load", "other", "--locked", str(lock))
    assert rc == 1 and "error[not-pinned]" in err and "servers in the lock: tamper-test" in err
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


# ------------------------------------------------------------------ every refusal and method, field by field

A = "skill://a/SKILL.md"
B = "skill://a/b.md"
HINT = "write it again with: project-skill pin SERVER --lock FILE"
NEEDS = "skills[0] needs the strings 'server', 'uri' and 'manifest'"


def lock_json(skills, version=2) -> bytes:
    return json.dumps({"version": version, "skills": skills}).encode()


def file(uri, data=b"x", **over):
    return {"uri": uri, "digest": sha256(data), "size": len(data), **over}


def skill(files, **over):
    refs = [FileRef(f["uri"], f["digest"], f["size"]) for f in files if isinstance(f, dict)]
    return {"server": "srv", "uri": A, "manifest": manifest_digest(refs), "files": files, **over}


@pytest.mark.parametrize("data, message", [
    (b"\xff", "not a JSON lock file ('utf-8' codec can't decode byte 0xff in position 0: invalid start byte)"),
    (b"[]", 'not a version 2 lock file (expected {"version": 2, "skills": [...]})'),
    (lock_json([], version=3), 'not a version 2 lock file (expected {"version": 2, "skills": [...]})'),
    (b'{"version": 2, "skills": {}}', 'not a version 2 lock file (expected {"version": 2, "skills": [...]})'),
    (lock_json(["x"]), "skills[0] needs the strings 'server', 'uri' and 'manifest'"),
    (lock_json([{"server": "s", "uri": A, "manifest": 1}]), NEEDS),
    (lock_json([{"server": "s", "uri": 1, "manifest": "m"}]), NEEDS),
    (lock_json([{"server": 1, "uri": A, "manifest": "m"}]), NEEDS),
    (lock_json([{"server": "s", "uri": A, "manifest": "m", "files": {}}]), "skills[0] needs a 'files' list"),
    (lock_json([skill([file(A, size=-1)])]), "skills[0] has a file without a valid uri, digest and size"),
    (lock_json([skill([file(A, size=True)])]), "skills[0] has a file without a valid uri, digest and size"),
    (lock_json([skill([file(A, size="1")])]), "skills[0] has a file without a valid uri, digest and size"),
    (lock_json([skill([file(A, digest="sha256:" + "a" * 63)])]),
     "skills[0] has a file without a valid uri, digest and size"),
    (lock_json([skill([file(A, digest=5)])]), "skills[0] has a file without a valid uri, digest and size"),
    (lock_json([skill([{**file(A), "uri": 5}])]), "skills[0] has a file without a valid uri, digest and size"),
    (lock_json([skill(["x"])]), "skills[0] has a file without a valid uri, digest and size"),
    (lock_json([skill([file(A)], manifest="sha256:" + "0" * 64)]),
     f"skills[0] ({A}): its manifest digest does not match its own files; the lock was edited by hand"),
    (lock_json([skill([file(A)]), skill([file(A)])]), "a (server, uri) pair is pinned twice"),
])
def test_bad_locks_in_full(data, message):
    with pytest.raises(LockError) as info:
        parse_lock(data, "x.lock")
    e = info.value
    assert (e.code, e.where, e.message, e.hint) == ("bad-lock", "x.lock", message, HINT)


def test_the_default_lock_name_is_where():
    with pytest.raises(LockError) as info:
        parse_lock(b"nope")
    assert info.value.where == "skills.lock"


def test_good_lock_edges():
    lock = parse_lock(lock_json([skill([file(A, b"")]), skill([file(A)], server="other")]))
    assert [(p.server, p.uri, p.files[0].size) for p in lock.pins] == [("srv", A, 0), ("other", A, 1)]
    assert parse_lock(lock_json([])).pins == []


def test_read_lock(tmp_path):
    with pytest.raises(LockError) as info:
        read_lock(tmp_path / "none.lock")
    e = info.value
    assert (e.code, e.where, e.message, e.hint) == ("bad-lock", str(tmp_path / "none.lock"),
                                                   "the lock file does not exist",
                                                   "write one with: project-skill pin SERVER --lock FILE")
    assert read_lock(tmp_path / "none.lock", missing_ok=True).pins == []
    with pytest.raises(LockError) as info:
        read_lock(tmp_path)
    e = info.value
    assert (e.code, e.where, e.message, e.hint) == ("bad-lock", str(tmp_path), "cannot read the lock file: it is a "
                                                   "folder, not a regular file", None)
    (tmp_path / "x.lock").write_bytes(b"nope")
    with pytest.raises(LockError) as info:
        read_lock(tmp_path / "x.lock")
    assert info.value.where == str(tmp_path / "x.lock")
    (tmp_path / "y.lock").write_bytes(lock_json([skill([file(A)])]))
    assert read_lock(str(tmp_path / "y.lock")).pins[0].uri == A


def test_write_lock_is_atomic_and_leaves_nothing_behind(tmp_path, monkeypatch):
    lock = Lock([Pin("srv", A, manifest_digest([FileRef(A, sha256(b"x"), 1)]), (FileRef(A, sha256(b"x"), 1),))])
    target = tmp_path / "sub" / "deeper" / "skills.lock"
    temps = []
    real_replace = os.replace
    monkeypatch.setattr(os, "replace", lambda a, b: (temps.append(a), real_replace(a, b)))
    pins.write_lock(target, lock)
    assert target.read_bytes() == pins.dumps_lock(lock) and os.listdir(target.parent) == ["skills.lock"]
    (tmp,) = map(os.fspath, temps)  # written beside the target (one file system: the rename is atomic)
    assert os.path.dirname(tmp) == str(target.parent)
    monkeypatch.setattr(os, "replace", lambda a, b: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError):
        pins.write_lock(target, Lock())
    assert os.listdir(target.parent) == ["skills.lock"] and target.read_bytes() == pins.dumps_lock(lock)


def test_manifest_digest_bytes():
    files = [FileRef("skill://a/é.md", "sha256:" + "b" * 64, 3), FileRef(A, "sha256:" + "a" * 64, 9)]
    canonical = ('[["skill://a/SKILL.md","sha256:' + "a" * 64 + '"],["skill://a/é.md","sha256:' + "b" * 64 + '"]]')
    assert manifest_digest(files) == "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def _pin(server, uri):
    f = FileRef(uri, sha256(b"x"), 1)
    return Pin(server, uri, manifest_digest([f]), (f,))


def test_lock_methods():
    lock = Lock([_pin("b", A), _pin("a  x", B), _pin("a x", A)])
    assert lock.servers() == ["a  x", "a x", "b"]
    assert [(p.server, p.uri) for p in lock.for_server("a x")] == [("a x", A)]  # a name is matched as it is
    assert lock.for_server("a   x") == []
    assert lock.find("a x", A).server == "a x" and lock.find("b", B) is None and lock.find("c", A) is None
    up = lock.updated("b", [_pin("b", B)], replace_server=False)
    assert [(p.server, p.uri) for p in up.pins] == [("a  x", B), ("a x", A), ("b", A), ("b", B)]
    up = lock.updated("b", [_pin("b", B)], replace_server=True)
    assert [(p.server, p.uri) for p in up.pins] == [("a  x", B), ("a x", A), ("b", B)]
    again = lock.updated("b", [_pin("b", A)], replace_server=False)
    assert [(p.server, p.uri) for p in again.pins if p.server == "b"] == [("b", A)]
    assert lock.to_json()["version"] == 2
    assert [s["uri"] for s in lock.to_json()["skills"]] == [B, A, A]


def _entry(resources):
    return parse_entry({"uri": A, "frontmatter": {"name": "a"}, "resources": resources})


def test_pin_entry():
    e = _entry([file(B), file(A, b"yy")])
    p = pin_entry("a   b", e)
    assert (p.server, p.uri, [f.uri for f in p.files]) == ("a   b", A, [A, B])
    with pytest.raises(LockError) as info:
        pin_entry(" a", e)
    assert info.value.code == "bad-lock" and "no space at either end" in info.value.message
    assert p.manifest == manifest_digest(e.resources)
    with pytest.raises(LockError) as info:
        pin_entry("s", _entry("dynamic"))
    e = info.value
    assert (e.code, e.where, e.message, e.hint) == ("lock-mismatch", A, 'a "dynamic" skill has no manifest to pin',
                                                   "only skills that list their files with digests can be pinned")


def test_changes_and_compare_in_full():
    pin = pin_entry("my server", _entry([file(A), file(B)]))
    assert changes(pin, _entry([file(A), file(B)])) == []
    assert changes(pin, _entry("dynamic")) == ['the skill is now served as "dynamic" (no manifest)']
    moved = _entry([file(A, b"y"), file("skill://a/c.md"), {**file(B), "size": 7}])
    d_old, d_new = sha256(b"x"), sha256(b"y")
    assert changes(pin, moved) == [f"changed {A} ({d_old[:19]}... -> {d_new[:19]}...)",
                                   f"changed size of {B} (1 byte -> 7 bytes)", "added skill://a/c.md"]
    assert changes(pin, _entry([file(A)])) == [f"removed {B}"]
    compare(pin, _entry([file(A), file(B)]))
    with pytest.raises(LockError) as info:
        compare(pin, _entry([file(A)]), "my locks/x.lock")
    e = info.value
    assert (e.code, e.where, e.message, e.hint) == (
        "lock-mismatch", A, f"the served manifest differs from the one pinned in my locks/x.lock: removed {B}",
        f"if the change is expected, pin it again: project-skill pin SERVER {A} --lock 'my locks/x.lock' "
        "--name 'my server' (SERVER: how the server the lock names 'my server' is started or reached here)")
    with pytest.raises(LockError) as info:
        compare(pin, _entry([file(A, b"y")]))
    assert info.value.message.startswith("the served manifest differs from the one pinned in skills.lock: changed")
    assert "; removed" in info.value.message and "--lock skills.lock --name 'my server'" in info.value.hint
