"""Loose JSON and JS-style values: unquoted keys, single-quoted strings, missing or trailing
commas, comments, and pairs separated only by spaces where a declared field's name starts."""

from __future__ import annotations

import json
import re
from typing import Any, Protocol

from auwgent.runtime.evaluate.schema import IRField, IRType, Types, resolve
from auwgent.runtime.protocol.values.common import MAX_DEPTH, BodyError
from auwgent.runtime.protocol.values.lines import Raw


class SchemaReader(Protocol):
    """What a loose read asks of the schema reader (:class:`.align.Reader`): the named types,
    the fields of an object type, where a flat key lands, and a place to note repairs."""

    types: Types

    def note(self, kind: str, path: str, detail: str, *, once: bool = False) -> None: ...

    def fields(self, type_: IRType) -> dict[str, IRField]: ...

    def path_of(self, key: str, target: IRType) -> tuple[list[str], IRType] | None: ...


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
            raise duplicate(key, out[key], value)
        out[key] = value
    return out


_SPLIT = re.compile(r"[ \t]+([A-Za-z_$][\w$.\-]*)[ \t]*[:=]")
JSON_WORD = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null")
_LOOSE_REPAIRS = {
    "unquoted_key": "a key without quotes",
    "unquoted_value": "a text value without quotes",
    "single_quotes": "a string in single quotes",
    "missing_comma": "pairs or items without a comma between them",
    "trailing_comma": "a comma before a closing bracket",
    "comment": "a comment",
    "split_pair": "pairs separated only by spaces; a value ended where the next field's name began",
}


class Loose:
    """Recursive descent over JSON and JS-style objects; tolerant of what models write.

    With a ``reader`` and the declared ``type_`` it also knows the field names of each object
    it reads, which is what lets ``{name: Ada age: 36}`` be split (see :meth:`_bare_value`).
    """

    def __init__(
        self,
        text: str,
        partial: bool,
        reader: SchemaReader | None = None,
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
            raise BodyError(TOO_LONG) from None
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
        if word and not JSON_WORD.fullmatch(word):
            self._note("unquoted_value")
        if self.reader is not None:  # read by the declared type, like a `key: value` line
            return Raw(word, open=self.partial and end == len(self.text))
        return bare(word)

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
            return Raw(text, open=True) if self.partial and self.reader is not None else text
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
            return str(key.text if isinstance(key, Raw) else key)
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


TOO_LONG = "a number is too long to read"


def bare(word: str) -> Any:
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


def duplicate(key: str, first: Any, second: Any) -> BodyError:
    return BodyError(
        f"`{key}` is given twice with different values ({show(first)} and {show(second)});"
        " send it once"
    )


def _plain(value: Any) -> Any:
    """A value with a bare word (:class:`Raw`) as its text, for comparing and showing."""
    return value.text if isinstance(value, Raw) else value


def show(value: Any) -> str:
    value = _plain(value)
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."
