"""Our agent against a raw httpx loop on the same fake servers, in one process run.

Run it from the repository root::

    .venv/bin/python bench/bench_overhead.py            # full run (a few minutes)
    .venv/bin/python bench/bench_overhead.py --quick    # a smoke run in a few seconds
    .venv/bin/python bench/bench_overhead.py --against ../other-checkout   # two revisions

The fake servers (OpenAI Chat Completions and Gemini) run in a child process, so the CPU
time measured here is the client's only. The variants of each measurement run interleaved:
every round runs each variant once, in an order shuffled per round (a fixed seed), so drift
hits all alike. Medians of CPU (``process_time``) and wall time per run.

1. A two-round tool loop (the model calls ``get_weather``, the tool runs, the model
   answers), for both wire protocols (OpenAI, Gemini):
   - not streamed: ``agent.run()`` with a final-intent handler only (nobody consumes
     partials, so the request is not streamed) against a raw httpx loop sending the same
     two requests without streaming;
   - streamed: ``agent.stream()`` consumed to the end (every partial) against a raw loop
     that streams, drains each body to its end and so keeps its connection;
   - the agent is built as an application builds it, with its own connections (no
     ``httpClient``: a connection pool without httpx's client layer, docs/runtime.md), and
     again with the raw loop's ``httpx.AsyncClient`` as its ``httpClient`` (", httpClient");
   and, when installed, PydanticAI and the OpenAI Agents SDK on the OpenAI tables.
2. 200 tool loops at once (OpenAI, not streamed), each side with its default client settings
   (the agent's own client; ``httpx.AsyncClient()`` for the raw loop): CPU and wall per run,
   and the peak RSS growth of a fresh process running the batches.
3. Import time, in fresh interpreters, as the whole process's wall time above
   ``python -c pass``: ``import auwgent.runtime``, and runtime + generated bindings +
   ``auwgent(config)``.

``--profile VARIANT`` runs one tool-loop variant (``openai-run``, ``openai-stream``,
``gemini-run``, ``gemini-stream``; ``-raw`` at the end for the raw loop) ``--runs`` times after
``--warmup`` runs, and nothing else, for a profiler: ``--cprofile FILE`` writes a cProfile of
the timed runs; under ``valgrind --tool=callgrind`` the difference between two run counts is
the instruction count of those runs::

    valgrind --tool=callgrind --callgrind-out-file=/dev/null \
        .venv/bin/python bench/bench_overhead.py --profile openai-run --runs 60

``--against PATH`` runs the tool loops of (1), OpenAI, in two worker processes, one on this
checkout's ``src`` and one on ``PATH/src``, rounds interleaved, and prints the ratio: how a
change moved the overhead.

Every tool-loop variant uses an API key of its own; the fake servers tally the requests per
key, and the run fails unless each variant made exactly its two requests (a tool call, then
the answer) per run and returned the scripted answer.

The frameworks are optional extras, installed only for the benchmark, in a virtualenv of
their own (never the test venv)::

    python3.11 -m venv /tmp/bench-venv
    /tmp/bench-venv/bin/pip install -e . -r bench/frameworks.txt
    /tmp/bench-venv/bin/python bench/bench_overhead.py
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import importlib
import importlib.util
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

import httpx
from floors import HttpcoreClient, StreamsClient

from auwgent.testing.fake_servers import (
    FakeGeminiServer,
    FakeOpenAIServer,
    RecordedRequest,
    Turn,
    text,
    tool_calls,
)

SOURCE = """
model Brain {{
    provider: {provider}
}}
agent Main {{
    default config {{
        model: Brain
        prompt: "You are a weather assistant. Use your tools."
    }}
    tool get_weather(location: string): string @desc "Gets the current weather for a location"
}}
"""
PROVIDERS = {
    "openai": 'openai("gpt-4o", { temperature: 0 })',
    "gemini": 'gemini("gemini-2.0-flash", { temperature: 0 })',
}
PROMPT = "You are a weather assistant. Use your tools."
QUESTION = "What is the weather in Accra?"
ANSWER = "It is sunny in Accra, 31 degrees, with a light breeze from the south-west."
DESCRIPTION = "Gets the current weather for a location"
PARAMETERS = {
    "type": "object",
    "properties": {"location": {"type": "string"}},
    "required": ["location"],
    "additionalProperties": False,
}
INSTALL_HINT = (
    "python3.11 -m venv /tmp/bench-venv && "
    "/tmp/bench-venv/bin/pip install -e . -r bench/frameworks.txt"
)

# -- the fake servers (child process) ---------------------------------------------------------

# Requests per API key and round, counted in the child: ("sk-bench-raw", "tool_call") -> n.
_tally: Counter[tuple[str, str]] = Counter()
_tally_lock = threading.Lock()


def _reply(request: RecordedRequest) -> Turn:
    """Tool call when tools are offered and none has answered yet; otherwise the answer.

    The call names the first offered tool, so every framework gets the same script whatever
    it names the tool (ours prefixes it with ``tool__``).
    """
    body = request.body or {}
    if "contents" in body:  # Gemini
        key = request.headers.get("x-goog-api-key", "")
        offered = [d["name"] for t in body.get("tools") or () for d in t["functionDeclarations"]]
        parts = [p for c in body["contents"] for p in c.get("parts") or ()]
        answered = any("functionResponse" in p for p in parts)
    else:
        key = request.headers.get("authorization", "").removeprefix("Bearer ")
        offered = [t["function"]["name"] for t in body.get("tools") or ()]
        answered = any(m.get("role") == "tool" for m in body.get("messages") or ())
    round_ = "tool_call" if offered and not answered else "answer"
    with _tally_lock:
        _tally[key, round_] += 1
    if round_ == "tool_call":
        return tool_calls([(offered[0], {"location": "Accra"})])
    return text(ANSWER)


def serve(chunk_size: int) -> None:
    """Child process: run both fake servers until stdin closes, then print the tally."""
    with (
        FakeOpenAIServer(_reply, chunk_size=chunk_size) as openai_server,
        FakeGeminiServer(_reply, chunk_size=chunk_size) as gemini_server,
    ):

        def forget() -> None:
            # The tally is all the bench checks; tens of thousands of recorded requests would
            # only grow the servers' heaps, and their garbage collections slow later phases.
            while True:
                time.sleep(0.5)
                openai_server.requests.clear()
                gemini_server.requests.clear()

        threading.Thread(target=forget, daemon=True).start()
        print(json.dumps({"openai": openai_server.base_url, "gemini": gemini_server.base_url}))
        sys.stdout.flush()
        sys.stdin.read()
    print(json.dumps([[key, round_, n] for (key, round_), n in _tally.items()]), flush=True)


# -- the raw httpx baselines ------------------------------------------------------------------


def _system() -> str:
    """The agent's system prompt: the config prompt and its date line."""
    now = datetime.now(timezone.utc).replace(microsecond=0)
    return f"{PROMPT}\n\nCurrent date and time: {now.isoformat()} ({now:%A, %d %B %Y %H:%M} UTC)"


