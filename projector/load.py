"""Load workflow files (WORKFLOW-FORMAT.md, version 1) into the model, reporting every problem at once.

The YAML is composed into nodes so that every value keeps its ``line:col``. Duplicate keys, anchors and aliases are
refused while composing. The allowed keys of each object come from the JSON Schema shipped as package data, so the
schema that editors complete from and the loader cannot disagree about which keys exist.
"""

from __future__ import annotations

import difflib
import json
import math
import os
from pathlib import Path
from typing import Any

import yaml

from . import bounded
from .errors import Diagnostic, LoadError, Span, error, plural, printable_quote
from .conditions import literal
from .model import Argument, Condition, Const, FromArg, FromStep, Instruction, Source, Step, Tool, Workflow
from .validate import collisions, validate
from .yaml12 import reads_differently

try:  # libyaml's parser is several times faster; results are identical (tests/test_load.py checks both).
    from yaml import CSafeLoader as _BaseLoader

    HAVE_LIBYAML = True
except ImportError:  # pragma: no cover - depends on how PyYAML was built
    from yaml import SafeLoader as _BaseLoader  # type: ignore[assignment]

    HAVE_LIBYAML = False


SCHEMA_PATH = Path(__file__).with_name("schemas") / "workflow.schema.json"


_RESOLVED: dict[tuple[str, tuple[bool, bool]], str] = {}


def loader_class(base: type) -> type:
    """``base`` (a safe loader), remembering how plain scalars resolve: the parser asks for every scalar, and the
    answer depends only on the text (a safe loader has no path resolvers)."""

    class Loader(base):  # type: ignore[misc,valid-type]
        def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
            if kind is not yaml.ScalarNode or self.yaml_path_resolvers:
                return super().resolve(kind, value, implicit)
            key = (value, implicit)
            tag = _RESOLVED.get(key)
            if tag is None:
                if len(_RESOLVED) > 100_000:
                    _RESOLVED.clear()
                tag = _RESOLVED[key] = super().resolve(kind, value, implicit)
            return tag

    return Loader


_Loader = loader_class(_BaseLoader)


def _schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text("utf-8"))


SCHEMA = _schema()
_DEFS = SCHEMA["$defs"]
KEYS = {
    "workflow": tuple(SCHEMA["properties"]),
    "argument": tuple(_DEFS["argument"]["properties"]),
    "instruction": tuple(_DEFS["instruction"]["properties"]),
    "tool": tuple(_DEFS["tool"]["properties"]),
    "step": tuple(_DEFS["step"]["properties"]),
}
REQUIRED = {
    "workflow": tuple(SCHEMA["required"]),
    "argument": tuple(_DEFS["argument"]["required"]),
    "instruction": tuple(_DEFS["instruction"]["required"]),
    "tool": tuple(_DEFS["tool"]["required"]),
    "step": tuple(_DEFS["step"]["required"]),
}
SOURCE_KEYS = ("arg", "step", "field", "const")
SUBJECT_KEYS = ("arg", "step", "field")
OPERATORS = tuple(k for k in _DEFS["condition"]["properties"] if k not in SUBJECT_KEYS)
ROLES = tuple(_DEFS["instruction"]["properties"]["role"]["enum"])
ARG_TYPES = tuple(_DEFS["argument"]["properties"]["type"]["enum"])


class Y:
    """A YAML value with its position: dicts map ``str -> Y``, lists hold ``Y``, scalars are plain.

    Positions are kept as the parser's marks and become :class:`Span` objects only when asked for: most values of a
    valid file never need one."""

    __slots__ = ("value", "_file", "_mark", "_key_marks", "odd")

    def __init__(self, value: Any, file: str, mark: Any, key_marks: dict[str, Any] | None = None,
                 odd: Any = None):
        self.value = value
        self._file = file
        self._mark = mark
        self._key_marks = key_marks
        # A plain scalar that YAML 1.2 reads differently (:func:`projector.yaml12.reads_differently`): its text and
        # the 1.2 value; on a mapping, ``{key: (text, 1.2 value)}`` for such keys. None for everything else.
        self.odd = odd

    @property
    def span(self) -> Span:
        return Span(self._file, self._mark.line + 1, self._mark.column + 1)

    def key_span(self, key: str) -> Span:
        mark = self._key_marks[key] if self._key_marks and key in self._key_marks else self._mark
        return Span(self._file, mark.line + 1, mark.column + 1)

    def renamed(self, old: str, new: str) -> Y:
        """This mapping with the key ``old`` written as ``new``, in the same place and at the same position."""
        assert isinstance(self.value, dict)
        value = {new if k == old else k: v for k, v in self.value.items()}
        marks = {new if k == old else k: m for k, m in (self._key_marks or {}).items()}
        odd = {new if k == old else k: o for k, o in self.odd.items()} if isinstance(self.odd, dict) else self.odd
        return Y(value, self._file, self._mark, marks, odd)

    def plain(self) -> Any:
        if isinstance(self.value, dict):
            return {k: v.plain() for k, v in self.value.items()}
        if isinstance(self.value, list):
            return [v.plain() for v in self.value]
        return self.value


