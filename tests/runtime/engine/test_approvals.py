"""The approval gate through generated bindings, over real HTTP to the fake OpenAI server.

Each test states its model script: the calls the model asks for (native function calls or
block-protocol text), then a final answer; what reached the model next is read back from the
server's recorded requests.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from auwgent.codegen.python import render_python
from auwgent.compiler.pipeline import compile_sources
from auwgent.errors import ApprovalError, ConfigError, ConflictError
from auwgent.runtime.stores import SessionStoreMiddleware, SQLiteSessionStore
from auwgent.testing import FakeOpenAIServer
from auwgent.testing.fake_servers import text, tool_calls
from auwgent.testing.scripted import block_text

SOURCE = """
helper Analyst {
    description: "Analyses data"
    default config {
        model: openai("gpt-4o")
        prompt: "Analyse."
    }
}

agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "Help."
    }

    tool send_email(to: string, body: string): string @approval
    tool read_file(path: string): string
    tool slow_op(x: string): string @approval(timeout = 0.2)

    workflow refund(order: string): string {
        description: "Refund an order"
        tool issue_refund(order: string): string @approval
        let done = issue_refund(order)
        return done
    }

    workflow settle(order: string): string {
        description: "Settle an order"
        tool issue_refund(order: string): string @approval
        let before = read_file(order)
        let done = issue_refund(order)
        let after = read_file("log")
        return before + " / " + done + " / " + after
    }

    workflow double(order: string): string {
        description: "Refund twice"
        tool issue_refund(order: string): string @approval
        let first = issue_refund(order)
        let second = issue_refund(order + "b")
        return first + " / " + second
    }

    workflow archive(): string {
        description: "Archive everything"
        return read_file("all")
    } @approval

    helpers {
        Analyst with all tools
        Desk with all tools handoff user
        Writer @approval(timeout = 5)
    }
}

helper Writer {
    description: "Writes letters"
    default config {
        model: openai("gpt-4o")
        prompt: "Write."
    }
}

helper Desk {
    description: "Takes over the conversation"
    default config {
        model: openai("gpt-4o")
        prompt: "Serve the customer."
    }
}
"""

DONE = "[response_text]\nDone.\n[/response_text]"
EMAIL = {"to": "a@x.org", "body": "hi"}


@pytest.fixture(scope="module")
def bindings(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    folder = tmp_path_factory.mktemp("bindings")
    return _generate(folder)


def _generate(folder: Path) -> ModuleType:
    result = compile_sources({"main.agent": SOURCE})
    assert result.ok, [d.message for d in result.diagnostics]
    path = folder / "approvals_main_types.py"
    path.write_text(render_python(result.documents["main.agent"]), encoding="utf-8")
    spec = importlib.util.spec_from_file_location("approvals_main_types", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["approvals_main_types"] = module
    spec.loader.exec_module(module)
    return module


class Calls:
    """The tool implementations, counting what really ran."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []

    def tools(self, m: ModuleType) -> Any:
        ran = self.ran

        class Tools(m.AuwgentTools):  # type: ignore[misc,name-defined]
            async def send_email(self, to: str, body: str) -> str:
                ran.append(("send_email", {"to": to, "body": body}))
                return f"sent to {to}"

            async def read_file(self, path: str) -> str:
                ran.append(("read_file", {"path": path}))
                return f"contents of {path}"

            async def slow_op(self, x: str) -> str:
                ran.append(("slow_op", {"x": x}))
                return "slow"

            async def issue_refund(self, order: str) -> str:
                ran.append(("issue_refund", {"order": order}))
                return f"refunded {order}"

        return Tools

    def names(self) -> list[str]:
        return [name for name, _ in self.ran]


def _agent(m: ModuleType, server: FakeOpenAIServer, calls: Calls, **config: Any) -> Any:
    agent = m.auwgent(
        {
            "apiKeys": {"openaiApiKey": "sk"},
            "baseUrls": {"openai": server.base_url},
            "tools": calls.tools(m),
            **config,
        }
    )
    return agent


def _intents(agent: Any) -> list[tuple[str, Any, str]]:
    seen: list[tuple[str, Any, str]] = []
    agent.on_intent(lambda name, value, who: seen.append((name, value, who)))
    return seen


