"""The agent's HTTP client: one per agent and event loop, reused by runs, released on request.

Its own is a connection pool (``PoolWire``), or an httpx client when a proxy is configured."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from auwgent import __version__
from auwgent.runtime.agent import Agent, create_agent
from auwgent.runtime.providers.wire import HttpxWire, PoolWire
from auwgent.testing.fake_servers import FakeOpenAIServer, text

from .irkit import agent, document


def _agent(base_url: str, **extra: Any) -> Agent:
    doc = document(agent())
    return create_agent(
        doc,
        {"apiKeys": {"openaiApiKey": "sk-test"}, "baseUrls": {"openai": base_url}, **extra},
        ir_hash=doc["hash"],
        compiler_version=__version__,
        ir_version=1,
    )


async def test_runs_of_one_agent_share_a_client_and_its_connection() -> None:
    with FakeOpenAIServer([text("one"), text("two"), text("three")]) as server:
        bot = _agent(server.base_url)
        await bot.run("a")
        client = bot.services.pool.client
        assert isinstance(client, PoolWire)
        await bot.run("b")
        await bot.run("c")
        assert bot.services.pool.client is client and not client.is_closed
        ports = {r.client_port for r in server.requests}
        assert len(server.requests) == 3 and len(ports) == 1  # one kept-alive connection
        await bot.aclose()
        assert client.is_closed and bot.services.pool.client is None


async def test_async_with_releases_the_client_and_the_agent_stays_usable() -> None:
    with FakeOpenAIServer([text("one"), text("two")]) as server:
        async with _agent(server.base_url) as bot:
            assert (await bot.run("a"))["turns"][-1]["output"] == "one"
            first = bot.services.pool.client
        assert first.is_closed
        session = await bot.run("b")  # a new client, created on demand
        assert session["turns"][-1]["output"] == "two"
        assert bot.services.pool.client is not first
        await bot.aclose()


async def test_a_given_http_client_is_used_and_never_closed() -> None:
    with FakeOpenAIServer([text("one"), text("two")]) as server:
        async with httpx.AsyncClient() as given:
            bot = _agent(server.base_url, httpClient=given)
            async with bot:
                await bot.run("a")
                await bot.run("b")
            await bot.aclose()
            assert not given.is_closed
            assert bot.services.pool.client is None  # the agent created none of its own
            assert len({r.client_port for r in server.requests}) == 1


def test_run_sync_twice_uses_a_client_per_loop_and_closes_it() -> None:
    with FakeOpenAIServer([text("one"), text("two")]) as server:
        bot = _agent(server.base_url)
        assert bot.run_sync("a")["turns"][-1]["output"] == "one"
        assert bot.services.pool.client is None  # released when its loop ended
        assert bot.run_sync("b")["turns"][-1]["output"] == "two"
        assert bot.services.pool.client is None


def test_a_run_in_another_event_loop_gets_a_new_client() -> None:
    with FakeOpenAIServer([text("one"), text("two")]) as server:
        bot = _agent(server.base_url)
        clients = []

        async def run(message: str) -> Any:
            session = await bot.run(message)
            clients.append(bot.services.pool.client)
            await clients[-1].aclose()  # (this test's own cleanup; the agent's client stays set)
            return session

        assert asyncio.run(run("a"))["turns"][-1]["output"] == "one"
        assert asyncio.run(run("b"))["turns"][-1]["output"] == "two"
        assert clients[0] is not clients[1]
        asyncio.run(bot.aclose())  # from a third loop: the second loop's client is only dropped
        assert bot.services.pool.client is None


async def test_concurrent_runs_share_one_client() -> None:
    with FakeOpenAIServer([text("same")] * 5) as server:
        async with _agent(server.base_url) as bot:
            sessions = await asyncio.gather(*(bot.run(str(i)) for i in range(5)))
            assert [s["turns"][-1]["output"] for s in sessions] == ["same"] * 5
            assert isinstance(bot.services.pool.client, PoolWire)


async def test_with_a_proxy_in_the_environment_the_agent_uses_httpx(monkeypatch: Any) -> None:
    """httpx honours the proxy variables (and NO_PROXY); the pool would not."""
    monkeypatch.setenv("HTTPS_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    with FakeOpenAIServer([text("one")]) as server:
        async with _agent(server.base_url) as bot:
            assert (await bot.run("a"))["turns"][-1]["output"] == "one"
            client = bot.services.pool.client
            assert isinstance(client, HttpxWire) and isinstance(client.client, httpx.AsyncClient)
        assert client.is_closed