_TYPE_NAMES = {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", int: "an integer",
               float: "a number", type(None): "null"}


def _type_name(v: Any) -> str:
    return _TYPE_NAMES.get(type(v), type(v).__name__)


class _Reader:
    """Turns one YAML text into ``Y`` values, collecting diagnostics instead of stopping at the first one."""

    def __init__(self, text: str, file: str):
        self.file = file
        self.text = text
        self.diags: list[Diagnostic] = []

    def span(self, mark: Any) -> Span:
        return Span(self.file, mark.line + 1, mark.column + 1)

    def read(self) -> Y | None:
        if "&" in self.text or "*" in self.text:  # cheap pre-check; the event scan is exact
            self._refuse_anchors()
        self.tagged = "!" in self.text  # a tag needs a '!': without one, every node has its implicit tag
        self.too_deep = False
        loader = _Loader(self.text)
        try:
            node = loader.get_single_node()
        except RecursionError:  # the pure-Python composer recurses once per level
            self._refuse_depth()
            return None
        except yaml.MarkedYAMLError as exc:
            if self._deeper_than_limit():  # libyaml stops at 1,000 levels with a syntax error; ours comes first
                self._refuse_depth()
                return None
            mark = exc.problem_mark or exc.context_mark
            msg = " ".join(p for p in (exc.context, exc.problem) if p)
            self.diags.append(error(self.span(mark) if mark else Span(self.file, 1, 1), "yaml-syntax",
                                    f"invalid YAML: {msg}", syntax_hint(self.text, exc)))
            return None
        except yaml.YAMLError as exc:  # ReaderError: a character YAML does not allow
            mark = getattr(exc, "position", None)
            line, col = _line_col(self.text, mark) if isinstance(mark, int) else (1, 1)
            self.diags.append(error(Span(self.file, line, col), "yaml-syntax", f"invalid YAML: {exc}"))
            return None
        finally:
            loader.dispose()
        if node is None:
            self.diags.append(error(Span(self.file, 1, 1), "empty-file", "the file holds no YAML document",
                                    "a workflow file is one mapping with name, description and steps"))
            return None
        return self._convert(node, loader, set() if "*" in self.text else None, 1)

    def _refuse_anchors(self) -> None:
        try:
            for ev in yaml.parse(self.text, Loader=_Loader):
                if isinstance(ev, yaml.AliasEvent):
                    self.diags.append(error(self.span(ev.start_mark), "alias",
                                            f"YAML alias *{ev.anchor} is not allowed",
                                            "write the value out in full; workflow files refuse anchors and aliases"))
                elif getattr(ev, "anchor", None):
                    self.diags.append(error(self.span(ev.start_mark), "alias",
                                            f"YAML anchor &{ev.anchor} is not allowed",
                                            "write the value out in full; workflow files refuse anchors and aliases"))
        except yaml.YAMLError:
            pass  # the composer reports syntax errors with their position

    def _deeper_than_limit(self) -> bool:
        """Whether the text nests deeper than :data:`MAX_DEPTH` before its first syntax error. PyYAML's own parser
        streams events without recursion or a nesting limit; libyaml's scans a deep flow collection whole first."""
        self._depth_mark = None
        depth = 0
        try:
            for ev in yaml.parse(self.text, Loader=yaml.SafeLoader):
                if isinstance(ev, yaml.CollectionStartEvent):
                    depth += 1
                    if depth > MAX_DEPTH:
                        self._depth_mark = ev.start_mark
                        return True
                elif isinstance(ev, yaml.CollectionEndEvent):
                    depth -= 1
        except yaml.YAMLError:
            pass
        return False

    def _refuse_depth(self, mark: Any = None) -> None:
        """One ``too-deep`` diagnostic per file, at the first node deeper than :data:`MAX_DEPTH` in document order.
        Without a mark, the parser's events (no recursion) find it."""
        if self.too_deep:
            return
        self.too_deep = True
        if mark is None and self._deeper_than_limit():
            mark = self._depth_mark
        span = self.span(mark) if mark is not None else Span(self.file, 1, 1)
        self.diags.append(error(span, "too-deep", f"the YAML nests deeper than {MAX_DEPTH} levels",
                                "a workflow needs a few levels; flatten the value"))

    def _tag_problem(self, node: yaml.Node, loader: Any) -> str | None:
        """Why an explicit tag on ``node`` is refused, or None when the node has the tag it would have had anyway
        (``!!str 12`` is allowed: it only makes a number a string; ``!!int 12`` changes nothing)."""
        if isinstance(node, yaml.ScalarNode):
            plain = node.style in (None, "")
            implicit = loader.resolve(yaml.ScalarNode, node.value, (plain, not plain))
            if node.tag == implicit:
                return None
            if node.tag not in _JSON_TAGS:
                return f"the tag {node.tag} is not allowed; a workflow holds JSON values (str, int, float, bool, null)"
            return None
        default = _MAP if isinstance(node, yaml.MappingNode) else _SEQ
        if node.tag == default:
            return None
        return f"the tag {node.tag} is not allowed on a {'mapping' if default == _MAP else 'list'}"

    def _scalar_value(self, node: yaml.ScalarNode, loader: Any) -> tuple[bool, Any]:
        """``(True, value)`` or, after reporting why, ``(False, None)``: a tag whose constructor fails, an integer
        over Python's digit limit, or a number that is not finite."""
        try:
            value = _scalar(node, loader)
        except yaml.constructor.ConstructorError as exc:
            self.diags.append(error(self.span(node.start_mark), "yaml-tag", f"invalid YAML value: {exc.problem}"))
            return False, None
        except Exception:  # noqa: BLE001 - PyYAML's constructors raise what their conversions raise
            short = node.tag.rsplit(":", 1)[-1]
            if node.tag == _INT and len(node.value) > MAX_INT_DIGITS:
                self.diags.append(error(self.span(node.start_mark), "bad-number",
                                        f"the integer is {len(node.value)} characters long; Python reads integers "
                                        f"of at most {MAX_INT_DIGITS} digits", "write it as a string"))
            else:
                self.diags.append(error(self.span(node.start_mark), "yaml-tag",
                                        f"{printable_quote(node.value)} is not a valid !!{short}",
                                        "remove the tag, or write a value the tag allows"))
            return False, None
        if isinstance(value, float) and not math.isfinite(value):
            self.diags.append(error(self.span(node.start_mark), "bad-number",
                                    f"{printable_quote(node.value)} is not a finite number; JSON has no NaN or "
                                    "infinity", "write a finite number, or quote the value to make it a string"))
            return False, None
        return True, value

    def _odd(self, node: yaml.ScalarNode, value: Any) -> tuple[str, Any] | None:
        """``(text, YAML 1.2 value)`` when ``node`` is a plain scalar that YAML 1.2 reads other than as ``value``
        (what PyYAML, YAML 1.1, read), else None. An explicit ``!!str`` means the text under both versions."""
        if node.style not in (None, ""):
            return None
        if self.tagged and node.tag == _STR and self.text.startswith("!", node.start_mark.index):
            return None
        differs, value_1_2 = reads_differently(node.value, value)
        return (node.value, value_1_2) if differs else None

    def _convert(self, node: yaml.Node, loader: Any, seen: set[int] | None, depth: int) -> Y:
        mark = node.start_mark
        if self.tagged:
            problem = self._tag_problem(node, loader)
            if problem:
                self.diags.append(error(self.span(mark), "yaml-tag", problem,
                                        "remove the tag; quote a value to make it a string"))
                return Y(None, self.file, mark)
        if depth > MAX_DEPTH and not isinstance(node, yaml.ScalarNode):
            self._refuse_depth(mark)
            return Y(None, self.file, mark)
        if seen is not None:  # only when the text can hold aliases: they bring back a node already built
            if id(node) in seen:  # an alias, reported by _refuse_anchors: never followed, so nothing is expanded
                return Y(None, self.file, mark)
            seen.add(id(node))  # one set for the document: every node of the text is converted at most once
        if isinstance(node, yaml.MappingNode):
            out: dict[str, Y] = {}
            key_marks: dict[str, Any] = {}
            odd_keys: dict[str, tuple[str, Any]] | None = None
            for knode, vnode in node.value:
                if knode.tag == "tag:yaml.org,2002:merge":
                    self.diags.append(error(self.span(knode.start_mark), "alias",
                                            "YAML merge keys (<<) are not allowed", "write the keys out in full"))
                    continue
                if self.tagged and (problem := self._tag_problem(knode, loader)):
                    self.diags.append(error(self.span(knode.start_mark), "yaml-tag", f"a key: {problem}",
                                            "remove the tag"))
                    continue
                if isinstance(knode, yaml.ScalarNode):
                    ok, key = self._scalar_value(knode, loader)
                    if not ok:
                        continue
                else:
                    key = None
                if not isinstance(key, str):
                    self.diags.append(error(self.span(knode.start_mark), "wrong-type",
                                            f"a key must be a string, not {_type_name(key)}", "quote the key"))
                    continue
                if key in out:
                    first = self.span(key_marks[key])
                    self.diags.append(error(self.span(knode.start_mark), "duplicate-key",
                                            f"duplicate key '{key}' (first defined at line {first.line}, column "
                                            f"{first.col})", "remove one of the two"))
                    continue
                out[key] = self._convert(vnode, loader, seen, depth + 1)
                key_marks[key] = knode.start_mark
                if odd := self._odd(knode, key):
                    odd_keys = odd_keys or {}
                    odd_keys[key] = odd
            return Y(out, self.file, mark, key_marks, odd_keys)
        if isinstance(node, yaml.SequenceNode):
            return Y([self._convert(n, loader, seen, depth + 1) for n in node.value], self.file, mark)
        ok, value = self._scalar_value(node, loader)
        return Y(value, self.file, mark, odd=self._odd(node, value) if ok else None)


