"""What every generated ``<stem>_types.py`` module shares: its behaviour and its fixed types.

A generated module declares only what is particular to one agent: its names as ``Literal``
types, a ``TypedDict`` for each of its types, intent payloads and config keys, the
``AuwgentTools``, handler and middleware base classes with the agent's own signatures, the
embedded IR and the ``auwgent(config)`` factory. Everything that behaves is here, and so are
the declarations that are the same for every agent; the module imports them under its public
names (docs/python-bindings.md). A fix in this file therefore reaches every application without
``auwgent generate``.

What behaves:

- :func:`placeholders` marks the methods of a generated base class, so that the runtime treats
  a method the application did not override as absent (a tool reaches the model as
  ``[NOT CONFIGURED]``; a handler or hook handles nothing).
- :class:`Tools` refuses, when the application's class is defined, a public method whose name
  is a near miss of a declared tool (``get_wether``): it would never be called.
- :class:`Middleware` holds the seven hooks, typed by the agent's intent names.
- :class:`TypedAgent` narrows what ``on_intent``, ``on_intent_partial`` and ``on_approval``
  accept to the agent's own handler classes, names and approval request.
- :func:`create` builds the agent from the embedded IR: the canonical JSON its ``IR_HASH``
  covers, checked at construction like every other IR (versions, hash, config).

Import-light like the rest of construction: this module imports the agent and session
modules and nothing that only a run needs (did-you-mean only when a tool class is checked).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import FunctionType
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TypeAlias, TypedDict, TypeVar

from auwgent.errors import ConfigError
from auwgent.runtime.agent import Agent, create_agent
from auwgent.runtime.session import Session as AuwgentSession

if TYPE_CHECKING:
    from datetime import datetime

    import httpx

    from auwgent.runtime.mcp import McpServerConfig
    from auwgent.runtime.memory import MemoryConfig
    from auwgent.runtime.providers.base import Provider

__all__ = [
    "ApprovalAnswer",
    "ApprovalDecision",
    "ApprovalResultIntent",
    "AuwgentBudget",
    "AuwgentCodeLimits",
    "AuwgentLimits",
    "AuwgentRetry",
    "AuwgentSession",
    "AuwgentTimeouts",
    "ContextCompactedIntent",
    "ErrorIntent",
    "HandoffCompleteIntent",
    "IntentControl",
    "IntentHandler",
    "MaybeAwaitable",
    "Middleware",
    "MiddlewareContext",
    "PartialIntent",
    "PartialIntentHandler",
    "ResponseTextIntent",
    "ResponseTextPartialIntent",
    "RuntimeConfig",
    "ToolErrorIntent",
    "Tools",
    "TypedAgent",
    "create",
    "placeholders",
]

#: The attribute that marks a generated placeholder method (read by the tool registry, the
#: intent handlers and the middleware chain).
PLACEHOLDER = "__auwgent_unimplemented__"

_T = TypeVar("_T")
_ClassT = TypeVar("_ClassT", bound=type)
_AgentT = TypeVar("_AgentT", bound=Agent)
_IntentNameT = TypeVar("_IntentNameT", bound=str)
_AgentNameT = TypeVar("_AgentNameT", bound=str)
_RequestT = TypeVar("_RequestT")

#: A tool, handler or hook may be a plain or an ``async`` method.
MaybeAwaitable: TypeAlias = _T | Awaitable[_T]
#: The middleware context: a dict (activeAgent, rootAgent, systemPrompt, rawBlock,
#: set_context, embed, embed_batch, ...) that hooks may also use as a blackboard.
MiddlewareContext: TypeAlias = dict[str, Any]


# --------------------------------------------------------------------------- fixed payloads


class ResponseTextIntent(TypedDict):
    """Payload of ``response_text``: the model answered with text."""

    text: str


class ToolErrorIntent(TypedDict):
    """Payload of ``tool_error``: a tool call failed or could not run."""

    tool: str
    message: str


class ApprovalResultIntent(TypedDict):
    """Payload of ``approval_result``: the approver decided on a call (denied or not)."""

    id: str
    approved: bool
    reason: str | None


class _ErrorIntentRequired(TypedDict):
    message: str


class ErrorIntent(_ErrorIntentRequired, total=False):
    """Payload of ``error``: the run failed."""

    handler: str
    intent: str
    traceback: str


class HandoffCompleteIntent(TypedDict, total=False):
    """Payload of ``handoff_complete``: a helper that was handed the conversation is done;
    control returns to its caller."""

    summary: str


class ContextCompactedIntent(TypedDict):
    """Payload of ``context_compacted``: earlier turns were compacted by the config's history
    policy before a model call (docs/context.md)."""

    policy: str
    turns: Any
    before: Any
    after: Any


class IntentControl(TypedDict, total=False):
    """What a handler of a call intent may return: skip the call, or replace its result."""

    skip: bool
    result: Any


class _ApprovalAnswerRequired(TypedDict):
    approved: bool


class ApprovalAnswer(_ApprovalAnswerRequired, total=False):
    """An approver's detailed answer; edited ``args`` are checked again before the call."""

    reason: str
    args: dict[str, Any]


