"""The built-in session stores, the middleware that plugs a store into an agent, and
:func:`open_store`.

A store is anything with two async methods (:class:`SessionStore`): ``load(key)`` returns the
saved session or ``None``, ``save(key, session)`` writes it. Two ship with Auwgent:

- :class:`SQLiteSessionStore` (the default): one SQLite file, one row per conversation with a
  revision counter and the update time, WAL mode, every save one transaction. Safe for many
  tasks and many processes saving different conversations at once.
- :class:`JSONFileSessionStore`: one JSON file per conversation in a directory, each save an
  atomic replace of the file.

:class:`SessionStoreMiddleware` plugs a store into an agent: ``onRunStart`` loads the session
saved under ``ctx["conversation_id"]`` (``agent.run(text, conversation_id=...)``), and
``onRunComplete`` saves the final session after every run, failed runs included.

Sessions are stored as JSON text. A save either happens whole or not at all, so a crash never
loses what an earlier run wrote; a row or file that cannot be read back raises
:class:`SessionStoreError` naming the key and what is wrong, and one that reads back but fails
the session checks (:func:`~auwgent.runtime.session.check_session`) raises
:class:`StoredSessionError`, which is also a :class:`~auwgent.errors.ConfigError`, naming the
key, where it is stored and the field. Either way the stored session stays as it is.

Optimistic concurrency: every store keeps a revision per key. ``load`` puts it in the
session's top-level ``"revision"``; ``save`` compares it with the stored one (a session without
a revision may only create a new key) and raises :class:`~auwgent.errors.ConflictError` when
they differ, writing nothing; on success it sets ``session["revision"]`` to the new revision.
So two processes that loaded the same conversation cannot both save over each other: the
second one is told. Within one process :class:`SessionStoreMiddleware` goes further and runs
the runs of one conversation one after the other.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
import sqlite3
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from auwgent.runtime.session import Session
from auwgent.runtime.stores.postgres import PostgresSessionStore
from auwgent.runtime.stores.redis import RedisSessionStore
from auwgent.runtime.stores.shared import (
    SessionStoreError,
    StoredSessionError,
    check_key,
    check_revision,
    checked_session,
    decode_session,
    encode_session,
    join_blobs,
    parse_stored,
    revision_problem,
    session_problem,
    split_blobs,
    stored_refs,
)

__all__ = [
    "JSONFileSessionStore",
    "MemorySessionStore",
    "SQLiteSessionStore",
    "SessionStore",
    "SessionStoreError",
    "SessionStoreMiddleware",
    "StoredSessionError",
    "open_store",
]

DEFAULT_SQLITE_PATH = "auwgent_sessions.db"


@runtime_checkable
class SessionStore(Protocol):
    """Where conversations live between runs. Implement these two methods for your database."""

    async def load(self, key: str) -> Session | None:
        """The session saved under ``key``, or ``None`` when there is none."""
        ...

    async def save(self, key: str, session: Session) -> None:
        """Save ``session`` under ``key``, replacing what was there, all or nothing.

        Raise :class:`~auwgent.errors.ConflictError` when the stored revision is not
        ``session.get("revision")`` (``None``: nothing may be stored yet); on success set
        ``session["revision"]`` to the new revision.
        """
        ...


def _with_revision(session: Session, revision: int) -> Session:
    session["revision"] = revision
    return session


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


# -- SQLite ----------------------------------------------------------------------------------

_SCHEMA = """
CREATE TABLE IF NOT EXISTS auwgent_sessions (
    key TEXT PRIMARY KEY,
    session TEXT NOT NULL,
    session_version INTEGER NOT NULL,
    revision INTEGER NOT NULL,
    updated_at TEXT NOT NULL
)
"""

_LOCK_SCHEMA = """
CREATE TABLE IF NOT EXISTS auwgent_locks (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    expires_at REAL NOT NULL
)
"""

_BLOB_SCHEMA = """
CREATE TABLE IF NOT EXISTS auwgent_blobs (
    key TEXT NOT NULL,
    ref TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (key, ref)
)
"""

_LOCK = """
INSERT INTO auwgent_locks (key, owner, expires_at) VALUES (?, ?, ?)
ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
    WHERE auwgent_locks.expires_at <= ? OR auwgent_locks.owner = excluded.owner
