"""make_provider: IR Model dicts to providers, endpoints and names."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from auwgent.errors import ConfigError
from auwgent.runtime.providers import (
    AnthropicProvider,
    GeminiProvider,
    Message,
    ModelRequest,
    OpenAIProvider,
    RetryPolicy,
    TextDelta,
    Timeouts,
    make_provider,
)
from auwgent.testing.fake_servers import FakeOpenAIServer, text


def _model(provider: str, **extra: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "provider": provider,
        "model": "m",
        "options": {},
        "id": None,
        "base_url": None,
        "name": None,
    }
    return {**base, **extra}


def _make(
    model: dict[str, Any], base_url: str | None = None, client: httpx.AsyncClient | None = None
) -> Any:
    return make_provider(
        model,
        api_key="key-123",
        base_url=base_url,
        client=client or httpx.AsyncClient(),
        retry=RetryPolicy(),
        timeouts=Timeouts(),
    )


def test_builtin_providers_and_default_endpoints() -> None:
    gemini = _make(_model("gemini"))
    assert isinstance(gemini, GeminiProvider) and gemini.name == "gemini"
    assert gemini.base_url == "https://generativelanguage.googleapis.com/v1beta"
    openai = _make(_model("openai"))
    assert isinstance(openai, OpenAIProvider) and openai.name == "openai"
    assert openai.base_url == "https://api.openai.com/v1"


def test_base_url_override() -> None:
    assert _make(_model("openai"), "http://proxy.test/v1/").base_url == "http://proxy.test/v1"
    assert _make(_model("gemini"), "http://proxy.test").base_url == "http://proxy.test/v1beta"


def test_custom_uses_chat_completions_with_its_own_id_and_url() -> None:
    model = _model("custom", id="my-groq-api", base_url="https://api.groq.com/openai/v1")
    provider = _make(model)
    assert isinstance(provider, OpenAIProvider)
    assert provider.name == "my-groq-api"
    assert provider.base_url == "https://api.groq.com/openai/v1"
    assert _make(model, "http://127.0.0.1:9/v1").base_url == "http://127.0.0.1:9/v1"


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (_model("mistral"), "unknown provider 'mistral'"),
        (_model("custom", base_url="https://x.test"), "needs an id"),
        (_model("custom", id="mine"), "needs a base URL"),
    ],
)
def test_bad_models_are_config_errors(model: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _make(model)


async def test_a_custom_provider_talks_to_its_endpoint() -> None:
    with FakeOpenAIServer([text("from custom")]) as server:
        async with httpx.AsyncClient() as client:
            provider = _make(_model("custom", id="local", base_url=server.base_url), client=client)
            request = ModelRequest(model="llama", system="", messages=(Message("user", "hi"),))
            events = [e async for e in provider.stream(request)]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "from custom"
    assert server.requests[0].headers["authorization"] == "Bearer key-123"
    assert server.requests[0].body["model"] == "llama"


def test_anthropic_builds_the_messages_api_provider() -> None:
    provider = _make(_model("anthropic"))
    assert isinstance(provider, AnthropicProvider)
    assert provider.name == "anthropic"
    assert provider.base_url == "https://api.anthropic.com"
    assert _make(_model("anthropic"), base_url="http://127.0.0.1:9/v1/").base_url == (
        "http://127.0.0.1:9"
    )
