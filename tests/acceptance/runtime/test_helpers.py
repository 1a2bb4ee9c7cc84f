"""Helpers: the manual's complete example (a custom provider helper with structured output),
tool inheritance, the three handoff modes, and "Knowing who is speaking"."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest

from auwgent.testing import FakeGeminiServer, FakeOpenAIServer, text

from ._project import Recorder, generate, openai_system

COMPLETE = """
model MyGemini {
    provider: gemini("gemini-2.5-flash")
}

type AnalysisReport {
    summary: string @desc "high level summary of findings"
    recommendations: string @desc "recommended actions based on the analysis"
}

helper DataAnalyzer {
    description: "Specialized helper for deep data analysis and insights generation"

    default config {
        model: custom("my-groq-api", "https://api.groq.com/openai/v1", "llama-3.3-70b-versatile")
        prompt: {
            \"\"\"
            You are a data analyst expert. Analyse records and provide
            statistical insights, trends, and recommendations.
            \"\"\"
        }
    }

    input: {
        analysis_request: string @desc "What kind of analysis to perform"
    }

    output: AnalysisReport

    tool detect_low_stock(): string
        @desc "Find products with low stock levels"
        @example()

    workflow comprehensive_analysis(): string {
        description: "Run a comprehensive analysis across all entities"

        tool calculate_average(numbers: string): number
            @desc "Calculate average from comma-separated numbers"

        let low_stock = detect_low_stock()

        if (low_stock != "") {
            return "ALERT: Low stock detected"
        }

        return "Analysis complete. No critical issues found."
    } @example()
}

agent Main {
    default config {
        model: MyGemini
        prompt: "You are a data assistant. Delegate analysis tasks to your helpers."
    }

    tool db_query_users(filter: string): string
        @desc "Query users from the database"

    tool db_query_products(filter: string): string
        @desc "Query products from the database"

    tool db_drop(table: string): string
        @desc "Drops a table"

    helpers {
        DataAnalyzer with tools { db_query_users, db_query_products } handoff user then continue
    }
}
"""

MODES = """
helper Support {
    description: "Answers support questions"
    default config {
        model: openai("gpt-4o")
        prompt: "You are the support desk."
    }
}

helper Writer {
    default config {
        description: "Writes short texts"
        model: openai("gpt-4o")
        prompt: "You write."
    }
}

agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "You route questions."
    }

    tool lookup(q: string): string @desc "Looks things up"

    helpers {
        Support handoff user
        Writer with all tools
    }
}
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ModuleType]:
    return generate(
        tmp_path_factory.mktemp("helpers"), {"main.agent": COMPLETE, "modes.agent": MODES}
    )


HELPER_CALL = (
    "[helper_call: DataAnalyzer]\nanalysis_request: stock levels by product\n[/helper_call]"
)
REPORT = (
    "[schema: AnalysisReport]\nsummary: Three products are low.\n"
    "recommendations: Reorder soap.\n[/schema]"
)


def complete_agent(main: ModuleType, gem: Any, groq: Any, log: list[str]) -> Any:
    class Tools(main.AuwgentTools):  # type: ignore[name-defined, misc]
        async def detect_low_stock(self) -> str:
            log.append("detect_low_stock")
            return "soap, rice"

        async def db_query_users(self, filter: str) -> str:
            log.append(f"db_query_users {filter}")
            return "2 users"

        async def db_query_products(self, filter: str) -> str:
            log.append(f"db_query_products {filter}")
            return "soap: 2, rice: 1"

    return main.auwgent(
        {
            "apiKeys": {"geminiApiKey": "g", "myGroqApiApiKey": "groq-key"},
            "baseUrls": {"gemini": gem.base_url, "my-groq-api": groq.base_url},
            "tools": Tools,
        }
    )


