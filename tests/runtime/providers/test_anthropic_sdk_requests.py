"""Our Messages API request bodies equal the official ``anthropic`` SDK's for the same call.

Each case builds one request twice: with the SDK (a dev dependency only), whose HTTP client is
an ``httpx2.MockTransport`` so nothing leaves the machine, and with our adapter's body builder.
The JSON bodies must be equal as they are (dicts compare without key order): no normalising.
The SDK's typed parameters no longer include the sampling fields (``temperature``, ``top_p``,
``top_k``); the API still reads them (recorded traffic has them), so the SDK side passes them
through ``extra_body``, as its users do. The last tests send through our provider too, and
compare the URL and the body as sent. Headers differ on purpose: this SDK sends its key as
``Authorization: Bearer`` with its own newer ``anthropic-version``; we send ``x-api-key`` with
``anthropic-version: 2023-06-01``, the pair the Messages API documents.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from auwgent.runtime.providers import ContentPart, FunctionSpec, Message, ModelRequest, ToolCall
from auwgent.runtime.providers.anthropic import AnthropicProvider, build_messages_body

anthropic = pytest.importorskip("anthropic")
httpx2 = pytest.importorskip("httpx2")

MODEL = "claude-sonnet-4-5"
DATE = "Current date and time: 2026-12-01T10:30:00+00:00 (Tuesday, 01 December 2026 10:30 GMT)"
SYSTEM = "You are a weather assistant.\n\n" + DATE
HEAD = "You are a weather assistant."
WEATHER = {
    "type": "object",
    "properties": {"location": {"type": "string"}, "unit": {"enum": ["c", "f"]}},
    "required": ["location"],
}
FORECAST = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
    "required": ["city", "celsius"],
    "additionalProperties": False,
}
WEATHER_FN = FunctionSpec("tool__get_weather", "Gets the weather", WEATHER)
TIME_FN = FunctionSpec("tool__get_time", "Gets the time", {"type": "object", "properties": {}})
WEATHER_TOOL = {
    "name": "tool__get_weather",
    "description": "Gets the weather",
    "input_schema": WEATHER,
}
TIME_TOOL = {
    "name": "tool__get_time",
    "description": "Gets the time",
    "input_schema": {"type": "object", "properties": {}},
}
ASK = Message("user", "Weather in Accra?")
THINKING = ContentPart(
    "thinking",
    {"type": "thinking", "thinking": "I should look it up.", "signature": "EqQBCkgIARAB..."},
)
REDACTED = ContentPart("redacted_thinking", {"type": "redacted_thinking", "data": "EmwKAhgBEgy..."})
CALLS = (
    ToolCall("toolu_01", "tool__get_weather", '{"location": "Accra"}'),
    ToolCall("toolu_02", "tool__get_weather", '{"location": "Lagos"}'),
)
HISTORY = (
    Message("user", "Weather in Accra and Lagos?"),
    Message("assistant", "", tool_calls=CALLS),
    Message("tool", "sunny", tool_call_id="toolu_01", name="tool__get_weather"),
    Message("tool", '{"sky": "rain"}', tool_call_id="toolu_02", name="tool__get_weather"),
    Message("user", "And tomorrow?"),
)
USE_1 = {
    "type": "tool_use",
    "id": "toolu_01",
    "name": "tool__get_weather",
    "input": {"location": "Accra"},
}
USE_2 = {
    "type": "tool_use",
    "id": "toolu_02",
    "name": "tool__get_weather",
    "input": {"location": "Lagos"},
}
SDK_HISTORY = [
    {"role": "user", "content": "Weather in Accra and Lagos?"},
    {"role": "assistant", "content": [USE_1, USE_2]},
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_01", "content": "sunny"},
            {"type": "tool_result", "tool_use_id": "toolu_02", "content": '{"sky": "rain"}'},
        ],
    },
    {"role": "user", "content": "And tomorrow?"},
]
ANSWER = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": MODEL,
    "content": [{"type": "text", "text": "ok"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 1, "output_tokens": 1},
}
STREAM = "".join(
    f"event: {e['type']}\ndata: {json.dumps(e)}\n\n"
    for e in (
        {"type": "message_start", "message": {**ANSWER, "content": [], "stop_reason": None}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "ok"}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"output_tokens": 1},
        },
        {"type": "message_stop"},
    )
)


class Seen:
    """An httpx2 mock handler that records requests and answers like the API."""

    def __init__(self) -> None:
        self.requests: list[Any] = []

    def __call__(self, request: Any) -> Any:
        self.requests.append(request)
        if json.loads(request.content).get("stream"):
            headers = {"content-type": "text/event-stream"}
            return httpx2.Response(200, headers=headers, content=STREAM)
        return httpx2.Response(200, json=ANSWER)

    @property
    def body(self) -> Any:
        return json.loads(self.requests[-1].content)


def _sdk(call: Callable[[Any], Any]) -> Seen:
    seen = Seen()
    client = anthropic.Anthropic(
        api_key="sk-ant-test",
        base_url="https://anthropic.test",
        http_client=httpx2.Client(transport=httpx2.MockTransport(seen)),
        max_retries=0,
    )
    result = call(client)
    if hasattr(result, "__iter__") and not isinstance(result, dict):
        list(result)  # a stream: read it to the end
    return seen


def _request(**fields: Any) -> ModelRequest:
    base: dict[str, Any] = {"model": MODEL, "system": SYSTEM, "messages": (ASK,), "stream": False}
    return ModelRequest(**{**base, **fields})


def _create(**fields: Any) -> Callable[[Any], Any]:
    """The SDK call ``messages.create(**fields)`` with the defaults of our requests."""
    base: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 4096,
        "system": SYSTEM,
        "messages": [{"role": "user", "content": "Weather in Accra?"}],
    }
    merged = {k: v for k, v in {**base, **fields}.items() if v is not None}
    return lambda client: client.messages.create(**merged)


def _cached_system(ttl: str | None = None) -> list[dict[str, Any]]:
    mark = {"type": "ephemeral", "ttl": ttl} if ttl else {"type": "ephemeral"}
    return [{"type": "text", "text": HEAD, "cache_control": mark}, {"type": "text", "text": DATE}]


CASES: dict[str, tuple[ModelRequest, Callable[[Any], Any]]] = {
    "plain": (_request(), _create()),
    "streaming": (_request(stream=True), _create(stream=True)),
    "no system prompt": (_request(system=""), _create(system=None)),
    "sampling and stop options": (
        _request(
            options={
                "max_tokens": 512,
                "temperature": 0.2,
                "top_p": 0.9,
                "top_k": 40,
                "stop_sequences": ["END"],
            }
        ),
        _create(
            max_tokens=512,
            stop_sequences=["END"],
            extra_body={"temperature": 0.2, "top_p": 0.9, "top_k": 40},
        ),
    ),
    "request options": (
        _request(
            options={
                "metadata": {"user_id": "u-1"},
                "service_tier": "standard_only",
                "inference_geo": "us",
                "speed": "standard",
            }
        ),
        _create(
            metadata={"user_id": "u-1"},
            service_tier="standard_only",
            inference_geo="us",
            speed="standard",
        ),
    ),
    "one tool": (_request(functions=(WEATHER_FN,)), _create(tools=[WEATHER_TOOL])),
    "two tools and tool_choice": (
        _request(functions=(WEATHER_FN, TIME_FN), options={"tool_choice": {"type": "any"}}),
        _create(tools=[WEATHER_TOOL, TIME_TOOL], tool_choice={"type": "any"}),
    ),
    "caching: system and tools": (
        _request(functions=(WEATHER_FN, TIME_FN), options={"cache": True}),
        _create(
            system=_cached_system(),
            tools=[WEATHER_TOOL, {**TIME_TOOL, "cache_control": {"type": "ephemeral"}}],
        ),
    ),
    "caching: one hour": (
        _request(functions=(WEATHER_FN,), options={"cache": "1h"}),
        _create(
            system=_cached_system("1h"),
            tools=[{**WEATHER_TOOL, "cache_control": {"type": "ephemeral", "ttl": "1h"}}],
        ),
    ),
    "caching: system only": (
        _request(options={"cache": "5m"}),
        _create(system=_cached_system("5m")),
    ),
    "caching: a system prompt without the date line": (
        _request(system="Be terse.", options={"cache": True}),
        _create(
            system=[{"type": "text", "text": "Be terse.", "cache_control": {"type": "ephemeral"}}]
        ),
    ),
    "caching off": (
        _request(functions=(WEATHER_FN,), options={"cache": False}),
        _create(tools=[WEATHER_TOOL]),
    ),
    "thinking enabled": (
        _request(options={"thinking": {"type": "enabled", "budget_tokens": 2048}}),
        _create(thinking={"type": "enabled", "budget_tokens": 2048}),
    ),
    "thinking budget above the default max_tokens": (
        _request(options={"thinking": {"type": "enabled", "budget_tokens": 10000}}),
        _create(max_tokens=14096, thinking={"type": "enabled", "budget_tokens": 10000}),
    ),
    "adaptive thinking with effort": (
        _request(options={"thinking": {"type": "adaptive"}, "output_config": {"effort": "low"}}),
        _create(thinking={"type": "adaptive"}, output_config={"effort": "low"}),
    ),
    "thinking replayed before a call": (
        _request(
            messages=(
                ASK,
                Message("assistant", "", tool_calls=CALLS[:1], reasoning=(THINKING,)),
                Message("tool", "sunny", tool_call_id="toolu_01", name="tool__get_weather"),
            ),
            functions=(WEATHER_FN,),
            options={"thinking": {"type": "enabled", "budget_tokens": 1024}},
        ),
        _create(
            messages=[
                {"role": "user", "content": "Weather in Accra?"},
                {"role": "assistant", "content": [THINKING.data, USE_1]},
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_01", "content": "sunny"}
                    ],
                },
            ],
            tools=[WEATHER_TOOL],
            thinking={"type": "enabled", "budget_tokens": 1024},
        ),
    ),
    "redacted thinking replayed with text": (
        _request(
            messages=(
                ASK,
                Message("assistant", "It is sunny.", reasoning=(REDACTED, THINKING)),
                Message("user", "Thanks"),
            ),
        ),
        _create(
            messages=[
                {"role": "user", "content": "Weather in Accra?"},
                {
                    "role": "assistant",
                    "content": [
                        REDACTED.data,
                        THINKING.data,
                        {"type": "text", "text": "It is sunny."},
                    ],
                },
                {"role": "user", "content": "Thanks"},
            ]
        ),
    ),
    "parallel tool results, then a question": (
        _request(messages=HISTORY, functions=(WEATHER_FN,)),
        _create(messages=SDK_HISTORY, tools=[WEATHER_TOOL]),
    ),
    "multi-turn text": (
        _request(messages=(ASK, Message("assistant", "Sunny."), Message("user", "And Lagos?"))),
        _create(
            messages=[
                {"role": "user", "content": "Weather in Accra?"},
                {"role": "assistant", "content": "Sunny."},
                {"role": "user", "content": "And Lagos?"},
            ]
        ),
    ),
    "text before a call": (
        _request(messages=(ASK, Message("assistant", "Let me check.", tool_calls=CALLS[:1]))),
        _create(
            messages=[
                {"role": "user", "content": "Weather in Accra?"},
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "Let me check."}, USE_1],
                },
            ]
        ),
    ),
    "broken and non-object arguments replayed": (
        _request(
            messages=(
                ASK,
                Message(
                    "assistant",
                    "",
                    tool_calls=(
                        ToolCall("toolu_a", "tool__get_weather", '{"location": "Ac'),
                        ToolCall("toolu_b", "tool__get_time", "[1, 2]"),
                        ToolCall("toolu_c", "tool__get_time", ""),
                    ),
                ),
            )
        ),
        _create(
            messages=[
                {"role": "user", "content": "Weather in Accra?"},
                {
                    "role": "assistant",
                    "content": [
                        {
                            "type": "tool_use",
                            "id": "toolu_a",
                            "name": "tool__get_weather",
                            "input": {},
                        },
                        {
                            "type": "tool_use",
                            "id": "toolu_b",
                            "name": "tool__get_time",
                            "input": {"value": [1, 2]},
                        },
                        {
                            "type": "tool_use",
                            "id": "toolu_c",
                            "name": "tool__get_time",
                            "input": {},
                        },
                    ],
                },
            ]
        ),
    ),
    "structured output": (
        _request(response_schema={"name": "Forecast", "schema": FORECAST}),
        _create(output_config={"format": {"type": "json_schema", "schema": FORECAST}}),
    ),
    "structured output with effort": (
        _request(
            response_schema={"name": "Forecast", "schema": FORECAST},
            options={"output_config": {"effort": "high"}},
        ),
        _create(
            output_config={"effort": "high", "format": {"type": "json_schema", "schema": FORECAST}}
        ),
    ),
    "streaming with thinking, tools and caching": (
        _request(
            stream=True,
            functions=(WEATHER_FN,),
            options={"thinking": {"type": "enabled", "budget_tokens": 1024}, "cache": True},
        ),
        _create(
            stream=True,
            system=_cached_system(),
            tools=[{**WEATHER_TOOL, "cache_control": {"type": "ephemeral"}}],
            thinking={"type": "enabled", "budget_tokens": 1024},
        ),
    ),
}


def test_there_are_enough_cases() -> None:
    assert len(CASES) >= 20


@pytest.mark.parametrize("case", list(CASES))
def test_messages_body_equals_the_sdk(case: str) -> None:
    request, call = CASES[case]
    assert build_messages_body(request) == _sdk(call).body


@pytest.mark.parametrize("stream", [False, True])
async def test_url_and_api_headers_equal_the_sdk(stream: bool) -> None:
    sdk = _sdk(_create(stream=True) if stream else _create()).requests[-1]
    sent: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        if stream:
            return httpx.Response(
                200, headers={"content-type": "text/event-stream"}, content=STREAM
            )
        return httpx.Response(200, json=ANSWER)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        provider = AnthropicProvider(
            client=client, api_key="sk-ant-test", base_url="https://anthropic.test"
        )
        events = [e async for e in provider.stream(_request(stream=stream))]
    assert events
    ours = sent[0]
    assert str(ours.url) == str(sdk.url) == "https://anthropic.test/v1/messages"
    assert ours.headers["content-type"] == sdk.headers["content-type"] == "application/json"
    assert ours.headers["x-api-key"] == "sk-ant-test"
    assert ours.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in ours.headers
    assert json.loads(ours.content) == json.loads(sdk.content)
