"""Anthropic's Messages API, for ``anthropic(...)``.

Requests go to ``POST {base_url}/v1/messages`` with the key in ``x-api-key`` and
``anthropic-version: 2023-06-01``. The body is built from the agent: ``system`` from the system
prompt, ``messages`` from the history (calls as ``tool_use`` blocks, answers as ``tool_result``
blocks, consecutive answers in one ``user`` turn), ``tools`` with each function's
``input_schema``, and native structured output as ``output_config.format``. The options of
:mod:`auwgent.ir.anthropic_options` go to the top of the body as written; ``max_tokens``,
which the API requires, defaults to :data:`~auwgent.ir.anthropic_options.DEFAULT_MAX_TOKENS`.
``cache`` (ours) puts ``cache_control`` breakpoints on the last tool and on the system prompt
(before its date-and-time line, which changes every second).

Streams are server-sent events: ``message_start``, ``content_block_start`` / ``_delta`` /
``_stop`` (text, ``tool_use`` with ``input_json_delta`` fragments, ``thinking`` with
``thinking_delta`` and ``signature_delta``, ``redacted_thinking``), ``message_delta`` (the stop
reason and the output tokens), ``message_stop``, ``ping`` and ``error``. A stream without
``message_stop`` is an error, never a shortened answer. Both paths yield the same events:
text and call deltas and :class:`ContentPart` values as they come (thinking blocks whole, once
their signature is in), then one :class:`Usage`, then one :class:`Finish`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from auwgent._typing import assert_never
from auwgent.errors import ConfigError, ProviderError
from auwgent.ir.anthropic_options import ADAPTER_OWNED, DEFAULT_MAX_TOKENS, OWN, cache_control
from auwgent.runtime import jsontext
from auwgent.runtime.parts import WEB_SCHEMES, FilePart, ImagePart, Part, UnsupportedPart, refuse
from auwgent.runtime.providers.base import (
    ContentPart,
    Finish,
    FunctionSpec,
    Message,
    ModelRequest,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from auwgent.runtime.providers.http import (
    Call,
    Limits,
    RetryPolicy,
    StreamInterrupted,
    Timeouts,
    is_event_stream,
    iter_sse,
    open_response,
    parse_json_chunk,
    read_json,
    retry_unstarted,
)
from auwgent.runtime.providers.shape import field
from auwgent.runtime.providers.wire import as_wire

if TYPE_CHECKING:
    import httpx

    from auwgent.runtime.providers.wire import Wire

__all__ = [
    "ANTHROPIC_VERSION",
    "DEFAULT_ANTHROPIC_BASE_URL",
    "AnthropicProvider",
    "build_messages_body",
]

DEFAULT_ANTHROPIC_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"

# Stop reasons in our words; the API's own word is kept as ``Finish.raw``.
_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "refusal",
    "pause_turn": "pause_turn",
}
_FINISH_MESSAGES = {
    "refusal": "the model declined to answer (stop_reason refusal)",
    "pause_turn": "the API paused a long-running turn (stop_reason pause_turn); Auwgent does "
    "not resume paused turns",
    "model_context_window_exceeded": "the conversation filled the model's context window",
}

# The HTTP status each error type of the API stands for (an ``error`` event has no status).
_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}

_TOOL_CACHE: dict[int, tuple[tuple[FunctionSpec, ...], list[dict[str, Any]]]] = {}


def _tools(functions: tuple[FunctionSpec, ...]) -> list[dict[str, Any]]:
    """The ``tools`` of a request, made once per tuple of specs (the engine keeps one tuple
    per contract); read-only for the callers."""
    found = _TOOL_CACHE.get(id(functions))
    if found is None or found[0] is not functions:
        if len(_TOOL_CACHE) >= 256:
            _TOOL_CACHE.clear()
        tools = [
            {"name": f.name, "description": f.description, "input_schema": dict(f.parameters)}
            for f in functions
        ]
        found = _TOOL_CACHE[id(functions)] = (functions, tools)
    return found[1]


def _arguments(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text) if text.strip() else {}
    except ValueError:
        return {}  # the model's broken arguments were already answered with an error
    return value if isinstance(value, dict) else {"value": value}


def _assistant_content(message: Message) -> str | list[dict[str, Any]]:
    """An assistant turn: its reasoning blocks first (the API wants them back unchanged),
    then its text, then its calls as ``tool_use`` blocks."""
    if not message.reasoning and not message.tool_calls:
        return message.content
    blocks: list[dict[str, Any]] = [dict(part.data) for part in message.reasoning]
    if message.content:
        blocks.append({"type": "text", "text": message.content})
    blocks.extend(
        {"type": "tool_use", "id": c.id, "name": c.name, "input": _arguments(c.arguments)}
        for c in message.tool_calls
    )
    return blocks


def _user_content(message: Message) -> str | list[dict[str, Any]]:
    """A user turn's content: its text, or its parts as ``text``, ``image`` and ``document``
    blocks (``source`` base64 or url)."""
    if not message.parts:
        return message.content
    return [_block(index, part) for index, part in enumerate(message.parts)]


def _block(index: int, part: Part) -> dict[str, Any]:
    if part["type"] == "text":
        return {"type": "text", "text": part["text"]}
    if part["type"] == "image":
        return _source_block("image", index, part)
    if part["type"] == "file":
        return _source_block("document", index, part)
    assert_never(part)


def _source_block(kind: str, index: int, part: ImagePart | FilePart) -> dict[str, Any]:
    if "url" in part:
        if not part["url"].startswith(WEB_SCHEMES):
            raise refuse(index, part, "the Messages API fetches http(s) URLs only")
        return {"type": kind, "source": {"type": "url", "url": part["url"]}}
    source = {"type": "base64", "media_type": part["media_type"], "data": part["data"]}
    return {"type": kind, "source": source}


def _result_content(message: Message) -> str | list[dict[str, Any]]:
    """A tool result's content: its text, with the images the tool returned as blocks."""
    if not message.parts:
        return message.content
    text = {"type": "text", "text": message.content}
    return [text, *(_block(i, part) for i, part in enumerate(message.parts))]


