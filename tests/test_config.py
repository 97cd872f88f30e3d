"""The configuration file, ``[tool.project-skill]`` in ``pyproject.toml``, through the CLI: a project that keeps its
flags there builds and checks with none; a flag overrides the file; paths are relative to the file's folder; every
mistake in the file is an error at ``pyproject.toml:LINE:COL`` with a code (exit 2, nothing written, no traceback);
and a ``pyproject.toml`` without the table changes nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, snapshot_tree
from projector.remote.tools import snapshot_bytes

WF = """name: {name}
description: Look a thing up.
tools:
  - name: lookup
    annotations: {{readOnlyHint: true}}
steps:
  - name: find
    tool: lookup
"""

# A workflow with one unacknowledged warning: --strict fails on it.
WARNING_WF = """name: gated
description: Refund when eligible.
tools:
  - name: refund
    annotations: {destructiveHint: true}
steps:
  - name: s
    tool: refund
    guidance: Only if eligible.
"""

# A workflow that declares no tools: their declarations come from the tools snapshot alone.
BARE_WF = """name: snap
description: Ping the server.
steps:
  - name: p
    tool: ping
"""


def project(root: Path, table: str | None, files: dict[str, str] | None = None) -> Path:
    """A project folder: a pyproject.toml (with ``table`` under ``[tool.project-skill]``, or none when None) and
    ``files``."""
    if table is not None:
        (root / "pyproject.toml").write_text(f'[project]\nname = "demo"\n\n[tool.project-skill]\n{table}', "utf-8")
    for rel, text in (files or {}).items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")
    return root


def test_a_project_with_only_the_table_builds_and_checks_with_no_flags(cli, tmp_path):
    (tmp_path / "tools.json").write_bytes(snapshot_bytes([{"name": "ping", "inputSchema": {"type": "object"},
                                                          "annotations": {"readOnlyHint": True}}]))
    project(tmp_path, 'workflows = ["flows"]\nout = "skills"\ntools-from = "tools.json"\nuri-prefix = "acme"\n',
            {"flows/snap.yaml": BARE_WF})
    run = cli("build", cwd=tmp_path)
    assert run.code == 0, run.err
    assert (tmp_path / "skills" / "acme" / "snap" / "SKILL.md").is_file()
    assert "(configuration: pyproject.toml)" in run.out
    check = cli("check", cwd=tmp_path)
    assert check.code == 0, check.err
    assert check.out.startswith("skills is up to date: 1 skill;")
    assert check.out.rstrip().endswith("(configuration: pyproject.toml)")


def test_paths_in_the_file_are_relative_to_its_folder(cli, tmp_path):
    project(tmp_path, 'workflows = "flows"\nout = "skills"\n', {"flows/a.yaml": WF.format(name="a")})
    sub = tmp_path / "deep" / "er"
    sub.mkdir(parents=True)
    run = cli("build", cwd=sub)
    assert run.code == 0, run.err
    assert (tmp_path / "skills" / "a" / "SKILL.md").is_file()
    assert not (sub / "skills").exists()
    check = cli("check", cwd=sub)
    assert check.code == 0, check.err
    assert "(configuration: ../../pyproject.toml)" in check.out


def test_default_paths_are_the_files_folder_too(cli, tmp_path):
    project(tmp_path, "strict = false\n", {"workflows/a.yaml": WF.format(name="a")})
    (tmp_path / "sub").mkdir()
    assert cli("build", cwd=tmp_path / "sub").code == 0
    assert (tmp_path / "generated_skills" / "a" / "SKILL.md").is_file()


def test_a_flag_overrides_the_file(cli, tmp_path):
    project(tmp_path, 'strict = true\nout = "skills"\n', {"workflows/gated.yaml": WARNING_WF})
    strict = cli("build", cwd=tmp_path)
    assert strict.code == 1
    assert "--strict" in strict.err and not (tmp_path / "skills").exists()
    loose = cli("build", "--no-strict", "--out", "elsewhere", cwd=tmp_path)
    assert loose.code == 0, loose.err
    assert (tmp_path / "elsewhere" / "gated" / "SKILL.md").is_file()
    assert not (tmp_path / "skills").exists()
    # check reads the same file: strict again, unless the flag says otherwise
    assert cli("check", "--out", "elsewhere", cwd=tmp_path).code == 1
    assert cli("check", "--out", "elsewhere", "--no-strict", cwd=tmp_path).code == 0


def test_paths_on_the_command_line_override_the_files_workflows(cli, tmp_path):
    project(tmp_path, 'workflows = "missing"\nout = "skills"\n', {"other/b.yaml": WF.format(name="b")})
    run = cli("build", "other", cwd=tmp_path)
    assert run.code == 0, run.err
    assert (tmp_path / "skills" / "b" / "SKILL.md").is_file()  # the paths from the flag, the rest from the file


def test_skills_only_and_workflow_tools_come_from_the_file(cli, tmp_path):
    project(tmp_path, "workflow-tools = true\n", {"workflows/a.yaml": WF.format(name="a")})
    assert cli("build", cwd=tmp_path).code == 0
    assert "workflow-tool" in (tmp_path / "generated_skills" / "a" / "SKILL.md").read_text("utf-8")
    both = cli("build", "--skills-only", cwd=tmp_path)
    assert both.code == 2 and "--skills-only and --workflow-tools" in both.err
    assert cli("build", "--skills-only", "--no-workflow-tools", cwd=tmp_path).code == 0
    assert "workflow-tool" not in (tmp_path / "generated_skills" / "a" / "SKILL.md").read_text("utf-8")


def test_a_pyproject_without_the_table_changes_nothing(cli, tmp_path):
    bare, configured = tmp_path / "bare", tmp_path / "with"
    for root in (bare, configured):
        root.mkdir()
        project(root, None, {"workflows/a.yaml": WF.format(name="a")})
    (configured / "pyproject.toml").write_text('[project]\nname = "demo"\n\n[tool.ruff]\nline-length = 80\n')
    runs = [cli("build", cwd=root) for root in (bare, configured)]
    assert [r.code for r in runs] == [0, 0]
    assert runs[0].out == runs[1].out and "configuration" not in runs[1].out
    assert snapshot_tree(bare / "generated_skills") == snapshot_tree(configured / "generated_skills")


def test_the_walk_stops_at_the_first_pyproject(cli, tmp_path):
    """A nested project's own pyproject.toml, even without the table, keeps its parent's settings out."""
    project(tmp_path, "strict = true\n")
    inner = project(tmp_path / "inner", None, {"workflows/gated.yaml": WARNING_WF})
    outer = cli("build", "workflows", "--out", "out", cwd=inner)  # no pyproject.toml here: the parent's is read
    assert outer.code == 1 and "--strict" in outer.err
    (inner / "pyproject.toml").write_text('[project]\nname = "inner"\n')
    run = cli("build", "workflows", "--out", "out", cwd=inner)
    assert run.code == 0, run.err
    assert "configuration" not in run.out


def test_no_config_and_config_file(cli, tmp_path):
    project(tmp_path, "nonsense = 1\n", {"workflows/a.yaml": WF.format(name="a")})
    assert cli("build", cwd=tmp_path).code == 2
    assert cli("build", "--no-config", cwd=tmp_path).code == 0
    (tmp_path / "ci").mkdir()
    (tmp_path / "ci" / "project.toml").write_text('[tool.project-skill]\nworkflows = "../workflows"\nout = "out"\n')
    run = cli("check", "--config", "ci/project.toml", cwd=tmp_path)
    assert run.code == 1 and "ci/out and ci/out-evals are out of date" in run.out and "(configuration: ci/project.toml)" in run.out
    assert "run: project-skill build --config ci/project.toml" in run.out
    assert cli("build", "--config", "ci/project.toml", cwd=tmp_path).code == 0
    assert (tmp_path / "ci" / "out" / "a" / "SKILL.md").is_file()
    lacking = cli("build", "--config", "ci/none.toml", cwd=tmp_path)
    assert lacking.code == 2 and "ci/none.toml" in lacking.err
    (tmp_path / "ci" / "empty.toml").write_text("[tool.other]\n")
    empty = cli("build", "--config", "ci/empty.toml", cwd=tmp_path)
    assert empty.code == 2 and "ci/empty.toml:1:1: error[no-table]" in empty.err
    both = cli("build", "--config", "ci/project.toml", "--no-config", cwd=tmp_path)
    assert both.code == 2


BAD = [
    pytest.param('strict = true\nworkflow_tools = true\n', "pyproject.toml:6:1: error[unknown-key]: unknown key "
                 "'workflow_tools' in [tool.project-skill]\n  hint: did you mean 'workflow-tools'?", id="unknown-key"),
    pytest.param('  "colour" = "blue"\n', "pyproject.toml:5:3: error[unknown-key]: unknown key 'colour' in "
                 "[tool.project-skill]\n  hint: the keys are: workflows, out, evals-out, tools-from, strict, uri-prefix, "
                 "skills-only, workflow-tools", id="unknown-quoted-key"),
    pytest.param('out = "x"\nstrict = "yes"\n', "pyproject.toml:6:1: error[wrong-type]: 'strict' in "
                 "[tool.project-skill] must be true or false, not a string", id="wrong-type-bool"),
    pytest.param('workflows = ["a", 2]\n', "pyproject.toml:5:1: error[wrong-type]: 'workflows' in "
                 "[tool.project-skill] must be a path or a non-empty array of paths, not an array", id="wrong-type-list"),
    pytest.param('out = ""\n', "pyproject.toml:5:1: error[wrong-type]: 'out' in [tool.project-skill] must be a "
                 "non-empty string (a path), not an empty string", id="empty-out"),
    pytest.param('uri-prefix = "A/b"\n', "pyproject.toml:5:1: error[wrong-type]: 'uri-prefix' in "
                 "[tool.project-skill] must be a URI prefix such as a/b (URI prefix segment 'A' must be lowercase "
                 "letters, digits and single hyphens), not a string", id="bad-uri-prefix"),
    pytest.param('strict = tru\n', "pyproject.toml:5:10: error[malformed-toml]: not valid TOML: Invalid value",
                 id="malformed-toml"),
    pytest.param('strict = true\nstrict = false\n', "pyproject.toml:6:", id="duplicate-key"),
]


@pytest.mark.parametrize(("table", "expected"), BAD)
def test_each_mistake_in_the_file_is_a_positioned_error(cli, tmp_path, table, expected):
    project(tmp_path, table, {"workflows/a.yaml": WF.format(name="a")})
    for command in ("build", "check"):
        run = cli(command, cwd=tmp_path)
        assert run.code == 2, run.err
        assert expected in run.err
        assert "Traceback" not in run.err
    assert not (tmp_path / "generated_skills").exists()


def test_every_mistake_is_reported_at_once(cli, tmp_path):
    project(tmp_path, 'strict = 1\nwho = "me"\nout = ["a"]\n')
    run = cli("check", cwd=tmp_path)
    assert run.code == 2
    assert [line.split(": error")[0] for line in run.err.splitlines() if ": error[" in line] == [
        "pyproject.toml:5:1", "pyproject.toml:6:1", "pyproject.toml:7:1"]


@pytest.mark.parametrize(("text", "expected"), [
    pytest.param(b'[tool.project-skill]\nout = "\xff"\n', "pyproject.toml:2:8: error[encoding]", id="not-utf8"),
    pytest.param(b'[tool]\nproject-skill = 3\n', "pyproject.toml:2:1: error[wrong-type]: [tool.project-skill] must "
                 "be a table, not an integer", id="table-not-a-table"),
    pytest.param(b'[tool.project-skill]\nout = "a"\n[tool.project-skill.more]\nx = 1\n',
                 "pyproject.toml:3:1: error[unknown-key]: unknown key 'more'", id="sub-table"),
    pytest.param(b'tool.project-skill.strikt = true\n', "pyproject.toml:1:20: error[unknown-key]", id="dotted"),
    pytest.param(b'[tool.project-skill]\nout = """never closed\n', "pyproject.toml:3:1: error[malformed-toml]",
                 id="unterminated"),
])
def test_the_files_own_mistakes(cli, tmp_path, text, expected):
    (tmp_path / "pyproject.toml").write_bytes(text)
    run = cli("build", cwd=tmp_path)
    assert run.code == 2
    assert expected in run.err
    assert "Traceback" not in run.err


