"""Session stores: round trips, concurrency across tasks and processes, atomic saves."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from auwgent.errors import ConflictError
from auwgent.runtime.session import Session, new_session, new_turn
from auwgent.runtime.stores import (
    JSONFileSessionStore,
    MemorySessionStore,
    SessionStore,
    SessionStoreError,
    SQLiteSessionStore,
)

StoreFactory = Callable[[Path], SessionStore]

FACTORIES: dict[str, StoreFactory] = {
    "sqlite": lambda tmp: SQLiteSessionStore(tmp / "sessions.db"),
    "json": lambda tmp: JSONFileSessionStore(tmp / "sessions"),
    "memory": lambda tmp: MemorySessionStore(),
}


@pytest.fixture(params=sorted(FACTORIES))
def store(request: pytest.FixtureRequest, tmp_path: Path) -> SessionStore:
    return FACTORIES[request.param](tmp_path)


@pytest.fixture(params=["sqlite", "json"])
def disk_store(request: pytest.FixtureRequest, tmp_path: Path) -> SessionStore:
    return FACTORIES[request.param](tmp_path)


def _session(*texts: str) -> Session:
    session = new_session("Main")
    for text in texts:
        turn = new_turn(text, "Main")
        turn["status"] = "complete"
        turn["output"] = {"text": f"reply to {text}", "é": ["ünïcode", 1.5, None, True]}
        session["turns"].append(turn)
    session["system_prompt"] = "You are helpful."
    return session


def _after(previous: Session, *texts: str) -> Session:
    """A session meant to replace ``previous`` (based on the revision ``previous`` got)."""
    session = _session(*texts)
    session["revision"] = previous["revision"]
    return session


async def test_round_trip_and_missing_key(store: SessionStore) -> None:
    assert await store.load("nobody") is None
    session = _session("hello", "again")
    await store.save("conv-1", session)
    loaded = await store.load("conv-1")
    assert loaded == session
    assert loaded is not session
    assert json.loads(json.dumps(loaded)) == session


async def test_save_replaces_the_previous_session(store: SessionStore) -> None:
    first = _session("one")
    await store.save("k", first)
    assert first["revision"] == 1
    second = _after(first, "one", "two")
    await store.save("k", second)
    assert second["revision"] == 2
    loaded = await store.load("k")
    assert loaded is not None and loaded["revision"] == 2
    assert [t["input"]["text"] for t in loaded["turns"]] == ["one", "two"]


async def test_a_save_based_on_a_stale_revision_is_a_conflict(store: SessionStore) -> None:
    await store.save("k", _session("one"))
    mine, theirs = await store.load("k"), await store.load("k")
    assert mine is not None and theirs is not None and mine["revision"] == 1
    mine["turns"].append(new_turn("mine", "Main"))
    theirs["turns"].append(new_turn("theirs", "Main"))
    await store.save("k", theirs)
    with pytest.raises(ConflictError, match="'k' was changed by another run"):
        await store.save("k", mine)
    assert mine["revision"] == 1  # untouched by the failed save
    with pytest.raises(ConflictError, match="never loaded"):
        await store.save("k", _session("fresh"))  # no revision: only a new key may be created
    loaded = await store.load("k")
    assert loaded is not None and loaded["revision"] == 2
    assert [t["input"]["text"] for t in loaded["turns"]] == ["one", "theirs"]
    with pytest.raises(ConflictError):
        await store.save("new-key", {**_session("x"), "revision": 4})  # type: ignore[typeddict-item]


async def test_concurrent_saves_of_different_keys_from_many_tasks(store: SessionStore) -> None:
    async def conversation(n: int) -> None:
        revision = None
        for round_ in range(3):
            session = _session(*[f"{n}:{i}" for i in range(round_ + 1)])
            if revision is not None:
                session["revision"] = revision
            await store.save(f"user-{n}", session)
            revision = session["revision"]

    await asyncio.gather(*(conversation(n) for n in range(20)))
    for n in range(20):
        loaded = await store.load(f"user-{n}")
        assert loaded is not None
        assert [t["input"]["text"] for t in loaded["turns"]] == [f"{n}:0", f"{n}:1", f"{n}:2"]


_WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from auwgent.runtime.session import new_session, new_turn
    from auwgent.runtime.stores import JSONFileSessionStore, SQLiteSessionStore

    kind, where, prefix, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    store = SQLiteSessionStore(where) if kind == "sqlite" else JSONFileSessionStore(where)

    async def main() -> None:
        for i in range(count):
            session = new_session("Main")
            session["turns"].append(new_turn(f"{prefix}-{i}", "Main"))
            await store.save(f"{prefix}-{i}", session)

    asyncio.run(main())
    """
)


