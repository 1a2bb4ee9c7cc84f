"""How a provider request reaches the network: the agent's own connections, or a given httpx
client.

A provider prepares its request once (``prepare``) and :func:`~auwgent.runtime.providers.http.
open_response` sends it, again on every retry (``send``). What comes back is a :class:`Reply`:
the status, the headers (lower-case names), the reason phrase and the body piece by piece.

* :class:`PoolWire`, the agent's own when the config has no ``httpClient``: httpcore's
  HTTP/1.1 connections (the transport under httpx) spoken to directly. It does what the agent
  needs from HTTP and nothing else: no cookies, redirects, auth flows or request and response
  models rebuilt per request, which were a third of the CPU of a tool loop.
* :class:`HttpxWire`, around a given ``httpx.AsyncClient`` (the config's ``httpClient``, a
  cassette, a client with a mock transport), and the agent's own when the environment names
  a proxy (``HTTPS_PROXY`` and the like: httpx honours them and ``NO_PROXY``).

Both send the same bytes: the body as compact UTF-8 JSON with ``Content-Type:
application/json``. What either raises when sending fails, or reading a body, is in
:func:`transport_errors`.
"""

from __future__ import annotations

import urllib.request
import zlib
from collections.abc import AsyncIterator, Mapping
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, Protocol

import httpcore
import httpx

from auwgent._records import record
from auwgent._version import __version__

if TYPE_CHECKING:
    import asyncio
    import ssl

    import httpcore
    import httpx

    from auwgent.runtime.policy import Timeouts

#: The most requests the agent's own connections carry at once (httpx's default limit too).
CONNECTIONS = 100
#: Seconds an idle connection is kept for the next request (httpx's default too).
KEEPALIVE = 5.0

__all__ = ["HttpxWire", "PoolWire", "Reply", "Wire", "as_wire", "default_wire", "transport_errors"]


class Reply(Protocol):
    """A response whose body has not been read (an ``httpx.Response`` is one)."""

    @property
    def status_code(self) -> int: ...
    @property
    def headers(self) -> Mapping[str, str]: ...  # looked up by lower-case name
    @property
    def reason_phrase(self) -> str: ...
    def aiter_bytes(self) -> AsyncIterator[bytes]: ...
    async def aread(self) -> bytes: ...
    async def aclose(self) -> None: ...


class Wire(Protocol):
    """Sends prepared POST requests with a JSON body."""

    def timeout(self, timeouts: Timeouts, *, whole: bool) -> Any:
        """The transport's own timeouts: a backstop under the call's clocks."""

    def prepare(self, url: str, headers: Mapping[str, str], body: bytes, timeout: Any) -> Any:
        """A request that :meth:`send` may send as often as a call retries."""

    async def send(self, prepared: Any) -> Reply:
        """Send ``prepared``; the reply's body is still to be read."""

    async def aclose(self) -> None:
        """Close the connections the wire owns."""


def _backstop(timeouts: Timeouts, whole: bool) -> tuple[float, float]:
    """(connect, read) for the transport: one second past our own clocks (first byte and idle;
    for an answer that comes whole, the call's deadline)."""
    return timeouts.connect, (timeouts.call if whole else timeouts.piece) + 1.0