def test_the_read_is_bounded(cli, tmp_path):
    (tmp_path / "pyproject.toml").write_bytes(b"# padding\n" * 200_000)
    run = cli("check", cwd=tmp_path)
    assert run.code == 2
    assert "pyproject.toml: error[io]: cannot read the configuration file: it is 2000000 bytes, over the limit" in (
        run.err)


def test_a_pyproject_that_is_a_folder_is_an_error(cli, tmp_path):
    (tmp_path / "pyproject.toml").mkdir()
    run = cli("build", cwd=tmp_path)
    assert run.code == 2 and "pyproject.toml: error[io]" in run.err


PROBE = """
import json, sys
before = set(sys.modules)
from projector.cli import main
code = main(sys.argv[2:])
with open(sys.argv[1], "w", encoding="utf-8") as fh:
    json.dump({"code": code, "tomllib": "tomllib" in sys.modules and "tomllib" not in before}, fh)
"""


@pytest.mark.slow
@pytest.mark.parametrize("table", [None, 'out = "generated_skills"\n'])
def test_tomllib_is_imported_only_when_there_is_a_file(tmp_path, table):
    root = project(tmp_path, table, {"workflows/a.yaml": WF.format(name="a")})
    report = tmp_path / "probe.json"
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "-c", PROBE, str(report), "build", "--no-cache"], cwd=root, env=env,
                   capture_output=True, timeout=120, check=False)
    got = json.loads(report.read_text("utf-8"))
    assert got == {"code": 0, "tomllib": table is not None}


