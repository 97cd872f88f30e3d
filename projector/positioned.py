"""YAML with positions: workflow text composed into values that keep their ``line:col``.

The first of the loader's three parts (:mod:`projector.load` reads the files, this module reads YAML,
:mod:`projector.shape` builds the model). Bytes become text (UTF-8, no NUL, line endings normalized); the text is
composed by PyYAML (libyaml when built in) into :class:`Y` values that keep their parser marks; and what YAML allows
but a workflow must not hold is refused while composing: duplicate keys, anchors and aliases, tags, nesting deeper
than :data:`MAX_DEPTH`, and plain scalars that read oddly. It knows nothing of the workflow format's keys.
"""

from __future__ import annotations

import json
import math
import operator
from typing import Any

import yaml

from .errors import Diagnostic, Span, error, printable_quote
from .yaml12 import MAYBE_TYPED, reads_differently

try:  # libyaml's parser is several times faster; results are identical (tests/test_load.py checks both).
    from yaml import CSafeLoader as _BaseLoader

    HAVE_LIBYAML = True
    _C_LOADER: type = _BaseLoader
except ImportError:  # pragma: no cover - depends on how PyYAML was built
    from yaml import SafeLoader as _BaseLoader  # type: ignore[assignment]

    HAVE_LIBYAML = False
    _C_LOADER = type(None)  # no loader is libyaml's


_RESOLVED: dict[str, str] = {}
_SCALAR_NODE, _SEQUENCE_NODE, _MAPPING_NODE = yaml.ScalarNode, yaml.SequenceNode, yaml.MappingNode


def loader_class(base: type) -> type:
    """``base`` (a safe loader), remembering how plain scalars resolve: the parser asks for every node, and the
    answer depends only on the kind of node and, for a plain scalar, its text (without path resolvers, which a safe
    loader does not have, a quoted scalar is a string and the second implicit flag is never read)."""

    class Loader(base):  # type: ignore[misc,valid-type]
        def resolve(self, kind: Any, value: Any, implicit: Any) -> str:
            if self.yaml_path_resolvers:
                return super().resolve(kind, value, implicit)
            if kind is _SCALAR_NODE:
                if not implicit[0]:
                    return self.DEFAULT_SCALAR_TAG
                tag = _RESOLVED.get(value)
                if tag is None:
                    if len(_RESOLVED) > 100_000:
                        _RESOLVED.clear()
                    tag = _RESOLVED[value] = super().resolve(kind, value, implicit)
                return tag
            if kind is _MAPPING_NODE:
                return self.DEFAULT_MAPPING_TAG
            if kind is _SEQUENCE_NODE:
                return self.DEFAULT_SEQUENCE_TAG
            return super().resolve(kind, value, implicit)

    if not base.yaml_path_resolvers:
        # The parser calls these two for every node, to follow path resolvers; without any they do nothing but cost
        # a Python call each (a tenth of the parse). C callables that ignore what they are given stand in for them.
        Loader.descend_resolver = operator.is_  # (parent, index)
        Loader.ascend_resolver = tuple  # ()
    return Loader


_Loader = loader_class(_BaseLoader)


class Y:
    """A YAML value with its position: dicts map ``str -> Y``, lists hold ``Y``, scalars are plain.

    Positions are kept as the parser's marks and become :class:`Span` objects only when asked for: most values of a
    valid file never need one."""

    __slots__ = ("value", "_file", "_mark", "_key_marks", "odd")

    def __init__(self, value: Any, file: str, mark: Any, key_marks: dict[str, Any] | None = None, odd: Any = None):
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
        value = self.value
        if type(value) in _SCALARS:  # most values: what the loop below would give, without a call per leaf
            return value
        if isinstance(value, dict):
            return {k: v.value if type(v.value) in _SCALARS else v.plain() for k, v in value.items()}
        if isinstance(value, list):
            return [v.value if type(v.value) in _SCALARS else v.plain() for v in value]
        return value


