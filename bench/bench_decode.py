"""Decode cost of the block protocol.

Prints (a) a ~200 KB structured block streamed in 1-, 8- and 64-byte chunks, the decoder
asked for partials after every chunk, against one ``json.loads`` of the same data, and the
same JSON streamed as native tool-call arguments; (b) the cost per KB as the block grows from
50 KB to 800 KB (flat means linear); (c) the time from a block's first bytes to its first
partial; (d) recovery: the share of damaged but recoverable streams decoded to exactly the
intended arguments, the share of ambiguous ones rejected, and the share decoding identically
byte by byte and whole; (e) linear to the caps: a text answer, a structured block and native
tool-call arguments of 50 KB to 64 MB streamed in 8 KB pieces (partials after every piece),
each size's median time, its time per MB, the fitted log-log slope per kind, and the peak
memory the decoder allocates (``tracemalloc``, the pieces it keeps included) against the
body's size. Then the targets and whether each holds: at most 20x one ``json.loads`` at
64-byte chunks, no stretch longer than 8 KB without a partial, a growth slope of 1.0 +/- 0.1
(b) and of at most 1.1 up to 64 MB (e), and a peak of at most 3x the body (e). Timings are CPU
time of this process (``time.process_time``): in (a)-(c) the best of repeated runs, in (e) the
median of three (the machine may be loaded: compare ratios within one run). In (e) each piece
is cut from the answer as it is fed (in the cache, as a piece read from the network), and
counts in the decoder's memory.

Run: ``.venv/bin/python bench/bench_decode.py`` (``--quick``: (e) up to 16 MB only)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from auwgent.runtime.protocol import BlocksCodec, NativeCodec
from auwgent.runtime.protocol.contract import (
    CallableSpec,
    Contract,
    DecodeEvent,
    FinalEvent,
    PartialEvent,
    RejectedEvent,
)
from auwgent.runtime.providers.base import TextDelta, ToolCallDelta

ITEM = {
    "kind": "object",
    "fields": [
        {"name": n, "type": {"kind": t}, "optional": False, "description": None}
        for n, t in (("sku", "string"), ("qty", "number"), ("note", "string"))
    ],
}
REPORT = {
    "kind": "object",
    "fields": [
        {"name": "title", "type": {"kind": "string"}, "optional": False, "description": None},
        {
            "name": "items",
            "type": {"kind": "array", "items": {"kind": "ref", "name": "Item"}},
            "optional": False,
            "description": None,
        },
    ],
}
CONTRACT = Contract(
    agent="Bench",
    callables=(
        CallableSpec("tool", "noop", "", (), {"kind": "string"}),
        CallableSpec("tool", "save", "", tuple(REPORT["fields"]), {"kind": "string"}),
    ),
    intents=(),
    output={"kind": "ref", "name": "Report"},
    types={"Item": ITEM, "Report": REPORT},
)


def payload(size: int) -> str:
    items: list[dict[str, Any]] = []
    text = ""
    while len(text) < size:
        items.extend(
            {"sku": f"sku-{i}", "qty": i, "note": "restock soon " * (i % 4)}
            for i in range(len(items), len(items) + 200)
        )
        text = json.dumps({"title": "inventory", "items": items})
    return text


def stream(body: str, chunk: int) -> tuple[float, int, float, int]:
    """Seconds to decode, partial count, seconds to the first partial, and the longest stretch
    of the stream (in characters) without a partial: before the first, between two, or after
    the last."""
    text = f"[schema: Report]\n{body}\n[/schema]\n"
    chunks = [text[i : i + chunk] for i in range(0, len(text), chunk)]
    decoder = BlocksCodec().decoder(CONTRACT)
    partials, first = 0, 0.0
    finals: list[DecodeEvent] = []
    fed = last = stretch = 0
    start = time.process_time()
    for piece in chunks:
        fed += len(piece)
        for event in decoder.feed(TextDelta(piece)):
            if isinstance(event, PartialEvent):
                if partials == 0:
                    first = time.process_time() - start
                partials += 1
                stretch, last = max(stretch, fed - last), fed
            else:
                finals.append(event)
    finals += decoder.close()
    elapsed = time.process_time() - start
    assert isinstance(finals[-1], FinalEvent)
    assert finals[-1].payload["response"]["title"] == "inventory"
    return elapsed, partials, first, max(stretch, len(text) - last)


def native(body: str, chunk: int) -> tuple[float, int, float, int]:
    """``stream`` for the same JSON as a native tool call's argument fragments."""
    decoder = NativeCodec().decoder(CONTRACT)
    partials, fed = 0, 0
    last = stretch = 0
    start = time.process_time()
    events = decoder.feed(ToolCallDelta(0, "call_1", "tool__save", ""))
    for i in range(0, len(body), chunk):
        fed += len(body[i : i + chunk])
        for event in decoder.feed(ToolCallDelta(0, None, None, body[i : i + chunk])):
            if isinstance(event, PartialEvent):
                partials += 1
                stretch, last = max(stretch, fed - last), fed
    events += decoder.close()
    elapsed = time.process_time() - start
    assert isinstance(events[-1], FinalEvent)
    assert events[-1].payload["args"]["title"] == "inventory"
    return elapsed, partials, 0.0, max(stretch, len(body) - last)


