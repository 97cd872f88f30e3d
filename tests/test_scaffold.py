"""``project-skill init``: a new workflow file from a server's tools (here, a snapshot). It is never written over an
existing file; it is refused by ``build`` until its description placeholder is replaced, and then builds as written,
and ``check`` passes offline with the snapshot or with the tools inline. The YAML is written by a library, is the
same bytes every time, and reads the same under YAML 1.1 and 1.2."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from projector import disk, scaffold
from projector.remote.tools import read_snapshot, snapshot_bytes
from projector.validate import DESCRIPTION_PLACEHOLDER
from projector.yaml12 import load_core

TRAPS = ["yes", "on", "0o17", "1e3", "2024-01-15", "null", "~", "1_000", "12:30", "=", "<<", "True", "0x1F", ""]

TOOLS = [
    {"name": "lookup", "description": "Look a thing up: by id.",
     "inputSchema": {"type": "object", "required": ["id", "limit", "exact", "ratio"],
                     "properties": {"id": {"type": "string", "description": "The thing's id"},
                                    "limit": {"type": "integer", "title": "Limit"},
                                    "exact": {"type": "boolean"},
                                    "ratio": {"type": "number", "default": 1e-07},
                                    "verbose": {"type": "boolean", "default": False,
                                                "description": "Say more.\nOn two lines."},
                                    "mode": {"enum": TRAPS, "default": "yes"}}},
     "outputSchema": {"type": "object", "properties": {"found": {"type": "boolean"}}},
     "annotations": {"readOnlyHint": True}},
    {"name": "record", "description": "yes",
     "inputSchema": {"type": "object", "required": ["id", "note"],
                     "properties": {"id": {"type": "integer"}, "note": {"anyOf": [{"type": "string"},
                                                                                  {"type": "null"}]},
                                    "on": {"type": "string", "examples": TRAPS}}},
     "annotations": {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": True}},
    {"name": "ping", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
    {"name": "stage", "description": "Stage files.",
     "inputSchema": {"type": "object", "required": ["files"],
                     "properties": {"files": {"type": "array", "items": {"type": "string"}}}}},
]


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tools.json").write_bytes(snapshot_bytes(TOOLS))
    return tmp_path


def init(cli, *tools: str, name: str = "start", out: str | None = None):
    args = ["init", name, "--tools-from", "tools.json", *[a for t in tools for a in ("--tool", t)]]
    return cli(*args, *(["--out", out] if out else []))


def test_init_writes_a_workflow_that_builds_once_described_and_checks_offline(cli, project):
    run = init(cli, "lookup", "record", "ping")
    assert run.code == 0, run.err
    path = project / "workflows" / "start.yaml"
    text = path.read_text("utf-8")
    assert text.startswith("# yaml-language-server: $schema=workflow.schema.json\nname: start\n")
    assert "replace its description, then run: project-skill build workflows" in run.err

    refused = cli("build")
    assert refused.code == 1
    assert "workflows/start.yaml:3:14: error[placeholder-description]" in refused.err
    assert not (project / "generated_skills").exists()

    path.write_text(text.replace(DESCRIPTION_PLACEHOLDER, "Look a thing up and record it."), encoding="utf-8")
    built = cli("build")
    assert built.code == 0, built.err
    skill = (project / "generated_skills" / "start" / "SKILL.md").read_text("utf-8")
    assert "lookup" in skill and "record" in skill and "ping" in skill
    assert cli("check", "--strict").code == 0  # the tools inline
    offline = cli("check", "--strict", "--tools-from", "tools.json")  # the tools from the snapshot
    assert offline.code == 0, offline.err
    assert "tool-mismatch" not in offline.err


def test_the_scaffold_wires_required_parameters_and_lists_optional_ones(project, cli):
    assert init(cli, "record", "lookup", "record").code == 0
    doc = yaml.safe_load((project / "workflows" / "start.yaml").read_text("utf-8"))
    assert [s["name"] for s in doc["steps"]] == ["record", "lookup", "record_2"]  # --tool order, names unique
    assert [s["tool"] for s in doc["steps"]] == ["record", "lookup", "record"]
    assert [t["name"] for t in doc["tools"]] == ["record", "lookup"]
    args = {a["name"]: a for a in doc["arguments"]}
    # id and note are required by more than one step: each step gets its own, named after it; none is shared
    assert {n: a["type"] for n, a in args.items()} == {
        "record_id": "integer", "record_note": "string", "lookup_id": "string", "limit": "integer",
        "exact": "boolean", "ratio": "number", "record_2_id": "integer", "record_2_note": "string"}
    assert all(a["required"] is True for a in args.values())
    assert args["lookup_id"]["description"] == "The thing's id (for step 'lookup')"
    assert args["limit"]["description"] == "Limit"
    assert doc["steps"][1]["args"] == {"id": {"arg": "lookup_id"}, "limit": {"arg": "limit"},
                                       "exact": {"arg": "exact"}, "ratio": {"arg": "ratio"}}
    assert doc["steps"][2]["args"] == {"id": {"arg": "record_2_id"}, "note": {"arg": "record_2_note"}}
    lookup = next(t for t in doc["tools"] if t["name"] == "lookup")
    source = read_snapshot(project / "tools.json")["lookup"]
    assert lookup == {"name": "lookup", "description": source.description, "input_schema": source.input_schema,
                      "output_schema": source.output_schema, "annotations": source.annotations}
    text = (project / "workflows" / "start.yaml").read_text("utf-8")
    assert "    # optional parameters of lookup; to pass one, add it under args" in text
    assert "    #   verbose (boolean; default false): Say more. On two lines.\n" in text
    assert '    #   mode (any type; default "yes")\n' in text
    assert "    #   on (string)\n" in text


def test_the_yaml_is_deterministic_and_reads_the_same_under_yaml_1_1_and_1_2(project, cli):
    assert init(cli, "lookup", "record", out="a.yaml").code == 0
    assert init(cli, "lookup", "record", out="b.yaml").code == 0
    a = (project / "a.yaml").read_bytes()
    assert a == (project / "b.yaml").read_bytes()
    assert a.endswith(b"\n") and not a.endswith(b"\n\n") and b"\r" not in a
    text = a.decode()
    one, two = yaml.safe_load(text), load_core(text)
    assert one == two
    record = next(t for t in one["tools"] if t["name"] == "record")
    assert record["description"] == "yes"  # a string under both, not a boolean
    assert record["input_schema"]["properties"]["on"]["examples"] == TRAPS
    assert "on" in record["input_schema"]["properties"]  # a key, not True
    lookup = next(t for t in one["tools"] if t["name"] == "lookup")
    assert lookup["input_schema"]["properties"]["ratio"]["default"] == 1e-07
    assert type(lookup["input_schema"]["properties"]["ratio"]["default"]) is float
    assert "ratio:\n" in text and "default: 1.0e-07" in text


def test_an_optional_number_parameter_is_listed_as_a_number(project, cli):
    """JSON Schema's ``number`` admits integers, but the comment names the type the schema says: "number"."""
    tools = [{"name": "tip", "inputSchema": {"type": "object", "properties": {"rate": {"type": "number"},
                                                                            "n": {"type": ["integer", "null"]}}},
              "annotations": {"readOnlyHint": True}}]
    (project / "tools.json").write_bytes(snapshot_bytes(tools))
    assert init(cli, "tip").code == 0
    text = (project / "workflows" / "start.yaml").read_text("utf-8")
    assert "    #   rate (number)\n" in text and "    #   n (integer or null)\n" in text