"""

_UPSERT = """
INSERT INTO auwgent_sessions (key, session, session_version, revision, updated_at)
VALUES (?, ?, ?, ?, ?)
ON CONFLICT (key) DO UPDATE SET
    session = excluded.session,
    session_version = excluded.session_version,
    revision = excluded.revision,
    updated_at = excluded.updated_at
"""


class SQLiteSessionStore:
    """Sessions in one SQLite file (created with its directory on first use), one row per key.

    Each row holds the session JSON, its format version, a revision counter (1 on the first
    save, +1 on each save) and the UTC update time. The database runs in WAL mode, so readers
    never block the writer; each save is one ``BEGIN IMMEDIATE`` transaction that compares the
    revision and writes, and a writer that finds the file locked by another process waits up
    to ``timeout`` seconds. Large part data (images, files) is kept by reference in
    ``auwgent_blobs``, one row per conversation and content, deleted with the conversation
    (see :mod:`auwgent.runtime.stores.shared`). The blocking sqlite3 calls run in worker
    threads; each thread keeps its connection to the file (opening one costs more than a
    read), and drops it after an error.

    Sessions are written with ``synchronous=FULL``: a save is on disk when it returns. The
    conversation locks of ``auwgent serve`` (``lock``, ``renew``, ``unlock``) are written with
    ``synchronous=NORMAL``, which in WAL mode keeps the file consistent but leaves the fsync to
    the next full commit or checkpoint: a lock matters only while the run holding it lives, and
    a power loss ends that run anyway (a lock row it leaves behind expires with its TTL). This
    saves two fsyncs per served run (docs/stores.md).
    """

    def __init__(
        self, path: str | os.PathLike[str] = DEFAULT_SQLITE_PATH, *, timeout: float = 30.0
    ) -> None:
        if str(path) == ":memory:":
            # Each call opens its own connection, so an in-memory database would vanish.
            raise ValueError("SQLiteSessionStore needs a file; use MemorySessionStore in memory")
        self.path = Path(path)
        self.timeout = timeout
        self._ready = False
        self._ready_lock = threading.Lock()
        self._threads = threading.local()  # each worker thread's connections, by durability

    def __repr__(self) -> str:
        return f"SQLiteSessionStore({str(self.path)!r})"

    async def load(self, key: str) -> Session | None:
        """The session saved under ``key``, or ``None``."""
        check_key(key)
        return await asyncio.to_thread(self._load, key)

    async def save(self, key: str, session: Session) -> None:
        """Save ``session`` under ``key`` in one transaction (ConflictError on a stale revision).

        Large part data goes to ``auwgent_blobs``, by reference, in the same transaction.
        """
        text, blobs = split_blobs(encode_session(check_key(key), session))
        revision = await asyncio.to_thread(self._save, key, text, blobs, session)
        _with_revision(session, revision)

    async def delete(self, key: str) -> bool:
        """Forget ``key``; ``True`` when there was a session to delete."""
        check_key(key)
        return await asyncio.to_thread(self._delete, key)

    async def revision(self, key: str) -> int | None:
        """How many times ``key`` was saved (``None`` when it never was)."""
        check_key(key)
        return await asyncio.to_thread(self._revision, key)

    async def lock(self, key: str, owner: str, ttl: float) -> bool:
        """Take the conversation lock of ``key`` for ``ttl`` seconds if nobody else holds it
        (used by ``auwgent serve``; see :mod:`auwgent.runtime.stores.shared`)."""
        check_key(key)
        return await asyncio.to_thread(self._lock, key, owner, ttl)

    async def renew(self, key: str, owner: str, ttl: float) -> bool:
        """Extend the lock of ``key`` to ``ttl`` seconds from now if ``owner`` still holds it
        (``False``: it expired or another run took it)."""
        check_key(key)
        return await asyncio.to_thread(self._renew, key, owner, ttl)

    async def unlock(self, key: str, owner: str) -> None:
        """Release the lock of ``key`` if ``owner`` still holds it."""
        await asyncio.to_thread(self._unlock, key, owner)

    def _lock(self, key: str, owner: str, ttl: float) -> bool:
        now = time.time()
        with self._connect(durable=False) as db:
            return db.execute(_LOCK, (key, owner, now + ttl, now)).rowcount > 0

    def _renew(self, key: str, owner: str, ttl: float) -> bool:
        now = time.time()
        with self._connect(durable=False) as db:
            renewed = db.execute(
                "UPDATE auwgent_locks SET expires_at = ? "
                "WHERE key = ? AND owner = ? AND expires_at > ?",
                (now + ttl, key, owner, now),
            )
            return renewed.rowcount > 0

    def _unlock(self, key: str, owner: str) -> None:
        with self._connect(durable=False) as db:
            db.execute("DELETE FROM auwgent_locks WHERE key = ? AND owner = ?", (key, owner))

    def _load(self, key: str) -> Session | None:
        where = str(self.path)
        with self._connect() as db:
            row = db.execute(
                "SELECT session, revision FROM auwgent_sessions WHERE key = ?", (key,)
            ).fetchone()
            if row is None:
                return None
            if not isinstance(row[0], str):
                raise SessionStoreError(f"stored session {key!r} in {where} is corrupt: not text")
            if '"data_ref":' not in row[0]:
                return _with_revision(decode_session(key, row[0], where), int(row[1]))
            value = parse_stored(key, row[0], where)
            refs = stored_refs(value)
            marks = ", ".join("?" * len(refs))
            found = db.execute(
                f"SELECT ref, data FROM auwgent_blobs WHERE key = ? AND ref IN ({marks})",
                (key, *refs),
            ).fetchall()
        return join_blobs(key, value, dict(found), int(row[1]), where)

    def _save(self, key: str, text: str, blobs: Mapping[str, str], session: Session) -> int:
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            try:
                row = db.execute(
                    "SELECT revision FROM auwgent_sessions WHERE key = ?", (key,)
                ).fetchone()
                revision = check_revision(key, None if row is None else int(row[0]), session)
                db.execute(_UPSERT, (key, text, session["version"], revision, _now()))
                db.executemany(
                    "INSERT OR IGNORE INTO auwgent_blobs (key, ref, data) VALUES (?, ?, ?)",
                    [(key, ref, data) for ref, data in blobs.items()],
                )
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
        return revision

    def _delete(self, key: str) -> bool:
        with self._connect() as db:
            db.execute("BEGIN IMMEDIATE")
            db.execute("DELETE FROM auwgent_blobs WHERE key = ?", (key,))
            deleted = db.execute("DELETE FROM auwgent_sessions WHERE key = ?", (key,)).rowcount
            db.execute("COMMIT")
        return deleted > 0

    def _revision(self, key: str) -> int | None:
        with self._connect() as db:
            row = db.execute(
                "SELECT revision FROM auwgent_sessions WHERE key = ?", (key,)
            ).fetchone()
        return None if row is None else int(row[0])

    @contextlib.contextmanager
    def _connect(self, durable: bool = True) -> Iterator[sqlite3.Connection]:
        """This thread's connection (``durable``: ``synchronous=FULL``, else ``NORMAL``); on
        an error it is closed and forgotten, so the next call opens a fresh one."""
        mode = "full" if durable else "normal"
        db = getattr(self._threads, mode, None)
        if db is None:
            db = self._open(mode)
        try:
            self._prepare(db)
            yield db
        except sqlite3.Error as error:
            setattr(self._threads, mode, None)
            db.close()
            raise SessionStoreError(f"session database {self.path}: {error}") from error
        except BaseException:
            if db.in_transaction:  # never hand on a connection inside a transaction
                setattr(self._threads, mode, None)
                db.close()
            raise

    def _open(self, mode: str) -> sqlite3.Connection:
        try:
            if not self._ready:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
            db.execute(f"PRAGMA synchronous={mode}")
        except (OSError, sqlite3.Error) as error:
            raise SessionStoreError(f"cannot open session database {self.path}: {error}") from error
        setattr(self._threads, mode, db)
        return db

    def _prepare(self, db: sqlite3.Connection) -> None:
        if self._ready:
            return
        with self._ready_lock:
            if not self._ready:
                self._enable_wal(db)
                db.execute(_SCHEMA)
                db.execute(_LOCK_SCHEMA)
                db.execute(_BLOB_SCHEMA)
                self._ready = True

    def _enable_wal(self, db: sqlite3.Connection) -> None:
        """Switch the file to WAL once; it then holds for every connection and process.

        Changing the journal mode does not wait on SQLite's busy handler, so when another
        process holds the file at that moment, retry until ``timeout`` runs out.
        """
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                    db.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) or time.monotonic() >= deadline:
                    raise
                time.sleep(0.01)


# -- JSON files ------------------------------------------------------------------------------

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")


class JSONFileSessionStore:
    """Sessions as JSON files in ``directory`` (created on first save), one file per key.

    A file name is the key with unsafe characters replaced, plus a hash of the exact key, so
    any key is a safe and distinct name (also on case-insensitive file systems). A save writes
    a temporary file in the same directory, flushes it to disk and renames it over the old one
    (``os.replace``), so readers see the old session or the new one, never half of one. Each
    file holds ``{"key", "revision", "updated_at", "session"}``. A save holds an exclusive
    ``flock`` on the directory while it compares the revision and replaces the file, so saves
    from several processes are ordered (where ``fcntl`` exists, i.e. POSIX).
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def __repr__(self) -> str:
        return f"JSONFileSessionStore({str(self.directory)!r})"

    def path_for(self, key: str) -> Path:
        """The file that holds the session of ``key``."""
        key = check_key(key)
        readable = _UNSAFE.sub("_", key)[:64]
        digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
        return self.directory / f"{readable}-{digest}.json"

    async def load(self, key: str) -> Session | None:
        """The session saved under ``key``, or ``None``."""
        return await asyncio.to_thread(self._load, check_key(key))

    async def save(self, key: str, session: Session) -> None:
        """Save ``session`` under ``key`` by atomically replacing its file (ConflictError on a
        stale revision)."""
        text = encode_session(check_key(key), session)
        revision = await asyncio.to_thread(self._save, key, text, session)
        _with_revision(session, revision)

    def _save(self, key: str, text: str, session: Session) -> int:
        path = self.path_for(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        with _directory_lock(path.parent):
            stored = self._read(key, path)
            revision = check_revision(key, None if stored is None else stored[1], session)
            quoted = json.dumps(key, ensure_ascii=False)
            self._write(
                path,
                f'{{"key":{quoted},"revision":{revision},"updated_at":"{_now()}",'
                f'"session":{text}}}',
            )
        return revision

    async def delete(self, key: str) -> bool:
        """Forget ``key``; ``True`` when there was a session to delete."""
        path = self.path_for(key)
        try:
            await asyncio.to_thread(path.unlink)
        except FileNotFoundError:
            return False
        return True

    def _load(self, key: str) -> Session | None:
        stored = self._read(key, self.path_for(key))
        return None if stored is None else _with_revision(*stored)

    def _read(self, key: str, path: Path) -> tuple[Session, int] | None:
        """The stored session and its revision (0 for a file written before revisions)."""
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as error:
            raise SessionStoreError(
                f"cannot read stored session {key!r} from {path}: {error}"
            ) from error
        try:
            envelope = json.loads(text)
        except ValueError as error:
            raise SessionStoreError(
                f"stored session {key!r} in {path} is corrupt: not valid JSON ({error})"
            ) from error
        if not isinstance(envelope, dict) or "session" not in envelope:
            raise SessionStoreError(f"stored session {key!r} in {path} is corrupt: no 'session'")
        revision = envelope.get("revision", 0)
        if revision_problem(revision) is not None or revision is None:
            raise SessionStoreError(
                f"stored session {key!r} in {path} is corrupt: 'revision' is {revision!r}"
            )
        return checked_session(key, envelope["session"], str(path)), revision

    def _write(self, path: Path, text: str) -> None:
        fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as file:
                file.write(text)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp)
            raise
        _sync_directory(path.parent)


