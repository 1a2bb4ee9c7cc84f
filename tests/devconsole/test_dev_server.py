"""``auwgent dev`` as a real process: the console's files, the project API, runs through serve's
endpoints, the records of a run (trace, requests as sent), the DSL tests, the watcher, and the
boundary (loopback only, the console's own origin only)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from auwgent.testing import FakeOpenAIServer, text

from .conftest import PROJECT, DevFactory, DevProcess, copy_project, stream

pytestmark = pytest.mark.servers

CONTEXT = {"customer": "Ada", "vip": False}
ASK_REFUND = "Please refund A-17"


def run(dev: DevProcess, conversation: str, words: str = "Please refund A-17") -> list[Any]:
    body = {"input": words, "conversation_id": conversation, "context": CONTEXT}
    return stream(dev.url, "/v1/agents/Desk/runs", body)


def test_serves_the_console_and_describes_the_project(dev: DevProcess) -> None:
    page = httpx.get(dev.url + "/")
    assert page.status_code == 200
    assert '<script type="module" src="/assets/console.js">' in page.text
    script = httpx.get(dev.url + "/assets/console.js")
    assert script.status_code == 200 and "javascript" in script.headers["content-type"]
    assert httpx.get(dev.url + "/assets/console.css").status_code == 200

    project = httpx.get(dev.url + "/dev/api/project").json()
    assert project["problems"] == [] and project["tracing"] is True
    (desk,) = project["agents"]
    assert desk["name"] == "Desk"
    assert desk["configs"] == ["default", "careful"]
    assert [(f["name"], f["type"]["kind"]) for f in desk["context"]] == [
        ("customer", "string"),
        ("vip", "boolean"),
    ]
    assert desk["personas"] == ["Terse"]
    assert desk["tools"] == [
        {"name": "lookup_order", "approval": False},
        {"name": "refund_order", "approval": True},
    ]
    # No key for the project's OpenAI models: the offline model, and the console says why.
    assert desk["mode"] == "offline"
    assert "OPENAI_API_KEY" in desk["mode_reason"]
    # It generated the project, as `auwgent generate` does.
    assert (dev.folder / "generated" / "main.agent.json").is_file()


def test_a_run_waits_for_approval_then_resumes_with_its_trace_and_requests(
    dev: DevProcess,
) -> None:
    events = run(dev, "c1")
    names = [name for name, _ in events if name != "partial"]
    assert names == ["tool_call", "tool_result", "tool_call", "approval_request", "session"]
    request = events[[n for n, _ in events].index("approval_request")][1]
    assert request["name"] == "refund_order" and request["args"] == {"amount": 12, "order": "A-17"}

    (listed,) = httpx.get(dev.url + "/dev/api/sessions").json()["sessions"]
    assert listed["id"] == "c1" and listed["status"] == "awaiting_approval"
    assert [r["id"] for r in listed["pending_approvals"]] == [request["id"]]

    resumed = stream(dev.url, "/v1/conversations/c1/approvals",
                     {"decisions": {request["id"]: True}})  # fmt: skip
    finals = [(n, v) for n, v in resumed if n != "partial"]
    assert [n for n, _ in finals] == ["approval_result", "tool_result", "response_text", "session"]
    assert finals[1][1]["result"] == "refunded 12 on A-17"
    session = finals[-1][1]
    (listed,) = httpx.get(dev.url + "/dev/api/sessions").json()["sessions"]
    assert listed["pending_approvals"] == [] and listed["turns"] == 1

    turn = session["turns"][-1]["id"]
    record = httpx.get(f"{dev.url}/dev/api/turns/{turn}").json()
    spans = [s["name"] for s in record["spans"]]
    # Two runs (the first, stopped for approval, and the resume), each with its trace.
    assert spans.count("invoke_agent Desk") == 2
    assert spans.count("chat gpt-4o-mini") == 2
    assert "execute_tool lookup_order" in spans and "execute_tool refund_order" in spans
    assert all(s["end"] >= s["start"] for s in record["spans"])
    # The offline model's requests: the system prompt with the context, the history.
    assert [r["kind"] for r in record["requests"]] == ["model_request", "model_request"]
    first, second = (r["body"] for r in record["requests"])
    assert first["system"].startswith("You help Ada with their orders.")
    assert first["messages"][-1] == {"role": "user", "content": "Please refund A-17"}
    assert len(second["messages"]) > len(first["messages"])


def test_the_named_config_and_the_persona_are_used(dev: DevProcess) -> None:
    body = {"input": "hi", "conversation_id": "c2", "context": CONTEXT, "config": "careful",
            "persona": "Terse"}  # fmt: skip
    session = stream(dev.url, "/v1/agents/Desk/runs", body)[-1][1]
    record = httpx.get(f"{dev.url}/dev/api/turns/{session['turns'][-1]['id']}").json()
    system = record["requests"][0]["body"]["system"]
    assert system.startswith("You help Ada with their orders, carefully.")
    assert "Answer in one short line." in system
    assert "chat gpt-4o" in [s["name"] for s in record["spans"]]


def test_runs_the_dsl_tests(dev: DevProcess) -> None:
    answer = httpx.post(dev.url + "/dev/api/tests", json={}).json()
    assert answer["ok"] is True
    results = {r["name"]: r for r in answer["results"]}
    assert results["looks an order up"]["passed"] is True
    failed = results["says the wrong thing"]
    assert failed["passed"] is False
    assert 'text contains "on its way"' in failed["report"]
    assert failed["line"] == 55
    only = httpx.post(dev.url + "/dev/api/tests", json={"pattern": "LOOKS"}).json()
    assert [r["name"] for r in only["results"]] == ["looks an order up"]
    bad = httpx.post(dev.url + "/dev/api/tests", json={"pattern": 3})
    assert bad.status_code == 400 and "pattern" in bad.json()["error"]["message"]


def wait_for_version(dev: DevProcess, after: int) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        project: dict[str, Any] = httpx.get(dev.url + "/dev/api/project").json()
        if project["version"] > after:
            return project
        time.sleep(0.1)
    raise AssertionError("the project was not recompiled:\n" + "\n".join(dev.lines))


def test_recompiles_on_change_and_keeps_the_last_good_agents(dev: DevProcess) -> None:
    source = dev.folder / "main.agent"
    original = source.read_text()
    version = httpx.get(dev.url + "/dev/api/project").json()["version"]
    source.write_text(original.replace("config careful {", "config brief {"))
    project = wait_for_version(dev, version)
    assert project["agents"][0]["configs"] == ["default", "brief"]
    assert project["problems"] == []

    source.write_text(original.replace("agent Desk {", "agent Desk {\n    nonsense here"))
    broken = wait_for_version(dev, project["version"])
    assert broken["problems"] and "main.agent:" in broken["problems"][0]
    assert broken["agents"][0]["configs"] == ["default", "brief"]  # the last good compile
    # Its agents still run.
    assert run(dev, "c3")[-1][0] == "session"


def test_the_boundary_of_the_console(dev: DevProcess) -> None:
    port = dev.url.rsplit(":", 1)[1]
    other_page = httpx.get(dev.url + "/dev/api/project", headers={"origin": "https://evil.example"})
    assert other_page.status_code == 403
    own = httpx.get(dev.url + "/dev/api/project", headers={"origin": f"http://127.0.0.1:{port}"})
    assert own.status_code == 200
    rebound = httpx.get(dev.url + "/dev/api/sessions", headers={"host": f"evil.example:{port}"})
    assert rebound.status_code == 421
    form = httpx.post(dev.url + "/dev/api/tests", content=b"{}",
                      headers={"content-type": "text/plain"})  # fmt: skip
    assert form.status_code == 415


def test_only_a_loopback_address(tmp_path: Path) -> None:
    folder = copy_project(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "auwgent", "dev", ".", "--host", "0.0.0.0", "--no-open"],
        cwd=folder, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert "loopback address only" in done.stderr
    assert not (folder / "generated").exists()


def test_live_models_and_the_http_request_as_sent(start_dev: DevFactory) -> None:
    with FakeOpenAIServer([text("Order A-17 is on its way.")]) as fake:
        base_url = fake.base_url
        env = {"FAKE_OPENAI_URL": base_url}
        with start_dev("--app", "app:live", env=env) as dev:
            (desk,) = httpx.get(dev.url + "/dev/api/project").json()["agents"]
            assert desk["mode"] == "live"
            events = run(dev, "c4", "Where is A-17?")
            finals = [(n, v) for n, v in events if n not in ("partial", "session")]
            assert finals == [("response_text", {"text": "Order A-17 is on its way."})]
            session = events[-1][1]
            answer = httpx.get(f"{dev.url}/dev/api/turns/{session['turns'][-1]['id']}")
    (sent,) = answer.json()["requests"]
    assert sent["kind"] == "http" and sent["method"] == "POST"
    assert sent["url"].startswith(base_url) and sent["url"].endswith("/chat/completions")
    assert sent["headers"]["authorization"] == "[redacted]"
    assert "sk-dev-console-test-secret" not in answer.text
    assert sent["body"]["model"] == "gpt-4o-mini"
    assert sent["body"] == fake.requests[0].body


def test_offline_flag_and_no_app(start_dev: DevFactory) -> None:
    with start_dev("--offline") as dev:
        (desk,) = httpx.get(dev.url + "/dev/api/project").json()["agents"]
        assert (desk["mode"], desk["mode_reason"]) == ("offline", "auwgent dev --offline")
        # No tools configured: the offline model calls none and answers.
        events = run(dev, "c5", "hello")
        assert [n for n, _ in events if n != "partial"] == ["response_text", "session"]


def test_the_project_folder_is_not_written_by_the_tests() -> None:
    assert not (PROJECT / "generated").exists()


def test_an_app_config_that_fails_is_shown(start_dev: DevFactory) -> None:
    with start_dev("--app", "app:broken") as dev:
        (desk,) = httpx.get(dev.url + "/dev/api/project").json()["agents"]
        assert desk["mode"] == "error"
        assert desk["mode_reason"] == (
            "the --app config failed: RuntimeError: the orders database is down"
        )
        failed = httpx.post(dev.url + "/v1/agents/Desk/runs", json={"input": "hi"})
        assert failed.status_code == 500 and failed.json()["error"]["code"] == "internal"


def test_a_resume_keeps_the_named_config_of_the_run_it_resumes(dev: DevProcess) -> None:
    body = {"input": ASK_REFUND, "conversation_id": "c6", "context": CONTEXT, "config": "careful"}
    events = stream(dev.url, "/v1/agents/Desk/runs", body)
    request = next(v for n, v in events if n == "approval_request")
    assert httpx.get(dev.url + "/v1/conversations/c6").json()["paused_config"] == "careful"
    resumed = stream(dev.url, "/v1/conversations/c6/approvals",
                     {"decisions": {request["id"]: True}})  # fmt: skip
    session = resumed[-1][1]
    assert "paused_config" not in session
    record = httpx.get(f"{dev.url}/dev/api/turns/{session['turns'][-1]['id']}").json()
    chats = [s["name"] for s in record["spans"] if s["name"].startswith("chat ")]
    assert chats == ["chat gpt-4o", "chat gpt-4o"]  # the resume answers with the same model


def test_ctrl_c_stops_it_cleanly(dev: DevProcess) -> None:
    dev.process.send_signal(signal.SIGINT)
    assert dev.process.wait(timeout=30) == 0
    deadline = time.monotonic() + 10
    while "stopped watching" not in dev.lines and time.monotonic() < deadline:
        time.sleep(0.05)
    assert "stopped watching" in dev.lines


def test_a_port_in_use_is_a_clear_error(dev: DevProcess, tmp_path: Path) -> None:
    port = dev.url.rsplit(":", 1)[1]
    folder = copy_project(tmp_path / "second")
    done = subprocess.run(
        [sys.executable, "-m", "auwgent", "dev", ".", "--port", port, "--no-open"],
        cwd=folder, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr
