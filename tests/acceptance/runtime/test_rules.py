"""Runtime rules of DECISIONS.md not covered chapter by chapter: providers and keys, retries
and timeouts, the tool-loop limit, failures inside handlers, workflows and helpers, the
shared tool registry, and the date injected on every call."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import typing
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from auwgent.errors import ConfigError
from auwgent.testing import FakeOpenAIServer, stall, status, text

from ._project import Recorder, generate, openai_system

PROGRAM = """
type Stock {
    item: string
    count: number
}

helper Counter {
    description: "Counts stock"
    default config {
        model: custom("my-groq-api", "https://api.groq.com/openai/v1", "llama-3.3-70b-versatile")
        prompt: "You count stock."
    }
    tool count_items(item: string): number @desc "Counts one item"
}

helper Broken {
    description: "Always fails"
    default config {
        model: custom("my-groq-api", "https://api.groq.com/openai/v1", "llama-3.3-70b-versatile")
        prompt: "You are broken."
    }
}

agent Main {
    default config {
        model: custom("my-groq-api", "https://api.groq.com/openai/v1", "llama-3.3-70b-versatile")
        prompt: "You manage stock."
        maxToolLoops: 3
    }

    tool ping(): string @desc "Pings"

    workflow restock(item: string): string {
        description: "Restocks an item"

        tool read_stock(item: string): Stock
        tool order(item: string, amount: number): string

        let stock = read_stock(item)
        let needed = 10 - stock.count
        if (needed > 0) {
            return order(item, needed)
        }
        return "enough " + stock.item
    }

    workflow divide(a: number, b: number): number {
        description: "Divides"
        let parts = [a, b]
        return parts[0] / parts[3]
    }

    helpers {
        Counter
        Broken
    }
}
"""


@pytest.fixture(scope="module")
def main(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    return generate(tmp_path_factory.mktemp("rules"), {"main.agent": PROGRAM})["main"]


class Tools:
    def __init__(self) -> None:
        self.log: list[str] = []

    def ping(self) -> str:
        self.log.append("ping")
        return "pong"

    def read_stock(self, item: str) -> str:
        self.log.append(f"read_stock {item}")
        return json.dumps({"item": item, "count": 4})  # a JSON string for a structured return

    async def order(self, item: str, amount: float) -> str:
        self.log.append(f"order {item} {amount}")
        return f"ordered {amount:g} {item}"

    async def count_items(self, item: str) -> float:
        self.log.append(f"count_items {item}")
        return 4


def make(main: ModuleType, server: FakeOpenAIServer, tools: Any = None, **extra: Any) -> Any:
    return main.auwgent(
        {
            "apiKeys": {"myGroqApiApiKey": "groq"},
            "baseUrls": {"my-groq-api": server.base_url},
            "tools": tools if tools is not None else Tools(),
            "retry": {"attempts": 3, "baseDelay": 0.01, "maxDelay": 0.05},
            **extra,
        }
    )


def test_api_key_fields_and_the_custom_provider_variable(
    main: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    hints = typing.get_type_hints(main.AuwgentApiKeys)
    assert set(hints) == {"myGroqApiApiKey"}  # only providers the agent really uses
    with pytest.raises(ConfigError) as raised:
        main.auwgent({"apiKeys": {}})
    assert "myGroqApiApiKey" in str(raised.value)
    assert "MY_GROQ_API_API_KEY" in str(raised.value)
    monkeypatch.setenv("MY_GROQ_API_API_KEY", "from-env")
    main.auwgent({})


async def test_retries_on_429_and_5xx_then_succeeds(main: ModuleType) -> None:
    seen = Recorder()
    script = [status(429, retry_after=0), status(503), text("Back.")]
    with FakeOpenAIServer(script) as server:
        agent = make(main, server)
        agent.on_intent(seen)
        await agent.run("hello")
    assert seen.events == [("response_text", {"text": "Back."}, "Main")]
    assert len(server.requests) == 3
    assert server.requests[0].path == "/v1/chat/completions"
    assert server.requests[0].headers["authorization"] == "Bearer groq"
    assert server.requests[0].body["model"] == "llama-3.3-70b-versatile"


async def test_the_run_timeout_is_an_error_intent(main: ModuleType) -> None:
    seen = Recorder()
    with FakeOpenAIServer([stall(5, after_chunks=1, reply=text("slow answer " * 4))]) as server:
        agent = make(main, server, timeouts={"run": 0.5})
        agent.on_intent(seen)
        session = await agent.run("hello")
    assert seen.names == ["error"]
    assert session["turns"][-1]["status"] == "error"


async def test_the_tool_loop_limit(main: ModuleType) -> None:
    tools = Tools()
    seen = Recorder()
    ping = text("[tool_call: ping]\n[/tool_call]")
    with FakeOpenAIServer([ping, ping, ping, ping]) as server:
        agent = make(main, server, tools)
        agent.on_intent(seen)
        await agent.run("ping forever")
    assert len(server.requests) == 3  # maxToolLoops: 3 in the .agent file
    assert seen.names[-1] == "error"
    assert "3" in seen.payloads("error")[0]["message"]

    with FakeOpenAIServer([ping, ping, ping]) as server:
        agent = make(main, server, Tools(), maxToolLoops=2)
        await agent.run("ping forever")
    assert len(server.requests) == 2


async def test_a_workflow_decodes_json_from_a_structured_tool(main: ModuleType) -> None:
    tools = Tools()
    seen = Recorder()
    script = [text("[workflow_call: restock]\nitem: soap\n[/workflow_call]"), text("Ordered.")]
    with FakeOpenAIServer(script) as server:
        agent = make(main, server, tools)
        agent.on_intent(seen)
        await agent.run("Restock soap")
    assert tools.log == ["read_stock soap", "order soap 6"]
    assert seen.payloads("workflow_result") == [
        {"name": "restock", "args": {"item": "soap"}, "result": "ordered 6 soap"}
    ]
    assert [p["type"] for p in seen.payloads("tool_call")] == ["read_stock", "order"]


async def test_a_workflow_failing_at_run_time(main: ModuleType) -> None:
    seen = Recorder()
    script = [text("[workflow_call: divide]\na: 1\nb: 2\n[/workflow_call]"), text("Sorry.")]
    with FakeOpenAIServer(script) as server:
        agent = make(main, server)
        agent.on_intent(seen)
        await agent.run("Divide 1 by 2")
    (result,) = seen.payloads("workflow_result")
    assert set(result["result"]) == {"error", "file", "line"}
    assert result["result"]["file"].endswith("main.agent")
    assert seen.payloads("tool_error")[0]["tool"] == "divide"
    assert "divide" in json.dumps(server.requests[1].body["messages"][1:])


async def test_a_failing_handler_skips_the_helper_call(main: ModuleType) -> None:
    asked: list[str] = []

    def reply(request: Any) -> Any:
        system = openai_system(request.body)
        asked.append(system)
        if "skipped" in json.dumps(request.body["messages"]):
            return text("The helper was skipped.")
        return text("[helper_call: Broken]\ninput: go\n[/helper_call]")

    handled: list[str] = []

    class HandleIntent(main.AuwgentBaseIntentHandler):  # type: ignore[name-defined, misc]
        async def helper_call(self, intent: Any, agent_name: str) -> None:
            handled.append("helper_call")
            raise ValueError("bug in my handler")

    seen = Recorder()
    with FakeOpenAIServer(reply) as server:
        agent = make(main, server)
        agent.on_intent(HandleIntent)
        agent.on_intent(seen)
        await agent.run("Use the broken helper")
    assert handled == ["helper_call"]
    # Fail closed: the handler did not finish its decision, so the helper never ran.
    assert not any("You are broken." in system for system in asked)
    (error,) = seen.payloads("error")
    assert "'HandleIntent'" in error["message"] and "helper_call" in error["message"]
    assert "bug in my handler" in error["message"]
    assert seen.payloads("tool_skipped") == [{"type": "Broken", "args": {"input": "go"}}]
    # The handler after the failing one still saw the intent.
    assert "helper_call" in seen.names
    assert seen.events[-1] == ("response_text", {"text": "The helper was skipped."}, "Main")


async def test_helper_call_skip_and_the_shared_registry(main: ModuleType) -> None:
    tools = Tools()

    class HandleIntent(main.AuwgentBaseIntentHandler):  # type: ignore[name-defined, misc]
        async def helper_call(self, intent: Any, agent_name: str) -> Any:
            return {"skip": True} if intent["type"] == "Broken" else None

    def reply(request: Any) -> Any:
        system = openai_system(request.body)
        messages = json.dumps(request.body["messages"][1:])  # the conversation, not the prompt
        if "You count stock." in system:
            if "tool_result: count_items" in messages:
                return text("There are 4.")
            return text("[tool_call: count_items]\nitem: rice\n[/tool_call]")
        if "There are 4." in messages:
            return text("4 rice.")
        return text(
            "[helper_call: Broken]\ninput: x\n[/helper_call]\n"
            "[helper_call: Counter]\ninput: rice\n[/helper_call]"
        )

    seen = Recorder()
    with FakeOpenAIServer(reply) as server:
        agent = make(main, server, tools)
        agent.on_intent(HandleIntent)
        agent.on_intent(seen)
        await agent.run("Count rice")
    assert tools.log == ["count_items rice"]  # the helper's tool, from the same registry
    assert seen.payloads("tool_skipped") == [{"type": "Broken", "args": {"input": "x"}}]
    assert seen.payloads("helper_result") == [
        {"name": "Counter", "args": {"input": "rice"}, "result": "There are 4."}
    ]
    assert not any("You are broken." in openai_system(r.body) for r in server.requests)


async def test_the_date_and_time_reach_every_call(main: ModuleType) -> None:
    script = [text("[tool_call: ping]\n[/tool_call]"), text("pong")]
    with FakeOpenAIServer(script) as server:
        await make(main, server).run("ping")
    for request in server.requests:
        assert "Current date and time" in openai_system(request.body)
    # Stable to dynamic: the first call's prompt up to the date is shared by the second.
    one, two = (openai_system(r.body) for r in server.requests)
    cut = one.index("Current date and time")
    assert two[:cut] == one[:cut]


def test_a_session_after_a_handoff_resumes_in_another_process(tmp_path: Path) -> None:
    project = tmp_path / "app"
    generate(
        project,
        {
            "main.agent": """
            helper Support {
                description: "Answers support questions"
                default config {
                    model: openai("gpt-4o")
                    prompt: "You are the support desk."
                }
            }
            agent Main {
                default config {
                    model: openai("gpt-4o")
                    prompt: "You route questions."
                }
                helpers {
                    Support handoff user
                }
            }
            """
        },
    )
    app = textwrap.dedent(
        """
        import asyncio, json, sys
        from generated.main_types import auwgent

        async def main():
            base_url, session_file, message = sys.argv[1:4]
            agent = auwgent({"apiKeys": {"openaiApiKey": "k"}, "baseUrls": {"openai": base_url}})
            spoken = []
            agent.on_intent(lambda name, value, who: spoken.append([name, who]))
            try:
                with open(session_file) as f:
                    session = json.load(f)
            except FileNotFoundError:
                session = None
            session = await agent.run(message, session=session)
            with open(session_file, "w") as f:
                json.dump(session, f)
            print(json.dumps(spoken))

        asyncio.run(main())
        """
    )
    (project / "app.py").write_text(app, encoding="utf-8")

    def reply(request: Any) -> Any:
        if "You are the support desk." in openai_system(request.body):
            return text("Support here.")
        return text("[helper_call: Support]\ninput: help\n[/helper_call]")

    spoken = []
    with FakeOpenAIServer(reply) as server:
        for message in ("I need help", "Still there?"):
            done = subprocess.run(
                [sys.executable, "app.py", server.base_url, "session.json", message],
                cwd=project,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert done.returncode == 0, done.stderr
            spoken.append(json.loads(done.stdout))
    assert spoken[0] == [["helper_call", "Support"], ["response_text", "Support"]]
    assert spoken[1] == [["response_text", "Support"]]  # straight to the helper
    assert len(server.requests) == 3
