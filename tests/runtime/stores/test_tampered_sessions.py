"""Tampered stored sessions: refused with the field named, never forwarded, never overwritten.

Unit-level through ``check_session``, then through each store (the raw stored JSON edited
behind its back), then through a generated agent that runs on the store.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import re
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from auwgent.codegen.python import render_python
from auwgent.compiler.pipeline import compile_sources
from auwgent.errors import ConfigError
from auwgent.runtime.session import Session, check_session
from auwgent.runtime.stores import (
    JSONFileSessionStore,
    MemorySessionStore,
    SessionStore,
    SessionStoreError,
    SessionStoreMiddleware,
    SQLiteSessionStore,
    StoredSessionError,
)
from auwgent.testing import OfflineModel

AGENTS = ("Main", "Analyzer")


def _valid() -> dict[str, Any]:
    """A session as the runtime writes it: a handoff frame, a tool round in a turn."""
    return {
        "version": 1,
        "agent": "Main",
        "system_prompt": "You are kind.",
        "stack": [
            {"agent": "Main", "config": None},
            {
                "agent": "Analyzer",
                "config": "default",
                "handoff": "user",
                "parent": "Main",
                "tools": ["lookup"],
                "messages": [{"role": "user", "content": "hi"}],
            },
        ],
        "turns": [
            {
                "id": "t1",
                "input": {"text": "hello"},
                "agent": "Main",
                "messages": [
                    {
                        "role": "assistant",
                        "content": "",
                        "tool_calls": [{"id": "c1", "name": "lookup", "arguments": "{}"}],
                    },
                    {"role": "tool", "content": "42", "tool_call_id": "c1", "name": "lookup"},
                    {"role": "assistant", "content": "It is 42."},
                ],
                "intents": [{"name": "response_text", "value": {"text": "It is 42."}}],
                "status": "complete",
                "error": None,
                "output": {"text": "It is 42."},
            }
        ],
    }


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """A tampering: set the value at a dotted path (``turns.0.messages.2.role``)."""

    def tamper(session: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = session
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        if isinstance(target, list):
            target[int(last)] = value
        elif value is _DELETE:
            del target[last]
        else:
            target[last] = value

    return tamper


_DELETE = object()

TAMPERED = [
    ("version", True, "session.version: this runtime reads session version 1, got True"),
    ("version", "1", "session.version: .* got '1'"),
    ("version", 1.0, "session.version: .* got 1.0"),
    ("revision", -1, "session.revision: expected a non-negative integer, got -1"),
    ("revision", True, "session.revision: expected a non-negative integer, got True"),
    ("system_prompt", 7, "session.system_prompt: expected a string, got int"),
    ("agent", ["Main"], "session.agent: expected an agent name, got list"),
    ("stack.0", "Main", r"session.stack\[0\]: expected a frame object, got str"),
    ("stack.0.agent", None, r"session.stack\[0\].agent: expected an agent name, got null"),
    ("stack.1.tools", 5, r"session.stack\[1\].tools: expected 'all', 'none' or a list"),
    ("stack.1.config", 3, r"session.stack\[1\].config: expected a name, got int"),
    ("stack.1.messages.0.role", "system", r"session.stack\[1\].messages\[0\].role: expected one"),
    ("turns", {}, "session.turns: expected a list, got dict"),
    ("turns.0", None, r"session.turns\[0\]: expected a turn object, got null"),
    ("turns.0.input", _DELETE, r"session.turns\[0\].input: expected an input object, got null"),
    ("turns.0.input.text", 5, r"session.turns\[0\].input.text: expected a string, got int"),
    ("turns.0.status", 1, r"session.turns\[0\].status: expected a string, got int"),
    ("turns.0.messages", "x", r"session.turns\[0\].messages: expected a list, got str"),
    ("turns.0.messages.1", 3, r"session.turns\[0\].messages\[1\]: expected a message object"),
    ("turns.0.messages.2.role", "system", r"turns\[0\].messages\[2\].role: .* got 'system'"),
    ("turns.0.messages.2.role", "developer", r"messages\[2\].role: .* got 'developer'"),
    ("turns.0.messages.2.content", {"a": 1}, r"messages\[2\].content: expected a string"),
    ("turns.0.messages.1.tool_call_id", 9, r"messages\[1\].tool_call_id: expected a string"),
    ("turns.0.messages.0.tool_calls", {}, r"messages\[0\].tool_calls: expected a list"),
    ("turns.0.messages.0.tool_calls.0.arguments", {}, r"tool_calls\[0\].arguments: expected a"),
    ("turns.0.messages.0.reasoning", "x", r"messages\[0\].reasoning: expected a list, got str"),
    ("turns.0.messages.0.reasoning", [7], r"reasoning\[0\]: expected a reasoning block"),
    ("turns.0.messages.0.reasoning", [{}], r"reasoning\[0\].type: expected a string, got null"),
    ("turns.0.intents", "x", r"session.turns\[0\].intents: expected a list, got str"),
    ("turns.0.intents.0", [], r"session.turns\[0\].intents\[0\]: expected an intent object"),
]


@pytest.mark.parametrize(("path", "value", "message"), TAMPERED)
def test_a_tampered_session_is_refused_naming_the_field(
    path: str, value: Any, message: str
) -> None:
    session = _valid()
    _set(path, value)(session)
    with pytest.raises(ConfigError, match=message):
        check_session(session, "Main", AGENTS)


def test_the_stack_is_checked_against_the_ir_and_the_root() -> None:
    ghost = _valid()
    ghost["stack"][1]["agent"] = "Ghost"
    with pytest.raises(ConfigError, match=r"stack\[1\].agent: agent 'Ghost' is not part"):
        check_session(ghost, "Main", AGENTS)
    check_session(ghost, None)  # a store does not know the IR: only the shape is checked
    upside_down = _valid()
    upside_down["stack"].reverse()
    with pytest.raises(ConfigError, match=r"stack\[0\].agent: the bottom of the stack is"):
        check_session(upside_down, "Main", AGENTS)


def test_a_valid_session_passes_and_keeps_its_revision() -> None:
    session = _valid()
    session["revision"] = 3
    copied = check_session(session, "Main", AGENTS)
    assert copied == session and copied is not session
    assert copied["turns"] is not session["turns"]
    session["revision"] = 0
    assert check_session(session, "Main")["revision"] == 0  # type: ignore[typeddict-item]


# -- through the stores ----------------------------------------------------------------------


def _stores(tmp_path: Path) -> dict[str, tuple[SessionStore, Callable[[str, Any], None]]]:
    """Each store, with a function that rewrites its raw stored session behind its back."""
    sqlite_store = SQLiteSessionStore(tmp_path / "s.db")
    json_store = JSONFileSessionStore(tmp_path / "files")
    memory = MemorySessionStore()

    def sqlite_write(key: str, session: Any) -> None:
        with sqlite3.connect(sqlite_store.path) as db:
            db.execute(
                "UPDATE auwgent_sessions SET session = ? WHERE key = ?", (json.dumps(session), key)
            )

    def json_write(key: str, session: Any) -> None:
        envelope = {"key": key, "updated_at": "now", "session": session}
        json_store.path_for(key).write_text(json.dumps(envelope), encoding="utf-8")

    def memory_write(key: str, session: Any) -> None:
        memory._texts[key] = json.dumps(session)

    return {
        "sqlite": (sqlite_store, sqlite_write),
        "json": (json_store, json_write),
        "memory": (memory, memory_write),
    }


@pytest.fixture(params=["sqlite", "json", "memory"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.mark.parametrize(("path", "value", "message"), TAMPERED[:: len(TAMPERED) // 8])
async def test_each_store_refuses_a_tampered_row_on_load(
    tmp_path: Path, kind: str, path: str, value: Any, message: str
) -> None:
    store, write = _stores(tmp_path)[kind]
    await store.save("c1", _valid())  # type: ignore[arg-type]
    tampered = _valid()
    _set(path, value)(tampered)
    write("c1", tampered)
    with pytest.raises(StoredSessionError, match=message) as caught:
        await store.load("c1")
    assert isinstance(caught.value, ConfigError)  # a bad session is a ConfigError everywhere
    assert "'c1'" in str(caught.value)


async def test_each_store_refuses_to_save_what_it_could_not_load(tmp_path: Path, kind: str) -> None:
    store, _ = _stores(tmp_path)[kind]
    tampered = _valid()
    tampered["turns"][0]["messages"][2]["role"] = "system"
    with pytest.raises(SessionStoreError, match="cannot save session 'c1'.*role"):
        await store.save("c1", tampered)  # type: ignore[arg-type]
    assert await store.load("c1") is None


# -- through a generated agent ----------------------------------------------------------------

SOURCE = """
agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "You are a helpful assistant."
    }
}
"""


def _generated(tmp_path: Path) -> ModuleType:
    result = compile_sources({"main.agent": SOURCE})
    assert result.ok, [d.message for d in result.diagnostics]
    path = tmp_path / "tampered_main_types.py"
    path.write_text(render_python(result.documents["main.agent"]))
    spec = importlib.util.spec_from_file_location("tampered_main_types", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["tampered_main_types"] = module
    spec.loader.exec_module(module)
    return module


class _RawStore:
    """A store of the application's own that hands back whatever JSON it holds, unchecked."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}

    async def load(self, key: str) -> Session | None:
        text = self.texts.get(key)
        return None if text is None else json.loads(text)  # type: ignore[no-any-return]

    async def save(self, key: str, session: Session) -> None:
        self.texts[key] = json.dumps(session)


