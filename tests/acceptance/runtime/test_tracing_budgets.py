"""OpenTelemetry spans of a run (the SDK's in-memory exporter) and run/conversation budgets,
through generated bindings on the scripted model."""

from __future__ import annotations

from types import ModuleType

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from auwgent.errors import ConfigError
from auwgent.runtime.providers.base import Usage
from auwgent.testing import ScriptedModel

from ._project import Recorder, generate

SOURCE = """
helper Analyst {
    description: "Analyses numbers"
    default config {
        model: openai("gpt-4o-mini")
        prompt: "You analyse."
    }
    tool crunch(n: number): number @desc "Crunches a number"
}

agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "You help."
    }
    tool get_weather(location: string): string @desc "Gets the weather"
    workflow check(value: number): string {
        description: "Checks a value"
        if (value > 10) {
            return "high"
        }
        return "low"
    }
    helpers {
        Analyst
    }
}
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    return generate(tmp_path_factory.mktemp("tracing"), {"main.agent": SOURCE})["main"]


class Tools:
    def get_weather(self, location: str) -> str:
        return "sunny"

    def crunch(self, n: float) -> float:
        return n * 2


def script() -> ScriptedModel:
    usage = Usage(input_tokens=100, output_tokens=20)
    return ScriptedModel(
        [
            ScriptedModel.reply(
                ScriptedModel.block("tool_call", "get_weather", {"location": "Accra"}),
                ScriptedModel.block("workflow_call", "check", {"value": 12}),
                ScriptedModel.block("helper_call", "Analyst", {"input": "crunch 21"}),
                usage=usage,
            ),
            ScriptedModel.reply(ScriptedModel.block("tool_call", "crunch", {"n": 21}), usage=usage),
            ScriptedModel.reply(ScriptedModel.text("42"), usage=usage),
            ScriptedModel.reply(ScriptedModel.text("Sunny, high, 42."), usage=usage),
        ]
    )


async def test_the_span_tree_of_a_run(project: ModuleType) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    agent = project.auwgent({"provider": script(), "tools": Tools, "tracerProvider": provider})
    session = await agent.run("Weather, check 12 and crunch 21")
    assert session["turns"][-1]["status"] == "complete"
    spans = {s.name: s for s in exporter.get_finished_spans()}
    by_id = {s.context.span_id: s for s in exporter.get_finished_spans()}

    def parent(name: str) -> str:
        return by_id[spans[name].parent.span_id].name

    root = spans["invoke_agent Main"]
    assert root.parent is None
    assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert root.attributes["gen_ai.agent.name"] == "Main"
    assert parent("execute_tool get_weather") == "invoke_agent Main"
    assert spans["execute_tool get_weather"].attributes["gen_ai.tool.type"] == "function"
    assert parent("execute_tool check") == "invoke_agent Main"
    assert spans["execute_tool check"].attributes["gen_ai.tool.type"] == "workflow"
    assert parent("invoke_agent Analyst") == "invoke_agent Main"
    assert parent("execute_tool crunch") == "invoke_agent Analyst"
    assert list(spans["execute_tool crunch"].attributes["auwgent.helper_stack"]) == [
        "Main", "Analyst"]  # fmt: skip
    chats = [s for s in exporter.get_finished_spans() if s.name.startswith("chat ")]
    assert len(chats) == 4
    assert {by_id[c.parent.span_id].name for c in chats} == {
        "invoke_agent Main", "invoke_agent Analyst"}  # fmt: skip
    chat = chats[0]
    assert chat.attributes["gen_ai.operation.name"] == "chat"
    assert chat.attributes["gen_ai.usage.input_tokens"] == 100
    assert chat.attributes["gen_ai.usage.output_tokens"] == 20
    assert "gen_ai.response.finish_reasons" in chat.attributes
    assert "tool_call" in root.attributes["auwgent.intents"]
    assert "helper_result" in root.attributes["auwgent.intents"]


async def test_tracing_is_off_unless_configured(project: ModuleType) -> None:
    agent = project.auwgent({"provider": script(), "tools": Tools})
    await agent.run("hi")
    assert agent.services.tracer is None
    with pytest.raises(ConfigError, match="tracerProvider: expected an OpenTelemetry"):
        project.auwgent({"provider": script(), "tracerProvider": object()})


async def test_a_request_budget_stops_the_run(project: ModuleType) -> None:
    model = script()
    seen = Recorder()
    agent = project.auwgent({"provider": model, "tools": Tools, "budget": {"requests": 1}})
    agent.on_intent(seen)
    session = await agent.run("hi")
    assert len(model.requests) == 1  # the second request was never made
    message = seen.payloads("error")[-1]["message"]
    assert "budget exceeded: this run has used 1 model requests of its 1 (budget.requests)" in (
        message
    )
    turn = session["turns"][-1]
    assert turn["status"] == "error"
    assert turn["model_calls"][0]["usage"] == {
        "input_tokens": 100, "output_tokens": 20, "total_tokens": 120}  # fmt: skip


async def test_a_token_budget_stops_after_the_call_that_passed_it(project: ModuleType) -> None:
    model = script()
    seen = Recorder()
    agent = project.auwgent({"provider": model, "tools": Tools, "budget": {"tokens": 200}})
    agent.on_intent(seen)
    await agent.run("hi")
    assert len(model.requests) == 2  # 120 tokens, then 240: no third request
    assert (
        "this run has used 240 tokens of its 200 (budget.tokens)"
        in (seen.payloads("error")[-1]["message"])
    )


async def test_a_conversation_budget_counts_earlier_turns(project: ModuleType) -> None:
    answers = [ScriptedModel.reply(ScriptedModel.text("ok"), usage=Usage(50, 10))] * 3
    model = ScriptedModel(answers)
    agent = project.auwgent({"provider": model, "budget": {"conversationRequests": 2}})
    session = await agent.run("one")
    session = await agent.run("two", session=session)
    session = await agent.run("three", session=session)
    assert len(model.requests) == 2
    assert "this conversation has used 2 model requests of its 2" in session["turns"][-1]["error"]


def test_budget_config_is_checked(project: ModuleType) -> None:
    with pytest.raises(ConfigError, match=r"budget\.tokns: unknown config key"):
        project.auwgent({"provider": script(), "budget": {"tokns": 5}})
    with pytest.raises(ConfigError, match=r"budget\.requests: must be at least 1"):
        project.auwgent({"provider": script(), "budget": {"requests": 0}})


async def test_a_skipped_call_ends_its_span_when_it_is_skipped(project: ModuleType) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    model = ScriptedModel(
        [
            ScriptedModel.reply(
                ScriptedModel.block("tool_call", "get_weather", {"location": "Accra"}),
                ScriptedModel.block("helper_call", "Analyst", {"input": "crunch 21"}),
            ),
            ScriptedModel.reply(ScriptedModel.text("Skipped both.")),
        ]
    )
    agent = project.auwgent({"provider": model, "tools": Tools, "tracerProvider": provider})
    skipped = ("tool_call", "helper_call")
    agent.on_intent(lambda name, value, who: {"skip": True} if name in skipped else None)
    session = await agent.run("Weather and crunch")
    assert session["turns"][-1]["status"] == "complete"
    spans = {s.name: s for s in exporter.get_finished_spans()}
    second_chat = [s for s in exporter.get_finished_spans() if s.name.startswith("chat ")][1]
    for name in ("execute_tool get_weather", "invoke_agent Analyst"):
        assert spans[name].attributes["auwgent.skipped"] is True
        # ended when skipped, before the model was asked again (not with the run)
        assert spans[name].end_time <= second_chat.start_time
    assert "auwgent.skipped" not in spans["invoke_agent Main"].attributes