def test_the_pre_commit_hooks_need_no_arguments(cli, tmp_path):
    """The hooks run their entry as written, with no arguments: the project's table supplies them, and a change to
    pyproject.toml runs them too."""
    import re
    import shlex

    import yaml

    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text("utf-8"))
    (tmp_path / "tools.json").write_bytes(snapshot_bytes([{"name": "ping", "inputSchema": {"type": "object"},
                                                          "annotations": {"readOnlyHint": True}}]))
    project(tmp_path, 'tools-from = "tools.json"\nstrict = true\n', {"workflows/snap.yaml": BARE_WF})
    for hook in sorted(hooks, key=lambda h: h["id"]):  # build, then check
        assert re.search(hook["files"], "pyproject.toml") and re.search(hook["files"], "sub/pyproject.toml")
        assert "args" not in hook
        argv = shlex.split(hook["entry"])
        assert argv[0] == "project-skill"
        run = cli(*argv[1:], cwd=tmp_path)
        assert run.code == 0, run.err
        assert "(configuration: pyproject.toml)" in run.out


def test_init_takes_its_tools_and_folder_from_the_file(cli, tmp_path):
    (tmp_path / "tools.json").write_bytes(snapshot_bytes([{"name": "ping", "inputSchema": {"type": "object"},
                                                          "annotations": {"readOnlyHint": True}}]))
    project(tmp_path, 'workflows = ["flows"]\ntools-from = "tools.json"\n')
    sub = tmp_path / "sub"
    sub.mkdir()
    run = cli("init", "hello", "--tool", "ping", cwd=sub)
    assert run.code == 0, run.err
    assert (tmp_path / "flows" / "hello.yaml").is_file()
    assert "then run: project-skill build (configuration: ../pyproject.toml)" in run.err
    bare = cli("init", "other", "--tool", "ping", "--no-config", cwd=sub)
    assert bare.code == 2 and "--tools-from" in bare.err
    assert not (sub / "workflows").exists()


