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
  path joins to it, as an underscore alias (``user_address``).

Values are interpreted by their declared type (a string field keeps the text as written; other
fields read JSON-like values) and then coerced with :func:`auwgent.runtime.schema.coerce`.
A key given twice with different values raises :class:`BodyError`: the decoder rejects the
block rather than guess which one the model meant.

Everything here is pure and costs time linear in the text it reads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from auwgent.runtime.schema import IRField, IRType, Types, coerce, field_map, resolve

__all__ = [
    "BodyError",
    "JsonPrefix",
    "embedded_object",
    "loads_loose",
    "object_type",
    "parse_body",
    "parse_value",
]


class BodyError(ValueError):
    """A body that cannot be read without guessing; the message is meant for the model."""


def object_type(fields: Sequence[IRField]) -> IRType:
    """An inline IR object type holding ``fields``."""
    return {"kind": "object", "fields": list(fields)}


def parse_body(
    text: str,
    fields: Sequence[IRField],
    types: Types,
    *,
    partial: bool = False,
    json_prefix: JsonPrefix | None = None,
) -> dict[str, Any]:
    """Read a block body into a dict aligned to ``fields``.

    With ``partial=True`` (a body still streaming) nothing raises: unfinished values are read
    as far as they go and conflicting duplicates keep the later value. ``json_prefix``, the
    body's :class:`JsonPrefix` tracker, lets a streaming JSON body be read at C speed.
    """
    if partial:
        try:
            return _parse_body(text, fields, types, True, json_prefix)
        except BodyError:
            return {}  # too broken to show yet; the final read will say why
    return _parse_body(text, fields, types, False, None)


def _parse_body(
    text: str,
    fields: Sequence[IRField],
    types: Types,
    partial: bool,
    json_prefix: JsonPrefix | None,
) -> dict[str, Any]:
    target = object_type(fields)
    body = _strip_fence(text.replace("\r\n", "\n")).strip()
    if not body:
        return {}
    reader = _Reader(types, partial)
    if body[0] == "{":
        value = _fast_partial(text, json_prefix) if partial and json_prefix else None
        value = reader.loose(body) if value is None else value
        if not isinstance(value, dict):
            raise BodyError("the body must be an object: `name: value` lines or a JSON object")
        result = reader.align(list(value.items()), target)
    else:
        result = reader.align(_LineParser(body, partial).entries(), target)
    return dict(coerce(result, target, types))


def parse_value(
    text: str,
    type_: IRType,
    types: Types,
    *,
    partial: bool = False,
    json_prefix: JsonPrefix | None = None,
) -> Any:
    """Read a body holding one value of ``type_`` (an object type reads as in ``parse_body``)."""
    resolved = resolve(type_, types)
    if resolved["kind"] == "object":
        return parse_body(text, resolved["fields"], types, partial=partial, json_prefix=json_prefix)
    reader = _Reader(types, partial)
    return coerce(
        reader.interpret(_Raw(_strip_fence(text.replace("\r\n", "\n")).strip()), type_),
        type_,
        types,
    )


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
    return _Loose(text, partial).document()


# ---------------------------------------------------------------------------------------------
# Streaming JSON


_STRING_BODY = re.compile(r'[^"\\]*')


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
            return body + '"' + closers, cut
        return cut, cut


def _fast_partial(text: str, prefix: JsonPrefix) -> Any:
    """A streaming JSON body read through ``json.loads``; None when that cannot work."""
    for candidate in dict.fromkeys(prefix.completed(text)):
        opening = _OPEN_FENCE.match(candidate)  # a code fence whose end has not arrived
        try:
            value = json.loads(candidate[opening.end() :] if opening else candidate)
        except json.JSONDecodeError:
            continue
        return value if isinstance(value, dict) else None
    return None


# ---------------------------------------------------------------------------------------------
# Raw lines