async def raw_openai_request(
    client: Any, base: str, body: dict[str, Any], api_key: str
) -> dict[str, Any]:
    """One Chat Completions request; returns {"text", "calls"} like a careful hand-written loop.

    Streaming, it reads every line to the end of the body (so the connection is reused).
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


async def raw_openai_loop(client: Any, base: str, api_key: str, stream: bool) -> str:
    """Two rounds: the model calls get_weather, we run it, the model answers.

    The requests are the agent's, byte for byte in size: the same system prompt with its date
    line, the same tool schema, an API key header of the same shape.
    """
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": _system()},
        {"role": "user", "content": QUESTION},
    ]
    function = {
        "name": "tool__get_weather",
        "description": DESCRIPTION,
        "parameters": PARAMETERS,
        "strict": True,
    }
    common: dict[str, Any] = {
        "model": "gpt-4o",
        "tools": [{"type": "function", "function": function}],
        "temperature": 0,
    }
    if stream:
        common |= {"stream": True, "stream_options": {"include_usage": True}}
    first = await raw_openai_request(client, base, {**common, "messages": messages}, api_key)
    call_id, name, arguments = first["calls"][0]
    result = await _get_weather(**json.loads(arguments))
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
    messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
    messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
    second = await raw_openai_request(client, base, {**common, "messages": messages}, api_key)
    return str(second["text"])


async def raw_gemini_request(
    client: Any, base: str, body: dict[str, Any], api_key: str, stream: bool
) -> tuple[str, list[dict[str, Any]]]:
    """One generateContent request: the text and the function calls of the answer."""
    method = "streamGenerateContent?alt=sse" if stream else "generateContent"
    url = f"{base}/v1beta/models/gemini-2.0-flash:{method}"
    headers = {"x-goog-api-key": api_key}
    chunks: list[Any] = []
    if stream:
        async with client.stream("POST", url, json=body, headers=headers) as response:
            response.raise_for_status()
            async for line in response.aiter_lines():
                if line.startswith("data: "):
                    chunks.append(json.loads(line[6:]))
    else:
        response = await client.post(url, json=body, headers=headers)
        response.raise_for_status()
        chunks.append(response.json())
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for chunk in chunks:
        for part in chunk["candidates"][0].get("content", {}).get("parts") or ():
            if "text" in part:
                texts.append(part["text"])
            if "functionCall" in part:
                calls.append(part["functionCall"])
    return "".join(texts), calls


async def raw_gemini_loop(client: Any, base: str, api_key: str, stream: bool) -> str:
    """The same two rounds against the Gemini API."""
    contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": QUESTION}]}]
    declaration = {
        "name": "tool__get_weather",
        "description": DESCRIPTION,
        "parametersJsonSchema": PARAMETERS,
    }
    common: dict[str, Any] = {
        "systemInstruction": {"parts": [{"text": _system()}], "role": "user"},
        "tools": [{"functionDeclarations": [declaration]}],
        "generationConfig": {"temperature": 0},
    }
    _, calls = await raw_gemini_request(
        client, base, {"contents": contents, **common}, api_key, stream
    )
    call = calls[0]
    result = await _get_weather(**call["args"])
    contents.append({"role": "model", "parts": [{"functionCall": call}]})
    answer = {"name": call["name"], "response": {"result": result}}
    contents.append({"role": "user", "parts": [{"functionResponse": answer}]})
    reply, _ = await raw_gemini_request(
        client, base, {"contents": contents, **common}, api_key, stream
    )
    return reply


RAW_LOOPS = {"openai": raw_openai_loop, "gemini": raw_gemini_loop}


# -- ours -------------------------------------------------------------------------------------


def load_generated_modules(workdir: Path) -> dict[str, Any]:
    """Compile the agent for each provider, render its bindings into ``workdir``, import them."""
    from auwgent.codegen.python import render_python
    from auwgent.compiler.pipeline import compile_sources

    sys.path.insert(0, str(workdir))
    modules = {}
    for provider, spec in PROVIDERS.items():
        result = compile_sources({"main.agent": SOURCE.format(provider=spec)})
        if not result.ok:
            raise SystemExit("\n".join(str(d) for d in result.diagnostics))
        name = f"bench_{provider}_agent"
        (workdir / f"{name}.py").write_text(render_python(result.documents["main.agent"]))
        modules[provider] = importlib.import_module(name)
    return modules


async def _get_weather(location: str) -> str:
    """Gets the current weather for a location"""
    return f"sunny in {location}"


def _get_weather_sync(location: str) -> str:
    """Gets the current weather for a location"""
    return f"sunny in {location}"


def _tool(kind: str) -> Callable[..., Any]:
    """An async tool, as the manual writes them, or a sync one: it runs in a worker thread
    unless it is marked cheap with ``inline_tool``."""
    if kind == "inline":
        from auwgent import inline_tool  # here: --against may run a checkout without it

        return inline_tool(functools.partial(_get_weather_sync))
    return _get_weather if kind == "async" else _get_weather_sync


def make_agent(
    module: Any,
    provider: str,
    base: str,
    client: httpx.AsyncClient | None,
    api_key: str,
    tool: str = "async",
) -> Any:
    config: dict[str, Any] = {
        "apiKeys": {f"{provider}ApiKey": api_key},
        "baseUrls": {provider: base},
        "protocol": "native",
        "tools": {"get_weather": _tool(tool)},
    }
    if client is not None:
        config["httpClient"] = client
    return module.auwgent(config)


class AgentRunner:
    """One agent, built once like an application would, run as often as asked."""

    def __init__(self, agent: Any) -> None:
        self.agent = agent
        self.answers: list[str] = []
        agent.on_intent(self._on_intent)

    def _on_intent(self, name: str, value: Any, agent_name: str) -> None:
        if name == "response_text":
            self.answers.append(value["text"])

    async def run(self) -> str:
        """``agent.run()``: nobody consumes partials."""
        before = len(self.answers)
        session = await self.agent.run(QUESTION)
        if len(self.answers) == before:
            raise RuntimeError(f"agent run failed: {json.dumps(session)[:500]}")
        return self.answers[-1]

    async def stream(self) -> str:
        """``agent.stream()`` read to the end: every partial and final intent."""
        answer = ""
        partials = 0
        async for event in self.agent.stream(QUESTION):
            if event.partial:
                partials += 1
            elif event.name == "response_text":
                answer = event.value["text"]
        if not partials:
            raise RuntimeError("agent.stream() yielded no partials")
        return answer


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


def _orders(names: list[str], rounds: int, seed: int) -> list[list[str]]:
    """``rounds`` shuffled orders of ``names`` (the same for every run of the bench)."""
    rng = random.Random(seed)
    return [rng.sample(names, len(names)) for _ in range(rounds)]


async def measure(variants: dict[str, Runner], runs: int, warmup: int) -> Samples:
    """Interleaved rounds over the variants, in a shuffled order each round."""
    names = list(variants)
    for name in names * warmup:
        await variants[name]()
    samples: Samples = {name: {"wall": [], "cpu": []} for name in names}
    for order in _orders(names, runs, seed=len(names) * runs):
        for name in order:
            wall, cpu = time.perf_counter(), time.process_time()
            await variants[name]()
            samples[name]["wall"].append(time.perf_counter() - wall)
            samples[name]["cpu"].append(time.process_time() - cpu)
    return samples


async def measure_concurrent(variants: dict[str, Runner], n: int, repeats: int) -> Samples:
    """``n`` runs of one variant at once, per-run time = batch time / n (shuffled rounds).

    An untimed batch of each variant first warms it up (imports, caches, first connections).
    """
    names = list(variants)
    for name in names:
        await asyncio.gather(*(variants[name]() for _ in range(n)))
    samples: Samples = {name: {"wall": [], "cpu": []} for name in names}
    for order in _orders(names, repeats, seed=n * repeats):
        for name in order:
            wall, cpu = time.perf_counter(), time.process_time()
            await asyncio.gather(*(variants[name]() for _ in range(n)))
            samples[name]["wall"].append((time.perf_counter() - wall) / n)
            samples[name]["cpu"].append((time.process_time() - cpu) / n)
    return samples


def medians(samples: Samples) -> dict[str, dict[str, float]]:
    return {
        name: {k: statistics.median(v) * 1000 for k, v in s.items()} for name, s in samples.items()
    }


def report(
    title: str, samples: Samples, raw: str, extra: dict[str, str] | None = None
) -> dict[str, dict[str, float]]:
    """Medians in ms per variant, with ratios to the raw loop; returns the medians."""
    med = medians(samples)
    print(f"{title}\n  {'':<34}{'wall ms':>9}{'cpu ms':>9}{'wall/raw':>10}{'cpu/raw':>9}  {''}")
    for name, m in med.items():
        print(
            f"  {name:<34}{m['wall']:9.3f}{m['cpu']:9.3f}"
            f"{m['wall'] / med[raw]['wall']:9.2f}x{m['cpu'] / med[raw]['cpu']:8.2f}x"
            f"  {(extra or {}).get(name, '')}"
        )
    print()
    return med


def floor_row(what: str, ours: str, med: dict[str, dict[str, float]]) -> tuple[str, str, str]:
    """A README row: ``ours`` against the cheapest raw loop of the table (by CPU)."""
    raws = [name for name in med if name.startswith("raw ")]
    floor = min(raws, key=lambda name: med[name]["cpu"])
    m, f = med[ours], med[floor]
    return (
        f"{what} (`{ours}` vs the cheapest floor, {floor})",
        f"{m['cpu'] / f['cpu']:.2f}× CPU, {m['wall'] / f['wall']:.2f}× wall "
        f"({m['cpu']:.2f} / {f['cpu']:.2f} ms)",
        "≤ 1.10× CPU",
    )


def peak_rss_growth(
    variant: str, base: str, module_dir: Path, concurrency: int, repeats: int
) -> float:
    """MB of peak RSS a fresh process gains running ``repeats`` batches of ``variant``."""
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--rss",
            variant,
            "--base",
            base,
            "--module-dir",
            str(module_dir),
            "--concurrency",
            str(concurrency),
            "--repeats",
            str(repeats),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(out.stdout.strip().splitlines()[-1])


async def rss_child(args: argparse.Namespace) -> None:
    """Child process of :func:`peak_rss_growth`: prints the growth in MB."""
    sys.path.insert(0, args.module_dir)
    client = httpx.AsyncClient(timeout=httpx.Timeout(5.0, pool=60.0))  # as in main()
    if args.rss == "auwgent":
        module = importlib.import_module("bench_openai_agent")
        runner = AgentRunner(make_agent(module, "openai", args.base, None, "sk-bench-rss"))
        run: Runner = runner.run
    else:
        run = lambda: raw_openai_loop(client, args.base, "sk-bench-rss-raw", False)  # noqa: E731
    await run()  # imports and first connection
    before = _peak_rss_kb()
    for _ in range(args.repeats):
        await asyncio.gather(*(run() for _ in range(args.concurrency)))
    after = _peak_rss_kb()
    await client.aclose()
    print((after - before) / 1024)


def _peak_rss_kb() -> int:
    """This process's peak RSS in KB: ``VmHWM`` on Linux (``ru_maxrss`` is inherited from the
    parent across fork and exec, so a small child would report the parent's peak)."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1])