@contextlib.contextmanager
def _directory_lock(directory: Path) -> Iterator[None]:
    """An exclusive advisory lock on ``directory`` (no lock file to leave behind)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: saves are atomic but not ordered
        yield
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _sync_directory(directory: Path) -> None:
    """Make the rename itself durable where the platform allows it (POSIX)."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# -- in memory -------------------------------------------------------------------------------


class MemorySessionStore:
    """Sessions in a dict, for tests and short-lived processes.

    Sessions are stored as JSON text, exactly like the other stores, so a test sees the same
    round trip (and the same errors for values that are not JSON) as production does.
    """

    def __init__(self) -> None:
        self._texts: dict[str, str] = {}
        self._revisions: dict[str, int] = {}
        self._locks: dict[str, tuple[str, float]] = {}

    async def load(self, key: str) -> Session | None:
        """The session saved under ``key`` (a fresh copy), or ``None``."""
        text = self._texts.get(check_key(key))
        if text is None:
            return None
        return _with_revision(decode_session(key, text, "memory"), self._revisions.get(key, 0))

    async def save(self, key: str, session: Session) -> None:
        """Save a copy of ``session`` under ``key`` (ConflictError on a stale revision)."""
        text = encode_session(check_key(key), session)
        stored = self._revisions.get(key, 0) if key in self._texts else None
        revision = check_revision(key, stored, session)
        self._texts[key], self._revisions[key] = text, revision
        _with_revision(session, revision)

    async def delete(self, key: str) -> bool:
        """Forget ``key``; ``True`` when there was a session to delete."""
        self._revisions.pop(check_key(key), None)
        return self._texts.pop(key, None) is not None

    def keys(self) -> list[str]:
        """The saved keys, in first-save order."""
        return list(self._texts)

    async def lock(self, key: str, owner: str, ttl: float) -> bool:
        """Take the conversation lock of ``key`` for ``ttl`` seconds if nobody else holds it."""
        holder = self._locks.get(check_key(key))
        if holder is not None and holder[0] != owner and holder[1] > time.monotonic():
            return False
        self._locks[key] = (owner, time.monotonic() + ttl)
        return True

    async def renew(self, key: str, owner: str, ttl: float) -> bool:
        """Extend the lock of ``key`` if ``owner`` still holds it (``False``: lost)."""
        holder = self._locks.get(check_key(key))
        if holder is None or holder[0] != owner or holder[1] <= time.monotonic():
            return False
        self._locks[key] = (owner, time.monotonic() + ttl)
        return True

    async def unlock(self, key: str, owner: str) -> None:
        """Release the lock of ``key`` if ``owner`` still holds it."""
        if self._locks.get(key, ("",))[0] == owner:
            del self._locks[key]


