"""Decoder tests as data: ``tests/data/decode/<case>.txt`` is a model's streamed answer (some
damaged on purpose), ``<case>.json`` the events it must decode to. Each stream is decoded whole,
one character at a time and in random chunkings, and every way must give the same finals and
rejections. ``AUWGENT_UPDATE_GOLDEN=1`` rewrites the ``.json`` files from the decoder."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from protocol_contracts import CONTRACTS, is_prefix

from auwgent.runtime.protocol import BlocksCodec
from auwgent.runtime.protocol.contract import (
    Contract,
    DecodeEvent,
    FinalEvent,
    PartialEvent,
    RejectedEvent,
)
from auwgent.runtime.providers.base import TextDelta
from golden import assert_golden_json

DATA = Path(__file__).parents[2] / "data" / "decode"
CASES = sorted(p.stem for p in DATA.glob("*.txt"))
# The contract each case is decoded against ("text" unless named here).
CASE_CONTRACT = {
    "schema_single": "person",
    "schema_unnamed": "person",
    "schema_unframed_json": "person",
    "schema_unframed_prose": "person",
    "schema_unframed_inline": "person",
    "schema_wrong_kind": "person",
    "union_variant": "union",
    "union_unnamed": "union",
    "union_unknown_shape": "union",
}


def decode(contract: Contract, chunks: list[str]) -> list[DecodeEvent]:
    decoder = BlocksCodec().decoder(contract)
    events: list[DecodeEvent] = []
    for chunk in chunks:
        events += decoder.feed(TextDelta(chunk))
    return events + decoder.close()


def settled(events: list[DecodeEvent]) -> list[dict[str, Any]]:
    """Finals and rejections as JSON-able dicts (partials depend on chunking by design)."""
    out: list[dict[str, Any]] = []
    for event in events:
        if isinstance(event, FinalEvent):
            out.append(
                {
                    "final": event.kind,
                    "name": event.name,
                    "segment": event.segment,
                    "payload": event.payload,
                    "raw": event.raw,
                }
            )
        elif isinstance(event, RejectedEvent):
            out.append(
                {
                    "rejected": event.kind,
                    "name": event.name,
                    "segment": event.segment,
                    "message": event.message,
                    "raw": event.raw,
                }
            )
    return out


def chunkings(text: str) -> list[list[str]]:
    rng = random.Random(text)  # seeded by the case: failures reproduce
    ways = [[text], list(text)]
    for _ in range(6):
        chunks, i = [], 0
        while i < len(text):
            size = rng.choice((1, 2, 3, 5, 8, 13, 64))
            chunks.append(text[i : i + size])
            i += size
        ways.append(chunks)
    return ways


def check_partials(events: list[DecodeEvent]) -> None:
    """Text deltas add up to the snapshot and to a prefix of the final text (the rest arrives
    with the final); no partial of a segment follows its final; every snapshot is a prefix of
    the truth (keys the final has, text prefixes, other values equal)."""
    deltas: dict[int, str] = {}
    closed: set[int] = set()
    finals = {e.segment: e for e in events if isinstance(e, FinalEvent)}
    for event in events:
        if isinstance(event, PartialEvent) and event.segment in finals:
            final = finals[event.segment]
            assert is_prefix(event.snapshot, final.payload), (event.snapshot, final.payload)
        if isinstance(event, PartialEvent):
            assert event.segment not in closed
            if event.kind == "response_text":
                deltas[event.segment] = deltas.get(event.segment, "") + (event.delta or "")
                assert event.snapshot["text"] == deltas[event.segment]
        else:
            closed.add(event.segment)
            if isinstance(event, FinalEvent) and event.kind == "response_text":
                if event.segment in deltas:
                    assert event.payload["text"].startswith(deltas[event.segment])


@pytest.mark.parametrize("case", CASES)
def test_decode_case(case: str) -> None:
    text = (DATA / f"{case}.txt").read_bytes().decode("utf-8")  # keep \r\n as written
    contract = CONTRACTS[CASE_CONTRACT.get(case, "text")]
    results = []
    for chunks in chunkings(text):
        events = decode(contract, chunks)
        check_partials(events)
        results.append(settled(events))
    assert all(r == results[0] for r in results), "results differ between chunkings"
    expected_file = DATA / f"{case}.json"
    assert_golden_json(expected_file, results[0])


def test_every_stream_has_expectations() -> None:
    assert CASES
    assert {p.stem for p in DATA.glob("*.json")} == set(CASES)
