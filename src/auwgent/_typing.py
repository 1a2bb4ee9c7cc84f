"""Typing helpers the package needs on every Python it supports (3.10 and later)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if sys.version_info >= (3, 11):
    from typing import assert_never
else:  # pragma: no cover - Python 3.10
    from typing_extensions import assert_never

if TYPE_CHECKING:
    from typing_extensions import Never

__all__ = ["assert_never", "unhandled"]


def unhandled(value: Never) -> Any:
    """The last branch of a dispatch over a closed union whose values come from outside (an IR
    document read from a file): like ``assert_never``, the type checker fails when a member is
    left unhandled, but at run time the value that reached it is handed back, for the caller
    to refuse with a message of its own (``unknown type kind 'tuple'``)."""
    return value
