"""The one interface between the engine and a model provider.

A provider turns one :class:`ModelRequest` (the runtime's neutral message form) into an async
stream of neutral :data:`StreamEvent` values, and embeds texts. Adapters translate, nothing
more: streaming and non-streaming paths yield the same events, and a failure after the
configured retries is raised as :class:`auwgent.errors.ProviderError`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from types import MappingProxyType
from typing import Any, Literal, Protocol

from auwgent._records import record
from auwgent.runtime.parts import Part

Role = Literal["user", "assistant", "tool"]


@record
class ToolCall:
    """A native function call made by the model (or replayed from history)."""

    id: str
    name: str
    arguments: str  # JSON text, exactly as the model produced it


#: The kinds of :class:`ContentPart` that are the model's reasoning (Anthropic's thinking
#: blocks): kept with the assistant message in history (``Message.reasoning``), never answer text.
REASONING_KINDS = frozenset({"thinking", "redacted_thinking"})


@record
class ContentPart:
    """A piece of the answer that is neither text nor a call, passed on rather than dropped.

    ``kind`` is the part's name on the wire (Gemini's ``inlineData``, ``fileData``,
    ``executableCode``, ``codeExecutionResult``, Anthropic's ``thinking`` and
    ``redacted_thinking``, ...) and ``data`` its value, as sent.
    """

    kind: str
    data: Any


@record
class Message:
    """One history message. ``tool`` messages answer the ``ToolCall`` named by ``tool_call_id``."""

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None  # the function name, for ``tool`` messages
    # The model's reasoning that the provider wants back with this assistant message, as it
    # sent it (Anthropic's ``thinking`` blocks with their signatures, ``redacted_thinking``):
    # each a ``ContentPart`` whose ``data`` is the block. Never answer text.
    reasoning: tuple[ContentPart, ...] = ()
    # A user message given as parts (auwgent.runtime.parts: text, image, file dicts, checked),
    # in order; ``content`` then holds their text. Empty for a plain text message.
    parts: tuple[Part, ...] = ()


@record
class FunctionSpec:
    """A function offered to the model (native codec only)."""

    name: str
    description: str
    parameters: Mapping[str, Any]  # JSON Schema object


@record
class ModelRequest:
    model: str
    system: str
    messages: tuple[Message, ...]
    functions: tuple[FunctionSpec, ...] = ()
    # Native structured output: {"name": str, "schema": JSON Schema}; None for free text.
    response_schema: Mapping[str, Any] | None = None
    # The provider option object from the DSL, passed to the API untouched.
    options: Mapping[str, Any] = MappingProxyType({})
    stream: bool = True
    # The protocol contract (auwgent.runtime.protocol.contract.Contract). Network providers
    # ignore it; in-process models (offline, scripted) read it to answer in kind.
    contract: Any = None


@record
class TextDelta:
    text: str


@record
class ToolCallDelta:
    """A fragment of a native tool call. ``id``/``name`` arrive on the first fragment of an
    ``index``; ``arguments`` fragments concatenate to the call's JSON arguments."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""


@record
class Usage:
    """Token counts of one response. ``input_tokens`` counts the whole prompt, cached parts
    included; ``cache_read_tokens`` / ``cache_write_tokens`` say how much of it was read from
    or written to a provider's prompt cache, where the provider reports it."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None


@record
class Finish:
    """Why the model stopped: ``reason`` in OpenAI's words ("stop", "tool_calls", "length",
    "content_filter", ...); ``raw`` the provider's own reason where it differs (Gemini's
    ``SAFETY``), ``message`` any explanation the provider gave with it. Events compare by
    ``reason`` alone."""

    reason: str
    raw: str | None = None
    message: str | None = None

    def __eq__(self, other: object) -> bool:
        if other.__class__ is Finish:
            return self.reason == other.reason
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.reason)


StreamEvent = TextDelta | ToolCallDelta | ContentPart | Usage | Finish


class Provider(Protocol):
    """What the engine needs from a model provider."""

    name: str  # "openai", "gemini" or the custom provider's id

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Send ``request`` and yield its events. Raises ``ProviderError`` on failure."""
        ...

    async def embed(
        self, texts: list[str], model: str, options: Mapping[str, Any] | None = None
    ) -> list[list[float]]:
        """Embed ``texts`` with the embedding ``model``, one vector per text, in order.

        ``options`` is the embedding model's option object from the DSL (``dimensions``,
        ``output_dimensionality``, ``task_type``, ...), sent as the API expects it.
        """
        ...
