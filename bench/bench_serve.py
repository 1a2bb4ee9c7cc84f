"""200 concurrent runs through ``auwgent serve`` against the same runs in-process.

Both sides run the same agent on the same fake OpenAI server (a real HTTP server on
127.0.0.1), each run in its own conversation: in-process, ``agent.run`` with a
``SessionStoreMiddleware`` on a SQLite file; through ``serve``, one ``auwgent serve`` worker
with a SQLite store, driven by an ``httpx.AsyncClient`` that reads each SSE stream to its end.
The rounds alternate, and the script prints each side's median wall time and the ratio, plus
the in-process cost of tracing when it is off (no tracer) against on (a no-op exporter).

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
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import httpx

from auwgent.compiler.pipeline import compile_sources
from auwgent.runtime.agent import agent_from_ir
from auwgent.runtime.stores import SessionStoreMiddleware, SQLiteSessionStore
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


def doc() -> dict[str, Any]:
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


async def in_process(agent: Any, runs: int, tag: str) -> float:
    started = time.perf_counter()
    await asyncio.gather(*(agent.run("hello", conversation_id=f"{tag}-{i}") for i in range(runs)))
    return time.perf_counter() - started


async def through_serve(url: str, runs: int, tag: str) -> float:
    limits = httpx.Limits(max_connections=100)
    async with httpx.AsyncClient(timeout=120, limits=limits) as client:

        async def one(i: int) -> None:
            body = {"input": "hello", "conversation_id": f"{tag}-{i}"}
            async with client.stream("POST", f"{url}/v1/agents/Main/runs", json=body) as r:
                assert r.status_code == 200
                async for _ in r.aiter_bytes():
                    pass

        started = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(runs)))
        return time.perf_counter() - started


def start_server(
    folder: Path, fake_url: str, store: str | None = None, *extra: str
) -> tuple[subprocess.Popen[bytes], str]:
    if not (folder / "agents").exists():
        (folder / "agents").mkdir()
        (folder / "agents" / "main.agent").write_text(AGENT, encoding="utf-8")
        (folder / "app.py").write_text(textwrap.dedent(APP), encoding="utf-8")
    store = store or f"sqlite:///{folder / 'serve.db'}"
    with __import__("socket").socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "auwgent", "serve", "agents", "--app", "app:config",
         "--port", str(port), "--store", store, *extra],
        cwd=folder, env={**os.environ, "FAKE_URL": fake_url, "PYTHONPATH": str(folder)},
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return process, url
        except httpx.HTTPError:
            time.sleep(0.1)
    raise RuntimeError("auwgent serve did not start")


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
                    times[name].append(asyncio.run(through_serve(url, runs, f"{name}{r}")))
        finally:
            for process, _ in (plain, durable):
                process.terminate()
                process.wait(timeout=60)
    return statistics.median(times["plain"]), statistics.median(times["durable"])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--no-durable", action="store_true", help="leave out the durable rows")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp, FakeOpenAIServer(answer) as fake:
        folder = Path(tmp)
        process, url = start_server(folder, fake.base_url)
        try:
            agent = make(fake.base_url, folder / "local.db")
            local: list[float] = []
            served: list[float] = []
            for r in range(args.rounds):
                local.append(asyncio.run(in_process(agent, args.runs, f"local{r}")))
                served.append(asyncio.run(through_serve(url, args.runs, f"served{r}")))
        finally:
            process.terminate()
            process.wait(timeout=30)
        off, on = tracing_cost(fake.base_url, folder, 20)
        durable = None
        if not args.no_durable:
            durable = durable_cost(folder, fake.base_url, args.runs, args.rounds)
    local_m, served_m = statistics.median(local), statistics.median(served)
    print(f"{args.runs} concurrent runs, median of {args.rounds} rounds (wall):")
    print(f"  in-process          {local_m * 1000:8.1f} ms")
    print(f"  through serve       {served_m * 1000:8.1f} ms   ratio {served_m / local_m:.2f}x")
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