async def test_the_complete_example_and_knowing_who_is_speaking(
    project: dict[str, ModuleType],
) -> None:
    main = project["main"]
    log: list[str] = []
    printed: list[str] = []

    class HandleIntent(main.AuwgentBaseIntentHandler):  # type: ignore[name-defined, misc]
        async def helper_call(self, intent: Any, agent_name: str) -> None:
            printed.append(f"helper invoked: {agent_name}")

        async def helper_result(self, intent: Any, agent_name: str) -> None:
            printed.append(f"helper finished: {agent_name}")

        async def response_text(self, intent: Any, agent_name: str) -> None:
            printed.append(f"{agent_name} says: {intent.get('text')}")

        async def response_schema(self, intent: Any, agent_name: str) -> None:
            printed.append(f"{agent_name} returned structured output: {intent['type']}")

    seen = Recorder()
    helper_script = [
        text("[tool_call: db_query_products]\nfilter: stock < 3\n[/tool_call]"),
        text(REPORT),
    ]
    with (
        FakeGeminiServer([text(HELPER_CALL), text("Soap needs reordering.")]) as gem,
        FakeOpenAIServer(helper_script) as groq,
    ):
        agent = complete_agent(main, gem, groq, log)
        agent.on_intent(HandleIntent)
        agent.on_intent(seen)
        await agent.run("Which products are low on stock?")

    assert log == ["db_query_products stock < 3"]  # an inherited parent tool
    assert printed == [
        "helper invoked: DataAnalyzer",
        "DataAnalyzer returned structured output: AnalysisReport",
        "helper finished: DataAnalyzer",
        "Main says: Soap needs reordering.",
    ]
    assert seen.payloads("helper_call") == [
        {"type": "DataAnalyzer", "args": {"analysis_request": "stock levels by product"}}
    ]
    assert seen.agents("tool_call") == ["DataAnalyzer"]
    report = {"summary": "Three products are low.", "recommendations": "Reorder soap."}
    assert seen.payloads("response_schema") == [{"type": "AnalysisReport", "response": report}]
    (result,) = seen.payloads("helper_result")
    assert result["name"] == "DataAnalyzer"
    assert result["args"] == {"analysis_request": "stock levels by product"}
    # The parent gets the helper's parsed output, not raw text.
    assert result["result"] == report

    # The helper ran on its own provider, with its own prompt and the granted tools only.
    first = groq.requests[0]
    assert first.path == "/v1/chat/completions"
    assert first.headers["authorization"] == "Bearer groq-key"
    assert first.body["model"] == "llama-3.3-70b-versatile"
    system = openai_system(first.body)
    assert "You are a data analyst expert." in system
    assert "db_query_products" in system and "db_query_users" in system
    assert "db_drop" not in system
    assert "detect_low_stock" in system and "comprehensive_analysis" in system
    assert "calculate_average" not in system
    assert "stock levels by product" in json.dumps(first.body["messages"][1:])
    # The parent was told what the helper answered.
    assert "Three products are low." in json.dumps(gem.requests[1].body["contents"])


async def test_a_helper_may_not_use_a_parent_tool_it_was_not_granted(
    project: dict[str, ModuleType],
) -> None:
    main = project["main"]
    log: list[str] = []
    seen = Recorder()
    helper_script = [text("[tool_call: db_drop]\ntable: users\n[/tool_call]"), text(REPORT)]
    with (
        FakeGeminiServer([text(HELPER_CALL), text("Done.")]) as gem,
        FakeOpenAIServer(helper_script) as groq,
    ):
        agent = complete_agent(main, gem, groq, log)
        agent.on_intent(seen)
        await agent.run("Analyse")
    assert log == []
    assert seen.payloads("tool_error")[0]["tool"] == "db_drop"
    assert seen.agents("tool_error") == ["DataAnalyzer"]


def modes_agent(modes: ModuleType, server: FakeOpenAIServer, log: list[str]) -> Any:
    async def lookup(q: str) -> str:
        log.append(q)
        return f"found {q}"

    return modes.auwgent(
        {
            "apiKeys": {"openaiApiKey": "sk"},
            "baseUrls": {"openai": server.base_url},
            "tools": {"lookup": lookup},
        }
    )


