"""The demo shop with its workflows as tasks, behind bearer-token authentication, for two principals to drive over HTTP.

Not part of the product: ``project-skill serve`` has no authentication, so the tests serve this::

    python tests/server/tasks/auth_server.py --framework mcp --http 127.0.0.1:PORT [--state DIR|POSTGRES_URL]

Each framework's own auth support checks the ``Authorization: Bearer`` header against :data:`TOKENS` (mcp: a
``TokenVerifier`` with ``AuthSettings``; FastMCP: its ``StaticTokenVerifier``); a request without a known token is
refused with 401 before it reaches the server. The tasks are kept in memory, or with ``--state`` durably on DBOS in a
folder or a Postgres database, as ``attach(..., state=...)`` keeps them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # run as a script from the repository
    sys.path.insert(0, str(ROOT))

from projector.server import attach  # noqa: E402
from projector.server.demo import INSTRUCTIONS, add_demo_tools  # noqa: E402
from projector.server.tasks import Tasks  # noqa: E402

# Two principals of one OAuth client, told apart by their subject (as mcp's principal is: client, issuer, subject),
# and a second token of the first.
TOKENS: dict[str, dict[str, Any]] = {
    "alice-token-5f1c9e": {"client_id": "shop-app", "sub": "alice", "scopes": ["shop"]},
    "bob-token-8d2a7b": {"client_id": "shop-app", "sub": "bob", "scopes": ["shop"]},
    "alice-token-2c4e10": {"client_id": "shop-app", "sub": "alice", "scopes": ["shop"]},  # Alice's, refreshed
}


class Verifier:
    """mcp's ``TokenVerifier``: a token of :data:`TOKENS`, or None."""

    async def verify_token(self, token: str) -> Any:
        from mcp.server.auth.provider import AccessToken

        found = TOKENS.get(token)
        if found is None:
            return None
        return AccessToken(token=token, client_id=found["client_id"], scopes=found["scopes"], subject=found["sub"])


def _server(framework: str, url: str) -> Any:
    if framework == "fastmcp":
        from fastmcp import FastMCP
        from fastmcp.server.auth.providers.jwt import StaticTokenVerifier

        return FastMCP("projector-tasks", instructions=INSTRUCTIONS, auth=StaticTokenVerifier(tokens=TOKENS))
    from mcp.server.auth.settings import AuthSettings
    from mcp.server.mcpserver import MCPServer

    auth = AuthSettings(issuer_url="https://auth.example.com", resource_server_url=url, validate_token_resource=False)
    return MCPServer("projector-tasks", version="1", instructions=INSTRUCTIONS, token_verifier=Verifier(), auth=auth)


def server(framework: str, url: str, state: str | None = None) -> Any:
    srv = _server(framework, url)
    add_demo_tools(srv)
    kept: dict[str, Any] = {"state": state} if state else {"tasks": Tasks(poll_ms=100)}
    attach(srv, ROOT / "generated_skills", ROOT / "workflows", workflow_tools=True, **kept)
    return srv


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--framework", default="mcp")
    ap.add_argument("--http", required=True, metavar="HOST:PORT")
    ap.add_argument("--state", default=None)
    args = ap.parse_args()
    host, _, port = args.http.rpartition(":")
    from projector.server import serve_http

    serve_http(server(args.framework, f"http://{args.http}/mcp", args.state), host, int(port))


if __name__ == "__main__":
    main()
