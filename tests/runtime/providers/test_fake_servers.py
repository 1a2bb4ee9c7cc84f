"""The fake servers, checked with a plain HTTP client: wire shapes, recording, scripts."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from auwgent.testing.fake_servers import (
    FakeGeminiServer,
    FakeOpenAIServer,
    RecordedRequest,
    Turn,
    status,
    structured,
    text,
    tool_calls,
)
from auwgent.testing.offline import hashed_embedding


def _sse_json(body: str) -> list[Any]:
    payloads = [line[6:] for line in body.split("\n") if line.startswith("data: ")]
    assert payloads[-1] == "[DONE]"
    return [json.loads(p) for p in payloads[:-1]]


def _chat(server: FakeOpenAIServer, **body: Any) -> httpx.Response:
    payload = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}], **body}
    return httpx.post(f"{server.base_url}/chat/completions", json=payload, timeout=5)


def test_openai_stream_has_the_real_chunk_shapes() -> None:
    with FakeOpenAIServer(
        [tool_calls([("get_weather", {"location": "Accra"})], text="Hm.")], chunk_size=5
    ) as server:
        response = _chat(server, stream=True, stream_options={"include_usage": True})
    assert response.headers["content-type"] == "text/event-stream"
    chunks = _sse_json(response.text)
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert "".join(d.get("content") or "" for d in deltas) == "Hm."
    fragments = [t for d in deltas for t in d.get("tool_calls", [])]
    assert fragments[0]["id"] == "call_1_0" and fragments[0]["function"]["name"] == "get_weather"
    arguments = "".join(f["function"]["arguments"] for f in fragments)
    assert json.loads(arguments) == {"location": "Accra"}
    assert len(fragments) > 2  # arguments really arrive in pieces
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] > 0


def test_openai_stream_without_include_usage_has_no_usage_chunk() -> None:
    with FakeOpenAIServer([text("hi")]) as server:
        chunks = _sse_json(_chat(server, stream=True).text)
    assert all(c["choices"] for c in chunks)


def test_openai_whole_response() -> None:
    with FakeOpenAIServer([structured({"city": "Accra"})]) as server:
        payload = _chat(server).json()
    assert payload["object"] == "chat.completion"
    choice = payload["choices"][0]
    assert json.loads(choice["message"]["content"]) == {"city": "Accra"}
    assert choice["finish_reason"] == "stop"
    assert set(payload["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}


def test_requests_are_recorded_and_script_items_may_be_functions() -> None:
    def echo(request: RecordedRequest) -> Turn:
        return text(f"you said {request.body['messages'][-1]['content']}")

    with FakeOpenAIServer([echo], api_key="sk-x") as server:
        response = httpx.post(
            f"{server.base_url}/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "ping"}]},
            headers={"Authorization": "Bearer sk-x"},
        )
    assert response.json()["choices"][0]["message"]["content"] == "you said ping"
    (recorded,) = server.requests
    assert (recorded.method, recorded.path, recorded.stream) == (
        "POST",
        "/v1/chat/completions",
        False,
    )
    assert recorded.headers["authorization"] == "Bearer sk-x"
    assert recorded.body["model"] == "m"


def test_running_past_the_script_says_so() -> None:
    with FakeOpenAIServer([text("only one")]) as server:
        _chat(server)
        response = _chat(server)
    assert response.status_code == 400
    assert "no reply left for chat request #2" in response.json()["error"]["message"]


def test_status_replies_use_each_apis_error_body() -> None:
    with FakeOpenAIServer([status(429, retry_after=2, message="slow down")]) as server:
        response = _chat(server)
    assert response.status_code == 429 and response.headers["retry-after"] == "2"
    assert response.json()["error"]["message"] == "slow down"
    with FakeGeminiServer([status(503)]) as gemini:
        response = httpx.post(f"{gemini.base_url}/v1beta/models/g:generateContent", json={})
    assert response.json()["error"] == {
        "code": 503,
        "message": "The service returned status 503.",
        "status": "UNAVAILABLE",
    }


def test_missing_key_is_rejected() -> None:
    with FakeGeminiServer([text("x")], api_key="AIza-right") as server:
        response = httpx.post(
            f"{server.base_url}/v1beta/models/g:generateContent",
            json={},
            headers={"x-goog-api-key": "AIza-wrong"},
        )
    assert response.status_code == 401


def test_gemini_stream_puts_finish_reason_on_the_last_event() -> None:
    with FakeGeminiServer(
        [tool_calls([("lookup", {"q": "x"})], text="Looking it up")], chunk_size=4
    ) as server:
        response = httpx.post(
            f"{server.base_url}/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
            json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
        )
    events = [
        json.loads(line[6:]) for line in response.text.split("\n") if line.startswith("data: ")
    ]
    texts = [
        p["text"] for e in events for p in e["candidates"][0]["content"]["parts"] if "text" in p
    ]
    assert "".join(texts) == "Looking it up" and len(texts) == 4
    assert events[-1]["candidates"][0]["content"]["parts"] == [
        {"functionCall": {"name": "lookup", "args": {"q": "x"}}}
    ]
    assert [("finishReason" in e["candidates"][0]) for e in events] == [False] * 4 + [True]
    assert all(e["usageMetadata"]["promptTokenCount"] > 0 for e in events)
    assert server.requests[0].stream and server.requests[0].query == {"alt": "sse"}


@pytest.mark.parametrize("dimensions", [3, 16])
def test_embeddings_are_deterministic(dimensions: int) -> None:
    with (
        FakeGeminiServer(embedding_dimensions=dimensions) as gemini,
        FakeOpenAIServer(embedding_dimensions=dimensions) as openai,
    ):
        one = httpx.post(
            f"{gemini.base_url}/v1beta/models/e:embedContent",
            json={"content": {"parts": [{"text": "hello world"}]}},
        ).json()
        batch = httpx.post(
            f"{gemini.base_url}/v1beta/models/e:batchEmbedContents",
            json={
                "requests": [
                    {"model": "models/e", "content": {"parts": [{"text": t}]}} for t in ("a", "b")
                ]
            },
        ).json()
        listed = httpx.post(
            f"{openai.base_url}/embeddings", json={"model": "e", "input": ["hello world"]}
        ).json()
    assert one["embedding"]["values"] == hashed_embedding("hello world", dimensions)
    assert [e["values"] for e in batch["embeddings"]] == [
        hashed_embedding(t, dimensions) for t in "ab"
    ]
    assert listed["data"][0]["embedding"] == hashed_embedding("hello world", dimensions)


def test_base_url_needs_a_running_server() -> None:
    with pytest.raises(RuntimeError, match="not running"):
        _ = FakeOpenAIServer().base_url


def test_a_failing_script_function_is_reported_not_swallowed() -> None:
    def broken(request: RecordedRequest) -> Turn:
        raise KeyError("messages")

    with FakeOpenAIServer(broken) as server:
        response = _chat(server)
    assert response.status_code == 400
    assert "script function raised KeyError" in response.json()["error"]["message"]


@pytest.mark.parametrize("method", ["generateContent", "streamGenerateContent"])
def test_gemini_says_broken_arguments_have_no_wire_form(method: str) -> None:
    # Gemini sends calls as objects: broken JSON text is a script error, answered clearly
    # instead of a traceback in the server thread and a dropped connection.
    with FakeGeminiServer([tool_calls([("f", '{"a": 1')])]) as server:
        url = f"{server.base_url}/v1beta/models/m:{method}"
        response = httpx.post(url, params={"alt": "sse"}, json={"contents": []}, timeout=5)
    assert response.status_code == 400
    assert "arguments of 'f' are not valid JSON" in response.json()["error"]["message"]


def test_a_server_can_be_restarted() -> None:
    server = FakeOpenAIServer([text("one"), text("two")])
    with server:
        assert _chat(server).json()["choices"][0]["message"]["content"] == "one"
    with server:
        assert _chat(server).json()["choices"][0]["message"]["content"] == "two"
    assert len(server.requests) == 2
