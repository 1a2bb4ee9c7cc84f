"""Provider and agent overhead against a raw httpx loop, on the fake OpenAI server.

Run it from the repository root::

    .venv/bin/python bench/bench_overhead.py            # full run
    .venv/bin/python bench/bench_overhead.py --quick    # a smoke run in a few seconds

The fake server runs in a child process, so the CPU time measured here is the client's only.
The variants of each measurement run interleaved (round robin, the order rotating each round)
so drift hits all alike:

1. one chat request, streaming and not: ``OpenAIProvider.stream`` vs raw httpx + json;
2. a two-round tool loop (call a tool, answer), streaming and not: a generated agent
   (compiled from a ``.agent`` source, bindings rendered and imported, native protocol) vs a
   raw httpx loop sending the same two requests, and, when they are installed, PydanticAI and
   the OpenAI Agents SDK running the same tool against the same script;
3. the streaming tool loop, 200 runs at once;
4. import time of ``auwgent.runtime``, of the runtime plus a generated module, and of that
   plus building the agent (``auwgent(config)``), each in fresh interpreters (and of the
   frameworks, when installed).

The frameworks are optional extras, installed only for the benchmark, in a virtualenv of
their own (never the test venv)::

    python3.11 -m venv /tmp/bench-venv
    /tmp/bench-venv/bin/pip install -e . -r bench/frameworks.txt
    /tmp/bench-venv/bin/python bench/bench_overhead.py

Every tool-loop variant uses an API key of its own; the fake server tallies the requests per
key, and the run fails unless each variant made exactly its two requests (a tool call, then
the answer) per run and returned the scripted answer.

Reported: per-run wall and CPU medians (ms) and ratios to raw httpx and to ours.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import importlib
import importlib.util
import itertools
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
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
PROMPT = "You are a weather assistant. Use your tools."
QUESTION = "What is the weather in Accra?"
ANSWER = "It is sunny in Accra, 31 degrees, with a light breeze from the south-west."
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
INSTALL_HINT = (
    "python3.11 -m venv /tmp/bench-venv && "
    "/tmp/bench-venv/bin/pip install -e . -r bench/frameworks.txt"
)

# -- the fake server (child process) ----------------------------------------------------------

# Requests per API key and round, counted in the child: ("sk-bench-raw", "tool_call") -> n.
_tally: Counter[tuple[str, str]] = Counter()
_tally_lock = threading.Lock()


def _reply(request: RecordedRequest) -> Turn:
    """Tool call when tools are offered and none has answered yet; otherwise the answer.

    The call names the first offered tool, so every framework gets the same script whatever
    it names the tool (ours prefixes it with ``tool__``).
    """
    body = request.body or {}
    messages = body.get("messages") or []
    key = request.headers.get("authorization", "").removeprefix("Bearer ")
    if body.get("tools") and not any(m.get("role") == "tool" for m in messages):
        with _tally_lock:
            _tally[key, "tool_call"] += 1
        return tool_calls([(body["tools"][0]["function"]["name"], {"location": "Accra"})])
    with _tally_lock:
        _tally[key, "answer"] += 1
    return text(ANSWER)


def serve(chunk_size: int) -> None:
    """Child process: run the fake server until stdin closes, then print the tally."""
    with FakeOpenAIServer(_reply, chunk_size=chunk_size) as server:

        def forget() -> None:
            # The tally is all the bench checks; tens of thousands of recorded requests would
            # only grow the server's heap, and its garbage collections slow the later phases.
            while True:
                time.sleep(0.5)
                server.requests.clear()

        threading.Thread(target=forget, daemon=True).start()
        print(server.base_url, flush=True)
        sys.stdin.read()
    print(json.dumps([[key, round_, n] for (key, round_), n in _tally.items()]), flush=True)


# -- the raw httpx baseline -------------------------------------------------------------------


async def raw_request(
    client: Any, base: str, body: dict[str, Any], api_key: str = "sk-bench"
) -> dict[str, Any]:
    """One Chat Completions request; returns {"text", "calls"} like a careful hand-written loop.

    ``client`` is an ``httpx.AsyncClient`` or an ``httpx2.AsyncClient`` (same API).
    """
    url = f"{base}/chat/completions"
    headers = {"Authorization": f"Bearer {api_key}"}
    if not body.get("stream"):
        response = await client.post(url, json=body, headers=headers)
        response.raise_for_status()
        message = response.json()["choices"][0]["message"]
        whole = [
            (c["id"], c["function"]["name"], c["function"]["arguments"])
            for c in message.get("tool_calls") or []
        ]
        return {"text": message.get("content") or "", "calls": whole}
    parts: list[str] = []
    calls: dict[int, list[str]] = {}
    async with client.stream("POST", url, json=body, headers=headers) as response:
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


async def raw_tool_loop(client: Any, base: str, api_key: str, stream: bool) -> str:
    """Two rounds: the model calls get_weather, we run it, the model answers.

    The requests are the agent's, byte for byte in size: the same system prompt with its date
    line, the same tool schema, an API key header of the same shape.
    """
    now = datetime.now(timezone.utc).replace(microsecond=0)
    system = f"{PROMPT}\n\nCurrent date and time: {now.isoformat()} ({now:%A, %d %B %Y %H:%M} UTC)"
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": system},
        {"role": "user", "content": QUESTION},
    ]
    common: dict[str, Any] = {"model": "gpt-4o", "temperature": 0, "tools": TOOLS}
    if stream:
        common |= {"stream": True, "stream_options": {"include_usage": True}}
    first = await raw_request(client, base, {**common, "messages": messages}, api_key)
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
    second = await raw_request(client, base, {**common, "messages": messages}, api_key)
    return str(second["text"])


# -- ours -------------------------------------------------------------------------------------


async def provider_request(provider: OpenAIProvider, stream: bool) -> str:
    request = ModelRequest(
        model="gpt-4o",
        system="You are a weather assistant.",
        messages=(Message("user", QUESTION),),
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


def make_agent(module: Any, base: str, client: httpx.AsyncClient, api_key: str = "sk-bench") -> Any:
    return module.auwgent(
        {
            "apiKeys": {"openaiApiKey": api_key},
            "baseUrls": {"openai": base},
            "httpClient": client,
            "protocol": "native",
            # An async tool, as the manual writes them; a sync tool would run in a worker
            # thread (so that several calls of one round run together), which costs ~0.2 ms.
            "tools": {"get_weather": _get_weather},
        }
    )


async def _get_weather(location: str) -> str:
    """Gets the current weather for a location"""
    return f"sunny in {location}"


class AgentRunner:
    """One agent, built once like an application would, run as often as asked."""

    def __init__(self, module: Any, base: str, client: httpx.AsyncClient, api_key: str) -> None:
        self.agent = make_agent(module, base, client, api_key)
        self.answers: list[str] = []
        self.agent.on_intent(self._on_intent)

    def _on_intent(self, name: str, value: Any, agent_name: str) -> None:
        if name == "response_text":
            self.answers.append(value["text"])

    async def run(self) -> str:
        before = len(self.answers)
        session = await self.agent.run(QUESTION)
        if len(self.answers) == before:
            raise RuntimeError(f"agent run failed: {json.dumps(session)[:500]}")
        return self.answers[-1]


# -- the frameworks (optional: installed only in the bench venv) ------------------------------


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def pydantic_ai_runner(base: str, http_client: Any, api_key: str, stream: bool) -> Runner:
    """Runs of one PydanticAI agent, built once; ``run_stream`` when streaming.

    Instrumentation (OpenTelemetry / Logfire) is off by default in PydanticAI and stays off.
    """
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider as PydanticOpenAIProvider

    provider = PydanticOpenAIProvider(base_url=base, api_key=api_key, http_client=http_client)
    agent = Agent(
        OpenAIChatModel("gpt-4o", provider=provider),
        instructions=PROMPT,
        tools=[_get_weather],
        model_settings={"temperature": 0},
    )

    async def run() -> str:
        return str((await agent.run(QUESTION)).output)

    async def run_stream() -> str:
        async with agent.run_stream(QUESTION) as result:
            return str(await result.get_output())

    return run_stream if stream else run


def openai_agents_runner(base: str, http_client: Any, api_key: str, stream: bool) -> Runner:
    """Runs of one OpenAI Agents SDK agent, built once; ``Runner.run_streamed`` when streaming.

    The SDK traces every run by default (spans exported to OpenAI in a background thread);
    tracing is turned off here. The model is the Chat Completions one (the SDK's default is
    the Responses API, which the fake server does not speak).
    """
    from agents import (
        Agent,
        ModelSettings,
        OpenAIChatCompletionsModel,
        function_tool,
        set_tracing_disabled,
    )
    from agents import Runner as AgentsRunner  # not our Runner type
    from openai import AsyncOpenAI

    set_tracing_disabled(True)
    client = AsyncOpenAI(base_url=base, api_key=api_key, http_client=http_client)
    agent = Agent(
        name="Main",
        instructions=PROMPT,
        tools=[function_tool(_get_weather)],
        model=OpenAIChatCompletionsModel(model="gpt-4o", openai_client=client),
        model_settings=ModelSettings(temperature=0),
    )

    async def run() -> str:
        return str((await AgentsRunner.run(agent, QUESTION)).final_output)

    async def run_stream() -> str:
        result = AgentsRunner.run_streamed(agent, QUESTION)
        async for _ in result.stream_events():
            pass
        return str(result.final_output)

    return run_stream if stream else run


# -- measuring --------------------------------------------------------------------------------


Runner = Callable[[], Awaitable[Any]]
Samples = dict[str, dict[str, list[float]]]


class Checked:
    """A tool-loop variant: its API key, and a count of its runs to match the server's tally."""

    def __init__(self, key: str, run: Callable[[], Awaitable[str]]) -> None:
        self.key, self._run, self.runs = key, run, 0

    async def __call__(self) -> None:
        answer = await self._run()
        self.runs += 1
        if answer != ANSWER:
            raise RuntimeError(f"{self.key}: wrong answer {answer!r}")


