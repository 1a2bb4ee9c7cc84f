"""Middleware and sessions: hooks and their order, function shapes (camelCase, snake_case,
sync, dicts), the MiddlewareContext fields, the blackboard, target, and persistence."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest

from auwgent.testing import FakeOpenAIServer, status, text

from ._project import Recorder, generate, openai_system

PROGRAM = """
helper Researcher {
    description: "Researches a topic"
    default config {
        model: openai("gpt-4o")
        prompt: "You research."
    }
}

agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "You are a helpful assistant."
    }

    tool get_weather(location: string): string @desc "Gets the weather"

    helpers {
        Researcher
    }
}
"""


@pytest.fixture(scope="module")
def main(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    return generate(tmp_path_factory.mktemp("middleware"), {"main.agent": PROGRAM})["main"]


TOOL = "[tool_call: get_weather]\nlocation: Accra\n[/tool_call]"


def make(main: ModuleType, server: FakeOpenAIServer, middleware: list[Any], **extra: Any) -> Any:
    async def get_weather(location: str) -> str:
        return "Sunny"

    return main.auwgent(
        {
            "apiKeys": {"openaiApiKey": "sk"},
            "baseUrls": {"openai": server.base_url},
            "tools": {"get_weather": get_weather},
            "middleware": middleware,
            **extra,
        }
    )


async def test_run_hooks_and_llm_hooks_in_order(main: ModuleType) -> None:
    order: list[str] = []
    usage: list[Any] = []

    class Trace(main.AuwgentMiddleware):  # type: ignore[name-defined, misc]
        name = "trace"

        async def onRunStart(self, session: Any, ctx: Any) -> Any:
            order.append("onRunStart")
            return session

        async def onLLMStart(self, prompt: str, ctx: Any) -> None:
            order.append("onLLMStart")

        async def onIntent(self, name: str, value: Any, ctx: Any) -> None:
            order.append(f"onIntent {name}")

        async def onLLMEnd(self, response: Any, ctx: Any) -> None:
            order.append(f"onLLMEnd {response['text']} {response['finish_reason']}")
            usage.append(response["usage"])

        async def onRunComplete(self, finalSession: Any, ctx: Any) -> None:
            order.append("onRunComplete")

    with FakeOpenAIServer([text(TOOL), text("It is sunny.")]) as server:
        agent = make(main, server, [Trace])
        await agent.run("Weather in Accra?")
    assert order == [
        "onRunStart",
        "onLLMStart",
        "onIntent tool_call",
        "onIntent tool_result",
        "onLLMStart",
        "onIntent response_text",
        "onLLMEnd It is sunny. stop",
        "onRunComplete",
    ]
    # The fake server counts tokens; the call's usage reaches onLLMEnd and the session.
    assert usage[0]["total_tokens"] == usage[0]["input_tokens"] + usage[0]["output_tokens"] > 0
    session = agent.last_session
    assert [c["finish_reason"] for c in session["turns"][0]["model_calls"]] == ["stop", "stop"]
    assert session["turns"][0]["model_calls"][0]["model"] == "openai:gpt-4o"
    assert session["usage"]["total_tokens"] == sum(
        c["usage"]["total_tokens"] for c in session["turns"][0]["model_calls"]
    )


async def test_snake_case_sync_and_dict_middleware(main: ModuleType) -> None:
    order: list[str] = []

    class Snake:
        name = "snake"

        def on_run_start(self, session: Any, ctx: Any) -> Any:
            order.append("snake start")
            return session

        def on_run_complete(self, final_session: Any, ctx: Any) -> None:
            order.append("snake complete")

    as_dict = {
        "name": "dict",
        "onRunStart": lambda session, ctx: order.append("dict start"),
        "onLLMEnd": lambda response, ctx: order.append("dict end"),
    }
    with FakeOpenAIServer([text("Hi.")]) as server:
        agent = make(main, server, [Snake(), as_dict])
        await agent.run("hello")
    assert order == ["snake start", "dict start", "dict end", "snake complete"]


async def test_on_llm_start_sees_and_replaces_the_prompt(main: ModuleType) -> None:
    prompts: list[str] = []

    class Enrich(main.AuwgentMiddleware):  # type: ignore[name-defined, misc]
        name = "enrich"

        async def onLLMStart(self, prompt: str, ctx: Any) -> str:
            prompts.append(prompt)
            assert ctx["systemPrompt"] == prompt
            return prompt + "\n\nAlways answer in French."

    with FakeOpenAIServer([text("Bonjour.")]) as server:
        agent = make(main, server, [Enrich])
        session = await agent.run("hello")
    (prompt,) = prompts
    assert prompt.startswith("You are a helpful assistant.")
    sent = openai_system(server.requests[0].body)
    assert sent == prompt + "\n\nAlways answer in French."
    assert session["system_prompt"].startswith("You are a helpful assistant.")


async def test_middleware_context_fields_blackboard_and_raw_block(main: ModuleType) -> None:
    seen: list[tuple[str, Any]] = []

    class Observability(main.AuwgentMiddleware):  # type: ignore[name-defined, misc]
        name = "observability"

        async def onRunStart(self, session: Any, ctx: Any) -> Any:
            ctx["trace_id"] = "trace-1"
            seen.append(("start", (ctx["activeAgent"], ctx["rootAgent"])))
            return session

        async def onRunComplete(self, finalSession: Any, ctx: Any) -> None:
            seen.append(("complete", ctx.get("trace_id")))

    class Audit(main.AuwgentMiddleware):  # type: ignore[name-defined, misc]
        name = "audit"

        async def onIntent(self, name: str, value: Any, ctx: Any) -> None:
            seen.append((name, (ctx["activeAgent"], ctx["rootAgent"], ctx["rawBlock"])))
            seen.append(("blackboard", ctx.get("trace_id")))
            assert "You are a helpful assistant." in ctx["systemPrompt"]

    with FakeOpenAIServer([text(TOOL), text("Sunny.")]) as server:
        agent = make(main, server, [Observability, Audit])
        await agent.run("Weather?")
    assert seen[0] == ("start", ("Main", "Main"))
    assert seen[1] == ("tool_call", ("Main", "Main", TOOL))
    assert seen[2] == ("blackboard", "trace-1")
    assert seen[3] == ("tool_result", ("Main", "Main", None))  # a runtime intent
    assert seen[5][0] == "response_text"
    assert seen[-1] == ("complete", "trace-1")


async def test_a_middleware_control_wins_over_a_handler(main: ModuleType) -> None:
    class Guard(main.AuwgentMiddleware):  # type: ignore[name-defined, misc]
        name = "guard"

        async def onIntent(self, name: str, value: Any, ctx: Any) -> Any:
            if name == "tool_call":
                return {"result": "from middleware"}
            return None

    handler_saw: list[str] = []

    class HandleIntent(main.AuwgentBaseIntentHandler):  # type: ignore[name-defined, misc]
        async def tool_call(self, intent: Any, agent_name: str) -> Any:
            handler_saw.append(intent["type"])  # still called, for observation
            return {"skip": True}

    seen = Recorder()
    with FakeOpenAIServer([text(TOOL), text("Sunny.")]) as server:
        agent = make(main, server, [Guard])
        agent.on_intent(HandleIntent)
        agent.on_intent(seen)
        await agent.run("Weather?")
    assert handler_saw == ["get_weather"]
    assert seen.names == ["tool_call", "tool_result", "response_text"]
    assert seen.payloads("tool_result")[0]["result"] == "from middleware"
    assert seen.payloads("tool_result")[0]["overridden"] is True


async def test_on_error_and_on_run_complete_after_a_failure(main: ModuleType) -> None:
    order: list[Any] = []

    class Errors(main.AuwgentMiddleware):  # type: ignore[name-defined, misc]
        name = "errors"

        async def onError(self, error: Exception, session: Any, ctx: Any) -> bool:
            order.append(("onError", type(error).__name__, session["turns"][-1]["input"]))
            return False

        async def onRunComplete(self, finalSession: Any, ctx: Any) -> None:
            order.append(("onRunComplete", finalSession["turns"][-1]["status"]))

    seen = Recorder()
    with FakeOpenAIServer([status(400, message="bad request")]) as server:
        agent = make(main, server, [Errors])
        agent.on_intent(seen)
        await agent.run("hello")
    assert order[0][0] == "onError" and order[0][2] == {"text": "hello"}
    assert order[1] == ("onRunComplete", "error")
    assert seen.names == ["error"]

    class Handled(main.AuwgentMiddleware):  # type: ignore[name-defined, misc]
        name = "handled"

        async def onError(self, error: Exception, session: Any, ctx: Any) -> bool:
            return True

    seen = Recorder()
    with FakeOpenAIServer([status(400, message="bad request")]) as server:
        agent = make(main, server, [Handled])
        agent.on_intent(seen)
        await agent.run("hello")
    assert seen.names == []  # handled: no error intent


async def test_target_scopes_a_middleware_to_a_helper(main: ModuleType) -> None:
    fired: list[tuple[str, str]] = []

    class ResearcherMiddleware(main.AuwgentMiddleware):  # type: ignore[name-defined, misc]
        name = "researcher-middleware"
        target = "Researcher"

        async def onLLMStart(self, prompt: str, ctx: Any) -> None:
            fired.append(("llm", ctx["activeAgent"]))

        async def onIntent(self, name: str, value: Any, ctx: Any) -> None:
            fired.append((name, ctx["activeAgent"]))

    class Everyone(main.AuwgentMiddleware):  # type: ignore[name-defined, misc]
        name = "everyone"

        async def onLLMStart(self, prompt: str, ctx: Any) -> None:
            fired.append(("all llm", ctx["activeAgent"]))

    def reply(request: Any) -> Any:
        system = openai_system(request.body)
        if "You research." in system:
            return text("Rain is water.")
        if "Rain is water." in json.dumps(request.body["messages"]):
            return text("Rain is water, it says.")
        return text("[helper_call: Researcher]\ninput: rain\n[/helper_call]")

    with FakeOpenAIServer(reply) as server:
        agent = make(main, server, [ResearcherMiddleware, Everyone])
        await agent.run("What is rain?")
    assert [f for f in fired if not f[0].startswith("all")] == [
        ("llm", "Researcher"),
        ("response_text", "Researcher"),
    ]
    assert [f[1] for f in fired if f[0] == "all llm"] == ["Main", "Researcher", "Main"]


async def test_sessions_persist_through_run_start_and_run_complete(main: ModuleType) -> None:
    db: dict[str, Any] = {}

    # The manual's Python tab subclasses the intent handler base; that works too.
    class PersistenceMiddleware(main.AuwgentBaseIntentHandler):  # type: ignore[name-defined, misc]
        name = "session-persistence"

        async def onRunStart(self, session: Any, ctx: Any) -> Any:
            saved = db.get(ctx.get("userId", "u1"))
            return saved or session

        async def onRunComplete(self, finalSession: Any, ctx: Any) -> None:
            db[ctx.get("userId", "u1")] = json.loads(json.dumps(finalSession))

    with FakeOpenAIServer([text("Hi Ama."), text("Your name is Ama.")]) as server:
        first = make(main, server, [PersistenceMiddleware])
        await first.run("Hello, I am Ama")
        second = make(main, server, [PersistenceMiddleware])  # a fresh agent: memory is in db
        session = await second.run("What is my name?")
    assert [t["input"]["text"] for t in session["turns"]] == [
        "Hello, I am Ama",
        "What is my name?",
    ]
    messages = server.requests[1].body["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert "Hi Ama." in json.dumps(messages)
    assert messages[-1]["content"] == "What is my name?"


async def test_continuing_a_session_explicitly(main: ModuleType) -> None:
    with FakeOpenAIServer([text("Hi."), text("Again.")]) as server:
        agent = make(main, server, [])
        session = await agent.run("one")
        before = json.dumps(session)
        session2 = await agent.run("two", session=session)
    assert json.dumps(session) == before  # not modified
    assert [t["input"]["text"] for t in session2["turns"]] == ["one", "two"]
    assert {"system_prompt", "stack", "turns"} <= set(session2)
    assert all("id" in turn for turn in session2["turns"])


async def test_stream_yields_every_intent(main: ModuleType) -> None:
    with FakeOpenAIServer([text(TOOL), text("Sunny.")]) as server:
        agent = make(main, server, [])
        events = [event async for event in agent.stream("Weather?")]
    finals = [(e.name, e.agent_name) for e in events if not e.partial]
    assert finals == [
        ("tool_call", "Main"),
        ("tool_result", "Main"),
        ("response_text", "Main"),
    ]
    assert any(e.partial for e in events)
    assert agent.last_session["turns"][-1]["input"]["text"] == "Weather?"


async def test_the_blackboard_lives_for_exactly_one_run(main: ModuleType) -> None:
    before: list[Any] = []

    class Observability(main.AuwgentMiddleware):  # type: ignore[name-defined, misc]
        name = "observability"

        async def onRunStart(self, session: Any, ctx: Any) -> Any:
            before.append(ctx.get("trace_id"))
            ctx["trace_id"] = f"trace-{len(before)}"
            return session

    with FakeOpenAIServer([text("One."), text("Two.")]) as server:
        agent = make(main, server, [Observability])
        await agent.run("one")
        await agent.run("two")
    assert before == [None, None]
