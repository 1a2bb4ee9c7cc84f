"""Our request bodies equal the official SDKs' for the same request.

Each case builds one request twice: with the official SDK (``openai``, ``google-genai``; dev
dependencies only), whose HTTP client is an ``httpx2.MockTransport`` so nothing leaves the
machine, and with our adapter (its body builder, or the adapter itself over an
``httpx.MockTransport`` for embeddings and URLs). The JSON bodies must be equal after
normalising what the APIs accept either way: key order (dicts compare without it), the case of
field names (the Gemini API reads ``thinking_budget`` and ``thinkingBudget`` alike, and the SDK
sends some nested messages in snake_case), and an empty ``generationConfig`` (the SDK sends one
when there is nothing in it; the API treats it as absent).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from auwgent.runtime.providers import (
    FunctionSpec,
    GeminiProvider,
    Message,
    ModelRequest,
    OpenAIProvider,
    ToolCall,
)
from auwgent.runtime.providers.gemini import build_gemini_body
from auwgent.runtime.providers.openai import build_chat_body

openai = pytest.importorskip("openai")
genai = pytest.importorskip("google.genai")
httpx2 = pytest.importorskip("httpx2")
types = genai.types

SYSTEM = "You are a weather assistant."
WEATHER = {
    "type": "object",
    "properties": {"location": {"type": "string"}, "unit": {"enum": ["c", "f"]}},
    "required": ["location"],
}
WEATHER_FN = FunctionSpec("tool__get_weather", "Gets the weather", WEATHER)
FORECAST = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "celsius": {"type": "number"}},
    "required": ["city", "celsius"],
}

# Two calls answered in one round (parallel tool results), then a question.
CALLS = (
    ToolCall("call_1", "tool__get_weather", '{"location": "Accra"}'),
    ToolCall("call_2", "tool__get_weather", '{"location": "Lagos"}'),
)
HISTORY = (
    Message("user", "Weather in Accra and Lagos?"),
    Message("assistant", "", tool_calls=CALLS),
    Message("tool", "sunny", tool_call_id="call_1", name="tool__get_weather"),
    Message("tool", '{"sky": "rain"}', tool_call_id="call_2", name="tool__get_weather"),
    Message("user", "And tomorrow?"),
)

CHAT_ANSWER = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 0,
    "model": "gpt-4o",
    "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}
    ],
}
GEMINI_ANSWER = {
    "candidates": [
        {"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP"}
    ]
}


class Seen:
    """An httpx2 mock handler that records requests and answers like the API."""

    def __init__(self) -> None:
        self.requests: list[Any] = []

    def __call__(self, request: Any) -> Any:
        self.requests.append(request)
        url = str(request.url)
        if url.endswith("/embeddings"):
            count = len(json.loads(request.content)["input"])
            rows = [{"object": "embedding", "index": i, "embedding": [0.5]} for i in range(count)]
            return httpx2.Response(200, json={"object": "list", "data": rows, "model": "m"})
        if "batchEmbedContents" in url:
            count = len(json.loads(request.content)["requests"])
            return httpx2.Response(200, json={"embeddings": [{"values": [0.5]}] * count})
        if "alt=sse" in url or json.loads(request.content).get("stream"):
            answer = GEMINI_ANSWER if "gen.test" in url else {**CHAT_ANSWER, "choices": []}
            body = f"data: {json.dumps(answer)}\n\n" + (
                "" if "gen.test" in url else "data: [DONE]\n\n"
            )
            return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body)
        return httpx2.Response(200, json=GEMINI_ANSWER if "gen.test" in url else CHAT_ANSWER)

    @property
    def body(self) -> Any:
        return json.loads(self.requests[-1].content)


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def normal(value: Any) -> Any:
    """A JSON body with field names in lowerCamelCase and no empty ``generationConfig``."""
    if isinstance(value, dict):
        return {
            _camel(k): normal(v)
            for k, v in value.items()
            if not (k == "generationConfig" and v == {})
        }
    if isinstance(value, list):
        return [normal(v) for v in value]
    return value


def _openai_sdk(call: Callable[[Any], Any]) -> Seen:
    seen = Seen()
    client = openai.OpenAI(
        api_key="sk-test",
        base_url="https://oa.test/v1",
        http_client=httpx2.Client(transport=httpx2.MockTransport(seen)),
        max_retries=0,
    )
    result = call(client)
    if hasattr(result, "__iter__") and not isinstance(result, dict):
        list(result)  # a stream: read it to the end
    return seen


def _gemini_sdk(call: Callable[[Any], Any]) -> Seen:
    seen = Seen()
    client = genai.Client(
        api_key="key-test",
        http_options=types.HttpOptions(
            base_url="https://gen.test",
            api_version="v1beta",
            httpx_client=httpx2.Client(transport=httpx2.MockTransport(seen)),
        ),
    )
    result = call(client)
    if hasattr(result, "__iter__") and not isinstance(
        result, (dict, types.GenerateContentResponse)
    ):
        list(result)
    return seen


def _request(**fields: Any) -> ModelRequest:
    base: dict[str, Any] = {
        "model": "gpt-4o",
        "system": SYSTEM,
        "messages": (Message("user", "Weather in Accra?"),),
        "stream": False,
    }
    return ModelRequest(**{**base, **fields})


def _openai_messages(
    history: tuple[Message, ...] = (Message("user", "Weather in Accra?"),),
) -> list[Any]:
    """The same conversation written as the SDK's users write it."""
    out: list[Any] = [{"role": "system", "content": SYSTEM}]
    for m in history:
        if m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id, "content": m.content})
        elif m.tool_calls:
            calls = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in m.tool_calls
            ]
            out.append({"role": "assistant", "content": None, "tool_calls": calls})
        else:
            out.append({"role": m.role, "content": m.content})
    return out


