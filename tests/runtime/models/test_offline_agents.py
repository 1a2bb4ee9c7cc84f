"""Compiled agents run on the offline model: via the config, via the environment, both codecs."""

from __future__ import annotations

from typing import Any

import pytest

from auwgent import ConfigError, __version__
from auwgent.compiler.pipeline import compile_sources
from auwgent.ir import dumps_ir
from auwgent.runtime.agent import Agent, create_agent
from auwgent.runtime.evaluate.schema import validate
from auwgent.testing import OfflineModel, ScriptedModel

WEATHER = """
type WeatherResult {
    temperature: number @desc "temperature in celsius"
    condition: string
}

type Report {
    city: string
    summary: string
    warnings: string[]
}

agent Main {
    default config {
        model: gemini("gemini-2.5-flash")
        prompt: "You are a weather assistant."
    }
    output: Report
    tools {
        get_weather(location: string): WeatherResult @desc "Gets the current weather"
        get_humidity(location: string, hourly?: boolean): number @desc "Gets the humidity"
        send_alert(message: string): string @desc "Not implemented by this app"
    }
}
"""

CHAT = """
agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "You are a helpful assistant. Be polite."
    }
}
"""


def _compile(source: str) -> dict[str, Any]:
    result = compile_sources({"main.agent": source})
    assert result.ok, [d.message for d in result.errors]
    return dict(result.documents["main.agent"])


def _agent(doc: dict[str, Any], config: dict[str, Any]) -> Agent:
    return create_agent(
        dumps_ir(doc), config, ir_hash=doc["hash"], compiler_version=__version__, ir_version=1
    )


class WeatherTools:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def get_weather(self, location: str) -> dict[str, Any]:
        self.calls.append(("get_weather", {"location": location}))
        return {"temperature": 31, "condition": "sunny"}

    async def get_humidity(self, location: str, hourly: bool = False) -> float:
        self.calls.append(("get_humidity", {"location": location}))
        return 0.8


def _record(agent: Agent) -> list[tuple[str, Any]]:
    seen: list[tuple[str, Any]] = []
    agent.on_intent(lambda name, value, agent_name: seen.append((name, value)))
    return seen


@pytest.mark.parametrize("protocol", ["blocks", "native"])
async def test_a_compiled_agent_runs_on_the_offline_model_from_the_config(protocol: str) -> None:
    doc = _compile(WEATHER)
    tools = WeatherTools()
    agent = _agent(doc, {"provider": "offline", "tools": tools, "protocol": protocol})
    seen = _record(agent)
    session = await agent.run("Weather in Accra?")
    names = [name for name, _ in seen]
    # Each implemented tool once (send_alert has no implementation, so it is never called).
    assert sorted(tools.calls) == [
        ("get_humidity", {"location": "example"}),
        ("get_weather", {"location": "example"}),
    ]
    assert names.count("tool_call") == 2 and names.count("tool_result") == 2
    assert "tool_error" not in names and "error" not in names
    assert names[-1] == "response_schema"
    output = seen[-1][1]
    assert output["type"] == "Report"
    assert validate(output["response"], {"kind": "ref", "name": "Report"}, doc["types"]) == []
    assert session["turns"][-1]["status"] == "complete"


async def test_the_environment_switch_runs_without_any_api_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    doc = _compile(CHAT)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        _agent(doc, {})  # without the switch a key is required
    monkeypatch.setenv("AUWGENT_PROVIDER", "offline")
    agent = _agent(doc, {})
    seen = _record(agent)
    await agent.run("Hello there")
    assert seen == [("response_text", {"text": 'Offline reply to "Hello there".'})]


async def test_offline_runs_are_deterministic() -> None:
    doc = _compile(WEATHER)

    async def one_run() -> list[tuple[str, Any]]:
        agent = _agent(doc, {"provider": "offline", "tools": WeatherTools()})
        seen = _record(agent)
        await agent.run("Weather in Accra?")
        return seen

    first, second = await one_run(), await one_run()
    # Tools start the moment their block closes, so results may interleave differently with
    # the model's later calls; what the model says is identical.
    assert sorted(map(repr, first)) == sorted(map(repr, second))
    assert first[-1] == second[-1]


