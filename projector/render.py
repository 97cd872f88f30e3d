"""Projection: one pure function from a workflow to the bytes of its bundle, with warnings beside them as data.

The templates (package data) hold the layout; this module prepares plain-words descriptions of each data source so
the templates stay simple. Frontmatter is dumped by PyYAML's pure-Python dumper with a fixed key order and no
folding, so the bytes are the same whether or not libyaml is installed.
"""

from __future__ import annotations

import dataclasses
import json
import re
from contextlib import suppress
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, assert_never

import jinja2
import orjson
import yaml

from . import conditions, gates, model, naming, results
from .errors import Diagnostic
from .sep2640 import SKILL_FILE, digest
from .texts import TOOLS_KEY
from .model import PLACEHOLDER, Condition, Const, FromArg, FromStep, Source, Step, Workflow
from .yaml12 import add_quoting

MAX_BODY_LINES = 500
TOOLS_FILE = "references/tools.md"


class _FrontmatterDumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:  # never emit &anchors, even for repeated values
        return True


class _CFrontmatterDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    def ignore_aliases(self, data: Any) -> bool:
        return True


# A string that YAML 1.2 would read as a number or a boolean is quoted too, not only one that YAML 1.1 would.
add_quoting(_FrontmatterDumper)
add_quoting(_CFrontmatterDumper)

# Line breaks in YAML 1.1 and text in YAML 1.2. PyYAML writes them raw in a plain or single-quoted scalar, as line
# breaks followed by the next line's indent: a YAML 1.2 reader (eemeli/yaml, js-yaml) keeps the indent as text. In
# double quotes PyYAML escapes them (\N, \L, \P), which every version reads alike.
_YAML11_BREAKS = re.compile("[\x85\u2028\u2029]")


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    if _YAML11_BREAKS.search(data):
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style='"')
    return dumper.represent_str(data)


_FrontmatterDumper.add_representer(str, _represent_str)
_CFrontmatterDumper.add_representer(str, _represent_str)


def _same_in_libyaml(value: Any) -> bool:
    """libyaml's emitter writes the same bytes as PyYAML's for printable text of the Basic Multilingual Plane (they
    differ on line breaks, other control characters and astral characters, which keep the pure-Python path).
    tests/test_render.py checks the two against each other."""
    if isinstance(value, dict):
        return all(_same_in_libyaml(k) and _same_in_libyaml(v) for k, v in value.items())
    return isinstance(value, str) and value.isprintable() and (value.isascii() or max(value) < "\U00010000")


def dump_frontmatter(data: dict[str, Any], *, fast: bool = True) -> str:
    """The frontmatter block's YAML: fixed key order, no aliases, unicode as is, never folded, and every scalar reads
    as the same value under YAML 1.1 and YAML 1.2 (:mod:`projector.yaml12`)."""
    if fast and yaml.__with_libyaml__ and _same_in_libyaml(data):
        return yaml.dump(
            data,
            Dumper=_CFrontmatterDumper,
            sort_keys=False,
            allow_unicode=True,
            width=2**31 - 1,
            default_flow_style=False,
        )
    return yaml.dump(
        data,
        Dumper=_FrontmatterDumper,
        sort_keys=False,
        allow_unicode=True,
        width=float("inf"),
        default_flow_style=False,
    )


