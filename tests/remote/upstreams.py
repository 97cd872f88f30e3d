"""The upstream servers of other SDKs and languages that the gateway and the stdio transport are tested against,
installed (once) by scripts/conformance.py into the shared cache (``$PROJECTOR_CACHE``), the way ``--install-only``
installs them. An install that fails raises, so a test that needs one fails loudly rather than skipping."""

from __future__ import annotations

import importlib.util
import shlex
import sys
from functools import cache
from pathlib import Path
from typing import Any

from tests.conftest import ROOT


@cache
def conformance_script() -> Any:
    spec = importlib.util.spec_from_file_location("conformance_script_upstreams", ROOT / "scripts" / "conformance.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@cache
def installed() -> dict[str, Path]:
    script = conformance_script()
    cache_dir = script.cache_dir()
    script.install(cache_dir, log=lambda *_: None)  # Node 22
    return {**script.install_upstreams(cache_dir, log=lambda *_: None), "node": script.node_binary(cache_dir)}


def sqlite_command(db: Path) -> str:
    """The command line of the reference SQLite server (``mcp`` 1.x, from PyPI) on the database file ``db``."""
    return f"{shlex.quote(str(installed()['sqlite']))} --db-path {shlex.quote(str(db))}"


def memory_command(memory_file: Path) -> str:
    """The command line of the reference memory server (TypeScript SDK v1, from npm), storing in ``memory_file``."""
    entry = installed()["memory"] / "node_modules" / "@modelcontextprotocol" / "server-memory" / "dist" / "index.js"
    return (
        f"env MEMORY_FILE_PATH={shlex.quote(str(memory_file))} {shlex.quote(str(installed()['node']))} "
        f"{shlex.quote(str(entry))}"
    )


def everything_command() -> str:
    """The command line of the reference "everything" server (TypeScript SDK, from npm) on stdio."""
    entry = (
        installed()["everything"] / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
    )
    return f"{shlex.quote(str(installed()['node']))} {shlex.quote(str(entry))} stdio"
