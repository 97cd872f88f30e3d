"""Skill names and URIs.

The skill name is python-slugify's slug of the workflow name. Transliteration is pinned to text-unidecode (a declared
dependency), so installing Unidecode or anyascii beside this package cannot change a single name. The result is then
checked against the Agent Skills name rule, with the regular expression the SEP-2640 conformance suite uses.
"""

from __future__ import annotations

import re

from slugify import slugify

MAX_NAME = 64
NAME_RULE = re.compile(r"^(?!.*--)[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?$")
SEGMENT_RULE = re.compile(r"^(?!.*--)[a-z0-9]([a-z0-9-]*[a-z0-9])?$")
BACKEND = "text-unidecode"


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
        return ("empty-slug", f"the workflow name {name!r} has no letters or digits to make a skill name from",
                "use a name with at least one ASCII letter or digit, or one that transliterates to one")
    if len(full) > MAX_NAME:
        cut = skill_name(name)
        return ("name-too-long", f"the skill name '{full}' is {len(full)} characters; the limit is {MAX_NAME}",
                f"shorten the workflow name; cut at {MAX_NAME} it would read '{cut}'")
    if not NAME_RULE.fullmatch(full):  # pragma: no cover - slugify's own output always matches; kept as the contract
        return ("bad-name", f"the skill name '{full}' breaks the Agent Skills name rule", None)
    return None


def parse_prefix(prefix: str | None) -> tuple[str, ...]:
    """``a/b`` -> ``("a", "b")``. Each segment must be a lowercase slug (a valid RFC 3986 reg-name)."""
    if not prefix:
        return ()
    parts = tuple(prefix.strip("/").split("/"))
    for part in parts:
        if not SEGMENT_RULE.fullmatch(part):
            raise ValueError(f"URI prefix segment {part!r} must be lowercase letters, digits and single hyphens")
    return parts


def skill_path(slug: str, prefix: tuple[str, ...] = ()) -> str:
    """The skill path, which is also the bundle's folder relative to the output root."""
    return "/".join((*prefix, slug))


def skill_uri(path: str, file: str = "SKILL.md") -> str:
    return f"skill://{path}/{file}"