STRICT_WEATHER = {
    "type": "object",
    "properties": {
        "location": {"type": "string"},
        "unit": {"anyOf": [{"enum": ["c", "f"]}, {"type": "null"}]},
    },
    "required": ["location", "unit"],
    "additionalProperties": False,
}

# -- OpenAI Chat Completions -------------------------------------------------------------------

OPENAI_CASES: dict[str, tuple[ModelRequest, Callable[[Any], Any], dict[str, Any]]] = {
    "plain": (
        _request(),
        lambda c: c.chat.completions.create(model="gpt-4o", messages=_openai_messages()),
        {},
    ),
    "streaming": (
        _request(stream=True),
        lambda c: c.chat.completions.create(
            model="gpt-4o",
            messages=_openai_messages(),
            stream=True,
            stream_options={"include_usage": True},
        ),
        {},
    ),
    "options of the manual": (
        _request(
            options={
                "temperature": 0.7,
                "top_p": 0.9,
                "max_completion_tokens": 256,
                "seed": 7,
                "stop": ["END"],
                "presence_penalty": 0.1,
                "frequency_penalty": 0.2,
                "reasoning_effort": "low",
                "user": "u-1",
                "service_tier": "flex",
                "parallel_tool_calls": False,
            }
        ),
        lambda c: c.chat.completions.create(
            model="gpt-4o",
            messages=_openai_messages(),
            temperature=0.7,
            top_p=0.9,
            max_completion_tokens=256,
            seed=7,
            stop=["END"],
            presence_penalty=0.1,
            frequency_penalty=0.2,
            reasoning_effort="low",
            user="u-1",
            service_tier="flex",
            parallel_tool_calls=False,
        ),
        {},
    ),
    "native tools, strict": (
        _request(functions=(WEATHER_FN,)),
        lambda c: c.chat.completions.create(
            model="gpt-4o",
            messages=_openai_messages(),
            tools=[
                {
                    "type": "function",
                    "function": {
                        "name": "tool__get_weather",
                        "description": "Gets the weather",
                        "parameters": STRICT_WEATHER,
                        "strict": True,
                    },
                }
            ],
        ),
        {},
    ),
    "native tools, strict off": (
        _request(functions=(WEATHER_FN,)),
        lambda c: c.chat.completions.create(
            model="gpt-4o",
            messages=_openai_messages(),
            tools=[
                {
                    "type": "function",
                    "function": {
                        "name": "tool__get_weather",
                        "description": "Gets the weather",
                        "parameters": WEATHER,
                    },
                }
            ],
        ),
        {"strict": False},
    ),
    "parallel tool results in history": (
        _request(messages=HISTORY),
        lambda c: c.chat.completions.create(model="gpt-4o", messages=_openai_messages(HISTORY)),
        {},
    ),
    "structured output": (
        _request(response_schema={"name": "Forecast", "schema": FORECAST}),
        lambda c: c.chat.completions.create(
            model="gpt-4o",
            messages=_openai_messages(),
            response_format={
                "type": "json_schema",
                "json_schema": {
                    "name": "Forecast",
                    "schema": {**FORECAST, "additionalProperties": False},
                    "strict": True,
                },
            },
        ),
        {},
    ),
}


@pytest.mark.parametrize("case", list(OPENAI_CASES))
def test_openai_chat_body_equals_the_sdk(case: str) -> None:
    request, sdk_call, flags = OPENAI_CASES[case]
    sdk = _openai_sdk(sdk_call)
    assert sdk.requests[-1].url.path == "/v1/chat/completions"
    assert build_chat_body(request, strict=flags.get("strict", True)) == sdk.body


