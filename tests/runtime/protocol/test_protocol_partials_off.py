"""A decoder asked for no partials (no one listens) gives exactly the same finals, in order."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from protocol_contracts import CONTRACTS

from auwgent.runtime.protocol import codec_for
from auwgent.runtime.protocol.contract import DecodeEvent, PartialEvent
from auwgent.runtime.providers.base import StreamEvent, TextDelta, ToolCallDelta

BLOCK_STREAMS = {
    "text": (
        "Let me check.\n[tool_call: get_weather]\nlocation: Accra\nunits: celsius\n"
        "[/tool_call]\n[tool_call: notify]\ncontact: ops\ntags: [a, b]\n[/tool_call]\n"
        "[Planning]\nstep: ask\nconfidence: 0.5\n[/Planning]\n"
        "[response_text]\nIt is sunny in Accra.\n[/response_text]"
    ),
    "person": "[schema: Person]\nname: Kyaw\n[/schema]\n[tool_call: nope]\na: 1\n[/tool_call]",
    "union": "  Plain words, no blocks at all.  ",
}
NATIVE_TEXT = {
    "text": "  It is sunny in Accra, 31 degrees.  ",
    "person": json.dumps({"name": "Kyaw"}),
    "union": "not a function call",
}
CALLS = [
    ("call_a", "tool__get_weather", json.dumps({"location": "Accra", "units": "celsius"})),
    ("call_b", "tool__notify", json.dumps({"contact": "ops", "tags": ["a", "b"]})),
    ("call_c", "tool__nope", "{}"),
]


def _pieces(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in zip(points, points[1:], strict=False) if b > a]


def _run(protocol: str, contract: str, events: list[StreamEvent], partials: bool) -> list[Any]:
    decoder = codec_for(protocol).decoder(CONTRACTS[contract], partials=partials)
    out: list[DecodeEvent] = []
    for event in events:
        out += decoder.feed(event)
    return out + decoder.close()


def _check(protocol: str, contract: str, events: list[StreamEvent]) -> None:
    full = _run(protocol, contract, events, partials=True)
    quiet = _run(protocol, contract, events, partials=False)
    assert not any(isinstance(e, PartialEvent) for e in quiet)
    assert quiet == [e for e in full if not isinstance(e, PartialEvent)]


cuts = st.lists(st.integers(0, 400), max_size=12)
contracts = st.sampled_from(sorted(CONTRACTS))


@settings(max_examples=120, deadline=None)
@given(contracts, cuts)
def test_blocks_finals_are_the_same_without_partials(contract: str, at: list[int]) -> None:
    events: list[StreamEvent] = [TextDelta(p) for p in _pieces(BLOCK_STREAMS[contract], at)]
    _check("blocks", contract, events)


@settings(max_examples=120, deadline=None)
@given(contracts, cuts, st.booleans())
def test_native_finals_are_the_same_without_partials(
    contract: str, at: list[int], with_calls: bool
) -> None:
    events: list[StreamEvent] = [TextDelta(p) for p in _pieces(NATIVE_TEXT[contract], at)]
    if with_calls:
        for index, (call_id, name, arguments) in enumerate(CALLS):
            events.append(ToolCallDelta(index, call_id, name, ""))
            events += [ToolCallDelta(index, arguments=p) for p in _pieces(arguments, at)]
    _check("native", contract, events)
