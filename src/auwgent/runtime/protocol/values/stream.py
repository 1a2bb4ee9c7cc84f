"""Streaming JSON: :class:`JsonPrefix` (how far a JSON text can be read yet) and
:class:`JsonSnapshot`, which keeps what it read of a streaming body so that each partial
snapshot reads only what arrived since the last."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from auwgent._records import record
from auwgent.runtime.evaluate.schema import IRField, IRType, Types, object_type, resolve
from auwgent.runtime.protocol.values.align import OPEN, Reader
from auwgent.runtime.protocol.values.common import MAX_DEPTH, BodyError
from auwgent.runtime.protocol.values.lines import OPEN_FENCE, Raw

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


def fast_partial(text: str, prefix: JsonPrefix) -> Any:
    """A streaming JSON body read through ``json.loads``; None when that cannot work. The
    string still being typed (always the last value) comes back as an open :class:`Raw`, so
    the reader shows it only where it is a prefix of the final value."""
    with_open, cut = prefix.completed(text)
    for candidate in dict.fromkeys((with_open, cut)):
        opening = OPEN_FENCE.match(candidate)  # a code fence whose end has not arrived
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
    :class:`Raw`; False when it is not there (a duplicate key moved it): use the cut text."""
    while isinstance(node, (dict, list)) and node:
        where = next(reversed(node)) if isinstance(node, dict) else len(node) - 1
        value = node[where]
        if isinstance(value, str):
            if not value.endswith(_OPEN_MARK):
                return False
            node[where] = Raw(value[: -len(_OPEN_MARK)], open=True)
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


@record(frozen=False)
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
        self._reader: Reader | None = None
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
            self._fields, self._reader = fields, Reader(types, True)
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
        self, text: str, base: int, full: str, reader: Reader, target: IRType
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

    def _start(self, text: str, target: IRType, reader: Reader) -> int | None:
        opening = OPEN_FENCE.match(text)
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

    def _separator(self, text: str, pos: int, reader: Reader) -> int | None:
        level = self._stack[-1]
        separator = _SEPARATOR.match(text, pos)
        if separator is not None:
            self._expect, self._first = "value" if level.array else "key", False
            return separator.end()
        if text[pos] != ("]" if level.array else "}"):
            return self._broke()
        return self._close(pos, reader)

    def _key(self, text: str, pos: int, reader: Reader) -> int | None:
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

    def _value(self, text: str, pos: int, reader: Reader) -> int | None:
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

    def _items(self, text: str, pos: int, level: _Level, reader: Reader) -> int:
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

    def _push(self, pos: int, array: bool, declared: IRType | None, reader: Reader) -> None:
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
                if resolved is not None and resolved["kind"] == "array" and array
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

    def _add(self, level: _Level, value: Any, reader: Reader) -> None:
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

    def _close(self, pos: int, reader: Reader) -> int:
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

    def _assemble(self, text: str, open_string: int | None, reader: Reader) -> Any:
        """The open path, innermost first: each level's values so far (copied) plus the level
        below it, and at the bottom the open string where a whole read would show it."""
        stack = self._stack
        child: Any = _NOTHING
        if open_string is not None and all(_last(level) for level in stack):
            child = self._open_string(text[open_string + 1 :], stack[-1], reader)
        for level in reversed(stack):
            if level.array:
                value: Any = list(level.done)
                if child is not _NOTHING and child is not OPEN:
                    value.append(child)
            else:
                value = dict(level.done)
                if child is OPEN:
                    value.pop(level.key, None)  # its earlier value too, as in a whole read
                elif child is not _NOTHING:
                    value[level.key] = child
                if level.holes:
                    value = {k: v for k, v in value.items() if v is not _ABSENT}
            child = value
        return child

    def _open_string(self, body: str, level: _Level, reader: Reader) -> Any:
        """The string value still being typed at the end; ``_NOTHING`` when its text is not
        readable yet (an escape cut in two), ``OPEN`` when it is not shown."""
        run = len(body) - len(body.rstrip("\\"))
        if run % 2:
            body = body[:-1]  # an escape whose second half has not arrived
        try:
            text = _SCAN('"' + body + '"', 0)[0]
        except ValueError:
            return _NOTHING
        type_ = self._child_type(level)
        reader.depth = len(self._stack)
        value = reader.interpret(Raw(text, open=True), type_)
        if value is OPEN or type_ is None:
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
