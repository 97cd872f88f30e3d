"""The SEP-2640 wire, one owner: what the build writes, ``serve`` loads and the verifying client refuses.

A core package: no I/O, no ``mcp``, no fastmcp. The build (:mod:`projector.bundle`, the index), the server
(:mod:`projector.server.skills`, loading a tree) and the client (:mod:`projector.remote`) all call it, so the server
refuses what a client would refuse.

- :mod:`.wire`: the extension id, the ``skill://`` scheme, the file names, the limits, :func:`digest`,
  :func:`skill_uri` and its inverse, the path-segment rule, URI checks, and the refusal (:class:`VerificationError`);
- :mod:`.entry`: :class:`FileRef` and :class:`SkillEntry`, entry parsing, the manifest checks, name identity, and
  size-then-digest verification;
- :mod:`.frontmatter`: the one frontmatter reader (YAML 1.2 core, ambiguity refused);
- :mod:`.values`: the comparison of the file's frontmatter with the entry's.
"""

from __future__ import annotations

from .entry import (
    FileRef,
    SkillEntry,
    check_manifest,
    check_name,
    file_matches,
    last_segment,
    parse_entry,
    relative_path,
    same_name,
    verify_bytes,
)
from .frontmatter import (
    FRONTMATTER,
    FRONTMATTER_YAML,
    MAX_FRONTMATTER_DEPTH,
    check_reading,
    frontmatter_text,
    parse_frontmatter,
    refuse_ambiguous,
    refuse_line_breaks,
    split_frontmatter,
)
from .values import (
    MISSING,
    describe_value,
    frontmatter_diff,
    json_key,
    key_set_diff,
    mapping_diff,
    value_diff,
    yaml_equal,
)
from .wire import (
    DIGEST_RULE,
    EXTENSION_ID,
    INDEX_FILE,
    MAX_BYTES,
    MAX_FILES,
    MAX_INDEX_BYTES,
    MAX_URI_LENGTH,
    MAX_URI_SEGMENTS,
    SCHEME,
    SKILL_FILE,
    URI_RULE,
    VerificationError,
    WireError,
    bad_segment,
    clip,
    digest,
    skill_path_of,
    skill_uri,
    uri_segments,
)

__all__ = [
    "DIGEST_RULE",
    "EXTENSION_ID",
    "FRONTMATTER",
    "FRONTMATTER_YAML",
    "INDEX_FILE",
    "MAX_BYTES",
    "MAX_FILES",
    "MAX_FRONTMATTER_DEPTH",
    "MAX_INDEX_BYTES",
    "MAX_URI_LENGTH",
    "MAX_URI_SEGMENTS",
    "MISSING",
    "SCHEME",
    "SKILL_FILE",
    "URI_RULE",
    "FileRef",
    "SkillEntry",
    "VerificationError",
    "WireError",
    "bad_segment",
    "check_manifest",
    "check_name",
    "check_reading",
    "clip",
    "describe_value",
    "digest",
    "file_matches",
    "frontmatter_diff",
    "frontmatter_text",
    "json_key",
    "key_set_diff",
    "last_segment",
    "mapping_diff",
    "parse_entry",
    "parse_frontmatter",
    "refuse_ambiguous",
    "refuse_line_breaks",
    "relative_path",
    "same_name",
    "skill_path_of",
    "skill_uri",
    "split_frontmatter",
    "uri_segments",
    "value_diff",
    "verify_bytes",
    "yaml_equal",
]
