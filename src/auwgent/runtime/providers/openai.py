"""OpenAI Chat Completions, for ``openai(...)`` and every ``custom(id, base_url, model)``.

Requests go to ``POST {base_url}/chat/completions``; embeddings to ``POST {base_url}/embeddings``.
Streaming asks for ``stream_options.include_usage`` so the last chunk carries the token counts,
and a stream must end with ``data: [DONE]``: one that stops short is an error, never a
silently truncated answer.

Both paths yield the same events, in this order: text and tool-call deltas as they come, then
at most one :class:`Usage`, then exactly one :class:`Finish`.
"""

from __future__ import annotations

import array
import base64
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any

from auwgent._typing import assert_never
from auwgent.errors import ProviderError
from auwgent.runtime import jsontext
from auwgent.runtime.parts import WEB_SCHEMES, Part, UnsupportedPart, data_url, refuse
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
    Timeouts,
    error_in_body,
    is_event_stream,
    iter_sse,
    open_response,
    parse_json_chunk,
    read_json,
    retry_unstarted,
)
from auwgent.runtime.providers.shape import digest_of, field, made_call_id, wrong_shape
from auwgent.runtime.providers.wire import as_wire

if TYPE_CHECKING:
    import httpx

    from auwgent.runtime.providers.wire import Wire

__all__ = ["DEFAULT_OPENAI_BASE_URL", "OpenAIProvider", "build_chat_body", "strict_schema"]

DEFAULT_OPENAI_BASE_URL = "https://api.openai.com/v1"

# Body fields the adapter owns; an option with the same name does not override them.
_OWNED = frozenset({"model", "messages", "stream"})


def _message_json(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id or "",
            "content": message.content,
        }
    if message.role == "assistant" and message.tool_calls:
        return {
            "role": "assistant",
            "content": message.content or None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in message.tool_calls
            ],
        }
    if message.parts:
        return {"role": message.role, "content": _content_parts(message.parts)}
    return {"role": message.role, "content": message.content}


def _history(history: tuple[Message, ...]) -> list[dict[str, Any]]:
    """The messages; images that tools returned follow their round's ``tool`` messages as one
    user message (a ``tool`` message holds text only)."""
    out: list[dict[str, Any]] = []
    shown: list[dict[str, Any]] = []
    for index, message in enumerate(history):
        out.append(_message_json(message))
        if message.role == "tool" and message.parts:
            label = f"The tool call {message.tool_call_id} returned these images:"
            shown += [{"type": "text", "text": label}, *_content_parts(message.parts)]
        last = index + 1 == len(history) or history[index + 1].role != "tool"
        if shown and last:
            out.append({"role": "user", "content": shown})
            shown = []
    return out


#: The filename sent with a file part that has none (Chat Completions requires one).
DEFAULT_FILENAME = "document.pdf"


def _content_parts(parts: tuple[Part, ...]) -> list[dict[str, Any]]:
    """User content parts in Chat Completions' shape: ``text``, ``image_url`` (a URL or a
    ``data:`` URL), ``file`` (``file_data`` as a ``data:`` URL with a filename)."""
    return [_content_part(index, part) for index, part in enumerate(parts)]


def _content_part(index: int, part: Part) -> dict[str, Any]:
    if part["type"] == "text":
        return {"type": "text", "text": part["text"]}
    if part["type"] == "image":
        if "url" in part and not part["url"].startswith(WEB_SCHEMES):
            raise refuse(index, part, "Chat Completions fetches http(s) image URLs only")
        url = part["url"] if "url" in part else data_url(part)
        return {"type": "image_url", "image_url": {"url": url}}
    if part["type"] == "file":
        if "url" in part:
            raise refuse(index, part, "Chat Completions takes files as base64 data only")
        filename = part.get("filename", DEFAULT_FILENAME)
        return {"type": "file", "file": {"file_data": data_url(part), "filename": filename}}
    assert_never(part)


def _tool(function: FunctionSpec, strict: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "name": function.name,
        "description": function.description,
        "parameters": strict_schema(function.parameters) if strict else dict(function.parameters),
    }
    if strict:
        spec["strict"] = True
    return {"type": "function", "function": spec}


_TOOLS: dict[tuple[int, bool], tuple[tuple[FunctionSpec, ...], list[dict[str, Any]]]] = {}


def _tools(functions: tuple[FunctionSpec, ...], strict: bool) -> list[dict[str, Any]]:
    """The ``tools`` of a request, made once per tuple of specs: the engine keeps one tuple per
    contract for the agent's lifetime, and the strict form of a schema is a deep copy. Keyed
    by identity (the tuple is held, so its id cannot be reused); read-only for the callers."""
    found = _TOOLS.get((id(functions), strict))
    if found is None or found[0] is not functions:
        if len(_TOOLS) >= 256:  # requests made by hand (tests) come and go; keep it small
            _TOOLS.clear()
        found = _TOOLS[id(functions), strict] = (functions, [_tool(f, strict) for f in functions])
    return found[1]