# What the parsers say (libyaml and PyYAML word it differently) when a line is not where its block expects it.
_BLOCK_PROBLEMS = ("expected <block end>", "did not find expected key", "did not find expected '-' indicator")
_MAX_QUOTED = 100  # a value longer than this is not quoted back in a hint


def _char(lines: list[str], mark: Any) -> str:
    line = lines[mark.line] if mark.line < len(lines) else ""
    return line[mark.column] if mark.column < len(line) else ""


def syntax_hint(text: str, exc: yaml.MarkedYAMLError) -> str | None:
    """What to do about a YAML syntax error of a common cause, or None: a tab in the indentation, an unclosed quote
    or bracket, an unquoted ``: `` in a value, a line indented other than its block. Read from the parser's problem
    (both parsers' wording) and the source line at its position."""
    mark = exc.problem_mark or exc.context_mark
    if mark is None:
        return None
    lines = text.split("\n")
    line = lines[mark.line] if mark.line < len(lines) else ""
    indent = line[: len(line) - len(line.lstrip(" \t"))]
    problem, context, opened = exc.problem or "", exc.context or "", exc.context_mark
    if "\t" in indent:
        return (f"line {mark.line + 1} is indented with a tab: YAML indents with spaces only; replace the tab with "
                "spaces")
    if opened is not None and "quoted scalar" in context and ("end of stream" in problem or "document" in problem):
        return (f"the quote ({_char(lines, opened)}) at line {opened.line + 1}, column {opened.column + 1} is never "
                "closed: close it where the value ends (inside double quotes write \\\" for a quote, inside single "
                "quotes '')")
    if opened is not None and context.startswith("while parsing a flow") and _char(lines, opened) in ("{", "["):
        if mark.line == opened.line and _char(lines, mark) == ":":
            return "a ': ' inside a value starts a mapping in YAML; quote the value that holds it"
        opener = _char(lines, opened)
        return (f"the '{opener}' at line {opened.line + 1}, column {opened.column + 1} is not closed, or two of its "
                f"entries have no comma between them: close it with '{'}' if opener == '{' else ']'}', and separate "
                "its entries with commas")
    if problem.startswith("mapping values are not allowed"):
        body = line[len(indent): mark.column]
        while body.startswith("- "):
            body = body[2:].lstrip(" ")
        key, sep, _ = body.partition(": ")
        if not sep:  # the first colon of the line: its key is read as the rest of the value above
            key = body.strip()
            return (f"line {mark.line + 1} is indented more than the line above it, so YAML reads '{key}' as part "
                    f"of the value above; indent '{key}' as far as the other keys of its mapping")
        value = line[line.index(key + ": ") + len(key) + 2:]
        value = (value.split(" #", 1)[0]).strip()
        if len(value) > _MAX_QUOTED:
            return f"the value of '{key}' holds ': ', which starts a mapping in YAML; quote the value"
        return (f"the value of '{key}' holds ': ', which starts a mapping in YAML; quote the value: "
                f"{key}: {json.dumps(value, ensure_ascii=False)}")
    if any(p in problem for p in _BLOCK_PROBLEMS):
        if mark.column != len(indent):
            if line[: mark.column].rstrip().endswith(("'", '"')):
                return ("a quoted value ends at its closing quote; quote the whole value, or remove what follows "
                        "the quote")
            return None
        above = next((p for p in reversed(lines[: mark.line]) if p.strip() and not p.lstrip().startswith("#")), None)
        at = mark.column + 1
        if above is not None and (was := len(above) - len(above.lstrip(" ")) + 1) != at:
            return (f"check the indentation of line {mark.line + 1}: it starts at column {at}, the line above it at "
                    f"column {was}; the keys of one mapping, and the items of one list, start in the same column")
        return (f"check the indentation of line {mark.line + 1} against the lines above it: the keys of one mapping, "
                "and the items of one list, start in the same column")
    return None


