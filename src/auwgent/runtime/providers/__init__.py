"""Model providers: Gemini, OpenAI, Anthropic and OpenAI-compatible (``custom``) endpoints.

:func:`make_provider` turns an IR ``Model`` (see ``docs/ir.md``) into a :class:`Provider`.
Keys and base URLs are resolved by the caller (config fields, then environment) and passed in.

The names below are read from their modules on first use (PEP 562): importing one module of
the package (the neutral events of :mod:`.base`, say) loads neither the HTTP layer nor httpx.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__all__ = [
    "DEFAULT_ANTHROPIC_BASE_URL",
    "AnthropicProvider",
    "ContentPart",
    "DEFAULT_GEMINI_BASE_URL",
    "DEFAULT_OPENAI_BASE_URL",
    "Finish",
    "FunctionSpec",
    "GeminiProvider",
    "Limits",
    "Message",
    "ModelRequest",
    "OpenAIProvider",
    "Provider",
    "RetryPolicy",
    "StreamEvent",
    "TextDelta",
    "Timeouts",
    "ToolCall",
    "ToolCallDelta",
    "Usage",
    "make_provider",
    "provider_name",
]

_HOMES = {
    "DEFAULT_ANTHROPIC_BASE_URL": "anthropic",
    "AnthropicProvider": "anthropic",
    "DEFAULT_GEMINI_BASE_URL": "gemini",
    "GeminiProvider": "gemini",
    "DEFAULT_OPENAI_BASE_URL": "openai",
    "OpenAIProvider": "openai",
    "make_provider": "factory",
    "provider_name": "factory",
    **dict.fromkeys(("Limits", "RetryPolicy", "Timeouts"), "auwgent.runtime.policy"),
    **dict.fromkeys(
        (
            "ContentPart",
            "Finish",
            "FunctionSpec",
            "Message",
            "ModelRequest",
            "Provider",
            "StreamEvent",
            "TextDelta",
            "ToolCall",
            "ToolCallDelta",
            "Usage",
        ),
        "base",
    ),  # fmt: skip
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = import_module(home if "." in home else f"{__name__}.{home}")
    value = getattr(module, name)
    globals()[name] = value
    return value
