"""Lenient reading of block bodies, aligned to a declared schema.

A model writes arguments in whatever shape comes naturally; this module reads every shape the
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
fields read JSON-like values) and then coerced with :func:`auwgent.runtime.schema.coerce`.
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
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from auwgent.runtime.schema import IRField, IRType, Types, coerce, field_map, resolve, validate

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
]


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


def object_type(fields: Sequence[IRField]) -> IRType:
    """An inline IR object type holding ``fields``."""
    return {"kind": "object", "fields": list(fields)}


def parse_body(
    text: str,
    fields: Sequence[IRField],
    types: Types,
    *,
    partial: bool = False,
    stream: JsonSnapshot | None = None,
    repairs: list[Repair] | None = None,
) -> dict[str, Any]:
    """Read a block body into a dict aligned to ``fields``.

    With ``partial=True`` (a body still streaming) nothing raises: only what is certain is
    read (the line still being typed is left out unless it is plain text for a text field),
    and conflicting duplicates keep the later value. ``stream``, the body's
    :class:`JsonSnapshot`, reads a streaming JSON body incrementally (it may raise
    :class:`Stale`, see there). ``repairs`` collects what the reader repaired (final reads
    only).
    """
    if partial:
        if stream is not None and len(text) <= MAX_BODY_CHARS:
            snapshot = stream.read(text, fields, types)
            if snapshot is not None:
                return snapshot
            if not stream.fresh:
                raise Stale
        prefix = stream.prefix(text) if stream is not None else None
        try:
            read = _guarded(_parse_body, text, fields, types, True, prefix, None)
        except BodyError:
            return {}  # too broken to show yet; the final read will say why
    else:
        read = _guarded(_parse_body, text, fields, types, False, None, repairs)
    return dict(read)


def _guarded(read: Any, text: str, *args: Any) -> Any:
    """Run ``read`` on ``text`` within the documented limits: anything hostile is a
    :class:`BodyError` for the model, never another exception."""
    if len(text) > MAX_BODY_CHARS:
        raise BodyError(
            f"the body is {len(text)} characters long; at most {MAX_BODY_CHARS} are read"
        )
    try:
        return read(text, *args)
    except RecursionError:
        raise BodyError(f"values are nested deeper than {MAX_DEPTH} levels") from None


def _parse_body(
    text: str,
    fields: Sequence[IRField],
    types: Types,
    partial: bool,
    json_prefix: JsonPrefix | None,
    repairs: list[Repair] | None,
) -> dict[str, Any]:
    target = object_type(fields)
    body = _strip_fence(text.replace("\r\n", "\n")).strip()
    if not body:
        return {}
    reader = _Reader(types, partial, repairs)
    if body[0] == "{":
        value = _fast_partial(text, json_prefix) if partial and json_prefix else None
        value = reader.loose(body, target) if value is None else value
        if not isinstance(value, dict):
            raise BodyError("the body must be an object: `name: value` lines or a JSON object")
        if reader.plain(target)(value, 1):
            return value  # already what aligning and coercing would make of it
        result = reader.align(list(value.items()), target)
    else:
        open_tail = partial and not text.endswith("\n")
        result = reader.align(_LineParser(body, partial, open_tail).entries(), target)
    return dict(reader.coerce(result, target))


def parse_value(
    text: str,
    type_: IRType,
    types: Types,
    *,
    partial: bool = False,
    stream: JsonSnapshot | None = None,
    repairs: list[Repair] | None = None,
) -> Any:
    """Read a body holding one value of ``type_`` (an object type reads as in ``parse_body``)."""
    resolved = resolve(type_, types)
    if resolved["kind"] == "object":
        return parse_body(
            text, resolved["fields"], types, partial=partial, stream=stream, repairs=repairs
        )
    return _guarded(_parse_scalar, text, type_, types, partial, repairs)


def _parse_scalar(
    text: str, type_: IRType, types: Types, partial: bool, repairs: list[Repair] | None
) -> Any:
    reader = _Reader(types, partial, repairs)
    body = _strip_fence(text.replace("\r\n", "\n")).strip()
    return reader.coerce(reader.interpret(_Raw(body), type_), type_)


def looks_structured(text: str, name: str) -> bool:
    """True when a body reads as fields rather than as plain text: it is an object or list
    (also in a code fence), its first line is a ``key: value`` line, or a line names the
    parameter ``name`` itself. A lone string parameter takes a body as its raw value only when
    this is False."""
    body = _strip_fence(text.replace("\r\n", "\n")).strip()
    if body[:1] in ("{", "["):
        return True
    first, _, rest = body.partition("\n")
    if _KEY_LINE.fullmatch(first):
        return True
    for line in rest.split("\n"):
        match = _KEY_LINE.fullmatch(line)
        if match and _unquote_key(match.group("key")) == name:
            return True
    return False


def embedded_object(text: str) -> str:
    """The object in an answer that wraps it in prose: the first code fence's content, else
    the text from the first ``{`` to the last ``}``; the text itself when it is neither."""
    fence = _ANY_FENCE.search(text)
    if fence:
        return fence.group("body")
    start, end = text.find("{"), text.rfind("}")
    if 0 < start < end and not _KEY_LINE.match(text):
        return text[start : end + 1]
    return text


def loads_loose(text: str, *, partial: bool = False) -> Any:
    """Parse JSON, or failing that a JS-style value (see the module docstring) in which bare
    words stay strings (except ``null``) for the declared type to interpret. With
    ``partial=True`` an unfinished value is closed where it stops."""
    return _guarded(lambda t: _Loose(t, partial).document(), text)


# ---------------------------------------------------------------------------------------------
# Streaming JSON


_STRING_BODY = re.compile(r'[^"\\]*')
_STRUCTURAL = re.compile(r'["{}\[\],:]')


class JsonPrefix:
    """Follows a JSON text as it streams, so that a parseable prefix is known at any moment.

    ``feed`` costs time linear in the piece; :meth:`completed` gives the text so far cut back
    to the last complete value (or with an open string value closed) plus the closing
    brackets, ready for ``json.loads``.
    """

    def __init__(self) -> None:
        self._stack: list[str] = []
        self._in_string = False
        self._escape = False
        self._expect_key = False
        self._string_is_key = False
        self._pos = 0
        self._safe = 0
        self._safe_depth = 0
        self.closed = False  # the top-level value's closing bracket has arrived

    def feed(self, piece: str) -> None:
        """Follow the next piece of the text."""
        base, i, n = self._pos, 0, len(piece)
        while i < n:
            if self._in_string:
                i = self._string(piece, i, base)
                continue
            structural = _STRUCTURAL.search(piece, i)  # skip what changes nothing
            if structural is None:
                break
            i = structural.start()
            char = piece[i]
            i += 1
            if char == '"':
                self._in_string = True
                self._string_is_key = self._expect_key
            elif char in "{[":
                self._stack.append(char)
                self._expect_key = char == "{"
                self._mark(base + i)
            elif char in "}]":
                if self._stack:
                    self._stack.pop()
                self.closed = not self._stack
                self._expect_key = False
                self._mark(base + i)
            elif char == ",":
                self._expect_key = bool(self._stack) and self._stack[-1] == "{"
                self._mark(base + i - 1)  # cut before the comma
            elif char == ":":
                self._expect_key = False
        self._pos = base + n

    def _string(self, piece: str, i: int, base: int) -> int:
        if self._escape:
            self._escape = False
            return i + 1
        match = _STRING_BODY.match(piece, i)
        i = match.end() if match else i
        if i >= len(piece):
            return i
        if piece[i] == "\\":
            self._escape = True
            return i + 1
        self._in_string = False
        if not self._string_is_key:
            self._mark(base + i + 1)
        return i + 1

    def _mark(self, at: int) -> None:
        self._safe, self._safe_depth = at, len(self._stack)

    def completed(self, text: str) -> tuple[str, str]:
        """``(with the open string closed, cut back to the last complete value)``."""
        closers = "".join("}" if c == "{" else "]" for c in reversed(self._stack))
        cut = text[: self._safe] + "".join(
            "}" if c == "{" else "]" for c in reversed(self._stack[: self._safe_depth])
        )
        if self._in_string and not self._string_is_key:
            body = text[:-1] if self._escape else text
            return body + _OPEN_MARK + '"' + closers, cut
        return cut, cut


_OPEN_MARK = "\ue000"  # ends the open string value that ``completed`` closes


def _fast_partial(text: str, prefix: JsonPrefix) -> Any:
    """A streaming JSON body read through ``json.loads``; None when that cannot work. The
    string still being typed (always the last value) comes back as an open :class:`_Raw`, so
    the reader shows it only where it is a prefix of the final value."""
    with_open, cut = prefix.completed(text)
    for candidate in dict.fromkeys((with_open, cut)):
        opening = _OPEN_FENCE.match(candidate)  # a code fence whose end has not arrived
        try:
            value = json.loads(candidate[opening.end() :] if opening else candidate)
        except ValueError:  # not JSON yet, or a number too long to read (the final says so)
            continue
        if not isinstance(value, dict):
            return None
        if candidate is cut or _mark_open(value):
            return value
    return None


def _mark_open(node: Any) -> bool:
    """Replace the last value of ``node`` (at any depth), the open string, by an open
    :class:`_Raw`; False when it is not there (a duplicate key moved it): use the cut text."""
    while isinstance(node, (dict, list)) and node:
        where = next(reversed(node)) if isinstance(node, dict) else len(node) - 1
        value = node[where]
        if isinstance(value, str):
            if not value.endswith(_OPEN_MARK):
                return False
            node[where] = _Raw(value[: -len(_OPEN_MARK)], open=True)
            return True
        node = value
    return False


class Stale(Exception):  # noqa: N818 (a signal, not an error)
    """Raised by a partial read that would have to re-read the whole body (it is not JSON, or
    its open part cannot be read piece by piece) while :attr:`JsonSnapshot.fresh` is False:
    the caller shows the previous snapshot again."""


_JSON_WS = re.compile(r"[ \t\n\r]*")
_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_JSON_TOKEN = re.compile(r'[^\s,\]}"\[{:]*')
_SEPARATOR = re.compile(r"[ \t\n\r]*,[ \t\n\r]*")
_MARKS = re.compile(r'[{}\[\],"]')  # after the value, these would change a whole read
_SCAN = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # one JSON value at a position, as ``json.loads`` reads it
_ABSENT = object()  # a field a whole read leaves out (``null``)


@dataclass(slots=True)
class _Level:
    """One open object or list on the path to where the text ends."""

    start: int  # where its bracket is
    array: bool
    declared: IRType | None  # the type its place declares (None: read without one)
    fields: dict[str, IRField] | None  # an object's declared fields (None: untyped)
    items: IRType | None  # a list's declared item type
    atomic: bool  # in a union: read whole once complete, never piece by piece
    done: Any  # the values read so far: a list, or a dict by key (``_ABSENT``: left out)
    key: str = ""  # an object's key whose value is being read
    plain: bool = True  # every key names itself (no dotted or underscore path)
    holes: bool = False  # ``done`` holds an ``_ABSENT``


class JsonSnapshot:
    """The partial snapshot of one streaming JSON body, built as the text grows.

    :meth:`read` parses only the text added since the last call: every value completed since
    (an item of a list, a field of an object, at any depth) is parsed by ``json``'s scanner
    and aligned and coerced once; what is still open (the path of objects and lists down to
    where the text ends, and an open string at its end) is assembled afresh from those values,
    so a snapshot costs what arrived plus a copy of each open object and list. Completed
    values are shared by successive snapshots and never changed afterwards; the open path is
    new in each.

    The result is exactly what a whole partial read of the same text gives. Whenever that
    cannot be shown piece by piece (the body is not strict JSON, a key is a dotted or
    underscore path, a union is still open, the nesting is too deep), :meth:`read` answers
    None and the caller reads the whole text (with :meth:`prefix`); the body stays on that
    path once its text is not JSON. ``fresh`` (set by the caller) says whether such a whole
    read is affordable now; when it is not the read raises :class:`Stale`.
    """

    def __init__(self) -> None:
        self.fresh = True
        self.values_read = 0  # completed values aligned so far (each once)
        self._prefix = JsonPrefix()
        self._fed = 0
        self._fields: Sequence[IRField] | None = None
        self._reader: _Reader | None = None
        self._stack: list[_Level] = []
        self._pos = 0
        self._expect = "start"
        self._first = False  # the innermost level has no value yet
        self._broken = False
        self._top: dict[str, Any] | None = None  # the finished top-level object
        self._base = 0  # where the text read by this call starts in the body
        self._full = ""  # the body (for a closed level read whole again)
        self._stop = 0  # where the step that stopped began
        self._open_at: int | None = None

    def prefix(self, text: str) -> JsonPrefix:
        """The :class:`JsonPrefix` of ``text`` for a whole read, caught up lazily."""
        self._prefix.feed(text[self._fed :])
        self._fed = len(text)
        return self._prefix

    def read(self, text: str, fields: Sequence[IRField], types: Types) -> dict[str, Any] | None:
        """The partial snapshot of ``text`` (the whole body so far) read as ``fields``, or
        None when only a whole read can give it."""
        if self._broken:
            return None
        if self._reader is None or fields is not self._fields:
            self._fields, self._reader = fields, _Reader(types, True)
            self._stack, self._pos, self._expect, self._top = [], 0, "start", None
        reader = self._reader
        try:
            base = self._pos  # parsed before: only the rest is read (and copied) again
            tail = text[base:]
            open_string = self._advance(tail, base, text, reader, object_type(fields))
        except (BodyError, ValueError, StopIteration, RecursionError):
            self._broken = True  # not JSON (or a value a whole read refuses): read whole
            return None
        if self._broken:
            return None
        if self._top is not None:
            return dict(self._top)
        if not self._stack or any(level.atomic or not level.plain for level in self._stack):
            return None
        try:
            return self._assemble(tail, open_string, reader)  # type: ignore[no-any-return]
        except BodyError:  # the open string reads as a broken list: a whole read says {}
            return None

    # -- parsing ------------------------------------------------------------------------------

    def _advance(
        self, text: str, base: int, full: str, reader: _Reader, target: IRType
    ) -> int | None:
        """Parse ``text``, what follows ``base`` in ``full`` (where the last call stopped);
        the start of an open string value at its end, if there is one."""
        self._base, self._full, self._open_at = base, full, None
        pos: int | None = 0
        if self._expect == "start":
            pos = self._start(text, target, reader)
        n = len(text)
        while pos is not None:
            pos = _JSON_WS.match(text, pos).end()  # type: ignore[union-attr]
            if pos >= n:
                break
            if self._expect == "end":  # after the object: text with brackets is not JSON
                self._broken = self._broken or _MARKS.search(text, pos) is not None
                pos = n
                break
            self._stop = pos
            if self._expect == "sep":
                pos = self._separator(text, pos, reader)
            elif self._expect == "key":
                pos = self._key(text, pos, reader)
            elif self._expect == "colon":
                pos = self._colon(text, pos)
            else:
                pos = self._value(text, pos, reader)
        self._pos = base + (self._stop if pos is None else pos)
        return self._open_at

    def _start(self, text: str, target: IRType, reader: _Reader) -> int | None:
        opening = _OPEN_FENCE.match(text)
        pos = _JSON_WS.match(text, opening.end() if opening else 0).end()  # type: ignore[union-attr]
        self._stop = 0
        if pos >= len(text) or (opening is None and text[pos] == "`" and "\n" not in text):
            return None  # nothing yet, or a code fence's first line still arriving
        if text[pos] != "{":
            return self._broke()
        self._push(pos, False, target, reader)
        self._expect = "key"
        return pos + 1

    def _broke(self) -> int | None:
        """The text is not JSON: from here on only a whole read gives the snapshot."""
        self._broken = True
        return None

    def _separator(self, text: str, pos: int, reader: _Reader) -> int | None:
        level = self._stack[-1]
        separator = _SEPARATOR.match(text, pos)
        if separator is not None:
            self._expect, self._first = "value" if level.array else "key", False
            return separator.end()
        if text[pos] != ("]" if level.array else "}"):
            return self._broke()
        return self._close(pos, reader)

    def _key(self, text: str, pos: int, reader: _Reader) -> int | None:
        level = self._stack[-1]
        if text[pos] == "}" and self._first:
            return self._close(pos, reader)
        if text[pos] != '"':
            return self._broke()
        match = _JSON_STRING.match(text, pos)
        if match is None:
            return None  # a key still being typed
        level.key = _SCAN(text, pos)[0]
        if level.fields is not None and level.key not in level.fields:
            path = reader.path_of(level.key, level.declared) if level.declared else None
            level.plain = level.plain and path is None  # a dotted or underscore path
        self._expect = "colon"
        return match.end()

    def _colon(self, text: str, pos: int) -> int | None:
        if text[pos] != ":":
            return self._broke()
        self._expect = "value"
        return pos + 1

    def _value(self, text: str, pos: int, reader: _Reader) -> int | None:
        level, char = self._stack[-1], text[pos]
        if level.array and not level.atomic:
            after = self._items(text, pos, level, reader)
            if after != pos:
                return after
        if char == "]" and self._first and level.array:
            return self._close(pos, reader)
        if char in "{[":
            try:
                value, end = _SCAN(text, pos)
            except (StopIteration, ValueError):  # still open (or broken inside: found below)
                if len(self._stack) >= MAX_DEPTH:
                    return self._broke()
                self._push(pos, char == "[", self._child_type(level), reader)
                self._expect = "value" if char == "[" else "key"
                return pos + 1
        elif char == '"':
            match = _JSON_STRING.match(text, pos)
            if match is None:
                self._open_at = pos
                return None
            value, end = _SCAN(text, pos)[0], match.end()
        else:
            token = _JSON_TOKEN.match(text, pos).end()  # type: ignore[union-attr]
            if token >= len(text):
                return None  # a number or word still being typed
            value, end = _SCAN(text, pos)
            after = _JSON_WS.match(text, end).end()  # type: ignore[union-attr]
            if end != token or (after < len(text) and text[after] not in ",]}"):
                return self._broke()
            if after >= len(text):
                return None  # complete only once a comma or bracket follows
        self._add(level, value, reader)
        self._expect = "sep"
        return end  # type: ignore[no-any-return]

    def _items(self, text: str, pos: int, level: _Level, reader: _Reader) -> int:
        """Read the items from ``pos`` on that a comma follows, in one tight loop (the bulk of
        a long list); where the next item starts."""
        check = reader.plain(level.items)
        depth = len(self._stack)
        done = level.done
        start = pos
        while True:
            try:
                value, end = _SCAN(text, pos)
            except (StopIteration, ValueError):  # still open, or broken: the general path says
                break
            separator = _SEPARATOR.match(text, end)
            if separator is None:
                break
            if check(value, depth + 1):
                done.append(value)
            else:
                reader.depth = depth
                done.append(reader.read(value, level.items))
            self.values_read += 1
            pos = separator.end()
        if pos != start:
            self._first = False
        return pos

    def _push(self, pos: int, array: bool, declared: IRType | None, reader: _Reader) -> None:
        resolved = resolve(declared, reader.types) if declared is not None else None
        kind = resolved["kind"] if resolved is not None else None
        parent = self._stack[-1] if self._stack else None
        self._stack.append(
            _Level(
                start=self._base + pos,
                array=array,
                declared=declared,
                fields=reader.fields(resolved)
                if resolved is not None and kind == "object" and not array
                else None,
                items=resolved["items"]
                if resolved is not None and kind == "array" and array
                else None,
                atomic=kind == "union" or (parent is not None and parent.atomic),
                done=[] if array else {},
            )
        )
        self._first = True

    def _child_type(self, level: _Level) -> IRType | None:
        """The declared type of the value ``level`` is reading now (None: untyped)."""
        if level.array:
            return level.items
        if level.fields is None or level.key is None:
            return None
        field = level.fields.get(level.key)
        return field["type"] if field is not None else None

    def _add(self, level: _Level, value: Any, reader: _Reader) -> None:
        """A value completed inside ``level``: aligned and coerced now, once."""
        if level.atomic or not level.plain:
            return  # the level is read whole once it closes
        self.values_read += 1
        reader.depth = len(self._stack)  # as deep as a whole read would be here
        if level.array:
            level.done.append(reader.read(value, level.items))
        elif value is None:
            level.done[level.key] = _ABSENT  # `null`: not given
            level.holes = True
        else:
            level.done[level.key] = reader.read(value, self._child_type(level))

    def _close(self, pos: int, reader: _Reader) -> int:
        """The innermost level's closing bracket at ``pos``; where reading goes on."""
        level = self._stack.pop()
        self._first = False
        parent = self._stack[-1] if self._stack else None
        self._expect = "sep" if parent is not None else "end"
        if parent is not None and (parent.atomic or not parent.plain):
            return pos + 1
        if level.plain and not level.atomic:
            value: Any = _present(level) if level.holes else level.done  # no longer grows
        else:
            self.values_read += 1
            reader.depth = len(self._stack)
            value = reader.read(_SCAN(self._full, level.start)[0], level.declared)
        if parent is None:
            self._top = value
        elif parent.array:
            parent.done.append(value)
        else:
            parent.done[parent.key] = value
        return pos + 1

    # -- the snapshot -------------------------------------------------------------------------

    def _assemble(self, text: str, open_string: int | None, reader: _Reader) -> Any:
        """The open path, innermost first: each level's values so far (copied) plus the level
        below it, and at the bottom the open string where a whole read would show it."""
        stack = self._stack
        child: Any = _NOTHING
        if open_string is not None and all(_last(level) for level in stack):
            child = self._open_string(text[open_string + 1 :], stack[-1], reader)
        for level in reversed(stack):
            if level.array:
                value: Any = list(level.done)
                if child is not _NOTHING and child is not _OPEN:
                    value.append(child)
            else:
                value = dict(level.done)
                if child is _OPEN:
                    value.pop(level.key, None)  # its earlier value too, as in a whole read
                elif child is not _NOTHING:
                    value[level.key] = child
                if level.holes:
                    value = {k: v for k, v in value.items() if v is not _ABSENT}
            child = value
        return child

    def _open_string(self, body: str, level: _Level, reader: _Reader) -> Any:
        """The string value still being typed at the end; ``_NOTHING`` when its text is not
        readable yet (an escape cut in two), ``_OPEN`` when it is not shown."""
        run = len(body) - len(body.rstrip("\\"))
        if run % 2:
            body = body[:-1]  # an escape whose second half has not arrived
        try:
            text = _SCAN('"' + body + '"', 0)[0]
        except ValueError:
            return _NOTHING
        type_ = self._child_type(level)
        reader.depth = len(self._stack)
        value = reader.interpret(_Raw(text, open=True), type_)
        if value is _OPEN or type_ is None:
            return value
        return reader.coerce(value, type_)