_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_JSON_TAGS = frozenset({_STR, _INT, _FLOAT, "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null"})
# Deeper YAML is refused (``too-deep``) before anything recurses over it: the loader, the renderer's JSON and the
# schema checks all walk values recursively. Real workflows nest a dozen levels; JSON Schemas a few more.
MAX_DEPTH = 100
MAX_INT_DIGITS = 4300  # Python's default limit for int(str) (sys.get_int_max_str_digits)


def _scalar(node: yaml.ScalarNode, loader: Any) -> Any:
    if node.tag == _STR:  # most scalars; exactly what SafeConstructor.construct_yaml_str returns
        return node.value
    value = loader.construct_object(node, deep=True)
    # Timestamps and binary are YAML types with no JSON equivalent: keep the text as written.
    if not isinstance(value, (str, bool, int, float, type(None))):
        return node.value
    return value


def _line_col(text: str, offset: int) -> tuple[int, int]:
    before = text[:offset]
    line = before.count("\n") + 1
    return line, offset - (before.rfind("\n") + 1) + 1


def _byte_line_col(data: bytes, offset: int) -> tuple[int, int]:
    before = data[:offset]
    line = before.count(b"\n") + 1
    return line, offset - (before.rfind(b"\n") + 1) + 1


def decode(data: bytes, file: str) -> tuple[str | None, list[Diagnostic]]:
    """Bytes to text: UTF-8 only (a BOM is allowed), no NUL, CRLF and CR normalized to LF."""
    nul = data.find(b"\x00")
    if nul >= 0:
        line, col = _byte_line_col(data, nul)
        return None, [error(Span(file, line, col), "nul-byte", "the file contains a NUL byte",
                            "workflow files are UTF-8 text; is this a binary or UTF-16 file?")]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, col = _byte_line_col(data, exc.start)
        return None, [error(Span(file, line, col), "encoding",
                            f"the file is not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})",
                            "save the file as UTF-8")]
    return normalize(text), []


