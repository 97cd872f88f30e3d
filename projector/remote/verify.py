"""The client's reading of SKILL.md's frontmatter against its entry, and what it says when they disagree.

The checks are the wire's (:mod:`projector.sep2640`: the entry, the manifest, name identity, bytes, the one
frontmatter reader and the comparison of values); this module adds what a host is told. :func:`check_frontmatter`
reads SKILL.md's frontmatter with the YAML 1.2 core schema, as the reference SDK and the conformance suite do, and
compares it field by field with the entry's (:func:`~projector.sep2640.frontmatter_diff`). The 1.1 reading is not
accepted as well: a file that only a YAML 1.1 reader sees as equal to its entry shows every YAML 1.2 host something
else. When that is why the file and its entry disagree (a YAML 1.1 publisher, such as FastMCP's skills provider,
listed ``approved: yes`` as ``true``), ``frontmatter-mismatch`` says so, names both readings of each value and the
fix (the publisher quotes them). A caller that trusts such a publisher reads with ``yaml_version="1.1"`` instead
(PyYAML's SafeLoader, after the same refusals and bounds), and :func:`frontmatter_note` says what a YAML 1.2 host
would see. No I/O, no ``mcp``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from ..sep2640 import (
    SkillEntry,
    VerificationError,
    check_reading,
    describe_value,
    frontmatter_diff,
    frontmatter_text,
    json_key,
    parse_frontmatter,
    yaml_equal,
)


_MISMATCH_HINT = "a host must not load a skill whose file and entry disagree"
_READ_AS = {
    "1.2": "frontmatter is read as YAML 1.2, as the reference SDK reads it",
    "1.1": "frontmatter is read as YAML 1.1, as --frontmatter-yaml 1.1 asks",
}
_OTHER = {"1.2": "1.1", "1.1": "1.2"}


def _mismatch(fm: dict[str, Any], entry: SkillEntry, yaml_version: str) -> tuple[str, str] | None:
    """Why the frontmatter ``fm`` (read as ``yaml_version``) is not the entry's, as (message, hint); None if it is."""
    keys, diff = frontmatter_diff(fm, entry.frontmatter)
    if keys:
        return (
            f"SKILL.md frontmatter and the entry's do not have the same keys: {', '.join(repr(k) for k in keys)}",
            _MISMATCH_HINT,
        )
    if diff:
        detail = "; ".join(f"'{path}' (file: {describe_value(a)}, entry: {describe_value(b)})" for path, a, b in diff)
        return (
            f"SKILL.md frontmatter differs from the entry's in field{'s' * (len(diff) != 1)} {detail}",
            f"{_MISMATCH_HINT} ({_READ_AS[yaml_version]})",
        )
    return None


@dataclass(frozen=True)
class _Reading:
    """One place where YAML 1.2 and YAML 1.1 read the frontmatter differently: a value (``key`` is the last key's
    text and ``text`` the value as written, when it is a plain scalar), or a key (``is_key``)."""

    path: str
    key: str | None
    text: str | None
    v12: Any
    v11: Any
    is_key: bool = False

    def phrase(self) -> str:
        both = f"reads as {describe_value(self.v12)} under YAML 1.2 and as {describe_value(self.v11)} under YAML 1.1"
        if self.is_key:
            return f"the key {self.text!r} {both}"
        return f"'{self.path}: {self.text}' {both}" if self.text is not None else f"'{self.path}' {both}"

    def quoted(self) -> str | None:
        """The fix, as the publisher would write it: ``approved: "yes"``."""
        if self.is_key or self.text is None or self.key is None:
            return None
        return f'{self.key}: "{self.text}"'  # the values the readings disagree on hold no quote or backslash


def _plain(node: Any) -> str | None:
    return node.value if isinstance(node, yaml.ScalarNode) and node.style is None and len(node.value) <= 60 else None


