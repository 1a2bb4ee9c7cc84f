"""The product's vocabulary, written once: built-in intents, middleware hooks, providers,
config keys and the API-key naming rule.

The compiler (which names it refuses or accepts), the code generators (which names the
bindings declare) and the runtime (which names it emits and reads) all read these tables, so
a new intent, hook, provider or config key is one line here. Stdlib only and cheap to import:
``auwgent check`` loads it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "BUILTIN_INTENTS",
    "CONFIG_BLOCK_KEYS",
    "HOOKS",
    "INTENTS",
    "NOT_YET_IN_TYPESCRIPT",
    "PROVIDERS",
    "RUNTIME_CONFIG_KEYS",
    "STREAMED_INTENTS",
    "BuiltinIntent",
    "Hook",
    "PayloadField",
    "Provider",
    "api_key_env",
    "api_key_field",
    "document",
    "provider_arity",
    "provider_key",
]

# -- intents -------------------------------------------------------------------------------------


# Plain classes with slots, not NamedTuples: building a NamedTuple class costs about a
# millisecond of import time each, and the runtime imports this module.


class PayloadField:
    """One key of a built-in intent's payload.

    ``type`` is a word the generators translate: ``string``, ``boolean``, ``object`` (a JSON
    object), ``any``, ``string?`` (string or null), ``call_kind`` (``tool`` / ``workflow`` /
    ``helper``), or the name set it is drawn from: ``tool``, ``workflow``, ``helper``,
    ``agent``, ``output_type``.
    """

    __slots__ = ("name", "required", "type")

    def __init__(self, name: str, type: str, required: bool = True) -> None:
        self.name = name
        self.type = type
        self.required = required


class BuiltinIntent:
    """An intent the runtime itself emits (an agent's custom intents come from its IR):
    its name, the payload's class in the generated bindings, one sentence saying when it is
    emitted, the payload's keys, and whether the model streams it (so that partial handlers
    may receive it)."""

    __slots__ = ("class_name", "name", "payload", "streamed", "when")

    def __init__(
        self,
        name: str,
        class_name: str,
        when: str,
        payload: tuple[PayloadField, ...],
        streamed: bool = False,
    ) -> None:
        self.name = name
        self.class_name = class_name
        self.when = when
        self.payload = payload
        self.streamed = streamed


def _call(kind: str) -> tuple[PayloadField, ...]:
    return (PayloadField("type", kind), PayloadField("args", "object"))


def _result(kind: str) -> tuple[PayloadField, ...]:
    return (
        PayloadField("name", kind),
        PayloadField("args", "object"),
        PayloadField("result", "any"),
    )


INTENTS: tuple[BuiltinIntent, ...] = (
    BuiltinIntent(
        "response_text",
        "ResponseTextIntent",
        "The model answered with text.",
        (PayloadField("text", "string"),),
        streamed=True,
    ),
    BuiltinIntent(
        "response_schema",
        "ResponseSchemaIntent",
        "The model answered with structured output.",
        (PayloadField("type", "output_type"), PayloadField("response", "object")),
        streamed=True,
    ),
    BuiltinIntent(
        "tool_call",
        "ToolCallIntent",
        "The model asked for a tool (before it runs).",
        _call("tool"),
        streamed=True,
    ),
    BuiltinIntent(
        "tool_result",
        "ToolResultIntent",
        "A tool ran and returned a result.",
        (*_result("tool"), PayloadField("overridden", "boolean", required=False)),
    ),
    BuiltinIntent(
        "tool_skipped",
        "ToolSkippedIntent",
        "A tool call was skipped before it ran.",
        _call("tool"),
    ),
    BuiltinIntent(
        "tool_error",
        "ToolErrorIntent",
        "A tool call failed or could not run.",
        (PayloadField("tool", "string"), PayloadField("message", "string")),
    ),
    BuiltinIntent(
        "workflow_call",
        "WorkflowCallIntent",
        "The model asked for a workflow (before it runs).",
        _call("workflow"),
        streamed=True,
    ),
    BuiltinIntent(
        "workflow_result", "WorkflowResultIntent", "A workflow finished.", _result("workflow")
    ),
    BuiltinIntent(
        "helper_call",
        "HelperCallIntent",
        "The agent handed work to a helper (before it runs).",
        _call("helper"),
        streamed=True,
    ),
    BuiltinIntent(
        "helper_result",
        "HelperResultIntent",
        "A helper finished and returned its result.",
        _result("helper"),
    ),
    BuiltinIntent(
        "approval_request",
        "ApprovalRequestIntent",
        "A call marked @approval waits for the approver (before it runs).",
        (
            PayloadField("id", "string"),
            PayloadField("kind", "call_kind"),
            PayloadField("name", "string"),
            PayloadField("args", "object"),
            PayloadField("agent", "agent"),
            PayloadField("taint", "object", required=False),
        ),
    ),
    BuiltinIntent(
        "tainted_call",
        "TaintedCallIntent",
        "A call to a sink has arguments that may come from untrusted text; action says what "
        "the taint policy did (approve: sent to the approval gate, refuse, allow).",
        (
            PayloadField("kind", "call_kind"),
            PayloadField("name", "string"),
            PayloadField("agent", "agent"),
            PayloadField("args", "object"),
            PayloadField("policy", "string"),
            PayloadField("action", "string"),
            PayloadField("reason", "string"),
            PayloadField("findings", "any"),
        ),
    ),
    BuiltinIntent(
        "approval_result",
        "ApprovalResultIntent",
        "The approver decided on a call (denied or not).",
        (
            PayloadField("id", "string"),
            PayloadField("approved", "boolean"),
            PayloadField("reason", "string?"),
        ),
    ),
    BuiltinIntent(
        "error",
        "ErrorIntent",
        "The run failed.",
        (
            PayloadField("message", "string"),
            PayloadField("handler", "string", required=False),
            PayloadField("intent", "string", required=False),
            PayloadField("traceback", "string", required=False),
        ),
    ),
    BuiltinIntent(
        "context_compacted",
        "ContextCompactedIntent",
        "Earlier turns were compacted by the config's history policy before a model call.",
        (
            PayloadField("policy", "string"),
            PayloadField("turns", "any"),
            PayloadField("before", "any"),
            PayloadField("after", "any"),
        ),
    ),
    BuiltinIntent(
        "handoff_complete",
        "HandoffCompleteIntent",
        "A helper that was handed the conversation is done; control returns to its caller.",
        (PayloadField("summary", "string", required=False),),
    ),
)

#: The names alone, in the order above.
BUILTIN_INTENTS: tuple[str, ...] = tuple(intent.name for intent in INTENTS)
#: Intents the model streams, so that partial handlers may receive them.
STREAMED_INTENTS: tuple[str, ...] = tuple(i.name for i in INTENTS if i.streamed)

# -- middleware hooks ----------------------------------------------------------------------------


class Hook:
    """A middleware hook: the manual's camelCase name, the snake_case alias also accepted,
    and when it is called."""

    __slots__ = ("alias", "name", "when")

    def __init__(self, name: str, alias: str, when: str) -> None:
        self.name = name
        self.alias = alias
        self.when = when


HOOKS: tuple[Hook, ...] = (
    Hook(
        "onRunStart",
        "on_run_start",
        "Once per run, before prompts are evaluated; a returned session replaces the current.",
    ),
    Hook(
        "onLLMStart",
        "on_llm_start",
        "Before every model call; a returned string replaces the prompt for that call.",
    ),
    Hook(
        "onIntent",
        "on_intent",
        'On every final intent, before the handlers; may return {"skip": True} or {"result": ...}.',
    ),
    Hook("onIntentPartial", "on_intent_partial", "On every streaming partial."),
    Hook("onLLMEnd", "on_llm_end", "After a terminal model response."),
    Hook("onRunComplete", "on_run_complete", "Once when the run ends, also after a failure."),
    Hook(
        "onError",
        "on_error",
        "When the run or a tool fails; return True to mark the error handled.",
    ),
)

# -- providers -----------------------------------------------------------------------------------


class Provider:
    """A provider call of the DSL (``gemini("gemini-2.5-flash", { ... })``): its positional
    arguments in order; the last one, ``options``, may be left out."""

    __slots__ = ("args", "name")

    def __init__(self, name: str, args: tuple[str, ...]) -> None:
        self.name = name
        self.args = args


PROVIDERS: tuple[Provider, ...] = (
    Provider("gemini", ("model", "options")),
    Provider("openai", ("model", "options")),
    Provider("anthropic", ("model", "options")),
    Provider("custom", ("id", "base_url", "model", "options")),
)


def provider_arity() -> dict[str, tuple[int, int]]:
    """Provider name -> (fewest, most) arguments its call takes."""
    return {p.name: (len(p.args) - 1, len(p.args)) for p in PROVIDERS}


# -- config keys ---------------------------------------------------------------------------------

#: The fields of a ``config`` block in a ``.agent`` file.
CONFIG_BLOCK_KEYS: tuple[str, ...] = (
    "model",
    "prompt",
    "embedding",
    "fallback",
    "description",
    "maxToolLoops",
    "protocol",
    "codeMode",
    "taint",
    "history",
    "maxToolOutput",
)

#: The keys of the runtime config given to ``auwgent({...})`` (docs/runtime.md).
RUNTIME_CONFIG_KEYS: tuple[str, ...] = (
    "apiKeys",
    "context",
    "tools",
    "middleware",
    "config",
    "baseUrls",
    "maxToolLoops",
    "maxOutputRetries",
    "protocol",
    "retry",
    "timeouts",
    "limits",
    "httpClient",
    "provider",
    "persona",
    "timezone",
    "clock",
    "memory",
    "loopDetection",
    "budget",
    "tracing",
    "tracerProvider",
    "strict",
    "approver",
    "approvals",
    "codeMode",
    "codeLimits",
    "mcp",
    "durable",
)

#: What the TypeScript runtime does not have yet, by list of :func:`document`. Its tests
#: check that its lists equal these tables minus this; each entry goes when TypeScript gains it.
NOT_YET_IN_TYPESCRIPT: Mapping[str, tuple[str, ...]] = {
    "builtin_intents": (),
    "runtime_config_keys": ("durable",),
}


def document() -> dict[str, Any]:
    """The vocabulary as JSON (``conformance/vocabulary.json``), for the other runtime's tests."""
    return {
        "builtin_intents": list(BUILTIN_INTENTS),
        "streamed_intents": list(STREAMED_INTENTS),
        "hooks": [{"name": hook.name, "alias": hook.alias} for hook in HOOKS],
        "providers": [{"name": p.name, "args": list(p.args)} for p in PROVIDERS],
        "config_block_keys": list(CONFIG_BLOCK_KEYS),
        "runtime_config_keys": list(RUNTIME_CONFIG_KEYS),
        "not_yet_in_typescript": {k: list(v) for k, v in NOT_YET_IN_TYPESCRIPT.items()},
    }