async def measure(variants: dict[str, Runner], runs: int, warmup: int) -> Samples:
    """Round robin over the variants, starting each round one variant later."""
    names = list(variants)
    for _, name in itertools.product(range(warmup), names):
        await variants[name]()
    samples: Samples = {name: {"wall": [], "cpu": []} for name in names}
    for i in range(runs):
        shift = i % len(names)
        for name in names[shift:] + names[:shift]:
            wall, cpu = time.perf_counter(), time.process_time()
            await variants[name]()
            samples[name]["wall"].append(time.perf_counter() - wall)
            samples[name]["cpu"].append(time.process_time() - cpu)
    return samples


async def measure_concurrent(variants: dict[str, Runner], n: int, repeats: int) -> Samples:
    """``n`` runs of one variant at once, per-run time = batch time / n.

    An untimed batch of each variant first fills its connection pool, so no timed batch pays
    for opening ``n`` connections (the pools keep them: see ``keepalive_expiry`` in main).
    """
    names = list(variants)
    for name in names:
        await asyncio.gather(*(variants[name]() for _ in range(n)))
    samples: Samples = {name: {"wall": [], "cpu": []} for name in names}
    for i in range(repeats):
        shift = i % len(names)
        for name in names[shift:] + names[:shift]:
            wall, cpu = time.perf_counter(), time.process_time()
            await asyncio.gather(*(variants[name]() for _ in range(n)))
            samples[name]["wall"].append((time.perf_counter() - wall) / n)
            samples[name]["cpu"].append((time.process_time() - cpu) / n)
    return samples


