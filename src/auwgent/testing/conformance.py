"""Run the language-neutral conformance vectors of ``conformance/`` through this runtime.

``run_vector(group, vector)`` computes, from a vector's inputs, the value its ``expected`` key
holds. ``conformance/generate.py`` writes the vectors with it; the test suite compares. The
TypeScript runtime runs the same files (``ts/test/conformance.test.mjs``); see
``docs/typescript.md``.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from auwgent.errors import AuwgentError
from auwgent.ir import compute_hash
from auwgent.runtime import context_budget, taint
from auwgent.runtime.agent import agent_from_ir
from auwgent.runtime.evaluate import expr, prompts, schema
from auwgent.runtime.protocol.blocks import BlocksDecoder
from auwgent.runtime.protocol.contract import (
    CallableSpec,
    Contract,
    DecodeEvent,
    FinalEvent,
    RejectedEvent,
)
from auwgent.runtime.providers.base import FunctionSpec, TextDelta, Usage
from auwgent.runtime.providers.offline import OfflineModel
from auwgent.runtime.providers.openai import build_chat_body
from auwgent.runtime.providers.scripted import NativeCall, Reply, ScriptedFailure, ScriptedModel
from auwgent.runtime.session import message_to_json, messages_from_json
from auwgent.testing import conformance_approvals
from auwgent.testing.conformance_memory import MemoryScenario
from auwgent.testing.dsl import vector_outcome

__all__ = ["GROUPS", "ToolFailure", "normal", "run_vector"]

#: The vector files, in the order both runners read them.
GROUPS = ("schema", "expr", "prompts", "blocks", "engine", "taint", "context", "test_blocks")

_NOW = re.compile(r"Current date and time: \d{4}-\d\d-\d\dT[\d:]+[+-]\d\d:\d\d \([^)]*\)")
_TURN_ID = re.compile(r'"id": "[0-9a-f]{32}"')
_TRACEBACK = re.compile(r'"traceback": "(?:[^"\\]|\\.)*"')
_NONCE = re.compile(r"untrusted:([0-9a-f]{16})>>")
_DECIDED = re.compile(r'"decided_at": "[^"]*"')
#: Where a scenario's ``mcp_servers`` scripts are (the real test MCP servers).
_MCP_TOOLS = Path(__file__).resolve().parents[3] / "tests" / "mcptools"


class ToolFailure(Exception):
    """What a scenario's failing tool raises (the TypeScript runner throws an Error so named)."""


def normal(value: Any) -> Any:
    """``value`` with the date line and turn ids replaced, so that runs compare equal."""
    text = json.dumps(value, ensure_ascii=False)
    text = _NOW.sub("Current date and time: <now>", text)
    text = _TRACEBACK.sub('"traceback": "<traceback>"', text)  # the host language's own
    text = _nonces(text)
    text = _DECIDED.sub('"decided_at": "<time>"', text)  # an approval decision's clock
    return json.loads(_TURN_ID.sub('"id": "<id>"', text))


def _nonces(text: str) -> str:
    """Each run's spotlighting nonce (random) replaced by its rank of first appearance."""
    seen: dict[str, int] = {}
    return _NONCE.sub(
        lambda m: f"untrusted:<nonce{seen.setdefault(m.group(1), len(seen) + 1)}>>", text
    )


def _contract(spec: Mapping[str, Any]) -> Contract:
    callables = tuple(
        CallableSpec(c["kind"], c["name"], c["description"], tuple(c["params"]), c["returns"])
        for c in spec["callables"]
    )
    return Contract("Main", callables, tuple(spec["intents"]), spec["output"], spec["types"])


def _event(e: DecodeEvent) -> dict[str, Any] | None:
    if isinstance(e, FinalEvent):
        return {"type": "final", "kind": e.kind, "name": e.name, "payload": dict(e.payload)}
    if isinstance(e, RejectedEvent):
        return {"type": "rejected", "kind": e.kind, "name": e.name}
    return None


