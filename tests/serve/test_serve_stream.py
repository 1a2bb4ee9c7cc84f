"""The event buffer of one serve response (``auwgent.serve_stream``), driven as the response
drives it: a client that is held up is one whose first event is still being sent (its body
iterator was asked for one piece and not for the next). Partials of both shapes: carrying
their delta only, and carrying their whole snapshot (and the delta) as well."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from auwgent.serve_stream import EventBuffer


def text_partial(delta: str, so_far: str | None = None, segment: int = 0) -> dict[str, Any]:
    """A text partial: the delta only, or (``so_far``) its whole snapshot and raw text too."""
    value: dict[str, Any] = {"partial": True, "mode": "text", "segment": segment, "delta": delta}
    if so_far is not None:
        value |= {"snapshot": {"text": so_far}, "raw": so_far}
    return {"name": "response_text", "value": value, "agent": "Main"}


def call_partial(args: dict[str, Any], segment: int = 1) -> dict[str, Any]:
    value = {"partial": True, "mode": "structured", "segment": segment, "snapshot": args}
    return {"name": "tool_call", "value": value, "agent": "Main"}


def parse(stream: bytes) -> list[tuple[str, Any]]:
    events = []
    for block in stream.decode().split("\n\n"):
        if block:
            name, data = block.split("\n", 1)
            events.append((name.removeprefix("event: "), json.loads(data.removeprefix("data: "))))
    return events


async def held_up(buffer: EventBuffer) -> tuple[AsyncIterator[bytes], bytes]:
    """A client held up on its first event: the pieces asked for so far, and the iterator."""
    body = buffer.events()
    return body, await anext(body)


async def rest(body: AsyncIterator[bytes], first: bytes = b"") -> list[tuple[str, Any]]:
    received = bytearray(first)
    async for piece in body:
        received += piece
    return parse(bytes(received))


def test_a_held_up_client_gets_the_deltas_joined_and_the_finals_in_order() -> None:
    async def main() -> list[tuple[str, Any]]:
        buffer = EventBuffer(1024 * 1024)
        buffer.put_partial(text_partial("He"))
        body, first = await held_up(buffer)
        for delta in ("llo", ", wor", "ld"):
            buffer.put_partial(text_partial(delta))
        buffer.put_intent("response_text", {"text": "Hello, world"}, "Main")
        buffer.put_partial(text_partial("Ne", segment=0))  # the next answer's first block
        buffer.put_partial(text_partial("xt"))
        buffer.put_event("session", {"turns": []})
        buffer.close()
        return await rest(body, first)

    events = asyncio.run(main())
    assert events == [
        ("partial", text_partial("He")),
        ("partial", text_partial("llo, world")),  # three partials, one event, every character
        ("response_text", {"text": "Hello, world"}),
        ("partial", text_partial("Next")),  # never merged across a final event
        ("session", {"turns": []}),
    ]


def test_whole_snapshot_partials_keep_the_latest() -> None:
    async def main() -> list[tuple[str, Any]]:
        buffer = EventBuffer(1024 * 1024)
        buffer.put_partial(call_partial({"type": "get_weather"}))
        body, first = await held_up(buffer)
        buffer.put_partial(text_partial("A", so_far="A", segment=0))
        buffer.put_partial(call_partial({"type": "get_weather", "args": {}}))
        buffer.put_partial(call_partial({"type": "get_weather", "args": {"location": "Ac"}}))
        buffer.put_partial(text_partial("B", so_far="AB", segment=0))
        buffer.close()
        return await rest(body, first)

    events = asyncio.run(main())
    assert events == [
        ("partial", call_partial({"type": "get_weather"})),
        ("partial", text_partial("AB", so_far="AB")),  # the latest snapshot, the deltas joined
        ("partial", call_partial({"type": "get_weather", "args": {"location": "Ac"}})),
    ]


def piece(i: int) -> str:
    return f"piece {i:03d} of the answer; "


async def held_up_with_many_partials(
    limit: int,
) -> tuple[EventBuffer, AsyncIterator[bytes], bytes]:
    """A held-up client's buffer that was given 100 partials, ~2,700 bytes of deltas."""
    buffer = EventBuffer(limit)
    buffer.put_partial(text_partial("start "))
    body, first = await held_up(buffer)
    for i in range(100):
        buffer.put_partial(text_partial(piece(i)))
        assert buffer.held <= limit + len(first)
    return buffer, body, first


def test_partials_that_do_not_fit_are_dropped_the_text_stays_a_prefix() -> None:
    async def main() -> list[tuple[str, Any]]:
        buffer, body, first = await held_up_with_many_partials(2000)
        buffer.put_partial(text_partial("more"))  # dropped too: its intent has not ended
        buffer.close()  # (a block the decoder rejected: no final)
        return await rest(body, first)

    events = asyncio.run(main())
    assert [name for name, _ in events] == ["partial", "partial"]
    added = "".join(value["value"]["delta"] for _, value in events)
    assert ("start " + "".join(piece(i) for i in range(100))).startswith(added)
    assert 1000 < len(added) < 2000  # kept up to the bound, the rest dropped: never a hole


def test_a_final_event_drops_the_waiting_partials_and_restarts_its_intents() -> None:
    async def main() -> list[tuple[str, Any]]:
        buffer, body, first = await held_up_with_many_partials(2000)
        buffer.put_intent("response_text", {"text": "(the whole answer)"}, "Main")
        buffer.put_partial(text_partial("again", segment=0))  # after its final: streams again
        buffer.close()
        return await rest(body, first)

    events = asyncio.run(main())
    assert events == [
        ("partial", text_partial("start ")),
        ("response_text", {"text": "(the whole answer)"}),
        ("partial", text_partial("again")),
    ]


def test_finals_that_do_not_fit_end_the_stream_with_an_error() -> None:
    async def main() -> list[tuple[str, Any]]:
        buffer = EventBuffer(500)
        buffer.put_intent("tool_call", {"type": "a", "args": {}}, "Main")
        body, first = await held_up(buffer)
        buffer.put_partial(text_partial("x" * 100))
        buffer.put_intent("tool_result", {"result": "y" * 300}, "Main")  # partials make room
        buffer.put_intent("response_text", {"text": "z" * 300}, "Main")  # does not fit
        buffer.put_event("session", {})  # the stream has ended: discarded
        buffer.close()
        return await rest(body, first)

    events = asyncio.run(main())
    assert [name for name, _ in events] == ["tool_call", "error"]
    assert events[-1][1]["code"] == "slow_client"
    assert "more than 500 bytes" in events[-1][1]["message"]


def test_a_client_that_keeps_up_gets_events_of_any_size() -> None:
    async def main() -> list[tuple[str, Any]]:
        buffer = EventBuffer(100)
        body = buffer.events()
        buffer.put_intent("response_text", {"text": "z" * 5000}, "Main")
        buffer.put_event("session", {"big": "s" * 200_000})
        buffer.close()
        return await rest(body)

    events = asyncio.run(main())
    assert [name for name, _ in events] == ["response_text", "session"]
    assert len(events[-1][1]["big"]) == 200_000


def test_a_detached_buffer_keeps_nothing() -> None:
    async def main() -> tuple[int, list[bytes]]:
        buffer = EventBuffer(1024 * 1024)
        buffer.put_partial(text_partial("a"))
        buffer.detach()
        for _ in range(1000):
            buffer.put_partial(text_partial("b" * 1000))
            buffer.put_intent("response_text", {"text": "c" * 1000}, "Main")
        return buffer.held, [piece async for piece in buffer.events()]

    held, pieces = asyncio.run(main())
    assert held == 0 and pieces == []
