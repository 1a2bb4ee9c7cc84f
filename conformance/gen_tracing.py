"""Engine scenarios with OpenTelemetry traces (``engine/tracing/...``): the scenario's
``"trace": true`` runs it with a recording tracer provider and its expected output gains
``spans``, the normalised span tree (src/auwgent/testing/trace_tree.py,
ts/test/trace_tree.mjs): names, parent and child, attributes and status, ids and times left
out. Called from generate.py's ``engine_vectors`` with its compiled agents.
"""

from __future__ import annotations

from typing import Any


def _tb(kind: str, name: str | None, body: str) -> str:
    head = f"[{kind}: {name}]" if name else f"[{kind}]"
    return f"{head}\n{body}\n[/{kind}]"


ANSWER = _tb("response_text", None, "Done.")
WEATHER = _tb("tool_call", "get_weather", "location: Accra")
SUNNY = {"get_weather": {"return": {"temperature": 30, "condition": "sunny"}}}
DOWN = {"fail": "overloaded", "status": 503, "retryable": True}
REFUSED = {"fail": "bad key", "status": 401}
POLL = {"status": {"return": "running"}, "check": {"return": "running"}}


def _used(reply: str, tokens_in: int, tokens_out: int, finish: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"parts": [reply], "usage": [tokens_in, tokens_out]}
    if finish is not None:
        out["finish"] = finish
    return out


def _poll(tool: str, job: str = "j1") -> str:
    return _tb("tool_call", tool, f"job: {job}")


def _skip(on: str) -> dict[str, Any]:
    """A handler that skips every ``on`` call: the call's span ends marked ``auwgent.skipped``."""
    return {"kind": "handler", "name": "h1", "on": on, "returns": {"skip": True}}


# Scenarios on generate.py's ENGINE_AGENT (Main with tools, a workflow, Analyst, Support).
ENGINE: list[tuple[str, dict[str, Any]]] = [
    ("answer", {"inputs": ["hi"], "replies": [_used(ANSWER, 12, 3)]}),
    ("answer_without_usage", {"inputs": ["hi"], "replies": [ANSWER]}),
    ("tool", {"inputs": ["weather?"], "replies": [_used(WEATHER, 20, 5), _used(ANSWER, 30, 2)],
              "tools": SUNNY}),
    ("tool_raises", {"inputs": ["weather?"], "replies": [WEATHER, ANSWER],
                     "tools": {"get_weather": {"raise": "station offline"}}}),
    ("tool_missing", {"inputs": ["weather?"], "replies": [WEATHER, ANSWER]}),
    ("tool_bad_args", {"inputs": ["bad"], "tools": {"get_weather": {"return": "x"}},
                       "replies": [_tb("tool_call", "get_weather", '{"location": 3, "x": 1}'), ANSWER]}),
    ("tool_skipped", {"inputs": ["weather?"], "replies": [WEATHER, ANSWER], "tools": SUNNY,
                      "guards": [_skip("tool_call")]}),
    ("handler_raises", {"inputs": ["weather?"], "replies": [WEATHER, ANSWER], "tools": SUNNY,
                        "handler_raises": "tool_call"}),
    ("workflow", {"inputs": ["purge"], "replies": [_tb("workflow_call", "purge", "id: r1"), ANSWER],
                  "tools": {"purge_db": {"return": "ok"}}, "context": {"name": "Ama", "is_admin": True}}),
    ("workflow_denied", {"inputs": ["purge"], "replies": [_tb("workflow_call", "purge", "id: r1"), ANSWER],
                         "tools": {"purge_db": {"return": "ok"}}, "context": {"name": "Ama", "is_admin": False}}),
    ("workflow_skipped", {"inputs": ["purge"], "replies": [_tb("workflow_call", "purge", "id: r1"), ANSWER],
                          "tools": {"purge_db": {"return": "ok"}}, "context": {"name": "Ama", "is_admin": True},
                          "guards": [_skip("workflow_call")]}),
    ("helper_skipped", {"inputs": ["analyse"], "replies": [_tb("helper_call", "Analyst", "input: sales"), ANSWER],
                        "guards": [_skip("helper_call")]}),
    ("helper", {"inputs": ["analyse"], "replies": [
        _used(_tb("helper_call", "Analyst", "input: sales"), 40, 8),
        _used(_tb("schema", "AnalystOutput", "summary: up"), 15, 4), ANSWER]}),
    ("helper_bad_output", {"inputs": ["analyse"], "replies": [
        _tb("helper_call", "Analyst", "input: sales"), "no block", "still none", "none again", ANSWER]}),
    ("handoff", {"inputs": ["billing", "invoice 7", "thanks"], "replies": [
        _tb("helper_call", "Support", "input: billing"), _tb("response_text", None, "Which invoice?"),
        _tb("response_text", None, "Invoice 7 is paid."), _tb("handoff_complete", None, "summary: paid"),
        ANSWER]}),
    ("custom_intent", {"inputs": ["plan"], "replies": [_tb("custom", "Planning", "step: think")]}),
    ("two_turns", {"inputs": ["one", "two"], "replies": [_used(ANSWER, 5, 1), _used(ANSWER, 9, 1)]}),
    ("tool_loops_exceeded", {"inputs": ["loop"], "tools": {"slow": {"return": "again"}},
                             "replies": [_tb("tool_call", "slow", "")] * 3}),
    ("no_answer", {"inputs": ["empty"], "replies": ["", "", ""]}),
    ("truncated", {"inputs": ["hi"], "replies": [_used("[response_text]\nLong answ", 7, 100, "length")]}),
    ("length_cuts_call", {"inputs": ["weather?"], "tools": SUNNY,
                          "replies": [_used("[tool_call: get_weather]\nlocation: Ac", 7, 100, "length")]}),
    ("refusal", {"inputs": ["hi"], "replies": [_used(ANSWER, 7, 2, "content_filter")]}),
    ("provider_refused", {"inputs": ["hi"], "replies": [REFUSED]}),
    ("native_tool", {"inputs": ["weather?"], "protocol": "native", "tools": SUNNY, "replies": [
        {"parts": [{"call": "tool__get_weather", "args": {"location": "Accra"}}], "usage": [11, 4]},
        "Hot."]}),
    ("native_helper", {"inputs": ["analyse"], "protocol": "native", "replies": [
        {"parts": [{"call": "helper__Analyst", "args": {"input": "q3"}}]}, '{"summary": "flat"}', "Flat."]}),
    ("native_workflow", {"inputs": ["purge"], "protocol": "native", "context": {"name": "Ama", "is_admin": True},
                         "tools": {"purge_db": {"return": "ok"}},
                         "replies": [{"parts": [{"call": "workflow__purge", "args": {"id": "r9"}}]}, "Purged."]}),
]  # fmt: skip

