"""What a step's result is: one meaning for a tool's result on every server, framework and gateway.

A tool that declares no output schema returns text. MCP servers send it in one of two ways: only as text content (a
low-level server, or ``structured_output=False``), or also as structured content that wraps it, ``{"result":
text}``, under an output schema the SDK generates for a ``-> str`` function (``MCPServer`` and FastMCP both do).
The two must read the same, or one ``when:`` means two things on two servers. The rule, :func:`text_value`:

    **A text result is read as JSON when the whole text is JSON, and is the text itself otherwise.**

So the text ``[]`` is the empty list, ``42`` the number, ``true`` the boolean, ``{"id": 7}`` an object with the
field ``id``, and ``no rows`` the string ``no rows``, whichever way the server sent it. "JSON" is bounded JSON
(:func:`projector.bounded.loads`: no ``NaN``, no number too large to be finite such as ``1e999``, nesting up to 64
levels, integers up to 64 digits, no key twice); a text past those bounds is the text itself, so ``-1e999`` is the
string ``-1e999``, never a number below every bound (a prompt argument refuses it too).

:func:`returns_text` is the one test of "this tool returns text" (no output schema, or the SDKs' wrapper of a
string), which the build reads (``unstructured-result``, the gate hints, the conditions that can never hold or never
fail under this rule, the SKILL.md's sentence); :func:`saved_value` is the value a server-side run saves for a
step, which the runner (:func:`projector.server.workflow.tool_result_value`) calls with the parts of a
``CallToolResult``. Pure; nothing here imports ``mcp``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from . import bounded
from .model import Tool
from .toolschema import field_schema, json_types, properties, wraps_result

# How the SKILL.md states the rule to the model (projector.render), after "Save the result as `BIND`." on a step whose
# text result a later step tests or reads a field of; the docs (projector.docs) say it too.
TEXT_STEP = (
    "The tool returns text: read it as JSON when the whole text is JSON (`[]` is an empty list, `42` a "
    "number, `true` a boolean, not a string), and as the text itself otherwise."
)


def text_value(text: str) -> Any:
    """The value of a text result: the JSON value when the whole text is (bounded) JSON, else the text itself."""
    try:
        return bounded.loads(text)
    except bounded.BadJSON:
        return text


def is_text_schema(output_schema: Any) -> bool:
    """Whether an output schema says "text": there is none, or it is only the SDKs' ``{"result": string}``
    envelope, which ``MCPServer`` and FastMCP generate for a function that returns ``str``."""
    if output_schema is None:
        return True
    return wraps_result(output_schema) and json_types(properties(output_schema)["result"]) == {"string"}


def returns_text(tool: Tool | None) -> bool:
    """Whether ``tool`` returns text (:func:`is_text_schema` of its output schema). False for an unknown tool."""
    return tool is not None and is_text_schema(tool.output_schema)


def saved_schema(tool: Tool | None, path: Sequence[str | int] = ()) -> dict[str, Any] | None:
    """The schema of what a run saves for a call of ``tool`` (its output schema, inside the SDKs' ``{"result": x}``
    envelope), or of the field at ``path`` in it: None when that is not known before a run (an unknown tool, a
    tool that returns text, a path the schema does not declare). A declared output schema is the server's promise
    of every result (the SDKs validate their structured content against it)."""
    if tool is None or returns_text(tool) or not isinstance(tool.output_schema, dict):
        return None
    schema = tool.output_schema
    inner = properties(schema)["result"] if wraps_result(schema) else schema
    return field_schema(inner, path, schema)


def _finite(value: Any) -> bool:
    """Whether no number in ``value`` (parsed JSON) is infinite or NaN."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, float) and not math.isfinite(node):
            return False
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return True


def saved_value(structured: Any, texts: Sequence[str], others: Sequence[str], output_schema: Any) -> Any:
    """The value a step saves from a tool's result: ``structured`` content, unwrapped from the SDKs' ``{"result":
    x}`` envelope (a wrapped text read by :func:`text_value`); without structured content, the one text content by
    :func:`text_value`; for several contents, or content that is not text, a list of each text's value followed
    by ``"<KIND content>"`` for each of the ``others`` (their types). Structured content holding a number that is
    not finite (``1e999`` in the server's JSON reads as infinity) is not used: the text content is read instead."""
    if structured is not None and not _finite(structured):
        structured = None  # JSON's 1e999 read as infinity: no number; the text content says what the tool sent
        if not texts and not others:
            return "<structured content with a number too large to read>"
    if structured is not None:
        if isinstance(structured, dict) and set(structured) == {"result"} and wraps_result(output_schema):
            inner = structured["result"]
            return text_value(inner) if isinstance(inner, str) and is_text_schema(output_schema) else inner
        return structured
    if len(texts) == 1 and not others:
        return text_value(texts[0])
    return [text_value(t) for t in texts] + [f"<{kind} content>" for kind in others]
