"""Getting Started, Agents and configs: the manual's first program, through the CLI and real
HTTP against the fake Gemini and OpenAI servers."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from auwgent.errors import ConfigError
from auwgent.testing import FakeGeminiServer, FakeOpenAIServer, status, text

from ._project import Recorder, gemini_system, gemini_user_texts, generate, openai_system

MAIN = """
agent Main {
    default config {
        model: gemini("gemini-2.5-flash", { temperature: 0.2, max_output_tokens: 256 })
        prompt: "You are a helpful assistant. Be polite."
    }
}
"""

CONFIGS = """
agent Main {
    default config {
        model: gemini("gemini-2.5-flash")
        prompt: "You are a helpful assistant."
    }

    config Strict {
        model: openai("gpt-4o", { temperature: 0, seed: 7 })
        prompt: "You are strict. Answer in one word."
    }
}
"""


OPTIONS = """
model MyGemini {
    provider: gemini("gemini-2.5-flash", {
        temperature: 0.7
        top_k: 40
        top_p: 0.95
        max_output_tokens: 1024
    })
}

model MyCustomModel {
    provider: custom("my-provider", "https://api.example.com/v1", "model-name", {
        temperature: 0.1,
        max_completion_tokens: 300,
        response_format: { type: "text" }
    })
}

agent Main {
    default config {
        model: MyGemini
        prompt: "You are a helpful assistant. Be polite."
    }

    config Custom {
        model: MyCustomModel
        prompt: "You are terse."
    }
}
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ModuleType]:
    return generate(
        tmp_path_factory.mktemp("getting_started"),
        {"main.agent": MAIN, "configs.agent": CONFIGS, "options.agent": OPTIONS},
    )


@pytest.fixture(scope="module")
def main(project: dict[str, ModuleType]) -> ModuleType:
    return project["main"]


@pytest.fixture(scope="module")
def configs(project: dict[str, ModuleType]) -> ModuleType:
    return project["configs"]


def test_the_generated_folder_holds_what_the_manual_lists(main: ModuleType) -> None:
    folder = Path(main.__file__).parent
    assert (folder / "main.agent.json").is_file()
    assert (folder / "main_types.py").is_file()
    for name in ("auwgent", "AuwgentBaseIntentHandler", "AuwgentBasePartialIntentHandler"):
        assert hasattr(main, name)


async def test_wiring_handling_output_and_run(main: ModuleType) -> None:
    printed: list[str] = []
    deltas: list[str] = []
    partials: list[dict[str, Any]] = []

    class HandleIntent(main.AuwgentBaseIntentHandler):  # type: ignore[name-defined, misc]
        async def response_text(self, intent: Any, agent_name: str) -> None:
            printed.append(f"{agent_name}: {intent.get('text')}")

        async def error(self, intent: Any, agent_name: str) -> None:
            printed.append(f"Error {intent}")

    class HandlePartialIntent(main.AuwgentBasePartialIntentHandler):  # type: ignore[name-defined, misc]
        async def response_text(self, intent: Any, agent_name: str) -> None:
            partials.append(intent)
            deltas.append(intent.get("delta", ""))

    answer = "Hello! How can I help you today?"
    with FakeGeminiServer([text(answer, chunk_size=5)]) as server:
        agent = main.auwgent(
            {
                "apiKeys": {"geminiApiKey": "YOUR_API_KEY"},
                "baseUrls": {"gemini": server.base_url},
            }
        )
        agent.on_intent(HandleIntent)
        agent.on_intent_partial(HandlePartialIntent)
        session = await agent.run("hello")

    assert printed == [f"Main: {answer}"]
    assert "".join(deltas) == answer
    assert len(partials) > 1
    for partial in partials:
        assert partial["partial"] is True
        assert partial["complete"] is False
        assert partial["mode"] == "text"
        assert partial["segment"] == 0
        assert partial["raw"] == partial["snapshot"]["text"]
    assert partials[-1]["snapshot"]["text"] == answer

    (request,) = server.requests
    assert request.path == "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
    assert request.headers["x-goog-api-key"] == "YOUR_API_KEY"
    assert "You are a helpful assistant. Be polite." in gemini_system(request.body)
    assert gemini_user_texts(request.body)[-1] == "hello"
    # Options reach the API unchanged in value, under the API's own names.
    assert request.body["generationConfig"]["temperature"] == 0.2
    assert request.body["generationConfig"]["maxOutputTokens"] == 256

    # The session: {system_prompt, stack, turns}, JSON-serialisable, the turn holds the input.
    assert {"system_prompt", "stack", "turns"} <= set(session)
    assert session["turns"][-1]["input"] == {"text": "hello"}
    assert "You are a helpful assistant. Be polite." in session["system_prompt"]
    json.dumps(session)


async def test_a_function_handler_gets_name_value_and_agent_name(main: ModuleType) -> None:
    seen = Recorder()
    with FakeGeminiServer([text("Hi.")]) as server:
        agent = main.auwgent(
            {"apiKeys": {"geminiApiKey": "k"}, "baseUrls": {"gemini": server.base_url}}
        )
        agent.on_intent(seen)
        await agent.run("hello")
    assert seen.events == [("response_text", {"text": "Hi."}, "Main")]


