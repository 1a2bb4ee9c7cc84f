"""Redis and PostgreSQL session stores against real servers started by the tests.

Both follow the same contract as the built-in stores: a checked round trip, a revision that a
save compares (a stale save is a ConflictError and writes nothing), a time-to-live, and the
conversation locks `auwgent serve` relies on.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from auwgent.errors import ConflictError
from auwgent.runtime.session import new_session, new_turn
from auwgent.runtime.stores import SessionStoreError, StoredSessionError

# Every test runs on real Redis and PostgreSQL servers (the `store` fixture's two params).
pytestmark = pytest.mark.servers


@pytest.fixture(params=["redis", "postgres"])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[Any]:
    if request.param == "redis":
        from auwgent.runtime.stores import RedisSessionStore

        made: Any = RedisSessionStore(
            request.getfixturevalue("redis_url"), prefix=f"t{uuid.uuid4().hex[:8]}:"
        )
    else:
        from auwgent.runtime.stores import PostgresSessionStore

        made = PostgresSessionStore(request.getfixturevalue("postgres_url"))
    yield made
    await made.aclose()


def session_with(*texts: str) -> Any:
    session = new_session("Main")
    for text in texts:
        turn = new_turn(text, "Main")
        turn["status"] = "complete"
        session["turns"].append(turn)
    return session


def key() -> str:
    return f"conv-{uuid.uuid4().hex}"


async def test_round_trip_with_revisions(store: Any) -> None:
    k = key()
    assert await store.load(k) is None
    session = session_with("hello")
    await store.save(k, session)
    assert session["revision"] == 1
    loaded = await store.load(k)
    assert loaded["revision"] == 1
    assert loaded["turns"][0]["input"] == {"text": "hello"}
    loaded["turns"].append(session_with("again")["turns"][0])
    await store.save(k, loaded)
    assert loaded["revision"] == 2
    assert len((await store.load(k))["turns"]) == 2
    assert await store.delete(k) is True
    assert await store.load(k) is None


async def test_a_stale_save_is_a_conflict_and_writes_nothing(store: Any) -> None:
    k = key()
    await store.save(k, session_with("one"))
    first, second = await store.load(k), await store.load(k)
    first["turns"].append(session_with("two")["turns"][0])
    await store.save(k, first)
    second["turns"].append(session_with("other")["turns"][0])
    with pytest.raises(ConflictError, match="changed by another run or process"):
        await store.save(k, second)
    texts = [t["input"]["text"] for t in (await store.load(k))["turns"]]
    assert texts == ["one", "two"]
    with pytest.raises(ConflictError, match="was never loaded from this store"):
        await store.save(k, session_with("fresh"))  # no revision: must be a first save


async def test_concurrent_saves_have_exactly_one_winner(store: Any) -> None:
    k = key()
    await store.save(k, session_with("start"))
    copies = [await store.load(k) for _ in range(20)]
    for i, copy in enumerate(copies):
        copy["turns"].append(session_with(f"run {i}")["turns"][0])
    results = await asyncio.gather(*(store.save(k, c) for c in copies), return_exceptions=True)
    winners = [r for r in results if r is None]
    assert len(winners) == 1
    assert all(isinstance(r, ConflictError) for r in results if r is not None)
    assert (await store.load(k))["revision"] == 2


async def test_tampered_rows_are_refused(store: Any) -> None:
    k = key()
    if hasattr(store, "client"):
        await store.client.hset(f"{store.prefix}session:{k}", mapping={
            "session": '{"version": true}', "revision": 1})  # fmt: skip
    else:
        await store._one(
            "INSERT INTO auwgent_sessions (key, session, revision) VALUES (%s, %s, 1) "
            "RETURNING key",
            (k, '{"version": true}'),
        )
    with pytest.raises(StoredSessionError, match="version"):
        await store.load(k)


async def test_conversation_locks(store: Any) -> None:
    k = key()
    assert await store.lock(k, "worker-a", 30) is True
    assert await store.lock(k, "worker-b", 30) is False
    await store.unlock(k, "worker-b")  # not the holder: nothing happens
    assert await store.lock(k, "worker-b", 30) is False
    await store.unlock(k, "worker-a")
    assert await store.lock(k, "worker-b", 30) is True
    other = key()
    assert await store.lock(other, "worker-a", 0.2) is True
    await asyncio.sleep(1.1)
    assert await store.lock(other, "worker-b", 30) is True  # the first holder's lock expired
    # Renewal: only the holder, only while it holds the lock.
    assert await store.renew(other, "worker-b", 30) is True
    assert await store.renew(other, "worker-a", 30) is False
    assert await store.lock(other, "worker-a", 30) is False
    assert await store.renew(k, "worker-b", 0.2) is True
    await asyncio.sleep(1.1)
    assert await store.renew(k, "worker-b", 30) is False  # it expired: gone, not revived
    assert await store.lock(k, "worker-a", 30) is True


async def test_renewal_keeps_the_lock_past_its_ttl_and_a_stolen_lock_stops_the_run(
    store: Any,
) -> None:
    from auwgent.runtime.leases import Lease, LeaseLost

    k = key()
    lease = Lease(store, k, 0.6)
    assert await lease.acquire()
    await asyncio.sleep(1.5)  # time passing is the point: more than twice the ttl
    assert not lease.lost.is_set() and await store.lock(k, "other", 30) is False
    await lease.release()
    assert await store.lock(k, "other", 0.6) is True  # released
    await store.unlock(k, "other")

    lease = Lease(store, k, 0.6)
    assert await lease.acquire()
    await store.unlock(k, lease.owner)  # taken from it, as after an expiry
    assert await store.lock(k, "thief", 30) is True
    forever = asyncio.get_running_loop().create_future()
    with pytest.raises(LeaseLost, match="lost its lock"):
        await asyncio.wait_for(lease.holding(forever), 10)
    assert forever.cancelled()
    await lease.release()
    assert await store.lock(k, "someone", 30) is False  # the thief still holds it


async def test_time_to_live(request: pytest.FixtureRequest, store: Any) -> None:
    from auwgent.runtime.stores import PostgresSessionStore, RedisSessionStore

    if isinstance(store, RedisSessionStore):
        short: Any = RedisSessionStore(store.url, prefix=store.prefix, ttl=0.3)
    else:
        short = PostgresSessionStore(store.dsn, ttl=0.3)
    k = key()
    await short.save(k, session_with("brief"))
    assert await short.load(k) is not None
    await asyncio.sleep(1.2)
    assert await short.load(k) is None
    await short.save(k, session_with("new life"))  # an expired conversation starts afresh
    assert (await short.load(k))["revision"] == 1
    await short.aclose()


async def test_an_unreachable_server_is_a_clear_error() -> None:
    from auwgent.runtime.stores import RedisSessionStore
    from servers import free_port

    store = RedisSessionStore(f"redis://127.0.0.1:{free_port()}/0")
    with pytest.raises(SessionStoreError, match=r"RedisSessionStore\('redis://127.0.0.1"):
        await store.load("x")
    await store.aclose()


_WITHOUT_EXTRA = """
import sys
for name in {blocked!r}:
    sys.modules[name] = None  # as if the extra were not installed