_NOTHING = object()  # no value below this level yet


def _last(level: _Level) -> bool:
    """Whether the value ``level`` is reading comes last in it (a key given twice keeps its
    first place): a whole read shows an open string only there."""
    if level.array or level.key not in level.done:
        return True
    return bool(next(reversed(level.done)) == level.key)


def _present(level: _Level) -> dict[str, Any]:
    return {k: v for k, v in level.done.items() if v is not _ABSENT}


# ---------------------------------------------------------------------------------------------
# Raw lines


@dataclass(slots=True)
class _Raw:
    """A value exactly as written on its line(s), interpreted later by the declared type."""

    first: str
    more: list[str] = field(default_factory=list)  # continuation lines, joined once at the end
    open: bool = False  # a streaming body's last line, still being typed

    @property
    def text(self) -> str:
        return "\n".join([self.first, *self.more]) if self.more else self.first


Entries = list[tuple[str, Any]]  # values: _Raw, list (dash list), Entries (nested block), JSON

_KEY_LINE = re.compile(
    r"""[ \t]*(?P<key>"[^"\n]+"|'[^'\n]+'|[A-Za-z_$][\w$.\-]*)[ \t]*"""
    r"""(?::(?=\s|$)|:(?!//)|=(?!=))(?P<rest>.*)"""
)
_DASH_LINE = re.compile(r"[ \t]*-(?:[ \t]+(?P<rest>.*)|$)")
_FENCE = re.compile(r"\A\s*```[\w-]*[ \t]*\n(?P<body>.*?)\n?[ \t]*```\s*\Z", re.S)


