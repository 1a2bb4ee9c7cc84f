"""Lenient reading of block bodies, aligned to a declared schema.

A model writes arguments in whatever shape comes naturally; this package reads every shape the
block protocol accepts and lines the result up with the declared fields:

- ``key: value`` lines (any indentation) and ``key = value`` lines;
- a JSON object, or a JS-style object (unquoted keys, single-quoted strings, missing or
  trailing commas), also inside a Markdown code fence;
- dash lists under a ``key:`` line (``- item``, or ``- key: value`` for objects), and nested
  ``key:`` blocks indented under a ``key:`` line with no value;
- unquoted values run to the end of the line, so they may hold spaces, colons, ``@``, ``+``,
  dots, slashes and hyphens; a following line that does not start with ``name:`` continues
  the value (multi-line text);
- nested fields written flat, as dotted keys (``user.address``) or, where exactly one nested
  path joins to it at any depth, as an underscore alias (``user_address_region_city``);
- in a JS-style object, pairs separated only by spaces (``{name: Ada age: 36}``): an unquoted
  value ends where a declared field's name followed by ``:`` starts.

Values are interpreted by their declared type (a string field keeps the text as written; other
fields read JSON-like values) and then coerced with :func:`auwgent.runtime.evaluate.schema.coerce`.
A key given twice with different values raises :class:`BodyError` in every form and at any
depth: the decoder rejects the block rather than guess which one the model meant. A bare
``null`` means "not given".

Hostile bodies are refused with :class:`BodyError`, never with another exception: a body over
:data:`MAX_BODY_CHARS` characters, values nested deeper than :data:`MAX_DEPTH`, a number too
long to read. Every repair the reader made on the way (a JS-style object read leniently, an
alias resolved, a value coerced to its declared type) is appended to the ``repairs`` list the
caller passes, as :data:`Repair` dicts.

Everything here is pure and costs time linear in the text it reads, except
:class:`JsonSnapshot`, which keeps what it read of a streaming JSON body so that each partial
snapshot only reads what arrived since the last.

The package by concern: :mod:`.read` (the entry points), :mod:`.lines` (``key: value``
lines), :mod:`.loose` (loose JSON), :mod:`.align` (alignment to the schema), :mod:`.stream`
(streaming JSON) and :mod:`.common` (limits, errors, repairs); only the names below are its
public face.
"""

from auwgent.runtime.evaluate.schema import object_type
from auwgent.runtime.protocol.values.common import (
    MAX_BODY_CHARS,
    MAX_DEPTH,
    BodyError,
    Repair,
    repair,
)
from auwgent.runtime.protocol.values.read import (
    embedded_object,
    loads_loose,
    looks_structured,
    parse_body,
    parse_value,
)
from auwgent.runtime.protocol.values.stream import JsonPrefix, JsonSnapshot, Stale

__all__ = [
    "MAX_BODY_CHARS",
    "MAX_DEPTH",
    "BodyError",
    "Repair",
    "JsonPrefix",
    "JsonSnapshot",
    "Stale",
    "embedded_object",
    "loads_loose",
    "looks_structured",
    "object_type",
    "parse_body",
    "parse_value",
    "repair",
]