def normalize(text: str) -> str:
    """No byte-order mark; CRLF and lone CR become LF."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text


def near_miss(key: str, kind: str) -> str | None:
    """The allowed key of a ``kind`` object (:data:`KEYS`) that the unknown ``key`` is a near miss of, or None."""
    close = difflib.get_close_matches(key, KEYS[kind], n=1, cutoff=0.5)
    return close[0] if close else None


class _Builder:
    """Checks the shape of one workflow document and builds the model from it."""

    def __init__(self, file: str, diags: list[Diagnostic]):
        self.file = file
        self.diags = diags

    def err(self, span: Span, code: str, message: str, hint: str | None = None) -> None:
        self.diags.append(error(span, code, message, hint))

    def mapping(self, y: Y, kind: str, what: str) -> dict[str, Y] | None:
        if not isinstance(y.value, dict):
            self.err(y.span, "wrong-type", f"{what} must be a mapping, not {_type_name(y.value)}")
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
            self.err(y.span, "wrong-type", f"'{key}' of {what} must be a string, not {_type_name(y.value)}", hint)
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
        self.err(span, "ambiguous-scalar",
                 f"{what} is the unquoted {printable_quote(text)}: YAML 1.1 reads it as {literal(value_1_1)}, "
                 f"YAML 1.2 as {literal(value_1_2)}",
                 f"quote it to mean the text: {literal(text)}; or write {alternatives} for {kind}")

    def listing(self, m: dict[str, Y], key: str, what: str) -> list[Y]:
        y = m.get(key)
        if y is None:
            return []
        if not isinstance(y.value, list):
            self.err(y.span, "wrong-type", f"'{key}' of {what} must be a list, not {_type_name(y.value)}")
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
            i for i in (self.instruction(y) for y in self.listing(m, "instructions", "the workflow")) if i)
        tools = tuple(t for t in (self.tool(y) for y in self.listing(m, "tools", "the workflow")) if t)
        steps_y = self.listing(m, "steps", "the workflow")
        if "steps" in m and isinstance(m["steps"].value, list) and not steps_y:
            self.err(m["steps"].span, "missing-key", "the workflow has no steps", "add at least one step")
        steps = tuple(s for s in (self.step(y, i) for i, y in enumerate(steps_y, 1)) if s)
        name_span = m["name"].span if "name" in m else doc.span
        title = self.string(m, "title", "the workflow")
        frontmatter = self.frontmatter(m, doc)
        return Workflow(**frontmatter, name=name or "", description=description or "", arguments=arguments,
                        instructions=instructions, tools=tools, steps=steps, span=name_span,
                        description_span=m["description"].span if "description" in m else doc.span, source=self.file,
                        title=title, title_span=m["title"].span if "title" in m else doc.span)

    def frontmatter(self, m: dict[str, Y], doc: Y) -> dict[str, Any]:
        """The Agent Skills fields the SKILL.md frontmatter carries as given: ``license``, ``compatibility``,
        ``metadata`` (string to string) and the ignored ``allowed-tools``, as :class:`Workflow` keywords. Each value
        must read the same under YAML 1.1 and 1.2, as the frontmatter written from it does."""
        found: dict[str, Any] = {}
        for key, attr in (("license", "license"), ("compatibility", "compatibility"),
                          ("allowed-tools", "allowed_tools")):
            if key in m:
                self.same_in_1_2(m[key], f"'{key}' of the workflow")
                if m[key].odd is None:  # else ambiguous-scalar said it, and wrong-type would say it again
                    found[attr] = self.string(m, key, "the workflow")
                found[f"{attr}_span"] = m[key].span
        y = m.get("metadata")
        if y is None:
            return found
        if not isinstance(y.value, dict):
            self.err(y.span, "wrong-type", f"'metadata' of the workflow must be a mapping of string to string, not "
                     f"{_type_name(y.value)}")
            return found
        self.same_in_1_2(y, "'metadata' of the workflow")
        pairs = []
        for key, value in y.value.items():
            if isinstance(value.value, str):
                pairs.append((key, value.value, y.key_span(key)))
            elif value.odd is None:  # else ambiguous-scalar said it
                hint = "quote the value to make it a string" if isinstance(value.value, (int, float, bool)) else None
                self.err(value.span, "wrong-type", f"'metadata.{key}' of the workflow must be a string, not "
                         f"{_type_name(value.value)}", hint)
        pairs.sort(key=lambda p: p[0])
        found["metadata"] = tuple((k, v) for k, v, _ in pairs)
        found["metadata_spans"] = tuple(s for _, _, s in pairs)
        return found

    def argument(self, y: Y) -> Argument | None:
        m = self.mapping(y, "argument", "an argument")
        if m is None:
            return None
        what = f"argument '{m['name'].value}'" if "name" in m else "an argument"
        required = False
        if "required" in m:
            if isinstance(m["required"].value, bool):
                required = m["required"].value
            else:
                self.err(m["required"].span, "wrong-type",
                         f"'required' of {what} must be true or false, not {_type_name(m['required'].value)}")
        typ = None
        if "type" in m:
            typ = m["type"].value
            if typ not in ARG_TYPES:
                close = difflib.get_close_matches(str(typ), ARG_TYPES, n=1, cutoff=0.5)
                self.err(m["type"].span, "wrong-type", f"'type' of {what} must be one of {', '.join(ARG_TYPES)}",
                         f"did you mean '{close[0]}'?" if close else None)
                typ = None
        return Argument(name=self.string(m, "name", what, "") or "",
                        description=self.string(m, "description", what, "") or "",
                        required=required, type=typ, span=y.span)

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
        what = f"tool '{m['name'].value}'" if "name" in m else "a tool"
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
                                self.err(m[key].value[hint_key].span, "wrong-type",
                                         f"annotation '{hint_key}' of {what} must be true or false")
                else:
                    self.err(m[key].span, "wrong-type", f"'{key}' of {what} must be a mapping, not "
                             f"{_type_name(m[key].value)}")
        return Tool(name=self.string(m, "name", what, "") or "", description=self.string(m, "description", what, "")
                    or "", input_schema=schema, annotations=ann, output_schema=output, span=y.span)

    def sources(self, m: dict[str, Y], key: str, what: str) -> tuple[tuple[str, Source], ...]:
        y = m.get(key)
        if y is None:
            return ()
        if not isinstance(y.value, dict):
            self.err(y.span, "wrong-type", f"'{key}' of {what} must be a mapping, not {_type_name(y.value)}")
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
            self.err(y.span, "bad-source", f"{what} must be a data source, not {_type_name(y.value)}", hint)
            return None
        m = y.value
        for key in m:
            if key not in SOURCE_KEYS:
                close = difflib.get_close_matches(key, SOURCE_KEYS, n=1, cutoff=0.5)
                self.err(y.key_span(key), "unknown-key", f"unknown key '{key}' in {what}",
                         f"did you mean '{close[0]}'?" if close else hint)
                return None
        kinds = [k for k in ("arg", "step", "const") if k in m]
        if len(kinds) != 1 or ("field" in m and kinds != ["step"]):
            self.err(y.span, "bad-source", f"{what} must have exactly one of arg, step or const "
                     "(field only with step)", hint)
            return None
        kind = kinds[0]
        if kind == "const":
            self.same_in_1_2(m["const"], f"the constant of {what}")
            return Const(m["const"].plain(), span=y.span)
        ref = m[kind]
        if not isinstance(ref.value, str):
            self.err(ref.span, "wrong-type", f"'{kind}' of {what} must be a string, not {_type_name(ref.value)}")
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
                        self.err(reason.span, "wrong-type", f"the reason for acknowledging '{code}' must be a "
                                 "non-empty string", "say why the warning does not apply, e.g. which check the "
                                 "tool enforces itself")
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
            if "args" in m and isinstance(m["args"].value, dict) else (),
            bind=self.string(m, "bind", what),
            guidance=guidance,
            resources=tuple(resources_list),
            template=self.sources(m, "template", what),
            acknowledge=tuple(acks),
            span=y.span,
            guidance_span=m["guidance"].span if "guidance" in m else y.span,
            when=when,
            on_fail=on_fail,  # type: ignore[arg-type]  # validate() refuses anything but stop and skip
            on_fail_span=m["on_fail"].span if "on_fail" in m else y.span,
        )

    def conditions(self, m: dict[str, Y], what: str) -> tuple[Condition, ...]:
        """``when:``: one condition mapping, or a list of them. Checks the shape; validate() checks the rest."""
        y = m.get("when")
        if y is None:
            return ()
        items = [y] if isinstance(y.value, dict) else y.value if isinstance(y.value, list) else None
        if not items:
            self.err(y.span, "wrong-type", f"'when' of {what} must be a condition or a non-empty list of conditions",
                     "write when: {step: BIND, field: PATH, equals: VALUE}")
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
            self.err(y.span, "wrong-type", f"{what} must be a mapping, not {_type_name(y.value)}",
                     "write {step: BIND, field: PATH, equals: VALUE}")
            return None
        m = y.value
        sound = True
        ops: list[str] = []
        for key in m:
            if key in OPERATORS:
                ops.append(key)
            elif key not in SUBJECT_KEYS and key != "const":  # a constant subject is a bad-source below
                close = difflib.get_close_matches(key, OPERATORS, n=1, cutoff=0.5)
                hint = (f"did you mean '{close[0]}'?" if close else
                        f"the operators are {', '.join(OPERATORS)}")
                self.err(y.key_span(key), "unknown-operator", f"unknown operator '{key}' in {what}", hint)
                sound = False
        if len(ops) > 1:
            self.err(y.key_span(ops[1]), "multiple-operators",
                     f"{what} has {len(ops)} operators ({', '.join(ops)}); a condition has exactly one",
                     "split it into one condition per operator: when: takes a list, and every condition must hold")
            sound = False
        elif not ops and sound:
            self.err(y.span, "missing-operator", f"{what} has no operator",
                     f"add one of {', '.join(OPERATORS)}")
            sound = False
        kinds = [k for k in ("arg", "step") if k in m]
        if "const" in m:
            self.err(y.key_span("const"), "bad-source", f"the subject of {what} cannot be a constant", subject_hint)
            return None
        if len(kinds) != 1 or ("field" in m and kinds != ["step"]):
            self.err(y.span, "bad-source", f"{what} must have exactly one subject, arg or step (field only with "
                     "step)", subject_hint)
            return None
        ref = m[kinds[0]]
        if not isinstance(ref.value, str):
            self.err(ref.span, "wrong-type", f"'{kinds[0]}' of {what} must be a string, not {_type_name(ref.value)}")
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
        return Condition(subject, op, m[op].plain(), span=y.key_span(op))  # type: ignore[arg-type]


def parse(data: bytes | str, file: str, *, tools_from_server: bool = False
          ) -> tuple[Workflow | None, list[Diagnostic]]:
    """Parse one workflow file's bytes. Returns the model (when its shape is sound) and every diagnostic.
    ``tools_from_server``: the steps' tools come from a server (see :func:`~projector.validate.validate`)."""
    if isinstance(data, bytes):
        text, diags = decode(data, file)
        if text is None:
            return None, diags
    else:
        text = normalize(data)
    reader = _Reader(text, file)
    doc = reader.read()
    diags = reader.diags
    if doc is None or any(d.code == "yaml-syntax" for d in diags):
        return None, diags
    wf, found = _check(doc, file, tools_from_server)
    return wf, diags + _hide_followers(doc, file, tools_from_server, found)


