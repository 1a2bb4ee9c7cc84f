"""Where a call comes from: the intents of calls made by the model's code carry ``"via"``.

Code mode (:mod:`.code_mode`) sets :data:`VIA` to ``"execute_code"`` while one of the code's
``api`` calls runs; :func:`mark` adds it to every intent payload emitted meanwhile (the call,
its approval, its result or error, a workflow's steps). A helper called from code is an agent
of its own: its run is outside the code (:func:`outside`), so only the parent's
``helper_call`` / ``helper_result`` carry the mark.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

__all__ = ["VIA", "mark", "outside", "via"]

VIA: ContextVar[str | None] = ContextVar("auwgent_via", default=None)


def mark(value: Any) -> Any:
    """``value`` with ``"via"`` when a call's origin is set (payload dicts only)."""
    origin = VIA.get()
    if origin is None or not isinstance(value, dict):
        return value
    return {**value, "via": origin}


@contextmanager
def via(origin: str | None) -> Iterator[None]:
    token = VIA.set(origin)
    try:
        yield
    finally:
        VIA.reset(token)


def outside() -> Any:
    """Run a nested agent (a helper) with no origin: its own calls are not the code's."""
    return via(None)
