"""A skills server on stdio that declares no ``tools`` capability, as the TypeScript SDK v2 ``SkillCatalog`` does: a
low-level ``mcp`` server with the skills extension's methods, and the generated skills as resources. It has no
``tools/list`` handler, so it answers that request with "Method not found", and its ``initialize`` result (or its
discovery) offers ``resources`` and the skills extension only.

    python skills_only_server.py [SKILLS_DIR]

It ends when the client closes the pipe.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from projector.server.skills import SkillsExtension

ROOT = Path(__file__).resolve().parents[2]


def catalog(tree_dir: Path) -> Server:
    ext = SkillsExtension(tree_dir)
    tree = ext.tree

    async def read(ctx: object, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        f = tree.files[str(params.uri)]
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=f.uri, text=f.data.decode("utf-8"),
                                                                             mime_type=f.mime_type)])

    async def listed(ctx: object, params: object) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[types.Resource(uri=s.uri, name=s.frontmatter["name"])
                                                    for s in tree.skills])

    server = Server("skills-only", on_read_resource=read, on_list_resources=listed)
    for method in ext.methods():
        server.add_request_handler(method.method, method.params_type, method.handler)
    server.extensions[ext.identifier] = ext.settings()
    return server


async def main() -> None:
    server = catalog(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "generated_skills")
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
