"""The engine loop through the public API, driven by scripted models (blocks protocol)."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from typing import Any

from auwgent.testing import ScriptedModel

from .irkit import (
    NUM,
    Recorder,
    agent,
    block,
    config,
    document,
    field,
    intent,
    make_agent,
    obj,
    ref,
    text,
    tool,
    union,
)


async def test_text_reply_emits_response_text_and_returns_the_session() -> None:
    model = ScriptedModel([text("Hello! How can I help?")])
    bot = make_agent(document(agent()), model)
    rec = Recorder()
    bot.on_intent(rec)
    session = await bot.run("hello")
    assert rec.events == [("response_text", {"text": "Hello! How can I help?"}, "Main")]
    assert session["version"] == 1
    assert session["turns"][-1]["input"] == {"text": "hello"}
    assert session["turns"][-1]["status"] == "complete"
    assert session["turns"][-1]["output"] == "Hello! How can I help?"
    assert json.loads(json.dumps(session)) == session
    request = model.requests[0]
    assert request.system.startswith("You are a helpful assistant.")
    assert "Current date and time:" in request.system.splitlines()[-1]
    assert [m.content for m in request.messages] == ["hello"]


async def test_class_handler_methods_receive_value_and_agent_name() -> None:
    seen: list[Any] = []

    class Handle:
        async def response_text(self, intent: Any, agent_name: str) -> None:
            seen.append((intent["text"], agent_name))

    bot = make_agent(document(agent()), ScriptedModel([text("hi")]))
    bot.on_intent(Handle)
    await bot.run("hello")
    assert seen == [("hi", "Main")]


async def test_tool_round_trip_feeds_the_result_back() -> None:
    calls: list[str] = []

    class Tools:
        async def get_weather(self, location: str) -> dict[str, Any]:
            calls.append(location)
            return {"temperature": 28, "condition": "sunny"}

    doc = document(
        agent(
            tools=[
                tool(
                    "get_weather",
                    field("location"),
                    returns=obj(field("temperature", NUM), field("condition")),
                )
            ]
        )
    )
    model = ScriptedModel(
        [
            block("tool_call", "get_weather", "location: Accra"),
            text("It is sunny."),
        ]
    )
    bot = make_agent(doc, model, tools=Tools)
    rec = Recorder()
    bot.on_intent(rec)
    await bot.run("weather in Accra?")
    assert calls == ["Accra"]
    assert rec.names() == ["tool_call", "tool_result", "response_text"]
    assert rec.of("tool_call") == [{"type": "get_weather", "args": {"location": "Accra"}}]
    assert rec.of("tool_result") == [
        {
            "name": "get_weather",
            "args": {"location": "Accra"},
            "result": {"temperature": 28, "condition": "sunny"},
            "overridden": False,
        }
    ]
    second = model.requests[1]
    fed_back = " ".join(m.content for m in second.messages)
    assert '"temperature": 28' in fed_back or '"temperature":28' in fed_back


async def test_several_calls_of_one_response_run_concurrently() -> None:
    running = 0
    all_three = asyncio.Event()

    def slow(name: str) -> Any:
        async def impl(n: float) -> str:
            # Returns only once all three are running at the same time (else times out, and
            # the tool's result is an error): no clock, so a loaded machine cannot fail it.
            nonlocal running
            running += 1
            if running == 3:
                all_three.set()
            await asyncio.wait_for(all_three.wait(), timeout=10)
            return f"{name} done"

        return impl

    doc = document(
        agent(
            tools=[
                tool("a", field("n", NUM)),
                tool("b", field("n", NUM)),
                tool("c", field("n", NUM)),
            ]
        )
    )
    model = ScriptedModel(
        [
            "\n".join(block("tool_call", n, "n: 1") for n in "abc"),
            text("all done"),
        ]
    )
    bot = make_agent(doc, model, tools={"a": slow("a"), "b": slow("b"), "c": slow("c")})
    rec = Recorder()
    bot.on_intent(rec)
    await bot.run("go")
    assert sorted(r["result"] for r in rec.of("tool_result")) == ["a done", "b done", "c done"]


async def test_sync_tools_also_run_concurrently() -> None:
    barrier = threading.Barrier(2, timeout=10)

    def slow(n: float) -> str:
        barrier.wait()  # only returns once both tools are running at the same time
        return "ok"

    doc = document(agent(tools=[tool("a", field("n", NUM)), tool("b", field("n", NUM))]))
    model = ScriptedModel(
        [
            block("tool_call", "a", "n: 1") + "\n" + block("tool_call", "b", "n: 2"),
            text("done"),
        ]
    )
    bot = make_agent(doc, model, tools={"a": slow, "b": slow})
    rec = Recorder()
    bot.on_intent(rec)
    await bot.run("go")
    assert [r["result"] for r in rec.of("tool_result")] == ["ok", "ok"]


async def test_tool_exception_becomes_tool_error_and_the_model_sees_it() -> None:
    def boom(location: str) -> str:
        raise RuntimeError("database is down")

    doc = document(agent(tools=[tool("get_weather", field("location"))]))
    model = ScriptedModel([block("tool_call", "get_weather", "location: Accra"), text("Sorry.")])
    bot = make_agent(doc, model, tools={"get_weather": boom})
    rec = Recorder()
    bot.on_intent(rec)
    session = await bot.run("weather?")
    assert rec.names() == ["tool_call", "tool_error", "response_text"]
    err = rec.of("tool_error")[0]
    assert err["tool"] == "get_weather" and "database is down" in err["message"]
    assert "database is down" in " ".join(m.content for m in model.requests[1].messages)
    assert session["turns"][-1]["status"] == "complete"


async def test_invalid_arguments_never_reach_the_implementation() -> None:
    calls: list[Any] = []
    doc = document(agent(tools=[tool("get_forecast", field("location"), field("days", NUM))]))
    model = ScriptedModel(
        [
            block("tool_call", "get_forecast", "location: Accra\ndays: many"),
            text("ok"),
        ]
    )
    bot = make_agent(doc, model, tools={"get_forecast": lambda **kw: calls.append(kw)})
    rec = Recorder()
    bot.on_intent(rec)
    await bot.run("forecast")
    assert calls == []
    errors = rec.of("tool_error")
    assert len(errors) == 1 and errors[0]["tool"] == "get_forecast"
    assert "days" in errors[0]["message"]


async def test_unimplemented_tool_is_marked_and_yields_tool_error() -> None:
    class Base:
        def get_weather(self, location: str) -> str:
            raise NotImplementedError

        get_weather.__auwgent_unimplemented__ = True  # type: ignore[attr-defined]

    doc = document(agent(tools=[tool("get_weather", field("location"))]))
    model = ScriptedModel([block("tool_call", "get_weather", "location: Accra"), text("ok")])
    bot = make_agent(doc, model, tools=Base)
    rec = Recorder()
    bot.on_intent(rec)
    await bot.run("weather")
    assert "[NOT CONFIGURED]" in model.requests[0].system
    assert rec.names() == ["tool_call", "tool_error", "response_text"]
    assert "not configured" in rec.of("tool_error")[0]["message"].lower()


async def test_skip_and_override_from_handlers() -> None:
    calls: list[str] = []
    doc = document(
        agent(tools=[tool("delete_records", field("id")), tool("get_weather", field("location"))])
    )

    def handle(name: str, value: Any, agent_name: str) -> Any:
        if name == "tool_call" and value["type"] == "delete_records":
            return {"skip": True}
        if name == "tool_call" and value["type"] == "get_weather":
            return {"result": "Sunny, 28°C"}
        return None

    model = ScriptedModel(
        [
            block("tool_call", "delete_records", "id: 7")
            + "\n"
            + block("tool_call", "get_weather", "location: Accra"),
            text("done"),
        ]
    )
    bot = make_agent(
        doc,
        model,
        tools={
            "delete_records": lambda id: calls.append(id),
            "get_weather": lambda location: calls.append(location),
        },
    )
    rec = Recorder()
    bot.on_intent(handle)
    bot.on_intent(rec)
    await bot.run("go")
    assert calls == []
    assert rec.of("tool_skipped") == [{"type": "delete_records", "args": {"id": "7"}}]
    assert rec.of("tool_result") == [
        {
            "name": "get_weather",
            "args": {"location": "Accra"},
            "result": "Sunny, 28°C",
            "overridden": True,
        }
    ]
    assert "Sunny, 28°C" in " ".join(m.content for m in model.requests[1].messages)


async def test_middleware_control_wins_over_user_handlers() -> None:
    calls: list[str] = []

    class Guard:
        name = "guard"

        async def onIntent(self, name: str, value: Any, ctx: dict[str, Any]) -> Any:
            if name == "tool_call":
                assert ctx["rawBlock"].startswith("[tool_call: get_weather]")
                return {"result": "from middleware"}
            return None

    doc = document(agent(tools=[tool("get_weather", field("location"))]))
    model = ScriptedModel([block("tool_call", "get_weather", "location: Accra"), text("ok")])
    bot = make_agent(
        doc,
        model,
        tools={"get_weather": lambda location: calls.append(location)},
        middleware=[Guard],
    )
    rec = Recorder()
    bot.on_intent(lambda n, v, a: {"skip": True} if n == "tool_call" else None)
    bot.on_intent(rec)
    await bot.run("go")
    assert calls == []
    assert rec.of("tool_skipped") == []
    assert rec.of("tool_result")[0]["result"] == "from middleware"
    assert rec.of("tool_result")[0]["overridden"] is True


async def test_structured_output_single_type() -> None:
    types = {"Person": obj(field("name"), field("age", NUM))}
    doc = document(agent(output=ref("Person")), types=types)
    model = ScriptedModel([block("schema", "Person", "name: Kwame\nage: 28")])
    bot = make_agent(doc, model)
    rec = Recorder()
    bot.on_intent(rec)
    session = await bot.run("My name is Kwame and I am 28.")
    assert rec.events == [
        ("response_schema", {"type": "Person", "response": {"name": "Kwame", "age": 28}}, "Main")
    ]
    assert session["turns"][-1]["output"] == {"name": "Kwame", "age": 28}


async def test_structured_output_union_validates_the_named_variant() -> None:
    types = {
        "Person": obj(field("name"), field("age", NUM)),
        "Organisation": obj(field("company_name"), field("industry")),
    }
    doc = document(agent(output=union(ref("Person"), ref("Organisation"))), types=types)
    model = ScriptedModel(
        [
            block("schema", "Organisation", "company_name: AngloGold Ashanti\nindustry: mining"),
        ]
    )
    bot = make_agent(doc, model)
    rec = Recorder()
    bot.on_intent(rec)
    await bot.run("I work at AngloGold Ashanti, a mining company.")
    assert rec.of("response_schema") == [
        {
            "type": "Organisation",
            "response": {"company_name": "AngloGold Ashanti", "industry": "mining"},
        }
    ]


async def test_invalid_structured_output_is_sent_back_and_retried() -> None:
    types = {"MainOutput": obj(field("title"), field("score", NUM))}
    doc = document(agent(output=ref("MainOutput")), types=types)
    model = ScriptedModel(
        [
            block("schema", "MainOutput", "title: Weekly summary"),  # score missing
            block("schema", "MainOutput", "title: Weekly summary\nscore: 92"),
        ]
    )
    bot = make_agent(doc, model)
    rec = Recorder()
    bot.on_intent(rec)
    await bot.run("summarise")
    assert rec.events == [
        (
            "response_schema",
            {"type": "MainOutput", "response": {"title": "Weekly summary", "score": 92}},
            "Main",
        )
    ]
    feedback = model.requests[1].messages[-1].content
    assert "score" in feedback


async def test_output_retries_are_bounded_then_error() -> None:
    types = {"MainOutput": obj(field("score", NUM))}
    doc = document(agent(output=ref("MainOutput")), types=types)
    bad = block("schema", "MainOutput", "score: lots")
    model = ScriptedModel([bad, bad, bad])
    bot = make_agent(doc, model, maxOutputRetries=1)
    rec = Recorder()
    bot.on_intent(rec)
    session = await bot.run("go")
    assert model.calls == 2
    assert rec.names() == ["error"]
    assert "score" in rec.of("error")[0]["message"]
    assert session["turns"][-1]["status"] == "error"


async def test_custom_intents_are_validated_and_the_response_continues() -> None:
    planning = intent("Planning", field("step"), field("confidence", NUM))
    doc = document(agent(intents=[planning]))
    model = ScriptedModel(
        [
            block("custom", "Planning", "step: Collect user constraints\nconfidence: 0.92")
            + "\n"
            + text("Let me ask two questions."),
        ]
    )
    bot = make_agent(doc, model)
    seen: list[Any] = []

    class Handle:
        async def Planning(self, intent: Any, agent_name: str) -> None:
            seen.append(("Planning", intent))

        async def response_text(self, intent: Any, agent_name: str) -> None:
            seen.append(("text", intent["text"]))

    bot.on_intent(Handle())
    await bot.run("plan my trip")
    assert seen == [
        ("Planning", {"step": "Collect user constraints", "confidence": 0.92}),
        ("text", "Let me ask two questions."),
    ]


async def test_partials_carry_snapshot_and_delta() -> None:
    model = ScriptedModel([text("Hello there, friend")], chunk_size=3)
    bot = make_agent(document(agent()), model)
    partials: list[Any] = []

    class Partial:
        async def response_text(self, intent: Any, agent_name: str) -> None:
            partials.append(intent)

    bot.on_intent_partial(Partial)
    await bot.run("hi")
    assert partials, "no partials arrived"
    for p in partials:
        assert p["partial"] is True and p["complete"] is False and p["mode"] == "text"
        assert p["segment"] == 0
    assert "".join(p["delta"] for p in partials) == partials[-1]["snapshot"]["text"]
    assert partials[-1]["snapshot"]["text"].startswith("Hello there")


async def test_stream_yields_partials_and_finals() -> None:
    bot = make_agent(document(agent()), ScriptedModel([text("streamed reply")], chunk_size=4))
    events = [e async for e in bot.stream("hi")]
    assert any(e.partial and e.name == "response_text" for e in events)
    finals = [e for e in events if not e.partial]
    assert [(e.name, e.value, e.agent_name) for e in finals] == [
        ("response_text", {"text": "streamed reply"}, "Main")
    ]
    assert bot.last_session is not None


async def test_the_loop_limit_ends_a_runaway_run_with_error() -> None:
    counter: list[int] = []
    doc = document(agent(tools=[tool("again")]))
    model = ScriptedModel(lambda request: block("tool_call", "again", ""))
    bot = make_agent(doc, model, maxToolLoops=3, tools={"again": lambda: counter.append(1)})
    rec = Recorder()
    bot.on_intent(rec)
    session = await bot.run("loop")
    assert model.calls == 3
    assert rec.names()[-1] == "error"
    assert "maxToolLoops" in rec.of("error")[0]["message"]
    assert session["turns"][-1]["status"] == "error"


async def test_dsl_max_tool_loops_applies_and_runtime_config_overrides() -> None:
    doc = document(agent(configs={"default": config(max_tool_loops=2)}, tools=[tool("again")]))
    model = ScriptedModel(lambda request: block("tool_call", "again", ""))
    bot = make_agent(doc, model, tools={"again": lambda: None})
    await bot.run("loop")
    assert model.calls == 2
    model2 = ScriptedModel(lambda request: block("tool_call", "again", ""))
    bot2 = make_agent(doc, model2, tools={"again": lambda: None}, maxToolLoops=4)
    await bot2.run("loop")
    assert model2.calls == 4


async def test_provider_failure_becomes_error_and_session_is_returned() -> None:
    bot = make_agent(
        document(agent()), ScriptedModel([ScriptedModel.fail("invalid key", status=401)])
    )
    rec = Recorder()
    bot.on_intent(rec)
    session = await bot.run("hi")
    assert rec.names() == ["error"]
    assert "invalid key" in rec.of("error")[0]["message"]
    assert session["turns"][-1]["status"] == "error"


async def test_a_failing_handler_does_not_escape_run() -> None:
    def bad(name: str, value: Any, agent_name: str) -> None:
        if name == "response_text":
            raise ValueError("handler bug")

    bot = make_agent(document(agent()), ScriptedModel([text("hi")]))
    rec = Recorder()
    bot.on_intent(bad)
    bot.on_intent(rec)
    session = await bot.run("hi")
    assert "handler bug" in rec.of("error")[0]["message"]
    assert session["turns"][-1]["output"] == "hi"


def test_run_sync() -> None:
    bot = make_agent(document(agent()), ScriptedModel([text("sync hi")]))
    session = bot.run_sync("hello")
    assert session["turns"][0]["output"] == "sync hi"


async def test_continuing_a_session_sends_the_history() -> None:
    model = ScriptedModel([text("Hi Ama."), text("You are Ama.")])
    bot = make_agent(document(agent()), model)
    first = await bot.run("I am Ama")
    second = await bot.run("Who am I?", session=json.loads(json.dumps(first)))
    contents = [m.content for m in model.requests[1].messages]
    assert contents[0] == "I am Ama"
    assert "Hi Ama." in contents[1]
    assert contents[-1] == "Who am I?"
    assert len(second["turns"]) == 2
    assert len(first["turns"]) == 1  # the first session was not mutated


async def test_the_run_timeout_ends_a_slow_run_with_error() -> None:
    # 380 chunks 50 ms apart: about 19 s unless the 0.2 s run timeout ends it.
    model = ScriptedModel([text("a very slow answer " * 20)], chunk_size=1, delay=0.05)
    bot = make_agent(document(agent()), model, timeouts={"run": 0.2})
    rec = Recorder()
    bot.on_intent(rec)
    started = time.perf_counter()
    session = await bot.run("hi")
    assert time.perf_counter() - started < 10
    assert rec.names() == ["error"]
    assert "longer than 0.2" in rec.of("error")[0]["message"]
    assert session["turns"][-1]["status"] == "error"


async def test_session_stays_json_when_a_result_is_a_python_object() -> None:
    class Point:
        def __str__(self) -> str:
            return "Point(1, 2)"

    doc = document(agent(tools=[tool("where")]))
    model = ScriptedModel([block("tool_call", "where", ""), text("there")])
    bot = make_agent(doc, model, tools={"where": lambda: "here"})
    # A handler's override is the application's own value: it is not checked, only kept JSON.
    bot.on_intent(
        lambda name, value, agent: {"result": {"at": Point()}} if name == "tool_call" else None
    )
    session = await bot.run("where?")
    again = json.loads(json.dumps(session))
    results = [i for i in again["turns"][0]["intents"] if i["name"] == "tool_result"]
    assert results[0]["value"]["result"] == {"at": "Point(1, 2)"}


async def test_middleware_skip_and_controls_for_workflow_and_helper_calls() -> None:
    ran: list[str] = []
    wf = {
        "name": "audit",
        "description": "audit",
        "params": [],
        "returns": {"kind": "string"},
        "tools": [],
        "body": [{"s": "return", "loc": [2, 1], "value": {"e": "lit", "value": "ran"}}],
        "source": "main.agent",
        "loc": [1, 1],
        "examples": [],
    }
    helper = agent("Helper", kind="helper")
    doc = document(
        agent(
            tools=[tool("drop")],
            workflows=[wf],
            helpers=[{"name": "Helper", "tools": "none", "handoff": "none"}],
        ),
        helper,
    )

    class Policy:
        async def onIntent(self, name: str, value: Any, ctx: dict[str, Any]) -> Any:
            if name == "tool_call":
                return {"skip": True}
            if name == "workflow_call":
                return {"result": "cached audit"}
            if name == "helper_call":
                return {"skip": True}
            return None

    model = ScriptedModel(
        [
            "\n".join(
                [
                    block("tool_call", "drop", ""),
                    block("workflow_call", "audit", ""),
                    block("helper_call", "Helper", "input: hi"),
                ]
            ),
            text("ok"),
        ]
    )
    bot = make_agent(doc, model, tools={"drop": lambda: ran.append("drop")}, middleware=[Policy])
    rec = Recorder()
    bot.on_intent(rec)
    await bot.run("go")
    assert ran == [] and model.calls == 2  # neither the tool, the workflow nor the helper ran
    assert sorted(v["type"] for v in rec.of("tool_skipped")) == ["Helper", "drop"]
    assert rec.of("workflow_result") == [
        {"name": "audit", "args": {}, "result": "cached audit", "overridden": True}
    ]


async def test_call_partials_carry_a_structured_snapshot() -> None:
    doc = document(agent(tools=[tool("get_weather", field("location"))]))
    model = ScriptedModel(
        [block("tool_call", "get_weather", "location: Accra"), text("ok")], chunk_size=2
    )
    bot = make_agent(doc, model, tools={"get_weather": lambda location: "sunny"})
    partials: list[tuple[str, Any]] = []
    bot.on_intent_partial(lambda name, value, agent_name: partials.append((name, value)))
    await bot.run("go")
    calls = [v for n, v in partials if n == "tool_call"]
    assert calls and all(v["mode"] == "structured" and "delta" not in v for v in calls)
    assert calls[-1]["snapshot"]["type"] == "get_weather"
    assert "location: Accra" in calls[-1]["raw"]


async def test_leaving_a_stream_early_cancels_the_run() -> None:
    model = ScriptedModel([text("word " * 200)], chunk_size=5, delay=0.001)
    bot = make_agent(document(agent()), model)
    seen = 0
    async for _event in bot.stream("talk"):
        seen += 1
        if seen == 3:
            break
    await asyncio.sleep(0.05)
    pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    assert pending == []


async def test_many_concurrent_runs_of_one_agent_stay_separate() -> None:
    doc = document(agent(tools=[tool("echo", field("v"))]))

    def script(request: Any) -> str:
        user = request.messages[0].content
        if len(request.messages) == 1:
            return block("tool_call", "echo", f"v: {user}")
        return text(f"answer {user}")

    bot = make_agent(doc, ScriptedModel(script), tools={"echo": lambda v: v})
    sessions = await asyncio.gather(*(bot.run(f"q{i}") for i in range(100)))
    assert [s["turns"][0]["output"] for s in sessions] == [f"answer q{i}" for i in range(100)]
    for i, s in enumerate(sessions):
        results = [
            x["value"]["result"] for x in s["turns"][0]["intents"] if x["name"] == "tool_result"
        ]
        assert results == [f"q{i}"]


async def test_an_invalid_custom_intent_is_sent_back() -> None:
    planning = intent("Planning", field("step"), field("confidence", NUM))
    doc = document(agent(intents=[planning]))
    model = ScriptedModel(
        [
            block("custom", "Planning", "step: go\nconfidence: high"),
            block("custom", "Planning", "step: go\nconfidence: 0.5"),
        ]
    )
    bot = make_agent(doc, model)
    rec = Recorder()
    bot.on_intent(rec)
    await bot.run("plan")
    assert rec.events == [("Planning", {"step": "go", "confidence": 0.5}, "Main")]
    assert "confidence" in model.requests[1].messages[-1].content
