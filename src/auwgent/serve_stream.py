"""The event buffer of one ``auwgent serve`` response: what waits between a run, which writes
events as fast as the model answers, and a client that may read slower or not at all.

The buffer holds at most ``limit`` bytes of encoded events (``--stream-buffer``, default
:data:`DEFAULT_STREAM_BUFFER`), counting the part of the event being sent that the server has
not handed to the socket yet. The policy (docs/serve.md, "Slow and gone clients"):

- **Partial events are coalesced** while they wait (behind a slow client, or made together
  from one read of the model's stream): a new partial of the same intent (same
  agent, name and segment, with no final event between them) replaces the waiting one, and
  the ``delta`` texts of the two are joined, so a client that adds deltas up still gets every
  character; a partial that carries its whole snapshot instead keeps only the latest.
- **Partial events are dropped** when they do not fit: a new partial that would not fit
  merged into the waiting one is dropped (the waiting one stays); a partial or a final event
  that does not fit first drops every waiting partial. An intent whose partial was dropped
  gets no more partials until its final event, so the deltas a client adds up stay a prefix
  of the text, never a text with a hole.
- **Final events are never dropped.** When a final event does not fit even after every
  partial is gone, the stream fails closed: what waits is discarded, one ``error`` event
  (``"code": "slow_client"``) ends the stream, and the run goes on to save its session.
- The limit applies while the response is held up by its client (an event is being sent);
  a response waiting for events takes any event, of any size (a client that keeps up gets
  it at once), so one connection holds at most the limit plus one event.

A client that goes away detaches the buffer: the run goes on and is saved, and its events
are discarded as they come, never kept.

The events wait as serve's own Server-Sent Events (their sizes are counted so); a buffer given
an :class:`Encoder` (a UI stream, :mod:`auwgent.serve_ui`) hands each one to it as it is sent,
in order, and its output is what the response carries, then the encoder's end.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import deque
from collections.abc import AsyncIterator, Mapping
from typing import Any, Protocol

from auwgent._records import field, record

__all__ = ["DEFAULT_STREAM_BUFFER", "Encoder", "EventBuffer", "encode"]

log = logging.getLogger("auwgent")

#: The bytes of events one response may hold for a client that falls behind.
DEFAULT_STREAM_BUFFER = 16 * 1024 * 1024
#: Events are handed to the server in pieces of at most this many bytes, so the socket's own
#: buffer never holds much more than one piece beyond what is counted here.
PIECE = 64 * 1024

_Key = tuple[Any, Any, Any]  # a partial's (agent, name, segment)


def encode(name: str, data: Any) -> bytes:
    """One Server-Sent Event: ``event: name``, its data as JSON."""
    text = json.dumps(data, ensure_ascii=False, default=str)
    return f"event: {name}\ndata: {text}\n\n".encode()


class Encoder(Protocol):
    """A response's own encoding of the events, fed in the order they are sent; ``headers``
    go on the response."""

    headers: Mapping[str, str]

    def partial(self, data: Mapping[str, Any]) -> bytes: ...

    def intent(self, name: Any, value: Any, agent: Any) -> bytes: ...

    def event(self, name: str, data: Any) -> bytes: ...

    def end(self) -> bytes: ...


@record(frozen=False)
class _Final:
    data: bytes
    ends: tuple[Any, Any] | None  # the (agent, name) whose partials this final intent ends
    name: str = ""
    value: Any = None  # the intent's or the event's payload
    intent: bool = False

    @property
    def size(self) -> int:
        return len(self.data)

    def encoded(self) -> bytes:
        return self.data

    def translated(self, encoder: Encoder) -> bytes:
        if self.intent and self.ends is not None:
            return encoder.intent(self.name, self.value, self.ends[0])
        return encoder.event(self.name, self.value)


@record(frozen=False)
class _Partial:
    """The waiting partials of one intent, coalesced: the latest one, and the deltas of the
    ones before it."""

    key: _Key
    latest: Mapping[str, Any]
    latest_bytes: bytes
    before: list[str] = field(default_factory=list)
    before_bytes: int = 0

    @property
    def size(self) -> int:
        return len(self.latest_bytes) + self.before_bytes

    def merged_size(self, data_bytes: bytes) -> int:
        """The size once a partial encoded as ``data_bytes`` is merged in."""
        delta = _delta(self.latest)
        return len(data_bytes) + self.before_bytes + (0 if delta is None else len(delta.encode()))

    def merge(self, data: Mapping[str, Any], data_bytes: bytes) -> None:
        delta = _delta(self.latest)
        if delta is not None:
            self.before.append(delta)
            self.before_bytes += len(delta.encode())
        self.latest, self.latest_bytes = data, data_bytes

    def merged(self) -> Mapping[str, Any]:
        """The waiting partials as one: the latest, with every delta joined."""
        if not self.before:
            return self.latest
        delta = "".join(self.before) + (_delta(self.latest) or "")
        return {**self.latest, "value": {**self.latest["value"], "delta": delta}}

    def encoded(self) -> bytes:
        return self.latest_bytes if not self.before else encode("partial", self.merged())

    def translated(self, encoder: Encoder) -> bytes:
        return encoder.partial(self.merged())


def _delta(data: Mapping[str, Any]) -> str | None:
    value = data.get("value")
    delta = value.get("delta") if isinstance(value, Mapping) else None
    return delta if isinstance(delta, str) else None


def _key(data: Mapping[str, Any]) -> _Key:
    value = data.get("value")
    segment = value.get("segment") if isinstance(value, Mapping) else None
    return (data.get("agent"), data.get("name"), segment)


class EventBuffer:
    """The events waiting for one response (see the module's docstring for the policy)."""

    def __init__(self, limit: int = DEFAULT_STREAM_BUFFER, encoder: Encoder | None = None) -> None:
        self.limit = limit
        self.encoder = encoder
        self._waiting: deque[_Final | _Partial] = deque()
        self._tail: dict[_Key, _Partial] = {}  # the waiting partials after the last final
        self._queued = 0  # bytes in _waiting
        self._in_flight = 0  # bytes of the event being sent, not yet handed to the server
        self._dropped: set[_Key] = set()  # intents whose partials stop until their final
        self._ready = asyncio.Event()
        self._closed = False  # no more events: the run ended, the stream failed or the client left

    @property
    def held(self) -> int:
        """The bytes this buffer holds now."""
        return self._queued + self._in_flight

    def put_event(self, name: str, data: Any, *, sent: Any = None) -> None:
        """A final event that is not an intent (``session``, ``error``); ``sent``, when given,
        is what the stream's own dialect sends in place of ``data`` (an encoder reads
        ``data``)."""
        self._final(_Final(encode(name, data if sent is None else sent), None, name, data))

    def put_intent(self, name: str, value: Any, agent: Any) -> None:
        """A final intent of ``agent``: its event, which also ends its partials' drop."""
        self._final(_Final(encode(name, value), (agent, name), name, value, intent=True))

    def put_partial(self, data: Mapping[str, Any]) -> None:
        """A partial event's data (``{"name", "value", "agent"}``): coalesced or dropped."""
        if self._closed:
            return
        key = _key(data)
        if key in self._dropped:
            return
        data_bytes = encode("partial", data)
        waiting = self._tail.get(key)
        if waiting is not None:
            grown = waiting.merged_size(data_bytes) - waiting.size
            if self._in_flight and self.held + grown > self.limit:
                self._dropped.add(key)  # the waiting one stays: the text so far, a prefix
                return
            waiting.merge(data, data_bytes)
            self._queued += grown
            return
        if not self._fits(len(data_bytes)):
            self._drop_partials()
        if not self._fits(len(data_bytes)):
            self._dropped.add(key)
            return
        waiting = self._tail[key] = _Partial(key, data, data_bytes)
        self._waiting.append(waiting)
        self._queued += waiting.size
        self._ready.set()

    def close(self) -> None:
        """The run is over: the stream ends once what waits is sent."""
        self._closed = True
        self._ready.set()

    def detach(self) -> None:
        """The client is gone: what waits is discarded, and so is every later event."""
        self._closed = True
        self._waiting.clear()
        self._tail.clear()
        self._queued = 0
        self._ready.set()

    async def events(self) -> AsyncIterator[bytes]:
        """The response body: each event in pieces of at most :data:`PIECE` bytes."""
        while True:
            while not self._waiting:
                if self._closed:
                    if self.encoder is not None:
                        yield self.encoder.end()
                    return
                self._ready.clear()
                await self._ready.wait()
            entry = self._waiting.popleft()
            self._queued -= entry.size
            if isinstance(entry, _Partial) and self._tail.get(entry.key) is entry:
                del self._tail[entry.key]
            data = entry.encoded() if self.encoder is None else entry.translated(self.encoder)
            self._in_flight = len(data)
            for start in range(0, len(data), PIECE):
                yield data[start : start + PIECE]
                self._in_flight -= min(PIECE, len(data) - start)
            self._in_flight = 0

    # -- the policy --------------------------------------------------------------------------

    def _final(self, entry: _Final) -> None:
        if self._closed:
            return
        if not self._fits(entry.size):
            self._drop_partials()
        if not self._fits(entry.size):
            self._overflow()
            return
        if entry.ends is not None:
            self._end_partials(entry.ends)
        self._waiting.append(entry)
        self._tail.clear()  # no partial is merged across a final event
        self._queued += entry.size
        self._ready.set()

    def _fits(self, size: int) -> bool:
        """Whether an event of ``size`` bytes may wait: always while the response is not held
        up by the client (nothing is being sent), else within the limit."""
        return self._in_flight == 0 or self.held + size <= self.limit

    def _end_partials(self, ends: tuple[Any, Any]) -> None:
        self._dropped = {key for key in self._dropped if key[:2] != ends}

    def _drop_partials(self) -> None:
        """Every waiting partial goes; those whose final is not waiting after them stop."""
        ended: set[tuple[Any, Any]] = set()
        kept: deque[_Final | _Partial] = deque()
        for entry in reversed(self._waiting):
            if isinstance(entry, _Final):
                kept.appendleft(entry)
                if entry.ends is not None:
                    ended.add(entry.ends)
                continue
            self._queued -= entry.size
            if entry.key[:2] not in ended:
                self._dropped.add(entry.key)
        self._waiting = kept
        self._tail.clear()

    def _overflow(self) -> None:
        """A final event does not fit: the stream ends with an error (the run goes on)."""
        log.warning("auwgent serve: a client fell behind by %d bytes; its stream ends", self.limit)
        message = (
            f"the client read too slowly: more than {self.limit} bytes of events were waiting "
            "(--stream-buffer); the stream ends here, the run goes on and saves its session"
        )
        payload = {"message": message, "code": "slow_client"}
        error = _Final(encode("error", payload), None, "error", payload)
        self._waiting = deque([error])
        self._tail.clear()
        self._queued = error.size
        self._closed = True
        self._ready.set()
