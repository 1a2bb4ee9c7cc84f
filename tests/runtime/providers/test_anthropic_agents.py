"""Compiled agents on ``anthropic(...)`` through the real-HTTP fake Messages API.

Each test compiles a small ``.agent`` source, builds the agent as the generated bindings do and
points it at :class:`FakeAnthropicServer` with ``baseUrls``. The server refuses, as the real API
does, a request without ``max_tokens`` or ``anthropic-version`` and a thinking block sent back
with a signature other than the one it gave.
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
    FakeAnthropicServer,
    disconnect,
    error_event,
    status,
    structured,
    text,
    tool_calls,
)

AGENT = """
agent Main {
    default config {
        model: anthropic("claude-sonnet-4-5"OPTIONS)
        prompt: "You are a weather assistant."
    }
    tool get_weather(location: string): string @desc "Gets the weather"
}
"""

STRUCTURED = """
type Forecast {
    city: string
    celsius: number
}
agent Main {
    default config {
        model: anthropic("claude-sonnet-4-5")
        prompt: "Answer with a forecast."
    }
    output: Forecast
}
"""

KEY = "sk-ant-test-key"
CALL = ("tool__get_weather", {"location": "Accra"})
BLOCK_CALL = "[tool_call: get_weather]\nlocation: Accra\n[/tool_call]"
BLOCK_TEXT = "[response_text]\nIt is sunny in Accra.\n[/response_text]"


def _doc(options: str = "", source: str = AGENT) -> dict[str, Any]:
    result = compile_sources({"main.agent": source.replace("OPTIONS", options)})
    assert result.ok, [str(d) for d in result.diagnostics]
    return dict(result.documents["main.agent"])


def _agent(doc: Mapping[str, Any], server: FakeAnthropicServer, **config: Any) -> Agent:
    settings: dict[str, Any] = {
        "apiKeys": {"anthropicApiKey": KEY},
        "baseUrls": {"anthropic": server.base_url},
        "tools": {"get_weather": _weather},
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


CALLED: list[str] = []


def _weather(location: str) -> str:
    CALLED.append(location)
    return f"sunny in {location}"


def _record(agent: Agent) -> list[tuple[str, Any]]:
    seen: list[tuple[str, Any]] = []
    agent.on_intent(lambda name, value, agent_name: seen.append((name, value)))
    return seen


@pytest.fixture(autouse=True)
def _fresh_calls() -> None:
    CALLED.clear()


async def test_native_tool_loop_pairs_tool_use_with_tool_result() -> None:
    with FakeAnthropicServer([tool_calls([CALL]), text("Sunny in Accra.")], api_key=KEY) as server:
        agent = _agent(_doc(), server, protocol="native")
        seen = _record(agent)
        session = await agent.run("Weather in Accra?")
    assert seen[0] == ("tool_call", {"type": "get_weather", "args": {"location": "Accra"}})
    assert seen[-1] == ("response_text", {"text": "Sunny in Accra."})
    first, second = server.requests
    assert first.path == "/v1/messages"
    assert first.headers["x-api-key"] == KEY
    assert first.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in first.headers
    assert first.body["max_tokens"] == 4096 and "stream" not in first.body
    assert [t["name"] for t in first.body["tools"]] == ["tool__get_weather"]
    assert first.body["tools"][0]["input_schema"]["required"] == ["location"]
    assistant, results = second.body["messages"][-2:]
    assert assistant == {
        "role": "assistant",
        "content": [
            {
                "type": "tool_use",
                "id": "toolu_fake1_0",
                "name": "tool__get_weather",
                "input": {"location": "Accra"},
            }
        ],
    }
    assert results == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_fake1_0", "content": "sunny in Accra"}
        ],
    }
    calls = session["turns"][-1]["model_calls"]
    assert [c["finish_reason"] for c in calls] == ["tool_calls", "stop"]
    assert calls[0]["model"] == "anthropic:claude-sonnet-4-5"


@pytest.mark.parametrize("streamed", [False, True])
async def test_block_protocol_tool_loop(streamed: bool) -> None:
    with FakeAnthropicServer([text(BLOCK_CALL), text(BLOCK_TEXT)]) as server:
        agent = _agent(_doc(), server)
        if streamed:
            parts = [event async for event in agent.stream("Weather in Accra?")]
            assert parts
        seen = _record(agent)
        if not streamed:
            await agent.run("Weather in Accra?")
    if not streamed:
        assert [name for name, _ in seen] == ["tool_call", "tool_result", "response_text"]
        assert seen[-1][1] == {"text": "It is sunny in Accra."}
    assert CALLED == ["Accra"]
    first, second = server.requests
    assert first.body.get("stream", False) is streamed
    assert "tools" not in first.body
    assert first.body["system"].startswith("You are a weather assistant.")
    # The block protocol's history: the model's text as it wrote it, the results as a user turn.
    assert second.body["messages"][1] == {"role": "assistant", "content": BLOCK_CALL}
    assert "sunny in Accra" in second.body["messages"][2]["content"]


@pytest.mark.parametrize("streamed", [False, True])
async def test_thinking_goes_back_signed_and_is_never_answer_text(streamed: bool) -> None:
    options = ', { thinking: { type: "enabled", budget_tokens: 2048 } }'
    script = [
        tool_calls([CALL], thinking="The user wants the weather; call the tool."),
        text("Sunny in Accra.", thinking="Now I can answer."),
    ]
    with FakeAnthropicServer(script, chunk_size=5) as server:
        agent = _agent(_doc(options), server, protocol="native")
        seen = _record(agent)
        if streamed:
            session = None
            async for _ in agent.stream("Weather?"):
                pass
        else:
            session = await agent.run("Weather?")
    assert seen[-1] == ("response_text", {"text": "Sunny in Accra."})
    assert "answer" not in json.dumps([v for n, v in seen if n == "response_text"]).lower()
    second = server.requests[1].body
    assert second["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert second["max_tokens"] == 4096
    assistant = second["messages"][1]["content"]
    # First the thinking block exactly as the API sent it (the server checks the signature).
    assert assistant[0]["type"] == "thinking"
    assert assistant[0]["thinking"] == "The user wants the weather; call the tool."
    assert assistant[1]["type"] == "tool_use"
    if session is not None:
        parts = session["turns"][-1]["parts"]
        assert [p["kind"] for p in parts] == ["thinking", "thinking"]
        assert parts[1]["data"]["thinking"] == "Now I can answer."


async def test_a_restored_session_sends_its_thinking_back() -> None:
    options = ', { thinking: { type: "enabled", budget_tokens: 1024 } }'
    script = [
        tool_calls([CALL], thinking="Call the tool first."),
        text("Sunny.", thinking="Answer."),
        text("Still sunny."),
    ]
    with FakeAnthropicServer(script) as server:
        doc = _doc(options)
        first = await _agent(doc, server, protocol="native").run("Weather?")
        stored = json.loads(json.dumps(first))  # through JSON, as a store keeps it
        await _agent(doc, server, protocol="native").run("And now?", session=stored)
    history = server.requests[2].body["messages"]
    thinking = [b for m in history if isinstance(m["content"], list) for b in m["content"]]
    assert [b["type"] for b in thinking][:2] == ["thinking", "tool_use"]
    assert any(b.get("thinking") == "Answer." for b in thinking)


async def test_thinking_budget_raises_the_default_max_tokens() -> None:
    options = ', { thinking: { type: "enabled", budget_tokens: 8000 } }'
    with FakeAnthropicServer([text("Hi.")]) as server:
        await _agent(_doc(options), server).run("hi")
    assert server.requests[0].body["max_tokens"] == 8000 + 4096


async def test_max_tokens_option_is_sent_as_written() -> None:
    with FakeAnthropicServer([text(BLOCK_TEXT)]) as server:
        await _agent(_doc(", { max_tokens: 300, temperature: 0.2 }"), server).run("hi")
    assert server.requests[0].body["max_tokens"] == 300
    assert server.requests[0].body["temperature"] == 0.2


async def test_prompt_caching_marks_tools_and_system_and_reports_cache_tokens() -> None:
    script = [tool_calls([CALL]), text("Sunny.")]
    with FakeAnthropicServer(script) as server:
        agent = _agent(_doc(', { cache: "1h" }'), server, protocol="native")
        session = await agent.run("Weather?")
    body = server.requests[0].body
    breakpoint = {"type": "ephemeral", "ttl": "1h"}
    assert body["tools"][-1]["cache_control"] == breakpoint
    system = body["system"]
    assert system[0]["cache_control"] == breakpoint
    assert system[0]["text"].startswith("You are a weather assistant.")
    # The date-and-time line changes every second: it stays out of the cached prefix.
    assert system[1]["text"].startswith("Current date and time: ")
    assert "cache_control" not in system[1] and "cache" not in body
    first, second = (c["usage"] for c in session["turns"][-1]["model_calls"])
    assert first["cache_write_tokens"] > 0 and first["cache_read_tokens"] == 0
    assert second["cache_read_tokens"] == first["cache_write_tokens"]
    assert second["input_tokens"] >= second["cache_read_tokens"]


async def test_no_cache_control_without_the_option() -> None:
    with FakeAnthropicServer([tool_calls([CALL]), text("Sunny.")]) as server:
        session = await _agent(_doc(), server, protocol="native").run("Weather?")
    assert "cache_control" not in json.dumps(server.requests[0].body)
    usage = session["turns"][-1]["model_calls"][0]["usage"]
    assert usage["cache_read_tokens"] == 0 and usage["cache_write_tokens"] == 0


async def test_a_tool_use_cut_by_max_tokens_never_runs() -> None:
    cut = tool_calls([("tool__get_weather", '{"location": "Ac')], finish_reason="length")
    with FakeAnthropicServer([cut]) as server:
        agent = _agent(_doc(), server, protocol="native")
        seen = _record(agent)
        async for _ in agent.stream("Weather?"):
            pass
    assert CALLED == []
    assert [n for n, _ in seen if n in ("tool_call", "tool_result")] == []
    errors = [v for n, v in seen if n == "error"]
    assert errors and "output limit" in errors[-1]["message"]
    assert "finish_reason=length" in errors[-1]["message"]


async def test_a_text_answer_cut_by_max_tokens_is_truncated_not_success() -> None:
    cut = text("[response_text]\nIt is sunny in", finish_reason="length")
    with FakeAnthropicServer([cut]) as server:
        agent = _agent(_doc(), server)
        seen = _record(agent)
        session = await agent.run("hi")
    call = session["turns"][-1]["model_calls"][0]
    assert call["finish_reason"] == "length"
    assert seen[-1] == ("response_text", {"text": "It is sunny in", "truncated": True})


@pytest.mark.parametrize(
    ("reason", "words"),
    [
        ("refusal", "the model declined to answer"),
        ("pause_turn", "does not resume paused turns"),
    ],
)
async def test_refusal_and_pause_turn_end_the_run_with_an_error(reason: str, words: str) -> None:
    with FakeAnthropicServer([text("Partial answer", finish_reason=reason)]) as server:
        agent = _agent(_doc(), server)
        seen = _record(agent)
        session = await agent.run("hi")
    assert [n for n, _ in seen] == ["error"]
    message = seen[0][1]["message"]
    assert f"finish_reason={reason}" in message and words in message
    assert session["turns"][-1]["status"] == "error"


async def test_overloaded_and_rate_limited_answers_are_retried() -> None:
    script = [status(529), status(429, retry_after=0), text(BLOCK_TEXT)]
    with FakeAnthropicServer(script) as server:
        agent = _agent(_doc(), server)
        seen = _record(agent)
        await agent.run("hi")
    assert seen == [("response_text", {"text": "It is sunny in Accra."})]
    assert len(server.requests) == 3


async def test_overloaded_for_good_names_the_api_and_the_error() -> None:
    with FakeAnthropicServer(lambda request: status(529, message="Overloaded")) as server:
        agent = _agent(_doc(), server)
        seen = _record(agent)
        await agent.run("hi")
    message = seen[-1][1]["message"]
    assert message.startswith("Anthropic API error (529): Overloaded")
    assert "gave up after 3 attempts" in message
    assert len(server.requests) == 3


async def test_an_overloaded_event_before_any_output_is_retried() -> None:
    script = [error_event(after_chunks=2, reply=text(BLOCK_TEXT)), text(BLOCK_TEXT)]
    with FakeAnthropicServer(script) as server:
        agent = _agent(_doc(), server)
        async for _ in agent.stream("hi"):
            pass
    assert len(server.requests) == 2


async def test_an_overloaded_event_after_output_is_an_error_not_a_short_answer() -> None:
    script = [error_event(after_chunks=6, reply=text(BLOCK_TEXT)), text(BLOCK_TEXT)]
    with FakeAnthropicServer(script, chunk_size=4) as server:
        agent = _agent(_doc(), server)
        seen = _record(agent)
        async for _ in agent.stream("hi"):
            pass
    assert len(server.requests) == 1
    assert [n for n, _ in seen][-1] == "error"
    assert "Overloaded [overloaded_error]" in seen[-1][1]["message"]
    assert "response_text" not in [n for n, _ in seen]


async def test_a_cut_stream_is_an_error() -> None:
    script = [disconnect(after_chunks=7, reply=text(BLOCK_TEXT)), text(BLOCK_TEXT)]
    with FakeAnthropicServer(script, chunk_size=4) as server:
        agent = _agent(_doc(), server)
        seen = _record(agent)
        async for _ in agent.stream("hi"):
            pass
    assert [n for n, _ in seen][-1] == "error"
    assert "response_text" not in [n for n, _ in seen]


async def test_a_bad_key_is_not_retried() -> None:
    with FakeAnthropicServer([text("never")], api_key="right-key") as server:
        agent = _agent(_doc(), server)
        seen = _record(agent)
        await agent.run("hi")
    assert len(server.requests) == 1
    assert seen[-1][1]["message"].startswith("Anthropic API error (401)")


async def test_native_structured_output_uses_output_config() -> None:
    with FakeAnthropicServer([structured({"city": "Accra", "celsius": 31})]) as server:
        agent = _agent(_doc(source=STRUCTURED), server, protocol="native", tools={})
        seen = _record(agent)
        await agent.run("Forecast for Accra")
    assert seen == [
        ("response_schema", {"type": "Forecast", "response": {"city": "Accra", "celsius": 31}})
    ]
    output = server.requests[0].body["output_config"]["format"]
    assert output["type"] == "json_schema"
    assert output["schema"]["required"] == ["city", "celsius"]


async def test_the_key_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "from-env")
    with FakeAnthropicServer([text(BLOCK_TEXT)], api_key="from-env") as server:
        doc = _doc()
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        agent = create_agent(
            doc, {}, ir_hash=doc["hash"], compiler_version=__version__, ir_version=doc["ir_version"]
        )
        seen = _record(agent)
        await agent.run("hi")
    assert seen == [("response_text", {"text": "It is sunny in Accra."})]
