"""Provider calls are bounded: one event, one response, the first byte, the whole call.

Every test runs real HTTP against the fake servers, with small configured limits so that it
takes a fraction of a second; ``test_the_defaults_bound_every_call`` pins the defaults.
"""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from auwgent import __version__
from auwgent.compiler.pipeline import compile_sources
from auwgent.errors import ConfigError, ProviderError
from auwgent.runtime.agent import create_agent
from auwgent.runtime.config import parse_options
from auwgent.runtime.providers import (
    GeminiProvider,
    Limits,
    Message,
    ModelRequest,
    OpenAIProvider,
    Provider,
    RetryPolicy,
    StreamEvent,
    TextDelta,
    Timeouts,
)
from auwgent.runtime.providers.http import retry_delay
from auwgent.testing.fake_servers import (
    FakeGeminiServer,
    FakeOpenAIServer,
    disconnect,
    endless,
    stall,
    text,
)

KIB = 1024
RETRY = RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.05, jitter=False)
QUICK = Timeouts(connect=2.0, first_byte=2.0, idle=1.0, call=10.0)


@pytest.fixture(params=["openai", "gemini"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _server(kind: str, script: Any) -> FakeOpenAIServer | FakeGeminiServer:
    return (FakeOpenAIServer if kind == "openai" else FakeGeminiServer)(script)


def _provider(
    kind: str,
    client: httpx.AsyncClient,
    server: FakeOpenAIServer | FakeGeminiServer,
    **settings: Any,
) -> Provider:
    settings = {"retry": RETRY, "timeouts": QUICK, **settings}
    provider_type = OpenAIProvider if kind == "openai" else GeminiProvider
    return provider_type(client=client, base_url=server.base_url, api_key="k", **settings)


async def _collect(provider: Provider, stream: bool = True) -> list[StreamEvent]:
    request = ModelRequest(model="m", system="", messages=(Message("user", "hi"),), stream=stream)
    return [event async for event in provider.stream(request)]


def _text(events: list[StreamEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


async def test_one_huge_event_ends_the_call_at_the_event_cap(
    kind: str, client: httpx.AsyncClient
) -> None:
    huge = "x" * (300 * KIB)
    with _server(kind, [text(huge, chunk_size=len(huge))]) as server:
        provider = _provider(kind, client, server, limits=Limits(event_bytes=64 * KIB))
        with pytest.raises(ProviderError, match=r"limit of 65536 bytes \(limits\.eventBytes\)"):
            await _collect(provider)
    assert len(server.requests) == 1  # a size cap is final: no retry


async def test_events_under_the_cap_pass(kind: str, client: httpx.AsyncClient) -> None:
    big = "y" * (40 * KIB)
    with _server(kind, [text(big, chunk_size=len(big))]) as server:
        provider = _provider(kind, client, server, limits=Limits(event_bytes=64 * KIB))
        assert _text(await _collect(provider)) == big


@pytest.mark.parametrize("stream", [True, False])
async def test_an_endless_response_ends_at_the_response_cap(
    kind: str, client: httpx.AsyncClient, stream: bool
) -> None:
    with _server(kind, [endless()]) as server:
        provider = _provider(kind, client, server, limits=Limits(response_bytes=256 * KIB))
        with pytest.raises(ProviderError, match=r"\(limits\.responseBytes\)"):
            await _collect(provider, stream)
    assert len(server.requests) == 1


@pytest.mark.parametrize("stream", [True, False])
async def test_an_endless_trickle_ends_at_the_call_deadline(
    kind: str, client: httpx.AsyncClient, stream: bool
) -> None:
    # Never silent for long (no idle timeout), never large (no cap): only the deadline ends it.
    timeouts = Timeouts(connect=2.0, first_byte=2.0, idle=1.0, call=0.6)
    with _server(kind, [endless(pause=0.01)]) as server:
        provider = _provider(kind, client, server, timeouts=timeouts)
        started = time.monotonic()
        with pytest.raises(ProviderError, match=r"longer than 0\.6s \(timeouts\.call\)"):
            await _collect(provider, stream)
        elapsed = time.monotonic() - started
    assert 0.55 < elapsed < 15  # the trickle never ends by itself


async def test_a_silent_server_is_given_up_after_every_attempt(
    kind: str, client: httpx.AsyncClient
) -> None:
    timeouts = Timeouts(connect=2.0, first_byte=0.15, idle=1.0, call=30.0)
    retry = RetryPolicy(attempts=4, base_delay=0.02, max_delay=0.05, jitter=False)
    with _server(kind, lambda request: stall(30.0)) as server:
        provider = _provider(kind, client, server, timeouts=timeouts, retry=retry)
        started = time.monotonic()
        with pytest.raises(ProviderError, match="gave up after 4 attempts"):
            await _collect(provider)
        elapsed = time.monotonic() - started
    bound = 4 * 0.15 + sum(retry_delay(retry, n) for n in (1, 2, 3))
    assert bound - 0.05 < elapsed < bound + 15  # each attempt's 30 s stall was cut short


async def test_the_deadline_cuts_retries_short(kind: str, client: httpx.AsyncClient) -> None:
    timeouts = Timeouts(connect=2.0, first_byte=0.2, idle=1.0, call=0.5)
    retry = RetryPolicy(attempts=50, base_delay=0.01, max_delay=0.01, jitter=False)
    with _server(kind, lambda request: stall(30.0)) as server:
        provider = _provider(kind, client, server, timeouts=timeouts, retry=retry)
        started = time.monotonic()
        with pytest.raises(ProviderError, match=r"timeouts\.call"):
            await _collect(provider)
        elapsed = time.monotonic() - started
    assert elapsed < 5  # 50 attempts of 0.2 s each would take 10 s


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize("close_delimited", [False, True])
async def test_a_body_cut_before_the_first_event_is_retried_whatever_its_framing(
    kind: str, client: httpx.AsyncClient, stream: bool, close_delimited: bool
) -> None:
    answer = text("Hello again.")
    cut = disconnect(after_chunks=0, reply=answer, close_delimited=close_delimited)
    with _server(kind, [cut, answer]) as server:
        events = await _collect(_provider(kind, client, server), stream)
    assert _text(events) == "Hello again."
    assert len(server.requests) == 2


async def test_a_stream_cut_on_every_attempt_says_so(kind: str, client: httpx.AsyncClient) -> None:
    cut = disconnect(after_chunks=0, close_delimited=True)
    with _server(kind, lambda request: cut) as server:
        with pytest.raises(ProviderError, match="before its first event.*gave up after 3"):
            await _collect(_provider(kind, client, server))
    assert len(server.requests) == 3


def test_the_defaults_bound_every_call() -> None:
    retry, timeouts, limits = RetryPolicy(), Timeouts(), Limits()
    assert (timeouts.connect, timeouts.first_byte, timeouts.idle, timeouts.call) == (
        10.0,
        25.0,
        30.0,
        300.0,
    )
    assert (limits.event_bytes, limits.response_bytes) == (16 * 1024 * 1024, 64 * 1024 * 1024)
    # A silent server: every attempt waits first_byte, then the longest backoff between them.
    longest_backoff = sum(
        retry_delay(RetryPolicy(retry.attempts, retry.base_delay, retry.max_delay, jitter=False), n)
        for n in range(1, retry.attempts)
    )
    assert retry.attempts * timeouts.first_byte + longest_backoff <= 120
    # The runtime config starts from the same values.
    options = parse_options({})
    assert options.timeouts == timeouts and options.limits == limits and options.retry == retry


def test_the_limits_are_runtime_config_keys() -> None:
    options = parse_options(
        {
            "timeouts": {"call": 45, "firstByte": 5},
            "limits": {"eventBytes": 1024, "responseBytes": 4096},
        }
    )
    assert options.timeouts.call == 45 and options.timeouts.first_byte == 5
    assert options.limits == Limits(event_bytes=1024, response_bytes=4096)
    with pytest.raises(ConfigError, match=r"limits\.eventBytes: expected an integer"):
        parse_options({"limits": {"eventBytes": "big"}})
    with pytest.raises(ConfigError, match=r"limits\.responseBytes: must be at least 1"):
        parse_options({"limits": {"responseBytes": 0}})
    with pytest.raises(ConfigError, match=r"limits\.eventsBytes: unknown config key"):
        parse_options({"limits": {"eventsBytes": 1}})
    with pytest.raises(ConfigError, match=r"timeouts\.call: expected a number"):
        parse_options({"timeouts": {"call": True}})


AGENT = """
agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "You are a helpful assistant."
    }
}
"""


@pytest.mark.parametrize(
    ("settings", "pause", "expected"),
    [
        ({"limits": {"responseBytes": 128 * KIB}}, 0.0, "131072 bytes (limits.responseBytes)"),
        ({"limits": {"eventBytes": 4 * KIB}}, 0.0, "4096 bytes (limits.eventBytes)"),
        ({"timeouts": {"call": 0.4}}, 0.01, "longer than 0.4s (timeouts.call)"),
    ],
)
async def test_an_agent_run_ends_with_an_error_intent_at_the_configured_limit(
    settings: dict[str, Any], pause: float, expected: str
) -> None:
    result = compile_sources({"main.agent": AGENT})
    assert result.ok
    doc = dict(result.documents["main.agent"])
    reply = text("z" * (8 * KIB), chunk_size=8 * KIB)  # each delta one 8 KB event
    with FakeOpenAIServer([endless(pause=pause, reply=reply)], api_key="sk-limit") as server:
        config = {
            "apiKeys": {"openaiApiKey": "sk-limit"},
            "baseUrls": {"openai": server.base_url},
            **settings,
        }
        agent = create_agent(
            doc, config, ir_hash=doc["hash"], compiler_version=__version__, ir_version=1
        )
        errors: list[str] = []
        agent.on_intent(
            lambda name, value, _: errors.append(value["message"]) if name == "error" else None
        )
        agent.on_intent_partial(lambda name, value, who: None)  # so the answer is streamed
        session = await agent.run("Tell me everything.")
        await agent.aclose()
    assert session["turns"][-1]["status"] == "error"
    assert errors and expected in errors[0], errors
