"""HTTP plumbing shared by the provider adapters: retries, timeouts, SSE, error bodies.

Every provider sends through :func:`open_response`, which owns the retry loop:

* 429 (honouring ``Retry-After`` in seconds or as an HTTP date, capped by ``max_delay``),
  5xx, connection errors and timeouts before the response headers are retried with
  exponential backoff and full jitter;
* other 4xx fail at once;
* a connection that breaks off before the response has produced a single event (dropped
  right after the headers) is a failed connection too: :func:`retry_unstarted` opens the
  request again;
* once an event has been produced, nothing is retried (it may already have reached the
  engine); a body that stalls longer than ``Timeouts.idle`` or breaks off is a
  :class:`~auwgent.errors.ProviderError`.

Every call is bounded, whatever the server does: one :class:`Call` carries the settings of a
model request (or an embedding request) across all its attempts, with a deadline
``Timeouts.call`` seconds after it starts, and the size caps of :class:`Limits` on one event
and on one response body. Reaching any of them ends the call with a ``ProviderError`` that
names the limit and its config key.

Errors name the provider, the HTTP status and the provider's own message. The API key is
redacted from anything that could reach a message.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import math
import random
import re
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import httpx

from auwgent.errors import ProviderError
from auwgent.runtime.policy import Limits, RetryPolicy, Timeouts
from auwgent.runtime.providers.wire import transport_errors

if TYPE_CHECKING:
    import asyncio

    from auwgent.runtime.providers.wire import Reply, Wire

# httpx and asyncio are imported inside the functions that need them at run time, and the
# config parser finds RetryPolicy, Timeouts and Limits in the small ``policy`` module: importing
# generated bindings (and building an agent) stays fast; this module is loaded on the first run.

__all__ = [
    "Call",
    "Limits",
    "RetryPolicy",
    "StreamInterrupted",
    "Timeouts",
    "error_in_body",
    "error_message",
    "is_event_stream",
    "iter_sse",
    "open_response",
    "parse_json_chunk",
    "parse_retry_after",
    "read_json",
    "retry_delay",
    "retry_info_delay",
    "retry_unstarted",
]

T = TypeVar("T")


class Call:
    """One provider call across all its attempts: who answers, how to retry, its bounds.

    The deadline (on the monotonic clock) is fixed when the call is made; every wait of the
    call (for headers, for body pieces, between attempts) ends at it at the latest.
    """

    __slots__ = (
        "deadline",
        "limits",
        "provider",
        "retry",
        "secret",
        "timeouts",
        "watchdog",
        "whole",
    )

    def __init__(
        self,
        provider: str,
        *,
        retry: RetryPolicy | None = None,
        timeouts: Timeouts | None = None,
        limits: Limits | None = None,
        secret: str | None = None,
        whole: bool = False,
    ) -> None:
        self.provider = provider
        # A model call answered in one piece (not streamed): the server sends its headers
        # only once the whole answer is written, so ``first_byte`` does not bound that wait;
        # the call's deadline does.
        self.whole = whole
        self.watchdog: _Watchdog | None = None  # the timer of the attempt under way
        self.retry = retry or RetryPolicy()
        self.timeouts = timeouts or Timeouts()
        self.limits = limits or Limits()
        self.secret = secret
        self.deadline = time.monotonic() + self.timeouts.call

    def remaining(self) -> float:
        """Seconds left before the deadline (never negative)."""
        return max(0.0, self.deadline - time.monotonic())

    def past_deadline(self) -> ProviderError:
        """The error that ends a call at its deadline."""
        return ProviderError(
            self.provider,
            f"the call took longer than {self.timeouts.call:g}s (timeouts.call)",
        )

    def too_large(self, what: str, limit: int, key: str) -> ProviderError:
        """The error that ends a call whose answer passes a size cap."""
        return ProviderError(
            self.provider, f"{what} is larger than the limit of {limit} bytes ({key})"
        )


def parse_retry_after(value: str | None, *, now: float | None = None) -> float | None:
    """Seconds to wait according to a ``Retry-After`` header (delta-seconds or HTTP date)."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def retry_delay(
    policy: RetryPolicy,
    retry_number: int,
    retry_after: float | None = None,
    *,
    rng: Callable[[float, float], float] | None = None,
) -> float:
    """The wait before retry ``retry_number`` (1 for the first retry).

    ``rng(low, high)`` draws the jittered wait (default: ``random.uniform``).
    """
    if retry_after is not None:
        return min(retry_after, policy.max_delay)
    ceiling: float = min(policy.max_delay, policy.base_delay * 2.0 ** (retry_number - 1))
    if not policy.jitter:
        return ceiling
    if rng is not None:
        return rng(0.0, ceiling)
    return random.uniform(0.0, ceiling)


