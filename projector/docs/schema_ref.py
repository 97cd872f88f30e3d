"""The workflow format reference, generated from ``projector/schemas/workflow.schema.json``."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from .common import DocsError, cell, read_text

SCHEMA = "schemas/workflow.schema.json"


def load_schema() -> dict[str, Any]:
    return json.loads(resources.files("projector").joinpath(SCHEMA).read_text(encoding="utf-8"))


def _ref_name(ref: str) -> str:
    if not ref.startswith("#/$defs/"):
        raise DocsError(f"{SCHEMA}: unsupported $ref {ref!r}")
    return ref.removeprefix("#/$defs/")


def _literal(value: Any) -> str:
    return f"`{json.dumps(value, ensure_ascii=False)}`"


def type_of(s: dict[str, Any]) -> str:
    """A schema's type in words, with links to the sections of referenced definitions."""
    if "$ref" in s:
        name = _ref_name(s["$ref"])
        return f"[{name}](#{name})"
    if "enum" in s:
        return "one of " + ", ".join(_literal(v) for v in s["enum"])
    if "oneOf" in s:
        if all("$ref" in alt or alt.get("type") == "array" for alt in s["oneOf"]):  # e.g. a condition, or a list
            return " or ".join(type_of(alt) for alt in s["oneOf"])
        return "one of the forms below"
    t = s.get("type")
    if t == "array":
        return f"list of {type_of(s['items'])}" if "items" in s else "list"
    if t == "object":
        extra = s.get("additionalProperties")
        if isinstance(extra, dict):
            return f"mapping of name to {type_of(extra)}"
        return "mapping"
    if isinstance(t, str):
        return t
    return "any JSON value"


def constraints(s: dict[str, Any]) -> list[str]:
    out = []
    lo, hi = s.get("minLength"), s.get("maxLength")
    if lo is not None and hi is not None:
        out.append(f"{lo} to {hi} characters")
    elif lo is not None:
        out.append("not empty" if lo == 1 else f"at least {lo} characters")
    elif hi is not None:
        out.append(f"at most {hi} characters")
    if "minItems" in s:
        out.append(f"at least {s['minItems']} item{'s' * (s['minItems'] != 1)}")
    if "pattern" in s:
        out.append(f"matches `{s['pattern']}`")
    if "default" in s:
        out.append(f"default {_literal(s['default'])}")
    names = s.get("propertyNames", {})
    if "enum" in names:
        out.append("keys: " + ", ".join(_literal(v) for v in names["enum"]))
    extra = s.get("additionalProperties")
    if isinstance(extra, dict) and extra.get("type") == "string" and extra.get("minLength") == 1:
        out.append("values: non-empty strings")
    return out


# Meanings for keys the schema leaves undescribed: the MCP tool annotations, as the MCP specification defines them.
MCP_ANNOTATIONS = {
    "title": "A human-readable title for the tool.",
    "readOnlyHint": "The tool does not modify its environment.",
    "destructiveHint": "The tool may perform destructive updates (meaningful only when it is not read-only).",
    "idempotentHint": "Calling the tool again with the same arguments has no further effect.",
    "openWorldHint": "The tool interacts with an open world of external entities.",
}


def properties_table(s: dict[str, Any], fallback: dict[str, str] | None = None) -> str:
    required = set(s.get("required", []))
    rows = ["| key | type | required | meaning |", "| --- | --- | --- | --- |"]
    for key, sub in s.get("properties", {}).items():
        meaning = sub.get("description", "") or (fallback or {}).get(key, "")
        extra = [c for c in constraints(sub) if not (c.startswith("values:") and "mapping" not in type_of(sub))]
        if extra:
            meaning = (meaning + " " if meaning else "") + f"({'; '.join(extra)})"
        rows.append(f"| `{key}` | {cell(type_of(sub))} | {'yes' if key in required else 'no'} | {cell(meaning)} |")
    return "\n".join(rows) + "\n"


