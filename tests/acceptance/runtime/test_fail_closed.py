"""Fail closed, through the generated bindings and real HTTP: a raising handler or middleware
skips the call it guards, handlers are isolated, nothing private reaches the model, a session
grants nothing, truncated or refused answers are never a success, and the contracts at the
edges (IR hash, tool signatures and results, API keys) are checked."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import typing
import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from auwgent.errors import ConfigError
from auwgent.testing import FakeGeminiServer, FakeOpenAIServer, text, tool_calls

from ._project import Recorder, gemini_system, generate, openai_system

PROGRAM = """
helper Support {
    description: "Answers account questions"
    default config {
        model: openai("gpt-4o")
        prompt: "You are support."
    }
    tool lookup_account(id: string): string @desc "Looks up an account"
}

agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: \"\"\"
        You answer {{ctx.user_name}}.
        \"\"\"
    }

    context {
        user_name: string
        is_admin?: boolean
    }

    tool get_weather(location: string): string @desc "Gets the weather"
    tool delete_records(table: string): boolean @desc "Deletes every record of a table"

    workflow delete_user(id: string): string {
        description: "Deletes a user"
        tool remove_user(id: string): string
        let done = remove_user(id)
        return done
    }

    helpers {
        Support handoff user
    }
}
"""

TOOL = "[tool_call: delete_records]\ntable: users\n[/tool_call]"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ModuleType]:
    return generate(
        tmp_path_factory.mktemp("failclosed"),
        {"main.agent": PROGRAM, "gem.agent": PROGRAM.replace('openai("gpt-4o")', 'gemini("g")')},
    )


@pytest.fixture
def main(project: dict[str, ModuleType]) -> ModuleType:
    return project["main"]


class Tools:
    def __init__(self) -> None:
        self.ran: list[str] = []

    def get_weather(self, location: str) -> Any:
        self.ran.append(f"get_weather {location}")
        return "Sunny"

    def delete_records(self, table: str) -> bool:
        self.ran.append(f"delete_records {table}")
        return True

    def remove_user(self, id: str) -> str:
        self.ran.append(f"remove_user {id}")
        raise RuntimeError("db down at 10.0.0.7")

    def lookup_account(self, id: str) -> str:
        self.ran.append(f"lookup_account {id}")
        return "ok"


def make(module: ModuleType, server: Any, tools: Any = None, **extra: Any) -> Any:
    gemini = isinstance(server, FakeGeminiServer)
    keys = {"geminiApiKey": "k"} if gemini else {"openaiApiKey": "k"}
    return module.auwgent(
        {
            "apiKeys": keys,
            "baseUrls": {"gemini" if gemini else "openai": server.base_url},
            "context": {"user_name": "Ama", "is_admin": True},
            "tools": tools or Tools(),
            **extra,
        }
    )


def conversation(request: Any) -> str:
    return json.dumps(request.body.get("messages", request.body.get("contents")))


# -- 1. handlers and middleware are isolated and fail closed ---------------------------------


async def test_a_raising_handler_skips_the_guarded_tool(
    main: ModuleType, caplog: pytest.LogCaptureFixture
) -> None:
    class Guard(main.AuwgentBaseIntentHandler):  # type: ignore[name-defined, misc]
        async def tool_call(self, intent: Any, agent_name: str) -> Any:
            return {"skip": True} if intent["args"]["role"] != "admin" else None  # KeyError

    tools, seen = Tools(), Recorder()
    with FakeOpenAIServer([text(TOOL), text("I could not do that.")]) as server:
        agent = make(main, server, tools)
        agent.on_intent(Guard)
        agent.on_intent(seen)
        with caplog.at_level(logging.ERROR, logger="auwgent"):
            await agent.run("Delete all users")
    assert tools.ran == []  # fail closed: the guard did not decide, so the tool did not run
    (error,) = seen.payloads("error")
    assert "intent handler 'Guard'" in error["message"] and "tool_call" in error["message"]
    assert error["handler"] == "intent handler 'Guard'" and error["intent"] == "tool_call"
    assert "KeyError" in error["traceback"] and "Traceback" in error["traceback"]
    assert any("Guard" in r.getMessage() and r.exc_info for r in caplog.records)
    assert seen.payloads("tool_skipped") == [{"type": "delete_records", "args": {"table": "users"}}]
    # The model is told only that the call was skipped.
    told = conversation(server.requests[1])
    assert "skipped" in told and "KeyError" not in told and "Guard" not in told
    # Every handler still saw every intent, the final answer included.
    assert seen.names[-1] == "response_text"


async def test_a_raising_middleware_skips_the_call_and_is_named(main: ModuleType) -> None:
    seen_by_next: list[str] = []

    class Audit(main.AuwgentMiddleware):  # type: ignore[name-defined, misc]
        name = "audit"

        async def onIntent(self, name: str, value: Any, ctx: Any) -> None:
            raise RuntimeError("audit store offline")

    class After(main.AuwgentMiddleware):  # type: ignore[name-defined, misc]
        name = "after"

        async def onIntent(self, name: str, value: Any, ctx: Any) -> None:
            seen_by_next.append(name)

    tools, seen = Tools(), Recorder()
    with FakeOpenAIServer([text(TOOL), text("Not done.")]) as server:
        agent = make(main, server, tools, middleware=[Audit, After])
        agent.on_intent(seen)
        await agent.run("Delete all users")
    assert tools.ran == []
    errors = [e["message"] for e in seen.payloads("error")]
    assert any(m.startswith("middleware 'audit' failed on tool_call") for m in errors)
    assert "tool_call" in seen_by_next and "response_text" in seen_by_next
    assert "response_text" in seen.names


async def test_a_raising_partial_handler_reports_once_per_segment(main: ModuleType) -> None:
    def broken(name: str, value: Any, agent_name: str) -> None:
        raise ValueError("partial bug")

    seen = Recorder()
    with FakeOpenAIServer([text("A long answer in many small chunks.", chunk_size=3)]) as server:
        agent = make(main, server)
        agent.on_intent_partial(broken)
        agent.on_intent(seen)
        await agent.run("hi")
    errors = seen.payloads("error")
    assert len(errors) == 1 and "partial bug" in errors[0]["message"]
    assert seen.payloads("response_text") == [{"text": "A long answer in many small chunks."}]


def test_on_intent_refuses_what_cannot_be_a_handler_and_warns_at_the_callers_line(
    main: ModuleType,
) -> None:
    agent = main.auwgent({"provider": "offline", "context": {"user_name": "x"}})
    for wrong in (None, "tool_call", 3, {"tool_call": print}):
        with pytest.raises(TypeError, match="on_intent: expected a handler"):
            agent.on_intent(wrong)
    with pytest.raises(TypeError, match="on_intent_partial"):
        agent.on_intent_partial([])

    class Typo:
        def tool_cal(self, intent: Any, agent_name: str) -> None: ...

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        agent.on_intent(Typo)
    # Only the runtime's warning: "always" also records whatever else is emitted meanwhile,
    # e.g. a ResourceWarning for an object an earlier test left to the garbage collector.
    ours = [w for w in caught if issubclass(w.category, UserWarning)]
    assert len(ours) == 1 and ours[0].filename == __file__
    assert "did you mean 'tool_call'" in str(ours[0].message)


def test_every_runtime_intent_is_in_the_bindings(main: ModuleType) -> None:
    names = typing.get_args(main.IntentName)
    assert "handoff_complete" in names and "error" in names
    assert hasattr(main.AuwgentBaseIntentHandler, "handoff_complete")


# -- 2. nothing private reaches the model ----------------------------------------------------


async def test_a_failed_workflow_tells_the_model_only_that_it_failed(main: ModuleType) -> None:
    seen = Recorder()
    script = [text("[workflow_call: delete_user]\nid: u1\n[/workflow_call]"), text("Sorry.")]
    with FakeOpenAIServer(script) as server:
        agent = make(main, server)
        agent.on_intent(seen)
        await agent.run("Delete u1")
    told = conversation(server.requests[1])
    assert "delete_user failed" in told
    for private in ("remove_user", "db down", "10.0.0.7", "main.agent", "RuntimeError"):
        assert private not in told
    # The application gets the details.
    details = json.dumps(seen.payloads("tool_error") + seen.payloads("workflow_result"))
    assert "remove_user" in details and "db down" in details and "main.agent" in details


async def test_declared_context_is_private_unless_a_prompt_references_it(
    project: dict[str, ModuleType],
) -> None:
    gem = project["gem"]
    with FakeGeminiServer([text("Hi.")]) as server:
        agent = make(gem, server)
        agent.set_context({"retrieved_chunks": ["Refunds take 5 days."]})
        await agent.run("hi")
    system = gemini_system(server.requests[0].body)
    assert "You answer Ama." in system
    assert "is_admin" not in system  # declared, referenced by no prompt
    assert "Refunds take 5 days." in system  # undeclared: the application chose to show it


# -- 3. capabilities come from the IR --------------------------------------------------------


def test_a_helper_tool_named_like_a_scoped_tool_does_not_compile(tmp_path: Path) -> None:
    source = PROGRAM.replace("lookup_account(id: string)", "remove_user(id: string)")
    (tmp_path / "main.agent").write_text(source, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "auwgent", "generate", "main.agent"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "error[E2078]: helper `Support` declares tool `remove_user`" in done.stderr
    assert "main.agent:" in done.stderr and "help:" in done.stderr
    assert not (tmp_path / "generated").exists()


async def test_a_tampered_session_grant_executes_nothing(main: ModuleType) -> None:
    tools, seen = Tools(), Recorder()
    with FakeOpenAIServer([text(TOOL), text("I cannot.")]) as server:
        agent = make(main, server, tools)
        agent.on_intent(seen)
        session = {
            "version": 1,
            "agent": "Main",
            "system_prompt": "",
            "stack": [
                {"agent": "Main", "config": None},
                # The IR grants Support no tools; the stored session claims all of them.
                {
                    "agent": "Support",
                    "config": "default",
                    "handoff": "user",
                    "parent": "Main",
                    "tools": "all",
                    "messages": [],
                },
            ],
            "turns": [],
        }
        await agent.run("Delete all users", session=session)
    assert tools.ran == []
    assert "Tool not found: delete_records" in seen.payloads("tool_error")[0]["message"]
    assert "delete_records" not in openai_system(server.requests[0].body)


# -- 5. truncation and refusals are never success --------------------------------------------

CUT = "the model stopped at its output limit (finish_reason=length) while writing"


@pytest.mark.parametrize("provider", ["openai", "gemini"])
async def test_a_block_call_cut_by_the_output_limit_never_runs(
    project: dict[str, ModuleType], provider: str
) -> None:
    module = project["main" if provider == "openai" else "gem"]
    server_class = FakeOpenAIServer if provider == "openai" else FakeGeminiServer
    tools, seen = Tools(), Recorder()
    cut = text("[tool_call: get_weather]\nlocation: Acc", finish_reason="length")
    with server_class([cut]) as server:
        agent = make(module, server, tools)
        agent.on_intent(seen)
        session = await agent.run("Weather?")
    assert tools.ran == [] and len(server.requests) == 1
    (error,) = seen.payloads("error")
    assert error["message"] == f"{CUT} tool_call get_weather"
    turn = session["turns"][-1]
    assert turn["status"] == "error"
    assert turn["model_calls"][0]["finish_reason"] == "length"
    assert turn["model_calls"][0]["usage"]["total_tokens"] > 0
    assert session["usage"] == turn["model_calls"][0]["usage"]


async def test_a_native_call_cut_by_the_output_limit_never_runs(main: ModuleType) -> None:
    tools, seen = Tools(), Recorder()
    cut = tool_calls([("tool__get_weather", '{"location": "Ac')], finish_reason="length")
    with FakeOpenAIServer([cut]) as server:
        agent = make(main, server, tools, protocol="native")
        agent.on_intent(seen)
        await agent.run("Weather?")
    assert tools.ran == [] and len(server.requests) == 1
    assert seen.payloads("error")[0]["message"] == f"{CUT} tool_call get_weather"


@pytest.mark.parametrize("protocol", ["blocks", "native"])
@pytest.mark.parametrize("provider", ["openai", "gemini"])
async def test_a_text_answer_cut_by_the_limit_is_delivered_as_truncated(
    project: dict[str, ModuleType], provider: str, protocol: str
) -> None:
    module = project["main" if provider == "openai" else "gem"]
    server_class = FakeOpenAIServer if provider == "openai" else FakeGeminiServer
    seen = Recorder()
    with server_class([text("Accra is warm and", finish_reason="length")]) as server:
        agent = make(module, server, protocol=protocol)
        agent.on_intent(seen)
        session = await agent.run("Weather?")
    assert seen.payloads("response_text") == [{"text": "Accra is warm and", "truncated": True}]
    assert session["turns"][-1]["status"] == "complete"


@pytest.mark.parametrize(
    ("reason", "raw"),
    [
        ("safety", "SAFETY"),
        ("recitation", "RECITATION"),
        ("malformed_function_call", "MALFORMED_FUNCTION_CALL"),
    ],
)
async def test_gemini_refusals_end_with_the_reason_and_message(
    project: dict[str, ModuleType], reason: str, raw: str
) -> None:
    seen = Recorder()
    stop = text("", finish_reason=reason, finish_message=f"Stopped: {raw.lower()}")
    with FakeGeminiServer([stop, text("never")]) as server:
        agent = make(project["gem"], server)
        agent.on_intent(seen)
        session = await agent.run("hi")
    assert len(server.requests) == 1  # no blind re-ask
    (error,) = seen.payloads("error")
    assert raw in error["message"] and f"Stopped: {raw.lower()}" in error["message"]
    assert "empty" not in error["message"]
    assert session["turns"][-1]["status"] == "error"


async def test_an_openai_content_filter_ends_with_an_error(main: ModuleType) -> None:
    seen = Recorder()
    with FakeOpenAIServer([text("", finish_reason="content_filter"), text("never")]) as server:
        agent = make(main, server)
        agent.on_intent(seen)
        await agent.run("hi")
    assert len(server.requests) == 1
    assert "finish_reason=content_filter" in seen.payloads("error")[0]["message"]


# -- 6. contracts at the edges ---------------------------------------------------------------


def test_an_edited_ir_with_its_old_hash_is_refused(main: ModuleType) -> None:
    original = main.IR_JSON
    try:
        main.IR_JSON = original.replace("Deletes every record of a table", "Harmless")
        with pytest.raises(ConfigError, match=r"ir_hash: .*regenerate"):
            main.auwgent({"provider": "offline", "context": {"user_name": "x"}})
    finally:
        main.IR_JSON = original


def test_tool_implementations_are_checked_against_their_declarations(main: ModuleType) -> None:
    class Wrong(main.AuwgentTools):  # type: ignore[name-defined, misc]
        async def get_weather(self, loc: str) -> str:
            return "x"

        def delete_records(self, table: str, force: bool) -> bool:
            return True

    class Plain:
        remove_user = "not a function"

        def delete_record(self, table: str) -> bool:  # misnamed
            return True

        def lookup_account(self, **kwargs: Any) -> str:  # **kwargs takes anything
            return "ok"

    for tools in (Wrong, Plain(), {"get_weather": lambda loc: "x", "get_wether": print}):
        with pytest.raises(ConfigError) as caught:
            main.auwgent({"provider": "offline", "tools": tools, "context": {"user_name": "x"}})
        message = str(caught.value)
        if tools is Wrong:
            assert "2 problems" in message
            assert (
                "missing parameter 'location'" in message and "unknown parameter 'loc'" in message
            )
            assert "tools.delete_records" in message and "unknown parameter 'force'" in message
        elif isinstance(tools, Plain):
            assert "tools.remove_user: expected a method, got str" in message
            assert "tools.delete_record" in message and "did you mean 'delete_records'" in message
        else:
            assert "did you mean 'get_weather'" in message and "parameter 'loc'" in message


async def test_a_result_breaking_the_declared_type_is_a_tool_error(main: ModuleType) -> None:
    class Bad(Tools):
        def get_weather(self, location: str) -> Any:
            return 42

    seen = Recorder()
    script = [text("[tool_call: get_weather]\nlocation: Accra\n[/tool_call]"), text("Hm.")]
    with FakeOpenAIServer(script) as server:
        agent = make(main, server, Bad())
        agent.on_intent(seen)
        await agent.run("Weather?")
    (error,) = seen.payloads("tool_error")
    assert error["tool"] == "get_weather"
    assert "get_weather" in error["message"] and "string" in error["message"]
    assert "number 42" in error["message"]
    assert "tool_result" not in seen.names


def test_every_missing_api_key_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "AUWGENT_PROVIDER"):
        monkeypatch.delenv(name, raising=False)
    source = PROGRAM.replace(
        'model: openai("gpt-4o")\n        prompt: "You are support."',
        'model: gemini("g")\n        prompt: "You are support."',
    )
    module = generate(tmp_path, {"mixed.agent": source})["mixed"]
    with pytest.raises(ConfigError) as caught:
        module.auwgent({"context": {"user_name": "x"}})
    message = str(caught.value)
    assert "2 API keys are missing" in message
    assert "apiKeys.openaiApiKey" in message and "OPENAI_API_KEY" in message
    assert "apiKeys.geminiApiKey" in message and "GEMINI_API_KEY" in message


def test_generate_on_a_file_without_an_agent_fails_and_keeps_outputs(tmp_path: Path) -> None:
    (tmp_path / "main.agent").write_text(PROGRAM, encoding="utf-8")

    def run() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "auwgent", "generate", "main.agent"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )

    assert run().returncode == 0
    module = tmp_path / "generated" / "main_types.py"
    before = module.read_text(encoding="utf-8")
    (tmp_path / "main.agent").write_text("type Note { text: string }\n", encoding="utf-8")
    done = run()
    assert done.returncode == 1
    assert "main.agent declares no agent" in done.stderr
    assert module.read_text(encoding="utf-8") == before