async def test_partials_stream_while_the_offline_model_writes() -> None:
    agent = _agent(_compile(CHAT), {"provider": "offline"})
    partials: list[Any] = []
    agent.on_intent_partial(lambda name, value, agent_name: partials.append(value))
    await agent.run("Tell me something")
    deltas = [p["delta"] for p in partials if p.get("delta")]
    assert len(deltas) > 3
    assert "".join(deltas) == 'Offline reply to "Tell me something".'


async def test_the_scripted_model_example_of_docs_testing() -> None:
    model = ScriptedModel(
        [
            "[tool_call: get_weather]\nlocation: Accra\n[/tool_call]",
            ScriptedModel.text("It is 31 degrees and sunny in Accra."),
        ]
    )
    agent = _agent(_compile(CHAT_WITH_TOOL), {"provider": model, "tools": WeatherTools()})
    seen = _record(agent)
    await agent.run("Weather in Accra?")
    assert [name for name, _ in seen] == ["tool_call", "tool_result", "response_text"]
    assert len(model.requests) == 2
    assert "31" in model.requests[1].messages[-1].content


async def test_running_past_the_script_ends_the_run_with_a_clear_error() -> None:
    agent = _agent(
        _compile(CHAT_WITH_TOOL), {"provider": ScriptedModel([]), "tools": WeatherTools()}
    )
    seen = _record(agent)
    session = await agent.run("hello")
    assert [name for name, _ in seen] == ["error"]
    assert "scripted model has no response left for call 1" in str(seen[0][1])
    assert session["turns"][-1]["status"] == "error"


CHAT_WITH_TOOL = """
type WeatherResult {
    temperature: number
    condition: string
}

agent Main {
    default config {
        model: gemini("gemini-2.5-flash")
        prompt: "You are a weather assistant."
    }
    tools {
        get_weather(location: string): WeatherResult @desc "Gets the current weather"
    }
}
"""


RAG = """
agent Main {
    default config {
        model: gemini("gemini-2.5-flash")
        embedding: gemini("gemini-embedding-001")
        prompt: "You are a helpful assistant"
    }
}
"""

DOCUMENTS = [
    "Our office in Accra opens at nine in the morning.",
    "Refunds are paid within five working days.",
    "The warehouse in Kumasi stores spare parts.",
]


async def test_the_manuals_rag_middleware_runs_offline() -> None:
    def cosine(a: list[float], b: list[float]) -> float:
        return sum(x * y for x, y in zip(a, b, strict=True))  # unit vectors

    class RagMiddleware:
        name = "rag"

        async def onRunStart(self, session: Any, ctx: Any) -> Any:
            index = await ctx["embed_batch"](DOCUMENTS)
            query = session["turns"][-1]["input"]["text"]
            query_vector = await ctx["embed"](query)
            ranked = sorted(
                zip(DOCUMENTS, index, strict=True), key=lambda d: -cosine(query_vector, d[1])
            )
            ctx["set_context"]({"retrieved_chunks": [text for text, _ in ranked[:1]]})
            return session

    model = OfflineModel()
    agent = _agent(_compile(RAG), {"provider": model, "middleware": [RagMiddleware]})
    seen = _record(agent)
    await agent.run("When are refunds paid?")
    assert [name for name, _ in seen] == ["response_text"]
    # The retrieved chunk reached the model through the context section of the prompt.
    assert "Refunds are paid within five working days." in model.requests[0].system


@pytest.mark.parametrize("protocol", ["blocks", "native"])
async def test_the_offline_model_calls_tools_with_their_own_examples(protocol: str) -> None:
    # get_weather's first @example lacks the required `location`; its second is taken.
    # get_humidity has no example: its arguments come from the types.
    source = WEATHER.replace(
        '@desc "Gets the current weather"',
        '@desc "Gets the current weather"\n'
        '            @example()\n            @example(location = "Accra")',
    )
    tools = WeatherTools()
    agent = _agent(_compile(source), {"provider": "offline", "tools": tools, "protocol": protocol})
    await agent.run("Weather in Accra?")
    assert sorted(tools.calls) == [
        ("get_humidity", {"location": "example"}),
        ("get_weather", {"location": "Accra"}),
    ]
