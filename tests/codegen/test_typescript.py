"""The TypeScript target: what ``<stem>.agent.types.ts`` declares (tsc itself checks the
generated files in ts/test/manual.test.mjs)."""

from __future__ import annotations

import json
from pathlib import Path

from auwgent.codegen.typescript import RUNTIME_PACKAGE, render_typescript
from auwgent.compiler.pipeline import compile_sources

ROOT = Path(__file__).resolve().parents[2]

SOURCE = """
type Report { summary: string @desc "the gist" }
intent Planning { description: "plan" fields { step: string confidence?: number } }
helper Analyst {
    description: "Analyses"
    default config { model: custom("my-groq-api", "https://x.invalid/v1", "llama") prompt: "A" }
    input: { topic: string }
    output: Report
}
agent Main {
    default config { model: gemini("gemini-2.5-flash") prompt: "Hi" }
    config Strict { model: openai("gpt-4o") prompt: "Strict" }
    context { is_admin: boolean name?: string }
    tool get_weather(location: string): Report @desc "Gets weather"
    workflow purge(id: string): string {
        description: "Purges"
        tool purge_db(id: string): string
        return purge_db(id)
    }
    helpers { Analyst handoff user }
    intent: Planning
}
"""


def _render() -> str:
    result = compile_sources({"main.agent": SOURCE})
    result.raise_for_errors()
    return render_typescript(result.documents["main.agent"])


def test_the_runtime_package_is_the_one_in_ts_package_json() -> None:
    package = json.loads((ROOT / "ts" / "package.json").read_text(encoding="utf-8"))
    assert package["name"] == RUNTIME_PACKAGE
    assert f'}} from "{RUNTIME_PACKAGE}";' in _render()


def test_declarations_follow_the_ir() -> None:
    text = _render()
    assert 'export type AgentName = "Main" | "Analyst";' in text
    assert 'export type ConfigName = "default" | "Strict";' in text
    assert "    /** the gist */\n    summary: string;" in text
    # one required key field per provider used, helpers included
    assert (
        "    geminiApiKey: string;\n    openaiApiKey: string;\n    myGroqApiApiKey: string;" in text
    )
    assert '    "my-groq-api"?: string;' in text
    assert '{ type: "get_weather"; args: { location: string } }' in text
    assert '{ type: "Analyst"; args: AnalystInput }' in text
    assert "export interface AnalystInput {\n    topic: string;\n}" in text
    assert "export type PlanningIntent = { step: string; confidence?: number };" in text
    assert "    Planning: PlanningIntent;" in text
    assert "    handoff_complete: { summary?: string };" in text
    assert "    is_admin: boolean;\n    name?: string;" in text
    assert "purge_db?: (args: { id: string }) => Promise<string> | string;" in text
    assert (
        "get_weather?: (args: { location: string }) => Promise<Report | string> | Report | string;"
        in text
    )


def test_rendering_is_deterministic() -> None:
    assert _render() == _render()


def test_an_intent_payload_type_never_takes_a_declared_type_name() -> None:
    source = """
    type PlanningIntent { x: string }
    intent Planning { description: "plan" fields { step: string } }
    agent Main {
        default config { model: gemini("g") prompt: "Hi" }
        tool t(p: PlanningIntent): string
        intent: Planning
    }
    """
    result = compile_sources({"main.agent": source})
    result.raise_for_errors()
    text = render_typescript(result.documents["main.agent"])
    assert "export interface PlanningIntent {" in text
    assert "export type PlanningIntent_ = { step: string };" in text
    assert "    Planning: PlanningIntent_;" in text


def test_whole_number_floats_are_listed_for_the_runtimes_hash() -> None:
    source = (
        'agent Main { default config { model: openai("gpt-4o", { temperature: 1.0, top_p: 0.5 })'
        ' prompt: "Hi {{ 2 * 3 }}" } }'
    )
    result = compile_sources({"main.agent": source})
    result.raise_for_errors()
    text = render_typescript(result.documents["main.agent"])
    assert 'floats: ["/agents/Main/configs/default/model/options/temperature"]' in text
    # Without such floats the call is as before.
    assert "floats:" not in _render()


def test_an_anthropic_model_has_its_key_and_base_url_fields() -> None:
    source = """
agent Main {
    default config {
        model: anthropic("claude-sonnet-4-5", { cache: true })
        fallback: [openai("gpt-4o")]
        prompt: "Hi."
    }
}
"""
    result = compile_sources({"main.agent": source})
    result.raise_for_errors()
    text = render_typescript(result.documents["main.agent"])
    assert "    openaiApiKey: string;\n    anthropicApiKey: string;" in text
    assert "    anthropic?: string;" in text


def test_the_config_takes_the_runtime_keys_from_the_runtime_config() -> None:
    # Only the keys typed by the agent are declared here; the others (retry, timeouts, limits,
    # budget, ...) come from the runtime's RuntimeConfig, generated from the Python table.
    text = _render()
    assert "    type RuntimeConfig,\n" in text
    head = 'export interface AuwgentConfig extends Omit<RuntimeConfig, "apiKeys" | "context" | '
    assert head in text
    body = text[text.index(head) :].split("\n}\n", 1)[0]
    assert "retry" not in body and "timeouts" not in body and "strict" not in body
    runtime_config = (ROOT / "ts" / "src" / "runtime-config.ts").read_text(encoding="utf-8")
    for key in ("apiKeys", "context", "tools", "middleware", "config", "persona", "baseUrls"):
        assert f"  {key}?: " in runtime_config, key
