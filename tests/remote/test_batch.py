"""Loading a chosen set of skills (:mod:`projector.remote.batch`), through ``remote load``: with ``--keep-going`` the
skills that verify are written, the refused ones are named, the exit is still 1. The default stays all or nothing
(tests/remote/test_verify.py)."""

from __future__ import annotations

import json

from .remote_fixtures import cli, GENERATED, SCHEME, Served, serve  # noqa: F401 - cli is a fixture

SKILL = f"{SCHEME}refund-flow/SKILL.md"


def tamper(served: Served) -> None:
    text = served.data[SKILL].decode("utf-8")
    desc = served.entry("refund-flow")["frontmatter"]["description"]
    served.set_file(SKILL, text.replace(desc, "Something else.", 1).encode("utf-8"), recompute=True)


def test_keep_going_writes_what_verified_and_names_what_was_refused(cli, tmp_path):
    servers, run = cli
    servers["tampered"], _ = serve(mutate=tamper)
    out = tmp_path / "out"
    rc, stdout, err = run("remote", "load", "tampered", "--all", "--keep-going", "--out", str(out))
    assert rc == 1 and "Traceback" not in err
    assert sorted(p.name for p in out.iterdir()) == ["code-mode", "hello-world", "refund-flow-approved",
                                                "refund-flow-gated", "skills.json"]
    for name in ("code-mode", "hello-world", "refund-flow-approved", "refund-flow-gated"):
        assert (out / name / "SKILL.md").read_bytes() == (GENERATED / name / "SKILL.md").read_bytes()
    assert "error[frontmatter-mismatch]" in err
    assert f"refused 1 skill: {SKILL}; wrote the other 4 skills" in err
    assert f"verified {SCHEME}code-mode/SKILL.md" in stdout and f"verified {SKILL}" not in stdout


def test_keep_going_json_lists_the_refused(cli, tmp_path):
    servers, run = cli
    servers["tampered"], _ = serve(mutate=tamper)
    rc, stdout, _ = run("remote", "load", "tampered", "--all", "--keep-going", "--format", "json")
    doc = json.loads(stdout)
    assert rc == 1
    assert [s["uri"] for s in doc["skills"]] == [f"{SCHEME}code-mode/SKILL.md", f"{SCHEME}hello-world/SKILL.md",
                                                 f"{SCHEME}refund-flow-approved/SKILL.md",
                                                 f"{SCHEME}refund-flow-gated/SKILL.md"]
    assert [(r["uri"], [e["code"] for e in r["errors"]]) for r in doc["refused"]] == [(SKILL,
                                                                                      ["frontmatter-mismatch"])]


def test_without_keep_going_nothing_is_written(cli, tmp_path):
    servers, run = cli
    servers["tampered"], _ = serve(mutate=tamper)
    out = tmp_path / "out"
    rc, _, err = run("remote", "load", "tampered", "--all", "--out", str(out))
    assert rc == 1 and "nothing was written" in err and not out.exists()


def test_keep_going_with_nothing_refused_exits_0(cli, tmp_path):
    servers, run = cli
    servers["honest"], _ = serve()
    rc, _, err = run("remote", "load", "honest", "--all", "--keep-going", "--out", str(tmp_path / "o"))
    assert rc == 0, err
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["code-mode", "hello-world", "refund-flow",
                                                                  "refund-flow-approved", "refund-flow-gated",
                                                                  "skills.json"]
