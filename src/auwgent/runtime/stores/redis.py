"""Sessions in Redis (``pip install "auwgent[redis]"``), for workers on several machines.

Each conversation is one hash, ``<prefix>session:<key>``, holding the session JSON and its
revision; each save is one Lua script that compares the revision and writes, atomically, so
two workers can never both win (see :mod:`auwgent.runtime.stores.shared`). Large part data
(images, files) is kept by reference in the same hash, one field ``blob:<ref>`` per content,
written by the same script (one key per conversation, so Redis Cluster takes it too) and
deleted or expired with the conversation. With ``ttl`` a
conversation expires that many seconds after its last save. Conversation locks are
``<prefix>lock:<key>`` keys set with ``NX`` and an expiry.
"""

from __future__ import annotations

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

__all__ = ["RedisSessionStore"]

# KEYS[1]: the session hash. ARGV: expected revision, JSON text, ttl in ms (0: none), then
# blob field, data pairs. Returns the new revision, or -1 - the stored revision on a conflict.
_SAVE = """
local found = tonumber(redis.call('HGET', KEYS[1], 'revision') or '0')
if found ~= tonumber(ARGV[1]) then
    return -1 - found
end
redis.call('HSET', KEYS[1], 'session', ARGV[2], 'revision', found + 1)
for i = 4, #ARGV, 2 do
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
end
if tonumber(ARGV[3]) > 0 then
    redis.call('PEXPIRE', KEYS[1], ARGV[3])
else
    redis.call('PERSIST', KEYS[1])
end
return found + 1
"""

# KEYS[1]: the lock. ARGV[1]: the owner. Deletes it only if the owner still holds it.
_UNLOCK = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('DEL', KEYS[1])
end
return 0
"""

# KEYS[1]: the lock. ARGV: the owner, the ttl in ms. Extends it only if the owner holds it.
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""


class RedisSessionStore:
    """Sessions in Redis: ``RedisSessionStore("redis://localhost:6379/0", ttl=86400)``.

    Args:
        url: a ``redis://`` or ``rediss://`` URL (or give ``client``).
        client: a ``redis.asyncio.Redis`` to use instead of opening one from ``url``.
        prefix: prepended to every key this store writes.
        ttl: seconds a conversation is kept after its last save (``None``: for ever).
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        client: Any = None,
        prefix: str = "auwgent:",
        ttl: float | None = None,
    ) -> None:
        if client is None:
            if url is None:
                raise ValueError("RedisSessionStore needs a url or a client")
            try:
                import redis.asyncio as redis
            except ImportError as exc:  # pragma: no cover - depends on the installation
                raise SessionStoreError(
                    'RedisSessionStore needs the redis extra: pip install "auwgent[redis]"'
                ) from exc
            client = redis.Redis.from_url(url)
        if ttl is not None and ttl <= 0:
            raise ValueError("ttl must be positive (or None)")
        self.url = url
        self.client = client
        self.prefix = prefix
        self.ttl = ttl
        self._save_script = client.register_script(_SAVE)
        self._unlock_script = client.register_script(_UNLOCK)
        self._renew_script = client.register_script(_RENEW)

    def __repr__(self) -> str:
        return f"RedisSessionStore({self.url!r}, prefix={self.prefix!r})"

    def _session_key(self, key: str) -> str:
        return f"{self.prefix}session:{check_key(key)}"

    async def load(self, key: str) -> Session | None:
        """The session saved under ``key`` (with its ``revision``), or ``None``."""
        fields = await self._call(self.client.hmget(self._session_key(key), "session", "revision"))
        text, revision = fields
        if text is None:
            return None
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        if '"data_ref":' not in text:
            return from_stored(key, text, int(revision), repr(self))
        value = parse_stored(key, text, repr(self))
        refs = stored_refs(value)
        fields = [f"blob:{ref}" for ref in refs]
        found = await self._call(self.client.hmget(self._session_key(key), fields))
        blobs = {
            ref: data.decode("ascii") if isinstance(data, bytes) else data
            for ref, data in zip(refs, found, strict=True)
            if data is not None
        }
        return join_blobs(key, value, blobs, int(revision), repr(self))

    async def save(self, key: str, session: Session) -> None:
        """Save ``session`` if the stored revision is still the one it was loaded at."""
        expected = expected_revision(key, session)
        text, blobs = split_blobs(to_stored(key, session))
        ttl_ms = int(self.ttl * 1000) if self.ttl else 0
        args: list[Any] = [expected, text, ttl_ms]
        for ref, data in blobs.items():
            args += [f"blob:{ref}", data]
        keys = [self._session_key(key)]
        result = int(await self._call(self._save_script(keys=keys, args=args)))
        if result < 0:
            raise conflict(key, expected, -1 - result)
        session["revision"] = result

    async def delete(self, key: str) -> bool:
        """Forget ``key``; ``True`` when there was a session to delete."""
        return bool(await self._call(self.client.delete(self._session_key(key))))

    async def lock(self, key: str, owner: str, ttl: float) -> bool:
        """Take the conversation lock of ``key`` for ``ttl`` seconds if nobody holds it."""
        taken = self.client.set(
            f"{self.prefix}lock:{check_key(key)}", owner, nx=True, px=int(ttl * 1000)
        )
        return bool(await self._call(taken))

    async def renew(self, key: str, owner: str, ttl: float) -> bool:
        """Extend the lock of ``key`` to ``ttl`` seconds if ``owner`` still holds it."""
        lock = f"{self.prefix}lock:{check_key(key)}"
        return bool(
            await self._call(self._renew_script(keys=[lock], args=[owner, int(ttl * 1000)]))
        )

    async def unlock(self, key: str, owner: str) -> None:
        """Release the lock of ``key`` if ``owner`` still holds it."""
        await self._call(self._unlock_script(keys=[f"{self.prefix}lock:{key}"], args=[owner]))

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self.client.aclose()

    async def _call(self, awaitable: Any) -> Any:
        import redis

        try:
            return await awaitable
        except redis.RedisError as exc:
            raise SessionStoreError(f"{self!r}: {type(exc).__name__}: {exc}") from exc
