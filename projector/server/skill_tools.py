"""Skills as tools: ``load_skill`` and ``read_skill_file``, for hosts that call tools but never read resources.

Many hosts give the model tools and nothing else: they never call ``resources/read`` or ``skills/list``, so a
SEP-2640 skill is invisible there unless the user picks a bootstrap prompt. ``attach(..., skill_tools=True)`` (and
``project-skill serve --skill-tools``) adds two read-only tools that let the model load a skill itself:

- ``load_skill(name)``: the SKILL.md of a listed skill, as text, byte for byte;
- ``read_skill_file(uri)``: a file of a listed skill by its ``skill://`` URI (``skill://hello-world/references/
  tools.md``). A UTF-8 file comes back as text; any other file as an embedded resource (``BlobResourceContents``,
  base64, with its mimeType), the same bytes ``resources/read`` sends as a ``blob``.

Both answer from the same verified in-memory :class:`~projector.server.skills.SkillTree` that ``skills/list`` and
``resources/read`` serve: no second reader, no file opened per call. URIs are looked up exactly as the manifest
lists them (no ``.``/``..`` resolution, no decoding), so a name or URI the manifest does not list is a tool error
(``isError``) with a message saying what is served, never a protocol error.

The descriptions name the skills (name and the first line of the description), in manifest order, at most
:data:`MAX_LISTED` of them and each line at most :data:`MAX_LINE` characters, so a large tree does not make a
description without bound; past that they say how many more there are (and ``load_skill`` still loads those).

Nothing here depends on the framework: :mod:`projector.server` registers the tools on MCPServer and
:mod:`projector.server.adapters.fastmcp` on FastMCP.
"""

from __future__ import annotations

import base64
import difflib
from collections.abc import Collection
from typing import Annotated

import mcp_types as types
from pydantic import Field

from ..errors import Span, error
from ..sep2640 import SCHEME, SKILL_FILE
from .errors import AttachError
from .tree import Skill, SkillFile, SkillTree

LOAD_SKILL = "load_skill"
READ_SKILL_FILE = "read_skill_file"
TOOL_NAMES = (LOAD_SKILL, READ_SKILL_FILE)
MAX_LISTED = 40  # skills named in a tool description
MAX_LINE = 160  # characters per skill line of a description
MAX_SHOWN = 20  # names or URIs quoted in one refusal
ANNOTATIONS = types.ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
NOT_SERVED = "not a file of a skill this server serves"


class Refusal(ValueError):
    """A name or URI the manifest does not list; the frameworks turn it into a tool error (``isError``)."""


def _shown(items: list[str], total: int | None = None) -> str:
    total = len(items) if total is None else total
    shown = ", ".join(items[:MAX_SHOWN])
    return shown + (f", and {total - MAX_SHOWN} more" if total > MAX_SHOWN else "")