def report(title: str, samples: Samples, raw: str = "raw httpx", ours: str = "auwgent") -> None:
    """Medians in ms per variant, with ratios to the raw loop and to ours."""
    med = {
        name: {k: statistics.median(v) * 1000 for k, v in s.items()} for name, s in samples.items()
    }
    print(
        f"{title}\n  {'':<32}{'wall ms':>9}{'cpu ms':>9}"
        f"{'wall/raw':>10}{'cpu/raw':>9}{'wall/ours':>11}{'cpu/ours':>10}"
    )
    for name, m in med.items():
        print(
            f"  {name:<32}{m['wall']:9.3f}{m['cpu']:9.3f}"
            f"{m['wall'] / med[raw]['wall']:9.2f}x{m['cpu'] / med[raw]['cpu']:8.2f}x"
            f"{m['wall'] / med[ours]['wall']:10.2f}x{m['cpu'] / med[ours]['cpu']:9.2f}x"
        )
    print()


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


def verify_tally(line: str, variants: list[Checked]) -> None:
    """Each variant made exactly one tool-call request and one answer request per run."""
    tally = {(key, round_): n for key, round_, n in json.loads(line)}
    wrong = [
        f"{v.key}: {v.runs} runs, {tally.get((v.key, 'tool_call'), 0)} tool-call and "
        f"{tally.get((v.key, 'answer'), 0)} answer requests"
        for v in variants
        if tally.get((v.key, "tool_call"), 0) != v.runs or tally.get((v.key, "answer"), 0) != v.runs
    ]
    if wrong:
        raise SystemExit("request tally does not match the runs:\n" + "\n".join(wrong))
    print(
        "verified: every tool-loop run made its two requests and returned the scripted answer ("
        + ", ".join(f"{v.key} {v.runs}" for v in variants)
        + " runs)"
    )


