"""The shared HTTP layer: Retry-After, backoff, error bodies, the retry loop, SSE parsing."""

from __future__ import annotations

import asyncio
import email.utils
import json
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from auwgent.errors import ProviderError
from auwgent.runtime.providers.http import (
    Call,
    Limits,
    RetryPolicy,
    StreamInterrupted,
    Timeouts,
    error_message,
    iter_sse,
    open_response,
    parse_retry_after,
    retry_delay,
)
from auwgent.runtime.providers.wire import HttpxWire

WIRE = Path(__file__).resolve().parents[2] / "data" / "wire"


def test_retry_after_accepts_seconds_and_http_dates() -> None:
    assert parse_retry_after("2") == 2.0
    assert parse_retry_after(" 0 ") == 0.0
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 7, usegmt=True)
    assert parse_retry_after(date, now=now) == pytest.approx(7.0)
    assert parse_retry_after(email.utils.formatdate(now - 60, usegmt=True), now=now) == 0.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None


def test_backoff_grows_exponentially_and_is_capped() -> None:
    policy = RetryPolicy(base_delay=0.5, max_delay=3.0, jitter=False)
    assert [retry_delay(policy, n) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 3.0]


def test_full_jitter_draws_between_zero_and_the_ceiling() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=20.0, jitter=True)
    bounds: list[tuple[float, float]] = []

    def fake_uniform(low: float, high: float) -> float:
        bounds.append((low, high))
        return high / 2

    assert retry_delay(policy, 3, rng=fake_uniform) == 2.0
    assert bounds == [(0.0, 4.0)]


def test_retry_after_replaces_backoff_but_is_capped() -> None:
    policy = RetryPolicy(base_delay=0.5, max_delay=10.0)
    assert retry_delay(policy, 1, retry_after=4.0) == 4.0
    assert retry_delay(policy, 1, retry_after=120.0) == 10.0


def test_retry_policy_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        RetryPolicy(attempts=0)


def test_error_message_reads_both_providers_error_bodies(wire: Callable[[str], bytes]) -> None:
    openai = error_message(wire("openai_error_429.json"), fallback="x")
    assert openai.startswith("Rate limit reached for gpt-4o")
    gemini = error_message(wire("gemini_error_429.json"), fallback="x")
    assert gemini == "Resource has been exhausted (e.g. check quota). [RESOURCE_EXHAUSTED]"
    listed = json.dumps([{"error": {"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"}}])
    assert error_message(listed.encode(), fallback="x") == "bad [INVALID_ARGUMENT]"
    assert error_message(b"<html>Bad Gateway</html>", fallback="x") == "<html>Bad Gateway</html>"
    assert error_message(b"", fallback="Service Unavailable") == "Service Unavailable"


def _client(handler: Callable[[httpx.Request], httpx.Response]) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.MockTransport(handler))


async def _call(client: httpx.AsyncClient, policy: RetryPolicy, slept: list[float]) -> bytes:
    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    wire = HttpxWire(client)
    request = wire.prepare("https://api.test/v1/x", {}, b"{}", None)
    call = Call("openai", retry=policy, secret="sk-secret-123")
    async with open_response(wire, request, call, sleep=sleep) as response:
        return await response.aread()


async def test_retries_429_and_5xx_then_succeeds() -> None:
    answers = [
        httpx.Response(429, headers={"Retry-After": "3"}, json={"error": {"message": "slow"}}),
        httpx.Response(503, json={"error": {"message": "overloaded"}}),
        httpx.Response(200, content=b"ok"),
    ]
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return answers[len(calls) - 1]

    slept: list[float] = []
    policy = RetryPolicy(attempts=4, base_delay=0.25, max_delay=10.0, jitter=False)
    async with _client(handler) as client:
        assert await _call(client, policy, slept) == b"ok"
    assert len(calls) == 3
    assert slept == [3.0, 0.5]  # Retry-After honoured, then exponential backoff


async def test_other_4xx_fail_at_once_with_the_providers_message() -> None:
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        body = {"error": {"message": "Incorrect API key provided: sk-secret-123"}}
        return httpx.Response(401, json=body)

    async with _client(handler) as client:
        with pytest.raises(ProviderError) as caught:
            await _call(client, RetryPolicy(attempts=4, base_delay=0), [])
    assert len(calls) == 1
    error = caught.value
    assert (error.provider, error.status, error.retryable) == ("openai", 401, False)
    assert str(error) == "OpenAI API error (401): Incorrect API key provided: ***"
    assert "sk-secret-123" not in str(error)


