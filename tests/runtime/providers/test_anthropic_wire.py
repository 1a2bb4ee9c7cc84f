"""The Anthropic adapter on the wire: every event kind of the Messages API stream, whole
messages, errors and faults.

Hand-written streams (the API's documented shapes) are served by an ``httpx.MockTransport``,
whole and in 1-byte pieces; faults come from :class:`FakeAnthropicServer`, over both wires.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import httpx
import pytest

from auwgent.errors import ConfigError, ProviderError
from auwgent.runtime.providers import (
    ContentPart,
    Finish,
    Message,
    ModelRequest,
    RetryPolicy,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from auwgent.runtime.providers.anthropic import AnthropicProvider
from auwgent.testing.fake_servers import (
    FakeAnthropicServer,
    disconnect,
    endless,
    error_event,
    malformed_chunk,
    stall,
    status,
    text,
    tool_calls,
)

REQUEST = ModelRequest(
    model="claude-sonnet-4-5", system="Be brief.", messages=(Message("user", "hi"),)
)
START = {
    "type": "message_start",
    "message": {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 20,
            "cache_creation_input_tokens": 5,
            "cache_read_input_tokens": 100,
            "output_tokens": 1,
        },
    },
}


def _sse(events: Sequence[dict[str, Any] | str]) -> bytes:
    out = []
    for event in events:
        if isinstance(event, str):
            out.append(event)  # raw text: comments, broken JSON
        else:
            out.append(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n")
    return "".join(out).encode()


def _block(index: int, block: dict[str, Any], *deltas: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"type": "content_block_start", "index": index, "content_block": block},
        *({"type": "content_block_delta", "index": index, "delta": d} for d in deltas),
        {"type": "content_block_stop", "index": index},
    ]


def _end(reason: str, output: int = 42, **extra: Any) -> list[dict[str, Any]]:
    return [
        {
            "type": "message_delta",
            "delta": {"stop_reason": reason, "stop_sequence": extra.get("sequence")},
            "usage": {"output_tokens": output},
        },
        {"type": "message_stop"},
    ]


THINKING = _block(
    0,
    {"type": "thinking", "thinking": "", "signature": ""},
    {"type": "thinking_delta", "thinking": "Let me "},
    {"type": "thinking_delta", "thinking": "think."},
    {"type": "signature_delta", "signature": "EqQBCkgIARABGAIiQL"},
)
TEXT = _block(
    1,
    {"type": "text", "text": ""},
    {"type": "text_delta", "text": "Sunny "},
    {"type": "text_delta", "text": "in Accra."},
)
CALL = _block(
    2,
    {"type": "tool_use", "id": "toolu_01", "name": "tool__get_weather", "input": {}},
    {"type": "input_json_delta", "partial_json": ""},
    {"type": "input_json_delta", "partial_json": '{"location": '},
    {"type": "input_json_delta", "partial_json": '"Accra"}'},
)
EVERY_KIND = [
    START,
    {"type": "ping"},
    *THINKING,
    *TEXT,
    {"type": "ping"},
    *CALL,
    *_block(3, {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va"}),
    {"type": "some_future_event", "x": 1},
    *_end("tool_use"),
]


def _transport(
    body: bytes, *, status_code: int = 200, pieces: bool = False, json_body: bool = False
) -> httpx.MockTransport:
    async def one_byte() -> AsyncIterator[bytes]:
        for i in range(len(body)):
            yield body[i : i + 1]

    def handler(request: httpx.Request) -> httpx.Response:
        kind = "application/json" if json_body else "text/event-stream"
        content: Any = one_byte() if pieces else body
        return httpx.Response(status_code, headers={"content-type": kind}, content=content)

    return httpx.MockTransport(handler)


async def _events(
    transport: httpx.MockTransport, request: ModelRequest = REQUEST, **kw: Any
) -> list[StreamEvent]:
    async with httpx.AsyncClient(transport=transport) as client:
        provider = AnthropicProvider(
            client=client, api_key="k", retry=RetryPolicy(attempts=1), **kw
        )
        return [e async for e in provider.stream(request)]


@pytest.mark.parametrize("pieces", [False, True])
async def test_every_event_kind_of_the_stream(pieces: bool) -> None:
    events = await _events(_transport(_sse(EVERY_KIND), pieces=pieces))
    assert events == [
        ContentPart(
            "thinking",
            {"type": "thinking", "thinking": "Let me think.", "signature": "EqQBCkgIARABGAIiQL"},
        ),
        TextDelta("Sunny "),
        TextDelta("in Accra."),
        ToolCallDelta(index=0, id="toolu_01", name="tool__get_weather"),
        ToolCallDelta(index=0, arguments='{"location": '),
        ToolCallDelta(index=0, arguments='"Accra"}'),
        ContentPart("redacted_thinking", {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va"}),
        Usage(input_tokens=125, output_tokens=42, cache_read_tokens=100, cache_write_tokens=5),
        Finish("tool_calls"),
    ]
    assert events[-1].raw == "tool_use"  # type: ignore[union-attr]


async def test_thinking_is_never_text() -> None:
    events = await _events(_transport(_sse([START, *THINKING, *_end("end_turn")])))
    assert not [e for e in events if isinstance(e, TextDelta)]
    assert [e.kind for e in events if isinstance(e, ContentPart)] == ["thinking"]


async def test_a_whole_message_gives_the_same_events_as_its_stream() -> None:
    whole = {
        **START["message"],
        "content": [
            {"type": "thinking", "thinking": "Let me think.", "signature": "EqQBCkgIARABGAIiQL"},
            {"type": "text", "text": "Sunny in Accra."},
            {
                "type": "tool_use",
                "id": "toolu_01",
                "name": "tool__get_weather",
                "input": {"location": "Accra"},
            },
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va"},
        ],
        "stop_reason": "tool_use",
        "usage": {**START["message"]["usage"], "output_tokens": 42},
    }
    request = ModelRequest(model="m", system="", messages=(Message("user", "hi"),), stream=False)
    events = await _events(_transport(json.dumps(whole).encode(), json_body=True), request)
    assert events == [
        ContentPart(
            "thinking",
            {"type": "thinking", "thinking": "Let me think.", "signature": "EqQBCkgIARABGAIiQL"},
        ),
        TextDelta("Sunny in Accra."),
        ToolCallDelta(index=0, id="toolu_01", name="tool__get_weather"),
        ToolCallDelta(index=0, arguments='{"location": "Accra"}'),
        ContentPart("redacted_thinking", {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va"}),
        Usage(input_tokens=125, output_tokens=42, cache_read_tokens=100, cache_write_tokens=5),
        Finish("tool_calls"),
    ]


@pytest.mark.parametrize(
    ("reason", "ours", "message"),
    [
        ("end_turn", "stop", None),
        ("stop_sequence", "stop", "stopped at 'END'"),
        ("max_tokens", "length", None),
        (
            "model_context_window_exceeded",
            "length",
            "the conversation filled the model's context window",
        ),
        ("refusal", "refusal", "the model declined to answer (stop_reason refusal)"),
        ("pause_turn", "pause_turn", "Auwgent does not resume paused turns"),
        ("some_new_reason", "some_new_reason", None),
    ],
)
async def test_stop_reasons(reason: str, ours: str, message: str | None) -> None:
    body = _sse(
        [START, *TEXT, *_end(reason, sequence="END" if reason == "stop_sequence" else None)]
    )
    finish = (await _events(_transport(body)))[-1]
    assert isinstance(finish, Finish)
    assert (finish.reason, finish.raw) == (ours, reason)
    if message is None:
        assert finish.message is None
    else:
        assert message in str(finish.message)


async def test_a_call_without_input_fragments_has_empty_arguments() -> None:
    block = {"type": "tool_use", "id": "toolu_9", "name": "tool__now", "input": {}}
    events = await _events(_transport(_sse([START, *_block(0, block), *_end("tool_use")])))
    assert events[:2] == [
        ToolCallDelta(index=0, id="toolu_9", name="tool__now"),
        ToolCallDelta(index=0, arguments="{}"),
    ]


@pytest.mark.parametrize(
    ("events", "words"),
    [
        ([START, *TEXT], "no message_stop event"),
        ([START, *TEXT, {"type": "message_stop"}], "no stop_reason"),
        (
            [
                START,
                {
                    "type": "content_block_delta",
                    "index": 5,
                    "delta": {"type": "text_delta", "text": "x"},
                },
            ],
            "block 5, which was never started",
        ),
        (
            [START, *TEXT, 'event: message_delta\ndata: {"type": "message_delta", "delta": [1\n\n'],
            "malformed JSON",
        ),
        (
            [
                START,
                {"type": "content_block_start", "index": "zero", "content_block": {"type": "text"}},
            ],
            "content_block_start.index is a string, expected an integer",
        ),
        (
            [START, *_block(0, {"type": "tool_use", "name": "f", "input": {}})],
            "content_block_start.id is null, expected a string",
        ),
        (
            [START, *TEXT, {"type": "message_delta", "delta": {"stop_reason": 7}}],
            "message_delta.delta.stop_reason is an integer, expected a string",
        ),
    ],
)
async def test_broken_streams_are_errors(events: list[Any], words: str) -> None:
    with pytest.raises(ProviderError) as caught:
        await _events(_transport(_sse(events)))
    assert words in str(caught.value)
    assert str(caught.value).startswith("Anthropic API error")


async def test_an_error_event_after_output_names_its_type_and_status() -> None:
    failure = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    with pytest.raises(ProviderError) as caught:
        await _events(_transport(_sse([START, *TEXT[:2], failure])))
    error = caught.value
    assert (error.status, error.retryable) == (529, True)
    assert str(error) == "Anthropic API error (529): Overloaded [overloaded_error]"


async def test_an_invalid_request_error_event_is_not_retryable() -> None:
    failure = {"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}
    with pytest.raises(ProviderError) as caught:
        await _events(_transport(_sse([START, failure])))
    assert (caught.value.status, caught.value.retryable) == (400, False)


async def test_an_http_error_body_is_read_in_the_api_shape() -> None:
    body = {
        "type": "error",
        "error": {"type": "not_found_error", "message": "model: claude-x"},
        "request_id": "req_1",
    }
    with pytest.raises(ProviderError) as caught:
        await _events(_transport(json.dumps(body).encode(), status_code=404, json_body=True))
    assert str(caught.value) == "Anthropic API error (404): model: claude-x"
    assert not caught.value.retryable


async def test_embeddings_are_a_clear_error() -> None:
    async with httpx.AsyncClient() as client:
        provider = AnthropicProvider(client=client, api_key="k")
        with pytest.raises(ConfigError, match="Anthropic has no embeddings API"):
            await provider.embed(["hello"], "claude-sonnet-4-5")


# -- faults, over both wires ---------------------------------------------------------------


def _provider(
    server: FakeAnthropicServer, client: Any, fast_retry: Any, fast_timeouts: Any
) -> AnthropicProvider:
    return AnthropicProvider(
        client=client,
        api_key="k",
        base_url=server.base_url,
        retry=fast_retry,
        timeouts=fast_timeouts,
    )


async def _run(provider: AnthropicProvider, request: ModelRequest = REQUEST) -> list[StreamEvent]:
    return [e async for e in provider.stream(request)]


@pytest.fixture
def summary(summarise: Callable[[Sequence[StreamEvent]], dict[str, Any]]) -> Any:
    return summarise


async def test_fake_server_stream_decodes(
    client: Any, fast_retry: Any, fast_timeouts: Any, summary: Any
) -> None:
    script = [
        tool_calls([("tool__get_weather", {"location": "Accra"})], text="Checking.", thinking="Hm.")
    ]
    with FakeAnthropicServer(script, chunk_size=3) as server:
        events = await _run(_provider(server, client, fast_retry, fast_timeouts))
    got = summary(events)
    assert got["text"] == "Checking."
    assert got["calls"] == [
        {"id": "toolu_fake1_0", "name": "tool__get_weather", "arguments": '{"location": "Accra"}'}
    ]
    assert got["finish"] == [Finish("tool_calls")]
    assert [e.kind for e in events if isinstance(e, ContentPart)] == ["thinking"]


@pytest.mark.parametrize(
    "fault",
    [
        status(529),
        status(429, retry_after=0),
        status(500),
        disconnect(after_chunks=0),
        disconnect(after_chunks=2),  # message_start and ping: nothing produced yet
        error_event(after_chunks=1),
        error_event(after_chunks=2, kind="api_error", message="Internal"),
    ],
    ids=[
        "529",
        "429",
        "500",
        "drop-at-once",
        "drop-before-output",
        "overloaded-event",
        "api-error-event",
    ],
)
async def test_failures_before_any_output_are_retried(
    fault: Any, client: Any, fast_retry: Any, fast_timeouts: Any, summary: Any
) -> None:
    with FakeAnthropicServer([fault, text("Fine.")]) as server:
        events = await _run(_provider(server, client, fast_retry, fast_timeouts))
    assert summary(events)["text"] == "Fine."
    assert len(server.requests) == 2


@pytest.mark.parametrize(
    ("fault", "words"),
    [
        (disconnect(after_chunks=5, reply=text("Sunny in Accra today.")), "stream interrupted"),
        (
            error_event(after_chunks=5, reply=text("Sunny in Accra today.")),
            "Overloaded [overloaded_error]",
        ),
        (malformed_chunk(after_chunks=5, reply=text("Sunny in Accra today.")), "malformed JSON"),
        (stall(5, after_chunks=5, reply=text("Sunny in Accra today.")), "stream stalled"),
    ],
    ids=["cut", "overloaded", "malformed", "stall"],
)
async def test_failures_after_output_are_errors(
    fault: Any, words: str, client: Any, fast_retry: Any, fast_timeouts: Any
) -> None:
    with FakeAnthropicServer([fault, text("again")], chunk_size=4) as server:
        provider = _provider(server, client, fast_retry, fast_timeouts)
        seen: list[StreamEvent] = []
        with pytest.raises(ProviderError) as caught:
            async for event in provider.stream(REQUEST):
                seen.append(event)
    assert any(isinstance(e, TextDelta) for e in seen)
    assert not any(isinstance(e, Finish) for e in seen)
    assert words in str(caught.value)
    assert len(server.requests) == 1


async def test_overloaded_for_good_gives_up_with_the_count(
    client: Any, fast_retry: Any, fast_timeouts: Any
) -> None:
    with FakeAnthropicServer(lambda request: status(529, message="Overloaded")) as server:
        with pytest.raises(ProviderError) as caught:
            await _run(_provider(server, client, fast_retry, fast_timeouts))
    assert caught.value.status == 529
    assert "Overloaded (gave up after 3 attempts)" in str(caught.value)
    assert len(server.requests) == 3


async def test_an_endless_stream_stops_at_the_response_cap(
    client: Any, fast_retry: Any, fast_timeouts: Any
) -> None:
    from auwgent.runtime.providers import Limits

    with FakeAnthropicServer([endless()]) as server:
        provider = AnthropicProvider(
            client=client,
            api_key="k",
            base_url=server.base_url,
            retry=fast_retry,
            timeouts=fast_timeouts,
            limits=Limits(response_bytes=20_000),
        )
        with pytest.raises(ProviderError, match="limits.responseBytes"):
            await _run(provider)


async def test_a_whole_answer_from_the_fake_server(
    client: Any, fast_retry: Any, fast_timeouts: Any, summary: Any
) -> None:
    request = ModelRequest(model="m", system="", messages=(Message("user", "hi"),), stream=False)
    with FakeAnthropicServer([tool_calls([("f", {"a": 1})], text="x", thinking="t")]) as server:
        events = await _run(_provider(server, client, fast_retry, fast_timeouts), request)
    assert "stream" not in server.requests[0].body
    got = summary(events)
    assert (got["text"], got["calls"][0]["arguments"]) == ("x", '{"a": 1}')
    assert got["usage"][0].output_tokens > 0
