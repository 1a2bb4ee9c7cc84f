"""200 concurrent runs through ``auwgent serve`` against the same runs in-process.

Both sides run the same agent on the same fake OpenAI server, each run in its own conversation
on a SQLite store. The fake server runs in a child process, so the CPU this process spends is
the in-process agent's (or the serve client's) alone, and the serve worker's is read from
``/proc``. Three sides, rounds interleaved:

- in-process, ``agent.stream()`` read to its end with a ``SessionStoreMiddleware``: the run a
  serve worker makes (it streams, as its client reads partials), and ``agent.run()`` beside it;
- through serve: one ``auwgent serve`` worker with a SQLite store, driven by the cheapest
  client (HTTP/1.1 by hand over asyncio streams, ``bench/floors.py``) that reads each SSE
  stream to its end;
- two workers on the same SQLite file, the runs split between them: the throughput a second
  worker adds (on a 2-core machine, which also runs the fake server and the client).

It prints medians of wall time per batch, the ratio to in-process ``stream()``, CPU per run
of the worker against the in-process agent, and the in-process cost of tracing when it is off
(no tracer) against on (a no-op exporter).

The durable rows: one worker with a PostgreSQL store, and one with the same store and
``--durable dbos`` (every run a DBOS workflow on a queue, its events read back from the
PostgreSQL event log), on a PostgreSQL started for the bench (``tests/servers.py``); the
ratio is the durable worker's against the plain one on the same database.

Run: ``.venv/bin/python bench/bench_serve.py [--runs 200] [--rounds 3] [--no-durable]``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import httpx
from floors import StreamsClient

from auwgent.compiler.pipeline import compile_sources
from auwgent.runtime.agent import agent_from_ir
from auwgent.runtime.stores import SessionStoreMiddleware, SQLiteSessionStore
from auwgent.serve_stream import DEFAULT_STREAM_BUFFER, EventBuffer
from auwgent.testing import FakeOpenAIServer, text

AGENT = """
agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "You are a helpful assistant."
    }
}
"""

APP = """
import os

def config(agent_name):
    return {"apiKeys": {"openaiApiKey": "sk"}, "baseUrls": {"openai": os.environ["FAKE_URL"]}}
