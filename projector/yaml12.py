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

INT, FLOAT, BOOL, NULL = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:bool",
                          "tag:yaml.org,2002:null")

# The YAML 1.2 core schema's plain-scalar resolution, as the specification writes it.
CORE: tuple[tuple[str, str, str], ...] = (
    (NULL, r"^(?:~|null|Null|NULL|)$", "~nN"),
    (BOOL, r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    (INT, r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    (FLOAT, r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
            r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$", "-+0123456789."),
)

# What the frontmatter dumper must quote on top of YAML 1.1: every core-schema number, also with '_' among the digits
# (even '_' alone), with a sign on 0o/0x, and 0b binary: ruamel.yaml's 1.2 reading, which is wider than the core.
QUOTE_TOO: tuple[tuple[str, str, str], ...] = (
    (BOOL, CORE[1][1], CORE[1][2]),
    (INT, r"^[-+]?(?:[0-9_]+|0o[0-7_]+|0x[0-9a-fA-F_]+|0b[01_]+)$", "-+0123456789_"),
    (FLOAT, r"^(?:[-+]?(?:\.[0-9_]+|[0-9][0-9_]*(?:\.[0-9_]*)?)(?:[eE][-+]?[0-9_]+)?"
            r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$", "-+0123456789."),
)


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
