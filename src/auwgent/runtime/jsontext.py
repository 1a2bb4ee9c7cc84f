"""JSON writers that the runtime uses for every call, each made once.

``json.dumps`` with any option builds a new ``JSONEncoder`` per call, which costs more than
encoding a small value; an encoder keeps no state between calls, so these are shared.
"""

from __future__ import annotations

import json

__all__ = ["canonical", "compact", "request_body", "text"]

#: JSON text with non-ASCII characters kept as they are (tool-call arguments, helper input).
text = json.JSONEncoder(ensure_ascii=False).encode

#: Tool results as the model sees them: no spaces after separators (fewer tokens), objects
#: JSON does not know written as their ``str()``.
compact = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode

#: One text per value whatever its key order (the loop detector compares calls by it).
canonical = json.JSONEncoder(sort_keys=True, separators=(",", ":"), default=str).encode

_request = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode


def request_body(value: object) -> bytes:
    """A provider request's body: compact UTF-8 JSON; NaN and infinities are refused
    (``ValueError``), as no API reads them."""
    return _request(value).encode("utf-8")
