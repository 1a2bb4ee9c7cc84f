"""Recorded tool-calling responses, end to end through a compiled agent, in both protocols.

Every recorded response in tests/data/wire/real/ whose plain reading holds native calls is the
first answer of a run (``httpClient`` with an ``httpx.MockTransport``); later requests get a
short text answer. With ``protocol: "native"`` the calls go back to the model answered (their
names are not the agent's, so each answer is a tool error), and the follow-up request must be a
valid history: every call has an id (or, on Gemini, a name) and is answered exactly once, with
no answer left without its call (on Anthropic, the recorded thinking blocks go back too, first in
the assistant turn, signatures unchanged). With the block protocol the native calls are not ours to run:
nothing is called and the run still ends cleanly.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import wire_reference as ref

from auwgent import __version__
from auwgent.compiler.pipeline import compile_sources
from auwgent.runtime.agent import create_agent

pytestmark = pytest.mark.corpus

REAL = Path(__file__).resolve().parents[2] / "data" / "wire" / "real"

SOURCE = """
agent Main {
    default config {
        model: MODEL
        prompt: "You answer questions."
    }
    tool lookup(q: string): string @desc "Looks something up"
}
"""
MODELS = {
    "openai": 'openai("gpt-4o")',
    "gemini": 'gemini("gemini-2.5-flash")',
    "anthropic": 'anthropic("claude-sonnet-4-5")',
}
READERS = {
    "openai": ref.openai_reference,
    "gemini": ref.gemini_reference,
    "anthropic": ref.anthropic_reference,
}
FINAL = {
    "openai": {
        "id": "final",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"content": "Done."}}],
    },
    "gemini": {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": "Done."}]}, "finishReason": "STOP"}
        ]
    },
    "anthropic": {
        "id": "msg_final",
        "type": "message",
        "role": "assistant",
        "content": [{"type": "text", "text": "Done."}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    },
}


def _tool_records() -> list[Path]:
    found = []
    for path in sorted(REAL.glob("*/*.json")):
        record = json.loads(path.read_text())
        if record["endpoint"] not in (
            "chat",
            "generateContent",
            "streamGenerateContent",
            "messages",
        ):
            continue
        if record["response"]["status"] != 200:
            continue
        reading = READERS[record["api"]](record)
        if reading.get("calls"):
            found.append(path)
    return found


RECORDS = _tool_records()
_DOCS: dict[str, dict[str, Any]] = {}


def _doc(api: str) -> dict[str, Any]:
    if api not in _DOCS:
        result = compile_sources({"main.agent": SOURCE.replace("MODEL", MODELS[api])})
        assert result.ok, [str(d) for d in result.diagnostics]
        _DOCS[api] = dict(result.documents["main.agent"])
    return _DOCS[api]


def _check_openai_history(body: dict[str, Any]) -> int:
    called: list[str] = []
    answered: list[str] = []
    for message in body["messages"]:
        for call in message.get("tool_calls") or ():
            assert call["id"], "a replayed call without an id"
            called.append(call["id"])
        if message["role"] == "tool":
            answered.append(message["tool_call_id"])
    assert sorted(called) == sorted(answered), "every call answered once, no orphan answer"
    assert len(set(called)) == len(called)
    return len(called)


def _check_gemini_history(body: dict[str, Any]) -> int:
    called: list[str] = []
    answered: list[str] = []
    for content in body["contents"]:
        for part in content["parts"]:
            if "functionCall" in part:
                called.append(part["functionCall"]["name"])
            if "functionResponse" in part:
                answered.append(part["functionResponse"]["name"])
    assert called and sorted(called) == sorted(answered)
    return len(called)


def _check_anthropic_history(body: dict[str, Any], record: dict[str, Any]) -> int:
    called: list[str] = []
    answered: list[str] = []
    reasoning: list[dict[str, Any]] = []
    for message in body["messages"]:
        content = message["content"] if isinstance(message["content"], list) else []
        kinds = [block["type"] for block in content]
        if message["role"] == "assistant":
            thinking = [b for b in content if b["type"] in ("thinking", "redacted_thinking")]
            assert kinds[: len(thinking)] == [b["type"] for b in thinking], "thinking first"
            reasoning.extend(thinking)
            called.extend(block["id"] for block in content if block["type"] == "tool_use")
        else:
            answered.extend(b["tool_use_id"] for b in content if b["type"] == "tool_result")
    assert called and sorted(called) == sorted(answered), "every call answered once"
    assert reasoning == _recorded_reasoning(record), "thinking blocks go back unchanged"
    return len(called)


def _recorded_reasoning(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The thinking blocks of a recorded answer, whole (a stream's deltas joined)."""
    if not ref.is_stream(record):
        content = json.loads(record["response"]["body"]).get("content") or []
        return [
            {k: b[k] for k in ("type", "thinking", "signature") if k in b}
            if b["type"] == "thinking"
            else b
            for b in content
            if b["type"] in ("thinking", "redacted_thinking")
        ]
    blocks: dict[int, dict[str, Any]] = {}
    order: list[int] = []
    for event in map(json.loads, ref.sse_payloads(record["response"]["body"])):
        if event.get("type") == "content_block_start":
            block = dict(event["content_block"])
            if block["type"] in ("thinking", "redacted_thinking"):
                blocks[event["index"]] = block
                order.append(event["index"])
        elif event.get("type") == "content_block_delta" and event["index"] in blocks:
            block, delta = blocks[event["index"]], event["delta"]
            if delta["type"] == "thinking_delta":
                block["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                block["signature"] += delta["signature"]
    return [blocks[i] for i in order]


@pytest.mark.parametrize("protocol", ["native", "blocks"])
@pytest.mark.parametrize("path", RECORDS, ids=[p.stem for p in RECORDS])
async def test_recorded_tool_calls_run_through_an_agent(path: Path, protocol: str) -> None:
    record = json.loads(path.read_text())
    api = record["api"]
    requests: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        requests.append(json.loads(request.content))
        if len(requests) == 1:
            headers = {"content-type": "application/json", **record["response"]["headers"]}
            return httpx.Response(200, headers=headers, content=record["response"]["body"].encode())
        return httpx.Response(200, json=FINAL[api])

    calls: list[str] = []
    doc = _doc(api)
    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        agent = create_agent(
            doc,
            {
                "apiKeys": {f"{api}ApiKey": "key-for-tests"},
                "httpClient": client,
                "protocol": protocol,
                "tools": {"lookup": lambda q: calls.append(q) or "found"},
                "retry": {"attempts": 1},
            },
            ir_hash=doc["hash"],
            compiler_version=__version__,
            ir_version=doc["ir_version"],
        )
        if ref.is_stream(record):
            # A recorded stream is what the agent asks for once partials are consumed.
            agent.on_intent_partial(lambda name, value, who: None)
        session = await agent.run("Please help.")
    turn = session["turns"][-1]
    assert turn["status"] in ("complete", "error"), turn
    assert calls == [], "a recorded call of another agent's function never runs ours"
    if protocol == "native":
        assert turn["status"] == "complete", turn["error"]
        assert len(requests) >= 2
        expected = len(READERS[api](record)["calls"])
        if api == "anthropic":
            assert _check_anthropic_history(requests[1], record) == expected
        else:
            check = _check_gemini_history if api == "gemini" else _check_openai_history
            assert check(requests[1]) == expected
    else:
        for body in requests:
            assert "tools" not in body
            if api == "openai":
                assert all(m["role"] != "tool" for m in body["messages"])
            if api == "anthropic":
                assert "tool_result" not in json.dumps(body["messages"])


async def test_non_text_parts_reach_the_turn_record() -> None:
    path = REAL / "gemini" / "generativelanguage.googleapis.com__test_code_execution__0.json"
    record = json.loads(path.read_text())
    doc = _doc("gemini")

    def handler(request: httpx.Request) -> httpx.Response:
        headers = {"content-type": "application/json", **record["response"]["headers"]}
        return httpx.Response(200, headers=headers, content=record["response"]["body"].encode())

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        agent = create_agent(
            doc,
            {"apiKeys": {"geminiApiKey": "key-for-tests"}, "httpClient": client},
            ir_hash=doc["hash"],
            compiler_version=__version__,
            ir_version=doc["ir_version"],
        )
        session = await agent.run("Run some code.")
    parts = session["turns"][-1].get("parts")
    assert parts, "executableCode / codeExecutionResult parts are kept"
    assert {p["kind"] for p in parts} <= {"executableCode", "codeExecutionResult", "inlineData"}
    assert all(p["agent"] == "Main" for p in parts)
    json.dumps(session)  # the session stays JSON
