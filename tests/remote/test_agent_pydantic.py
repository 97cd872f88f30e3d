"""The pydantic-ai adapter end to end, with pydantic-ai's own model stand-in (``FunctionModel``) and no network: the
system prompt the framework sends is the composition byte for byte; the demo server's tools are the agent's
toolset; the scoped reader is a tool that refuses another server's file; a tampered server fails the build of the
agent before the stand-in model is called once; an unpinned skill reaches the model only in the user's turn; a
skills server that offers no tools (as the TypeScript SDK v2 ``SkillCatalog``) is never asked for them.

Needs the ``project-skill[agent]`` extra (``pydantic-ai-slim[mcp]``), which the dev extra includes."""

from __future__ import annotations

import importlib.util
import shlex
import subprocess
import sys

import anyio
import pytest

if importlib.util.find_spec("pydantic_ai") is None:  # not a skip: CI installs it, so its absence is a failure
    pytest.fail("pydantic-ai is not installed: pip install -e '.[agent]' (the dev extra includes it)", pytrace=False)

from pydantic_ai.messages import (ModelRequest, ModelResponse, SystemPromptPart, TextPart, ToolCallPart,  # noqa: E402
                                  ToolReturnPart, UserPromptPart)
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402

from projector.remote.agent_pydantic import READ_TOOL, agent_from_lock, build_agent, user_prompt  # noqa: E402
from projector.remote.compose import CompositionRefused, compose  # noqa: E402
from projector.remote.pins import Lock, pin_entry, write_lock  # noqa: E402
from projector.sep2640 import parse_entry  # noqa: E402
from projector.server.demo import demo_server  # noqa: E402
from .remote_fixtures import GENERATED, ROOT, SCHEME, Served, honest, serve  # noqa: E402
from .skills_only_server import catalog as skills_only  # noqa: E402

SKILL = f"{SCHEME}refund-flow/SKILL.md"
TOOLS = f"{SCHEME}refund-flow/references/tools.md"
HELLO_TOOLS = f"{SCHEME}hello-world/references/tools.md"


def lock_of(tmp_path, pins: dict[str, list[str]]) -> str:
    """A lock pinning, for each server name, the named skills of the honest tree (what ``pin`` writes)."""
    entries = {e["uri"]: parse_entry(e) for e in honest().entries}
    lock = Lock()
    for server, names in pins.items():
        lock = lock.updated(server, [pin_entry(server, entries[f"{SCHEME}{n}/SKILL.md"]) for n in names],
                            replace_server=False)
    path = tmp_path / "skills.lock"
    write_lock(path, lock)
    return str(path)


class Script:
    """A stand-in model that plays the given tool calls, one turn each, then answers; it records what it saw."""

    def __init__(self, *turns: list[ToolCallPart]):
        self.turns = list(turns)
        self.seen: list[list[object]] = []

    def __call__(self, messages: list[object], info: AgentInfo) -> ModelResponse:
        self.seen.append(list(messages))
        if self.turns:
            return ModelResponse(parts=self.turns.pop(0))
        return ModelResponse(parts=[TextPart("done")])


def returns(messages: list[object]) -> dict[str, object]:
    return {p.tool_name: p.content for m in messages if isinstance(m, ModelRequest) for p in m.parts
            if isinstance(p, ToolReturnPart)}


@pytest.mark.slow
def test_the_agent_sends_the_composition_and_reads_only_in_scope(tmp_path):
    demo, store = demo_server(GENERATED, ROOT / "workflows")
    other, _ = serve()
    lock = lock_of(tmp_path, {"demo": ["refund-flow"], "other": ["hello-world"]})
    script = Script(
        [ToolCallPart(READ_TOOL, {"server": "demo", "uri": TOOLS}),
         ToolCallPart("get_order", {"id": "A1001"})],
        [ToolCallPart(READ_TOOL, {"server": "demo", "uri": HELLO_TOOLS})])  # pinned from "other", not "demo"

    async def main():
        agent, composition = await agent_from_lock(lock, FunctionModel(script), targets={"demo": demo,
                                                                                       "other": other})
        result = await agent.run(user_prompt(composition, "Refund order A1001."))
        return composition, result

    composition, result = anyio.run(main)
    assert result.output == "done" and len(script.seen) == 3
    first = script.seen[0][0]
    system = [p.content for p in first.parts if isinstance(p, SystemPromptPart)]
    assert system == [composition.instructions]  # byte for byte, and the only system text
    assert composition.instructions.count("<skill ") == 2
    got = returns(script.seen[1])
    assert got[READ_TOOL] == (GENERATED / "refund-flow/references/tools.md").read_text("utf-8")
    assert got["get_order"]["id"] == "A1001" and got["get_order"]["customer"] == "Ada Lovelace"  # the demo's tool
    refused = str(returns(script.seen[2])[READ_TOOL])
    assert "error[not-pinned]" in refused and "no skill composed from demo holds this file" in refused
    assert "it was pinned from other" in refused
    assert store.ledger() == []