async def test_gives_up_after_the_configured_attempts() -> None:
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(500, json={"error": {"message": "The server had an error"}})

    slept: list[float] = []
    async with _client(handler) as client:
        with pytest.raises(ProviderError) as caught:
            await _call(client, RetryPolicy(attempts=3, base_delay=0.1, jitter=False), slept)
    assert len(calls) == 3
    assert slept == [0.1, 0.2]
    assert caught.value.status == 500
    assert "The server had an error" in str(caught.value)
    assert "after 3 attempts" in str(caught.value)


async def test_connection_errors_are_retried() -> None:
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        if len(calls) == 1:
            raise httpx.ConnectError("connection refused", request=request)
        return httpx.Response(200, content=b"ok")

    async with _client(handler) as client:
        assert await _call(client, RetryPolicy(base_delay=0), []) == b"ok"
    assert len(calls) == 2


async def test_connection_errors_on_every_attempt_become_a_provider_error() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    async with _client(handler) as client:
        with pytest.raises(ProviderError, match="ConnectError: connection refused") as caught:
            await _call(client, RetryPolicy(attempts=2, base_delay=0), [])
    assert caught.value.status is None


async def _sse_payloads(body: bytes, pieces: int) -> list[str]:
    size = max(1, len(body) // pieces)
    chunks = [body[i : i + size] for i in range(0, len(body), size)]

    async def stream() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=stream())

    async with _client(handler) as client, client.stream("GET", "https://x.test/") as response:
        return [p async for p in iter_sse(response, Call("p", timeouts=Timeouts(idle=5)))]


@pytest.mark.parametrize("pieces", [1, 3, 1000])
async def test_sse_parsing_ignores_chunk_boundaries(pieces: int) -> None:
    body = (
        b": keep-alive comment\r\n\r\n"
        b'event: message\nid: 1\ndata: {"a": 1}\n\n'
        b'data:{"b": 2}\r\n\r\n'
        b"data: line one\ndata: line two\n\n"
        b"data: [DONE]"
    )
    assert await _sse_payloads(body, pieces) == [
        '{"a": 1}',
        '{"b": 2}',
        "line one\nline two",
        "[DONE]",
    ]


async def test_retry_after_ms_is_preferred_when_present() -> None:
    answers = [
        httpx.Response(429, headers={"retry-after-ms": "250", "retry-after": "1"}, json={}),
        httpx.Response(200, content=b"ok"),
    ]
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return answers[len(calls) - 1]

    slept: list[float] = []
    async with _client(handler) as client:
        assert await _call(client, RetryPolicy(base_delay=5.0, jitter=False), slept) == b"ok"
    assert slept == [0.25]


def test_error_message_understands_compatible_servers_too() -> None:
    assert error_message(b'{"detail": "Model not found"}', fallback="x") == "Model not found"
    assert error_message(b'{"message": "quota"}', fallback="x") == "quota"
    assert error_message(b'{"something": 1}', fallback="Bad Request") == "Bad Request"


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=400), min_size=1, max_size=30))
def test_sse_events_do_not_depend_on_where_the_network_splits(cuts: list[int]) -> None:
    body = (WIRE / "openai_tool_calls_stream.sse").read_bytes()
    points = sorted({min(c * 7, len(body)) for c in cuts})
    pieces = [body[a:b] for a, b in zip([0, *points], [*points, len(body)], strict=True) if b > a]

    async def split() -> list[str]:
        async def stream() -> AsyncIterator[bytes]:
            for piece in pieces:
                yield piece

        def handler(request: httpx.Request) -> httpx.Response:
            return httpx.Response(200, content=stream())

        async with _client(handler) as client, client.stream("GET", "https://x.test/") as response:
            return [p async for p in iter_sse(response, Call("p", timeouts=Timeouts(idle=5)))]

    payloads = asyncio.run(split())
    assert payloads[-1] == "[DONE]"
    assert payloads[:-1] == [
        line[6:] for line in body.decode().splitlines() if line.startswith("data: {")
    ]


async def test_sse_keeps_multibyte_characters_split_across_pieces() -> None:
    body = 'data: {"text": "Accra ☀️ 31°C"}\n\n'.encode()
    assert await _sse_payloads(body, len(body)) == ['{"text": "Accra ☀️ 31°C"}']


@pytest.mark.parametrize("tail", [b"\n\n", b""])  # a complete event, or the last one unended
async def test_sse_with_broken_utf8_is_a_provider_error(tail: bytes) -> None:
    with pytest.raises(ProviderError, match="malformed UTF-8"):
        await _sse_payloads(b'data: {"text": "\xff"}' + tail, 1)


