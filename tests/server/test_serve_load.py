"""Load: 20 concurrent HTTP clients making 200 requests each, against one `serve --http` process, 0 errors.

Measured on the 2-core CI machine: the server handles about 150-180 requests a second, so this takes 25-45 s; the
bottleneck is the server's per-request work in the SDK (one process, stateless Streamable HTTP), not the client.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter

import anyio
import pytest
from mcp import Client

from .test_serve_skills import MANIFEST, start_http, stop
from .test_http import call
from .test_stdio import FILES


CLIENTS, REQUESTS = 20, 200


@pytest.mark.anyio
async def test_concurrent_http_clients_get_no_errors():
    proc, url = start_http()
    errors: list[str] = []
    done = Counter()
    try:
        async def one(i: int) -> None:
            try:
                async with Client(url, cache=None) as client:
                    while done[i] < REQUESTS:
                        k = done[i] % (len(FILES) + 2)
                        if k == 0:
                            assert (await call(client, "skills/list"))["skills"] == MANIFEST
                        elif k == 1:
                            entry = MANIFEST[i % len(MANIFEST)]
                            assert (await call(client, "skills/get", {"uri": entry["uri"]}))["skill"] == entry
                        else:
                            uri, digest, _ = FILES[k - 2]
                            data = (await client.read_resource(uri)).contents[0].text.encode("utf-8")
                            assert "sha256:" + hashlib.sha256(data).hexdigest() == digest
                        done[i] += 1
            except Exception as exc:  # counted, not raised: the test reports every failure
                errors.append(f"client {i} after {done[i]} requests: {exc!r}")

        start = time.monotonic()
        async with anyio.create_task_group() as tg:
            for i in range(CLIENTS):
                tg.start_soon(one, i)
        elapsed = time.monotonic() - start
    finally:
        stop(proc)
    total = sum(done.values())
    print(f"\n{CLIENTS} clients x {REQUESTS} requests: {total} requests in {elapsed:.1f} s "
          f"({total / elapsed:.0f}/s), {len(errors)} errors")
    assert errors == []
    assert total == CLIENTS * REQUESTS
