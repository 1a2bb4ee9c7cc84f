"""What ``auwgent dev`` records about each run, for the console (dev only, in memory).

Every run of the dev server carries a small middleware (:class:`TurnMarker`) whose
``onRunStart`` puts the run's turn id in a context variable. What happens inside the run
then finds it there:

- the spans of the run (OpenTelemetry, ``tracerProvider`` in the config): a span processor
  (:class:`TurnSpans`) stamps every span started while the variable is set with
  ``auwgent.dev.turn`` and keeps the finished spans grouped by trace, so a turn's trace is
  the trace of any span stamped with its id (the run's own span, started before
  ``onRunStart``, shares that trace);
- the requests sent to the model: with the offline model, the runtime's request as the
  provider gets it (:class:`CapturingProvider`); with real providers, each HTTP request as
  it goes on the wire (an ``httpx`` client with a request hook), its credentials replaced
  by ``"[redacted]"``.

Nothing here changes what a run does or emits: the middleware returns nothing, the provider
forwards every event, the HTTP hook only reads. Memory is bounded: the last
:data:`KEEP_TURNS` turns are kept.
"""

from __future__ import annotations

import contextvars
import json
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping
from typing import Any

from auwgent._records import as_dict, is_record
from auwgent.runtime.session import message_to_json

__all__ = ["KEEP_TURNS", "CapturingProvider", "Recorder", "TurnMarker", "TurnSpans"]

#: How many turns' spans and requests the dev server keeps (the oldest go first).
KEEP_TURNS = 200
#: Header names whose values never leave the server (API keys and tokens).
SECRET_HEADERS = frozenset(
    {"authorization", "x-api-key", "api-key", "x-goog-api-key", "proxy-authorization"}
)
_SECRET_QUERY = ("key", "api_key")

_TURN: contextvars.ContextVar[str | None] = contextvars.ContextVar("auwgent_dev_turn", default=None)


class Recorder:
    """The spans and model requests of recent turns, by turn id (thread-safe)."""

    def __init__(self, keep: int = KEEP_TURNS) -> None:
        self.keep = keep
        self._lock = threading.Lock()
        self._requests: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()
        self._traces: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()  # trace id -> spans
        self._trace_of: OrderedDict[str, list[str]] = OrderedDict()  # turn id -> trace ids

    def request(self, entry: dict[str, Any]) -> None:
        """Keep a model request of the turn at work (none: not inside a run, dropped)."""
        turn = _TURN.get()
        if turn is None:
            return
        with self._lock:
            self._requests.setdefault(turn, []).append(entry)
            _trim(self._requests, self.keep)

    def span(self, trace_id: str, turn: str | None, span: dict[str, Any]) -> None:
        """Keep a finished span (``turn``: the turn it was stamped with, if any)."""
        with self._lock:
            self._traces.setdefault(trace_id, []).append(span)
            _trim(self._traces, self.keep * 2)
            if turn is not None:
                traces = self._trace_of.setdefault(turn, [])  # a resume is a second trace
                if trace_id not in traces:
                    traces.append(trace_id)
                _trim(self._trace_of, self.keep)

    def turn(self, turn: str) -> dict[str, Any]:
        """The spans (start order; a resumed turn has one trace per run) and the model
        requests of ``turn``."""
        with self._lock:
            traces = self._trace_of.get(turn, [])
            spans = [span for trace in traces for span in self._traces.get(trace, ())]
            requests = list(self._requests.get(turn, ()))
        spans.sort(key=lambda s: s["start"])
        return {"turn": turn, "spans": spans, "requests": requests}


def _trim(entries: OrderedDict[str, Any], keep: int) -> None:
    while len(entries) > keep:
        entries.popitem(last=False)


