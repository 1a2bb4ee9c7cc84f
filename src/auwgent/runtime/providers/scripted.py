"""A model that answers from a script, for precise tests.

:class:`ScriptedModel` is a :class:`~auwgent.runtime.providers.base.Provider` that never
touches the network. Each model call takes the next response from a list (or asks a function
for it) and streams it as the neutral events a real provider would produce::

    model = ScriptedModel([
        ScriptedModel.call("tool__get_weather", {"location": "Accra"}),  # native tool call
        "[response_text]\\nIt is sunny in Accra.\\n[/response_text]",    # raw model text
    ])

A response is one of:

- a ``str``: raw model text (block-protocol text, JSON, prose), streamed in chunks of
  ``chunk_size`` characters so that partial intents happen;
- ``ScriptedModel.call(name, args)``: one native tool call, its JSON arguments streamed in
  fragments;
- ``ScriptedModel.json(value)``: structured output as JSON text (native structured output);
- ``ScriptedModel.reply(*parts)``: several of the above in one response (text and calls);
- ``ScriptedModel.fail(message)``: the provider fails with :class:`ProviderError`, optionally
  after streaming some parts first;
- ``ScriptedModel.events(*events)``: exact stream events, for full control.

Every request is recorded in :attr:`ScriptedModel.requests`; running past the end of a list
script raises ``ProviderError("scripted model has no response left for call N")``.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import math
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, TypeAlias

from auwgent._records import record
from auwgent.errors import ProviderError
from auwgent.runtime.protocol.blocks import KINDS as _BLOCK_KINDS  # the decoder's own list
from auwgent.runtime.providers.base import (
    Finish,
    ModelRequest,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    Usage,
)

__all__ = [
    "EmbeddingFunction",
    "NativeCall",
    "Reply",
    "Response",
    "ScriptFunction",
    "ScriptedFailure",
    "ScriptedModel",
    "block_text",
    "hashed_embedding",
    "reply_events",
]


@record
class NativeCall:
    """One native function call in a scripted response.

    ``arguments`` is a mapping (encoded as JSON) or JSON text used exactly as given, which lets
    a test send malformed arguments on purpose. ``id`` defaults to ``call_<n>_<i>``: call number
    and position, so ids are deterministic.
    """

    name: str
    arguments: Mapping[str, Any] | str
    id: str | None = None


@record
class Reply:
    """A response made of several parts, streamed in order.

    ``finish`` overrides the finish reason (default: ``"tool_calls"`` when the reply holds a
    call, else ``"stop"``); ``usage`` adds a :class:`Usage` event before the finish.
    """

    parts: tuple[str | NativeCall, ...]
    finish: str | None = None
    usage: Usage | None = None


@record
class ScriptedFailure:
    """The provider fails with ``ProviderError(message)`` after streaming ``before`` first."""

    message: str
    before: Reply | None = None
    status: int | None = None
    retryable: bool = False


@record
class _RawEvents:
    events: tuple[StreamEvent, ...]


Response: TypeAlias = str | NativeCall | Reply | ScriptedFailure | _RawEvents
"""What one model call answers: see the module docstring."""

ScriptFunction: TypeAlias = Callable[[ModelRequest], Response | Awaitable[Response]]
"""A script as a function of the request (sync or async)."""

EmbeddingFunction: TypeAlias = Callable[
    [list[str], str], list[list[float]] | Awaitable[list[list[float]]]
]
"""``(texts, model) -> vectors``, sync or async."""


class ScriptedModel:
    """A provider that plays back a script; see the module docstring for the response forms.

    Args:
        script: a sequence of responses (one per model call, in order) or a function from the
            :class:`ModelRequest` to a response (sync or async).
        chunk_size: characters per streamed text or argument fragment (at least 1).
        embeddings: ``(texts, model) -> vectors`` used by :meth:`embed`; without it, ``embed``
            returns the offline model's deterministic vectors.
        name: the provider name reported to the engine and in errors.
        delay: seconds to sleep before each streamed event (to exercise timeouts and
            concurrency); 0 yields control without sleeping.
    """

    def __init__(
        self,
        script: Sequence[Response] | ScriptFunction,
        *,
        chunk_size: int = 8,
        embeddings: EmbeddingFunction | None = None,
        name: str = "scripted",
        delay: float = 0.0,
    ) -> None:
        if chunk_size < 1:
            raise ValueError("chunk_size must be at least 1")
        if isinstance(script, str):
            raise TypeError("script must be a list of responses or a function, not one string")
        self.name = name
        self.chunk_size = chunk_size
        self.delay = delay
        self.requests: list[ModelRequest] = []
        self.embed_requests: list[tuple[list[str], str]] = []
        self._script = script
        self._embeddings = embeddings

    # -- building responses -------------------------------------------------------------------

    @staticmethod
    def call(
        name: str, arguments: Mapping[str, Any] | str | None = None, *, id: str | None = None
    ) -> NativeCall:
        """A native call of the function ``name`` (e.g. ``"tool__get_weather"``)."""
        return NativeCall(name, {} if arguments is None else arguments, id)

    @staticmethod
    def json(value: Any) -> str:
        """Structured output: ``value`` as JSON text, as a provider's JSON mode returns it."""
        return json.dumps(value, ensure_ascii=False)

    @staticmethod
    def reply(
        *parts: str | NativeCall, finish: str | None = None, usage: Usage | None = None
    ) -> Reply:
        """Several parts (text and native calls) in one response, streamed in order."""
        return Reply(tuple(parts), finish, usage)

    @staticmethod
    def fail(
        message: str,
        *,
        after: str | NativeCall | Reply | None = None,
        status: int | None = None,
        retryable: bool = False,
    ) -> ScriptedFailure:
        """A provider failure, raised after streaming ``after`` (if given)."""
        before = after if isinstance(after, Reply) or after is None else Reply((after,))
        return ScriptedFailure(message, before, status, retryable)

    @staticmethod
    def text(content: str) -> str:
        """A ``[response_text]`` block: the model's text answer in the block protocol."""
        return block_text("response_text", None, content)

    @staticmethod
    def block(kind: str, name: str | None = None, body: Mapping[str, Any] | str = "") -> str:
        """One block of the block protocol, e.g. ``block("tool_call", "get_weather",
        {"location": "Accra"})``; see :func:`block_text`."""
        return block_text(kind, name, body)

    @staticmethod
    def events(*events: StreamEvent) -> Response:
        """Exactly these stream events (no finish event is added)."""
        return _RawEvents(tuple(events))

    # -- inspecting ------------------------------------------------------------------------

    @property
    def calls(self) -> int:
        """How many model calls were made so far."""
        return len(self.requests)

    @property
    def remaining(self) -> int | None:
        """Responses left in a list script (``None`` for a function script)."""
        if callable(self._script):
            return None
        return max(0, len(self._script) - len(self.requests))

    def assert_exhausted(self) -> None:
        """Fail (``AssertionError``) unless every response of a list script was used."""
        left = self.remaining
        if left:
            raise AssertionError(
                f"scripted model was called {self.calls} time(s); {left} response(s) of "
                f"{self.calls + left} were never used"
            )

    @property
    def last_request(self) -> ModelRequest:
        """The most recent request (raises ``IndexError`` before the first call)."""
        return self.requests[-1]

    # -- the Provider interface -------------------------------------------------------------------

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Record ``request`` and stream the next scripted response."""
        self.requests.append(request)
        number = len(self.requests)
        response = await self._next(request, number)
        for event in _events_for(response, number, self.chunk_size, self.name):
            if self.delay > 0:
                await asyncio.sleep(self.delay)
            else:
                await asyncio.sleep(0)
            yield event

    async def embed(
        self, texts: list[str], model: str, options: Mapping[str, Any] | None = None
    ) -> list[list[float]]:
        """Embed with the ``embeddings`` function, or deterministic offline vectors."""
        self.embed_requests.append((list(texts), model))
        if self._embeddings is None:
            return [hashed_embedding(text) for text in texts]
        result = self._embeddings(list(texts), model)
        if inspect.isawaitable(result):
            result = await result
        if len(result) != len(texts):
            raise ProviderError(
                self.name,
                f"embeddings function returned {len(result)} vectors for {len(texts)} texts",
            )
        return result

    async def _next(self, request: ModelRequest, number: int) -> Response:
        if callable(self._script):
            produced = self._script(request)
            if inspect.isawaitable(produced):
                produced = await produced
            return _checked(produced, number, self.name)
        if number > len(self._script):
            raise ProviderError(
                self.name,
                f"scripted model has no response left for call {number} "
                f"(the script has {len(self._script)})",
            )
        return _checked(self._script[number - 1], number, self.name)


_RESPONSE_TYPES = (str, NativeCall, Reply, ScriptedFailure, _RawEvents)


def _checked(response: object, number: int, provider: str) -> Response:
    if not isinstance(response, _RESPONSE_TYPES):
        raise ProviderError(
            provider,
            f"scripted response for call {number} is a {type(response).__name__}; expected a "
            "string or a value from ScriptedModel.call/json/reply/fail/events",
        )
    return response


def _events_for(
    response: Response, number: int, chunk_size: int, provider: str
) -> Iterable[StreamEvent]:
    if isinstance(response, _RawEvents):
        yield from response.events
    elif isinstance(response, ScriptedFailure):
        if response.before is not None:
            yield from reply_events(
                response.before, call_number=number, chunk_size=chunk_size, finish=False
            )
        raise ProviderError(
            provider, response.message, status=response.status, retryable=response.retryable
        )
    else:
        reply = response if isinstance(response, Reply) else Reply((response,))
        yield from reply_events(reply, call_number=number, chunk_size=chunk_size)


def reply_events(
    reply: Reply, *, call_number: int, chunk_size: int, finish: bool = True
) -> Iterable[StreamEvent]:
    """The stream events of ``reply``: text in ``chunk_size`` pieces, each call as fragments
    (default ids ``call_<call_number>_<index>``), then (with ``finish``) usage and finish."""
    index = 0
    for part in reply.parts:
        if isinstance(part, str):
            for start in range(0, len(part), chunk_size):
                yield TextDelta(part[start : start + chunk_size])
        else:
            yield from _call_events(part, index, call_number, chunk_size)
            index += 1
    if not finish:
        return
    if reply.usage is not None:
        yield reply.usage
    yield Finish(reply.finish or ("tool_calls" if index else "stop"))


def _call_events(
    call: NativeCall, index: int, number: int, chunk_size: int
) -> Iterable[StreamEvent]:
    arguments = (
        call.arguments
        if isinstance(call.arguments, str)
        else json.dumps(call.arguments, ensure_ascii=False)
    )
    call_id = call.id or f"call_{number}_{index}"
    # Real providers send id and name on the first fragment, then argument pieces.
    yield ToolCallDelta(index, id=call_id, name=call.name, arguments=arguments[:chunk_size])
    for start in range(chunk_size, len(arguments), chunk_size):
        yield ToolCallDelta(index, arguments=arguments[start : start + chunk_size])


_PLAIN_WORDS = re.compile(r"[A-Za-z][A-Za-z0-9 _.-]*[A-Za-z0-9]|[A-Za-z]")
_LOOKS_TYPED = frozenset({"true", "false", "yes", "no", "null", "none"})


def block_text(kind: str, name: str | None, body: Any) -> str:
    """The block-protocol text of one block: ``[kind: name]``, the body, ``[/kind]``.

    A string body is written as is; a flat mapping of simple values as ``key: value`` lines
    (as the manual writes blocks); anything else as JSON, which the decoder also reads.
    """
    if kind not in _BLOCK_KINDS:
        raise ValueError(f"unknown block kind {kind!r}; expected one of {', '.join(_BLOCK_KINDS)}")
    if (name is None) != (kind == "response_text"):
        raise ValueError(
            "response_text blocks take no name" if name else f"a {kind} block needs a name"
        )
    header = f"[{kind}]" if name is None else f"[{kind}: {name}]"
    text = _body_text(body)
    if text and not text.endswith("\n"):
        text += "\n"
    return f"{header}\n{text}[/{kind}]"


def _body_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping) and all(_plain_scalar(v) for v in value.values()):
        return "".join(f"{key}: {_scalar_text(v)}\n" for key, v in value.items())
    return json.dumps(value, ensure_ascii=False)


def _plain_scalar(value: Any) -> bool:
    """Whether ``value`` reads back unchanged from a ``key: value`` line (else use JSON)."""
    if isinstance(value, str):
        return bool(_PLAIN_WORDS.fullmatch(value)) and value.lower() not in _LOOKS_TYPED
    return isinstance(value, (bool, int, float))


def _scalar_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


# -- embeddings ------------------------------------------------------------------------------

_WORD = re.compile(r"\w+", re.UNICODE)


def hashed_embedding(text: str, dimensions: int = 8) -> list[float]:
    """A deterministic unit vector for ``text``: a hashed bag of words.

    Each lower-cased word adds +1 or -1 to one coordinate chosen by its hash, so texts that
    share words point in similar directions (enough for offline retrieval demos). A text
    without words gets a vector seeded by its whole content.
    """
    if dimensions < 1:
        raise ValueError("dimensions must be at least 1")
    vector = [0.0] * dimensions
    for word in _WORD.findall(text.lower()):
        digest = hashlib.sha256(word.encode("utf-8")).digest()
        slot = int.from_bytes(digest[:4], "big") % dimensions
        vector[slot] += 1.0 if digest[4] & 1 else -1.0
    if not any(vector):
        digest = hashlib.sha256(text.encode("utf-8")).digest()
        vector = [(digest[i % len(digest)] - 127.5) / 127.5 for i in range(dimensions)]
    norm = math.sqrt(sum(value * value for value in vector))
    return [value / norm for value in vector]
