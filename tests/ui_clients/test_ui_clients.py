"""``auwgent serve``'s UI streams read by the real clients, in Node: the Vercel AI SDK's ``ai``
package (a Chat over its ``DefaultChatTransport``, the chunks read again by
``readUIMessageStream``) and AG-UI's ``@ag-ui/client`` (``HttpAgent``). One real server process
on 127.0.0.1 with the fake OpenAI server as the model; each client runs four conversations: a
tool loop, a structured output streamed as partials, an approval that waits and is granted,
and an error (tests/ui_clients/node/client.mjs)."""

from __future__ import annotations

import json
import shutil
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from auwgent.testing import FakeAnthropicServer, FakeOpenAIServer, status, text
from serve.test_serve import TOKEN, headers, serving

pytestmark = pytest.mark.servers

NODE = Path(__file__).with_name("node")
THOUGHT = "Clouds are coming from the west."
CLIENT = NODE / "client.mjs"

MAIN = """
agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "You are a helpful assistant."
    }
    tool get_weather(location: string): string @desc "Gets the current weather"
    tool send_email(to: string): string @approval
}
"""

REPORTER = """
type Report { city: string, summary: string }

agent Reporter {
    default config {
        model: openai("gpt-4o")
        prompt: "Report on the weather."
    }
    output: Report
}
"""

THINKER = """
agent Thinker {
    default config {
        model: anthropic("claude-sonnet-4-5", {
            thinking: { type: "enabled", budget_tokens: 2048 }
        })
        prompt: "Think, then answer."
    }
}
"""

APP = """
import os

HERE = os.path.dirname(os.path.abspath(__file__))

def get_weather(location):
    if location == "Atlantis":
        raise ValueError("no weather station in Atlantis")
    return "28C and sunny in " + location

def send_email(to):
    with open(os.path.join(HERE, "sent.txt"), "a") as f:
        f.write(to + "\\n")
    return "sent to " + to

def config(agent_name):
    if agent_name == "Thinker":
        with open(os.path.join(HERE, "anthropic.url")) as f:
            url = f.read()
        return {"apiKeys": {"anthropicApiKey": "sk-ant-test"}, "baseUrls": {"anthropic": url},
                "retry": {"attempts": 1}}
    config = {
        "apiKeys": {"openaiApiKey": "sk-test"},
        "baseUrls": {"openai": os.environ["FAKE_OPENAI_URL"]},
        "retry": {"attempts": 1},
    }
    if agent_name == "Main":
        config["tools"] = {"get_weather": get_weather, "send_email": send_email}
        config["approvals"] = "defer"
    return config
"""


def model(request: Any) -> Any:
    """The model's answers, by what the user asked last (tool results and errors come back
    as user messages that start with ``[tool_result`` or ``[tool_error``)."""
    said = [json.dumps(m["content"]) for m in request.body["messages"] if m["role"] == "user"]
    asked = [m for m in said if not m.startswith(('"[tool_result', '"[tool_error'))][-1]
    answered = said[-1].startswith(('"[tool_result', '"[tool_error'))
    if "[tool_error" in said[-1]:
        return text("[response_text]\nThat did not work.\n[/response_text]")
    if "fail" in asked:
        return status(400, message="the model refused the request")
    if "report" in asked:
        body = '{"city": "Accra", "summary": "sunny and warm"}'
        return text(f"[schema: Report]\n{body}\n[/schema]", chunk_size=7)
    if "mail" in asked:
        if answered:
            return text("[response_text]\nSent it.\n[/response_text]", chunk_size=4)
        return text("[tool_call: send_email]\nto: ada@example.com\n[/tool_call]", chunk_size=8)
    if answered:
        return text("[response_text]\nIt is 28C and sunny.\n[/response_text]", chunk_size=5)
    place = "Atlantis" if "Atlantis" in asked else "Accra"
    return text(f'[tool_call: get_weather]\n{{"location": "{place}"}}\n[/tool_call]', chunk_size=6)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    if shutil.which("node") is None or not (NODE / "node_modules" / "ai").exists():
        pytest.skip("the UI clients are not installed: cd tests/ui_clients/node && npm ci")
    project = tmp_path_factory.mktemp("ui")
    (project / "agents").mkdir()
    (project / "agents" / "main.agent").write_text(MAIN, encoding="utf-8")
    (project / "agents" / "reporter.agent").write_text(REPORTER, encoding="utf-8")
    (project / "agents" / "thinker.agent").write_text(THINKER, encoding="utf-8")
    (project / "app.py").write_text(textwrap.dedent(APP), encoding="utf-8")
    answer = text("[response_text]\nIt will rain.\n[/response_text]", thinking=THOUGHT)
    with (
        FakeAnthropicServer(lambda request: answer) as anthropic,
        FakeOpenAIServer(model) as fake,
        serving(project, fake.base_url, f"sqlite:///{project / 's.db'}") as url,
    ):
        (project / "anthropic.url").write_text(anthropic.base_url, encoding="utf-8")
        yield url, project


