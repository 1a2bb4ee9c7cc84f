"""Real HTTP servers on 127.0.0.1 that speak the OpenAI, Gemini and Anthropic wire formats.

Point a provider (or any HTTP client) at ``server.base_url`` and each chat request takes the
next reply from a script::

    from auwgent.testing.fake_servers import FakeOpenAIServer, status, text, tool_calls

    with FakeOpenAIServer([
        status(429, retry_after=1),                       # a fault, then ...
        tool_calls([("get_weather", {"location": "Accra"})]),
        text("It is sunny in Accra."),
    ]) as server:
        ...  # base URL: server.base_url; what was sent: server.requests

Replies: :func:`text` (prose, block-protocol text or JSON), :func:`tool_calls` (native calls,
optionally after some text), :func:`structured` (a value as JSON text). Faults: :func:`status`
(an API error, with ``Retry-After``), :func:`disconnect`, :func:`malformed_chunk`,
:func:`error_event` and :func:`stall` (each wraps a reply and breaks it after some chunks), and
:func:`endless` (a response that never ends). A script item may also be a
function of the :class:`RecordedRequest`, and the whole script may be one function.

Streaming and non-streaming requests are both answered, in each API's own shapes (chunked
SSE ending in ``data: [DONE]`` for OpenAI; ``alt=sse`` events whose last candidate carries a
``finishReason`` for Gemini; the Messages API's named events, from ``message_start`` to
``message_stop``, for Anthropic). Embedding endpoints answer deterministically from the input
(:func:`~auwgent.runtime.providers.scripted.hashed_embedding`) and do not consume the script.

The servers run in a background thread, so sync and async tests can use them alike.
"""

from __future__ import annotations

import hashlib
import json
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeAlias
from urllib.parse import parse_qsl, urlsplit

from auwgent._records import field, record
from auwgent.runtime.providers.offline import hashed_embedding

__all__ = [
    "Disconnect",
    "Endless",
    "ErrorEvent",
    "FakeAnthropicServer",
    "FakeGeminiServer",
    "FakeOpenAIServer",
    "Malformed",
    "RecordedRequest",
    "ServerReply",
    "Stall",
    "Status",
    "Turn",
    "disconnect",
    "endless",
    "error_event",
    "malformed_chunk",
    "stall",
    "status",
    "structured",
    "text",
    "tool_calls",
]


@record
class RecordedRequest:
    """One request as the server received it. ``headers`` keys are lower-case."""

    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: Any  # the decoded JSON body, or None
    client_port: int = 0  # the client's TCP port: equal ports mean a reused connection

    @property
    def stream(self) -> bool:
        """Whether the client asked for a streamed answer."""
        if self.path.endswith(":streamGenerateContent"):
            return True
        return isinstance(self.body, dict) and bool(self.body.get("stream"))


@record
class Turn:
    """A model answer: text, then native calls. ``chunk_size`` overrides the server's."""

    text: str = ""
    calls: tuple[tuple[str, Any], ...] = ()  # (name, arguments mapping or raw JSON text)
    finish_reason: str | None = None  # default: "tool_calls" with calls, else "stop"
    chunk_size: int | None = None
    finish_message: str | None = None  # Gemini's finishMessage beside the finish reason
    thinking: str = ""  # Anthropic only: a thinking block (signed) before the answer

    @property
    def finish(self) -> str:
        return self.finish_reason or ("tool_calls" if self.calls else "stop")


@record
class Status:
    """An API error response with the provider's own error body."""

    code: int
    message: str | None = None
    retry_after: float | str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    # Gemini only: a google.rpc.RetryInfo detail in the body ("retryDelay": "<seconds>s").
    retry_delay: float | None = None


@record
class Disconnect:
    """Send ``after_chunks`` chunks of ``reply``, then drop the connection.

    With ``close_delimited`` the response has neither a length nor chunked framing: its end is
    the closing of the connection, so the client cannot tell the cut from a complete body.
    """

    reply: Turn
    after_chunks: int = 1
    close_delimited: bool = False


@record
class Malformed:
    """Send ``after_chunks`` chunks of ``reply``, then one that is not valid JSON."""

    reply: Turn
    after_chunks: int = 0


@record
class ErrorEvent:
    """Send ``after_chunks`` chunks of ``reply``, then an error event in the stream (the API's
    own shape, e.g. Anthropic's ``overloaded_error``), then end the stream."""

    reply: Turn
    after_chunks: int = 0
    kind: str = "overloaded_error"
    message: str = "Overloaded"


@record
class Stall:
    """Go silent for ``seconds``: before the response headers when ``after_chunks`` is None,
    else after that many chunks of ``reply``; then carry on normally."""

    reply: Turn
    seconds: float
    after_chunks: int | None = None