@dataclass(slots=True)
class _Raw:
    """A value exactly as written on its line(s), interpreted later by the declared type."""

    first: str
    more: list[str] = field(default_factory=list)  # continuation lines, joined once at the end

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
    """``key: value`` lines, nested blocks and dash lists, by indentation (a YAML subset)."""

    def __init__(self, text: str, partial: bool) -> None:
        self.lines = text.split("\n")
        self.pos = 0
        self.partial = partial

    def entries(self) -> Entries:
        entries = self._mapping(-1)
        if self.pos < len(self.lines) and not self.partial:
            line = self.lines[self.pos].strip()
            raise BodyError(f"cannot read the line {line!r}: expected `name: value`")
        return entries

    def _next_nonblank(self, start: int) -> int:
        while start < len(self.lines) and not self.lines[start].strip():
            start += 1
        return start

    def _mapping(self, parent: int) -> Entries:
        entries: Entries = []
        while (i := self._next_nonblank(self.pos)) < len(self.lines):
            line = self.lines[i]
            if _indent(line) <= parent:
                break
            match = _KEY_LINE.fullmatch(line)
            if match is None:
                if entries and isinstance(entries[-1][1], _Raw):
                    self._continue(entries[-1][1], i)
                    continue
                if self.partial:
                    self.pos = i + 1
                    continue
                break
            self.pos = i + 1
            key = _unquote_key(match.group("key"))
            entries.append((key, self._value(match.group("rest").strip(), _indent(line))))
        return entries

    def _continue(self, raw: _Raw, i: int) -> None:
        # Blank lines inside a multi-line value are kept; the final strip drops trailing ones.
        raw.more += self.lines[self.pos : i]
        raw.more.append(self.lines[i].strip())
        self.pos = i + 1

    def _value(self, rest: str, indent: int) -> Any:
        if rest in ("", "|", ">"):
            nxt = self._next_nonblank(self.pos)
            if nxt < len(self.lines) and _indent(self.lines[nxt]) > indent:
                if _DASH_LINE.fullmatch(self.lines[nxt]):
                    return self._list(indent)
                if rest == "" and _KEY_LINE.fullmatch(self.lines[nxt]):
                    return self._mapping(indent)
                return self._block_text(indent)
            return _Raw("")
        if rest[0] in "[{" and _depth(rest) > 0:
            return self._bracketed(rest)
        return _Raw(rest)

    def _block_text(self, indent: int) -> _Raw:
        taken: list[str] = []
        while self.pos < len(self.lines):
            line = self.lines[self.pos]
            if line.strip() and _indent(line) <= indent:
                break
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
        return _Raw("\n".join(taken))

    def _list(self, parent: int) -> list[Any]:
        items: list[Any] = []
        while (i := self._next_nonblank(self.pos)) < len(self.lines):
            line = self.lines[i]
            dash = _DASH_LINE.fullmatch(line)
            if _indent(line) <= parent or dash is None:
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
            items.append(self._item((dash.group("rest") or "").strip(), _indent(line)))
        return items

    def _item(self, rest: str, indent: int) -> Any:
        match = _KEY_LINE.fullmatch(rest)
        if match is None or rest[:1] in "[{\"'":
            return self._value(rest, indent)
        first = (_unquote_key(match.group("key")), self._value(match.group("rest").strip(), indent))
        return [first, *self._mapping(indent)]


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


class _Loose:
    """Recursive descent over JSON and JS-style objects; tolerant of what models write."""

    def __init__(self, text: str, partial: bool) -> None:
        self.text = text
        self.pos = 0
        self.partial = partial

    def document(self) -> Any:
        try:
            return _json_decoder(self.partial).decode(self.text)
        except json.JSONDecodeError:
            pass
        value = self.value()
        self._skip()
        if self.pos < len(self.text) and not self.partial:
            raise BodyError(f"unexpected text after the value: {self.text[self.pos :][:40]!r}")
        return value

    def _skip(self) -> None:
        match = _WS.match(self.text, self.pos)
        if match:
            self.pos = match.end()

    def _eof(self, what: str) -> None:
        if not self.partial:
            raise BodyError(f"the {what} is not closed")

    def value(self) -> Any:
        self._skip()
        char = self.text[self.pos : self.pos + 1]
        if char == "{":
            return self._object()
        if char == "[":
            return self._array()
        if char in ("'", '"'):
            return self._string()
        match = _BARE_VALUE.match(self.text, self.pos)
        assert match is not None  # the pattern matches the empty string
        self.pos = match.end()
        word = match.group().strip()
        return _bare(word)

    def _string(self) -> str:
        quote = self.text[self.pos]
        match = (_DQ if quote == '"' else _SQ).match(self.text, self.pos)
        if match is None:
            self._eof("string")
            body = self.text[self.pos + 1 :]
            self.pos = len(self.text)
            return _unescape(body.rstrip("\\"))
        self.pos = match.end()
        return _unescape(match.group(1))

    def _object(self) -> dict[str, Any]:
        self.pos += 1
        pairs: list[tuple[str, Any]] = []
        while True:
            self._skip()
            char = self.text[self.pos : self.pos + 1]
            if char == "}":
                self.pos += 1
                return _pairs_to_dict(pairs, partial=self.partial)
            if char == "":
                self._eof("object")
                return _pairs_to_dict(pairs, partial=True)
            if char == ",":
                self.pos += 1
                continue
            key = self._key()
            self._skip()
            if self.text[self.pos : self.pos + 1] in (":", "="):
                self.pos += 1
                pairs.append((key, self.value()))
            elif self.pos >= len(self.text):
                self._eof("object")
            else:
                raise BodyError(f"expected `:` after the key {key!r}")

    def _key(self) -> str:
        if self.text[self.pos] in ("'", '"'):
            return self._string()
        match = _BARE_KEY.match(self.text, self.pos)
        if match is None:
            raise BodyError(f"unexpected {self.text[self.pos]!r} where a key was expected")
        self.pos = match.end()
        return match.group()

    def _array(self) -> list[Any]:
        self.pos += 1
        items: list[Any] = []
        while True:
            self._skip()
            char = self.text[self.pos : self.pos + 1]
            if char == "]":
                self.pos += 1
                return items
            if char == "":
                self._eof("list")
                return items
            if char == ",":
                self.pos += 1
                continue
            start = self.pos
            items.append(self.value())
            if self.pos == start:  # a stray `}` or `:`; never loop on it
                raise BodyError(f"unexpected {char!r} in a list")


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


