"""Servers for the remote-client tests: the project's own skills server (projector.server), honest or serving tampered
data, in process, with a record of every request it answered.

The project server refuses to serve a tree whose files do not match its manifest (it checks at load time). A
tampering server has to get past that, so :func:`serve` builds the server's :class:`SkillTree` directly from
``{uri: entry}`` and ``{uri: bytes}`` after the test has changed them, then serves it through the same
:class:`SkillsExtension` and ``attach`` that ``project-skill serve`` uses.
"""

from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import pytest

from mcp.server.mcpserver import MCPServer

from projector.server import attach
from projector.server.skills import Skill, SkillFile, SkillsExtension, SkillTree, mime_type

ROOT = Path(__file__).resolve().parents[2]
GENERATED = ROOT / "generated_skills"
SCHEME = "skill://"


def offer_workflow_prompts(server: MCPServer, entries: list[dict[str, Any]]) -> None:
    """Stand-ins for the workflow prompts the served SKILL.md files name (``metadata.workflow``): these servers
    have no tools to run the real ones, and attach() refuses to serve a skill whose prompt is not offered."""
    from mcp.server.mcpserver.prompts.base import Prompt

    names = set()
    for e in entries:
        meta = e.get("frontmatter", {}).get("metadata")
        if isinstance(meta, dict) and isinstance(meta.get("workflow"), str):
            names.add(meta["workflow"])
    for name in sorted(names):
        server.add_prompt(Prompt.from_function(lambda: "a stand-in", name=name))


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


@dataclass
class Served:
    """What a test server serves: entries in order, and the bytes behind each URI (which may disagree)."""

    entries: list[dict[str, Any]]
    data: dict[str, bytes]

    def entry(self, name: str) -> dict[str, Any]:
        for e in self.entries:
            if e["uri"] == f"{SCHEME}{name}/SKILL.md":
                return e
        raise KeyError(name)

    def set_file(self, uri: str, data: bytes, *, recompute: bool) -> None:
        """Serve ``data`` at ``uri``; with ``recompute`` also update the manifest line (digest and size)."""
        self.data[uri] = data
        if recompute:
            for e in self.entries:
                for r in e["resources"] if isinstance(e["resources"], list) else ():
                    if r["uri"] == uri:
                        r["digest"], r["size"] = sha(data), len(data)


def honest() -> Served:
    tree = SkillTree.load(GENERATED)
    return Served([copy.deepcopy(s.entry) for s in tree.skills], {u: f.data for u, f in tree.files.items()})


@dataclass
class Recorder:
    calls: list[tuple[str, str | None]] = field(default_factory=list)

    @property
    def reads(self) -> list[str]:
        return [uri for m, uri in self.calls if m == "resources/read" and uri]

    def methods(self) -> list[str]:
        return [m for m, _ in self.calls]


def serve(served: Served | None = None, *, mutate: Callable[[Served], None] | None = None,
          list_patch: Callable[[dict[str, Any]], None] | None = None,
          name: str = "tamper-test") -> tuple[MCPServer, Recorder]:
    """An in-process MCPServer serving ``served`` (default: the honest generated_skills), after ``mutate``.
    ``list_patch`` edits each skills/list result in place (so skills/list and skills/get can disagree). ``name``:
    its serverInfo name, by which a lock knows it."""
    served = served or honest()
    if mutate is not None:
        mutate(served)
    skills = []
    files: dict[str, SkillFile] = {}
    for e in served.entries:
        path = e["uri"][len(SCHEME):-len("/SKILL.md")]
        sfiles = []
        for uri, data in served.data.items():
            if uri.startswith(f"{SCHEME}{path}/"):
                rel = uri[len(f"{SCHEME}{path}/"):]
                f = SkillFile(uri, rel, data, mime_type(rel, data))
                sfiles.append(f)
                files[uri] = f
        skills.append(Skill(path, e, tuple(sfiles)))
    tree = SkillTree(GENERATED.as_posix(), tuple(skills), files, {})
    ext = SkillsExtension(tree)
    server = MCPServer(name, extensions=[ext])
    offer_workflow_prompts(server, [s.entry for s in tree.skills])
    attach(server, ext, None, bootstrap_prompts=False)
    rec = Recorder()

    async def record(ctx: Any, call_next: Any) -> Any:
        params = ctx.params if isinstance(ctx.params, dict) else {}
        uri = params.get("uri") if isinstance(params, dict) else None
        rec.calls.append((ctx.method, uri if isinstance(uri, str) else None))
        result = await call_next(ctx)
        if list_patch is not None and ctx.method == "skills/list" and isinstance(result, dict):
            result = copy.deepcopy(result)
            list_patch(result)
        return result

    server.middleware.append(record)
    return server, rec


@pytest.fixture
def cli(monkeypatch, capsys):
    """Run ``project-skill remote|pin`` in process; SERVER names are looked up in ``servers`` first."""
    import projector.remote.client as client_mod
    from projector.remote.cli import main as remote_main

    servers: dict[str, object] = {}
    real = client_mod.connect

    def fake_connect(server, label=None, **kw):
        if isinstance(server, str) and server in servers:
            return real(servers[server], label or server, **kw)
        return real(server, label, **kw)

    monkeypatch.setattr(client_mod, "connect", fake_connect)

    def run(name: str, *argv: str) -> tuple[int, str, str]:
        rc = remote_main(name, list(argv))
        out, err = capsys.readouterr()
        return rc, out, err

    return servers, run
