"""Fixtures for the remote tests."""

from __future__ import annotations

import pytest


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