#: What an approver returns: True, False, an ApprovalAnswer, or "defer" (pause the
#: run; continue it later with ``agent.resume(session, decisions)``).
ApprovalDecision: TypeAlias = bool | ApprovalAnswer | Literal["defer"]


class PartialIntent(TypedDict):
    """A streaming update of a structured intent; ``snapshot`` is the payload so far."""

    partial: bool
    complete: bool
    mode: Literal["text", "structured"]
    segment: int
    raw: str
    snapshot: dict[str, Any]


class ResponseTextPartialIntent(TypedDict):
    """A streaming update of ``response_text``; ``delta`` is the new text."""

    partial: bool
    complete: bool
    mode: Literal["text", "structured"]
    segment: int
    raw: str
    snapshot: ResponseTextIntent
    delta: str


# --------------------------------------------------------------------------- fixed config


# --- generated from auwgent.runtime.config.KEYS (scripts/generate_runtime_config.py)


class AuwgentRetry(TypedDict, total=False):
    """Retries with backoff on 429, 5xx and connection errors (delays in seconds)."""

    #: Tries, the first included.
    attempts: int
    baseDelay: float
    maxDelay: float


class AuwgentTimeouts(TypedDict, total=False):
    """Timeouts in seconds."""

    connect: float
    firstByte: float
    idle: float
    call: float
    run: float | None


class AuwgentLimits(TypedDict, total=False):
    """Size caps on one event and one response from a provider, in bytes."""

    eventBytes: int
    responseBytes: int


class AuwgentBudget(TypedDict, total=False):
    """Caps on model requests and tokens, per run and per conversation."""

    tokens: int
    requests: int
    conversationTokens: int
    conversationRequests: int


class AuwgentCodeLimits(TypedDict, total=False):
    """Code mode's limits per execute_code call (seconds, bytes, calls, characters)."""

    timeout: float
    memory: int
    maxCalls: int
    maxOutput: int


class RuntimeConfig(TypedDict, total=False):
    """The runtime config keys every agent accepts (docs/runtime.md); a generated
    ``AuwgentConfig`` adds the keys typed by its agent (apiKeys, context, tools, ...).
    """

    #: Middleware classes or instances.
    middleware: Sequence[object]
    maxToolLoops: int
    maxOutputRetries: int
    protocol: Literal["blocks", "native"]
    retry: AuwgentRetry
    timeouts: AuwgentTimeouts
    limits: AuwgentLimits
    #: What every provider request goes through (a Cassette, say).
    httpClient: httpx.AsyncClient
    #: A provider replacing every model; "offline" runs without a network.
    provider: Provider | Literal["offline"]
    #: The date line's zone, e.g. "Africa/Accra".
    timezone: str
    #: Replaces the system clock.
    clock: Callable[[], datetime]
    #: Recall and background ingestion.
    memory: MemoryConfig
    #: {"repeats": N} (default 3) or false: stop a model repeating the same calls.
    loopDetection: Mapping[str, int] | bool
    budget: AuwgentBudget
    #: OpenTelemetry spans with the global provider.
    tracing: bool
    #: OpenTelemetry spans with this provider.
    tracerProvider: object
    #: Native tools and structured output on OpenAI-compatible APIs carry strict: true (default true).
    strict: bool
    #: "defer": every gated call pauses the run for agent.resume().
    approvals: Literal["ask", "defer"]
    #: Code mode for every agent (docs/code-mode.md).
    codeMode: bool
    codeLimits: AuwgentCodeLimits
    #: Per MCP server declared in the IR: env, headers, timeout, startTimeout.
    mcp: Mapping[str, McpServerConfig]
    #: "dbos": model requests and tool calls are DBOS steps (docs/durable.md).
    durable: Literal["dbos"]


# --- end of generated runtime config


# --------------------------------------------------------------------------- base classes


def placeholders(cls: _ClassT) -> _ClassT:
    """Mark every method defined in the body of ``cls`` as a placeholder.

    The runtime treats a marked method as absent, so a subclass overrides only what it
    implements: a tool left out reaches the model as ``[NOT CONFIGURED]`` (a call to it yields
    ``tool_error``), a handler or hook left out handles nothing and costs nothing.
    """
    for value in vars(cls).values():
        if isinstance(value, FunctionType):
            setattr(value, PLACEHOLDER, True)
    return cls


class Tools:
    """Base of a generated ``AuwgentTools``, which lists its tools in ``_TOOL_NAMES``.

    Defining a subclass with a public method named like no declared tool but close to one
    (``get_wether``) raises ``ConfigError`` with the suggestion: that method would never be
    called. Helper methods take a leading underscore.
    """

    _TOOL_NAMES: ClassVar[frozenset[str]] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for attr, value in vars(cls).items():
            if attr.startswith("_") or attr in cls._TOOL_NAMES or not callable(value):
                continue
            # Imported here, not at the top: importing the bindings stays fast.
            from auwgent._names import suggest

            close = suggest(attr, sorted(cls._TOOL_NAMES))
            if close:
                raise ConfigError(
                    f"{cls.__name__}.{attr}: no tool named {attr!r} is declared; "
                    f"did you mean {close!r}? (name helper methods with a leading _)"
                )


