"""create_agent: what construction checks, and the offline switch."""

from __future__ import annotations

import json
from typing import Any

import pytest

from auwgent import __version__
from auwgent.errors import ConfigError
from auwgent.runtime.agent import Agent, create_agent
from auwgent.testing import ScriptedModel

from .irkit import Recorder, agent, config, document, field, make_agent, model, text, tool


def _doc_with(*models: dict[str, Any]) -> dict[str, Any]:
    configs = {"default": config()}
    configs["default"]["model"] = models[0]
    for i, m in enumerate(models[1:]):
        configs[f"C{i}"] = config(model=m)
    return document(agent(configs=configs))


def _create(doc: dict[str, Any], cfg: dict[str, Any] | None, **kw: Any) -> Agent:
    args: dict[str, Any] = {
        "ir_hash": doc["hash"],
        "compiler_version": __version__,
        "ir_version": 1,
    }
    args.update(kw)
    return create_agent(json.dumps(doc), cfg, **args)


def test_api_keys_from_config_or_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    groq = model("llama", "custom", id="my-groq-api", base_url="https://api.groq.com/openai/v1")
    doc = _doc_with(model("gemini-2.5-flash", "gemini"), groq)
    with pytest.raises(
        ConfigError, match=r"apiKeys\.geminiApiKey.*GEMINI_API_KEY or GOOGLE_API_KEY"
    ):
        _create(doc, {})
    with pytest.raises(ConfigError, match=r"apiKeys\.myGroqApiApiKey.*MY_GROQ_API_API_KEY"):
        _create(doc, {"apiKeys": {"geminiApiKey": "g"}})
    assert _create(doc, {"apiKeys": {"geminiApiKey": "g", "myGroqApiApiKey": "k"}})
    monkeypatch.setenv("GOOGLE_API_KEY", "g")
    monkeypatch.setenv("MY_GROQ_API_API_KEY", "k")
    assert _create(doc, None)


def test_keys_are_only_required_for_providers_in_use() -> None:
    doc = _doc_with(model("gpt-4o", "openai"))
    with pytest.raises(ConfigError, match="openaiApiKey"):
        _create(doc, {"apiKeys": {"geminiApiKey": "unused"}})
    assert _create(doc, {"apiKeys": {"openaiApiKey": "k", "geminiApiKey": "unused"}})


def test_a_provider_override_needs_no_keys() -> None:
    doc = _doc_with(model("gpt-4o", "openai"))
    assert _create(doc, {"provider": ScriptedModel([])})


def test_version_checks_say_to_regenerate() -> None:
    doc = _doc_with(model())
    with pytest.raises(ConfigError, match="auwgent generate"):
        _create(doc, {"provider": "offline"}, ir_version=2)
    with pytest.raises(ConfigError, match="auwgent generate"):
        _create(doc, {"provider": "offline"}, compiler_version="9.0.0")
    with pytest.raises(ConfigError, match="auwgent generate"):
        _create(doc, {"provider": "offline"}, ir_hash="sha256:0000")


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        ({"maxToolLoop": 3}, "did you mean 'maxToolLoops'"),
        ({"maxToolLoops": 0}, "maxToolLoops"),
        ({"protocol": "xml"}, "protocol"),
        ({"retry": {"attempt": 2}}, r"retry\.attempt"),
        ({"timeouts": {"run": "soon"}}, r"timeouts\.run"),
        ({"tools": {"get_wether": lambda location: ""}}, "did you mean 'get_weather'"),
        ({"middleware": "nope"}, "middleware"),
        ({"provider": "mystery"}, "provider"),
        ({"httpClient": object()}, "httpClient"),
    ],
)
def test_config_mistakes_name_the_key(cfg: dict[str, Any], message: str) -> None:
    doc = document(agent(tools=[tool("get_weather", field("location"))]))
    with pytest.raises(ConfigError, match=message):
        _create(doc, {"provider": ScriptedModel([]), **cfg} if "provider" not in cfg else cfg)


def test_tools_as_instance_and_async_methods() -> None:
    class Tools:
        def __init__(self, prefix: str) -> None:
            self.prefix = prefix

        async def get_weather(self, location: str) -> str:
            return self.prefix + location

    doc = document(agent(tools=[tool("get_weather", field("location"))]))
    from .irkit import block

    model_ = ScriptedModel([block("tool_call", "get_weather", "location: Accra"), text("ok")])
    bot = make_agent(doc, model_, tools=Tools("sunny in "))
    rec = Recorder()
    bot.on_intent(rec)
    bot.run_sync("weather")
    assert rec.of("tool_result")[0]["result"] == "sunny in Accra"