def test_a_hostile_table_is_refused_quickly(cli, tmp_path):
    """Thousands of wrong keys: a bounded number are located and reported, the rest counted; a nesting that would
    exhaust tomllib's recursion is an error, not a traceback."""
    keys = "".join(f"k{i} = 1\n" for i in range(5000))
    project(tmp_path, keys)
    run = cli("check", cwd=tmp_path)
    assert run.code == 2
    assert "pyproject.toml:4:1: error[unknown-key]: [tool.project-skill] has 4980 more problems" in run.err
    assert run.err.count("error[unknown-key]: unknown key") == 20
    (tmp_path / "pyproject.toml").write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    deep = cli("check", cwd=tmp_path)
    assert deep.code == 2 and "pyproject.toml:1:1: error[malformed-toml]" in deep.err
    assert "Traceback" not in deep.err


def test_a_server_command_line_in_the_file_is_refused_and_never_run(cli, tmp_path):
    """A ``pyproject.toml`` comes with the repository (a clone, a pull request), and the hooks run on it: a command
    line there would start any program on the machine of whoever runs ``check``. The file may name a tools snapshot
    or an ``http(s)://`` URL; a server to start is given on the command line (``--tools-from``), which is the
    user's own."""
    (tmp_path / "tools.json").write_bytes(snapshot_bytes([{"name": "ping", "inputSchema": {"type": "object"},
                                                          "annotations": {"readOnlyHint": True}}]))
    command = f"{sys.executable} -c \"open('ran', 'w').close()\" tools.json"
    project(tmp_path, f"strict = true\ntools-from = {json.dumps(command)}\n", {"workflows/snap.yaml": BARE_WF})
    for argv in (["build"], ["check"], ["init", "hello", "--tool", "ping"]):
        run = cli(*argv, cwd=tmp_path)
        assert run.code == 2, run.err
        assert "pyproject.toml:6:1: error[wrong-type]: 'tools-from' in [tool.project-skill] must be a tools " in run.err
        assert "--tools-from" in run.err and "Traceback" not in run.err
        assert not (tmp_path / "ran").exists()
    assert not (tmp_path / "generated_skills").exists() and not (tmp_path / "workflows" / "hello.yaml").exists()


