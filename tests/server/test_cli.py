"""``project-skill serve`` (:mod:`projector.server.cli`) reads ``[tool.project-skill]`` as ``build`` does: its
``--skills``, ``--workflows`` and ``--workflow-tools`` default from the table's ``out``, ``workflows`` and
``workflow-tools``, paths relative to the pyproject.toml's folder; a flag overrides the table. Driven as a user runs
it: ``serve`` in a subprocess over stdio, from a folder inside a project that has only the table, with mcp's
``Client``."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from .test_serve_skills import ROOT, SKILLS, WORKFLOWS

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
TABLE = '[tool.project-skill]\nout = "built"\nworkflows = ["flows"]\nworkflow-tools = true\n'


def project(tmp_path: Path) -> Path:
    """A project with only the table (and the files it names), and a folder inside it to run from."""
    shutil.copytree(SKILLS, tmp_path / "built")
    shutil.copytree(WORKFLOWS, tmp_path / "flows")
    (tmp_path / "pyproject.toml").write_text(TABLE, encoding="utf-8")
    (tmp_path / "src").mkdir()
    return tmp_path / "src"


async def served(cwd: Path, *flags: str) -> tuple[set[str], set[str], int]:
    """The tools and prompts ``serve`` offers from ``cwd``, and how many skills it lists."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "projector.server", "--stdio", *flags],
                                   cwd=str(cwd), env={"PYTHONPATH": str(ROOT)})
    async with Client(stdio_client(params)) as c:
        tools = {t.name for t in (await c.list_tools()).tools}
        prompts = {p.name for p in (await c.list_prompts()).prompts}
        skills = [r for r in (await c.list_resources()).resources if str(r.uri).endswith("/SKILL.md")]
    return tools, prompts, len(skills)


async def test_serve_takes_its_paths_and_workflow_tools_from_the_table(tmp_path):
    tools, prompts, skills = await served(project(tmp_path))
    assert {"hello_world", "refund_flow_approved"} <= prompts  # the workflows of flows/, not of ./workflows
    assert {"hello_world", "refund_flow_approved"} <= tools  # workflow-tools = true
    assert skills == len(list(SKILLS.glob("*/SKILL.md")))  # the skills of built/


async def test_a_flag_overrides_the_table(tmp_path):
    cwd = project(tmp_path)
    shutil.rmtree(tmp_path / "built")
    shutil.rmtree(tmp_path / "flows")  # the table's paths are gone: only the flags' can be served
    flags = ("--skills", str(SKILLS), "--workflows", str(WORKFLOWS))
    tools, prompts, skills = await served(cwd, *flags)
    assert "refund_flow_approved" in prompts and skills == len(list(SKILLS.glob("*/SKILL.md")))
    assert "refund_flow_approved" in tools  # the table's workflow-tools still holds
    tools, prompts, _ = await served(cwd, "--no-config", *flags)
    assert "refund_flow_approved" in prompts and "refund_flow_approved" not in tools  # no table: no workflow tools
