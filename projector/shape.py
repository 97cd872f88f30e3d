"""The shape of a workflow: positioned YAML values checked against the format and built into the model.

The second of the loader's three parts (see :mod:`projector.positioned`). The allowed keys of each object come from the
JSON Schema shipped as package data, so the schema that editors complete from and the loader cannot disagree about
which keys exist. Every problem is reported at once, at its ``line:col``; then :func:`projector.validate.validate`
checks the format's rules on the model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .conditions import OPERATORS, literal
from .errors import Diagnostic, Span, closest, error, plural, printable_quote, suggest
from .model import Argument, Condition, Confirm, Const, FromArg, FromStep, Instruction, Source, Step, Tool, Workflow
from .positioned import Y, Reader, type_name, decode, normalize
from .validate import NO_STEPS, validate

SCHEMA_PATH = Path(__file__).with_name("schemas") / "workflow.schema.json"


def _schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text("utf-8"))


SCHEMA = _schema()
_DEFS = SCHEMA["$defs"]
_KINDS = ("argument", "instruction", "tool", "step", "confirm")  # the objects under $defs, besides the workflow
KEYS = {"workflow": tuple(SCHEMA["properties"]), **{k: tuple(_DEFS[k]["properties"]) for k in _KINDS}}
REQUIRED = {"workflow": tuple(SCHEMA["required"]), **{k: tuple(_DEFS[k]["required"]) for k in _KINDS}}
SOURCE_KEYS = ("arg", "step", "field", "const")
SUBJECT_KEYS = ("arg", "step", "field")
ROLES = tuple(_DEFS["instruction"]["properties"]["role"]["enum"])
ARG_TYPES = tuple(_DEFS["argument"]["properties"]["type"]["enum"])


def near_miss(key: str, kind: str) -> str | None:
    """The allowed key of a ``kind`` object (:data:`KEYS`) that the unknown ``key`` is a near miss of, or None."""
    return closest(key, KEYS[kind], cutoff=0.5)


def _named(m: dict[str, Y]) -> bool:
    """Whether an item's diagnostics can name it: its ``name`` is a string (a list or mapping there is reported as
    the wrong type, and is not written into the other messages)."""
    return "name" in m and isinstance(m["name"].value, str)


class _Builder:
    """Checks the shape of one workflow document and builds the model from it."""

    def __init__(self, file: str, diags: list[Diagnostic]):
        self.file = file
        self.diags = diags

    def err(self, span: Span, code: str, message: str, hint: str | None = None) -> None:
        self.diags.append(error(span, code, message, hint))

    def mapping(self, y: Y, kind: str, what: str) -> dict[str, Y] | None:
        if not isinstance(y.value, dict):
            self.err(y.span, "wrong-type", f"{what} must be a mapping, not {type_name(y.value)}")
            return None
        allowed = KEYS[kind]
        for key in y.value:
            if key not in allowed:
                close = near_miss(key, kind)
                hint = f"did you mean '{close}'?" if close else f"valid keys: {', '.join(allowed)}"
                self.err(y.key_span(key), "unknown-key", f"unknown key '{key}' in {what}", hint)
        for key in REQUIRED[kind]:
            if key not in y.value:
                self.err(y.span, "missing-key", f"{what} is missing the required key '{key}'")
        return y.value

    def string(self, m: dict[str, Y], key: str, what: str, default: str | None = None) -> str | None:
        y = m.get(key)
        if y is None:
            return default
        if not isinstance(y.value, str):
            hint = "quote the value to make it a string" if isinstance(y.value, (int, float, bool)) else None
            self.err(y.span, "wrong-type", f"'{key}' of {what} must be a string, not {type_name(y.value)}", hint)
            return default
        return y.value

    def same_in_1_2(self, y: Y, what: str) -> None:
        """``ambiguous-scalar`` for every plain scalar of ``y`` (a condition's operand, a constant, a field path)
        that YAML 1.1 and YAML 1.2 read differently, in document order: what a gate checks, or a tool gets, must not
        depend on which YAML a reader speaks."""
        if y.odd is not None and not isinstance(y.value, dict):
            self._ambiguous(y.span, what, *y.odd, y.value)
        if isinstance(y.value, dict):
            for key, child in y.value.items():
                if y.odd is not None and key in y.odd:
                    self._ambiguous(y.key_span(key), f"a key in {what}", *y.odd[key], key)
                self.same_in_1_2(child, what)
        elif isinstance(y.value, list):
            for item in y.value:
                self.same_in_1_2(item, what)

    def _ambiguous(self, span: Span, what: str, text: str, value_1_2: Any, value_1_1: Any) -> None:
        values = [v for v in (value_1_1, value_1_2) if not isinstance(v, str)]
        kind = "the boolean" if isinstance(values[0], bool) else "a number" if len(values) > 1 else "the number"
        alternatives = " or ".join(literal(v) for v in values)
        self.err(
            span,
            "ambiguous-scalar",
            f"{what} is the unquoted {printable_quote(text)}: YAML 1.1 reads it as {literal(value_1_1)}, "
            f"YAML 1.2 as {literal(value_1_2)}",
            f"quote it to mean the text: {literal(text)}; or write {alternatives} for {kind}",
        )

    def listing(self, m: dict[str, Y], key: str, what: str) -> list[Y]:
        y = m.get(key)
        if y is None:
            return []
        if not isinstance(y.value, list):
            self.err(y.span, "wrong-type", f"'{key}' of {what} must be a list, not {type_name(y.value)}")
            return []
        return y.value

    def workflow(self, doc: Y) -> Workflow | None:
        m = self.mapping(doc, "workflow", "the workflow")
        if m is None:
            return None
        name = self.string(m, "name", "the workflow", "")
        description = self.string(m, "description", "the workflow", "")
        arguments = tuple(a for a in (self.argument(y) for y in self.listing(m, "arguments", "the workflow")) if a)
        instructions = tuple(
            i for i in (self.instruction(y) for y in self.listing(m, "instructions", "the workflow")) if i
        )
        tools = tuple(t for t in (self.tool(y) for y in self.listing(m, "tools", "the workflow")) if t)
        steps_y = self.listing(m, "steps", "the workflow")
        if "steps" in m and isinstance(m["steps"].value, list) and not steps_y:
            self.err(m["steps"].span, "missing-key", NO_STEPS, "add at least one step")
        steps = tuple(s for s in (self.step(y, i) for i, y in enumerate(steps_y, 1)) if s)
        name_span = m["name"].span if "name" in m else doc.span
        title = self.string(m, "title", "the workflow")
        frontmatter = self.frontmatter(m)
        return Workflow(
            **frontmatter,
            name=name or "",
            description=description or "",
            arguments=arguments,
            instructions=instructions,
            tools=tools,
            steps=steps,
            span=name_span,
            description_span=m["description"].span if "description" in m else doc.span,
            source=self.file,
            title=title,
            title_span=m["title"].span if "title" in m else doc.span,
        )

    def frontmatter(self, m: dict[str, Y]) -> dict[str, Any]:
        """The Agent Skills fields the SKILL.md frontmatter carries as given: ``license``, ``compatibility``,
        ``metadata`` (string to string) and the ignored ``allowed-tools``, as :class:`Workflow` keywords. Each value
        must read the same under YAML 1.1 and 1.2, as the frontmatter written from it does."""
        found: dict[str, Any] = {}
        for key, attr in (
            ("license", "license"),
            ("compatibility", "compatibility"),
            ("allowed-tools", "allowed_tools"),
        ):
            if key in m:
                self.same_in_1_2(m[key], f"'{key}' of the workflow")
                if m[key].odd is None:  # else ambiguous-scalar said it, and wrong-type would say it again
                    found[attr] = self.string(m, key, "the workflow")
                found[f"{attr}_span"] = m[key].span
        y = m.get("metadata")
        if y is None:
            return found
        if not isinstance(y.value, dict):
            self.err(
                y.span,
                "wrong-type",
                f"'metadata' of the workflow must be a mapping of string to string, not {type_name(y.value)}",
            )
            return found
        self.same_in_1_2(y, "'metadata' of the workflow")
        pairs = []
        for key, value in y.value.items():
            if isinstance(value.value, str):
                pairs.append((key, value.value, y.key_span(key)))
            elif value.odd is None:  # else ambiguous-scalar said it
                hint = "quote the value to make it a string" if isinstance(value.value, (int, float, bool)) else None
                self.err(
                    value.span,
                    "wrong-type",
                    f"'metadata.{key}' of the workflow must be a string, not {type_name(value.value)}",
                    hint,
                )
        pairs.sort(key=lambda p: p[0])
        found["metadata"] = tuple((k, v) for k, v, _ in pairs)
        found["metadata_spans"] = tuple(s for _, _, s in pairs)
        return found

    def argument(self, y: Y) -> Argument | None:
        m = self.mapping(y, "argument", "an argument")
        if m is None:
            return None
        what = f"argument '{m['name'].value}'" if _named(m) else "an argument"
        required, ask = (self.flag(m, key, what) for key in ("required", "ask"))
        typ = None
        if "type" in m:
            typ = m["type"].value
            if typ not in ARG_TYPES:
                self.err(
                    m["type"].span,
                    "wrong-type",
                    f"'type' of {what} must be one of {', '.join(ARG_TYPES)}",
                    suggest(str(typ), ARG_TYPES, cutoff=0.5),
                )
                typ = None
        return Argument(
            name=self.string(m, "name", what, "") or "",
            description=self.string(m, "description", what, "") or "",
            required=required,
            type=typ,
            span=y.span,
            ask=ask,
            ask_span=m["ask"].span if "ask" in m else y.span,
        )

    def flag(self, m: dict[str, Y], key: str, what: str) -> bool:
        """A true-or-false key of ``what`` (false when absent, or not a boolean: then ``wrong-type``)."""
        if key in m and not isinstance(m[key].value, bool):
            self.err(
                m[key].span, "wrong-type", f"'{key}' of {what} must be true or false, not {type_name(m[key].value)}"
            )
        return key in m and m[key].value is True

    def instruction(self, y: Y) -> Instruction | None:
        m = self.mapping(y, "instruction", "an instruction")
        if m is None:
            return None
        role = m["role"].value if "role" in m else "system"
        if "role" in m and role not in ROLES:
            self.err(m["role"].span, "wrong-type", f"'role' of an instruction must be one of {', '.join(ROLES)}")
            role = "system"
        text = self.string(m, "text", "an instruction", "") or ""
        return Instruction(role=role, text=text, span=y.span)

    def tool(self, y: Y) -> Tool | None:
        m = self.mapping(y, "tool", "a tool")
        if m is None:
            return None
        what = f"tool '{m['name'].value}'" if _named(m) else "a tool"
        schema = ann = output = None
        for key in ("input_schema", "output_schema", "annotations"):
            if key in m:
                if isinstance(m[key].value, dict):
                    value = m[key].plain()
                    if key == "input_schema":
                        schema = value
                    elif key == "output_schema":
                        output = value
                    else:
                        ann = value
                        for hint_key in ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"):
                            if hint_key in value and not isinstance(value[hint_key], bool):
                                self.err(
                                    m[key].value[hint_key].span,
                                    "wrong-type",
                                    f"annotation '{hint_key}' of {what} must be true or false",
                                )
                else:
                    self.err(
                        m[key].span, "wrong-type", f"'{key}' of {what} must be a mapping, not {type_name(m[key].value)}"
                    )
        return Tool(
            name=self.string(m, "name", what, "") or "",
            description=self.string(m, "description", what, "") or "",
            input_schema=schema,
            annotations=ann,
            output_schema=output,
            span=y.span,
        )

    def sources(self, m: dict[str, Y], key: str, what: str) -> tuple[tuple[str, Source], ...]:
        y = m.get(key)
        if y is None:
            return ()
        if not isinstance(y.value, dict):
            self.err(y.span, "wrong-type", f"'{key}' of {what} must be a mapping, not {type_name(y.value)}")
            return ()
        out = []
        for name, sy in y.value.items():
            src = self.source(sy, f"'{key}.{name}' of {what}")
            if src is not None:
                out.append((name, src))
        return tuple(out)

    def source(self, y: Y, what: str) -> Source | None:
        hint = "write {arg: NAME}, {step: BIND}, {step: BIND, field: PATH} or {const: VALUE}"
        if not isinstance(y.value, dict):
            self.err(y.span, "bad-source", f"{what} must be a data source, not {type_name(y.value)}", hint)
            return None
        m = y.value
        for key in m:
            if key not in SOURCE_KEYS:
                self.err(
                    y.key_span(key),
                    "unknown-key",
                    f"unknown key '{key}' in {what}",
                    suggest(key, SOURCE_KEYS, cutoff=0.5) or hint,
                )
                return None
        kinds = [k for k in ("arg", "step", "const") if k in m]
        if len(kinds) != 1 or ("field" in m and kinds != ["step"]):
            self.err(
                y.span, "bad-source", f"{what} must have exactly one of arg, step or const (field only with step)", hint
            )
            return None
        kind = kinds[0]
        if kind == "const":
            self.same_in_1_2(m["const"], f"the constant of {what}")
            return Const(m["const"].plain(), span=y.span)
        ref = m[kind]
        if not isinstance(ref.value, str):
            self.err(ref.span, "wrong-type", f"'{kind}' of {what} must be a string, not {type_name(ref.value)}")
            return None
        if kind == "arg":
            return FromArg(ref.value, span=ref.span)
        return self.from_step(m, ref, what)

    def from_step(self, m: dict[str, Y], ref: Y, what: str) -> FromStep | None:
        """``{step: BIND}`` or ``{step: BIND, field: PATH}`` (a list index may be written as a number); None, with
        the error reported, when ``field`` is neither. Shared by data sources and condition subjects."""
        field = None
        if "field" in m:
            f = m["field"]
            self.same_in_1_2(f, f"'field' of {what}")
            if isinstance(f.value, int) and not isinstance(f.value, bool):
                field = str(f.value)
            elif isinstance(f.value, str):
                field = f.value
            else:
                self.err(f.span, "wrong-type", f"'field' of {what} must be a dot path string")
                return None
        return FromStep(ref.value, field, span=ref.span)

    def step(self, y: Y, index: int) -> Step | None:
        m = self.mapping(y, "step", f"step {index}")
        if m is None:
            return None
        name = self.string(m, "name", f"step {index}", "") or ""
        what = f"step '{name}'" if name else f"step {index}"
        resources_y = self.listing(m, "resources", what)
        resources_list = []
        for r in resources_y:
            if isinstance(r.value, str) and r.value:
                resources_list.append(r.value)
            else:
                self.err(r.span, "wrong-type", f"a resource of {what} must be a non-empty URI string")
        acks: list[tuple[str, str]] = []
        if "acknowledge" in m:
            ay = m["acknowledge"]
            if not isinstance(ay.value, dict):
                self.err(ay.span, "wrong-type", f"'acknowledge' of {what} must be a mapping of warning code to reason")
            else:
                for code, reason in ay.value.items():
                    if not isinstance(reason.value, str) or not reason.value.strip():
                        self.err(
                            reason.span,
                            "wrong-type",
                            f"the reason for acknowledging '{code}' must be a non-empty string",
                            "say why the warning does not apply, e.g. which check the tool enforces itself",
                        )
                    else:
                        acks.append((code, reason.value))
        guidance = self.string(m, "guidance", what)
        when = self.conditions(m, what)
        on_fail = "stop"
        if "on_fail" in m:
            on_fail = m["on_fail"].value if isinstance(m["on_fail"].value, str) else str(m["on_fail"].value)
        return Step(
            name=name,
            tool=self.string(m, "tool", what),
            args=self.sources(m, "args", what),
            arg_spans=tuple((k, m["args"].key_span(k)) for k in m["args"].value)
            if "args" in m and isinstance(m["args"].value, dict)
            else (),
            bind=self.string(m, "bind", what),
            guidance=guidance,
            resources=tuple(resources_list),
            template=self.sources(m, "template", what),
            acknowledge=tuple(acks),
            span=y.span,
            tool_span=m["tool"].span if "tool" in m else y.span,
            guidance_span=m["guidance"].span if "guidance" in m else y.span,
            when=when,
            on_fail=on_fail,  # type: ignore[arg-type]  # validate() refuses anything but stop and skip
            on_fail_span=m["on_fail"].span if "on_fail" in m else y.span,
            confirm=self.confirm(m, what),
        )

    def confirm(self, m: dict[str, Y], what: str) -> Confirm | None:
        """``confirm:``: the question (``message``) and the values shown with it (``show``, data sources)."""
        where, y = f"'confirm' of {what}", m.get("confirm")
        if y is None or (cm := self.mapping(y, "confirm", where)) is None:
            return None
        show = (
            self.source(sy, f"value {i} of 'confirm.show' of {what}")
            for i, sy in enumerate(self.listing(cm, "show", where), 1)
        )
        return Confirm(
            self.string(cm, "message", where, "") or "",
            tuple(s for s in show if s is not None),
            y.span,
            cm["message"].span if "message" in cm else y.span,
        )

    def conditions(self, m: dict[str, Y], what: str) -> tuple[Condition, ...]:
        """``when:``: one condition mapping, or a list of them. Checks the shape; validate() checks the rest."""
        y = m.get("when")
        if y is None:
            return ()
        items = [y] if isinstance(y.value, dict) else y.value if isinstance(y.value, list) else None
        if not items:
            self.err(
                y.span,
                "wrong-type",
                f"'when' of {what} must be a condition or a non-empty list of conditions",
                "write when: {step: BIND, field: PATH, equals: VALUE}",
            )
            return ()
        out = []
        for i, cy in enumerate(items, 1):
            cond = self.condition(cy, f"condition {i} of {what}" if len(items) > 1 else f"the condition of {what}")
            if cond is not None:
                out.append(cond)
        return tuple(out)

    def condition(self, y: Y, what: str) -> Condition | None:
        subject_hint = "a condition's subject is {arg: NAME}, {step: BIND} or {step: BIND, field: PATH}"
        if not isinstance(y.value, dict):
            self.err(
                y.span,
                "wrong-type",
                f"{what} must be a mapping, not {type_name(y.value)}",
                "write {step: BIND, field: PATH, equals: VALUE}",
            )
            return None
        m = y.value
        sound = True
        ops: list[str] = []
        for key in m:
            if key in OPERATORS:
                ops.append(key)
            elif key not in SUBJECT_KEYS and key != "const":  # a constant subject is a bad-source below
                hint = suggest(key, OPERATORS, cutoff=0.5) or f"the operators are {', '.join(OPERATORS)}"
                self.err(y.key_span(key), "unknown-operator", f"unknown operator '{key}' in {what}", hint)
                sound = False
        if len(ops) > 1:
            self.err(
                y.key_span(ops[1]),
                "multiple-operators",
                f"{what} has {len(ops)} operators ({', '.join(ops)}); a condition has exactly one",
                "split it into one condition per operator: when: takes a list, and every condition must hold",
            )
            sound = False
        elif not ops and sound:
            self.err(y.span, "missing-operator", f"{what} has no operator", f"add one of {', '.join(OPERATORS)}")
            sound = False
        kinds = [k for k in ("arg", "step") if k in m]
        if "const" in m:
            self.err(y.key_span("const"), "bad-source", f"the subject of {what} cannot be a constant", subject_hint)
            return None
        if len(kinds) != 1 or ("field" in m and kinds != ["step"]):
            self.err(
                y.span,
                "bad-source",
                f"{what} must have exactly one subject, arg or step (field only with step)",
                subject_hint,
            )
            return None
        ref = m[kinds[0]]
        if not isinstance(ref.value, str):
            self.err(ref.span, "wrong-type", f"'{kinds[0]}' of {what} must be a string, not {type_name(ref.value)}")
            return None
        subject: FromArg | FromStep
        if kinds[0] == "arg":
            subject = FromArg(ref.value, span=ref.span)
        else:
            step = self.from_step(m, ref, what)
            if step is None:
                return None
            subject = step
        if not sound:
            return None
        op = ops[0]
        self.same_in_1_2(m[op], f"'{op}' in {what}")
        spans = tuple(v.span for v in m[op].value) if isinstance(m[op].value, list) else (m[op].span,)
        return Condition(subject, op, m[op].plain(), span=y.key_span(op), operand_spans=spans)


def parse(data: bytes | str, file: str, *, tools_from_server: bool = False) -> tuple[Workflow | None, list[Diagnostic]]:
    """Parse one workflow file's bytes. Returns the model (when its shape is sound) and every diagnostic.
    ``tools_from_server``: the steps' tools come from a server (see :func:`~projector.validate.validate`)."""
    if isinstance(data, bytes):
        text, diags = decode(data, file)
        if text is None:
            return None, diags
    else:
        text = normalize(data)
    reader = Reader(text, file)
    doc = reader.read()
    diags = reader.diags
    if doc is None:  # every syntax error ends the reading with None
        return None, diags
    wf, found = _check(doc, file, tools_from_server)
    return wf, diags + _hide_followers(doc, file, tools_from_server, found)


def _check(doc: Y, file: str, tools_from_server: bool) -> tuple[Workflow | None, list[Diagnostic]]:
    """The model of one YAML document, with every problem of its shape and of the format's rules."""
    diags: list[Diagnostic] = []
    wf = _Builder(file, diags).workflow(doc)
    if wf is not None:
        # A workflow file without a sound step has had it said here: 'steps' absent, not a list, empty, or each
        # step not a mapping. validate()'s own "no steps" is for a workflow built in Python.
        missing = {d.span for d in diags if d.code == "missing-key"}
        diags.extend(
            d
            for d in validate(wf, tools_from_server=tools_from_server)
            if not (d.code == "empty-name" and d.span in missing) and d.message != NO_STEPS
        )
    return wf, diags


def _hide_followers(doc: Y, file: str, tools_from_server: bool, diags: list[Diagnostic]) -> list[Diagnostic]:
    """``diags`` without the errors that follow only from a misspelled top-level key: an unknown key that is a near
    miss of an allowed key the workflow does not have (``agruments`` for ``arguments``) leaves that key absent, and
    every use of what it would declare is an error (``undeclared-argument`` for each use of an argument). Those are
    the errors that go away when the file is checked again with the key spelled as meant; each key's are replaced by
    one note at the key (``errors-not-shown``). The ``unknown-key`` error itself stays, with its suggestion. At most
    one extra check per allowed top-level key, and only for a file that has such a key."""
    if not isinstance(doc.value, dict):
        return diags
    claimed: dict[str, str] = {}  # allowed key -> the first unknown key, in document order, that is a near miss
    for key in doc.value:
        if key not in KEYS["workflow"]:
            meant = near_miss(key, "workflow")
            if meant is not None and meant not in doc.value and meant not in claimed:
                claimed[meant] = key
    if not claimed:
        return diags
    hidden: set[int] = set()
    notes: list[Diagnostic] = []
    for meant, typo in claimed.items():
        _wf, again = _check(doc.renamed(typo, meant), file, tools_from_server)
        remain = {(d.span, d.code, d.message) for d in again}
        typo_at = doc.key_span(typo)
        follow = [
            i
            for i, d in enumerate(diags)
            if i not in hidden
            and d.severity == "error"
            and not (d.code == "unknown-key" and d.span == typo_at)
            and (d.span, d.code, d.message) not in remain
        ]
        if follow:
            hidden.update(follow)
            n = len(follow)
            notes.append(
                Diagnostic(
                    typo_at,
                    "note",
                    "errors-not-shown",
                    f"{plural(n, 'error')} that follow{'s' if n == 1 else ''} from '{meant}' being "
                    f"absent {'is' if n == 1 else 'are'} not shown",
                    f"rename '{typo}' to '{meant}': they are checked then",
                )
            )
    return [d for i, d in enumerate(diags) if i not in hidden] + notes