def _response_format(schema: Mapping[str, Any], strict: bool) -> dict[str, Any]:
    json_schema: dict[str, Any] = {"name": schema["name"], "schema": schema["schema"]}
    if strict:
        json_schema = {**json_schema, "schema": strict_schema(schema["schema"]), "strict": True}
    return {"type": "json_schema", "json_schema": json_schema}


def strict_schema(schema: Any) -> Any:
    """``schema`` in the form OpenAI's strict mode demands.

    Every object lists all its properties in ``required`` and sets ``additionalProperties:
    false``; a property that was optional becomes nullable instead (``null`` for an optional
    field means "not given", see docs/protocol.md). Applied at every depth.
    """
    if isinstance(schema, list):
        return [strict_schema(item) for item in schema]
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("properties", "$defs", "definitions") and isinstance(value, Mapping):
            out[key] = {name: strict_schema(sub) for name, sub in value.items()}
        elif key in ("items", "anyOf", "oneOf", "allOf"):
            out[key] = strict_schema(value)
        else:
            out[key] = value
    if out.get("type") == "object" or "properties" in out:
        properties: dict[str, Any] = dict(out.get("properties") or {})
        required = set(schema.get("required") or ())
        out["properties"] = {
            name: sub if name in required else _nullable(sub) for name, sub in properties.items()
        }
        out["required"] = list(properties)
        out["additionalProperties"] = False
    return out


def _nullable(schema: Any) -> Any:
    if not isinstance(schema, Mapping):
        return schema
    kind = schema.get("type")
    if isinstance(kind, str) and "enum" not in schema:
        return {**schema, "type": [kind, "null"]} if kind != "null" else schema
    if isinstance(kind, list) and "enum" not in schema:
        return schema if "null" in kind else {**schema, "type": [*kind, "null"]}
    if isinstance(schema.get("anyOf"), list):
        return {**schema, "anyOf": [*schema["anyOf"], {"type": "null"}]}
    return {"anyOf": [dict(schema), {"type": "null"}]}


def build_chat_body(request: ModelRequest, *, strict: bool = True) -> dict[str, Any]:
    """The JSON body of a Chat Completions request (public so tests and tools can inspect it).

    With ``strict`` (the default; ``"strict": False`` in the runtime config turns it off for
    endpoints that refuse it), native tools and structured output carry ``strict: true`` and
    their schemas are in strict form (:func:`strict_schema`).
    """
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    messages.extend(_history(request.messages))
    body: dict[str, Any] = {"model": request.model, "messages": messages}
    if request.functions:
        body["tools"] = list(_tools(request.functions, strict))
    if request.response_schema is not None:
        body["response_format"] = _response_format(request.response_schema, strict)
    body.update((k, v) for k, v in request.options.items() if k not in _OWNED)
    if request.stream:
        body["stream"] = True
        stream_options = dict(body.get("stream_options") or {})
        stream_options.setdefault("include_usage", True)
        body["stream_options"] = stream_options
    return body


def _usage(payload: Any, provider: str) -> Usage | None:
    if not isinstance(payload, dict):
        return None
    return Usage(
        input_tokens=field(provider, "usage.prompt_tokens", payload.get("prompt_tokens"), int),
        output_tokens=field(
            provider, "usage.completion_tokens", payload.get("completion_tokens"), int
        ),
    )


def _first_choice(chunk: Any, provider: str) -> dict[str, Any] | None:
    # Runs per streamed chunk: values of exactly the expected type skip the call to field().
    if not isinstance(chunk, dict):
        raise ProviderError(provider, "unexpected response shape (not a JSON object)")
    if "error" in chunk:
        failure = error_in_body(chunk, provider)
        if failure is not None:
            raise failure
    choices = chunk.get("choices")
    if type(choices) is not list:
        choices = field(provider, "choices", choices, list) or ()
    for item in choices:
        if type(item) is not dict:
            field(provider, "choices[]", item, dict, optional=False)
        index = item.get("index")
        if index is not None and type(index) is not int:
            index = field(provider, "choices[].index", index, int)
        if not index:
            return item  # type: ignore[no-any-return]
    return None


