"""``project-skill init``: a new workflow file, started from the tools a server (or its snapshot) already declares.

The file holds, in this order: the ``yaml-language-server`` comment for editors; the name; a description
placeholder that ``build`` refuses (``placeholder-description``) until the author replaces it; one argument for
each required parameter of each step, of the type the parameter takes; the tools' declarations copied from the source (name, description,
``input_schema``, ``output_schema`` where given, annotations); and one step per chosen tool, in the order given, with
each required parameter wired to its argument and each optional parameter listed in a comment above ``args``.

The YAML is written by ruamel.yaml (the one library here that writes comments), deterministic, and safe under
YAML 1.1 and 1.2: every string that either version would read as something else (``yes``, ``0o17``, ``1e3``,
``2024-01-15``) is quoted, every float is written in a form both read as that float, and the text is read back with
both before it is returned, so a value that would not survive is a bug found here, not in the author's build.

A value a person gives for one step never reaches, unannounced, a tool that changes something. Steps share an
argument only when every one of them calls a read-only tool (``readOnlyHint: true``) and takes the parameter as the
same type: then the argument has the parameter's name (``repo_path`` for ``git_status`` and ``git_diff_staged``), and
its description names the steps it goes to, so the person filling it in sees that one value goes to both. Any other
parameter name that several steps require gives each step its own argument, named after the step (``select_rows_sql``,
``update_rows_sql``): the ``sql`` of a SELECT tool and of an UPDATE tool are never one value by default. An author
who wants one value there joins the arguments by hand, where the choice is visible in the file.

A required parameter that no prompt argument can carry (an array or an object) is refused with a usage error: the
scaffold would not build, and the author must choose that value by hand.

Pure: no file is read or written here (the CLI writes the text, never over an existing file). No ``mcp``.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from . import naming
from .errors import UsageError, suggest
from .fit import ARG_JSON_TYPES
from .toolschema import json_types as _types, type_words
from .model import Tool
from .validate import DESCRIPTION_PLACEHOLDER
from .yaml12 import CORE, QUOTE_TOO

SCHEMA_COMMENT = "yaml-language-server: $schema=workflow.schema.json"
ARG_TYPES = ("string", "number", "integer", "boolean")
_COMMENT_WIDTH = 110
_PATTERNS = [re.compile(rx) for _tag, rx, _first in (*CORE, *QUOTE_TOO)]


def _one_line(text: Any, limit: int = 80) -> str:
    """Text for a comment: one line, no control characters, cut to ``limit`` characters."""
    words = " ".join(str(text).split())
    words = "".join(c if c.isprintable() else " " for c in words)
    return words if len(words) <= limit else words[: limit - 3] + "..."


def arg_type(schema: Any) -> str | None:
    """The prompt argument type that carries a value of ``schema``: string when the schema does not say, None when
    no argument type can (an array or an object)."""
    kinds = _types(schema)
    if kinds is None:
        return "string"
    # The type whose values the parameter takes all of (number for a number, integer for an integer), else one that
    # the parameter takes some of.
    return next(
        (t for t in ARG_TYPES if ARG_JSON_TYPES[t] <= kinds),
        next((t for t in ARG_TYPES if ARG_JSON_TYPES[t] & kinds), None),
    )


def _required(schema: Any) -> list[str]:
    req = schema.get("required") if isinstance(schema, dict) else None
    return [r for r in req if isinstance(r, str)] if isinstance(req, list) else []


def _properties(schema: Any) -> dict[str, Any]:
    props = schema.get("properties") if isinstance(schema, dict) else None
    return props if isinstance(props, dict) else {}


def _optional_comment(tool: Tool) -> str | None:
    """The comment that lists a tool's optional parameters, or None when it has none."""
    required = set(_required(tool.input_schema))
    lines = []
    for name, prop in _properties(tool.input_schema).items():
        if name in required:
            continue
        kinds = _types(prop)
        facts = [type_words(kinds) if kinds else "any type"]
        if isinstance(prop, dict) and "default" in prop:
            import json

            facts.append(f"default {_one_line(json.dumps(prop['default'], ensure_ascii=False), 40)}")
        about = prop.get("description") if isinstance(prop, dict) else None
        line = f"{_one_line(name, 40)} ({'; '.join(facts)})" + (f": {_one_line(about)}" if about else "")
        lines.append("  " + _one_line(line, _COMMENT_WIDTH))
    if not lines:
        return None
    head = f"optional parameters of {tool.name}; to pass one, add it under args (NAME: {{arg: ...}} or {{const: ...}}):"
    return "\n".join([_one_line(head, _COMMENT_WIDTH), *lines])