def error_message(body: bytes, *, fallback: str) -> str:
    """The provider's own message from an error body.

    Understands OpenAI's ``{"error": {"message": ...}}``, Gemini's
    ``{"error": {"code", "message", "status"}}`` (also as a one-element list) and the
    ``{"message"}`` / ``{"detail"}`` bodies of some compatible servers, and falls back to a
    short excerpt of the body.
    """
    try:
        payload: Any = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        excerpt = body[:300].decode("utf-8", "replace").strip()
        return excerpt or fallback
    return _message_in(payload, fallback)


def _message_in(payload: Any, fallback: str) -> str:
    """:func:`error_message` for a body already decoded."""
    if isinstance(payload, list) and payload:
        payload = payload[0]
    error = payload.get("error") if isinstance(payload, dict) else None
    if isinstance(error, dict):
        message = error.get("message")
        status = error.get("status")
        if isinstance(message, str) and message:
            return f"{message} [{status}]" if isinstance(status, str) and status else message
    if isinstance(error, str) and error:
        return error
    # Some OpenAI-compatible servers answer {"message": ...} or FastAPI's {"detail": ...}.
    for key in ("message", "detail"):
        value = payload.get(key) if isinstance(payload, dict) else None
        if isinstance(value, str) and value:
            return value
    return fallback


def error_in_body(payload: Any, provider: str) -> ProviderError | None:
    """The error an API reported inside a 200 body or a stream event, if there is one."""
    if not isinstance(payload, dict) or "error" not in payload:
        return None
    error = payload["error"]
    code = error.get("code") if isinstance(error, dict) else None
    message = _message_in(payload, "error event in the response")
    status = code if isinstance(code, int) and not isinstance(code, bool) else None
    return ProviderError(provider, message, status=status)


def _retry_after(headers: Mapping[str, str]) -> float | None:
    # OpenAI also sends the wait in milliseconds; it is more precise than whole seconds.
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    return parse_retry_after(headers.get("retry-after"))


def _redact(text: str, secret: str | None) -> str:
    """``text`` with every whole occurrence of the API key replaced by ``***``.

    Only keys of 8 or more characters are looked for (a short test key such as ``"k"`` would
    mangle every word it occurs in), and only where the key stands alone, not inside a longer
    run of key characters.
    """
    if not secret or len(secret) < 8 or secret not in text:
        return text
    pattern = rf"(?<![A-Za-z0-9_\-]){re.escape(secret)}(?![A-Za-z0-9_\-])"
    return re.sub(pattern, "***", text)


def _is_retryable(status: int) -> bool:
    return status == 429 or status >= 500


async def _send_once(wire: Wire, request: Any, call: Call, watchdog: _Watchdog) -> Reply:

    first_byte = call.timeouts.first_byte
    wait = call.remaining() if call.whole else min(first_byte, call.remaining())
    watchdog.arm(wait)
    try:
        return await wire.send(request)
    except asyncio.CancelledError:
        if not watchdog.settle():
            raise
        if call.whole or wait < first_byte:
            raise call.past_deadline() from None
        raise httpx.ReadTimeout("no response before the first-byte timeout") from None
    finally:
        watchdog.disarm()