def test_init_never_writes_over_an_existing_file(project, cli):
    target = project / "workflows" / "start.yaml"
    target.parent.mkdir()
    target.write_text("mine\n", encoding="utf-8")
    run = init(cli, "ping")
    assert run.code == 2 and "workflows/start.yaml already exists" in run.err
    assert target.read_text("utf-8") == "mine\n"
    dangling = project / "workflows" / "link.yaml"
    dangling.symlink_to(project / "nowhere.yaml")
    assert init(cli, "ping", out=str(dangling)).code == 2 and not (project / "nowhere.yaml").exists()


def test_the_exclusive_write_refuses_a_name_taken_at_the_last_moment(tmp_path, monkeypatch):
    """The check before writing can race; the write itself takes the name only if nothing has it (a hard link, or
    O_EXCL where links are refused), and leaves no temporary file."""
    target = tmp_path / "w.yaml"
    real_link = os.link

    def racing_link(src, dst):
        Path(dst).write_text("theirs\n")
        return real_link(src, dst)

    monkeypatch.setattr(os, "link", racing_link)
    with pytest.raises(FileExistsError):
        disk.write_file(target, b"ours\n", exclusive=True)
    assert target.read_text() == "theirs\n" and sorted(os.listdir(tmp_path)) == ["w.yaml"]

    def no_links(src, dst):
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(os, "link", no_links)
    target.unlink()
    disk.write_file(target, b"ours\n", exclusive=True)
    assert target.read_bytes() == b"ours\n" and sorted(os.listdir(tmp_path)) == ["w.yaml"]
    with pytest.raises(FileExistsError):
        disk.write_file(target, b"again\n", exclusive=True)
    assert target.read_bytes() == b"ours\n"