"""


def answer(request: Any) -> Any:
    return text("[response_text]\nHello there, how can I help?\n[/response_text]")


def fake_child() -> None:
    """Child process: the fake server until stdin closes."""
    with FakeOpenAIServer(answer) as fake:
        print(fake.base_url, flush=True)
        sys.stdin.read()


def doc() -> Any:
    return compile_sources({"main.agent": AGENT}).documents["main.agent"]


def make(base_url: str, store_path: Path, **extra: Any) -> Any:
    document = doc()
    config = {
        "apiKeys": {"openaiApiKey": "sk"},
        "baseUrls": {"openai": base_url},
        "middleware": [SessionStoreMiddleware(SQLiteSessionStore(store_path))],
        **extra,
    }
    return agent_from_ir(document, config)


async def batch(one: Callable[[int], Awaitable[None]], runs: int) -> float:
    started = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(runs)))
    return time.perf_counter() - started


def in_process(agent: Any, runs: int, tag: str, stream: bool) -> float:
    async def one(i: int) -> None:
        if stream:
            async for _ in agent.stream("hello", conversation_id=f"{tag}-{i}"):
                pass
        else:
            await agent.run("hello", conversation_id=f"{tag}-{i}")

    return asyncio.run(batch(one, runs))


def through_serve(urls: list[str], runs: int, tag: str) -> float:
    async def main() -> float:
        client = StreamsClient()

        async def one(i: int) -> None:
            body = {"input": "hello", "conversation_id": f"{tag}-{i}"}
            url = f"{urls[i % len(urls)]}/v1/agents/Main/runs"
            async with client.stream("POST", url, json=body, headers={}) as response:
                assert response.status_code == 200, response.status_code
                events = [
                    line async for line in response.aiter_lines() if line.startswith("event:")
                ]
            assert events[-1] == "event: session", events[-3:]

        try:
            return await batch(one, runs)
        finally:
            await client.aclose()

    return asyncio.run(main())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(
    folder: Path, fake_url: str, store: str | None = None, *extra: str
) -> tuple[subprocess.Popen[bytes], str]:
    if not (folder / "agents").exists():
        (folder / "agents").mkdir()
        (folder / "agents" / "main.agent").write_text(AGENT, encoding="utf-8")
        (folder / "app.py").write_text(textwrap.dedent(APP), encoding="utf-8")
    store = store or f"sqlite:///{folder / 'serve.db'}"
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "auwgent", "serve", "agents", "--app", "app:config",
         "--port", str(port), "--store", store, *extra],
        cwd=folder, env={**os.environ, "FAKE_URL": fake_url, "PYTHONPATH": str(folder)},
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return process, url
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError("auwgent serve did not start")


def cpu_of(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has spent."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def tracing_cost(base_url: str, folder: Path, runs: int) -> tuple[float, float]:
    from opentelemetry.sdk.trace import TracerProvider

    off = make(base_url, folder / "off.db")
    on = make(base_url, folder / "on.db", tracerProvider=TracerProvider())
    times: dict[str, list[float]] = {"off": [], "on": []}

    async def measure() -> None:
        for r in range(5):
            for name, agent in (("off", off), ("on", on)):
                started = time.process_time()
                for i in range(runs):
                    await agent.run("hello", conversation_id=f"t{name}{r}-{i}")
                times[name].append((time.process_time() - started) / runs)

    asyncio.run(measure())
    return statistics.median(times["off"]), statistics.median(times["on"])


class Sides:
    """Each side's wall time per batch, and CPU per run of its agent (this process, or the
    serve workers), of this process when it is the client, and of the fake server."""

    def __init__(self, fake: int) -> None:
        self.fake = fake
        self.wall: dict[str, list[float]] = {}
        self.cpu: dict[str, list[tuple[float, float, float]]] = {}

    def time(
        self, name: str, runs: int, go: Callable[[], float], workers: Sequence[int] = ()
    ) -> None:
        before = (sum(cpu_of(pid) for pid in workers), own_cpu(), cpu_of(self.fake))
        wall = go()
        after = (sum(cpu_of(pid) for pid in workers), own_cpu(), cpu_of(self.fake))
        agent, client, fake = (b - a for a, b in zip(before, after, strict=True))
        if not workers:  # in-process: this process is the agent, there is no client
            agent, client = client, 0.0
        self.wall.setdefault(name, []).append(wall)
        self.cpu.setdefault(name, []).append((agent / runs, client / runs, fake / runs))

    def report(self, runs: int, rounds: int) -> None:
        base = statistics.median(self.wall["in-process stream()"])
        print(f"{runs} concurrent runs, median of {rounds} rounds; CPU in ms per run:")
        print(f"  {'':<24}{'wall ms':>9}{'ratio':>8}{'agent':>8}{'client':>8}{'fake':>8}")
        for name, walls in self.wall.items():
            wall = statistics.median(walls)
            agent, client, fake = (
                statistics.median(c) * 1000 for c in zip(*self.cpu[name], strict=True)
            )
            print(
                f"  {name:<24}{wall * 1000:9.1f}{wall / base:7.2f}x"
                f"{agent:8.2f}{client:8.2f}{fake:8.2f}"
            )
        one = statistics.median(self.wall["serve, 1 worker"])
        two = statistics.median(self.wall["serve, 2 workers"])
        print(f"  a second worker: throughput x{one / two:.2f}")


def encoding_cost(rounds: int = 20_000) -> dict[str, float]:
    """Microseconds to put one event through a response's buffer and take its bytes out (JSON
    encoding, framing, the buffer's bookkeeping): a text partial, and a final intent."""
    partial = {
        "name": "response_text",
        "value": {"partial": True, "complete": False, "mode": "text", "segment": 0,
                  "delta": "Hello there, "},
        "agent": "Main",
    }  # fmt: skip
    final = {"text": "Hello there, how can I help?"}
    costs: dict[str, float] = {}
    for name, put in (
        ("text partial", lambda b: b.put_partial(partial)),
        ("final intent", lambda b: b.put_intent("response_text", final, "Main")),
    ):

        async def drain(put: Callable[[EventBuffer], None] = put) -> float:
            buffer = EventBuffer(DEFAULT_STREAM_BUFFER)
            pieces = buffer.events()
            started = time.process_time()
            for _ in range(rounds):
                put(buffer)
                await pieces.__anext__()
            return (time.process_time() - started) / rounds

        costs[name] = statistics.median(asyncio.run(drain()) for _ in range(5)) * 1e6
    return costs