# Scenarios on generate.py's RESILIENCE_AGENT (Poller with fallback models).
RESILIENCE: list[tuple[str, dict[str, Any]]] = [
    ("fallback", {"inputs": ["hi"], "replies": [DOWN, _used(ANSWER, 6, 1)]}),
    ("fallback_spent", {"inputs": ["hi"], "replies": [DOWN, DOWN, DOWN, ANSWER]}),
    ("fallback_after_output", {"inputs": ["hi"], "replies": [{**DOWN, "after": "[response_text]\nHal"}, ANSWER]}),
    ("budget_requests", {"inputs": ["poll"], "tools": POLL, "config": {"budget": {"requests": 2}},
                         "replies": [_poll("check"), _poll("check", "j2"), ANSWER]}),
    ("budget_tokens", {"inputs": ["poll"], "tools": POLL, "config": {"budget": {"tokens": 10}},
                       "replies": [{"parts": [_poll("check")], "usage": [4, 6]}, ANSWER]}),
    ("no_progress", {"inputs": ["poll"], "tools": POLL, "replies": [_poll("check")] * 5 + [ANSWER]}),
]  # fmt: skip


def tracing_vectors(
    engine_ir: dict[str, Any], resilience_ir: dict[str, Any]
) -> list[dict[str, Any]]:
    """The ``engine/tracing/*`` vectors (their expected output is filled in by generate.py)."""
    out = []
    for name, sc in ENGINE:
        scenario = {**sc, "trace": True}
        out.append(
            {"id": f"engine/tracing/{name}", "ir": engine_ir, "scenario": scenario, "chunk_size": 5}
        )
    for name, sc in RESILIENCE:
        scenario = {"context": {}, **sc, "trace": True}
        out.append({"id": f"engine/tracing/resilience/{name}", "ir": resilience_ir,
                    "scenario": scenario, "chunk_size": 5})  # fmt: skip
    return out