def _call(kind: str, name: str, args: dict[str, Any], protocol: str) -> Any:
    """One model response asking for one call, in the protocol's own form."""
    if protocol == "native":
        return tool_calls([(f"{kind}__{name}", args)])
    return text(block_text(f"{kind}_call", name, args))


def _final(protocol: str) -> Any:
    return text("Done." if protocol == "native" else DONE)


def _after_first(server: FakeOpenAIServer) -> str:
    """Everything the model was sent in its second request, as text."""
    return json.dumps(server.requests[1].body["messages"], ensure_ascii=False)


def _named(seen: Sequence[tuple[str, Any, str]], name: str) -> list[Any]:
    return [value for n, value, _ in seen if n == name]


PROTOCOLS = ["blocks", "native"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_an_approved_call_runs_once_with_both_intents(
    bindings: ModuleType, protocol: str
) -> None:
    calls = Calls()
    asked: list[Any] = []

    def approve(request: Any) -> bool:
        asked.append(request)
        return True

    script = [_call("tool", "send_email", EMAIL, protocol), _final(protocol)]
    with FakeOpenAIServer(script) as server:
        agent = _agent(bindings, server, calls, protocol=protocol, approver=approve)
        seen = _intents(agent)
        session = await agent.run("mail Ada")
    assert calls.ran == [("send_email", EMAIL)]
    (request,) = _named(seen, "approval_request")
    assert request == {
        "id": request["id"],
        "kind": "tool",
        "name": "send_email",
        "args": EMAIL,
        "agent": "Main",
    }
    assert asked == [request]
    assert _named(seen, "approval_result") == [
        {"id": request["id"], "approved": True, "reason": None}
    ]
    order = [n for n, _, _ in seen]
    assert order.index("approval_result") < order.index("tool_result")
    (audit,) = session["approvals"]
    assert audit["id"] == request["id"] and audit["approved"] is True
    assert audit["name"] == "send_email" and audit["args"] == EMAIL and audit["decided_at"]
    assert "sent to a@x.org" in _after_first(server)
    assert session["turns"][-1]["status"] == "complete"


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_denied_call_never_runs_and_the_model_is_told_why(
    bindings: ModuleType, protocol: str
) -> None:
    calls = Calls()

    async def deny(request: Any) -> Any:
        return {"approved": False, "reason": "not to that address"}

    script = [_call("tool", "send_email", EMAIL, protocol), _final(protocol)]
    with FakeOpenAIServer(script) as server:
        agent = _agent(bindings, server, calls, protocol=protocol)
        agent.on_approval(deny)
        seen = _intents(agent)
        session = await agent.run("mail Ada")
    assert calls.ran == []
    assert _named(seen, "approval_result")[0]["approved"] is False
    assert _named(seen, "approval_result")[0]["reason"] == "not to that address"
    assert "send_email was not approved, so it did not run: not to that address" in (
        _after_first(server)
    )
    assert session["approvals"][0]["approved"] is False
    assert session["turns"][-1]["status"] == "complete"  # the model went on


@pytest.mark.parametrize(
    ("approver", "reason"),
    [
        (None, "no approver is configured"),
        (lambda request: 1 / 0, "the approver failed"),
        (lambda request: "yes please", "the approver's answer was not understood"),
        (lambda request: {"approved": "yes"}, "the approver's answer was not understood"),
    ],
    ids=["no-approver", "raises", "unclear-answer", "approved-not-boolean"],
)
async def test_denied_by_default(bindings: ModuleType, approver: Any, reason: str) -> None:
    calls = Calls()
    errors: list[BaseException] = []

    class Errors:
        def onError(self, error: BaseException, session: Any, ctx: Any) -> bool:
            errors.append(error)
            return True

    script = [_call("tool", "send_email", EMAIL, "blocks"), _final("blocks")]
    config = {} if approver is None else {"approver": approver}
    with FakeOpenAIServer(script) as server:
        agent = _agent(bindings, server, calls, middleware=[Errors()], **config)
        seen = _intents(agent)
        await agent.run("mail Ada")
    assert calls.ran == []
    (result,) = _named(seen, "approval_result")
    assert result["approved"] is False and reason in result["reason"]
    assert reason in _after_first(server)
    if reason == "the approver failed":
        assert [type(e) for e in errors] == [ZeroDivisionError]  # the app hears; not the model
        assert "ZeroDivisionError" not in _after_first(server)


async def test_an_approver_that_raises_is_logged_and_an_error_intent(
    bindings: ModuleType, caplog: pytest.LogCaptureFixture
) -> None:
    calls = Calls()

    def approver(request: Any) -> bool:
        raise KeyError("reviewer")

    script = [_call("tool", "send_email", EMAIL, "blocks"), _final("blocks")]
    with FakeOpenAIServer(script) as server, caplog.at_level("ERROR", logger="auwgent"):
        agent = _agent(bindings, server, calls, approver=approver)
        seen = _intents(agent)
        session = await agent.run("mail Ada")
    assert calls.ran == []  # fail closed: the call does not run
    (result,) = _named(seen, "approval_result")
    assert result == {"id": result["id"], "approved": False, "reason": "the approver failed"}
    (error,) = _named(seen, "error")
    assert error["message"] == (
        "the approver failed on tool send_email: KeyError: 'reviewer' (the call was not run)"
    )
    assert error["approval_id"] == result["id"]
    assert 'raise KeyError("reviewer")' in error["traceback"]
    (record,) = [r for r in caplog.records if r.name == "auwgent"]
    assert record.getMessage() == error["message"] and record.exc_info is not None
    assert "KeyError" not in _after_first(server)  # the model is only told it failed
    assert session["turns"][-1]["status"] == "complete"


async def test_an_approver_that_does_not_answer_in_time_is_a_denial(bindings: ModuleType) -> None:
    calls = Calls()

    async def slow(request: Any) -> bool:
        await asyncio.sleep(5)
        return True

    script = [_call("tool", "slow_op", {"x": "1"}, "blocks"), _final("blocks")]
    with FakeOpenAIServer(script) as server:
        agent = _agent(bindings, server, calls, approver=slow)
        seen = _intents(agent)
        await agent.run("go")
    assert calls.ran == []
    assert _named(seen, "approval_result")[0]["reason"] == (
        "the approver did not answer within 0.2 s"
    )


async def test_a_blocking_sync_approver_is_timed_out_too(bindings: ModuleType) -> None:
    import time

    calls = Calls()
    script = [_call("tool", "slow_op", {"x": "1"}, "native"), _final("native")]
    with FakeOpenAIServer(script) as server:
        agent = _agent(
            bindings, server, calls, protocol="native", approver=lambda r: time.sleep(1) or True
        )
        seen = _intents(agent)
        await agent.run("go")
    assert calls.ran == []
    assert "did not answer within 0.2 s" in _named(seen, "approval_result")[0]["reason"]


async def test_edited_arguments_are_checked_again(bindings: ModuleType) -> None:
    calls = Calls()
    answers = iter(
        [
            {"approved": True, "args": {"to": "b@x.org", "body": "edited"}, "reason": "fixed"},
            {"approved": True, "args": {"to": 5}},
        ]
    )
    script = [
        text(block_text("tool_call", "send_email", EMAIL)),
        text(block_text("tool_call", "send_email", EMAIL)),
        text(DONE),
    ]
    with FakeOpenAIServer(script) as server:
        agent = _agent(bindings, server, calls, approver=lambda r: next(answers))
        seen = _intents(agent)
        session = await agent.run("mail Ada")
    assert calls.ran == [("send_email", {"to": "b@x.org", "body": "edited"})]
    first, second = _named(seen, "approval_result")
    assert first == {"id": first["id"], "approved": True, "reason": "fixed"}
    assert second["approved"] is False
    assert second["reason"].startswith("the edited arguments are invalid: ")
    assert "$.to" in second["reason"] and "body" in second["reason"]
    audit = session["approvals"]
    assert audit[0]["args"] == {"to": "b@x.org", "body": "edited"}  # as executed
    assert audit[1]["args"] == EMAIL and audit[1]["approved"] is False


async def test_a_denied_scoped_tool_is_a_failed_workflow_step(bindings: ModuleType) -> None:
    calls = Calls()
    script = [text(block_text("workflow_call", "refund", {"order": "A1"})), text(DONE)]
    with FakeOpenAIServer(script) as server:
        agent = _agent(bindings, server, calls, approver=lambda r: False)
        seen = _intents(agent)
        await agent.run("refund A1")
    assert calls.ran == []
    (request,) = _named(seen, "approval_request")
    assert (request["kind"], request["name"], request["args"]) == (
        "tool",
        "issue_refund",
        {"order": "A1"},
    )
    (result,) = _named(seen, "workflow_result")
    assert "issue_refund was not approved, so it did not run" in result["result"]["error"]
    # The model is told the workflow failed (how much it hears of why is the call path's rule).
    assert "failed" in _after_first(server) and "refund" in _after_first(server)


async def test_an_approved_scoped_tool_runs_inside_the_workflow(bindings: ModuleType) -> None:
    calls = Calls()
    script = [text(block_text("workflow_call", "refund", {"order": "A1"})), text(DONE)]
    with FakeOpenAIServer(script) as server:
        agent = _agent(bindings, server, calls, approver=lambda r: True)
        seen = _intents(agent)
        await agent.run("refund A1")
    assert calls.ran == [("issue_refund", {"order": "A1"})]
    assert _named(seen, "workflow_result")[0]["result"] == "refunded A1"


async def test_a_gated_workflow_asks_before_it_starts(bindings: ModuleType) -> None:
    calls = Calls()
    script = [text(block_text("workflow_call", "archive", {})), text(DONE)]
    with FakeOpenAIServer(script) as server:
        agent = _agent(bindings, server, calls, approver=lambda r: False)
        seen = _intents(agent)
        await agent.run("archive")
    assert calls.ran == []
    assert _named(seen, "approval_request")[0]["kind"] == "workflow"
    assert _named(seen, "workflow_result") == []  # it never started


async def test_a_gated_helper_line_asks_before_the_helper_runs(bindings: ModuleType) -> None:
    calls = Calls()
    script = [text(block_text("helper_call", "Writer", {"input": "a letter"})), text(DONE)]
    with FakeOpenAIServer(script) as server:
        agent = _agent(bindings, server, calls, approver=lambda r: False)
        seen = _intents(agent)
        await agent.run("write")
    (request,) = _named(seen, "approval_request")
    assert (request["kind"], request["name"], request["args"]) == (
        "helper",
        "Writer",
        {"input": "a letter"},
    )
    assert len(server.requests) == 2  # the helper's model was never called
    assert "Writer was not approved" in _after_first(server)


async def test_a_gated_tool_inherited_by_a_helper_asks_too(bindings: ModuleType) -> None:
    calls = Calls()
    script = [
        text(block_text("helper_call", "Analyst", {"input": "mail Ada"})),
        text(block_text("tool_call", "send_email", EMAIL)),  # the helper's model
        text("[response_text]\nMailed.\n[/response_text]"),
        text(DONE),
    ]
    asked: list[Any] = []
    with FakeOpenAIServer(script) as server:
        agent = _agent(bindings, server, calls, approver=lambda r: asked.append(r) or False)
        await agent.run("ask the analyst")
    assert calls.ran == []
    assert [(r["name"], r["agent"]) for r in asked] == [("send_email", "Analyst")]
    helper_second = json.dumps(server.requests[2].body["messages"])
    assert "send_email was not approved" in helper_second


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_several_gated_calls_in_one_response_are_decided_one_by_one(
    bindings: ModuleType, protocol: str
) -> None:
    calls = Calls()
    asks = [("send_email", {"to": f"{who}@x.org", "body": "hi"}) for who in ("ada", "bob")]
    if protocol == "native":
        first = tool_calls([(f"tool__{n}", a) for n, a in asks])
    else:
        first = text("\n".join(block_text("tool_call", n, a) for n, a in asks))
    with FakeOpenAIServer([first, _final(protocol)]) as server:
        agent = _agent(
            bindings,
            server,
            calls,
            protocol=protocol,
            approver=lambda r: r["args"]["to"].startswith("ada"),
        )
        seen = _intents(agent)
        await agent.run("mail both")
    assert calls.ran == [asks[0]]
    requests = _named(seen, "approval_request")
    assert len({r["id"] for r in requests}) == 2
    sent = _after_first(server)
    assert "sent to ada@x.org" in sent and "send_email was not approved" in sent


# -- durable approvals ------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_defer_pauses_and_resume_runs_the_approved_call_once(
    bindings: ModuleType, protocol: str
) -> None:
    calls = Calls()
    both = [("tool__read_file", {"path": "notes"}), ("tool__send_email", EMAIL)]
    if protocol == "native":
        first = tool_calls(both)
    else:
        first = text(
            block_text("tool_call", "read_file", {"path": "notes"})
            + "\n"
            + block_text("tool_call", "send_email", EMAIL)
        )
    with FakeOpenAIServer([first, _final(protocol)]) as server:
        agent = _agent(bindings, server, calls, protocol=protocol, approver=lambda r: "defer")
        seen = _intents(agent)
        paused = await agent.run("read and mail")
        assert paused["status"] == "awaiting_approval"
        assert paused["turns"][-1]["status"] == "awaiting_approval"
        (pending,) = paused["pending_approvals"]
        assert (pending["name"], pending["args"], pending["agent"]) == ("send_email", EMAIL, "Main")
        assert calls.names() == ["read_file"]
        assert len(server.requests) == 1  # the model waits too
        assert _named(seen, "approval_result") == []
        stored = json.loads(json.dumps(paused))  # what an application would keep

        with pytest.raises(ApprovalError, match="unknown request id 'nope'"):
            await agent.resume(stored, {"nope": True})
        with pytest.raises(ApprovalError, match="no decision for pending request"):
            await agent.resume(stored, {})
        with pytest.raises(ApprovalError, match="awaiting approvals"):
            await agent.run("something else", session=stored)
        assert calls.names() == ["read_file"] and len(server.requests) == 1

        done = await agent.resume(stored, {pending["id"]: True})
    assert calls.names() == ["read_file", "send_email"]  # each exactly once
    sent = _after_first(server)
    assert "contents of notes" in sent and "sent to a@x.org" in sent
    assert done.get("status") != "awaiting_approval" and done["pending_approvals"] == []
    assert done["turns"][-1]["status"] == "complete"
    assert [a["id"] for a in done["approvals"]] == [pending["id"]]
    records = {r["name"]: r for r in done["turns"][-1]["calls"]}
    assert records["send_email"]["id"] == pending["id"]
    assert records["send_email"]["status"] == records["read_file"]["status"] == "ok"
    assert _named(seen, "approval_result")[-1] == {
        "id": pending["id"],
        "approved": True,
        "reason": None,
    }
    with pytest.raises(ApprovalError, match="no pending approvals"):
        await agent.resume(done, {pending["id"]: True})
    assert calls.names() == ["read_file", "send_email"]