def _streaming_client(pieces: list[bytes], pause: float = 0.0) -> httpx.AsyncClient:
    async def stream() -> AsyncIterator[bytes]:
        for piece in pieces:
            await asyncio.sleep(pause)
            yield piece

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=stream())

    return _client(handler)


async def test_a_slow_consumer_is_not_an_idle_stream() -> None:
    # The idle clock runs only while waiting for the network, not while the engine works.
    pieces = [b"data: 1\n\n", b"data: 2\n\n", b"data: 3\n\n"]
    seen: list[str] = []
    async with _streaming_client(pieces) as client, client.stream("GET", "https://x.test/") as r:
        async for payload in iter_sse(r, Call("p", timeouts=Timeouts(idle=0.05))):
            seen.append(payload)
            await asyncio.sleep(0.15)
    assert seen == ["1", "2", "3"]


async def test_a_silent_network_is_an_idle_stream() -> None:
    async with _streaming_client([b"data: 1\n\n", b"data: 2\n\n"], pause=0.3) as client:
        async with client.stream("GET", "https://x.test/") as response:
            with pytest.raises(ProviderError, match="no data for 0.05s"):
                [p async for p in iter_sse(response, Call("p", timeouts=Timeouts(idle=0.05)))]
        task = asyncio.current_task()
        if sys.version_info >= (3, 11) and task is not None:
            assert task.cancelling() == 0  # the watchdog's cancel left nothing pending


async def test_an_outside_cancellation_stays_a_cancellation() -> None:
    async def consume() -> None:
        async with _streaming_client([b"data: 1\n\n"], pause=5) as client:
            async with client.stream("GET", "https://x.test/") as response:
                [p async for p in iter_sse(response, Call("p", timeouts=Timeouts(idle=10)))]

    task = asyncio.ensure_future(consume())
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def _sse_with(body: bytes, piece: int, limits: Limits) -> list[str]:
    async def stream() -> AsyncIterator[bytes]:
        for start in range(0, len(body), piece):
            yield body[start : start + piece]

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=stream())

    async with _client(handler) as client, client.stream("GET", "https://x.test/") as response:
        return [p async for p in iter_sse(response, Call("p", limits=limits))]


async def test_a_long_event_in_many_pieces_is_parsed_whole() -> None:
    line = "z" * 1_000_000
    body = f"data: {line}\n\ndata: after\n\n".encode()
    assert await _sse_with(body, 1000, Limits()) == [line, "after"]


@pytest.mark.parametrize("piece", [7, 4096])
async def test_the_event_cap_counts_a_line_still_arriving_and_several_data_lines(
    piece: int,
) -> None:
    limits = Limits(event_bytes=100)
    with pytest.raises(ProviderError, match=r"limit of 100 bytes \(limits\.eventBytes\)"):
        await _sse_with(b"data: " + b"a" * 150, piece, limits)  # one line, never ended
    with pytest.raises(ProviderError, match=r"limits\.eventBytes"):
        await _sse_with(b"data: " + b"b" * 60 + b"\ndata: " + b"c" * 60 + b"\n\n", piece, limits)
    # The cap is per event, as received (``data: `` included): many events at it pass.
    body = (b"data: " + b"d" * 94 + b"\n\n") * 20
    assert await _sse_with(body, piece, limits) == ["d" * 94] * 20


async def test_the_response_cap_counts_every_byte_of_the_body() -> None:
    body = b": keep-alive\n\n" * 100 + b"data: x\n\n"
    with pytest.raises(ProviderError, match=r"limit of 1000 bytes \(limits\.responseBytes\)"):
        await _sse_with(body, 64, Limits(response_bytes=1000))


async def test_a_body_without_any_event_is_an_interruption() -> None:
    with pytest.raises(StreamInterrupted, match="ended before its first event"):
        await _sse_with(b": only a comment\n\n", 8, Limits())


def test_redaction_replaces_whole_keys_of_eight_or_more_characters_only() -> None:
    from auwgent.runtime.providers.http import _redact

    assert _redact("bad key sk-secret-123, try again", "sk-secret-123") == "bad key ***, try again"
    assert _redact("Bearer sk-secret-123", "sk-secret-123") == "Bearer ***"
    # A short key is never looked for: it would mangle ordinary words.
    assert _redact("the key was not accepted", "k") == "the key was not accepted"
    # Only whole occurrences: a longer token that contains the key is left as it is.
    assert _redact("id abcdefgh1 and abcdefgh", "abcdefgh") == "id abcdefgh1 and ***"
