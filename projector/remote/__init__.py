"""The verifying client for any SEP-2640 skills server, and digest pins. An async library for build scripts::

    import anyio
    from projector.remote import connect, read_lock

    async def main():
        lock = read_lock("skills.lock")
        async with connect("http://127.0.0.1:8000/mcp") as remote:
            for entry in await remote.list_skills():          # reads no file
                pin = lock.find(remote.identity(), entry.uri)  # the pins of the server by its name
                skill = await remote.load(entry, pin=pin)     # VerificationError / LockError on any mismatch
                print(skill.uri, sorted(skill.paths()))

    anyio.run(main)

Modules: :mod:`.client` (connect, RemoteSkills, LoadedSkill; imports ``mcp``), :mod:`.verify` (pure checks),
:mod:`.pins` (lock files), :mod:`.output` (atomic writes), :mod:`.tools` (``--tools-from``), :mod:`.errors`.
Importing this package does not import ``mcp``; the names below load their module on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "connect": "client",
    "RemoteSkills": "client",
    "LoadedSkill": "client",
    "parse_server": "client",
    "SkillEntry": "..sep2640",
    "FileRef": "..sep2640",
    "yaml_equal": "..sep2640",
    "check_manifest": "..sep2640",
    "Lock": "pins",
    "Pin": "pins",
    "read_lock": "pins",
    "write_lock": "pins",
    "pin_entry": "pins",
    "manifest_digest": "pins",
    "write_bundles": "output",
    "apply_tools_from": "tools",
    "RemoteError": "errors",
    "VerificationError": "errors",
    "LockError": "errors",
    "ServerError": "errors",
    "DynamicDeclined": "errors",
    "OutputError": "errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'projector.remote' has no attribute {name!r}")
    return getattr(
        importlib.import_module(module if module.startswith(".") else f"{__name__}.{module}", __name__), name
    )