class TurnMarker:
    """The dev server's middleware: marks the run's turn for the recorder, changes nothing."""

    name = "auwgent-dev"

    async def onRunStart(self, session: Mapping[str, Any], ctx: Mapping[str, Any]) -> None:
        turns = session.get("turns") or ()
        if turns:
            _TURN.set(str(turns[-1]["id"]))


class TurnSpans:
    """What the dev server's OpenTelemetry span processor does (:func:`tracer_provider` mixes
    it into the SDK's ``SpanProcessor``): stamp spans with the turn at work, and hand the
    finished ones to the :class:`Recorder`."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        turn = _TURN.get()
        if turn is not None:
            span.set_attribute("auwgent.dev.turn", turn)

    def on_end(self, span: Any) -> None:
        context = span.get_span_context()
        attributes = dict(span.attributes or {})
        turn = attributes.get("auwgent.dev.turn")
        self.recorder.span(
            f"{context.trace_id:032x}",
            turn if isinstance(turn, str) else None,
            {
                "name": span.name,
                "id": f"{context.span_id:016x}",
                "parent": f"{span.parent.span_id:016x}" if span.parent is not None else None,
                "start": span.start_time,
                "end": span.end_time,
                "status": span.status.status_code.name.lower(),
                "attributes": {k: _plain(v) for k, v in attributes.items()},
            },
        )


def tracer_provider(recorder: Recorder) -> Any:
    """A tracer provider whose spans go to ``recorder`` only (``None``: OpenTelemetry's SDK is
    not installed; runs go untraced and the console says so)."""
    try:
        from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
    except ImportError:
        return None

    class Processor(TurnSpans, SpanProcessor):
        pass

    provider = TracerProvider()
    provider.add_span_processor(Processor(recorder))
    return provider


def _plain(value: Any) -> Any:
    """A span attribute as JSON (OpenTelemetry gives tuples for sequences)."""
    return list(value) if isinstance(value, tuple) else value


class CapturingProvider:
    """A provider around another (the offline model) that records each request it is given."""

    def __init__(self, inner: Any, recorder: Recorder) -> None:
        self.inner = inner
        self.name = inner.name
        self.recorder = recorder

    async def stream(self, request: Any) -> AsyncIterator[Any]:
        self.recorder.request(
            {"kind": "model_request", "at": time.time(), "body": model_request_json(request)}
        )
        async for event in self.inner.stream(request):
            yield event

    async def embed(
        self, texts: list[str], model: str, options: Mapping[str, Any] | None = None
    ) -> list[list[float]]:
        return await self.inner.embed(texts, model, options)  # type: ignore[no-any-return]


def model_request_json(request: Any) -> dict[str, Any]:
    """The runtime's request to a model as JSON: what an in-process model is given."""
    return {
        "model": request.model,
        "system": request.system,
        "messages": [message_to_json(m) for m in request.messages],
        "functions": [as_dict(f) if is_record(f) else dict(vars(f)) for f in request.functions],
        "response_schema": request.response_schema,
        "options": dict(request.options),
        "stream": request.stream,
    }


def http_client(recorder: Recorder) -> Any:
    """An ``httpx.AsyncClient`` that records each request it sends (credentials redacted)."""
    import httpx

    async def record(request: httpx.Request) -> None:
        recorder.request({"kind": "http", "at": time.time(), **http_request_json(request)})

    return httpx.AsyncClient(event_hooks={"request": [record]})


def http_request_json(request: Any) -> dict[str, Any]:
    """An HTTP request as sent, with its secrets (headers and ``key`` query values) redacted."""
    url = request.url
    for name in _SECRET_QUERY:
        if name in url.params:
            url = url.copy_set_param(name, "[redacted]")
    headers = {
        k: "[redacted]" if k.lower() in SECRET_HEADERS else v for k, v in request.headers.items()
    }
    content = request.content
    try:
        body: Any = json.loads(content) if content else None
    except ValueError:
        body = content.decode("utf-8", errors="replace")
    return {"method": request.method, "url": str(url), "headers": headers, "body": body}