def client(mode: str, url: str, agent: str, conversation: str, said: str, *extra: str) -> Any:
    """What the real client read and built (client.mjs prints it as JSON)."""
    args = ["node", str(CLIENT), mode, f"{url}/v1/agents/{agent}/runs", TOKEN, conversation, said]
    done = subprocess.run([*args, *extra], capture_output=True, text=True, timeout=120, cwd=NODE)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def kinds(chunks: list[dict[str, Any]]) -> list[str]:
    """The chunk types in order, a run of deltas of one part counted once (how many deltas
    arrive depends on how fast the client reads: the server merges those it has not sent)."""
    out: list[str] = []
    for chunk in chunks:
        if chunk["type"].endswith(("-delta", "_CONTENT", "_ARGS")) and out[-1:] == [chunk["type"]]:
            continue
        out.append(chunk["type"])
    return out


def first(chunks: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    return next(c for c in chunks if c["type"] == kind)


def joined(chunks: list[dict[str, Any]], kind: str, key: str) -> str:
    return "".join(c[key] for c in chunks if c["type"] == kind)


# -- the AI SDK --------------------------------------------------------------------------------


def test_ai_sdk_tool_loop(server: tuple[str, Path]) -> None:
    url, _ = server
    read = client("ai-sdk", url, "Main", "ai-tools", "Weather in Accra?")
    assert read["errors"] == [] and read["status"] == "ready"
    (chunks,) = read["responses"]
    assert kinds(chunks) == [
        "start", "tool-input-start", "tool-input-delta", "tool-input-available",
        "tool-output-available", "text-start", "text-delta", "text-end", "finish",
    ]  # fmt: skip
    call = chunks[1]["toolCallId"]
    assert {c.get("toolCallId") for c in chunks if c["type"].startswith("tool-")} == {call}
    assert json.loads(joined(chunks, "tool-input-delta", "inputTextDelta")) == {"location": "Accra"}
    assert joined(chunks, "text-delta", "delta") == "It is 28C and sunny."
    finish = chunks[-1]
    assert finish["finishReason"] == "stop"
    usage = finish["messageMetadata"]["usage"]
    assert usage["inputTokens"] > 0 and usage["totalTokens"] == (
        usage["inputTokens"] + usage["outputTokens"]
    )
    assert finish["messageMetadata"]["modelCalls"] == 2
    # What the Chat built, and what readUIMessageStream builds from the same chunks.
    for message in (read["messages"][-1], read["reread"][0]):
        assert message["role"] == "assistant"
        assert [(p["type"], p.get("state")) for p in message["parts"]] == [
            ("tool-get_weather", "output-available"), ("text", "done"),
        ]  # fmt: skip
        assert message["parts"][0]["input"] == {"location": "Accra"}
        assert message["parts"][0]["output"] == "28C and sunny in Accra"
        assert message["parts"][1]["text"] == "It is 28C and sunny."
        assert message["metadata"]["usage"] == usage


def test_ai_sdk_structured_output_streams_as_a_data_part(server: tuple[str, Path]) -> None:
    url, _ = server
    read = client("ai-sdk", url, "Reporter", "ai-report", "Write the report")
    (chunks,) = read["responses"]
    # One partial or more (how many depends on how fast the client reads), then the final.
    data = chunks[1:-1]
    assert [chunks[0]["type"], chunks[-1]["type"]] == ["start", "finish"] and len(data) >= 2
    assert {c["type"] for c in data} == {"data-response_schema"}
    assert len({c["id"] for c in data}) == 1  # one part, filled in
    assert [c["data"]["complete"] for c in data] == [False] * (len(data) - 1) + [True]
    report = {"city": "Accra", "summary": "sunny and warm"}
    assert data[-1]["data"]["value"] == {"type": "Report", "response": report}
    for message in (read["messages"][-1], read["reread"][0]):
        (part,) = message["parts"]
        assert (
            part["type"] == "data-response_schema" and part["data"]["value"]["response"] == report
        )


def test_ai_sdk_approval_waits_and_is_granted(server: tuple[str, Path]) -> None:
    url, project = server
    read = client("ai-sdk", url, "Main", "ai-mail", "Send the mail to Ada", "approve")
    assert read["errors"] == [] and read["status"] == "ready"
    paused, resumed = read["responses"]
    assert kinds(paused) == [
        "start", "tool-input-start", "tool-input-delta", "tool-input-available",
        "tool-approval-request", "finish",
    ]  # fmt: skip
    request = first(paused, "tool-approval-request")
    assert request["approvalId"] == read["approvals"][0]
    assert paused[-1]["finishReason"] == "tool-calls"
    assert paused[-1]["messageMetadata"]["status"] == "awaiting_approval"
    # The Chat answered the approval (addToolApprovalResponse) and sent it on its own.
    assert kinds(resumed) == [
        "start", "tool-approval-response", "tool-output-available", "text-start", "text-delta",
        "text-end", "finish",
    ]  # fmt: skip
    assert resumed[1] == {"type": "tool-approval-response", "approvalId": request["approvalId"],
                          "approved": True}  # fmt: skip
    assert resumed[2]["toolCallId"] == request["toolCallId"]  # the paused run's call
    assert resumed[-1]["finishReason"] == "stop"
    for message in (read["messages"][-1], read["reread"][-1]):
        assert [(p["type"], p.get("state")) for p in message["parts"]] == [
            ("tool-send_email", "output-available"), ("text", "done"),
        ]  # fmt: skip
        assert message["parts"][0]["approval"]["approved"] is True
        assert message["parts"][0]["output"] == "sent to ada@example.com"
    assert (project / "sent.txt").read_text().split().count("ada@example.com") >= 1
    stored = httpx.get(f"{url}/v1/conversations/ai-mail", headers=headers()).json()
    assert stored["turns"][-1]["status"] == "complete" and stored["approvals"][0]["approved"]


def test_ai_sdk_error(server: tuple[str, Path]) -> None:
    url, _ = server
    read = client("ai-sdk", url, "Main", "ai-fail", "This will fail")
    (chunks,) = read["responses"]
    assert kinds(chunks) == ["start", "error"]  # the Chat stops reading at the error
    assert "the model refused the request" in chunks[1]["errorText"]
    assert read["status"] == "error" and "the model refused the request" in read["errors"][0]
    # On the wire the stream still ends as the protocol says: finish, then [DONE].
    body = {"id": "ai-fail-raw", "messages": [
        {"id": "m1", "role": "user", "parts": [{"type": "text", "text": "This will fail"}]}
    ]}  # fmt: skip
    with httpx.stream("POST", f"{url}/v1/agents/Main/runs?ui=ai-sdk", json=body,
                      headers=headers(), timeout=60) as answer:  # fmt: skip
        assert answer.headers["x-vercel-ai-ui-message-stream"] == "v1"
        lines = [line[6:] for line in answer.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    sent = [json.loads(line) for line in lines[:-1]]
    assert kinds(sent) == ["start", "error", "finish"]
    assert sent[-1]["finishReason"] == "error"
    assert sent[-1]["messageMetadata"]["status"] == "error"


# -- AG-UI -------------------------------------------------------------------------------------


def test_ag_ui_tool_loop(server: tuple[str, Path]) -> None:
    url, _ = server
    read = client("ag-ui", url, "Main", "ag-tools", "Weather in Accra?")
    assert read["errors"] == []
    (events,) = read["runs"]
    assert kinds(events) == [
        "RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "TOOL_CALL_RESULT",
        "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED",
    ]  # fmt: skip
    assert events[0]["threadId"] == "ag-tools"
    call = events[1]["toolCallId"]
    assert events[1]["toolCallName"] == "get_weather"
    assert json.loads(joined(events, "TOOL_CALL_ARGS", "delta")) == {"location": "Accra"}
    result = first(events, "TOOL_CALL_RESULT")
    assert result["toolCallId"] == call and result["content"] == "28C and sunny in Accra"
    finished = events[-1]
    assert finished["outcome"] == {"type": "success"} and finished["result"] == (
        "It is 28C and sunny."
    )
    assert [u["model"] for u in finished["usage"]] == ["gpt-4o", "gpt-4o"]
    assert all(u["inputTokens"] > 0 for u in finished["usage"])
    # The messages HttpAgent built from the events.
    roles = [(m["role"], m.get("content")) for m in read["messages"]]
    assert roles == [
        ("user", "Weather in Accra?"), ("assistant", None),
        ("tool", "28C and sunny in Accra"), ("assistant", "It is 28C and sunny."),
    ]  # fmt: skip
    (tool_call,) = read["messages"][1]["toolCalls"]
    assert tool_call["id"] == call and json.loads(tool_call["function"]["arguments"]) == {
        "location": "Accra"
    }


def test_ag_ui_structured_output_streams_as_state(server: tuple[str, Path]) -> None:
    url, _ = server
    read = client("ag-ui", url, "Reporter", "ag-report", "Write the report")
    assert read["errors"] == []
    (events,) = read["runs"]
    states = events[1:-1]  # one partial or more, then the final
    assert [events[0]["type"], events[-1]["type"]] == ["RUN_STARTED", "RUN_FINISHED"]
    assert {e["type"] for e in states} == {"STATE_SNAPSHOT"} and len(states) >= 2
    assert [e["snapshot"]["complete"] for e in states] == [False] * (len(states) - 1) + [True]
    report = {"city": "Accra", "summary": "sunny and warm"}
    assert states[-1]["snapshot"] == {"output": report, "outputType": "Report", "complete": True}
    assert events[-1]["result"] == report
    assert read["state"] == states[-1]["snapshot"]  # HttpAgent's state


def test_ag_ui_approval_waits_and_is_granted(server: tuple[str, Path]) -> None:
    url, _ = server
    read = client("ag-ui", url, "Main", "ag-mail", "Send the mail to Ada", "approve")
    assert read["errors"] == []
    paused, resumed = read["runs"]
    assert kinds(paused) == [
        "RUN_STARTED", "TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END", "CUSTOM",
        "RUN_FINISHED",
    ]  # fmt: skip
    call = paused[1]["toolCallId"]
    request = first(paused, "CUSTOM")
    assert request["name"] == "auwgent.approval_request"
    assert request["value"]["name"] == "send_email"
    (interrupt,) = paused[-1]["outcome"]["interrupts"]
    assert paused[-1]["outcome"]["type"] == "interrupt"
    assert interrupt["id"] == request["value"]["id"] and interrupt["toolCallId"] == call
    assert interrupt["metadata"]["args"] == {"to": "ada@example.com"}
    # The second run answered the interrupt in `resume`.
    assert kinds(resumed) == [
        "RUN_STARTED", "CUSTOM", "TOOL_CALL_RESULT", "TEXT_MESSAGE_START", "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END", "RUN_FINISHED",
    ]  # fmt: skip
    assert resumed[1]["name"] == "auwgent.approval_result" and resumed[1]["value"]["approved"]
    assert resumed[2]["toolCallId"] == call and resumed[2]["content"] == "sent to ada@example.com"
    assert resumed[-1]["outcome"] == {"type": "success"} and resumed[-1]["result"] == "Sent it."
    assert [m["role"] for m in read["messages"]] == ["user", "assistant", "tool", "assistant"]


def test_ag_ui_error(server: tuple[str, Path]) -> None:
    url, _ = server
    read = client("ag-ui", url, "Main", "ag-fail", "This will fail")
    (events,) = read["runs"]
    assert kinds(events) == ["RUN_STARTED", "CUSTOM", "RUN_ERROR"]
    assert events[1]["name"] == "auwgent.error"
    assert "the model refused the request" in events[-1]["message"]
    assert events[-1]["code"] == "error"


# -- the model's thinking ----------------------------------------------------------------------


def test_thinking_comes_as_reasoning_before_the_end(server: tuple[str, Path]) -> None:
    url, _ = server
    read = client("ai-sdk", url, "Thinker", "ai-think", "Will it rain?")
    (chunks,) = read["responses"]
    assert kinds(chunks) == [
        "start", "text-start", "text-delta", "text-end", "reasoning-start", "reasoning-delta",
        "reasoning-end", "finish",
    ]  # fmt: skip
    assert joined(chunks, "reasoning-delta", "delta") == THOUGHT
    parts = read["messages"][-1]["parts"]
    assert [(p["type"], p["text"]) for p in parts] == [
        ("text", "It will rain."), ("reasoning", THOUGHT),
    ]  # fmt: skip
    events = client("ag-ui", url, "Thinker", "ag-think", "Will it rain?")["runs"][0]
    assert kinds(events)[-6:] == [
        "REASONING_START", "REASONING_MESSAGE_START", "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_END", "REASONING_END", "RUN_FINISHED",
    ]  # fmt: skip
    assert joined(events, "REASONING_MESSAGE_CONTENT", "delta") == THOUGHT


def test_a_resume_on_another_agents_path_is_refused(server: tuple[str, Path]) -> None:
    url, _ = server
    paused = client("ag-ui", url, "Main", "ag-wrong", "Send the mail to Ada")["runs"][0]
    (interrupt,) = paused[-1]["outcome"]["interrupts"]
    resume = [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]
    body = {"threadId": "ag-wrong", "runId": "r2", "messages": [], "resume": resume}
    answer = httpx.post(f"{url}/v1/agents/Reporter/runs?ui=ag-ui", json=body, headers=headers())
    assert answer.status_code == 409 and "not 'Reporter'" in answer.json()["error"]["message"]
    stored = httpx.get(f"{url}/v1/conversations/ag-wrong", headers=headers()).json()
    assert stored["status"] == "awaiting_approval"  # nothing ran


def test_a_denial_from_either_client_never_runs_the_call(server: tuple[str, Path]) -> None:
    url, project = server
    before = (project / "sent.txt").read_text() if (project / "sent.txt").exists() else ""
    read = client("ai-sdk", url, "Main", "ai-deny", "Send the mail to Ada", "deny")
    resumed = read["responses"][1]
    assert kinds(resumed)[:3] == ["start", "tool-approval-response", "tool-output-denied"]
    assert resumed[1]["approved"] is False
    parts = read["messages"][-1]["parts"]
    assert [(p["type"], p.get("state")) for p in parts] == [
        ("tool-send_email", "output-denied"), ("text", "done"),
    ]  # fmt: skip
    assert parts[1]["text"] == "That did not work."
    events = client("ag-ui", url, "Main", "ag-deny", "Send the mail to Ada", "deny")["runs"][1]
    assert kinds(events) == [
        "RUN_STARTED", "CUSTOM", "TOOL_CALL_RESULT", "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END", "RUN_FINISHED",
    ]  # fmt: skip
    assert events[1]["value"] == {"id": events[1]["value"]["id"], "approved": False,
                                  "reason": "cancelled"}  # fmt: skip
    assert events[2]["content"] == "send_email was not approved: cancelled"
    assert events[2]["metadata"] == {"auwgent": {"denied": True}}
    after = (project / "sent.txt").read_text() if (project / "sent.txt").exists() else ""
    assert after == before  # neither denied call ran


def test_a_tool_that_fails_is_an_error_of_its_call(server: tuple[str, Path]) -> None:
    url, _ = server
    read = client("ai-sdk", url, "Main", "ai-broken", "Weather in Atlantis?")
    (chunks,) = read["responses"]
    assert kinds(chunks) == [
        "start", "tool-input-start", "tool-input-delta", "tool-input-available",
        "tool-output-error", "text-start", "text-delta", "text-end", "finish",
    ]  # fmt: skip
    failed = first(chunks, "tool-output-error")
    assert failed["toolCallId"] == chunks[1]["toolCallId"]
    assert "no weather station in Atlantis" in failed["errorText"]
    tool_part = read["messages"][-1]["parts"][0]
    assert tool_part["state"] == "output-error" and tool_part["errorText"] == failed["errorText"]
    events = client("ag-ui", url, "Main", "ag-broken", "Weather in Atlantis?")["runs"][0]
    result = first(events, "TOOL_CALL_RESULT")
    assert result["toolCallId"] == first(events, "TOOL_CALL_START")["toolCallId"]
    assert "no weather station in Atlantis" in result["content"]
    assert result["metadata"] == {"auwgent": {"error": True}}
    assert events[-1]["outcome"] == {"type": "success"}
