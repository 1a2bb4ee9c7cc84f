"""``auwgent serve``'s approvals endpoint end to end: a run pauses for a deferred approval, a
POST of the decision resumes it in the server, and the gated tool runs once."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import httpx
import pytest

from auwgent.testing import FakeOpenAIServer, text

from .test_serve import headers, read_sse, run, serving

pytestmark = pytest.mark.servers

AGENT = """
agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "You are a helpful assistant."
    }
    tool send_email(to: string): string @approval
}
"""

APP = """
import os

SENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sent.txt")

def send_email(to):
    with open(SENT, "a") as log:
        log.write(to + "\\n")
    return "sent to " + to

def config(agent_name):
    return {
        "apiKeys": {"openaiApiKey": "sk-test"},
        "baseUrls": {"openai": os.environ["FAKE_OPENAI_URL"]},
        "tools": {"send_email": send_email},
        "retry": {"attempts": 1},
        "approvals": "defer",
    }
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "main.agent").write_text(AGENT, encoding="utf-8")
    (tmp_path / "app.py").write_text(textwrap.dedent(APP), encoding="utf-8")
    return tmp_path


def test_a_deferred_approval_is_resumed_through_the_endpoint(project: Path, tmp_path: Path) -> None:
    script = [
        text("[tool_call: send_email]\nto: ada@example.com\n[/tool_call]"),
        text("[response_text]\nSent.\n[/response_text]"),
    ]
    sent = project / "sent.txt"
    with (
        FakeOpenAIServer(script) as fake,
        serving(project, fake.base_url, f"sqlite:///{tmp_path / 's.db'}") as url,
    ):
        paused = run(url, {"input": "Mail Ada", "conversation_id": "c1"})[-1][1]
        assert paused["status"] == "awaiting_approval" and not sent.exists()
        (pending,) = paused["pending_approvals"]
        endpoint = f"{url}/v1/conversations/c1/approvals"
        body: dict[str, Any] = {"decisions": {pending["id"]: True}}
        with httpx.stream("POST", endpoint, json=body, headers=headers(), timeout=60) as answer:
            assert answer.status_code == 200, answer.read()
            events = read_sse(answer)
        names = [name for name, _ in events if name != "partial"]
        assert names[0] == "approval_result" and "tool_result" in names
        done = events[-1][1]
        assert ("response_text", {"text": "Sent."}) in events
        assert done["turns"][-1]["status"] == "complete" and done["pending_approvals"] == []
        stored = httpx.get(f"{url}/v1/conversations/c1", headers=headers()).json()
        assert stored["approvals"][0]["id"] == pending["id"]
        assert not stored["pending_approvals"] and stored["turns"][-1]["output"] == "Sent."
        again = httpx.post(endpoint, json=body, headers=headers())
        assert again.status_code != 200 or "no pending approvals" in again.text
        assert "sent to ada@example.com" in json.dumps(fake.requests[1].body["messages"])
    assert sent.read_text().split() == ["ada@example.com"]


def test_an_approval_paused_on_one_worker_is_resumed_on_the_other(
    project: Path, postgres_url: str
) -> None:
    """Two workers share one PostgreSQL: the run pauses on the first, the decision goes to the
    second, and the gated tool runs exactly once."""
    script = [
        text("[tool_call: send_email]\nto: grace@example.com\n[/tool_call]"),
        text("[response_text]\nSent.\n[/response_text]"),
    ]
    sent = project / "sent.txt"
    conversation = f"cross-{id(project)}"
    with (
        FakeOpenAIServer(script) as fake,
        serving(project, fake.base_url, postgres_url) as one,
        serving(project, fake.base_url, postgres_url) as two,
    ):
        paused = run(one, {"input": "Mail Grace", "conversation_id": conversation})[-1][1]
        assert paused["status"] == "awaiting_approval" and not sent.exists()
        (pending,) = paused["pending_approvals"]
        body: dict[str, Any] = {"decisions": {pending["id"]: True}}
        endpoint = f"{two}/v1/conversations/{conversation}/approvals"
        with httpx.stream("POST", endpoint, json=body, headers=headers(), timeout=60) as answer:
            assert answer.status_code == 200, answer.read()
            events = read_sse(answer)
        assert ("response_text", {"text": "Sent."}) in events
        assert events[-1][1]["turns"][-1]["status"] == "complete"
        again = httpx.post(f"{one}/v1/conversations/{conversation}/approvals", json=body,
                           headers=headers())  # fmt: skip
        assert again.status_code != 200 or "no pending approvals" in again.text
    assert sent.read_text().split() == ["grace@example.com"]


CONTEXT_AGENT = """
agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "You help {{ctx.user}}."
    }
    context { user?: string }
    tool send_email(to: string): string @approval
}
"""


