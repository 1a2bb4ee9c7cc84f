"""Code mode against the ordinary protocols, measured in one run.

1. The first request's size for an agent with 50 tools: code mode (the ``api`` stub and one
   ``execute_code`` tool) vs blocks vs native, in characters of the Chat Completions body
   (the OpenAI adapter's own ``build_chat_body``) and approximate tokens.
2. Model round trips for a five-step dependent task (each step needs the previous result):
   code mode (one execution) vs blocks (one call per round), counted on a scripted model.
3. Sandbox latency of one execution with one ``api`` call: from the ``execute_code``
   ``tool_call`` intent to its ``tool_result`` (a Monty session checked out, the code
   type-checked against the stub and run, the call through the checked path), median and
   p95, against a direct tool call's latency measured the same way in the same run, and
   without the type check (which takes most of the time).

Run: ``.venv/bin/python bench/bench_code_mode.py``
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections.abc import Mapping
from typing import Any

from bench_prompt_size import _TOKEN, tool  # the same 50 tools and token estimate

from auwgent.compiler.pipeline import compile_sources
from auwgent.runtime import code_mode
from auwgent.runtime.agent import agent_from_ir
from auwgent.runtime.code_mode import code_contract
from auwgent.runtime.protocol import codec_for
from auwgent.runtime.protocol.contract import Contract
from auwgent.runtime.providers.base import Message, ModelRequest
from auwgent.runtime.providers.openai import build_chat_body
from auwgent.testing.scripted import ScriptedModel, block_text

RUNS = 40


def request_sizes() -> None:
    contract = Contract(
        agent="Big",
        callables=tuple(tool(i) for i in range(50)),
        intents=(),
        output={"kind": "text"},
        types={},
    )
    variants = {
        "code mode": ("blocks", code_contract(contract)),
        "blocks": ("blocks", contract),
        "native": ("native", contract),
    }
    sizes: dict[str, tuple[int, int]] = {}
    for label, (codec_name, shown) in variants.items():
        codec = codec_for(codec_name)
        request = ModelRequest(
            model="gpt-4o-mini",
            system=codec.system_section(shown),
            messages=(Message(role="user", content="hello"),),
            functions=codec.functions(shown),
            response_schema=codec.response_schema(shown),
        )
        body = json.dumps(build_chat_body(request), ensure_ascii=False, separators=(",", ":"))
        sizes[label] = (len(body), len(_TOKEN.findall(body)))
    print("1. first request, 50 tools")
    for label, (chars, tokens) in sizes.items():
        print(f"   {label:>9}: {chars:6} chars, ~{tokens:5} tokens")
    code, native = sizes["code mode"], sizes["native"]
    blocks = sizes["blocks"]
    print(
        f"   native / code mode = {native[0] / code[0]:.1f}x chars, {native[1] / code[1]:.1f}x"
        f" tokens; code mode / blocks = {code[0] / blocks[0]:.2f}x chars,"
        f" {code[1] / blocks[1]:.2f}x tokens"
    )


SOURCE = """
agent Chain {
    default config {
        model: openai("gpt-4o")
        prompt: "Work."
    }
    tool step1(x: number): number
    tool step2(x: number): number
    tool step3(x: number): number
    tool step4(x: number): number
    tool step5(x: number): number
}
"""

FIVE_STEPS = """import api
a = api.step1(1)
b = api.step2(a)
c = api.step3(b)
d = api.step4(c)
api.step5(d)"""
DONE = "[response_text]\nDone.\n[/response_text]"


def chain_ir() -> Mapping[str, Any]:
    result = compile_sources({"chain.agent": SOURCE})
    assert result.ok, [d.message for d in result.diagnostics]
    return result.documents["chain.agent"]


class Steps:
    """Each step adds one to its input."""

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("step"):
            raise AttributeError(name)
        return lambda x: x + 1


def execute_block(code: str) -> str:
    return f"[tool_call: execute_code]\n{code}\n[/tool_call]"


async def round_trips(ir: Mapping[str, Any]) -> None:
    code_model = ScriptedModel([execute_block(FIVE_STEPS), DONE])
    agent = agent_from_ir(ir, {"provider": code_model, "tools": Steps(), "codeMode": True})
    await agent.run("go")
    values = [1, 2, 3, 4, 5]
    script = [block_text("tool_call", f"step{i + 1}", {"x": v}) for i, v in enumerate(values)]
    blocks_model = ScriptedModel([*script, DONE])
    agent = agent_from_ir(ir, {"provider": blocks_model, "tools": Steps()})
    await agent.run("go")
    code_n, blocks_n = len(code_model.requests), len(blocks_model.requests)
    print("2. five-step dependent task, model round trips")
    print(f"   code mode: {code_n}   blocks: {blocks_n}   ({blocks_n / code_n:.1f}x fewer)")


async def latencies(ir: Mapping[str, Any], code_mode: bool) -> list[float]:
    """Milliseconds from a call's tool_call intent to its tool_result, over RUNS runs."""
    name = "execute_code" if code_mode else "step1"
    if code_mode:
        first = execute_block("import api\napi.step1(1)")
    else:
        first = block_text("tool_call", "step1", {"x": 1})
    marks: dict[str, float] = {}

    def mark(intent: str, value: Any, who: str) -> None:
        if intent == "tool_call" and value["type"] == name:
            marks["start"] = time.perf_counter()
        elif intent == "tool_result" and value["name"] == name:
            marks["end"] = time.perf_counter()

    found: list[float] = []
    for _ in range(RUNS + 3):  # the first runs start the worker pool and warm it
        model = ScriptedModel([first, DONE])
        agent = agent_from_ir(ir, {"provider": model, "tools": Steps(), "codeMode": code_mode})
        agent.on_intent(mark)
        await agent.run("go")
        found.append((marks["end"] - marks["start"]) * 1000)
    return found[3:]


def _p95(values: list[float]) -> float:
    return sorted(values)[max(0, int(len(values) * 0.95) - 1)]


async def main() -> None:
    request_sizes()
    ir = chain_ir()
    await round_trips(ir)
    direct = await latencies(ir, code_mode=False)
    sandbox = await latencies(ir, code_mode=True)
    code_mode._Execution.type_check = False  # only to show what the type check costs
    unchecked = await latencies(ir, code_mode=True)
    med, p95 = statistics.median(sandbox), _p95(sandbox)
    base = statistics.median(direct)
    print(f"3. one execution with one api call ({RUNS} runs; aim: 20 ms or less)")
    print(f"   code mode: median {med:.1f} ms, p95 {p95:.1f} ms")
    print(
        f"   of which the type check: without it median {statistics.median(unchecked):.1f} ms,"
        f" p95 {_p95(unchecked):.1f} ms"
    )
    print(f"   direct tool call (baseline): median {base:.2f} ms, p95 {_p95(direct):.2f} ms")
    print(f"   code mode / direct = {med / base:.0f}x (median)")


if __name__ == "__main__":
    asyncio.run(main())
