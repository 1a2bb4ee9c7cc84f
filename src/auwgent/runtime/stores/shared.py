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

**Binaries by reference.** The SQLite, Redis and PostgreSQL stores keep the base64 data of an
input part (an image, a file: :mod:`auwgent.runtime.parts`) longer than
:data:`BLOB_THRESHOLD` characters beside the session, once per content and conversation: the
session text holds ``{"type": "image", "media_type": ..., "data_ref": "sha256:<hex>"}`` in its
place, and ``load`` puts the data back, so the session comes back exactly as it was saved. A
part past :data:`~auwgent.runtime.parts.MAX_PART_BYTES` is refused by ``save`` (nothing is
written), and a reference whose data is missing makes ``load`` fail naming it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any, cast

from auwgent.errors import AuwgentError, ConfigError, ConflictError
from auwgent.runtime.session import Session, check_session

__all__ = [
    "BLOB_THRESHOLD",
    "SessionStoreError",
    "StoredSessionError",
    "conflict",
    "expected_revision",
    "from_stored",
    "join_blobs",
    "parse_stored",
    "split_blobs",
    "stored_refs",
    "to_stored",
]


class SessionStoreError(AuwgentError):
    """A session could not be saved, or a stored one could not be read back."""


class StoredSessionError(SessionStoreError, ConfigError):
    """A stored session reads back but fails the session checks; the message names the key,
    where it is stored and the field (``session.turns[2].messages[0].role: ...``)."""


# -- encoding and revisions (every store, the built-in ones included) ------------------------


def check_key(key: object) -> str:
    if not isinstance(key, str) or not key:
        raise SessionStoreError(f"session key must be a non-empty string, got {key!r}")
    return key


def encode_session(key: str, session: Mapping[str, Any]) -> str:
    """The session as JSON text; raised before anything is written, so a bad value is harmless.

    The revision is the store's own bookkeeping, kept beside the text, not in it.
    """
    problem = session_problem(session)
    if problem is None:
        problem = revision_problem(session.get("revision"))
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


def decode_session(key: str, text: str, where: str) -> Session:
    try:
        value = json.loads(text)
    except ValueError as error:
        raise SessionStoreError(
            f"stored session {key!r} in {where} is corrupt: not valid JSON ({error})"
        ) from error
    return checked_session(key, value, where)


def checked_session(key: str, value: Any, where: str) -> Session:
    problem = session_problem(value)
    if problem is not None:
        raise StoredSessionError(f"stored session {key!r} in {where} is unusable: {problem}")
    return cast(Session, value)


def session_problem(value: Any) -> str | None:
    """What makes ``value`` unusable as a session (the field and why), or ``None``."""
    try:
        check_session(value, None)
    except ConfigError as error:
        return str(error)
    return None


def revision_problem(revision: Any) -> str | None:
    if revision is None or (
        isinstance(revision, int) and not isinstance(revision, bool) and revision >= 0
    ):
        return None
    return f"'revision' must be a non-negative integer or absent, got {revision!r}"


def check_revision(key: str, stored: int | None, session: Mapping[str, Any]) -> int:
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
    problem = revision_problem(session.get("revision"))
    if problem is not None:
        raise SessionStoreError(f"cannot save session {key!r}: {problem}")
    return int(session.get("revision") or 0)


def to_stored(key: str, session: Mapping[str, Any]) -> str:
    """The session's JSON text without its revision (the store keeps that beside it)."""
    check_key(key)
    return encode_session(key, {k: v for k, v in session.items() if k != "revision"})


def from_stored(key: str, text: str, revision: int, where: str) -> Session:
    """A stored session, checked, with the revision it was read at."""
    session = decode_session(key, text, where)
    session["revision"] = revision
    return session


def conflict(key: str, expected: int, found: int | None) -> ConflictError:
    """The error of a save based on a stale revision (0 / ``None``: nothing stored)."""
    return _conflict(key, found or None, expected or None)


# -- binaries by reference (SQLite, Redis, PostgreSQL) ---------------------------------------

#: The length (base64 characters) past which a part's data is stored by reference: 64 KiB.
BLOB_THRESHOLD = 64 * 1024
_BINARY_KINDS = ("image", "file")
_REF = "data_ref"


def _map_parts(value: Any, change: Callable[[Any], Any]) -> Any:
    """``value`` with ``change`` applied to each item of every ``"parts"`` list in it."""
    if isinstance(value, dict):
        return {
            k: [change(p) for p in v]
            if k == "parts" and isinstance(v, list)
            else _map_parts(v, change)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_map_parts(v, change) for v in value]
    return value


def split_blobs(text: str) -> tuple[str, dict[str, str]]:
    """The session text ``text`` (from :func:`to_stored`) with each large part's data replaced
    by a reference, and the data by reference (``"sha256:<hex>"`` → base64)."""
    blobs: dict[str, str] = {}

    def out(part: Any) -> Any:
        if not (
            isinstance(part, dict)
            and part.get("type") in _BINARY_KINDS
            and isinstance(part.get("data"), str)
            and len(part["data"]) > BLOB_THRESHOLD
        ):
            return part
        ref = "sha256:" + hashlib.sha256(part["data"].encode("ascii")).hexdigest()
        blobs[ref] = part["data"]
        return {**{k: v for k, v in part.items() if k != "data"}, _REF: ref}

    if '"parts":' not in text:
        return text, blobs
    value = _map_parts(json.loads(text), out)
    if not blobs:
        return text, blobs
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")), blobs


def parse_stored(key: str, text: str, where: str) -> Any:
    """A stored session's JSON value, unchecked (its references not yet resolved)."""
    try:
        return json.loads(text)
    except ValueError as error:
        raise SessionStoreError(
            f"stored session {key!r} in {where} is corrupt: not valid JSON ({error})"
        ) from error


def stored_refs(value: Any) -> list[str]:
    """The data references in a parsed stored session, in order, without repeats."""
    refs: dict[str, None] = {}

    def note(part: Any) -> Any:
        if isinstance(part, dict) and isinstance(part.get(_REF), str):
            refs[part[_REF]] = None
        return part

    _map_parts(value, note)
    return list(refs)


def join_blobs(
    key: str, value: Any, blobs: Mapping[str, str], revision: int, where: str
) -> Session:
    """The stored session ``value`` with its references replaced by their data, checked."""

    def back(part: Any) -> Any:
        if not (isinstance(part, dict) and isinstance(part.get(_REF), str)):
            return part
        ref = part[_REF]
        if ref not in blobs:
            raise SessionStoreError(
                f"stored session {key!r} in {where} is corrupt: the data {ref} of a part is missing"
            )
        return {**{k: v for k, v in part.items() if k != _REF}, "data": blobs[ref]}

    session = checked_session(key, _map_parts(value, back), where)
    session["revision"] = revision
    return session
