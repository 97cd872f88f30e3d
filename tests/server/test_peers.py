"""The peers at the edges: the 2026-07-28 clients (the TypeScript SDK v2 ``SkillsClient`` and the Inspector CLI in
its modern mode) reading every directory of the shipped tree, and FastMCP's gateway (``create_proxy(...,
skills=True)`` and ``mount()``) forwarding every skill whole, on both ``serve`` frameworks.

The npm peers are installed by scripts/conformance.py into the shared cache (``$PROJECTOR_CACHE``); a peer that
cannot be installed fails these tests, it never skips them."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from fastmcp import Client as FastMCPClient
from fastmcp import FastMCP
from fastmcp.server import create_proxy
from fastmcp.skills import SkillsClientExtension
from mcp import Client
from mcp.server.caching import CacheHint
from pydantic import TypeAdapter

from projector.server.demo import demo_server

from .test_fastmcp import _conformance_script, free_port, running, serve_argv

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SKILLS = ROOT / "generated_skills"
WORKFLOWS = ROOT / "workflows"
MANIFEST = json.loads((SKILLS / "skills.json").read_text("utf-8"))["skills"]
FRAMEWORKS = ("mcp", "fastmcp")
TRANSPORTS = ("http", "stdio")
RAW = TypeAdapter(dict[str, Any])
CACHE = {"ttlMs": 60000, "cacheScope": "public"}  # not the defaults, so that a copied default cannot pass
CACHE_ARGS = ["--ttl-ms", str(CACHE["ttlMs"]), "--cache-scope", CACHE["cacheScope"]]

# Every file the manifest lists, from disk (not from any server)
FILES = {r["uri"]: (SKILLS / r["uri"].removeprefix("skill://")).read_bytes() for e in MANIFEST for r in e["resources"]}


def expected_directories() -> dict[str, list[dict[str, str]]]:
    """Every directory of the served tree (each skill directory and each folder under it) -> its children, from the
    files the manifest lists (the derived evals beside each bundle are not served): sorted by name, folders with
    mimeType inode/directory."""
    children: dict[str, dict[str, bool]] = {}
    for entry in MANIFEST:
        top = entry["uri"].removesuffix("/SKILL.md")
        children.setdefault(top, {})
        for r in entry["resources"]:
            parts = r["uri"].removeprefix(top + "/").split("/")
            folder = top
            for i, part in enumerate(parts):
                children.setdefault(folder, {})[part] = i < len(parts) - 1
                folder = f"{folder}/{part}"
    return {uri: [{"uri": f"{uri}/{name}", "name": name,
                   "mimeType": "inode/directory" if is_dir else "text/markdown"}
                  for name, is_dir in sorted(kids.items())] for uri, kids in sorted(children.items())}


DIRECTORIES = expected_directories()


def test_the_shipped_tree_has_nested_directories():
    # the done-when reads "every directory": make sure there is more than one level to walk
    assert len(DIRECTORIES) == 2 * len(MANIFEST)
    assert all(uri.endswith(".md") for uri in FILES)


# ------------------------------------------------------------------------------ directory results, in memory

def open_client(server: Any) -> Any:
    """Each framework's own in-memory client (mcp's Client takes an MCPServer, FastMCP's a FastMCP)."""
    return FastMCPClient(server) if isinstance(server, FastMCP) else Client(server, cache=None)