@record
class Endless:
    """A response that never ends: the text of ``reply`` as deltas, over and over, with
    ``pause`` seconds between them (a non-streaming answer is a JSON body that never closes),
    until the client hangs up or the server is closed."""

    reply: Turn
    pause: float = 0.0


ServerReply: TypeAlias = Turn | Status | Disconnect | Malformed | ErrorEvent | Stall | Endless
ReplyFunction: TypeAlias = Callable[[RecordedRequest], ServerReply]
Script: TypeAlias = Sequence[ServerReply | ReplyFunction] | ReplyFunction


def text(
    content: str,
    *,
    chunk_size: int | None = None,
    finish_reason: str | None = None,
    finish_message: str | None = None,
    thinking: str = "",
) -> Turn:
    """A text answer (prose, block-protocol text, JSON), streamed in ``chunk_size`` pieces.

    ``finish_reason`` is written in OpenAI's words (``"length"``, ``"content_filter"``); the
    Gemini server sends its own (``MAX_TOKENS``; others upper-cased, e.g. ``"safety"`` →
    ``SAFETY``) with ``finish_message`` as its ``finishMessage``; the Anthropic server sends
    ``end_turn``, ``tool_use``, ``max_tokens`` for ``stop``, ``tool_calls``, ``length`` and
    any other reason as written (``"refusal"``, ``"pause_turn"``). ``thinking`` (Anthropic)
    is sent as a signed thinking block before the answer.
    """
    return Turn(
        text=content,
        chunk_size=chunk_size,
        finish_reason=finish_reason,
        finish_message=finish_message,
        thinking=thinking,
    )


def tool_calls(
    calls: Sequence[tuple[str, Mapping[str, Any] | str]],
    *,
    text: str = "",
    chunk_size: int | None = None,
    finish_reason: str | None = None,
    finish_message: str | None = None,
    thinking: str = "",
) -> Turn:
    """Native function calls ``[(name, arguments), ...]``, optionally after some text.

    Arguments are a mapping (sent as JSON) or JSON text sent as is (to test broken arguments,
    or arguments cut off with ``finish_reason="length"``). The finish fields and ``thinking``
    are as in :func:`text`.
    """
    return Turn(
        text=text,
        calls=tuple(calls),
        chunk_size=chunk_size,
        finish_reason=finish_reason,
        finish_message=finish_message,
        thinking=thinking,
    )


def structured(value: Any, *, chunk_size: int | None = None) -> Turn:
    """Native structured output: ``value`` as JSON text."""
    return Turn(text=json.dumps(value), chunk_size=chunk_size)


def status(
    code: int,
    *,
    retry_after: float | str | None = None,
    message: str | None = None,
    retry_delay: float | None = None,
) -> Status:
    """An error answer, e.g. ``status(429, retry_after=1)`` or ``status(503)``.

    ``retry_delay`` (Gemini only) puts the wait in the body as the real API does, in a
    ``google.rpc.RetryInfo`` detail, instead of a ``Retry-After`` header.
    """
    return Status(code=code, message=message, retry_after=retry_after, retry_delay=retry_delay)


_DEFAULT_PARTIAL = Turn(text="This answer is cut off before it ends.")


def disconnect(
    *, after_chunks: int = 1, reply: Turn | None = None, close_delimited: bool = False
) -> Disconnect:
    """Stream ``after_chunks`` chunks of ``reply`` and then drop the connection.

    ``close_delimited=True`` sends the body without length or chunked framing (its end is the
    closing of the connection), as some servers and proxies do.
    """
    return Disconnect(
        reply=reply or _DEFAULT_PARTIAL, after_chunks=after_chunks, close_delimited=close_delimited
    )


def endless(*, pause: float = 0.0, reply: Turn | None = None) -> Endless:
    """A response that never ends: ``reply``'s text repeated as deltas, ``pause`` s apart."""
    return Endless(reply=reply or _DEFAULT_PARTIAL, pause=pause)


def malformed_chunk(*, after_chunks: int = 0, reply: Turn | None = None) -> Malformed:
    """Stream ``after_chunks`` chunks of ``reply`` and then one chunk of broken JSON."""
    return Malformed(reply=reply or _DEFAULT_PARTIAL, after_chunks=after_chunks)


def error_event(
    *,
    after_chunks: int = 0,
    reply: Turn | None = None,
    kind: str = "overloaded_error",
    message: str = "Overloaded",
) -> ErrorEvent:
    """Stream ``after_chunks`` chunks of ``reply``, then an error event of type ``kind``."""
    return ErrorEvent(
        reply=reply or _DEFAULT_PARTIAL, after_chunks=after_chunks, kind=kind, message=message
    )


def stall(seconds: float, *, after_chunks: int | None = None, reply: Turn | None = None) -> Stall:
    """Go silent for ``seconds`` before the headers (default) or after ``after_chunks``."""
    return Stall(reply=reply or _DEFAULT_PARTIAL, seconds=seconds, after_chunks=after_chunks)


