"""Bootstrap prompts (:mod:`projector.server.bootstrap`), through the public Client: each skill's prompt inlines exactly
the bytes that resources/read serves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from projector.server.bootstrap import parse as parse_bootstrap
from projector.server.demo import demo_server

ROOT = Path(__file__).resolve().parents[2]
SKILLS = ROOT / "generated_skills"
WORKFLOWS = ROOT / "workflows"
MANIFEST = json.loads((SKILLS / "skills.json").read_text("utf-8"))["skills"]



# ------------------------------------------------------------------------------------------- bootstrap

@pytest.mark.anyio
async def test_bootstrap_prompts_inline_exactly_what_resources_read_serves():
    server, _ = demo_server(SKILLS, WORKFLOWS)
    async with Client(server) as client:
        prompts = {p.name: p for p in (await client.list_prompts()).prompts}
        for entry in MANIFEST:
            name = "skill." + entry["frontmatter"]["name"]
            assert prompts[name].arguments == []
            result = await client.get_prompt(name, {})
            assert len(result.messages) == 1 and result.messages[0].role == "user"
            inlined = parse_bootstrap(result.messages[0].content.text)
            assert list(inlined) == [r["uri"] for r in entry["resources"]]
            for res in entry["resources"]:
                read = (await client.read_resource(res["uri"])).contents[0]
                assert inlined[res["uri"]] == read.text.encode("utf-8")
                assert inlined[res["uri"]] == (SKILLS / res["uri"].removeprefix("skill://")).read_bytes()
                assert len(inlined[res["uri"]]) == res["size"]
        with pytest.raises(MCPError):
            await client.get_prompt("skill.hello-world", {"x": "y"})
