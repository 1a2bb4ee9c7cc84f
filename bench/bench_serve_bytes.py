"""SSE bytes per answer through ``auwgent serve``, against the answer's own size.

One ``auwgent serve`` worker (SQLite store) answers from the fake OpenAI server (a real HTTP
server on 127.0.0.1), which streams a text answer of each size in chunks of the given size;
an ``httpx`` client reads each SSE stream to its end, as fast as it can, and counts the bytes
of each kind of event: ``partial`` events, final intents, the ``session`` event. The ratios
divide those bytes by the answer's (UTF-8) size, measured in the same run; the target is the
stream within 3x the answer. The ``session`` event carries the conversation itself (the
answer as the turn's output and again in its intents), so it is shown apart.

Run: ``.venv/bin/python bench/bench_serve_bytes.py`` (``--large`` adds a 4 MB answer).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import httpx
from bench_serve import start_server

from auwgent.testing import FakeOpenAIServer, text

#: (answer size, chunk size) in bytes: small chunks for short answers (a model's token or
#: two), 8 KB chunks for long ones.
CASES = ((2_000, 8), (64 * 1024, 256), (1024 * 1024, 8 * 1024))
LARGE = (4 * 1024 * 1024, 8 * 1024)


def answer_of(size: int) -> str:
    line = "the quick brown fox jumps over the lazy dog, again and again\n"
    return (line * (size // len(line) + 1))[:size].rstrip() + "."


def measure(url: str, answer: str) -> tuple[dict[str, int], int, float]:
    """Bytes per kind of event, the number of partial events, and seconds for one run."""
    sizes = {"partial": 0, "final": 0, "session": 0}
    partials = 0
    started = time.perf_counter()
    with httpx.stream(
        "POST",
        f"{url}/v1/agents/Main/runs",
        json={"input": "Tell me."},
        headers={"content-type": "application/json"},
        timeout=600,
    ) as response:
        assert response.status_code == 200, response.read()
        kind = ""
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line[len("event: ") :]
                kind = name if name in ("partial", "session") else "final"
                partials += name == "partial"
            sizes[kind] += len(line.encode()) + 1
    seconds = time.perf_counter() - started
    return sizes, partials, seconds


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--large", action="store_true", help="add a 4 MB answer")
    args = parser.parse_args(argv)
    cases = CASES + ((LARGE,) if args.large else ())
    answers = [answer_of(size) for size, _ in cases]
    script = [
        text(f"[response_text]\n{answer}\n[/response_text]", chunk_size=chunk)
        for answer, (_, chunk) in zip(answers, cases, strict=True)
    ]
    rows = []
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAIServer(script) as fake:
        process, url = start_server(Path(tmp), fake.base_url)
        try:
            for answer, (_, chunk) in zip(answers, cases, strict=True):
                rows.append((len(answer.encode()), chunk, *measure(url, answer)))
        finally:
            process.terminate()
            process.wait(timeout=60)
    print("SSE bytes per answer through auwgent serve (ratios: bytes / answer bytes)\n")
    print(f"  {'answer':>9} {'chunk':>6} {'partials':>9} {'partial':>8} {'finals':>7} "
          f"{'session':>8} {'stream':>7} {'w/o session':>12} {'seconds':>8}")  # fmt: skip
    for size, chunk, sizes, partials, seconds in rows:
        total = sum(sizes.values())
        print(
            f"  {size:>9} {chunk:>6} {partials:>9} {sizes['partial'] / size:>7.2f}x "
            f"{sizes['final'] / size:>6.2f}x {sizes['session'] / size:>7.2f}x "
            f"{total / size:>6.2f}x {(total - sizes['session']) / size:>11.2f}x {seconds:>8.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
