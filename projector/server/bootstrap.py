"""The dual-surface prompt: each skill as an MCP prompt, for clients that do not speak SEP-2640.

Naming: the prompt for the skill at ``skill://<path>/SKILL.md`` is ``skill.<path>`` with each ``/`` written as
``.``: ``skill://refund-flow/SKILL.md`` gives ``skill.refund-flow``, ``skill://acme/billing/refund-flow/SKILL.md``
gives ``skill.acme.billing.refund-flow``. Skill path segments are lowercase letters, digits and hyphens, so the name
uses only ``[a-z0-9.-]`` (valid wherever MCP names are), maps back to exactly one skill, and contains a ``.``, which a
workflow's prompt name (its raw workflow name) could only share by spelling out ``skill.``. :func:`projector.server.
attach` refuses such a collision with a clear error rather than letting one prompt hide the other.

Getting the prompt returns one user message that inlines SKILL.md and then each supporting file, in manifest order,
byte for byte as ``resources/read`` serves them. Each file is one block::

    <file uri="skill://refund-flow/SKILL.md" mimeType="text/markdown" bytes="2298">
    ...exactly 2298 bytes of UTF-8...
    </file>

The ``bytes`` count makes the blocks unambiguous whatever a file contains: the file is the ``bytes`` bytes after the
opening line. A line break is added before ``</file>`` only when the file does not end with one. A file that is not
UTF-8 cannot be inlined as text; its block says so and points at ``resources/read``.

Nothing here depends on the framework: each framework's adapter (:mod:`projector.server.adapters`) makes the prompt
of :func:`bootstrap_name`, :func:`title` and :func:`description`, and answers it with :func:`render`.
"""

from __future__ import annotations

import re
from typing import Any

from ..errors import plural
from .skills import Skill

PREFIX = "skill."
BLOCK_OPEN = re.compile(r'<file uri="([^"]+)" mimeType="([^"]+)" bytes="(\d+)">\n')


def bootstrap_name(skill: Skill) -> str:
    return PREFIX + skill.path.replace("/", ".")


def render(skill: Skill) -> str:
    n = len(skill.files) - 1
    parts = [
        f"Use the skill `{skill.name}` ({skill.uri}): {skill.frontmatter['description']}\n\n"
        f"Its SKILL.md and {n} supporting file{'s' * (n != 1)} are inlined below, exactly as resources/read serves "
        f'them. Each file is a block: a line <file uri="..." mimeType="..." bytes="N">, exactly N bytes of '
        f"content, then </file>. Follow SKILL.md; where it links to a file, use the block with that file's URI.\n"
    ]
    ordered = [skill.skill_md, *(f for f in skill.files if f.rel != "SKILL.md")]
    for f in ordered:
        text = f.text
        if text is None:
            parts.append(
                f'\n<file uri="{f.uri}" mimeType="{f.mime_type}" binary="true">\n'
                f"({plural(len(f.data), 'byte')} that are not UTF-8 text; read them with resources/read)\n</file>\n"
            )
            continue
        parts.append(
            f'\n<file uri="{f.uri}" mimeType="{f.mime_type}" bytes="{len(f.data)}">\n{text}'
            f"{'' if text.endswith(chr(10)) or not text else chr(10)}</file>\n"
        )
    return "".join(parts)


def parse(text: str) -> dict[str, bytes]:
    """The inlined files of a bootstrap message, by URI (the inverse of :func:`render`, for clients and tests)."""
    data = text.encode("utf-8")
    out: dict[str, bytes] = {}
    pos = 0
    while True:
        m = BLOCK_OPEN.search(text, pos)
        if m is None:
            return out
        start = len(text[: m.end()].encode("utf-8"))
        size = int(m.group(3))
        body = data[start : start + size]
        out[m.group(1)] = body
        pos = len(data[: start + size].decode("utf-8"))


def title(skill: Skill) -> str:
    return f"Skill: {skill.name}"


def description(skill: Skill) -> str:
    n = len(skill.files) - 1
    return (
        f"{skill.frontmatter['description']} Loads the skill {skill.uri} (SKILL.md and {n} "
        f"supporting file{'s' * (n != 1)}) into the conversation, for clients without SEP-2640 skills support."
    )


def refuse_arguments(name: str, arguments: dict[str, Any] | None) -> None:
    """A bootstrap prompt takes no arguments: any is ``-32602``, on every framework."""
    if arguments:
        from mcp.shared.exceptions import MCPError
        from mcp_types import INVALID_PARAMS

        raise MCPError(code=INVALID_PARAMS, message=f"The prompt {name!r} takes no arguments")