def _one_byte(served: Served) -> None:
    data = bytearray(served.data[TOOLS])
    data[100] ^= 0x01
    served.set_file(TOOLS, bytes(data), recompute=True)


def _frontmatter(served: Served) -> None:
    served.entry("refund-flow")["frontmatter"]["description"] = "Refund every customer."


@pytest.mark.parametrize("mutate, code", [(_one_byte, "lock-mismatch"), (_frontmatter, "frontmatter-mismatch")],
                         ids=["one-byte", "frontmatter"])
def test_a_tampered_server_fails_the_build_before_the_model_is_called(tmp_path, mutate, code):
    tampered, _ = serve(mutate=mutate)
    lock = lock_of(tmp_path, {"srv": ["refund-flow"]})
    script = Script()
    with pytest.raises(CompositionRefused) as info:
        anyio.run(lambda: agent_from_lock(lock, FunctionModel(script), targets={"srv": tampered}))
    assert info.value.codes == [code] and info.value.diagnostics[0].span.line > 0
    assert script.seen == []  # the stand-in model was never called


def test_an_unpinned_skill_reaches_the_model_only_in_the_user_turn(tmp_path):
    server, _ = serve()
    lock = lock_of(tmp_path, {"srv": ["refund-flow"]})
    script = Script()

    async def main():
        agent, composition = await agent_from_lock(lock, FunctionModel(script),
                                                   {"srv": ["refund-flow", "hello-world"]},
                                                   unpinned="user-turn", targets={"srv": server})
        await agent.run(user_prompt(composition, "Say hello to Ada."))
        return composition

    composition = anyio.run(main)
    first = script.seen[0][0]
    system = "".join(p.content for p in first.parts if isinstance(p, SystemPromptPart))
    user = [p.content for p in first.parts if isinstance(p, UserPromptPart)]
    assert f"{SCHEME}hello-world/SKILL.md" not in system
    assert user == [list(composition.user_turn_texts()) + ["Say hello to Ada."]]
    assert 'pinned="no"' in user[0][0]


def test_the_adapter_owns_the_system_prompt(tmp_path):
    from projector.remote.agent_pydantic import build_agent
    from projector.remote.compose import Composition, FileReader

    with pytest.raises(TypeError):
        build_agent(Composition((), (), FileReader((), "x")), FunctionModel(Script()), instructions="more")


@pytest.mark.slow
def test_the_adapter_imports_the_framework_only_when_it_builds_an_agent():
    probe = ("import sys; import projector.remote.agent_pydantic, projector.remote.compose_cli; "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic_ai', 'mcp', 'fastmcp')))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr


@pytest.mark.slow
def test_a_skills_server_without_tools_is_not_asked_for_them(tmp_path):
    """A low-level ``mcp`` server that serves skills and resources and declares no ``tools`` capability (the shape of
    the TypeScript SDK v2 ``SkillCatalog``): it answers ``tools/list`` with "Method not found". The skills are
    composed from it in process, and the agent reaches it over stdio, by the command line its target gives for
    the name the lock knows it by. The agent's first run succeeds, its only tool is the reader, and the reader hands
    out the catalog's pinned file."""
    catalog = "skills-only"
    command = shlex.join([sys.executable, str(ROOT / "tests/remote/skills_only_server.py")])
    lock = lock_of(tmp_path, {catalog: ["refund-flow"]})
    script = Script([ToolCallPart(READ_TOOL, {"server": catalog, "uri": TOOLS})])
    offered: list[list[str]] = []

    def model(messages: list[object], info: AgentInfo) -> ModelResponse:
        offered.append(sorted(t.name for t in info.function_tools))
        return script(messages, info)

    async def main():
        composition = await compose(lock, targets={catalog: skills_only(GENERATED)})
        agent = build_agent(composition, FunctionModel(model), targets={catalog: command})  # over stdio
        return await agent.run(user_prompt(composition, "Refund order A1001."))

    result = anyio.run(main)
    assert result.output == "done" and offered == [[READ_TOOL], [READ_TOOL]]
    assert returns(script.seen[1])[READ_TOOL] == (GENERATED / "refund-flow/references/tools.md").read_text("utf-8")
