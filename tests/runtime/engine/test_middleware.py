"""Middleware hooks: order per the manual, targets, the context dict, the manual's examples."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from auwgent.errors import ConfigError, ContextError
from auwgent.testing import ScriptedModel

from .irkit import (
    BOOL,
    Recorder,
    agent,
    block,
    config,
    document,
    field,
    helper_use,
    make_agent,
    model,
    text,
    tool,
)


class HookLog:
    """A middleware recording every hook as (hook, activeAgent)."""

    name = "hook-log"

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    async def onRunStart(self, session: Any, ctx: dict[str, Any]) -> Any:
        self.calls.append(("onRunStart", ctx["activeAgent"]))
        return session

    async def onLLMStart(self, prompt: str, ctx: dict[str, Any]) -> None:
        self.calls.append(("onLLMStart", ctx["activeAgent"]))

    async def onIntent(self, name: str, value: Any, ctx: dict[str, Any]) -> None:
        self.calls.append((f"onIntent:{name}", ctx["activeAgent"]))

    async def onLLMEnd(self, response: Any, ctx: dict[str, Any]) -> None:
        self.calls.append(("onLLMEnd", ctx["activeAgent"]))

    async def onRunComplete(self, session: Any, ctx: dict[str, Any]) -> None:
        self.calls.append(("onRunComplete", ctx["activeAgent"]))


def _tool_doc() -> dict[str, Any]:
    return document(agent(tools=[tool("get_weather", field("location"))]))


async def test_hook_order_matches_run_hooks_vs_llm_hooks() -> None:
    log = HookLog()
    model = ScriptedModel([block("tool_call", "get_weather", "location: Accra"), text("Sunny.")])
    bot = make_agent(
        _tool_doc(), model, tools={"get_weather": lambda location: "sunny"}, middleware=[log]
    )
    await bot.run("weather?")
    hooks = [h for h, _ in log.calls if not h.startswith("onIntent")]
    assert hooks == ["onRunStart", "onLLMStart", "onLLMStart", "onLLMEnd", "onRunComplete"]
    assert log.calls == [
        ("onRunStart", "Main"),
        ("onLLMStart", "Main"),
        ("onIntent:tool_call", "Main"),
        ("onIntent:tool_result", "Main"),
        ("onLLMStart", "Main"),
        ("onIntent:response_text", "Main"),
        ("onLLMEnd", "Main"),
        ("onRunComplete", "Main"),
    ]


async def test_hook_order_inside_a_helper() -> None:
    log = HookLog()
    helper = agent("Researcher", kind="helper", tools=[tool("search", field("q"))])
    doc = document(agent(helpers=[helper_use("Researcher")]), helper)
    model = ScriptedModel(
        [
            block("helper_call", "Researcher", "input: find facts"),
            block("tool_call", "search", "q: facts"),
            text("Facts found."),
            text("Here are the facts."),
        ]
    )
    bot = make_agent(doc, model, tools={"search": lambda q: "facts"}, middleware=[log])
    rec = Recorder()
    bot.on_intent(rec)
    await bot.run("research")
    assert log.calls == [
        ("onRunStart", "Main"),
        ("onLLMStart", "Main"),
        ("onIntent:helper_call", "Main"),
        ("onLLMStart", "Researcher"),
        ("onIntent:tool_call", "Researcher"),
        ("onIntent:tool_result", "Researcher"),
        ("onLLMStart", "Researcher"),
        ("onIntent:response_text", "Researcher"),
        ("onLLMEnd", "Researcher"),
        ("onIntent:helper_result", "Main"),
        ("onLLMStart", "Main"),
        ("onIntent:response_text", "Main"),
        ("onLLMEnd", "Main"),
        ("onRunComplete", "Main"),
    ]
    # Handlers get the helper's name on helper_call / helper_result (the manual prints
    # "helper invoked: {agent_name}"); middleware sees the parent as the active agent then.
    assert [(n, a) for n, _, a in rec.events] == [
        ("helper_call", "Researcher"),
        ("tool_call", "Researcher"),
        ("tool_result", "Researcher"),
        ("response_text", "Researcher"),
        ("helper_result", "Researcher"),
        ("response_text", "Main"),
    ]


async def test_on_run_complete_fires_once_also_after_failure_and_on_error_can_handle() -> None:
    seen: list[str] = []

    class Watch:
        async def onRunComplete(self, session: Any, ctx: dict[str, Any]) -> None:
            seen.append("complete:" + session["turns"][-1]["status"])

        async def onError(self, error: Exception, session: Any, ctx: dict[str, Any]) -> bool:
            seen.append("error:" + str(error))
            return True

    bot = make_agent(
        document(agent()), ScriptedModel([ScriptedModel.fail("boom")]), middleware=[Watch()]
    )
    rec = Recorder()
    bot.on_intent(rec)
    await bot.run("hi")
    assert len([s for s in seen if s.startswith("complete:")]) == 1
    assert seen[-1] == "complete:error"
    assert any("boom" in s for s in seen if s.startswith("error:"))
    assert rec.of("error") == []  # handled by onError


async def test_on_llm_start_may_replace_the_prompt() -> None:
    class Rag:
        def on_llm_start(self, prompt: str, ctx: dict[str, Any]) -> str:  # snake_case, sync
            return prompt + "\n\nRetrieved: the sky is green."

    model = ScriptedModel([text("ok")])
    bot = make_agent(document(agent()), model, middleware=[Rag])
    await bot.run("what colour is the sky?")
    assert model.requests[0].system.endswith("Retrieved: the sky is green.")


async def test_target_scopes_middleware_to_a_helper() -> None:
    class ResearcherOnly:
        name = "researcher-middleware"
        target = "Researcher"

        def __init__(self) -> None:
            self.seen: list[str] = []

        async def onLLMStart(self, prompt: str, ctx: dict[str, Any]) -> None:
            assert ctx["activeAgent"] == "Researcher"
            assert ctx["rootAgent"] == "Main"
            assert ctx["systemPrompt"] == prompt
            self.seen.append(prompt.split("\n")[0])

    mw = ResearcherOnly()
    helper = agent("Researcher", kind="helper", prompt="You research.")
    doc = document(agent(helpers=[helper_use("Researcher")]), helper)
    model = ScriptedModel(
        [
            block("helper_call", "Researcher", "input: x"),
            text("found"),
            text("done"),
        ]
    )
    bot = make_agent(doc, model, middleware=[mw])
    await bot.run("go")
    assert mw.seen == ["You research."]


async def test_target_list_and_partial_hook() -> None:
    seen: list[str] = []

    class Partial:
        target = ["Main", "Other"]

        async def onIntentPartial(self, name: str, value: Any, ctx: dict[str, Any]) -> None:
            seen.append(value.get("delta", ""))

    bot = make_agent(
        document(agent()), ScriptedModel([text("abcdef")], chunk_size=2), middleware=[Partial]
    )
    await bot.run("go")
    assert "".join(seen) == "abcdef"


# -- the manual's examples, written as its Python tabs show -------------------------------------


class FakeDb:
    def __init__(self) -> None:
        self.saved: dict[str, Any] = {}
        self.users = {"u1": {"name": "Ama", "plan": "premium"}}

    async def get_session(self, key: str) -> Any:
        return self.saved.get(key)

    async def save_session(self, key: str, session: Any) -> None:
        self.saved[key] = session


def _ctx_doc() -> dict[str, Any]:
    from auwgent.runtime.evaluate import prompts  # noqa: F401  (the prompt below references ctx)

    cfg = config("You are helpful.")
    cfg["prompt"] = [
        {
            "kind": "inline",
            "loc": [1, 1],
            "body": [
                {
                    "kind": "text",
                    "template": [
                        {"t": "text", "value": "You are speaking with "},
                        {"t": "expr", "expr": {"e": "ctx", "name": "name"}},
                        {"t": "text", "value": "."},
                    ],
                }
            ],
        }
    ]
    return document(agent(configs={"default": cfg}, context=[field("name"), field("is_vip", BOOL)]))


async def test_manual_persistence_context_and_observability_middleware() -> None:
    db = FakeDb()
    user_id = "u1"
    logged: list[dict[str, Any]] = []

    class SessionMiddleware:
        name = "session-persistence"

        async def onRunStart(self, session: Any, ctx: dict[str, Any]) -> Any:
            user = db.users[user_id]
            ctx["set_context"]({"name": user["name"], "is_vip": user["plan"] == "premium"})
            saved = await db.get_session(user_id)
            return saved or session

        async def onRunComplete(self, finalSession: Any, ctx: dict[str, Any]) -> None:
            await db.save_session(user_id, finalSession)

    class ObservabilityMiddleware:
        name = "observability"

        async def onRunStart(self, session: Any, ctx: dict[str, Any]) -> Any:
            ctx["trace_id"] = str(uuid.uuid4())
            ctx["start_time"] = time.time()
            return session

        async def onRunComplete(self, finalSession: dict[str, Any], ctx: dict[str, Any]) -> None:
            duration = time.time() - ctx.get("start_time", 0)
            logged.append({"trace_id": ctx.get("trace_id"), "duration": duration})

    model = ScriptedModel([text("Hello Ama."), text("Still here.")])
    bot = make_agent(_ctx_doc(), model, middleware=[SessionMiddleware, ObservabilityMiddleware])
    await bot.run("Hello")
    await bot.run("Again")
    assert model.requests[0].system.startswith("You are speaking with Ama.")
    assert [t["input"]["text"] for t in db.saved[user_id]["turns"]] == ["Hello", "Again"]
    assert [m.content for m in model.requests[1].messages][0] == "Hello"
    assert len(logged) == 2 and all(e["trace_id"] and e["duration"] >= 0 for e in logged)


async def test_missing_required_context_is_an_error_before_any_model_call() -> None:
    model = ScriptedModel([text("never")])
    bot = make_agent(_ctx_doc(), model)
    rec = Recorder()
    bot.on_intent(rec)
    await bot.run("hi")
    assert model.calls == 0
    assert rec.names() == ["error"]
    assert "name" in rec.of("error")[0]["message"]


def test_context_types_are_checked_at_construction_and_set_context() -> None:
    with pytest.raises(ContextError, match=r"context\.is_vip.*boolean.*string"):
        make_agent(_ctx_doc(), ScriptedModel([]), context={"name": "x", "is_vip": "yes"})
    bot = make_agent(_ctx_doc(), ScriptedModel([]), context={"name": "x", "is_vip": True})
    bot.set_context({"extra": [1, 2]})
    assert bot.context == {"name": "x", "is_vip": True, "extra": [1, 2]}
    with pytest.raises(ContextError, match="name"):
        bot.set_context({"name": 3})


async def test_only_undeclared_context_keys_are_shown_in_a_context_section() -> None:
    model = ScriptedModel([text("ok")])
    bot = make_agent(_ctx_doc(), model, context={"name": "Ama", "is_vip": True})
    bot.set_context({"retrieved_chunks": ["Accra is the capital."]})
    await bot.run("hi")
    system = model.requests[0].system
    # Declared but referenced by no prompt: private to the application and its workflows.
    assert "is_vip" not in system
    assert "Accra is the capital." in system
    assert "- name:" not in system  # referenced by the prompt, so not repeated
    assert system.index("Accra") > system.index("You are speaking with Ama.")


async def test_rag_middleware_with_embed() -> None:
    cfg = config(embedding=model("text-embedding-3-small"))
    doc = document(agent(configs={"default": cfg}))
    vectors: list[Any] = []

    class RagMiddleware:
        name = "rag"

        async def onRunStart(self, session: Any, ctx: dict[str, Any]) -> Any:
            turns = session.get("turns", [])
            last_turn = turns[-1]
            query = last_turn["input"]  # the manual passes the input object itself
            query_vector = await ctx["embed"](query)
            query = query["text"]
            vectors.append(query_vector)
            vectors.append(await ctx["embedBatch"](["a", "b"]))
            ctx["set_context"]({"retrieved_chunks": ["chunk about " + query]})
            return session

    scripted = ScriptedModel([text("grounded")])
    bot = make_agent(doc, scripted, middleware=[RagMiddleware])
    await bot.run("gold prices")
    assert scripted.embed_requests[0] == (["gold prices"], "text-embedding-3-small")
    assert len(vectors[1]) == 2
    assert "chunk about gold prices" in scripted.requests[0].system


async def test_embed_without_embedding_model_is_a_clear_error() -> None:
    class Rag:
        async def onRunStart(self, session: Any, ctx: dict[str, Any]) -> Any:
            await ctx["embed"]("x")
            return session

    bot = make_agent(document(agent()), ScriptedModel([text("x")]), middleware=[Rag])
    rec = Recorder()
    bot.on_intent(rec)
    await bot.run("hi")
    assert "embedding" in rec.of("error")[0]["message"]


def test_bad_middleware_target_is_a_config_error() -> None:
    class Bad:
        target = 3

    with pytest.raises(ConfigError, match="target"):
        make_agent(document(agent()), ScriptedModel([]), middleware=[Bad])


async def test_session_store_middleware_continues_a_conversation(tmp_path: Any) -> None:
    from auwgent.runtime.stores import SessionStoreMiddleware, SQLiteSessionStore

    store = SQLiteSessionStore(str(tmp_path / "sessions.db"))
    model_ = ScriptedModel([text("Hi Ama."), text("You are Ama."), text("Hello stranger.")])
    bot = make_agent(document(agent()), model_, middleware=[SessionStoreMiddleware(store)])
    await bot.run("I am Ama", conversation_id="c1")
    session = await bot.run("Who am I?", conversation_id="c1")
    await bot.run("Hi", conversation_id="c2")
    assert [t["input"]["text"] for t in session["turns"]] == ["I am Ama", "Who am I?"]
    assert [m.content for m in model_.requests[1].messages][0] == "I am Ama"
    assert [m.content for m in model_.requests[2].messages] == ["Hi"]
    stored = await store.load("c1")
    assert stored is not None and len(stored["turns"]) == 2


async def test_on_run_start_returning_garbage_is_an_error_not_an_exception() -> None:
    class Broken:
        async def onRunStart(self, session: Any, ctx: dict[str, Any]) -> Any:
            return {"version": 99}

    model_ = ScriptedModel([text("never")])
    bot = make_agent(document(agent()), model_, middleware=[Broken])
    rec = Recorder()
    bot.on_intent(rec)
    session = await bot.run("hi")
    assert model_.calls == 0
    assert "onRunStart" in rec.of("error")[0]["message"]
    assert session["turns"][-1]["status"] == "error"


async def test_a_dict_of_functions_is_a_middleware_too() -> None:
    seen: list[str] = []
    mw = {
        "name": "dict-style",
        "onLLMStart": lambda prompt, ctx: seen.append(ctx["activeAgent"]),
        "on_run_complete": lambda session, ctx: seen.append("done"),
    }
    bot = make_agent(document(agent()), ScriptedModel([text("x")]), middleware=[mw])
    await bot.run("hi")
    assert seen == ["Main", "done"]
