"""A partial costs what arrived, not the text so far: its text (``raw``, a text snapshot's
``"text"``) is shared with the other partials of its block and made only when read. Measured
by memory, never by time: every partial of a 1 MB answer kept at once holds about one copy of
the answer (each holding its own copy was 256 MB)."""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

import pytest
from protocol_contracts import CONTRACTS

from auwgent.runtime.protocol import BlocksCodec, NativeCodec
from auwgent.runtime.protocol.contract import DecodeEvent, FinalEvent, PartialEvent
from auwgent.runtime.protocol.lazy import LazyDict, TextPrefix
from auwgent.runtime.providers.base import TextDelta, ToolCallDelta

SIZE = 1 << 20
CHUNK = 4096


def words(size: int) -> str:
    text = " ".join(f"w{i}" for i in range(size // 4))
    return text[:size].strip()


def decode_text(body: str, unframed: bool) -> list[DecodeEvent]:
    text = body if unframed else f"[response_text]\n{body}\n[/response_text]"
    decoder = BlocksCodec().decoder(CONTRACTS["text"])
    events: list[DecodeEvent] = []
    for i in range(0, len(text), CHUNK):
        events += decoder.feed(TextDelta(text[i : i + CHUNK]))
    return events + decoder.close()


def peak(run: Any) -> tuple[list[DecodeEvent], int]:
    tracemalloc.start()
    try:
        events = run()
        return events, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("unframed", [False, True])
def test_every_text_partial_kept_holds_the_text_once(unframed: bool) -> None:
    body = words(SIZE)
    events, most = peak(lambda: decode_text(body, unframed))
    partials = [e for e in events if isinstance(e, PartialEvent)]
    assert len(partials) >= SIZE // CHUNK - 1  # one per chunk: they cost what arrived
    # The input, the body read, the deltas kept, the final's raw block and its text.
    assert most <= 6 * len(body)
    # Each partial still shows the text as it was when it came, and its deltas add up to it.
    added = ""
    for event in partials:
        assert event.delta is not None
        added += event.delta
        assert event.snapshot["text"] == added
    final = events[-1]
    assert isinstance(final, FinalEvent) and final.payload["text"] == body
    assert partials[0].raw.strip() == partials[0].snapshot["text"]


def test_the_raw_text_of_argument_partials_is_shared() -> None:
    """Each partial's ``raw`` is made from the shared argument text when read."""
    body = json.dumps({"contact": "ops", "tags": words(SIZE // 2).split()})

    def run() -> list[Any]:
        decoder = NativeCodec().decoder(CONTRACTS["text"])
        kept: list[Any] = []
        deltas = [ToolCallDelta(0, "c1", "tool__notify", "")]
        deltas += [
            ToolCallDelta(0, None, None, body[i : i + CHUNK]) for i in range(0, len(body), CHUNK)
        ]
        for delta in deltas:
            kept += [e.source if isinstance(e, PartialEvent) else e for e in decoder.feed(delta)]
        return kept + decoder.close()

    kept = run()
    sources = kept[:-1]
    assert len(sources) >= len(body) // CHUNK // 2
    assert all(isinstance(source, TextPrefix) for source in sources)
    early = PartialEvent("tool_call", "notify", 0, {}, sources[3])
    assert body.startswith(early.raw) and len(early.raw) < len(body)
    assert isinstance(kept[-1], FinalEvent)


def test_a_partial_envelope_reads_as_a_plain_dict() -> None:
    made: list[str] = []

    def raw() -> str:
        made.append("raw")
        return "the text so far"

    value = LazyDict({"partial": True, "delta": " far"}, {"raw": raw})
    assert value["delta"] == " far" and "raw" in value and made == []  # nothing made yet
    assert value.get("raw") == "the text so far" and made == ["raw"]
    assert value == {"partial": True, "delta": " far", "raw": "the text so far"}
    assert json.loads(json.dumps(value)) == dict(value) == {**value} == value.copy()
    again = LazyDict({"a": 1}, {"b": lambda: 2})
    assert len(again) == 2 and list(again.items()) == [("a", 1), ("b", 2)]
    assert repr(LazyDict({}, {"x": lambda: 1})) == "{'x': 1}"