def by_prompt(routes: dict[str, list[str]]) -> Any:
    """A server script answering each agent by the prompt it was sent."""

    def reply(request: Any) -> Any:
        system = openai_system(request.body)
        for marker, answers in routes.items():
            if marker in system:
                return text(answers.pop(0))
        raise AssertionError(f"unexpected prompt: {system[:80]}")

    return reply


async def test_handoff_user_ends_the_run_and_the_next_run_resumes_the_helper(
    project: dict[str, ModuleType],
) -> None:
    modes = project["modes"]
    routes = {
        "You route questions.": [
            "[helper_call: Support]\ninput: my order is late\n[/helper_call]",
            "Anything else?",
        ],
        "You are the support desk.": [
            "Sorry about that. What is your order number?",
            "Thanks, order 42 ships today.",
            "[custom: handoff_complete]\nsummary: order 42 resolved\n[/custom]",
        ],
    }
    with FakeOpenAIServer(by_prompt(routes)) as server:
        agent = modes_agent(modes, server, [])
        seen = Recorder()
        agent.on_intent(seen)
        session = await agent.run("My order is late")
        assert seen.names == ["helper_call", "response_text"]
        assert seen.events[-1] == (
            "response_text",
            {"text": "Sorry about that. What is your order number?"},
            "Support",
        )
        assert "helper_result" not in seen.names
        assert len(server.requests) == 2
        # The helper stays on the session stack.
        assert [frame["agent"] for frame in session["stack"]] == ["Main", "Support"]

        # Saved as JSON and loaded again (another process would do the same).
        restored = json.loads(json.dumps(session))
        seen.events.clear()
        session = await agent.run("It is order 42", session=restored)
        assert seen.events == [
            ("response_text", {"text": "Thanks, order 42 ships today."}, "Support")
        ]
        assert "You are the support desk." in openai_system(server.requests[2].body)
        assert "my order is late" in json.dumps(server.requests[2].body["messages"][1:]).lower()

        seen.events.clear()
        session = await agent.run("Thanks, that is all", session=session)
        assert seen.names == ["handoff_complete"]
        seen.events.clear()
        await agent.run("Something else", session=session)
        assert seen.events == [("response_text", {"text": "Anything else?"}, "Main")]
        assert "order 42 resolved" in json.dumps(server.requests[-1].body["messages"][1:])


async def test_handoff_user_then_continue_and_a_text_helper_input(
    project: dict[str, ModuleType],
) -> None:
    main = project["main"]
    seen = Recorder()
    with (
        FakeGeminiServer([text(HELPER_CALL), text("I will reorder soap now.")]) as gem,
        FakeOpenAIServer([text(REPORT)]) as groq,
    ):
        agent = complete_agent(main, gem, groq, [])
        agent.on_intent(seen)
        await agent.run("Analyse stock")
    assert seen.names == ["helper_call", "response_schema", "helper_result", "response_text"]
    assert seen.agents("response_text") == ["Main"]
    assert len(gem.requests) == 2  # the parent went on in the same run


async def test_with_all_tools_and_a_text_helper_takes_input(
    project: dict[str, ModuleType],
) -> None:
    modes = project["modes"]
    log: list[str] = []
    routes = {
        "You route questions.": [
            "[helper_call: Writer]\ninput: a haiku about rain\n[/helper_call]",
            "Here is your haiku.",
        ],
        "You write.": [
            "[tool_call: lookup]\nq: rain\n[/tool_call]",
            "Rain taps the tin roof",
        ],
    }
    seen = Recorder()
    with FakeOpenAIServer(by_prompt(routes)) as server:
        agent = modes_agent(modes, server, log)
        agent.on_intent(seen)
        await agent.run("Write me a haiku")
    assert log == ["rain"]
    assert seen.payloads("helper_call") == [
        {"type": "Writer", "args": {"input": "a haiku about rain"}}
    ]
    assert seen.payloads("helper_result")[0]["result"] == "Rain taps the tin roof"
    assert seen.events[-1] == ("response_text", {"text": "Here is your haiku."}, "Main")
    assert ("response_text", {"text": "Rain taps the tin roof"}, "Writer") in seen.events