@pytest.mark.parametrize("tools, words", [
    (("stage",), "the tool 'stage' requires 'files', which takes array: no prompt argument can carry it"),
    (("lokup",), "has no tool 'lokup' (did you mean 'lookup'?); its tools: lookup, ping, record, stage"),
])
def test_init_refuses_what_would_not_build_and_writes_nothing(project, cli, tools, words):
    run = init(cli, *tools)
    assert run.code == 2 and words in run.err and "Traceback" not in run.err
    assert not (project / "workflows").exists()


def test_init_refuses_a_bad_name_and_a_bad_source(project, cli):
    bad = init(cli, "ping", name="-bad name-")
    assert bad.code == 2 and "init: the workflow name '-bad name-'" in bad.err
    (project / "broken.json").write_text("{", encoding="utf-8")
    broken = cli("init", "x", "--tools-from", "broken.json", "--tool", "ping")
    assert broken.code == 1 and "broken.json:1:2: error[bad-snapshot]" in broken.err
    assert not (project / "workflows").exists()


def test_the_placeholder_is_refused_in_python_too():
    from projector.builder import WorkflowBuilder, arg
    from projector.errors import LoadError

    with pytest.raises(LoadError) as info:
        (WorkflowBuilder("x", DESCRIPTION_PLACEHOLDER).argument("name", "Who", required=True)
         .tool("greet", "Greet.", input_schema={"type": "object"}, annotations={"readOnlyHint": True})
         .step("greet", tool="greet", args={"name": arg("name")}).build())
    assert [d.code for d in info.value.diagnostics] == ["placeholder-description"]


def test_scaffold_is_pure_and_states_the_schema_comment():
    tools = read_snapshot_from(TOOLS)
    text = scaffold.scaffold("one", tools, ["ping"])
    assert text.splitlines()[0] == f"# {scaffold.SCHEMA_COMMENT}"
    assert "args: {}" in text


def read_snapshot_from(entries):
    from projector.remote.tools import parse_snapshot

    return parse_snapshot(snapshot_bytes(entries), "tools.json")


SQL_TOOLS = [
    {"name": "select_rows", "description": "Run a SELECT.",
     "inputSchema": {"type": "object", "required": ["sql"], "properties": {"sql": {"type": "string"}}},
     "annotations": {"readOnlyHint": True}},
    {"name": "update_rows", "description": "Run an UPDATE.",
     "inputSchema": {"type": "object", "required": ["sql"], "properties": {"sql": {"type": "string"}}},
     "annotations": {"readOnlyHint": False, "destructiveHint": True}},
    {"name": "count_rows", "description": "Count what a SELECT finds.",
     "inputSchema": {"type": "object", "required": ["sql"], "properties": {"sql": {"type": "string"}}},
     "annotations": {"readOnlyHint": True}},
]


