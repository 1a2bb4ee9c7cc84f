"""What every session store shares: its errors, the JSON encoding, revisions, conflicts, locks.

The built-in stores (:mod:`auwgent.runtime.stores`) and the networked ones (Redis,
PostgreSQL) all encode, check and revise sessions with the functions here, so they fail alike.

**Optimistic concurrency.** A session loaded from a store carries its top-level ``"revision"``
(an integer the store keeps beside the JSON). ``save(key, session)`` writes only when the
stored revision is still ``session.get("revision")`` (absent: there must be no stored session
yet), then sets ``session["revision"]`` to the new one; otherwise it raises
:class:`~auwgent.errors.ConflictError` and writes nothing. A run that lost the race therefore
fails instead of silently dropping the other run's turn.

**Conversation locks.** ``lock(key, owner, ttl)`` takes the lock of one conversation for
``ttl`` seconds when nobody (else) holds it, and ``unlock(key, owner)`` releases it if
``owner`` still holds it; ``renew(key, owner, ttl)`` extends it to ``ttl`` seconds from now
only while ``owner`` still holds it (``False`` once it expired or another run took it).
``auwgent serve`` uses them, through :class:`auwgent.runtime.leases.Lease`, so that one
conversation runs in one worker at a time. A lock whose holder died expires on its own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

from auwgent.errors import AuwgentError, ConfigError, ConflictError
from auwgent.runtime.session import Session, check_session

__all__ = [
    "SessionStoreError",
    "StoredSessionError",
    "conflict",
    "expected_revision",
    "from_stored",
    "to_stored",
]


class SessionStoreError(AuwgentError):
    """A session could not be saved, or a stored one could not be read back."""


class StoredSessionError(SessionStoreError, ConfigError):
    """A stored session reads back but fails the session checks; the message names the key,
    where it is stored and the field (``session.turns[2].messages[0].role: ...``)."""


# -- encoding and revisions (every store, the built-in ones included) ------------------------


def _check_key(key: object) -> str:
    if not isinstance(key, str) or not key:
        raise SessionStoreError(f"session key must be a non-empty string, got {key!r}")
    return key


def _encode(key: str, session: Mapping[str, Any]) -> str:
    """The session as JSON text; raised before anything is written, so a bad value is harmless.

    The revision is the store's own bookkeeping, kept beside the text, not in it.
    """
    problem = _session_problem(session)
    if problem is None:
        problem = _revision_problem(session.get("revision"))
    if problem is not None:
        raise SessionStoreError(f"cannot save session {key!r}: {problem}")
    body = {k: v for k, v in session.items() if k != "revision"}
    try:
        # Strict JSON (no NaN): another language's runtime must be able to read it back.
        return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as error:
        raise SessionStoreError(
            f"cannot save session {key!r}: it is not JSON-serialisable ({error})"
        ) from error


def _decode(key: str, text: str, where: str) -> Session:
    try:
        value = json.loads(text)
    except ValueError as error:
        raise SessionStoreError(
            f"stored session {key!r} in {where} is corrupt: not valid JSON ({error})"
        ) from error
    return _checked(key, value, where)


def _checked(key: str, value: Any, where: str) -> Session:
    problem = _session_problem(value)
    if problem is not None:
        raise StoredSessionError(f"stored session {key!r} in {where} is unusable: {problem}")
    return cast(Session, value)


def _session_problem(value: Any) -> str | None:
    """What makes ``value`` unusable as a session (the field and why), or ``None``."""
    try:
        check_session(value, None)
    except ConfigError as error:
        return str(error)
    return None


def _revision_problem(revision: Any) -> str | None:
    if revision is None or (
        isinstance(revision, int) and not isinstance(revision, bool) and revision >= 0
    ):
        return None
    return f"'revision' must be a non-negative integer or absent, got {revision!r}"


def _check_revision(key: str, stored: int | None, session: Mapping[str, Any]) -> int:
    """The revision the save of ``session`` creates; ConflictError when it was based on a stale
    one (``stored`` is ``None`` when nothing is stored under ``key``)."""
    expected = session.get("revision")
    if stored != expected:
        raise _conflict(key, stored, expected)
    return 1 if stored is None else stored + 1


def _conflict(key: str, stored: int | None, expected: int | None) -> ConflictError:
    """The error of a save based on a stale revision (``None``: no stored session / never
    loaded from a store)."""
    loaded = "was never loaded from this store" if expected is None else f"has {expected}"
    return ConflictError(
        f"session {key!r} was changed by another run or process (stored revision "
        f"{stored}; the session being saved {loaded}): nothing was saved; load it again "
        "and retry"
    )


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
