"""A handshake-era client (``mcp`` 1.x, run by the Python of the reference SQLite server's virtual environment) of
``project-skill serve --upstream``, over stdio: it lists the tools and prompts, calls ``change(how)`` through the
gateway, waits (a bounded time) for ``notifications/tools/list_changed`` and ``prompts/list_changed``, and lists
them again. Prints one JSON object: what it saw.

Run as a script: ``python legacy_listener.py COMMAND_JSON ENV_JSON HOW``."""

from __future__ import annotations

import json
import sys

import anyio
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client


async def main(command: list[str], env: dict[str, str], how: str) -> dict:
    heard: set[str] = set()
    got = anyio.Event()

    async def handler(message) -> None:
        if isinstance(message, types.ServerNotification):
            heard.add(message.root.method)
            if {"notifications/tools/list_changed", "notifications/prompts/list_changed"} <= heard:
                got.set()

    params = StdioServerParameters(command=command[0], args=command[1:], env=env)
    async with stdio_client(params) as (read, write), ClientSession(read, write, message_handler=handler) as session:
        await session.initialize()
        seen: dict[str, list[str]] = {}
        seen["tools before"] = sorted(t.name for t in (await session.list_tools()).tools)
        seen["prompts before"] = sorted(p.name for p in (await session.list_prompts()).prompts)
        await session.call_tool("change", {"how": how})
        with anyio.move_on_after(30):
            await got.wait()
        seen["heard"] = sorted(heard)
        seen["tools after"] = sorted(t.name for t in (await session.list_tools()).tools)
        seen["prompts after"] = sorted(p.name for p in (await session.list_prompts()).prompts)
    return seen


if __name__ == "__main__":
    print(json.dumps(anyio.run(main, json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3])))
