"""Sessions with input parts (images, files) survive every store, large data by reference.

SQLite, Redis and PostgreSQL (real servers started by the test suite) keep part data past
``BLOB_THRESHOLD`` beside the session and put it back on load; the JSON-file and memory stores
keep it inline. A part past ``MAX_PART_BYTES`` is refused by ``save``, writing nothing.
"""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from auwgent.runtime.parts import MAX_PART_BYTES
from auwgent.runtime.session import new_session, new_turn
from auwgent.runtime.stores import (
    BLOB_THRESHOLD,
    JSONFileSessionStore,
    MemorySessionStore,
    SessionStoreError,
    SQLiteSessionStore,
)

BIG = base64.b64encode(os.urandom(BLOB_THRESHOLD)).decode()  # past the threshold once encoded
SMALL = base64.b64encode(b"\x89PNG-tiny").decode()
PARTS = [
    {"type": "text", "text": "Compare these."},
    {"type": "image", "data": SMALL, "media_type": "image/png"},
    {"type": "file", "data": BIG, "media_type": "application/pdf", "filename": "a.pdf"},
    {"type": "image", "url": "https://example.test/cat.png"},
]


@pytest.fixture(params=["sqlite", "json", "memory", "redis", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    made: Any
    if request.param == "sqlite":
        made = SQLiteSessionStore(tmp_path / "s.db")
    elif request.param == "json":
        made = JSONFileSessionStore(tmp_path / "sessions")
    elif request.param == "memory":
        made = MemorySessionStore()
    elif request.param == "redis":
        from auwgent.runtime.stores import RedisSessionStore

        made = RedisSessionStore(
            request.getfixturevalue("redis_url"), prefix=f"t{uuid.uuid4().hex[:8]}:"
        )
    else:
        from auwgent.runtime.stores import PostgresSessionStore

        made = PostgresSessionStore(request.getfixturevalue("postgres_url"))
    yield made
    if hasattr(made, "aclose"):
        await made.aclose()


def session_with(parts: list[dict[str, Any]]) -> Any:
    session = new_session("Main")
    turn = new_turn(parts, "Main")
    turn["status"] = "complete"
    turn["messages"] = [{"role": "assistant", "content": "Alike."}]
    session["turns"].append(turn)
    session["stack"][0]["messages"] = [{"role": "user", "content": "x", "parts": PARTS}]
    return session


async def test_a_session_with_parts_comes_back_intact(store: Any) -> None:
    key = f"conv-{uuid.uuid4().hex}"
    session = session_with(PARTS)
    exported = json.loads(json.dumps(session))
    await store.save(key, session)
    loaded = await store.load(key)
    assert loaded.pop("revision") == 1
    assert loaded == exported
    loaded["revision"] = 1
    loaded["turns"].append(session_with(PARTS[:2])["turns"][0])  # the same data again
    await store.save(key, loaded)
    again = await store.load(key)
    assert again["turns"][1]["input"]["parts"] == PARTS[:2]
    assert again["turns"][0]["input"]["parts"] == PARTS
    assert await store.delete(key) is True
    assert await store.load(key) is None


async def test_a_part_past_the_cap_is_refused_and_nothing_is_written(store: Any) -> None:
    key = f"conv-{uuid.uuid4().hex}"
    huge = base64.b64encode(b"\0" * (MAX_PART_BYTES + 3)).decode()
    session = session_with([{"type": "file", "data": huge, "media_type": "application/pdf"}])
    with pytest.raises(SessionStoreError) as caught:
        await store.save(key, session)
    assert f"cannot save session {key!r}: session.turns[0].input.parts: part 1 (file)" in str(
        caught.value
    )
    assert "past the limit of 20971520 bytes" in str(caught.value)
    assert await store.load(key) is None


async def test_sqlite_keeps_large_data_once_beside_the_session(tmp_path: Path) -> None:
    store = SQLiteSessionStore(tmp_path / "s.db")
    session = session_with(PARTS)
    await store.save("k", session)
    with sqlite3.connect(tmp_path / "s.db") as db:
        text = db.execute("SELECT session FROM auwgent_sessions").fetchone()[0]
        blobs = db.execute("SELECT key, ref, data FROM auwgent_blobs").fetchall()
    assert BIG not in text and SMALL in text  # small data stays inline
    assert len(text) < BLOB_THRESHOLD
    assert [(k, data) for k, _, data in blobs] == [("k", BIG)]  # twice in the session, once here
    assert f'"data_ref":"{blobs[0][1]}"' in text
    with sqlite3.connect(tmp_path / "s.db") as db:
        db.execute("DELETE FROM auwgent_blobs")
    with pytest.raises(SessionStoreError, match=r"is corrupt: the data sha256:\w+ of a part is"):
        await store.load("k")
    assert await store.delete("k") is True
