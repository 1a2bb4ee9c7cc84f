"""Engine scenarios of history compaction by ``summarize`` (``engine/context/summarize/...``,
docs/context.md): the second model request inside a round, the summary message later requests
show, the compaction record and the turn's ``model_calls``, the budgets it counts toward, its
span, and every way the summary can fail (the run ends with an error, nothing is compacted).
Called from generate.py's ``engine_vectors`` with its ``compile_ir``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

AGENT = """
model Big {{ provider: openai("gpt-4o") contextWindow: 1000 maxOutputTokens: 200 }}
model Small {{ provider: openai("gpt-4o-mini") }}
model Tiny {{ provider: openai("gpt-4o-mini") contextWindow: 300 maxOutputTokens: 100 }}
agent Main {{
    default config {{
        model: Big
        prompt: "You help."
        history: {{ keepLast: 1, compact: "summarize"{extra}, trigger: 0.8 }}
        {more}
    }}
    tool lookup(item: string): string
}}
"""
ANSWER = "[response_text]\nNoted.\n[/response_text]"
SUMMARY = "The user gave the numbers 0, 1 and 2 to remember."
DOWN = {"fail": "overloaded", "status": 503, "retryable": True}
REFUSED = {"fail": "bad key", "status": 401}
LOOKUP = "[tool_call: lookup]\nitem: ledger\n[/tool_call]"
LEDGER = {"lookup": {"return": "ledger line; " * 30}}


def _inputs(count: int) -> list[str]:
    return [f"turn {i}: " + f"remember the number {i}. " * 12 for i in range(count)]


def _failing(summary: Any) -> list[Any]:
    """Four answers, then the summary request's reply (the fifth turn's first request)."""
    return [ANSWER] * 4 + [summary]


def _replies(summary: Any, total: int = 6, at: int = 4) -> list[Any]:
    """``total`` answers with the summary request's reply at request ``at``."""
    replies: list[Any] = [ANSWER] * total
    replies.insert(at, summary)
    return replies


# (name, the history's extra keys, more config lines, the scenario)
SCENARIOS: list[tuple[str, str, str, dict[str, Any]]] = [
    ("basic", "", "", {"inputs": _inputs(6), "replies": _replies(SUMMARY)}),
    ("summarize_with", ", summarizeWith: Small", "", {"inputs": _inputs(6), "replies": _replies(SUMMARY)}),
    ("usage_counted", "", "", {"inputs": _inputs(6),
                               "replies": _replies({"parts": [SUMMARY], "usage": [300, 15]})}),
    ("second_summary", "", "", {"inputs": _inputs(10),
                                "replies": _replies("Turns 0 to 4 gave numbers.", 10, 7)[:4]
                                + [SUMMARY] + _replies("Turns 0 to 4 gave numbers.", 10, 7)[4:]}),
    ("empty_summary", "", "", {"inputs": _inputs(5), "replies": _failing("")}),
    ("blank_summary", "", "", {"inputs": _inputs(5), "replies": _failing("  \n ")}),
    ("summary_refused", "", "", {"inputs": _inputs(5), "replies": _failing(REFUSED)}),
    ("summary_down_no_fallback", "", "fallback: [Small]", {"inputs": _inputs(5), "replies": _failing(DOWN)}),
    ("summary_too_big", ", summarizeWith: Tiny", "", {"inputs": _inputs(5), "replies": _failing(SUMMARY)}),
    ("summary_longer", "", "", {"inputs": _inputs(5),
                                  "replies": _failing("a very long summary " * 60) + [ANSWER]}),
    ("budget_requests", "", "", {"inputs": _inputs(5), "config": {"budget": {"conversationRequests": 5}},
                                 "replies": _replies(SUMMARY)}),
    ("budget_tokens", "", "", {"inputs": _inputs(5), "config": {"budget": {"tokens": 300}},
                               "replies": _replies({"parts": [SUMMARY], "usage": [280, 30]})}),
    ("tool_result_stubbed", "", "", {"inputs": _inputs(6), "tools": LEDGER,
                                     "replies": [LOOKUP, *_replies(SUMMARY, 6, 3)]}),
    ("traced", ", summarizeWith: Small", "", {"inputs": _inputs(6), "trace": True,
                                              "replies": _replies({"parts": [SUMMARY], "usage": [250, 12]})}),
    ("native", "", "", {"inputs": _inputs(9), "protocol": "native",
                        "replies": ["Noted."] * 7 + [SUMMARY] + ["Noted."] * 2}),
]  # fmt: skip


def summarize_vectors(compile_ir: Callable[[str], dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``engine/context/summarize/*`` vectors (generate.py fills in what is expected)."""
    out = []
    for name, extra, more, sc in SCENARIOS:
        ir = compile_ir(AGENT.format(extra=extra, more=more))
        out.append({"id": f"engine/context/summarize/{name}", "ir": ir,
                    "scenario": {"context": {}, **sc}, "chunk_size": 5})  # fmt: skip
    return out