async def test_offline_provider_by_config_and_by_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    doc = _doc_with(model("gpt-4o", "openai"))
    bot = _create(doc, {"provider": "offline"})
    rec = Recorder()
    bot.on_intent(rec)
    await bot.run("hello offline")
    assert rec.names() == ["response_text"]
    monkeypatch.setenv("AUWGENT_PROVIDER", "offline")
    bot2 = _create(doc, None)  # no key needed: offline replaces every model
    rec2 = Recorder()
    bot2.on_intent(rec2)
    await bot2.run("hello again")
    assert rec2.names() == ["response_text"]


def test_unknown_handler_method_warns_with_a_suggestion() -> None:
    bot = make_agent(document(agent()), ScriptedModel([]))

    class Handle:
        async def response_txt(self, intent: Any, agent_name: str) -> None: ...

    with pytest.warns(UserWarning, match="did you mean 'response_text'"):
        bot.on_intent(Handle)


def test_run_sync_refuses_inside_a_loop() -> None:
    import asyncio

    bot = make_agent(document(agent()), ScriptedModel([text("x")]))

    async def inner() -> None:
        with pytest.raises(RuntimeError, match="await run"):
            bot.run_sync("x")

    asyncio.run(inner())


async def test_base_url_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from auwgent.testing.fake_servers import FakeOpenAIServer
    from auwgent.testing.fake_servers import text as reply

    doc = _doc_with(model("gpt-4o", "openai"))
    with FakeOpenAIServer([reply(text("hi from the fake"))]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
        bot = _create(doc, {"retry": {"attempts": 1}})
        rec = Recorder()
        bot.on_intent(rec)
        await bot.run("hello")
        auth = server.requests[0].headers.get("authorization")
    assert rec.of("response_text") == [{"text": "hi from the fake"}]
    assert auth == "Bearer sk-env"


async def test_a_session_of_another_version_is_refused() -> None:
    bot = make_agent(document(agent()), ScriptedModel([text("x")]))
    with pytest.raises(ConfigError, match="session.version"):
        await bot.run("hi", session={"version": 7, "stack": [], "turns": []})


@pytest.mark.parametrize(
    ("stack", "turns", "where"),
    [
        (["Main"], [], r"session\.stack\[0\]: expected a frame"),
        ([], ["hi"], r"session\.turns\[0\]"),
    ],
)
async def test_a_malformed_session_is_refused_with_the_field_at_fault(
    stack: list[Any], turns: list[Any], where: str
) -> None:
    bot = make_agent(document(agent()), ScriptedModel([text("x")]))
    with pytest.raises(ConfigError, match=where):
        await bot.run("hi", session={"version": 1, "stack": stack, "turns": turns})


async def test_gemini_key_prefers_gemini_api_key_over_google_api_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from auwgent.testing.fake_servers import FakeGeminiServer
    from auwgent.testing.fake_servers import text as reply

    doc = _doc_with(model("gemini-2.5-flash", "gemini"))
    with FakeGeminiServer([reply(text("hello"))]) as server:
        monkeypatch.setenv("GOOGLE_API_KEY", "google-key")
        monkeypatch.setenv("GEMINI_API_KEY", "gemini-key")
        bot = _create(doc, {"baseUrls": {"gemini": server.base_url}, "retry": {"attempts": 1}})
        rec = Recorder()
        bot.on_intent(rec)
        await bot.run("hi")
        key = server.requests[0].headers.get("x-goog-api-key")
    assert rec.of("response_text") == [{"text": "hello"}]
    assert key == "gemini-key"


class _NeedsArguments:
    def __init__(self, secret: str) -> None:
        self.secret = secret


@pytest.mark.parametrize(
    ("cfg", "where"),
    [
        ({"tools": _NeedsArguments}, "tools"),
        ({"middleware": [_NeedsArguments]}, r"middleware\[0\]"),
    ],
)
def test_a_class_that_cannot_be_instantiated_is_a_config_error(
    cfg: dict[str, Any], where: str
) -> None:
    doc = document(agent(tools=[tool("get_weather", field("location"))]))
    with pytest.raises(
        ConfigError, match=where + r": could not instantiate _NeedsArguments without arguments"
    ):
        _create(doc, {"provider": ScriptedModel([]), **cfg})


def test_a_handler_class_that_cannot_be_instantiated_is_a_config_error() -> None:
    built = _create(document(agent()), {"provider": ScriptedModel([])})
    with pytest.raises(ConfigError, match=r"on_intent: could not instantiate _NeedsArguments"):
        built.on_intent(_NeedsArguments)
