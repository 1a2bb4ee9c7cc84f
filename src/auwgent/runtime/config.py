"""The runtime config given to ``auwgent({...})``: read once, checked at construction.

The config is a table: :data:`KEYS` holds one :class:`Key` per runtime config key (its name,
the :class:`RuntimeOptions` field it sets, its parser and what the docs and the generated types
say of it), and :func:`parse_options` reads the given dict through it. Every mistake raises
:class:`~auwgent.errors.ConfigError` naming the key path. The sub-objects (``retry``,
``timeouts``, ``limits``, ``budget``, ``codeLimits``) read themselves (``from_config``);
``memory``, ``loopDetection`` and ``mcp`` are checked by their own modules' parsers.

Generated from the table by ``scripts/generate_runtime_config.py`` (``tests/runtime/
test_config_table.py`` fails when one differs): ``auwgent.runtime.bindings.RuntimeConfig``,
``RuntimeConfig`` of the TypeScript runtime (``ts/src/runtime-config.ts``) and the key table
of docs/runtime.md.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from auwgent._records import record, record_fields
from auwgent.errors import ConfigError
from auwgent.ir.vocabulary import RUNTIME_CONFIG_KEYS, api_key_env, api_key_field, provider_key
from auwgent.runtime.config_fields import Field, Section, number, unknown_key
from auwgent.runtime.loops import parse_loop_detection
from auwgent.runtime.policy import LIMITS, RETRY, TIMEOUTS, Limits, RetryPolicy, Timeouts

if TYPE_CHECKING:
    from datetime import datetime, tzinfo

    import httpx

    from auwgent.runtime.memory import MemoryOptions

__all__ = [
    "CONFIG_KEYS",
    "KEYS",
    "SECTIONS",
    "Budget",
    "CodeLimits",
    "Key",
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

DEFAULT_MAX_TOOL_LOOPS = 10
DEFAULT_MAX_OUTPUT_RETRIES = 2

CODE_LIMITS = Section(
    "codeLimits",
    (
        Field("timeout", "timeout", minimum=0.001),
        Field("memory", "memory", integer=True, minimum=1),
        Field("maxCalls", "max_calls", integer=True, minimum=1),
        Field("maxOutput", "max_output", integer=True, minimum=1),
    ),
    "AuwgentCodeLimits",
    "Code mode's limits per execute_code call (seconds, bytes, calls, characters).",
)


@record
class CodeLimits:
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

    @classmethod
    def from_config(cls, value: object) -> CodeLimits:
        """The runtime config's ``"codeLimits"`` (or the limits themselves)."""
        if isinstance(value, cls):
            return value
        if value is not None and not isinstance(value, Mapping):
            raise ConfigError(f"codeLimits: expected an object, got {type(value).__name__}")
        given = CODE_LIMITS.read(value)
        if "timeout" in given:
            given["timeout"] = float(given["timeout"])
        return cls(**given)


BUDGET = Section(
    "budget",
    (
        Field("tokens", "tokens", integer=True, minimum=1),
        Field("requests", "requests", integer=True, minimum=1),
        Field("conversationTokens", "conversation_tokens", integer=True, minimum=1),
        Field("conversationRequests", "conversation_requests", integer=True, minimum=1),
    ),
    "AuwgentBudget",
    "Caps on model requests and tokens, per run and per conversation.",
)


@record
class Budget:
    """``"budget"``: caps on model requests and tokens, per run and per conversation."""

    tokens: int | None = None
    requests: int | None = None
    conversation_tokens: int | None = None
    conversation_requests: int | None = None

    @classmethod
    def from_config(cls, value: object) -> Budget | None:
        """The runtime config's ``"budget"`` (or the budget itself); ``None``: no caps."""
        if value is None or isinstance(value, cls):
            return value
        return cls(**BUDGET.read(value))


#: Every sub-object of the runtime config read by a :class:`Section` (the generated types
#: declare one type each).
SECTIONS: tuple[Section, ...] = (RETRY, TIMEOUTS, LIMITS, BUDGET, CODE_LIMITS)


