"""Tools: implementing them, the execution lifecycle, skip and override (Python: a handler of
tool_call returning {"skip": True} / {"result": ...}), [NOT CONFIGURED], and enforcement."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest

from auwgent.testing import FakeGeminiServer, FakeOpenAIServer, text, tool_calls

from ._project import Recorder, gemini_system, generate, openai_system

WEATHER = """
type WeatherResult {
    temperature: number
    condition: string
}

type Forecast {
    location: string
    days: number
    outlook: string
}

agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "You are a weather assistant."
    }

    tool get_weather(location: string @desc "city name"): WeatherResult
        @desc "Gets the current weather for a location"
        @example(location = "Accra")

    tools {
        get_forecast(location: string, days: number): Forecast @desc "Gets a forecast"
        delete_records(table: string): boolean @desc "Deletes every record of a table"
        send_sms(phone: string, message: string): boolean @desc "Sends a text message"
    }
}
"""


@pytest.fixture(scope="module")
def main(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    return generate(tmp_path_factory.mktemp("tools"), {"main.agent": WEATHER})["main"]


def block(kind: str, name: str, body: str) -> str:
    return f"[{kind}: {name}]\n{body}\n[/{kind}]"


class Calls:
    def __init__(self) -> None:
        self.log: list[tuple[str, dict[str, Any]]] = []


def make_tools(main: ModuleType, calls: Calls) -> type:
    class Tools(main.AuwgentTools):  # type: ignore[name-defined, misc]
        async def get_weather(self, location: str) -> str:
            calls.log.append(("get_weather", {"location": location}))
            return json.dumps({"temperature": 28, "condition": "sunny"})

        def get_forecast(self, location: str, days: float) -> dict[str, Any]:  # sync is fine
            calls.log.append(("get_forecast", {"location": location, "days": days}))
            return {"location": location, "days": days, "outlook": "dry"}

        async def delete_records(self, table: str) -> bool:
            calls.log.append(("delete_records", {"table": table}))
            return True

    return Tools


def agent_for(main: ModuleType, server: FakeOpenAIServer, tools: Any, **extra: Any) -> Any:
    return main.auwgent(
        {
            "apiKeys": {"openaiApiKey": "sk-test"},
            "baseUrls": {"openai": server.base_url},
            "tools": tools,
            **extra,
        }
    )


async def test_a_block_tool_call_runs_the_tool_and_feeds_the_result_back(main: ModuleType) -> None:
    calls = Calls()
    seen = Recorder()
    script = [
        text(block("tool_call", "get_weather", "location: Accra")),
        text("It is 28 degrees and sunny in Accra."),
    ]
    with FakeOpenAIServer(script) as server:
        agent = agent_for(main, server, make_tools(main, calls))
        agent.on_intent(seen)
        await agent.run("What is the weather in Accra?")

    assert calls.log == [("get_weather", {"location": "Accra"})]
    assert seen.names == ["tool_call", "tool_result", "response_text"]
    assert seen.payloads("tool_call") == [{"type": "get_weather", "args": {"location": "Accra"}}]
    (result,) = seen.payloads("tool_result")
    assert result["name"] == "get_weather"
    assert result["args"] == {"location": "Accra"}
    assert result["overridden"] is False
    # The JSON string the tool returned reaches the model as is.
    assert result["result"] == json.dumps({"temperature": 28, "condition": "sunny"})
    second = json.dumps(server.requests[1].body["messages"][1:])
    assert json.dumps(json.dumps({"temperature": 28, "condition": "sunny"}))[1:-1] in second
    assert set(seen.agents("tool_call")) == {"Main"}

    system = openai_system(server.requests[0].body)
    assert "You are a weather assistant." in system
    assert "get_weather" in system and "Gets the current weather for a location" in system


async def test_native_tool_calls_with_a_sync_tool_and_a_dict_result(main: ModuleType) -> None:
    calls = Calls()
    seen = Recorder()
    script = [
        tool_calls([("tool__get_forecast", {"location": "Kumasi", "days": 3})]),
        text("Dry for three days."),
    ]
    with FakeOpenAIServer(script) as server:
        agent = agent_for(main, server, make_tools(main, calls), protocol="native")
        agent.on_intent(seen)
        await agent.run("Forecast for Kumasi?")

    assert calls.log == [("get_forecast", {"location": "Kumasi", "days": 3})]
    assert seen.names == ["tool_call", "tool_result", "response_text"]
    (result,) = seen.payloads("tool_result")
    assert result["result"] == {"location": "Kumasi", "days": 3, "outlook": "dry"}
    tool_message = server.requests[1].body["messages"][-1]
    assert tool_message["role"] == "tool"
    # Anything that is not a string reaches the model JSON-encoded.
    assert json.loads(tool_message["content"]) == result["result"]
    names = [t["function"]["name"] for t in server.requests[0].body["tools"]]
    assert "tool__get_weather" in names and "tool__get_forecast" in names


@pytest.mark.parametrize("form", ["class", "instance", "dict"])
async def test_tools_as_a_class_an_instance_or_a_dict(main: ModuleType, form: str) -> None:
    seen_args: list[str] = []

    async def get_weather(location: str) -> str:
        seen_args.append(location)
        return '{"temperature": 28, "condition": "Sunny"}'

    class Tools(main.AuwgentTools):  # type: ignore[name-defined, misc]
        async def get_weather(self, location: str) -> str:
            seen_args.append(location)
            return '{"temperature": 28, "condition": "Sunny"}'

    tools: Any = {"class": Tools, "instance": Tools(), "dict": {"get_weather": get_weather}}[form]
    seen = Recorder()
    script = [text(block("tool_call", "get_weather", "location: Tema")), text("Sunny.")]
    with FakeOpenAIServer(script) as server:
        agent = agent_for(main, server, tools)
        agent.on_intent(seen)
        await agent.run("Weather in Tema?")
    assert seen_args == ["Tema"]
    assert seen.payloads("tool_result")[0]["result"] == '{"temperature": 28, "condition": "Sunny"}'
    assert "Sunny" in json.dumps(server.requests[1].body["messages"][1:], ensure_ascii=False)


async def test_skipping_a_tool_call_from_the_handler(main: ModuleType) -> None:
    calls = Calls()
    printed: list[str] = []

    class HandleIntent(main.AuwgentBaseIntentHandler):  # type: ignore[name-defined, misc]
        async def tool_call(self, intent: Any, agent_name: str) -> Any:
            if intent["type"] == "delete_records":
                printed.append("Skipping dangerous tool call")
                return {"skip": True}
            return None

        async def tool_skipped(self, intent: Any, agent_name: str) -> None:
            printed.append(f"skipped {intent}")

    script = [
        text(block("tool_call", "delete_records", "table: users")),
        text("I did not delete anything."),
    ]
    with FakeOpenAIServer(script) as server:
        agent = agent_for(main, server, make_tools(main, calls))
        agent.on_intent(HandleIntent)
        seen = Recorder()
        agent.on_intent(seen)
        await agent.run("Delete all users")

    assert calls.log == []  # the implementation never ran
    assert printed[0] == "Skipping dangerous tool call"
    assert seen.names == ["tool_call", "tool_skipped", "response_text"]
    assert seen.payloads("tool_skipped") == [{"type": "delete_records", "args": {"table": "users"}}]
    # The model sees that the call was skipped in its next turn.
    assert "skipped" in json.dumps(server.requests[1].body["messages"][1:])


async def test_overriding_a_tool_result_from_the_handler(main: ModuleType) -> None:
    calls = Calls()

    class HandleIntent(main.AuwgentBaseIntentHandler):  # type: ignore[name-defined, misc]
        async def tool_call(self, intent: Any, agent_name: str) -> Any:
            if intent["type"] == "get_weather":
                return {"result": "Sunny, 28°C"}
            return None

    seen = Recorder()
    script = [text(block("tool_call", "get_weather", "location: Accra")), text("Sunny.")]
    with FakeOpenAIServer(script) as server:
        agent = agent_for(main, server, make_tools(main, calls))
        agent.on_intent(HandleIntent)
        agent.on_intent(seen)
        await agent.run("Weather?")

    assert calls.log == []
    assert seen.names == ["tool_call", "tool_result", "response_text"]
    assert seen.payloads("tool_result") == [
        {
            "name": "get_weather",
            "args": {"location": "Accra"},
            "result": "Sunny, 28°C",
            "overridden": True,
        }
    ]
    assert "Sunny, 28°C" in json.dumps(server.requests[1].body["messages"][1:], ensure_ascii=False)


async def test_a_tool_without_implementation_is_not_configured(main: ModuleType) -> None:
    calls = Calls()
    seen = Recorder()
    script = [
        text(block("tool_call", "send_sms", "phone: +233200000000\nmessage: hi")),
        text("I cannot send texts."),
    ]
    with FakeOpenAIServer(script) as server:
        agent = agent_for(main, server, make_tools(main, calls))
        agent.on_intent(seen)
        await agent.run("Text my mum")

    system = openai_system(server.requests[0].body)
    sms_line = next(line for line in system.splitlines() if "send_sms" in line)
    assert "[NOT CONFIGURED]" in sms_line
    weather_line = next(line for line in system.splitlines() if "get_weather(" in line)
    assert "[NOT CONFIGURED]" not in weather_line
    assert seen.names == ["tool_call", "tool_error", "response_text"]
    (error,) = seen.payloads("tool_error")
    assert set(error) == {"tool", "message"}
    assert error["tool"] == "send_sms"


async def test_invalid_arguments_never_reach_the_implementation(main: ModuleType) -> None:
    calls = Calls()
    seen = Recorder()
    script = [
        tool_calls([("tool__get_forecast", {"location": "Accra", "days": "many"})]),
        text("Sorry."),
    ]
    with FakeOpenAIServer(script) as server:
        agent = agent_for(main, server, make_tools(main, calls), protocol="native")
        agent.on_intent(seen)
        await agent.run("Forecast?")
    assert calls.log == []
    assert "tool_error" in seen.names and "tool_result" not in seen.names
    (error,) = seen.payloads("tool_error")
    assert error["tool"] == "get_forecast"
    assert "days" in error["message"]
    assert "days" in json.dumps(server.requests[1].body["messages"][1:])


async def test_an_undeclared_tool_is_a_tool_error(main: ModuleType) -> None:
    seen = Recorder()
    script = [text(block("tool_call", "format_disk", "drive: C")), text("I can't.")]
    with FakeOpenAIServer(script) as server:
        agent = agent_for(main, server, make_tools(main, Calls()))
        agent.on_intent(seen)
        await agent.run("Format my disk")
    assert seen.names == ["tool_error", "response_text"]
    (error,) = seen.payloads("tool_error")
    assert error["tool"] == "format_disk"
    # Worded as the manual's example, "Tool not found: search_docs".
    assert error["message"].startswith("Tool not found: format_disk")
    assert len(server.requests) == 2


async def test_a_raising_tool_is_a_tool_error_and_the_model_is_told(main: ModuleType) -> None:
    class Tools(main.AuwgentTools):  # type: ignore[name-defined, misc]
        async def get_weather(self, location: str) -> str:
            raise RuntimeError("weather service down")

    seen = Recorder()
    script = [text(block("tool_call", "get_weather", "location: Accra")), text("Try later.")]
    with FakeOpenAIServer(script) as server:
        agent = agent_for(main, server, Tools)
        agent.on_intent(seen)
        await agent.run("Weather?")
    assert seen.names == ["tool_call", "tool_error", "response_text"]
    assert "weather service down" in seen.payloads("tool_error")[0]["message"]
    assert "weather service down" in json.dumps(server.requests[1].body["messages"][1:])


async def test_gemini_native_calls_round_trip(main: ModuleType, tmp_path: Any) -> None:
    gem = generate(
        tmp_path,
        {"main.agent": WEATHER.replace('openai("gpt-4o")', 'gemini("gemini-2.5-flash")')},
    )["main"]
    calls = Calls()
    seen = Recorder()
    script = [
        tool_calls([("tool__get_weather", {"location": "Accra"})]),
        text("Sunny."),
        text("Still sunny."),
    ]
    with FakeGeminiServer(script) as server:
        agent = gem.auwgent(
            {
                "apiKeys": {"geminiApiKey": "g"},
                "baseUrls": {"gemini": server.base_url},
                "tools": make_tools(gem, calls),
                "protocol": "native",
            }
        )
        agent.on_intent(seen)
        session = await agent.run("Weather in Accra?")
        await agent.run("And now?", session=json.loads(json.dumps(session)))
    assert calls.log == [("get_weather", {"location": "Accra"})]
    assert seen.names == ["tool_call", "tool_result", "response_text", "response_text"]
    third = server.requests[2].body["contents"]
    assert [c["role"] for c in third] == ["user", "model", "user", "model", "user"]
    assert third[1]["parts"][-1]["functionCall"]["name"] == "tool__get_weather"
    assert third[2]["parts"][0]["functionResponse"]["name"] == "tool__get_weather"
    assert third[4]["parts"] == [{"text": "And now?"}]
    second = server.requests[1].body
    responses = [
        part["functionResponse"]
        for content in second["contents"]
        for part in content["parts"]
        if "functionResponse" in part
    ]
    assert responses and responses[0]["name"] == "tool__get_weather"
    assert "You are a weather assistant." in gemini_system(second)


async def test_a_continued_session_replays_native_calls_in_the_apis_format(
    main: ModuleType,
) -> None:
    calls = Calls()
    script = [
        tool_calls([("tool__get_weather", {"location": "Accra"})]),
        text("Sunny in Accra."),
        text("Still sunny."),
    ]
    with FakeOpenAIServer(script) as server:
        agent = agent_for(main, server, make_tools(main, calls), protocol="native")
        session = await agent.run("Weather in Accra?")
        session = await agent.run("And now?", session=json.loads(json.dumps(session)))
    messages = server.requests[2].body["messages"]
    roles = [m["role"] for m in messages]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]
    call_id = messages[2]["tool_calls"][0]["id"]
    assert messages[2]["tool_calls"][0]["function"]["name"] == "tool__get_weather"
    assert messages[3]["tool_call_id"] == call_id
    assert messages[4]["content"] == "Sunny in Accra."
    assert messages[5]["content"] == "And now?"
    assert [t["input"]["text"] for t in session["turns"]] == ["Weather in Accra?", "And now?"]
