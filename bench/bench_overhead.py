"""Provider and agent overhead against a raw httpx loop, on the fake OpenAI server.

Run it from the repository root::

    .venv/bin/python bench/bench_overhead.py            # full run
    .venv/bin/python bench/bench_overhead.py --quick    # a smoke run in a few seconds

The fake server runs in a child process, so the CPU time measured here is the client's only.
Each pair is measured interleaved (ours, raw, ours, raw, ...) so drift hits both alike:

1. one chat request, streaming and not: ``OpenAIProvider.stream`` vs raw httpx + json;
2. a two-round tool loop (call a tool, answer): a generated agent (compiled from a
   ``.agent`` source, bindings rendered and imported, native protocol) vs a raw httpx loop
   sending the same two requests;
3. the same tool loop, 200 runs at once;
4. import time of ``auwgent.runtime``, of the runtime plus a generated module, and of that
   plus building the agent (``auwgent(config)``), each in fresh interpreters.

Reported: per-run wall and CPU medians (ms) and ours/raw ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import importlib
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx

from auwgent.runtime.providers import Message, ModelRequest, OpenAIProvider, RetryPolicy, Timeouts
from auwgent.testing.fake_servers import FakeOpenAIServer, RecordedRequest, Turn, text, tool_calls

AGENT_SOURCE = """
model Brain {
    provider: openai("gpt-4o", { temperature: 0 })
}
agent Main {
    default config {
        model: Brain
        prompt: "You are a weather assistant. Use your tools."
    }
    tool get_weather(location: string): string @desc "Gets the current weather for a location"
}
"""
ANSWER = "It is sunny in Accra, 31 degrees, with a light breeze from the south-west."
AUTH = {"Authorization": "Bearer sk-bench"}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "tool__get_weather",
            "description": "Gets the current weather for a location",
            "parameters": {
                "type": "object",
                "properties": {"location": {"type": "string"}},
                "required": ["location"],
                "additionalProperties": False,
            },
        },
    }
]


def _reply(request: RecordedRequest) -> Turn:
    """Tool call when tools are offered and none has answered yet; otherwise the answer."""
    messages = (request.body or {}).get("messages") or []
    if (request.body or {}).get("tools") and not any(m.get("role") == "tool" for m in messages):
        return tool_calls([("tool__get_weather", {"location": "Accra"})])
    return text(ANSWER)


def serve(chunk_size: int) -> None:
    """Child process: run the fake server until stdin closes."""
    with FakeOpenAIServer(_reply, chunk_size=chunk_size) as server:
        print(server.base_url, flush=True)
        sys.stdin.read()


# -- the raw httpx baseline -------------------------------------------------------------------


async def raw_request(client: httpx.AsyncClient, base: str, body: dict[str, Any]) -> dict[str, Any]:
    """One Chat Completions request; returns {"text", "calls"} like a careful hand-written loop."""
    url = f"{base}/chat/completions"
    if not body.get("stream"):
        response = await client.post(url, json=body, headers=AUTH)
        response.raise_for_status()
        message = response.json()["choices"][0]["message"]
        whole = [
            (c["id"], c["function"]["name"], c["function"]["arguments"])
            for c in message.get("tool_calls") or []
        ]
        return {"text": message.get("content") or "", "calls": whole}
    parts: list[str] = []
    calls: dict[int, list[str]] = {}
    async with client.stream("POST", url, json=body, headers=AUTH) as response:
        response.raise_for_status()
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            for choice in chunk["choices"]:
                delta = choice["delta"]
                if delta.get("content"):
                    parts.append(delta["content"])
                for tc in delta.get("tool_calls") or []:
                    entry = calls.setdefault(tc["index"], ["", "", ""])
                    entry[0] = tc.get("id") or entry[0]
                    entry[1] = tc.get("function", {}).get("name") or entry[1]
                    entry[2] += tc.get("function", {}).get("arguments") or ""
    return {"text": "".join(parts), "calls": [tuple(calls[i]) for i in sorted(calls)]}


async def raw_tool_loop(client: httpx.AsyncClient, base: str) -> str:
    """Two rounds: the model calls get_weather, we run it, the model answers.

    The requests are the agent's, byte for byte in size: the same system prompt with its date
    line, the same tool schema, the same API key header.
    """
    now = datetime.now(timezone.utc).replace(microsecond=0)
    system = (
        "You are a weather assistant. Use your tools.\n\n"
        f"Current date and time: {now.isoformat()} ({now:%A, %d %B %Y %H:%M} UTC)"
    )
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system},
        {"role": "user", "content": "What is the weather in Accra?"},
    ]
    common = {
        "model": "gpt-4o",
        "temperature": 0,
        "tools": TOOLS,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    first = await raw_request(client, base, {**common, "messages": messages})
    call_id, name, arguments = first["calls"][0]
    result = await _get_weather(**json.loads(arguments))
    messages.append(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }
            ],
        }
    )
    messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
    second = await raw_request(client, base, {**common, "messages": messages})
    return str(second["text"])


# -- ours -------------------------------------------------------------------------------------


async def provider_request(provider: OpenAIProvider, stream: bool) -> str:
    request = ModelRequest(
        model="gpt-4o",
        system="You are a weather assistant.",
        messages=(Message("user", "What is the weather in Accra?"),),
        options={"temperature": 0},
        stream=stream,
    )
    parts = [e.text async for e in provider.stream(request) if hasattr(e, "text")]
    return "".join(parts)


def load_generated_module(workdir: Path) -> Any:
    """Compile AGENT_SOURCE, render its Python bindings into ``workdir`` and import them."""
    from auwgent.codegen.python import render_python
    from auwgent.compiler.pipeline import compile_sources

    result = compile_sources({"main.agent": AGENT_SOURCE})
    if not result.ok:
        raise SystemExit("\n".join(str(d) for d in result.diagnostics))
    (workdir / "bench_main_agent.py").write_text(render_python(result.documents["main.agent"]))
    sys.path.insert(0, str(workdir))
    return importlib.import_module("bench_main_agent")


def make_agent(module: Any, base: str, client: httpx.AsyncClient) -> Any:
    return module.auwgent(
        {
            "apiKeys": {"openaiApiKey": "sk-bench"},
            "baseUrls": {"openai": base},
            "httpClient": client,
            "protocol": "native",
            # An async tool, as the manual writes them; a sync tool would run in a worker
            # thread (so that several calls of one round run together), which costs ~0.2 ms.
            "tools": {"get_weather": _get_weather},
        }
    )


async def _get_weather(location: str) -> str:
    return f"sunny in {location}"


class AgentRunner:
    """One agent, built once like an application would, run as often as asked."""

    def __init__(self, module: Any, base: str, client: httpx.AsyncClient) -> None:
        self.agent = make_agent(module, base, client)
        self.answers: list[str] = []
        self.agent.on_intent(self._on_intent)

    def _on_intent(self, name: str, value: Any, agent_name: str) -> None:
        if name == "response_text":
            self.answers.append(value["text"])

    async def run(self) -> None:
        before = len(self.answers)
        session = await self.agent.run("What is the weather in Accra?")
        if len(self.answers) == before:
            raise RuntimeError(f"agent run failed: {json.dumps(session)[:500]}")


# -- measuring --------------------------------------------------------------------------------


Runner = Callable[[], Awaitable[Any]]


async def measure_pair(ours: Runner, raw: Runner, runs: int, warmup: int) -> dict[str, list[float]]:
    for _ in range(warmup):
        await ours()
        await raw()
    samples: dict[str, list[float]] = {
        "ours_wall": [],
        "ours_cpu": [],
        "raw_wall": [],
        "raw_cpu": [],
    }
    for _ in range(runs):
        for label, runner in (("ours", ours), ("raw", raw)):
            wall, cpu = time.perf_counter(), time.process_time()
            await runner()
            samples[f"{label}_wall"].append(time.perf_counter() - wall)
            samples[f"{label}_cpu"].append(time.process_time() - cpu)
    return samples


async def measure_concurrent(
    ours: Runner, raw: Runner, n: int, repeats: int
) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {
        "ours_wall": [],
        "ours_cpu": [],
        "raw_wall": [],
        "raw_cpu": [],
    }
    for _ in range(repeats):
        for label, runner in (("ours", ours), ("raw", raw)):
            wall, cpu = time.perf_counter(), time.process_time()
            await asyncio.gather(*(runner() for _ in range(n)))
            samples[f"{label}_wall"].append((time.perf_counter() - wall) / n)
            samples[f"{label}_cpu"].append((time.process_time() - cpu) / n)
    return samples


def report(title: str, samples: dict[str, list[float]]) -> None:
    med = {k: statistics.median(v) * 1000 for k, v in samples.items()}
    print(
        f"{title:<34} wall ours {med['ours_wall']:7.3f} ms  raw {med['raw_wall']:7.3f} ms"
        f"  ratio {med['ours_wall'] / med['raw_wall']:5.2f}x | cpu ours {med['ours_cpu']:7.3f} ms"
        f"  raw {med['raw_cpu']:7.3f} ms  ratio {med['ours_cpu'] / med['raw_cpu']:5.2f}x"
    )


def import_time(statement: str, env_path: str | None, repeats: int) -> float:
    code = (
        "import sys, time\n"
        + (f"sys.path.insert(0, {env_path!r})\n" if env_path else "")
        + "t = time.perf_counter()\n"
        + statement
        + "\nprint(time.perf_counter() - t)"
    )
    times = []
    for _ in range(repeats):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        times.append(float(out.stdout.strip()))
    return statistics.median(times) * 1000


async def main(args: argparse.Namespace) -> None:
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--chunk-size", str(args.chunk_size)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdin is not None
    base = child.stdout.readline().strip()
    limits = httpx.Limits(
        max_connections=args.concurrency + 16, max_keepalive_connections=args.concurrency + 16
    )
    workdir = Path(tempfile.mkdtemp(prefix="auwgent-bench-"))
    try:
        async with httpx.AsyncClient(limits=limits) as client:
            provider = OpenAIProvider(
                client=client,
                api_key="sk-bench",
                base_url=base,
                retry=RetryPolicy(attempts=1),
                timeouts=Timeouts(),
            )
            module = load_generated_module(workdir)
            print(
                f"fake server {base}, chunk size {args.chunk_size}, {args.runs} runs per variant\n"
            )
            for stream in (True, False):
                body: dict[str, Any] = {
                    "model": "gpt-4o",
                    "temperature": 0,
                    "stream": stream,
                    "messages": [
                        {"role": "system", "content": "You are a weather assistant."},
                        {"role": "user", "content": "What is the weather in Accra?"},
                    ],
                }
                if stream:
                    body["stream_options"] = {"include_usage": True}
                samples = await measure_pair(
                    functools.partial(provider_request, provider, stream),
                    functools.partial(raw_request, client, base, body),
                    args.runs,
                    args.warmup,
                )
                report(f"one request, {'streaming' if stream else 'non-streaming'}", samples)
            runner = AgentRunner(module, base, client)
            samples = await measure_pair(
                runner.run, lambda: raw_tool_loop(client, base), args.runs, args.warmup
            )
            report("two-round tool loop (agent)", samples)
            samples = await measure_concurrent(
                runner.run, lambda: raw_tool_loop(client, base), args.concurrency, args.repeats
            )
            report(f"{args.concurrency} concurrent tool loops (per run)", samples)
            started = time.perf_counter()
            for _ in range(args.runs):
                make_agent(module, base, client)
            per_agent = (time.perf_counter() - started) / args.runs * 1000
            print(f"building the agent (auwgent(config)), once per application: {per_agent:.3f} ms")
    finally:
        child.stdin.close()
        child.wait(timeout=10)
    runtime = import_time("import auwgent.runtime", None, args.import_repeats)
    generated = import_time("import bench_main_agent", str(workdir), args.import_repeats)
    built = import_time(
        "import bench_main_agent\n"
        "bench_main_agent.auwgent({'apiKeys': {'openaiApiKey': 'sk-bench'}})",
        str(workdir),
        args.import_repeats,
    )
    print(
        f"\nimport auwgent.runtime: {runtime:.1f} ms (median of {args.import_repeats} fresh interpreters)"
    )
    print(f"import runtime + generated module: {generated:.1f} ms")
    print(f"import runtime + generated module + auwgent(config): {built:.1f} ms (target 120 ms)")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5, help="repeats of the concurrent batch")
    parser.add_argument("--import-repeats", type=int, default=7)
    parser.add_argument("--chunk-size", type=int, default=16)
    parser.add_argument("--quick", action="store_true", help="few runs, for a smoke test")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.runs, args.warmup, args.concurrency, args.repeats, args.import_repeats = (
            20,
            3,
            50,
            2,
            3,
        )
    return args


if __name__ == "__main__":
    arguments = parse_args()
    if arguments.serve:
        serve(arguments.chunk_size)
    else:
        asyncio.run(main(arguments))