async def test_resume_stream_yields_the_intents_of_the_resumed_run(bindings: ModuleType) -> None:
    calls = Calls()
    script = [text(block_text("tool_call", "send_email", EMAIL)), text(DONE)]
    with FakeOpenAIServer(script) as server:
        agent = _agent(bindings, server, calls, approvals="defer")
        paused = await agent.run("mail Ada")
        request_id = paused["pending_approvals"][0]["id"]
        names = [e.name async for e in agent.resume_stream(paused, {request_id: True})]
    assert calls.ran == [("send_email", EMAIL)]
    assert names[0] == "approval_result" and "tool_result" in names
    assert "response_text" in names
    assert agent.last_session is not None
    assert agent.last_session["turns"][-1]["status"] == "complete"


async def test_config_defer_and_a_denial_on_resume(bindings: ModuleType) -> None:
    calls = Calls()
    script = [text(block_text("tool_call", "send_email", EMAIL)), text(DONE)]
    with FakeOpenAIServer(script) as server:
        agent = _agent(bindings, server, calls, approvals="defer", approver=lambda r: True)
        paused = await agent.run("mail Ada")
        (pending,) = paused["pending_approvals"]
        done = await agent.resume(paused, {pending["id"]: {"approved": False, "reason": "no"}})
    assert calls.ran == []
    assert "send_email was not approved, so it did not run: no" in _after_first(server)
    assert done["approvals"][0]["reason"] == "no"


