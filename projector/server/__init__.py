"""Serve skills and workflows over MCP (mcp >= 2.3): one call adds them to a server author's own ``MCPServer``.

::

    from mcp.server.mcpserver import MCPServer
    from mcp_types import ToolAnnotations
    from projector.server import attach, serve_http

    server = MCPServer("greeter")

    @server.tool(description="Return a friendly greeting for a name.",
                 annotations=ToolAnnotations(read_only_hint=True, idempotent_hint=True))
    def greet(name: str) -> str:
        return f"Hello, {name}!"

    # the skills of the workflows this server runs: project-skill build workflows/hello-world.yaml --out greeter_skills
    attach(server, skills="greeter_skills", workflows=["workflows/hello-world.yaml"])
    serve_http(server, host="127.0.0.1", port=8000)  # Host/Origin allow-list and connection bound: projector.server.http

:func:`attach` adds

- the SEP-2640 skills extension (:mod:`projector.server.skills`), serving the tree from its ``skills.json``;
- one server-accelerated prompt per workflow, under the workflow's raw name (:mod:`projector.server.workflow`);
- one bootstrap prompt per skill, ``skill.<path>`` (:mod:`projector.server.bootstrap`).

Call it after the tools are registered: it checks, before anything is served, that every step's tool exists and that
its input schema accepts the step's arguments, and raises :class:`~projector.server.errors.AttachError` naming the
workflow, the step and the tool otherwise.

The same call takes a ``fastmcp.FastMCP`` (the ``project-skill[fastmcp]`` extra). Each framework is an adapter
(:mod:`projector.server.adapters`) behind the one algorithm of :mod:`projector.server.attaching`. On MCPServer the
extension is registered through its private ``_apply_extension`` unless the server was built with it
(:func:`build_server` does that, with public API only): see :mod:`projector.server.adapters.mcp`.

For a server that is not a Python object of these frameworks (``mcp`` 1.x, another SDK, another language),
:func:`gateway` serves the same in front of it, over stdio or HTTP (:mod:`projector.server.gateway`).
"""

from __future__ import annotations

from .adapters.mcp import build_server
from .attaching import attach, attach_async, check_served_workflows, load_workflows
from .bootstrap import bootstrap_name
from .errors import AttachError
from .gateway import gateway, serve_gateway_async
from .http import serve_http, serve_http_async
from .skills import SKILLS_EXTENSION, SkillsExtension, SkillTree

__all__ = [
    "SKILLS_EXTENSION",
    "AttachError",
    "SkillTree",
    "SkillsExtension",
    "attach",
    "attach_async",
    "bootstrap_name",
    "build_server",
    "check_served_workflows",
    "gateway",
    "load_workflows",
    "serve_gateway_async",
    "serve_http",
    "serve_http_async",
]