_ANY_FENCE = re.compile(r"```[\w-]*[ \t\r]*\n(?P<body>.*?)\n?[ \t\r]*```", re.S)
_OPEN_FENCE = re.compile(r"\s*```[\w-]*[ \t\r]*\n")


def _strip_fence(text: str) -> str:
    """The body inside a Markdown code fence (one never closed, too)."""
    match = _FENCE.match(text)
    if match:
        return match.group("body")
    opening = _OPEN_FENCE.match(text)
    return text[opening.end() :] if opening else text


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _unquote_key(key: str) -> str:
    return key[1:-1] if key[:1] in "\"'" and key[-1:] == key[:1] and len(key) > 1 else key


class _LineParser:
    """``key: value`` lines, nested blocks and dash lists, by indentation (a YAML subset).

    ``open_tail``: the last line is still being typed (a streaming body); what it holds is not
    certain yet, so it only ever yields a plain text value (see :meth:`_Reader.interpret`).
    """

    def __init__(self, text: str, partial: bool, open_tail: bool = False) -> None:
        self.lines = text.split("\n")
        self.pos = 0
        self.partial = partial
        self.open_line = len(self.lines) - 1 if open_tail else -1

    def entries(self) -> Entries:
        entries = self._mapping(-1, 0)
        if self.pos < len(self.lines) and not self.partial:
            line = self.lines[self.pos].strip()
            raise BodyError(f"cannot read the line {line!r}: expected `name: value`")
        return entries

    def _next_nonblank(self, start: int) -> int:
        while start < len(self.lines) and not self.lines[start].strip():
            start += 1
        return start

    def _mapping(self, parent: int, depth: int) -> Entries:
        if depth > MAX_DEPTH:
            raise BodyError(f"values are nested deeper than {MAX_DEPTH} levels")
        entries: Entries = []
        while (i := self._next_nonblank(self.pos)) < len(self.lines):
            line = self.lines[i]
            if _indent(line) <= parent:
                break
            match = _KEY_LINE.fullmatch(line)
            if match is None or (i == self.open_line and not match.group("rest").strip()):
                if i == self.open_line:  # a key or a continuation still being typed
                    self.pos = i + 1
                    continue
                if entries and isinstance(entries[-1][1], _Raw):
                    self._continue(entries[-1][1], i)
                    continue
                if self.partial:
                    self.pos = i + 1
                    continue
                break
            self.pos = i + 1
            key = _unquote_key(match.group("key"))
            value = self._value(match.group("rest").strip(), _indent(line), depth)
            entries.append((key, value))
        return entries

    def _continue(self, raw: _Raw, i: int) -> None:
        # Blank lines inside a multi-line value are kept; the final strip drops trailing ones.
        raw.more += self.lines[self.pos : i]
        raw.more.append(self.lines[i].strip())
        self.pos = i + 1

    def _value(self, rest: str, indent: int, depth: int) -> Any:
        line = self.pos - 1
        if rest in ("", "|", ">"):
            nxt = self._next_nonblank(self.pos)
            if rest == "" and self._dash_at(nxt, indent):
                return self._list(indent, depth + 1, own_column=True)
            if nxt < len(self.lines) and _indent(self.lines[nxt]) > indent:
                if _DASH_LINE.fullmatch(self.lines[nxt]):
                    return self._list(indent, depth + 1)
                if rest == "" and _KEY_LINE.fullmatch(self.lines[nxt]):
                    entries = self._mapping(indent, depth + 1)
                    # Empty only when its one line is still being typed: nothing certain yet.
                    return entries or _Raw("", open=True)
                return self._block_text(indent)
            return _Raw("", open=self.partial and nxt >= len(self.lines))
        if rest[0] in "[{" and _depth(rest) > 0:
            return self._bracketed(rest)
        return _Raw(rest, open=line == self.open_line)

    def _dash_at(self, i: int, indent: int) -> bool:
        """Whether line ``i`` is a complete `- item` line at column ``indent`` (as YAML reads
        it, a list under the ``key:`` line above, not text continuing it)."""
        if i >= len(self.lines) or i == self.open_line:
            return False
        line = self.lines[i]
        return _indent(line) == indent and _DASH_LINE.fullmatch(line) is not None

    def _block_text(self, indent: int) -> _Raw:
        taken: list[str] = []
        while self.pos < len(self.lines):
            line = self.lines[self.pos]
            if line.strip() and _indent(line) <= indent:
                break
            if self.pos != self.open_line:
                taken.append(line.strip())
            self.pos += 1
        return _Raw("\n".join(taken).strip())

    def _bracketed(self, first: str) -> _Raw:
        # Counted line by line (strings do not span lines), so a long value costs one pass.
        taken, depth = [first], _depth(first)
        while self.pos < len(self.lines) and depth > 0:
            taken.append(self.lines[self.pos])
            depth += _depth(self.lines[self.pos])
            self.pos += 1
        return _Raw("\n".join(taken), open=self.partial and depth > 0)

    def _list(self, parent: int, depth: int, *, own_column: bool = False) -> list[Any]:
        """Dash lines indented more than their key's ``parent`` column (or at it, with
        ``own_column``); a line that is not one continues the last item's text when indented
        more than the key, and ends the list otherwise."""
        floor = parent - 1 if own_column else parent
        if depth > MAX_DEPTH:
            raise BodyError(f"values are nested deeper than {MAX_DEPTH} levels")
        items: list[Any] = []
        while (i := self._next_nonblank(self.pos)) < len(self.lines):
            line = self.lines[i]
            dash = _DASH_LINE.fullmatch(line)
            if i == self.open_line:  # an item still being typed
                self.pos = i + 1
                continue
            if _indent(line) <= floor or dash is None:
                if (
                    dash is None
                    and _indent(line) > parent
                    and items
                    and isinstance(items[-1], _Raw)
                ):
                    self._continue(items[-1], i)
                    continue
                break
            self.pos = i + 1
            items.append(self._item((dash.group("rest") or "").strip(), _indent(line), depth))
        return items

    def _item(self, rest: str, indent: int, depth: int) -> Any:
        match = _KEY_LINE.fullmatch(rest)
        if match is None or rest[:1] in "[{\"'":
            return self._value(rest, indent, depth)
        key = _unquote_key(match.group("key"))
        first = (key, self._value(match.group("rest").strip(), indent, depth))
        return [first, *self._mapping(indent, depth + 1)]