def _object_section(title: str, anchor: str | None, s: dict[str, Any], level: int) -> list[str]:
    head = "#" * level
    out = [f"\n{head} {title}" + (f" {{#{anchor}}}" if anchor else "") + "\n\n"]
    if s.get("description"):
        out.append(s["description"] + "\n\n")
    if s.get("additionalProperties") is False:
        out.append("No other keys are allowed.\n\n")
    out.append(properties_table(s, MCP_ANNOTATIONS if title.endswith(".annotations") else None))
    for key, sub in s.get("properties", {}).items():
        if sub.get("type") == "object" and "properties" in sub:
            out.extend(_object_section(f"{title}.{key}", None, sub, level + 1))
    return out


def _one_of_section(name: str, s: dict[str, Any]) -> list[str]:
    out = [f"\n## {name} {{#{name}}}\n\n"]
    if s.get("description"):
        out.append(s["description"] + "\n\n")
    out.append("| form | keys | meaning |\n| --- | --- | --- |\n")
    for alt in s["oneOf"]:
        props = alt.get("properties", {})
        req = alt.get("required", [])
        keys = ", ".join(f"`{k}`" + ("" if k in req else " (optional)") for k in props)
        meaning = " ".join(
            f"`{k}`: {sub.get('description', type_of(sub))}"
            + (f" ({'; '.join(constraints(sub))})" if constraints(sub) else "")
            for k, sub in props.items()
        )
        out.append(f"| `{req[0]}` | {keys} | {cell(meaning)} |\n")
    return out