def test_two_tools_with_a_parameter_of_one_name_get_distinct_arguments(project, cli):
    """Issue 30 item 7: the SQL for a SELECT tool is never silently the SQL of an UPDATE tool. Each step gets its own
    argument, named after it and saying which step it goes to, and the workflow builds and runs each step with its
    own value."""
    (project / "sql.json").write_bytes(snapshot_bytes(SQL_TOOLS))
    run = cli("init", "audit", "--tools-from", "sql.json", "--tool", "select_rows", "--tool", "update_rows")
    assert run.code == 0, run.err
    path = project / "workflows" / "audit.yaml"
    doc = yaml.safe_load(path.read_text("utf-8"))
    assert [(a["name"], a["description"]) for a in doc["arguments"]] == [
        ("select_rows_sql", "sql (for step 'select_rows')"), ("update_rows_sql", "sql (for step 'update_rows')")]
    assert [s["args"] for s in doc["steps"]] == [{"sql": {"arg": "select_rows_sql"}}, {"sql": {"arg": "update_rows_sql"}}]
    path.write_text(path.read_text("utf-8").replace(DESCRIPTION_PLACEHOLDER, "Audit rows."), encoding="utf-8")
    assert cli("build").code == 0


def test_read_only_steps_share_an_argument_that_says_so(project, cli):
    """Two read-only tools may take one value (one query to run and to count); the argument's description names
    both steps, so the person who fills it in sees where it goes. With a tool that changes something among them,
    no step shares."""
    (project / "sql.json").write_bytes(snapshot_bytes(SQL_TOOLS))
    run = cli("init", "report", "--tools-from", "sql.json", "--tool", "select_rows", "--tool", "count_rows")
    assert run.code == 0, run.err
    doc = yaml.safe_load((project / "workflows" / "report.yaml").read_text("utf-8"))
    assert [(a["name"], a["description"]) for a in doc["arguments"]] == [
        ("sql", "sql (one value for steps 'select_rows', 'count_rows')")]
    assert [s["args"] for s in doc["steps"]] == [{"sql": {"arg": "sql"}}] * 2
    mixed = cli("init", "mixed", "--tools-from", "sql.json", "--tool", "select_rows", "--tool", "count_rows",
                "--tool", "update_rows")
    assert mixed.code == 0, mixed.err
    doc = yaml.safe_load((project / "workflows" / "mixed.yaml").read_text("utf-8"))
    assert [a["name"] for a in doc["arguments"]] == ["select_rows_sql", "count_rows_sql", "update_rows_sql"]


@pytest.mark.parametrize("name, suggestion", [("Restock Item", "restock_item"), ("Crème brûlée", "creme_brulee"),
                                              ("a:b", "a_b"), ("_x", "x")])
def test_init_and_build_refuse_the_same_names(project, cli, name, suggestion):
    """Issue 30 item 6: one rule for a workflow's name. What init refuses, the build refuses at the name, with a
    code and the name to use instead; the suggested name passes both."""
    refused = init(cli, "ping", name=name)
    assert refused.code == 2 and f"name it '{suggestion}'" in refused.err and "Traceback" not in refused.err
    assert not (project / "workflows").exists()
    assert init(cli, "ping", name=suggestion).code == 0
    path = project / "workflows" / f"{suggestion}.yaml"
    text = path.read_text("utf-8").replace(DESCRIPTION_PLACEHOLDER, "Ping.")
    path.write_text(text, encoding="utf-8")
    assert cli("build").code == 0
    path.write_text(text.replace(f"name: {suggestion}\n", f"name: {json.dumps(name)}\n"), encoding="utf-8")
    built = cli("build")
    assert built.code == 1, built.err
    assert f"workflows/{suggestion}.yaml:2:7: error[bad-workflow-name]" in built.err
    assert f"name it '{suggestion}'" in built.err