def _readings(node: Any, v12: Any, v11: Any, path: str = "", key: str | None = None) -> list[_Reading]:
    """Where the two readings of one composed YAML node differ, in document order. Both readings were built from the
    same text, so their mappings hold the node's pairs in the node's order (duplicates were refused before); the
    depth is bounded by :data:`MAX_FRONTMATTER_DEPTH`."""
    if (
        isinstance(node, yaml.MappingNode)
        and isinstance(v12, dict)
        and isinstance(v11, dict)
        and len(node.value) == len(v12) == len(v11)
    ):
        out = []
        for (kn, vn), (k12, x12), (k11, x11) in zip(node.value, v12.items(), v11.items()):
            text = kn.value if isinstance(kn, yaml.ScalarNode) else None
            sub = f"{path}.{json_key(k12)}" if path else json_key(k12)
            if json_key(k12) != json_key(k11):
                out.append(_Reading(sub, None, text, k12, k11, is_key=True))
            else:
                out.extend(_readings(vn, x12, x11, sub, text))
        return out
    if (
        isinstance(node, yaml.SequenceNode)
        and isinstance(v12, list)
        and isinstance(v11, list)
        and len(node.value) == len(v12) == len(v11)
    ):
        out = []
        for i, (item, x12, x11) in enumerate(zip(node.value, v12, v11)):
            out.extend(_readings(item, x12, x11, f"{path}.{i}" if path else str(i)))
        return out
    return [] if yaml_equal(v12, v11) else [_Reading(path, key, _plain(node), v12, v11)]


def _reading_diffs(data: bytes, where: str) -> list[_Reading] | None:
    """Where YAML 1.2 and YAML 1.1 read SKILL.md's frontmatter differently; None when one of them cannot read it."""
    try:
        fm12, fm11 = parse_frontmatter(data, where, "1.2"), parse_frontmatter(data, where, "1.1")
        node = yaml.compose(frontmatter_text(data, where), Loader=yaml.SafeLoader)
    except (VerificationError, yaml.YAMLError):
        return None
    return _readings(node, fm12, fm11)


def _explain(readings: list[_Reading]) -> str:
    return "; ".join(r.phrase() for r in readings)


def check_frontmatter(
    entry: SkillEntry, data: bytes, yaml_version: str = "1.2", *, pinned: bool = False
) -> dict[str, Any]:
    """Parse the verified SKILL.md bytes (YAML 1.2 core schema; with ``yaml_version="1.1"``, PyYAML's SafeLoader)
    and compare the frontmatter field by field with the entry's. The message names each field and both values with
    their types; when the file and the entry agree under the other reading, it says so, names both readings of
    each value that differs, and the hint gives the fix (the publisher quotes them) and the opt-in (``pinned``: the
    reading comes from a lock, so the opt-in is to pin again)."""
    fm = parse_frontmatter(data, entry.uri, yaml_version)
    problem = _mismatch(fm, entry, yaml_version)
    if problem is None:
        return fm
    message, hint = problem
    other = _OTHER[yaml_version]
    readings = _reading_diffs(data, entry.uri)
    if readings and _mismatch(parse_frontmatter(data, entry.uri, other), entry, other) is None:
        message += f"; the file and the entry agree under YAML {other} but not under YAML {yaml_version}: " + _explain(
            readings
        )
        example = readings[0].quoted()
        publisher = " (as PyYAML, and so FastMCP, does) and should" if other == "1.1" else " and can"
        hint = (
            f"{_MISMATCH_HINT} ({_READ_AS[yaml_version]}); the publisher read it as YAML {other}{publisher} "
            f"quote these values in SKILL.md{f' ({example})' if example else ''}, which every YAML reader reads "
            "as the same string; "
        )
        if pinned:
            hint += (
                f"the lock pins this skill read as YAML {yaml_version}: to accept the YAML {other} reading, pin "
                f"it again with --frontmatter-yaml {other}"
            )
        elif other == "1.1":
            hint += (
                "to accept this publisher's YAML 1.1 reading, pass --frontmatter-yaml 1.1 "
                '(frontmatter_yaml="1.1" in the library)'
            )
        else:
            hint += (
                "to accept its YAML 1.2 reading, load it without --frontmatter-yaml 1.1 "
                '(frontmatter_yaml="1.2" in the library)'
            )
    raise VerificationError("frontmatter-mismatch", entry.uri, message, hint)


def frontmatter_note(entry: SkillEntry, data: bytes, yaml_version: str) -> str | None:
    """For a SKILL.md that :func:`check_frontmatter` accepted with ``yaml_version="1.1"``: what a YAML 1.2 host
    would see, when that is not its entry (the note ``remote load`` prints per skill accepted that way); None when
    both readings agree with the entry, or the reading was YAML 1.2."""
    if check_reading(yaml_version) == "1.2":
        return None
    try:
        if _mismatch(parse_frontmatter(data, entry.uri, "1.2"), entry, "1.2") is None:
            return None
        why = _explain(_reading_diffs(data, entry.uri) or [])
    except VerificationError:
        why = "its frontmatter is not valid YAML 1.2"
    return (
        "accepted with its frontmatter read as YAML 1.1 (--frontmatter-yaml 1.1), as its entry reads it; a YAML "
        f"1.2 host (the reference SDK) refuses it: {why}"
    )
