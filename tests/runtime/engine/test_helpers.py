"""Helpers (grants, handoff modes, nesting, structured output), scoped-tool enforcement,
workflows through the engine, and named configs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from auwgent.errors import ConfigError
from auwgent.runtime.providers.base import ModelRequest
from auwgent.testing import ScriptedModel

from .irkit import (
    Recorder,
    agent,
    block,
    config,
    document,
    field,
    helper_use,
    make_agent,
    model,
    obj,
    ref,
    text,
    tool,
)

REPORT = {"AnalysisReport": obj(field("summary"), field("recommendations"))}


def _analyzer(**kw: Any) -> dict[str, Any]:
    return agent(
        "DataAnalyzer",
        kind="helper",
        prompt="You are a data analyst expert.",
        input=ref("DataAnalyzerInput"),
        output=ref("AnalysisReport"),
        tools=[tool("detect_low_stock")],
        **kw,
    )


def _types() -> dict[str, Any]:
    return {**REPORT, "DataAnalyzerInput": obj(field("analysis_request"))}


def _main(grant: Any = "none", handoff: str = "none") -> dict[str, Any]:
    return agent(
        tools=[tool("db_query_users", field("filter")), tool("db_query_products", field("filter"))],
        helpers=[helper_use("DataAnalyzer", grant, handoff)],
    )


def _tools(log: list[str]) -> dict[str, Any]:
    return {
        "db_query_users": lambda filter: log.append("users") or "3 users",
        "db_query_products": lambda filter: log.append("products") or "2 products",
        "detect_low_stock": lambda: log.append("stock") or "widgets low",
    }


def _visible(request: ModelRequest) -> set[str]:
    return {c.name for c in request.contract.callables}


async def test_default_mode_returns_the_parsed_structured_output_to_the_parent() -> None:
    doc = document(_main(), _analyzer(), types=_types())
    report = "summary: stock is low\nrecommendations: reorder widgets"
    model = ScriptedModel(
        [
            block("helper_call", "DataAnalyzer", "analysis_request: low stock trends"),
            block("tool_call", "detect_low_stock", ""),
            block("schema", "AnalysisReport", report),
            text("Stock is low; reorder widgets."),
        ]
    )
    log: list[str] = []
    bot = make_agent(doc, model, tools=_tools(log))
    rec = Recorder()
    bot.on_intent(rec)
    await bot.run("analyse stock")
    assert [(n, a) for n, _, a in rec.events] == [
        ("helper_call", "DataAnalyzer"),
        ("tool_call", "DataAnalyzer"),
        ("tool_result", "DataAnalyzer"),
        ("response_schema", "DataAnalyzer"),
        ("helper_result", "DataAnalyzer"),
        ("response_text", "Main"),
    ]
    assert rec.of("helper_call") == [
        {"type": "DataAnalyzer", "args": {"analysis_request": "low stock trends"}}
    ]
    assert rec.of("helper_result") == [
        {
            "name": "DataAnalyzer",
            "args": {"analysis_request": "low stock trends"},
            "result": {"summary": "stock is low", "recommendations": "reorder widgets"},
        }
    ]
    helper_request = model.requests[1]
    assert helper_request.system.startswith("You are a data analyst expert.")
    assert json.loads(helper_request.messages[0].content) == {
        "analysis_request": "low stock trends"
    }
    assert _visible(helper_request) == {"detect_low_stock"}  # no grant: own tools only


@pytest.mark.parametrize(
    ("grant", "expected"),
    [
        ("none", {"detect_low_stock"}),
        ("all", {"detect_low_stock", "db_query_users", "db_query_products"}),
        (["db_query_users"], {"detect_low_stock", "db_query_users"}),
    ],
)
async def test_tool_grants(grant: Any, expected: set[str]) -> None:
    doc = document(_main(grant), _analyzer(), types=_types())
    model = ScriptedModel(
        [
            block("helper_call", "DataAnalyzer", "analysis_request: x"),
            block("tool_call", "db_query_users", "filter: all"),
            block("schema", "AnalysisReport", "summary: s\nrecommendations: r"),
            text("done"),
        ]
    )
    log: list[str] = []
    bot = make_agent(doc, model, tools=_tools(log))
    rec = Recorder()
    bot.on_intent(rec)
    await bot.run("go")
    assert _visible(model.requests[1]) == expected
    if "db_query_users" in expected:
        assert log == ["users"]
    else:
        assert log == []
        assert rec.of("tool_error")[0]["tool"] == "db_query_users"


async def test_handoff_user_ends_the_run_and_resumes_in_the_helper() -> None:
    helper = agent("Support", kind="helper", prompt="You are support.")
    doc = document(agent(helpers=[helper_use("Support", handoff="user")]), helper)
    model = ScriptedModel(
        [
            block("helper_call", "Support", "input: my order is late"),
            text("Sorry! What is your order number?"),
            text("Thanks, order 42 ships today.")
            + "\n"
            + block("custom", "handoff_complete", "summary: order 42 ships today"),
            text("Anything else?"),
        ]
    )
    bot = make_agent(doc, model)
    rec = Recorder()
    bot.on_intent(rec)
    first = await bot.run("my order is late")
    assert [(n, a) for n, _, a in rec.events] == [
        ("helper_call", "Support"),
        ("response_text", "Support"),
    ]
    assert [f["agent"] for f in first["stack"]] == ["Main", "Support"]
    assert first["turns"][-1]["status"] == "handoff"
    rec.events.clear()

    second = await bot.run("It is 42", session=json.loads(json.dumps(first)))
    assert model.requests[2].system.startswith("You are support.")
    assert [m.content for m in model.requests[2].messages][-1] == "It is 42"
    assert [(n, a) for n, _, a in rec.events] == [
        ("response_text", "Support"),
        ("handoff_complete", "Support"),
    ]
    assert [f["agent"] for f in second["stack"]] == ["Main"]

    await bot.run("thanks", session=second)
    back = model.requests[3]
    assert back.system.startswith("You are a helpful assistant.")
    assert "order 42 ships today" in " ".join(m.content for m in back.messages)


async def test_handoff_user_then_continue_notifies_the_parent_in_the_same_run() -> None:
    helper = agent("Greeter", kind="helper", prompt="You greet.")
    doc = document(agent(helpers=[helper_use("Greeter", handoff="user_then_continue")]), helper)
    model = ScriptedModel(
        [
            block("helper_call", "Greeter", "input: greet the user"),
            text("Welcome aboard!"),
            text("Now, how can I help?"),
        ]
    )
    bot = make_agent(doc, model)
    rec = Recorder()
    bot.on_intent(rec)
    session = await bot.run("hi")
    assert [(n, a) for n, _, a in rec.events] == [
        ("helper_call", "Greeter"),
        ("response_text", "Greeter"),
        ("helper_result", "Greeter"),
        ("response_text", "Main"),
    ]
    notice = " ".join(m.content for m in model.requests[2].messages)
    assert "answered the user directly" in notice and "Welcome aboard!" in notice
    assert [f["agent"] for f in session["stack"]] == ["Main"]


async def test_nested_helpers() -> None:
    inner = agent("Inner", kind="helper", prompt="You are inner.")
    middle = agent("Middle", kind="helper", prompt="You are middle.", helpers=[helper_use("Inner")])
    doc = document(agent(helpers=[helper_use("Middle")]), middle, inner)
    model = ScriptedModel(
        [
            block("helper_call", "Middle", "input: deep question"),
            block("helper_call", "Inner", "input: deeper"),
            text("inner answer"),
            text("middle answer"),
            text("root answer"),
        ]
    )
    bot = make_agent(doc, model)
    rec = Recorder()
    bot.on_intent(rec)
    await bot.run("go")
    assert [(n, a) for n, _, a in rec.events] == [
        ("helper_call", "Middle"),
        ("helper_call", "Inner"),
        ("response_text", "Inner"),
        ("helper_result", "Inner"),
        ("response_text", "Middle"),
        ("helper_result", "Middle"),
        ("response_text", "Main"),
    ]
    assert rec.of("helper_result")[0]["result"] == "inner answer"


# -- scoped tools ----------------------------------------------------------------------------


def _scoped_doc() -> dict[str, Any]:
    wf = {
        "name": "delete_user",
        "description": "Deletes a user record.",
        "params": [field("id")],
        "returns": {"kind": "string"},
        "tools": [tool("remove_user", field("id"))],
        "body": [
            {
                "s": "expr",
                "loc": [5, 9],
                "value": {
                    "e": "call",
                    "tool": "remove_user",
                    "loc": [5, 9],
                    "args": [{"name": "id", "value": {"e": "name", "name": "id"}}],
                },
            },
            {"s": "return", "loc": [6, 9], "value": {"e": "lit", "value": "user deleted"}},
        ],
        "source": "main.agent",
        "loc": [3, 5],
        "examples": [],
    }
    other = agent("Other", kind="helper", tools=[tool("other_secret")])
    return document(
        agent(tools=[tool("get_user", field("id"))], workflows=[wf], helpers=[helper_use("Other")]),
        other,
    )


@pytest.mark.parametrize(
    "attempt",
    [
        block("tool_call", "remove_user", "id: u1"),
        block("workflow_call", "remove_user", "id: u1"),
        block("helper_call", "remove_user", "id: u1"),
        block("tool_call", "delete_user.remove_user", "id: u1"),
        block("tool_call", "other_secret", ""),
        block("tool_call", "Other.other_secret", ""),
        block("tool_call", "made_up", ""),
    ],
)
async def test_scoped_and_foreign_tools_are_refused_blocks(attempt: str) -> None:
    await _assert_refused(ScriptedModel([attempt, text("ok")]), protocol="blocks")


@pytest.mark.parametrize(
    "name",
    [
        "tool__remove_user",
        "remove_user",
        "workflow__remove_user",
        "tool__other_secret",
        "helper__remove_user",
        "tool__delete_user__remove_user",
    ],
)
async def test_scoped_and_foreign_tools_are_refused_native(name: str) -> None:
    await _assert_refused(
        ScriptedModel([ScriptedModel.call(name, {"id": "u1"}), "ok"]), protocol="native"
    )


async def _assert_refused(model: ScriptedModel, protocol: str) -> None:
    calls: list[str] = []
    bot = make_agent(
        _scoped_doc(),
        model,
        protocol=protocol,
        tools={
            "remove_user": lambda id: calls.append(id),
            "other_secret": lambda: calls.append("x"),
            "get_user": lambda id: calls.append(id),
        },
    )
    rec = Recorder()
    bot.on_intent(rec)
    await bot.run("delete u1")
    assert calls == []
    assert len(rec.of("tool_error")) == 1
    assert "tool_result" not in rec.names()
    visible = {c.name for c in model.requests[0].contract.callables}
    assert "remove_user" not in visible and "other_secret" not in visible
    assert "remove_user" not in model.requests[0].system
    assert all("remove_user" not in f.name for f in model.requests[0].functions)


async def test_workflow_runs_its_scoped_tool_and_reports_the_result() -> None:
    calls: list[str] = []
    model = ScriptedModel([block("workflow_call", "delete_user", "id: u1"), text("deleted")])
    bot = make_agent(
        _scoped_doc(), model, tools={"remove_user": lambda id: calls.append(id) or "removed"}
    )
    rec = Recorder()
    bot.on_intent(rec)
    await bot.run("delete u1")
    assert calls == ["u1"]
    assert rec.names() == [
        "workflow_call",
        "tool_call",
        "tool_result",
        "workflow_result",
        "response_text",
    ]
    assert rec.of("workflow_result") == [
        {"name": "delete_user", "args": {"id": "u1"}, "result": "user deleted"}
    ]


async def test_workflow_failure_names_file_and_line() -> None:
    def fail(id: str) -> None:
        raise RuntimeError("db locked")

    model = ScriptedModel([block("workflow_call", "delete_user", "id: u1"), text("sorry")])
    bot = make_agent(_scoped_doc(), model, tools={"remove_user": fail})
    rec = Recorder()
    bot.on_intent(rec)
    await bot.run("delete u1")
    result = rec.of("workflow_result")[0]["result"]
    assert "main.agent:5" in result["error"] and "db locked" in result["error"]
    assert result["line"] == 5
    assert {e["tool"] for e in rec.of("tool_error")} == {"remove_user", "delete_user"}


# -- named configs -----------------------------------------------------------------------------


def _configs_doc() -> dict[str, Any]:
    strict = config("You are a strict validator.", model=model("gpt-4o-mini"))
    helper = agent(
        "Helper",
        kind="helper",
        configs={"default": config("helper default"), "Strict": config("helper strict")},
    )
    return document(
        agent(
            configs={"default": config("You are helpful."), "Strict": strict},
            helpers=[helper_use("Helper")],
        ),
        helper,
    )


async def test_named_configs_change_model_and_prompt_sent() -> None:
    model_ = ScriptedModel(lambda request: text("ok"))
    bot = make_agent(_configs_doc(), model_, config="Strict")
    await bot.run("a")
    bot.use_config("default")
    await bot.run("b")
    await bot.run("c", config="Strict")
    sent = [(r.model, r.system.split("\n")[0]) for r in model_.requests]
    assert sent == [
        ("gpt-4o-mini", "You are a strict validator."),
        ("gpt-4o", "You are helpful."),
        ("gpt-4o-mini", "You are a strict validator."),
    ]


async def test_named_config_reaches_helpers_that_have_it() -> None:
    model_ = ScriptedModel([block("helper_call", "Helper", "input: x"), text("h"), text("m")])
    bot = make_agent(_configs_doc(), model_)
    await bot.run("go", config="Strict")
    assert model_.requests[1].system.startswith("helper strict")


def test_unknown_config_lists_the_valid_ones() -> None:
    with pytest.raises(ConfigError, match="valid configs: default, Strict"):
        make_agent(_configs_doc(), ScriptedModel([]), config="Loose")
    bot = make_agent(_configs_doc(), ScriptedModel([]))
    with pytest.raises(ConfigError, match="Loose"):
        bot.use_config("Loose")


# -- resumption in a new process -----------------------------------------------------------------

_CHILD = textwrap.dedent("""
    import asyncio, json, sys
    sys.path.insert(0, sys.argv[1])
    from engine.irkit import agent, document, helper_use, make_agent, text
    from auwgent.testing import ScriptedModel

    helper = agent("Support", kind="helper", prompt="You are support.")
    doc = document(agent(helpers=[helper_use("Support", handoff="user")]), helper)
    model = ScriptedModel([text("resumed in support")])
    bot = make_agent(doc, model)
    events = []
    bot.on_intent(lambda n, v, a: events.append([n, a]))
    session = json.loads(open(sys.argv[2]).read())
    out = asyncio.run(bot.run("second message", session=session))
    print(json.dumps({"events": events, "system": model.requests[0].system.split(chr(10))[0],
                      "stack": [f["agent"] for f in out["stack"]]}))
