"""Skills bound to their tools: what a caller is served, given the tools its framework lets it see.

Each skill states the tools its steps call (``metadata.tools``, :attr:`~projector.server.tree.Skill.tools`). Per
request, a skill that calls a tool this server has and the caller cannot see is not there: not in ``skills/list``,
unknown to ``skills/get``, ``resources/read``, ``resources/directory/read`` and ``read_skill_file``, not named by
``load_skill``; and its workflow prompt, bootstrap prompt and workflow tool are absent. "Can see" is the framework's
own answer for that caller, its ``tools/list`` for the request (FastMCP's visibility, tags and authorization;
MCPServer's tool list and middleware): each adapter asks it once per request and hands the names here.

"Has": the tools registered on the server when ``attach`` ran, whoever may see them (the adapter's
``registered_tools``, by default its listing: MCPServer's; on FastMCP its providers' tools too, disabled and
authorization-bound ones included), together with every tool any caller's ``tools/list`` has shown since. The set
only grows, and only by the tools a skill or prompt calls, so it is bounded by the tree. A tool the server does not
have does not hide anything: the skill's tools are served elsewhere (a pure skills catalog such as
``serve --skills DIR`` of a tree ``remote load`` fetched, or a host whose tools live on another server). A tool registered after ``attach`` is not known to be the
server's until a caller is shown it.

A second rule: with the skill tools on, a client that declared the skills extension itself reads skills through it,
so ``load_skill`` and ``read_skill_file`` are not offered to it twice.

A third rule, for a server whose tools change while it serves (the gateway's upstream): a workflow whose steps no
longer fit the tools as they are now (:mod:`projector.server.refit`) is withdrawn, whatever the caller sees: its
workflow prompt and workflow tool, the skill that names it (``metadata.workflow``) and that skill's bootstrap prompt,
until it fits again.

Nothing here depends on the framework: the adapters (:mod:`projector.server.adapters`) ask :class:`Bound`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from ..fit import workflow_prompt
from ..model import Workflow
from ..sep2640 import EXTENSION_ID, SCHEME
from .bootstrap import bootstrap_name
from .skill_tools import TOOL_NAMES
from .tree import SkillTree


def calls(wf: Workflow) -> frozenset[str]:
    """The tools ``wf``'s steps call."""
    return frozenset(s.tool for s in wf.steps if s.tool)


def nothing() -> frozenset[str]:
    return frozenset()


# The workflows withdrawn now, for a run under way in this request (its task included): each adapter's middleware sets
# it to :attr:`Bound.withdrawn` around the request, and the runner asks it before each tool call, so that a run that
# started before the tools changed does not call one its workflow no longer fits (:mod:`projector.server.workflow`).
WITHDRAWN: ContextVar[Callable[[], frozenset[str]]] = ContextVar("projector_withdrawn", default=nothing)


def declares_skills(capabilities: Any) -> bool:
    """Whether a client with these capabilities (``mcp_types.ClientCapabilities``) declared the skills extension."""
    extensions = getattr(capabilities, "extensions", None) if capabilities is not None else None
    return isinstance(extensions, Mapping) and EXTENSION_ID in extensions


@dataclass(frozen=True)
class Bound:
    """What ``attach`` added, and the tools each piece needs.

    ``tree``: the served skills (None: prompts only). ``needs``: each workflow prompt, bootstrap prompt and workflow
    tool by name, and the tools it calls. ``skill_tools``: whether ``load_skill`` and ``read_skill_file`` are served.
    ``called``: every tool a skill or a prompt calls. ``has``: those of them the server is known to have (it grows
    as callers are shown more of them). ``withdrawn()``: the workflows withdrawn now (:mod:`projector.server.refit`).
    """

    tree: SkillTree | None
    needs: dict[str, frozenset[str]] = field(default_factory=dict)
    skill_tools: bool = False
    called: frozenset[str] = frozenset()
    has: set[str] = field(default_factory=set, compare=False)
    withdrawn: Callable[[], frozenset[str]] = field(default=nothing, compare=False)

    @classmethod
    def of(
        cls,
        tree: SkillTree | None,
        prompts: Sequence[Workflow],
        tools: Sequence[Workflow],
        bootstrap: bool,
        skill_tools: bool,
        *,
        has: Collection[str],
        withdrawn: Callable[[], frozenset[str]] = nothing,
    ) -> Bound:
        """``has``: the tools registered on the server when ``attach`` ran. ``withdrawn``: see :class:`Bound`."""
        needs = {wf.name: calls(wf) for wf in (*prompts, *tools)}
        if tree is not None and bootstrap:
            needs.update({bootstrap_name(s): s.tools for s in tree.skills if s.tools is not None})
        skills = tree.skills if tree is not None else ()
        called = frozenset().union(*needs.values(), *(s.tools for s in skills if s.tools is not None))
        return cls(tree, needs, skill_tools, called, set(called.intersection(has)), withdrawn)

    def known(self, visible: Collection[str] | None) -> frozenset[str]:
        """The called tools this server has, once the ones a caller who sees ``visible`` is shown are added."""
        if visible is not None:
            self.has.update(self.called.intersection(visible))
        return frozenset(self.has)

    @property
    def tool_names(self) -> frozenset[str]:
        """The names of the tools this adds whose offer depends on the caller."""
        return frozenset(self.needs) | (frozenset(TOOL_NAMES) if self.skill_tools else frozenset())

    def hidden(self, visible: Collection[str] | None) -> frozenset[str]:
        """The prompt and tool names a caller who sees the tools ``visible`` (None: every tool) is not offered: those
        that call a tool the server has and the caller cannot see, and those withdrawn."""
        gone = self._withdrawn()
        if visible is None:
            return gone
        has, seen = self.known(visible), frozenset(visible)
        return gone | frozenset(name for name, tools in self.needs.items() if not tools & has <= seen)

    def _withdrawn(self) -> frozenset[str]:
        """The withdrawn workflows' prompt and tool names, and the bootstrap prompts of the skills that name them."""
        names = self.withdrawn()
        if not names or self.tree is None:
            return names
        return names | frozenset(bootstrap_name(s) for s in self._skills_of(names))

    def _skills_of(self, workflows: frozenset[str]) -> list[Any]:
        return [s for s in self.tree.skills if workflow_prompt(s.frontmatter) in workflows] if self.tree else []

    def tree_for(self, visible: Collection[str] | None) -> SkillTree | None:
        """The tree a caller who sees the tools ``visible`` (None: every tool) is served."""
        if self.tree is None:
            return None
        names = self.withdrawn()
        without = frozenset(s.path for s in self._skills_of(names)) if names else frozenset()
        return self.tree.for_caller(visible, self.known(visible), without)

    def hides_uri(self, uri: str, served: SkillTree | None) -> bool:
        """Whether ``uri`` (a file or directory of the whole tree) is left out of ``served``, a caller's tree."""
        if self.tree is None or served is None or served is self.tree or not uri.startswith(SCHEME):
            return False
        known = uri in self.tree.files or uri in self.tree.decoded or uri.rstrip("/") in self.tree.directories
        return known and not (uri in served.files or uri in served.decoded or uri.rstrip("/") in served.directories)
