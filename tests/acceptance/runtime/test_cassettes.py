"""Cassettes: record real HTTP exchanges against the fake servers, replay them with the server
stopped, fail loudly (with a diff) when the request changes, and never write a secret."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from datetime import datetime, timezone
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
    with FakeOpenAIServer([text("Hello!"), text("Hello!")]) as server:
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
    assert "sk-user-secret-000" not in cassette_file.read_text(encoding="utf-8")