def _check(doc: Y, file: str, tools_from_server: bool) -> tuple[Workflow | None, list[Diagnostic]]:
    """The model of one YAML document, with every problem of its shape and of the format's rules."""
    diags: list[Diagnostic] = []
    wf = _Builder(file, diags).workflow(doc)
    if wf is not None:
        missing = {d.span for d in diags if d.code == "missing-key"}
        diags.extend(d for d in validate(wf, tools_from_server=tools_from_server)
                     if not (d.code in ("empty-name", "missing-key") and d.span in missing))
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
        follow = [i for i, d in enumerate(diags) if i not in hidden and d.severity == "error"
                  and not (d.code == "unknown-key" and d.span == typo_at) and (d.span, d.code, d.message) not in remain]
        if follow:
            hidden.update(follow)
            n = len(follow)
            notes.append(Diagnostic(typo_at, "note", "errors-not-shown",
                                    f"{plural(n, 'error')} that follow{'s' if n == 1 else ''} from '{meant}' being "
                                    f"absent {'is' if n == 1 else 'are'} not shown",
                                    f"rename '{typo}' to '{meant}': they are checked then"))
    return [d for i, d in enumerate(diags) if i not in hidden] + notes


def read_source(path: Path | str, file: str) -> bytes:
    """A workflow file's bytes, read only when it is a regular file inside the scanned folders; :class:`LoadError`
    (``outside-root`` or ``io``) otherwise."""
    if isinstance(path, OutsideRoot):
        raise LoadError(error(Span(file), "outside-root", "the file is a link to a file outside every folder being "
                              "compiled; it was not read",
                              "name the file on the command line to compile it anyway, or copy it into the folder"))
    return read_regular(Path(path), file)