def _all_stores(tmp_path: Path) -> dict[str, tuple[SessionStore, Callable[[str, Any], None]]]:
    stores = _stores(tmp_path)
    raw = _RawStore()

    def raw_write(key: str, session: Any) -> None:
        raw.texts[key] = json.dumps(session)

    stores["custom"] = (raw, raw_write)
    return stores


async def _raw(store: SessionStore, key: str) -> Any:
    """What the store holds, read around its checks."""
    if isinstance(store, SQLiteSessionStore):
        with sqlite3.connect(store.path) as db:
            return json.loads(db.execute("SELECT session FROM auwgent_sessions").fetchone()[0])
    if isinstance(store, JSONFileSessionStore):
        return json.loads(store.path_for(key).read_text(encoding="utf-8"))["session"]
    if isinstance(store, MemorySessionStore):
        return json.loads(store._texts[key])
    assert isinstance(store, _RawStore)
    return json.loads(store.texts[key])


TAMPERINGS = {
    # caught by the store's own checks on load (the custom store has none: the middleware's)
    "role": ("turns.1.messages.0.role", "system", r"turns\[1\].messages\[0\].role"),
    "version": ("version", True, "session.version"),
    "input": ("turns.2.input", _DELETE, r"session.turns\[2\].input"),
    # passes every store (they do not know the IR): caught by the engine
    "helper": ("stack.0.agent", "Ghost", r"stack\[0\].agent: agent 'Ghost' is not part"),
}


