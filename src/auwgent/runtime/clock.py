"""The date-and-time line that ends every system prompt (:func:`now_line`)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timezone, tzinfo
from typing import Any

__all__ = ["now_line"]

_now_cache: list[Any] = [None, ""]  # [(the whole second, the zone) it was made for, the line]


def now_line(zone: tzinfo | None = None, clock: Callable[[], datetime] | None = None) -> str:
    """The date-and-time line that ends every system prompt, in ``zone`` (default: local).

    ISO 8601 with the UTC offset, then a human-readable form with the zone's abbreviation:
    ``Current date and time: 2026-12-01T10:30:00+00:00 (Tuesday, 01 December 2026 10:30 GMT)``.
    ``clock`` (the config's) replaces the system clock; a naive time it returns is read in
    ``zone``. On the system clock the line is made once per second and zone (formatting it
    costs more than the rest of the prompt).
    """
    key = None
    if clock is None:
        key = (int(time.time()), zone)
        if _now_cache[0] == key:
            return str(_now_cache[1])
        now = datetime.fromtimestamp(key[0], timezone.utc)
    else:
        now = clock()
        if now.tzinfo is None:
            now = now.replace(tzinfo=zone) if zone is not None else now.astimezone()
    now = (now.astimezone(zone) if zone is not None else now.astimezone()).replace(microsecond=0)
    line = (
        f"Current date and time: {now.isoformat()} "
        f"({now:%A, %d %B %Y %H:%M} {now.tzname() or now.strftime('%z')})"
    )
    if key is not None:
        _now_cache[:] = [key, line]
    return line
