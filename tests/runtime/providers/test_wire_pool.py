"""The agent's own connection pool (``PoolWire``) against raw HTTP servers on 127.0.0.1.

What the pool does in place of httpx's client layer: the request's bytes and headers, the
reading of replies (duplicate headers, reason phrases, compressed bodies a gateway sends
anyway), and the errors of a failed connection, each the same as through an httpx client.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import shutil
import socket
import ssl
import subprocess
import threading
import time
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from auwgent.errors import ProviderError
from auwgent.runtime.providers import (
    Finish,
    Message,
    ModelRequest,
    OpenAIProvider,
    RetryPolicy,
    TextDelta,
    Timeouts,
)
from auwgent.runtime.providers import wire as wire_module
from auwgent.runtime.providers.wire import HttpxWire, PoolWire, as_wire
from auwgent.testing.fake_servers import FakeOpenAIServer, text

REQUEST = ModelRequest(
    model="gpt-4o", system="Be brief.", messages=(Message("user", "héllo"),), stream=False
)
WHOLE = {
    "id": "c1",
    "choices": [{"index": 0, "message": {"content": "hi there"}, "finish_reason": "stop"}],
}


class _Raw(BaseHTTPRequestHandler):
    """Answers every POST with the server's ``reply`` (status, headers, body), after its
    ``delay``; with ``hang_up`` set it closes each connection after its answer, unannounced."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 - the name http.server dispatches to
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        server: Any = self.server
        with server.lock:
            server.ports.append(self.client_address[1])
            server.hosts.append(self.headers.get("Host"))
            server.active += 1
            server.most = max(server.most, server.active)
        time.sleep(server.delay)
        with server.lock:
            server.active -= 1
        self.close_connection = server.hang_up
        code, headers, body = server.reply
        self.send_response(code)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that gave up (its timeout) hung up: expected here


def _started(server: Any) -> Any:
    """``server`` serving in a thread, answering ``WHOLE`` at once until told otherwise."""
    server.lock, server.ports, server.hosts, server.active, server.most = (
        threading.Lock(),
        [],
        [],
        0,
        0,
    )
    server.delay, server.hang_up = 0.0, False
    server.reply = (200, [("Content-Type", "application/json")], json.dumps(WHOLE).encode())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.fixture
def raw() -> Iterator[ThreadingHTTPServer]:
    server = _started(_Server(("127.0.0.1", 0), _Raw))
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _base(server: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}/v1"


async def _answer(base: str, client: Any = None, **settings: Any) -> list[Any]:
    wire = client if client is not None else PoolWire()
    try:
        provider = OpenAIProvider(
            client=wire, api_key="sk-pool-test-0123456789", base_url=base, **settings
        )
        return [event async for event in provider.stream(REQUEST)]
    finally:
        if client is None:
            await wire.aclose()


async def test_both_wires_send_the_same_body_and_the_needed_headers() -> None:
    with FakeOpenAIServer([text("one"), text("two")]) as server:
        await _answer(server.base_url)
        async with httpx.AsyncClient() as client:
            await _answer(server.base_url, client)
        host = server.origin.split("/")[2]
    pool, via_httpx = server.requests
    # Equal documents of equal length: the same compact UTF-8 JSON, non-ASCII kept.
    assert pool.body == via_httpx.body and pool.body["messages"][-1]["content"] == "héllo"
    for name in ("content-type", "content-length", "authorization"):
        assert pool.headers[name] == via_httpx.headers[name]
    assert pool.headers["host"] == via_httpx.headers["host"] == host
    assert pool.headers["accept-encoding"] == "identity"


@pytest.mark.parametrize(
    "coding, encode",
    [("gzip", gzip.compress), ("deflate", zlib.compress)],
)
async def test_a_body_compressed_anyway_is_decoded(
    raw: ThreadingHTTPServer, coding: str, encode: Any
) -> None:
    body = encode(json.dumps(WHOLE).encode())
    raw.reply = (200, [("Content-Type", "application/json"), ("Content-Encoding", coding)], body)  # type: ignore[attr-defined]
    events = await _answer(_base(raw))
    assert [e for e in events if isinstance(e, TextDelta)] == [TextDelta("hi there")]
    assert events[-1] == Finish("stop")


async def test_an_unknown_content_encoding_fails_the_call(raw: ThreadingHTTPServer) -> None:
    raw.reply = (
        200,
        [("Content-Type", "application/json"), ("Content-Encoding", "br")],
        b"\x0b\x02",
    )  # type: ignore[attr-defined]
    with pytest.raises(ProviderError) as caught:
        await _answer(_base(raw), retry=RetryPolicy(attempts=1))
    assert "DecodingError: unsupported content-encoding 'br'" in str(caught.value)


async def test_a_plain_error_body_is_named_by_the_reason_phrase(raw: ThreadingHTTPServer) -> None:
    raw.reply = (404, [("Content-Type", "text/plain")], b"")  # type: ignore[attr-defined]
    with pytest.raises(ProviderError) as caught:
        await _answer(_base(raw))
    assert caught.value.status == 404 and "Not Found" in str(caught.value)


