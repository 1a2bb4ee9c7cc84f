"""Gemini generateContent: captured streams and bodies in, neutral events out; request bodies."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

import httpx
import pytest

from auwgent.errors import ProviderError
from auwgent.ir.gemini_options import split_options
from auwgent.runtime.providers import (
    Finish,
    FunctionSpec,
    GeminiProvider,
    Message,
    ModelRequest,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from auwgent.runtime.providers.gemini import build_gemini_body

Summarise = Callable[[Sequence[StreamEvent]], dict[str, Any]]


class Replay:
    """A MockTransport that answers every request with the next captured body."""

    def __init__(self, *bodies: bytes, piece: int = 0) -> None:
        self.bodies = list(bodies)
        self.piece = piece
        self.seen: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        body = self.bodies[min(len(self.seen), len(self.bodies)) - 1]

        async def chunks() -> AsyncIterator[bytes]:
            size = self.piece or len(body)
            for i in range(0, len(body), size):
                yield body[i : i + size]

        return httpx.Response(200, content=chunks())


async def _run(replay: Replay, request: ModelRequest) -> tuple[GeminiProvider, list[StreamEvent]]:
    async with httpx.AsyncClient(transport=httpx.MockTransport(replay)) as client:
        provider = GeminiProvider(client=client, api_key="AIza-test-key")
        return provider, [e async for e in provider.stream(request)]


def _request(stream: bool = True, **fields: Any) -> ModelRequest:
    return ModelRequest(
        model="gemini-2.5-flash",
        system="",
        messages=(Message("user", "hi"),),
        stream=stream,
        **fields,
    )


async def test_text_stream(wire: Callable[[str], bytes]) -> None:
    replay = Replay(wire("gemini_text_stream.sse"))
    _, events = await _run(replay, _request())
    assert events == [
        TextDelta("It is"),
        TextDelta(" sunny in Accra"),
        TextDelta(", 31°C."),
        Usage(input_tokens=41, output_tokens=9),
        Finish("stop"),
    ]
    sent = replay.seen[0]
    assert sent.url.path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
    assert sent.url.params["alt"] == "sse"
    assert sent.headers["x-goog-api-key"] == "AIza-test-key"
    assert "key" not in sent.url.params


async def test_function_calls_arrive_whole_with_made_up_ids(wire: Callable[[str], bytes]) -> None:
    _, events = await _run(Replay(wire("gemini_function_call_stream.sse")), _request())
    calls = [e for e in events if isinstance(e, ToolCallDelta)]
    assert [(c.index, c.name, json.loads(c.arguments)) for c in calls] == [
        (0, "get_weather", {"location": "Accra"}),
        (1, "get_time", {"zone": "GMT"}),
    ]
    assert all(c.id for c in calls) and calls[0].id != calls[1].id
    # thinking tokens are billed as output
    assert events[-2:] == [Usage(82, 38), Finish("tool_calls")]


@pytest.mark.parametrize(
    ("streamed", "whole"),
    [
        ("gemini_text_stream.sse", "gemini_text.json"),
        ("gemini_function_call_stream.sse", "gemini_function_call.json"),
    ],
)
async def test_streaming_and_non_streaming_mean_the_same(
    wire: Callable[[str], bytes], summarise: Summarise, streamed: str, whole: str
) -> None:
    _, stream_events = await _run(Replay(wire(streamed)), _request())
    replay = Replay(wire(whole))
    _, whole_events = await _run(replay, _request(stream=False))
    assert replay.seen[0].url.path.endswith(":generateContent")

    def without_ids(summary: dict[str, Any]) -> dict[str, Any]:
        return {**summary, "calls": [{**c, "id": None} for c in summary["calls"]]}

    assert without_ids(summarise(stream_events)) == without_ids(summarise(whole_events))


@pytest.mark.parametrize("piece", [1, 5, 333])
async def test_network_chunking_does_not_change_the_events(
    wire: Callable[[str], bytes], summarise: Summarise, piece: int
) -> None:
    body = wire("gemini_text_stream.sse")
    _, whole = await _run(Replay(body), _request())
    _, split = await _run(Replay(body, piece=piece), _request())
    assert split == whole


async def test_thoughts_are_not_text_and_max_tokens_is_length(wire: Callable[[str], bytes]) -> None:
    _, events = await _run(Replay(wire("gemini_thinking_stream.sse")), _request())
    assert events == [TextDelta("Sunny."), Usage(12, 30), Finish("length")]


async def test_blocked_prompt_finishes_with_content_filter(wire: Callable[[str], bytes]) -> None:
    _, events = await _run(Replay(wire("gemini_blocked_prompt.json")), _request(stream=False))
    assert events == [Usage(9, None), Finish("content_filter")]


async def test_stream_without_finish_reason_is_an_error(wire: Callable[[str], bytes]) -> None:
    with pytest.raises(ProviderError, match="stream ended before completion") as caught:
        await _run(Replay(wire("gemini_truncated_stream.sse")), _request())
    assert caught.value.provider == "gemini"


async def test_thought_signatures_go_back_with_the_replayed_calls(
    wire: Callable[[str], bytes],
) -> None:
    replay = Replay(wire("gemini_function_call_stream.sse"), wire("gemini_text_stream.sse"))
    async with httpx.AsyncClient(transport=httpx.MockTransport(replay)) as client:
        provider = GeminiProvider(client=client, api_key="k")
        first = [e async for e in provider.stream(_request())]
        calls = tuple(
            ToolCall(e.id or "", e.name or "", e.arguments)
            for e in first
            if isinstance(e, ToolCallDelta)
        )
        history = (
            Message("user", "hi"),
            Message("assistant", "Let me check.", tool_calls=calls),
            Message("tool", '{"temp": 31}', tool_call_id=calls[0].id),
            Message("tool", '"12:00"', tool_call_id=calls[1].id),
        )
        second = ModelRequest(model="gemini-2.5-flash", system="", messages=history)
        [e async for e in provider.stream(second)]
    contents = json.loads(replay.seen[1].content)["contents"]
    assert contents[1] == {
        "role": "model",
        "parts": [
            {"text": "Let me check."},
            {
                "functionCall": {"name": "get_weather", "args": {"location": "Accra"}},
                "thoughtSignature": "CiQBVKhc7sig1",
            },
            {"functionCall": {"name": "get_time", "args": {"zone": "GMT"}}},
        ],
    }
    # both answers share one user turn; names recovered from the calls; ids we made up stay home
    assert contents[2] == {
        "role": "user",
        "parts": [
            {"functionResponse": {"name": "get_weather", "response": {"temp": 31}}},
            {"functionResponse": {"name": "get_time", "response": {"result": "12:00"}}},
        ],
    }


def test_request_body_for_system_history_tools_and_options() -> None:
    request = ModelRequest(
        model="gemini-2.5-flash",
        system="You are helpful.",
        messages=(
            Message("user", "Weather?"),
            Message(
                "assistant",
                "",
                tool_calls=(ToolCall("fc-1", "get_weather", '{"location": "Accra"}'),),
            ),
            Message("tool", "sunny", tool_call_id="fc-1", name="get_weather"),
        ),
        functions=(
            FunctionSpec("get_weather", "Gets the weather", {"type": "object", "properties": {}}),
        ),
        options={"temperature": 0.7, "top_k": 40, "top_p": 0.95, "max_output_tokens": 1024},
    )
    body = build_gemini_body(request)
    assert body == {
        "systemInstruction": {"parts": [{"text": "You are helpful."}], "role": "user"},
        "contents": [
            {"role": "user", "parts": [{"text": "Weather?"}]},
            {
                "role": "model",
                "parts": [
                    {
                        "functionCall": {
                            "name": "get_weather",
                            "args": {"location": "Accra"},
                            "id": "fc-1",
                        }
                    }
                ],
            },
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "name": "get_weather",
                            "response": {"result": "sunny"},
                            "id": "fc-1",
                        }
                    }
                ],
            },
        ],
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "get_weather",
                        "description": "Gets the weather",
                        "parametersJsonSchema": {"type": "object", "properties": {}},
                    }
                ]
            }
        ],
        "generationConfig": {"temperature": 0.7, "topK": 40, "topP": 0.95, "maxOutputTokens": 1024},
    }


def test_options_map_snake_case_and_route_request_level_fields() -> None:
    top, config = split_options(
        {
            "max_output_tokens": 10,
            "stopSequences": ["END"],
            "thinking_config": {"thinking_budget": 0, "include_thoughts": False},
            "safety_settings": [
                {"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}
            ],
            "tool_config": {"function_calling_config": {"mode": "ANY"}},
            "cached_content": "cachedContents/abc",
            "service_tier": "flex",
            "store": False,
            "labels": {"team": "a"},
            "some_future_knob": {"keep_me": 1},
            "generation_config": {"candidate_count": 1},
        }
    )
    assert config == {
        "maxOutputTokens": 10,
        "stopSequences": ["END"],
        "thinkingConfig": {"thinkingBudget": 0, "includeThoughts": False},
        "someFutureKnob": {"keep_me": 1},
        "candidateCount": 1,
    }
    assert top == {
        "safetySettings": [{"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}],
        "toolConfig": {"functionCallingConfig": {"mode": "ANY"}},
        "cachedContent": "cachedContents/abc",
        "serviceTier": "flex",
        "store": False,
        "labels": {"team": "a"},
    }


def test_structured_output_sets_json_mime_type_and_schema() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    body = build_gemini_body(_request(response_schema={"name": "MainOutput", "schema": schema}))
    assert body["generationConfig"] == {
        "responseMimeType": "application/json",
        "responseJsonSchema": schema,
    }
    assert "systemInstruction" not in body


async def test_one_text_uses_batch_embed_contents_with_the_options() -> None:
    body = b'{"embeddings": [{"values": [0.013168523, -0.008711934, -0.046782676]}]}'
    replay = Replay(body)
    async with httpx.AsyncClient(transport=httpx.MockTransport(replay)) as client:
        provider = GeminiProvider(client=client, api_key="k", base_url="https://gw.test/v1beta")
        options = {"output_dimensionality": 768, "task_type": "RETRIEVAL_QUERY", "title": "T"}
        vectors = await provider.embed(["hello"], "gemini-embedding-001", options)
    assert vectors == [[0.013168523, -0.008711934, -0.046782676]]
    assert (
        str(replay.seen[0].url)
        == "https://gw.test/v1beta/models/gemini-embedding-001:batchEmbedContents"
    )
    assert json.loads(replay.seen[0].content) == {
        "requests": [
            {
                "model": "models/gemini-embedding-001",
                "content": {"parts": [{"text": "hello"}], "role": "user"},
                "outputDimensionality": 768,
                "taskType": "RETRIEVAL_QUERY",
                "title": "T",
            }
        ]
    }


async def test_several_texts_use_batch_embed_contents(wire: Callable[[str], bytes]) -> None:
    replay = Replay(wire("gemini_batch_embeddings.json"))
    async with httpx.AsyncClient(transport=httpx.MockTransport(replay)) as client:
        provider = GeminiProvider(client=client, api_key="k")
        vectors = await provider.embed(["a", "b"], "models/gemini-embedding-001")
    assert vectors == [[0.013168523, -0.008711934, -0.046782676], [-0.02, 0.5, 0.25]]
    assert replay.seen[0].url.path == "/v1beta/models/gemini-embedding-001:batchEmbedContents"
    assert [
        r["content"]["parts"][0]["text"] for r in json.loads(replay.seen[0].content)["requests"]
    ] == ["a", "b"]


async def test_a_json_array_answer_to_a_streaming_request(
    wire: Callable[[str], bytes], summarise: Summarise
) -> None:
    chunks = [
        json.loads(line[6:])
        for line in wire("gemini_text_stream.sse").decode().splitlines()
        if line.startswith("data: ")
    ]
    body = json.dumps(chunks).encode()

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body, headers={"content-type": "application/json"})

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        provider = GeminiProvider(client=client)
        events = [e async for e in provider.stream(_request())]
    assert summarise(events)["text"] == "It is sunny in Accra, 31°C."
    assert events[-1] == Finish("stop")
