"""The SEP-2640 skills extension, through the public mcp Client: in memory, a real stdio subprocess and a real HTTP
server. Everything read is compared with the committed tree and its manifest."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.server.caching import CacheHint
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter

from projector.bundle import make_entry
from projector.server import SkillsExtension, SkillTree
from projector.server.demo import demo_server
from projector.server.errors import AttachError
from projector.server.skills import SKILLS_EXTENSION, decode_cursor

ROOT = Path(__file__).resolve().parents[2]
SKILLS = ROOT / "generated_skills"
WORKFLOWS = ROOT / "workflows"
MANIFEST = json.loads((SKILLS / "skills.json").read_text("utf-8"))["skills"]
RAW = TypeAdapter(dict[str, Any])
EXPECTED_MIME = {".md": "text/markdown", ".json": "application/json", ".py": "text/x-python", ".txt": "text/plain"}


async def call(client: Client, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    req = types.Request[dict[str, Any] | None, str](method=method, params=params or {})
    return await client.session.send_request(req, RAW)


async def invalid_params(coro: Any) -> MCPError:
    with pytest.raises(MCPError) as info:
        await coro
    assert info.value.code == types.INVALID_PARAMS, info.value
    return info.value


def committed(uri: str) -> bytes:
    return (SKILLS / uri.removeprefix("skill://")).read_bytes()


def content_bytes(c: Any) -> bytes:
    return c.text.encode("utf-8") if hasattr(c, "text") else base64.b64decode(c.blob)


# ------------------------------------------------------------------------------------------ server processes

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_args(skills: Path = SKILLS, workflows: Path = WORKFLOWS) -> list[str]:
    return ["-m", "projector.server", "--skills", str(skills), "--workflows", str(workflows)]


def start_http(skills: Path = SKILLS, workflows: Path = WORKFLOWS) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, *serve_args(skills, workflows), "--http", f"127.0.0.1:{port}"],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {proc.stderr.read().decode()}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            time.sleep(0.1)
    stop(proc)
    raise RuntimeError("server did not start")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
    if proc.stderr:
        proc.stderr.close()


@pytest.fixture(scope="module")
def http_url():
    proc, url = start_http()
    yield url
    stop(proc)


@pytest.fixture(params=["memory", "stdio", "http"])
def target(request):
    if request.param == "memory":
        return demo_server(SKILLS, WORKFLOWS)[0]
    if request.param == "stdio":
        return StdioServerParameters(command=sys.executable, args=[*serve_args(), "--stdio"], cwd=str(ROOT))
    return request.getfixturevalue("http_url")


# ---------------------------------------------------------------------------------------------- round trips

@pytest.mark.slow
@pytest.mark.anyio
async def test_list_get_read_round_trip_byte_equal(target):
    async with Client(target) as client:
        assert client.server_capabilities.extensions == {SKILLS_EXTENSION: {"directoryRead": True}}
        assert client.server_capabilities.resources is not None
        page = await call(client, "skills/list")
        assert page["skills"] == MANIFEST
        assert "nextCursor" not in page
        assert (page["ttlMs"], page["cacheScope"]) == (0, "private")
        n_files = 0
        for entry in MANIFEST:
            got = await call(client, "skills/get", {"uri": entry["uri"]})
            assert got["skill"] == entry and "nextCursor" not in got
            assert (got["ttlMs"], got["cacheScope"]) == (0, "private")
            for res in entry["resources"]:
                read = await client.read_resource(res["uri"])
                assert len(read.contents) == 1
                c = read.contents[0]
                data = content_bytes(c)
                assert data == committed(res["uri"])
                assert "sha256:" + hashlib.sha256(data).hexdigest() == res["digest"]
                assert len(data) == res["size"]
                assert c.mime_type == EXPECTED_MIME[Path(res["uri"]).suffix]
                assert str(c.uri) == res["uri"]
                n_files += 1
        assert n_files == sum(len(e["resources"]) for e in MANIFEST) >= 6


@pytest.mark.slow
@pytest.mark.anyio
async def test_resources_list_shows_skill_md_only(target):
    async with Client(target) as client:
        listed = {str(r.uri): r for r in (await client.list_resources()).resources}
        skill_mds = {u: r for u, r in listed.items() if u.startswith("skill://")}
        assert sorted(skill_mds) == sorted(e["uri"] for e in MANIFEST)
        for entry in MANIFEST:
            r = skill_mds[entry["uri"]]
            assert r.name == entry["frontmatter"]["name"]
            assert r.description == entry["frontmatter"]["description"]
            assert r.mime_type == "text/markdown"
        templates = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
        assert "skill://{+path}" in templates and "skill://{+path}.md" in templates


@pytest.mark.anyio
async def test_legacy_handshake_client_sees_the_extension():
    async with Client(demo_server(SKILLS, WORKFLOWS)[0], mode="legacy") as client:
        assert client.protocol_version == "2025-11-25"
        assert client.server_capabilities.extensions == {SKILLS_EXTENSION: {"directoryRead": True}}
        assert (await call(client, "skills/list"))["skills"] == MANIFEST


# ---------------------------------------------------------------------------------------------- pagination

@pytest.mark.anyio
async def test_cursor_walk_with_page_size_one_returns_every_entry_once():
    server, _ = demo_server(SKILLS, WORKFLOWS, page_size=1, cache=CacheHint(ttl_ms=60000, scope="public"))
    async with Client(server, cache=None) as client:
        seen, cursor, pages = [], None, 0
        while True:
            page = await call(client, "skills/list", {"cursor": cursor} if cursor else {})
            pages += 1
            assert len(page["skills"]) == 1
            assert (page["ttlMs"], page["cacheScope"]) == (60000, "public")
            seen += page["skills"]
            cursor = page.get("nextCursor")
            if cursor is None:
                break
            assert "skill://" not in cursor and "/" not in cursor  # opaque, URL-safe
        assert seen == MANIFEST and pages == len(MANIFEST)


@pytest.mark.anyio
async def test_directory_read_pages_too():
    server, _ = demo_server(SKILLS, WORKFLOWS, page_size=1)
    async with Client(server) as client:
        kids, cursor = [], None
        while True:
            page = await call(client, "resources/directory/read",
                              {"uri": "skill://code-mode", **({"cursor": cursor} if cursor else {})})
            kids += page["resources"]
            cursor = page.get("nextCursor")
            if cursor is None:
                break
        assert kids == [{"uri": "skill://code-mode/SKILL.md", "name": "SKILL.md", "mimeType": "text/markdown"},
                        {"uri": "skill://code-mode/references", "name": "references", "mimeType": "inode/directory"}]


@pytest.mark.anyio
async def test_bad_cursors_are_invalid_params():
    server, _ = demo_server(SKILLS, WORKFLOWS, page_size=1)
    async with Client(server) as client:
        first = await call(client, "skills/list")
        good = first["nextCursor"]
        dir_page = await call(client, "resources/directory/read", {"uri": "skill://code-mode"})
        forged_unknown = base64.urlsafe_b64encode(
            json.dumps(["skills/list", "skill://nope/SKILL.md"], separators=(",", ":")).encode()).decode().rstrip("=")
        for bad in ["", "garbage!", "0", "bm90LWpzb24", good + "x", good.upper(), dir_page["nextCursor"],
                    forged_unknown, "W10", base64.urlsafe_b64encode(b'["skills/list"]').decode()]:
            await invalid_params(call(client, "skills/list", {"cursor": bad}))
        await invalid_params(call(client, "resources/directory/read", {"uri": "skill://code-mode", "cursor": good}))
        assert (await call(client, "skills/list", {"cursor": good}))["skills"] == MANIFEST[1:2]


def test_cursor_round_trip_is_strict():
    with pytest.raises(MCPError):
        decode_cursor("eyJ4Ijox", "skills/list")


# --------------------------------------------------------------------------------------- unknown and foreign

@pytest.mark.slow
@pytest.mark.anyio
async def test_skills_get_unknown_uri_is_invalid_params():
    async with Client(demo_server(SKILLS, WORKFLOWS)[0]) as client:
        for uri in ["skill://mcp-conformance-nonexistent-skill-9f3a2b/SKILL.md", "skill://code-mode",
                    "skill://code-mode/references/tools.md", "skill://code-mode/../hello-world/SKILL.md",
                    "file:///etc/passwd", "skill://CODE-MODE/SKILL.md", ""]:
            await invalid_params(call(client, "skills/get", {"uri": uri}))
        await invalid_params(call(client, "skills/get", {}))


@pytest.mark.anyio
async def test_directory_read_refuses_files_and_unknowns():
    async with Client(demo_server(SKILLS, WORKFLOWS)[0]) as client:
        refs = await call(client, "resources/directory/read", {"uri": "skill://code-mode/references"})
        assert refs["resources"] == [{"uri": "skill://code-mode/references/tools.md", "name": "tools.md",
                                      "mimeType": "text/markdown"}]
        for uri in ["skill://code-mode/SKILL.md", "skill://code-mode/references/tools.md", "skill://nope",
                    "skill://code-mode/..", "skill://", "file:///etc", "skill://code-mode/references/../.."]:
            await invalid_params(call(client, "resources/directory/read", {"uri": uri}))


@pytest.fixture
def tree_with_strays(tmp_path):
    """A copy of the tree, plus files on disk that the manifest does not list (inside and beside a skill)."""
    root = tmp_path / "skills"
    shutil.copytree(SKILLS, root)
    (root / "code-mode" / "secret.md").write_text("# not in the manifest\n", "utf-8")
    (root / "code-mode" / "references" / "secret.txt").write_text("not in the manifest\n", "utf-8")
    (root / "stray.md").write_text("beside the skills\n", "utf-8")
    (tmp_path / "outside.md").write_text("outside the tree\n", "utf-8")
    return root


FOREIGN = [
    "skill://code-mode/../hello-world/SKILL.md",
    "skill://code-mode/references/../../hello-world/SKILL.md",
    "skill://code-mode/../../outside.md",
    "skill://code-mode/%2e%2e/hello-world/SKILL.md",
    "skill://code-mode/references/%2E%2E/SKILL.md",
    "skill://code-mode/%2e%2e%2f%2e%2e/outside.md",
    "skill://%2e%2e/outside.md",
    "skill:///etc/passwd",
    "skill:///etc/hosts.md",
    "skill://code-mode//etc/passwd",
    "skill://code-mode/references/tools.md%00.md",
    "file:///etc/passwd",
    "file://{root}/code-mode/SKILL.md",
    "https://example.com/code-mode/SKILL.md",
    "docs://code-mode/SKILL.md",
    "skill://code-mode/secret.md",
    "skill://code-mode/references/secret.txt",
    "skill://stray.md",
    "skill://code-mode",
    "skill://code-mode/references",
    "skill://code-mode/skill.md",
]


@pytest.mark.anyio
async def test_traversal_and_foreign_uris_are_invalid_params_and_open_nothing(tree_with_strays):
    root = tree_with_strays
    opened: list[str] = []
    auditing = False

    def hook(event: str, args: tuple) -> None:
        if auditing and event == "open" and args and isinstance(args[0], (str, bytes, Path)):
            opened.append(str(args[0]))

    sys.addaudithook(hook)  # hooks cannot be removed; this one records only while `auditing` is set
    server, _ = demo_server(root, WORKFLOWS)
    async with Client(server) as client:
        for entry in MANIFEST:  # warm up every code path once
            for res in entry["resources"]:
                await client.read_resource(res["uri"])
        auditing = True
        try:
            for uri in FOREIGN:
                err = await invalid_params(client.read_resource(uri.format(root=root.as_posix())))
                assert "Unknown resource" in err.error.message or "not found" in err.error.message.lower(), uri
            served = {}
            for entry in MANIFEST:  # served from memory: even valid reads open nothing
                for res in entry["resources"]:
                    served[res["uri"]] = content_bytes((await client.read_resource(res["uri"])).contents[0])
        finally:
            auditing = False
    assert served and all(data == committed(uri) for uri, data in served.items())
    inside = [p for p in opened if str(root.parent) in p or p.startswith("/etc")]
    assert inside == [], inside
    assert opened == [], opened


# ------------------------------------------------------------------------------------------ the tree at load

def copy_tree(tmp_path: Path) -> Path:
    root = tmp_path / "skills"
    shutil.copytree(SKILLS, root)
    return root


def load_error(root: Path) -> str:
    with pytest.raises(AttachError) as info:
        SkillTree.load(root)
    return str(info.value)


def rewrite_manifest(root: Path, change) -> None:
    manifest = json.loads((root / "skills.json").read_text("utf-8"))
    change(manifest["skills"])
    (root / "skills.json").write_text(json.dumps(manifest), "utf-8")


def test_a_changed_byte_refuses_the_tree(tmp_path):
    root = copy_tree(tmp_path)
    f = root / "refund-flow" / "references" / "tools.md"
    data = bytearray(f.read_bytes())
    data[10] ^= 1  # same size, another digest
    f.write_bytes(bytes(data))
    msg = load_error(root)
    assert "digest-mismatch" in msg and "skill://refund-flow/references/tools.md" in msg and "refusing" in msg


def test_a_changed_size_refuses_the_tree(tmp_path):
    root = copy_tree(tmp_path)
    with open(root / "hello-world" / "SKILL.md", "ab") as f:
        f.write(b"\nextra\n")
    assert "digest-mismatch" in load_error(root)


def test_a_missing_file_refuses_the_tree(tmp_path):
    root = copy_tree(tmp_path)
    (root / "code-mode" / "references" / "tools.md").unlink()
    assert "missing-file" in load_error(root)


def test_a_symlink_out_of_the_tree_is_refused(tmp_path):
    root = copy_tree(tmp_path)
    target = root / "code-mode" / "references" / "tools.md"
    outside = tmp_path / "tools.md"
    outside.write_bytes(target.read_bytes())
    target.unlink()
    target.symlink_to(outside)
    assert "missing-file" in load_error(root)


def test_manifest_uris_outside_the_skill_are_refused(tmp_path):
    for bad in ["skill://code-mode/../hello-world/SKILL.md", "skill://hello-world/SKILL.md",
                "skill://code-mode/references//tools.md", "skill://code-mode/references/%2e%2e/x.md"]:
        root = copy_tree(tmp_path / bad.replace("/", "_").replace("%", "p"))
        rewrite_manifest(root, lambda skills: skills[0]["resources"].append({"uri": bad, "digest": "x", "size": 1}))
        msg = load_error(root)
        assert "foreign-file" in msg or "listed twice" in msg, msg


def test_index_problems_are_clear(tmp_path):
    assert "no-index" in load_error(tmp_path / "nowhere")
    root = copy_tree(tmp_path)
    (root / "skills.json").write_text("{", "utf-8")
    assert "bad-index" in load_error(root)
    (root / "skills.json").write_text('{"skills": {}}', "utf-8")
    assert "bad-index" in load_error(root)


def test_frontmatter_must_match_the_file(tmp_path):
    root = copy_tree(tmp_path)
    rewrite_manifest(root, lambda skills: skills[1]["frontmatter"].update(description="Exfiltrate credentials"))
    assert "frontmatter-mismatch" in load_error(root)


def test_serve_refuses_a_bad_tree_with_exit_1(tmp_path, capsys):
    from projector.server.cli import main

    root = copy_tree(tmp_path)
    (root / "code-mode" / "SKILL.md").write_text("tampered\n", "utf-8")
    assert main("serve", ["--skills", str(root), "--workflows", str(WORKFLOWS)]) == 1
    err = capsys.readouterr().err
    assert "digest-mismatch" in err and "nothing is served" in err and "Traceback" not in err


# ------------------------------------------------------------------------------------ other kinds of files

@pytest.mark.anyio
async def test_each_supporting_file_gets_its_own_mime_type_and_bytes(tmp_path):
    files = {
        "SKILL.md": b"---\nname: kinds\ndescription: Files of several kinds.\n---\n\n# Kinds\n",
        "references/data.json": b'{"a": 1}\n',
        "scripts/run.py": b"print('hi')\n",
        "notes.txt": b"plain\r\nwith CRLF\r\n",
        "LICENSE": b"no suffix\n",
        "assets/blob.bin": bytes(range(256)),
        "references/deep/nested/more.md": "# Ünïcode ✓\n".encode("utf-8"),
    }
    root = tmp_path / "t"
    for rel, data in files.items():
        (root / "kinds" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "kinds" / rel).write_bytes(data)
    (root / "skills.json").write_text(json.dumps({"skills": [make_entry("kinds", files)]}), "utf-8")
    from mcp.server.mcpserver import MCPServer

    from projector.server import attach

    server = MCPServer("kinds")
    attach(server, root, None)
    expected = {"SKILL.md": "text/markdown", "references/data.json": "application/json",
                "scripts/run.py": "text/x-python", "notes.txt": "text/plain", "LICENSE": "text/plain",
                "assets/blob.bin": "text/plain", "references/deep/nested/more.md": "text/markdown"}
    async with Client(server) as client:
        for rel, data in files.items():
            c = (await client.read_resource(f"skill://kinds/{rel}")).contents[0]
            assert content_bytes(c) == data, rel
            if rel != "assets/blob.bin":  # the catch-all template has one static mimeType (documented limitation)
                assert c.mime_type == expected[rel], rel
        top = await call(client, "resources/directory/read", {"uri": "skill://kinds"})
        assert [(k["name"], k["mimeType"]) for k in top["resources"]] == [
            ("LICENSE", "text/plain"), ("SKILL.md", "text/markdown"), ("assets", "inode/directory"),
            ("notes.txt", "text/plain"), ("references", "inode/directory"), ("scripts", "inode/directory")]
        deep = await call(client, "resources/directory/read", {"uri": "skill://kinds/references/deep"})
        assert deep["resources"] == [{"uri": "skill://kinds/references/deep/nested", "name": "nested",
                                      "mimeType": "inode/directory"}]
        listed = [str(r.uri) for r in (await client.list_resources()).resources]
        assert listed == ["skill://kinds/SKILL.md"]


def test_page_size_must_be_positive():
    for bad in [0, -1, "2"]:
        with pytest.raises(AttachError):
            SkillsExtension(SKILLS, page_size=bad)  # type: ignore[arg-type]
