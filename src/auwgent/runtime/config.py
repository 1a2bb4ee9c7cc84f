"""The runtime config given to ``auwgent({...})``: read once, checked at construction.

Every mistake raises :class:`~auwgent.errors.ConfigError` naming the key path. The keys:

``apiKeys``, ``context``, ``tools``, ``middleware``, ``config`` (a named config),
``baseUrls``, ``maxToolLoops``, ``maxOutputRetries``, ``protocol`` (``"blocks"`` or
``"native"``), ``retry`` ``{attempts, baseDelay, maxDelay}``, ``timeouts`` ``{connect,
firstByte, idle, call, run}`` (seconds), ``limits`` ``{eventBytes, responseBytes}`` (bytes),
``httpClient`` (an ``httpx.AsyncClient``), ``provider`` (a Provider instance, or
``"offline"``) which replaces every model of the agent, ``persona`` (the persona runs take
on), ``timezone`` (an IANA zone name for the date-and-time line; the machine's local zone by
default), ``clock`` (a function returning an aware ``datetime``), ``memory`` (see
:mod:`auwgent.runtime.memory`), ``loopDetection`` (``{repeats}`` or ``False``; see
:mod:`auwgent.runtime.loops`), ``budget`` (``{tokens, requests, conversationTokens,
conversationRequests}``), ``tracing`` / ``tracerProvider`` (see :mod:`auwgent.runtime.tracing`),
``approver`` (a function deciding on calls marked ``@approval``) and ``approvals`` (``"ask"``,
the default, or ``"defer"``: every gated call pauses the run for ``agent.resume``),
``codeMode`` (``True`` / ``False``: code mode for every agent, over the DSL's ``codeMode``),
``codeLimits`` ``{timeout, memory, maxCalls, maxOutput}`` (see
:mod:`auwgent.runtime.code_mode`) and ``mcp`` (per MCP server ``{env, headers, timeout}``; see
:mod:`auwgent.runtime.mcp`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

from auwgent.errors import ConfigError
from auwgent.ir.vocabulary import RUNTIME_CONFIG_KEYS, api_key_env, api_key_field, provider_key
from auwgent.runtime.providers.policy import Limits, RetryPolicy, Timeouts

if TYPE_CHECKING:
    from datetime import datetime, tzinfo

    from auwgent.runtime.memory import MemoryOptions

__all__ = [
    "CONFIG_KEYS",
    "RuntimeOptions",
    "api_key_env",
    "api_key_field",
    "config_names",
    "models_in_use",
    "parse_options",
    "provider_key",
    "resolve_api_keys",
    "resolve_base_url",
]

CONFIG_KEYS = RUNTIME_CONFIG_KEYS

_CODE_LIMIT_KEYS = ("timeout", "memory", "maxCalls", "maxOutput")


class CodeLimits(NamedTuple):
    """``"codeLimits"``: per ``execute_code`` call.

    ``timeout``: seconds the code itself may run (time spent in ``api`` calls, which have their
    own limits, does not count; nor may sleeps add up to more); ``memory``: bytes of the
    sandbox's heap; ``max_calls``: ``api`` calls; ``max_output``: characters of printed
    output (and of the value and error) returned to the model. Monty's recursion limit (1000
    frames) applies too.
    """

    timeout: float = 10.0
    memory: int = 100_000_000
    max_calls: int = 50
    max_output: int = 20_000


def parse_code_limits(value: Any) -> CodeLimits:
    """The checked ``"codeLimits"`` object (defaults for what it leaves out)."""
    if value is None:
        return CodeLimits()
    if not isinstance(value, Mapping):
        raise ConfigError(f"codeLimits: expected an object, got {type(value).__name__}")
    for key in value:
        if key not in _CODE_LIMIT_KEYS:
            raise _unknown_key("codeLimits.", str(key), _CODE_LIMIT_KEYS)
    default = CodeLimits()

    def get(key: str, fallback: Any, integer: bool) -> Any:
        minimum = 0.001 if key == "timeout" else 1
        given = value.get(key, fallback)
        return _number(f"codeLimits.{key}", given, integer=integer, minimum=minimum)

    return CodeLimits(
        timeout=float(get("timeout", default.timeout, False)),
        memory=get("memory", default.memory, True),
        max_calls=get("maxCalls", default.max_calls, True),
        max_output=get("maxOutput", default.max_output, True),
    )


DEFAULT_MAX_TOOL_LOOPS = 10
DEFAULT_MAX_OUTPUT_RETRIES = 2


class RuntimeOptions(NamedTuple):
    """The runtime config, parsed once (:func:`parse_options`) into the one value the rest of
    the runtime reads; nothing else looks at the dict given to ``auwgent({...})``.

    The values the agent checks against its IR at construction (``apiKeys``, ``context``,
    ``config``, ``tools``, ``middleware``, ``provider``, ``tracing``) are kept as given.
    A named tuple, not a dataclass: see :mod:`auwgent.runtime.providers.http` (import time).
    """

    api_keys: Any = None
    context: Any = None
    config: Any = None  # the named config runs use
    tools: Any = None
    middleware: Any = None
    provider: Any = None
    tracing: Any = None
    tracer_provider: Any = None

    max_tool_loops: int | None = None
    max_output_retries: int = DEFAULT_MAX_OUTPUT_RETRIES
    protocol: str | None = None
    retry: RetryPolicy = RetryPolicy()
    timeouts: Timeouts = Timeouts()
    limits: Limits = Limits()
    run_timeout: float | None = None
    base_urls: Mapping[str, str] = MappingProxyType({})
    http_client: Any = None
    persona: str | None = None
    timezone: tzinfo | None = None  # None: the machine's local zone, read at each call
    clock: Callable[[], datetime] | None = None
    memory: MemoryOptions | None = None
    loop_repeats: int | None = 3  # None: no-progress detection is off
    budget: Budget | None = None
    # OpenAI-compatible native tools and structured output carry ``strict: true``.
    strict: bool = True
    approver: Any = None
    approvals: str = "ask"
    code_mode: bool | None = None  # None: each config's DSL `codeMode` decides
    code_limits: CodeLimits = CodeLimits()
    mcp: Any = None  # "mcp": per-server {env, headers, timeout}, checked by runtime.mcp
    durable: str | None = None  # "dbos": model requests and tool calls are DBOS steps


class Budget(NamedTuple):
    """``"budget"``: caps on model requests and tokens, per run and per conversation."""

    tokens: int | None = None
    requests: int | None = None
    conversation_tokens: int | None = None
    conversation_requests: int | None = None


_BUDGET_KEYS = ("tokens", "requests", "conversationTokens", "conversationRequests")


def _budget(config: Mapping[str, Any]) -> Budget | None:
    if config.get("budget") is None:
        return None
    given = _sub(config, "budget", _BUDGET_KEYS)
    values = {k: _number(f"budget.{k}", v, integer=True, minimum=1) for k, v in given.items()}
    return Budget(
        tokens=values.get("tokens"),
        requests=values.get("requests"),
        conversation_tokens=values.get("conversationTokens"),
        conversation_requests=values.get("conversationRequests"),
    )


def _unknown_key(path: str, key: str, valid: tuple[str, ...]) -> ConfigError:
    from auwgent._names import suggest  # only on this error path

    hint = suggest(key, valid)
    tip = f"; did you mean {hint!r}?" if hint else f" (valid keys: {', '.join(valid)})"
    return ConfigError(f"{path}{key}: unknown config key{tip}")


def _number(path: str, value: Any, *, integer: bool = False, minimum: float = 0) -> Any:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        kind = "an integer" if integer else "a number"
        raise ConfigError(f"{path}: expected {kind}, got {value!r}")
    if integer and not isinstance(value, int):
        raise ConfigError(f"{path}: expected an integer, got {value!r}")
    if value < minimum:
        raise ConfigError(f"{path}: must be at least {minimum}, got {value!r}")
    return value


def _sub(config: Mapping[str, Any], key: str, keys: tuple[str, ...]) -> Mapping[str, Any]:
    value = config.get(key) or {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{key}: expected an object, got {type(value).__name__}")
    for sub in value:
        if sub not in keys:
            raise _unknown_key(f"{key}.", str(sub), keys)
    return value


def parse_options(config: Mapping[str, Any]) -> RuntimeOptions:
    """Check the runtime config's keys and read its engine options."""
    for key in config:
        if key not in CONFIG_KEYS:
            raise _unknown_key("", str(key), CONFIG_KEYS)
    loops = config.get("maxToolLoops")
    if loops is not None:
        _number("maxToolLoops", loops, integer=True, minimum=1)
    retries = config.get("maxOutputRetries", DEFAULT_MAX_OUTPUT_RETRIES)
    _number("maxOutputRetries", retries, integer=True, minimum=0)
    protocol = config.get("protocol")
    if protocol not in (None, "blocks", "native"):
        raise ConfigError(f"protocol: expected 'blocks' or 'native', got {protocol!r}")
    retry_cfg = _sub(config, "retry", ("attempts", "baseDelay", "maxDelay"))
    retry = RetryPolicy(
        attempts=_number("retry.attempts", retry_cfg.get("attempts", 4), integer=True, minimum=1),
        base_delay=_number("retry.baseDelay", retry_cfg.get("baseDelay", 0.5)),
        max_delay=_number("retry.maxDelay", retry_cfg.get("maxDelay", 20.0)),
    )
    t_cfg = _sub(config, "timeouts", ("connect", "firstByte", "idle", "call", "run"))
    default = Timeouts()
    timeouts = Timeouts(
        connect=_number("timeouts.connect", t_cfg.get("connect", default.connect)),
        first_byte=_number("timeouts.firstByte", t_cfg.get("firstByte", default.first_byte)),
        idle=_number("timeouts.idle", t_cfg.get("idle", default.idle)),
        call=_number("timeouts.call", t_cfg.get("call", default.call)),
    )
    l_cfg = _sub(config, "limits", ("eventBytes", "responseBytes"))
    caps = Limits()
    limits = Limits(
        event_bytes=_number(
            "limits.eventBytes", l_cfg.get("eventBytes", caps.event_bytes), integer=True, minimum=1
        ),
        response_bytes=_number(
            "limits.responseBytes",
            l_cfg.get("responseBytes", caps.response_bytes),
            integer=True,
            minimum=1,
        ),
    )
    run_timeout = t_cfg.get("run")
    if run_timeout is not None:
        _number("timeouts.run", run_timeout)
    base_urls = config.get("baseUrls") or {}
    if not isinstance(base_urls, Mapping) or not all(
        isinstance(v, str) for v in base_urls.values()
    ):
        raise ConfigError("baseUrls: expected an object of provider name → URL string")
    client = config.get("httpClient")
    if client is not None:
        import httpx  # only checked when given: keeps import of this module light

        if not isinstance(client, httpx.AsyncClient):
            raise ConfigError(
                f"httpClient: expected an httpx.AsyncClient, got {type(client).__name__}"
            )
    persona = config.get("persona")
    if persona is not None and not isinstance(persona, str):
        raise ConfigError(f"persona: expected a persona name, got {type(persona).__name__}")
    clock = config.get("clock")
    if clock is not None and not callable(clock):
        raise ConfigError(f"clock: expected a function returning a datetime, got {clock!r}")
    memory = None
    if config.get("memory") is not None:
        from auwgent.runtime.memory import parse_memory_options

        memory = parse_memory_options(config["memory"])
    from auwgent.runtime.loops import parse_loop_detection

    strict = config.get("strict", True)
    if not isinstance(strict, bool):
        raise ConfigError(f"strict: expected true or false, got {strict!r}")
    approver = config.get("approver")
    if approver is not None and not callable(approver):
        raise ConfigError(
            f"approver: expected a function of the approval request, got {type(approver).__name__}"
        )
    approvals = config.get("approvals", "ask")
    if approvals not in ("ask", "defer"):
        raise ConfigError(f"approvals: expected 'ask' or 'defer', got {approvals!r}")
    durable = config.get("durable")
    if durable not in (None, "dbos"):
        raise ConfigError(f"durable: expected 'dbos' (or no key), got {durable!r}")
    code_mode = config.get("codeMode")
    if code_mode is not None and not isinstance(code_mode, bool):
        raise ConfigError(f"codeMode: expected true or false, got {code_mode!r}")
    return RuntimeOptions(
        api_keys=config.get("apiKeys"),
        context=config.get("context"),
        config=config.get("config"),
        tools=config.get("tools"),
        middleware=config.get("middleware"),
        provider=config.get("provider"),
        tracing=config.get("tracing"),
        tracer_provider=config.get("tracerProvider"),
        code_mode=code_mode,
        code_limits=parse_code_limits(config.get("codeLimits")),
        mcp=config.get("mcp"),
        durable=durable,
        budget=_budget(config),
        loop_repeats=parse_loop_detection(config.get("loopDetection")),
        approver=approver,
        approvals=approvals,
        max_tool_loops=loops,
        max_output_retries=retries,
        protocol=protocol,
        retry=retry,
        timeouts=timeouts,
        limits=limits,
        run_timeout=run_timeout,
        base_urls=dict(base_urls),
        http_client=client,
        persona=persona,
        timezone=_timezone(config.get("timezone")),
        clock=clock,
        memory=memory,
        strict=strict,
    )