class HttpxWire:
    """A given ``httpx.AsyncClient``: its transport, proxies, event hooks and defaults apply."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client

    def timeout(self, timeouts: Timeouts, *, whole: bool) -> httpx.Timeout:
        connect, read = _backstop(timeouts, whole)
        return httpx.Timeout(connect=connect, read=read, write=read, pool=connect)

    def prepare(
        self, url: str, headers: Mapping[str, str], body: bytes, timeout: Any
    ) -> httpx.Request:
        return self.client.build_request(
            "POST",
            url,
            content=body,
            headers={**headers, "Content-Type": "application/json"},
            timeout=timeout,
        )

    async def send(self, prepared: Any) -> Reply:
        response: httpx.Response = await self.client.send(prepared, stream=True)
        return response

    @property
    def is_closed(self) -> bool:
        return self.client.is_closed

    async def aclose(self) -> None:
        await self.client.aclose()


class PoolWire:
    """The agent's own connections: httpcore's HTTP/1.1 connections, kept per origin.

    Up to :data:`CONNECTIONS` requests are in flight at once; more wait for one to finish (an
    ``asyncio.Semaphore``; the call's own clocks bound the wait). A connection whose response
    has been read and closed goes back to the idle list of its origin and is taken again by
    the next request there (the most recent first); one that expired (5 s idle) or that the
    server closed is dropped when it is taken. TLS as httpx sets it up (certifi, or
    ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``), made on the first HTTPS connection of the process.

    Why not ``httpcore.AsyncConnectionPool``: it looks over every connection and every
    waiting request whenever a request comes or goes, which made 200 runs at once cost twice
    as much CPU per run as one; and with httpx's limits it closes any connection that goes
    idle while it holds more than 20, so under load connections were reopened all the time.
    Here taking and giving back a connection costs the same however many there are.
    """

    # Sent with every request; the body's length and the provider's own headers follow.
    _HEADERS = (
        (b"Accept", b"application/json, text/event-stream"),
        # Bodies are read as they come (a compressed event stream would be held back).
        (b"Accept-Encoding", b"identity"),
        (b"Content-Type", b"application/json"),
        (b"User-Agent", f"auwgent/{__version__}".encode()),
    )

    def __init__(self) -> None:
        self.is_closed = False
        self._slots: asyncio.Semaphore | None = None  # made in the event loop, on first use
        self._idle: dict[_Origin, list[httpcore.AsyncHTTPConnection]] = {}
        self._open: set[httpcore.AsyncHTTPConnection] = set()  # idle or in use, for aclose
        self._urls: dict[str, _Target] = {}  # parsed once each

    def timeout(self, timeouts: Timeouts, *, whole: bool) -> dict[str, float]:
        connect, read = _backstop(timeouts, whole)
        return {"connect": connect, "read": read, "write": read}

    def prepare(
        self, url: str, headers: Mapping[str, str], body: bytes, timeout: Any
    ) -> tuple[httpcore.Request, _Target]:
        target = self._urls.get(url)
        if target is None:
            if len(self._urls) >= 256:
                self._urls.clear()
            target = self._urls[url] = _target(url)
        fields = [
            (b"Host", target.host),
            *self._HEADERS,
            (b"Content-Length", b"%d" % len(body)),
            *((name.encode("ascii"), value.encode("utf-8")) for name, value in headers.items()),
        ]
        request = httpcore.Request(
            b"POST", target.url, headers=fields, content=body, extensions={"timeout": timeout}
        )
        return request, target

    async def send(self, prepared: Any) -> Reply:
        if self.is_closed:
            raise RuntimeError("this connection pool has been closed")
        slots = self._slots
        if slots is None:
            import asyncio

            slots = self._slots = asyncio.Semaphore(CONNECTIONS)
        request, target = prepared
        await slots.acquire()
        connection = None
        try:
            connection = await self._take(target)
            response = await connection.handle_async_request(request)
        except BaseException:
            slots.release()
            if connection is not None:
                self._open.discard(connection)
                await connection.aclose()
            raise
        return _PoolReply(response, self, connection, target.origin)

    async def _take(self, target: _Target) -> httpcore.AsyncHTTPConnection:
        idle = self._idle.get(target.origin)
        while idle:
            connection = idle.pop()
            if connection.is_available() and not connection.has_expired():
                return connection
            self._open.discard(connection)
            await connection.aclose()
        connection = httpcore.AsyncHTTPConnection(
            target.url.origin,
            ssl_context=_tls() if target.origin[0] == b"https" else None,
            keepalive_expiry=KEEPALIVE,
        )
        self._open.add(connection)
        return connection

    def _give_back(self, connection: httpcore.AsyncHTTPConnection, origin: _Origin) -> None:
        """After its response is closed: the connection is idle again, or closed."""
        assert self._slots is not None
        self._slots.release()
        if connection.is_available() and not self.is_closed:
            self._idle.setdefault(origin, []).append(connection)
        else:
            self._open.discard(connection)

    async def aclose(self) -> None:
        self.is_closed = True
        self._idle.clear()
        connections, self._open = self._open, set()
        for connection in connections:
            await connection.aclose()


_TLS: list[ssl.SSLContext] = []


def _tls() -> ssl.SSLContext:
    """httpx's default TLS context, made once per process: loading the CA bundle takes tens of
    milliseconds, and a context serves any number of connections, loops and threads (each
    ``run_sync`` has a loop, and so its own connections, of its own)."""
    if not _TLS:
        import httpx

        _TLS.append(httpx.create_ssl_context())
    return _TLS[0]


_Origin = tuple[bytes, bytes, int]  # scheme, host, port: the key of a connection's origin


@record
class _Target:
    url: httpcore.URL
    host: bytes  # the Host header: the port only when it is not the scheme's default
    origin: _Origin


def _target(url: str) -> _Target:
    parsed = httpcore.URL(url)
    origin = parsed.origin
    key = (origin.scheme, origin.host, origin.port)
    host = b"[%b]" % parsed.host if b":" in parsed.host else parsed.host  # IPv6
    default = 443 if parsed.scheme == b"https" else 80
    if parsed.port is None or parsed.port == default:
        return _Target(parsed, host, key)
    return _Target(parsed, b"%b:%d" % (host, parsed.port), key)


class _PoolReply:
    """An httpcore response read as a :class:`Reply`."""

    __slots__ = (
        "_connection",
        "_origin",
        "_response",
        "_wire",
        "headers",
        "reason_phrase",
        "status_code",
    )

    def __init__(
        self,
        response: httpcore.Response,
        wire: PoolWire,
        connection: httpcore.AsyncHTTPConnection,
        origin: _Origin,
    ) -> None:
        self._response = response
        self._wire: PoolWire | None = wire
        self._connection = connection
        self._origin = origin
        self.status_code = response.status
        headers: dict[str, str] = {}
        for raw_name, raw_value in response.headers:
            name = raw_name.decode("latin-1").lower()
            value = raw_value.decode("latin-1")
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        self.headers = headers
        reason = response.extensions.get("reason_phrase")
        self.reason_phrase = (
            reason.decode("ascii", "ignore") if reason else _phrase(self.status_code)
        )

    def aiter_bytes(self) -> AsyncIterator[bytes]:
        coding = self.headers.get("content-encoding", "identity").strip().lower()
        stream: AsyncIterator[bytes] = self._response.stream.__aiter__()  # type: ignore[union-attr]
        return stream if coding == "identity" else _decoded(stream, coding)

    async def aread(self) -> bytes:
        return b"".join([piece async for piece in self.aiter_bytes()])

    async def aclose(self) -> None:
        wire, self._wire = self._wire, None
        try:
            await self._response.aclose()
        finally:
            if wire is not None:  # once, however often the reply is closed
                wire._give_back(self._connection, self._origin)


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


async def _decoded(stream: AsyncIterator[bytes], coding: str) -> AsyncIterator[bytes]:
    """A body compressed although ``identity`` was asked for (some gateways do): gzip and
    deflate are undone as they arrive. Any other coding, or a corrupt body, fails as it does
    through httpx (``DecodingError``, a transport error: the call fails, nothing is parsed)."""

    if coding not in ("gzip", "x-gzip", "deflate"):
        raise httpx.DecodingError(f"unsupported content-encoding {coding!r}")
    decoder = zlib.decompressobj(zlib.MAX_WBITS | 32)  # gzip or zlib framing, detected
    try:
        async for piece in stream:
            out = decoder.decompress(piece)
            if out:
                yield out
        rest = decoder.flush()
    except zlib.error as exc:
        raise httpx.DecodingError(f"corrupt {coding} body ({exc})") from None
    if rest:
        yield rest


_ERRORS: tuple[type[Exception], ...] = ()


def transport_errors() -> tuple[type[Exception], ...]:
    """What a failure to send, or to read a body, raises on either wire (httpx's and
    httpcore's classes have the same names and messages)."""
    global _ERRORS
    if not _ERRORS:
        import httpcore
        import httpx

        _ERRORS = (
            httpx.HTTPError,
            httpcore.TimeoutException,
            httpcore.NetworkError,
            httpcore.ProtocolError,
            httpcore.UnsupportedProtocol,
            httpcore.ProxyError,
        )
    return _ERRORS


def as_wire(client: Any) -> Wire:
    """``client`` as a wire: a wire as it is, an ``httpx.AsyncClient`` wrapped."""
    if isinstance(client, (PoolWire, HttpxWire)):
        return client
    return HttpxWire(client)


def default_wire() -> Wire:
    """The agent's own: the connection pool, or an httpx client when a proxy is configured
    (in the environment, or in the system settings on macOS and Windows)."""
    proxies = urllib.request.getproxies()
    if any(proxies.get(scheme) for scheme in ("http", "https", "all")):
        import httpx

        return HttpxWire(httpx.AsyncClient())
    return PoolWire()
