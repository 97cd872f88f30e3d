"""The one reader of SKILL.md's frontmatter: YAML 1.2 core, and whatever YAML readers read differently refused.

The build reads back every SKILL.md it writes (the index's frontmatter is what the file says), ``serve`` reads each
one of the tree it serves, and the client each one it verifies: all three call :func:`parse_frontmatter`.

- The block is found as the conformance suite finds it (:data:`FRONTMATTER`): an optional BOM, a ``---`` line, the
  YAML, a ``---`` line. Not UTF-8, or no block: ``bad-frontmatter``.
- Frontmatter that YAML readers read differently is refused before it is parsed (``frontmatter-ambiguous``): U+0085,
  U+2028 and U+2029 (line breaks to YAML 1.1, text to YAML 1.2), duplicate keys, anchors, aliases, merge keys and
  tags; nesting deeper than :data:`MAX_FRONTMATTER_DEPTH` is ``bad-frontmatter``.
- The reading is the YAML 1.2 core schema (:func:`projector.yaml12.load_core`), as the reference SDK and the
  conformance suite read it: ``yes`` is the string "yes" and ``0o17`` the integer 15. ``serve`` and the client read
  so, and a file that only a YAML 1.1 reader sees as equal to its entry is refused (``frontmatter-mismatch``).
- The YAML 1.1 reading (``yaml_version="1.1"``) is PyYAML's SafeLoader, with libyaml's parser when PyYAML has it
  (the same values, several times faster): a client that trusts a YAML 1.1 publisher such as FastMCP asks for it,
  and the build reads its own output so, because the build imports neither ruamel.yaml nor anything beyond PyYAML,
  Jinja2 and python-slugify. The build quotes every scalar the two versions read differently
  (:func:`projector.yaml12.add_quoting`), so both readings of what it writes are the same (tests/test_sep2640.py
  checks it on the generated tree).
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from ..yaml12 import load_core, yaml_error
from .values import json_key
from .wire import VerificationError

# The frontmatter block as the conformance suite finds it: an optional BOM, a '---' line, the YAML, a '---' line.
FRONTMATTER = re.compile(r"\A\ufeff?---\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)
# The parser (and loader) of each reading: pure PyYAML's events for the refusals before ruamel.yaml reads YAML 1.2
# (ruamel.yaml's parser is PyYAML's), libyaml's for YAML 1.1 when PyYAML has it.
LOADERS: dict[str, Any] = {"1.2": yaml.SafeLoader, "1.1": getattr(yaml, "CSafeLoader", yaml.SafeLoader)}

FRONTMATTER_YAML = ("1.2", "1.1")  # the readings of frontmatter a caller may ask for; the first is the default


def check_reading(yaml_version: str) -> str:
    """``yaml_version`` if it is one of :data:`FRONTMATTER_YAML`; else ``ValueError`` (a caller's mistake)."""
    if yaml_version not in FRONTMATTER_YAML:
        raise ValueError(f"frontmatter_yaml must be '1.2' or '1.1', not {yaml_version!r}")
    return yaml_version


def split_frontmatter(text: str) -> tuple[str, str]:
    """SKILL.md's text -> (the YAML of its frontmatter block, the body after the block), the block found as the
    conformance suite finds it (:data:`FRONTMATTER`). ``ValueError`` when there is none."""
    m = FRONTMATTER.match(text)
    if m is None:
        raise ValueError("SKILL.md has no '---' frontmatter block")
    return m.group(1), text[m.end() :]


def frontmatter_text(data: bytes, where: str, yaml_version: str = "1.2") -> str:
    """The YAML text of SKILL.md's frontmatter block, after the refusals every reading shares: not UTF-8, no block
    (``bad-frontmatter``), and whatever YAML readers read differently (``frontmatter-ambiguous``), with the nesting
    bound (:data:`MAX_FRONTMATTER_DEPTH`) that keeps either parser's recursion safe. The refusals run on the parser
    of the reading ``yaml_version`` (:data:`LOADERS`), so the events they saw are the ones that are read."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise VerificationError("bad-frontmatter", where, "SKILL.md is not UTF-8") from None
    try:
        block, body = split_frontmatter(text)
    except ValueError as exc:
        raise VerificationError("bad-frontmatter", where, str(exc)) from None
    refuse_line_breaks(text, len(text) - len(body), where)
    refuse_ambiguous(block, where, LOADERS[yaml_version])
    return block


def parse_frontmatter(data: bytes, where: str, yaml_version: str = "1.2") -> dict[str, Any]:
    """SKILL.md bytes -> the YAML frontmatter as a mapping, read with the YAML 1.2 core schema as the reference SDK
    and the conformance suite read it (so ``yes`` is the string "yes" and ``0o17`` the integer 15); with
    ``yaml_version="1.1"``, with PyYAML's SafeLoader as FastMCP reads it (``yes`` is true, ``0o17`` a string)."""
    check_reading(yaml_version)
    text = frontmatter_text(data, where, yaml_version)
    if yaml_version == "1.2":
        errors: tuple[type[BaseException], ...] = (yaml_error(),)
        version = ""
    else:  # integers past Python's digit limit are a ValueError; the depth bound makes RecursionError moot
        errors = (yaml.YAMLError, ValueError, RecursionError)
        version = " 1.1"
    try:
        value = load_core(text) if yaml_version == "1.2" else yaml.load(text, Loader=LOADERS[yaml_version])  # noqa: S506 - safe loaders
    except errors as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at frontmatter line {mark.line + 1}" if mark is not None else ""
        raise VerificationError(
            "bad-frontmatter", where, f"SKILL.md frontmatter is not valid YAML{version}{at}"
        ) from None
    if not isinstance(value, dict):
        raise VerificationError("bad-frontmatter", where, "SKILL.md frontmatter is not a mapping")
    return value


# Line breaks to a YAML 1.1 reader (PyYAML, and so this module's own parser) and ordinary text to a YAML 1.2 reader
# (eemeli/yaml, which the conformance suite uses, and js-yaml): a file holding one reads as two different mappings.
YAML11_ONLY_BREAKS = {"\x85": "NEXT LINE (NEL)", "\u2028": "LINE SEPARATOR", "\u2029": "PARAGRAPH SEPARATOR"}
_YAML11_ONLY_BREAK = re.compile("[\x85\u2028\u2029]")


def refuse_line_breaks(text: str, end: int, where: str) -> None:
    """Refuse ``frontmatter-ambiguous`` when ``text[:end]`` (SKILL.md up to the end of its frontmatter block) holds
    U+0085, U+2028 or U+2029, naming the character and its line and column in SKILL.md (lines counted at ``\n``,
    columns from 1)."""
    m = _YAML11_ONLY_BREAK.search(text, 0, end)
    if m is None:
        return
    i = m.start()
    line = text.count("\n", 0, i) + 1
    col = i - (text.rfind("\n", 0, i) + 1) + 1
    ch = m.group()
    raise VerificationError(
        "frontmatter-ambiguous",
        where,
        f"SKILL.md frontmatter holds U+{ord(ch):04X} {YAML11_ONLY_BREAKS[ch]} at line {line}, column {col}",
        "YAML 1.1 readers take it for a line break and YAML 1.2 readers "
        "(eemeli/yaml, js-yaml) for text, so hosts would read different frontmatter; write it "
        'as an escape in a double-quoted string ("\\u2028"), or leave it out',
    )


_AMBIGUOUS_HINT = (
    "YAML parsers disagree on such frontmatter (which duplicate wins, what a tag means), so a host "
    "could show other text than the one verified; a skill's frontmatter is plain YAML"
)
_MERGE = "tag:yaml.org,2002:merge"
MAX_FRONTMATTER_DEPTH = 64  # far beyond any real frontmatter; keeps the recursive parser and comparisons safe


def _ambiguous(where: str, what: str) -> VerificationError:
    return VerificationError("frontmatter-ambiguous", where, f"SKILL.md frontmatter holds {what}", _AMBIGUOUS_HINT)


def _scalarjson_key(loader: Any, ev: Any) -> str:
    """A mapping key's scalar event as the JSON key it becomes (``1``, ``1.0`` and ``"1"`` are all ``"1"``)."""
    tag = loader.resolve(yaml.ScalarNode, ev.value, ev.implicit)
    if tag == _MERGE:
        raise _ambiguous(loader.where, "a merge key (<<)")
    try:
        return json_key(loader.construct_object(yaml.ScalarNode(tag, ev.value, style=ev.style)))
    except Exception:  # a value no constructor takes (an integer over Python's digit limit): its text
        return ev.value


def refuse_ambiguous(text: str, where: str, parser: Any = yaml.SafeLoader) -> None:
    """Refuse frontmatter whose meaning depends on the parser (``frontmatter-ambiguous``): duplicate keys (also
    keys that JSON cannot tell apart, like ``1`` and ``"1"``), anchors, aliases, merge keys, explicit tags and
    collections used as keys (a directive cannot occur: its ``---`` would end the block). One pass over the parser's events, without recursion, so no nesting
    depth can exhaust the stack (deeper than :data:`MAX_FRONTMATTER_DEPTH` is ``bad-frontmatter``). Text that is not YAML at all is left to the parser's own error."""
    loader = yaml.SafeLoader("")
    loader.where = where  # type: ignore[attr-defined]
    # One frame per open collection: [is a mapping, the next node is a key, the keys seen so far].
    stack: list[list[Any]] = []
    try:
        for ev in yaml.parse(text, Loader=parser):
            if not isinstance(ev, yaml.NodeEvent):
                if isinstance(ev, yaml.CollectionEndEvent):
                    stack.pop()
                continue
            if isinstance(ev, yaml.AliasEvent):
                raise _ambiguous(where, f"the alias *{ev.anchor}")
            if ev.anchor is not None:
                raise _ambiguous(where, f"the anchor &{ev.anchor}")
            if ev.tag is not None:
                raise _ambiguous(where, f"the explicit tag {ev.tag}")
            frame = stack[-1] if stack else None
            is_key = frame is not None and frame[0] and frame[1]
            if frame is not None and frame[0]:
                frame[1] = not frame[1]
            if isinstance(ev, yaml.CollectionStartEvent):
                if is_key:
                    raise _ambiguous(where, "a mapping or sequence used as a key")
                stack.append([isinstance(ev, yaml.MappingStartEvent), True, set()])
                if len(stack) > MAX_FRONTMATTER_DEPTH:
                    raise VerificationError(
                        "bad-frontmatter",
                        where,
                        f"SKILL.md frontmatter nests more than {MAX_FRONTMATTER_DEPTH} levels deep",
                    )
            elif is_key:
                key = _scalarjson_key(loader, ev)
                if key in frame[2]:  # type: ignore[index]
                    raise _ambiguous(where, f"the key {key!r} twice")
                frame[2].add(key)  # type: ignore[index]
    except yaml.YAMLError:
        return
    finally:
        loader.dispose()
