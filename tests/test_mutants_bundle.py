"""The index entry a build writes (projector.bundle.make_entry), pinned where the mutation run found it loose
(scripts/mutation bundle, issue 20)."""

from __future__ import annotations

import pytest

from projector import bundle
from projector.sep2640.wire import VerificationError


def test_the_entry_reads_the_frontmatter_as_yaml_1_1():
    """The build reads what it wrote with PyYAML (YAML 1.1) and never imports ruamel.yaml: a hand-made SKILL.md whose
    frontmatter 1.1 and 1.2 read differently shows which reading the entry holds (``yes`` is true only in 1.1)."""
    files = {"SKILL.md": b"---\nname: x\ndescription: d\nflag: yes\n---\nbody\n"}
    entry = bundle.make_entry("x", files)
    assert entry["frontmatter"] == {"name": "x", "description": "d", "flag": True}


def test_a_bad_frontmatter_is_refused_naming_the_skill_uri():
    with pytest.raises(VerificationError) as caught:
        bundle.make_entry("a/x", {"SKILL.md": b"no frontmatter here\n"})
    assert caught.value.where == "skill://a/x/SKILL.md"
    assert caught.value.code == "bad-frontmatter"