class SkillTools:
    """The two tools over one verified tree: what they return, what they refuse, and how they describe themselves."""

    def __init__(self, tree: SkillTree):
        self.tree = tree
        by_name: dict[str, list[Skill]] = {}
        for s in tree.skills:
            by_name.setdefault(s.name, []).append(s)
        self._by_name = by_name
        self._by_path = {s.path: s for s in tree.skills}

    # ------------------------------------------------------------------------------------------------ the tools

    def load_skill(self, name: str) -> SkillFile:
        """The SKILL.md of the skill ``name`` (its name, or its path for a skill under a sub-folder)."""
        skill = self._by_path.get(name)
        if skill is None:
            found = self._by_name.get(name, [])
            if len(found) > 1:
                raise Refusal(
                    f"the name {name!r} is shared by {len(found)} skills; give one path: "
                    + _shown([s.path for s in found])
                )
            skill = found[0] if found else None
        if skill is None:
            keys = [s.path for s in self.tree.skills]
            close = difflib.get_close_matches(name, keys, n=3, cutoff=0.6)
            hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
            raise Refusal(f"no skill named {name!r} is served{hint} The skills: {_shown(keys)}")
        return skill.skill_md

    def read_skill_file(self, uri: str) -> SkillFile:
        """The file the manifest lists at exactly ``uri``."""
        f = self.tree.files.get(uri)
        if f is not None:
            return f
        why = f"{uri!r} is {NOT_SERVED}"
        if uri in self.tree.directories or uri.rstrip("/") in self.tree.directories:
            kids = self.tree.directories[uri if uri in self.tree.directories else uri.rstrip("/")]
            raise Refusal(f"{why}: it is a directory; its entries: {_shown([c['uri'] for c in kids])}")
        if not uri.startswith(SCHEME):
            near = sorted(f.uri for f in self.tree.files.values() if uri and f.rel == uri.lstrip("./"))
            hint = f"; did you mean {_shown(near)}?" if near else ""
            raise Refusal(f"{why}: give the full skill:// URI, skill://<skill>/<path in the skill>{hint}")
        rest = uri[len(SCHEME) :]
        skill = next((s for s in self.tree.skills if rest.startswith(s.path + "/")), None)
        dots = (
            " URIs are matched exactly as the manifest lists them; '.' and '..' segments are not resolved."
            if any(p in (".", "..") for p in rest.split("/"))
            else ""
        )
        if skill is None:
            raise Refusal(
                f"{why}: no served skill has that path.{dots} The skills: "
                f"{_shown([s.directory + '/' for s in self.tree.skills])}"
            )
        raise Refusal(f"{why}: the skill {skill.path} lists only {_shown([f.uri for f in skill.files])}.{dots}")

    @staticmethod
    def content(f: SkillFile) -> list[types.ContentBlock]:
        """A file as tool content: its text when it is UTF-8, else an embedded resource holding the bytes."""
        text = f.text
        if text is not None:
            return [types.TextContent(type="text", text=text)]
        blob = types.BlobResourceContents(
            uri=f.uri, mime_type=f.mime_type, blob=base64.b64encode(f.data).decode("ascii")
        )
        return [types.EmbeddedResource(type="resource", resource=blob)]

    # ---------------------------------------------------------------------------------------------- descriptions

    def _listing(self) -> str:
        lines = []
        for s in self.tree.skills[:MAX_LISTED]:
            first = (s.frontmatter["description"].strip().splitlines() or [""])[0].strip()
            line = f"- {s.path}: {first}"
            lines.append(line if len(line) <= MAX_LINE else line[: MAX_LINE - 1] + "…")
        more = len(self.tree.skills) - MAX_LISTED
        if more > 0:
            lines.append(f"(and {more} more, not listed here; {LOAD_SKILL} loads any of them by name)")
        return "\n".join(lines)

    def load_description(self) -> str:
        return (
            f"Load an Agent Skill that this server serves: returns the skill's {SKILL_FILE} (Markdown "
            f"instructions, with YAML frontmatter). Call it when the task matches a skill below, then follow it; "
            f"read the files it links to with {READ_SKILL_FILE}. Skills ({len(self.tree.skills)}):\n" + self._listing()
        )

    def read_description(self) -> str:
        example = next(
            (f.uri for f in self.tree.files.values() if f.rel != SKILL_FILE),
            self.tree.skills[0].uri if self.tree.skills else f"{SCHEME}<skill>/{SKILL_FILE}",
        )
        return (
            f"Read a file of an Agent Skill that this server serves, by its skill:// URI: "
            f"skill://<skill>/<path of the file inside the skill>, for a file that the skill's {SKILL_FILE} "
            f"links to (e.g. {example}). Returns the file's text (a file that is not UTF-8 comes back as an "
            f"embedded resource, base64). Only the files listed in the server's skills manifest are served. "
            f"Skills ({len(self.tree.skills)}):\n" + self._listing()
        )


def check_names(tree: SkillTree | None, taken: Collection[str]) -> None:
    """Raise :class:`AttachError` when the skill tools cannot be added: no tree, or a tool name already taken."""
    if tree is None:
        raise AttachError("skill_tools=True needs a skills tree: pass attach(skills=...), or leave skill_tools off")
    clashes = [
        error(
            Span("<attach>"),
            "tool-collision",
            f"the server already has a tool named '{name}', which skill_tools=True adds",
            "rename that tool, or leave skill_tools off (serve: drop --skill-tools)",
        )
        for name in TOOL_NAMES
        if name in taken
    ]
    if clashes:
        raise AttachError(clashes)


NAME_HELP = "The skill's name, as listed in this tool's description (e.g. hello-world)."
URI_HELP = "The file's skill:// URI: skill://<skill>/<path inside the skill>, e.g. skill://hello-world/SKILL.md."


def functions(tools: SkillTools, refused: type[Exception]) -> tuple[object, object]:
    """The two tool functions, raising ``refused`` (the framework's tool error) for a :class:`Refusal`."""

    async def load_skill(name: Annotated[str, Field(description=NAME_HELP)]) -> list[types.ContentBlock]:
        try:
            return tools.content(tools.load_skill(name))
        except Refusal as exc:
            raise refused(str(exc)) from None

    async def read_skill_file(uri: Annotated[str, Field(description=URI_HELP)]) -> list[types.ContentBlock]:
        try:
            return tools.content(tools.read_skill_file(uri))
        except Refusal as exc:
            raise refused(str(exc)) from None

    return load_skill, read_skill_file


def add_to_mcpserver(server: object, tree: SkillTree) -> SkillTools:
    """Register the two tools on an MCPServer (its names already checked by :func:`check_names`)."""
    from mcp.server.mcpserver.exceptions import ToolError

    tools = SkillTools(tree)
    load, read = functions(tools, ToolError)
    for fn, name, description in (
        (load, LOAD_SKILL, tools.load_description()),
        (read, READ_SKILL_FILE, tools.read_description()),
    ):
        server.add_tool(
            fn,
            name=name,
            description=description,
            annotations=ANNOTATIONS,  # type: ignore[attr-defined]
            structured_output=False,
        )
    return tools