def _pairs_to_dict(pairs: list[tuple[str, Any]], *, partial: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out and out[key] != value and not partial:
            raise _duplicate(key, out[key], value)
        out[key] = value
    return out


def _duplicate(key: str, first: Any, second: Any) -> BodyError:
    return BodyError(
        f"`{key}` is given twice with different values ({_show(first)} and {_show(second)});"
        " send it once"
    )


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


# ---------------------------------------------------------------------------------------------
# Alignment to the schema

_STRINGY = ("string", "text", "literal")


class _Reader:
    def __init__(self, types: Types, partial: bool) -> None:
        self.types = types
        self.partial = partial
        self._field_maps: dict[int, tuple[IRType, dict[str, IRField]]] = {}
        self._alias_maps: dict[int, tuple[IRType, dict[str, list[Any]]]] = {}

    def fields(self, type_: IRType) -> dict[str, IRField]:
        """``field_map`` cached for this read (a long list of objects shares one type)."""
        cached = self._field_maps.get(id(type_))
        if cached is None or cached[0] is not type_:
            cached = self._field_maps[id(type_)] = (type_, field_map(type_, self.types))
        return cached[1]

    def loose(self, text: str) -> Any:
        return _Loose(text, self.partial).document()

    def align(self, entries: Entries, target: IRType | None) -> dict[str, Any]:
        """Place each entry at the field its key names (dotted and underscore keys too)."""
        out: dict[str, Any] = {}
        for key, raw in entries:
            path = self._path(key, target) if target is not None else None
            if path is None:
                self._put(out, [key], self.interpret(raw, None), key, None)
                continue
            names, type_ = path
            self._put(out, names, self.interpret(raw, type_), key, type_)
        return out

    def _path(self, key: str, target: IRType) -> tuple[list[str], IRType] | None:
        fields = self.fields(target)
        if key in fields:
            return [key], fields[key]["type"]
        if "." in key:
            return self._dotted(key.split("."), target)
        if "_" in key:
            found = self._aliases(target).get(key, [])
            if len(found) == 1:
                return found[0]
        return None

    def _aliases(self, target: IRType) -> dict[str, list[tuple[list[str], IRType]]]:
        """Underscore-joined nested paths of ``target`` (cached: one table per type)."""
        cached = self._alias_maps.get(id(target))
        if cached is None or cached[0] is not target:
            table: dict[str, list[tuple[list[str], IRType]]] = {}
            for path in self._nested_paths(target, 4):
                table.setdefault("_".join(path[0]), []).append(path)
            cached = self._alias_maps[id(target)] = (target, table)
        return cached[1]

    def _dotted(self, parts: list[str], target: IRType) -> tuple[list[str], IRType] | None:
        type_ = target
        for part in parts:
            field = self.fields(type_).get(part)
            if field is None:
                return None
            type_ = field["type"]
        return parts, type_

    def _nested_paths(self, target: IRType, depth: int) -> list[tuple[list[str], IRType]]:
        paths: list[tuple[list[str], IRType]] = []
        if depth == 0:
            return paths
        for name, declared in self.fields(target).items():
            for sub, type_ in self._nested_paths(declared["type"], depth - 1):
                paths.append(([name, *sub], type_))
            if depth < 4:  # only nested fields are aliases; top-level names match exactly
                paths.append(([name], declared["type"]))
        return paths

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
            if type_ is not None and coerce(node[last], type_, self.types) == coerce(
                value, type_, self.types
            ):
                return
            if not self.partial:
                raise _duplicate(".".join(names) if len(names) > 1 else key, node[last], value)
        node[last] = value

    def interpret(self, raw: Any, type_: IRType | None) -> Any:
        """Turn a raw line value (or a parsed JSON value) into a value of ``type_``."""
        resolved = resolve(type_, self.types) if type_ is not None else None
        kind = resolved["kind"] if resolved is not None else None
        if isinstance(raw, _Raw):
            return self._interpret_text(raw.text, resolved)
        if isinstance(raw, list) and raw and all(isinstance(p, tuple) for p in raw):
            return self.align(raw, resolved if kind == "object" else None)  # nested block
        if isinstance(raw, list):
            items = resolved["items"] if resolved is not None and kind == "array" else None
            return [self.interpret(item, items) for item in raw]
        if isinstance(raw, Mapping):
            return self.align(list(raw.items()), resolved if kind == "object" else None)
        return raw

    def _interpret_text(self, text: str, type_: IRType | None) -> Any:
        kind = type_["kind"] if type_ is not None else None
        if kind in _STRINGY:
            return _unquote(text)
        if not text:
            return None  # `key:` with nothing after it: not given
        if kind == "array" and text[0] != "[" and type_ is not None:
            parts = [p.strip() for p in text.split(",")]
            return [self.interpret(_Raw(p), type_["items"]) for p in parts]
        if text[0] not in "[{\"'":
            return _bare(text)
        try:
            return self.interpret(self.loose(text), type_)
        except BodyError:
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
