"""What checking a call's provenance costs as the untrusted history grows (docs/security.md).

A history of N untrusted results (emails of about 300 characters, a few with a URL-encoded
address) is indexed once; then one call of three arguments (an address, a subject, a number)
is checked against it, both when it is clean and when its address was copied from the last
email. Each size prints the time to index, the time per check (the best of three runs), and both as a ratio against
the smallest history measured in the same run, next to the ratio of the history sizes: the
cost is linear when the ratios track the size ratio (or stay under it).

Run: ``.venv/bin/python bench/bench_taint.py [--rounds 200]``
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from auwgent.runtime.provenance import TextIndex, call_findings

PARAMS: list[dict[str, Any]] = [
    {"name": "to", "type": {"kind": "string"}, "optional": False, "description": None},
    {"name": "subject", "type": {"kind": "string"}, "optional": False, "description": None},
    {"name": "amount", "type": {"kind": "number"}, "optional": False, "description": None},
]
SIZES = (10, 100, 1000, 10000)


def email(i: int) -> str:
    sender = f"sender{i}%40mail{i % 17}.test" if i % 5 == 0 else f"sender{i}@mail{i % 17}.test"
    return (
        f"From: {sender}\nSubject: Weekly update number {i}\n\n"
        f"Hello team,   the numbers for week {i} are in. Revenue grew by {i % 9} percent and "
        "the backlog shrank. Please review the attached report before Friday and send your "
        "comments to the usual list. Regards,\nThe reporting bot"
    )


def index(n: int) -> tuple[TextIndex, float]:
    """The index of ``n`` emails and the best of three times to build it."""
    texts = [email(i) for i in range(n)]
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        untrusted = TextIndex()
        for i, text in enumerate(texts):
            untrusted.add({"kind": "tool", "name": "read_inbox", "n": i}, text)
        best = min(best, time.perf_counter() - start)
    return untrusted, best


def check(untrusted: TextIndex, args: dict[str, Any], rounds: int) -> float:
    trusted = TextIndex()
    trusted.add({"kind": "user_input"}, "Send the summary to boss@corp.test please")
    best = float("inf")
    for _ in range(3):  # the best of three: the machine may be busy
        start = time.perf_counter()
        for _ in range(rounds):
            call_findings(
                args, PARAMS, {}, untrusted=untrusted, trusted=(trusted,), exposed_by=None
            )
        best = min(best, (time.perf_counter() - start) / rounds)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    rounds = parser.parse_args().rounds
    clean = {"to": "boss@corp.test", "subject": "summary", "amount": 12345}
    rows = []
    for n in SIZES:
        untrusted, built = index(n)
        copied = {**clean, "to": f"sender{n - 1}@mail{(n - 1) % 17}.test"}
        assert call_findings(
            copied, PARAMS, {}, untrusted=untrusted, trusted=(), exposed_by=None
        ), "the copied address must be found"
        rows.append((n, built, check(untrusted, clean, rounds), check(untrusted, copied, rounds)))
    base = rows[0]
    print(f"{'history':>8} {'size x':>7} {'index ms':>9} {'x':>7} {'clean us':>9} {'x':>7} "
          f"{'copied us':>9} {'x':>7}")  # fmt: skip
    for n, built, clean_t, copied_t in rows:
        print(
            f"{n:>8} {n / base[0]:>7.0f} {built * 1e3:>9.2f} {built / base[1]:>7.1f} "
            f"{clean_t * 1e6:>9.1f} {clean_t / base[2]:>7.1f} "
            f"{copied_t * 1e6:>9.1f} {copied_t / base[3]:>7.1f}"
        )


if __name__ == "__main__":
    main()