@record
class RuntimeOptions:
    """The runtime config, parsed once (:func:`parse_options`) into the one value the rest of
    the runtime reads; nothing else looks at the dict given to ``auwgent({...})``.

    The values the agent checks against its IR at construction (``apiKeys``, ``context``,
    ``config``, ``tools``, ``provider``) and the tracing switches are kept as
    given, typed ``object``: the agent's checks say what they must be.
    A record, not a dataclass: see :mod:`auwgent.runtime.providers.http` (import time).
    """

    api_keys: object = None
    context: object = None
    config: object = None  # the named config runs use
    tools: object = None
    middleware: Sequence[object] | None = None
    base_urls: Mapping[str, str] = MappingProxyType({})
    max_tool_loops: int | None = None
    max_output_retries: int = DEFAULT_MAX_OUTPUT_RETRIES
    protocol: str | None = None
    retry: RetryPolicy = RetryPolicy()
    timeouts: Timeouts = Timeouts()
    limits: Limits = Limits()
    http_client: httpx.AsyncClient | None = None
    provider: object = None
    persona: str | None = None
    timezone: tzinfo | None = None  # None: the machine's local zone, read at each call
    clock: Callable[[], datetime] | None = None
    memory: MemoryOptions | None = None
    loop_repeats: int | None = 3  # None: no-progress detection is off
    budget: Budget | None = None
    tracing: object = None
    tracer_provider: object = None
    # OpenAI-compatible native tools and structured output carry ``strict: true``.
    strict: bool = True
    approver: Callable[..., object] | None = None
    approvals: str = "ask"
    code_mode: bool | None = None  # None: each config's DSL `codeMode` decides
    code_limits: CodeLimits = CodeLimits()
    mcp: Mapping[str, object] | None = None  # per server; checked against the IR by runtime.mcp
    durable: str | None = None  # "dbos": model requests and tool calls are DBOS steps

    @property
    def run_timeout(self) -> float | None:
        """``timeouts.run``: the deadline of a whole run (``None``: none)."""
        return self.timeouts.run

    #: The field names, as a named tuple had them (``record_fields`` is the package's way).
    _fields: ClassVar[tuple[str, ...]] = ()


RuntimeOptions._fields = record_fields(RuntimeOptions)


# -- the parsers of single keys ----------------------------------------------------------------


def _kept(value: object) -> object:
    return value


def _middleware(value: object) -> Sequence[object] | None:
    if value is not None and not isinstance(value, (list, tuple)):
        raise ConfigError(
            f"middleware: expected a list of middleware classes or instances, "
            f"got {type(value).__name__}"
        )
    return value


def _max_tool_loops(value: object) -> int | None:
    if value is None:
        return None
    return int(number("maxToolLoops", value, integer=True, minimum=1))


def _max_output_retries(value: object) -> int:
    return int(number("maxOutputRetries", value, integer=True, minimum=0))


def _choice(key: str, choices: tuple[str | None, ...], what: str) -> Callable[[object], Any]:
    def parse(value: object) -> object:
        if value not in choices:
            raise ConfigError(f"{key}: expected {what}, got {value!r}")
        return value

    return parse


def _true_or_false(key: str) -> Callable[[object], Any]:
    def parse(value: object) -> object:
        if not isinstance(value, bool):
            raise ConfigError(f"{key}: expected true or false, got {value!r}")
        return value

    return parse


def _code_mode(value: object) -> bool | None:
    if value is not None and not isinstance(value, bool):
        raise ConfigError(f"codeMode: expected true or false, got {value!r}")
    return value


def _base_urls(value: object) -> Mapping[str, str]:
    urls = value or {}
    if not isinstance(urls, Mapping) or not all(isinstance(v, str) for v in urls.values()):
        raise ConfigError("baseUrls: expected an object of provider name → URL string")
    return dict(urls)


def _http_client(value: object) -> httpx.AsyncClient | None:
    if value is None:
        return None
    import httpx  # only checked when given: keeps import of this module light

    if not isinstance(value, httpx.AsyncClient):
        raise ConfigError(f"httpClient: expected an httpx.AsyncClient, got {type(value).__name__}")
    return value


def _persona(value: object) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"persona: expected a persona name, got {type(value).__name__}")
    return value