def _history(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            result = {
                "type": "tool_result",
                "tool_use_id": message.tool_call_id or "",
                "content": _result_content(message),
            }
            last = out[-1] if out else None
            if last is not None and last["role"] == "user" and _is_results(last["content"]):
                last["content"].append(result)
            else:
                out.append({"role": "user", "content": [result]})
        elif message.role == "assistant":
            out.append({"role": "assistant", "content": _assistant_content(message)})
        else:
            out.append({"role": "user", "content": _user_content(message)})
    return out


def _is_results(content: Any) -> bool:
    return isinstance(content, list) and bool(content) and content[0].get("type") == "tool_result"


_DATE_LINE = "\n\nCurrent date and time: "


def _system(text: str, cache: dict[str, str] | None) -> str | list[dict[str, Any]]:
    """The system prompt; with caching, text blocks whose first one (everything before the
    date-and-time line, which changes every second) carries the cache breakpoint."""
    if cache is None:
        return text
    head, sep, tail = text.rpartition(_DATE_LINE)
    if not sep or "\n\n" in tail:
        return [{"type": "text", "text": text, "cache_control": cache}]
    return [
        {"type": "text", "text": head, "cache_control": cache},
        {"type": "text", "text": sep.lstrip("\n") + tail},
    ]


def build_messages_body(request: ModelRequest) -> dict[str, Any]:
    """The JSON body of a Messages API request (public so tests can inspect it)."""
    options = request.options
    cache = cache_control(options.get("cache"))
    body: dict[str, Any] = {
        "model": request.model,
        "max_tokens": _max_tokens(options),
        "messages": _history(request.messages),
    }
    if request.system:
        body["system"] = _system(request.system, cache)
    if request.functions:
        tools = _tools(request.functions)
        if cache is not None:
            tools = [*tools[:-1], {**tools[-1], "cache_control": cache}]
        body["tools"] = list(tools)
    body.update((k, v) for k, v in options.items() if k not in ADAPTER_OWNED and k not in OWN)
    if request.response_schema is not None:
        output = dict(body.get("output_config") or {})
        output["format"] = {"type": "json_schema", "schema": request.response_schema["schema"]}
        body["output_config"] = output
    if request.stream:
        body["stream"] = True
    return body


def _max_tokens(options: Mapping[str, Any]) -> Any:
    """The options' ``max_tokens``, or the default; with a thinking budget at least as large
    as the default, the budget plus the default (the API wants ``budget_tokens`` below it)."""
    if "max_tokens" in options:
        return options["max_tokens"]
    thinking = options.get("thinking")
    budget = thinking.get("budget_tokens") if isinstance(thinking, Mapping) else None
    if isinstance(budget, int) and not isinstance(budget, bool) and budget >= DEFAULT_MAX_TOKENS:
        return budget + DEFAULT_MAX_TOKENS
    return DEFAULT_MAX_TOKENS


def _error(provider: str, error: Any, *, started: bool) -> ProviderError:
    """The error an ``error`` event (or an error body) stands for.

    Overloaded and other server-side errors that come before the response produced anything
    are retried like a failed connection (:class:`StreamInterrupted`)."""
    kind = error.get("type") if isinstance(error, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    text = f"{message} [{kind}]" if isinstance(message, str) and message else f"[{kind}]"
    status = _ERROR_STATUS.get(kind) if isinstance(kind, str) else None
    retryable = status is not None and (status == 429 or status >= 500)
    if retryable and not started:
        return StreamInterrupted(provider, text, status=status, retryable=True)
    return ProviderError(provider, text, status=status, retryable=retryable)


class _Decoder:
    """Turns the events of one response (streamed, or the blocks of a whole message) into
    neutral events."""

    def __init__(self, provider: str) -> None:
        self._provider = provider
        self._blocks: dict[int, dict[str, Any]] = {}  # open blocks by index
        self._calls = 0  # tool_use blocks so far: the ToolCallDelta index
        self.started = False  # an event has been produced
        self.done = False  # message_stop received
        self.reason: str | None = None
        self.stop_sequence: str | None = None
        self._input = 0
        self._output: int | None = None
        self._cache_read: int | None = None
        self._cache_write: int | None = None
        self._usage_seen = False

    # -- the stream ---------------------------------------------------------------------

    def feed(self, event: Any) -> list[StreamEvent]:
        provider = self._provider
        if type(event) is not dict:
            raise ProviderError(provider, "unexpected response shape (not a JSON object)")
        kind = event.get("type")
        if kind == "content_block_delta":
            return self._delta(event)
        if kind == "content_block_start":
            return self._start(event)
        if kind == "content_block_stop":
            return self._stop(event)
        if kind == "message_start":
            message = field(provider, "message_start.message", event.get("message"), dict) or {}
            self._note_usage("message_start.message.usage", message.get("usage"))
        elif kind == "message_delta":
            delta = field(provider, "message_delta.delta", event.get("delta"), dict) or {}
            self._note_stop("message_delta.delta", delta)
            self._note_usage("message_delta.usage", event.get("usage"))
        elif kind == "message_stop":
            self.done = True
        elif kind == "error":
            raise _error(provider, event.get("error"), started=self.started)
        # ping, and event types added to the API later, carry nothing for us.
        return []

    def _index(self, event: Mapping[str, Any], where: str) -> int:
        index = event.get("index")
        if type(index) is not int:
            index = field(self._provider, f"{where}.index", index, int, optional=False)
        return int(index)

    def _start(self, event: Mapping[str, Any]) -> list[StreamEvent]:
        where = "content_block_start"
        index = self._index(event, where)
        block = field(self._provider, where, event.get("content_block"), dict, at=".content_block")
        block = dict(block or {})
        self._blocks[index] = block
        kind = block.get("type")
        if kind == "text":
            text = field(self._provider, where, block.get("text"), str, at=".content_block.text")
            block["text"] = ""
            return self._out(TextDelta(text)) if text else []
        if kind == "tool_use":
            return self._call_start(block, where)
        if kind == "thinking":
            block.setdefault("thinking", "")
            block.setdefault("signature", "")
        return []

    def _call_start(self, block: dict[str, Any], where: str) -> list[StreamEvent]:
        provider = self._provider
        call_id = field(provider, where, block.get("id"), str, optional=False, at=".id")
        name = field(provider, where, block.get("name"), str, optional=False, at=".name")
        given = field(provider, where, block.get("input"), dict, at=".input")
        block["call"] = self._calls
        block["json"] = False
        # A streamed call starts with an empty input and sends it as fragments; one that came
        # whole (or a server that sends the input at the start) has it here.
        block["given"] = given or {}
        self._calls += 1
        return self._out(ToolCallDelta(index=block["call"], id=call_id, name=name))

    def _delta(self, event: Mapping[str, Any]) -> list[StreamEvent]:
        provider = self._provider
        where = "content_block_delta"
        index = self._index(event, where)
        delta = event.get("delta")
        if type(delta) is not dict:
            delta = field(provider, where, delta, dict, optional=False, at=".delta")
        block = self._blocks.get(index)
        if block is None:
            raise ProviderError(provider, f"{where} for block {index}, which was never started")
        kind = delta.get("type")
        if kind == "text_delta":
            text = delta.get("text")
            if type(text) is not str:
                text = field(provider, where, text, str, at=".delta.text") or ""
            return self._out(TextDelta(text)) if text else []
        if kind == "input_json_delta":
            part = field(provider, where, delta.get("partial_json"), str, at=".delta.partial_json")
            if block.get("type") != "tool_use" or not part:
                return []
            block["json"] = True
            return self._out(ToolCallDelta(index=block["call"], arguments=part))
        if kind == "thinking_delta":
            text = field(provider, where, delta.get("thinking"), str, at=".delta.thinking")
            block["thinking"] = block.get("thinking", "") + (text or "")
        elif kind == "signature_delta":
            sig = field(provider, where, delta.get("signature"), str, at=".delta.signature")
            block["signature"] = block.get("signature", "") + (sig or "")
        elif kind == "citations_delta":
            return self._out(ContentPart("citation", delta.get("citation")))
        return []

    def _stop(self, event: Mapping[str, Any]) -> list[StreamEvent]:
        index = self._index(event, "content_block_stop")
        block = self._blocks.pop(index, None)
        if block is None:
            return []
        kind = block.get("type")
        if kind == "tool_use":
            if block["json"]:
                return []
            # No fragments: the input is whatever the start carried ({} for no arguments).
            text = jsontext.text(block["given"])
            return self._out(ToolCallDelta(index=block["call"], arguments=text))
        if kind == "text":
            return []
        if kind == "thinking":
            return self._out(ContentPart("thinking", _thinking(block)))
        return self._out(ContentPart(str(kind), block))

    def _out(self, event: StreamEvent) -> list[StreamEvent]:
        self.started = True
        return [event]

    def _note_stop(self, where: str, holder: Mapping[str, Any]) -> None:
        reason = field(self._provider, where, holder.get("stop_reason"), str, at=".stop_reason")
        if reason:
            self.reason = reason
            sequence = holder.get("stop_sequence")
            self.stop_sequence = sequence if isinstance(sequence, str) else None

    def _note_usage(self, where: str, usage: Any) -> None:
        usage = field(self._provider, where, usage, dict)
        if not usage:
            return
        self._usage_seen = True
        provider = self._provider
        counts = {
            name: field(provider, f"{where}.{name}", usage.get(name), int)
            for name in (
                "input_tokens",
                "output_tokens",
                "cache_read_input_tokens",
                "cache_creation_input_tokens",
            )
        }
        # message_delta repeats the counts it has (cumulative), and sends output_tokens.
        if counts["input_tokens"] is not None:
            self._input = counts["input_tokens"]
        if counts["output_tokens"] is not None:
            self._output = counts["output_tokens"]
        if counts["cache_read_input_tokens"] is not None:
            self._cache_read = counts["cache_read_input_tokens"]
        if counts["cache_creation_input_tokens"] is not None:
            self._cache_write = counts["cache_creation_input_tokens"]

    # -- a whole message ----------------------------------------------------------------

    def whole(self, payload: Any) -> list[StreamEvent]:
        provider = self._provider
        if not isinstance(payload, dict):
            raise ProviderError(provider, "unexpected response shape (not a JSON object)")
        if payload.get("type") == "error":
            raise _error(provider, payload.get("error"), started=False)
        events: list[StreamEvent] = []
        blocks = field(provider, "content", payload.get("content"), list) or ()
        for position, block in enumerate(blocks):
            field(provider, "content[]", block, dict, optional=False)
            start = {"index": position, "content_block": block}
            events.extend(self._start(start))
            events.extend(self._stop({"index": position}))
        self._note_stop("message", payload)
        self._note_usage("usage", payload.get("usage"))
        self.done = True
        return events

    # -- the end ------------------------------------------------------------------------

    def close(self) -> list[StreamEvent]:
        if not self.done:
            raise ProviderError(
                self._provider, "stream ended before completion (no message_stop event)"
            )
        if self.reason is None:
            raise ProviderError(self._provider, "the response has no stop_reason")
        tail: list[StreamEvent] = []
        if self._usage_seen:
            read, write = self._cache_read, self._cache_write
            tail.append(
                Usage(
                    input_tokens=self._input + (read or 0) + (write or 0),
                    output_tokens=self._output,
                    cache_read_tokens=read,
                    cache_write_tokens=write,
                )
            )
        reason = _FINISH.get(self.reason, self.reason)
        if reason == "stop" and self._calls:
            reason = "tool_calls"
        message = _FINISH_MESSAGES.get(self.reason)
        if self.reason == "stop_sequence" and self.stop_sequence:
            message = f"stopped at {self.stop_sequence!r}"
        tail.append(Finish(reason, self.reason, message))
        return tail


def _thinking(block: Mapping[str, Any]) -> dict[str, Any]:
    """A thinking block as the API wants it back: type, text and signature, nothing else."""
    return {
        "type": "thinking",
        "thinking": str(block.get("thinking") or ""),
        "signature": str(block.get("signature") or ""),
    }


class AnthropicProvider:
    """The Anthropic Messages API. Model name and options come with each request."""

    def __init__(
        self,
        *,
        client: httpx.AsyncClient | Wire,
        api_key: str | None = None,
        base_url: str = DEFAULT_ANTHROPIC_BASE_URL,
        name: str = "anthropic",
        retry: RetryPolicy | None = None,
        timeouts: Timeouts | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.name = name
        base = base_url.rstrip("/")
        self.base_url = base.removesuffix("/v1")
        self._wire = wire = as_wire(client)
        self._api_key = api_key
        self._retry = retry or RetryPolicy()
        self._timeouts = timeouts = timeouts or Timeouts()
        self._limits = limits or Limits()
        self._headers = {"anthropic-version": ANTHROPIC_VERSION}
        if api_key:
            self._headers["x-api-key"] = api_key
        self._wire_timeouts = (
            wire.timeout(timeouts, whole=False),
            wire.timeout(timeouts, whole=True),
        )

    def __repr__(self) -> str:
        return f"AnthropicProvider(name={self.name!r}, base_url={self.base_url!r})"

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Send ``request`` and yield its events (see the module docstring for the order)."""
        try:
            body = build_messages_body(request)
        except UnsupportedPart as error:
            raise ProviderError(self.name, str(error)) from None
        call = Call(
            self.name,
            retry=self._retry,
            timeouts=self._timeouts,
            limits=self._limits,
            secret=self._api_key,
            whole=not request.stream,
        )
        return retry_unstarted(lambda: self._stream_once(request, body, call), call)

    async def _stream_once(
        self, request: ModelRequest, body: Mapping[str, Any], call: Call
    ) -> AsyncIterator[StreamEvent]:
        decoder = _Decoder(self.name)  # fresh for every attempt
        wire = self._wire
        prepared = wire.prepare(
            f"{self.base_url}/v1/messages",
            self._headers,
            jsontext.request_body(body),
            self._wire_timeouts[call.whole],
        )
        async with open_response(wire, prepared, call) as response:
            if request.stream and is_event_stream(response):
                # Read to the very end (after message_stop too): the connection is reused.
                async for data in iter_sse(response, call):
                    if decoder.done:
                        continue
                    for event in decoder.feed(parse_json_chunk(data, provider=self.name)):
                        yield event
            else:
                for event in decoder.whole(await read_json(response, call)):
                    yield event
        for event in decoder.close():
            yield event

    async def embed(
        self, texts: list[str], model: str, options: Mapping[str, Any] | None = None
    ) -> list[list[float]]:
        """Anthropic has no embeddings API: always a :class:`ConfigError` (the compiler refuses
        an ``anthropic(...)`` embedding model too, E2079)."""
        raise ConfigError(
            f"embedding model {model!r}: Anthropic has no embeddings API; embed with "
            'gemini("gemini-embedding-001") or openai("text-embedding-3-small")'
        )