def _check_request(name: str, tools: Mapping[str, Tool], chosen: Sequence[str]) -> None:
    problem = naming.workflow_name_problem(
        name
    )  # the build's rule for a workflow's name, so init writes none it refuses
    if problem:
        _code, message, hint = problem
        raise UsageError(f"init: {message}" + (f"; {hint}" if hint else ""))
    if not chosen:
        raise UsageError("init: name at least one tool with --tool")
    missing = [t for t in chosen if t not in tools]
    if missing:
        close = suggest(missing[0], tools)
        raise UsageError(
            f"init: the tools' source has no tool {', '.join(repr(t) for t in missing)}"
            + (f" ({close})" if close else "")
            + f"; its tools: {', '.join(sorted(tools)) or 'none'}"
        )


def _wire(
    tool: Tool,
    step: str,
    sharing: Mapping[str, list[str] | None],
    arguments: dict[str, dict[str, Any]],
    made_for: dict[str, str],
) -> dict[str, Any]:
    """A step's ``args``: each required parameter from an argument of its type, added to ``arguments`` when new
    (``made_for``: the parameter each argument was made for). ``sharing`` maps a parameter name that several steps
    require to the steps that share one argument for it, or to None when each step gets its own (named after the
    step); see the module."""
    args: dict[str, Any] = {}
    props = _properties(tool.input_schema)
    for param in _required(tool.input_schema):
        prop = props.get(param, {})
        kind = arg_type(prop)
        if kind is None:
            raise UsageError(
                f"init: the tool '{tool.name}' requires '{param}', which takes "
                f"{type_words(_types(prop) or set())}: no prompt argument can carry it; "
                "leave that tool out, and write its step by hand with a {step: ...} or "
                "{const: ...} source"
            )
        own = param in sharing and sharing[param] is None
        arg, n = (f"{step}_{param}" if own else param), 2
        joins = bool(sharing.get(param)) and made_for.get(arg) == param  # the argument an earlier step made to share
        while arg in arguments and not joins:  # a name another parameter's argument took (a parameter 'lookup_id')
            arg, n = f"{step}_{param}_{n}", n + 1
        if arg not in arguments:
            about = (prop.get("description") or prop.get("title")) if isinstance(prop, dict) else None
            about = about or param.replace("_", " ")
            if own:
                about = f"{about} (for step '{step}')"
            elif sharing.get(param):
                about = f"{about} (one value for steps {', '.join(repr(s) for s in sharing[param] or ())})"
            arguments[arg] = {"name": arg, "description": _one_line(about, 200), "required": True, "type": kind}
            made_for[arg] = param
        args[param] = {"arg": arg}
    return args


def _read_only(tool: Tool) -> bool:
    return isinstance(tool.annotations, dict) and tool.annotations.get("readOnlyHint") is True


def _sharing(tools: Mapping[str, Tool], steps: list[tuple[str, str]]) -> dict[str, list[str] | None]:
    """For each parameter name that more than one of ``steps`` (``(step, tool)``) requires: the steps, when they may
    share one argument (every tool read-only, one argument type), else None."""
    users: dict[str, list[tuple[str, Tool]]] = {}
    for step, tool_name in steps:
        for param in dict.fromkeys(_required(tools[tool_name].input_schema)):
            users.setdefault(param, []).append((step, tools[tool_name]))
    out: dict[str, list[str] | None] = {}
    for param, used in users.items():
        if len(used) < 2:
            continue
        kinds = {arg_type(_properties(t.input_schema).get(param, {})) for _, t in used}
        joined = all(_read_only(t) for _, t in used) and len(kinds) == 1 and None not in kinds
        out[param] = [s for s, _ in used] if joined else None
    return out


def _declaration(tool: Tool) -> dict[str, Any]:
    decl: dict[str, Any] = {"name": tool.name}
    if tool.description:
        decl["description"] = tool.description
    for key in ("input_schema", "output_schema", "annotations"):
        if getattr(tool, key) is not None:
            decl[key] = getattr(tool, key)
    return decl


