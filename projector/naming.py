"""Skill names, workflow names and URIs.

A workflow's name is also the name of its MCP prompt (and of the tool a server may run it as), and ``project-skill
init NAME`` writes it to ``workflows/NAME.yaml``. So it is what both MCP names and file names allow:
:data:`WORKFLOW_NAME`, checked by :func:`workflow_name_problem`, which ``init`` and the build both call.

The skill name is python-slugify's slug of the workflow name. Transliteration is pinned to text-unidecode (a declared
dependency), so installing Unidecode or anyascii beside this package cannot change a single name. The result is then
checked against the Agent Skills name rule, with the regular expression the SEP-2640 conformance suite uses.
"""

from __future__ import annotations

import re
import unicodedata

from slugify import slugify

MAX_NAME = 64
NAME_RULE = re.compile(r"^(?!.*--)[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$")
SEGMENT_RULE = re.compile(r"^(?!.*--)[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
BACKEND = "text-unidecode"
# A skill name and every prefix segment become folder names. On Windows these name devices, not files, in any case
# and with any extension: ``con/`` cannot be made or read there. A slug has no dots, so the bare names suffice.
RESERVED = frozenset({"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))})
RESERVED_WORDS = "con, prn, aux, nul, com0-com9, lpt0-lpt9"
# A workflow name: ASCII letters, digits, '_', '-' and '.' (what MCP tool names allow, SEP-986), starting with a letter
# or a digit (so no file name it makes is hidden or looks like an option), at most MAX_NAME characters.
WORKFLOW_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,%d}" % (MAX_NAME - 1))
_NAME_CHAR = re.compile(r"[A-Za-z0-9_.-]")
WORKFLOW_NAME_WORDS = (
    f"ASCII letters, digits, '_', '-' and '.', starting with a letter or a digit, at most {MAX_NAME} characters"
)
# --uri-prefix becomes folders under --out and the start of every skill:// URI. SEP-2640 sets no bound on a URI;
# 255 characters (128 one-letter segments at most) keeps every path well inside what file systems and tools take.
MAX_PREFIX = 255


def full_slug(name: str) -> str:
    """The slug with no length limit, to tell a name that had to be cut from one that fits."""
    return slugify(name, backend=BACKEND)


def skill_name(name: str) -> str:
    """The skill name: the slug of ``name``, at most 64 characters. May be empty; see :func:`name_problem`."""
    return slugify(name, max_length=MAX_NAME, backend=BACKEND)


def name_problem(name: str) -> tuple[str, str, str | None] | None:
    """Why ``name`` cannot name a skill, as ``(code, message, hint)``, or None when its slug is valid."""
    full = full_slug(name)
    if not full:
        return (
            "empty-slug",
            f"the workflow name {name!r} has no letters or digits to make a skill name from",
            "use a name with at least one ASCII letter or digit, or one that transliterates to one",
        )
    if len(full) > MAX_NAME:
        cut = skill_name(name)
        return (
            "name-too-long",
            f"the skill name '{full}' is {len(full)} characters; the limit is {MAX_NAME}",
            f"shorten the workflow name; cut at {MAX_NAME} it would read '{cut}'",
        )
    if full in RESERVED:
        return (
            "reserved-name",
            f"the skill name '{full}' is a reserved device name on Windows",
            f"rename the workflow: a folder named '{full}' cannot be made or read on Windows (reserved: "
            f"{RESERVED_WORDS})",
        )
    if not NAME_RULE.fullmatch(full):  # pragma: no cover - slugify's own output always matches; kept as the contract
        return ("bad-name", f"the skill name '{full}' breaks the Agent Skills name rule", None)
    return None


def suggested_name(name: str) -> str:
    """A workflow name that follows :data:`WORKFLOW_NAME`, made from ``name`` (``Restock Item`` -> ``restock_item``):
    its slug with underscores. Empty when ``name`` has no letter or digit to make one from."""
    return slugify(name, max_length=MAX_NAME, separator="_", backend=BACKEND)


def workflow_name_problem(name: str) -> tuple[str, str, str | None] | None:
    """Why ``name`` cannot name a workflow, as ``(code, message, hint)``, or None. First the skill name's rules
    (:func:`name_problem`), then ``bad-workflow-name`` for a name that is not :data:`WORKFLOW_NAME` (a space, a
    letter outside ASCII, a colon: a prompt named so is refused or misread by MCP hosts). The one rule that
    ``project-skill init`` and the build both apply."""
    problem = name_problem(name)
    if problem is not None or WORKFLOW_NAME.fullmatch(name):
        return problem
    bad = next((c for c in name if not _NAME_CHAR.fullmatch(c)), None)
    what = (
        f"holds U+{ord(bad):04X} {unicodedata.name(bad, '')}".rstrip()
        if bad is not None
        else f"is {len(name)} characters long"
        if len(name) > MAX_NAME
        else "does not start with a letter or a digit"
    )
    suggestion = suggested_name(name)
    return (
        "bad-workflow-name",
        f"the workflow name {name!r} {what}; it names the MCP prompt, so it must be {WORKFLOW_NAME_WORDS}",
        f"name it '{suggestion}'" if suggestion else None,
    )


def parse_prefix(prefix: str | None) -> tuple[str, ...]:
    """``a/b`` -> ``("a", "b")``. Each segment must be a lowercase slug (a valid RFC 3986 reg-name) and no Windows
    device name; the whole is at most :data:`MAX_PREFIX` characters."""
    if not prefix:
        return ()
    stripped = prefix.strip("/")
    if len(stripped) > MAX_PREFIX:
        raise ValueError(f"the URI prefix is {len(stripped)} characters long; the limit is {MAX_PREFIX}")
    parts = tuple(stripped.split("/"))
    for part in parts:
        if not SEGMENT_RULE.fullmatch(part):
            raise ValueError(f"URI prefix segment {part!r} must be lowercase letters, digits and single hyphens")
        if part in RESERVED:
            raise ValueError(f"URI prefix segment {part!r} is a reserved device name on Windows")
    return parts


def skill_path(slug: str, prefix: tuple[str, ...] = ()) -> str:
    """The skill path, which is also the bundle's folder relative to the output root."""
    return "/".join((*prefix, slug))