async def test_a_deferred_workflow_step_pauses_and_the_resume_replays_the_steps_before(
    bindings: ModuleType,
) -> None:
    calls = Calls()
    script = [text(block_text("workflow_call", "settle", {"order": "A1"})), text(DONE)]
    with FakeOpenAIServer(script) as server:
        agent = _agent(bindings, server, calls, approver=lambda r: "defer")
        seen = _intents(agent)
        paused = await agent.run("settle A1")
        (pending,) = paused["pending_approvals"]
        assert (pending["kind"], pending["name"], pending["args"]) == (
            "tool",
            "issue_refund",
            {"order": "A1"},
        )
        assert calls.ran == [("read_file", {"path": "A1"})]
        assert _named(seen, "workflow_result") == [] and len(server.requests) == 1
        stored = json.loads(json.dumps(paused))
        done = await agent.resume(stored, {pending["id"]: True})
    assert calls.ran == [
        ("read_file", {"path": "A1"}),  # once: replayed on resume, not run again
        ("issue_refund", {"order": "A1"}),
        ("read_file", {"path": "log"}),
    ]
    assert _named(seen, "workflow_result")[-1]["result"] == (
        "contents of A1 / refunded A1 / contents of log"
    )
    assert "contents of A1 / refunded A1 / contents of log" in _after_first(server)
    (record,) = done["turns"][-1]["calls"]
    assert record["name"] == "settle" and record["status"] == "ok" and "steps" not in record


