"""Cassettes: record real HTTP exchanges against the fake servers, replay them with the server
stopped, fail loudly (with a diff) when the request changes, and never write a secret."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from auwgent.testing import (
    Cassette,
    CassetteMiss,
    FakeGeminiServer,
    FakeOpenAIServer,
    text,
    tool_calls,
)

from ._project import generate

SOURCES = {
    "weather.agent": """
        agent Main {
            default config {
                model: openai("gpt-4o")
                prompt: "You are a weather assistant."
            }
            tool get_weather(location: string): string @desc "Gets the current weather"
        }
        """,
    "gem.agent": """
        agent Main {
            default config {
                model: gemini("gemini-2.5-flash")
                prompt: "You are a weather assistant."
            }
        }
        """,
}

SECRET = "sk-test-a1b2c3d4e5f6g7h8"
GEMINI_SECRET = "AIzaSyTEST-gemini-secret-0123"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ModuleType]:
    return generate(tmp_path_factory.mktemp("cassettes"), SOURCES)


class Tools:
    def get_weather(self, location: str) -> str:
        return f"28°C and sunny in {location}"


def script() -> list[Any]:
    return [
        tool_calls([("tool__get_weather", {"location": "Accra"})], chunk_size=5),
        text("It is 28°C and sunny in Accra.", chunk_size=4),
    ]


def agent_for(module: ModuleType, base_url: str, client: Any, hour: int = 9) -> Any:
    return module.auwgent(
        {
            "apiKeys": {"openaiApiKey": SECRET},
            "baseUrls": {"openai": base_url},
            "httpClient": client,
            "tools": Tools,
            "protocol": "native",
            "clock": lambda: datetime(2026, 12, 1, hour, 0, tzinfo=timezone.utc),
        }
    )


async def events(agent: Any, question: str) -> list[tuple[str, Any, str, bool]]:
    return [(e.name, e.value, e.agent_name, e.partial) async for e in agent.stream(question)]


async def test_record_then_replay_with_the_server_stopped(
    project: dict[str, ModuleType], tmp_path: Path
) -> None:
    path = tmp_path / "weather.json"
    with FakeOpenAIServer(script()) as server:
        recording = Cassette(path, "record")
        live = await events(agent_for(project["weather"], server.base_url, recording), "Accra?")
        await recording.aclose()
        base_url = server.base_url
    assert len(server.requests) == 2
    assert any(partial for *_, partial in live)  # streamed: partials were seen

    replaying = Cassette(path)  # replay; the server is gone
    replayed = await events(agent_for(project["weather"], base_url, replaying, hour=15), "Accra?")
    assert replayed == live  # byte-for-byte streams give identical intents and partials
    assert replaying.unused == [] and replaying.misses == []

    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["version"] == 1 and len(data["interactions"]) == 2
    first = data["interactions"][0]
    assert first["request"]["path"].endswith("/chat/completions")
    assert "Current date and time: <now>" in json.dumps(first["request"]["body"])
    assert first["response"]["headers"]["content-type"].startswith("text/event-stream")
    assert "".join(first["response"]["chunks"]).startswith("data: ")
    assert (
        path.read_text(encoding="utf-8")
        == json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    )


async def test_a_changed_prompt_is_a_readable_miss(
    project: dict[str, ModuleType], tmp_path: Path
) -> None:
    path = tmp_path / "weather.json"
    with FakeOpenAIServer(script()) as server:
        recording = Cassette(path, "record")
        await agent_for(project["weather"], server.base_url, recording).run("Accra?")
        base_url = server.base_url

    replaying = Cassette(path)
    seen: list[tuple[str, Any]] = []
    agent = agent_for(project["weather"], base_url, replaying)
    agent.on_intent(lambda name, value, agent_name: seen.append((name, value)))
    session = await agent.run("Kumasi?")
    assert session["turns"][-1]["status"] == "error"
    message = str(replaying.misses[0])
    assert "has no recorded answer for POST /v1/chat/completions" in message
    assert "--- recorded request #1" in message and "+++ this request" in message
    assert '-        "content": "Accra?",' in message
    assert '+        "content": "Kumasi?",' in message
    assert "has no recorded answer" in seen[-1][1]["message"]


async def test_no_secret_is_ever_written(project: dict[str, ModuleType], tmp_path: Path) -> None:
    path = tmp_path / "gem.json"
    with FakeGeminiServer([text(f"echo {GEMINI_SECRET}")]) as server:
        recording = Cassette(path, "record")
        agent = project["gem"].auwgent(
            {
                "apiKeys": {"geminiApiKey": GEMINI_SECRET},
                "baseUrls": {"gemini": server.base_url},
                "httpClient": recording,
            }
        )
        await agent.run(f"my key is {GEMINI_SECRET}")
    assert server.requests  # the key did go over the wire
    written = path.read_text(encoding="utf-8")
    assert GEMINI_SECRET not in written
    assert "<redacted>" in written

    openai_path = tmp_path / "openai.json"
    with FakeOpenAIServer(script()) as server:
        recording = Cassette(openai_path, "record")
        await agent_for(project["weather"], server.base_url, recording).run("Accra?")
    assert SECRET not in openai_path.read_text(encoding="utf-8")
    assert "authorization" not in openai_path.read_text(encoding="utf-8").lower()


async def test_auto_records_only_what_is_missing(
    project: dict[str, ModuleType], tmp_path: Path
) -> None:
    path = tmp_path / "auto.json"
    with FakeOpenAIServer(script() + script()) as server:
        first = Cassette(path, "auto")
        await agent_for(project["weather"], server.base_url, first).run("Accra?")
        again = Cassette(path, "auto")
        await agent_for(project["weather"], server.base_url, again).run("Accra?")
        assert len(server.requests) == 2  # the second run was replayed
        await agent_for(project["weather"], server.base_url, Cassette(path, "auto")).run("Ho?")
        assert len(server.requests) == 4
    assert len(json.loads(path.read_text(encoding="utf-8"))["interactions"]) == 4


ORDER = "order 123e4567-e89b-12d3-a456-426614174000 status?"
OTHER_ORDER = "order 00000000-0000-0000-0000-000000000001 status?"


@pytest.mark.parametrize(
    ("recorded", "asked"),
    [
        (ORDER, OTHER_ORDER),
        (ORDER, ORDER.replace("-", "")),
        (
            "Current date and time: 2020-01-01T00:00:00+00:00 (Wednesday, 01 January 2020)",
            "Current date and time: 2021-01-01T00:00:00+00:00 (Friday, 01 January 2021)",
        ),
    ],
)
async def test_what_the_user_wrote_is_matched_exactly(
    project: dict[str, ModuleType], tmp_path: Path, recorded: str, asked: str
) -> None:
    """Ids and dates in a message are its content: a cassette answers only the request it
    recorded, and any other is a miss with a diff (no answer recorded for another)."""
    path = tmp_path / "orders.json"
    with FakeOpenAIServer([text("Shipped.")]) as server:
        recording = Cassette(path, "record")
        await agent_for(project["weather"], server.base_url, recording).run(recorded)
        base_url = server.base_url
    assert json.dumps(recorded, ensure_ascii=False)[1:-1] in path.read_text(encoding="utf-8")

    again = Cassette(path)
    session = await agent_for(project["weather"], base_url, again, hour=15).run(recorded)
    assert session["turns"][-1]["output"] == "Shipped." and again.misses == []

    other = Cassette(path)
    session = await agent_for(project["weather"], base_url, other).run(asked)
    assert session["turns"][-1]["status"] == "error"
    message = str(other.misses[0])
    assert f'-        "content": {json.dumps(recorded)},' in message
    assert f'+        "content": {json.dumps(asked)},' in message


class _NoIdsServer(BaseHTTPRequestHandler):
    """An OpenAI-compatible endpoint whose tool calls carry no id: the runtime makes one
    (``auwgent_call_...``) from the request, which holds the date line. Answers whole (the
    agent has no partial listener, so it does not ask for a stream)."""

    calls = [
        {
            "type": "function",
            "function": {"name": "tool__get_weather", "arguments": json.dumps({"location": c})},
        }
        for c in ("Accra", "Ho")
    ]
    answers: list[dict[str, Any]] = [
        {"role": "assistant", "content": None, "tool_calls": calls},
        {"role": "assistant", "content": "Both sunny."},
    ]

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        server: Any = self.server
        message = self.answers[server.served % 2]
        server.served += 1
        finish = "tool_calls" if "tool_calls" in message else "stop"
        choice = {"index": 0, "message": message, "finish_reason": finish}
        body = json.dumps({"id": f"chatcmpl-{server.served}", "choices": [choice]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def no_ids_server() -> Iterator[str]:
    server: Any = ThreadingHTTPServer(("127.0.0.1", 0), _NoIdsServer)
    server.served = 0
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


async def test_call_ids_the_runtime_made_are_volatile(
    project: dict[str, ModuleType], tmp_path: Path, no_ids_server: str
) -> None:
    """A made call id depends on the request, date line included: replayed at another time it
    differs, and is matched by its place (the first made id, the second), not its value."""
    path = tmp_path / "no_ids.json"
    recording = Cassette(path, "record")
    live = await agent_for(project["weather"], no_ids_server, recording).run("Accra and Ho?")
    await recording.aclose()
    assert live["turns"][-1]["output"] == "Both sunny."
    second = json.loads(path.read_text(encoding="utf-8"))["interactions"][1]["request"]
    ids = [c["id"] for m in second["body"]["messages"] for c in m.get("tool_calls", [])]
    assert ids == ["<made call id 1>", "<made call id 2>"]

    replaying = Cassette(path)
    session = await agent_for(project["weather"], no_ids_server, replaying, hour=15).run(
        "Accra and Ho?"
    )
    assert replaying.misses == [] and replaying.unused == []
    assert session["turns"][-1]["output"] == "Both sunny."


def test_replay_needs_the_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="record it first"):
        Cassette(tmp_path / "none.json")
    with pytest.raises(ValueError, match="mode must be one of"):
        Cassette(tmp_path / "none.json", "play")  # type: ignore[arg-type]
    (tmp_path / "bad.json").write_text('{"version": 9}', encoding="utf-8")
    with pytest.raises(CassetteMiss, match="expected a version 1 cassette"):
        Cassette(tmp_path / "bad.json")


@pytest.mark.slow
def test_the_pytest_fixture_records_replays_and_fails_loudly(tmp_path: Path) -> None:
    """The ``cassette`` fixture, in a real pytest run of a user's test file."""
    with FakeOpenAIServer([text("Hello!"), text("Hello!"), text("Shipped.")]) as server:
        (tmp_path / "agents").mkdir()
        generate(tmp_path, {"main.agent": SOURCES["weather.agent"]})
        (tmp_path / "test_user.py").write_text(
            textwrap.dedent(
                f"""
                import asyncio, os
                from generated.main_types import auwgent

                def test_hello(cassette):
                    agent = auwgent({{
                        "apiKeys": {{"openaiApiKey": "sk-user-secret-000"}},
                        "baseUrls": {{"openai": {server.base_url!r}}},
                        "httpClient": cassette,
                    }})
                    asyncio.run(agent.run(os.environ.get("QUESTION", "hi")))
                """
            ),
            encoding="utf-8",
        )

        def pytest_run(*args: str, question: str = "hi") -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=120,
                env={**__import__("os").environ, "QUESTION": question, "PYTHONPATH": "."},
            )

        recorded = pytest_run("--cassette-mode", "record")
        assert recorded.returncode == 0, recorded.stdout + recorded.stderr
        cassette_file = tmp_path / "cassettes" / "test_user" / "test_hello.json"
        assert cassette_file.exists()
        requests_before = len(server.requests)
        replayed = pytest_run()
        assert replayed.returncode == 0, replayed.stdout + replayed.stderr
        assert len(server.requests) == requests_before
        missed = pytest_run(question="something else")
        assert missed.returncode == 1
        assert "has no recorded answer" in missed.stdout
        assert '+        "content": "something else",' in missed.stdout
        # A request that differs only in a UUID the user wrote is another request.
        assert pytest_run("--cassette-mode", "record", question=ORDER).returncode == 0
        other = pytest_run(question=OTHER_ORDER)
        assert other.returncode == 1, other.stdout
        assert f'+        "content": "{OTHER_ORDER}",' in other.stdout
    assert "sk-user-secret-000" not in cassette_file.read_text(encoding="utf-8")
