"""What every networked session store shares: revisions, conflicts and conversation locks.

**Optimistic concurrency.** A session loaded from a store carries its top-level ``"revision"``
(an integer the store keeps beside the JSON). ``save(key, session)`` writes only when the
stored revision is still ``session.get("revision")`` (absent: there must be no stored session
yet), then sets ``session["revision"]`` to the new one; otherwise it raises
:class:`~auwgent.errors.ConflictError` and writes nothing. A run that lost the race therefore
fails instead of silently dropping the other run's turn.

**Conversation locks.** ``lock(key, owner, ttl)`` takes the lock of one conversation for
``ttl`` seconds when nobody (else) holds it, and ``unlock(key, owner)`` releases it if
``owner`` still holds it; ``auwgent serve`` uses them so that one conversation runs in one
worker at a time. A lock whose holder died expires on its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from auwgent.errors import ConflictError
from auwgent.runtime.session import Session
from auwgent.runtime.stores import (
    SessionStoreError,
    _check_key,
    _conflict,
    _decode,
    _encode,
    _revision_problem,
)

__all__ = ["conflict", "expected_revision", "from_stored", "to_stored"]


def expected_revision(key: str, session: Mapping[str, Any]) -> int:
    """The revision a save of ``session`` must find in the store (0: none stored)."""
    problem = _revision_problem(session.get("revision"))
    if problem is not None:
        raise SessionStoreError(f"cannot save session {key!r}: {problem}")
    return int(session.get("revision") or 0)


def to_stored(key: str, session: Mapping[str, Any]) -> str:
    """The session's JSON text without its revision (the store keeps that beside it)."""
    _check_key(key)
    return _encode(key, {k: v for k, v in session.items() if k != "revision"})


def from_stored(key: str, text: str, revision: int, where: str) -> Session:
    """A stored session, checked, with the revision it was read at."""
    session = _decode(key, text, where)
    session["revision"] = revision
    return session


def conflict(key: str, expected: int, found: int | None) -> ConflictError:
    """The error of a save based on a stale revision (0 / ``None``: nothing stored)."""
    return _conflict(key, found or None, expected or None)
