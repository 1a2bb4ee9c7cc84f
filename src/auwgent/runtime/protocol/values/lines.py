"""The block protocol's own form: ``key: value`` lines, dash lists and nested ``key:`` blocks
(also inside a Markdown code fence), read into entries that keep each value's text."""

from __future__ import annotations

import re
from typing import Any

from auwgent._records import field, record
from auwgent.runtime.protocol.values.common import MAX_DEPTH, BodyError


@record(frozen=False)
class Raw:
    """A value exactly as written on its line(s), interpreted later by the declared type."""

    first: str
    more: list[str] = field(default_factory=list)  # continuation lines, joined once at the end
    open: bool = False  # a streaming body's last line, still being typed

    @property
    def text(self) -> str:
        return "\n".join([self.first, *self.more]) if self.more else self.first


Entries = list[tuple[str, Any]]  # values: Raw, list (dash list), Entries (nested block), JSON

KEY_LINE = re.compile(
    r"""[ \t]*(?P<key>"[^"\n]+"|'[^'\n]+'|[A-Za-z_$][\w$.\-]*)[ \t]*"""
    r"""(?::(?=\s|$)|:(?!//)|=(?!=))(?P<rest>.*)"""
)
_DASH_LINE = re.compile(r"[ \t]*-(?:[ \t]+(?P<rest>.*)|$)")
_FENCE = re.compile(r"\A\s*```[\w-]*[ \t]*\n(?P<body>.*?)\n?[ \t]*```\s*\Z", re.S)


ANY_FENCE = re.compile(r"```[\w-]*[ \t\r]*\n(?P<body>.*?)\n?[ \t\r]*```", re.S)
OPEN_FENCE = re.compile(r"\s*```[\w-]*[ \t\r]*\n")


def strip_fence(text: str) -> str:
    """The body inside a Markdown code fence (one never closed, too)."""
    match = _FENCE.match(text)
    if match:
        return match.group("body")
    opening = OPEN_FENCE.match(text)
    return text[opening.end() :] if opening else text


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def unquote_key(key: str) -> str:
    return key[1:-1] if key[:1] in "\"'" and key[-1:] == key[:1] and len(key) > 1 else key


class LineParser:
    """``key: value`` lines, nested blocks and dash lists, by indentation (a YAML subset).

    ``open_tail``: the last line is still being typed (a streaming body); what it holds is not
    certain yet, so it only ever yields a plain text value (see :meth:`Reader.interpret`).
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
            match = KEY_LINE.fullmatch(line)
            if match is None or (i == self.open_line and not match.group("rest").strip()):
                if i == self.open_line:  # a key or a continuation still being typed
                    self.pos = i + 1
                    continue
                if entries and isinstance(entries[-1][1], Raw):
                    self._continue(entries[-1][1], i)
                    continue
                if self.partial:
                    self.pos = i + 1
                    continue
                break
            self.pos = i + 1
            key = unquote_key(match.group("key"))
            value = self._value(match.group("rest").strip(), _indent(line), depth)
            entries.append((key, value))
        return entries

    def _continue(self, raw: Raw, i: int) -> None:
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
                if rest == "" and KEY_LINE.fullmatch(self.lines[nxt]):
                    entries = self._mapping(indent, depth + 1)
                    # Empty only when its one line is still being typed: nothing certain yet.
                    return entries or Raw("", open=True)
                return self._block_text(indent)
            return Raw("", open=self.partial and nxt >= len(self.lines))
        if rest[0] in "[{" and _depth(rest) > 0:
            return self._bracketed(rest)
        return Raw(rest, open=line == self.open_line)

    def _dash_at(self, i: int, indent: int) -> bool:
        """Whether line ``i`` is a complete `- item` line at column ``indent`` (as YAML reads
        it, a list under the ``key:`` line above, not text continuing it)."""
        if i >= len(self.lines) or i == self.open_line:
            return False
        line = self.lines[i]
        return _indent(line) == indent and _DASH_LINE.fullmatch(line) is not None

    def _block_text(self, indent: int) -> Raw:
        taken: list[str] = []
        while self.pos < len(self.lines):
            line = self.lines[self.pos]
            if line.strip() and _indent(line) <= indent:
                break
            if self.pos != self.open_line:
                taken.append(line.strip())
            self.pos += 1
        return Raw("\n".join(taken).strip())

    def _bracketed(self, first: str) -> Raw:
        # Counted line by line (strings do not span lines), so a long value costs one pass.
        taken, depth = [first], _depth(first)
        while self.pos < len(self.lines) and depth > 0:
            taken.append(self.lines[self.pos])
            depth += _depth(self.lines[self.pos])
            self.pos += 1
        return Raw("\n".join(taken), open=self.partial and depth > 0)

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
                if dash is None and _indent(line) > parent and items and isinstance(items[-1], Raw):
                    self._continue(items[-1], i)
                    continue
                break
            self.pos = i + 1
            items.append(self._item((dash.group("rest") or "").strip(), _indent(line), depth))
        return items

    def _item(self, rest: str, indent: int, depth: int) -> Any:
        match = KEY_LINE.fullmatch(rest)
        if match is None or rest[:1] in "[{\"'":
            return self._value(rest, indent, depth)
        key = unquote_key(match.group("key"))
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