def decode(spec: Mapping[str, Any], text: str, chunk: int) -> list[dict[str, Any]]:
    """The final and rejected events of ``text`` fed in pieces of ``chunk`` (0: whole)."""
    decoder = BlocksDecoder(_contract(spec), partials=True)
    pieces = [text[i : i + chunk] for i in range(0, len(text), chunk)] if chunk else [text]
    events = [e for piece in pieces for e in decoder.feed(TextDelta(piece))] + decoder.close()
    return [shown for e in events if (shown := _event(e)) is not None]


def _tools(spec: Mapping[str, Any]) -> dict[str, Any]:
    def make(behaviour: Mapping[str, Any]) -> Any:
        async def impl(**_: Any) -> Any:
            if "raise" in behaviour:
                raise ToolFailure(behaviour["raise"])
            return behaviour["return"]

        return impl

    return {name: make(b) for name, b in spec.items()}


def _reply(spec: Any) -> str | Reply | ScriptedFailure:
    """A scenario reply: text, or ``{"parts": [text | {"call": name, "args": {...}}]}`` with
    optional ``"finish"`` (the finish reason) and ``"usage"`` (``[input, output]`` tokens), or
    ``{"fail": message}`` with optional ``"status"``, ``"retryable"`` and ``"after"`` (a reply
    streamed before the failure)."""
    if isinstance(spec, str):
        return spec
    if "fail" in spec:
        after = _reply(spec["after"]) if "after" in spec else None
        before = Reply((after,)) if isinstance(after, str) else after
        assert not isinstance(before, ScriptedFailure)
        return ScriptedFailure(
            spec["fail"], before, spec.get("status"), spec.get("retryable", False)
        )
    parts = [p if isinstance(p, str) else NativeCall(p["call"], p["args"]) for p in spec["parts"]]
    usage = Usage(*spec["usage"]) if "usage" in spec else None
    return Reply(tuple(parts), spec.get("finish"), usage)


async def _scenario(ir: dict[str, Any], sc: Mapping[str, Any], chunk: int) -> dict[str, Any]:
    model = _model(sc, chunk)
    intents: list[dict[str, Any]] = []
    config = {
        "provider": model,
        "context": sc.get("context", {"name": "Ama"}),
        "tools": _tools(sc.get("tools", {})),
        "protocol": sc.get("protocol", "blocks"),
        "persona": sc.get("persona"),
    }
    config.update(sc.get("config", {}))  # more runtime config keys (budget, ...)
    recorder = _recorder(sc, config)
    # The approver's answers and the resumes (conformance/gen_approvals.py).
    gated = conformance_approvals.Gated(sc.get("approvals"), config)
    ir = _with_mcp_servers(ir, sc.get("mcp_servers"))
    ends: list[Any] = []
    middleware: list[Any] = []
    if sc.get("llm_end"):
        middleware.append({"onLLMEnd": lambda response, ctx: ends.append(dict(response))})
    seen: dict[str, list[str]] = {}
    guards = [_Seer(g, seen) for g in sc.get("guards", ())]
    middleware += [g.middleware() for g in guards if g.kind == "middleware"]
    memory = await MemoryScenario.join(sc, config, middleware)  # "memory": conformance_memory.py
    if middleware:
        config["middleware"] = middleware
    agent, refused = MemoryScenario.agent(memory, lambda: agent_from_ir(ir, config))
    if refused is not None:
        return refused
    agent.on_intent(
        lambda name, value, who: intents.append({"name": name, "agent": who, "value": value})
    )
    _handlers(agent, sc, guards)
    session = json.loads(json.dumps(sc["session"])) if "session" in sc else None
    if session is not None and "tamper" in sc:
        # A stored session edited by hand: its top frame claims what the scenario says.
        session["stack"][-1].update(sc["tamper"])
    raised = None
    try:
        for text in sc["inputs"]:
            session = await MemoryScenario.run(memory, agent, text, session)
    except AuwgentError as exc:  # what run refuses before anything runs (a bad session)
        raised = {"error": type(exc).__name__, "message": str(exc)}
    if raised is None:
        session, raised = await gated.resume(agent, session)
    await agent.aclose()  # stops the MCP servers it launched
    requests = [build_chat_body(r) for r in model.requests]
    out: dict[str, Any] = {"intents": intents, "requests": requests, "session": session}
    if raised is not None:
        out["raised"] = raised
    if sc.get("llm_end"):
        out["llm_end"] = ends  # what onLLMEnd was given, call by call
    if guards:
        out["seen"] = seen  # what each guard was shown, in order
    if recorder is not None:
        out["spans"] = recorder.tree()  # the OpenTelemetry spans, ids and times left out
    out = gated.output(MemoryScenario.finish(memory, out))
    return _normalized(out, sc.get("normalize", ()))