def _timezone(name: Any) -> tzinfo | None:
    if name is None:
        return None
    if not isinstance(name, str):
        raise ConfigError(
            f"timezone: expected an IANA zone name such as 'Africa/Accra', got {name!r}"
        )
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError  # only when a zone is configured

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ConfigError(
            f"timezone: unknown time zone {name!r}; use an IANA name such as 'Africa/Accra' "
            "or 'UTC'"
        ) from exc


# ---------------------------------------------------------------------------------------------
# Models, keys and base URLs


def config_names(doc: Mapping[str, Any]) -> list[str]:
    """Every config name used by any agent of the document, ``default`` first."""
    names = ["default"]
    for agent in doc["agents"].values():
        for name in agent["configs"]:
            if name not in names:
                names.append(name)
    return names


def models_in_use(doc: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Every chat and embedding model of every config of every agent in the document."""
    for agent in doc["agents"].values():
        for cfg in agent["configs"].values():
            yield cfg["model"]
            if cfg.get("embedding"):
                yield cfg["embedding"]
            yield from cfg.get("fallback", ())


_OFFLINE_HINT = (
    'To try the agent without a key, use the offline model: "provider": "offline" in the '
    "runtime config, or the environment variable AUWGENT_PROVIDER=offline."
)


def resolve_api_keys(doc: Mapping[str, Any], api_keys: Any) -> dict[str, str]:
    """Provider name → key for every provider the document uses; a missing key is an error."""
    if api_keys is None:
        api_keys = {}
    if not isinstance(api_keys, Mapping):
        raise ConfigError(f"apiKeys: expected an object, got {type(api_keys).__name__}")
    # Keys for providers the agent does not use are ignored: one config may serve many agents.
    fields = {api_key_field(m): m for m in models_in_use(doc)}
    keys: dict[str, str] = {}
    missing: list[str] = []
    for field_name, model in fields.items():
        value = api_keys.get(field_name)
        env_names = api_key_env(model)
        if value is not None and not isinstance(value, str):
            # Say what is wrong with the value given, not that the key is missing.
            raise ConfigError(
                f"apiKeys.{field_name}: expected the API key as a string, "
                f"got {type(value).__name__}"
            )
        if value is None:
            value = next((os.environ[n] for n in env_names if os.environ.get(n)), None)
        if not isinstance(value, str) or not value:
            missing.append(
                f"apiKeys.{field_name}: missing API key for provider {provider_key(model)!r}; "
                f"set it in the config or in the environment variable {' or '.join(env_names)}"
            )
            continue
        keys[provider_key(model)] = value
    if len(missing) > 1:
        raise ConfigError(
            f"{len(missing)} API keys are missing:\n"
            + "\n".join(f"  - {m}" for m in missing)
            + f"\n{_OFFLINE_HINT}"
        )
    if missing:
        raise ConfigError(f"{missing[0]}\n{_OFFLINE_HINT}")
    return keys


def resolve_base_url(model: Mapping[str, Any], base_urls: Mapping[str, str]) -> str | None:
    """The base URL override for a model: ``baseUrls`` first, then the environment."""
    key = provider_key(model)
    if key in base_urls:
        return base_urls[key]
    if model["provider"] in ("openai", "gemini", "anthropic"):
        return os.environ.get(f"{str(model['provider']).upper()}_BASE_URL") or None
    return None