@pytest.mark.parametrize("store_kind", ["sqlite", "json", "memory", "custom"])
@pytest.mark.parametrize("tampering", sorted(TAMPERINGS))
async def test_a_tampered_conversation_is_kept_and_the_run_ends_with_a_clear_error(
    tmp_path: Path, store_kind: str, tampering: str
) -> None:
    module = _generated(tmp_path)
    store, write = _all_stores(tmp_path)[store_kind]
    model = OfflineModel()
    agent = module.auwgent({"provider": model, "middleware": [SessionStoreMiddleware(store)]})
    for text in ("one", "two", "three"):
        await agent.run(text, conversation_id="c1")
    tampered = await _raw(store, "c1")
    assert len(tampered["turns"]) == 3
    path, value, message = TAMPERINGS[tampering]
    _set(path, value)(tampered)
    write("c1", tampered)
    kept = copy.deepcopy(tampered)
    calls = len(model.requests)

    errors: list[str] = []
    agent.on_intent(lambda name, v, _: errors.append(v["message"]) if name == "error" else None)
    session = await agent.run("four", conversation_id="c1")

    assert len(model.requests) == calls  # nothing of it reached a provider
    assert session["turns"][-1]["status"] == "error"
    assert errors, "the run must end with an error intent"
    assert re.search(message, errors[0]), errors[0]
    assert not any(name in errors[0] for name in ("KeyError", "TypeError", "Traceback"))
    assert "was not saved" in errors[-1] and "kept as it is" in errors[-1]
    assert await _raw(store, "c1") == kept  # the three stored turns are all still there

    # Repaired (here: the tampering undone by hand), the conversation goes on where it was.
    write("c1", json.loads(json.dumps(_repaired(kept, tampering))))
    errors.clear()
    session = await agent.run("five", conversation_id="c1")
    assert errors == []
    assert [t["input"]["text"] for t in session["turns"]] == ["one", "two", "three", "five"]


def _repaired(session: dict[str, Any], tampering: str) -> dict[str, Any]:
    fixed = copy.deepcopy(session)
    if tampering == "role":
        fixed["turns"][1]["messages"][0]["role"] = "assistant"
    elif tampering == "version":
        fixed["version"] = 1
    elif tampering == "input":
        fixed["turns"][2]["input"] = {"text": "three"}
    else:
        fixed["stack"][0]["agent"] = "Main"
    return fixed


async def test_a_session_passed_explicitly_is_checked_too(tmp_path: Path) -> None:
    module = _generated(tmp_path)
    model = OfflineModel()
    agent = module.auwgent({"provider": model})
    session = await agent.run("one")
    session["turns"][0]["messages"][0]["role"] = "system"
    with pytest.raises(ConfigError, match=r"session.turns\[0\].messages\[0\].role"):
        await agent.run("two", session=session)
    assert len(model.requests) == 1


class _FailsAtStart:
    """A middleware ahead of the store's that fails every run's start."""

    async def onRunStart(self, session: Session, ctx: Any) -> None:
        raise RuntimeError("the database of users is down")


async def test_a_run_that_never_loaded_does_not_save_over_the_conversation(
    tmp_path: Path,
) -> None:
    module = _generated(tmp_path)
    store = SQLiteSessionStore(tmp_path / "s.db")
    middleware = SessionStoreMiddleware(store)
    agent = module.auwgent({"provider": OfflineModel(), "middleware": [middleware]})
    for text in ("one", "two"):
        await agent.run(text, conversation_id="c1")
    before = await _raw(store, "c1")
    failing = module.auwgent(
        {"provider": OfflineModel(), "middleware": [_FailsAtStart(), middleware]}
    )
    errors: list[str] = []
    failing.on_intent(lambda name, v, _: errors.append(v["message"]) if name == "error" else None)
    await failing.run("three", conversation_id="c1")
    assert "the database of users is down" in errors[0]
    assert "was not saved: the run ended before the stored session was loaded" in errors[-1]
    assert await _raw(store, "c1") == before
    assert middleware._loaded == {}  # nothing left behind by the runs
