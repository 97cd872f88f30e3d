"""The output tree as input (issue 17, items 9 and 14): a committed tree may hold a link to ``/dev/zero``, a FIFO, or
a ``skills.json`` nested deeper than any parser's stack. ``check``, ``build`` and ``serve`` read it through
:mod:`projector.bounded` (regular files only, a size cap before reading, no link followed, bounded JSON), and answer
with a diagnostic: never a traceback, never a hang, never all the memory.

Each hostile case runs in a subprocess with a timeout and an address-space limit, so that on a build that still reads
without bounds it fails as a test (a timeout, a MemoryError) instead of hanging the suite or the machine."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import EXAMPLES, GENERATED, ROOT
from projector import output

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="FIFOs, /dev/zero and RLIMIT_AS")

TIMEOUT = 60  # seconds for one run, far beyond what a build of the examples takes; a hang fails the test
MEMORY = 1 << 30  # the address space one run may use: /dev/zero read whole would pass it

_RUN = textwrap.dedent("""
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, ({memory}, {memory}))
    {body}
""")


def run(body: str, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    code = _RUN.format(memory=MEMORY, body=textwrap.dedent(body).strip())
    try:
        return subprocess.run([sys.executable, "-c", code, *args], cwd=cwd, capture_output=True, text=True,
                              timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"no answer in {TIMEOUT} s: a read of the output tree blocks")


def cli(*args: str) -> subprocess.CompletedProcess:
    return run("from projector.cli import main\nsys.exit(main(sys.argv[1:]))", *args)


def serve_load(root: Path) -> subprocess.CompletedProcess:
    return run("""
        from projector.server.errors import AttachError
        from projector.server.skills import SkillTree
        try:
            SkillTree.load(sys.argv[1])
        except AttachError as exc:
            print(exc)
            sys.exit(1)
        print("served")
    """, str(root))


@pytest.fixture
def out(tmp_path) -> Path:
    """A copy of the committed tree: what ``build workflows`` writes."""
    dst = tmp_path / "out"
    shutil.copytree(GENERATED, dst)
    return dst


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def hostile(kind: str, path: Path, tmp_path: Path) -> None:
    """Put ``kind`` at ``path`` instead of the file there."""
    path.unlink()
    if kind == "link to /dev/zero":
        path.symlink_to("/dev/zero")
    elif kind == "link to a FIFO":
        path.symlink_to(fifo(tmp_path / "pipe"))
    elif kind == "FIFO":
        fifo(path)
    else:
        raise AssertionError(kind)


KINDS = ["link to /dev/zero", "link to a FIFO", "FIFO"]
REASON = {"link to /dev/zero": "it is a symbolic link, which is not followed",
          "link to a FIFO": "it is a symbolic link, which is not followed",
          "FIFO": "it is a FIFO, not a regular file"}


def no_traceback(done: subprocess.CompletedProcess) -> None:
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr, done.stderr[-3000:]


# ------------------------------------------------------------------------------------------------------- check

@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_check_calls_a_skill_md_that_is_not_a_regular_file_stale_with_the_reason(out, tmp_path, kind):
    hostile(kind, out / "hello-world" / "SKILL.md", tmp_path)
    done = cli("check", str(EXAMPLES), "--out", str(out), "--no-cache")
    no_traceback(done)
    assert done.returncode == 1, done.stderr
    assert f"a/hello-world/SKILL.md is not what the build writes: {REASON[kind]}\n" in done.stdout
    assert f"stale: {out.as_posix()}/hello-world/SKILL.md\n" in done.stdout
    assert "(1 stale, 0 missing, 0 extra)" in done.stdout


@pytest.mark.parametrize("kind", KINDS)
def test_check_calls_a_skills_json_that_is_not_a_regular_file_stale_with_the_reason(out, tmp_path, kind):
    hostile(kind, out / "skills.json", tmp_path)
    done = cli("check", str(EXAMPLES), "--out", str(out), "--no-cache")
    no_traceback(done)
    assert done.returncode == 1, done.stderr
    assert f"a/skills.json is not what the build writes: {REASON[kind]}\n" in done.stdout
    assert "(1 stale, 0 missing, 0 extra)" in done.stdout


def deep_json(depth: int = 10_000) -> str:
    return '{"skills": ' + "[" * depth + "]" * depth + "}"


@pytest.mark.slow
def test_check_with_a_deeply_nested_skills_json_is_stale_not_a_traceback(out):
    (out / "skills.json").write_text(deep_json(), "utf-8")
    done = cli("check", str(EXAMPLES), "--out", str(out), "--no-cache")
    no_traceback(done)
    assert done.returncode == 1, done.stderr
    assert f"stale: {out.as_posix()}/skills.json\n" in done.stdout and "(1 stale, 0 missing, 0 extra)" in done.stdout


# ------------------------------------------------------------------------------------------------------- build

@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_build_replaces_a_skill_md_that_is_not_a_regular_file(out, tmp_path, kind):
    skill = out / "hello-world" / "SKILL.md"
    hostile(kind, skill, tmp_path)
    done = cli("build", str(EXAMPLES), "--out", str(out), "--no-cache")
    no_traceback(done)
    assert done.returncode == 0, done.stderr
    assert not skill.is_symlink() and skill.read_bytes() == (GENERATED / "hello-world" / "SKILL.md").read_bytes()
    assert cli("check", str(EXAMPLES), "--out", str(out), "--no-cache").returncode == 0


@pytest.mark.parametrize("kind", KINDS)
def test_build_over_a_skills_json_that_is_not_a_regular_file_names_it(out, tmp_path, kind):
    """The previous index cannot say which folders this tool wrote, so none counts as its own: the build refuses to
    replace them, and says why."""
    hostile(kind, out / "skills.json", tmp_path)
    done = cli("build", str(EXAMPLES), "--out", str(out), "--no-cache")
    no_traceback(done)
    assert done.returncode == 1
    assert "error[output-conflict]" in done.stderr
    assert f"the previous skills.json, which would list it, is not read: {REASON[kind]}" in done.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted(p.name for p in GENERATED.iterdir())  # nothing written


@pytest.mark.slow
def test_build_over_a_deeply_nested_skills_json_names_it(out):
    (out / "skills.json").write_text(deep_json(), "utf-8")
    done = cli("build", str(EXAMPLES), "--out", str(out), "--no-cache")
    no_traceback(done)
    assert done.returncode == 1
    assert "the previous skills.json, which would list it, is not read: nested deeper than 64 levels" in done.stderr
    assert (out / "skills.json").read_text("utf-8") == deep_json()


@pytest.mark.slow
def test_build_over_a_skills_json_alone_in_the_folder_replaces_it(tmp_path):
    """With no bundle folder in the way there is nothing to protect: the unreadable index is the tool's to replace."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "skills.json").symlink_to("/dev/zero")
    done = cli("build", str(EXAMPLES), "--out", str(out), "--no-cache")
    no_traceback(done)
    assert done.returncode == 0, done.stderr
    assert (out / "skills.json").read_bytes() == (GENERATED / "skills.json").read_bytes()


