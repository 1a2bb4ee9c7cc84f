"""Google Gemini over its REST API, for ``gemini(...)``.

Chat goes to ``POST {base}/v1beta/models/{model}:streamGenerateContent?alt=sse`` (streaming) or
``:generateContent``; embeddings to ``:batchEmbedContents`` (one text or several, as the
official SDK does). The key travels in the ``x-goog-api-key`` header, never in the URL.

The manual writes Gemini options in snake_case (``max_output_tokens``, ``top_k``); the API's
JSON names are lowerCamelCase. :mod:`auwgent.ir.gemini_options` holds the one
table of where each option goes (request-level fields such as ``safety_settings``,
``tool_config``, ``cached_content``, ``labels``, ``service_tier``, ``store`` at the top of the
body, sampling and output settings inside ``generationConfig``); the compiler rejects the
options the API does not accept.

Gemini sends whole function calls, not fragments: each becomes one :class:`ToolCallDelta` with
the complete arguments. Streaming and non-streaming responses go through the same decoder, so
both yield the same events: deltas, then at most one :class:`Usage`, then one :class:`Finish`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any

from auwgent._typing import assert_never
from auwgent.errors import ProviderError
from auwgent.ir.gemini_options import embedding_options, split_options
from auwgent.runtime import jsontext
from auwgent.runtime.parts import Part, UnsupportedPart, refuse
from auwgent.runtime.providers.base import (
    ContentPart,
    Finish,
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
from auwgent.runtime.providers.shape import (
    MADE_ID_PREFIX,
    digest_of,
    field,
    made_call_id,
    wrong_shape,
)
from auwgent.runtime.providers.wire import as_wire

if TYPE_CHECKING:
    import httpx

    from auwgent.runtime.providers.wire import Wire

__all__ = ["DEFAULT_GEMINI_BASE_URL", "GeminiProvider", "build_gemini_body"]

DEFAULT_GEMINI_BASE_URL = "https://generativelanguage.googleapis.com"

# Fields of a response part that describe it rather than hold content.
_PART_META = frozenset({"thought", "thoughtSignature", "partMetadata", "videoMetadata"})
_FINISH = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
    "MODEL_ARMOR": "content_filter",
    "MALFORMED_FUNCTION_CALL": "malformed_function_call",
}


def _function_response(message: Message, names: Mapping[str, str]) -> dict[str, Any]:
    try:
        value: Any = json.loads(message.content)
    except ValueError:
        value = message.content
    response = value if isinstance(value, dict) else {"result": value}
    call_id = message.tool_call_id or ""
    part: dict[str, Any] = {
        # The name the model called (kept from the history) wins: Gemini pairs an answer with
        # its call by name, and the runtime may know the function under its full name.
        "name": names.get(call_id) or message.name or "",
        "response": response,
    }
    if call_id and not call_id.startswith(MADE_ID_PREFIX):
        part["id"] = call_id
    if message.parts:  # images the tool returned, as functionResponse parts
        part["parts"] = _user_parts(message.parts)
    return {"functionResponse": part}


_URL_SAFE = str.maketrans("+/", "-_")


def _user_parts(parts: tuple[Part, ...]) -> list[dict[str, Any]]:
    """User content parts in Gemini's shape: ``text``, ``inlineData`` (the data in URL-safe
    base64, as the ``google-genai`` SDK writes bytes; the API reads both alphabets),
    ``fileData`` (a URL; Gemini needs its media type)."""
    return [_user_part(index, part) for index, part in enumerate(parts)]


def _user_part(index: int, part: Part) -> dict[str, Any]:
    if part["type"] == "text":
        return {"text": part["text"]}
    if part["type"] == "image" or part["type"] == "file":
        if "data" in part:
            data = part["data"].translate(_URL_SAFE)
            return {"inlineData": {"data": data, "mimeType": part["media_type"]}}
        if "media_type" not in part:
            raise refuse(index, part, "Gemini needs the media_type of a URL part")
        return {"fileData": {"fileUri": part["url"], "mimeType": part["media_type"]}}
    assert_never(part)


class _History:
    """Builds ``contents``; consecutive tool answers share one ``user`` turn, as Gemini wants."""

    def __init__(self, signatures: Mapping[str, str]) -> None:
        self.contents: list[dict[str, Any]] = []
        self._names: dict[str, str] = {}
        self._signatures = signatures

    def add(self, message: Message) -> None:
        if message.role == "tool":
            part = _function_response(message, self._names)
            last = self.contents[-1] if self.contents else None
            if (
                last is not None
                and last["role"] == "user"
                and "functionResponse" in last["parts"][0]
            ):
                last["parts"].append(part)
            else:
                self.contents.append({"role": "user", "parts": [part]})
        elif message.role == "assistant":
            self.contents.append({"role": "model", "parts": self._model_parts(message)})
        elif message.parts:
            self.contents.append({"role": "user", "parts": _user_parts(message.parts)})
        else:
            self.contents.append({"role": "user", "parts": [{"text": message.content}]})

    def _model_parts(self, message: Message) -> list[dict[str, Any]]:
        parts: list[dict[str, Any]] = [{"text": message.content}] if message.content else []
        for call in message.tool_calls:
            self._names[call.id] = call.name
            try:
                args = json.loads(call.arguments) if call.arguments.strip() else {}
            except ValueError:
                args = {}  # the model's broken arguments were already answered with an error
            if not isinstance(args, dict):
                args = {"value": args}  # Gemini accepts only an object here
            function_call: dict[str, Any] = {"name": call.name, "args": args}
            if not call.id.startswith(MADE_ID_PREFIX):
                function_call["id"] = call.id
            part: dict[str, Any] = {"functionCall": function_call}
            signature = self._signatures.get(call.id)
            if signature:
                part["thoughtSignature"] = signature
            parts.append(part)
        return parts or [{"text": ""}]


def build_gemini_body(
    request: ModelRequest, signatures: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The JSON body of a generateContent request (public so tests can inspect it)."""
    history = _History(signatures or {})
    for message in request.messages:
        history.add(message)
    body: dict[str, Any] = {"contents": history.contents}
    if request.system:
        body["systemInstruction"] = {"parts": [{"text": request.system}], "role": "user"}
    if request.functions:
        declarations = [
            {
                "name": f.name,
                "description": f.description,
                "parametersJsonSchema": dict(f.parameters),
            }
            for f in request.functions
        ]
        body["tools"] = [{"functionDeclarations": declarations}]
    top, config = split_options(request.options)
    if request.response_schema is not None:
        config["responseMimeType"] = "application/json"
        config["responseJsonSchema"] = request.response_schema["schema"]
    if config:
        body["generationConfig"] = config
    body.update(top)
    return body


