"""The offline model: deterministic answers from the agent's own contract, no network."""

from __future__ import annotations

import hashlib
import math
import re

__all__ = ["hashed_embedding"]

_WORD = re.compile(r"\w+", re.UNICODE)


def hashed_embedding(text: str, dimensions: int = 8) -> list[float]:
    """A deterministic unit vector for ``text``: hashed bag of words.

    Each lower-cased word adds +1 or -1 to one coordinate chosen by its hash, so texts that
    share words point in similar directions (enough for offline retrieval demos). A text
    without words gets a vector seeded by its whole content.
    """
    if dimensions < 1:
        raise ValueError("dimensions must be at least 1")
    vector = [0.0] * dimensions
    for word in _WORD.findall(text.lower()):
        digest = hashlib.sha256(word.encode("utf-8")).digest()
        slot = int.from_bytes(digest[:4], "big") % dimensions
        vector[slot] += 1.0 if digest[4] & 1 else -1.0
    if not any(vector):
        digest = hashlib.sha256(text.encode("utf-8")).digest()
        vector = [(digest[i % len(digest)] - 127.5) / 127.5 for i in range(dimensions)]
    norm = math.sqrt(sum(value * value for value in vector))
    return [value / norm for value in vector]