async def test_repeated_headers_are_joined(raw: ThreadingHTTPServer) -> None:
    wire = PoolWire()
    raw.reply = (200, [("X-Seen", "a"), ("x-seen", "b")], b"{}")  # type: ignore[attr-defined]
    request = wire.prepare(_base(raw), {}, b"{}", wire.timeout(Timeouts(), whole=True))
    reply = await wire.send(request)
    try:
        assert reply.headers["x-seen"] == "a, b" and reply.status_code == 200
        assert reply.reason_phrase == "OK" and await reply.aread() == b"{}"
    finally:
        await reply.aclose()
        await wire.aclose()


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_a_refused_connection_fails_alike_on_both_wires() -> None:
    base = f"http://127.0.0.1:{_closed_port()}/v1"
    messages = []
    for client in (None, httpx.AsyncClient()):
        with pytest.raises(ProviderError) as caught:
            await _answer(base, client, retry=RetryPolicy(attempts=2, base_delay=0.01))
        messages.append(str(caught.value))
        if client is not None:
            await client.aclose()
    assert messages[0] == messages[1]
    assert (
        "request failed (ConnectError:" in messages[0] and "gave up after 2 attempts" in messages[0]
    )


async def test_a_closed_pool_is_not_reopened() -> None:
    wire = PoolWire()
    await wire.aclose()
    assert wire.is_closed
    with pytest.raises(RuntimeError, match="closed"):
        await wire.send(wire.prepare("http://127.0.0.1:9/", {}, b"{}", None))


def test_as_wire_wraps_an_httpx_client_and_keeps_a_wire() -> None:
    pool = PoolWire()
    assert as_wire(pool) is pool
    client = httpx.AsyncClient()
    wrapped = as_wire(client)
    assert isinstance(wrapped, HttpxWire) and wrapped.client is client


async def test_requests_past_the_limit_wait_for_a_connection(
    raw: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wire_module, "CONNECTIONS", 2)
    raw.delay = 0.1
    wire = PoolWire()
    try:
        provider = OpenAIProvider(client=wire, api_key="sk-pool-test", base_url=_base(raw))
        answers = await asyncio.gather(*(_collect(provider) for _ in range(6)))
    finally:
        await wire.aclose()
    assert all(events[-1] == Finish("stop") for events in answers)
    assert raw.most == 2 and len(set(raw.ports)) == 2  # two connections, each used three times


async def _collect(provider: OpenAIProvider) -> list[Any]:
    return [event async for event in provider.stream(REQUEST)]


async def test_a_connection_the_server_closed_is_not_reused(raw: Any) -> None:
    raw.hang_up = True  # no "Connection: close": the pool finds out from the socket
    wire = PoolWire()
    try:
        provider = OpenAIProvider(client=wire, api_key="sk-pool-test", base_url=_base(raw))
        for _ in range(3):
            assert (await _collect(provider))[-1] == Finish("stop")
            await asyncio.sleep(0.05)  # the server's close reaches the client
    finally:
        await wire.aclose()
    assert len(set(raw.ports)) == 3


async def test_a_request_that_timed_out_gives_its_place_back(
    raw: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With one place, a call cut off by its first-byte timeout must not keep it."""
    monkeypatch.setattr(wire_module, "CONNECTIONS", 1)
    wire = PoolWire()
    streamed = ModelRequest(
        model="gpt-4o", system="", messages=(Message("user", "hi"),), stream=True
    )
    try:
        provider = OpenAIProvider(
            client=wire,
            api_key="sk-pool-test",
            base_url=_base(raw),
            retry=RetryPolicy(attempts=1),
            timeouts=Timeouts(first_byte=0.2),
        )
        raw.delay = 1.0
        with pytest.raises(ProviderError, match="first-byte"):
            [event async for event in provider.stream(streamed)]
        raw.delay = 0.0
        events = await asyncio.wait_for(_collect(provider), timeout=5)
    finally:
        await wire.aclose()
    assert events[-1] == Finish("stop")


class _Server6(_Server):
    address_family = socket.AF_INET6


async def test_an_ipv6_host_is_bracketed_in_the_host_header() -> None:
    try:
        server = _started(_Server6(("::1", 0), _Raw))
    except OSError:
        pytest.skip("no IPv6 loopback here")
    port = server.server_address[1]
    try:
        events = await _answer(f"http://[::1]:{port}/v1")
    finally:
        server.shutdown()
        server.server_close()
    assert events[-1] == Finish("stop")
    assert server.hosts == [f"[::1]:{port}"]


@pytest.fixture
def tls_server(tmp_path: Any) -> Iterator[tuple[Any, str]]:
    """An HTTPS server on 127.0.0.1 with a self-signed certificate, and that certificate."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
    )
    server: Any = _Server(("127.0.0.1", 0), _Raw)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    _started(server)
    try:
        yield server, str(cert)
    finally:
        server.shutdown()
        server.server_close()


async def test_https_with_a_trusted_certificate(
    tls_server: tuple[Any, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The TLS context is httpx's: SSL_CERT_FILE names the certificates to trust."""
    server, cert = tls_server
    monkeypatch.setenv("SSL_CERT_FILE", cert)
    monkeypatch.setattr(wire_module, "_TLS", [])  # made again, with this variable
    events = await _answer(f"https://127.0.0.1:{server.server_address[1]}/v1")
    assert events[-1] == Finish("stop")


async def test_https_with_an_untrusted_certificate_fails_closed(
    tls_server: tuple[Any, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, _ = tls_server
    monkeypatch.setattr(wire_module, "_TLS", [])
    with pytest.raises(ProviderError) as caught:
        await _answer(
            f"https://127.0.0.1:{server.server_address[1]}/v1", retry=RetryPolicy(attempts=1)
        )
    assert "CERTIFICATE_VERIFY_FAILED" in str(caught.value)
    assert server.ports == []  # no request reached the server