_SCALARS = frozenset({str, int, float, bool, type(None)})


_TYPE_NAMES = {
    dict: "a mapping",
    list: "a list",
    str: "a string",
    bool: "a boolean",
    int: "an integer",
    float: "a number",
    type(None): "null",
}


def type_name(v: Any) -> str:
    return _TYPE_NAMES.get(type(v), type(v).__name__)


class Reader:
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
        try:
            loader = _Loader(self.text)  # PyYAML's own reader checks every character here; libyaml's while parsing
        except yaml.reader.ReaderError as exc:
            self._reader_error(exc, None)
            return None
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
            self.diags.append(
                error(
                    self.span(mark) if mark else Span(self.file, 1, 1),
                    "yaml-syntax",
                    f"invalid YAML: {msg}",
                    syntax_hint(self.text, exc),
                )
            )
            return None
        except yaml.YAMLError as exc:  # ReaderError: a character YAML does not allow
            self._reader_error(exc, loader)
            return None
        finally:
            loader.dispose()
        if node is None:
            self.diags.append(
                error(
                    Span(self.file, 1, 1),
                    "empty-file",
                    "the file holds no YAML document",
                    "a workflow file is one mapping with name, description and steps",
                )
            )
            return None
        return self._convert(node, loader, set() if "*" in self.text else None, 1)

    def _reader_error(self, exc: yaml.YAMLError, loader: Any) -> None:
        mark = getattr(exc, "position", None)
        line, col = _line_col(self.text, _char_offset(self.text, mark, loader)) if isinstance(mark, int) else (1, 1)
        self.diags.append(error(Span(self.file, line, col), "yaml-syntax", f"invalid YAML: {exc}"))

    def _refuse_anchors(self) -> None:
        try:
            for ev in yaml.parse(self.text, Loader=_Loader):
                if isinstance(ev, yaml.AliasEvent):
                    self.diags.append(
                        error(
                            self.span(ev.start_mark),
                            "alias",
                            f"YAML alias *{ev.anchor} is not allowed",
                            "write the value out in full; workflow files refuse anchors and aliases",
                        )
                    )
                elif getattr(ev, "anchor", None):
                    self.diags.append(
                        error(
                            self.span(ev.start_mark),
                            "alias",
                            f"YAML anchor &{ev.anchor} is not allowed",
                            "write the value out in full; workflow files refuse anchors and aliases",
                        )
                    )
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
        self.diags.append(
            error(
                span,
                "too-deep",
                f"the YAML nests deeper than {MAX_DEPTH} levels",
                "a workflow needs a few levels; flatten the value",
            )
        )

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
                self.diags.append(
                    error(
                        self.span(node.start_mark),
                        "bad-number",
                        f"the integer is {len(node.value)} characters long; Python reads integers "
                        f"of at most {MAX_INT_DIGITS} digits",
                        "write it as a string",
                    )
                )
            else:
                self.diags.append(
                    error(
                        self.span(node.start_mark),
                        "yaml-tag",
                        f"{printable_quote(node.value)} is not a valid !!{short}",
                        "remove the tag, or write a value the tag allows",
                    )
                )
            return False, None
        if isinstance(value, float) and not math.isfinite(value):
            self.diags.append(
                error(
                    self.span(node.start_mark),
                    "bad-number",
                    f"{printable_quote(node.value)} is not a finite number; JSON has no NaN or infinity",
                    "write a finite number, or quote the value to make it a string",
                )
            )
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
        # Most nodes are strings. The tag check (_tag_problem) never refuses a string's tag, and _odd reads the tag.
        if node.__class__ is _SCALAR_NODE and node.tag == _STR:
            if seen is not None and not _first_visit(seen, node):
                return Y(None, self.file, node.start_mark)
            text = node.value
            odd = self._odd(node, text) if not node.style and text[:1] in MAYBE_TYPED else None
            return Y(text, self.file, node.start_mark, None, odd)
        return self._convert_node(node, loader, seen, depth)

    def _convert_node(self, node: yaml.Node, loader: Any, seen: set[int] | None, depth: int) -> Y:
        mark = node.start_mark
        if self.tagged:
            problem = self._tag_problem(node, loader)
            if problem:
                self.diags.append(
                    error(self.span(mark), "yaml-tag", problem, "remove the tag; quote a value to make it a string")
                )
                return Y(None, self.file, mark)
        if depth > MAX_DEPTH and not isinstance(node, yaml.ScalarNode):
            self._refuse_depth(mark)
            return Y(None, self.file, mark)
        if seen is not None and not _first_visit(seen, node):  # only when the text can hold aliases
            return Y(None, self.file, mark)
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, loader, seen, depth)
        if isinstance(node, yaml.SequenceNode):
            return Y([self._convert(n, loader, seen, depth + 1) for n in node.value], self.file, mark)
        ok, value = self._scalar_value(node, loader)
        return Y(value, self.file, mark, odd=self._odd(node, value) if ok else None)

    def _mapping(self, node: yaml.MappingNode, loader: Any, seen: set[int] | None, depth: int) -> Y:
        out: dict[str, Y] = {}
        key_marks: dict[str, Any] = {}
        odd_keys: dict[str, tuple[str, Any]] | None = None
        for knode, vnode in node.value:
            if knode.__class__ is _SCALAR_NODE and knode.tag == _STR and knode.value not in key_marks:
                key = knode.value  # what _key gives a string key that is not a duplicate
            elif (key := self._key(knode, loader, key_marks)) is None:
                continue
            out[key] = self._convert(vnode, loader, seen, depth + 1)
            key_marks[key] = knode.start_mark
            # _odd is None unless the key is plain and starts like a YAML 1.1 or 1.2 typed scalar (every key is text)
            if not knode.style and knode.value[:1] in MAYBE_TYPED and (odd := self._odd(knode, key)):
                odd_keys = odd_keys or {}
                odd_keys[key] = odd
        return Y(out, self.file, node.start_mark, key_marks, odd_keys)

    def _key(self, knode: yaml.Node, loader: Any, key_marks: dict[str, Any]) -> str | None:
        """A mapping key's text, or None when the key is refused (a merge key, a tag, not a string, a duplicate of
        a key in ``key_marks``), with the diagnostic already reported."""
        if knode.tag == "tag:yaml.org,2002:merge":
            self.diags.append(
                error(
                    self.span(knode.start_mark),
                    "alias",
                    "YAML merge keys (<<) are not allowed",
                    "write the keys out in full",
                )
            )
            return None
        if self.tagged and (problem := self._tag_problem(knode, loader)):
            self.diags.append(error(self.span(knode.start_mark), "yaml-tag", f"a key: {problem}", "remove the tag"))
            return None
        if isinstance(knode, yaml.ScalarNode):
            ok, key = self._scalar_value(knode, loader)
            if not ok:
                return None
        else:
            key = [] if isinstance(knode, yaml.SequenceNode) else {}
        if not isinstance(key, str):
            self.diags.append(
                error(
                    self.span(knode.start_mark),
                    "wrong-type",
                    f"a key must be a string, not {type_name(key)}",
                    "quote the key",
                )
            )
            return None
        if key in key_marks:
            first = self.span(key_marks[key])
            self.diags.append(
                error(
                    self.span(knode.start_mark),
                    "duplicate-key",
                    f"duplicate key '{key}' (first defined at line {first.line}, column {first.col})",
                    "remove one of the two",
                )
            )
            return None
        return key


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
    lines = text.splitlines()  # as YAML counts lines: after normalize, also at U+0085, U+2028 and U+2029
    line = lines[mark.line] if mark.line < len(lines) else ""
    indent = line[: len(line) - len(line.lstrip(" \t"))]
    problem, context, opened = exc.problem or "", exc.context or "", exc.context_mark
    if "\t" in indent:
        return (
            f"line {mark.line + 1} is indented with a tab: YAML indents with spaces only; replace the tab with spaces"
        )
    if opened is not None and "quoted scalar" in context and ("end of stream" in problem or "document" in problem):
        return (
            f"the quote ({_char(lines, opened)}) at line {opened.line + 1}, column {opened.column + 1} is never "
            'closed: close it where the value ends (inside double quotes write \\" for a quote, inside single '
            "quotes '')"
        )
    if opened is not None and context.startswith("while parsing a flow") and _char(lines, opened) in ("{", "["):
        if mark.line == opened.line and _char(lines, mark) == ":":
            return "a ': ' inside a value starts a mapping in YAML; quote the value that holds it"
        opener = _char(lines, opened)
        return (
            f"the '{opener}' at line {opened.line + 1}, column {opened.column + 1} is not closed, or two of its "
            f"entries have no comma between them: close it with '{'}' if opener == '{' else ']'}', and separate "
            "its entries with commas"
        )
    if problem.startswith("mapping values are not allowed"):
        body = line[len(indent) : mark.column]
        while body.startswith("- "):
            body = body[2:].lstrip(" ")
        key, sep, _ = body.rpartition(": ")
        if not sep:  # the first colon of the line: its key is read as the rest of the value above
            key = body.strip()
            return (
                f"line {mark.line + 1} is indented more than the line above it, so YAML reads '{key}' as part "
                f"of the value above; indent '{key}' as far as the other keys of its mapping"
            )
        value = line[line.index(key + ": ") + len(key) + 2 :]
        value = (value.split(" #", 1)[0]).strip()
        if len(value) > _MAX_QUOTED:
            return f"the value of '{key}' holds ': ', which starts a mapping in YAML; quote the value"
        return (
            f"the value of '{key}' holds ': ', which starts a mapping in YAML; quote the value: "
            f"{key}: {json.dumps(value, ensure_ascii=False)}"
        )
    if any(p in problem for p in _BLOCK_PROBLEMS):
        if mark.column != len(indent):
            if line[: mark.column].rstrip().endswith(("'", '"')):
                return (
                    "a quoted value ends at its closing quote; quote the whole value, or remove what follows the quote"
                )
            return None
        above = next((p for p in reversed(lines[: mark.line]) if p.strip() and not p.lstrip().startswith("#")), None)
        at = mark.column + 1
        if above is not None and (was := len(above) - len(above.lstrip(" ")) + 1) != at:
            return (
                f"check the indentation of line {mark.line + 1}: it starts at column {at}, the line above it at "
                f"column {was}; the keys of one mapping, and the items of one list, start in the same column"
            )
        return (
            f"check the indentation of line {mark.line + 1} against the lines above it: the keys of one mapping, "
            "and the items of one list, start in the same column"
        )
    return None


def _first_visit(seen: set[int], node: yaml.Node) -> bool:
    """False for a node already converted (an alias, reported by _refuse_anchors: never followed, so nothing is
    expanded). One set for the document: every node of the text is converted at most once."""
    if id(node) in seen:
        return False
    seen.add(id(node))
    return True


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


def _char_offset(text: str, position: int, loader: Any) -> int:
    """A reader error's position as an offset in characters: libyaml counts it in UTF-8 bytes, PyYAML's own reader in
    characters."""
    if isinstance(loader, _C_LOADER):
        return len(text.encode("utf-8")[:position].decode("utf-8", "ignore"))
    return position


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
        return None, [
            error(
                Span(file, line, col),
                "nul-byte",
                "the file contains a NUL byte",
                "workflow files are UTF-8 text; is this a binary or UTF-16 file?",
            )
        ]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, col = _byte_line_col(data, exc.start)
        return None, [
            error(
                Span(file, line, col),
                "encoding",
                f"the file is not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start})",
                "save the file as UTF-8",
            )
        ]
    return normalize(text), []


def normalize(text: str) -> str:
    """No byte-order mark; CRLF and lone CR become LF."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text
