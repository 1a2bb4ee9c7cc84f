"""How a provider request reaches the network: the agent's own connection pool, or a given
httpx client.

A provider prepares its request once (``prepare``) and :func:`~auwgent.runtime.providers.http.
open_response` sends it, again on every retry (``send``). What comes back is a :class:`Reply`:
the status, the headers (lower-case names), the reason phrase and the body piece by piece.

* :class:`PoolWire`, the agent's own when the config has no ``httpClient``: httpcore's
  connection pool (the transport under httpx) spoken to directly. It does what the agent
  needs from HTTP and nothing else: no cookies, redirects, auth flows or request and response
  models rebuilt per request, which were a third of the CPU of a tool loop.
* :class:`HttpxWire`, around a given ``httpx.AsyncClient`` (the config's ``httpClient``, a
  cassette, a client with a mock transport), and the agent's own when the environment names
  a proxy (``HTTPS_PROXY`` and the like: httpx honours them and ``NO_PROXY``).

Both send the same bytes: the body as compact UTF-8 JSON with ``Content-Type:
application/json``. Transport failures of either are in :data:`TRANSPORT_ERRORS`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import httpcore
    import httpx

    from auwgent.runtime.providers.policy import Timeouts

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
        import httpx

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
    """The agent's own connections: an ``httpcore.AsyncConnectionPool`` with httpx's default
    limits (100 connections, 20 kept alive for 5 s) and httpx's TLS settings (certifi, or
    ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``), made on the first request."""

    # Sent with every request; the body's length and the provider's own headers follow.
    _HEADERS = (
        (b"Accept", b"application/json, text/event-stream"),
        # Bodies are read as they come (a compressed event stream would be held back).
        (b"Accept-Encoding", b"identity"),
        (b"Content-Type", b"application/json"),
        (b"User-Agent", b"auwgent-sdk"),
    )

    def __init__(self) -> None:
        self._pool: httpcore.AsyncConnectionPool | None = None
        self.is_closed = False
        self._urls: dict[str, tuple[httpcore.URL, bytes]] = {}  # parsed once each (a provider has a few)

    def timeout(self, timeouts: Timeouts, *, whole: bool) -> dict[str, float]:
        connect, read = _backstop(timeouts, whole)
        return {"connect": connect, "read": read, "write": read, "pool": connect}

    def prepare(
        self, url: str, headers: Mapping[str, str], body: bytes, timeout: Any
    ) -> httpcore.Request:
        import httpcore

        known = self._urls.get(url)
        if known is None:
            if len(self._urls) >= 256:
                self._urls.clear()
            known = self._urls[url] = _target(url)
        parsed, host = known
        fields = [
            (b"Host", host),
            *self._HEADERS,
            (b"Content-Length", b"%d" % len(body)),
            *((name.encode("ascii"), value.encode("utf-8")) for name, value in headers.items()),
        ]
        return httpcore.Request(
            b"POST", parsed, headers=fields, content=body, extensions={"timeout": timeout}
        )

    async def send(self, prepared: Any) -> Reply:
        pool = self._pool
        if pool is None:
            if self.is_closed:
                raise RuntimeError("this connection pool has been closed")
            import httpcore
            import httpx

            pool = self._pool = httpcore.AsyncConnectionPool(
                ssl_context=httpx.create_ssl_context(),
                max_connections=100,
                max_keepalive_connections=20,
                keepalive_expiry=5.0,
            )
        return _PoolReply(await pool.handle_async_request(prepared))

    async def aclose(self) -> None:
        self.is_closed = True
        if self._pool is not None:
            await self._pool.aclose()


def _target(url: str) -> tuple[httpcore.URL, bytes]:
    """``url`` parsed, and its ``Host`` header (the port only when it is not the default)."""
    import httpcore

    parsed = httpcore.URL(url)
    default = 443 if parsed.scheme == b"https" else 80
    port = parsed.port
    return parsed, parsed.host if port in (None, default) else b"%b:%d" % (parsed.host, port)


class _PoolReply:
    """An httpcore response read as a :class:`Reply`."""

    __slots__ = ("_response", "headers", "reason_phrase", "status_code")

    def __init__(self, response: httpcore.Response) -> None:
        self._response = response
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
        await self._response.aclose()


def _phrase(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


async def _decoded(stream: AsyncIterator[bytes], coding: str) -> AsyncIterator[bytes]:
    """A body compressed although ``identity`` was asked for (some gateways do): gzip and
    deflate are undone as they arrive. Any other coding, or a corrupt body, fails as it does
    through httpx (``DecodingError``, a transport error: the call fails, nothing is parsed)."""
    import zlib

    import httpx

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


def transport_errors() -> tuple[type[Exception], ...]:
    """What a failure to send, or to read a body, raises on either wire (httpx's and
    httpcore's classes have the same names and messages)."""
    import httpcore
    import httpx

    return (
        httpx.HTTPError,
        httpcore.TimeoutException,
        httpcore.NetworkError,
        httpcore.ProtocolError,
        httpcore.UnsupportedProtocol,
        httpcore.ProxyError,
    )


def as_wire(client: Any) -> Wire:
    """``client`` as a wire: a wire as it is, an ``httpx.AsyncClient`` wrapped."""
    if isinstance(client, (PoolWire, HttpxWire)):
        return client
    return HttpxWire(client)


def default_wire() -> Wire:
    """The agent's own: the connection pool, or an httpx client when a proxy is configured
    (in the environment, or in the system settings on macOS and Windows)."""
    import urllib.request

    proxies = urllib.request.getproxies()
    if any(proxies.get(scheme) for scheme in ("http", "https", "all")):
        import httpx

        return HttpxWire(httpx.AsyncClient())
    return PoolWire()
