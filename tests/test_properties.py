"""Properties: determinism across processes and hash seeds, slug validity, and a loader that never raises anything
but the project's own error."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import ROOT
from projector import naming
from projector.yaml12 import reads_differently
from projector.errors import ProjectorError
from projector.load import parse
from projector.texts import _INVISIBLE

IDENT = st.from_regex(r"[a-z][a-z0-9_]{0,11}", fullmatch=True)
# No control, format or invisible character: the validator refuses those (control-character, issue 17 item 13).
# No text that YAML 1.2 reads as another value: PyYAML (YAML 1.1) writes '0E0' or '1_000' plain, and the loader
# rightly refuses such a plain scalar (ambiguous-scalar) where it reaches a gate; a valid workflow quotes it.
TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Cf")), min_size=1, max_size=60).filter(
    lambda s: s.strip() != "" and not _INVISIBLE.search(s) and not reads_differently(s, s)[0])


@st.composite
def workflows(draw) -> dict:
    """A random *valid* workflow as plain data: every source kind, guidance, resources and templates."""
    args = draw(st.lists(IDENT, min_size=1, max_size=3, unique=True))
    tools = draw(st.lists(IDENT, min_size=1, max_size=3, unique=True))
    wf = {
        "name": draw(st.from_regex(r"[A-Za-z][A-Za-z0-9._-]{0,30}[A-Za-z0-9]", fullmatch=True)),  # a prompt name
        "description": draw(TEXT),
        "arguments": [{"name": a, "description": draw(TEXT), "required": draw(st.booleans()),
                       "type": draw(st.sampled_from(["string", "number", "integer", "boolean"]))} for a in args],
        "instructions": [{"role": draw(st.sampled_from(["system", "user", "assistant"])), "text": draw(TEXT)}],
        "tools": [{"name": t, "description": draw(TEXT),
                   "input_schema": {"type": "object", "properties": {"x": {"type": "string"}},
                                    "additionalProperties": True},
                   "annotations": draw(st.sampled_from([{"readOnlyHint": True}, {"destructiveHint": True},
                                                        {"readOnlyHint": False}]))} for t in tools],
        "steps": [],
    }
    binds: list[str] = []
    for i in range(draw(st.integers(1, 6))):
        def source():
            kinds = ["arg", "const"] + (["step", "field"] if binds else [])
            kind = draw(st.sampled_from(kinds))
            if kind == "arg":
                return {"arg": draw(st.sampled_from(args))}
            if kind == "const":
                return {"const": draw(st.one_of(st.integers(), TEXT.map(lambda s: s.replace("{", "(")),
                                                st.just("{" + args[0] + "}")))}
            if kind == "step":
                return {"step": draw(st.sampled_from(binds))}
            return {"step": draw(st.sampled_from(binds)), "field": draw(st.from_regex(r"[a-z]+(\.[0-9a-z]+){0,2}",
                                                                                      fullmatch=True))}
        if draw(st.booleans()) or not tools:
            step = {"name": f"s{i}", "tool": draw(st.sampled_from(tools)),
                    "args": {f"p{j}": source() for j in range(draw(st.integers(0, 3)))}}
            if draw(st.booleans()):
                step["guidance"] = draw(st.sampled_from(["Only if eligible.", "Be polite.", "Verify first."]))
            if draw(st.booleans()):  # conditions over an argument or an earlier result, with any operator
                subject = ({"step": draw(st.sampled_from(binds)), "field": "ok"} if binds and draw(st.booleans())
                           else {"arg": draw(st.sampled_from(args))})
                op = draw(st.sampled_from(["equals", "not_equals", "in", "not_in", "exists"]))
                value = (draw(st.booleans()) if op == "exists" else
                         draw(st.lists(st.one_of(st.integers(), TEXT), max_size=3)) if op in ("in", "not_in")
                         else draw(st.one_of(st.integers(), st.booleans(), TEXT, st.none())))
                step["when"] = [{**subject, op: value}]
                step["on_fail"] = draw(st.sampled_from(["stop", "skip"]))
            if draw(st.booleans()):
                step["bind"] = f"b{i}"
                binds.append(f"b{i}")
        else:
            step = {"name": f"s{i}", "resources": ["docs://thing/{v}"], "template": {"v": source()}}
        wf["steps"].append(step)
    return wf


SCRIPT = """
import json, sys
from projector.load import parse
from projector.output import compile_workflows
docs = json.load(sys.stdin)
wfs = []
for i, d in enumerate(docs):
    wf, diags = parse(d.encode(), f"w{i}.yaml")
    assert wf is not None and not [x for x in diags if x.severity == "error"], diags
    wfs.append(wf)
