"""A handler class written against one agent's generated module, registered on another agent:
mypy --strict accepts it (the generated bases share the runtime's ``IntentHandler``) and still
rejects what is wrong; at run time a method for an intent the other agent lacks is warned of."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from auwgent.generate import generate_path

REPO = Path(__file__).resolve().parents[2]

ALPHA = """intent Note {
    description: "a note"
    fields {
        text: string
    }
}
agent Alpha {
    default config {
        model: gemini("m")
        prompt: "p"
    }
    tool lookup(id: string): string
    intent: Note
}
"""
BETA = """agent Beta {
    default config {
        model: gemini("m")
        prompt: "p"
    }
    tool search(q: string): string[]
}
"""
APP = """from generated.alpha_types import (
    AgentName, AuwgentBaseIntentHandler, AuwgentBasePartialIntentHandler, ErrorIntent,
    NoteIntent, PartialIntent,
)
from generated.alpha_types import auwgent as alpha
from generated.beta_types import auwgent as beta


class Log(AuwgentBaseIntentHandler):
    async def error(self, intent: ErrorIntent, agent_name: AgentName) -> None:
        print(intent["message"])


class Notes(AuwgentBaseIntentHandler):
    async def Note(self, intent: NoteIntent, agent_name: AgentName) -> None:
        print(intent["text"])


class Stream(AuwgentBasePartialIntentHandler):
    async def tool_call(self, intent: PartialIntent, agent_name: AgentName) -> None:
        print(intent)


class NotAHandler:
    async def error(self, intent: ErrorIntent, agent_name: AgentName) -> None:
        pass


class Wrong(AuwgentBaseIntentHandler):
    async def error(self, intent: int, agent_name: AgentName) -> None:  # E: Argument 1 of "error" is incompatible
        pass


def register() -> None:
    a, b = alpha(), beta()
    a.on_intent(Log)
    b.on_intent(Log)
    b.on_intent(Log())
    b.on_intent_partial(Stream)
    b.on_intent_partial(Stream())
    b.on_intent(NotAHandler)  # E: Argument 1 to "on_intent" of "TypedAgent" has incompatible type
    b.on_intent_partial(Log)  # E: Argument 1 to "on_intent_partial" of "TypedAgent" has incompatible type
"""
_MARK = re.compile(r"#\s*E:\s*(.+?)\s*$")
_MYPY_LINE = re.compile(r"^app\.py:(?P<line>\d+): error: (?P<msg>.*)$")


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("two_agents")
    (root / "auwgent.yml").write_text(
        'source: "agents"\noutput: "generated"\ntargets: ["py"]\n', encoding="utf-8"
    )
    (root / "agents").mkdir()
    (root / "agents" / "alpha.agent").write_text(ALPHA, encoding="utf-8")
    (root / "agents" / "beta.agent").write_text(BETA, encoding="utf-8")
    (root / "app.py").write_text(APP, encoding="utf-8")
    result = generate_path(root)
    assert result.ok, (result.errors, [d.message for d in result.diagnostics])
    return root


def test_mypy_accepts_another_agents_handler_and_rejects_the_rest(project: Path) -> None:
    done = subprocess.run(
        [
            sys.executable, "-m", "mypy", "--strict", "--python-version", "3.10",
            "--cache-dir", str(REPO / ".mypy_cache" / "two_agents"),
            "--no-error-summary", "--hide-error-context", "app.py", "generated",
        ],
        cwd=project, env=dict(os.environ), capture_output=True, text=True, timeout=300,
        check=False,
    )  # fmt: skip
    reported: dict[int, list[str]] = {}
    for line in done.stdout.splitlines():
        match = _MYPY_LINE.match(line)
        if match:
            reported.setdefault(int(match["line"]), []).append(match["msg"])
    expected = {
        number: found.group(1)
        for number, line in enumerate(APP.splitlines(), 1)
        if (found := _MARK.search(line))
    }
    assert len(expected) == 3
    assert set(reported) == set(expected), done.stdout + done.stderr
    for number, text in expected.items():
        assert any(text in m for m in reported[number]), (number, reported[number])
    assert "generated/" not in done.stdout, done.stdout


def test_at_run_time_a_method_for_an_intent_the_agent_lacks_is_warned_of(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(project))
    for name in [m for m in sys.modules if m == "generated" or m.startswith("generated.")]:
        monkeypatch.delitem(sys.modules, name)
    import importlib

    alpha: Any = importlib.import_module("generated.alpha_types")
    beta: Any = importlib.import_module("generated.beta_types")

    class Log(alpha.AuwgentBaseIntentHandler):  # type: ignore[misc]
        async def error(self, intent: Any, agent_name: str) -> None:
            pass

    class Notes(alpha.AuwgentBaseIntentHandler):  # type: ignore[misc]
        async def Note(self, intent: Any, agent_name: str) -> None:
            pass

    agent = beta.auwgent({"apiKeys": {"geminiApiKey": "k"}})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        agent.on_intent(Log)  # every intent it handles is Beta's too: no warning
    with pytest.warns(UserWarning, match="intent handler method 'Note' matches no intent"):
        agent.on_intent(Notes)
    alpha.auwgent({"apiKeys": {"geminiApiKey": "k"}}).on_intent(Notes)