async def test_a_workflow_can_pause_at_each_gated_step(bindings: ModuleType) -> None:
    calls = Calls()
    script = [text(block_text("workflow_call", "double", {"order": "A1"})), text(DONE)]
    with FakeOpenAIServer(script) as server:
        agent = _agent(bindings, server, calls, approvals="defer")
        paused = await agent.run("refund twice")
        first = paused["pending_approvals"][0]["id"]
        again = await agent.resume(paused, {first: True})
        assert again["status"] == "awaiting_approval" and len(server.requests) == 1
        (second,) = again["pending_approvals"]
        assert second["args"] == {"order": "A1b"}
        record = again["turns"][-1]["paused_round"][0]
        assert record["id"] == first and record["request_id"] == second["id"]
        seen = _intents(agent)
        done = await agent.resume(again, {second["id"]: False})
    assert calls.ran == [("issue_refund", {"order": "A1"})]
    (failed,) = _named(seen, "workflow_result")
    assert "issue_refund was not approved" in failed["result"]["error"]
    assert "failed" in _after_first(server)
    assert [a["approved"] for a in done["approvals"]] == [True, False]
    assert done["turns"][-1]["calls"][0]["id"] == first


async def test_defer_inside_a_helper_call_is_a_denial(bindings: ModuleType) -> None:
    calls = Calls()
    script = [
        text(block_text("helper_call", "Analyst", {"input": "mail Ada"})),
        text(block_text("tool_call", "send_email", EMAIL)),  # the helper's model
        text("[response_text]\nCould not.\n[/response_text]"),
        text(DONE),
    ]
    with FakeOpenAIServer(script) as server:
        agent = _agent(bindings, server, calls, approver=lambda r: "defer")
        session = await agent.run("ask the analyst")
        helper_second = json.dumps(server.requests[2].body["messages"])
    assert calls.ran == [] and "status" not in session
    assert "cannot wait for agent.resume() inside a helper call" in helper_second


