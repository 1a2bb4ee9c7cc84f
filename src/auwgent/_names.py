"""Did you mean: the one implementation of "the known name closest to a mistyped one".

The compiler's diagnostics (``help: did you mean `x`?``), ``auwgent.yml`` and the runtime's
config, tool and handler checks (``did you mean 'x'?``) all ask :func:`suggest`, so a name is
suggested by the same rule everywhere: at most a third of its length in edits (at least 1, at
most 3), a case-only difference always.

The compiler checks whole files of names and gives each file a budget
(:class:`suggestion_budget`) so that a file of thousands of typos stays linear; outside a
budget (the runtime, ``auwgent.yml``) there is no limit. Stdlib only.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextvars import ContextVar
from typing import Protocol

__all__ = ["edit_distance", "suggest", "suggestion_budget"]


class _Source(Protocol):
    @property
    def text(self) -> str: ...


def edit_distance(a: str, b: str) -> int:
    """Damerau-Levenshtein distance (adjacent swaps cost 1, the "optimal string alignment"
    kind), case-sensitive.

    Bit-parallel (Myers 1999, with Hyyrö's 2003 step for swaps): one column of the edit
    table is a pair of bit vectors, so a character of ``b`` costs a dozen integer operations
    instead of a Python step per table cell (five times faster on identifier-sized names).
    """
    if a == b:
        return 0
    if not a:
        return len(b)
    positions: dict[str, int] = {}  # each character of `a`: the bits of where it occurs
    for index, char in enumerate(a):
        positions[char] = positions.get(char, 0) | 1 << index
    full, top = (1 << len(a)) - 1, 1 << (len(a) - 1)
    up, down, diagonal, previous, score = full, 0, 0, 0, len(a)
    for char in b:
        match = positions.get(char, 0)
        swap = ((~diagonal & match) << 1) & previous
        diagonal = ((((match & up) + up) ^ up) | match | down | swap) & full
        right = down | (~(diagonal | up) & full)
        left = up & diagonal
        if right & top:
            score += 1
        elif left & top:
            score -= 1
        right = ((right << 1) | 1) & full
        left = (left << 1) & full
        up = left | (~(diagonal | right) & full)
        down = right & diagonal
        previous = match
    return score


class _Budget:
    """What did-you-mean may still spend on the current file, in candidates looked at (an
    edit distance counts as ``_DISTANCE_COST`` of them)."""

    __slots__ = ("left",)

    def __init__(self, left: int) -> None:
        self.left = left


# A file that misspells thousands of names among thousands of similar ones gets suggestions
# for the first of them, in bounded time, instead of a search through every candidate for
# every one of them (quadratic). The budget grows with the file (so that a project of many
# small files, each searching the project's file names, stays linear too) up to a cap.
_WORK_PER_CHAR = 50
_WORK_MIN = 2_000
_WORK_PER_FILE = 400_000
_DISTANCE_COST = 40
_budget: ContextVar[_Budget | None] = ContextVar("auwgent_suggestions", default=None)
# Nobody mistypes a name this long by a few letters, and an edit distance costs the square of
# the length: two similar megabyte-long names would take minutes.
_LONGEST_SUGGESTED = 200


class suggestion_budget:  # noqa: N801 - used like a function: `with suggestion_budget(f):`
    """Inside the ``with`` block, ``suggest`` spends the budget of ``source`` (outside, there
    is no limit): enough for every suggestion an ordinary file needs."""

    __slots__ = ("left", "token")

    def __init__(self, source: _Source) -> None:
        size = len(source.text) * _WORK_PER_CHAR
        self.left = min(_WORK_PER_FILE, max(_WORK_MIN, size))

    def __enter__(self) -> None:
        self.token = _budget.set(_Budget(self.left))

    def __exit__(self, *exc: object) -> None:
        _budget.reset(self.token)


def suggest(name: str, candidates: Iterable[str]) -> str | None:
    """The candidate closest to ``name`` if it is close enough to be a likely typo.

    Close enough: at most a third of the name's length in edits (at least 1, at most 3); a
    case-only difference always qualifies. Ties go to the first candidate in sorted order, so
    the answer does not depend on the order of ``candidates`` (unless the file's budget runs
    out during the search: see ``suggestion_budget``).
    """
    budget = _budget.get()
    if (budget is not None and budget.left <= 0) or len(name) > _LONGEST_SUGGESTED:
        return None
    best: tuple[int, str] | None = None
    limit = max(1, min(3, len(name) // 3))
    size, lowered = len(name), name.lower()
    work = 0
    for candidate in candidates:
        work += 1
        if candidate == name or abs(len(candidate) - size) > limit:
            continue  # (a case-only difference keeps the length)
        if candidate.lower() == lowered:
            distance = 0
        else:
            work += _DISTANCE_COST
            if budget is not None and work >= budget.left:
                break
            distance = edit_distance(name, candidate)
        if distance <= limit and (best is None or (distance, candidate) < best):
            best = (distance, candidate)
    if budget is not None:
        budget.left -= work
    return best[1] if best else None
