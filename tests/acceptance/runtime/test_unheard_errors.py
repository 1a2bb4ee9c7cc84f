"""An ``error`` intent that reaches nobody is logged, and a missing key points at the offline
model: the README's first program, through the CLI, a subprocess and real HTTP."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from auwgent.errors import ConfigError
from auwgent.testing import FakeGeminiServer, status

from ._project import generate

MAIN = """
agent Main {
    default config {
        model: gemini("gemini-2.5-flash")
        prompt: "You are a helpful assistant."
    }
}
"""

# The README's app.py, with the network gone: nobody listens at the Gemini base URL.
APP = """
import asyncio
from generated.main_types import auwgent, AuwgentBaseIntentHandler

class HandleIntent(AuwgentBaseIntentHandler):
    async def response_text(self, intent, agent_name):
        print(intent["text"])

async def main() -> None:
    agent = auwgent({{"apiKeys": {{"geminiApiKey": "..."}},
                     "baseUrls": {{"gemini": {url!r}}}, "retry": {{"attempts": 1}}}})
    agent.on_intent(HandleIntent)
    await agent.run("Hello!")

asyncio.run(main())
"""

WARNING = "error intent of Main (no handler or middleware takes it): "


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("unheard")
    generate(folder, {"main.agent": MAIN})
    return folder


@pytest.fixture(scope="module")
def main(root: Path) -> ModuleType:
    return generate(root, {"main.agent": MAIN})["main"]


def _dead_url() -> str:
    with FakeGeminiServer([]) as server:
        url = server.base_url
    return url  # a port nobody listens on once the server is closed


def test_the_readme_app_without_network_says_why_it_ended(root: Path) -> None:
    (root / "app.py").write_text(textwrap.dedent(APP.format(url=_dead_url())), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "app.py"], cwd=root, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith(WARNING + "Gemini API error: request failed (ConnectError"), line


class Base:
    """Stands for the README's handler: it takes response_text only."""

    def response_text(self, intent: Any, agent_name: str) -> None:
        pass


class Taker(Base):
    def __init__(self) -> None:
        self.errors: list[Any] = []

    def error(self, intent: Any, agent_name: str) -> None:
        self.errors.append(intent)


class OnError:
    def onError(self, error: BaseException, session: Any, ctx: Any) -> bool:
        return False  # seen, not handled: the error intent is still emitted


class OnIntent:
    def onIntent(self, name: str, value: Any, ctx: Any) -> None:
        pass


def _agent(main: ModuleType, server: FakeGeminiServer, **extra: Any) -> Any:
    config = {"apiKeys": {"geminiApiKey": "g"}, "baseUrls": {"gemini": server.base_url}}
    return main.auwgent({**config, "retry": {"attempts": 1}, **extra})


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "auwgent"]


async def test_an_error_nobody_takes_is_a_warning(
    main: ModuleType, caplog: pytest.LogCaptureFixture
) -> None:
    with FakeGeminiServer([status(400, message="bad request")]) as server:
        agent = _agent(main, server)
        agent.on_intent(Base)
        with caplog.at_level(logging.WARNING, logger="auwgent"):
            session = await agent.run("hi")
    assert session["turns"][-1]["status"] == "error"
    assert _warnings(caplog) == [WARNING + session["turns"][-1]["error"]]
    assert "bad request" in _warnings(caplog)[0]


@pytest.mark.parametrize(
    ("handler", "middleware"),
    [(Taker, None), (lambda n, v, a: None, None), (Base, [OnError]), (Base, [OnIntent])],
    ids=["error-method", "function-handler", "onError", "onIntent"],
)
async def test_an_error_someone_takes_is_not_logged(
    main: ModuleType, caplog: pytest.LogCaptureFixture, handler: Any, middleware: Any
) -> None:
    with FakeGeminiServer([status(400, message="bad request")]) as server:
        agent = _agent(main, server, **({"middleware": middleware} if middleware else {}))
        agent.on_intent(handler)
        with caplog.at_level(logging.WARNING, logger="auwgent"):
            session = await agent.run("hi")
    assert session["turns"][-1]["status"] == "error"
    assert _warnings(caplog) == []


async def test_a_streamed_error_is_not_logged(
    main: ModuleType, caplog: pytest.LogCaptureFixture
) -> None:
    with FakeGeminiServer([status(400, message="bad request")]) as server:
        agent = _agent(main, server)
        with caplog.at_level(logging.WARNING, logger="auwgent"):
            names = [event.name async for event in agent.stream("hi")]
    assert names[-1] == "error"
    assert _warnings(caplog) == []


def test_a_missing_key_points_at_the_offline_model(
    main: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "AUWGENT_PROVIDER"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigError) as caught:
        main.auwgent({})
    assert str(caught.value).endswith(
        'To try the agent without a key, use the offline model: "provider": "offline" in the '
        "runtime config, or the environment variable AUWGENT_PROVIDER=offline."
    )
    assert main.auwgent({"provider": "offline"}) is not None