def _depth(line: str) -> int:
    """Brackets opened minus brackets closed on one line, outside strings."""
    depth = 0
    for token in _BRACKET_TOKENS.finditer(line):
        piece = token.group()
        if piece in ("[", "{"):
            depth += 1
        elif piece in ("]", "}"):
            depth -= 1
    return depth


_BRACKET_TOKENS = re.compile(r""""(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?|[\[\]{}]""")


# ---------------------------------------------------------------------------------------------
# Loose JSON / JS-style values


_WS = re.compile(r"(?:\s+|//[^\n]*|/\*.*?\*/)+", re.S)
_DQ = re.compile(r'"((?:[^"\\]|\\.)*)"', re.S)
_SQ = re.compile(r"'((?:[^'\\]|\\.)*)'", re.S)
_BARE_KEY = re.compile(r"[^\s:=,{}\[\]\"']+")
_BARE_VALUE = re.compile(r"[^,{}\[\]\n]*")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "/": "/"}


_JSON_DECODERS: dict[bool, json.JSONDecoder] = {}


def _json_decoder(partial: bool) -> json.JSONDecoder:
    """A JSON decoder keeping duplicate keys as ``_pairs_to_dict`` says, made once per mode.

    ``json.loads`` with a hook builds a new decoder and scanner on every call, which cost
    more than decoding a tool call's short arguments.
    """
    decoder = _JSON_DECODERS.get(partial)
    if decoder is None:
        decoder = _JSON_DECODERS[partial] = json.JSONDecoder(
            object_pairs_hook=lambda pairs: _pairs_to_dict(pairs, partial=partial)
        )
    return decoder