class _Calls:
    """Numbers the calls of one response and gives an id to each that came without one."""

    def __init__(self, provider: str, digest: Callable[[], str]) -> None:
        self._provider = provider
        self._digest = digest
        self.response_id = ""
        self._ids: dict[int, str] = {}

    def events(self, where: str, fragments: Any, *, whole: bool) -> list[StreamEvent]:
        provider = self._provider
        events: list[StreamEvent] = []
        for position, fragment in enumerate(field(provider, where, fragments, list) or ()):
            field(provider, where, fragment, dict, optional=False, at="[]")
            index = field(provider, where, fragment.get("index"), int, at="[].index")
            index = position if whole or index is None else index
            function = (
                field(provider, where, fragment.get("function"), dict, at="[].function") or {}
            )
            call_id = field(provider, where, fragment.get("id"), str, at="[].id")
            if index not in self._ids:
                # Some compatible endpoints send "" or no id at all; a made-up stable one
                # keeps the history valid (each tool answer names the call it answers).
                self._ids[index] = call_id or made_call_id(self._digest(), self.response_id, index)
                call_id = self._ids[index]
            else:
                call_id = None
            events.append(
                ToolCallDelta(
                    index=index,
                    id=call_id,
                    name=field(provider, where, function.get("name"), str, at="[].function.name"),
                    arguments=field(
                        provider, where, function.get("arguments"), str, at="[].function.arguments"
                    )
                    or "",
                )
            )
        return events


# Parts of list-valued content that are reasoning, not the answer.
_REASONING_PARTS = frozenset({"thinking", "reasoning"})


def _content_events(provider: str, where: str, content: Any) -> list[StreamEvent]:
    if isinstance(content, str):
        return [TextDelta(content)] if content else []
    events: list[StreamEvent] = []
    # Some vendors (Mistral's reasoning models) send a list of typed parts.
    for part in field(provider, where, content, (str, list)) or ():
        field(provider, where, part, dict, optional=False, at="[]")
        kind = part.get("type")
        if kind == "text":
            text = field(provider, where, part.get("text"), str, at="[].text")
            if text:
                events.append(TextDelta(text))
        elif kind not in _REASONING_PARTS:
            events.append(ContentPart(str(kind), part))
    return events


def _delta_events(
    provider: str, where: str, delta: Any, calls: _Calls, *, whole: bool = False
) -> list[StreamEvent]:
    if type(delta) is not dict:
        field(provider, where, delta, dict)
    if not delta:
        return []
    # A refusal (structured outputs) is the model's answer too: pass it on as text rather
    # than an empty reply that would hide why.
    content = delta.get("content")
    if type(content) is str:  # the common case, per streamed chunk
        events: list[StreamEvent] = [TextDelta(content)] if content else []
    else:
        events = _content_events(provider, f"{where}.content", content)
    if not events:
        refusal = field(provider, where, delta.get("refusal"), str, at=".refusal")
        if refusal:
            events.append(TextDelta(refusal))
    if delta.get("tool_calls") is not None:
        events.extend(calls.events(f"{where}.tool_calls", delta["tool_calls"], whole=whole))
    return events


def _finish_reason(provider: str, choice: Mapping[str, Any]) -> str | None:
    reason = choice.get("finish_reason")
    if reason is None or type(reason) is str:
        return reason
    checked: str | None = field(provider, "choices[0].finish_reason", reason, str)
    return checked