_ERROR_EVENT_STATUS = {"overloaded_error": 529, "rate_limit_error": 429, "api_error": 500}


def _pieces(value: str, size: int) -> list[str]:
    return [value[i : i + size] for i in range(0, len(value), size)] if value else []


def _arguments_text(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def _tokens(value: Any) -> int:
    return max(1, len(json.dumps(value)) // 4)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer

    def setup(self) -> None:
        super().setup()
        # Small SSE writes must leave at once; Nagle + delayed ACK would add ~40 ms each.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self) -> None:  # noqa: N802 - the name http.server dispatches to
        try:
            self.server.fake._serve(self)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (e.g. its timeout fired)

    do_GET = do_POST

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass  # keep test output clean


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 512  # many concurrent clients (benchmarks) must not be refused

    def __init__(self, fake: _FakeServer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.fake = fake

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], ConnectionError):
            return  # a client hung up (closed keep-alive connection, timeout): not news
        super().handle_error(request, client_address)


class _FakeServer:
    """Shared machinery: the thread, the script, recording, HTTP framing."""

    _label = "FakeServer"

    def __init__(
        self,
        script: Script = (),
        *,
        chunk_size: int = 8,
        api_key: str | None = None,
        embedding_dimensions: int = 8,
    ) -> None:
        self.requests: list[RecordedRequest] = []
        self.chunk_size = chunk_size
        self.api_key = api_key
        self.embedding_dimensions = embedding_dimensions
        self._script = script
        self._next = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._http: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        """Start serving on an ephemeral port (``with server:`` does this for you)."""
        if self._http is not None:
            return
        self._stop.clear()
        self._http = _HTTPServer(self)
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        """Stop serving; stalled replies are released at once."""
        self._stop.set()
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None

    def __enter__(self) -> Any:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def origin(self) -> str:
        """``http://127.0.0.1:<port>``."""
        if self._http is None:
            raise RuntimeError(f"{self._label} is not running; use `with` or call start()")
        return f"http://127.0.0.1:{self._http.server_address[1]}"

    # -- request handling --------------------------------------------------------------------

    def _record(self, handler: BaseHTTPRequestHandler) -> RecordedRequest:
        url = urlsplit(handler.path)
        length = int(handler.headers.get("Content-Length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        request = RecordedRequest(
            method=handler.command,
            path=url.path,
            query=dict(parse_qsl(url.query)),
            headers={k.lower(): v for k, v in handler.headers.items()},
            body=body,
            client_port=int(handler.client_address[1]),
        )
        with self._lock:
            self.requests.append(request)
        return request

    def _next_reply(self, request: RecordedRequest) -> ServerReply:
        try:
            return self._scripted_reply(request)
        except Exception as exc:  # a broken test script: say so instead of dropping the line
            message = f"{self._label}: the script function raised {type(exc).__name__}: {exc}"
            return Status(400, message=message)

    def _scripted_reply(self, request: RecordedRequest) -> ServerReply:
        if callable(self._script):
            return self._script(request)
        with self._lock:
            position = self._next
            self._next += 1
        if position >= len(self._script):
            message = (
                f"{self._label}: the script has no reply left for chat request #{position + 1}"
            )
            return Status(400, message=message)
        item = self._script[position]
        return item(request) if callable(item) else item

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        request = self._record(handler)
        if self.api_key is not None and not self._authorised(request):
            self._send_error(handler, Status(401, message="Invalid API key provided."))
            return
        self._route(handler, request)

    def _route(self, handler: BaseHTTPRequestHandler, request: RecordedRequest) -> None:
        raise NotImplementedError

    def _vector(self, value: str, dimensions: Any = None) -> list[float]:
        """The embedding of ``value``: deterministic, so tests can predict it.

        ``dimensions`` is what the request asked for (``dimensions``, ``outputDimensionality``),
        honoured as the real APIs do; otherwise ``embedding_dimensions``.
        """
        size = dimensions if isinstance(dimensions, int) and dimensions > 0 else None
        return hashed_embedding(value, size or self.embedding_dimensions)

    def _authorised(self, request: RecordedRequest) -> bool:
        raise NotImplementedError

    def _error_body(self, error: Status) -> dict[str, Any]:
        raise NotImplementedError

    def _answer(self, handler: BaseHTTPRequestHandler, request: RecordedRequest) -> None:
        reply = self._next_reply(request)
        if isinstance(reply, Status):
            self._send_error(handler, reply)
            return
        if isinstance(reply, ErrorEvent) and not request.stream:
            # A whole answer cannot carry an event: the API answers with the error's status.
            code = _ERROR_EVENT_STATUS.get(reply.kind, 500)
            self._send_error(handler, Status(code, message=reply.message))
            return
        turn = reply if isinstance(reply, Turn) else reply.reply
        size = turn.chunk_size or self.chunk_size
        try:
            events = self._events(turn, request, size) if request.stream else []
            whole = {} if request.stream else self._whole(turn, request)
        except ValueError as exc:  # a reply this API cannot carry: say so, as for a bad script
            self._send_error(handler, Status(400, message=f"{self._label}: {exc}"))
            return
        if isinstance(reply, Stall) and reply.after_chunks is None:
            self._stop.wait(reply.seconds)
        if isinstance(reply, Endless):
            head = self._endless_head(turn, request) if request.stream else b""
            deltas = self._deltas(turn, request, size)
            self._send_endless(handler, head, deltas, reply, request.stream)
        elif request.stream:
            self._send_stream(handler, events, reply)
        else:
            self._send_whole(handler, whole, reply)

    def _events(self, turn: Turn, request: RecordedRequest, size: int) -> list[bytes]:
        raise NotImplementedError

    def _error_event(self, fault: ErrorEvent) -> bytes:
        """An error inside the stream, in the API's shape."""
        return self._sse({"error": {"message": fault.message, "type": fault.kind, "code": 500}})

    def _deltas(self, turn: Turn, request: RecordedRequest, size: int) -> list[bytes]:
        """The text of ``turn`` as stream events, without the ones that end a stream."""
        raise NotImplementedError

    def _endless_head(self, turn: Turn, request: RecordedRequest) -> bytes:
        """What an endless stream sends once before its deltas repeat (nothing by default)."""
        return b""

    def _whole(self, turn: Turn, request: RecordedRequest) -> dict[str, Any]:
        raise NotImplementedError

    # -- HTTP framing ------------------------------------------------------------------------

    def _send_json(
        self,
        handler: BaseHTTPRequestHandler,
        code: int,
        payload: Any,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        body = json.dumps(payload).encode()
        handler.send_response(code)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(body)

    def _send_error(self, handler: BaseHTTPRequestHandler, error: Status) -> None:
        headers = dict(error.headers)
        if error.retry_after is not None:
            value = error.retry_after
            headers["Retry-After"] = value if isinstance(value, str) else f"{value:g}"
        self._send_json(handler, error.code, self._error_body(error), headers)

    def _send_whole(
        self, handler: BaseHTTPRequestHandler, payload: dict[str, Any], reply: ServerReply
    ) -> None:
        body = json.dumps(payload).encode()
        if isinstance(reply, Malformed):
            body = body[: len(body) // 2]  # a complete HTTP response carrying broken JSON
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        if isinstance(reply, Disconnect) and reply.close_delimited:
            handler.send_header("Connection", "close")
        else:
            handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        half = len(body) // 2
        if isinstance(reply, Disconnect):
            handler.wfile.write(body[:half])
            self._drop(handler)
            return
        if isinstance(reply, Stall) and reply.after_chunks is not None:
            handler.wfile.write(body[:half])
            self._stop.wait(reply.seconds)
            body = body[half:]
        handler.wfile.write(body)

    def _send_stream(
        self, handler: BaseHTTPRequestHandler, events: list[bytes], reply: ServerReply
    ) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        if isinstance(reply, Disconnect) and reply.close_delimited:
            handler.send_header("Connection", "close")
            handler.end_headers()
            handler.wfile.write(b"".join(events[: reply.after_chunks]))
            self._drop(handler)
            return
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        for index, event in enumerate(events):
            if isinstance(reply, Disconnect) and index == reply.after_chunks:
                self._drop(handler)
                return
            if isinstance(reply, Malformed) and index == reply.after_chunks:
                self._write_chunk(handler, b'data: {"broken": [1, 2\n\n')
            if isinstance(reply, ErrorEvent) and index == reply.after_chunks:
                self._write_chunk(handler, self._error_event(reply))
                break
            if isinstance(reply, Stall) and index == reply.after_chunks:
                self._stop.wait(reply.seconds)
            self._write_chunk(handler, event)
        handler.wfile.write(b"0\r\n\r\n")

    def _send_endless(
        self,
        handler: BaseHTTPRequestHandler,
        head: bytes,
        deltas: list[bytes],
        reply: Endless,
        stream: bool,
    ) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream" if stream else "application/json")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        if head:
            self._write_chunk(handler, head)
        if not stream:  # a JSON string that never closes
            text = json.dumps(reply.reply.text or " ")[1:-1].encode()
            deltas = [text]
            self._write_chunk(handler, b'{"endless": "')
        while not self._stop.is_set():
            for delta in deltas:
                self._write_chunk(handler, delta)
                if reply.pause:
                    self._stop.wait(reply.pause)
        self._drop(handler)

    @staticmethod
    def _write_chunk(handler: BaseHTTPRequestHandler, data: bytes) -> None:
        handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    @staticmethod
    def _drop(handler: BaseHTTPRequestHandler) -> None:
        handler.close_connection = True
        try:
            handler.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    @staticmethod
    def _sse(payload: Any) -> bytes:
        return b"data: " + json.dumps(payload).encode() + b"\n\n"


class FakeOpenAIServer(_FakeServer):
    """A fake Chat Completions API: ``POST /v1/chat/completions`` and ``/v1/embeddings``.

    ``base_url`` ends in ``/v1``, as the real one does. With ``api_key`` set, requests without
    ``Authorization: Bearer <api_key>`` get a 401 like the real API's.
    """

    _label = "FakeOpenAIServer"

    def __init__(
        self,
        script: Script = (),
        *,
        chunk_size: int = 8,
        api_key: str | None = None,
        embedding_dimensions: int = 8,
        model: str = "gpt-4o-2024-08-06",
    ) -> None:
        super().__init__(
            script,
            chunk_size=chunk_size,
            api_key=api_key,
            embedding_dimensions=embedding_dimensions,
        )
        self.model = model
        self._completions = 0

    def __enter__(self) -> FakeOpenAIServer:
        self.start()
        return self

    @property
    def base_url(self) -> str:
        """The URL to configure as the OpenAI (or custom provider) base URL."""
        return f"{self.origin}/v1"

    def _authorised(self, request: RecordedRequest) -> bool:
        return request.headers.get("authorization") == f"Bearer {self.api_key}"

    def _error_body(self, error: Status) -> dict[str, Any]:
        kinds = {400: "invalid_request_error", 401: "invalid_request_error", 429: "rate_limit"}
        return {
            "error": {
                "message": error.message or f"The server returned status {error.code}.",
                "type": kinds.get(error.code, "server_error"),
                "param": None,
                "code": None,
            }
        }

    def _route(self, handler: BaseHTTPRequestHandler, request: RecordedRequest) -> None:
        if request.path.endswith("/chat/completions"):
            self._answer(handler, request)
        elif request.path.endswith("/embeddings"):
            self._send_json(handler, 200, self._embeddings(request))
        else:
            self._send_error(handler, Status(404, message=f"Unknown path {request.path}"))

    def _embeddings(self, request: RecordedRequest) -> dict[str, Any]:
        body = request.body or {}
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": self._vector(t, body.get("dimensions")),
            }
            for i, t in enumerate(texts)
        ]
        tokens = _tokens(texts)
        return {
            "object": "list",
            "data": data,
            "model": body.get("model"),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    def _chunk(self, ident: str, delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        return {
            "id": ident,
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": self.model,
            "system_fingerprint": "fp_fake",
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }

    def _ids(self) -> tuple[str, int]:
        with self._lock:
            self._completions += 1
            return f"chatcmpl-fake{self._completions}", self._completions

    def _usage(self, turn: Turn, request: RecordedRequest) -> dict[str, int]:
        prompt = _tokens((request.body or {}).get("messages"))
        completion = _tokens([turn.text, [list(c) for c in turn.calls]])
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }

    def _events(self, turn: Turn, request: RecordedRequest, size: int) -> list[bytes]:
        ident, number = self._ids()
        first = {"role": "assistant", "content": "", "refusal": None}
        chunks = [self._chunk(ident, first, None)]
        chunks += [self._chunk(ident, {"content": p}, None) for p in _pieces(turn.text, size)]
        for index, (name, arguments) in enumerate(turn.calls):
            head = {"index": index, "id": f"call_{number}_{index}", "type": "function"}
            head["function"] = {"name": name, "arguments": ""}
            chunks.append(self._chunk(ident, {"tool_calls": [head]}, None))
            for piece in _pieces(_arguments_text(arguments), size):
                fragment = {"index": index, "function": {"arguments": piece}}
                chunks.append(self._chunk(ident, {"tool_calls": [fragment]}, None))
        chunks.append(self._chunk(ident, {}, turn.finish))
        options = (request.body or {}).get("stream_options") or {}
        if options.get("include_usage"):
            tail = self._chunk(ident, {}, None)
            tail["choices"] = []
            tail["usage"] = self._usage(turn, request)
            chunks.append(tail)
        return [self._sse(c) for c in chunks] + [b"data: [DONE]\n\n"]

    def _deltas(self, turn: Turn, request: RecordedRequest, size: int) -> list[bytes]:
        ident, _ = self._ids()
        return [
            self._sse(self._chunk(ident, {"content": p}, None)) for p in _pieces(turn.text, size)
        ]

    def _whole(self, turn: Turn, request: RecordedRequest) -> dict[str, Any]:
        ident, number = self._ids()
        message: dict[str, Any] = {"role": "assistant", "content": turn.text or None}
        if turn.calls:
            message["tool_calls"] = [
                {
                    "id": f"call_{number}_{index}",
                    "type": "function",
                    "function": {"name": name, "arguments": _arguments_text(arguments)},
                }
                for index, (name, arguments) in enumerate(turn.calls)
            ]
        message["refusal"] = None
        return {
            "id": ident,
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model,
            "choices": [
                {"index": 0, "message": message, "logprobs": None, "finish_reason": turn.finish}
            ],
            "usage": self._usage(turn, request),
            "system_fingerprint": "fp_fake",
        }


_GEMINI_FINISH = {"stop": "STOP", "tool_calls": "STOP", "length": "MAX_TOKENS"}
_GEMINI_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


class FakeGeminiServer(_FakeServer):
    """A fake Gemini API under ``/v1beta/models/{model}:<method>``.

    Answers ``generateContent``, ``streamGenerateContent?alt=sse``, ``embedContent`` and
    ``batchEmbedContents``. With ``api_key`` set, requests without a matching
    ``x-goog-api-key`` header get a 400 ``API_KEY_INVALID``-style error like the real API's.
    """

    _label = "FakeGeminiServer"

    def __enter__(self) -> FakeGeminiServer:
        self.start()
        return self

    @property
    def base_url(self) -> str:
        """The URL to configure as the Gemini base URL (the API version is added by clients)."""
        return self.origin

    def _authorised(self, request: RecordedRequest) -> bool:
        return request.headers.get("x-goog-api-key") == self.api_key

    def _error_body(self, error: Status) -> dict[str, Any]:
        body: dict[str, Any] = {
            "code": error.code,
            "message": error.message or f"The service returned status {error.code}.",
            "status": _GEMINI_STATUS.get(error.code, "UNKNOWN"),
        }
        if error.retry_delay is not None:
            body["details"] = [
                {
                    "@type": "type.googleapis.com/google.rpc.RetryInfo",
                    "retryDelay": f"{error.retry_delay:g}s",
                }
            ]
        return {"error": body}

    def _route(self, handler: BaseHTTPRequestHandler, request: RecordedRequest) -> None:
        _, _, method = request.path.rpartition(":")
        if method in ("generateContent", "streamGenerateContent"):
            self._answer(handler, request)
        elif method == "embedContent":
            body = request.body or {}
            values = self._vector(
                self._content_text(body.get("content")), body.get("outputDimensionality")
            )
            self._send_json(handler, 200, {"embedding": {"values": values}})
        elif method == "batchEmbedContents":
            items = (request.body or {}).get("requests") or []
            vectors = [
                {
                    "values": self._vector(
                        self._content_text(r.get("content")), r.get("outputDimensionality")
                    )
                }
                for r in items
            ]
            self._send_json(handler, 200, {"embeddings": vectors})
        else:
            self._send_error(handler, Status(404, message=f"Unknown method {request.path}"))

    @staticmethod
    def _content_text(content: Any) -> str:
        parts = (content or {}).get("parts") or []
        return "".join(str(p.get("text", "")) for p in parts if isinstance(p, dict))

    def _usage(self, turn: Turn, request: RecordedRequest) -> dict[str, int]:
        body = request.body or {}
        prompt = _tokens([body.get("systemInstruction"), body.get("contents")])
        output = _tokens([turn.text, [list(c) for c in turn.calls]])
        return {
            "promptTokenCount": prompt,
            "candidatesTokenCount": output,
            "totalTokenCount": prompt + output,
        }

    @staticmethod
    def _call_part(name: str, arguments: Any) -> dict[str, Any]:
        if not isinstance(arguments, str):
            return {"functionCall": {"name": name, "args": dict(arguments)}}
        try:
            args = json.loads(arguments)
        except ValueError:
            # Gemini sends each call whole, as an object: broken JSON has no wire form here.
            raise ValueError(
                f"the arguments of {name!r} are not valid JSON ({arguments!r}); Gemini sends"
                " whole calls, so broken arguments can only be scripted for OpenAI"
            ) from None
        return {"functionCall": {"name": name, "args": args}}

    def _response(
        self, parts: list[dict[str, Any]], usage: dict[str, int], turn: Turn | None
    ) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if turn is not None:
            candidate["finishReason"] = _GEMINI_FINISH.get(turn.finish, turn.finish.upper())
            if turn.finish_message:
                candidate["finishMessage"] = turn.finish_message
        return {"candidates": [candidate], "usageMetadata": usage, "modelVersion": "gemini-fake"}

    def _events(self, turn: Turn, request: RecordedRequest, size: int) -> list[bytes]:
        usage = self._usage(turn, request)
        groups = [[{"text": p}] for p in _pieces(turn.text, size)]
        if turn.calls:
            groups.append([self._call_part(n, a) for n, a in turn.calls])
        groups = groups or [[{"text": ""}]]
        last = len(groups) - 1
        return [
            self._sse(self._response(g, usage, turn if i == last else None))
            for i, g in enumerate(groups)
        ]

    def _deltas(self, turn: Turn, request: RecordedRequest, size: int) -> list[bytes]:
        usage = self._usage(turn, request)
        return [
            self._sse(self._response([{"text": p}], usage, None)) for p in _pieces(turn.text, size)
        ]

    def _whole(self, turn: Turn, request: RecordedRequest) -> dict[str, Any]:
        parts: list[dict[str, Any]] = [{"text": turn.text}] if turn.text else []
        parts += [self._call_part(n, a) for n, a in turn.calls]
        return self._response(parts or [{"text": ""}], self._usage(turn, request), turn)


_ANTHROPIC_STOP = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}
_ANTHROPIC_ERRORS = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def thinking_signature(thinking: str) -> str:
    """The signature :class:`FakeAnthropicServer` gives a thinking block (and checks when the
    block comes back in a later request)."""
    return "sig_" + hashlib.sha256(thinking.encode()).hexdigest()[:32]


class FakeAnthropicServer(_FakeServer):
    """A fake Anthropic Messages API: ``POST /v1/messages``, streamed and whole.

    Streams are the API's named events: ``message_start``, a ``ping``, each content block
    (a signed ``thinking`` block when the reply has ``thinking``, the text, each ``tool_use``
    with its input as ``input_json_delta`` fragments), ``message_delta`` with the stop reason
    and usage, ``message_stop``. Like the real API it refuses (400) a request without
    ``max_tokens`` or ``anthropic-version``, and a thinking block sent back with a signature
    that is not the one it gave. With ``cache_control`` on the system prompt or the tools, the
    prefix up to the last breakpoint is "cached": the first request reports it as
    ``cache_creation_input_tokens``, later ones with the same prefix as
    ``cache_read_input_tokens``. With ``api_key`` set, requests without a matching
    ``x-api-key`` header get a 401 ``authentication_error``.
    """

    _label = "FakeAnthropicServer"

    def __init__(
        self,
        script: Script = (),
        *,
        chunk_size: int = 8,
        api_key: str | None = None,
        model: str = "claude-fake-1",
    ) -> None:
        super().__init__(script, chunk_size=chunk_size, api_key=api_key)
        self.model = model
        self._messages = 0
        self._cached: set[str] = set()

    def __enter__(self) -> FakeAnthropicServer:
        self.start()
        return self

    @property
    def base_url(self) -> str:
        """The URL to configure as the Anthropic base URL (clients add ``/v1/messages``)."""
        return self.origin

    def _authorised(self, request: RecordedRequest) -> bool:
        return request.headers.get("x-api-key") == self.api_key

    def _error_body(self, error: Status) -> dict[str, Any]:
        return {
            "type": "error",
            "error": {
                "type": _ANTHROPIC_ERRORS.get(error.code, "api_error"),
                "message": error.message or f"The server returned status {error.code}.",
            },
            "request_id": "req_fake",
        }

    def _error_event(self, fault: ErrorEvent) -> bytes:
        payload = {"type": "error", "error": {"type": fault.kind, "message": fault.message}}
        return self._named(payload)

    def _route(self, handler: BaseHTTPRequestHandler, request: RecordedRequest) -> None:
        if not request.path.endswith("/v1/messages"):
            self._send_error(handler, Status(404, message=f"Unknown path {request.path}"))
            return
        problem = self._problem(request)
        if problem is not None:
            self._send_error(handler, Status(400, message=problem))
            return
        self._answer(handler, request)

    @staticmethod
    def _problem(request: RecordedRequest) -> str | None:
        """What the real API would refuse in this request (the checks it is known for)."""
        if not request.headers.get("anthropic-version"):
            return "anthropic-version: header is required"
        body = request.body if isinstance(request.body, dict) else {}
        if not isinstance(body.get("max_tokens"), int):
            return "max_tokens: Field required"
        for i, message in enumerate(body.get("messages") or ()):
            content = message.get("content") if isinstance(message, dict) else None
            for j, block in enumerate(content if isinstance(content, list) else ()):
                if not isinstance(block, dict) or block.get("type") != "thinking":
                    continue
                if block.get("signature") != thinking_signature(str(block.get("thinking"))):
                    return f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block"
        return None

    def _ids(self) -> tuple[str, int]:
        with self._lock:
            self._messages += 1
            return f"msg_fake{self._messages}", self._messages

    def _usage(self, turn: Turn, request: RecordedRequest) -> dict[str, int]:
        body = request.body or {}
        prompt = _tokens([body.get("system"), body.get("tools"), body.get("messages")])
        cached = self._cached_prefix(body)
        usage = {
            "input_tokens": prompt,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": _tokens([turn.thinking, turn.text, [list(c) for c in turn.calls]]),
        }
        if cached is not None:
            key, size = cached
            with self._lock:
                hit = key in self._cached
                self._cached.add(key)
            usage["cache_read_input_tokens" if hit else "cache_creation_input_tokens"] = size
            usage["input_tokens"] = max(1, prompt - size)
        return usage

    @staticmethod
    def _cached_prefix(body: Mapping[str, Any]) -> tuple[str, int] | None:
        """The prefix up to the last ``cache_control`` (tools, then system): key and size."""
        tools = body.get("tools") or []
        system = body.get("system")
        blocks = system if isinstance(system, list) else []
        prefix: list[Any] = []
        found = False
        for item in [*tools, *blocks]:
            prefix.append(item)
            if isinstance(item, dict) and item.get("cache_control"):
                found = True
                marked = list(prefix)
        if not found:
            return None
        text = json.dumps(marked, sort_keys=True)
        return text, _tokens(marked)

    def _message(self, ident: str, turn: Turn, request: RecordedRequest) -> dict[str, Any]:
        return {
            "id": ident,
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": self._usage(turn, request),
        }

    def _blocks(self, turn: Turn, number: int) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = []
        if turn.thinking:
            signature = thinking_signature(turn.thinking)
            blocks.append({"type": "thinking", "thinking": turn.thinking, "signature": signature})
        if turn.text:
            blocks.append({"type": "text", "text": turn.text})
        for index, (name, arguments) in enumerate(turn.calls):
            blocks.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_fake{number}_{index}",
                    "name": name,
                    "input": arguments,  # a mapping, or raw JSON text (streams only)
                }
            )
        return blocks

    @staticmethod
    def _stop_reason(turn: Turn) -> str:
        return _ANTHROPIC_STOP.get(turn.finish, turn.finish)

    def _named(self, payload: Mapping[str, Any]) -> bytes:
        return b"event: %s\n" % str(payload["type"]).encode() + self._sse(payload)

    def _events(self, turn: Turn, request: RecordedRequest, size: int) -> list[bytes]:
        ident, number = self._ids()
        message = self._message(ident, turn, request)
        usage = message["usage"]
        message["usage"] = {**usage, "output_tokens": 1}
        events: list[dict[str, Any]] = [
            {"type": "message_start", "message": message},
            {"type": "ping"},
        ]
        for index, block in enumerate(self._blocks(turn, number)):
            events.extend(self._block_events(index, block, size))
        events.append(
            {
                "type": "message_delta",
                "delta": {"stop_reason": self._stop_reason(turn), "stop_sequence": None},
                "usage": {"output_tokens": usage["output_tokens"]},
            }
        )
        events.append({"type": "message_stop"})
        return [self._named(e) for e in events]

    @staticmethod
    def _block_events(index: int, block: dict[str, Any], size: int) -> list[dict[str, Any]]:
        kind = block["type"]
        deltas: list[dict[str, Any]]
        start: dict[str, Any]
        if kind == "thinking":
            start = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [
                {"type": "thinking_delta", "thinking": p} for p in _pieces(block["thinking"], size)
            ]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif kind == "text":
            start = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in _pieces(block["text"], size)]
        else:
            start = {**block, "input": {}}
            arguments = _arguments_text(block["input"])
            deltas = [{"type": "input_json_delta", "partial_json": ""}]
            deltas += [
                {"type": "input_json_delta", "partial_json": p} for p in _pieces(arguments, size)
            ]
        return [
            {"type": "content_block_start", "index": index, "content_block": start},
            *({"type": "content_block_delta", "index": index, "delta": d} for d in deltas),
            {"type": "content_block_stop", "index": index},
        ]

    def _endless_head(self, turn: Turn, request: RecordedRequest) -> bytes:
        ident, _ = self._ids()
        start = {"type": "text", "text": ""}
        head: list[dict[str, Any]] = [
            {"type": "message_start", "message": self._message(ident, turn, request)},
            {"type": "content_block_start", "index": 0, "content_block": start},
        ]
        return b"".join(self._named(e) for e in head)

    def _deltas(self, turn: Turn, request: RecordedRequest, size: int) -> list[bytes]:
        return [
            self._named(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": p},
                }
            )
            for p in _pieces(turn.text, size)
        ]

    def _whole(self, turn: Turn, request: RecordedRequest) -> dict[str, Any]:
        ident, number = self._ids()
        blocks = self._blocks(turn, number)
        for block in blocks:
            if block["type"] == "tool_use" and isinstance(block["input"], str):
                try:
                    block["input"] = json.loads(block["input"])
                except ValueError:
                    raise ValueError(
                        f"the arguments of {block['name']!r} are not valid JSON; a whole "
                        "Anthropic message holds each input as an object, so broken arguments "
                        "can only be scripted for streams"
                    ) from None
        message = self._message(ident, turn, request)
        message.update(content=blocks, stop_reason=self._stop_reason(turn))
        return message