def import_times(module_dir: Path, repeats: int) -> dict[str, float]:
    """Wall ms of whole fresh interpreters, interleaved in shuffled order; medians."""
    statements = {
        "python -c pass": "pass",
        "import auwgent.runtime": "import auwgent.runtime",
        # As an application builds it: with its tool.
        "runtime + bindings + auwgent(config)": (
            "import bench_openai_agent as m\n"
            "async def get_weather(location): return 'sunny'\n"
            "m.auwgent({'apiKeys': {'openaiApiKey': 'sk-bench'}, 'tools': {'get_weather': get_weather}})"
        ),
    }
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(module_dir), *sys.path[1:]])}
    # As installed code runs: from its bytecode caches (written by the untimed first runs).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for statement in statements.values():
        subprocess.run([sys.executable, "-c", statement], env=env, check=True)
    times: dict[str, list[float]] = {name: [] for name in statements}
    for order in _orders(list(statements), repeats, seed=repeats):
        for name in order:
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", statements[name]], env=env, check=True)
            times[name].append(time.perf_counter() - started)
    return {name: statistics.median(t) * 1000 for name, t in times.items()}


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


def start_servers(chunk_size: int) -> tuple[subprocess.Popen[str], dict[str, str]]:
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve", "--chunk-size", str(chunk_size)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    return child, json.loads(child.stdout.readline())


