"""The event log of durable runs, in PostgreSQL: every event a run streams, numbered, so that
a client that lost its stream reconnects to any worker and reads on from the last event it
saw (``Last-Event-ID``).

A run's events are written by the worker executing it, in batches, each batch followed by a
``NOTIFY``; readers wake on it (or every ``poll`` seconds without it) and read what is new.
A run's events are numbered in the order the run produces them, from 0 on every execution of
its workflow: a recovered run, replaying its checkpointed steps, produces the same events
again under the same numbers, and a number already written is kept (``ON CONFLICT DO
NOTHING``), so every event is in the log once. The run's last row is ``end`` (never sent).
Needs the ``postgres`` extra (psycopg 3).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

__all__ = ["END", "PAUSED", "EventLog", "RunWriter", "sse"]

#: The name of a run's last row: the reader stops there.
END = "end"
#: The row of a run paused for approvals: a reader stops there too (the approvals response
#: reads on from it).
PAUSED = "paused"
_CHANNEL = "auwgent_run_events"
_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS auwgent_run_events (
        run_id TEXT NOT NULL, seq INTEGER NOT NULL, name TEXT NOT NULL, data TEXT NOT NULL,
        PRIMARY KEY (run_id, seq))""",
    """CREATE TABLE IF NOT EXISTS auwgent_runs (
        run_id TEXT PRIMARY KEY, tenant TEXT NOT NULL, user_id TEXT NOT NULL,
        agent TEXT NOT NULL, created_at TIMESTAMPTZ NOT NULL DEFAULT now())""",
    """CREATE TABLE IF NOT EXISTS auwgent_workers (
        executor_id TEXT PRIMARY KEY, seen_at TIMESTAMPTZ NOT NULL)""",
)
_INSERT = (
    "INSERT INTO auwgent_run_events (run_id, seq, name, data) "
    "SELECT %s, * FROM unnest(%s::int[], %s::text[], %s::text[]) ON CONFLICT DO NOTHING"
)
_READ = (
    "SELECT seq, name, data FROM auwgent_run_events WHERE run_id = %s AND seq > %s "
    "ORDER BY seq LIMIT 1000"
)


def sse(seq: int, name: str, data: str) -> bytes:
    """One Server-Sent Event with its id (its number in the run's log)."""
    return f"id: {seq}\nevent: {name}\ndata: {data}\n\n".encode()


def create_schema(url: str) -> None:
    """Create the log's tables when missing (at a worker's start, synchronously)."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_advisory_lock(4107)")  # workers starting together
        try:
            for statement in _SCHEMA:
                conn.execute(statement)
        finally:
            conn.execute("SELECT pg_advisory_unlock(4107)")


class EventLog:
    """The log in one event loop: a connection pool, and a listener waking the readers."""

    def __init__(self, url: str, *, poll: float = 0.5) -> None:
        self.url = url
        self.poll = poll
        self._pool: Any = None
        self._listener: asyncio.Task[None] | None = None
        self._waiting: dict[str, set[asyncio.Event]] = {}

    async def pool(self) -> Any:
        if self._pool is None:
            from psycopg_pool import AsyncConnectionPool

            pool = AsyncConnectionPool(self.url, min_size=1, max_size=8, open=False)
            await pool.open()
            self._pool = pool
        return self._pool

    async def register(self, run_id: str, principal: Any, agent: str) -> None:
        """Note who started ``run_id`` (only they may read it)."""
        pool = await self.pool()
        async with pool.connection() as conn:
            await conn.execute(
                "INSERT INTO auwgent_runs (run_id, tenant, user_id, agent) VALUES (%s, %s, %s, %s) "
                "ON CONFLICT DO NOTHING",
                (run_id, principal["tenant"], principal["user"], agent),
            )

    async def owner(self, run_id: str) -> tuple[str, str] | None:
        """The (tenant, user) who started ``run_id``, or ``None``: no such run."""
        pool = await self.pool()
        async with pool.connection() as conn:
            cursor = await conn.execute(
                "SELECT tenant, user_id FROM auwgent_runs WHERE run_id = %s", (run_id,)
            )
            row = await cursor.fetchone()
        return None if row is None else (str(row[0]), str(row[1]))

    async def last(self, run_id: str, name: str) -> int | None:
        """The number of ``run_id``'s last row named ``name`` (``None``: none)."""
        pool = await self.pool()
        async with pool.connection() as conn:
            cursor = await conn.execute(
                "SELECT max(seq) FROM auwgent_run_events WHERE run_id = %s AND name = %s",
                (run_id, name),
            )
            row = await cursor.fetchone()
        return None if row is None or row[0] is None else int(row[0])

    async def write(self, run_id: str, rows: list[tuple[int, str, str]]) -> None:
        pool = await self.pool()
        async with pool.connection() as conn:
            await conn.execute(
                _INSERT,
                (run_id, [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]),
            )
            await conn.execute("SELECT pg_notify(%s, %s)", (_CHANNEL, run_id))

    async def tail(self, run_id: str, after: int) -> AsyncIterator[bytes]:
        """The run's events numbered above ``after``, as SSE, until its ``end``."""
        self._listen()
        wake = asyncio.Event()
        self._waiting.setdefault(run_id, set()).add(wake)
        try:
            pool = await self.pool()
            while True:
                wake.clear()
                async with pool.connection() as conn:
                    cursor = await conn.execute(_READ, (run_id, after))
                    rows = await cursor.fetchall()
                for seq, name, data in rows:
                    if name in (END, PAUSED):
                        return
                    yield sse(seq, name, data)
                    after = seq
                if not rows:
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(wake.wait(), self.poll)
        finally:
            waiting = self._waiting.get(run_id)
            if waiting is not None:
                waiting.discard(wake)
                if not waiting:
                    del self._waiting[run_id]

    def _listen(self) -> None:
        if self._listener is None or self._listener.done():
            self._listener = asyncio.ensure_future(self._notifications())

    async def _notifications(self) -> None:
        """Wake the readers of each run a writer notified (polling covers a lost listener)."""
        import psycopg

        try:
            conn = await psycopg.AsyncConnection.connect(self.url, autocommit=True)
        except psycopg.Error:
            return
        async with conn:
            await conn.execute(f"LISTEN {_CHANNEL}")
            async for note in conn.notifies():
                for wake in self._waiting.get(note.payload, ()):
                    wake.set()

    async def aclose(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._listener
        if self._pool is not None:
            await self._pool.close()


class RunWriter:
    """The events of one execution of a run, numbered from 0 and written in batches."""

    def __init__(self, log: EventLog, run_id: str) -> None:
        self.log = log
        self.run_id = run_id
        self.seq = 0
        self._rows: list[tuple[int, str, str]] = []
        self._more = asyncio.Event()
        self._closed = False
        self._flushing = asyncio.ensure_future(self._flush())

    def put(self, name: str, data: Any) -> None:
        text = json.dumps(data, ensure_ascii=False, default=str)
        self._rows.append((self.seq, name, text))
        self.seq += 1
        self._more.set()

    async def close(self) -> None:
        """Write the ``end`` row and everything before it; return once they are stored."""
        self.put(END, None)
        self._closed = True
        await self._flushing

    async def _flush(self) -> None:
        while True:
            await self._more.wait()
            self._more.clear()
            rows, self._rows = self._rows, []
            if rows:
                await self.log.write(self.run_id, rows)
            if self._closed and not self._rows:
                return
