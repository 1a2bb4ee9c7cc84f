"""What every part of body reading shares: the size limits, :class:`BodyError` and the
:data:`Repair` records."""

from __future__ import annotations

MAX_BODY_CHARS = 1 << 20
"""The longest block body or native argument text read (1,048,576 characters)."""
MAX_DEPTH = 64
"""The deepest nesting of objects and lists in one body."""

Repair = dict[str, str]
"""One repair: ``{"kind": ..., "path": ..., "detail": ...}``; ``path`` is the dotted field
path it concerns (``""`` for the whole body). See docs/protocol.md for the kinds."""


class BodyError(ValueError):
    """A body that cannot be read without guessing; the message is meant for the model."""


def repair(kind: str, path: str, detail: str) -> Repair:
    """A :data:`Repair` dict."""
    return {"kind": kind, "path": path, "detail": detail}
