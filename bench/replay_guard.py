"""The in-memory replay guard's cost per claim, by how many claims it holds: ``.venv/bin/python bench/replay_guard.py``.

Each yes claims its token on the event loop (:class:`projector.server.replay.MemoryGuard`). A claim is a dict
lookup and an insert, and expired claims are dropped from the front, each once, so the cost should not grow with the
claims held (before, each yes scanned every claim of the day: 0.13 ms at 5,000 claims, 1.1 ms at 40,000). Prints the
median of several rounds of 1,000 claims, in microseconds per claim, for each size.
"""

from __future__ import annotations

import statistics
import time

import anyio

from projector.server.replay import MemoryGuard

SIZES = (0, 5_000, 40_000, 200_000)
ROUNDS = 7
CLAIMS = 1_000


async def per_claim(held: int) -> float:
    guard = MemoryGuard()
    for i in range(held):
        await guard.claim(f"held-{i:026d}")
    rounds = []
    for r in range(ROUNDS):
        start = time.perf_counter()
        for i in range(CLAIMS):
            await guard.claim(f"new-{r}-{i:024d}")
        rounds.append((time.perf_counter() - start) / CLAIMS * 1e6)
    return statistics.median(rounds)


async def main() -> None:
    for held in SIZES:
        print(f"{held:>8,} claims held: {await per_claim(held):6.2f} us per claim")


if __name__ == "__main__":
    anyio.run(main)