def _pairs_to_dict(pairs: list[tuple[str, Any]], *, partial: bool = False) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) == len(pairs):
        return out  # no key given twice (the common case, read at C speed)
    out = {}
    for key, value in pairs:
        if key in out and _plain(out[key]) != _plain(value) and not partial:
            raise _duplicate(key, out[key], value)
        out[key] = value
    return out


_SPLIT = re.compile(r"[ \t]+([A-Za-z_$][\w$.\-]*)[ \t]*[:=]")
_JSON_WORD = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null")
_LOOSE_REPAIRS = {
    "unquoted_key": "a key without quotes",
    "unquoted_value": "a text value without quotes",
    "single_quotes": "a string in single quotes",
    "missing_comma": "pairs or items without a comma between them",
    "trailing_comma": "a comma before a closing bracket",
    "comment": "a comment",
    "split_pair": "pairs separated only by spaces; a value ended where the next field's name began",
}


class _Loose:
    """Recursive descent over JSON and JS-style objects; tolerant of what models write.

    With a ``reader`` and the declared ``type_`` it also knows the field names of each object
    it reads, which is what lets ``{name: Ada age: 36}`` be split (see :meth:`_bare_value`).
    """

    def __init__(
        self,
        text: str,
        partial: bool,
        reader: _Reader | None = None,
        type_: IRType | None = None,
    ) -> None:
        self.text = text
        self.pos = 0
        self.partial = partial
        self.reader = reader
        self.type_ = type_
        self.path: list[str] = []

    def document(self) -> Any:
        try:
            return _json_decoder(self.partial).decode(self.text)
        except json.JSONDecodeError:
            pass
        except BodyError:
            raise
        except ValueError:  # an integer longer than Python reads
            raise BodyError(_TOO_LONG) from None
        value = self.value(self.type_, 0)
        self._skip()
        if self.pos < len(self.text) and not self.partial:
            raise BodyError(f"unexpected text after the value: {self.text[self.pos :][:40]!r}")
        return value

    def _note(self, kind: str) -> None:
        if self.reader is not None:
            self.reader.note(kind, ".".join(self.path), _LOOSE_REPAIRS[kind], once=True)

    def _skip(self) -> None:
        match = _WS.match(self.text, self.pos)
        if match:
            self.pos = match.end()
            if "/" in match.group():
                self._note("comment")

    def _eof(self, what: str) -> None:
        if not self.partial:
            raise BodyError(f"the {what} is not closed")

    def _fields(self, type_: IRType | None) -> IRType | None:
        """``type_`` resolved when it is an object type the reader knows, else None."""
        if self.reader is None or type_ is None:
            return None
        resolved = resolve(type_, self.reader.types)
        return resolved if resolved["kind"] == "object" else None

    def value(self, type_: IRType | None, depth: int) -> Any:
        if depth > MAX_DEPTH:
            raise BodyError(f"values are nested deeper than {MAX_DEPTH} levels")
        self._skip()
        char = self.text[self.pos : self.pos + 1]
        if char == "{":
            return self._object(self._fields(type_), depth + 1)
        if char == "[":
            items = None
            if self.reader is not None and type_ is not None:
                resolved = resolve(type_, self.reader.types)
                items = resolved["items"] if resolved["kind"] == "array" else None
            return self._array(items, depth + 1)
        if char in ("'", '"'):
            return self._string()
        return self._bare_value(None)

    def _bare_value(self, object_type: IRType | None) -> Any:
        """An unquoted value up to a comma, bracket or line end. Inside an object whose type is
        known, it also ends before `` name:`` when ``name`` names a field of that object (the
        model left out the comma; a name given twice is then rejected as a duplicate)."""
        match = _BARE_VALUE.match(self.text, self.pos)
        assert match is not None  # the pattern matches the empty string
        end = match.end()
        if object_type is not None and self.reader is not None:
            for split in _SPLIT.finditer(self.text, self.pos, end):
                name = split.group(1)
                if self.reader.path_of(name, object_type) is not None:
                    end = split.start()
                    self._note("split_pair")
                    break
        word = self.text[self.pos : end].strip()
        self.pos = end
        if word and not _JSON_WORD.fullmatch(word):
            self._note("unquoted_value")
        if self.reader is not None:  # read by the declared type, like a `key: value` line
            return _Raw(word, open=self.partial and end == len(self.text))
        return _bare(word)

    def _string(self) -> Any:
        quote = self.text[self.pos]
        if quote == "'":
            self._note("single_quotes")
        match = (_DQ if quote == '"' else _SQ).match(self.text, self.pos)
        if match is None:
            self._eof("string")
            body = self.text[self.pos + 1 :]
            self.pos = len(self.text)
            text = _unescape(body.rstrip("\\"))
            return _Raw(text, open=True) if self.partial and self.reader is not None else text
        self.pos = match.end()
        return _unescape(match.group(1))

    def _object(self, type_: IRType | None, depth: int) -> dict[str, Any]:
        self.pos += 1
        pairs: list[tuple[str, Any]] = []
        separated = True  # a comma (or the opening brace) came since the last pair
        while True:
            self._skip()
            char = self.text[self.pos : self.pos + 1]
            if char == "}":
                self.pos += 1
                if pairs and separated:
                    self._note("trailing_comma")
                return _pairs_to_dict(pairs, partial=self.partial)
            if char == "":
                self._eof("object")
                return _pairs_to_dict(pairs, partial=True)
            if char == ",":
                self.pos += 1
                separated = True
                continue
            if not separated:
                self._note("missing_comma")
            key = self._key()
            self._skip()
            if self.text[self.pos : self.pos + 1] in (":", "="):
                self.pos += 1
                self.path.append(key)
                field = None
                if type_ is not None and self.reader is not None:
                    field = self.reader.fields(type_).get(key)
                self._skip()
                if self.text[self.pos : self.pos + 1] in ("{", "[", "'", '"'):
                    value = self.value(field["type"] if field else None, depth)
                else:
                    value = self._bare_value(type_)
                self.path.pop()
                pairs.append((key, value))
                separated = False
            elif self.pos >= len(self.text):
                self._eof("object")
            else:
                raise BodyError(f"expected `:` after the key {key!r}")

    def _key(self) -> str:
        if self.text[self.pos] in ("'", '"'):
            key = self._string()  # cut off by the end: no pair follows it anyway
            return str(key.text if isinstance(key, _Raw) else key)
        match = _BARE_KEY.match(self.text, self.pos)
        if match is None:
            raise BodyError(f"unexpected {self.text[self.pos]!r} where a key was expected")
        self.pos = match.end()
        self._note("unquoted_key")
        return match.group()

    def _array(self, items_type: IRType | None, depth: int) -> list[Any]:
        self.pos += 1
        items: list[Any] = []
        separated = True
        while True:
            self._skip()
            char = self.text[self.pos : self.pos + 1]
            if char == "]":
                self.pos += 1
                if items and separated:
                    self._note("trailing_comma")
                return items
            if char == "":
                self._eof("list")
                return items
            if char == ",":
                self.pos += 1
                separated = True
                continue
            if not separated:
                self._note("missing_comma")
            start = self.pos
            items.append(self.value(items_type, depth))
            separated = False
            if self.pos == start:  # a stray `}` or `:`; never loop on it
                raise BodyError(f"unexpected {char!r} in a list")


