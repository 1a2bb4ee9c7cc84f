"""A small text writer for code generators, in the manner of ``ast.unparse``.

An emitter written on top of it reads like its output::

    w = CodeWriter()
    w.fill("class Person(TypedDict):")
    with w.indent():
        w.fill("name: str")

``fill`` starts a new line at the current indentation, ``write`` continues the current line,
``blank`` leaves one empty line (never two in a row), and ``indent`` nests a block.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

INDENT = "    "


class CodeWriter:
    """Accumulates source text line by line; ``getvalue`` returns it with one final newline."""

    def __init__(self) -> None:
        self._lines: list[str] = []
        self._level = 0

    def fill(self, text: str = "") -> None:
        """Start a new line at the current indentation and write ``text`` on it."""
        self._lines.append(INDENT * self._level + text if text else "")

    def write(self, text: str) -> None:
        """Append ``text`` to the current line (starting one if there is none)."""
        if not self._lines:
            self._lines.append("")
        self._lines[-1] += text

    def blank(self, count: int = 1) -> None:
        """Leave ``count`` empty lines, counting those already there, and none at the top."""
        if not self._lines:
            return
        trailing = 0
        for line in reversed(self._lines):
            if line:
                break
            trailing += 1
        self._lines.extend([""] * max(0, count - trailing))

    def lines(self, text: str) -> None:
        """Write a block of text, one ``fill`` per line, keeping its relative indentation."""
        for line in text.splitlines():
            self.fill(line)

    def fill_wrapped(
        self, head: str, items: list[str], tail: str, *, limit: int = 99, hug: bool = False
    ) -> None:
        """``head`` + comma-separated ``items`` + ``tail`` on one line when it fits in
        ``limit`` characters, else one item per line (with a trailing comma), like Black.
        With ``hug``, the items first try one line of their own between ``head`` and
        ``tail`` (Black's second choice)."""
        one_line = head + ", ".join(items) + tail
        if len(INDENT * self._level + one_line) <= limit or not items:
            self.fill(one_line)
            return
        self.fill(head)
        with self.indent():
            hugged = ", ".join(items)
            if hug and len(INDENT * self._level + hugged) <= limit:
                self.fill(hugged)
            else:
                for item in items:
                    self.fill(item + ",")
        self.fill(tail)

    def fill_packed(self, head: str, items: list[str], tail: str, *, limit: int = 99) -> None:
        """``head``, then the comma-separated ``items`` packed onto as few indented lines of
        at most ``limit`` characters as they fit in, then ``tail`` (for long name lists)."""
        self.fill(head)
        with self.indent():
            line = ""
            for item in items:
                candidate = f"{line} {item}," if line else item + ","
                if line and len(INDENT * self._level + candidate) > limit:
                    self.fill(line)
                    candidate = item + ","
                line = candidate
            if line:
                self.fill(line)
        self.fill(tail)

    @contextmanager
    def indent(self) -> Iterator[None]:
        """Nest the lines written inside the ``with`` block one level deeper."""
        self._level += 1
        try:
            yield
        finally:
            self._level -= 1

    def getvalue(self) -> str:
        """The text written so far, without trailing blank lines, ending in one newline."""
        end = len(self._lines)
        while end and not self._lines[end - 1]:
            end -= 1
        return "\n".join(self._lines[:end]) + "\n"