# -- middleware ------------------------------------------------------------------------------


class SessionStoreMiddleware:
    """Middleware that loads a conversation before each run and saves it after.

    ``onRunStart`` returns the session stored under ``ctx[key]`` (the ``conversation_id``
    given to ``agent.run``), or the session it was given when there is no key or nothing stored
    yet. ``onRunComplete`` saves the final session under the same key, after every run,
    failed ones included. Without a key the middleware does nothing.

    A save never drops a stored turn. A stored session that cannot be used (corrupt, another
    format version, another agent's, or one that fails the session checks, here or in the
    engine) fails the run's start; the run then does not continue the stored conversation,
    and ``onRunComplete`` refuses to save over it with :class:`SessionStoreError`: the stored
    session is kept as it is, so nothing is lost before someone repairs or deletes it. The
    same refusal protects a run that never loaded (another middleware failed first) and a
    final session that lost stored turns.

    Runs of one conversation through one middleware are serialised: a run waits at
    ``onRunStart`` until the previous run of that key has saved, so concurrent runs in one
    process never lose a turn. Between processes (or middleware instances) the store's revision
    check decides: the run that saves second fails with a
    :class:`~auwgent.errors.ConflictError` (its ``error`` intent says so) and writes nothing.

    Args:
        store: where sessions live; default ``SQLiteSessionStore("auwgent_sessions.db")``.
        key: the context entry that names the conversation.
        name: the middleware's name, as other middleware and logs see it.
    """

    target: str | list[str] | None = None

    def __init__(
        self,
        store: SessionStore | None = None,
        *,
        key: str = "conversation_id",
        name: str = "session-store",
    ) -> None:
        self.store: SessionStore = store if store is not None else SQLiteSessionStore()
        self.key = key
        self.name = name
        # The runs in progress, by their context dict (one per run, the same object in both
        # hooks): the turn ids of the stored session each one loaded, None when it was unusable.
        self._loaded: dict[int, list[Any] | None] = {}
        # key -> [lock, users]: serialises the runs of one conversation in this process.
        self._locks: dict[str, list[Any]] = {}
        self._held: dict[int, str] = {}  # id(ctx) of a run holding a lock -> its key

    def __repr__(self) -> str:
        return f"SessionStoreMiddleware({self.store!r}, key={self.key!r})"

    async def onRunStart(self, session: Session, ctx: Mapping[str, Any]) -> Session:
        """Return the stored session for this conversation, else ``session`` unchanged."""
        key = self._key(ctx)
        if key is None:
            return session
        await self._acquire(key, ctx)
        try:
            self._loaded[id(ctx)] = None  # unusable until it has loaded and passed the checks
            stored = await self.store.load(key)
            if stored is not None:
                # Custom stores may not check what they read: the built-in stores' checks.
                problem = session_problem(stored)
                if problem is not None:
                    raise StoredSessionError(f"stored session {key!r} is unusable: {problem}")
            _check_owner(key, stored, ctx.get("rootAgent"))
            self._loaded[id(ctx)] = _turn_ids(stored)
        except BaseException:
            self._release(ctx)
            raise
        return session if stored is None else stored

    async def onRunComplete(self, finalSession: Session, ctx: Mapping[str, Any]) -> None:
        """Save the final session of this conversation, unless that would lose stored turns."""
        key = self._key(ctx)
        if key is None:
            return
        try:
            loaded = self._loaded.pop(id(ctx), _NOT_LOADED)
            if loaded is _NOT_LOADED:
                why = "the run ended before the stored session was loaded"
            elif loaded is None:
                why = "the stored one could not be used"
            elif _turn_ids(finalSession)[: len(loaded)] != loaded:
                why = "the run did not continue the stored session (it was rejected at the start)"
            else:
                await self.store.save(key, finalSession)
                return
            raise SessionStoreError(
                f"session {key!r} was not saved: {why}, and the stored one is kept as it is "
                "for inspection; repair it or delete it from the store, then run again"
            )
        finally:
            self._release(ctx)

    async def _acquire(self, key: str, ctx: Mapping[str, Any]) -> None:
        entry = self._locks.setdefault(key, [asyncio.Lock(), 0])
        entry[1] += 1
        try:
            await entry[0].acquire()
        except BaseException:
            self._forget(key, entry)
            raise
        self._held[id(ctx)] = key

    def _release(self, ctx: Mapping[str, Any]) -> None:
        key = self._held.pop(id(ctx), None)
        if key is not None:
            entry = self._locks[key]
            entry[0].release()
            self._forget(key, entry)

    def _forget(self, key: str, entry: list[Any]) -> None:
        entry[1] -= 1
        if entry[1] == 0:  # nobody waits: drop it (an asyncio lock belongs to one event loop)
            del self._locks[key]

    def _key(self, ctx: Mapping[str, Any]) -> str | None:
        # No check of ctx["activeAgent"]: run hooks fire once per run, and after a handoff the
        # agent answering (the helper on top of the stack) is not the root, yet the session
        # is still the whole conversation.
        value = ctx.get(self.key)
        if value is None or value == "":
            return None
        return value if isinstance(value, str) else str(value)