@pytest.mark.parametrize("kind", ["sqlite", "json"])
async def test_two_processes_write_different_keys_at_the_same_time(
    kind: str, tmp_path: Path
) -> None:
    where = tmp_path / ("sessions.db" if kind == "sqlite" else "sessions")
    writers = [
        subprocess.Popen([sys.executable, "-c", _WRITER, kind, str(where), prefix, "15"])
        for prefix in ("a", "b")
    ]
    assert [w.wait(timeout=60) for w in writers] == [0, 0]
    store = FACTORIES[kind](tmp_path)
    for prefix in ("a", "b"):
        for i in range(15):
            loaded = await store.load(f"{prefix}-{i}")
            assert loaded is not None
            assert loaded["turns"][0]["input"]["text"] == f"{prefix}-{i}"


async def test_a_value_that_is_not_json_fails_and_keeps_the_old_session(
    store: SessionStore,
) -> None:
    old = _session("old")
    await store.save("k", old)
    broken: Any = _session("new")
    broken["turns"][0]["output"] = {"ok": 1, "bad": object()}
    with pytest.raises(SessionStoreError, match="not JSON-serialisable"):
        await store.save("k", broken)
    assert await store.load("k") == old


async def test_json_store_failure_during_replace_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = JSONFileSessionStore(tmp_path / "s")
    old = _session("old")
    await store.save("k", old)

    def crash(src: Any, dst: Any) -> None:
        raise OSError("disk vanished")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError, match="disk vanished"):
        await store.save("k", _after(old, "new"))
    monkeypatch.undo()
    assert await store.load("k") == old
    # The temporary file was cleaned up: only the session file is left.
    assert [p.name for p in (tmp_path / "s").iterdir()] == [store.path_for("k").name]