async def test_a_helper_holding_the_conversation_can_pause_and_resume(
    bindings: ModuleType,
) -> None:
    calls = Calls()
    script = [
        text(block_text("helper_call", "Desk", {"input": "a customer"})),
        text("[response_text]\nHello, how can I help?\n[/response_text]"),
        text(block_text("tool_call", "send_email", EMAIL)),  # the next input, in Desk
        text("[response_text]\nSent.\n[/response_text]"),
    ]
    with FakeOpenAIServer(script) as server:
        agent = _agent(bindings, server, calls, approvals="defer")
        first = await agent.run("I need help")
        assert first["stack"][-1]["agent"] == "Desk"
        paused = await agent.run("mail Ada please", session=first)
        (pending,) = paused["pending_approvals"]
        assert pending["agent"] == "Desk" and calls.ran == []
        done = await agent.resume(paused, {pending["id"]: True})
        last = json.dumps(server.requests[3].body["messages"])
    assert calls.ran == [("send_email", EMAIL)]
    assert "sent to a@x.org" in last
    assert done["turns"][-1]["output"] == "Sent." and done["stack"][-1]["agent"] == "Desk"


async def test_a_second_pause_in_the_same_turn_keeps_the_first_records(
    bindings: ModuleType,
) -> None:
    calls = Calls()
    script = [
        text(block_text("tool_call", "send_email", EMAIL)),
        text(block_text("tool_call", "send_email", {"to": "b@x.org", "body": "2"})),
        text(DONE),
    ]
    with FakeOpenAIServer(script) as server:
        agent = _agent(bindings, server, calls, approvals="defer")
        paused = await agent.run("mail twice")
        again = await agent.resume(paused, {paused["pending_approvals"][0]["id"]: True})
        assert again["status"] == "awaiting_approval"
        (second,) = again["pending_approvals"]
        done = await agent.resume(again, {second["id"]: False})
    assert calls.ran == [("send_email", EMAIL)]
    assert [r["status"] for r in done["turns"][-1]["calls"]] == ["ok", "error"]
    assert [a["approved"] for a in done["approvals"]] == [True, False]