def plan(name: str, tools: Mapping[str, Tool], chosen: Sequence[str]) -> tuple[dict[str, Any], dict[int, str]]:
    """The workflow as plain data (key order as written), and the optional-parameter comment of each step (by
    index). Raises :class:`UsageError` for a bad name, an unknown tool, or a parameter no argument can carry."""
    _check_request(name, tools, chosen)
    arguments: dict[str, dict[str, Any]] = {}
    made_for: dict[str, str] = {}
    named: list[tuple[str, str]] = []  # (step, tool), step names unique
    for tool_name in chosen:
        step, n = tool_name, 2
        while any(s == step for s, _ in named):
            step, n = f"{tool_name}_{n}", n + 1
        named.append((step, tool_name))
    sharing = _sharing(tools, named)
    steps: list[dict[str, Any]] = []
    comments: dict[int, str] = {}
    for step, tool_name in named:
        comment = _optional_comment(tools[tool_name])
        if comment:
            comments[len(steps)] = comment
        steps.append(
            {"name": step, "tool": tool_name, "args": _wire(tools[tool_name], step, sharing, arguments, made_for)}
        )
    data: dict[str, Any] = {"name": name, "description": DESCRIPTION_PLACEHOLDER}
    if arguments:
        data["arguments"] = list(arguments.values())
    data["tools"] = [_declaration(tools[t]) for t in dict.fromkeys(chosen)]
    data["steps"] = steps
    return data, comments


# ----------------------------------------------------------------------------------------------------- the YAML


def _quoted(text: str) -> bool:
    """Whether a plain ``text`` would be read as something other than this string by YAML 1.1 or 1.2."""
    import yaml

    if yaml.SafeLoader.resolve(yaml.SafeLoader, yaml.ScalarNode, text, (True, False)) != "tag:yaml.org,2002:str":
        return True
    return any(rx.fullmatch(text) for rx in _PATTERNS)


def _float_text(value: float) -> str:
    """A float both YAML versions read back as itself: YAML 1.1 wants a dot in the mantissa and a signed
    exponent (``1.0e-07``, not ``1e-07``)."""
    text = repr(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        if "." not in mantissa:
            mantissa += ".0"
        text = f"{mantissa}e{exponent if exponent[0] in '+-' else '+' + exponent}"
    return text


def _node(value: Any, flow: bool = False) -> Any:
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString

    if isinstance(value, dict):
        m = CommentedMap((_node(k), _node(v, flow)) for k, v in value.items())
        if flow:
            m.fa.set_flow_style()
        return m
    if isinstance(value, list):
        s = CommentedSeq(_node(v, flow) for v in value)
        if flow:
            s.fa.set_flow_style()
        return s
    if isinstance(value, str) and _quoted(value):
        return DoubleQuotedScalarString(value)
    return value


def _same(a: Any, b: Any) -> bool:
    """Equal, and of the same JSON types all the way down (``True`` is not ``1``)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return type(a) is type(b) and a == b


def dump(data: dict[str, Any], comments: Mapping[int, str]) -> str:
    """The workflow file's text: ``data`` written by ruamel.yaml, with the schema comment and the steps' comments."""
    from ruamel.yaml import YAML

    yml = YAML(typ="rt", pure=True)
    yml.indent(mapping=2, sequence=4, offset=2)
    yml.width = 4096
    yml.representer.add_representer(
        float, lambda rep, v: rep.represent_scalar("tag:yaml.org,2002:float", _float_text(v))
    )
    yml.representer.add_representer(type(None), lambda rep, v: rep.represent_scalar("tag:yaml.org,2002:null", "null"))
    doc = _node({k: v for k, v in data.items() if k != "steps"})
    steps = []
    for i, step in enumerate(data["steps"]):
        node = _node({k: v for k, v in step.items() if k != "args"})
        args = _node({})
        for k, v in step["args"].items():
            args[_node(k)] = _node(v, flow=True)
        node["args"] = args
        if i in comments:
            node.yaml_set_comment_before_after_key("args", before=comments[i], indent=4)
        steps.append(node)
    from ruamel.yaml.comments import CommentedSeq

    doc["steps"] = CommentedSeq(steps)
    doc.yaml_set_start_comment(SCHEMA_COMMENT)
    buf = io.StringIO()
    yml.dump(doc, buf)
    text = buf.getvalue().rstrip("\n") + "\n"
    _check_round_trip(text, data)
    return text


def _check_round_trip(text: str, data: dict[str, Any]) -> None:
    """Read the text back with YAML 1.1 (PyYAML, as ``build`` reads it) and the YAML 1.2 core schema; both must give
    ``data`` exactly. (An ``args: {}`` of a step without required parameters reads back as an empty mapping.)"""
    import yaml

    from .yaml12 import load_core

    for reader in (lambda t: yaml.safe_load(t), load_core):
        back = reader(text)
        plain = _plain(back)
        if not _same(plain, data):  # pragma: no cover - a bug in the quoting above, never the author's input
            raise AssertionError("init: the written YAML does not read back as written; please report this")


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def scaffold(name: str, tools: Mapping[str, Tool], chosen: Sequence[str]) -> str:
    """The text of a new workflow file named ``name`` with one step per tool in ``chosen`` (see the module)."""
    data, comments = plan(name, tools, chosen)
    return dump(data, comments)