# ------------------------------------------------------------------------------------------------------- serve

@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_serve_refuses_a_skill_md_that_is_not_a_regular_file_naming_it(out, tmp_path, kind):
    skill = out / "hello-world" / "SKILL.md"
    hostile(kind, skill, tmp_path)
    done = serve_load(out)
    no_traceback(done)
    assert done.returncode == 1, done.stdout + done.stderr
    if kind == "FIFO":
        assert (f"error[missing-file]: skill://hello-world/SKILL.md: cannot read {skill.as_posix()}: "
                "it is a FIFO, not a regular file") in done.stdout
    else:  # the link leads out of the tree; one inside it is refused too (tests/server/test_serve_skill_paths.py)
        assert f"error[missing-file]: skill://hello-world/SKILL.md: {skill.as_posix()} " in done.stdout


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_serve_refuses_a_skills_json_that_is_not_a_regular_file_naming_it(out, tmp_path, kind):
    hostile(kind, out / "skills.json", tmp_path)
    done = serve_load(out)
    no_traceback(done)
    assert done.returncode == 1, done.stdout + done.stderr
    assert (f"{(out / 'skills.json').as_posix()}: error[no-index]: cannot read the skills index: {REASON[kind]}"
            in done.stdout)


@pytest.mark.slow
def test_serve_refuses_a_deeply_nested_skills_json_naming_it(out):
    (out / "skills.json").write_text(deep_json(), "utf-8")
    done = serve_load(out)
    no_traceback(done)
    assert done.returncode == 1, done.stdout + done.stderr
    assert (f"{(out / 'skills.json').as_posix()}: error[bad-index]: the skills index is not valid JSON: "
            "nested deeper than 64 levels") in done.stdout