# -- API keys ------------------------------------------------------------------------------------

_NOT_ALNUM = re.compile(r"[^0-9A-Za-z]+")


def provider_key(model: Mapping[str, Any]) -> str:
    """``"gemini"``, ``"openai"``, ``"anthropic"`` or the custom id: how keys and base URLs
    are indexed."""
    return str(model["id"]) if model["provider"] == "custom" else str(model["provider"])


def _camel(ident: str) -> str:
    words = [w for w in _NOT_ALNUM.split(ident) if w]
    if not words:
        return ident
    return words[0][:1].lower() + words[0][1:] + "".join(w[:1].upper() + w[1:] for w in words[1:])


def api_key_field(model: Mapping[str, Any]) -> str:
    """The ``apiKeys`` field for an IR model: ``geminiApiKey``, ``openaiApiKey``, and for
    ``custom("my-groq-api", ...)`` the camelCase id plus ``ApiKey`` (``myGroqApiApiKey``)."""
    return _camel(provider_key(model)) + "ApiKey"


def api_key_env(model: Mapping[str, Any]) -> tuple[str, ...]:
    """The environment variables read (in order) when the config gives no key:
    ``GEMINI_API_KEY`` then ``GOOGLE_API_KEY``, ``OPENAI_API_KEY``, ``MY_GROQ_API_API_KEY``."""
    if model["provider"] == "gemini":
        return ("GEMINI_API_KEY", "GOOGLE_API_KEY")
    if model["provider"] == "openai":
        return ("OPENAI_API_KEY",)
    if model["provider"] == "anthropic":
        return ("ANTHROPIC_API_KEY",)
    return (_NOT_ALNUM.sub("_", str(model["id"])).upper().strip("_") + "_API_KEY",)
