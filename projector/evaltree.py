"""The evals tree (``generated_evals/<skill>/``): each skill's derived cases (:mod:`projector.evals`) as written, and
its trigger queries, which say whether a host should pick the skill at all: its own description should trigger it,
the nearest other skills' descriptions should not. Kept apart from the skills tree, so that no skills server serves
a case's expected answers (docs/evals.md)."""

from __future__ import annotations

import re
from itertools import chain
from typing import Any

from .evals import json_bytes

# Each skill's two files, by their path in its folder of the evals tree.
EVALS_FILE = "evals.json"
QUERIES_FILE = "eval_queries.json"
NEGATIVES = 10  # should-not-trigger queries per skill: the Agent Skills guide asks for 8 to 10
COMMON_WORD = 50  # a word in more descriptions than this says nothing about nearness (and would make it quadratic)

_WORD = re.compile(r"[^\W_]{3,}")
_STOP = frozenset(
    "the and for with from that this into your its are was not but any all one has have can use "
    "when then than only once after before each".split()
)


def _words(text: str) -> frozenset[str]:
    return frozenset(w for w in (m.group(0).casefold() for m in _WORD.finditer(text)) if w not in _STOP)


def tree_files(bundles: list[Any]) -> dict[str, bytes]:
    """Each bundle's (a :class:`projector.bundle.Bundle`, which imports this module) two eval files by their path in
    the evals tree (the bundle's path, then the file's). The trigger queries: the skill's description
    should trigger it; the :data:`NEGATIVES` other descriptions nearest to it (most words shared, then by path, a
    word shared by more than :data:`COMMON_WORD` descriptions not counted) should not, filled up with the next
    skills by path when fewer share a word. Linear in the skills, so a build of thousands stays fast."""
    ordered = sorted(bundles, key=lambda b: b.path)
    texts = [str(b.entry["frontmatter"].get("description", "")) for b in ordered]
    words = [_words(t) for t in texts]
    posting: dict[str, list[int]] = {}
    for i, ws in enumerate(words):
        for w in ws:
            posting.setdefault(w, []).append(i)
    files: dict[str, bytes] = {}
    for i, b in enumerate(ordered):
        shared: dict[int, int] = {}
        for w in sorted(words[i]):
            if len(posting[w]) <= COMMON_WORD:
                for j in posting[w]:
                    shared[j] = shared.get(j, 0) + 1
        near = sorted((j for j in shared if j != i), key=lambda j: (-shared[j], j))
        rest = ((i + k) % len(ordered) for k in range(1, len(ordered)))
        picked: list[int] = []
        for j in chain(near, rest):
            if len(picked) == NEGATIVES:
                break
            if j not in picked and texts[j].strip() and texts[j] != texts[i]:
                picked.append(j)
        queries = [{"query": texts[i], "should_trigger": True}]
        queries += [{"query": texts[j], "should_trigger": False} for j in picked]
        files[f"{b.path}/{EVALS_FILE}"] = b.evals
        files[f"{b.path}/{QUERIES_FILE}"] = json_bytes(queries)
    return files