def best(fn: Any, repeat: int = 3) -> Any:
    return min((fn() for _ in range(repeat)), key=lambda r: r[0] if isinstance(r, tuple) else r)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="(e) up to 16 MB only")
    parser.add_argument("--caps", type=int, help=argparse.SUPPRESS)  # (e) alone, in a child
    args = parser.parse_args()
    if args.caps:
        print(json.dumps(to_the_caps(args.caps)))
        return
    quick = args.quick
    body = payload(200_000)
    loads = best(lambda: _timed(lambda: json.loads(body)), 50)
    print(f"(a) {len(body) / 1000:.0f} KB structured block; one json.loads = {loads * 1e3:.2f} ms")
    ratios: dict[str, float] = {}
    gaps: list[int] = []
    rows = [(f"{c:>2}-byte chunks", c, stream) for c in (1, 8, 64)]
    rows.append(("native, 64-byte", 64, native))
    for label, chunk, run in rows:
        repeat = {1: 2, 8: 5}.get(chunk, 15)  # each row sampled for about as long
        elapsed, partials, _, gap = best(lambda c=chunk, r=run: r(body, c), repeat)
        ratios[label] = elapsed / loads
        gaps.append(gap)
        print(
            f"    {label}: {elapsed * 1e3:8.1f} ms  ({elapsed / loads:6.1f}x json.loads)"
            f"  {len(body) // chunk + 1:>7} chunks, {partials} partials, longest stretch"
            f" without one {gap / 1000:.1f} KB"
        )
    print("(b) growth, 8-byte chunks (per-KB cost should stay flat; slope 1.0 is linear):")
    points = []
    sizes = (50_000, 100_000, 200_000, 400_000, 800_000)
    datas = {size: payload(size) for size in sizes}
    runs: dict[int, list[tuple[float, int, float, int]]] = {size: [] for size in sizes}
    # Interleaved rounds, every size in each (small ones several times), the best kept: the
    # machine's slow spells then fall on all sizes alike instead of bending the slope.
    for _ in range(7):
        for size in sizes:
            runs[size] += [stream(datas[size], 8) for _ in range(max(1, 400_000 // size))]
    for size in sizes:
        data = datas[size]
        elapsed, partials, _, gap = min(runs[size], key=lambda r: r[0])
        points.append((len(data), elapsed))
        print(
            f"    {len(data) / 1000:6.0f} KB: {elapsed * 1e3:8.1f} ms"
            f"  {elapsed * 1e6 / (len(data) / 1000):7.1f} us/KB  {partials} partials,"
            f" longest stretch without one {gap / 1000:.1f} KB"
        )
    slope = _slope(points)
    print(f"    log-log slope of time against size: {slope:.2f}")
    small = payload(2000)
    first = min(stream(small, 16)[2] for _ in range(20))
    print(f"(c) time to first partial: {first * 1e6:.1f} us")
    recovery()
    largest = 16 << 20 if quick else 64 << 20
    print("(e) with the C library's default heap (fresh memory from the kernel for large bodies):")
    _caps_child(largest, {})
    print("(e) with a heap the C library keeps (the decoder's own work, every size alike):")
    caps = _caps_child(largest, WARM_HEAP)
    worst = max(ratios["64-byte chunks"], ratios["native, 64-byte"])
    print("targets:")
    _target("at most 20x one json.loads at 64-byte chunks", f"{worst:.1f}x", worst <= 20)
    _target(
        "no stretch over 8 KB without a partial", f"{max(gaps) / 1000:.1f} KB", max(gaps) <= 8192
    )
    _target("growth linear, slope 1.0 +/- 0.1", f"{slope:.2f}", abs(slope - 1.0) <= 0.1)
    steepest = max(slope for slope, _ in caps.values())
    _target("linear to the caps (e), every slope at most 1.1", f"{steepest:.2f}", steepest <= 1.1)
    most = max(peak for _, peak in caps.values())
    _target("peak memory at most 3x the body (e)", f"{most:.1f}x", most <= 3.0)


# -- (e) linear to the caps ---------------------------------------------------------------------

PIECE = 8192
CAP_SIZES = (50_000, 200_000, 800_000, 4 << 20, 16 << 20, 64 << 20)


def big_text(size: int) -> str:
    line = "The quick brown fox jumps over the lazy dog, again and again. "
    return (line * (size // len(line) + 1))[:size]


def big_json(size: int) -> str:
    """The inventory report of ``payload`` at about ``size`` characters, made in one pass."""
    item = json.dumps({"sku": "sku-0", "qty": 0, "note": "restock soon restock soon "})
    count = max(1, size // (len(item) + 2))
    items = ", ".join(
        json.dumps({"sku": f"sku-{i}", "qty": i, "note": "restock soon " * (i % 4)})
        for i in range(count)
    )
    return '{"title": "inventory", "items": [' + items + "]}"


# Each piece is cut from the answer as it is fed (a copy, in the CPU's cache as a piece read
# from the network is), so the pieces the decoder keeps count in its memory.


def _decode_blocks(text: str, contract: Contract) -> Callable[[], int]:
    def run() -> int:
        decoder = BlocksCodec().decoder(contract)
        partials = 0
        for i in range(0, len(text), PIECE):
            partials += len(decoder.feed(TextDelta(text[i : i + PIECE])))
        decoder.close()
        return partials

    return run


def _decode_arguments(body: str) -> Callable[[], int]:
    def run() -> int:
        decoder = NativeCodec().decoder(CONTRACT)
        partials = len(decoder.feed(ToolCallDelta(0, "call_1", "tool__save", "")))
        for i in range(0, len(body), PIECE):
            partials += len(decoder.feed(ToolCallDelta(0, None, None, body[i : i + PIECE])))
        decoder.close()
        return partials

    return run


TEXT_CONTRACT = Contract(agent="Bench", callables=(), intents=(), output={"kind": "text"}, types={})
KINDS: dict[str, Callable[[int], tuple[int, Callable[[], int]]]] = {
    "text": lambda n: (
        n,
        _decode_blocks(f"[response_text]\n{big_text(n)}\n[/response_text]", TEXT_CONTRACT),
    ),
    "structured": lambda n: (
        n,
        _decode_blocks(f"[schema: Report]\n{big_json(n)}\n[/schema]", CONTRACT),
    ),
    "native arguments": lambda n: (n, _decode_arguments(big_json(n))),
}


def _peak(run: Callable[[], int]) -> int:
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def to_the_caps(largest: int) -> dict[str, tuple[float, float]]:
    """(e): per kind, the slope of time against size and the peak memory over the body."""
    print(
        f"    to the caps, {PIECE // 1024} KB pieces, median of 3 (bodies over"
        " 1 MB are refused by the final read, as documented, but still streamed):"
    )
    sizes = [size for size in CAP_SIZES if size <= largest]
    out: dict[str, tuple[float, float]] = {}
    for kind, make in KINDS.items():
        points: list[tuple[int, float]] = []
        peak = 0.0
        for size in sizes:
            n, run = make(size)
            loops = max(1, (8 << 20) // size)  # small bodies timed over several decodes
            times = sorted(
                _timed(lambda r=run, k=loops: [r() for _ in range(k)]) / loops for _ in range(3)
            )
            points.append((n, times[1]))
            if size == sizes[-1]:
                peak = _peak(run) / n
            partials = run()
            print(
                f"    {kind:>16} {n / 1e6:7.2f} MB: {times[1] * 1e3:9.1f} ms"
                f"  {times[1] / (n / 1e6) * 1e3:7.1f} ms/MB  {partials} events"
            )
            del run
        slope = _slope(points)
        out[kind] = (slope, peak)
        large = [(n, t) for n, t in points if n >= 4 << 20]  # bodies larger than the caches
        tail = f" ({_slope(large):.2f} from 4 MB on)" if len(large) > 1 else ""
        print(
            f"    {kind:>16}: log-log slope {slope:.2f}{tail}; peak memory at"
            f" {sizes[-1] / 1e6:.0f} MB {peak:.2f}x the body"
        )
        sys.stdout.flush()
    return out


# glibc's tunables (ignored elsewhere): keep freed memory in the heap and serve large blocks
# from it too, so a large body is decoded in memory already touched, as a small one is.
WARM_HEAP = {
    "MALLOC_MMAP_THRESHOLD_": str(1 << 30),
    "MALLOC_TRIM_THRESHOLD_": str(1 << 32),
    "MALLOC_TOP_PAD_": str(1 << 28),
}


def _caps_child(largest: int, env: dict[str, str]) -> dict[str, tuple[float, float]]:
    """(e) in a fresh interpreter with ``env`` added; prints its table, returns its results.

    With the default heap, glibc gives a large freed block back to the kernel and takes fresh
    pages for the next, which the kernel zeroes on first touch: a cost per byte (so still
    linear) that small bodies, decoded again and again in the same memory, do not pay, and that
    bends the slope measured across sizes. The warm heap measures every size alike.
    """
    out = subprocess.run(
        [sys.executable, __file__, "--caps", str(largest)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    print("\n".join(out[:-1]))
    return {kind: (slope, peak) for kind, (slope, peak) in json.loads(out[-1]).items()}


def _target(what: str, measured: str, holds: bool) -> None:
    print(f"    {what}: {measured}  {'holds' if holds else 'DOES NOT HOLD'}")


CALL = CallableSpec(
    "tool",
    "notify",
    "",
    tuple(
        {"name": n, "type": {"kind": t}, "optional": True, "description": None}
        for n, t in (("contact", "string"), ("url", "string"), ("count", "number"))
    ),
    {"kind": "boolean"},
)
CALLS = Contract(agent="R", callables=(CALL,), intents=(), output={"kind": "text"}, types={})
ARGS: list[dict[str, Any]] = [
    {"contact": "alerts+ops@example.org", "count": 3},
    {"contact": "Ama Mensah", "url": "https://api.example.com/items/1?x=2"},
    {"contact": "region: Tarkwa case 2", "count": 0.5},
]


def _bodies(args: dict[str, Any]) -> list[str]:
    lines = "\n".join(f"{k}: {v}" for k, v in args.items())
    return [
        lines,
        "\n".join(f"   {k} = {v}" for k, v in args.items()),
        json.dumps(args),
        "{" + ", ".join(f"{k}: '{v}'" for k, v in args.items()) + "}",
        "```json\n" + json.dumps(args, indent=2) + "\n```",
    ]


def _damaged(body: str) -> list[str]:
    clean = f"[tool_call: notify]\n{body}\n[/tool_call]\n"
    return [
        clean,
        f"[tool_call: notify\n{body}\n[/tool_call]\n",  # header missing `]`
        f"[tool_call: notify]\n{body}\n",  # closer missing at the end
        f"[tool_call: notify]\n{body}\n[/tool]\n",  # short closer
        f"Sure.\n  [tool_call: notify]\n{body}\n[/tool_call]",  # commentary, indent
        clean.replace("\n", "\r\n"),  # CRLF
    ]


def _settled(text: str, chunks: list[str]) -> list[Any]:
    decoder = BlocksCodec().decoder(CALLS)
    events: list[DecodeEvent] = []
    for piece in chunks:
        events += decoder.feed(TextDelta(piece))
    events += decoder.close()
    return [e for e in events if not isinstance(e, PartialEvent)]


def recovery() -> None:
    exact = total = same = 0
    for args in ARGS:
        for body in _bodies(args):
            for text in _damaged(body):
                whole = _settled(text, [text])
                total += 1
                exact += (
                    len(whole) == 1
                    and isinstance(whole[0], FinalEvent)
                    and (whole[0].payload["args"] == args)
                )
                same += whole == _settled(text, list(text))
    ambiguous = [
        "[tool_call: notify]\ncontact: a\ncontact: b\n[/tool_call]",
        '[tool_call: notify]\n{"count": 1, "count": 2}\n[/tool_call]',
        "[tool_call: notify]\ncount: 1\ncount = 3\n[/tool_call]",
    ]
    rejected = sum(1 for text in ambiguous if isinstance(_settled(text, [text])[0], RejectedEvent))
    print(
        f"(d) recovered exactly: {exact}/{total}; ambiguous rejected: {rejected}/"
        f"{len(ambiguous)}; byte-by-byte identical to whole: {same}/{total}"
    )


def _slope(points: list[tuple[int, float]]) -> float:
    """The least-squares slope of log(time) against log(size)."""
    xs = [math.log(size) for size, _ in points]
    ys = [math.log(seconds) for _, seconds in points]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )


def _timed(fn: Any) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


if __name__ == "__main__":
    main()
