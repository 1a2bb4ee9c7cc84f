"""Timing promises: calls of one response run concurrently, a tool starts as soon as its block
closes (while the model is still writing), Retry-After is honoured, idle streams time out."""

from __future__ import annotations

import asyncio
import threading
import time
from types import ModuleType
from typing import Any

import pytest

from auwgent import inline_tool
from auwgent.testing import FakeOpenAIServer, stall, status, text

from ._project import Recorder, generate

PROGRAM = """
agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "You are quick."
    }
    tool slow_a(x: string): string @desc "Slow A"
    tool slow_b(x: string): string @desc "Slow B"
}
"""

CALLS = "[tool_call: slow_a]\nx: 1\n[/tool_call]\n[tool_call: slow_b]\nx: 2\n[/tool_call]"


@pytest.fixture(scope="module")
def main(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    return generate(tmp_path_factory.mktemp("timing"), {"main.agent": PROGRAM})["main"]


def config(server: FakeOpenAIServer, tools: Any, **extra: Any) -> dict[str, Any]:
    return {
        "apiKeys": {"openaiApiKey": "k"},
        "baseUrls": {"openai": server.base_url},
        "tools": tools,
        **extra,
    }


async def test_async_tools_of_one_response_run_concurrently(main: ModuleType) -> None:
    running = 0
    both = asyncio.Event()

    async def meet() -> None:
        # Returns only once both tools are running at the same time (else times out).
        nonlocal running
        running += 1
        if running == 2:
            both.set()
        await asyncio.wait_for(both.wait(), timeout=5)

    class Tools(main.AuwgentTools):  # type: ignore[name-defined, misc]
        async def slow_a(self, x: str) -> str:
            await meet()
            return "a"

        async def slow_b(self, x: str) -> str:
            await meet()
            return "b"

    seen = Recorder()
    with FakeOpenAIServer([text(CALLS), text("Both done.")]) as server:
        agent = main.auwgent(config(server, Tools))
        agent.on_intent(seen)
        await agent.run("Run both")
    assert sorted(r["result"] for r in seen.payloads("tool_result")) == ["a", "b"]


async def test_sync_tools_run_in_worker_threads_concurrently(main: ModuleType) -> None:
    barrier = threading.Barrier(2, timeout=5)

    def slow_a(x: str) -> str:
        barrier.wait()  # only returns once both tools are running at the same time
        return "a"

    def slow_b(x: str) -> str:
        barrier.wait()
        return "b"

    seen = Recorder()
    with FakeOpenAIServer([text(CALLS), text("Both done.")]) as server:
        agent = main.auwgent(config(server, {"slow_a": slow_a, "slow_b": slow_b}))
        agent.on_intent(seen)
        await agent.run("Run both")
    assert sorted(r["result"] for r in seen.payloads("tool_result")) == ["a", "b"]


async def test_a_sync_tool_marked_inline_runs_on_the_event_loop_others_in_threads(
    main: ModuleType,
) -> None:
    threads: dict[str, int] = {}

    class Tools:
        @inline_tool
        def slow_a(self, x: str) -> str:
            threads["a"] = threading.get_ident()
            return "a"

        def slow_b(self, x: str) -> str:
            threads["b"] = threading.get_ident()
            return "b"

    seen = Recorder()
    with FakeOpenAIServer([text(CALLS), text("Both done.")]) as server:
        agent = main.auwgent(config(server, Tools))
        agent.on_intent(seen)
        await agent.run("Run both")
    assert sorted(r["result"] for r in seen.payloads("tool_result")) == ["a", "b"]
    assert threads["a"] == threading.get_ident()  # the loop's own thread
    assert threads["b"] != threading.get_ident()


async def test_a_tool_starts_while_the_model_is_still_writing(main: ModuleType) -> None:
    ran_at: list[float] = []

    def slow_a(x: str) -> str:
        ran_at.append(time.monotonic())
        return "a"

    reply = text("[tool_call: slow_a]\nx: 1\n[/tool_call]\nAnd now some more commentary here.")
    script = [stall(2.0, after_chunks=7, reply=reply), text("Done.")]
    with FakeOpenAIServer(script, chunk_size=8) as server:
        agent = main.auwgent(config(server, {"slow_a": slow_a}))
        agent.on_intent_partial(lambda name, value, who: None)  # streamed: partials are read
        await agent.run("Go")
        finished = time.monotonic()
    # The tool ran before the 2 s pause in the middle of the answer, not after the answer: a
    # loaded machine only widens the gap (it delays what comes after the pause too).
    assert ran_at and finished - ran_at[0] > 1.5


async def test_retry_after_is_honoured(main: ModuleType) -> None:
    with FakeOpenAIServer([status(429, retry_after=1), text("OK.")]) as server:
        agent = main.auwgent(config(server, {}))
        started = time.monotonic()
        await agent.run("hello")
        elapsed = time.monotonic() - started
    assert len(server.requests) == 2
    assert elapsed >= 0.9


async def test_an_idle_stream_times_out_into_an_error(main: ModuleType) -> None:
    seen = Recorder()
    reply = text("This answer stops in the middle of a sentence and never")
    with FakeOpenAIServer([stall(30, after_chunks=2, reply=reply)] * 3) as server:
        agent = main.auwgent(config(server, {}, timeouts={"idle": 0.3}, retry={"attempts": 1}))
        agent.on_intent(seen)
        started = time.monotonic()
        await agent.run("hello")
    assert time.monotonic() - started < 15  # the 30 s stall was cut short
    assert seen.names == ["error"]