_NOT_LOADED: Any = object()


def _turn_ids(session: Session | None) -> list[Any]:
    return [] if session is None else [turn.get("id") for turn in session["turns"]]


def _check_owner(key: str, stored: Session | None, root: Any) -> None:
    owner = None if stored is None else stored.get("agent")
    if owner is not None and root is not None and owner != root:
        raise SessionStoreError(
            f"stored session {key!r} belongs to agent {owner!r}, not {root!r}: use another "
            "conversation id (or another store) for each agent"
        )


def open_store(url: str) -> Any:
    """The session store a URL names (``auwgent serve --store``).

    ``sqlite:///relative/path.db`` or ``sqlite:////absolute/path.db``, ``redis://host:port/db``
    (and ``rediss://``), ``postgresql://user@host/db`` (and ``postgres://``), ``memory:``.
    """
    if url.startswith("sqlite:///"):
        return SQLiteSessionStore(url[len("sqlite:///") :] or DEFAULT_SQLITE_PATH)
    if url.startswith(("redis://", "rediss://")):
        return RedisSessionStore(url)
    if url.startswith(("postgresql://", "postgres://")):
        return PostgresSessionStore(url)
    if url == "memory:":
        return MemorySessionStore()
    raise SessionStoreError(
        f"unknown store URL {url!r}: use sqlite:///path.db, redis://host:6379/0, "
        "postgresql://user@host/db or memory:"
    )