from auwgent.runtime.stores import open_store
from auwgent.runtime.stores import PostgresSessionStore
from auwgent.runtime.stores import RedisSessionStore
from auwgent.runtime.stores import SessionStoreError
for make in ({make}, lambda: open_store({url!r})):
    try:
        make()
    except SessionStoreError as exc:
        print(exc)
    else:
        print("constructed")
"""


@pytest.mark.parametrize(
    ("blocked", "make", "url", "extra"),
    [
        (["psycopg"], "lambda: PostgresSessionStore('postgresql://u@127.0.0.1/db')",
         "postgresql://u@127.0.0.1/db", "postgres"),
        (["psycopg_pool"], "lambda: PostgresSessionStore('postgresql://u@127.0.0.1/db')",
         "postgres://u@127.0.0.1/db", "postgres"),
        (["redis"], "lambda: RedisSessionStore('redis://127.0.0.1:1/0')",
         "redis://127.0.0.1:1/0", "redis"),
    ],
    ids=["psycopg", "psycopg_pool", "redis"],
)  # fmt: skip
def test_a_store_without_its_extra_says_what_to_install_at_construction(
    blocked: list[str], make: str, url: str, extra: str
) -> None:
    code = _WITHOUT_EXTRA.format(blocked=blocked, make=make, url=url)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    store = "PostgresSessionStore" if extra == "postgres" else "RedisSessionStore"
    expected = f'{store} needs the {extra} extra: pip install "auwgent[{extra}]"'
    assert done.stdout.splitlines() == [expected, expected]