def workflow_format(root: Path) -> str:
    schema = load_schema()
    out = [
        f"""# Workflow format

A workflow file is one YAML document describing one sequential workflow: a named procedure whose steps call the
server's tools in order. `project-skill build` compiles each file under `workflows/` into one skill.

This reference is generated from the JSON Schema that ships with the package, `projector/{SCHEMA}`. Point your
editor at it for completion and checking:

```yaml
# yaml-language-server: $schema=../projector/{SCHEMA}
```

Outside this repository, save a copy beside your workflows with `project-skill schema > workflow.schema.json` and
point the comment at it.

The schema describes the shape. `project-skill build` checks more than the shape: names must be unique, a step may
use only arguments it declares and results that earlier steps bind, every `{{placeholder}}` must be filled, and so
on. It also checks each step against its tool, as `attach()` does when it serves the workflow: every parameter the
tool's `input_schema` requires is given (`missing-parameter`); every parameter given is one the schema declares,
unless the schema allows others with `additionalProperties` or `patternProperties` (`unknown-parameter`, at the
key; a near miss of a required parameter that is not given, such as `repo` for `repo_path`, is one misspelling: one
`unknown-parameter` that suggests the name, and no `missing-parameter`); a constant is valid against its parameter's
schema, and a typed argument has a type the parameter takes (`parameter-type`; the schema's regular expressions,
`pattern` and the names of `patternProperties`, are matched by RE2 in time linear in the text, so a pattern that
backtracks cannot stall a build, and a schema with a pattern RE2 cannot read, one with lookaround or a
backreference, is not applied to the step's constants); a `field` path, in a step's
arguments or in a `when:` condition, exists in the `output_schema` of the tool that made the result, when it
declares one, read inside the SDKs' `{{result: x}}` envelope where the schema is that envelope (`bad-field-path`).
With `--tools-from SERVER` the schemas are the server's, and a step may call a tool that `tools` does not list.
Each such problem is reported as `file:line:col` with a code and a hint. When the server runs the workflow, it checks
each step's arguments again, once filled in, against the tool's schema as the server lists it then, before the call:
a value it refuses, or a number that is not finite, ends the run at that step without calling the tool.

A `{{name}}` in a string constant (`const: "cart for {{who}}"`) is the text of the argument `name`, which must be
declared (`undeclared-argument`): its canonical text (`true`, `12`, `2.5`), so a placeholder always gives a string.
The strings inside a constant's lists and maps, at any depth, are filled the same way, for each `{{name}}` that names
a declared argument; a key is not filled, and a `{{name}}` that names no argument is text, as written. When an
optional argument that a constant's placeholder takes was not given, the server-side run hands over before the step
(or leaves out the parameter, when it is optional).

A description that still holds the placeholder `project-skill init` wrote (it contains `TODO(project-skill init)`)
is refused (`placeholder-description`) until it says what the workflow does. The workflow's `name` is the name of
its MCP prompt, so it follows the rule `project-skill init NAME` applies: ASCII letters, digits, `_`, `-` and `.`,
starting with a letter or a digit, at most 64 characters; `name: Restock Item` is refused (`bad-workflow-name`),
with the name to use instead (`restock_item`). An unknown key that is a near miss of
a top-level key the file does not have (`agruments` for `arguments`) is an `unknown-key` error with the suggestion,
and the errors that follow only from that key's absence (each use of an undeclared argument, say) are not shown: a
note at the key (`errors-not-shown`) says how many. A YAML syntax error (`yaml-syntax`) has a hint for the common
causes: a tab in the indentation, an unclosed quote or bracket, an unquoted `: ` in a value, and a line indented
other than the block it belongs to.

The Agent Skills fields `license`, `compatibility` and `metadata` reach the SKILL.md frontmatter (and so the entry in
`skills.json`) in the order name, description, license, compatibility, metadata. `compatibility` is 1 to 500
characters (`compatibility-too-long`); `license` and `compatibility` may not be blank, nor a metadata key
(`empty-field`); every metadata value is a string (`wrong-type`: quote `1.0` or `true`), and each of these values
must read the same under YAML 1.1 and 1.2 (`ambiguous-scalar`: quote `yes` or `on`). The tool writes these metadata
keys itself, which a workflow cannot set (`reserved-metadata-key`): `workflow`, the workflow prompt that runs the same
steps (left out with `--skills-only`), `workflow-tool`, the tool that runs them (with `--workflow-tools` only), and
`workflow-digest`, the bundle's version stamp: `sha256:` and the SHA-256 of
the workflow's canonical JSON (every value of the workflow, none of its positions, comments or key order), so it
changes exactly when the workflow does, is the same on every machine, and a workflow built in Python gets one too. The
workflow's own metadata keys follow, sorted. `allowed-tools` is accepted and not written, with the warning
`allowed-tools-ignored`: it pre-approves tools, and MCP hosts must ignore it for skills that come from a server.

A file is plain YAML holding JSON values. Refused, each at its place: anchors and aliases (`alias`), a tag that
changes a value's type other than to a string, number, boolean or null, and any tag on a key or a collection
(`yaml-tag`); NaN, infinity and integers over 4,300 digits (`bad-number`); nesting deeper than 100 levels
(`too-deep`); control characters other than tab and line break in any text, and bidirectional controls, zero-width
and tag characters too (in a text printed on one line, every Unicode format character) (`control-character`); a line
break in a text printed on one line, such as a name, a key or a resource URI (`line-break`); a skill name that is a
Windows device name such as `con`, `nul` or `com1` (`reserved-name`); and, in a condition's operand, a constant or a
field path, an unquoted scalar that YAML 1.1 and YAML 1.2 read differently, such as `no`, `on`, `010`, `0o17`,
`1:30`, `1_000` or `1e3` (`ambiguous-scalar`: quote it, or write the value both read alike). Multi-line texts keep their
Markdown, but a line that would start a heading, a code fence or an HTML block is escaped with a backslash, so no
text changes the structure of the skill. Only regular files are read, and a file found in a folder that links to a
file outside every folder being compiled is refused unread (`outside-root`) unless it is named on the command line.

## Top level

{schema.get("description", "")}

"""
    ]
    if schema.get("additionalProperties") is False:
        out.append("No other keys are allowed.\n\n")
    out.append(properties_table(schema))
    for name, sub in schema.get("$defs", {}).items():
        if "oneOf" in sub:
            out.extend(_one_of_section(name, sub))
        else:
            out.extend(_object_section(name, name, sub, 2))
    example = read_text(root, "workflows/refunds.yaml", "the format reference quotes it as its example")
    out.append(f"""
## A complete example

`workflows/refunds.yaml`, with comments on each key. It compiles to the `refund-flow` skill: see
[the SKILL.md layout](skill-layout.md).

```yaml
{example.rstrip(chr(10))}
```
""")
    return "".join(out)
