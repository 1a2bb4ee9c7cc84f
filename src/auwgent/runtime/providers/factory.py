"""Build a provider for an IR ``Model`` (:func:`make_provider`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from auwgent.errors import ConfigError
from auwgent.runtime.policy import Limits, RetryPolicy, Timeouts
from auwgent.runtime.providers.anthropic import DEFAULT_ANTHROPIC_BASE_URL, AnthropicProvider
from auwgent.runtime.providers.base import Provider
from auwgent.runtime.providers.gemini import DEFAULT_GEMINI_BASE_URL, GeminiProvider
from auwgent.runtime.providers.openai import DEFAULT_OPENAI_BASE_URL, OpenAIProvider

if TYPE_CHECKING:
    import httpx

__all__ = ["make_provider", "provider_name"]


def provider_name(model: Mapping[str, Any]) -> str:
    """The name a provider goes by: ``"gemini"``, ``"openai"``, ``"anthropic"`` or the custom
    id."""
    kind = model.get("provider")
    if kind == "custom":
        ident = model.get("id")
        if not isinstance(ident, str) or not ident:
            raise ConfigError("model.id: a custom provider needs an id")
        return ident
    if kind in ("gemini", "openai", "anthropic"):
        return str(kind)
    raise ConfigError(
        f"model.provider: unknown provider {kind!r} "
        "(expected 'gemini', 'openai', 'anthropic' or 'custom')"
    )


def make_provider(
    model: Mapping[str, Any],
    *,
    api_key: str | None,
    base_url: str | None,
    client: httpx.AsyncClient,
    retry: RetryPolicy,
    timeouts: Timeouts,
    limits: Limits | None = None,
    strict: bool = True,
) -> Provider:
    """Build the provider for an IR ``Model``.

    ``base_url`` overrides the default endpoint (``baseUrls`` in the config or the
    ``OPENAI_BASE_URL`` / ``GEMINI_BASE_URL`` / ``ANTHROPIC_BASE_URL`` variables); for
    ``custom`` it overrides the URL written in the ``.agent`` file. ``strict`` (``"strict"`` in
    the runtime config) makes OpenAI-compatible native tools and structured output carry
    ``strict: true``.
    """
    name = provider_name(model)
    common: dict[str, Any] = {
        "client": client,
        "api_key": api_key,
        "name": name,
        "retry": retry,
        "timeouts": timeouts,
        "limits": limits,
    }
    if model["provider"] == "gemini":
        return GeminiProvider(base_url=base_url or DEFAULT_GEMINI_BASE_URL, **common)
    if model["provider"] == "openai":
        return OpenAIProvider(base_url=base_url or DEFAULT_OPENAI_BASE_URL, strict=strict, **common)
    if model["provider"] == "anthropic":
        return AnthropicProvider(base_url=base_url or DEFAULT_ANTHROPIC_BASE_URL, **common)
    url = base_url or model.get("base_url")
    if not isinstance(url, str) or not url:
        raise ConfigError(f"model.base_url: custom provider {name!r} needs a base URL")
    return OpenAIProvider(base_url=url, strict=strict, **common)
