"""Helpers for provider tests: captured wire data, event coalescing, fast resilience settings."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest

from auwgent.runtime.providers import (
    Finish,
    RetryPolicy,
    StreamEvent,
    TextDelta,
    Timeouts,
    ToolCallDelta,
    Usage,
)
from auwgent.runtime.providers.wire import PoolWire

WIRE = Path(__file__).resolve().parents[2] / "data" / "wire"

# Tiny backoffs and timeouts so that fault tests take milliseconds, never hang.
FAST_RETRY = RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.05, jitter=False)
FAST_TIMEOUTS = Timeouts(connect=2.0, first_byte=2.0, idle=0.5)


def _summarise(events: Sequence[StreamEvent]) -> dict[str, Any]:
    """What a stream means, independent of how it was chunked: full text, whole calls, etc."""
    calls: dict[int, dict[str, Any]] = {}
    for event in events:
        if isinstance(event, ToolCallDelta):
            call = calls.setdefault(event.index, {"id": None, "name": None, "arguments": ""})
            call["id"] = call["id"] or event.id
            call["name"] = call["name"] or event.name
            call["arguments"] += event.arguments
    return {
        "text": "".join(e.text for e in events if isinstance(e, TextDelta)),
        "calls": [calls[i] for i in sorted(calls)],
        "usage": [e for e in events if isinstance(e, Usage)],
        "finish": [e for e in events if isinstance(e, Finish)],
    }


@pytest.fixture
def wire() -> Callable[[str], bytes]:
    def load(name: str) -> bytes:
        return (WIRE / name).read_bytes()

    return load


@pytest.fixture
def summarise() -> Callable[[Sequence[StreamEvent]], dict[str, Any]]:
    """Coalesce events into what they mean (see :func:`_summarise`)."""
    return _summarise


@pytest.fixture(params=["pool", "httpx"])
async def client(request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    """What a provider sends through, both ways: the agent's own connections, and a given
    httpx client (the fault and size-limit tests run on each)."""
    wire: Any = PoolWire() if request.param == "pool" else httpx.AsyncClient()
    try:
        yield wire
    finally:
        await wire.aclose()


@pytest.fixture
def fast_retry() -> RetryPolicy:
    return FAST_RETRY


@pytest.fixture
def fast_timeouts() -> Timeouts:
    return FAST_TIMEOUTS


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print the real-traffic replay counts (tests/runtime/providers/test_wire_real.py)."""
    import sys

    module = sys.modules.get("test_wire_real")
    tally = getattr(module, "TALLY", None)
    if tally and tally["replayed"]:
        terminalreporter.write_line(
            "wire replay: {replayed} recorded responses replayed, {exact} decoded exactly, "
            "{defects} defects, {exceptions} documented exceptions".format(**tally)
        )