async def test_sqlite_save_that_cannot_get_the_lock_fails_cleanly_and_keeps_the_old_row(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.db"
    store = SQLiteSessionStore(path, timeout=0.1)
    old = _session("old")
    await store.save("k", old)
    new = _after(old, "new")
    other = sqlite3.connect(path, isolation_level=None)  # another writer holds the file
    other.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(SessionStoreError, match="locked"):
            await store.save("k", new)
        # WAL: reading while another writer holds the lock still works.
        assert await store.load("k") == old
    finally:
        other.execute("ROLLBACK")
        other.close()
    await store.save("k", new)
    assert await store.load("k") == new


async def test_sqlite_rows_carry_revision_and_update_time_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SQLiteSessionStore(path)
    assert await store.revision("k") is None
    session = _session("x")
    for _ in range(3):
        await store.save("k", session)  # save() moves the session's revision on
    assert await store.revision("k") == 3 == session["revision"]
    db = sqlite3.connect(path)
    try:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        version, updated = db.execute(
            "SELECT session_version, updated_at FROM auwgent_sessions WHERE key = 'k'"
        ).fetchone()
    finally:
        db.close()
    assert version == 1 and updated.endswith("+00:00")


async def test_delete(store: SessionStore) -> None:
    await store.save("k", _session("x"))
    await store.save("other", _session("y"))
    assert await store.delete("k") is True  # type: ignore[attr-defined]
    assert await store.load("k") is None
    assert await store.delete("k") is False  # type: ignore[attr-defined]
    assert await store.load("other") is not None


async def test_corrupt_sqlite_row_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SQLiteSessionStore(path)
    await store.save("k", _session("x"))
    db = sqlite3.connect(path, isolation_level=None)
    db.execute(
        "UPDATE auwgent_sessions SET session = '{\"version\": 1, \"stack\": [' WHERE key = 'k'"
    )
    db.close()
    with pytest.raises(SessionStoreError, match=r"'k' in .*s\.db is corrupt: not valid JSON"):
        await store.load("k")


async def test_corrupt_json_file_is_a_clear_error(tmp_path: Path) -> None:
    store = JSONFileSessionStore(tmp_path)
    await store.save("k", _session("x"))
    store.path_for("k").write_text("{oops", encoding="utf-8")
    with pytest.raises(SessionStoreError, match="is corrupt: not valid JSON"):
        await store.load("k")
    store.path_for("k").write_text('{"key": "k"}', encoding="utf-8")
    with pytest.raises(SessionStoreError, match="no 'session'"):
        await store.load("k")


@pytest.mark.parametrize(
    ("session", "message"),
    [
        ([1, 2], "session: expected a session object, got list"),
        ({"stack": [], "turns": []}, "session.version: .* got None"),
        (
            {"version": 99, "stack": [], "turns": []},
            "session.version: this runtime reads session version 1, got 99",
        ),
        ({"version": 1, "stack": [], "turns": {}}, "session.turns: expected a list, got dict"),
    ],
)
async def test_sessions_with_a_bad_shape_are_refused_on_save_and_on_load(
    tmp_path: Path, session: Any, message: str
) -> None:
    store = JSONFileSessionStore(tmp_path)
    with pytest.raises(SessionStoreError, match=message):
        await store.save("k", session)
    store.path_for("k").parent.mkdir(parents=True, exist_ok=True)
    store.path_for("k").write_text(json.dumps({"key": "k", "session": session}), encoding="utf-8")
    with pytest.raises(SessionStoreError, match=message):
        await store.load("k")


async def test_bad_keys_are_refused(store: SessionStore) -> None:
    with pytest.raises(SessionStoreError, match="non-empty string"):
        await store.save("", _session())
    with pytest.raises(SessionStoreError, match="non-empty string"):
        await store.load(None)  # type: ignore[arg-type]


async def test_json_file_names_are_safe_and_distinct(tmp_path: Path) -> None:
    directory = tmp_path / "sessions"
    store = JSONFileSessionStore(directory)
    keys = ["../../etc/passwd", "a/b", "a_b", "A", "a", "x" * 1000, "ünï côdé", ".", "..", "con"]
    for key in keys:
        await store.save(key, _session(key))
    names = {store.path_for(key).name for key in keys}
    assert len(names) == len(keys)
    assert all(len(name) < 100 for name in names)
    assert sorted(p.name for p in directory.iterdir()) == sorted(names)
    for key in keys:
        loaded = await store.load(key)
        assert loaded is not None and loaded["turns"][0]["input"]["text"] == key


async def test_sqlite_store_creates_nothing_until_used(tmp_path: Path) -> None:
    path = tmp_path / "new-dir" / "later.db"
    store = SQLiteSessionStore(path)
    assert not path.parent.exists()
    assert await store.load("k") is None
    assert path.exists()


async def test_unopenable_sqlite_path_is_a_clear_error(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path)  # a directory, not a database file
    with pytest.raises(SessionStoreError, match="cannot open session database"):
        await store.load("k")


def test_an_in_memory_sqlite_path_is_refused() -> None:
    with pytest.raises(ValueError, match="MemorySessionStore"):
        SQLiteSessionStore(":memory:")


def test_stores_satisfy_the_protocol(tmp_path: Path) -> None:
    for factory in FACTORIES.values():
        assert isinstance(factory(tmp_path), SessionStore)


# A process that dies in the middle of a save: the JSON store right before its rename, the
# SQLite store after writing the row but before COMMIT.
_CRASHING_SAVE = textwrap.dedent(
    """
    import asyncio, os, sqlite3, sys
    from auwgent.runtime.session import new_session, new_turn
    from auwgent.runtime.stores import JSONFileSessionStore, SQLiteSessionStore

    kind, where = sys.argv[1], sys.argv[2]
    real_connect = sqlite3.connect

    class DiesAtCommit:
        def __init__(self, db):
            self.db = db
        def execute(self, sql, *args):
            if sql == "COMMIT":
                os._exit(3)
            return self.db.execute(sql, *args)
        def __getattr__(self, name):
            return getattr(self.db, name)

    if kind == "sqlite":
        sqlite3.connect = lambda *a, **k: DiesAtCommit(real_connect(*a, **k))
        store = SQLiteSessionStore(where)
    else:
        os.replace = lambda src, dst: os._exit(3)
        store = JSONFileSessionStore(where)
    session = asyncio.run(store.load("k"))
    session["turns"].append(new_turn("new", "Main"))
    asyncio.run(store.save("k", session))
    """
)


@pytest.mark.parametrize("kind", ["sqlite", "json"])
async def test_a_process_dying_mid_save_loses_nothing_saved_before(
    kind: str, tmp_path: Path
) -> None:
    store = FACTORIES[kind](tmp_path)
    old = _session("old")
    await store.save("k", old)
    where = tmp_path / ("sessions.db" if kind == "sqlite" else "sessions")
    crashed = subprocess.run(
        [sys.executable, "-c", _CRASHING_SAVE, kind, str(where)], capture_output=True, timeout=60
    )
    assert crashed.returncode == 3, crashed.stderr
    assert await FACTORIES[kind](tmp_path).load("k") == old
    await store.save("k", _after(old, "after"))  # and the store still works
    loaded = await store.load("k")
    assert loaded is not None and loaded["turns"][0]["input"]["text"] == "after"


async def test_racing_saves_of_one_key_leave_one_whole_session(disk_store: SessionStore) -> None:
    candidates = [_session(*[f"v{n}"] * (n + 1)) for n in range(12)]
    results = await asyncio.gather(
        *(disk_store.save("same", s) for s in candidates), return_exceptions=True
    )
    # All of them were based on "nothing stored yet": exactly one may create the key.
    winners = [s for s, r in zip(candidates, results, strict=True) if r is None]
    assert len(winners) == 1
    assert all(isinstance(r, ConflictError) for r in results if r is not None)
    assert await disk_store.load("same") == winners[0]  # never half of a session
    if isinstance(disk_store, SQLiteSessionStore):
        assert await disk_store.revision("same") == 1
