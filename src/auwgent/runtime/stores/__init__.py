"""Session stores: keep conversations between runs, processes and machines (docs/stores.md).

A store is anything with async ``load(key)`` and ``save(key, session)``
(:class:`SessionStore`). The built-in ones and :class:`SessionStoreMiddleware` are in
:mod:`.builtin`, the networked ones in :mod:`.redis` and :mod:`.postgres` (each needs its
extra only when constructed), and what they all share (encoding, revisions, large part data by
reference) in :mod:`.shared`. Everything public is importable from here.
"""

from __future__ import annotations

from auwgent.runtime.stores.builtin import (
    DEFAULT_SQLITE_PATH,
    JSONFileSessionStore,
    MemorySessionStore,
    SessionStore,
    SessionStoreMiddleware,
    SQLiteSessionStore,
    open_store,
)
from auwgent.runtime.stores.postgres import PostgresSessionStore
from auwgent.runtime.stores.redis import RedisSessionStore
from auwgent.runtime.stores.shared import (
    BLOB_THRESHOLD,
    SessionStoreError,
    StoredSessionError,
)

__all__ = [
    "BLOB_THRESHOLD",
    "DEFAULT_SQLITE_PATH",
    "JSONFileSessionStore",
    "MemorySessionStore",
    "PostgresSessionStore",
    "RedisSessionStore",
    "SQLiteSessionStore",
    "SessionStore",
    "SessionStoreError",
    "SessionStoreMiddleware",
    "StoredSessionError",
    "open_store",
]