def test_the_resume_runs_with_the_context_of_the_paused_run(project: Path, tmp_path: Path) -> None:
    """The approval carries no context: the resumed run has the one the run paused with."""
    (project / "agents" / "main.agent").write_text(CONTEXT_AGENT, encoding="utf-8")
    script = [
        text("[tool_call: send_email]\nto: ada@example.com\n[/tool_call]"),
        text("[response_text]\nSent.\n[/response_text]"),
    ]
    with (
        FakeOpenAIServer(script) as fake,
        serving(project, fake.base_url, f"sqlite:///{tmp_path / 's.db'}") as url,
    ):
        body = {"input": "Mail Ada", "conversation_id": "c1", "context": {"user": "Ada L."}}
        paused = run(url, body)[-1][1]
        (pending,) = paused["pending_approvals"]
        endpoint = f"{url}/v1/conversations/c1/approvals"
        decided = {"decisions": {pending["id"]: True}}
        with httpx.stream("POST", endpoint, json=decided, headers=headers(), timeout=60) as answer:
            assert answer.status_code == 200, answer.read()
            events = read_sse(answer)
        done = events[-1][1]
        assert ("response_text", {"text": "Sent."}) in events
        assert done["turns"][-1]["status"] == "complete"
        assert "paused_context" not in done
    systems = [r.body["messages"][0]["content"] for r in fake.requests]
    assert all(s.startswith("You help Ada L.") for s in systems), systems


def test_client_mistakes_get_400_naming_the_field_like_runs(project: Path, tmp_path: Path) -> None:
    """Bad JSON, unknown fields, wrong types, unknown ids: a JSON 400 before anything runs,
    never 200 with an error event; a conversation with nothing pending is a 409."""
    script = [
        text("[tool_call: send_email]\nto: ada@example.com\n[/tool_call]"),
        text("[response_text]\nSent.\n[/response_text]"),
        text("[response_text]\nHello.\n[/response_text]"),
    ]
    with (
        FakeOpenAIServer(script) as fake,
        serving(project, fake.base_url, f"sqlite:///{tmp_path / 's.db'}") as url,
    ):
        paused = run(url, {"input": "Mail Ada", "conversation_id": "c1"})[-1][1]
        (pending,) = paused["pending_approvals"]
        rid = pending["id"]
        endpoint = f"{url}/v1/conversations/c1/approvals"
        hdrs = {**headers(), "content-type": "application/json"}
        cases: dict[str, tuple[int, str]] = {
            "{not json": (400, "not valid JSON"),
            "[]": (400, "JSON object"),
            json.dumps({"decisions": {rid: True}, "note": "x"}): (400, "unknown fields: note"),
            json.dumps({}): (400, "decisions"),
            json.dumps({"decisions": [rid]}): (400, "decisions"),
            json.dumps({"decisions": {rid: "yes"}}): (400, f"decisions.{rid}"),
            json.dumps({"decisions": {rid: {"approved": 1}}}): (400, f"decisions.{rid}.approved"),
            json.dumps({"decisions": {rid: {"approved": True, "why": 1}}}): (400, "why"),
            json.dumps({"decisions": {rid: {"approved": True, "args": []}}}): (400, "args"),
            json.dumps({"decisions": {"nope": True}}): (400, "unknown request id 'nope'"),
        }
        for raw, (status, named) in cases.items():
            answered = httpx.post(endpoint, content=raw.encode(), headers=hdrs)
            assert answered.status_code == status, (raw, answered.text)
            assert answered.headers["content-type"] == "application/json"
            assert named in answered.json()["error"]["message"], (raw, answered.text)
        plain = httpx.post(endpoint, content=json.dumps({"decisions": {rid: True}}).encode(),
                           headers={**headers(), "content-type": "text/plain"})  # fmt: skip
        assert plain.status_code == 415
        assert not (project / "sent.txt").exists()
        # still pending after every refusal: the right decision goes through
        body: dict[str, Any] = {"decisions": {rid: True}}
        with httpx.stream("POST", endpoint, json=body, headers=headers(), timeout=60) as answer:
            assert answer.status_code == 200
            read_sse(answer)
        again = httpx.post(endpoint, json=body, headers=headers())
        assert (
            again.status_code == 409 and "no pending approvals" in again.json()["error"]["message"]
        )
        fresh = run(url, {"input": "Hi", "conversation_id": "c2"})[-1][1]
        assert fresh["turns"][-1]["status"] == "complete"
        idle = httpx.post(f"{url}/v1/conversations/c2/approvals", json=body, headers=headers())
        assert idle.status_code == 409
    assert (project / "sent.txt").read_text().split() == ["ada@example.com"]
