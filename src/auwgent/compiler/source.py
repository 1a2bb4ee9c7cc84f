"""Source files and spans.

A span is a half-open range of character offsets into one file's text. Offsets become line and
column only when a message is rendered (as tomllib does), so every node stays small and exact.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from itertools import accumulate

from .._records import frozen_delattr, frozen_setattr, record


@record(order=True)
class Span:
    """A half-open range ``[start, end)`` of character offsets into one source file.

    Immutable and hashable like the AST nodes; a record like them (the parser makes one per
    node, and a record is several times cheaper to build than a frozen dataclass). Ordered
    by ``start``, then ``end``; equal to the tuple ``(start, end)`` and hashed like it, as when
    it was a named tuple.
    """

    start: int
    end: int

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Span):
            return self.start == other.start and self.end == other.end
        if isinstance(other, tuple):
            return other == (self.start, self.end)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.start, self.end))

    def to(self, other: Span) -> Span:
        """The span from the start of this span to the end of ``other``."""
        return Span(self.start, max(self.end, other.end))

    @property
    def length(self) -> int:
        """Number of characters covered."""
        return self.end - self.start


_PLUS_ONE = (1).__add__


class SourceFile:
    """One ``.agent`` file's path (as shown to users) and text.

    Frozen; equal, hashed and shown by ``path`` and ``text`` (the line table is derived). A
    hand-written class rather than a record: a record cannot hold the derived line table.
    """

    __slots__ = ("path", "text", "_line_starts")
    __match_args__ = ("path", "text")

    path: str
    text: str
    _line_starts: array[int]

    def __init__(self, path: str, text: str) -> None:
        set_slot = object.__setattr__
        set_slot(self, "path", path)
        set_slot(self, "text", text)
        # Each line starts one past the end of the one before: a running sum of the line
        # lengths plus one, computed in C (a find() loop costs a Python step per line). An
        # array holds 8 bytes a line where a tuple of ints holds 40 (a file of line breaks).
        lines = text.split("\n")
        del lines[-1]  # the text after the last line break starts no further line
        starts = accumulate(map(_PLUS_ONE, map(len, lines)), initial=0)
        set_slot(self, "_line_starts", array("q", starts))

    __setattr__ = frozen_setattr
    __delattr__ = frozen_delattr

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SourceFile) and other.__class__ is self.__class__:
            return (self.path, self.text) == (other.path, other.text)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.path, self.text))

    def __repr__(self) -> str:
        return f"SourceFile(path={self.path!r}, text={self.text!r})"

    @property
    def line_count(self) -> int:
        """Number of lines (a trailing newline does not start an extra line of text)."""
        return len(self._line_starts)

    def line_col(self, offset: int) -> tuple[int, int]:
        """1-based line and column of ``offset`` (clamped into the file)."""
        offset = max(0, min(offset, len(self.text)))
        index = bisect_right(self._line_starts, offset) - 1
        return index + 1, offset - self._line_starts[index] + 1

    def line_text(self, line: int) -> str:
        """The text of 1-based ``line`` without its line break ('' when out of range)."""
        if line < 1 or line > len(self._line_starts):
            return ""
        start = self._line_starts[line - 1]
        end = self._line_starts[line] - 1 if line < len(self._line_starts) else len(self.text)
        return self.text[start:end].rstrip("\r")

    def line_bounds(self, line: int) -> tuple[int, int]:
        """Offsets of the first character of 1-based ``line`` and of its line break (or the
        end of the text); ``(0, 0)`` when out of range."""
        starts = self._line_starts
        if line < 1 or line > len(starts):
            return 0, 0
        end = starts[line] - 1 if line < len(starts) else len(self.text)
        return starts[line - 1], end

    def line_start(self, line: int) -> int:
        """Offset of the first character of 1-based ``line``."""
        return self._line_starts[max(0, min(line, len(self._line_starts)) - 1)]
