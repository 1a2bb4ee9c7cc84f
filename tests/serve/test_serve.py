"""``auwgent serve`` end to end: real server processes, a plain HTTP client reading the SSE
stream (httpx), the fake OpenAI server as the model, and real stores (SQLite, PostgreSQL,
Redis) shared by two workers."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from auwgent.testing import FakeOpenAIServer, text
from servers import free_port

pytestmark = pytest.mark.servers

TOKEN = "serve-test-token-0123456789"

AGENT = """
agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "You are a helpful assistant."
    }
    context { user?: string }
    tool get_weather(location: string): string @desc "Gets the current weather"
}
"""

APP = """
import os

def config(agent_name):
    return {
        "apiKeys": {"openaiApiKey": "sk-test"},
        "baseUrls": {"openai": os.environ["FAKE_OPENAI_URL"]},
        "tools": {"get_weather": lambda location: "28C and sunny in " + location},
        "retry": {"attempts": 1},
    }
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "main.agent").write_text(AGENT, encoding="utf-8")
    (tmp_path / "app.py").write_text(textwrap.dedent(APP), encoding="utf-8")
    return tmp_path


@contextmanager
def serving(
    project: Path,
    fake_url: str,
    store: str,
    *,
    token: str | None = TOKEN,
    extra: Sequence[str] = (),
) -> Iterator[str]:
    port = free_port()
    args = [sys.executable, "-m", "auwgent", "serve", "agents", "--app", "app:config",
            "--port", str(port), "--store", store, *extra]  # fmt: skip
    if token:
        args += ["--token", token]
    env = {k: v for k, v in os.environ.items() if k != "AUWGENT_SERVE_TOKEN"}
    env.update(FAKE_OPENAI_URL=fake_url, PYTHONPATH=str(project))
    process = subprocess.Popen(
        args, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                _, err = process.communicate(timeout=5)
                raise AssertionError(f"auwgent serve did not start: {err.decode()}")
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def headers(token: str | None = TOKEN) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"} if token else {}


def json_headers(token: str | None = TOKEN) -> dict[str, str]:
    return {**headers(token), "content-type": "application/json"}


def read_sse(response: httpx.Response) -> list[tuple[str, Any]]:
    events: list[tuple[str, Any]] = []
    name, data = "", ""
    for line in response.iter_lines():
        if line.startswith("event: "):
            name = line[len("event: ") :]
        elif line.startswith("data: "):
            data = line[len("data: ") :]
        elif line == "" and name:
            events.append((name, json.loads(data)))
            name, data = "", ""
    return events


def run(url: str, body: dict[str, Any], token: str | None = TOKEN) -> list[tuple[str, Any]]:
    with httpx.stream(
        "POST", f"{url}/v1/agents/Main/runs", json=body, headers=headers(token), timeout=60
    ) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        return read_sse(response)


def weather_script(request: Any) -> Any:
    messages = request.body["messages"]
    if "[tool_result" in json.dumps(messages[-1]):
        return text("[response_text]\nIt is 28C and sunny.\n[/response_text]")
    return text('[tool_call: get_weather]\n{"location": "Accra"}\n[/tool_call]')


def test_a_run_streams_every_intent_and_the_session(project: Path, tmp_path: Path) -> None:
    with (
        FakeOpenAIServer(weather_script) as fake,
        serving(project, fake.base_url, f"sqlite:///{tmp_path / 's.db'}") as url,
    ):
        events = run(url, {"input": "Weather in Accra?", "conversation_id": "c1"})
        names = [name for name, _ in events]
        assert names[-1] == "session"
        finals = [n for n in names if n not in ("partial", "session")]
        assert finals == ["tool_call", "tool_result", "response_text"]
        assert "partial" in names
        assert dict(events)["tool_call"] == {"type": "get_weather", "args": {"location": "Accra"}}
        assert dict(events)["response_text"] == {"text": "It is 28C and sunny."}
        session = events[-1][1]  # what happened, without the content the stream carried
        assert session["turns"][-1]["status"] == "complete" and "system_prompt" not in session
        assert not {"input", "messages", "intents", "output"} & set(session["turns"][-1])

        second = run(url, {"input": "And tomorrow?", "conversation_id": "c1"})
        assert len(second[-1][1]["turns"]) == 2
        stored = httpx.get(f"{url}/v1/conversations/c1", headers=headers()).json()
        assert [t["input"]["text"] for t in stored["turns"]] == [
            "Weather in Accra?",
            "And tomorrow?",
        ]


def test_errors_are_json_never_tracebacks(project: Path, tmp_path: Path) -> None:
    with (
        FakeOpenAIServer(weather_script) as fake,
        serving(project, fake.base_url, f"sqlite:///{tmp_path / 's.db'}") as url,
    ):
        post = f"{url}/v1/agents/Main/runs"
        assert httpx.post(post, json={"input": "x"}).status_code == 401
        wrong = httpx.post(post, json={"input": "x"}, headers=headers("nope"))
        assert wrong.status_code == 401
        assert wrong.json()["error"]["message"] == "missing or wrong credentials"
        missing = httpx.post(f"{url}/v1/agents/Nope/runs", json={"input": "x"}, headers=headers())
        assert missing.status_code == 404 and "agents: Main" in missing.json()["error"]["message"]
        bad = httpx.post(post, content=b"{not json", headers=json_headers())
        assert bad.status_code == 400 and "not valid JSON" in bad.json()["error"]["message"]
        huge = httpx.post(post, json={"input": "x" * 2_000_000}, headers=headers())
        assert huge.status_code == 413
        typed = httpx.post(post, json={"input": "x", "context": {"user": 5}}, headers=headers())
        assert typed.status_code == 422 and "context.user" in typed.json()["error"]["message"]
        unknown = httpx.post(post, json={"input": "x", "persona": "Nope"}, headers=headers())
        assert unknown.status_code == 422
        none = httpx.get(f"{url}/v1/conversations/none", headers=headers())
        assert none.status_code == 404
        assert httpx.get(f"{url}/healthz").json() == {"status": "ok", "agents": ["Main"]}
        assert httpx.get(f"{url}/openapi.json").status_code == 401  # under the same rule
        spec = httpx.get(f"{url}/openapi.json", headers=headers()).json()
        assert spec["openapi"].startswith("3.") and "/v1/agents/{agent}/runs" in spec["paths"]


def test_one_run_per_conversation_and_a_disconnect_keeps_the_session(
    project: Path, tmp_path: Path
) -> None:
    # The first answer waits for the test (not for a clock): however slowly the machine
    # serves the second request, the first run is still in progress then.
    release = threading.Event()

    def slow(recorded: Any) -> Any:
        assert release.wait(60), "the test never released the first answer"
        return text("[response_text]\nSlow answer.\n[/response_text]")

    with (
        FakeOpenAIServer([slow] + [text("[response_text]\nok\n[/response_text]")] * 3) as fake,
        serving(project, fake.base_url, f"sqlite:///{tmp_path / 's.db'}") as url,
    ):
        post = f"{url}/v1/agents/Main/runs"
        with httpx.stream(
            "POST", post, json={"input": "slow", "conversation_id": "busy"}, headers=headers(),
            timeout=30,
        ) as first:  # fmt: skip
            assert first.status_code == 200
            second = httpx.post(
                post, json={"input": "again", "conversation_id": "busy"}, headers=headers()
            )
            assert second.status_code == 409
            assert "already has a run in progress" in second.json()["error"]["message"]
            # the client goes away before the answer
        release.set()
        deadline = time.monotonic() + 60
        while True:
            stored = httpx.get(f"{url}/v1/conversations/busy", headers=headers())
            if stored.status_code == 200:
                break
            assert time.monotonic() < deadline, "the abandoned run was never saved"
            time.sleep(0.2)
        assert stored.json()["turns"][-1]["output"] == "Slow answer."
        after = run(url, {"input": "now", "conversation_id": "busy"})  # the lock was released
        assert len(after[-1][1]["turns"]) == 2


def test_without_authentication_only_loopback(project: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "auwgent", "serve", "agents", "--app", "app:config",
         "--host", "0.0.0.0"],
        cwd=project, capture_output=True, text=True, timeout=60,
        env={k: v for k, v in os.environ.items() if k != "AUWGENT_SERVE_TOKEN"},
    )  # fmt: skip
    assert done.returncode == 2
    assert "needs authentication" in done.stderr
    bad_app = subprocess.run(
        [sys.executable, "-m", "auwgent", "serve", "agents", "--app", "nowhere:config"],
        cwd=project, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert bad_app.returncode == 2 and "cannot import 'nowhere'" in bad_app.stderr
    assert "Traceback" not in bad_app.stderr


@pytest.mark.parametrize("backend", ["postgres", "redis"])
def test_two_workers_share_conversations(
    project: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    store = request.getfixturevalue("postgres_url" if backend == "postgres" else "redis_url")

    def answer(recorded: Any) -> Any:
        said = recorded.body["messages"][-1]["content"]
        return text(f"[response_text]\nyou said {said}\n[/response_text]")

    with (
        FakeOpenAIServer(answer) as fake,
        serving(project, fake.base_url, store) as one,
        serving(project, fake.base_url, store) as two,
    ):
        conversation = f"{backend}-alternating-{time.time_ns()}"
        for i in range(4):
            worker = one if i % 2 == 0 else two
            events = run(worker, {"input": f"turn {i}", "conversation_id": conversation})
        assert len(events[-1][1]["turns"]) == 4
        stored = httpx.get(f"{worker}/v1/conversations/{conversation}", headers=headers())
        turns = stored.json()["turns"]
        assert [t["input"]["text"] for t in turns] == [f"turn {i}" for i in range(4)]
        # the fourth request held the whole history, whichever worker served the earlier ones
        last = fake.requests[-1].body["messages"]
        assert [m["content"] for m in last if m["role"] == "user"][-4:-1] == [
            "turn 0", "turn 1", "turn 2"]  # fmt: skip

        asyncio.run(_many_conversations(one, two, backend))


async def _many_conversations(one: str, two: str, backend: str) -> None:
    """200 concurrent conversations over both workers, two turns each: no turn is lost."""
    prefix = f"{backend}-many-{time.time_ns()}"
    # A new connection per request: a kept-alive one that the server closes as idle just
    # when the client sends on it is a reset the client may not retry (a POST), and on a
    # loaded machine that race is won now and then.
    limits = httpx.Limits(max_connections=100, max_keepalive_connections=0)
    async with httpx.AsyncClient(timeout=120, limits=limits, headers=headers()) as client:

        async def conversation(i: int) -> None:
            for turn in range(2):
                worker = (one, two)[(i + turn) % 2]
                body = {"input": f"c{i} t{turn}", "conversation_id": f"{prefix}-{i}"}
                async with client.stream("POST", f"{worker}/v1/agents/Main/runs", json=body) as r:
                    assert r.status_code == 200, await r.aread()
                    async for _ in r.aiter_bytes():
                        pass

        await asyncio.gather(*(conversation(i) for i in range(200)))
        for i in range(200):
            stored = (await client.get(f"{one}/v1/conversations/{prefix}-{i}")).json()
            assert [t["input"]["text"] for t in stored["turns"]] == [f"c{i} t0", f"c{i} t1"]
