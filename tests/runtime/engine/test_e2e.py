"""End to end from .agent sources: compile with the compiler, run with scripted/offline models."""

from __future__ import annotations

from typing import Any

from auwgent import __version__
from auwgent.compiler.pipeline import compile_sources
from auwgent.ir import dumps_ir
from auwgent.runtime.agent import Agent, create_agent
from auwgent.testing import ScriptedModel

from .irkit import Recorder, block, text


def build(source: str, provider: Any, **config: Any) -> Agent:
    result = compile_sources({"main.agent": source})
    assert result.ok, [d.message for d in result.diagnostics]
    doc = result.documents["main.agent"]
    return create_agent(
        dumps_ir(doc),
        {"provider": provider, **config},
        ir_hash=doc["hash"],
        compiler_version=__version__,
        ir_version=1,
    )


QUICKSTART = """
agent Main {
    default config {
        model: gemini("gemini-2.5-flash")
        prompt: "You are a helpful assistant. Be polite."
    }
}
"""


async def test_quickstart_on_the_offline_model() -> None:
    bot = build(QUICKSTART, "offline")
    rec = Recorder()
    bot.on_intent(rec)
    session = await bot.run("hello")
    assert rec.names() == ["response_text"]
    assert session["turns"][0]["status"] == "complete"


WORKFLOW = """
agent Main {
    default config {
        model: gemini("gemini-2.5-flash")
        prompt: "You are a helpful assistant."
    }

    workflow check_value(value: number): string {
        description: "Checks whether the given value is above the threshold"

        let threshold = 10

        if (value > threshold) {
            return "above threshold"
        }

        return "below threshold"
    }
}
"""


async def test_manual_threshold_workflow() -> None:
    model = ScriptedModel(
        [
            block("workflow_call", "check_value", "value: 11"),
            text("It is above."),
        ]
    )
    bot = build(WORKFLOW, model)
    rec = Recorder()
    bot.on_intent(rec)
    await bot.run("check 11")
    assert rec.of("workflow_result") == [
        {"name": "check_value", "args": {"value": 11}, "result": "above threshold"}
    ]


GREETING = '''
prompt GreetingPrompt(name: string, is_vip: boolean) {
    """
    You are a helpful assistant.
    You are speaking with {{name}}.

    {{#if is_vip == true}}
        This is a VIP customer. Prioritise their request and offer premium options.
    {{else}}
        Treat this customer with standard support guidelines.
    {{/if}}

    Always be polite and concise.
    """
}

agent Main {
    default config {
        model: gemini("gemini-2.5-flash")
        prompt: GreetingPrompt(ctx.name, ctx.is_vip)
    }

    context {
        name: string
        is_vip: boolean
    }

    output: { title: string, score: number }
}
'''


async def test_context_prompt_and_inline_output() -> None:
    model = ScriptedModel([block("schema", "MainOutput", "title: Weekly summary\nscore: 92")])
    bot = build(GREETING, model, context={"name": "Auwgent", "is_vip": True})
    rec = Recorder()
    bot.on_intent(rec)
    await bot.run("hello")
    system = model.requests[0].system
    assert "You are speaking with Auwgent." in system
    assert "This is a VIP customer." in system
    assert rec.events == [
        (
            "response_schema",
            {"type": "MainOutput", "response": {"title": "Weekly summary", "score": 92}},
            "Main",
        )
    ]


HELPERS = """
type AnalysisReport {
    summary: string @desc "high level summary of findings"
    recommendations: string @desc "recommended actions based on the analysis"
}

helper DataAnalyzer {
    description: "Specialized helper for deep data analysis and insights generation"

    default config {
        model: custom("my-groq-api", "https://api.groq.com/openai/v1", "llama-3.3-70b-versatile")
        prompt: "You are a data analyst expert."
    }

    input: {
        analysis_request: string @desc "What kind of analysis to perform"
    }

    output: AnalysisReport

    tool detect_low_stock(): string
        @desc "Find products with low stock levels"
}

agent Main {
    default config {
        model: gemini("gemini-2.5-flash")
        prompt: "You are a data assistant. Delegate analysis tasks to your helpers."
    }

    tool db_query_users(filter: string): string
        @desc "Query users from the database"

    tool db_query_products(filter: string): string
        @desc "Query products from the database"

    helpers {
        DataAnalyzer with tools { db_query_users } handoff user then continue
    }
}
"""


async def test_manual_helper_example_native_protocol() -> None:
    calls: list[str] = []

    class Tools:
        async def db_query_users(self, filter: str) -> str:
            calls.append("users:" + filter)
            return "3 users"

        async def db_query_products(self, filter: str) -> str:
            calls.append("products")
            return "2 products"

        async def detect_low_stock(self) -> str:
            calls.append("stock")
            return "widgets low"

    model = ScriptedModel(
        [
            ScriptedModel.call("helper__DataAnalyzer", {"analysis_request": "stock"}),
            ScriptedModel.reply(
                ScriptedModel.call("tool__detect_low_stock", {}),
                ScriptedModel.call("tool__db_query_users", {"filter": "all"}),
            ),
            ScriptedModel.json({"summary": "low", "recommendations": "reorder"}),
            "Analysis delivered.",
        ]
    )
    bot = build(HELPERS, model, tools=Tools, protocol="native")
    rec = Recorder()
    bot.on_intent(rec)
    session = await bot.run("analyse")
    assert sorted(calls) == ["stock", "users:all"]
    assert [(n, a) for n, _, a in rec.events if n != "tool_call" and n != "tool_result"] == [
        ("helper_call", "DataAnalyzer"),
        ("response_schema", "DataAnalyzer"),
        ("helper_result", "DataAnalyzer"),
        ("response_text", "Main"),
    ]
    assert rec.of("helper_result")[0]["result"] == {"summary": "low", "recommendations": "reorder"}
    helper_functions = {f.name for f in model.requests[1].functions}
    assert "tool__db_query_users" in helper_functions
    assert "tool__db_query_products" not in helper_functions
    assert session["turns"][0]["status"] == "complete"
