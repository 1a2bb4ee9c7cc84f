"""Faults through real HTTP: each provider against its fake server on 127.0.0.1."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx
import pytest

from auwgent.errors import ProviderError
from auwgent.runtime.providers import (
    Finish,
    GeminiProvider,
    Message,
    ModelRequest,
    OpenAIProvider,
    Provider,
    RetryPolicy,
    StreamEvent,
    TextDelta,
    Timeouts,
)
from auwgent.testing.fake_servers import (
    FakeGeminiServer,
    FakeOpenAIServer,
    ServerReply,
    disconnect,
    malformed_chunk,
    stall,
    status,
    text,
)

KEY = "sk-fault-test-key-0123456789"
Summarise = Callable[[Sequence[StreamEvent]], dict[str, Any]]


@pytest.fixture(params=["openai", "gemini"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


class Setup:
    """A fake server of one kind and a provider pointed at it."""

    def __init__(
        self, kind: str, client: httpx.AsyncClient, retry: RetryPolicy, timeouts: Timeouts
    ) -> None:
        self.kind, self.client, self.retry, self.timeouts = kind, client, retry, timeouts

    def serve(self, script: Any) -> FakeOpenAIServer | FakeGeminiServer:
        server_type = FakeOpenAIServer if self.kind == "openai" else FakeGeminiServer
        return server_type(script, api_key=KEY, chunk_size=4)

    def provider(self, server: FakeOpenAIServer | FakeGeminiServer, **overrides: Any) -> Provider:
        settings: dict[str, Any] = {
            "client": self.client,
            "api_key": KEY,
            "base_url": server.base_url,
            "retry": self.retry,
            "timeouts": self.timeouts,
        }
        settings.update(overrides)
        if self.kind == "openai":
            return OpenAIProvider(**settings)
        return GeminiProvider(**settings)


@pytest.fixture
def setup(
    kind: str, client: httpx.AsyncClient, fast_retry: RetryPolicy, fast_timeouts: Timeouts
) -> Setup:
    return Setup(kind, client, fast_retry, fast_timeouts)


def _settled_count(server: FakeOpenAIServer | FakeGeminiServer, expected: int) -> int:
    """The number of recorded requests, once the server threads have caught up.

    A client that timed out does not wait for the server to finish reading its request, so on
    a busy machine the last one can be recorded a moment after the client gives up.
    """
    deadline = time.monotonic() + 2.0
    while len(server.requests) < expected and time.monotonic() < deadline:
        time.sleep(0.01)
    return len(server.requests)


def _request(stream: bool = True) -> ModelRequest:
    return ModelRequest(
        model="m-1", system="Be brief.", messages=(Message("user", "Hello"),), stream=stream
    )


async def _collect(provider: Provider, stream: bool = True) -> list[StreamEvent]:
    return [e async for e in provider.stream(_request(stream))]


@pytest.mark.parametrize("stream", [True, False])
async def test_a_plain_answer_round_trips(setup: Setup, summarise: Summarise, stream: bool) -> None:
    with setup.serve([text("Hello there, friend.")]) as server:
        events = await _collect(setup.provider(server), stream)
    summary = summarise(events)
    assert summary["text"] == "Hello there, friend."
    assert summary["finish"] == [Finish("stop")]
    assert len(summary["usage"]) == 1


async def test_429_with_retry_after_then_success(setup: Setup, summarise: Summarise) -> None:
    retry = RetryPolicy(attempts=3, base_delay=0.01, max_delay=5.0, jitter=False)
    with setup.serve([status(429, retry_after=1), text("ok now")]) as server:
        started = time.monotonic()
        events = await _collect(setup.provider(server, retry=retry))
        waited = time.monotonic() - started
    assert summarise(events)["text"] == "ok now"
    assert len(server.requests) == 2
    assert waited >= 0.95  # the server's Retry-After, not the 10 ms backoff


async def test_503_twice_then_success(setup: Setup, summarise: Summarise) -> None:
    with setup.serve([status(503), status(503), text("finally")]) as server:
        events = await _collect(setup.provider(server))
    assert summarise(events)["text"] == "finally"
    assert len(server.requests) == 3


async def test_500_forever_gives_up_after_the_configured_attempts(setup: Setup) -> None:
    def always_500(request: Any) -> ServerReply:
        return status(500, message="The server had an error while processing your request.")

    with setup.serve(always_500) as server:
        with pytest.raises(ProviderError) as caught:
            await _collect(setup.provider(server))
    assert len(server.requests) == setup.retry.attempts
    error = caught.value
    assert error.provider == setup.kind and error.status == 500
    assert "The server had an error while processing your request." in str(error)
    assert KEY not in str(error) and KEY not in repr(error)


async def test_wrong_key_fails_at_once_without_echoing_the_key(setup: Setup) -> None:
    with setup.serve([text("never")]) as server:
        with pytest.raises(ProviderError) as caught:
            await _collect(setup.provider(server, api_key="wrong-key-value"))
    assert len(server.requests) == 1
    assert caught.value.status == 401
    assert "wrong-key-value" not in str(caught.value)


@pytest.mark.parametrize("stream", [True, False])
async def test_disconnect_mid_stream_is_an_error_not_a_short_answer(
    setup: Setup, stream: bool
) -> None:
    with setup.serve([disconnect(after_chunks=2)]) as server:
        provider = setup.provider(server)
        events: list[StreamEvent] = []
        with pytest.raises(ProviderError) as caught:
            async for event in provider.stream(_request(stream)):
                events.append(event)
    assert not any(isinstance(e, Finish) for e in events)
    assert caught.value.provider == setup.kind
    if stream:
        assert events  # something reached the caller...
        assert len(server.requests) == 1  # ...so the request is never sent again
    else:
        # A whole (unstreamed) body yields nothing until it is complete: a drop inside it is
        # retried like a failed connection (here the script has nothing left to answer with).
        assert events == []
        assert len(server.requests) > 1


@pytest.mark.parametrize("stream", [True, False])
async def test_a_drop_before_the_first_event_is_retried(setup: Setup, stream: bool) -> None:
    reply = text("Hello there, friend.")
    with setup.serve([disconnect(after_chunks=0, reply=reply), reply]) as server:
        events = await _collect(setup.provider(server), stream)
    assert len(server.requests) == 2
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello there, friend."


async def test_stall_past_the_idle_timeout(setup: Setup) -> None:
    timeouts = Timeouts(connect=2.0, first_byte=2.0, idle=0.2)
    with setup.serve([stall(30.0, after_chunks=1)]) as server:
        started = time.monotonic()
        with pytest.raises(ProviderError, match="idle timeout"):
            await _collect(setup.provider(server, timeouts=timeouts))
        assert time.monotonic() - started < 15  # the 30 s stall was cut short


async def test_stall_before_the_first_byte_is_retried(setup: Setup, summarise: Summarise) -> None:
    timeouts = Timeouts(connect=2.0, first_byte=0.2, idle=1.0)
    with setup.serve([stall(5.0), text("second try")]) as server:
        events = await _collect(setup.provider(server, timeouts=timeouts))
    assert summarise(events)["text"] == "second try"
    assert _settled_count(server, 2) == 2


async def test_stall_before_the_first_byte_on_every_attempt_fails(setup: Setup) -> None:
    timeouts = Timeouts(connect=2.0, first_byte=0.1, idle=1.0)
    with setup.serve(lambda request: stall(5.0)) as server:
        with pytest.raises(ProviderError, match="ReadTimeout") as caught:
            await _collect(setup.provider(server, timeouts=timeouts))
    assert caught.value.status is None
    assert _settled_count(server, setup.retry.attempts) == setup.retry.attempts


@pytest.mark.parametrize("stream", [True, False])
async def test_malformed_json_chunk(setup: Setup, stream: bool) -> None:
    with setup.serve([malformed_chunk(after_chunks=1)]) as server:
        with pytest.raises(ProviderError, match="malformed JSON"):
            await _collect(setup.provider(server), stream)


async def test_embeddings_through_the_fake_server(setup: Setup) -> None:
    with setup.serve([]) as server:
        provider = setup.provider(server)
        one = await provider.embed(["alpha beta"], "embed-1")
        many = await provider.embed(["alpha beta", "gamma"], "embed-1")
    assert many[0] == one[0]
    assert len(many) == 2 and many[0] != many[1]
    assert all(len(v) == 8 for v in many)


async def test_a_slow_first_event_waits_for_first_byte_not_idle(
    setup: Setup, summarise: Summarise
) -> None:
    # Headers at once, then silence while the model "thinks": allowed up to first_byte.
    timeouts = Timeouts(connect=2.0, first_byte=1.5, idle=0.2)
    with setup.serve([stall(0.5, after_chunks=0, reply=text("thought it through"))]) as server:
        events = await _collect(setup.provider(server, timeouts=timeouts))
    assert summarise(events)["text"] == "thought it through"


async def test_a_first_event_later_than_first_byte_fails(setup: Setup) -> None:
    timeouts = Timeouts(connect=2.0, first_byte=0.3, idle=0.1)
    with setup.serve([stall(5.0, after_chunks=0)]) as server:
        with pytest.raises(ProviderError, match="no data for 0.3s"):
            await _collect(setup.provider(server, timeouts=timeouts))


async def test_a_key_echoed_by_the_api_is_redacted(setup: Setup) -> None:
    with setup.serve([status(400, message=f"API key {KEY} is not valid for this model")]) as server:
        with pytest.raises(ProviderError) as caught:
            await _collect(setup.provider(server))
    assert KEY not in str(caught.value) and "API key *** is not valid" in str(caught.value)


@pytest.mark.parametrize("stream", [True, False])
async def test_consecutive_calls_reuse_one_connection(setup: Setup, stream: bool) -> None:
    with setup.serve([text("one"), text("two"), text("three")]) as server:
        provider = setup.provider(server)
        for _ in range(3):
            await _collect(provider, stream)
    assert len({r.client_port for r in server.requests}) == 1
