"""The context budget end to end (docs/context.md): a 200-turn conversation over a real HTTP
fake server, a 2 MB tool result in turn 3, each history policy; plus the window check,
summarize's extra request, call/result pairs and pending approvals."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import pytest

from auwgent import __version__
from auwgent.compiler.pipeline import compile_sources
from auwgent.runtime.agent import Agent, create_agent
from auwgent.runtime.context_budget import recall
from auwgent.testing.fake_servers import (
    FakeOpenAIServer,
    RecordedRequest,
    ServerReply,
    text,
    tool_calls,
)

HUGE = "".join(f"line {i:07d} of the export\n" for i in range(2 * 1024 * 1024 // 26))
WINDOW, OUTPUT, TRIGGER = 12000, 1000, 0.8
BUDGET = WINDOW - OUTPUT

SOURCE = """
model Small {
    provider: openai("gpt-4o-mini")
    contextWindow: 12000
    maxOutputTokens: 1000
}
agent Main {
    default config {
        model: Small
        prompt: "You answer briefly."
        HISTORY
    }
    tool export(table: string): string @desc "Exports a table" @maxOutput(chars = 16000)
    tool delete(table: string): string @desc "Deletes a table" @approval
}
"""


def _doc(history: str) -> dict[str, Any]:
    result = compile_sources({"main.agent": SOURCE.replace("HISTORY", history)})
    assert result.ok, [str(d) for d in result.diagnostics]
    return dict(result.documents["main.agent"])


def _agent(doc: Mapping[str, Any], server: FakeOpenAIServer, **config: Any) -> Agent:
    settings: dict[str, Any] = {
        "tools": {"export": lambda table: HUGE, "delete": lambda table: "deleted"},
        "apiKeys": {"openaiApiKey": "sk-k"},
        "baseUrls": {"openai": server.base_url},
        "protocol": "native",
        **config,
    }
    return create_agent(
        doc, settings, ir_hash=doc["hash"], compiler_version=__version__,
        ir_version=doc["ir_version"],
    )  # fmt: skip


def _last_user(request: RecordedRequest) -> str:
    users = [m for m in request.body["messages"] if m["role"] == "user"]
    return str(users[-1]["content"]) if users else ""


def _summarizing(request: RecordedRequest) -> bool:
    system = request.body["messages"][0]
    return system["role"] == "system" and str(system["content"]).startswith("You compress")


def _model(request: RecordedRequest) -> ServerReply:
    """A model that exports in turn 3, recalls in turn 150, summarizes when asked."""
    if _summarizing(request):
        return text("Summary: the user asked numbered questions; turn 3 exported a table.")
    last = request.body["messages"][-1]
    if last["role"] == "tool":
        return text("Done, noted.")
    asked = _last_user(request)
    if asked.startswith("turn 3:"):
        return tool_calls([("tool__export", {"table": "orders"})])
    if asked.startswith("turn 150:"):
        return tool_calls([("tool__recall", {"id": "r1", "offset": 16000})])
    return text(f"Answer to {asked[:12]} is short and done.")


def _wire_tokens(body: Mapping[str, Any]) -> int:
    """What a request really carried, counted as the estimator counts (4 characters a token,
    4 tokens a message): the measure each captured request is held to."""
    total = 3
    for message in body["messages"]:
        chars = len(str(message.get("content") or ""))
        for call in message.get("tool_calls") or ():
            chars += len(call["function"]["name"]) + len(call["function"]["arguments"])
        total += -(-chars // 4) + 4
    return total + -(-len(json.dumps(body.get("tools") or [], separators=(",", ":"))) // 4)


async def _converse(history: str) -> tuple[FakeOpenAIServer, Agent, Any, list[tuple[str, Any]]]:
    seen: list[tuple[str, Any]] = []
    with FakeOpenAIServer(_model) as server:
        agent = _agent(_doc(history), server)
        agent.on_intent(lambda name, value, who: seen.append((name, value)))
        session = None
        for number in range(200):
            session = await agent.run(f"turn {number}: what is item {number}?", session=session)
            assert session["turns"][-1]["status"] == "complete", session["turns"][-1]["error"]
    return server, agent, session, seen


POLICIES = {
    "drop": 'history: { keepLast: 6, compact: "drop", trigger: 0.8 }',
    "clearToolResults": 'history: { keepLast: 6, compact: "clearToolResults", trigger: 0.8 }',
    "summarize": (
        'history: { keepLast: 6, compact: "summarize", summarizeWith: Small, trigger: 0.8 }'
    ),
}


@pytest.mark.parametrize("policy", sorted(POLICIES))
async def test_two_hundred_turns_stay_within_the_budget(policy: str) -> None:
    server, _, session, seen = await _converse(POLICIES[policy])
    chats = [r for r in server.requests if r.path.endswith("/chat/completions")]
    for request in chats:
        assert _wire_tokens(request.body) <= BUDGET
    wire = [json.dumps(r.body) for r in chats]
    assert not any(HUGE in w for w in wire)  # the 2 MB never went out whole
    head = json.dumps(HUGE[:16000])[1:-1]
    shown = [i for i, w in enumerate(wire) if head in w]
    assert shown and shown == list(range(shown[0], shown[-1] + 1))  # cut, then never again
    assert 'recall(id=\\"r1\\", offset=16000)' in wire[shown[0]]
    compactions = session["context"]["compactions"]
    assert compactions and {c["policy"] for c in compactions} == {policy}
    assert [name for name, _ in seen].count("context_compacted") == len(compactions)
    # (the summarizer's own input shows results as stubs: it reads the transcript to compress)
    answers = [w for w, r in zip(wire, chats, strict=True) if not _summarizing(r)]
    later = answers[shown[-1] + 1 :]
    stub = "an earlier tool result of"
    if policy == "clearToolResults":
        assert all(stub in w for w in later)
    else:
        assert not any(stub in w for w in later)
    # recall: the model's call in turn 150 gets the next slice; the application the whole.
    assert recall(session, "r1") == HUGE
    recalled = [r for r in chats if "call_" in json.dumps(r.body) and "tool__recall" in
                json.dumps(r.body["messages"][-2:])]  # fmt: skip
    assert recalled
    answer = recalled[0].body["messages"][-1]["content"]
    assert answer.startswith(HUGE[16000:16100]) and "offset=32000" in answer


async def test_summarize_makes_one_request_per_compaction_and_counts_it() -> None:
    server, _, session, _ = await _converse(POLICIES["summarize"])
    summaries = [r for r in server.requests if _summarizing(r)]
    compactions = session["context"]["compactions"]
    assert len(summaries) == len(compactions) >= 1
    calls = [c for t in session["turns"] for c in t["model_calls"] if c.get("purpose")]
    assert len(calls) == len(compactions)
    assert all(c["usage"]["input_tokens"] > 0 for c in calls)
    later = [json.dumps(r.body) for r in server.requests if not _summarizing(r)][-1]
    assert "Summary: the user asked numbered questions" in later


async def test_a_call_and_its_result_are_never_parted() -> None:
    server, _, _, _ = await _converse(POLICIES["drop"])
    for request in server.requests:
        messages = request.body["messages"]
        for index, message in enumerate(messages):
            if message["role"] == "tool":
                before = messages[index - 1]
                ids = {c["id"] for c in before.get("tool_calls") or ()}
                assert message["tool_call_id"] in ids


async def test_a_pending_approval_survives_compaction() -> None:
    def model(request: RecordedRequest) -> ServerReply:
        if (
            _last_user(request).startswith("turn 60:")
            and request.body["messages"][-1]["role"] == "user"
        ):
            return tool_calls([("tool__delete", {"table": "orders"})])
        return _model(request)

    with FakeOpenAIServer(model) as server:
        doc = _doc(POLICIES["drop"])
        agent = _agent(doc, server, approvals="defer")
        session = None
        for number in range(61):
            session = await agent.run(f"turn {number}: {'x' * 800}", session=session)
        assert session is not None and session["status"] == "awaiting_approval"
        pending = session["pending_approvals"][0]["id"]
        session = await agent.resume(session, {pending: True})
    assert session["turns"][-1]["status"] == "complete"
    assert session["context"]["compactions"]
    last = server.requests[-1].body["messages"]
    assert any(m.get("tool_calls") and "tool__delete" in json.dumps(m) for m in last)
    assert last[-1] == {"role": "tool", "tool_call_id": last[-2]["tool_calls"][0]["id"],
                        "content": "deleted"}  # fmt: skip


async def test_a_request_that_cannot_fit_is_not_sent() -> None:
    with FakeOpenAIServer(_model) as server:
        agent = _agent(_doc(""), server)
        session = await agent.run("y" * 70000)
    turn = session["turns"][-1]
    assert turn["status"] == "error"
    assert "context window exceeded" in turn["error"]
    assert "over the 11000 it may use (contextWindow 12000 - maxOutputTokens 1000)" in turn["error"]
    assert "by zone: system " in turn["error"] and ", turn 1" in turn["error"]
    assert "nothing was sent" in turn["error"]
    assert server.requests == []