def stop_servers(child: subprocess.Popen[str]) -> str:
    assert child.stdin is not None and child.stdout is not None
    child.stdin.close()
    tally = child.stdout.read()
    child.wait(timeout=10)
    return tally


Variant = Callable[[str, Callable[[], Awaitable[str]]], "Checked"]


def floors(
    clients: dict[str, Any], variant: Variant, loop: Any, base: str, key: str, stream: bool
) -> dict[str, Runner]:
    """The raw loop on each floor client, each with an API key of its own."""
    table: dict[str, Runner] = {}
    for floor, floor_client in clients.items():
        fkey = f"{key}-{floor.split()[-1]}"
        table[floor] = variant(fkey, functools.partial(loop, floor_client, base, fkey, stream))
    return table


def framework_runners(
    frameworks: list[str], variant: Variant, http2_client: Any, base: str, stream: bool
) -> dict[str, Runner]:
    """The raw loop on httpx2, and each installed framework on the same client."""
    mode = "stream" if stream else "run"
    key2 = f"sk-raw2-{mode}"
    table: dict[str, Runner] = {
        "raw httpx2": variant(
            key2, functools.partial(raw_openai_loop, http2_client, base, key2, stream)
        )
    }
    for name, title, build in (
        ("pydantic_ai", "PydanticAI", pydantic_ai_runner),
        ("agents", "OpenAI Agents SDK", openai_agents_runner),
    ):
        if name in frameworks:
            fkey = f"sk-{name}-{mode}"
            table[title] = variant(fkey, build(base, http2_client, fkey, stream))
    return table