def _timezone(name: object) -> tzinfo | None:
    if name is None:
        return None
    if not isinstance(name, str):
        raise ConfigError(
            f"timezone: expected an IANA zone name such as 'Africa/Accra', got {name!r}"
        )
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ConfigError(
            f"timezone: unknown time zone {name!r}; use an IANA name such as 'Africa/Accra' "
            "or 'UTC'"
        ) from exc


def _clock(value: object) -> Callable[[], datetime] | None:
    if value is not None and not callable(value):
        raise ConfigError(f"clock: expected a function returning a datetime, got {value!r}")
    return value


def _memory(value: object) -> MemoryOptions | None:
    if value is None:
        return None
    from auwgent.runtime.memory import parse_memory_options  # sqlite: only when memory is on

    return parse_memory_options(value)


def _approver(value: object) -> Callable[..., object] | None:
    if value is not None and not callable(value):
        raise ConfigError(
            f"approver: expected a function of the approval request, got {type(value).__name__}"
        )
    return value


def _mcp(value: object) -> Mapping[str, object] | None:
    if value is not None and not isinstance(value, Mapping):
        raise ConfigError(f"mcp: expected an object of servers, got {type(value).__name__}")
    return value


# -- the table ---------------------------------------------------------------------------------


@record
class Key:
    """One runtime config key: what it sets, how it is read, and what is said of it.

    ``python`` is its type in ``RuntimeConfig`` (``None``: each generated ``AuwgentConfig``
    types it from its agent); ``typescript`` its type in the TypeScript ``RuntimeConfig``
    (``None``: the TypeScript runtime does not have it yet, as
    :data:`auwgent.ir.vocabulary.NOT_YET_IN_TYPESCRIPT` says). ``default`` is what the parser
    reads when the key is left out. ``comment`` is the one line the generated types carry.
    """

    name: str
    field: str
    parse: Callable[[object], object]
    doc: str
    python: str | None
    typescript: str | None
    default: object = None
    comment: str = ""


_SEE_PROVIDERS = "See `providers.md`."

