"""A server that already has a tool named ``load_skill``: ``project-skill serve THIS_FILE:server --skill-tools``
refuses it with ``tool-collision`` (exit 1, nothing is served), and so does ``attach(server, ..., skill_tools=True)``.
Driven by tests/server/test_skill_tools.py."""

from mcp.server.mcpserver import MCPServer

from projector.server.demo import add_demo_tools

server = MCPServer("has-load-skill")
add_demo_tools(server)


@server.tool(description="The author's own skill loader.")
def load_skill(name: str) -> str:
    return f"my own {name}"