async def test_a_stored_conversation_awaiting_approvals_is_not_run_over(
    bindings: ModuleType, tmp_path: Path
) -> None:
    calls = Calls()
    store = SQLiteSessionStore(tmp_path / "s.db")
    script = [text(block_text("tool_call", "send_email", EMAIL))]
    with FakeOpenAIServer(script) as server:
        agent = _agent(
            bindings,
            server,
            calls,
            approvals="defer",
            middleware=[SessionStoreMiddleware(store)],
        )
        await agent.run("mail Ada", conversation_id="c1")
        before = await store.load("c1")
        seen = _intents(agent)
        await agent.run("something else", conversation_id="c1")
    errors = _named(seen, "error")
    assert len(errors) == 1 and "awaiting approvals" in errors[0]["message"]
    after = await store.load("c1")
    assert before is not None and after is not None
    assert after["turns"] == before["turns"] and after["status"] == "awaiting_approval"
    assert calls.ran == [] and len(server.requests) == 1


async def test_a_tampered_pause_is_refused_and_nothing_runs(bindings: ModuleType) -> None:
    calls = Calls()
    script = [text(block_text("tool_call", "send_email", EMAIL))]
    with FakeOpenAIServer(script) as server:
        agent = _agent(bindings, server, calls, approvals="defer")
        paused = json.loads(json.dumps(await agent.run("mail Ada")))
        request_id = paused["pending_approvals"][0]["id"]
        for tamper, message in [
            (lambda s: s.update(pending_approvals=5), "session.pending_approvals: expected"),
            (lambda s: s["turns"][-1].update(paused_round="x"), "paused_round: expected"),
            (
                lambda s: s["turns"][-1]["paused_round"][0].update(request_id="other"),
                "does not match session.pending_approvals",
            ),
        ]:
            copy_ = json.loads(json.dumps(paused))
            tamper(copy_)
            with pytest.raises(ApprovalError, match=message):
                await agent.resume(copy_, {request_id: True})
        with pytest.raises(ApprovalError, match="expected True, False or"):
            await agent.resume(paused, {request_id: "yes"})
    assert calls.ran == [] and len(server.requests) == 1


def test_approval_config_is_checked(bindings: ModuleType) -> None:
    with pytest.raises(ConfigError, match="approver: expected a function"):
        bindings.auwgent({"apiKeys": {"openaiApiKey": "sk"}, "approver": "yes"})
    with pytest.raises(ConfigError, match="approvals: expected 'ask' or 'defer'"):
        bindings.auwgent({"apiKeys": {"openaiApiKey": "sk"}, "approvals": "later"})
    agent = bindings.auwgent({"apiKeys": {"openaiApiKey": "sk"}})
    with pytest.raises(ConfigError, match="on_approval: expected a function"):
        agent.on_approval(True)


# -- across processes, through the SQLite store ---------------------------------------------