async def test_a_provider_failure_is_the_error_intent(main: ModuleType) -> None:
    seen = Recorder()
    with FakeGeminiServer([status(401, message="API key not valid")], api_key="right") as server:
        agent = main.auwgent(
            {"apiKeys": {"geminiApiKey": "wrong"}, "baseUrls": {"gemini": server.base_url}}
        )
        agent.on_intent(seen)
        session = await agent.run("hello")
    assert seen.names == ["error"]
    (error,) = seen.payloads("error")
    assert set(error) == {"message"}
    # Shaped like the manual's example, "OpenAI API error (401): invalid key".
    assert error["message"].startswith("Gemini API error (401): ")
    assert "wrong" not in error["message"]  # keys never leak into messages
    assert session["turns"][-1]["input"] == {"text": "hello"}


async def test_named_config_at_run_time_and_through_use_config(configs: ModuleType) -> None:
    with FakeOpenAIServer([text("Yes."), text("No.")]) as server:
        agent = configs.auwgent(
            {
                "apiKeys": {"geminiApiKey": "g", "openaiApiKey": "sk-test"},
                "baseUrls": {"openai": server.base_url},
            }
        )
        seen = Recorder()
        agent.on_intent(seen)
        await agent.run("Is it raining?", config="Strict")
        agent.use_config("Strict")
        await agent.run("Is it sunny?")
    assert seen.payloads("response_text") == [{"text": "Yes."}, {"text": "No."}]
    first = server.requests[0]
    assert first.path == "/v1/chat/completions"
    assert first.headers["authorization"] == "Bearer sk-test"
    assert first.body["model"] == "gpt-4o"
    assert first.body["temperature"] == 0
    assert first.body["seed"] == 7
    assert "You are strict. Answer in one word." in openai_system(first.body)
    assert first.body["messages"][-1] == {"role": "user", "content": "Is it raining?"}


async def test_named_config_in_the_runtime_config(configs: ModuleType) -> None:
    with FakeOpenAIServer([text("Yes.")]) as server:
        agent = configs.auwgent(
            {
                "apiKeys": {"geminiApiKey": "g", "openaiApiKey": "sk-test"},
                "baseUrls": {"openai": server.base_url},
                "config": "Strict",
            }
        )
        await agent.run("Is it raining?")
    assert len(server.requests) == 1


def test_an_unknown_config_lists_the_valid_ones(configs: ModuleType) -> None:
    keys = {"geminiApiKey": "g", "openaiApiKey": "o"}
    with pytest.raises(ConfigError) as raised:
        configs.auwgent({"apiKeys": keys, "config": "Strcit"})
    assert "Strict" in str(raised.value) and "default" in str(raised.value)
    agent = configs.auwgent({"apiKeys": keys})
    with pytest.raises(ConfigError, match="Strict"):
        agent.use_config("Lenient")


def test_a_missing_key_names_the_field_and_the_variable(main: ModuleType) -> None:
    with pytest.raises(ConfigError) as raised:
        main.auwgent({"apiKeys": {}})
    assert "geminiApiKey" in str(raised.value)
    assert "GEMINI_API_KEY" in str(raised.value)


async def test_keys_and_base_urls_from_the_environment(
    main: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeGeminiServer([text("Hi.")]) as server:
        monkeypatch.setenv("GEMINI_API_KEY", "from-env")
        monkeypatch.setenv("GEMINI_BASE_URL", server.base_url)
        agent = main.auwgent()
        seen = Recorder()
        agent.on_intent(seen)
        await agent.run("hello")
    assert seen.names == ["response_text"]
    assert server.requests[0].headers["x-goog-api-key"] == "from-env"


def test_run_sync_from_plain_code(main: ModuleType) -> None:
    with FakeGeminiServer([text("Hi.")]) as server:
        agent = main.auwgent(
            {"apiKeys": {"geminiApiKey": "k"}, "baseUrls": {"gemini": server.base_url}}
        )
        session = agent.run_sync("hello")
    assert session["turns"][-1]["input"]["text"] == "hello"


async def test_provider_options_reach_the_api(project: dict[str, ModuleType]) -> None:
    options = project["options"]
    with FakeGeminiServer([text("Hi.")]) as gem, FakeOpenAIServer([text("Hi.")]) as custom:
        agent = options.auwgent(
            {
                "apiKeys": {"geminiApiKey": "g", "myProviderApiKey": "c"},
                "baseUrls": {"gemini": gem.base_url, "my-provider": custom.base_url},
            }
        )
        await agent.run("hello")
        await agent.run("hello", config="Custom")
    assert gem.requests[0].body["generationConfig"] == {
        "temperature": 0.7,
        "topK": 40,
        "topP": 0.95,
        "maxOutputTokens": 1024,
    }
    body = custom.requests[0].body
    assert custom.requests[0].headers["authorization"] == "Bearer c"
    assert body["model"] == "model-name"
    assert body["temperature"] == 0.1
    assert body["max_completion_tokens"] == 300
    assert body["response_format"] == {"type": "text"}
    assert "You are terse." in openai_system(body)


@pytest.mark.parametrize("suffix", ["", "/v1beta", "/v1beta/"])
async def test_a_gemini_base_url_with_or_without_the_version(main: ModuleType, suffix: str) -> None:
    with FakeGeminiServer([text("Hi.")]) as server:
        agent = main.auwgent(
            {"apiKeys": {"geminiApiKey": "k"}, "baseUrls": {"gemini": server.origin + suffix}}
        )
        await agent.run("hello")  # nobody reads partials: the answer comes whole
    assert server.requests[0].path == "/v1beta/models/gemini-2.5-flash:generateContent"