@placeholders
class Middleware(Generic[_IntentNameT]):
    """Base of a generated ``AuwgentMiddleware``: the seven hooks, typed by the agent's intent
    names. Set ``name`` (and ``target``, declared by the generated class, to limit it to one
    agent or helper) and override the hooks you need, as plain or ``async`` methods."""

    name: ClassVar[str] = ""

    async def onRunStart(
        self, session: AuwgentSession, ctx: MiddlewareContext
    ) -> AuwgentSession | None:
        """Once per run, before prompts are evaluated; a returned session replaces the current."""

    async def onLLMStart(self, prompt: str, ctx: MiddlewareContext) -> str | None:
        """Before every model call; a returned string replaces the prompt for that call."""

    async def onIntent(
        self, name: _IntentNameT, value: Any, ctx: MiddlewareContext
    ) -> IntentControl | None:
        """On every final intent, before the handlers; may return ``{"skip": True}`` or
        ``{"result": ...}``."""

    async def onIntentPartial(self, name: _IntentNameT, value: Any, ctx: MiddlewareContext) -> None:
        """On every streaming partial."""

    async def onLLMEnd(self, response: Any, ctx: MiddlewareContext) -> None:
        """After a terminal model response."""

    async def onRunComplete(self, finalSession: AuwgentSession, ctx: MiddlewareContext) -> None:
        """Once when the run ends, also after a failure."""

    async def onError(
        self, error: Exception, session: AuwgentSession, ctx: MiddlewareContext
    ) -> bool | None:
        """When the run or a tool fails; return True to mark the error handled."""


class IntentHandler:
    """Base of every generated ``AuwgentBaseIntentHandler`` (final intents).

    Any agent accepts a subclass of any agent's generated base: a handler written against
    one agent's module may be registered on another. The runtime calls a handler's method for
    each intent of that name, and at registration warns about a method that matches no intent
    of the agent (``on_intent``), so a handler meant for another agent's own intents says so.
    """


class PartialIntentHandler:
    """Base of every generated ``AuwgentBasePartialIntentHandler`` (streaming partials), which
    any agent accepts as :class:`IntentHandler` says."""


class TypedAgent(Agent, Generic[_IntentNameT, _AgentNameT, _RequestT]):
    """Base of a generated ``AuwgentAgent``: :class:`Agent` with registration methods that
    accept handler classes generated for any agent (their bases derive from
    :class:`IntentHandler` and :class:`PartialIntentHandler`), functions of this agent's
    intent and agent names, and an approver of this agent's approval request. The runtime
    accepts any handler; the type parameters narrow what a type checker lets through."""

    def on_intent(
        self,
        handler: type[IntentHandler]
        | IntentHandler
        | Callable[[_IntentNameT, Any, _AgentNameT], object],
    ) -> None:
        """Register a handler of final intents: a subclass or instance of a generated
        ``AuwgentBaseIntentHandler``, or a function ``(name, value, agent_name)``."""
        super().on_intent(handler)

    def on_intent_partial(
        self,
        handler: type[PartialIntentHandler]
        | PartialIntentHandler
        | Callable[[_IntentNameT, Any, _AgentNameT], object],
    ) -> None:
        """Register a handler of streaming partials: a subclass or instance of a generated
        ``AuwgentBasePartialIntentHandler``, or a function ``(name, value, agent_name)``."""
        super().on_intent_partial(handler)

    def on_approval(
        self, approver: Callable[[_RequestT], MaybeAwaitable[ApprovalDecision]]
    ) -> None:
        """Set the approver of the calls marked ``@approval`` (docs/approvals.md)."""
        super().on_approval(approver)


# --------------------------------------------------------------------------- the factory


def create(
    agent_class: type[_AgentT],
    config: Mapping[str, Any],
    ir_json: str,
    *,
    ir_hash: str,
    compiler_version: str,
    ir_version: int,
) -> _AgentT:
    """Build the agent of a generated module: what its ``auwgent(config)`` does.

    ``ir_json`` is the embedded IR, the canonical JSON that ``ir_hash`` covers (the document
    without its ``hash`` field). The versions, the hash and the config are checked as for any
    IR; a mismatch raises ``ConfigError`` asking to regenerate.
    """
    try:
        body = json.loads(ir_json)
    except ValueError as exc:
        raise ConfigError(f"ir: the embedded IR is not valid JSON ({exc})") from exc
    if not isinstance(body, dict):
        raise ConfigError("ir: the embedded IR is not a JSON object; regenerate the bindings")
    agent = create_agent(
        {**body, "hash": ir_hash},
        config,
        ir_hash=ir_hash,
        compiler_version=compiler_version,
        ir_version=ir_version,
        agent_class=agent_class,
    )
    if not isinstance(agent, agent_class):  # pragma: no cover - create_agent's contract
        raise TypeError(f"the runtime did not build a {agent_class.__name__}")
    return agent