_TOO_LONG = "a number is too long to read"


def _bare(word: str) -> Any:
    if word == "null":
        return None
    return word


def _unescape(body: str) -> str:
    if "\\" not in body:
        return body
    try:
        return str(json.loads(f'"{body}"'))
    except json.JSONDecodeError:
        return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body)


def _duplicate(key: str, first: Any, second: Any) -> BodyError:
    return BodyError(
        f"`{key}` is given twice with different values ({_show(first)} and {_show(second)});"
        " send it once"
    )


def _plain(value: Any) -> Any:
    """A value with a bare word (:class:`_Raw`) as its text, for comparing and showing."""
    return value.text if isinstance(value, _Raw) else value


def _show(value: Any) -> str:
    value = _plain(value)
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


# ---------------------------------------------------------------------------------------------
# Alignment to the schema

_STRINGY = ("string", "text", "literal")


_OPEN = object()  # a streaming value not certain yet: left out of the snapshot
_MAX_REPAIRS = 100

Check = Callable[[Any, int], bool]  # (value, its depth if it is an object or list)
_SCALARS = (str, int, float, bool)
_NUMBERS = (int, float, bool)
_CHECKED_KINDS = ("string", "text", "literal", "number", "boolean", "object", "array")
_KEPT: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "text": (str,),
    "literal": (str,),
    "number": _NUMBERS,
    "boolean": (bool, float),
}
_Checks = dict[int, tuple["IRType | None", Check]]


