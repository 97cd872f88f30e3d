"""YAML 1.1 and YAML 1.2 agree on the frontmatter: what the two versions resolve plain scalars to.

PyYAML reads and writes YAML 1.1, where ``yes`` is a boolean and ``0o17`` a string. The reference TypeScript SDK,
the official conformance suite and the YAML 1.2 publishers read frontmatter with the YAML 1.2 *core schema*, where
``yes`` is a string and ``0o17`` the integer 15. A frontmatter value that the two read differently says two different
things to two hosts.

- Writing (:func:`add_quoting`): a string that either version would resolve to something else is quoted. PyYAML's
  dumper already quotes what YAML 1.1 resolves; the resolvers below make it quote what YAML 1.2 resolves too. They
  are deliberately a little wider than the core schema (digits may hold ``_``, and ``0b`` binary counts), as
  ruamel.yaml's 1.2 mode is: quoting a string never changes its value for any reader, so erring wide is safe.
- Reading (:func:`load_core`): the YAML 1.2 core schema exactly (YAML 1.2.2, section 10.3.2), with ruamel.yaml's
  parser, as the verifier reads served frontmatter. ruamel.yaml is imported only then.

tests/test_yaml12.py checks both differentially against ruamel.yaml, with random strings and the known traps.
"""

from __future__ import annotations

import re
from typing import Any

INT, FLOAT, BOOL, NULL = (
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
)

# The YAML 1.2 core schema's plain-scalar resolution, as the specification writes it.
CORE: tuple[tuple[str, str, str], ...] = (
    (NULL, r"^(?:~|null|Null|NULL|)$", "~nN"),
    (BOOL, r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    (INT, r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    (
        FLOAT,
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+0123456789.",
    ),
)

# What the frontmatter dumper must quote on top of YAML 1.1: every core-schema number, also with '_' among the digits
# (even '_' alone), with a sign on 0o/0x, and 0b binary: ruamel.yaml's 1.2 reading, which is wider than the core.
QUOTE_TOO: tuple[tuple[str, str, str], ...] = (
    (BOOL, CORE[1][1], CORE[1][2]),
    (INT, r"^[-+]?(?:[0-9_]+|0o[0-7_]+|0x[0-9a-fA-F_]+|0b[01_]+)$", "-+0123456789_"),
    (
        FLOAT,
        r"^(?:[-+]?(?:\.[0-9_]+|[0-9][0-9_]*(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9_]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+0123456789.",
    ),
)


_CORE_RX = tuple((tag, re.compile(rx)) for tag, rx, _first in CORE)
# A plain scalar can resolve to something other than a string, under either version, only if it starts with one of
# these (or is empty): YAML 1.1's resolvers and the core schema's together.
MAYBE_TYPED = frozenset("".join(first for _tag, _rx, first in CORE) + "yYnNoO")


def core_value(text: str) -> Any:
    """What a YAML 1.2 core-schema reader makes of the plain scalar ``text``: None, a bool, an int, a float or the
    text itself (YAML 1.2.2, section 10.3.2). An integer too long for Python stays text."""
    for tag, rx in _CORE_RX:
        if rx.match(text):
            break
    else:
        return text
    if tag == NULL:
        return None
    if tag == BOOL:
        return text.lower() == "true"
    if tag == INT:
        try:
            if text.startswith(("0o", "0x")):
                return int(text[2:], 8 if text[1] == "o" else 16)
            return int(text, 10)
        except ValueError:  # over Python's digit limit: the loader refuses the number (bad-number) itself
            return text
    if text.lstrip("+-").lower() == ".inf":
        return float("-inf") if text.startswith("-") else float("inf")
    if text.lower() == ".nan":
        return float("nan")
    return float(text)


_CORE_VALUES: dict[str, Any] = {}


def _cached_core_value(text: str) -> Any:
    """:func:`core_value`, remembered: a workflow set repeats its keys and words (the values are immutable). Only
    for a ``str``: the text itself may be the value, and a subclass of str must not come back for a ``str``."""
    if type(text) is not str:
        return core_value(text)
    try:
        return _CORE_VALUES[text]
    except KeyError:
        pass
    if len(_CORE_VALUES) > 100_000:
        _CORE_VALUES.clear()
    value = _CORE_VALUES[text] = core_value(text)
    return value


def same_value(a: Any, b: Any) -> bool:
    """Whether two scalar values are the same JSON value: a boolean only equals a boolean, numbers compare by value
    (NaN equals NaN here: both readers read the same text), strings and null as themselves."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b or (a != a and b != b)
    return type(a) is type(b) and a == b


def reads_differently(text: str, value_1_1: Any) -> tuple[bool, Any]:
    """``(True, the YAML 1.2 value)`` when the plain scalar ``text``, which PyYAML (YAML 1.1) read as ``value_1_1``,
    means something else under the YAML 1.2 core schema; ``(False, value_1_1)`` when both agree."""
    if text[:1] not in MAYBE_TYPED and isinstance(value_1_1, str):  # "" is in every set: the empty scalar
        return False, value_1_1
    value_1_2 = _cached_core_value(text)
    if type(value_1_1) is str:  # what same_value says of a string and anything
        differs = type(value_1_2) is not str or value_1_2 != value_1_1
        return (True, value_1_2) if differs else (False, value_1_1)
    if same_value(value_1_1, value_1_2):
        return False, value_1_1
    return True, value_1_2


def add_quoting(dumper: type) -> None:
    """Make a PyYAML dumper class quote every string that YAML 1.2 would read as something else (it already
    quotes what YAML 1.1 would). Changes ``dumper`` only: PyYAML copies the resolver table per class."""
    for tag, rx, first in QUOTE_TOO:
        dumper.add_implicit_resolver(tag, re.compile(rx), list(first))


_core_loader: Any = None


def _loader() -> Any:
    global _core_loader
    if _core_loader is None:
        from ruamel.yaml import YAML
        from ruamel.yaml.resolver import VersionedResolver

        table: dict[str, list[tuple[str, Any]]] = {}
        for tag, rx, first in CORE:
            for ch in list(first) + ([""] if tag == NULL else []):
                table.setdefault(ch, []).append((tag, re.compile(rx)))

        class CoreResolver(VersionedResolver):
            """Plain scalars resolve by the YAML 1.2 core schema only (no timestamps, no ``=``, no ``<<``), whatever
            ``%YAML`` directive the text carries."""

            @property
            def processing_version(self) -> Any:
                return (1, 2)

            @property
            def versioned_resolver(self) -> Any:
                return table

        yaml = YAML(typ="safe", pure=True)
        yaml.Resolver = CoreResolver
        _core_loader = yaml
    return _core_loader


def load_core(text: str) -> Any:
    """One YAML document read with the YAML 1.2 core schema. Raises ``ruamel.yaml.YAMLError`` when it is not YAML
    (duplicate keys included)."""
    return _loader().load(text)


def yaml_error() -> type[Exception]:
    """The exception class :func:`load_core` raises for text that is not YAML."""
    from ruamel.yaml.error import YAMLError

    return YAMLError
