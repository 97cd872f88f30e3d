"""Agent Skills' optional frontmatter fields (``license``, ``compatibility``, ``metadata``), the ignored
``allowed-tools``, and the bundle's version stamp ``metadata.workflow-digest`` (issue 19, item 5)."""

from __future__ import annotations

import pytest
import yaml
from skills_ref.validator import validate as agentskills_validate

from projector.builder import WorkflowBuilder
from projector.bundle import bundle
from projector.sep2640 import split_frontmatter
from projector.errors import LoadError
from projector.load import load_data, parse
from projector.render import project, workflow_digest
from test_markdown_structure import _yaml12

BASE = """\
name: fm_demo
description: Show the frontmatter fields.
{extra}tools:
  - name: t
    annotations: {{readOnlyHint: true}}
steps:
  - name: s
    tool: t
"""

ALL = """\
license: Apache-2.0
compatibility: "Needs the demo MCP server: yes, version 1.0"
metadata:
  zeta: "yes"
  author: "null"
  version: "1.0"
  mode: "on"
"""


def load(extra: str = ""):
    return load_data(BASE.format(extra=extra).encode(), "fm.yaml")


def frontmatter_text(wf, **kw) -> str:
    return split_frontmatter(project(wf, **kw).files["SKILL.md"].decode("utf-8"))[0]


def test_every_field_is_written_in_the_fixed_order():
    wf = load(ALL)
    b = bundle(project(wf))
    fm = b.entry["frontmatter"]
    assert list(fm) == ["name", "description", "license", "compatibility", "metadata"]
    assert fm["license"] == "Apache-2.0"
    assert fm["compatibility"] == "Needs the demo MCP server: yes, version 1.0"
    # the tool's keys first (the prompt, the stamp, the tools the steps call), then the workflow's, sorted by key
    assert list(fm["metadata"]) == ["workflow", "workflow-digest", "tools", "author", "mode", "version", "zeta"]
    assert fm["metadata"]["author"] == "null" and fm["metadata"]["mode"] == "on"
    assert fm["metadata"]["workflow-digest"] == workflow_digest(wf)


def test_the_fields_read_the_same_under_yaml_1_1_and_1_2(tmp_path):
    wf = load(ALL)
    text = frontmatter_text(wf)
    read_1_1 = yaml.load(text, Loader=yaml.SafeLoader)
    assert read_1_1 == _yaml12(text)
    assert all(isinstance(v, str) for v in read_1_1["metadata"].values())
    assert read_1_1["metadata"]["zeta"] == "yes" and read_1_1["metadata"]["version"] == "1.0"
    # and skills-ref (the Agent Skills validator) accepts the bundle
    folder = tmp_path / "fm-demo"
    folder.mkdir()
    for rel, data in project(wf).files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    assert agentskills_validate(folder) == []


def test_the_builder_takes_the_same_fields_and_makes_the_same_bytes():
    wf = load(ALL)
    built = WorkflowBuilder("fm_demo", "Show the frontmatter fields.", license="Apache-2.0",
                            compatibility="Needs the demo MCP server: yes, version 1.0",
                            metadata={"mode": "on", "version": "1.0", "author": "null", "zeta": "yes"}).tool(
        "t", annotations={"readOnlyHint": True}).step("s", tool="t").build()
    assert built == wf
    assert project(built).files == project(wf).files


def test_the_stamp_changes_with_the_workflow_and_not_otherwise():
    stamp = workflow_digest(load(ALL))
    assert stamp.startswith("sha256:") and len(stamp) == 7 + 64
    # a comment and another key order change nothing
    reordered = ALL.replace('  zeta: "yes"\n', "") + '  zeta: "yes"  # last now\n'
    assert workflow_digest(load("# a comment\n" + reordered)) == stamp
    # any change to the workflow changes it
    assert workflow_digest(load(ALL.replace("Apache-2.0", "MIT"))) != stamp
    assert workflow_digest(load(ALL.replace('"on"', '"off"'))) != stamp
    assert workflow_digest(load(ALL)) != workflow_digest(load())
    changed = load_data(BASE.format(extra=ALL).replace("name: s", "name: s2").encode(), "fm.yaml")
    assert workflow_digest(changed) != stamp


def test_skills_only_keeps_the_stamp_without_the_workflow_prompt():
    wf = load()
    fm = yaml.safe_load(frontmatter_text(wf, skills_only=True))
    assert fm["metadata"] == {"workflow-digest": workflow_digest(wf), "tools": " ".join(sorted({s.tool for s in wf.steps
                                                                                               if s.tool}))}


def test_allowed_tools_is_accepted_with_a_warning_and_not_written():
    wf = load("allowed-tools: Bash(git:*) Read\n")
    assert wf.allowed_tools == "Bash(git:*) Read"
    projection = project(wf)
    warnings = [d for d in projection.diagnostics if d.code == "allowed-tools-ignored"]
    assert len(warnings) == 1 and warnings[0].severity == "warning"
    assert (warnings[0].span.line, warnings[0].span.col) == (3, 16)
    assert "allowed-tools" not in frontmatter_text(wf)


@pytest.mark.parametrize("extra, code, where", [
    ("metadata:\n  workflow: other\n", "reserved-metadata-key", (4, 3)),
    ("metadata:\n  workflow-digest: sha256:00\n", "reserved-metadata-key", (4, 3)),
    ("compatibility: " + "x" * 501 + "\n", "compatibility-too-long", (3, 16)),
    ("license: ' '\n", "empty-field", (3, 10)),
    ("metadata:\n  version: 1.0\n", "wrong-type", (4, 12)),
    ("metadata: [a]\n", "wrong-type", (3, 11)),
    ("metadata:\n  approved: yes\n", "ambiguous-scalar", (4, 13)),
    ("license: no\n", "ambiguous-scalar", (3, 10)),
])
def test_bad_fields_are_positioned_errors(extra, code, where):
    wf, diags = parse(BASE.format(extra=extra).encode(), "fm.yaml")
    errors = [d for d in diags if d.severity == "error"]
    assert [(d.code, (d.span.line, d.span.col)) for d in errors] == [(code, where)], errors
    with pytest.raises(LoadError):
        load(extra)


def test_compatibility_of_500_characters_is_fine():
    assert load("compatibility: " + "x" * 500 + "\n").compatibility == "x" * 500


def test_the_builder_refuses_a_reserved_metadata_key():
    with pytest.raises(LoadError) as e:
        WorkflowBuilder("w", "d", metadata={"workflow": "x"}).tool("t", annotations={"readOnlyHint": True}).step(
            "s", tool="t").build()
    assert [d.code for d in e.value.diagnostics] == ["reserved-metadata-key"]
    with pytest.raises(TypeError):
        WorkflowBuilder("w", "d", metadata={"n": 1})  # type: ignore[dict-item]
