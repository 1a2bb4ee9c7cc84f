"""Cost of the SSE parser per megabyte, as one event grows from 1 KB to 8 MB.

The same number of bytes goes through ``iter_sse`` at each event size, delivered in 16 KB
network pieces (as a socket read hands them over) through an ``httpx.MockTransport``. The
parser is linear in the bytes when the time per MB stays flat as events grow: the last column
divides each size's time per MB by the one of 64 KB events, measured in the same run. (Small
events cost more per MB for another reason: each one is decoded and handed out on its own.
A parser that re-scans its buffer on every piece grows with the event size instead: 50 MB in
one event once took 30 s.)

Run: ``.venv/bin/python bench/bench_sse.py`` (``--quick`` for a smaller volume).
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import AsyncIterator

import httpx

from auwgent.runtime.providers.http import Call, Limits, iter_sse

PIECE = 16 * 1024
SIZES = (1024, 8 * 1024, 64 * 1024, 1024 * 1024, 8 * 1024 * 1024)
BASELINE = 64 * 1024


def body(event_size: int, total: int) -> bytes:
    """Events of ``event_size`` bytes of data each, ``total`` bytes in all."""
    event = b"data: " + b"x" * (event_size - 8) + b"\n\n"
    return event * max(1, total // len(event))


async def parse(data: bytes) -> float:
    """Seconds for ``iter_sse`` to read ``data``, best of three."""

    async def pieces() -> AsyncIterator[bytes]:
        for start in range(0, len(data), PIECE):
            yield data[start : start + PIECE]

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=pieces())

    limits = Limits(event_bytes=len(data) + 1, response_bytes=len(data) + 1)
    best = float("inf")
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        for _ in range(3):
            async with client.stream("GET", "http://bench.test/") as response:
                started = time.perf_counter()
                async for _payload in iter_sse(response, Call("bench", limits=limits)):
                    pass
                best = min(best, time.perf_counter() - started)
    return best


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="16 MB per size instead of 64 MB")
    args = parser.parse_args()
    total = (16 if args.quick else 64) * 1024 * 1024
    per_mb: dict[int, float] = {}
    for size in SIZES:
        data = body(size, total)
        per_mb[size] = await parse(data) / (len(data) / 2**20)
    base = per_mb[BASELINE]
    print(f"iter_sse, {total // 2**20} MB per event size, {PIECE // 1024} KB network pieces\n")
    print(f"  {'event size':>12}  {'ms per MB':>10}  {'vs 64 KB events':>16}")
    for size, cost in per_mb.items():
        label = f"{size // 1024} KB" if size < 2**20 else f"{size // 2**20} MB"
        print(f"  {label:>12}  {cost * 1000:>10.2f}  {cost / base:>15.2f}x")
    largest = per_mb[SIZES[-1]] / base
    print(f"\n8 MB events / 64 KB events, time per MB: {largest:.2f}x (about 1x means linear)")


if __name__ == "__main__":
    asyncio.run(main())
