"""The cheapest hand-written clients, as floors for the benchmarks.

Each class offers the two calls the raw loops of ``bench_overhead.py`` make on an
``httpx.AsyncClient`` -- ``await client.post(url, json=..., headers=...)`` and
``async with client.stream("POST", url, json=..., headers=...)`` -- and nothing else, so the
same loop code runs on httpx, on httpcore's connection pool used directly, and on a
hand-written HTTP/1.1 client over asyncio streams (keep-alive, ``Content-Length`` and chunked
bodies: what the fake servers send). The last is the floor under every library: one
``asyncio.open_connection`` per connection, kept and reused, and the bytes parsed by hand.

They serve loopback fake servers only: no TLS, no redirects, no proxies, no timeouts.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import httpcore


class _Answer:
    """A whole response: its status and body, with httpx's two reading calls."""

    def __init__(self, status: int, body: bytes) -> None:
        self.status_code, self._body = status, body

    def raise_for_status(self) -> None:
        if self.status_code >= 400:
            raise RuntimeError(f"HTTP {self.status_code}: {self._body[:200]!r}")

    def json(self) -> Any:
        return json.loads(self._body)


class _Lines:
    """A streamed response read as lines (``aiter_lines``), from an iterator of byte pieces."""

    def __init__(self, status: int, pieces: AsyncIterator[bytes]) -> None:
        self.status_code, self._pieces = status, pieces

    def raise_for_status(self) -> None:
        if self.status_code >= 400:
            raise RuntimeError(f"HTTP {self.status_code}")

    async def aiter_lines(self) -> AsyncIterator[str]:
        rest = b""
        async for piece in self._pieces:
            rest += piece
            *lines, rest = rest.split(b"\n")
            for line in lines:
                yield line.rstrip(b"\r").decode()
        if rest:
            yield rest.decode()


def _request_headers(url: str, headers: dict[str, str], length: int) -> list[tuple[str, str]]:
    host = urlsplit(url).netloc
    fixed = [("Host", host), ("Content-Type", "application/json"), ("Content-Length", str(length))]
    return fixed + list(headers.items())


class HttpcoreClient:
    """httpcore's ``AsyncConnectionPool``, with no client layer above it."""

    def __init__(self) -> None:
        self._pool = httpcore.AsyncConnectionPool(max_connections=100)

    async def post(self, url: str, *, json: Any, headers: dict[str, str]) -> _Answer:
        body = _dumps(json)
        response = await self._pool.request(
            "POST", url, headers=_request_headers(url, headers, len(body)), content=body
        )
        return _Answer(response.status, response.content)

    @asynccontextmanager
    async def stream(
        self, method: str, url: str, *, json: Any, headers: dict[str, str]
    ) -> AsyncIterator[_Lines]:
        body = _dumps(json)
        async with self._pool.stream(
            method, url, headers=_request_headers(url, headers, len(body)), content=body
        ) as response:
            yield _Lines(response.status, response.aiter_stream())

    async def aclose(self) -> None:
        await self._pool.aclose()


class StreamsClient:
    """HTTP/1.1 by hand over ``asyncio.open_connection``: idle connections kept per host."""

    def __init__(self) -> None:
        self._idle: dict[tuple[str, int], list[tuple[asyncio.StreamReader, Any]]] = {}

    async def post(self, url: str, *, json: Any, headers: dict[str, str]) -> _Answer:
        async with self.stream("POST", url, json=json, headers=headers) as response:
            body = b"".join([piece async for piece in response.pieces])
        return _Answer(response.status_code, body)

    @asynccontextmanager
    async def stream(
        self, method: str, url: str, *, json: Any, headers: dict[str, str]
    ) -> AsyncIterator[_StreamedLines]:
        parts = urlsplit(url)
        key = (parts.hostname or "127.0.0.1", parts.port or 80)
        idle = self._idle.setdefault(key, [])
        reader, writer = idle.pop() if idle else await asyncio.open_connection(*key)
        body = _dumps(json)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        head = "".join(f"{k}: {v}\r\n" for k, v in _request_headers(url, headers, len(body)))
        writer.write(f"{method} {target} HTTP/1.1\r\n{head}\r\n".encode() + body)
        status, length, chunked = _parse_head(await reader.readuntil(b"\r\n\r\n"))
        response = _StreamedLines(status, _body(reader, length, chunked))
        yield response
        async for _ in response.pieces:  # the rest of the body, so the connection is reusable
            pass
        idle.append((reader, writer))

    async def aclose(self) -> None:
        for connections in self._idle.values():
            for _, writer in connections:
                writer.close()
        self._idle.clear()


class _StreamedLines(_Lines):
    def __init__(self, status: int, pieces: AsyncIterator[bytes]) -> None:
        super().__init__(status, pieces)
        self.pieces = pieces


def _parse_head(head: bytes) -> tuple[int, int | None, bool]:
    """The status, the ``Content-Length`` (if any) and whether the body is chunked."""
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    length, chunked = None, False
    for line in lines[1:]:
        name, _, value = line.partition(":")
        name = name.strip().lower()
        if name == "content-length":
            length = int(value)
        elif name == "transfer-encoding":
            chunked = "chunked" in value.lower()
    return status, length, chunked


async def _body(
    reader: asyncio.StreamReader, length: int | None, chunked: bool
) -> AsyncIterator[bytes]:
    """The body's pieces, once each; an exhausted generator yields nothing more."""
    if not chunked:
        yield await reader.readexactly(length or 0)
        return
    while True:
        size = int((await reader.readuntil(b"\r\n"))[:-2].split(b";")[0], 16)
        if size == 0:
            await reader.readuntil(b"\r\n")
            return
        yield (await reader.readexactly(size + 2))[:-2]


def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()