@pytest.mark.parametrize(("table", "shown"), [
    pytest.param('out = "/tmp/anywhere"\n', "'out' in [tool.project-skill] must be a relative path that stays inside "
                 "the folder of pyproject.toml, not '/tmp/anywhere'", id="absolute-out"),
    pytest.param('out = "skills/../../x"\n', "not 'skills/../../x'", id="dotdot-out"),
    pytest.param('workflows = ["workflows", "../elsewhere"]\n', "'workflows' in [tool.project-skill] must be a "
                 "relative path", id="dotdot-workflows"),
    pytest.param('tools-from = "../tools.json"\n', "'tools-from' in [tool.project-skill] must be a relative path",
                 id="dotdot-tools-from"),
])
def test_a_path_in_the_file_that_leaves_the_project_is_refused(cli, tmp_path, table, shown):
    """Review of wave 2: ``out = "/anywhere"`` or ``"../../x"`` was taken, so a cloned repository's file decided where
    ``build`` wrote. A path in the file stays inside the file's folder; the command line may still name any path."""
    (tmp_path / "repo").mkdir()
    root = project(tmp_path / "repo", table, {"workflows/a.yaml": WF.format(name="a")})
    before = snapshot_tree(tmp_path)
    for command in ("build", "check"):
        run = cli(command, cwd=root)
        assert run.code == 2, run.err
        assert "pyproject.toml:5:1: error[outside-project]: '" in run.err and shown in run.err, run.err
        assert "Traceback" not in run.err
    assert snapshot_tree(tmp_path) == before
    out = tmp_path / "elsewhere-out"
    assert cli("build", "--no-config", str(root / "workflows"), "--out", str(out), cwd=root).code == 0
    assert (out / "a" / "SKILL.md").is_file()


