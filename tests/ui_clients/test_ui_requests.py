"""What ``auwgent serve`` accepts from a UI client, over real HTTP: the request bodies of the
AI SDK and AG-UI mapped onto a run (input parts, conversation, context), and the ones it
refuses, with a JSON error naming the field, before anything runs."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from auwgent.testing import FakeOpenAIServer, text
from serve.test_serve import headers, serving

pytestmark = pytest.mark.servers

AGENT = """
agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "You are a helpful assistant. The user is {{ctx.user}}."
    }
    context { user?: string }
}
"""

APP = """
import os

def config(agent_name):
    return {"apiKeys": {"openaiApiKey": "sk-test"},
            "baseUrls": {"openai": os.environ["FAKE_OPENAI_URL"]}, "retry": {"attempts": 1}}
"""

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, FakeOpenAIServer]]:
    project = tmp_path_factory.mktemp("uireq")
    (project / "agents").mkdir()
    (project / "agents" / "main.agent").write_text(AGENT, encoding="utf-8")
    (project / "app.py").write_text(textwrap.dedent(APP), encoding="utf-8")
    reply = text("[response_text]\nHi.\n[/response_text]")
    with (
        FakeOpenAIServer(lambda request: reply) as fake,
        serving(project, fake.base_url, f"sqlite:///{project / 's.db'}") as url,
    ):
        yield url, fake


def post(url: str, ui: str, body: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{url}/v1/agents/Main/runs?ui={ui}", json=body, headers=headers(),
                      timeout=60)  # fmt: skip


def user(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"id": "m1", "role": "user", "parts": list(parts)}


def test_ai_sdk_parts_and_context_reach_the_model(server: tuple[str, FakeOpenAIServer]) -> None:
    url, fake = server
    body = {"id": "chat-parts", "trigger": "submit-message", "messageId": None,
            "context": {"user": "Ada"}, "messages": [user(
                {"type": "text", "text": "What is this?"},
                {"type": "file", "mediaType": "image/png", "url": f"data:image/png;base64,{PNG}"},
            )]}  # fmt: skip
    answer = post(url, "ai-sdk", body)
    assert answer.status_code == 200, answer.text
    sent = fake.requests[-1].body["messages"]
    assert "The user is Ada." in json.dumps(sent[0])
    content = sent[-1]["content"]
    assert content[0] == {"type": "text", "text": "What is this?"}
    assert content[1]["image_url"]["url"] == f"data:image/png;base64,{PNG}"
    stored = httpx.get(f"{url}/v1/conversations/chat-parts", headers=headers()).json()
    assert stored["turns"][-1]["output"] == "Hi."  # the chat's id is the conversation


def test_ag_ui_context_entries_and_forwarded_props(server: tuple[str, FakeOpenAIServer]) -> None:
    url, fake = server
    body = {"threadId": "thread-ctx", "runId": "run-1", "state": {}, "tools": [],
            "context": [{"description": "user", "value": "Grace"}],
            "forwardedProps": {"config": None},
            "messages": [{"id": "u1", "role": "user", "content": "Hello"}]}  # fmt: skip
    answer = post(url, "ag-ui", body)
    assert answer.status_code == 200, answer.text
    assert "The user is Grace." in json.dumps(fake.requests[-1].body["messages"][0])
    events = [json.loads(line[6:]) for line in answer.text.splitlines() if line.startswith("data")]
    assert events[0] == {"type": "RUN_STARTED", "threadId": "thread-ctx", "runId": "run-1"}
    assert events[-1]["type"] == "RUN_FINISHED" and events[-1]["runId"] == "run-1"


@pytest.mark.parametrize(
    ("ui", "body", "message"),
    [
        ("ai-sdk", {"id": "c", "messages": []}, "messages: expected a non-empty list"),
        ("ai-sdk", {"id": "c", "messages": [user({"type": "text", "text": "x"})],
                    "trigger": "regenerate-message"}, "trigger: only 'submit-message'"),
        ("ai-sdk", {"id": "c", "messages": [user({"type": "reasoning", "text": "x"})]},
         "messages[0].parts[0]: expected a text part or a file part"),
        ("ai-sdk", {"id": "c", "messages": [{"id": "a", "role": "assistant", "parts": []}]},
         "answers no approval"),
        ("ai-sdk", {"id": "c", "messages": [user({"type": "text", "text": "x"})],
                    "extra": 1}, "unknown fields: extra"),
        ("ag-ui", {"threadId": "t", "runId": "r", "messages": [],
                   "tools": [{"name": "x", "description": "y"}]}, "tools: client-side tools"),
        ("ag-ui", {"threadId": "t", "runId": "r", "messages": [],
                   "forwardedProps": {"admin": True}}, "forwardedProps: unknown keys: admin"),
        ("ag-ui", {"threadId": "t", "runId": "r", "messages": [],
                   "protocolVersion": "2.0"}, "protocolVersion"),
        ("ag-ui", {"threadId": "t", "runId": "r", "messages": [],
                   "resume": [{"interruptId": "i", "status": "later"}]}, "resume[0].status"),
        ("ag-ui", {"threadId": "t", "runId": "r", "messages": [],
                   "resume": [{"interruptId": "i", "status": "resolved"}]}, "decisions.i"),
        ("no-such", {}, "ui: expected one of ai-sdk, ag-ui"),
    ],
)  # fmt: skip
def test_bad_ui_requests_are_refused_naming_the_field(
    server: tuple[str, FakeOpenAIServer], ui: str, body: dict[str, Any], message: str
) -> None:
    url, _ = server
    answer = post(url, ui, body)
    assert answer.status_code == 400, answer.text
    assert message in answer.json()["error"]["message"]


def test_a_resume_of_no_conversation_is_refused(
    server: tuple[str, FakeOpenAIServer],
) -> None:
    url, _ = server
    resume = [{"interruptId": "i", "status": "cancelled"}]
    answer = post(
        url, "ag-ui", {"threadId": "nothing", "runId": "r", "messages": [], "resume": resume}
    )
    assert answer.status_code == 404 and "no conversation" in answer.text


def test_a_context_key_a_client_may_not_set_is_refused(
    server: tuple[str, FakeOpenAIServer],
) -> None:
    url, _ = server
    context = [{"description": "is_admin", "value": "yes"}]
    messages = [{"id": "u1", "role": "user", "content": "Hi"}]
    body = {"threadId": "t-ctx", "runId": "r", "context": context, "messages": messages}
    answer = post(url, "ag-ui", body)
    assert answer.status_code == 422 and "context.is_admin" in answer.text


def test_the_openapi_document_names_the_ui_parameter(
    server: tuple[str, FakeOpenAIServer],
) -> None:
    url, _ = server
    spec = httpx.get(f"{url}/openapi.json", headers=headers()).json()
    for path in ("/v1/agents/{agent}/runs", "/v1/conversations/{conversation}/approvals"):
        (ui,) = [p for p in spec["paths"][path]["post"]["parameters"] if p["name"] == "ui"]
        assert ui["in"] == "query" and ui["schema"]["enum"] == ["ai-sdk", "ag-ui"]
