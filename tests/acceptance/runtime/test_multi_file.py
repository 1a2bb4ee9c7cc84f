"""Multi-file agents: the manual's suggested project structure compiles to one module for
main.agent, and the imported helper, models, types and prompts all work at run time."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from auwgent.testing import FakeGeminiServer, FakeOpenAIServer, text

from ._project import Recorder, gemini_system, generate, openai_system

FILES = {
    "models.agent": """
        export model MyGemini {
            provider: gemini("gemini-2.5-flash")
        }

        export model MyGroq {
            provider: custom("my-groq-api", "https://api.groq.com/openai/v1", "llama-3.3-70b-versatile")
        }
    """,
    "types.agent": """
        export type AnalysisReport {
            summary: string @desc "high level summary of findings"
            recommendations: string @desc "recommended actions based on the analysis"
        }
    """,
    "prompts.agent": '''
        export prompt BasePrompt {
            "You are a helpful assistant. Be polite and concise."
        }

        export prompt PersonalisedPrompt(name: string, is_vip: boolean) {
            """
            You are speaking with {{name}}.

            {{#if is_vip == true}}
                This is a VIP customer. Offer premium support.
            {{else}}
                Apply standard support guidelines.
            {{/if}}
            """
        }
    ''',
    "helpers/data_analyzer.agent": """
        import { MyGroq } from "../models"
        import { AnalysisReport } from "../types"

        export helper DataAnalyzer {
            description: "Specialized helper for deep data analysis and insights generation"

            default config {
                model: MyGroq
                prompt: "You are a data analyst expert."
            }

            input: {
                analysis_request: string @desc "What kind of analysis to perform"
            }

            output: AnalysisReport

            tool detect_low_stock(): string
                @desc "Find products with low stock levels"
        }
    """,
    "main.agent": """
        import { MyGemini } from "./models"
        import { BasePrompt, PersonalisedPrompt } from "./prompts"
        import { DataAnalyzer } from "./helpers/data_analyzer"

        agent Main {
            default config {
                model: MyGemini
                prompt: BasePrompt + PersonalisedPrompt(ctx.name, ctx.is_vip)
            }

            context {
                name: string
                is_vip: boolean
            }

            tool db_query_users(filter: string): string
                @desc "Query users from the database"

            helpers {
                DataAnalyzer with tools { db_query_users } handoff user then continue
            }
        }
    """,
}


@pytest.fixture(scope="module")
def modules(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ModuleType]:
    return generate(tmp_path_factory.mktemp("multi_file"), FILES)


def test_only_the_agent_file_yields_bindings(modules: dict[str, ModuleType]) -> None:
    assert list(modules) == ["main"]
    generated = Path(modules["main"].__file__).parent
    assert sorted(p.name for p in generated.glob("*_types.py")) == ["main_types.py"]


async def test_the_imported_helper_runs(modules: dict[str, ModuleType]) -> None:
    main = modules["main"]
    log: list[str] = []

    class Tools(main.AuwgentTools):  # type: ignore[name-defined, misc]
        async def detect_low_stock(self) -> str:
            log.append("detect_low_stock")
            return "soap"

        async def db_query_users(self, filter: str) -> str:
            log.append(f"db_query_users {filter}")
            return "3 users"

    seen = Recorder()
    helper_script = [
        text("[tool_call: detect_low_stock]\n[/tool_call]"),
        text(
            "[schema: AnalysisReport]\nsummary: Soap is low.\n"
            "recommendations: Reorder soap.\n[/schema]"
        ),
    ]
    parent_script = [
        text("[helper_call: DataAnalyzer]\nanalysis_request: low stock\n[/helper_call]"),
        text("Soap is low; I will reorder it."),
    ]
    with FakeGeminiServer(parent_script) as gem, FakeOpenAIServer(helper_script) as groq:
        agent = main.auwgent(
            {
                "apiKeys": {"geminiApiKey": "g", "myGroqApiApiKey": "q"},
                "baseUrls": {"gemini": gem.base_url, "my-groq-api": groq.base_url},
                "context": {"name": "Adwoa", "is_vip": False},
                "tools": Tools,
            }
        )
        agent.on_intent(seen)
        await agent.run("Anything low on stock?")

    assert log == ["detect_low_stock"]
    assert seen.payloads("response_schema") == [
        {
            "type": "AnalysisReport",
            "response": {"summary": "Soap is low.", "recommendations": "Reorder soap."},
        }
    ]
    assert seen.agents("response_schema") == ["DataAnalyzer"]
    assert seen.names[-2:] == ["helper_result", "response_text"]
    system = gemini_system(gem.requests[0].body)
    assert system.startswith("You are a helpful assistant. Be polite and concise.")
    assert "You are speaking with Adwoa." in system
    assert "Apply standard support guidelines." in system
    helper_system = openai_system(groq.requests[0].body)
    assert "You are a data analyst expert." in helper_system
    assert "db_query_users" in helper_system
    assert "low stock" in json.dumps(groq.requests[0].body["messages"][1:])