async def _capture(provider_call: Callable[[httpx.AsyncClient], Any]) -> list[httpx.Request]:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = Seen()(httpx2.Request(request.method, str(request.url), content=request.content))
        return httpx.Response(
            answer.status_code, headers=dict(answer.headers), content=answer.content
        )

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        await provider_call(client)
    return seen


@pytest.mark.parametrize(
    ("texts", "options"),
    [
        (["hello"], {"dimensions": 256, "encoding_format": "float"}),
        (["a", "b"], {"dimensions": 64, "encoding_format": "float", "user": "u-1"}),
    ],
)
async def test_openai_embeddings_body_equals_the_sdk(
    texts: list[str], options: dict[str, Any]
) -> None:
    sdk = _openai_sdk(
        lambda c: c.embeddings.create(model="text-embedding-3-small", input=texts, **options)
    )
    ours = await _capture(
        lambda client: OpenAIProvider(
            client=client, api_key="k", base_url="https://oa.test/v1"
        ).embed(texts, "text-embedding-3-small", options)
    )
    assert ours[0].url.path == sdk.requests[-1].url.path == "/v1/embeddings"
    assert json.loads(ours[0].content) == sdk.body


# -- Gemini -----------------------------------------------------------------------------------

G_TOOL = types.Tool(
    function_declarations=[
        types.FunctionDeclaration(
            name="tool__get_weather", description="Gets the weather", parameters_json_schema=WEATHER
        )
    ]
)
G_CALLS = [
    types.Part(
        function_call=types.FunctionCall(name="tool__get_weather", args={"location": "Accra"})
    ),
    types.Part(
        function_call=types.FunctionCall(name="tool__get_weather", args={"location": "Lagos"})
    ),
]
G_HISTORY = [
    types.Content(role="user", parts=[types.Part(text="Weather in Accra and Lagos?")]),
    types.Content(role="model", parts=G_CALLS),
    types.Content(
        role="user",
        parts=[
            types.Part.from_function_response(
                name="tool__get_weather", response={"result": "sunny"}
            ),
            types.Part.from_function_response(name="tool__get_weather", response={"sky": "rain"}),
        ],
    ),
    types.Content(role="user", parts=[types.Part(text="And tomorrow?")]),
]
# Gemini gives no ids: ours are made up and never sent back.
MADE = tuple(
    ToolCall(f"auwgent_call_{i}", c.name, c.arguments) for i, c in enumerate(CALLS, start=1)
)
OUR_G_HISTORY = (
    Message("user", "Weather in Accra and Lagos?"),
    Message("assistant", "", tool_calls=MADE),
    Message("tool", "sunny", tool_call_id="auwgent_call_1", name="tool__get_weather"),
    Message("tool", '{"sky": "rain"}', tool_call_id="auwgent_call_2", name="tool__get_weather"),
    Message("user", "And tomorrow?"),
)
SIGNATURE = "CiQBcsjafA1a2pW5YmFzZTY0IHRob3VnaHQgc2lnbmF0dXJl"


def _g(model: str = "gemini-2.5-flash", **fields: Any) -> ModelRequest:
    return _request(model=model, **fields)


def _gen(config: Any, contents: Any = "Weather in Accra?") -> Callable[[Any], Any]:
    return lambda c: c.models.generate_content(
        model="gemini-2.5-flash", contents=contents, config=config
    )