def code(text: Any) -> str:
    """Inline code that survives any backticks inside (CommonMark: a longer fence, padded when needed)."""
    s = str(text)
    if "`" not in s and not (s.startswith(" ") and s.endswith(" ") and s.strip()):
        return f"`{s}`"
    longest = max((len(r) for r in re.findall(r"`+", s)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") or (s.startswith(" ") and s.endswith(" ") and s.strip()) else ""
    return f"{fence}{pad}{s}{pad}{fence}"


_FENCE_RUNS = re.compile(r"`{3,}")


def fenced(text: str, lang: str = "") -> str:
    longest = max((len(r) for r in _FENCE_RUNS.findall(text)), default=2) if "```" in text else 2
    fence = "`" * (longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


# A line that would open a block which changes the document's structure: an ATX heading, a setext underline, a code
# fence (which would swallow every heading after it), or an HTML block (a comment or <pre> swallows them too), also
# inside list items and block quotes the text opens itself.
_BLOCK_OPENER = re.compile(
    r"^((?:[ \t]*(?:>|[-+*](?=[ \t])|\d{1,9}[.)](?=[ \t])))*[ \t]*)"
    r"(#|`{3}|~{3}|<(?=[A-Za-z!?/])|(?:=+|-+)[ \t]*$)",
    re.MULTILINE,
)


# Every line break that str.splitlines honours: Jinja's ``indent`` splits on each, CommonMark on \r, JavaScript's
# multi-line regular expressions on \r, U+2028 and U+2029. In the output each is a line break, written as \n.
LINE_BREAK = re.compile("\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")
_LINE_BREAKS = re.compile(f"({LINE_BREAK.pattern})")  # the same, kept by re.split
_OTHER_BREAKS = "\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"  # every one of them but \n


def inert(text: str) -> str:
    """Multi-line user text, made unable to change the Markdown structure around it: every line break becomes
    ``\\n`` (so no later filter finds other lines than the ones checked here), and a backslash (CommonMark's escape)
    goes before the first character of any line that would start a heading, a setext underline, a code fence or an
    HTML block. Lists, emphasis and links in the text stay as they are."""
    return _BLOCK_OPENER.sub(r"\1\\\2", LINE_BREAK.sub("\n", text)) if text else text


# The line breaks JSON leaves as they are in a string (it escapes the C0 controls): escaped as JSON escapes them, the
# text reads back as the same value, and holds no line break that the last step (:func:`_finish`) would act on.
_JSON_BREAKS = {ord(c): f"\\u{ord(c):04x}" for c in "\x85\u2028\u2029"}


def canonical_json(value: Any, indent: int | None = 2) -> str:
    """Sorted keys, UTF-8 as is, indented by 2 or compact: ``json.dumps``'s bytes (see :func:`json_text`), except
    that U+0085, U+2028 and U+2029 are escaped (``\\u2028``)."""
    text = json_text(value, indent=indent, sort_keys=True)
    return text if text.isascii() else text.translate(_JSON_BREAKS)


_SAFE_LEAVES = frozenset({str, bool, type(None)})  # orjson writes them as json.dumps does (an int: by its range)


def _same_in_orjson(value: Any) -> bool:
    """Whether orjson writes ``value`` as ``json.dumps`` does: strings, booleans, null, 64-bit integers in lists and
    string-keyed objects; not floats (``1e-7``, not ``1e-07``; NaN as null). Loops, not ``all()``: 3x faster."""
    kind = type(value)
    if kind is dict:
        for k, v in value.items():
            if type(k) is not str or (type(v) not in _SAFE_LEAVES and not _same_in_orjson(v)):
                return False
        return True
    if kind is list:
        for v in value:
            if type(v) not in _SAFE_LEAVES and not _same_in_orjson(v):
                return False
        return True
    if kind is int:
        return -(2**63) <= value < 2**64
    return kind in _SAFE_LEAVES


def json_text(value: Any, *, indent: int | None, sort_keys: bool) -> str:
    """``json.dumps(value, indent=indent, sort_keys=sort_keys, ensure_ascii=False)``, compact separators when not
    indented: the same text, by orjson (C) where it writes it identically (json's indenting encoder is Python)."""
    if indent in (2, None) and _same_in_orjson(value):
        option = (orjson.OPT_INDENT_2 if indent else 0) | (orjson.OPT_SORT_KEYS if sort_keys else 0)
        return orjson.dumps(value, option=option).decode("utf-8")
    return json.dumps(
        value, indent=indent, sort_keys=sort_keys, ensure_ascii=False, separators=(",", ": ") if indent else (",", ":")
    )


TEMPLATES = Path(__file__).with_name("templates")


class _TemplateCache(jinja2.FileSystemBytecodeCache):
    """Compiled templates kept between runs (a cold ``check`` saves 40 ms), each checked against the template's
    checksum and Jinja's and Python's versions; a folder that cannot be written only costs the compile."""

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        with suppress(OSError):
            super().dump_bytecode(bucket)

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except (OSError, ValueError, EOFError):  # a torn or foreign file: compile instead
            bucket.reset()


_DICT_ATTRIBUTES = frozenset(dir(dict))


class _Environment(jinja2.Environment):
    def getattr(self, obj: Any, attribute: str) -> Any:
        """``obj.attribute`` as Jinja reads it: the attribute, else the item. A plain dict (the views the templates
        read) has no attributes but :data:`_DICT_ATTRIBUTES`, so its item is taken at once, where Jinja would
        raise and catch an AttributeError first (a third of the time SKILL.md took to render)."""
        if type(obj) is dict and attribute in obj and attribute not in _DICT_ATTRIBUTES:
            return obj[attribute]
        return super().getattr(obj, attribute)


def make_environment(cache_dir: Path | None) -> jinja2.Environment:
    env = _Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        bytecode_cache=_TemplateCache(str(cache_dir), "%s.jinja.cache") if cache_dir else None,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["code"] = code
    env.filters["fenced"] = fenced
    env.filters["json"] = canonical_json
    return env


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    """Its cache in a per-user ``$TMPDIR/_jinja2-cache-UID`` (0700), never the package; also under ``-B``, which is
    about ``.pyc`` files beside the sources (images often set it, and a cold check would compile every template)."""
    from .ownership import private_temp_folder  # no safe folder: compile on each run

    return make_environment(private_temp_folder("_jinja2-cache"))


def title(name: str) -> str:
    words = re.sub(r"[_\-\s]+", " ", name).strip()
    return (words[:1].upper() + words[1:]) if words else name


@dataclass(frozen=True)
class Projection:
    """What one workflow projects to: the skill's name and path, its files (relative path -> bytes, SKILL.md
    first), and the diagnostics found on the way."""

    workflow: Workflow
    name: str
    path: str
    files: dict[str, bytes]
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # The frontmatter mapping and the YAML it was dumped as (:func:`dump_frontmatter`), for the index entry
    # (:func:`projector.bundle.make_entry`): None when not known.
    frontmatter: tuple[dict[str, Any], str] | None = None


_NO_DEFAULT = object()


def tool_default(wf: Workflow, step: Step, key: str) -> Any:
    """The ``default`` that the input schema of ``step``'s tool gives the parameter ``key``, when the tool does not
    require it; else ``_NO_DEFAULT``. The server-side run leaves such a parameter out when its optional input was
    not given (:mod:`projector.server.workflow`), so the tool uses this value: the skill says the same."""
    tool = wf.tool(step.tool) if step.tool else None
    schema = tool.input_schema if tool is not None and isinstance(tool.input_schema, dict) else {}
    required = schema.get("required")
    if isinstance(required, list) and key in required:
        return _NO_DEFAULT
    properties = schema.get("properties")
    prop = properties.get(key) if isinstance(properties, dict) else None
    return prop["default"] if isinstance(prop, dict) and "default" in prop else _NO_DEFAULT


def describe_source(src: Source, wf: Workflow, *, ask: bool = False, default: Any = _NO_DEFAULT) -> str:
    """A data source in plain words. ``ask``: an optional input whose value must come from the user, never from the
    model (:func:`projector.gates.asks_user`). ``default``: the tool's default for the parameter an optional input
    feeds (:func:`tool_default`), used when the user gave none."""
    match src:
        case FromArg():
            return _describe_input(src, wf, ask, default)
        case FromStep():
            return _describe_result(src, wf, whole="the whole result")
        case Const():
            return _describe_constant(src, wf)
        case _:
            assert_never(src)


def _describe_input(src: FromArg, wf: Workflow, ask: bool, default: Any) -> str:
    declared = wf.argument(src.name)
    if declared is None or declared.required:
        return f"the input {code(src.name)}"
    if ask:
        return f"the input {code(src.name)}; if the user gave none, ask the user for it; never work it out yourself"
    if default is not _NO_DEFAULT:
        return (
            f"the input {code(src.name)}; if the user gave none, leave it out (the tool uses "
            f"{code(canonical_json(default, indent=None))})"
        )
    return f"the input {code(src.name)}; if the user gave none, a value you work out yourself"


def _describe_result(src: FromStep, wf: Workflow, *, whole: str) -> str:
    """A saved result, or one field of it, with the step that saves it. ``whole``: the words for the whole result."""
    found = wf.step_for_bind(src.bind)
    origin = f"step {found[0] + 1}" if found else "an earlier step"
    if src.field is None:
        return f"{whole} saved as {code(src.bind)} ({origin})"
    return f"the field {code(src.field)} of {code(src.bind)} ({origin})"


def _describe_constant(src: Const, wf: Workflow) -> str:
    value = src.value
    if isinstance(value, str) and LINE_BREAK.search(value):  # as JSON, on one line: a code span cannot hold a line
        return f"the text {code(canonical_json(value, indent=None))}"
    text = (
        f"the text {code(value)}" if isinstance(value, str) else f"the value {code(canonical_json(value, indent=None))}"
    )
    names = src.uses([a.name for a in wf.arguments])
    if names:
        text += ", with " + ", ".join(f"{code('{' + n + '}')} replaced by the input {code(n)}" for n in names)
    return text


def _json_code(value: Any) -> str:
    return code(canonical_json(value, indent=None))


def describe_condition(cond: Condition, wf: Workflow) -> str:
    """A condition in plain words: "the field `eligible` of `eligibility` (step 2) is `true`". The words of each
    operator are its entry's in the one table (:data:`projector.conditions.OPERATORS`)."""
    subject = cond.subject
    if isinstance(subject, FromArg):
        what = f"the input {code(subject.name)}"
    else:
        found = wf.step_for_bind(subject.bind)
        origin = f"step {found[0] + 1}" if found else "an earlier step"
        what = (
            f"the field {code(subject.field)} of {code(subject.bind)} ({origin})"
            if subject.field is not None
            else f"the result saved as {code(subject.bind)} ({origin})"
        )
    return conditions.words(cond).prose.format(subject=what, operand=conditions.operand_text(cond, _json_code))


def _conditions_view(wf: Workflow, step: Step) -> dict[str, Any] | None:
    if not step.when:
        return None
    action = f"call {code(step.tool)}" if step.tool else "read this step's resources"
    one = len(step.when) == 1
    failed = "it does not hold" if one else "any of them does not hold"
    if step.on_fail == "skip":
        then = f"do not {action}: skip this step, tell the user which condition failed, and go on with the next step."
    else:
        then = (
            f"do not {action}: stop the procedure here, and tell the user which condition failed and the value "
            "you found."
        )
    return {
        "items": [describe_condition(c, wf) for c in step.when],
        "action": action,
        "on_fail": f"If {failed}, {then}",
        "skip": step.on_fail == "skip",
    }


def _tool_effect(wf: Workflow, step: Step) -> str:
    tool = wf.tool(step.tool) if step.tool else None
    if tool is None:
        return ""
    if not tool.annotated:
        return "unannotated: treat it as having side effects"
    if not tool.side_effecting:
        return "read-only"
    return "changes data, destructive" if tool.destructive else "changes data"


def _step_view(wf: Workflow, index: int, step: Step, gated: set[str], data: set[str]) -> dict[str, Any]:
    template = step.template_dict
    resources = []
    for uri in step.resources:
        names = list(dict.fromkeys(PLACEHOLDER.findall(uri)))
        resources.append({"uri": uri, "vars": [(n, describe_source(template[n], wf)) for n in names if n in template]})
    return {
        "number": index,
        "name": step.name,
        "tool": step.tool,
        "effect": _tool_effect(wf, step),
        "args": [
            (k, describe_source(v, wf, ask=_asked(wf, step, k, v), default=tool_default(wf, step, k)))
            for k, v in step.args
        ],
        "resources": resources,
        "bind": step.bind,
        "text_rule": results.TEXT_STEP
        if step.bind in data and results.returns_text(wf.tool(step.tool) if step.tool else None)
        else None,
        "guidance": inert(step.guidance.strip()) if step.guidance else None,
        "gate": step.name in gated,
        "conditions": _conditions_view(wf, step),
        "confirm": _confirm_view(wf, step),
    }


def _read_as_data(wf: Workflow) -> set[str]:
    """The binds that some step tests in a condition or reads a field of (one pass over the steps): where such a
    result is a tool's text, the skill must say how the text reads (:data:`projector.results.TEXT_STEP`)."""
    found: set[str] = set()
    for s in wf.steps:
        found.update(c.subject.bind for c in s.when if isinstance(c.subject, FromStep))
        found.update(src.bind for _k, src in s.sources() if isinstance(src, FromStep) and src.field is not None)
    return found


def _asked(wf: Workflow, step: Step, key: str, src: Source) -> bool:
    """Whether the skill tells its reader to ask the user for the input ``src`` feeds: an input the side-effecting
    tool requires (:func:`projector.gates.asks_user`), or one declared ``ask: true``."""
    declared = wf.argument(src.name) if isinstance(src, FromArg) else None
    return gates.asks_user(wf, step, key, src) or (declared is not None and declared.ask)


def _confirm_view(wf: Workflow, step: Step) -> dict[str, Any] | None:
    """A step's ``confirm:`` in plain words: the question, the values shown with it, and what anything but an
    explicit yes does (the step's ``on_fail``, as for a failed condition)."""
    if step.confirm is None:
        return None
    action = f"call {code(step.tool)}" if step.tool else "read this step's resources"
    if step.on_fail == "skip":
        then = f"do not {action}: skip this step, tell the user it was not confirmed, and go on with the next step."
    else:
        then = f"do not {action}: stop the procedure here, and tell the user that it was not confirmed."
    only = (
        f"Call {code(step.tool)} only on an explicit yes."
        if step.tool
        else "Read this step's resources only on an explicit yes."
    )
    return {
        "message": step.confirm.message.strip(),
        "action": action,
        "only": only,
        "show": [
            describe_source(src, wf, ask=isinstance(src, FromArg) and _asked(wf, step, "", src))
            for src in step.confirm.show
        ],
        "otherwise": f"If the answer is anything else (a no, no answer, a change of subject), {then}",
        "skip": step.on_fail == "skip",
    }


def _shown(wf: Workflow) -> Workflow:
    """``wf`` with every multi-line text the templates print made :func:`inert` (the frontmatter keeps the
    description as written: YAML quotes it)."""
    arguments = tuple(_inert_in(a, "description") for a in wf.arguments)
    instructions = tuple(_inert_in(i, "text") for i in wf.instructions)
    tools = tuple(_inert_in(t, "description") for t in wf.tools)
    shown = _inert_in(wf, "description")
    if (arguments, instructions, tools) == (wf.arguments, wf.instructions, wf.tools):
        return shown
    return dataclasses.replace(shown, arguments=arguments, instructions=instructions, tools=tools)


def _inert_in(item: Any, name: str) -> Any:
    """``item`` with its text field ``name`` made :func:`inert`; ``item`` itself when that changes nothing (most
    texts: a copy of a frozen dataclass is slow)."""
    text = getattr(item, name)
    made = inert(text)
    return item if made == text else dataclasses.replace(item, **{name: made})


def workflow_digest(wf: Workflow) -> str:
    """The bundle's version stamp (``metadata.workflow-digest``): the SHA-256 of the workflow model's canonical JSON
    (:func:`projector.model.canonical`, compact, sorted keys). The model, not the source bytes, so that a workflow
    built in Python gets one too and equals the same workflow loaded from YAML, and a comment or a reordered mapping
    changes nothing; no path, time or tool version takes part, so every machine derives the same stamp."""
    data = canonical_json(model.canonical(wf), indent=None).encode("utf-8")
    return digest(data)


def tools_value(wf: Workflow) -> str:
    """``metadata.tools``: the names of the tools the steps call, sorted, each once, separated by one space (metadata
    values are strings). A workflow whose steps only read resources calls none: the empty string, so that a server
    tells "calls no tool" from a skill built before the key existed (no key), which it never hides."""
    return " ".join(sorted({s.tool for s in wf.steps if s.tool}))


def frontmatter_of(
    wf: Workflow, name: str, *, skills_only: bool = False, workflow_tools: bool = False
) -> dict[str, Any]:
    """The frontmatter's keys in their fixed order: name, description, license, compatibility, metadata. In
    metadata the tool's own keys come first (``workflow``, the workflow prompt, left out by ``skills_only``; then
    ``workflow-tool``, the workflow's tool, with ``workflow_tools`` only; then ``workflow-digest``; then ``tools``,
    the tools the steps call, :func:`tools_value`), then the workflow's, sorted by key. ``allowed-tools`` is never written
    (``allowed-tools-ignored``)."""
    frontmatter: dict[str, Any] = {"name": name, "description": wf.description}
    if wf.license is not None:
        frontmatter["license"] = wf.license
    if wf.compatibility is not None:
        frontmatter["compatibility"] = wf.compatibility
    metadata = {} if skills_only else {"workflow": wf.name}
    if workflow_tools:
        metadata["workflow-tool"] = wf.name
    metadata["workflow-digest"] = workflow_digest(wf)
    metadata[TOOLS_KEY] = tools_value(wf)
    metadata.update(wf.metadata)
    frontmatter["metadata"] = metadata
    return frontmatter


def project(
    wf: Workflow, prefix: tuple[str, ...] = (), *, skills_only: bool = False, workflow_tools: bool = False
) -> Projection:
    """Project ``wf`` (already validated) into its bundle. Pure: same workflow, same bytes.

    ``skills_only``: for skills served without their workflows. The SKILL.md names no workflow prompt: no
    ``metadata.workflow`` in its frontmatter and no server-accelerated alternative.
    ``workflow_tools``: for skills served with their workflows as tools too (``serve --workflow-tools``). The
    SKILL.md names the tool: ``metadata.workflow-tool``, and the server-accelerated alternative says it."""
    name = naming.skill_name(wf.name)
    path = naming.skill_path(name, prefix)
    found = gates.check(wf, skills_only=skills_only)
    diagnostics = list(found.diagnostics)
    gated = set(found.gated)
    data = _read_as_data(wf)
    steps = [_step_view(wf, i, s, gated, data) for i, s in enumerate(wf.steps, 1)]
    if wf.allowed_tools is not None:
        diagnostics.append(
            Diagnostic(
                wf.allowed_tools_span,
                "warning",
                "allowed-tools-ignored",
                "'allowed-tools' is not written to the SKILL.md: it pre-approves tools, and MCP hosts must ignore it for "
                "skills that come from a server (SEP-2640), as these do",
                "remove it; the skill already names each tool it calls and whether the tool changes data",
            )
        )
    shown = _shown(wf)
    frontmatter = frontmatter_of(wf, name, skills_only=skills_only, workflow_tools=workflow_tools)
    frontmatter_yaml = dump_frontmatter(frontmatter)
    context = {
        "frontmatter": frontmatter_yaml,
        "title": wf.title if wf.title is not None else title(wf.name),
        "workflow_prompt": None if skills_only else wf.name,
        "workflow_tool": wf.name if workflow_tools else None,
        "workflow": shown,
        "skill_name": name,
        "arguments": shown.arguments,
        "instructions": shown.instructions,
        "steps": steps,
        "judgment_steps": [s for s in steps if s["guidance"]],
        "condition_steps": [s for s in steps if s["conditions"]],
        "tools_file": TOOLS_FILE if wf.tools else None,
    }
    env = environment()
    files = {SKILL_FILE: _finish(env.get_template("SKILL.md.j2").render(context))}
    if wf.tools:
        used: dict[str, list[str]] = {t.name: [] for t in wf.tools}
        for s in steps:
            if s["tool"]:
                used[s["tool"]].append(f"step {s['number']} ({code(s['name'])})")
        files[TOOLS_FILE] = _finish(
            env.get_template("tools.md.j2").render({"skill_name": name, "tools": shown.tools, "used": used})
        )
    body_lines = files[SKILL_FILE].count(b"\n")
    if body_lines > MAX_BODY_LINES:
        diagnostics.append(
            Diagnostic(
                wf.span,
                "warning",
                "body-too-long",
                f"SKILL.md of '{name}' has {body_lines} lines; hosts expect under {MAX_BODY_LINES}",
                "move detail into references/ or split the workflow",
            )
        )
    return Projection(wf, name, path, files, diagnostics, (frontmatter, frontmatter_yaml))


def _finish(text: str) -> bytes:
    """UTF-8, LF only, no trailing spaces, exactly one trailing newline: the last step before the bytes.

    Every line break (:data:`LINE_BREAK`) is one here, written as ``\\n``. The templates break lines with ``\\n``
    only (``\\r\\n`` in a checkout that converts them) and :func:`inert` makes each break of a multi-line text a
    ``\\n``, so any other break comes from a one-line text (a name, a key, a URI); the line it starts is made
    :func:`inert` too. No filter runs after this one, so none can find a line that was not checked."""
    if any(c in text for c in _OTHER_BREAKS):  # rare: \r\n templates, or a one-line text that holds a break
        pieces = _LINE_BREAKS.split(text)  # line, break, line, break, ..., line
        text = "\n".join(
            [
                pieces[0],
                *(line if brk in ("\n", "\r\n") else inert(line) for brk, line in zip(pieces[1::2], pieces[2::2])),
            ]
        )
    # Only ASCII blanks: str.rstrip() would also cut U+00A0 and friends out of a quoted YAML scalar in the frontmatter.
    lines = [line.rstrip(" \t") for line in text.split("\n")]
    return ("\n".join(lines).rstrip("\n") + "\n").encode("utf-8")