def _model(sc: Mapping[str, Any], chunk: int) -> ScriptedModel | OfflineModel:
    """The scenario's model: the offline model, or its scripted replies."""
    if sc.get("model") == "offline":
        return OfflineModel(chunk_size=chunk)
    return ScriptedModel([_reply(r) for r in sc["replies"]], chunk_size=chunk)


def _handlers(agent: Any, sc: Mapping[str, Any], guards: list[_Seer]) -> None:
    """The scenario's intent handlers, after the recorder: its guards, a handler that raises
    (``handler_raises``) and one that returns a value (``guard_returns``)."""
    for guard in guards:
        if guard.kind == "handler":
            agent.on_intent(guard)
    if "handler_raises" in sc:
        agent.on_intent(_Guard(sc["handler_raises"]))
    if "guard_returns" in sc:
        agent.on_intent(_Returns(sc["guard_returns"]["on"], sc["guard_returns"]["value"]))


def _recorder(sc: Mapping[str, Any], config: dict[str, Any]) -> Any:
    """With ``"trace": true``, a tracer provider recording the spans, put in ``config``
    (it needs the otel extra, imported only then)."""
    if not sc.get("trace"):
        return None
    from auwgent.testing.trace_tree import TraceRecorder  # noqa: PLC0415 (optional extra)

    recorder = TraceRecorder()
    config["tracerProvider"] = recorder.provider
    return recorder


def _normalized(out: dict[str, Any], rules: Any) -> dict[str, Any]:
    """A scenario's optional ``"normalize"``: ``[[pattern, replacement], ...]`` applied to its
    output's JSON text (code mode's limits name measured numbers)."""
    if not rules:
        return out
    text = json.dumps(out, ensure_ascii=False)
    for pattern, replacement in rules:
        text = re.sub(pattern, replacement, text)
    result: dict[str, Any] = json.loads(text)
    return result


def _with_mcp_servers(ir: dict[str, Any], servers: Mapping[str, list[str]] | None) -> Any:
    """A scenario's ``mcp_servers`` (``{"Files": ["mcp_server.py", "files"]}``): each named
    server of the IR launched as that script of tests/mcptools with its arguments, by this
    interpreter (the IR gets the paths of this machine, and its hash again)."""
    if not servers:
        return ir
    doc = json.loads(json.dumps(ir))
    for name, (script, *args) in servers.items():
        env = doc["mcp"][name].get("env", {})
        doc["mcp"][name] = {
            "command": sys.executable,
            "args": [str(_MCP_TOOLS / script), *args],
            "env": env,
        }
    doc["hash"] = compute_hash(doc)
    return doc