async def _failure_of(response: Reply, call: Call) -> tuple[ProviderError, float | None]:
    """The error a failed response stands for, and the wait its body asks for (if any)."""
    try:
        body = await response.aread()
    except transport_errors():
        body = b""
    finally:
        await response.aclose()
    message = error_message(body, fallback=response.reason_phrase or "request failed")
    failure = ProviderError(
        call.provider,
        _redact(message, call.secret),
        status=response.status_code,
        retryable=_is_retryable(response.status_code),
    )
    return failure, retry_info_delay(body)


def retry_info_delay(body: bytes) -> float | None:
    """The wait in a Google ``google.rpc.RetryInfo`` error detail (``"retryDelay": "34.4s"``).

    Gemini answers 429 with this in the body and no ``Retry-After`` header; it is honoured
    the same way.
    """
    if b"RetryInfo" not in body:
        return None
    try:
        payload: Any = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    if isinstance(payload, list) and payload:
        payload = payload[0]
    error = payload.get("error") if isinstance(payload, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    for detail in details if isinstance(details, list) else ():
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("RetryInfo"):
            delay = detail.get("retryDelay")
            if isinstance(delay, str) and delay.endswith("s"):
                try:
                    return max(0.0, float(delay[:-1]))
                except ValueError:
                    return None
    return None


def _gave_up(failure: ProviderError, attempts: int, why: str = "") -> ProviderError:
    """``failure`` as the final error of a call that made ``attempts`` tries."""
    if attempts == 1 and not why:
        return failure
    return ProviderError(
        failure.provider,
        f"{failure.provider_message} (gave up after {attempts} attempts{why})",
        status=failure.status,
        retryable=True,
    )


def _no_time_for(call: Call, delay: float) -> str:
    """Why a retry after ``delay`` seconds is not made, or ``""`` when it fits the deadline."""
    if delay < call.remaining():
        return ""
    return f": the next would pass the deadline of {call.timeouts.call:g}s (timeouts.call)"


@asynccontextmanager
async def open_response(
    wire: Wire,
    request: Any,
    call: Call,
    *,
    sleep: Callable[[float], Awaitable[None]] | None = None,
) -> AsyncIterator[Reply]:
    """Send ``request`` (prepared by ``wire``) with the retries of ``call`` and yield the
    successful response.

    The body is unread; the response is closed when the block exits. Raises
    :class:`ProviderError` once the attempts are spent, on a non-retryable status, or when
    the call's deadline comes first. ``sleep`` (``asyncio.sleep`` by default) waits between
    attempts.
    """

    if sleep is None:
        sleep = asyncio.sleep
    failed_to_send = transport_errors()
    retry = call.retry
    failure: ProviderError | None = None
    # One timer for every wait of the attempts and of the body (see _Watchdog).
    watchdog = call.watchdog = _Watchdog(call.timeouts.piece)
    try:
        for attempt in range(1, retry.attempts + 1):
            retry_after: float | None = None
            try:
                response = await _send_once(wire, request, call, watchdog)
            except failed_to_send as exc:
                detail = _redact(f"{type(exc).__name__}: {exc}".rstrip(": "), call.secret)
                failure = ProviderError(call.provider, f"request failed ({detail})", retryable=True)
            else:
                if response.status_code < 400:
                    try:
                        yield response
                    finally:
                        await response.aclose()
                    return
                retry_after = _retry_after(response.headers)
                failure, hinted = await _failure_of(response, call)
                retry_after = hinted if retry_after is None else retry_after
                if not failure.retryable:
                    raise failure
            if attempt < retry.attempts:
                delay = retry_delay(retry, attempt, retry_after)
                why = _no_time_for(call, delay)
                if why:
                    raise _gave_up(failure, attempt, why)
                await sleep(delay)
        assert failure is not None
        raise _gave_up(failure, retry.attempts)
    finally:
        call.watchdog = None
        watchdog.close()


class StreamInterrupted(ProviderError):
    """The connection broke off before the body was complete."""


def retry_unstarted(
    attempt: Callable[[], AsyncIterator[T]],
    call: Call,
    *,
    sleep: Callable[[float], Awaitable[None]] | None = None,
) -> AsyncIterator[T]:
    """Yield the items of ``attempt()``; when its connection breaks off before it yielded
    anything, wait as for a failed connection and call it again (up to ``call.retry.attempts``
    calls, within the call's deadline). Once an item is out, errors pass through unchanged:
    the caller may already have acted on it. Other failures pass through too
    (``open_response`` has retried them)."""
    return _RetryUnstarted(attempt, call, sleep)


class _RetryUnstarted(AsyncIterator[T]):
    """:func:`retry_unstarted` as an iterator that steps aside once the first item is out.

    An async generator wrapping the attempt would add a resumption to every event of the
    stream; after the first item this hands out the attempt's own ``__anext__`` instead.
    """

    def __init__(
        self,
        attempt: Callable[[], AsyncIterator[T]],
        call: Call,
        sleep: Callable[[float], Awaitable[None]] | None,
    ) -> None:
        self._attempt = attempt
        self._call = call
        self._sleep = sleep
        self._current: AsyncIterator[T] | None = None
        self._started = False

    def __aiter__(self) -> AsyncIterator[T]:
        return self

    def __anext__(self) -> Awaitable[T]:
        if self._started:
            assert self._current is not None
            return self._current.__anext__()
        return self._first()

    async def _first(self) -> T:
        retry = self._call.retry
        for number in range(1, retry.attempts + 1):
            self._current = self._attempt()
            try:
                item = await self._current.__anext__()
            except StreamInterrupted as failure:
                if number == retry.attempts:
                    raise _gave_up(failure, number) from None
                delay = retry_delay(retry, number)
                why = _no_time_for(self._call, delay)
                if why:
                    raise _gave_up(failure, number, why) from None
            else:
                self._started = True
                return item
            await (self._sleep or asyncio.sleep)(delay)
        raise AssertionError("unreachable")  # pragma: no cover - the last attempt re-raises

    async def aclose(self) -> None:
        """Close the current attempt (as closing an async generator would)."""
        current = self._current
        if current is not None and hasattr(current, "aclose"):
            await current.aclose()


class _Watchdog:
    """Cancels the reading task when one wait for the network lasts longer than its limit.

    One per :func:`open_response`, for the response headers of every attempt and every piece
    of the body. A fresh timer per wait (``asyncio.timeout``) costs more than the parsing; this
    one timer is re-armed by writing a deadline, and only reschedules itself when it fires
    early. It is armed only while the task awaits the network, never while the consumer of
    the stream runs (same task, between two pieces).
    """

    def __init__(self, tick: float) -> None:
        loop = self._loop = asyncio.get_running_loop()
        # asyncio's own loops keep time with time.monotonic: read it directly (loop.time() is
        # one more Python call per wait).
        self._clock = time.monotonic if type(loop).time is asyncio.BaseEventLoop.time else loop.time
        self._task = asyncio.current_task()
        self._deadline: float | None = None
        self._handle: asyncio.TimerHandle | None = None
        self._due = math.inf  # when the timer fires (no timer: never)
        # The timer first fires no later than ``tick`` seconds out (the per-piece limit of a
        # body), so that the waits after the first (each piece of the body) find it due before
        # their own deadline and keep it: one timer per call, not one per wait. (Every new
        # timer is also a push into the event loop's heap, and the cancelled ones stay there.)
        self._tick = tick
        self.fired = False

    def arm(self, seconds: float) -> None:
        now = self._clock()
        deadline = self._deadline = now + seconds
        if deadline < self._due:  # no timer, or one that would fire too late for this limit
            if self._handle is not None:
                self._handle.cancel()
            self._due = min(deadline, now + self._tick)
            self._handle = self._loop.call_at(self._due, self._check)

    def disarm(self) -> None:
        self._deadline = None

    def _check(self) -> None:
        self._handle = None
        self._due = math.inf
        if self._deadline is None or self._task is None:
            return
        if self._clock() >= self._deadline:
            self.fired = True
            self._task.cancel()
        else:
            self._due = self._deadline
            self._handle = self._loop.call_at(self._due, self._check)

    def settle(self) -> bool:
        """After a ``CancelledError``: whether the watchdog caused it (then it is taken back,
        to be replaced by a timeout error; any other cancellation passes through)."""
        if not self.fired:
            return False
        self.fired = False
        if sys.version_info >= (3, 11) and self._task is not None:
            self._task.uncancel()  # leave no cancellation pending
        return True

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
            self._due = math.inf


class _Body:
    """The body of a response, read piece by piece within the bounds of its call.

    ``read()`` fails with ``ProviderError`` on silence longer than ``idle`` (the first piece
    may take up to ``first_byte`` instead: a model that thinks before it answers sends its
    headers at once and its first data much later), at the call's deadline, and when the body
    passes ``limits.response_bytes``. A plain method rather than an async generator, so the
    SSE parser reads it without one more resumption per piece.
    """

    def __init__(self, response: Reply, call: Call) -> None:

        # Looked up once here: an import statement in read() would run for every piece.
        self._cancelled: type[BaseException] = asyncio.CancelledError
        self._http_error = transport_errors()
        self._response = response
        self._stream = response.aiter_bytes().__aiter__()
        self._call = call
        self._idle = call.timeouts.idle
        self._limit = call.timeouts.piece
        self._left = call.limits.response_bytes
        self._own = call.watchdog is None  # read outside open_response: a timer of its own
        self._watchdog = _Watchdog(self._limit) if call.watchdog is None else call.watchdog

    async def read(self) -> bytes | None:
        """The next piece, or ``None`` at the end of the body."""
        call = self._call
        limit = self._limit
        remaining = call.deadline - time.monotonic()
        if remaining <= 0:
            raise call.past_deadline()
        at_deadline = remaining < limit
        watchdog = self._watchdog
        watchdog.arm(remaining if at_deadline else limit)
        try:
            chunk: bytes = await self._stream.__anext__()
        except StopAsyncIteration:
            # The connection goes back to the pool now, not once the caller is done with
            # the events (with many runs at once, held connections make the others wait).
            # The body is whole: a failure to close its connection loses nothing.
            with contextlib.suppress(*self._http_error):
                await self._response.aclose()
            return None
        except self._cancelled:
            if not watchdog.settle():
                raise
            if at_deadline:
                raise call.past_deadline() from None
            raise ProviderError(
                call.provider, f"stream stalled: no data for {limit:g}s (idle timeout)"
            ) from None
        except self._http_error as exc:
            raise StreamInterrupted(
                call.provider, f"stream interrupted ({type(exc).__name__}: {exc})"
            ) from None
        finally:
            watchdog.disarm()
            self._limit = self._idle
        self._left -= len(chunk)
        if self._left < 0:
            limits = call.limits
            raise call.too_large("the response", limits.response_bytes, "limits.responseBytes")
        return chunk

    def close(self) -> None:
        if self._own:
            self._watchdog.close()


def is_event_stream(response: Reply) -> bool:
    """Whether the response is really an SSE stream (a gateway may answer plain JSON)."""
    return "json" not in response.headers.get("content-type", "")


async def iter_sse(response: Reply, call: Call) -> AsyncIterator[str]:
    """The ``data`` payloads of a server-sent event stream, one string per event.

    Comments, ``event:``/``id:`` fields and keep-alives are skipped; multi-line ``data`` is
    joined with newlines as the SSE standard says. Linear in the bytes however long a line
    is: a line is joined once, when its end arrives. An event larger than
    ``limits.event_bytes`` ends the call; so does a body that ends before its first complete
    event, as a :class:`StreamInterrupted` (whatever the framing, a cut connection looks like
    that), so that the call is retried.
    """
    cap = call.limits.event_bytes
    events = _Events(call)
    pending: list[bytes] = []  # the start of a line whose end has not arrived
    waiting = 0  # their length
    body = _Body(response, call)
    try:
        while (chunk := await body.read()) is not None:
            if b"\n" not in chunk:
                pending.append(chunk)
                waiting += len(chunk)
                if events.size + waiting > cap:
                    raise _event_too_large(call)
                continue
            if pending:
                pending.append(chunk)
                chunk = b"".join(pending)
                pending = []
            *lines, tail = chunk.split(b"\n")
            if tail:
                pending.append(tail)
            waiting = len(tail)
            for event in events.complete(lines):
                yield event
            if events.size + waiting > cap:
                raise _event_too_large(call)
        last = b"".join(pending).strip()
        if last.startswith(b"data:"):
            # The last event without its blank line: kept, as servers that end abruptly
            # after a complete last line are common.
            value = last[5:]
            events.data.append((value[1:] if value.startswith(b" ") else value).decode("utf-8"))
    except UnicodeDecodeError as exc:
        # Caught around the loop (no cost per event) so the message names the provider.
        raise ProviderError(call.provider, f"malformed UTF-8 in the event stream ({exc})") from None
    finally:
        body.close()
    if not events.started:
        raise StreamInterrupted(call.provider, "the stream ended before its first event")
    if events.data:
        yield "\n".join(events.data)


class _Events:
    """The events of an SSE stream as its whole lines arrive (see :func:`iter_sse`)."""

    __slots__ = ("call", "cap", "data", "size", "started")

    def __init__(self, call: Call) -> None:
        self.call = call
        self.cap = call.limits.event_bytes
        self.data: list[str] = []  # the current event's data lines
        self.size = 0  # bytes of the current event's data lines, as received
        self.started = False  # an event was complete

    def complete(self, lines: list[bytes]) -> list[str]:
        """The events that ``lines`` (whole lines, without their ``\\n``) complete."""
        done: list[str] = []
        for raw in lines:
            line = raw.rstrip(b"\r")
            if not line:
                if self.data:
                    self.started = True
                    done.append("\n".join(self.data))
                    self.data = []
                    self.size = 0
            elif line.startswith(b"data:"):
                self.size += len(raw)  # as received, so a line counts the same while it arrives
                if self.size > self.cap:
                    raise _event_too_large(self.call)
                value = line[6:] if line.startswith(b"data: ") else line[5:]
                self.data.append(value.decode("utf-8"))
        return done


def _event_too_large(call: Call) -> ProviderError:
    limit = call.limits.event_bytes
    return call.too_large("an event of the stream", limit, "limits.eventBytes")


def parse_json_chunk(text: str | bytes, *, provider: str) -> Any:
    """Decode one JSON document from the provider, or raise ``ProviderError``."""
    try:
        return json.loads(text)
    except ValueError:
        excerpt = text[:120] if isinstance(text, str) else text[:120].decode("utf-8", "replace")
        raise ProviderError(provider, f"malformed JSON from the API: {excerpt!r}") from None


async def read_json(response: Reply, call: Call) -> Any:
    """Read a whole (non-streaming) JSON body within the bounds of ``call``.

    A body delimited by the closing of the connection (no length, not chunked) that does not
    parse may have been cut: that is a :class:`StreamInterrupted`, so that it is retried.
    """
    body = _Body(response, call)
    parts: list[bytes] = []
    try:
        while (chunk := await body.read()) is not None:
            parts.append(chunk)
    finally:
        body.close()
    try:
        return parse_json_chunk(b"".join(parts), provider=call.provider)
    except ProviderError as error:
        headers = response.headers
        if "content-length" in headers or "chunked" in headers.get("transfer-encoding", ""):
            raise
        raise StreamInterrupted(
            call.provider,
            f"the response ended before its JSON was complete ({error.provider_message})",
        ) from None
