"""More hook and intent behaviour: partial middleware, conversation ids, a failing
onRunStart, function handlers returning controls, and custom intents that do not end a turn
(also emitted by a helper)."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from auwgent.testing import FakeOpenAIServer, text

from ._project import Recorder, generate, openai_system

PROGRAM = """
intent Planning {
    description: "Emit a plan"
    fields {
        step: string
    }
}

helper Planner {
    description: "Plans work"
    default config {
        model: openai("gpt-4o")
        prompt: "You plan."
    }
    intent: Planning
}

agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "You are a helpful assistant."
    }

    intent: Planning

    tool delete_records(table: string): boolean @desc "Deletes records"
    tool get_weather(location: string): string @desc "Gets the weather"

    helpers {
        Planner
    }
}
"""


@pytest.fixture(scope="module")
def main(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    return generate(tmp_path_factory.mktemp("more_hooks"), {"main.agent": PROGRAM})["main"]


def make(main: ModuleType, server: FakeOpenAIServer, log: list[str], **extra: Any) -> Any:
    def delete_records(table: str) -> bool:
        log.append(f"delete {table}")
        return True

    def get_weather(location: str) -> str:
        log.append(f"weather {location}")
        return "Sunny"

    return main.auwgent(
        {
            "apiKeys": {"openaiApiKey": "k"},
            "baseUrls": {"openai": server.base_url},
            "tools": {"delete_records": delete_records, "get_weather": get_weather},
            **extra,
        }
    )


async def test_partials_reach_middleware_with_the_conversation_id(main: ModuleType) -> None:
    got: list[tuple[str, str, Any]] = []

    class Stream(main.AuwgentMiddleware):  # type: ignore[name-defined, misc]
        name = "stream"

        async def onIntentPartial(self, name: str, value: Any, ctx: Any) -> None:
            got.append((name, value["delta"], ctx["conversation_id"]))

    with FakeOpenAIServer([text("Hello there, friend.", chunk_size=4)]) as server:
        agent = make(main, server, [], middleware=[Stream])
        await agent.run("hello", conversation_id="conv-9")
    assert {name for name, _, _ in got} == {"response_text"}
    assert "".join(delta for _, delta, _ in got) == "Hello there, friend."
    assert {conv for _, _, conv in got} == {"conv-9"}


async def test_a_failing_on_run_start_ends_the_run_and_on_run_complete_still_fires(
    main: ModuleType,
) -> None:
    order: list[str] = []

    class Loader(main.AuwgentMiddleware):  # type: ignore[name-defined, misc]
        name = "loader"

        async def onRunStart(self, session: Any, ctx: Any) -> Any:
            raise ConnectionError("session database is down")

        async def onRunComplete(self, finalSession: Any, ctx: Any) -> None:
            order.append("complete")

    seen = Recorder()
    with FakeOpenAIServer([text("never")]) as server:
        agent = make(main, server, [], middleware=[Loader])
        agent.on_intent(seen)
        await agent.run("hello")
    assert server.requests == []
    assert seen.names == ["error"]
    assert "session database is down" in seen.payloads("error")[0]["message"]
    assert order == ["complete"]


async def test_a_function_handler_returns_controls(main: ModuleType) -> None:
    log: list[str] = []

    def handle_intent(name: str, value: Any, agent_name: str) -> Any:
        if name == "tool_call" and value["type"] == "delete_records":
            return {"skip": True}
        if name == "tool_call" and value["type"] == "get_weather":
            return {"result": "Sunny, 28°C"}
        return None

    seen = Recorder()
    script = [
        text(
            "[tool_call: delete_records]\ntable: users\n[/tool_call]\n"
            "[tool_call: get_weather]\nlocation: Accra\n[/tool_call]"
        ),
        text("Done."),
    ]
    with FakeOpenAIServer(script) as server:
        agent = make(main, server, log)
        agent.on_intent(handle_intent)
        agent.on_intent(seen)
        await agent.run("Clean up and check the weather")
    assert log == []
    assert sorted(seen.names) == sorted(
        ["tool_call", "tool_call", "tool_skipped", "tool_result", "response_text"]
    )
    assert seen.payloads("tool_result")[0]["overridden"] is True
    sent = server.requests[1].body["messages"][-1]["content"]
    assert sent.index("delete_records") < sent.index("get_weather")  # results in call order


async def test_a_custom_intent_does_not_end_the_turn(main: ModuleType) -> None:
    log: list[str] = []
    seen = Recorder()
    script = [
        text(
            "[custom: Planning]\nstep: check the weather\n[/custom]\n"
            "[tool_call: get_weather]\nlocation: Accra\n[/tool_call]"
        ),
        text("It is sunny."),
    ]
    with FakeOpenAIServer(script) as server:
        agent = make(main, server, log)
        agent.on_intent(seen)
        await agent.run("Weather?")
    assert log == ["weather Accra"]
    assert seen.names == ["Planning", "tool_call", "tool_result", "response_text"]
    assert seen.events[0] == ("Planning", {"step": "check the weather"}, "Main")


async def test_a_helper_emits_its_custom_intents_under_its_name(main: ModuleType) -> None:
    def reply(request: Any) -> Any:
        if "You plan." in openai_system(request.body):
            return text(
                "[custom: Planning]\nstep: gather data\n[/custom]\n"
                "[response_text]\nPlan ready.\n[/response_text]"
            )
        if "Plan ready." in str(request.body["messages"][1:]):
            return text("The plan is ready.")
        return text("[helper_call: Planner]\ninput: plan my week\n[/helper_call]")

    seen = Recorder()
    with FakeOpenAIServer(reply) as server:
        agent = make(main, server, [])
        agent.on_intent(seen)
        await agent.run("Plan my week")
    assert ("Planning", {"step": "gather data"}, "Planner") in seen.events
    assert ("response_text", {"text": "Plan ready."}, "Planner") in seen.events
    assert seen.events[-1] == ("response_text", {"text": "The plan is ready."}, "Main")