async def call(client: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    req = types.Request[dict[str, Any] | None, str](method=method, params=params or {})
    return await client.session.send_request(req, RAW)


@pytest.mark.anyio
@pytest.mark.parametrize("framework", FRAMEWORKS)
@pytest.mark.parametrize("cache", [None, CacheHint(ttl_ms=60000, scope="public")])
async def test_directory_results_carry_the_cache_fields_of_skills_list(framework, cache):
    server, _ = demo_server(SKILLS, WORKFLOWS, framework=framework, page_size=1,
                            **({"cache": cache} if cache else {}))
    async with open_client(server) as client:
        listed = await call(client, "skills/list")
        stamp = (listed["ttlMs"], listed["cacheScope"])
        assert stamp == ((cache.ttl_ms, cache.scope) if cache else (0, "private"))
        for uri, children in DIRECTORIES.items():
            seen, cursor = [], None
            while True:  # page_size=1: every page of every directory carries them
                page = await call(client, "resources/directory/read", {"uri": uri, **({"cursor": cursor} if cursor
                                                                                   else {})})
                assert (page["ttlMs"], page["cacheScope"]) == stamp, (uri, page)
                seen += page["resources"]
                cursor = page.get("nextCursor")
                if cursor is None:
                    break
            assert seen == children


# ------------------------------------------------------------------------------ the npm peers

@pytest.fixture(scope="module")
def peers():
    """Node 22 and the two 2026-07-28 peers, installed (once) the way scripts/conformance.py installs them."""
    script = _conformance_script()
    cache = script.cache_dir()
    script.install(cache, log=lambda *_: None)  # Node 22; raises (fails the test) when it cannot be had
    return {"node": str(script.node_binary(cache)),
            "client": script.install_peer(cache, script.TS_CLIENT_V2, log=lambda *_: None),
            "inspector": script.install_peer(cache, script.INSPECTOR, log=lambda *_: None)
            / "node_modules" / "@modelcontextprotocol" / "inspector" / "clients" / "launcher" / "build" / "index.js"}


def test_the_peers_are_the_pinned_versions(peers):
    script = _conformance_script()
    cache = script.cache_dir()
    for peer, version in ((script.TS_CLIENT_V2, "2.4.0"), (script.INSPECTOR, "2.12.0")):
        assert peer.version == version and peer.installed(cache), peer
    assert Path(peers["inspector"]).is_file()


@pytest.fixture(scope="module")
def http_urls():
    ports = {f: free_port() for f in FRAMEWORKS}
    with running([*serve_argv("mcp"), *CACHE_ARGS, "--http", f"127.0.0.1:{ports['mcp']}"], ports["mcp"]) as m, \
            running([*serve_argv("fastmcp"), *CACHE_ARGS, "--http", f"127.0.0.1:{ports['fastmcp']}"],
                    ports["fastmcp"]) as f:
        yield {"mcp": m, "fastmcp": f}


def target(http_urls: dict[str, str], framework: str, transport: str) -> list[str]:
    return [http_urls[framework]] if transport == "http" else [*serve_argv(framework), *CACHE_ARGS, "--stdio"]


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_typescript_sdk_v2_skills_client_reads_every_directory(peers, http_urls, framework, transport):
    done = subprocess.run([peers["node"], str(Path(__file__).with_name("ts_skills_v2_client.cjs")),
                           str(peers["client"]), transport, *target(http_urls, framework, transport)],
                          cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["protocolVersion"] == "2026-07-28" and seen["directoryRead"] is True
    assert sorted(seen["skills"], key=lambda e: e["uri"]) == sorted(MANIFEST, key=lambda e: e["uri"])
    assert (seen["ttlMs"], seen["cacheScope"]) == (CACHE["ttlMs"], CACHE["cacheScope"])
    # SkillsClient.read verified size, digest and frontmatter; the bytes are the committed ones
    assert {uri: base64.b64decode(b) for uri, b in seen["files"].items()} == FILES
    assert {uri: d["resources"] for uri, d in seen["directories"].items()} == DIRECTORIES
    for uri, d in seen["directories"].items():
        assert (d["ttlMs"], d["cacheScope"]) == (CACHE["ttlMs"], CACHE["cacheScope"]), uri


def inspector(peers: dict[str, Any], home: Path, target_args: list[str], *args: str) -> dict[str, Any]:
    """One Inspector CLI run in its 2026-07-28 ("modern") protocol era, its catalog and secrets under ``home``."""
    env = {**os.environ, "HOME": str(home), "MCP_CATALOG_PATH": str(home / "mcp.json"),
           "MCP_CLIENT_CONFIG_PATH": str(home / "client.json")}
    done = subprocess.run([peers["node"], str(peers["inspector"]), "--cli", "--protocol-era", "modern",
                           "--format", "json", "-q", "--cwd", str(ROOT), *args, *target_args],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return json.loads(done.stdout)


def one_skills_directories() -> dict[str, list[dict[str, str]]]:
    """The first skill's two directories: its own and the nested one under it."""
    first = next(iter(DIRECTORIES))
    return {uri: children for uri, children in DIRECTORIES.items() if uri == first or uri.startswith(first + "/")}


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_the_inspector_cli_in_modern_mode_reads_the_directories(peers, http_urls, framework, transport, tmp_path):
    """Every directory over HTTP, where one server answers every run. Over stdio each Inspector run starts its own
    server, and the directories it would read are the ones the HTTP run of the same framework read from the same
    code: one skill's two (its own and a nested one) show that the Inspector and the stdio server understand each
    other, without twenty more server starts."""
    where = target(http_urls, framework, transport)
    directories = DIRECTORIES if transport == "http" else one_skills_directories()
    assert len(directories) == (len(DIRECTORIES) if transport == "http" else 2)
    for uri, children in directories.items():
        got = inspector(peers, tmp_path, where, "--method", "resources/directory/read", "--uri", uri)
        result = got.get("result", got)
        assert result["resources"] == children, (uri, got)
        assert (result["ttlMs"], result["cacheScope"]) == (CACHE["ttlMs"], CACHE["cacheScope"]), (uri, got)
        assert "nextCursor" not in result


# ------------------------------------------------------------------------------ FastMCP's gateway

def content_bytes(c: Any) -> bytes:
    return c.text.encode("utf-8") if hasattr(c, "text") else base64.b64decode(c.blob)


async def read_every_skill_through(front: FastMCP) -> dict[str, Any]:
    """What a client of ``front`` gets: the listing, each skills/get, each file verified by FastMCP's read_skill,
    and each file's bytes through a plain resources/read."""
    async with FastMCPClient(front, extensions=[SkillsClientExtension()]) as client:
        listed = [e.model_dump(by_alias=True, mode="json", exclude_none=True) for e in await client.list_skills()]
        got = {}
        for entry in listed:
            req = types.Request[dict[str, Any] | None, str](method="skills/get", params={"uri": entry["uri"]})
            got[entry["uri"]] = (await client.session.send_request(req, RAW))["skill"]
        verified = {}
        for entry in listed:
            skill = await client.read_skill(entry["uri"])  # size, digest and frontmatter, for every file
            base = entry["uri"].removesuffix("SKILL.md")
            verified.update({base + rel: data for rel, data in skill.files.items()})
        read = {}
        for entry in listed:
            for r in entry["resources"]:
                contents = await client.read_resource(r["uri"])
                assert len(contents) == 1, r["uri"]
                read[r["uri"]] = content_bytes(contents[0])
    return {"listed": listed, "got": got, "verified": verified, "read": read}


def assert_forwarded_whole(seen: dict[str, Any]) -> None:
    by_uri = sorted(MANIFEST, key=lambda e: e["uri"])
    assert [e["uri"] for e in seen["listed"]] == [e["uri"] for e in by_uri]  # all 4 skills
    assert seen["listed"] == by_uri  # the same entries
    assert seen["got"] == {e["uri"]: e for e in MANIFEST}
    assert seen["verified"] == FILES
    assert seen["read"] == FILES  # every file of every skill, byte-equal to generated_skills/


@pytest.mark.anyio
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_fastmcps_proxy_forwards_every_skill_whole(http_urls, framework):
    assert_forwarded_whole(await read_every_skill_through(create_proxy(http_urls[framework], skills=True)))


@pytest.mark.anyio
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_fastmcps_proxy_forwards_every_skill_whole_over_stdio(framework):
    from fastmcp.client.transports import StdioTransport

    argv = [*serve_argv(framework), "--stdio"]
    backend = StdioTransport(command=argv[0], args=argv[1:], cwd=str(ROOT))
    assert_forwarded_whole(await read_every_skill_through(create_proxy(backend, skills=True)))


@pytest.mark.anyio
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_a_mounted_proxy_forwards_every_skill_whole(http_urls, framework):
    gateway = FastMCP("gateway")
    gateway.mount(create_proxy(http_urls[framework], skills=True))
    assert_forwarded_whole(await read_every_skill_through(gateway))


@pytest.mark.anyio
async def test_a_mounted_fastmcp_server_forwards_every_skill_whole():
    backend, _ = demo_server(SKILLS, WORKFLOWS, framework="fastmcp")
    gateway = FastMCP("gateway")
    gateway.mount(backend)
    assert_forwarded_whole(await read_every_skill_through(gateway))


@pytest.mark.anyio
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_the_supporting_file_templates_are_matched_by_fastmcp_and_mcp(framework):
    """Each listed skill:// template matches the supporting files of its type under both URI template matchers
    (FastMCP's, which knows {var} and {var*}, and mcp's RFC 6570 one), and no template matches a URI outside the
    scheme."""
    from fastmcp.resources.template import match_uri_template
    from mcp.shared.uri_template import UriTemplate

    server, _ = demo_server(SKILLS, WORKFLOWS, framework=framework)
    async with open_client(server) as client:
        listing = await call(client, "resources/templates/list")
    templates = [t["uriTemplate"] for t in listing["resourceTemplates"] if t["uriTemplate"].startswith("skill:")]
    assert templates
    supporting = [uri for uri in FILES if not uri.endswith("/SKILL.md")]
    for uri in supporting:
        assert any(match_uri_template(uri, t) is not None for t in templates), (uri, templates)
        assert any(UriTemplate.parse(t).match(uri) is not None for t in templates), (uri, templates)
    for t in templates:
        assert match_uri_template("file:///etc/passwd", t) is None


@pytest.mark.anyio
async def test_both_frameworks_list_the_same_level_1_templates():
    listings = {}
    for framework in FRAMEWORKS:
        server, _ = demo_server(SKILLS, WORKFLOWS, framework=framework)
        async with open_client(server) as client:
            listing = await call(client, "resources/templates/list")
        listings[framework] = [(t["uriTemplate"], t["name"], t["mimeType"]) for t in listing["resourceTemplates"]
                               if t["uriTemplate"].startswith("skill://{p1}")]
    assert listings["fastmcp"] == listings["mcp"] == [("skill://{p1}/{p2}/{p3}.md", "skill-file-md-3",
                                                       "text/markdown")]


def test_the_level_1_readers_serve_only_the_files_of_their_type(tmp_path):
    """The function behind each level-1 template (MCPServer calls it; on FastMCP the same lookup backs
    TreeFileTemplate): a listed file of its type, nothing else."""
    from mcp.server.mcpserver.exceptions import ResourceNotFoundError

    from projector.cli import main
    from projector.server.skills import SkillsExtension

    ext = SkillsExtension(SKILLS)
    readers = {t: fn for t, _, _, fn in ext.templates() if t.startswith("skill://{p1}")}
    read = readers["skill://{p1}/{p2}/{p3}.md"]
    assert read(p1="code-mode", p2="references", p3="tools").encode() == FILES["skill://code-mode/references/tools.md"]
    for bad in [dict(p1="code-mode", p2="references", p3="nope"), dict(p1="code-mode", p2="..", p3="SKILL"),
                dict(p1="code-mode/references", p2="", p3="tools"), dict(p1="code-mode", p2="references/x", p3="y"),
                dict(p1="nope", p2="references", p3="tools")]:
        with pytest.raises(ResourceNotFoundError):
            read(**bad)


@pytest.mark.anyio
@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_unlisted_uris_that_fit_a_level_1_template_are_unknown_resources(framework):
    from mcp.shared.exceptions import MCPError

    server, _ = demo_server(SKILLS, WORKFLOWS, framework=framework)
    async with open_client(server) as client:
        read = await call(client, "resources/read", {"uri": "skill://code-mode/references/tools.md"})
        assert read["contents"][0]["text"].encode() == FILES["skill://code-mode/references/tools.md"]
        unknown = ["skill://code-mode/references/nope.md", "skill://nope/references/tools.md",
                   "skill://code-mode/references/tools.txt", "skill://code-mode/x/../references/tools.md"]
        if framework == "fastmcp":  # (MCPServer's {+path} templates decode %2F, so there it is the same file)
            unknown.append("skill://code-mode/references%2Ftools.md")
        for uri in unknown:
            with pytest.raises(MCPError) as info:
                await call(client, "resources/read", {"uri": uri})
            assert info.value.code == types.INVALID_PARAMS, (uri, info.value)  # unknown, not an internal error


def test_a_peer_that_cannot_be_installed_fails_instead_of_skipping(tmp_path, monkeypatch):
    script = _conformance_script()
    monkeypatch.setattr(script.shutil, "which", lambda name: None)  # no npm
    with pytest.raises(script.ConformanceError, match="npm is not on PATH"):
        script.install_peer(tmp_path, script.TS_CLIENT_V2, log=lambda *_: None)
    monkeypatch.setattr(script.shutil, "which", lambda name: "/usr/bin/npm")
    monkeypatch.setattr(script.subprocess, "run",  # npm runs, and fails (an offline registry, a missing version)
                        lambda *a, **k: subprocess.CompletedProcess(a[0], 1, "", "npm error 404"))
    with pytest.raises(script.ConformanceError, match="npm error 404"):
        script.install_peer(tmp_path, script.INSPECTOR, log=lambda *_: None)
    assert not script.INSPECTOR.installed(tmp_path)
