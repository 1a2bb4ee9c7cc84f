"""A conversation continued across runs and processes through the session-store middleware."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from auwgent import __version__
from auwgent.compiler.pipeline import compile_sources
from auwgent.ir import dumps_ir
from auwgent.runtime.agent import Agent, create_agent
from auwgent.runtime.stores import (
    JSONFileSessionStore,
    SessionStore,
    SessionStoreMiddleware,
    SQLiteSessionStore,
)
from auwgent.testing import OfflineModel, ScriptedModel

CHAT = """
agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "You are a helpful assistant. Be polite."
    }
}
"""


def _ir_text() -> str:
    result = compile_sources({"main.agent": CHAT})
    assert result.ok, [d.message for d in result.errors]
    return dumps_ir(result.documents["main.agent"])


def _agent(ir_text: str, provider: Any, store: SessionStore) -> Agent:
    doc = json.loads(ir_text)
    config = {"provider": provider, "middleware": [SessionStoreMiddleware(store)]}
    return create_agent(
        ir_text, config, ir_hash=doc["hash"], compiler_version=__version__, ir_version=1
    )


# The second run happens in another process, as a separate worker would serve it.
_SECOND_PROCESS = textwrap.dedent(
    """
    import asyncio, json, sys
    from auwgent import __version__
    from auwgent.runtime.agent import create_agent
    from auwgent.runtime.stores import SessionStoreMiddleware, SQLiteSessionStore
    from auwgent.testing import OfflineModel

    ir_path, db_path, text = sys.argv[1], sys.argv[2], sys.argv[3]
    ir_text = open(ir_path, encoding="utf-8").read()
    model = OfflineModel()
    config = {"provider": model,
              "middleware": [SessionStoreMiddleware(SQLiteSessionStore(db_path))]}
    agent = create_agent(ir_text, config, ir_hash=json.loads(ir_text)["hash"],
                         compiler_version=__version__, ir_version=1)
    asyncio.run(agent.run(text, conversation_id="c1"))
    seen = [m.content for m in model.requests[-1].messages if m.role == "user"]
    print(json.dumps(seen))
    """
)


def _user_inputs(model: OfflineModel) -> list[str]:
    return [m.content for m in model.requests[-1].messages if m.role == "user"]


async def test_three_runs_in_two_processes_continue_one_conversation(tmp_path: Path) -> None:
    ir_text = _ir_text()
    ir_path = tmp_path / "main.ir.json"
    ir_path.write_text(ir_text, encoding="utf-8")
    db = tmp_path / "sessions.db"

    first_model = OfflineModel()
    await _agent(ir_text, first_model, SQLiteSessionStore(db)).run("first", conversation_id="c1")
    await _agent(ir_text, OfflineModel(), SQLiteSessionStore(db)).run("other", conversation_id="c2")
    assert _user_inputs(first_model) == ["first"]

    second = subprocess.run(
        [sys.executable, "-c", _SECOND_PROCESS, str(ir_path), str(db), "second"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert second.returncode == 0, second.stderr
    # The other process's model saw the first run's input: the session came from the store.
    assert json.loads(second.stdout) == ["first", "second"]

    third_model = OfflineModel()
    store = SQLiteSessionStore(db)
    session = await _agent(ir_text, third_model, store).run("third", conversation_id="c1")
    assert _user_inputs(third_model) == ["first", "second", "third"]
    assert [t["input"]["text"] for t in session["turns"]] == ["first", "second", "third"]
    saved = await store.load("c1")
    assert saved is not None
    assert [t["input"]["text"] for t in saved["turns"]] == ["first", "second", "third"]
    assert [t["status"] for t in saved["turns"]] == ["complete"] * 3
    assert await store.revision("c1") == 3
    other = await store.load("c2")
    assert other is not None and [t["input"]["text"] for t in other["turns"]] == ["other"]


async def test_a_failed_run_is_saved_and_the_conversation_goes_on(tmp_path: Path) -> None:
    ir_text = _ir_text()
    store = JSONFileSessionStore(tmp_path / "sessions")
    failing = ScriptedModel([ScriptedModel.fail("service unavailable", status=503)])
    await _agent(ir_text, failing, store).run("first", conversation_id="c1")
    saved = await store.load("c1")
    assert saved is not None and saved["turns"][0]["status"] == "error"

    model = OfflineModel()
    session = await _agent(ir_text, model, store).run("second", conversation_id="c1")
    assert [t["input"]["text"] for t in session["turns"]] == ["first", "second"]
    saved = await store.load("c1")
    assert saved is not None and [t["status"] for t in saved["turns"]] == ["error", "complete"]


async def test_runs_without_a_conversation_id_are_not_stored(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "sessions.db")
    await _agent(_ir_text(), OfflineModel(), store).run("hello")
    assert not (tmp_path / "sessions.db").exists()


async def test_a_corrupt_stored_session_fails_the_run_clearly_and_stays_untouched(
    tmp_path: Path,
) -> None:
    db = tmp_path / "sessions.db"
    store = SQLiteSessionStore(db)
    ir_text = _ir_text()
    await _agent(ir_text, OfflineModel(), store).run("first", conversation_id="c1")
    raw = sqlite3.connect(db, isolation_level=None)
    raw.execute("UPDATE auwgent_sessions SET session = 'garbage' WHERE key = 'c1'")
    raw.close()

    model = OfflineModel()
    agent = _agent(ir_text, model, store)
    errors: list[Any] = []
    agent.on_intent(
        lambda name, value, agent_name: errors.append(value) if name == "error" else None
    )
    session = await agent.run("second", conversation_id="c1")

    assert model.requests == []  # the run stopped before any model call
    assert any("is corrupt: not valid JSON" in str(e) for e in errors)
    assert session["turns"][-1]["status"] == "error"
    raw = sqlite3.connect(db)
    assert raw.execute("SELECT session FROM auwgent_sessions").fetchone()[0] == "garbage"
    raw.close()


async def test_the_middleware_class_alone_uses_the_default_sqlite_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    ir_text = _ir_text()
    doc = json.loads(ir_text)
    config = {"provider": "offline", "middleware": [SessionStoreMiddleware]}
    for text in ("one", "two"):
        agent = create_agent(
            ir_text, config, ir_hash=doc["hash"], compiler_version=__version__, ir_version=1
        )
        session = await agent.run(text, conversation_id="c1")
    assert [t["input"]["text"] for t in session["turns"]] == ["one", "two"]
    assert (tmp_path / "auwgent_sessions.db").exists()


HANDOFF = """
helper Support {
    description: "Handles support questions"
    default config {
        model: openai("gpt-4o")
        prompt: "You are the support desk."
    }
}

agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "You are the front desk."
    }
    helpers {
        Support handoff user
    }
}
"""

# Both processes answer with the same function of the request: the front desk hands over to
# Support, Support answers with a text quoting the last message it was sent.
_DESK_MODEL = textwrap.dedent(
    """
    from auwgent.testing import ScriptedModel

    def desk(request):
        if "support desk" in request.system:
            return ScriptedModel.text("Support: " + request.messages[-1].content)
        return ScriptedModel.block("helper_call", "Support", {"input": "please help"})
    """
)

_HANDOFF_SECOND_PROCESS = _DESK_MODEL + textwrap.dedent(
    """
    import asyncio, json, sys
    from auwgent import __version__
    from auwgent.runtime.agent import create_agent
    from auwgent.runtime.stores import SessionStoreMiddleware, SQLiteSessionStore

    ir_text = open(sys.argv[1], encoding="utf-8").read()
    model = ScriptedModel(desk)
    config = {"provider": model,
              "middleware": [SessionStoreMiddleware(SQLiteSessionStore(sys.argv[2]))]}
    agent = create_agent(ir_text, config, ir_hash=json.loads(ir_text)["hash"],
                         compiler_version=__version__, ir_version=1)
    seen = []
    agent.on_intent(lambda name, value, agent_name: seen.append([name, agent_name]))
    asyncio.run(agent.run("my order is late", conversation_id="c1"))
    print(json.dumps({"intents": seen, "first_system": model.requests[0].system}))
    """
)


async def test_a_handed_off_conversation_resumes_in_the_helper_in_another_process(
    tmp_path: Path,
) -> None:
    result = compile_sources({"main.agent": HANDOFF})
    assert result.ok, [d.message for d in result.errors]
    ir_text = dumps_ir(result.documents["main.agent"])
    ir_path = tmp_path / "main.ir.json"
    ir_path.write_text(ir_text, encoding="utf-8")
    db = tmp_path / "sessions.db"
    scope: dict[str, Any] = {}
    exec(_DESK_MODEL, scope)  # the very code the other process runs, so both answer alike

    first = await _agent(ir_text, ScriptedModel(scope["desk"]), SQLiteSessionStore(db)).run(
        "hi", conversation_id="c1"
    )
    assert first["stack"][-1]["agent"] == "Support"

    second = subprocess.run(
        [sys.executable, "-c", _HANDOFF_SECOND_PROCESS, str(ir_path), str(db)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert second.returncode == 0, second.stderr
    out = json.loads(second.stdout)
    # The other process started in the helper: its first model call was the helper's.
    assert "support desk" in out["first_system"]
    assert ["response_text", "Support"] in out["intents"]
    assert not any(name == "helper_call" for name, _ in out["intents"])
    saved = await SQLiteSessionStore(db).load("c1")
    assert saved is not None
    assert [t["input"]["text"] for t in saved["turns"]] == ["hi", "my order is late"]
