"""The skill-name rule's last guard, pinned where the mutation run found it loose (scripts/mutation naming, issue 20).

slugify's output always matches the Agent Skills name rule, so no workflow name reaches the ``bad-name`` branch of
:func:`projector.naming.name_problem`; it is kept as the contract. A slug backend that broke the rule would be caught
there, so the test puts such a slug in its place and reads the refusal."""

from __future__ import annotations

import pytest

from projector import naming


@pytest.mark.parametrize("slug", ["Upper", "a--b", "-a", "a_b"])
def test_a_slug_that_breaks_the_name_rule_is_refused_as_bad_name(monkeypatch, slug):
    monkeypatch.setattr(naming, "full_slug", lambda name: slug)
    assert naming.name_problem("anything") == (
        "bad-name", f"the skill name '{slug}' breaks the Agent Skills name rule", None)


def test_every_slug_of_a_real_name_keeps_the_rule():
    for name in ("Hello World", "Ünïcödé näme", "a -- b", "x" * 64, "123", "mixed_CASE-name"):
        slug = naming.full_slug(name)
        assert naming.NAME_RULE.fullmatch(slug), slug
        assert naming.name_problem(name) is None
