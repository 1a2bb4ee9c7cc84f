"""OpenAI Chat Completions: captured streams and bodies in, neutral events out; request bodies."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import httpx
import pytest

from auwgent.errors import ProviderError
from auwgent.runtime.providers import (
    Finish,
    FunctionSpec,
    Message,
    ModelRequest,
    OpenAIProvider,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from auwgent.runtime.providers.openai import build_chat_body

Summarise = Callable[[Sequence[StreamEvent]], dict[str, Any]]


def _replay(body: bytes, seen: list[httpx.Request], piece: int = 0) -> httpx.MockTransport:
    """Serve ``body`` (split into ``piece``-byte chunks, 0 = whole) for every request."""

    async def chunks() -> AsyncIterator[bytes]:
        size = piece or len(body)
        for i in range(0, len(body), size):
            yield body[i : i + size]

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, content=chunks())

    return httpx.MockTransport(handler)


async def _events(body: bytes, *, stream: bool, piece: int = 0) -> list[StreamEvent]:
    seen: list[httpx.Request] = []
    async with httpx.AsyncClient(transport=_replay(body, seen, piece)) as client:
        provider = OpenAIProvider(client=client, api_key="sk-test")
        request = ModelRequest(model="gpt-4o", system="", messages=(), stream=stream)
        return [e async for e in provider.stream(request)]


async def test_text_stream_becomes_text_deltas_usage_and_finish(
    wire: Callable[[str], bytes],
) -> None:
    events = await _events(wire("openai_text_stream.sse"), stream=True)
    assert events == [
        TextDelta("It is"),
        TextDelta(" sunny in"),
        TextDelta(" Accra, 31°C."),
        Usage(input_tokens=41, output_tokens=9),
        Finish("stop"),
    ]


async def test_tool_call_fragments_keep_their_index_id_and_name(
    wire: Callable[[str], bytes],
) -> None:
    events = await _events(wire("openai_tool_calls_stream.sse"), stream=True)
    calls = [e for e in events if isinstance(e, ToolCallDelta)]
    assert calls[0] == ToolCallDelta(0, "call_DdmO9pD3xa9XTPNJ32zg2hcA", "get_weather", "")
    assert calls[1] == ToolCallDelta(0, None, None, '{"lo')
    assert [c.index for c in calls] == [0, 0, 0, 0, 1, 1, 1]
    assert events[-2:] == [Usage(82, 38), Finish("tool_calls")]


@pytest.mark.parametrize(
    ("streamed", "whole"),
    [
        ("openai_text_stream.sse", "openai_text.json"),
        ("openai_tool_calls_stream.sse", "openai_tool_calls.json"),
    ],
)
async def test_streaming_and_non_streaming_mean_the_same(
    wire: Callable[[str], bytes], summarise: Summarise, streamed: str, whole: str
) -> None:
    stream_events = await _events(wire(streamed), stream=True)
    whole_events = await _events(wire(whole), stream=False)
    assert summarise(stream_events) == summarise(whole_events)
    assert isinstance(whole_events[-1], Finish) and isinstance(stream_events[-1], Finish)


@pytest.mark.parametrize("piece", [1, 7, 64])
async def test_network_chunking_does_not_change_the_events(
    wire: Callable[[str], bytes], piece: int
) -> None:
    body = wire("openai_tool_calls_stream.sse")
    assert await _events(body, stream=True, piece=piece) == await _events(body, stream=True)


async def test_parsed_tool_arguments_are_the_models_json(
    wire: Callable[[str], bytes], summarise: Summarise
) -> None:
    calls = summarise(await _events(wire("openai_tool_calls_stream.sse"), stream=True))["calls"]
    assert [(c["name"], json.loads(c["arguments"])) for c in calls] == [
        ("get_weather", {"location": "Accra"}),
        ("get_time", {"zone": "GMT"}),
    ]


async def test_stream_without_done_marker_is_an_error(wire: Callable[[str], bytes]) -> None:
    with pytest.raises(ProviderError, match="stream ended before completion"):
        await _events(wire("openai_truncated_stream.sse"), stream=True)


async def test_malformed_chunk_is_an_error() -> None:
    body = b'data: {"choices": [{"index": 0, "delta": {"content": "Hi"}}]}\n\ndata: {"choi\n\n'
    with pytest.raises(ProviderError, match="malformed JSON"):
        await _events(body, stream=True)


async def test_error_event_inside_a_stream_is_an_error() -> None:
    body = b'data: {"error": {"message": "The model is overloaded", "type": "server_error"}}\n\n'
    with pytest.raises(ProviderError, match="The model is overloaded"):
        await _events(body, stream=True)


async def test_embeddings_come_back_in_input_order(wire: Callable[[str], bytes]) -> None:
    seen: list[httpx.Request] = []
    async with httpx.AsyncClient(transport=_replay(wire("openai_embeddings.json"), seen)) as client:
        provider = OpenAIProvider(client=client, api_key="sk-test", base_url="https://gw.test/v1/")
        vectors = await provider.embed(["first", "second"], "text-embedding-3-small")
    assert vectors == [[-0.0069, 0.0152, 0.9], [0.5, -0.25, 0.125]]
    assert str(seen[0].url) == "https://gw.test/v1/embeddings"
    assert json.loads(seen[0].content) == {
        "model": "text-embedding-3-small",
        "input": ["first", "second"],
    }
    assert seen[0].headers["authorization"] == "Bearer sk-test"


async def test_embeddings_without_vectors_are_a_provider_error() -> None:
    seen: list[httpx.Request] = []
    body = b'{"object": "list", "data": [{"object": "embedding", "index": 0}]}'
    async with httpx.AsyncClient(transport=_replay(body, seen)) as client:
        provider = OpenAIProvider(client=client, base_url="https://gw.test/v1")
        with pytest.raises(ProviderError, match="has no values"):
            await provider.embed(["first"], "text-embedding-3-small")


WEATHER = FunctionSpec(
    name="tool__get_weather",
    description="Gets the current weather",
    parameters={"type": "object", "properties": {"location": {"type": "string"}}},
)


def _history_request(**overrides: Any) -> ModelRequest:
    messages = (
        Message("user", "Weather in Accra?"),
        Message(
            "assistant",
            "",
            tool_calls=(ToolCall("call_1", "tool__get_weather", '{"location":"Accra"}'),),
        ),
        Message("tool", '{"temp": 31}', tool_call_id="call_1", name="tool__get_weather"),
        Message("assistant", "It is 31°C."),
        Message("user", "Thanks"),
    )
    fields: dict[str, Any] = {
        "model": "gpt-4o",
        "system": "You are helpful.",
        "messages": messages,
        "functions": (WEATHER,),
        "options": {"temperature": 0.2, "seed": 7, "stream_options": {"x": 1}},
    }
    fields.update(overrides)
    return ModelRequest(**fields)


def test_request_body_for_history_tools_and_options() -> None:
    body = build_chat_body(_history_request())
    assert body["model"] == "gpt-4o"
    assert body["messages"] == [
        {"role": "system", "content": "You are helpful."},
        {"role": "user", "content": "Weather in Accra?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "tool__get_weather", "arguments": '{"location":"Accra"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temp": 31}'},
        {"role": "assistant", "content": "It is 31°C."},
        {"role": "user", "content": "Thanks"},
    ]
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "tool__get_weather",
                "description": "Gets the current weather",
                # optional in the function's schema: required and nullable in strict form
                "parameters": {
                    "type": "object",
                    "properties": {"location": {"type": ["string", "null"]}},
                    "required": ["location"],
                    "additionalProperties": False,
                },
                "strict": True,
            },
        }
    ]
    assert build_chat_body(_history_request(), strict=False)["tools"][0]["function"] == {
        "name": "tool__get_weather",
        "description": "Gets the current weather",
        "parameters": {"type": "object", "properties": {"location": {"type": "string"}}},
    }
    assert body["temperature"] == 0.2 and body["seed"] == 7
    assert body["stream"] is True
    assert body["stream_options"] == {"x": 1, "include_usage": True}
    assert "response_format" not in body


def test_options_cannot_override_what_the_adapter_owns() -> None:
    body = build_chat_body(
        _history_request(options={"model": "other", "stream": True}, stream=False)
    )
    assert body["model"] == "gpt-4o"
    assert "stream" not in body and "stream_options" not in body


def test_structured_output_uses_json_schema_response_format() -> None:
    schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "days": {
                "type": "array",
                "items": {"type": "object", "properties": {"n": {"type": "number"}}},
            },
            "kind": {"enum": ["a", "b"]},
        },
        "required": ["city"],
    }
    request = _history_request(
        functions=(), response_schema={"name": "MainOutput", "schema": schema}
    )
    body = build_chat_body(request)
    day = {
        "type": "object",
        "properties": {"n": {"type": ["number", "null"]}},
        "required": ["n"],
        "additionalProperties": False,
    }
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "MainOutput",
            "schema": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": ["array", "null"], "items": day},
                    "kind": {"anyOf": [{"enum": ["a", "b"]}, {"type": "null"}]},
                },
                "required": ["city", "days", "kind"],
                "additionalProperties": False,
            },
            "strict": True,
        },
    }
    assert "tools" not in body
    loose = build_chat_body(request, strict=False)["response_format"]
    assert loose == {"type": "json_schema", "json_schema": {"name": "MainOutput", "schema": schema}}


def test_empty_system_prompt_is_left_out() -> None:
    body = build_chat_body(_history_request(system=""))
    assert body["messages"][0] == {"role": "user", "content": "Weather in Accra?"}


def test_repr_never_shows_the_key() -> None:
    provider = OpenAIProvider(client=httpx.AsyncClient(), api_key="sk-very-secret")
    assert "sk-very-secret" not in repr(provider)


def _json_transport(body: bytes) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body, headers={"content-type": "application/json"})

    return httpx.MockTransport(handler)


async def test_a_json_answer_to_a_streaming_request_is_read_whole(
    wire: Callable[[str], bytes], summarise: Summarise
) -> None:
    async with httpx.AsyncClient(transport=_json_transport(wire("openai_text.json"))) as client:
        provider = OpenAIProvider(client=client)
        request = ModelRequest(model="gpt-4o", system="", messages=())
        events = [e async for e in provider.stream(request)]
    assert summarise(events)["text"] == "It is sunny in Accra, 31°C."


async def test_a_json_error_in_place_of_a_stream_says_what_went_wrong() -> None:
    body = b'{"error": {"message": "Upstream model unavailable", "type": "server_error"}}'
    async with httpx.AsyncClient(transport=_json_transport(body)) as client:
        provider = OpenAIProvider(client=client, name="my-gateway")
        request = ModelRequest(model="m", system="", messages=())
        with pytest.raises(ProviderError, match="my-gateway API error: Upstream model unavailable"):
            [e async for e in provider.stream(request)]


async def test_a_refusal_reaches_the_engine_as_text(summarise: Summarise) -> None:
    streamed = (
        b'data: {"choices": [{"index": 0, "delta": {"role": "assistant", "refusal": ""}}]}\n\n'
        b'data: {"choices": [{"index": 0, "delta": {"refusal": "I can\'t help with that."}}]}\n\n'
        b'data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}\n\n'
        b"data: [DONE]\n\n"
    )
    whole = json.dumps(
        {
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "refusal": "I can't help with that.",
                    },
                    "finish_reason": "stop",
                }
            ]
        }
    ).encode()
    stream_events = await _events(streamed, stream=True)
    assert summarise(stream_events)["text"] == "I can't help with that."
    assert summarise(stream_events) == summarise(await _events(whole, stream=False))