_WORKER = textwrap.dedent(
    """
    import asyncio, json, sys
    sys.path.insert(0, sys.argv[1])
    import approvals_main_types as m
    from auwgent.runtime.stores import SessionStoreMiddleware, SQLiteSessionStore

    folder, db, base_url, step = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]

    def count(name):
        with open(f"{folder}/ran.txt", "a") as log:
            log.write(name + "\\n")

    class Tools(m.AuwgentTools):
        def send_email(self, to, body):
            count("send_email")
            return f"sent to {to}"

        def read_file(self, path):
            count("read_file")
            return f"contents of {path}"

    agent = m.auwgent({
        "apiKeys": {"openaiApiKey": "sk"},
        "baseUrls": {"openai": base_url},
        "tools": Tools,
        "middleware": [SessionStoreMiddleware(SQLiteSessionStore(db))],
        "approver": lambda request: "defer",
    })

    async def main():
        if step == "run":
            session = await agent.run("read and mail", conversation_id="c1")
        else:
            decisions = json.loads(sys.argv[5])
            session = await agent.resume(None, decisions, conversation_id="c1")
        print(json.dumps(session))

    asyncio.run(main())
    """
)


def _worker(folder: Path, server: FakeOpenAIServer, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", _WORKER, str(folder), str(folder / "s.db"), server.base_url, *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def _ran(folder: Path) -> list[str]:
    path = folder / "ran.txt"
    return path.read_text().split() if path.exists() else []


async def test_defer_then_resume_in_a_new_process_from_sqlite(tmp_path: Path) -> None:
    _generate(tmp_path)
    first = text(
        block_text("tool_call", "read_file", {"path": "notes"})
        + "\n"
        + block_text("tool_call", "send_email", EMAIL)
    )
    with FakeOpenAIServer([first, text(DONE)]) as server:
        paused = await asyncio.to_thread(_worker, tmp_path, server, "run")
        assert paused["status"] == "awaiting_approval" and _ran(tmp_path) == ["read_file"]
        (pending,) = paused["pending_approvals"]
        decisions = json.dumps({pending["id"]: True})
        done = await asyncio.to_thread(_worker, tmp_path, server, "resume", decisions)
    assert _ran(tmp_path) == ["read_file", "send_email"]  # each once, across two processes
    assert len(server.requests) == 2
    sent = _after_first(server)
    assert "contents of notes" in sent and "sent to a@x.org" in sent
    assert done["turns"][-1]["status"] == "complete"
    stored = await SQLiteSessionStore(tmp_path / "s.db").load("c1")
    assert stored is not None and stored["pending_approvals"] == []
    assert stored["approvals"][0]["id"] == pending["id"]
    assert stored["turns"][-1]["output"] == "Done."


async def test_two_concurrent_resumes_one_executes_the_other_conflicts(
    bindings: ModuleType, tmp_path: Path
) -> None:
    calls = Calls()
    script = [text(block_text("tool_call", "send_email", EMAIL)), text(DONE)]
    with FakeOpenAIServer(script) as server:

        def worker() -> Any:
            # Each worker has its own middleware on the same database, as two processes would.
            store = SessionStoreMiddleware(SQLiteSessionStore(tmp_path / "s.db"))
            return _agent(bindings, server, calls, approvals="defer", middleware=[store])

        paused = await worker().run("mail Ada", conversation_id="c1")
        decisions = {paused["pending_approvals"][0]["id"]: True}
        results = await asyncio.gather(
            worker().resume(None, decisions, conversation_id="c1"),
            worker().resume(None, decisions, conversation_id="c1"),
            return_exceptions=True,
        )
        assert len(server.requests) == 2
        with pytest.raises(ApprovalError, match="no pending approvals"):
            await worker().resume(None, decisions, conversation_id="c1")
    conflicts = [r for r in results if isinstance(r, ConflictError)]
    sessions = [r for r in results if isinstance(r, dict)]
    assert len(conflicts) == 1 and len(sessions) == 1, results
    assert "changed by another run" in str(conflicts[0]) or "being resumed" in str(conflicts[0])
    assert calls.names() == ["send_email"]
    stored = await SQLiteSessionStore(tmp_path / "s.db").load("c1")
    assert stored is not None and stored["turns"][-1]["status"] == "complete"