async def main(args: argparse.Namespace) -> None:
    child, bases = start_servers(args.chunk_size)
    workdir = Path(tempfile.mkdtemp(prefix="auwgent-bench-"))
    frameworks = [m for m in ("pydantic_ai", "agents") if _installed(m)]
    checked: list[Checked] = []
    rows: list[tuple[str, str, str]] = []

    def variant(key: str, run: Callable[[], Awaitable[str]]) -> Checked:
        checked.append(Checked(key, run))
        return checked[-1]

    floor_clients = {"raw httpcore": HttpcoreClient(), "raw asyncio streams": StreamsClient()}
    try:
        client = httpx.AsyncClient()
        modules = load_generated_modules(workdir)
        print(
            f"fake servers {bases['openai']} and {bases['gemini']}, chunk size "
            f"{args.chunk_size}, {args.runs} runs per variant, {date.today()}\n"
        )
        if not frameworks:
            print(
                "PydanticAI and the OpenAI Agents SDK are not installed here; to compare "
                f"with them: {INSTALL_HINT}\n"
            )
        http2_client = None
        if frameworks:
            # Both frameworks sit on the OpenAI SDK, which uses httpx2 (not httpx): the raw
            # loop on httpx2 tells the HTTP client's share from the framework's.
            from openai import DefaultAsyncHttpx2Client

            http2_client = DefaultAsyncHttpx2Client()
        for provider in PROVIDERS:
            base, raw_loop = bases[provider], RAW_LOOPS[provider]
            for stream in (False, True):
                mode = "stream" if stream else "run"
                # The agent with its own connections (no httpClient in the config), as an
                # application builds it; and with the raw loop's httpx client as httpClient.
                ours = AgentRunner(
                    make_agent(modules[provider], provider, base, None, f"sk-{provider}-{mode}")
                )
                gkey = f"sk-{provider}-{mode}-httpx"
                given = AgentRunner(make_agent(modules[provider], provider, base, client, gkey))
                agents = [ours.agent, given.agent]
                label = "auwgent stream()" if stream else "auwgent run()"
                raw = "raw httpx, streamed" if stream else "raw httpx"
                key = f"sk-{provider}-raw-{mode}"
                table: dict[str, Runner] = {
                    label: variant(f"sk-{provider}-{mode}", ours.stream if stream else ours.run),
                    f"{label}, httpClient": variant(gkey, given.stream if stream else given.run),
                    raw: variant(key, functools.partial(raw_loop, client, base, key, stream)),
                }
                table |= floors(floor_clients, variant, raw_loop, base, key, stream)
                if provider == "openai" and not stream:
                    for tool, title in (("sync", "sync tool"), ("inline", "@inline_tool")):
                        tkey = f"sk-openai-run-{tool}"
                        agent = make_agent(modules[provider], provider, base, None, tkey, tool)
                        agents.append(agent)
                        table[f"auwgent run(), {title}"] = variant(tkey, AgentRunner(agent).run)
                if provider == "openai" and http2_client is not None:
                    table |= framework_runners(frameworks, variant, http2_client, base, stream)
                samples = await measure(table, args.runs, args.warmup)
                for agent in agents:
                    await agent.aclose()
                what = "streamed" if stream else "not streamed"
                med = report(f"two-round tool loop, {provider}, {what}", samples, raw)
                rows.append(floor_row(f"tool loop, {provider}, {what}", label, med))
        await client.aclose()
        if http2_client is not None:
            await http2_client.aclose()
        base = bases["openai"]
        # The raw loop's default settings, but for the wait for a pooled connection: the fake
        # server answers 200 runs at once slowly on a loaded machine, and httpx's default 5 s
        # pool timeout (the agent's is timeouts.connect, 10 s) would fail runs, not time them.
        default_client = httpx.AsyncClient(timeout=httpx.Timeout(5.0, pool=60.0))
        ours = AgentRunner(make_agent(modules["openai"], "openai", base, None, "sk-concurrent"))
        concurrent: dict[str, Runner] = {
            "auwgent run()": variant("sk-concurrent", ours.run),
            "raw httpx": variant(
                "sk-concurrent-raw",
                lambda: raw_openai_loop(default_client, base, "sk-concurrent-raw", False),
            ),
        }
        concurrent |= floors(floor_clients, variant, raw_openai_loop, base, "sk-concurrent", False)
        samples = await measure_concurrent(concurrent, args.concurrency, args.repeats)
        rss = {
            "auwgent run()": peak_rss_growth(
                "auwgent", base, workdir, args.concurrency, args.repeats
            ),
            "raw httpx": peak_rss_growth("raw", base, workdir, args.concurrency, args.repeats),
        }
        med = report(
            f"{args.concurrency} concurrent tool loops, openai, not streamed (per run)",
            samples,
            "raw httpx",
            {name: f"peak RSS +{mb:.1f} MB" for name, mb in rss.items()},
        )
        await ours.agent.aclose()
        await default_client.aclose()
        for floor_client in floor_clients.values():
            await floor_client.aclose()
        title = f"{args.concurrency} concurrent tool loops, openai, not streamed, default clients"
        what, ratio, target = floor_row(title, "auwgent run()", med)
        rss_note = f"; peak RSS +{rss['auwgent run()']:.1f} MB vs +{rss['raw httpx']:.1f} MB"
        rows.append((what, ratio + rss_note, target))
    finally:
        tally = stop_servers(child)
    verify_tally(tally, checked)
    try:
        times = import_times(workdir, args.import_repeats)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    floor = times["python -c pass"]
    print(f"\nimport time, whole fresh interpreters (median of {args.import_repeats}):")
    for name, ms in times.items():
        print(f"  {name:<40}{ms:7.1f} ms  (+{ms - floor:.1f} ms over python -c pass)")
    built = times["runtime + bindings + auwgent(config)"] - floor
    rows.append(
        (
            "import runtime + bindings + `auwgent(config)`, above `python -c pass`",
            f"+{built:.0f} ms",
            "≤ 60 ms",
        )
    )
    print(f"\nREADME rows ({date.today()}, `.venv/bin/python bench/bench_overhead.py`):\n")
    for row in rows:
        print("| " + " | ".join(row) + " |")


