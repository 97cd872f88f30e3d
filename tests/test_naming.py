"""Skill names, prefixes and URIs, pinned (they kill the mutants of ``naming.py``; scripts/mutation)."""

from __future__ import annotations

import pytest

from projector import naming


@pytest.mark.parametrize("name, slug", [("refund_flow", "refund-flow"), ("Hello World", "hello-world"),
                                        ("Café au lait", "cafe-au-lait"), ("日本語", "ri-ben-yu"), ("a--b", "a-b"),
                                        ("x" * 70, "x" * 64), ("!!!", "")])
def test_skill_name(name, slug):
    assert naming.skill_name(name) == slug
    assert naming.full_slug(name) == (slug if len(name) <= 64 else "x" * 70)


def test_name_problems_say_what_and_how():
    assert naming.name_problem("refund_flow") is None
    assert naming.name_problem("x" * 64) is None
    code, message, hint = naming.name_problem("!!! ???")
    assert code == "empty-slug" and message == "the workflow name '!!! ???' has no letters or digits to make a " \
        "skill name from" and hint.startswith("use a name with at least one ASCII letter")
    code, message, hint = naming.name_problem("x" * 65)
    assert code == "name-too-long"
    assert message == f"the skill name '{'x' * 65}' is 65 characters; the limit is 64"
    assert hint == f"shorten the workflow name; cut at 64 it would read '{'x' * 64}'"


@pytest.mark.parametrize("prefix, parts", [(None, ()), ("", ()), ("a", ("a",)), ("a/b-c/d1", ("a", "b-c", "d1")),
                                           ("/a/b/", ("a", "b"))])
def test_prefixes(prefix, parts):
    assert naming.parse_prefix(prefix) == parts


@pytest.mark.parametrize("prefix", ["A", "a//b", "a-", "-a", "a--b", "a b", "a_b", "a\n", "é", "Xa", "a/bX"])
def test_bad_prefixes(prefix):
    with pytest.raises(ValueError) as info:
        naming.parse_prefix(prefix)
    assert "must be lowercase letters, digits and single hyphens" in str(info.value)


def test_paths_and_uris():
    assert naming.skill_path("refund-flow") == "refund-flow"
    assert naming.skill_path("refund-flow", ("a", "b")) == "a/b/refund-flow"
    assert naming.skill_uri("a/b") == "skill://a/b/SKILL.md"
    assert naming.skill_uri("a/b", "references/tools.md") == "skill://a/b/references/tools.md"


@pytest.mark.parametrize("name, ok", [("a", True), ("a-b", True), ("a" * 64, True), ("a" * 65, False), ("-a", False),
                                      ("a-", False), ("a--b", False), ("A", False), ("a\n", False), ("", False)])
def test_the_name_rule_matches_in_full(name, ok):
    assert bool(naming.NAME_RULE.fullmatch(name)) is ok


def test_transliteration_is_pinned_whatever_else_is_installed(monkeypatch):
    """python-slugify's default backend prefers Unidecode when it is importable; the pinned one must win."""
    import sys
    import types

    fake = types.ModuleType("unidecode")
    fake.unidecode = lambda text: "not the pinned backend"
    monkeypatch.setitem(sys.modules, "unidecode", fake)
    assert naming.skill_name("日本語") == "ri-ben-yu"
    assert naming.full_slug("日本語 " * 20).startswith("ri-ben-yu-ri-ben-yu")
