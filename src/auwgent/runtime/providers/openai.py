"""OpenAI Chat Completions, for ``openai(...)`` and every ``custom(id, base_url, model)``.

Requests go to ``POST {base_url}/chat/completions``; embeddings to ``POST {base_url}/embeddings``.
Streaming asks for ``stream_options.include_usage`` so the last chunk carries the token counts,
and a stream must end with ``data: [DONE]``: one that stops short is an error, never a
silently truncated answer.

Both paths yield the same events, in this order: text and tool-call deltas as they come, then
at most one :class:`Usage`, then exactly one :class:`Finish`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx

from auwgent.errors import ProviderError
from auwgent.runtime.providers.base import (
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

__all__ = ["DEFAULT_OPENAI_BASE_URL", "OpenAIProvider", "build_chat_body"]

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
    return {"role": message.role, "content": message.content}


def _response_format(schema: Mapping[str, Any]) -> dict[str, Any]:
    json_schema: dict[str, Any] = {"name": schema["name"], "schema": schema["schema"]}
    if "strict" in schema:
        json_schema["strict"] = schema["strict"]
    return {"type": "json_schema", "json_schema": json_schema}


def build_chat_body(request: ModelRequest) -> dict[str, Any]:
    """The JSON body of a Chat Completions request (public so tests and tools can inspect it)."""
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    messages.extend(_message_json(m) for m in request.messages)
    body: dict[str, Any] = {"model": request.model, "messages": messages}
    if request.functions:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": f.name,
                    "description": f.description,
                    "parameters": dict(f.parameters),
                },
            }
            for f in request.functions
        ]
    if request.response_schema is not None:
        body["response_format"] = _response_format(request.response_schema)
    body.update((k, v) for k, v in request.options.items() if k not in _OWNED)
    if request.stream:
        body["stream"] = True
        stream_options = dict(body.get("stream_options") or {})
        stream_options.setdefault("include_usage", True)
        body["stream_options"] = stream_options
    return body


def _usage(payload: Any) -> Usage | None:
    if not isinstance(payload, dict):
        return None
    return Usage(
        input_tokens=payload.get("prompt_tokens"),
        output_tokens=payload.get("completion_tokens"),
    )


def _first_choice(chunk: Any, provider: str) -> dict[str, Any] | None:
    if not isinstance(chunk, dict):
        raise ProviderError(provider, "unexpected response shape (not a JSON object)")
    failure = error_in_body(chunk, provider)
    if failure is not None:
        raise failure
    choices = chunk.get("choices") or []
    for choice in choices:
        if isinstance(choice, dict) and choice.get("index", 0) == 0:
            return choice
    return None


def _delta_events(delta: Mapping[str, Any]) -> list[StreamEvent]:
    events: list[StreamEvent] = []
    # A refusal (structured outputs) is the model's answer too: pass it on as text rather
    # than an empty reply that would hide why.
    content = delta.get("content") or delta.get("refusal")
    if content:
        events.append(TextDelta(content))
    for fragment in delta.get("tool_calls") or ():
        function = fragment.get("function") or {}
        events.append(
            ToolCallDelta(
                index=int(fragment.get("index", 0)),
                id=fragment.get("id"),
                name=function.get("name"),
                arguments=function.get("arguments") or "",
            )
        )
    return events


class OpenAIProvider:
    """A Chat Completions endpoint: OpenAI itself, or any compatible one (``custom``).

    The model name and the option object come with each :class:`ModelRequest`; the provider
    holds the endpoint, the key, the HTTP client and the resilience settings.
    """

    def __init__(
        self,
        *,
        client: httpx.AsyncClient,
        api_key: str | None = None,
        base_url: str = DEFAULT_OPENAI_BASE_URL,
        name: str = "openai",
        retry: RetryPolicy | None = None,
        timeouts: Timeouts | None = None,
        limits: Limits | None = None,
    ) -> None:
        self.name = name
        self.base_url = base_url.rstrip("/")
        self._client = client
        self._api_key = api_key
        self._retry = retry or RetryPolicy()
        self._timeouts = timeouts or Timeouts()
        self._limits = limits or Limits()
        # Built once: an httpx.Timeout per request was a measurable part of our overhead.
        self._httpx_timeout = self._timeouts.for_httpx()

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

    def _request(self, path: str, body: Mapping[str, Any]) -> httpx.Request:
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        return self._client.build_request(
            "POST",
            f"{self.base_url}{path}",
            json=body,
            headers=headers,
            timeout=self._httpx_timeout,
        )

    def _open(self, path: str, body: Mapping[str, Any], call: Call) -> Any:
        return open_response(self._client, self._request(path, body), call)

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Send ``request`` and yield its events (see the module docstring for the order)."""
        body = build_chat_body(request)
        call = self._call()
        return retry_unstarted(lambda: self._stream_once(request, body, call), call)

    async def _stream_once(
        self, request: ModelRequest, body: Mapping[str, Any], call: Call
    ) -> AsyncIterator[StreamEvent]:
        async with self._open("/chat/completions", body, call) as response:
            if not (request.stream and is_event_stream(response)):
                payload = await read_json(response, call)
                for event in self._whole(payload):
                    yield event
                return
            # The SSE events are handled here rather than in a nested generator: every layer
            # of async generators costs a resumption per event.
            finish: str | None = None
            usage: Usage | None = None
            done = False
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
                usage = _usage(chunk.get("usage")) or usage
                if choice is None:
                    continue
                for event in _delta_events(choice.get("delta") or {}):
                    yield event
                finish = choice.get("finish_reason") or finish
            if not done:
                raise ProviderError(self.name, "stream ended before completion (no [DONE] marker)")
            if usage is not None:
                yield usage
            yield Finish(finish or "stop")

    def _whole(self, payload: Any) -> list[StreamEvent]:
        choice = _first_choice(payload, self.name)
        if choice is None:
            raise ProviderError(self.name, "response has no choices")
        message = choice.get("message") or {}
        # A whole message reads as one delta holding everything; its calls are numbered in order.
        calls = [{**call, "index": i} for i, call in enumerate(message.get("tool_calls") or ())]
        events = _delta_events({**message, "tool_calls": calls})
        usage = _usage(payload.get("usage"))
        if usage is not None:
            events.append(usage)
        events.append(Finish(choice.get("finish_reason") or "stop"))
        return events

    async def embed(self, texts: list[str], model: str) -> list[list[float]]:
        """Embed ``texts`` in one ``/embeddings`` call; vectors come back in input order."""
        if not texts:
            return []
        call = self._call()
        body = {"model": model, "input": list(texts)}
        async with self._open("/embeddings", body, call) as response:
            payload = await read_json(response, call)
        rows = payload.get("data") if isinstance(payload, dict) else None
        if not isinstance(rows, list) or len(rows) != len(texts):
            raise ProviderError(self.name, "embeddings response does not match the input count")
        if not all(
            isinstance(row, dict) and isinstance(row.get("embedding"), list) for row in rows
        ):
            raise ProviderError(self.name, "embeddings response has no values")  # as Gemini's
        ordered = sorted(rows, key=lambda row: int(row.get("index", 0)))
        return [[float(x) for x in row["embedding"]] for row in ordered]