async def main(args: argparse.Namespace) -> None:
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--chunk-size", str(args.chunk_size)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdin is not None
    base = child.stdout.readline().strip()
    # Idle connections stay pooled for the whole run: with httpx's default 5 s expiry, a
    # variant's 200 connections expire while the other variants run their batches, and the
    # variant that follows the longest gap pays for reopening them all (CPU 4x the raw loop's).
    limits = httpx.Limits(
        max_connections=args.concurrency + 16,
        max_keepalive_connections=args.concurrency + 16,
        keepalive_expiry=600,
    )
    workdir = Path(tempfile.mkdtemp(prefix="auwgent-bench-"))
    frameworks = [m for m in ("pydantic_ai", "agents") if _installed(m)]
    checked: list[Checked] = []
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
            if not frameworks:
                print(
                    "PydanticAI and the OpenAI Agents SDK are not installed here; to compare "
                    f"with them: {INSTALL_HINT}\n"
                )
            for stream in (True, False):
                body: dict[str, Any] = {
                    "model": "gpt-4o",
                    "temperature": 0,
                    "stream": stream,
                    "messages": [
                        {"role": "system", "content": "You are a weather assistant."},
                        {"role": "user", "content": QUESTION},
                    ],
                }
                if stream:
                    body["stream_options"] = {"include_usage": True}
                samples = await measure(
                    {
                        "auwgent": functools.partial(provider_request, provider, stream),
                        "raw httpx": functools.partial(raw_request, client, base, body),
                    },
                    args.runs,
                    args.warmup,
                )
                report(f"one request, {'streaming' if stream else 'non-streaming'}", samples)

            def variant(key: str, run: Callable[[], Awaitable[str]]) -> Checked:
                checked.append(Checked(key, run))
                return checked[-1]

            runner = AgentRunner(module, base, client, "sk-bench-ours")
            ours = variant("sk-bench-ours", runner.run)
            streaming: dict[str, Runner] = {
                "auwgent": ours,
                "raw httpx": variant(
                    "sk-bench-raw", lambda: raw_tool_loop(client, base, "sk-bench-raw", True)
                ),
            }
            unstreamed: dict[str, Runner] = {
                "auwgent (it always streams)": ours,
                "raw httpx": variant(
                    "sk-bench-raw-unstreamed",
                    lambda: raw_tool_loop(client, base, "sk-bench-raw-unstreamed", False),
                ),
            }
            http2_client = None
            if frameworks:
                # Both frameworks sit on the OpenAI SDK, which uses httpx2 (not httpx): the raw
                # loop on httpx2 tells the HTTP client's share from the framework's. The
                # frameworks get the SDK's default client with our connection limits.
                import httpx2
                from openai import DefaultAsyncHttpx2Client

                http2_client = DefaultAsyncHttpx2Client(
                    limits=httpx2.Limits(
                        max_connections=limits.max_connections,
                        max_keepalive_connections=limits.max_keepalive_connections,
                        keepalive_expiry=limits.keepalive_expiry,
                    )
                )
                for stream, table in ((True, streaming), (False, unstreamed)):
                    key = f"sk-bench-raw2-{stream}"
                    table["raw httpx2"] = variant(
                        key,
                        functools.partial(raw_tool_loop, http2_client, base, key, stream),
                    )
            for name, label, build in (
                ("pydantic_ai", "PydanticAI", pydantic_ai_runner),
                ("agents", "OpenAI Agents SDK", openai_agents_runner),
            ):
                if name not in frameworks:
                    continue
                for stream, table in ((True, streaming), (False, unstreamed)):
                    # A key (and so an agent) per mode, so the tally checks each mode's runs.
                    key = f"sk-bench-{name}-{stream}"
                    table[label] = variant(key, build(base, http2_client, key, stream))
            samples = await measure(streaming, args.runs, args.warmup)
            report("two-round tool loop, streaming", samples)
            samples = await measure(unstreamed, args.runs, args.warmup)
            report(
                "two-round tool loop, non-streaming", samples, ours="auwgent (it always streams)"
            )
            samples = await measure_concurrent(streaming, args.concurrency, args.repeats)
            report(f"{args.concurrency} concurrent streaming tool loops (per run)", samples)
            started = time.perf_counter()
            for _ in range(args.runs):
                make_agent(module, base, client)
            per_agent = (time.perf_counter() - started) / args.runs * 1000
            print(f"building the agent (auwgent(config)), once per application: {per_agent:.3f} ms")
            if http2_client is not None:
                await http2_client.aclose()
    finally:
        child.stdin.close()
        tally = child.stdout.read()
        child.wait(timeout=10)
    verify_tally(tally, checked)
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
    if "pydantic_ai" in frameworks:
        statement = (
            "from pydantic_ai import Agent\n"
            "from pydantic_ai.models.openai import OpenAIChatModel\n"
            "from pydantic_ai.providers.openai import OpenAIProvider"
        )
        pa = import_time(statement, None, args.import_repeats)
        print(f"import PydanticAI (Agent, OpenAIChatModel, OpenAIProvider): {pa:.1f} ms")
    if "agents" in frameworks:
        oa = import_time("import agents", None, args.import_repeats)
        print(f"import agents (the OpenAI Agents SDK): {oa:.1f} ms")


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