class _Decoder:
    """Turns GenerateContentResponse objects (one per SSE event, or one whole) into events."""

    def __init__(
        self, provider: str, signatures: dict[str, str], digest: Callable[[], str]
    ) -> None:
        self._provider = provider
        self._signatures = signatures
        self._digest = digest
        self._calls = 0
        self._response_id = ""
        self.usage: Usage | None = None
        self.finish: str | None = None
        self.raw: str | None = None
        self.message: str | None = None

    def feed(self, chunk: Any) -> list[StreamEvent]:
        provider = self._provider
        if not isinstance(chunk, dict):
            raise ProviderError(provider, "unexpected response shape (not a JSON object)")
        failure = error_in_body(chunk, provider)
        if failure is not None:
            raise failure
        self._response_id = self._response_id or str(chunk.get("responseId") or "")
        # Per streamed chunk: values of exactly the expected type skip the call to field().
        meta = chunk.get("usageMetadata")
        if meta is not None:
            self._note_usage(
                meta if type(meta) is dict else field(provider, "usageMetadata", meta, dict)
            )
        feedback = chunk.get("promptFeedback")
        if feedback is not None:
            feedback = field(provider, "promptFeedback", feedback, dict)
            if feedback.get("blockReason"):
                self.finish = "content_filter"
                self.raw = str(feedback["blockReason"])
                self.message = feedback.get("blockReasonMessage") or self.message
        candidates = chunk.get("candidates")
        if type(candidates) is not list:
            candidates = field(provider, "candidates", candidates, list)
        if not candidates:
            return []
        candidate = candidates[0]
        if type(candidate) is not dict:
            field(provider, "candidates[0]", candidate, dict, optional=False)
        content = candidate.get("content")
        if type(content) is not dict:
            content = field(provider, "candidates[0].content", content, dict) or {}
        parts = content.get("parts")
        if type(parts) is not list:
            parts = field(provider, "candidates[0].content.parts", parts, list) or ()
        events = [e for part in parts for e in self._part(part)]
        reason = candidate.get("finishReason")
        if reason is not None and type(reason) is not str:
            reason = field(provider, "candidates[0].finishReason", reason, str)
        if reason:
            self.finish = _FINISH.get(reason, reason.lower())
            self.raw = reason
            self.message = candidate.get("finishMessage") or self.message
        return events

    def _part(self, part: Any) -> list[StreamEvent]:
        where = "candidates[0].content.parts[]"
        if type(part) is not dict:
            field(self._provider, where, part, dict, optional=False)
        if part.get("thought"):
            return []  # thinking summaries are not the answer
        if "functionCall" in part:
            return [self._call(part)]
        if "text" in part:
            text = part["text"]
            if type(text) is not str:
                text = field(self._provider, where, text, str, at=".text")
            return [TextDelta(text)] if text else []
        # Anything else (inlineData, fileData, executableCode, codeExecutionResult, ...) is
        # passed on as it came: never silently dropped.
        return [ContentPart(kind, value) for kind, value in part.items() if kind not in _PART_META]

    def _call(self, part: Mapping[str, Any]) -> ToolCallDelta:
        where = "candidates[0].content.parts[].functionCall"
        call = field(self._provider, where, part["functionCall"], dict, optional=False)
        name = field(self._provider, where, call.get("name"), str, optional=False, at=".name")
        args = field(self._provider, where, call.get("args"), dict, at=".args") or {}
        call_id = field(self._provider, where, call.get("id"), str, at=".id") or made_call_id(
            self._digest(), self._response_id, self._calls
        )
        signature = field(self._provider, "thoughtSignature", part.get("thoughtSignature"), str)
        if signature:
            self._remember(call_id, signature)
        event = ToolCallDelta(
            index=self._calls,
            id=call_id,
            name=name,
            arguments=jsontext.text(args),
        )
        self._calls += 1
        return event

    def _remember(self, call_id: str, signature: str) -> None:
        # Gemini's thinking models want each call's signature back when the history is
        # replayed; keep a bounded map (a session restored in another process loses them).
        if len(self._signatures) >= 4096:
            self._signatures.pop(next(iter(self._signatures)))
        self._signatures[call_id] = signature

    def _note_usage(self, meta: Mapping[str, Any] | None) -> None:
        if meta is None:
            return

        provider = self._provider
        counts: list[int | None] = []
        for name in ("promptTokenCount", "candidatesTokenCount", "thoughtsTokenCount"):
            value = meta.get(name)
            if value is not None and type(value) is not int:
                value = field(provider, f"usageMetadata.{name}", value, int)
            counts.append(value)
        prompt, output, thoughts = counts
        if thoughts is not None:
            output = (output or 0) + thoughts
        self.usage = Usage(input_tokens=prompt, output_tokens=output)

    def close(self) -> list[StreamEvent]:
        if self.finish is None:
            raise ProviderError(
                self._provider, "stream ended before completion (no finishReason received)"
            )
        reason = "tool_calls" if self.finish == "stop" and self._calls else self.finish
        tail: list[StreamEvent] = [self.usage] if self.usage is not None else []
        return [*tail, Finish(reason, self.raw, self.message)]