class OpenAIProvider:
    """A Chat Completions endpoint: OpenAI itself, or any compatible one (``custom``).

    The model name and the option object come with each :class:`ModelRequest`; the provider
    holds the endpoint, the key, the HTTP client and the resilience settings.
    """

    def __init__(
        self,
        *,
        client: httpx.AsyncClient | Wire,
        api_key: str | None = None,
        base_url: str = DEFAULT_OPENAI_BASE_URL,
        name: str = "openai",
        retry: RetryPolicy | None = None,
        timeouts: Timeouts | None = None,
        limits: Limits | None = None,
        strict: bool = True,
    ) -> None:
        self.name = name
        self.strict = strict
        self.base_url = base_url.rstrip("/")
        self._wire = wire = as_wire(client)
        self._api_key = api_key
        self._retry = retry or RetryPolicy()
        self._timeouts = timeouts = timeouts or Timeouts()
        self._limits = limits or Limits()
        # Built once: a timeout object per request was a measurable part of our overhead.
        self._wire_timeouts = (
            wire.timeout(timeouts, whole=False),
            wire.timeout(timeouts, whole=True),
        )

    def __repr__(self) -> str:
        return f"OpenAIProvider(name={self.name!r}, base_url={self.base_url!r})"

    def _call(self) -> Call:
        return Call(
            self.name,
            retry=self._retry,
            timeouts=self._timeouts,
            limits=self._limits,
            secret=self._api_key,
        )

    def _open(self, path: str, body: Mapping[str, Any], call: Call) -> Any:
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        wire = self._wire
        request = wire.prepare(
            f"{self.base_url}{path}",
            headers,
            jsontext.request_body(body),
            self._wire_timeouts[call.whole],
        )
        return open_response(wire, request, call)

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Send ``request`` and yield its events (see the module docstring for the order)."""
        try:
            body = build_chat_body(request, strict=self.strict)
        except UnsupportedPart as error:
            raise ProviderError(self.name, str(error)) from None
        call = self._call()
        call.whole = not request.stream
        return retry_unstarted(lambda: self._stream_once(request, body, call), call)

    async def _stream_once(
        self, request: ModelRequest, body: Mapping[str, Any], call: Call
    ) -> AsyncIterator[StreamEvent]:
        async with self._open("/chat/completions", body, call) as response:
            if not (request.stream and is_event_stream(response)):
                payload = await read_json(response, call)
                for event in self._whole(payload, digest_of(body)):
                    yield event
                return
            # The SSE events are handled here rather than in a nested generator: every layer
            # of async generators costs a resumption per event.
            finish: str | None = None
            usage: Usage | None = None
            done = False
            calls = _Calls(self.name, digest_of(body))
            # Read to the very end even after [DONE]: a body left unread makes httpx close the
            # connection instead of reusing it, and a new connection per call costs milliseconds.
            async for data in iter_sse(response, call):
                if done:
                    continue
                if data.strip() == "[DONE]":
                    done = True
                    continue
                chunk = parse_json_chunk(data, provider=self.name)
                choice = _first_choice(chunk, self.name)
                if chunk.get("usage") is not None:
                    usage = _usage(chunk["usage"], self.name) or usage
                if choice is None:
                    continue
                calls.response_id = calls.response_id or str(chunk.get("id") or "")
                for event in _delta_events(
                    self.name, "choices[0].delta", choice.get("delta"), calls
                ):
                    yield event
                finish = _finish_reason(self.name, choice) or finish
            if not done:
                raise ProviderError(self.name, "stream ended before completion (no [DONE] marker)")
            if usage is not None:
                yield usage
            yield Finish(finish or "stop")

    def _whole(self, payload: Any, digest: Callable[[], str]) -> list[StreamEvent]:
        choice = _first_choice(payload, self.name)
        if choice is None:
            raise ProviderError(self.name, "response has no choices")
        calls = _Calls(self.name, digest)
        calls.response_id = str(payload.get("id") or "")
        # A whole message reads as one delta holding everything; its calls are numbered in order.
        events = _delta_events(
            self.name, "choices[0].message", choice.get("message"), calls, whole=True
        )
        usage = _usage(payload.get("usage"), self.name)
        if usage is not None:
            events.append(usage)
        events.append(Finish(_finish_reason(self.name, choice) or "stop"))
        return events

    async def embed(
        self, texts: list[str], model: str, options: Mapping[str, Any] | None = None
    ) -> list[list[float]]:
        """Embed ``texts`` in one ``/embeddings`` call; vectors come back in input order.

        The options (``dimensions``, ``encoding_format``, ``user``, ...) go into the body as
        written; vectors sent as base64 (``encoding_format: "base64"``) are decoded.
        """
        if not texts:
            return []
        call = self._call()
        body = {**(options or {}), "model": model, "input": list(texts)}
        async with self._open("/embeddings", body, call) as response:
            payload = await read_json(response, call)
        rows = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(rows, list) or len(rows) != len(texts):
            raise ProviderError(self.name, "embeddings response does not match the input count")
        vectors: dict[int, list[float]] = {}
        for position, row in enumerate(rows):
            if not isinstance(row, dict) or not isinstance(row.get("embedding"), (list, str)):
                raise ProviderError(self.name, "embeddings response has no values")  # as Gemini's
            index = field(self.name, "data[].index", row.get("index"), int)
            vectors[position if index is None else index] = _vector(self.name, row["embedding"])
        if sorted(vectors) != list(range(len(texts))):
            raise ProviderError(self.name, "embeddings response indexes do not match the input")
        return [vectors[i] for i in range(len(texts))]


def _vector(provider: str, value: list[Any] | str) -> list[float]:
    """An embedding as floats, from a JSON list or base64 little-endian float32."""
    if isinstance(value, str):
        try:
            raw = base64.b64decode(value, validate=True)
        except ValueError:
            raise ProviderError(
                provider, "embeddings response has a malformed base64 vector"
            ) from None
        if len(raw) % 4:
            raise ProviderError(provider, "embeddings response has a malformed base64 vector")
        return list(array.array("f", raw) if sys.byteorder == "little" else _swapped(raw))
    try:
        return [float(x) for x in value]
    except (TypeError, ValueError):
        raise wrong_shape(provider, "data[].embedding[]", value, "numbers") from None


def _swapped(raw: bytes) -> array.array[float]:
    values = array.array("f", raw)
    values.byteswap()
    return values