""")


async def test_handoff_resumes_in_the_same_helper_in_another_process(tmp_path: Path) -> None:
    helper = agent("Support", kind="helper", prompt="You are support.")
    doc = document(agent(helpers=[helper_use("Support", handoff="user")]), helper)
    model_ = ScriptedModel(
        [block("helper_call", "Support", "input: help"), text("How can I help?")]
    )
    bot = make_agent(doc, model_)
    session = await bot.run("help me")
    path = tmp_path / "session.json"
    path.write_text(json.dumps(session))
    tests_dir = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tests_dir), *sys.path])}
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(tests_dir), str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout.strip().splitlines()[-1])
    assert data == {
        "events": [["response_text", "Support"]],
        "system": "You are support.",
        "stack": ["Main", "Support"],
    }


async def test_named_configs_seen_at_a_real_http_server() -> None:
    from auwgent.testing.fake_servers import FakeOpenAIServer
    from auwgent.testing.fake_servers import text as reply

    doc = _configs_doc()
    with FakeOpenAIServer([reply(text("a")), reply(text("b"))]) as server:
        bot = _server_agent(doc, server.base_url)
        await bot.run("first")
        await bot.run("second", config="Strict")
        chats = [r.body for r in server.requests if r.path.endswith("/chat/completions")]
    assert [c["model"] for c in chats] == ["gpt-4o", "gpt-4o-mini"]
    systems = [c["messages"][0]["content"] for c in chats]
    assert systems[0].startswith("You are helpful.")
    assert systems[1].startswith("You are a strict validator.")


def _server_agent(doc: dict[str, Any], base_url: str) -> Any:
    from auwgent import __version__
    from auwgent.runtime.agent import create_agent

    return create_agent(
        doc,
        {
            "apiKeys": {"openaiApiKey": "sk-test"},
            "baseUrls": {"openai": base_url},
            "retry": {"attempts": 1},
        },
        ir_hash=doc["hash"],
        compiler_version=__version__,
        ir_version=1,
    )


async def test_a_failing_helper_gives_the_parent_a_tool_error_and_the_run_goes_on() -> None:
    helper = agent("Flaky", kind="helper")
    doc = document(agent(helpers=[helper_use("Flaky")]), helper)
    model_ = ScriptedModel(
        [
            block("helper_call", "Flaky", "input: x"),
            ScriptedModel.fail("helper model down"),
            text("The helper is unavailable."),
        ]
    )
    bot = make_agent(doc, model_)
    rec = Recorder()
    bot.on_intent(rec)
    session = await bot.run("go")
    assert [(n, a) for n, _, a in rec.events] == [
        ("helper_call", "Flaky"),
        ("error", "Flaky"),
        ("tool_error", "Main"),
        ("response_text", "Main"),
    ]
    assert "helper model down" in rec.of("tool_error")[0]["message"]
    assert session["turns"][0]["status"] == "complete"


async def test_a_resumed_helper_keeps_its_grant_and_history() -> None:
    doc = document(_main(["db_query_users"], "user"), _analyzer(), types=_types())
    model_ = ScriptedModel(
        [
            block("helper_call", "DataAnalyzer", "analysis_request: users"),
            block("schema", "AnalysisReport", "summary: which users?\nrecommendations: ask"),
            block("tool_call", "db_query_users", "filter: active"),
            block("schema", "AnalysisReport", "summary: 3 active\nrecommendations: none"),
        ]
    )
    log: list[str] = []
    bot = make_agent(doc, model_, tools=_tools(log))
    first = await bot.run("analyse users")
    second = await bot.run("only active ones", session=json.loads(json.dumps(first)))
    assert log == ["users"]
    assert _visible(model_.requests[2]) == {"detect_low_stock", "db_query_users"}
    contents = [m.content for m in model_.requests[2].messages]
    assert json.loads(contents[0]) == {"analysis_request": "users"}
    assert contents[-1] == "only active ones"
    assert second["turns"][-1]["agent"] == "DataAnalyzer"
    assert second["turns"][-1]["output"] == {"summary": "3 active", "recommendations": "none"}


async def test_a_handed_off_helper_that_completes_at_once_leaves_no_frame() -> None:
    helper = agent("Support", kind="helper")
    doc = document(agent(helpers=[helper_use("Support", handoff="user")]), helper)
    model_ = ScriptedModel(
        [
            block("helper_call", "Support", "input: reset my password"),
            text("Done: check your inbox.") + "\n" + block("custom", "handoff_complete", ""),
        ]
    )
    bot = make_agent(doc, model_)
    session = await bot.run("reset my password")
    assert [f["agent"] for f in session["stack"]] == ["Main"]
    assert model_.calls == 2  # the run still ends with the helper's answer


async def test_workflow_sees_a_json_string_result_as_an_object() -> None:
    wf = {
        "name": "city_of",
        "description": "the user's city",
        "params": [],
        "returns": {"kind": "string"},
        "tools": [tool("profile", returns=obj(field("city")))],
        "body": [
            {
                "s": "let",
                "loc": [2, 1],
                "name": "p",
                "value": {"e": "call", "tool": "profile", "args": [], "loc": [2, 9]},
            },
            {
                "s": "return",
                "loc": [3, 1],
                "value": {"e": "member", "object": {"e": "name", "name": "p"}, "name": "city"},
            },
        ],
        "source": "main.agent",
        "loc": [1, 1],
        "examples": [],
    }
    doc = document(agent(workflows=[wf]))
    model_ = ScriptedModel([block("workflow_call", "city_of", ""), text("Accra")])
    bot = make_agent(doc, model_, tools={"profile": lambda: json.dumps({"city": "Accra"})})
    rec = Recorder()
    bot.on_intent(rec)
    await bot.run("where do I live?")
    assert rec.of("workflow_result")[0]["result"] == "Accra"
