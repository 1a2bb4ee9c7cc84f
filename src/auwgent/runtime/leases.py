"""Conversation leases: a store's conversation lock, held for as long as a run lives.

``auwgent serve`` takes one per run of a stored conversation (and per approval resume). A
:class:`Lease` takes the lock for ``ttl`` seconds, then renews it every ``ttl / 3`` seconds
while the run goes on (``store.renew``; a store without it is asked ``store.lock`` again by
the same owner). A renewal that the store refuses (the lock expired, or another run took it)
loses the lease at once; a store that cannot be reached loses it when the last successful
renewal is ``ttl`` seconds old, since another worker may take the lock from then on.

A run given the lease (``agent.stream(..., lease=)``) is stopped the moment it is lost: its
drive is cancelled (a tool running in a thread finishes on its own, its result unused), the
run ends with an ``error`` intent and its last turn's status is ``"conflict"``, and the caller
does not save it (the run that took the lock owns the conversation now).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Awaitable
from typing import Any, TypeVar

from auwgent.errors import ConflictError, describe_error
from auwgent.runtime.stores.shared import SessionStoreError

__all__ = ["CONFLICT", "Lease", "LeaseLost", "report_conflict"]

#: A turn's status when its run lost the conversation (its lock, or the revision race).
CONFLICT = "conflict"

_T = TypeVar("_T")


class LeaseLost(ConflictError):
    """The conversation lock a run held was lost while it ran: the run was stopped."""


class Lease:
    """The lock of conversation ``key`` in ``store`` for one run (see the module docstring)."""

    def __init__(self, store: Any, key: str, ttl: float) -> None:
        if not ttl > 0:
            raise ValueError(f"a lease needs a positive ttl, got {ttl!r}")
        self.store = store
        self.key = key
        self.ttl = ttl
        self.owner = uuid.uuid4().hex
        #: Seconds between renewals.
        self.interval = ttl / 3
        self.lost = asyncio.Event()
        self.reason = ""
        self._renewing: asyncio.Task[None] | None = None

    async def acquire(self) -> bool:
        """Take the lock and start renewing it; ``False`` when another run holds it."""
        taken_at = time.monotonic()
        if not await self.store.lock(self.key, self.owner, self.ttl):
            return False
        self._renewing = asyncio.ensure_future(self._renew(taken_at + self.ttl))
        return True

    async def release(self) -> None:
        """Stop renewing and release the lock (unless it was lost: then it is another's)."""
        if self._renewing is not None:
            self._renewing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._renewing
            self._renewing = None
        if not self.lost.is_set():
            await self.store.unlock(self.key, self.owner)

    async def holding(self, work: Awaitable[_T]) -> _T:
        """Await ``work`` while the lease holds; cancel it and raise :class:`LeaseLost` the
        moment the lease is lost."""
        task = asyncio.ensure_future(work)
        watch = asyncio.ensure_future(self.lost.wait())
        try:
            await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            watch.cancel()
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if task.cancelled() and self.lost.is_set():
            raise LeaseLost(self.message())
        return task.result()

    def message(self) -> str:
        """What the stopped run is told."""
        return (
            f"conversation {self.key!r}: this run lost its lock ({self.reason}), so another "
            "run may own the conversation: it was stopped and nothing of it was saved"
        )

    async def _renew(self, expires: float) -> None:
        ask = getattr(self.store, "renew", None) or self.store.lock
        while True:
            await asyncio.sleep(self.interval)
            asked = time.monotonic()
            try:
                # Never wait past the lock's expiry: from then on another may hold it.
                left = max(expires - asked, 0.001)
                held = await asyncio.wait_for(ask(self.key, self.owner, self.ttl), left)
            except (SessionStoreError, asyncio.TimeoutError) as exc:
                if time.monotonic() >= expires:
                    self._lose(f"no renewal succeeded before it expired: {describe_error(exc)}")
                    return
                continue
            if not held:
                self._lose("it expired or another run took it")
                return
            expires = asked + self.ttl

    def _lose(self, reason: str) -> None:
        self.reason = reason
        self.lost.set()


def report_conflict(session: Any, message: str) -> None:
    """Mark ``session``'s last turn as having lost the conversation (status ``"conflict"``,
    ``error`` the message), so the session a caller gets back says it was not saved."""
    turns = session.get("turns") if isinstance(session, dict) else None
    if turns:
        turns[-1]["status"] = CONFLICT
        turns[-1]["error"] = message