#: The runtime config keys, in the order of :data:`auwgent.ir.vocabulary.RUNTIME_CONFIG_KEYS`.
KEYS: tuple[Key, ...] = (
    Key(
        "apiKeys",
        "api_keys",
        _kept,
        '`geminiApiKey`, `openaiApiKey`, `anthropicApiKey`, and for `custom("my-groq-api", '
        "...)` the camel-cased id plus `ApiKey` (`myGroqApiApiKey`). Only providers the agent "
        "and its helpers use (in any config, embeddings included) need one. Missing ones are "
        "read from `GEMINI_API_KEY` (then `GOOGLE_API_KEY`), `OPENAI_API_KEY`, "
        "`ANTHROPIC_API_KEY`, or the upper-snake id plus `_API_KEY` (`MY_GROQ_API_API_KEY`).",
        None,
        "Record<string, string>",
    ),
    Key(
        "context",
        "context",
        _kept,
        "context values; declared keys are type-checked (see below).",
        None,
        "Record<string, unknown>",
    ),
    Key(
        "tools",
        "tools",
        _kept,
        "a class (instantiated without arguments), an instance, or a dict of callables.",
        None,
        "Record<string, (args: any) => unknown>",
    ),
    Key(
        "middleware",
        "middleware",
        _middleware,
        "a list of middleware classes or instances (see `middleware.md`).",
        "Sequence[object]",
        "object[]",
        comment="Middleware classes or instances.",
    ),
    Key(
        "config",
        "config",
        _kept,
        'the named config runs use (`"Strict"`); unknown names list the valid ones.',
        None,
        "string",
    ),
    Key(
        "baseUrls",
        "base_urls",
        _base_urls,
        '`{"openai": ..., "gemini": ..., "anthropic": ..., "<custom id>": ...}`; else '
        "`OPENAI_BASE_URL` / `GEMINI_BASE_URL` / `ANTHROPIC_BASE_URL`.",
        None,
        "Record<string, string>",
    ),
    Key(
        "maxToolLoops",
        "max_tool_loops",
        _max_tool_loops,
        "model calls allowed per agent invocation (overrides the DSL's `maxToolLoops`; "
        "default 10).",
        "int",
        "number",
    ),
    Key(
        "maxOutputRetries",
        "max_output_retries",
        _max_output_retries,
        "how often invalid output is sent back before giving up (default 2).",
        "int",
        "number",
        default=DEFAULT_MAX_OUTPUT_RETRIES,
    ),
    Key(
        "protocol",
        "protocol",
        _choice("protocol", (None, "blocks", "native"), "'blocks' or 'native'"),
        '`"blocks"` (default) or `"native"`, overriding the config\'s `protocol`.',
        'Literal["blocks", "native"]',
        '"blocks" | "native"',
    ),
    Key(
        "retry",
        "retry",
        RetryPolicy.from_config,
        "`{attempts, baseDelay, maxDelay}` for provider requests.",
        "AuwgentRetry",
        "AuwgentRetry",
    ),
    Key(
        "timeouts",
        "timeouts",
        Timeouts.from_config,
        "`{connect, firstByte, idle, call, run}` in seconds; `call` bounds one model call "
        "(default 300), `run` a whole `run()` (no default). " + _SEE_PROVIDERS,
        "AuwgentTimeouts",
        "AuwgentTimeouts",
    ),
    Key(
        "limits",
        "limits",
        Limits.from_config,
        "`{eventBytes, responseBytes}`: caps on one streamed event (default 16 MiB) and one "
        "provider response (default 64 MiB). " + _SEE_PROVIDERS,
        "AuwgentLimits",
        "AuwgentLimits",
    ),
    Key(
        "httpClient",
        "http_client",
        _http_client,
        "an `httpx.AsyncClient` to send requests with (otherwise the agent's own connections, "
        "see below and [providers.md](providers.md#connections)); never closed by the agent. "
        "In TypeScript, an object with a `fetch` method (a `Cassette`, say).",
        "httpx.AsyncClient",
        "{ fetch: FetchLike }",
        comment="What every provider request goes through (a Cassette, say).",
    ),
    Key(
        "provider",
        "provider",
        _kept,
        'a `Provider` instance, or `"offline"`: replaces every model; no keys needed.',
        'Provider | Literal["offline"]',
        'Provider | "offline"',
        comment='A provider replacing every model; "offline" runs without a network.',
    ),
    Key(
        "persona",
        "persona",
        _persona,
        "the persona runs take on (a name from a `personas { }` list; see "
        "[personas.md](personas.md)). Unknown names list the valid ones.",
        None,
        "string",
    ),
    Key(
        "timezone",
        "timezone",
        _timezone,
        'the IANA zone of the date-and-time line (`"Africa/Accra"`, `"UTC"`); default: the '
        "machine's local zone.",
        "str",
        "string",
        comment='The date line\'s zone, e.g. "Africa/Accra".',
    ),
    Key(
        "clock",
        "clock",
        _clock,
        "a function returning an aware `datetime`, read for the date-and-time line on every "
        "model call (tests pin it); a naive value is read in `timezone`.",
        "Callable[[], datetime]",
        "() => Date",
        comment="Replaces the system clock.",
    ),
    Key(
        "memory",
        "memory",
        _memory,
        "`{store, budget, ingester, counter, limit, maxPending}`: recall before each run and "
        "background ingestion after it ([memory.md](memory.md)).",
        "MemoryConfig",
        'import("./memory.js").MemoryConfig | boolean',
        comment="Recall and background ingestion.",
    ),
    Key(
        "loopDetection",
        "loop_repeats",
        parse_loop_detection,
        '`{"repeats": N}` (default 3) or `False`: stop a model that keeps making the same '
        "calls ([resilience.md](resilience.md)).",
        "Mapping[str, int] | bool",
        "{ repeats?: number } | false",
        comment='{"repeats": N} (default 3) or false: stop a model repeating the same calls.',
    ),
    Key(
        "budget",
        "budget",
        Budget.from_config,
        "`{requests, tokens, conversationRequests, conversationTokens}`: caps on model "
        "requests and tokens ([observability.md](observability.md)).",
        "AuwgentBudget",
        "AuwgentBudget",
    ),
    Key(
        "tracing",
        "tracing",
        _kept,
        "`True`: OpenTelemetry spans of every run with the global tracer provider "
        "([observability.md](observability.md)).",
        "bool",
        "boolean",
        comment="OpenTelemetry spans with the global provider.",
    ),
    Key(
        "tracerProvider",
        "tracer_provider",
        _kept,
        "an OpenTelemetry tracer provider for the spans of every run "
        "([observability.md](observability.md)).",
        "object",
        "{ getTracer(name: string, version?: string): unknown }",
        comment="OpenTelemetry spans with this provider.",
    ),
    Key(
        "strict",
        "strict",
        _true_or_false("strict"),
        '`True` (default): with `protocol: "native"`, OpenAI and `custom` tools and structured '
        "output carry `strict: true` with strict-form schemas (see `providers.md`); `False` "
        "for endpoints that refuse it.",
        "bool",
        "boolean",
        default=True,
        comment="Native tools and structured output on OpenAI-compatible APIs carry strict: "
        "true (default true).",
    ),
    Key(
        "approver",
        "approver",
        _approver,
        "a function (sync or async) deciding on calls marked `@approval`; same as "
        "`agent.on_approval(fn)` (see `approvals.md`).",
        None,
        "(request: never) => unknown",
        comment="Decides on calls marked @approval (same as agent.onApproval).",
    ),
    Key(
        "approvals",
        "approvals",
        _choice("approvals", ("ask", "defer"), "'ask' or 'defer'"),
        '`"ask"` (default: ask the approver) or `"defer"`: every gated call pauses the run '
        "for `agent.resume`.",
        'Literal["ask", "defer"]',
        '"ask" | "defer"',
        default="ask",
        comment='"defer": every gated call pauses the run for agent.resume().',
    ),
    Key(
        "codeMode",
        "code_mode",
        _code_mode,
        "`True` / `False`: code mode for every agent and helper, over the DSL configs' "
        "`codeMode` (see [code-mode.md](code-mode.md)); needs the `code` extra.",
        "bool",
        "boolean",
        comment="Code mode for every agent (docs/code-mode.md).",
    ),
    Key(
        "codeLimits",
        "code_limits",
        CodeLimits.from_config,
        'per `execute_code` call: `{"timeout": 10, "memory": 100_000_000, "maxCalls": 50, '
        '"maxOutput": 20_000}` (seconds, bytes, calls, characters; these are the defaults).',
        "AuwgentCodeLimits",
        "AuwgentCodeLimits",
    ),
    Key(
        "mcp",
        "mcp",
        _mcp,
        'per MCP server declared in the IR, `{"env": {...}, "headers": {...}, "timeout": '
        'seconds, "startTimeout": seconds}`: secrets for `@mcp` tools\' servers (`env` for a '
        "launched server, merged over the declaration's; `headers` for a `url` server), the "
        "bound on every call once the server is up (default 10) and the bound on starting it, "
        "launch and initialize (default 60). An unknown server name, key or value is a "
        "`ConfigError` naming its path ([mcp.md](mcp.md)).",
        "Mapping[str, McpServerConfig]",
        "Record<string, { env?: Record<string, string>; headers?: Record<string, string>; "
        "timeout?: number; startTimeout?: number }>",
        comment="Per MCP server declared in the IR: env, headers, timeout, startTimeout.",
    ),
    Key(
        "durable",
        "durable",
        _choice("durable", (None, "dbos"), "'dbos' (or no key)"),
        '`"dbos"`: each model request and each tool call of a run is a step of the DBOS '
        "workflow the run executes in, checkpointed before the next (extra `auwgent[dbos]`; "
        "[durable.md](durable.md)).",
        'Literal["dbos"]',
        None,
        comment='"dbos": model requests and tool calls are DBOS steps (docs/durable.md).',
    ),
)

CONFIG_KEYS: tuple[str, ...] = tuple(key.name for key in KEYS)
if CONFIG_KEYS != RUNTIME_CONFIG_KEYS:  # pragma: no cover - a table edited out of step
    raise RuntimeError("runtime config table and auwgent.ir.vocabulary.RUNTIME_CONFIG_KEYS differ")


def parse_options(config: Mapping[str, Any]) -> RuntimeOptions:
    """Check the runtime config's keys and read every one through its :class:`Key`."""
    for key in config:
        if key not in CONFIG_KEYS:
            raise unknown_key("", str(key), CONFIG_KEYS)
    values: dict[str, Any] = {
        key.field: key.parse(config.get(key.name, key.default)) for key in KEYS
    }
    return RuntimeOptions(**values)


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
