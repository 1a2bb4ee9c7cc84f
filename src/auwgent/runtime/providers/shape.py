"""Small helpers the adapters share to read untrusted provider JSON.

A response whose JSON has the wrong shape (a string where the API sends a list, an object as
message text, a non-integer index) is a :class:`~auwgent.errors.ProviderError` that names the
provider and the field, never a ``TypeError`` from deep inside an adapter. Ids for calls that
came without one are made here too, the same way for every adapter.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any

from auwgent.errors import ProviderError

__all__ = ["MADE_ID_PREFIX", "digest_of", "field", "made_call_id", "wrong_shape"]

# Ids we make up for calls that came without one start with this.
MADE_ID_PREFIX = "auwgent_call_"

_NAMES = {
    dict: "an object",
    list: "a list",
    str: "a string",
    int: "an integer",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
}


def wrong_shape(provider: str, where: str, value: Any, expected: str) -> ProviderError:
    """The error for a field of the wrong JSON type."""
    got = _NAMES.get(type(value), type(value).__name__)
    return ProviderError(
        provider, f"unexpected response shape: {where} is {got}, expected {expected}"
    )


def field(
    provider: str,
    where: str,
    value: Any,
    kind: type | tuple[type, ...],
    *,
    optional: bool = True,
    at: str = "",
) -> Any:
    """``value`` when it is of ``kind`` (or absent/None and ``optional``), else the error.

    The field's path is ``where + at``, joined only for the error (this runs per event).
    Hot paths may test ``type(value) is kind`` themselves and call this only otherwise: a
    value of exactly that type always passes.
    """
    if type(value) is kind or (value is None and optional):
        return value
    if isinstance(value, kind) and not (isinstance(value, bool) and bool not in _as_tuple(kind)):
        return value
    expected = " or ".join(_NAMES[k] for k in _as_tuple(kind))
    raise wrong_shape(provider, where + at, value, expected)


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def made_call_id(request_digest: str, response_id: str, index: int) -> str:
    """A stable id for a call that came without one.

    It depends only on the request (whose history grows every round), the response's own id
    and the call's position, so a response gives the same ids however it was chunked, and
    two rounds of one conversation never share an id.
    """
    seed = f"{request_digest}|{response_id}|{index}".encode()
    return MADE_ID_PREFIX + hashlib.sha256(seed).hexdigest()[:24]


def digest_of(body: Mapping[str, Any]) -> Callable[[], str]:
    """The digest of a request body for :func:`made_call_id`, computed on first use only."""
    cache: list[str] = []

    def digest() -> str:
        if not cache:
            text = json.dumps(body, sort_keys=True, ensure_ascii=False, default=str)
            cache.append(hashlib.sha256(text.encode()).hexdigest())
        return cache[0]

    return digest
