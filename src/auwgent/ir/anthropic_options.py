"""The options of ``anthropic(...)``: which ones the Messages API accepts, and ours.

One table, read by the adapter (to build the ``POST /v1/messages`` body) and by the compiler
(``auwgent check`` rejects an option the API does not accept, E2079). Every option is a
top-level field of the body, sent as written, except ``cache``, which is Auwgent's own: it
asks for prompt caching (``cache_control`` on the system prompt and the tool list, see
docs/providers.md). This module imports nothing, and lives with the IR contract because the
compiler and the runtime both read it.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ADAPTER_OWNED",
    "DEFAULT_MAX_TOKENS",
    "REQUEST_FIELDS",
    "cache_control",
    "cache_problem",
    "option_problem",
]

# Top-level fields of a Messages API request that an option may set.
REQUEST_FIELDS = frozenset(
    {
        "max_tokens",
        "temperature",
        "top_p",
        "top_k",
        "stop_sequences",
        "metadata",
        "thinking",
        "tool_choice",
        "service_tier",
        "container",
        "mcp_servers",
        "output_config",
        "inference_geo",
        "speed",
        "context_management",
    }
)

# Ours: prompt caching, turned into ``cache_control`` breakpoints by the adapter.
OWN = frozenset({"cache"})

# Fields the adapter fills from the agent itself (its prompt, history and native tools).
ADAPTER_OWNED = frozenset({"model", "messages", "system", "tools", "stream"})

# ``max_tokens`` is required by the API; this is sent when the options do not set it.
DEFAULT_MAX_TOKENS = 4096

_TTLS = ("5m", "1h")


def option_problem(key: str) -> tuple[str, list[str]] | None:
    """Why ``key`` is not an option of ``anthropic(...)``, with the valid names; ``None`` when
    it is fine."""
    valid = REQUEST_FIELDS | OWN
    if key in valid:
        return None
    names = sorted(valid)
    if key in ADAPTER_OWNED:
        return (f"`{key}` is set by the agent itself (its prompt, history and tools)", names)
    return (f"`{key}` is not an option of the Anthropic Messages API", names)


def cache_problem(value: Any) -> str | None:
    """Why ``value`` is not a valid ``cache`` option, or ``None``."""
    if isinstance(value, bool) or (isinstance(value, str) and value in _TTLS):
        return None
    return '`cache` takes true, false, "5m" or "1h" (the lifetime of the cached prefix)'


def cache_control(value: Any) -> dict[str, str] | None:
    """The ``cache_control`` breakpoint for a ``cache`` option, or ``None`` when it is off.

    ``true`` is the API's default lifetime (five minutes); ``"5m"`` / ``"1h"`` name one."""
    if value is True:
        return {"type": "ephemeral"}
    if isinstance(value, str) and value in _TTLS:
        return {"type": "ephemeral", "ttl": value}
    return None