# -- two revisions side by side ---------------------------------------------------------------


async def worker(args: argparse.Namespace) -> None:
    """``--worker``: tool loops on demand; each stdin line "<variant> <n>" answers CPU and wall
    seconds of each of ``n`` runs, as JSON."""
    bases = json.loads(args.bases)
    workdir = Path(tempfile.mkdtemp(prefix="auwgent-bench-"))
    module = load_generated_modules(workdir)["openai"]
    tag = args.tag
    runs = {
        "run": AgentRunner(
            make_agent(module, "openai", bases["openai"], None, f"sk-{tag}-run")
        ).run,
        "stream": AgentRunner(
            make_agent(module, "openai", bases["openai"], None, f"sk-{tag}-stream")
        ).stream,
    }
    shutil.rmtree(workdir, ignore_errors=True)  # the module is imported: its file can go
    loop = asyncio.get_running_loop()
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        name, n = line.split()
        out = []
        for _ in range(int(n)):
            wall, cpu = time.perf_counter(), time.process_time()
            answer = await runs[name]()
            out.append((time.process_time() - cpu, time.perf_counter() - wall))
            if answer != ANSWER:
                raise SystemExit(f"wrong answer {answer!r}")
        print(json.dumps(out), flush=True)


def against(args: argparse.Namespace) -> None:
    """Tool loops of this checkout and of ``args.against``, in two workers, interleaved."""
    child, bases = start_servers(args.chunk_size)
    here = Path(__file__).resolve().parent.parent
    trees = {"this checkout": here, str(args.against): Path(args.against).resolve()}
    workers = {}
    try:
        for tag, (label, tree) in enumerate(trees.items()):
            env = {**os.environ, "PYTHONPATH": str(tree / "src")}
            workers[label] = subprocess.Popen(
                [
                    sys.executable,
                    __file__,
                    "--worker",
                    "--bases",
                    json.dumps(bases),
                    "--tag",
                    f"w{tag}",
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env=env,
                cwd=tree,
            )
        samples: dict[tuple[str, str], list[tuple[float, float]]] = {}
        batch = 10
        jobs = [(label, name) for label in workers for name in ("run", "stream")]
        rounds = _orders(jobs, max(1, args.runs // batch), seed=7)
        for label, name in jobs:  # warm-up
            _ask(workers[label], name, args.warmup)
        for order in rounds:
            for label, name in order:
                samples.setdefault((label, name), []).extend(_ask(workers[label], name, batch))
    finally:
        for proc in workers.values():
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(timeout=30)
        stop_servers(child)
    print(f"tool loop, openai, {args.runs} runs each, interleaved in batches of {batch}:")
    first, second = trees
    for name in ("run", "stream"):
        a = statistics.median(c for c, _ in samples[first, name]) * 1000
        b = statistics.median(c for c, _ in samples[second, name]) * 1000
        aw = statistics.median(w for _, w in samples[first, name]) * 1000
        bw = statistics.median(w for _, w in samples[second, name]) * 1000
        print(
            f"  agent.{name}(): {first} {a:.3f} ms CPU ({aw:.3f} wall), {second} {b:.3f} ms CPU "
            f"({bw:.3f} wall): {a / b:.3f}x CPU, {aw / bw:.3f}x wall"
        )


async def profile(args: argparse.Namespace) -> None:
    """``--profile VARIANT``: ``--runs`` runs of one variant after ``--warmup`` untimed ones."""
    provider, mode, *raw = args.profile.split("-")
    stream = mode == "stream"
    child, bases = start_servers(args.chunk_size)
    workdir = Path(tempfile.mkdtemp(prefix="auwgent-bench-"))
    key = f"sk-profile-{args.profile}"
    try:
        client = httpx.AsyncClient()
        if raw:
            run: Runner = functools.partial(
                RAW_LOOPS[provider], client, bases[provider], key, stream
            )
        else:
            module = load_generated_modules(workdir)[provider]
            runner = AgentRunner(make_agent(module, provider, bases[provider], None, key))
            run = runner.stream if stream else runner.run
        variant = Checked(key, run)
        for _ in range(args.warmup):
            await variant()
        profiler = None
        if args.cprofile:
            import cProfile

            profiler = cProfile.Profile()
            profiler.enable()
        started = time.process_time()
        for _ in range(args.runs):
            await variant()
        cpu = time.process_time() - started
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(args.cprofile)
        await client.aclose()
    finally:
        tally = stop_servers(child)
        shutil.rmtree(workdir, ignore_errors=True)
    verify_tally(tally, [variant])
    print(f"{args.profile}: {args.runs} runs, {cpu / max(args.runs, 1) * 1000:.3f} ms CPU per run")


def _ask(proc: subprocess.Popen[str], name: str, n: int) -> list[tuple[float, float]]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(f"{name} {n}\n")
    proc.stdin.flush()
    return [tuple(x) for x in json.loads(proc.stdout.readline())]  # type: ignore[misc]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5, help="repeats of the concurrent batch")
    parser.add_argument("--import-repeats", type=int, default=11)
    parser.add_argument("--chunk-size", type=int, default=16)
    parser.add_argument("--quick", action="store_true", help="few runs, for a smoke test")
    parser.add_argument("--against", help="another checkout to compare this one with")
    parser.add_argument("--profile", help="run one tool-loop variant only (for a profiler)")
    parser.add_argument("--cprofile", help="with --profile: write a cProfile of the runs here")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--tag", help=argparse.SUPPRESS)
    parser.add_argument("--bases", help=argparse.SUPPRESS)
    parser.add_argument("--rss", help=argparse.SUPPRESS)
    parser.add_argument("--base", help=argparse.SUPPRESS)
    parser.add_argument("--module-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.runs, args.warmup, args.concurrency, args.repeats, args.import_repeats = (
            20, 3, 50, 2, 3,
        )  # fmt: skip
    return args


if __name__ == "__main__":
    arguments = parse_args()
    if arguments.serve:
        serve(arguments.chunk_size)
    elif arguments.worker:
        asyncio.run(worker(arguments))
    elif arguments.rss:
        asyncio.run(rss_child(arguments))
    elif arguments.profile:
        asyncio.run(profile(arguments))
    elif arguments.against:
        against(arguments)
    else:
        asyncio.run(main(arguments))
