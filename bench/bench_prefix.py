"""How much of each request repeats the one before it (provider prompt caching).

A 10-turn conversation with tools, a persona and memory runs on the scripted model; every turn
calls a tool and then answers, so the run makes 20 model calls. Each request is turned into the
Chat Completions body the OpenAI adapter would send (``build_chat_body``, compact JSON). For
each consecutive pair the script prints the share of bytes before the first difference, and
where that difference falls: the aim is that everything before the date-and-time line is
identical in every pair (config prompt, protocol section, persona, memory, context), so a
provider's prefix cache covers them.

The clock is real, so the date line itself changes when a second passes between two calls;
``--fixed-clock`` pins it, and then the first difference is always in the conversation.

Run: ``.venv/bin/python bench/bench_prefix.py [--fixed-clock]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from auwgent.compiler.pipeline import compile_sources
from auwgent.runtime.agent import agent_from_ir
from auwgent.runtime.memory import SQLiteMemoryStore
from auwgent.runtime.providers.base import ModelRequest
from auwgent.runtime.providers.openai import build_chat_body
from auwgent.testing import ScriptedModel

SOURCE = """
persona Guide {
    "You are a calm travel guide. Keep answers short."
}

agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "You help people plan trips around Ghana."
    }
    personas { Guide }

    tool get_weather(location: string): string @desc "Gets the current weather"
    tool find_hotels(city: string, nights: number): string @desc "Lists hotels with prices"
}
"""

CITIES = ["Accra", "Kumasi", "Tamale", "Cape Coast", "Ho", "Takoradi", "Sunyani", "Bolga"]
TURNS = 10
DATE_MARK = "Current date and time:"


def script(request: ModelRequest) -> Any:
    """Answer a user message with a tool call, a tool result with text."""
    last = request.messages[-1]
    turn = sum(1 for m in request.messages if m.role == "user")
    city = CITIES[turn % len(CITIES)]
    if last.role == "user" and not last.content.startswith("[tool_result"):
        return ScriptedModel.block("tool_call", "get_weather", {"location": city})
    return ScriptedModel.text(f"It is sunny in {city}; pack light.")


def first_difference(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


async def run(fixed_clock: bool) -> list[bytes]:
    result = compile_sources({"main.agent": SOURCE})
    assert result.ok, result.diagnostics
    doc = result.documents["main.agent"]
    model = ScriptedModel(script)
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteMemoryStore(Path(tmp) / "memory.db")
        await store.add(["The user travels with a child.", "The user prefers buses to flights."])
        config: dict[str, Any] = {
            "provider": model,
            "tools": {
                "get_weather": lambda location: f"28°C and sunny in {location}",
                "find_hotels": lambda city, nights: f"3 hotels in {city}",
            },
            "persona": "Guide",
            "memory": {"store": store, "ingester": lambda turn: []},
        }
        if fixed_clock:
            config["clock"] = lambda: datetime(2026, 12, 1, 9, 0, tzinfo=timezone.utc)
        agent = agent_from_ir(doc, config)
        session = None
        for i in range(TURNS):
            session = await agent.run(f"What should I pack for {CITIES[i % 8]}?", session=session)
        await agent.drain()
    return [json.dumps(build_chat_body(r), separators=(",", ":")).encode() for r in model.requests]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fixed-clock", action="store_true", help="pin the date line")
    args = parser.parse_args(argv)
    bodies = asyncio.run(run(args.fixed_clock))
    print(f"{len(bodies)} requests; per consecutive pair: shared prefix and where it ends")
    print(f"{'pair':>6} {'bytes':>7} {'shared':>7} {'share':>7}  first difference")
    stable = 0
    for i in range(1, len(bodies)):
        before, after = bodies[i - 1], bodies[i]
        diff = first_difference(before, after)
        date_at = after.find(DATE_MARK.encode())
        where = "in the date line" if date_at <= diff < date_at + 80 else "after the date line"
        if diff < date_at:
            where = "BEFORE the date line"
        else:
            stable += 1
        share = diff / len(after)
        print(f"{i - 1:>2}-{i:<3} {len(after):>7} {diff:>7} {share:>7.1%}  {where}")
    print(f"pairs with everything before the date line identical: {stable}/{len(bodies) - 1}")
    return 0 if stable == len(bodies) - 1 else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