GEMINI_CASES: dict[str, tuple[ModelRequest, Callable[[Any], Any], dict[str, str]]] = {
    "plain": (_g(), _gen(types.GenerateContentConfig(system_instruction=SYSTEM)), {}),
    "generation options of the manual": (
        _g(
            options={
                "temperature": 0.2,
                "max_output_tokens": 256,
                "top_p": 0.9,
                "top_k": 40,
                "stop_sequences": ["END"],
                "candidate_count": 1,
                "seed": 7,
                "presence_penalty": 0.1,
                "frequency_penalty": 0.2,
            }
        ),
        _gen(
            types.GenerateContentConfig(
                system_instruction=SYSTEM,
                temperature=0.2,
                max_output_tokens=256,
                top_p=0.9,
                top_k=40,
                stop_sequences=["END"],
                candidate_count=1,
                seed=7,
                presence_penalty=0.1,
                frequency_penalty=0.2,
            )
        ),
        {},
    ),
    "request-level options": (
        _g(
            options={
                "safety_settings": [
                    {"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_ONLY_HIGH"}
                ],
                "tool_config": {"function_calling_config": {"mode": "ANY"}},
                "cached_content": "cachedContents/abc",
                "labels": {"team": "support"},
                "service_tier": "flex",
                "store": False,
            }
        ),
        _gen(
            types.GenerateContentConfig(
                system_instruction=SYSTEM,
                safety_settings=[
                    types.SafetySetting(
                        category="HARM_CATEGORY_HARASSMENT", threshold="BLOCK_ONLY_HIGH"
                    )
                ],
                tool_config=types.ToolConfig(
                    function_calling_config=types.FunctionCallingConfig(mode="ANY")
                ),
                cached_content="cachedContents/abc",
                labels={"team": "support"},
                service_tier="flex",
                store=False,
            )
        ),
        {},
    ),
    "thinking config": (
        _g(options={"thinking_config": {"thinking_budget": 0, "include_thoughts": True}}),
        _gen(
            types.GenerateContentConfig(
                system_instruction=SYSTEM,
                thinking_config=types.ThinkingConfig(thinking_budget=0, include_thoughts=True),
            )
        ),
        {},
    ),
    "native tools": (
        _g(functions=(WEATHER_FN,)),
        _gen(types.GenerateContentConfig(system_instruction=SYSTEM, tools=[G_TOOL])),
        {},
    ),
    "parallel tool results in history": (
        _g(messages=OUR_G_HISTORY, functions=(WEATHER_FN,)),
        _gen(types.GenerateContentConfig(system_instruction=SYSTEM, tools=[G_TOOL]), G_HISTORY),
        {},
    ),
    "thought signatures replayed": (
        _g(messages=OUR_G_HISTORY),
        _gen(
            types.GenerateContentConfig(system_instruction=SYSTEM),
            [
                G_HISTORY[0],
                types.Content(
                    role="model",
                    parts=[
                        types.Part(
                            function_call=G_CALLS[0].function_call,
                            thought_signature=__import__("base64").b64decode(SIGNATURE),
                        ),
                        G_CALLS[1],
                    ],
                ),
                *G_HISTORY[2:],
            ],
        ),
        {"auwgent_call_1": SIGNATURE},
    ),
    "structured output": (
        _g(response_schema={"name": "Forecast", "schema": FORECAST}),
        _gen(
            types.GenerateContentConfig(
                system_instruction=SYSTEM,
                response_mime_type="application/json",
                response_json_schema=FORECAST,
            )
        ),
        {},
    ),
}


@pytest.mark.parametrize("case", list(GEMINI_CASES))
def test_gemini_generate_content_body_equals_the_sdk(case: str) -> None:
    request, sdk_call, signatures = GEMINI_CASES[case]
    sdk = _gemini_sdk(sdk_call)
    assert sdk.requests[-1].url.path == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert normal(build_gemini_body(request, signatures)) == normal(sdk.body)


async def test_gemini_streaming_url_and_body_equal_the_sdk() -> None:
    sdk = _gemini_sdk(
        lambda c: c.models.generate_content_stream(
            model="gemini-2.5-flash",
            contents="Weather in Accra?",
            config=types.GenerateContentConfig(system_instruction=SYSTEM, temperature=0.2),
        )
    )

    async def run(client: httpx.AsyncClient) -> None:
        provider = GeminiProvider(client=client, api_key="k", base_url="https://gen.test")
        request = _g(stream=True, options={"temperature": 0.2})
        async for _ in provider.stream(request):
            pass

    ours = await _capture(run)
    theirs = sdk.requests[-1]
    assert (ours[0].url.path, ours[0].url.params["alt"]) == (
        theirs.url.path,
        theirs.url.params["alt"],
    )
    assert normal(json.loads(ours[0].content)) == normal(sdk.body)


@pytest.mark.parametrize(
    ("texts", "options"),
    [
        (["hello"], {"output_dimensionality": 768, "task_type": "RETRIEVAL_QUERY"}),
        (["a", "b"], {"task_type": "RETRIEVAL_DOCUMENT", "title": "Handbook"}),
    ],
)
async def test_gemini_embeddings_body_equals_the_sdk(
    texts: list[str], options: dict[str, Any]
) -> None:
    sdk = _gemini_sdk(
        lambda c: c.models.embed_content(
            model="gemini-embedding-001", contents=texts, config=types.EmbedContentConfig(**options)
        )
    )
    ours = await _capture(
        lambda client: GeminiProvider(
            client=client, api_key="k", base_url="https://gen.test"
        ).embed(texts, "gemini-embedding-001", options)
    )
    assert ours[0].url.path == sdk.requests[-1].url.path
    assert normal(json.loads(ours[0].content)) == normal(sdk.body)