def load_file(path: Path | str, display: str | None = None, *, tools_from_server: bool = False) -> Workflow:
    """Load and validate one workflow file, raising :class:`LoadError` with every problem found."""
    file = display or Path(path).as_posix()
    return load_data(read_source(path, file), file, tools_from_server=tools_from_server)


def load_data(data: bytes, file: str, *, tools_from_server: bool = False) -> Workflow:
    """:func:`load_file` for bytes already read from ``file``."""
    wf, diags = parse(data, file, tools_from_server=tools_from_server)
    if wf is None or any(d.severity == "error" for d in diags):
        raise LoadError(diags)  # with the notes that explain them (errors-not-shown)
    return wf


# A workflow file larger than this is refused before it is read (a 40,000-step workflow is about 6 MB).
MAX_SOURCE_BYTES = 64 * 1024 * 1024


def read_regular(path: Path, file: str) -> bytes:
    """The bytes of ``path``, which must be a regular file of at most :data:`MAX_SOURCE_BYTES`: a FIFO would block
    forever and ``/dev/zero`` would never end, so anything else is an ``io`` error. The read is
    :func:`projector.bounded.read_regular`'s (non-blocking, checked on the open descriptor); the path itself may be a
    link the user made, as any path named on the command line."""
    try:
        return bounded.read_regular(path, MAX_SOURCE_BYTES, follow_links=True)
    except bounded.Unreadable as exc:
        hint = "name workflow files (*.yaml) or folders that hold them" if exc.reason.endswith(
            "not a regular file") else None
        raise LoadError(error(Span(file), "io", f"cannot read the file: {exc.reason}", hint)) from None


