"""Sessions in PostgreSQL (``pip install "auwgent[postgres]"``), with psycopg 3.

One row per conversation in ``auwgent_sessions`` (created on first use, under an advisory lock so
that workers starting together do not race): the session JSON, its
revision, the update time and, with ``ttl``, when it expires. A save is one statement that
compares the revision (``UPDATE ... WHERE revision = %s``, or an insert that only succeeds
when no live row exists), so concurrent workers can never both win (see
:mod:`auwgent.runtime.stores.shared`). Conversation locks are rows of ``auwgent_locks`` with an
expiry. Large part data (images, files) is kept by reference in ``auwgent_blobs``, one row per
conversation and content, written in the save's transaction and deleted with the conversation
(an expired conversation's rows go when its key is saved again or deleted). Connections come from a ``psycopg_pool.AsyncConnectionPool`` opened on first use.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from typing import Any

from auwgent.runtime.session import Session
from auwgent.runtime.stores.shared import (
    SessionStoreError,
    check_key,
    conflict,
    expected_revision,
    from_stored,
    join_blobs,
    parse_stored,
    split_blobs,
    stored_refs,
    to_stored,
)

__all__ = ["PostgresSessionStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS auwgent_sessions (
    key TEXT PRIMARY KEY,
    session TEXT NOT NULL,
    revision INTEGER NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    expires_at TIMESTAMPTZ
);
CREATE TABLE IF NOT EXISTS auwgent_blobs (
    key TEXT NOT NULL,
    ref TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (key, ref)
);
CREATE TABLE IF NOT EXISTS auwgent_locks (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
"""

#: The advisory lock taken while the tables are created: workers starting together on a fresh
#: database would otherwise race in ``CREATE TABLE IF NOT EXISTS`` (a duplicate-key error).
_SCHEMA_LOCK = 0x617577676E74  # "auwgnt"

_LIVE = "(expires_at IS NULL OR expires_at > now())"

_LOAD = f"SELECT session, revision FROM auwgent_sessions WHERE key = %s AND {_LIVE}"

# A first save: insert, or take over a row that has expired. RETURNING is empty on a conflict.
_INSERT = """
INSERT INTO auwgent_sessions AS s (key, session, revision, updated_at, expires_at)
VALUES (%(key)s, %(session)s, 1, now(), now() + %(ttl)s * interval '1 second')
ON CONFLICT (key) DO UPDATE SET
    session = excluded.session, revision = 1, updated_at = now(), expires_at = excluded.expires_at
    WHERE s.expires_at IS NOT NULL AND s.expires_at <= now()
RETURNING revision
"""

_UPDATE = f"""
UPDATE auwgent_sessions SET
    session = %(session)s, revision = revision + 1, updated_at = now(),
    expires_at = now() + %(ttl)s * interval '1 second'
WHERE key = %(key)s AND revision = %(expected)s AND {_LIVE}
RETURNING revision
"""

_BLOB = "INSERT INTO auwgent_blobs (key, ref, data) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING"

_LOCK = """
INSERT INTO auwgent_locks AS l (key, owner, expires_at)
VALUES (%s, %s, now() + %s * interval '1 second')
ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
    WHERE l.expires_at <= now() OR l.owner = excluded.owner
RETURNING owner
"""

_RENEW = """
UPDATE auwgent_locks SET expires_at = now() + %s * interval '1 second'
WHERE key = %s AND owner = %s AND expires_at > now()
RETURNING key
"""


