"""The UI encoders (``auwgent.serve_ui``) behind serve's event buffer, driven as a response
drives them: partials merged behind a held-up client or dropped over the bound still add up
to the whole text and arguments, a resumed run names its calls as the paused one did, and a
stream cut short still ends as its protocol says."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from auwgent.serve_stream import EventBuffer
from auwgent.serve_ui import AG_UI, AI_SDK, encoder_for
from serve.test_serve_stream import call_partial, text_partial


def chunks(stream: bytes) -> list[Any]:
    out = []
    for block in stream.decode().split("\n\n"):
        if block:
            data = block.removeprefix("data: ")
            out.append(data if data == "[DONE]" else json.loads(data))
    return out


async def drain(body: AsyncIterator[bytes], first: bytes = b"") -> list[Any]:
    received = bytearray(first)
    async for piece in body:
        received += piece
    return chunks(bytes(received))


def held_up_run(dialect: str, limit: int = 1024 * 1024) -> list[Any]:
    """A text answer and a call whose partials wait behind a client held up on its first
    event (the first partial's chunks), then the session."""

    async def main() -> list[Any]:
        buffer = EventBuffer(limit, encoder_for(dialect, None, "c1", "r1"))
        buffer.put_partial(text_partial("He"))
        body = buffer.events()
        first = await anext(body)
        for delta in ("llo", ", wor", "ld"):
            buffer.put_partial(text_partial(delta))
        buffer.put_intent("response_text", {"text": "Hello, world"}, "Main")
        for args in ({}, {"location": "Ac"}, {"location": "Accra"}):
            buffer.put_partial(call_partial({"type": "get_weather", "args": args}))
        buffer.put_intent("tool_call", {"type": "get_weather", "args": {"location": "Accra"}},
                          "Main")  # fmt: skip
        buffer.put_event("session", {"turns": [{"status": "complete"}], "agent": "Main"})
        buffer.close()
        return await drain(body, first)

    return asyncio.run(main())


def test_ai_sdk_partials_merged_behind_a_held_up_client_add_up() -> None:
    sent = held_up_run(AI_SDK)
    assert [c["type"] if isinstance(c, dict) else c for c in sent] == [
        "start", "text-start", "text-delta", "text-delta", "text-end", "tool-input-start",
        "tool-input-delta", "tool-input-delta", "tool-input-available", "finish", "[DONE]",
    ]  # fmt: skip
    text = "".join(c["delta"] for c in sent if isinstance(c, dict) and c["type"] == "text-delta")
    assert text == "Hello, world"  # "He", then the three merged, nothing again
    args = "".join(c.get("inputTextDelta", "") for c in sent if isinstance(c, dict))
    assert json.loads(args) == {"location": "Accra"}


def test_ag_ui_partials_merged_behind_a_held_up_client_add_up() -> None:
    sent = held_up_run(AG_UI)
    assert [c["type"] for c in sent] == [
        "RUN_STARTED", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_ARGS",
        "TOOL_CALL_END", "RUN_FINISHED",
    ]  # fmt: skip
    assert "".join(c.get("delta", "") for c in sent if "TEXT" in c["type"]) == "Hello, world"
    args = "".join(c.get("delta", "") for c in sent if c["type"] == "TOOL_CALL_ARGS")
    assert json.loads(args) == {"location": "Accra"}


def test_dropped_partials_are_made_up_by_the_final() -> None:
    """Over the bound the waiting partials go; the final intent sends the rest of the text."""

    async def main() -> list[Any]:
        buffer = EventBuffer(2000, encoder_for(AI_SDK, None, "c1", "r1"))
        buffer.put_partial(text_partial("He"))
        body = buffer.events()
        first = await anext(body)
        for _ in range(20):
            buffer.put_partial(text_partial("x" * 40))  # over the bound: dropped
        buffer.put_intent("response_text", {"text": "He" + "x" * 800}, "Main")
        buffer.put_event("session", {"turns": [{"status": "complete"}]})
        buffer.close()
        return await drain(body, first)

    sent = [c for c in asyncio.run(main()) if isinstance(c, dict)]
    deltas = [c["delta"] for c in sent if c["type"] == "text-delta"]
    assert len(deltas) < 21  # some partials were dropped
    assert "".join(deltas) == "He" + "x" * 800 and sent[-2]["type"] == "text-end"


def test_a_resumed_run_names_its_calls_as_the_paused_one_did() -> None:
    call = {"type": "send_email", "args": {"to": "ada@example.com"}}
    request = {"id": "r1", "kind": "tool", "name": "send_email", "args": call["args"],
               "agent": "Main"}  # fmt: skip
    paused_turn = {"status": "awaiting_approval", "intents": [
        {"name": "tool_call", "value": call, "agent": "Main"},
        {"name": "approval_request", "value": request, "agent": "Main"},
    ]}  # fmt: skip
    session = {"turns": [{"status": "complete", "intents": []}, paused_turn]}
    paused = encoder_for(AG_UI, {"turns": session["turns"][:1]}, "t1", "run1")
    first = chunks(paused.intent("tool_call", call, "Main"))
    resumed = encoder_for(AG_UI, session, "t1", "run2", resuming=True)
    result = {"name": "send_email", "args": call["args"], "result": "sent"}
    second = chunks(resumed.intent("tool_result", result, "Main"))
    assert first[1]["toolCallId"] == "call-1-1"  # the conversation's second turn, first call
    assert second[0]["type"] == "RUN_STARTED" and second[0]["runId"] == "run2"
    assert second[1]["toolCallId"] == "call-1-1"


def test_a_stream_cut_short_still_ends() -> None:
    """The client fell too far behind: serve ends the stream with its error, no session."""

    async def main(dialect: str) -> list[Any]:
        buffer = EventBuffer(300, encoder_for(dialect, None, "c1", "r1"))
        buffer.put_partial(text_partial("He"))
        body = buffer.events()
        first = await anext(body)
        buffer.put_intent("response_text", {"text": "x" * 1000}, "Main")  # does not fit
        return await drain(body, first)

    ai = asyncio.run(main(AI_SDK))
    assert [c["type"] if isinstance(c, dict) else c for c in ai][-3:] == [
        "error",
        "finish",
        "[DONE]",
    ]
    assert "read too slowly" in ai[-3]["errorText"]
    ag = asyncio.run(main(AG_UI))
    assert [c["type"] for c in ag][-2:] == ["TEXT_MESSAGE_END", "RUN_ERROR"]
    assert "read too slowly" in ag[-1]["message"]


def test_streamed_arguments_add_up_when_a_number_grows() -> None:
    """``1.`` decodes as 1.0 before it is 1.5: the number is held back until it is whole."""
    encoder = encoder_for(AG_UI, None, "t", "r")
    sent = b""
    for args in ({"n": 1.0}, {"n": 1.5}, {"n": 1.5, "m": 2}):
        sent += encoder.partial(call_partial({"type": "add", "args": args}))
    sent += encoder.intent("tool_call", {"type": "add", "args": {"n": 1.5, "m": 20}}, "Main")
    args = "".join(c.get("delta", "") for c in chunks(sent) if c["type"] == "TOOL_CALL_ARGS")
    assert json.loads(args) == {"n": 1.5, "m": 20}