WORKFLOW_SUFFIXES = (".yaml", ".yml")


def _walk(folder: Path) -> list[Path]:
    """Workflow files under ``folder``, skipping dot-files and dot-folders without entering them (a
    ``.projector_cache/`` holds thousands of files). Symlinked folders are not followed, as ``Path.rglob``."""
    out: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return out
    for entry in entries:
        if entry.name.startswith("."):
            continue
        child = folder / entry.name
        if entry.is_dir(follow_symlinks=False):
            out.extend(_walk(child))
        elif os.path.splitext(entry.name)[1] in WORKFLOW_SUFFIXES and entry.is_file():
            out.append(child)
    return out


def discover(paths: list[str]) -> list[tuple[Path, str]]:
    """Expand files and folders into workflow files, sorted by POSIX path. Returns ``(path, display name)``.

    A file found in a folder that resolves outside every folder scanned (a symbolic link to ``/etc/passwd``, say)
    is refused (``outside-root``): a pull request could otherwise make CI read, and quote in its diagnostics, any
    file on the machine. A file named on the command line is read wherever it points."""
    found: dict[str, Path] = {}
    named: set[str] = set()
    linked: dict[str, Path] = {}  # symbolic links met while scanning folders, checked once every root is known
    roots: list[Path] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            roots.append(path.resolve())
            for f in _walk(path):  # does not descend into linked folders: only a file itself can be a link
                found[f.as_posix()] = f
                if f.is_symlink():
                    linked[f.as_posix()] = f
        elif path.exists() or path.is_symlink():
            found[path.as_posix()] = path
            named.add(path.as_posix())
        else:
            raise LoadError(error(Span(p), "io", "no such file or folder"))
    for display, f in sorted(linked.items()):
        real = f.resolve()
        if display not in named and not any(real.is_relative_to(root) for root in roots):
            found[display] = OutsideRoot(f)  # refused by load_file, beside every other file's problems
    return [(found[k], k) for k in sorted(found)]


class OutsideRoot(type(Path())):  # type: ignore[misc]
    """A file found in a folder that resolves outside every folder scanned: :func:`load_file` refuses it unread."""


def load_all(paths: list[str], *, tools_from_server: bool = False) -> list[Workflow]:
    """Load every workflow under ``paths``; all problems of all files are raised together."""
    workflows: list[Workflow] = []
    diags: list[Diagnostic] = []
    for path, display in discover(paths):
        try:
            workflows.append(load_file(path, display, tools_from_server=tools_from_server))
        except LoadError as exc:
            diags.extend(exc.diagnostics)
    diags.extend(collisions(workflows))
    if diags:
        raise LoadError(diags)
    return workflows
