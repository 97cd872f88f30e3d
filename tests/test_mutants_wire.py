"""The SEP-2640 wire's mutation survivors (issue 20), pinned: a refusal without a place is the server's, a hint added
to a refusal without one is that hint alone, and the refusals of the YAML 1.1 reading run on that reading's own
parser (libyaml's, when PyYAML has it), so what they saw is what is read.

libyaml and PyYAML's pure parser disagree on some text: libyaml reads a tab after a plain scalar (``note: x<TAB>``),
the pure parser does not; the pure parser reads a tab inside a literal block's indentation, libyaml does not. A
duplicate key after such a spot is seen only by the parser that gets past it."""

from __future__ import annotations

import pytest
import yaml

from projector.sep2640 import VerificationError, WireError, frontmatter_text, parse_frontmatter
from projector.sep2640.frontmatter import LOADERS

URI = "skill://demo/SKILL.md"
AMBIGUOUS_HINT = ("YAML parsers disagree on such frontmatter (which duplicate wins, what a tag means), so a host "
                  "could show other text than the one verified; a skill's frontmatter is plain YAML")
TWICE = ("frontmatter-ambiguous", "SKILL.md frontmatter holds the key 'b' twice", AMBIGUOUS_HINT)


# ------------------------------------------------------------------------------------------------ the refusal


@pytest.mark.parametrize("cls", [WireError, VerificationError])
def test_a_refusal_without_a_place_is_the_servers(cls):
    e = cls("bad-entry", "", "a skills entry is not an object")
    assert (e.code, e.where, e.message, e.hint) == ("bad-entry", "", "a skills entry is not an object", None)
    assert [(str(d.span), d.severity, d.code, d.message, d.hint) for d in e.diagnostics] == \
        [("<server>", "error", "bad-entry", "a skills entry is not an object", None)]
    assert str(e) == "<server>: error[bad-entry]: a skills entry is not an object"


def test_a_hint_added_to_a_refusal_without_one_is_that_hint_alone():
    e = VerificationError("digest-mismatch", URI, "served bytes hash to sha256:x; the manifest says sha256:y")
    once = e.with_hint("still refused after refreshing the entry once with skills/get")
    assert type(once) is VerificationError
    assert (once.code, once.where, once.message, once.hint) == \
        ("digest-mismatch", URI, "served bytes hash to sha256:x; the manifest says sha256:y",
         "still refused after refreshing the entry once with skills/get")
    assert str(once) == (f"{URI}: error[digest-mismatch]: served bytes hash to sha256:x; the manifest says "
                         "sha256:y\n  hint: still refused after refreshing the entry once with skills/get")
    twice = once.with_hint("and again")
    assert twice.hint == "still refused after refreshing the entry once with skills/get; and again"
    assert e.hint is None  # the original is left as it was


# ------------------------------------------------------------------------------------------------ the parser


TAB_AFTER_SCALAR = b"---\nname: demo\nnote: x\t\nb: 1\nb: 2\n---\n"  # libyaml reads it, the pure parser does not
TAB_IN_BLOCK = b"---\nname: demo\nnote: |\n \tx\nb: 1\nb: 2\n---\n"  # the pure parser reads it, libyaml does not
LIBYAML = LOADERS["1.1"] is not yaml.SafeLoader


def refusal(call):
    with pytest.raises(VerificationError) as info:
        call()
    assert info.value.where == URI
    return info.value.code, info.value.message, info.value.hint


@pytest.mark.parametrize("data, v12, v11", [
    (TAB_AFTER_SCALAR, ("bad-frontmatter", "SKILL.md frontmatter is not valid YAML at frontmatter line 2", None),
     TWICE if LIBYAML else
     ("bad-frontmatter", "SKILL.md frontmatter is not valid YAML 1.1 at frontmatter line 2", None)),
    (TAB_IN_BLOCK, TWICE,
     ("bad-frontmatter", "SKILL.md frontmatter is not valid YAML 1.1 at frontmatter line 3", None) if LIBYAML else
     TWICE),
])
def test_the_refusals_of_a_reading_run_on_its_own_parser(data, v12, v11):
    assert LOADERS == {"1.2": yaml.SafeLoader, "1.1": getattr(yaml, "CSafeLoader", yaml.SafeLoader)}
    assert refusal(lambda: parse_frontmatter(data, URI)) == v12
    assert refusal(lambda: parse_frontmatter(data, URI, "1.2")) == v12
    assert refusal(lambda: parse_frontmatter(data, URI, "1.1")) == v11
    if v11 == TWICE:
        assert refusal(lambda: frontmatter_text(data, URI, "1.1")) == TWICE
    else:  # the refusals' pass saw no duplicate, as the reading's parser cannot read past the tab
        assert frontmatter_text(data, URI, "1.1") == data.decode()[4:-5]