build = compile_workflows(wfs)
out = {k: v.hex() for k, v in build.files.items()}
out["__diagnostics__"] = [x.to_json() for x in build.diagnostics]
print(json.dumps(out, sort_keys=True))
"""


def _run(docs: list[str], seed: str, extra_env: dict[str, str]) -> str:
    env = {**os.environ, "PYTHONHASHSEED": seed, **extra_env}
    proc = subprocess.run([sys.executable, "-c", SCRIPT], input=json.dumps(docs), capture_output=True, text=True,
                          env=env, cwd="/", check=True)
    return proc.stdout


@pytest.mark.slow
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(workflows(), min_size=1, max_size=4))
def test_random_workflows_project_to_identical_bytes_across_processes(wfs):
    names = [naming.skill_name(w["name"]) for w in wfs]
    for i, w in enumerate(wfs):  # make names unique so the set compiles
        w["name"] = f"{w['name']}_{i}" if names.count(names[i]) > 1 else w["name"]
    docs = [yaml.safe_dump(w, sort_keys=False, allow_unicode=True) for w in wfs]
    a = _run(docs, "1", {"TZ": "UTC", "LC_ALL": "C.UTF-8"})
    b = _run(docs, "4242", {"TZ": "Asia/Kathmandu", "LC_ALL": "C"})
    assert a == b
    assert json.loads(a)["skills.json"]


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


yaml_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20)),
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(st.text(max_size=10), children, max_size=4)),
    max_leaves=20,
)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(max_size=200), st.text(max_size=200),
                 yaml_values.map(lambda v: yaml.safe_dump(v, allow_unicode=True))))
def test_loader_never_raises_anything_but_its_own_error(data):
    try:
        wf, diags = parse(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"), "fuzz.yaml")
    except ProjectorError:
        return
    errors = [d for d in diags if d.severity == "error"]
    if wf is None:
        assert errors
    for d in errors:
        assert d.span.file == "fuzz.yaml" and d.span.line >= 1 and d.span.col >= 1, d


def test_the_text_strategy_leaves_out_what_yaml_1_2_reads_as_another_value():
    assert all(reads_differently(s, s)[0] for s in ("0E0", "1e3", "0o17"))  # PyYAML writes these plain
    assert not reads_differently("refund", "refund")[0]


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(workflows())
def test_random_valid_workflows_load_cleanly_with_both_parsers(wf):
    from projector import positioned

    text = yaml.safe_dump(wf, sort_keys=False, allow_unicode=True).encode()
    fast, fast_diags = parse(text, "w.yaml")
    assert fast is not None and not [d for d in fast_diags if d.severity == "error"], fast_diags
    if positioned.HAVE_LIBYAML:
        saved = positioned._Loader
        try:
            positioned._Loader = positioned.loader_class(yaml.SafeLoader)
            slow, slow_diags = parse(text, "w.yaml")
        finally:
            positioned._Loader = saved
        assert slow == fast and slow_diags == fast_diags


@pytest.mark.slow
def test_examples_load_identically_with_both_parsers():
    from projector import positioned

    assert positioned.HAVE_LIBYAML, "PyYAML was built without libyaml here; the C path is untested"
    for path in sorted((ROOT / "workflows").glob("*.yaml")) + sorted((ROOT / "tests" / "bad_inputs").rglob("*.yaml")):
        data = path.read_bytes()
        fast = parse(data, path.name)
        saved = positioned._Loader
        try:
            positioned._Loader = positioned.loader_class(yaml.SafeLoader)
            slow = parse(data, path.name)
        finally:
            positioned._Loader = saved
        assert fast[0] == slow[0], path
        assert [(d.code, d.span) for d in fast[1]] == [(d.code, d.span) for d in slow[1]], path
