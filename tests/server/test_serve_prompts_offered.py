"""A served skill never names a workflow prompt that the server does not offer: attach() raises and serve exits 1,
naming the skill and the prompt; --skills-only bundles name none and are served alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from projector.output import compile_paths, write
from projector.server import attach
from projector.server.cli import main
from projector.server.errors import AttachError

ROOT = Path(__file__).resolve().parents[2]
SKILLS = ROOT / "generated_skills"
WORKFLOWS = ROOT / "workflows"


def test_attach_refuses_skills_whose_prompt_is_not_offered():
    server = MCPServer("x")
    with pytest.raises(AttachError) as info:
        attach(server, SKILLS, None)
    diags = info.value.diagnostics
    assert [(d.code, Path(d.span.file).parent.name) for d in diags] == [
        ("missing-workflow-prompt", "code-mode"), ("missing-workflow-prompt", "hello-world"),
        ("missing-workflow-prompt", "refund-flow-approved"), ("missing-workflow-prompt", "refund-flow-gated"),
        ("missing-workflow-prompt", "refund-flow")]
    assert "skill 'refund-flow' names the workflow prompt 'refund_flow'" in diags[4].message
    assert "--skills-only" in diags[3].hint
    assert getattr(server, "_extensions") == []  # nothing was added


def test_serve_with_no_workflows_exits_1_naming_skill_and_prompt(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main("serve", ["--skills", str(SKILLS), "--workflows", str(empty)]) == 1
    err = capsys.readouterr().err
    assert "error[missing-workflow-prompt]: skill 'hello-world' names the workflow prompt 'hello_world'" in err
    assert "project-skill build --skills-only" in err and "nothing is served" in err


def test_a_prompt_already_on_the_server_counts_as_offered(tmp_path):
    tree = tmp_path / "t"
    write(compile_paths([str(WORKFLOWS / "hello-world.yaml")]), tree)
    server = MCPServer("x")

    @server.prompt(name="hello_world")
    def mine() -> str:
        return "my own runner"

    attach(server, tree, None)


@pytest.mark.anyio
async def test_skills_only_bundles_are_served_without_workflows(tmp_path):
    tree = tmp_path / "t"
    write(compile_paths([str(WORKFLOWS)], skills_only=True), tree)
    server = MCPServer("skills-only")
    attach(server, tree, None)
    async with Client(server) as client:
        prompts = sorted(p.name for p in (await client.list_prompts()).prompts)
        assert prompts == ["skill.code-mode", "skill.hello-world", "skill.refund-flow",
                           "skill.refund-flow-approved", "skill.refund-flow-gated"]
        text = (await client.read_resource("skill://refund-flow/SKILL.md")).contents[0].text
        assert "refund_flow" not in text and "Server-accelerated" not in text


@pytest.mark.anyio
async def test_a_titled_workflow_prompt_has_its_title(tmp_path):
    wf = tmp_path / "greet.yaml"
    wf.write_text("name: greet_flow\ntitle: Greet someone\ndescription: Greet.\narguments: [{name: name}]\n"
                  "steps: [{name: g, tool: greet, args: {name: {arg: name}}}]\n", "utf-8")
    server = MCPServer("x")

    @server.tool()
    def greet(name: str) -> str:
        return name

    attach(server, None, [wf])
    async with Client(server) as client:
        (p,) = (await client.list_prompts()).prompts
        assert (p.name, p.title) == ("greet_flow", "Greet someone")