class PostgresSessionStore:
    """Sessions in PostgreSQL: ``PostgresSessionStore("postgresql://user@host/db", ttl=86400)``.

    Args:
        dsn: a libpq connection string or ``postgresql://`` URL.
        ttl: seconds a conversation is kept after its last save (``None``: for ever).
        max_connections: the size of the connection pool.
    """

    def __init__(self, dsn: str, *, ttl: float | None = None, max_connections: int = 10) -> None:
        if ttl is not None and ttl <= 0:
            raise ValueError("ttl must be positive (or None)")
        _require_extra()
        self.dsn = dsn
        self.ttl = ttl
        self.max_connections = max_connections
        self._pool: Any = None
        self._opening: asyncio.Lock | None = None

    def __repr__(self) -> str:
        return f"PostgresSessionStore({_shown(self.dsn)!r})"

    async def load(self, key: str) -> Session | None:
        """The session saved under ``key`` (with its ``revision``), or ``None``."""
        row = await self._one(_LOAD, (check_key(key),))
        if row is None:
            return None
        if '"data_ref":' not in row[0]:
            return from_stored(key, row[0], int(row[1]), repr(self))
        value = parse_stored(key, row[0], repr(self))
        refs = stored_refs(value)
        found = await self._all(
            "SELECT ref, data FROM auwgent_blobs WHERE key = %s AND ref = ANY(%s)", (key, refs)
        )
        return join_blobs(key, value, dict(found), int(row[1]), repr(self))

    async def save(self, key: str, session: Session) -> None:
        """Save ``session`` if the stored revision is still the one it was loaded at."""
        expected = expected_revision(key, session)
        text, blobs = split_blobs(to_stored(key, session))
        params = {"key": key, "session": text, "ttl": self.ttl, "expected": expected}
        row = await self._save_rows(_UPDATE if expected else _INSERT, params, blobs)
        if row is None:
            found = await self._one(f"SELECT revision FROM auwgent_sessions WHERE key = %s "
                                    f"AND {_LIVE}", (key,))  # fmt: skip
            raise conflict(key, expected, None if found is None else int(found[0]))
        session["revision"] = int(row[0])

    async def delete(self, key: str) -> bool:
        """Forget ``key``; ``True`` when there was a session to delete."""
        await self._one("DELETE FROM auwgent_blobs WHERE key = %s RETURNING key", (key,))
        row = await self._one(
            "DELETE FROM auwgent_sessions WHERE key = %s RETURNING key", (check_key(key),)
        )
        return row is not None

    async def lock(self, key: str, owner: str, ttl: float) -> bool:
        """Take the conversation lock of ``key`` for ``ttl`` seconds if nobody holds it."""
        return await self._one(_LOCK, (check_key(key), owner, ttl)) is not None

    async def renew(self, key: str, owner: str, ttl: float) -> bool:
        """Extend the lock of ``key`` to ``ttl`` seconds if ``owner`` still holds it."""
        row = await self._one(_RENEW, (ttl, check_key(key), owner))
        return row is not None

    async def unlock(self, key: str, owner: str) -> None:
        """Release the lock of ``key`` if ``owner`` still holds it."""
        await self._one(
            "DELETE FROM auwgent_locks WHERE key = %s AND owner = %s RETURNING key", (key, owner)
        )

    async def aclose(self) -> None:
        """Close the connection pool."""
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    async def _one(self, sql: str, params: Any) -> tuple[Any, ...] | None:
        import psycopg

        pool = await self._ready()
        try:
            async with pool.connection() as db:
                cursor = await db.execute(sql, params)
                return await cursor.fetchone()  # type: ignore[no-any-return]
        except psycopg.Error as exc:
            raise SessionStoreError(f"{self!r}: {type(exc).__name__}: {exc}") from exc

    async def _save_rows(
        self, sql: str, params: Any, blobs: Mapping[str, str]
    ) -> tuple[Any, ...] | None:
        """Run the session's ``sql`` and write its blobs in one transaction; ``None`` (and
        nothing written) when the revision did not match."""
        import psycopg

        pool = await self._ready()
        try:
            async with pool.connection() as db:
                async with db.transaction() as tx:
                    row = await (await db.execute(sql, params)).fetchone()
                    if row is None:
                        raise psycopg.Rollback(tx)
                    if blobs:
                        async with db.cursor() as cursor:
                            rows = [(params["key"], ref, data) for ref, data in blobs.items()]
                            await cursor.executemany(_BLOB, rows)
                return row  # type: ignore[no-any-return]
        except psycopg.Error as exc:
            raise SessionStoreError(f"{self!r}: {type(exc).__name__}: {exc}") from exc

    async def _all(self, sql: str, params: Any) -> list[tuple[Any, ...]]:
        import psycopg

        pool = await self._ready()
        try:
            async with pool.connection() as db:
                cursor = await db.execute(sql, params)
                return await cursor.fetchall()  # type: ignore[no-any-return]
        except psycopg.Error as exc:
            raise SessionStoreError(f"{self!r}: {type(exc).__name__}: {exc}") from exc

    async def _ready(self) -> Any:
        if self._pool is not None:
            return self._pool
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._pool is None:
                self._pool = await self._open()
        return self._pool

    async def _open(self) -> Any:
        import psycopg
        from psycopg_pool import AsyncConnectionPool

        pool = AsyncConnectionPool(
            self.dsn, min_size=1, max_size=self.max_connections, open=False,
            kwargs={"autocommit": True},
        )  # fmt: skip
        try:
            await pool.open(wait=True, timeout=30)
            async with pool.connection() as db, db.transaction():
                await db.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
                await db.execute(_SCHEMA)
        except (psycopg.Error, Exception) as exc:
            await pool.close()
            raise SessionStoreError(f"{self!r}: cannot connect: {exc}") from exc
        return pool


def _require_extra() -> None:
    """Raise at construction, saying what to install, when psycopg or its pool is missing."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError as exc:
        raise SessionStoreError(
            'PostgresSessionStore needs the postgres extra: pip install "auwgent[postgres]"'
        ) from exc


def _shown(dsn: str) -> str:
    """The DSN without its password."""
    return re.sub(r"(://[^:/@]+):[^@]*@", r"\1:***@", re.sub(r"password=\S+", "password=***", dsn))