def _model_path(model: str) -> str:
    # "gemini-2.5-flash" → "models/gemini-2.5-flash"; full names ("models/...",
    # "tunedModels/...") are kept.
    return model if "/" in model else f"models/{model}"


class GeminiProvider:
    """The Gemini API. Model name and options come with each request."""

    def __init__(
        self,
        *,
        client: httpx.AsyncClient | Wire,
        api_key: str | None = None,
        base_url: str = DEFAULT_GEMINI_BASE_URL,
        name: str = "gemini",
        retry: RetryPolicy | None = None,
        timeouts: Timeouts | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.name = name
        base = base_url.rstrip("/")
        self.base_url = base if base.endswith(("/v1beta", "/v1")) else f"{base}/v1beta"
        self._wire = wire = as_wire(client)
        self._api_key = api_key
        self._retry = retry or RetryPolicy()
        self._timeouts = timeouts = timeouts or Timeouts()
        self._limits = limits or Limits()
        # Built once, not per request.
        self._wire_timeouts = (
            wire.timeout(timeouts, whole=False),
            wire.timeout(timeouts, whole=True),
        )
        self._signatures: dict[str, str] = {}

    def __repr__(self) -> str:
        return f"GeminiProvider(name={self.name!r}, base_url={self.base_url!r})"

    def _call(self) -> Call:
        return Call(
            self.name,
            retry=self._retry,
            timeouts=self._timeouts,
            limits=self._limits,
            secret=self._api_key,
        )

    def _open(self, model: str, method: str, body: Mapping[str, Any], call: Call) -> Any:
        headers = {"x-goog-api-key": self._api_key} if self._api_key else {}
        wire = self._wire
        request = wire.prepare(
            f"{self.base_url}/{_model_path(model)}:{method}",
            headers,
            jsontext.request_body(body),
            self._wire_timeouts[call.whole],
        )
        return open_response(wire, request, call)

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Send ``request`` and yield its events (deltas, then usage, then finish)."""
        try:
            body = build_gemini_body(request, self._signatures)
        except UnsupportedPart as error:
            raise ProviderError(self.name, str(error)) from None
        call = self._call()
        call.whole = not request.stream
        return retry_unstarted(lambda: self._stream_once(request, body, call), call)

    async def _stream_once(
        self, request: ModelRequest, body: Mapping[str, Any], call: Call
    ) -> AsyncIterator[StreamEvent]:
        decoder = _Decoder(self.name, self._signatures, digest_of(body))  # fresh for every attempt
        method = "streamGenerateContent?alt=sse" if request.stream else "generateContent"
        async with self._open(request.model, method, body, call) as response:
            if request.stream and is_event_stream(response):
                async for data in iter_sse(response, call):
                    for event in decoder.feed(parse_json_chunk(data, provider=self.name)):
                        yield event
            else:
                payload = await read_json(response, call)
                # Without alt=sse (some gateways drop it) the stream is one JSON array.
                for item in payload if isinstance(payload, list) else [payload]:
                    for event in decoder.feed(item):
                        yield event
        for event in decoder.close():
            yield event

    async def embed(
        self, texts: list[str], model: str, options: Mapping[str, Any] | None = None
    ) -> list[list[float]]:
        """Embed ``texts`` with one ``batchEmbedContents`` call (one text or several).

        The options (``output_dimensionality``, ``task_type``, ``title``, ...) become fields of
        each request, named in lowerCamelCase (``outputDimensionality``, ``taskType``, ...).
        """
        if not texts:
            return []
        path = _model_path(model)
        extra = embedding_options(options or {})
        requests = [
            {**extra, "model": path, "content": {"parts": [{"text": text}], "role": "user"}}
            for text in texts
        ]
        payload = await self._post_json(model, "batchEmbedContents", {"requests": requests})
        rows = payload.get("embeddings") if isinstance(payload, dict) else None
        if not isinstance(rows, list) or len(rows) != len(texts):
            raise ProviderError(self.name, "embeddings response does not match the input count")
        vectors: list[list[float]] = []
        for row in rows:
            if not isinstance(row, dict) or not isinstance(row.get("values"), list):
                raise ProviderError(self.name, "embeddings response has no values")
            try:
                vectors.append([float(x) for x in row["values"]])
            except (TypeError, ValueError):
                raise wrong_shape(
                    self.name, "embedding.values[]", row["values"], "numbers"
                ) from None
        return vectors

    async def _post_json(self, model: str, method: str, body: Mapping[str, Any]) -> Any:
        call = self._call()
        async with self._open(model, method, body, call) as response:
            return await read_json(response, call)
