"""Recorded tool-calling responses, end to end through a compiled agent, in both protocols.

Every recorded response in tests/data/wire/real/ whose plain reading holds native calls is the
first answer of a run (``httpClient`` with an ``httpx.MockTransport``); later requests get a
short text answer. With ``protocol: "native"`` the calls go back to the model answered (their
names are not the agent's, so each answer is a tool error), and the follow-up request must be a
valid history: every call has an id (or, on Gemini, a name) and is answered exactly once, with
no answer left without its call. With the block protocol the native calls are not ours to run:
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
MODELS = {"openai": 'openai("gpt-4o")', "gemini": 'gemini("gemini-2.5-flash")'}
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
}


def _tool_records() -> list[Path]:
    found = []
    for path in sorted(REAL.glob("*/*.json")):
        record = json.loads(path.read_text())
        if record["endpoint"] not in ("chat", "generateContent", "streamGenerateContent"):
            continue
        if record["response"]["status"] != 200:
            continue
        reading = (ref.gemini_reference if record["api"] == "gemini" else ref.openai_reference)(
            record
        )
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
        check = _check_gemini_history if api == "gemini" else _check_openai_history
        assert check(requests[1]) == len(
            ref.gemini_reference(record)["calls"]
            if api == "gemini"
            else ref.openai_reference(record)["calls"]
        )
    else:
        for body in requests:
            assert "tools" not in body
            if api == "openai":
                assert all(m["role"] != "tool" for m in body["messages"])


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
