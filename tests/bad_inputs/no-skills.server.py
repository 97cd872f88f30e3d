"""A skills server on stdio that declares the skills extension and lists nothing (``no-skills``: ``remote load --all``
refuses an empty listing unless ``--allow-empty`` is given; driven by tests/remote/test_remote_yaml11.py).

    python no-skills.server.py

It answers ``initialize`` (any protocol version), ``skills/list`` with an empty listing and ``ping``; any other
request is "method not found". It ends when the client closes the pipe.
"""

import json
import sys

out = sys.stdout


def send(message: dict) -> None:
    out.write(json.dumps(message) + "\n")
    out.flush()


for line in sys.stdin:
    msg = json.loads(line)
    method, rid = msg.get("method"), msg.get("id")
    if rid is None:
        continue  # a notification
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": msg["params"]["protocolVersion"],
            "capabilities": {"resources": {}, "extensions": {"io.modelcontextprotocol/skills": {}}},
            "serverInfo": {"name": "no-skills", "version": "0"}}})
    elif method == "skills/list":
        send({"jsonrpc": "2.0", "id": rid, "result": {"skills": []}})
    elif method == "ping":
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": f"no {method}"}})
