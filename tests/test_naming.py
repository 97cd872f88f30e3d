"""Skill names, prefixes and URIs, pinned (they kill the mutants of ``naming.py``; scripts/mutation)."""

from __future__ import annotations

import os

import pytest
from conftest import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st

from projector import naming, sep2640


@pytest.mark.parametrize(
    "name, slug",
    [
        ("refund_flow", "refund-flow"),
        ("Hello World", "hello-world"),
        ("Café au lait", "cafe-au-lait"),
        ("日本語", "ri-ben-yu"),
        ("a--b", "a-b"),
        ("x" * 70, "x" * 64),
        ("!!!", ""),
    ],
)
def test_skill_name(name, slug):
    assert naming.skill_name(name) == slug
    assert naming.full_slug(name) == (slug if len(name) <= 64 else "x" * 70)


def test_name_problems_say_what_and_how():
    assert naming.name_problem("refund_flow") is None
    assert naming.name_problem("x" * 64) is None
    code, message, hint = naming.name_problem("!!! ???")
    assert (
        code == "empty-slug"
        and message == "the workflow name '!!! ???' has no letters or digits to make a skill name from"
        and hint.startswith("use a name with at least one ASCII letter")
    )
    code, message, hint = naming.name_problem("x" * 65)
    assert code == "name-too-long"
    assert message == f"the skill name '{'x' * 65}' is 65 characters; the limit is 64"
    assert hint == f"shorten the workflow name; cut at 64 it would read '{'x' * 64}'"


@pytest.mark.parametrize(
    "prefix, parts", [(None, ()), ("", ()), ("a", ("a",)), ("a/b-c/d1", ("a", "b-c", "d1")), ("/a/b/", ("a", "b"))]
)
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
    assert sep2640.skill_uri("a/b") == "skill://a/b/SKILL.md"
    assert sep2640.skill_uri("a/b", "references/tools.md") == "skill://a/b/references/tools.md"


@pytest.mark.parametrize(
    "name, ok",
    [
        ("a", True),
        ("a-b", True),
        ("a" * 64, True),
        ("a" * 65, False),
        ("-a", False),
        ("a-", False),
        ("a--b", False),
        ("A", False),
        ("a\n", False),
        ("", False),
    ],
)
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


# --------------------------------------------------------------------------------------------- issue 17, item 13


@pytest.mark.parametrize(
    "name",
    ["con", "CON", "Con", "prn", "aux", "nul", "NUL", "com1", "COM9", "lpt1", "lpt9", "com0", "lpt0", "con!", " nul "],
)
def test_windows_device_names_are_refused_as_skill_names(name):
    slug = naming.full_slug(name)
    code, message, hint = naming.name_problem(name)
    assert code == "reserved-name"
    assert message == f"the skill name '{slug}' is a reserved device name on Windows"
    assert hint == (
        f"rename the workflow: a folder named '{slug}' cannot be made or read on Windows (reserved: con, "
        "prn, aux, nul, com0-com9, lpt0-lpt9)"
    )


@pytest.mark.parametrize(
    "name", ["console", "con-1", "Com 1", "nul-flow", "com10", "lpt", "com", "auxiliary", "prn2", "a-con", "con.txt"]
)
def test_names_that_only_look_like_device_names_are_fine(name):
    assert naming.name_problem(name) is None


@pytest.mark.parametrize("prefix", ["con", "a/nul", "COM1"])
def test_a_device_name_is_refused_as_a_prefix_segment(prefix):
    with pytest.raises(ValueError) as info:
        naming.parse_prefix(prefix)
    segment = prefix.split("/")[-1]
    if segment.islower():
        assert str(info.value) == f"URI prefix segment {segment!r} is a reserved device name on Windows"


# --------------------------------------------------------------------------------------------- issue 17, item 14


def test_a_prefix_is_at_most_255_characters():
    longest = "/".join(["a"] * 128)  # 255 characters
    assert naming.parse_prefix(longest) == ("a",) * 128
    assert naming.parse_prefix("/" + longest + "/") == ("a",) * 128  # the slashes around it do not count
    with pytest.raises(ValueError) as info:
        naming.parse_prefix(longest + "b")
    assert str(info.value) == "the URI prefix is 256 characters long; the limit is 255"
    with pytest.raises(ValueError) as info:
        naming.parse_prefix("/".join(["a"] * 100_000))
    assert str(info.value) == "the URI prefix is 199999 characters long; the limit is 255"


def test_a_long_uri_prefix_is_a_usage_error_not_a_traceback(cli, tmp_path):
    run = cli("build", "workflows", "--out", str(tmp_path / "o"), "--uri-prefix", "/".join(["a"] * 990), cwd=ROOT)
    assert run.code == 2
    assert "--uri-prefix: the URI prefix is 1979 characters long; the limit is 255" in run.err
    assert "Traceback" not in run.err + run.out
    assert not (tmp_path / "o").exists()


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_a_suggested_workflow_name_follows_the_rule_it_suggests(name):
    """The name ``bad-workflow-name`` suggests is one that neither ``init`` nor the build refuses for its characters
    (it may still be a device name or empty, which the skill name's own rules report)."""
    problem = naming.workflow_name_problem(name)
    if problem is not None and problem[0] == "bad-workflow-name":
        suggestion = naming.suggested_name(name)
        assert problem[2] == (f"name it '{suggestion}'" if suggestion else None)
        assert not suggestion or (naming.workflow_name_problem(suggestion) or ("",))[0] != "bad-workflow-name"


# The skill-name rule's last guard: slugify's output always matches the Agent Skills name rule.


def test_every_slug_of_a_real_name_keeps_the_rule():
    for name in ("Hello World", "Ünïcödé näme", "a -- b", "x" * 64, "123", "mixed_CASE-name"):
        slug = naming.full_slug(name)
        assert naming.NAME_RULE.fullmatch(slug), slug
        assert naming.name_problem(name) is None


# ---------------------------------------------------------------------- properties


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_slugs_satisfy_the_name_rule_or_are_refused(name):
    slug = naming.skill_name(name)
    problem = naming.name_problem(name)
    if problem is None:
        assert naming.NAME_RULE.match(slug), slug
        assert naming.full_slug(name) == slug
    else:
        assert problem[0] in ("empty-slug", "name-too-long", "reserved-name")
    if slug:
        assert naming.NAME_RULE.match(slug) and len(slug) <= 64


def test_transliteration_is_pinned():
    assert naming.skill_name("Crème brûlée — Straße 日本") == naming.skill_name("Crème brûlée — Straße 日本")
    assert naming.skill_name("Crème brûlée") == "creme-brulee"
    assert naming.skill_name("Straße") == "strasse"


@pytest.mark.slow
def test_slugify_module_comes_from_python_slugify():
    import importlib.metadata

    import slugify

    assert "python-slugify" in importlib.metadata.packages_distributions()["slugify"]
    dist = importlib.metadata.distribution("python-slugify")
    assert any(str(f) == "slugify/__init__.py" for f in dist.files)
    assert slugify.__file__.endswith(os.path.join("slugify", "__init__.py"))