def durable_cost(folder: Path, fake_url: str, runs: int, rounds: int) -> tuple[float, float]:
    """Median wall time of ``runs`` concurrent runs: plain serve on a PostgreSQL store, and
    the same with ``--durable dbos``."""
    sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))
    from servers import postgres_server

    with postgres_server() as pg:
        plain = start_server(folder, fake_url, pg)
        durable = start_server(
            folder, fake_url, pg, "--durable", "dbos", "--durable-concurrency", str(runs)
        )
        times: dict[str, list[float]] = {"plain": [], "durable": []}
        try:
            for r in range(rounds):
                for name, (_, url) in (("plain", plain), ("durable", durable)):
                    times[name].append(through_serve([url], runs, f"{name}{r}"))
        finally:
            for process, _ in (plain, durable):
                process.terminate()
                process.wait(timeout=60)
    return statistics.median(times["plain"]), statistics.median(times["durable"])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--fake", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--no-durable", action="store_true", help="leave out the durable rows")
    args = parser.parse_args(argv)
    if args.fake:
        fake_child()
        return 0
    child = subprocess.Popen(
        [sys.executable, __file__, "--fake"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert child.stdout is not None and child.stdin is not None
    fake_url = child.stdout.readline().decode().strip()
    sides = Sides(child.pid)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        one, url = start_server(folder, fake_url, f"sqlite:///{folder / 'one.db'}")
        two = [start_server(folder, fake_url, f"sqlite:///{folder / 'two.db'}") for _ in range(2)]
        try:
            agent = make(fake_url, folder / "local.db")
            n = args.runs
            in_process(agent, n, "warm", stream=True)
            through_serve([url], n, "warm")
            through_serve([u for _, u in two], n, "warm2")
            urls, pids = [u for _, u in two], [p.pid for p, _ in two]
            for r in range(args.rounds):
                sides.time("in-process stream()", n, partial(in_process, agent, n, f"s{r}", True))
                sides.time("in-process run()", n, partial(in_process, agent, n, f"r{r}", False))
                serve_one = partial(through_serve, [url], n, f"v{r}")
                sides.time("serve, 1 worker", n, serve_one, [one.pid])
                sides.time("serve, 2 workers", n, partial(through_serve, urls, n, f"w{r}"), pids)
        finally:
            for process in [one, *(p for p, _ in two)]:
                process.terminate()
                process.wait(timeout=30)
        off, on = tracing_cost(fake_url, folder, 20)
        durable = None
        if not args.no_durable:
            durable = durable_cost(folder, fake_url, args.runs, args.rounds)
    child.stdin.close()
    child.wait(timeout=30)
    sides.report(args.runs, args.rounds)
    print("one event through a response's buffer, CPU (median of 5 x 20,000):")
    for name, micros in encoding_cost().items():
        print(f"  {name:<20}{micros:8.2f} us")
    print("one run in-process, CPU (median of 5 x 20 runs):")
    print(f"  tracing off         {off * 1000:8.2f} ms")
    print(f"  tracing on (no-op)  {on * 1000:8.2f} ms   ratio {on / off:.2f}x")
    if durable is not None:
        plain_pg, durable_pg = durable
        print(f"{args.runs} concurrent runs through serve on PostgreSQL (wall):")
        print(f"  plain               {plain_pg * 1000:8.1f} ms")
        print(
            f"  --durable dbos      {durable_pg * 1000:8.1f} ms   ratio {durable_pg / plain_pg:.2f}x"
            f"   ({(durable_pg - plain_pg) / args.runs * 1000:.2f} ms more per run)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
