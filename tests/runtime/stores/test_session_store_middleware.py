"""SessionStoreMiddleware through the call sequence the engine makes around each run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from auwgent.runtime.session import Session, new_session, new_turn
from auwgent.runtime.stores import (
    JSONFileSessionStore,
    MemorySessionStore,
    SessionStoreError,
    SessionStoreMiddleware,
    SQLiteSessionStore,
)


async def _fake_run(
    middleware: SessionStoreMiddleware, text: str, ctx: dict[str, Any], *, fail: bool = False
) -> Session:
    """What the engine does around one run: onRunStart, append the input, onRunComplete."""
    session = await middleware.onRunStart(new_session("Main"), ctx)
    turn = new_turn(text, "Main")
    turn["status"] = "error" if fail else "complete"
    turn["error"] = "model failed" if fail else None
    session["turns"].append(turn)
    await middleware.onRunComplete(session, ctx)
    return session


def _ctx(conversation: str | None, active: str = "Main") -> dict[str, Any]:
    return {"conversation_id": conversation, "activeAgent": active, "rootAgent": "Main"}


def _inputs(session: Session | None) -> list[str]:
    assert session is not None
    return [turn["input"]["text"] for turn in session["turns"]]


async def test_each_run_continues_the_stored_conversation() -> None:
    store = MemorySessionStore()
    middleware = SessionStoreMiddleware(store)
    await _fake_run(middleware, "hello", _ctx("c1"))
    await _fake_run(middleware, "other conversation", _ctx("c2"))
    last = await _fake_run(middleware, "again", _ctx("c1"))
    assert _inputs(last) == ["hello", "again"]
    assert _inputs(await store.load("c1")) == ["hello", "again"]
    assert _inputs(await store.load("c2")) == ["other conversation"]


async def test_failed_runs_are_saved_too() -> None:
    store = MemorySessionStore()
    middleware = SessionStoreMiddleware(store)
    await _fake_run(middleware, "boom", _ctx("c1"), fail=True)
    saved = await store.load("c1")
    assert saved is not None and saved["turns"][0]["status"] == "error"


async def test_without_a_conversation_id_nothing_is_loaded_or_saved() -> None:
    store = MemorySessionStore()
    middleware = SessionStoreMiddleware(store)
    given = new_session("Main")
    assert await middleware.onRunStart(given, {"activeAgent": "Main"}) is given
    await _fake_run(middleware, "hi", _ctx(None))
    await _fake_run(middleware, "hi", _ctx(""))
    assert store.keys() == []


async def test_a_conversation_handed_to_a_helper_is_still_loaded_and_saved() -> None:
    # After `handoff user` the helper answers the next run, so the run hooks see it active.
    store = MemorySessionStore()
    middleware = SessionStoreMiddleware(store)
    await _fake_run(middleware, "root input", _ctx("c1"))
    await _fake_run(middleware, "helper input", _ctx("c1", "Analyzer"))
    assert _inputs(await store.load("c1")) == ["root input", "helper input"]


async def test_a_custom_context_key_and_non_string_ids() -> None:
    store = MemorySessionStore()
    middleware = SessionStoreMiddleware(store, key="userId", name="per-user")
    await _fake_run(middleware, "hi", {"userId": 42})
    assert store.keys() == ["42"]
    assert middleware.name == "per-user"
    assert middleware.target is None


async def test_the_default_store_is_sqlite_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    middleware = SessionStoreMiddleware()
    assert isinstance(middleware.store, SQLiteSessionStore)
    assert middleware.name == "session-store"
    await _fake_run(middleware, "one", _ctx("c1"))
    await _fake_run(middleware, "two", _ctx("c1"))
    assert (tmp_path / "auwgent_sessions.db").exists()
    reopened = SQLiteSessionStore(tmp_path / "auwgent_sessions.db")
    assert _inputs(await reopened.load("c1")) == ["one", "two"]


async def test_an_unusable_stored_session_is_reported_and_never_overwritten(
    tmp_path: Path,
) -> None:
    store = JSONFileSessionStore(tmp_path)
    middleware = SessionStoreMiddleware(store)
    await _fake_run(middleware, "first", _ctx("c1"))
    path = store.path_for("c1")
    path.write_text("{half a sess", encoding="utf-8")
    with pytest.raises(SessionStoreError, match="corrupt"):
        await middleware.onRunStart(new_session("Main"), _ctx("c1"))
    # The engine still calls onRunComplete after the failed start: nothing is written.
    with pytest.raises(SessionStoreError, match="'c1' was not saved"):
        await middleware.onRunComplete(new_session("Main"), _ctx("c1"))
    assert path.read_text(encoding="utf-8") == "{half a sess"
    # Other conversations are unaffected, and a repaired file is used again.
    await _fake_run(middleware, "hello", _ctx("c2"))
    path.unlink()
    assert _inputs(await _fake_run(middleware, "fresh", _ctx("c1"))) == ["fresh"]


async def test_a_session_of_another_agent_is_refused_and_kept() -> None:
    store = MemorySessionStore()
    other = new_session("Billing")
    await store.save("c1", other)
    middleware = SessionStoreMiddleware(store)
    with pytest.raises(SessionStoreError, match="belongs to agent 'Billing', not 'Main'"):
        await middleware.onRunStart(new_session("Main"), _ctx("c1"))
    with pytest.raises(SessionStoreError, match="not saved"):
        await middleware.onRunComplete(new_session("Main"), _ctx("c1"))
    assert await store.load("c1") == other
