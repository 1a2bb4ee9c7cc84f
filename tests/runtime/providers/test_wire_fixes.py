"""The mismatches the real-traffic replay found, each pinned on its own.

Bodies here are small hand-made variants of recorded shapes (the recordings themselves are in
tests/data/wire/real/ and replayed by test_wire_real.py).
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from auwgent.errors import ProviderError
from auwgent.runtime.providers import (
    ContentPart,
    GeminiProvider,
    Message,
    ModelRequest,
    OpenAIProvider,
    RetryPolicy,
    StreamEvent,
    TextDelta,
    Timeouts,
    ToolCallDelta,
)
from auwgent.runtime.providers.http import Call, open_response, retry_info_delay
from auwgent.runtime.providers.wire import HttpxWire
from auwgent.testing.fake_servers import FakeGeminiServer, status, text

REQUEST = ModelRequest(model="m", system="", messages=(Message("user", "hi"),), stream=True)


def _sse(*chunks: Any, done: bool = True) -> bytes:
    lines = [f"data: {json.dumps(c)}\n\n" for c in chunks]
    if done:
        lines.append("data: [DONE]\n\n")
    return "".join(lines).encode()


async def _events(
    body: bytes, *, gemini: bool = False, stream: bool = True, content_type: str | None = None
) -> list[StreamEvent]:
    kind = content_type or ("text/event-stream" if stream else "application/json")

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": kind}, content=body)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        provider: OpenAIProvider | GeminiProvider
        if gemini:
            provider = GeminiProvider(client=client, api_key="key-1234")
        else:
            provider = OpenAIProvider(client=client, api_key="key-1234")
        request = ModelRequest(
            model="m", system="", messages=(Message("user", "hi"),), stream=stream
        )
        return [event async for event in provider.stream(request)]


# -- list-valued content ---------------------------------------------------------------------

MISTRAL_THINKING = {
    "id": "a1",
    "choices": [
        {
            "index": 0,
            "finish_reason": "stop",
            "message": {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": [{"type": "text", "text": "2+2 is 4"}]},
                    {"type": "text", "text": "4"},
                ],
            },
        }
    ],
}


async def test_list_content_keeps_the_text_parts_and_drops_the_reasoning() -> None:
    events = await _events(json.dumps(MISTRAL_THINKING).encode(), stream=False)
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["4"]


async def test_streamed_list_content_deltas_too() -> None:
    body = _sse(
        {
            "id": "a",
            "choices": [{"index": 0, "delta": {"content": [{"type": "thinking", "thinking": []}]}}],
        },
        {
            "id": "a",
            "choices": [{"index": 0, "delta": {"content": [{"type": "text", "text": "4"}]}}],
        },
        {"id": "a", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    )
    events = await _events(body)
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["4"]


# -- ids for calls that came without one -----------------------------------------------------


def _call_response(call_id: str | None) -> dict[str, Any]:
    call: dict[str, Any] = {"type": "function", "function": {"name": "f", "arguments": "{}"}}
    if call_id is not None:
        call["id"] = call_id
    return {
        "id": "resp-1",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {"role": "assistant", "tool_calls": [call, {**call}]},
            }
        ],
    }


@pytest.mark.parametrize("call_id", ["", None])
async def test_id_less_calls_get_stable_distinct_ids(call_id: str | None) -> None:
    body = json.dumps(_call_response(call_id)).encode()
    first = [e.id for e in await _events(body, stream=False) if isinstance(e, ToolCallDelta)]
    again = [e.id for e in await _events(body, stream=False) if isinstance(e, ToolCallDelta)]
    assert first == again, "the same response gives the same ids"
    assert all(i and i.startswith("auwgent_call_") for i in first)
    assert len(set(first)) == 2


async def test_real_ids_are_kept() -> None:
    body = json.dumps(_call_response("call_abc")).encode()
    ids = [e.id for e in await _events(body, stream=False) if isinstance(e, ToolCallDelta)]
    assert ids == ["call_abc", "call_abc"]


# -- non-text Gemini parts -------------------------------------------------------------------


async def test_gemini_non_text_parts_are_passed_on() -> None:
    parts = [
        {"executableCode": {"language": "PYTHON", "code": "print(1)"}},
        {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1\n"}},
        {"inlineData": {"mimeType": "image/png", "data": "iVBORw0K"}},
        {"text": "Done."},
    ]
    body = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}]}
    events = await _events(json.dumps(body).encode(), gemini=True, stream=False)
    assert [(e.kind, e.data) for e in events if isinstance(e, ContentPart)] == [
        ("executableCode", {"language": "PYTHON", "code": "print(1)"}),
        ("codeExecutionResult", {"outcome": "OUTCOME_OK", "output": "1\n"}),
        ("inlineData", {"mimeType": "image/png", "data": "iVBORw0K"}),
    ]
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Done."]


# -- JSON of the wrong shape -----------------------------------------------------------------

OPENAI_WRONG = [
    ({"tool_calls": "abc"}, "choices[0].delta.tool_calls is a string, expected a list"),
    ({"content": {"text": "hi"}}, "choices[0].delta.content is an object"),
    (
        {"tool_calls": [{"index": "zz", "function": {"name": "f"}}]},
        "choices[0].delta.tool_calls[].index is a string, expected an integer",
    ),
    (
        {"tool_calls": [{"index": 0, "function": {"name": 7}}]},
        "choices[0].delta.tool_calls[].function.name is an integer, expected a string",
    ),
]


@pytest.mark.parametrize(("delta", "message"), OPENAI_WRONG)
async def test_openai_json_of_the_wrong_shape_names_the_field(
    delta: dict[str, Any], message: str
) -> None:
    body = _sse({"id": "a", "choices": [{"index": 0, "delta": delta}]})
    with pytest.raises(ProviderError) as caught:
        await _events(body)
    assert caught.value.provider == "openai"
    assert str(caught.value).startswith("OpenAI API error: unexpected response shape: ")
    assert message in str(caught.value)


GEMINI_WRONG: list[tuple[Any, str]] = [
    ({"candidates": "x"}, "candidates is a string, expected a list"),
    ({"candidates": [{"content": {"parts": "abc"}}]}, "candidates[0].content.parts is a string"),
    (
        {"candidates": [{"content": {"parts": [{"functionCall": {"name": "f", "args": [1]}}]}}]},
        "functionCall.args is a list, expected an object",
    ),
    ({"candidates": [{"content": {"parts": [{"text": {"a": 1}}]}}]}, "parts[].text is an object"),
    ({"usageMetadata": {"promptTokenCount": "9"}}, "usageMetadata.promptTokenCount is a string"),
]


@pytest.mark.parametrize(("chunk", "message"), GEMINI_WRONG)
async def test_gemini_json_of_the_wrong_shape_names_the_field(chunk: Any, message: str) -> None:
    with pytest.raises(ProviderError) as caught:
        await _events(_sse(chunk, done=False), gemini=True)
    assert caught.value.provider == "gemini"
    assert "Gemini API error: unexpected response shape: " in str(caught.value)
    assert message in str(caught.value)


# -- RetryInfo ------------------------------------------------------------------------------

RETRY_INFO = {
    "error": {
        "code": 429,
        "message": "You exceeded your current quota.",
        "status": "RESOURCE_EXHAUSTED",
        "details": [
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "34.4s"},
        ],
    }
}


def test_retry_info_delay_reads_the_detail() -> None:
    assert retry_info_delay(json.dumps(RETRY_INFO).encode()) == pytest.approx(34.4)
    assert retry_info_delay(json.dumps([RETRY_INFO]).encode()) == pytest.approx(34.4)
    assert retry_info_delay(b'{"error": {"code": 429}}') is None
    assert retry_info_delay(b"RetryInfo but not JSON") is None


@pytest.mark.parametrize(("max_delay", "waited"), [(60.0, 34.4), (20.0, 20.0)])
async def test_retry_info_replaces_the_backoff_like_retry_after(
    max_delay: float, waited: float
) -> None:
    answers = [httpx.Response(429, json=RETRY_INFO), httpx.Response(200, json={})]
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    def handler(request: httpx.Request) -> httpx.Response:
        return answers.pop(0)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        policy = RetryPolicy(attempts=2, base_delay=0.01, max_delay=max_delay)
        wire = HttpxWire(client)
        request = wire.prepare("https://x.test/", {}, b"{}", None)
        call = Call("gemini", retry=policy, timeouts=Timeouts())
        async with open_response(wire, request, call, sleep=sleep) as response:
            assert response.status_code == 200
    assert sleeps == [pytest.approx(waited)]


async def test_a_gemini_429_with_retry_info_is_retried_over_http() -> None:
    script = [status(429, retry_delay=0.01), text("It is sunny.")]
    with FakeGeminiServer(script, api_key="key-1234") as server:
        async with httpx.AsyncClient() as client:
            provider = GeminiProvider(
                client=client,
                api_key="key-1234",
                base_url=server.base_url,
                retry=RetryPolicy(attempts=2, base_delay=30.0, max_delay=30.0),
            )
            events = [e async for e in provider.stream(REQUEST)]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "It is sunny."
    assert len(server.requests) == 2


# -- through a compiled agent: strict mode and embedding options ------------------------------

STRICT_AGENT = """
agent Main {
    default config {
        model: openai("gpt-4o")
        embedding: EMBEDDING
        prompt: "You answer questions."
    }
    tool lookup(q: string, limit?: number): string @desc "Looks something up"
}
"""


def _agent(embedding: str, **config: Any) -> Any:
    from auwgent import __version__
    from auwgent.compiler.pipeline import compile_sources
    from auwgent.runtime.agent import create_agent

    result = compile_sources({"main.agent": STRICT_AGENT.replace("EMBEDDING", embedding)})
    assert result.ok, [str(d) for d in result.diagnostics]
    doc = dict(result.documents["main.agent"])
    settings = {"tools": {"lookup": lambda q, limit=None: "found"}, "retry": {"attempts": 1}}
    return create_agent(
        doc,
        {**settings, **config},
        ir_hash=doc["hash"],
        compiler_version=__version__,
        ir_version=doc["ir_version"],
    )


@pytest.mark.parametrize("strict", [None, True, False])
async def test_strict_is_on_by_default_and_the_runtime_config_turns_it_off(
    strict: bool | None,
) -> None:
    from auwgent.testing.fake_servers import FakeOpenAIServer

    extra = {} if strict is None else {"strict": strict}
    with FakeOpenAIServer([text("Done.")], api_key="sk-1") as server:
        agent = _agent(
            'openai("text-embedding-3-small")',
            apiKeys={"openaiApiKey": "sk-1"},
            baseUrls={"openai": server.base_url},
            protocol="native",
            **extra,
        )
        await agent.run("Find it.")
    function = server.requests[0].body["tools"][0]["function"]
    parameters = function["parameters"]
    if strict is False:
        assert "strict" not in function
        assert parameters["required"] == ["q"]
        assert parameters["properties"]["limit"] == {"type": "number"}
    else:
        assert function["strict"] is True
        assert parameters["required"] == ["q", "limit"]
        assert parameters["additionalProperties"] is False
        assert "null" in parameters["properties"]["limit"]["type"]


def test_strict_must_be_a_boolean() -> None:
    from auwgent.errors import ConfigError

    with pytest.raises(ConfigError, match="strict: expected true or false"):
        _agent('openai("text-embedding-3-small")', apiKeys={"openaiApiKey": "k"}, strict="no")


@pytest.mark.parametrize(
    ("embedding", "field_name", "size"),
    [
        ('openai("text-embedding-3-small", { dimensions: 16 })', "dimensions", 16),
        (
            'gemini("gemini-embedding-001", { output_dimensionality: 12, task_type: "RETRIEVAL_QUERY" })',
            "outputDimensionality",
            12,
        ),
    ],
)
async def test_embedding_options_reach_the_api(embedding: str, field_name: str, size: int) -> None:
    from auwgent.testing.fake_servers import FakeGeminiServer, FakeOpenAIServer

    vectors: list[Any] = []

    class Retrieval:
        async def onRunStart(self, session: Any, ctx: Any) -> None:  # noqa: N802 - manual's name
            vectors.append(await ctx["embed"]("hello world"))

    with FakeOpenAIServer([text("Done.")]) as chat, FakeGeminiServer([]) as gemini:
        agent = _agent(
            embedding,
            apiKeys={"openaiApiKey": "k", "geminiApiKey": "k"},
            baseUrls={"openai": chat.base_url, "gemini": gemini.base_url},
            middleware=[Retrieval()],
        )
        await agent.run("hi")
    assert len(vectors[0]) == size
    if field_name == "dimensions":
        body = next(r.body for r in chat.requests if r.path.endswith("/embeddings"))
        assert body["dimensions"] == 16
    else:
        body = gemini.requests[0].body["requests"][0]
        assert body["outputDimensionality"] == 12 and body["taskType"] == "RETRIEVAL_QUERY"
