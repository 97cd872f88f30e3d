"""A hostile MCP server on stdio that answers with more bytes than a verifying client may buffer
(``response-too-large``; driven by tests/remote/test_client.py).

    python response-too-large.server.py MODE BYTES [PAGES]

- ``list``: the answer to ``skills/list`` is one message of BYTES bytes (an empty listing padded with a long string).
- ``read``: ``skills/list`` lists one skill whose manifest says SKILL.md is 8 bytes; the answer to its
  ``resources/read`` is one message of BYTES bytes.
- ``pages``: every ``skills/list`` page is BYTES bytes of padding and names another page, without end.
- ``tools``: every ``tools/list`` page is one tool of about BYTES bytes (its description padded), another each page;
  after PAGES pages the listing ends (with no PAGES, or 0, it never ends). Driven by tests/remote/test_tools.py.

Each big message is written in 1 MiB pieces, so a client that stops reading stops it; the server ends quietly when
the client closes the pipe. Everything else is answered as a plain handshake-era server answers it.
"""

import hashlib
import json
import os
import sys

MODE, TOTAL = sys.argv[1], int(sys.argv[2])
PAGES = int(sys.argv[3]) if len(sys.argv) > 3 else 0
CAPABILITIES = {"resources": {}, "tools": {}} if MODE == "tools" else {"resources": {}}
URI = "skill://hello-world/SKILL.md"
SKILL = b"12345678"
out = sys.stdout.buffer


def write(data: bytes) -> None:
    try:
        out.write(data)
        out.flush()
    except (BrokenPipeError, ConnectionResetError, OSError):
        os._exit(0)


def send(message: dict) -> None:
    write(json.dumps(message).encode() + b"\n")


def padded(head: bytes, tail: bytes) -> None:
    """One message of TOTAL bytes: ``head``, padding, ``tail``, and the newline."""
    left = TOTAL - len(head) - len(tail) - 1
    write(head)
    piece = b"x" * (1 << 20)
    while left > 0:
        write(piece[:left])
        left -= len(piece)
    write(tail + b"\n")


ENTRY = {"uri": URI, "frontmatter": {"name": "hello-world", "description": "d"},
         "resources": [{"uri": URI, "digest": "sha256:" + hashlib.sha256(SKILL).hexdigest(), "size": len(SKILL)}]}

page = 0
for line in sys.stdin.buffer:
    msg = json.loads(line)
    method, rid = msg.get("method"), msg.get("id")
    if rid is None:
        continue  # a notification
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {"protocolVersion": msg["params"]["protocolVersion"],
                                                       "capabilities": CAPABILITIES,
                                                       "serverInfo": {"name": "hostile", "version": "0"}}})
    elif method == "skills/list" and MODE == "list":
        padded(b'{"jsonrpc": "2.0", "id": %d, "result": {"skills": [], "pad": "' % rid, b'"}}')
    elif method == "skills/list" and MODE == "pages":
        page += 1
        padded(b'{"jsonrpc": "2.0", "id": %d, "result": {"skills": [], "nextCursor": "c%d", "pad": "' % (rid, page),
               b'"}}')
    elif method == "tools/list" and MODE == "tools":
        page += 1
        more = b', "nextCursor": "c%d"' % page if page != PAGES else b""
        padded(b'{"jsonrpc": "2.0", "id": %d, "result": {"tools": [{"name": "t%05d", "inputSchema": {"type": '
               b'"object"}, "description": "' % (rid, page), b'"}]%s}}' % more)
    elif method == "skills/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"skills": [ENTRY]}})
    elif method == "resources/read" and MODE == "read":
        padded(b'{"jsonrpc": "2.0", "id": %d, "result": {"contents": [{"uri": "%s", "mimeType": "text/markdown", '
               b'"text": "' % (rid, URI.encode()), b'"}]}}')
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"no {method}"}})