def _check(type_: IRType | None, types: Types, cache: _Checks) -> Check:
    """The :meth:`_Reader.plain` test of ``type_``, built from its parts' tests.

    A value that ``interpret`` and ``coerce`` would change, or that only the general reader
    can judge (a union, a key with a dot or an underscore that is not a field, nesting deeper
    than :data:`MAX_DEPTH`), fails it.
    """
    if type_ is None:
        return _untyped
    resolved = resolve(type_, types)
    kind = resolved["kind"]
    if kind not in _CHECKED_KINDS:
        return _never
    if kind in ("string", "text", "literal"):
        return lambda v, d: type(v) is str or _untyped_container(v, d)
    if kind == "number":
        return lambda v, d: type(v) in _NUMBERS or _untyped_container(v, d)
    if kind == "boolean":
        return lambda v, d: type(v) is bool or type(v) is float or _untyped_container(v, d)
    if kind == "array":
        return _array_check(type_, resolved, types, cache)
    return _object_check(type_, resolved, types, cache)


def _array_check(type_: IRType, resolved: Any, types: Types, cache: _Checks) -> Check:
    items: list[Check] = []  # filled below: a recursive type refers to itself

    def array(v: Any, d: int) -> bool:
        if type(v) is list:
            check = items[0]
            return d <= MAX_DEPTH and all(x is None or check(x, d + 1) for x in v)
        return type(v) is dict and _untyped(v, d) or type(v) in _SCALARS

    cache[id(type_)] = (type_, array)
    items.append(_cached_check(resolved["items"], types, cache))
    return array


def _object_check(type_: IRType, resolved: Any, types: Types, cache: _Checks) -> Check:
    checks: dict[str, Check] = {}
    exact: dict[str, tuple[type, ...]] = {  # the scalar types a field keeps as they are
        f["name"]: _KEPT[k]
        for f in resolved["fields"]
        if (k := resolve(f["type"], types)["kind"]) in _KEPT
    }

    def obj(v: Any, d: int) -> bool:
        if type(v) is not dict:
            return type(v) is list and _untyped(v, d) or type(v) in _SCALARS
        if d > MAX_DEPTH:
            return False
        for key, x in v.items():
            if type(x) in exact.get(key, ()):
                continue
            check = checks.get(key)
            if x is None:
                return False
            if check is None:
                if "." in key or "_" in key or not _untyped(x, d + 1):
                    return False
            elif not check(x, d + 1):
                return False
        return True

    cache[id(type_)] = (type_, obj)
    for f in resolved["fields"]:
        checks[f["name"]] = _cached_check(f["type"], types, cache)
    return obj


def _cached_check(type_: IRType, types: Types, cache: _Checks) -> Check:
    found = cache.get(id(type_))
    if found is not None and found[0] is type_:
        return found[1]
    check = _check(type_, types, cache)
    cache[id(type_)] = (type_, check)
    return check


def _never(value: Any, depth: int) -> bool:
    return False


def _untyped(value: Any, depth: int) -> bool:
    """A value read without a declared type is kept as parsed, but a ``null`` field is
    dropped."""
    kind = type(value)
    if kind is dict:
        return depth <= MAX_DEPTH and all(
            x is not None and _untyped(x, depth + 1) for x in value.values()
        )
    if kind is list:
        return depth <= MAX_DEPTH and all(x is None or _untyped(x, depth + 1) for x in value)
    return kind in _SCALARS


def _untyped_container(value: Any, depth: int) -> bool:
    return type(value) in (dict, list) and _untyped(value, depth)


