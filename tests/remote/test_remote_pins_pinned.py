"""Pins, pinned: every refusal field by field, the lock's methods and its atomic write (they kill the mutants of
``pins.py``; scripts/mutation)."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from projector.remote import pins
from projector.remote.errors import LockError
from projector.remote.pins import Lock, Pin, changes, compare, manifest_digest, parse_lock, pin_entry, read_lock
from projector.sep2640 import FileRef, parse_entry
from projector.sep2640 import digest as sha256

A = "skill://a/SKILL.md"
B = "skill://a/b.md"
HINT = "write it again with: project-skill pin SERVER --lock FILE"
NEEDS = "skills[0] needs the strings 'server', 'uri' and 'manifest'"


def lock_json(skills, version=1) -> bytes:
    return json.dumps({"version": version, "skills": skills}).encode()


def file(uri, data=b"x", **over):
    return {"uri": uri, "digest": sha256(data), "size": len(data), **over}


def skill(files, **over):
    refs = [FileRef(f["uri"], f["digest"], f["size"]) for f in files if isinstance(f, dict)]
    return {"server": "srv", "uri": A, "manifest": manifest_digest(refs), "files": files, **over}


@pytest.mark.parametrize("data, message", [
    (b"\xff", "not a JSON lock file ('utf-8' codec can't decode byte 0xff in position 0: invalid start byte)"),
    (b"[]", 'not a version 1 lock file (expected {"version": 1, "skills": [...]})'),
    (lock_json([], version=2), 'not a version 1 lock file (expected {"version": 1, "skills": [...]})'),
    (b'{"version": 1, "skills": {}}', 'not a version 1 lock file (expected {"version": 1, "skills": [...]})'),
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
    monkeypatch.setattr(pins.os, "replace", lambda a, b: (temps.append(a), real_replace(a, b)))
    pins.write_lock(target, lock)
    assert target.read_bytes() == pins.dumps_lock(lock) and os.listdir(target.parent) == ["skills.lock"]
    (tmp,) = map(os.fspath, temps)  # beside the target (one file system: the rename is atomic), named after it
    assert os.path.dirname(tmp) == str(target.parent)
    assert os.path.basename(tmp).startswith(".skills.lock.") and tmp.endswith(".tmp")
    monkeypatch.setattr(pins.os, "replace", lambda a, b: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError):
        pins.write_lock(target, Lock())
    assert os.listdir(target.parent) == ["skills.lock"] and target.read_bytes() == pins.dumps_lock(lock)


def test_manifest_digest_bytes():
    files = [FileRef("skill://a/é.md", "sha256:" + "b" * 64, 3), FileRef(A, "sha256:" + "a" * 64, 9)]
    canonical = ('[["skill://a/SKILL.md","sha256:' + "a" * 64 + '"],["skill://a/é.md","sha256:' + "b" * 64 + '"]]')
    assert manifest_digest(files) == "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@pytest.mark.parametrize("spec, key", [("http://h/mcp", "http://h/mcp"), ("https://h/mcp", "https://h/mcp"),
                                       ("http://h/a  'b'", "http://h/a  'b'"),
                                       ("https://h/a  b", "https://h/a  b"), ("a  'b c'", "a 'b c'"),
                                       ("'unclosed", "'unclosed"), ("x", "x")])
def test_server_keys(spec, key):
    assert pins.server_key(spec) == key


def _pin(server, uri):
    f = FileRef(uri, sha256(b"x"), 1)
    return Pin(server, uri, manifest_digest([f]), (f,))


def test_lock_methods():
    lock = Lock([_pin("b", A), _pin("a  x", B), _pin("a x", A)])
    assert lock.servers() == ["a  x", "a x", "b"]
    assert [(p.server, p.uri) for p in lock.for_server("a   x")] == [("a x", A)]  # the key is normalized
    assert lock.find("a  x", A).server == "a x" and lock.find("b", B) is None and lock.find("c", A) is None
    up = lock.updated("b", [_pin("b", B)], replace_server=False)
    assert [(p.server, p.uri) for p in up.pins] == [("a  x", B), ("a x", A), ("b", A), ("b", B)]
    up = lock.updated("b", [_pin("b", B)], replace_server=True)
    assert [(p.server, p.uri) for p in up.pins] == [("a  x", B), ("a x", A), ("b", B)]
    again = lock.updated("b", [_pin("b", A)], replace_server=False)
    assert [(p.server, p.uri) for p in again.pins if p.server == "b"] == [("b", A)]
    assert lock.to_json()["version"] == 1
    assert [s["uri"] for s in lock.to_json()["skills"]] == [B, A, A]


def _entry(resources):
    return parse_entry({"uri": A, "frontmatter": {"name": "a"}, "resources": resources})


def test_pin_entry():
    e = _entry([file(B), file(A, b"yy")])
    p = pin_entry("a   b", e)
    assert (p.server, p.uri, [f.uri for f in p.files]) == ("a b", A, [A, B])
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
        f"if the change is expected, pin it again: project-skill pin 'my server' {A} --lock 'my locks/x.lock'")
    with pytest.raises(LockError) as info:
        compare(pin, _entry([file(A, b"y")]))
    assert info.value.message.startswith("the served manifest differs from the one pinned in skills.lock: changed")
    assert "; removed" in info.value.message and info.value.hint.endswith("--lock skills.lock")