def _clone_with_links(tmp_path: Path, table: str) -> tuple[Path, Path]:
    """Issue 38 (6): a clone whose committed links lead out of it (``gen -> ../elsewhere/gen``, ``wf ->
    ../elsewhere/wf``, ``tools.json -> ../elsewhere/tools.json``), the folder they lead to holding a workflow."""
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "gen").mkdir(parents=True)
    (elsewhere / "wf").mkdir()
    (elsewhere / "wf" / "a.yaml").write_text(WF.format(name="a"), "utf-8")
    (elsewhere / "tools.json").write_bytes(snapshot_bytes([{"name": "lookup", "inputSchema": {"type": "object"}}]))
    (tmp_path / "clone").mkdir()
    root = project(tmp_path / "clone", table, {"workflows/b.yaml": WF.format(name="b")})
    links = {"gen": "gen", "wf": "wf", "tools.json": "tools.json", "generated_skills": "wf", "ev": "gen"}
    links["evals"] = "gen"  # where the eval cases of out = "skills" go by default
    for name, to in links.items():
        (root / name).symlink_to(Path("..", "elsewhere", to))
    return root, elsewhere


@pytest.mark.parametrize(
    ("table", "shown"),
    [
        pytest.param('out = "gen"\nworkflows = "wf"\n', "pyproject.toml:6:1: error[outside-project]: 'workflows' "
                     "in [tool.project-skill] must stay inside the folder of pyproject.toml, but 'wf' leads out of "
                     "it through a link, to '", id="out-and-workflows"),
        pytest.param('out = "gen/skills"\n', "pyproject.toml:5:1: error[outside-project]: 'out' in "
                     "[tool.project-skill] must stay inside the folder of pyproject.toml, but 'gen/skills' leads out",
                     id="a-link-on-the-way"),
        pytest.param('tools-from = "tools.json"\n', "error[outside-project]: 'tools-from'", id="tools-from"),
        pytest.param('out = "skills"\nevals-out = "ev"\n', "pyproject.toml:6:1: error[outside-project]: "
                     "'evals-out' in [tool.project-skill] must stay inside", id="evals-out"),
        pytest.param('out = "skills"\n', "pyproject.toml:4:1: error[outside-project]: the default 'evals-out' "
                     "('evals', from the folder of pyproject.toml) leads out", id="the-default-evals-out"),
        pytest.param('strict = false\n', "pyproject.toml:4:1: error[outside-project]: the default 'out' "
                     "('generated_skills', from the folder of pyproject.toml) leads out of that folder through a "
                     "link, to '", id="the-default-out"),
    ],
)
def test_a_path_in_the_file_that_a_committed_link_leads_out_of_the_project_is_refused(cli, tmp_path, table, shown):
    """Issue 38 (6): the paths were checked as written, so a clone's committed links made a plain ``build`` write
    its tree outside the clone and compile files from outside. Resolved, a path from the file (or a default one,
    which is relative to the file's folder too) stays inside the project; nothing is read or written."""
    root, elsewhere = _clone_with_links(tmp_path, table)
    before = snapshot_tree(tmp_path)
    for command in ("build", "check"):
        run = cli(command, cwd=root)
        assert run.code == 2, run.err
        assert shown in run.err and "Traceback" not in run.err, run.err
    assert snapshot_tree(tmp_path) == before
    assert list((elsewhere / "gen").iterdir()) == []
    out = tmp_path / "chosen"  # the command line, the user's own, still names any path, links or not
    assert cli("build", "--no-config", str(root / "wf"), "--out", str(out), cwd=root).code == 0
    assert (out / "a" / "SKILL.md").is_file()


def test_a_link_that_stays_inside_the_project_is_followed(cli, tmp_path):
    root = project(tmp_path, 'out = "gen"\nworkflows = "wf"\n', {"flows/a.yaml": WF.format(name="a")})
    (root / "skills").mkdir()
    (root / "gen").symlink_to("skills")
    (root / "wf").symlink_to("flows")
    run = cli("build", cwd=root)
    assert run.code == 0, run.err
    assert (root / "skills" / "a" / "SKILL.md").is_file()


def test_a_path_inside_the_project_may_name_a_dotdot_that_stays_inside(cli, tmp_path):
    root = project(tmp_path, 'out = "build/../skills"\n', {"workflows/a.yaml": WF.format(name="a")})
    assert cli("build", cwd=root).code == 0
    assert (tmp_path / "skills" / "a" / "SKILL.md").is_file()