class _Reader:
    def __init__(self, types: Types, partial: bool, repairs: list[Repair] | None = None) -> None:
        self.types = types
        self.partial = partial
        self.repairs = repairs
        self._noted: set[tuple[str, str]] = set()
        self.depth = 0
        self._field_maps: dict[int, tuple[IRType, dict[str, IRField]]] = {}
        self._checks: _Checks = {}

    def note(self, kind: str, path: str, detail: str, *, once: bool = False) -> None:
        """Record a repair (``once``: only the first of this kind in the body)."""
        if self.repairs is None or len(self.repairs) >= _MAX_REPAIRS:
            return
        mark = (kind, "" if once else path)
        if mark not in self._noted:
            self._noted.add(mark)
            self.repairs.append(repair(kind, path, detail))

    def fields(self, type_: IRType) -> dict[str, IRField]:
        """``field_map`` cached for this read (a long list of objects shares one type)."""
        cached = self._field_maps.get(id(type_))
        if cached is None or cached[0] is not type_:
            cached = self._field_maps[id(type_)] = (type_, field_map(type_, self.types))
        return cached[1]

    def loose(self, text: str, type_: IRType | None = None) -> Any:
        return _Loose(text, self.partial, self, type_).document()

    def read(self, raw: Any, type_: IRType | None) -> Any:
        """A parsed JSON value (complete) interpreted and coerced as ``type_`` (None: a key
        the type does not declare, kept as interpreted), exactly as a whole read does."""
        if self.plain(type_)(raw, self.depth + 1):
            return raw
        value = self.interpret(raw, type_)
        return value if type_ is None else self.coerce(value, type_)

    def plain(self, type_: IRType | None) -> Check:
        """A test that a parsed JSON value is already what aligning and coercing it as
        ``type_`` gives (every key a declared field or untyped, no ``null`` field, nothing to
        convert); values that fail it take the general path. Built once per type and read."""
        key = id(type_)
        found = self._checks.get(key)
        if found is None or found[0] is not type_:
            found = self._checks[key] = (type_, _check(type_, self.types, self._checks))
        return found[1]

    def coerce(self, value: Any, type_: IRType) -> Any:
        """:func:`~auwgent.runtime.schema.coerce`, each change listed as a repair."""
        try:
            out = coerce(value, type_, self.types)
        except ValueError:  # int() of a string of digits longer than Python reads
            raise BodyError(_TOO_LONG) from None
        if self.repairs is not None:
            self._coerced(value, out, "")
        return out

    def _coerced(self, before: Any, after: Any, path: str) -> None:
        if isinstance(before, dict) and isinstance(after, dict):  # what the reader builds
            for key, value in after.items():
                if key in before:
                    self._coerced(before[key], value, f"{path}.{key}" if path else key)
        elif isinstance(before, list) and isinstance(after, list):
            for i, (old, new) in enumerate(zip(before, after, strict=False)):
                self._coerced(old, new, f"{path}[{i}]")
        elif type(before) is not type(after) or before != after:
            self.note("coerced", path, f"{_show(before)} read as {_show(after)}")

    def align(self, entries: Entries, target: IRType | None) -> dict[str, Any]:
        """Place each entry at the field its key names (dotted and underscore keys too).

        A key path given twice with different values is an ambiguity (also when both are
        objects: two ``user:`` blocks are not merged); paths that only share a prefix
        (``user.city`` and ``user.zip``) fill one object.
        """
        self._enter()
        out: dict[str, Any] = {}
        given: dict[Any, Any] = {}  # by key path: the key itself, or a tuple for nested paths
        for key, raw in entries:
            path = self.path_of(key, target) if target is not None else None
            names, type_ = path if path is not None else ([key], None)
            value = self.interpret(raw, type_)
            if value is _OPEN or (value is None and self._null_is_absent(type_)):
                continue  # still being typed, or `null`: not given
            where = key if len(names) == 1 else tuple(names)
            if where in given:
                if not self._same(given[where], value, type_) and not self.partial:
                    raise _duplicate(".".join(names), given[where], value)
                if not self.partial:
                    continue
            given[where] = value
            self._put(out, names, value, key, type_)
        self.depth -= 1
        return out

    def _null_is_absent(self, type_: IRType | None) -> bool:
        """``null`` means "not given" unless the declared type itself accepts null."""
        if type_ is None:
            return True
        return bool(validate(None, type_, self.types))

    def _same(self, first: Any, second: Any, type_: IRType | None) -> bool:
        if first == second:
            return True
        if type_ is None:
            return False
        return bool(coerce(first, type_, self.types) == coerce(second, type_, self.types))

    def path_of(self, key: str, target: IRType) -> tuple[list[str], IRType] | None:
        """The field path ``key`` names in ``target``: the field itself, a dotted path, or an
        underscore alias that exactly one nested path joins to."""
        fields = self.fields(target)
        if key in fields:
            return [key], fields[key]["type"]
        if "." in key:
            return self._dotted(key.split("."), target)
        if "_" in key:
            found = self._aliases(key, target, top=True)
            if len(found) == 1:
                names = found[0][0]
                self.note("alias", ".".join(names), f"`{key}` read as `{'.'.join(names)}`")
                return found[0]
            if found and not self.partial:
                ways = " or ".join(f"`{'.'.join(names)}`" for names, _ in found)
                raise BodyError(f"`{key}` could be {ways}; write the path with dots")
        return None

    def _aliases(self, key: str, target: IRType, *, top: bool) -> list[tuple[list[str], IRType]]:
        """Every way ``key`` splits at underscores into a path of nested fields (at any depth;
        at the top level the key must reach into a nested field). Stops at two: one is all
        that may be used."""
        found: list[tuple[list[str], IRType]] = []
        for name, declared in self.fields(target).items():
            if not top and key == name:
                found.append(([name], declared["type"]))
            elif key.startswith(name + "_"):
                rest = key[len(name) + 1 :]
                for sub, type_ in self._aliases(rest, declared["type"], top=False):
                    found.append(([name, *sub], type_))
            if len(found) > 1:
                break
        return found

    def _dotted(self, parts: list[str], target: IRType) -> tuple[list[str], IRType] | None:
        type_ = target
        for part in parts:
            field = self.fields(type_).get(part)
            if field is None:
                return None
            type_ = field["type"]
        return parts, type_

    def _put(
        self, out: dict[str, Any], names: list[str], value: Any, key: str, type_: IRType | None
    ) -> None:
        """Set ``value`` at ``names``; a different value already there is an ambiguity
        (values are compared after coercion, so ``28`` and ``"28"`` agree)."""
        node = out
        for name in names[:-1]:
            child = node.setdefault(name, {})
            if not isinstance(child, dict):
                if self.partial:
                    return
                raise _duplicate(key, child, value)
            node = child
        last = names[-1]
        if last in node and node[last] != value:
            if isinstance(node[last], dict) and isinstance(value, dict):
                for sub_key, sub_value in value.items():
                    sub_type = self.fields(type_).get(sub_key) if type_ is not None else None
                    self._put(
                        node[last],
                        [sub_key],
                        sub_value,
                        f"{key}.{sub_key}",
                        sub_type["type"] if sub_type else None,
                    )
                return
            if type_ is not None and self._same(node[last], value, type_):
                return
            if not self.partial:
                raise _duplicate(".".join(names) if len(names) > 1 else key, node[last], value)
        node[last] = value

    def interpret(self, raw: Any, type_: IRType | None) -> Any:
        """Turn a raw line value (or a parsed JSON value) into a value of ``type_``."""
        resolved = resolve(type_, self.types) if type_ is not None else None
        kind = resolved["kind"] if resolved is not None else None
        if isinstance(raw, _Raw):
            if raw.open:
                return self._open_value(raw.text, resolved)
            return self._interpret_text(raw.text, resolved)
        if isinstance(raw, list) and raw and all(isinstance(p, tuple) for p in raw):
            return self.align(raw, resolved if kind == "object" else None)  # nested block
        if isinstance(raw, list):
            items = resolved["items"] if resolved is not None and kind == "array" else None
            self._enter()
            values = [self.interpret(item, items) for item in raw]
            self.depth -= 1
            return [v for v in values if v is not _OPEN]
        if isinstance(raw, Mapping):
            return self.align(list(raw.items()), resolved if kind == "object" else None)
        return raw

    def _enter(self) -> None:
        """One level deeper into objects and lists (left again by the caller)."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise BodyError(f"values are nested deeper than {MAX_DEPTH} levels")

    def _open_value(self, text: str, type_: IRType | None) -> Any:
        """A value still being typed: shown only as far as it is certain. Plain text for a
        text field is a prefix of the final value; of a list, the items before the last."""
        kind = type_["kind"] if type_ is not None else None
        if kind in ("string", "text") and text and text[0] not in "[{\"'|>/":
            if not "null".startswith(text):
                return text
        if kind == "array" and text[:1] == "[":
            value = self.interpret(self.loose(text, type_), type_)
            return value[:-1] if isinstance(value, list) else _OPEN
        return _OPEN

    def _interpret_text(self, text: str, type_: IRType | None) -> Any:
        kind = type_["kind"] if type_ is not None else None
        if kind in _STRINGY:
            return None if text == "null" else _unquote(text)
        if not text:
            return None  # `key:` with nothing after it: not given
        if kind == "array" and text[0] != "[" and type_ is not None:
            parts = [p.strip() for p in text.split(",")]
            if any("\n" in part for part in parts):  # one item or one per line: not said
                raise BodyError(
                    f"the list {_show(text)} is text over several lines: write each item on a"
                    " `- item` line, or the list as JSON"
                )
            return [self.interpret(_Raw(p), type_["items"]) for p in parts]
        if kind in ("number", "boolean") and _JSON_WORD.fullmatch(text):
            try:  # a bare `28` or `true`: the taught form, read as JSON (no coercion)
                return json.loads(text)
            except ValueError:  # an integer longer than Python reads
                raise BodyError(_TOO_LONG) from None
        if text[0] not in "[{\"'":
            return _bare(text)
        depth = self.depth
        try:
            return self.interpret(self.loose(text, type_), type_)
        except BodyError:
            self.depth = depth
            if kind in ("object", "array") and not self.partial:
                raise
            return text  # a union or an unknown key: validation says what is wrong


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        try:
            return str(_Loose(text, False).document())
        except BodyError:
            return text
    return text
