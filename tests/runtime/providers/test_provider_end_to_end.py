"""Compiled agents run on each provider through the real-HTTP fake servers.

Each test compiles a small ``.agent`` source, builds the agent with ``create_agent`` (as the
generated bindings do) and points the provider at a fake server with ``baseUrls``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from auwgent import __version__
from auwgent.compiler.pipeline import compile_sources
from auwgent.runtime.agent import Agent, create_agent
from auwgent.testing.fake_servers import (
    FakeGeminiServer,
    FakeOpenAIServer,
    ServerReply,
    disconnect,
    malformed_chunk,
    stall,
    status,
    structured,
    text,
    tool_calls,
)

WEATHER_AGENT = """
model Brain {
    provider: PROVIDER
}
agent Main {
    default config {
        model: Brain
        embedding: EMBEDDING
        prompt: "You are a weather assistant."
    }
    tool get_weather(location: string): string @desc "Gets the weather"
}
"""

STRUCTURED_AGENT = """
type Forecast {
    city: string
    celsius: number
}
agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "Answer with a forecast."
    }
    output: Forecast
}
"""

GEMINI = 'gemini("gemini-2.5-flash", { temperature: 0.2, max_output_tokens: 256 })'
OPENAI = 'openai("gpt-4o", { temperature: 0.1 })'
GROQ = 'custom("my-groq-api", "https://api.groq.com/openai/v1", "llama-3.3-70b-versatile")'


def _compile(source: str) -> dict[str, Any]:
    result = compile_sources({"main.agent": source})
    assert result.ok, [str(d) for d in result.diagnostics]
    return dict(result.documents["main.agent"])


def _weather_doc(provider: str, embedding: str | None = None) -> dict[str, Any]:
    source = WEATHER_AGENT.replace("PROVIDER", provider)
    # By default the chat model embeds too, without its chat options (E2077 refuses them there).
    plain = provider.split(", {")[0] + ")" if ", {" in provider else provider
    return _compile(source.replace("EMBEDDING", embedding or plain))


def _agent(doc: Mapping[str, Any], **config: Any) -> Agent:
    settings: dict[str, Any] = {
        "tools": {"get_weather": lambda location: f"sunny in {location}"},
        "retry": {"attempts": 3, "baseDelay": 0.01, "maxDelay": 0.05},
        "timeouts": {"connect": 2, "firstByte": 2, "idle": 1},
        **config,
    }
    return create_agent(
        doc,
        settings,
        ir_hash=doc["hash"],
        compiler_version=__version__,
        ir_version=doc["ir_version"],
    )


def _record(agent: Agent) -> list[tuple[str, Any]]:
    seen: list[tuple[str, Any]] = []
    agent.on_intent(lambda name, value, agent_name: seen.append((name, value)))
    return seen


BLOCK_CALL = "[tool_call: get_weather]\nlocation: Accra\n[/tool_call]"
BLOCK_TEXT = "[response_text]\nIt is sunny in Accra.\n[/response_text]"


async def test_gemini_blocks_tool_loop() -> None:
    with FakeGeminiServer([text(BLOCK_CALL), text(BLOCK_TEXT)], api_key="AIza-k") as server:
        agent = _agent(
            _weather_doc(GEMINI),
            apiKeys={"geminiApiKey": "AIza-k"},
            baseUrls={"gemini": server.base_url},
        )
        seen = _record(agent)
        session = await agent.run("Weather in Accra?")
    assert [name for name, _ in seen] == ["tool_call", "tool_result", "response_text"]
    assert seen[-1][1] == {"text": "It is sunny in Accra."}
    assert session["turns"][-1]["status"] == "complete"
    first, second = (r.body for r in server.requests)
    assert first["generationConfig"] == {"temperature": 0.2, "maxOutputTokens": 256}
    assert first["systemInstruction"]["parts"][0]["text"].startswith("You are a weather assistant.")
    assert "sunny in Accra" in json.dumps(second["contents"])


async def test_openai_native_tool_loop() -> None:
    script = [tool_calls([("tool__get_weather", {"location": "Accra"})]), text("Sunny in Accra.")]
    with FakeOpenAIServer(script, api_key="sk-k") as server:
        agent = _agent(
            _weather_doc(OPENAI),
            apiKeys={"openaiApiKey": "sk-k"},
            baseUrls={"openai": server.base_url},
            protocol="native",
        )
        seen = _record(agent)
        await agent.run("Weather in Accra?")
    assert seen[0] == ("tool_call", {"type": "get_weather", "args": {"location": "Accra"}})
    assert seen[-1] == ("response_text", {"text": "Sunny in Accra."})
    first, second = (r.body for r in server.requests)
    assert [t["function"]["name"] for t in first["tools"]] == ["tool__get_weather"]
    assert first["temperature"] == 0.1 and "stream" not in first  # nobody reads partials
    assert second["messages"][-2]["tool_calls"][0]["id"] == "call_1_0"
    assert second["messages"][-1]["role"] == "tool"
    assert second["messages"][-1]["tool_call_id"] == "call_1_0"


async def test_gemini_native_tool_loop() -> None:
    script = [tool_calls([("tool__get_weather", {"location": "Accra"})]), text("Sunny.")]
    with FakeGeminiServer(script) as server:
        agent = _agent(
            _weather_doc(GEMINI),
            apiKeys={"geminiApiKey": "k"},
            baseUrls={"gemini": server.base_url},
            protocol="native",
        )
        seen = _record(agent)
        await agent.run("Weather?")
    assert seen[-1] == ("response_text", {"text": "Sunny."})
    contents = server.requests[1].body["contents"]
    assert contents[-2]["parts"][-1]["functionCall"]["name"] == "tool__get_weather"
    response = contents[-1]["parts"][0]["functionResponse"]
    assert response["name"] == "tool__get_weather"
    assert "sunny in Accra" in json.dumps(response["response"])


async def test_custom_provider_with_its_own_key_field_and_base_url() -> None:
    with FakeOpenAIServer([text(BLOCK_TEXT)], api_key="gsk-k") as server:
        agent = _agent(
            _weather_doc(GROQ),
            apiKeys={"myGroqApiApiKey": "gsk-k"},
            baseUrls={"my-groq-api": server.base_url},
        )
        seen = _record(agent)
        await agent.run("hi")
    assert seen == [("response_text", {"text": "It is sunny in Accra."})]
    assert server.requests[0].body["model"] == "llama-3.3-70b-versatile"


async def test_native_structured_output_on_openai() -> None:
    with FakeOpenAIServer([structured({"city": "Accra", "celsius": 31})]) as server:
        agent = _agent(
            _compile(STRUCTURED_AGENT),
            apiKeys={"openaiApiKey": "sk"},
            baseUrls={"openai": server.base_url},
            protocol="native",
            tools={},
        )
        seen = _record(agent)
        await agent.run("Forecast for Accra")
    assert seen == [
        ("response_schema", {"type": "Forecast", "response": {"city": "Accra", "celsius": 31}})
    ]
    response_format = server.requests[0].body["response_format"]
    assert response_format["type"] == "json_schema"
    assert response_format["json_schema"]["name"] == "Forecast"


@pytest.mark.parametrize("kind", ["openai", "gemini"])
async def test_embeddings_reach_middleware(kind: str) -> None:
    vectors: list[Any] = []

    class Retrieval:
        async def onRunStart(self, session: Any, ctx: Any) -> None:  # noqa: N802 - manual's name
            vectors.append(await ctx["embed"]("hello world"))
            vectors.append(await ctx["embed_batch"](["a", "b", "c"]))

    server_type = FakeOpenAIServer if kind == "openai" else FakeGeminiServer
    provider = OPENAI if kind == "openai" else GEMINI
    embedding = (
        'openai("text-embedding-3-small")' if kind == "openai" else 'gemini("gemini-embedding-001")'
    )
    with server_type([text(BLOCK_TEXT)]) as server:
        agent = _agent(
            _weather_doc(provider, embedding),
            apiKeys={f"{kind}ApiKey": "k"},
            baseUrls={kind: server.base_url},
            middleware=[Retrieval()],
        )
        await agent.run("hi")
    assert len(vectors[0]) == 8 and len(vectors[1]) == 3
    paths = [r.path for r in server.requests]
    if kind == "gemini":
        assert paths[:2] == [
            "/v1beta/models/gemini-embedding-001:batchEmbedContents",
            "/v1beta/models/gemini-embedding-001:batchEmbedContents",
        ]
    else:
        assert paths[:2] == ["/v1/embeddings", "/v1/embeddings"]


async def test_retries_then_success_inside_a_run() -> None:
    with FakeOpenAIServer([status(429, retry_after=0), status(503), text(BLOCK_TEXT)]) as server:
        agent = _agent(
            _weather_doc(OPENAI),
            apiKeys={"openaiApiKey": "k"},
            baseUrls={"openai": server.base_url},
        )
        seen = _record(agent)
        await agent.run("hi")
    assert seen == [("response_text", {"text": "It is sunny in Accra."})]
    assert len(server.requests) == 3


@pytest.mark.parametrize("kind", ["openai", "gemini"])
async def test_500_forever_ends_the_run_with_an_error_intent(kind: str) -> None:
    server_type = FakeOpenAIServer if kind == "openai" else FakeGeminiServer
    key = "secret-key-that-must-not-leak"
    with server_type(lambda request: status(500, message="Backend exploded")) as server:
        agent = _agent(
            _weather_doc(OPENAI if kind == "openai" else GEMINI),
            apiKeys={f"{kind}ApiKey": key},
            baseUrls={kind: server.base_url},
        )
        seen = _record(agent)
        session = await agent.run("hi")
    assert len(server.requests) == 3
    errors = [value for name, value in seen if name == "error"]
    assert errors, seen
    message = json.dumps(errors[-1])
    assert kind in message.lower() and "500" in message and "Backend exploded" in message
    assert key not in json.dumps(session) and key not in message


@pytest.mark.parametrize(
    ("fault", "words"),
    [
        (disconnect(after_chunks=2), "stream interrupted"),
        (malformed_chunk(after_chunks=1), "malformed JSON"),
        (stall(5.0, after_chunks=1), "idle timeout"),
    ],
)
@pytest.mark.parametrize("kind", ["openai", "gemini"])
async def test_broken_streams_end_the_run_with_an_error_and_return_the_session(
    kind: str, fault: ServerReply, words: str
) -> None:
    server_type = FakeOpenAIServer if kind == "openai" else FakeGeminiServer
    with server_type([fault]) as server:
        agent = _agent(
            _weather_doc(OPENAI if kind == "openai" else GEMINI),
            apiKeys={f"{kind}ApiKey": "k"},
            baseUrls={kind: server.base_url},
            timeouts={"connect": 2, "firstByte": 2, "idle": 0.2},
        )
        seen = _record(agent)
        agent.on_intent_partial(lambda name, value, who: None)  # so the answer is streamed
        session = await agent.run("hi")
    assert session["turns"][-1]["input"] == {"text": "hi"}
    errors = [value for name, value in seen if name == "error"]
    assert errors and words in json.dumps(errors[-1])
    assert not any(name == "response_text" for name, _ in seen)


@pytest.mark.parametrize("chunk_size", [1, 3, 500])
async def test_block_answers_decode_the_same_however_the_server_chunks_them(
    chunk_size: int,
) -> None:
    with FakeOpenAIServer([text(BLOCK_CALL), text(BLOCK_TEXT)], chunk_size=chunk_size) as server:
        agent = _agent(
            _weather_doc(OPENAI),
            apiKeys={"openaiApiKey": "k"},
            baseUrls={"openai": server.base_url},
        )
        seen = _record(agent)
        await agent.run("Weather in Accra?")
    assert [name for name, _ in seen] == ["tool_call", "tool_result", "response_text"]
    assert seen[0][1] == {"type": "get_weather", "args": {"location": "Accra"}}
    assert seen[-1][1] == {"text": "It is sunny in Accra."}
