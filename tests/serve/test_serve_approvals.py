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
        assert done["turns"][-1]["output"] == "Sent." and done["pending_approvals"] == []
        stored = httpx.get(f"{url}/v1/conversations/c1", headers=headers()).json()
        assert stored["approvals"][0]["id"] == pending["id"]
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
        assert events[-1][1]["turns"][-1]["output"] == "Sent."
        again = httpx.post(f"{one}/v1/conversations/{conversation}/approvals", json=body,
                           headers=headers())  # fmt: skip
        assert again.status_code != 200 or "no pending approvals" in again.text
    assert sent.read_text().split() == ["grace@example.com"]