@pytest.mark.slow
def test_the_bad_inputs_corpus_case_is_refused_by_serve_check_and_build(out):
    """tests/bad_inputs/bad-index-too-deep.skills.json: the hostile index, for every reader of the tree."""
    shutil.copyfile(ROOT / "tests" / "bad_inputs" / "bad-index-too-deep.skills.json", out / "skills.json")
    assert "error[bad-index]" in serve_load(out).stdout
    assert cli("check", str(EXAMPLES), "--out", str(out), "--no-cache").returncode == 1
    done = cli("build", str(EXAMPLES), "--out", str(out), "--no-cache")
    no_traceback(done)
    assert done.returncode == 1 and "nested deeper than 64 levels" in done.stderr


# ------------------------------------------------------------------------------------- the verdicts, in process

def _build():
    return output.compile_paths([str(EXAMPLES)])


def test_compare_records_why_a_file_is_not_read(out, tmp_path):
    (out / "hello-world" / "SKILL.md").unlink()
    (out / "hello-world" / "SKILL.md").symlink_to(GENERATED / "hello-world" / "SKILL.md")  # the right bytes, by a link
    fifo(out / "code-mode" / "stray")  # in a folder the build owns: extra, as a file would be
    cmp = output.compare(_build(), out)
    assert cmp.stale == ["hello-world/SKILL.md"] and cmp.missing == [] and cmp.extra == ["code-mode/stray"]
    assert cmp.unread == {"hello-world/SKILL.md": "it is a symbolic link, which is not followed"}
    assert cmp.diff == "a/hello-world/SKILL.md is not what the build writes: it is a symbolic link, which is not " \
                       "followed\n"
    assert output.compare(_build(), out, diff=False).diff == ""


def test_compare_reads_a_stale_file_up_to_the_sep_limit_or_the_expected_size(out, monkeypatch):
    build = _build()
    skill = out / "hello-world" / "SKILL.md"
    expected = build.files["hello-world/SKILL.md"]
    skill.write_bytes(expected + b"x")  # one byte more: still read, and diffed
    monkeypatch.setattr(output, "MAX_BYTES", len(expected) + 1)
    assert output.compare(build, out).unread == {}
    skill.write_bytes(expected + b"xy")
    assert output.compare(build, out).unread == {
        "hello-world/SKILL.md": f"it is {len(expected) + 2} bytes, over the limit of {len(expected) + 1}"}
    monkeypatch.setattr(output, "MAX_BYTES", 1)  # then the size the build writes bounds the read
    skill.write_bytes(expected[:-1] + b"y")
    cmp = output.compare(build, out)
    assert cmp.stale == ["hello-world/SKILL.md"] and cmp.unread == {}
    assert cmp.diff.startswith("--- a/hello-world/SKILL.md\n+++ b/hello-world/SKILL.md\n@@ ")
    assert "procedure does.y\n\\ No newline at end of file\n" in cmp.diff
    skill.write_bytes(expected + b"x")
    assert output.compare(build, out).unread == {
        "hello-world/SKILL.md": f"it is {len(expected) + 1} bytes, over the limit of {len(expected)}"}


def test_write_reads_no_more_than_the_size_it_expects(out, monkeypatch):
    from projector import bounded

    build = _build()
    limits = []
    real = bounded.read_regular
    monkeypatch.setattr(output, "read_regular", lambda p, limit: limits.append(limit) or real(p, limit))
    assert output.write(build, out) is False
    index = build.files["skills.json"]
    assert sorted(limits) == sorted([max(output.MAX_INDEX_BYTES, 2 * len(index)),
                                     *(len(data) for data in build.files.values())])


def test_the_previous_index_is_read_with_a_bound(out, monkeypatch):
    build = _build()
    assert output._owned_dirs(out, 1 << 20)[:2] == ({"code-mode", "hello-world", "refund-flow", "refund-flow-approved",
                                                    "refund-flow-gated"}, "")
    assert output._owned_dirs(out / "nowhere", 1 << 20)[:2] == (set(), "")
    size = len(build.files["skills.json"])
    assert output._owned_dirs(out, 10)[:2] == (set(), f"it is {size} bytes, over the limit of 10")
    for text, why in [("[1]", "it is not a skills index"), ('{"skills": [{"uri": 1}]}', "it is not a skills index"),
                      ('{"skills": [1]}', "it is not a skills index"), ("{", "not JSON: Expecting property name "
                      "enclosed in double quotes"), ('{"skills": [], "skills": []}',
                                                     'the key "skills" appears twice in one object')]:
        (out / "skills.json").write_text(text, "utf-8")
        assert output._owned_dirs(out, 1 << 20)[:2] == (set(), why), text