class _Seer:
    """A scenario's guard (``{"kind": "middleware" | "handler", "name", "on", "returns" |
    "raises", "target"}``): it notes every intent it is shown (``name`` or ``name type``) in
    ``seen[name]`` and, on the intent named ``on``, returns ``returns`` or raises."""

    def __init__(self, spec: Mapping[str, Any], seen: dict[str, list[str]]) -> None:
        self.kind = spec["kind"]
        self.name = spec["name"]
        self.spec = spec
        self.notes = seen.setdefault(self.name, [])

    def __call__(self, name: str, value: Any, who: str) -> Any:
        kind = value.get("type") if isinstance(value, Mapping) else None
        self.notes.append(f"{name} {kind}" if isinstance(kind, str) else name)
        if name != self.spec["on"] or self.spec.get("only", kind) != kind:
            return None  # (an optional "only": the one call type it acts on)
        if "raises" in self.spec:
            raise ToolFailure(self.spec["raises"])
        return json.loads(json.dumps(self.spec.get("returns")))

    def middleware(self) -> dict[str, Any]:
        hooks: dict[str, Any] = {"name": self.name, "onIntent": lambda n, v, ctx: self(n, v, "")}
        if "target" in self.spec:
            hooks["target"] = self.spec["target"]
        return hooks


class _Guard:
    """An intent handler named ``guard`` that raises on the intents named ``on``."""

    name = "guard"

    def __init__(self, on: str) -> None:
        self.on = on

    def __call__(self, name: str, value: Any, who: str) -> None:
        if name == self.on:
            raise ToolFailure("guard down")


class _Returns:
    """An intent handler named ``guard`` that returns ``value`` on the intents named ``on``."""

    name = "guard"

    def __init__(self, on: str, value: Any) -> None:
        self.on = on
        self.value = value

    def __call__(self, name: str, value: Any, who: str) -> Any:
        return self.value if name == self.on else None


def context_vector(v: Mapping[str, Any]) -> Any:
    """What :mod:`auwgent.runtime.context_budget` makes of one ``context`` vector."""
    kind = v["kind"]
    if kind == "limits":
        found = context_budget.limits_for(v["model"])
        return {
            "contextWindow": found.context_window,
            "maxOutputTokens": found.max_output_tokens,
            "budget": found.budget,
        }
    if kind == "estimate":
        limits = context_budget.limits_for(v["model"])
        messages = messages_from_json(v["messages"])
        functions = [
            FunctionSpec(f["name"], f["description"], f["parameters"]) for f in v["functions"]
        ]
        return {
            "zones": context_budget.raw_estimate(limits, v["system"], messages, functions),
            "total": context_budget.estimate_request(
                limits, v["system"], messages, functions, v["factor"]
            ),
        }
    if kind == "cut":
        return context_budget.cut(v["text"], v["limit"], v["ref"], v["offset"])
    segments = [messages_from_json(s) for s in v["segments"]]
    view = context_budget.compact_view(segments, v["refs"], v["record"])
    return [message_to_json(m) for m in view]


def run_vector(group: str, v: Mapping[str, Any]) -> Any:
    """What this runtime makes of vector ``v`` of ``group`` (compare with ``v["expected"]``)."""
    if group == "taint":
        return taint.evaluate(v["case"])
    if group == "schema":
        coerced = schema.coerce(v["value"], v["type"], v["types"])
        return {"coerced": coerced, "errors": schema.validate(coerced, v["type"], v["types"])}
    if group == "expr":
        value = expr.evaluate(v["expr"], v["scope"], v["ctx"], strict=False)
        return {"value": value, "rendered": expr.render_value(value), "truthy": expr.truthy(value)}
    if group == "prompts":
        ir = v["ir"]
        agent = ir["agents"][ir["root"]]
        return prompts.render_prompt(ir, agent, agent["configs"]["default"], v["context"])
    if group == "blocks":
        return [decode(v["contract"], v["text"], chunk) for chunk in v["chunkings"]]
    if group == "engine":
        return normal(asyncio.run(_scenario(v["ir"], v["scenario"], v["chunk_size"])))
    if group == "context":
        return context_vector(v)
    if group == "test_blocks":  # a DSL test block: auwgent.testing.dsl
        return normal(vector_outcome(v["spec"], v["ir"]))
    raise ValueError(f"unknown vector group {group!r}")
