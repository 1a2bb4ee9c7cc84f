"""``auwgent serve`` under load, with real worker processes: 16 concurrent code-mode runs
finish, and ``/readyz`` says 503, naming why, while every thread of the worker is blocked
(``/healthz`` still says 200), then 200 again."""

from __future__ import annotations

import asyncio
import json
import os
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from auwgent.testing import FakeOpenAIServer, text

from .test_serve import headers, serving

AGENT = """
agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "You are a helpful assistant."
        codeMode: true
    }
    tool notify(who: string): string
}
"""

PLAIN = """
agent Plain {
    default config {
        model: openai("gpt-4o")
        prompt: "You are a helpful assistant."
    }
    tool hold(who: string): string
}
"""

APP = """
import os

HERE = os.path.dirname(os.path.abspath(__file__))

def notify(who):
    return "told " + who

def hold(who):
    with open(os.path.join(HERE, "release")) as pipe:
        return pipe.read() or "released"

def config(agent_name):
    return {
        "apiKeys": {"openaiApiKey": "sk-test"},
        "baseUrls": {"openai": os.environ["FAKE_OPENAI_URL"]},
        "tools": {"notify": notify} if agent_name == "Main" else {"hold": hold},
        "retry": {"attempts": 1},
        "codeMode": agent_name == "Main",
    }
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "main.agent").write_text(AGENT, encoding="utf-8")
    (tmp_path / "agents" / "plain.agent").write_text(PLAIN, encoding="utf-8")
    (tmp_path / "app.py").write_text(textwrap.dedent(APP), encoding="utf-8")
    return tmp_path


def coder(request: Any) -> Any:
    """Writes code calling the tool the user names, then answers with its result."""
    messages = request.body["messages"]
    if "[tool_" in json.dumps(messages[-1]):
        return text("[response_text]\nDone.\n[/response_text]")
    tool, who = str(messages[-1]["content"]).split()
    if tool == "hold":  # the Plain agent calls it directly
        return text(f"[tool_call: hold]\nwho: {who}\n[/tool_call]")
    code = f"import api\n[api.{tool}(who='{who}-' + str(n)) for n in range(3)]"
    return text(f"[tool_call: execute_code]\n{code}\n[/tool_call]")


async def _runs(url: str, tool: str, count: int, agent: str = "Main") -> list[list[dict[str, Any]]]:
    async with httpx.AsyncClient(timeout=120, headers=headers()) as client:

        async def one(i: int) -> list[dict[str, Any]]:
            body = {"input": f"{tool} r{i}"}
            async with client.stream("POST", f"{url}/v1/agents/{agent}/runs", json=body) as r:
                assert r.status_code == 200, await r.aread()
                events, name = [], ""
                async for line in r.aiter_lines():
                    if line.startswith("event: "):
                        name = line[7:]
                    elif line.startswith("data: ") and name != "partial":
                        events.append({"name": name, "data": json.loads(line[6:])})
                return events

        return await asyncio.gather(*(one(i) for i in range(count)))


def test_sixteen_concurrent_code_mode_runs_finish(project: Path, tmp_path: Path) -> None:
    with (
        FakeOpenAIServer(coder) as fake,
        serving(project, fake.base_url, f"sqlite:///{tmp_path / 's.db'}") as url,
    ):
        every = asyncio.run(asyncio.wait_for(_runs(url, "notify", 16), 180))
        for i, events in enumerate(every):
            (result,) = [
                e["data"]
                for e in events
                if e["name"] == "tool_result" and e["data"]["name"] == "execute_code"
            ]
            assert result["result"]["value"] == [f"told r{i}-{n}" for n in range(3)]
            assert events[-1]["data"]["turns"][-1]["status"] == "complete"
        assert httpx.get(f"{url}/readyz").json() == {"status": "ready"}


def _until(url: str, status: int) -> dict[str, Any]:
    """``/readyz`` once it answers ``status`` (what a load balancer does: it asks again)."""
    deadline = time.monotonic() + 60
    while True:
        answer = httpx.get(f"{url}/readyz", timeout=10)
        if answer.status_code == status:
            return dict(answer.json())
        assert time.monotonic() < deadline, answer.text
        time.sleep(0.1)


def test_readyz_reports_a_worker_whose_threads_are_all_blocked(
    project: Path, tmp_path: Path
) -> None:
    release = project / "release"
    os.mkfifo(release)
    threads = min(32, (os.cpu_count() or 1) + 4)  # the default thread pool's size
    with (
        FakeOpenAIServer(coder) as fake,
        serving(project, fake.base_url, f"sqlite:///{tmp_path / 's.db'}") as url,
    ):
        assert _until(url, 200) == {"status": "ready"}
        runs = threading.Thread(target=lambda: asyncio.run(_runs(url, "hold", threads, "Plain")))
        runs.start()
        try:
            stuck = _until(url, 503)
            assert stuck["status"] == "unavailable"
            (reason,) = stuck["reasons"]
            assert reason.startswith("the default thread pool did not start a task within 1 s")
            assert httpx.get(f"{url}/healthz").status_code == 200
        finally:
            release.write_text("released")  # every blocked tool reads its end of the pipe
            runs.join(120)
        assert _until(url, 200) == {"status": "ready"}
