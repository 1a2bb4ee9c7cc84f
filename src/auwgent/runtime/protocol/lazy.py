"""Text that grows while it streams, and dicts whose large values are made only when read.

A streamed answer is shown by many partials, each holding the text so far. Copying that text
into every partial costs time quadratic in the answer (16 MB of text was 32 s of CPU). Instead
the partials of one block share a :class:`GrowingText` and remember its length when they were
made: the text of a partial is joined (once, then shared) and cut to that length only when
someone reads it. A :class:`LazyDict` is a plain ``dict`` to its reader (``[]``, ``get``,
``in``, iteration, ``==``, ``json.dumps``, ``dict(...)``), but the values named in ``lazy``
are made on first use: reading ``value["delta"]`` of a text partial costs nothing, reading
``value["raw"]`` costs one copy of the text so far.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

__all__ = ["GrowingText", "LazyDict", "TextPrefix"]


class GrowingText:
    """Text appended to piece by piece; :meth:`text` joins what arrived (once) and keeps it.
    Once :meth:`framed`, it is kept as part of the framed text instead (no second copy)."""

    __slots__ = ("_frame", "_parts", "_start", "size")

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._frame = ""  # set by framed(): the text is self._frame[self._start:][:size]
        self._start = -1
        self.size = 0

    def __repr__(self) -> str:
        return f"GrowingText(size={self.size})"

    def add(self, piece: str) -> None:
        """Append ``piece`` (costs the piece, not the text; not after :meth:`framed`)."""
        if piece:
            self._parts.append(piece)
            self.size += len(piece)

    def text(self, end: int | None = None) -> str:
        """The text, or its first ``end`` characters."""
        if self._start >= 0:
            stop = self.size if end is None else min(end, self.size)
            return self._frame[self._start : self._start + stop]
        parts = self._parts
        if len(parts) > 1:
            parts[:] = ["".join(parts)]
        whole = parts[0] if parts else ""
        return whole if end is None or end >= len(whole) else whole[:end]

    def framed(self, head: str, tail: str) -> str:
        """``head``, the text, then ``tail``, in one copy; the text is then read from it (its
        pieces are let go). The last thing done with a text: nothing is added after."""
        frame = "".join([head, *self._parts, tail])
        self._frame, self._start, self._parts = frame, len(head), []
        return frame

    def prefix(self, *, trim: bool = False) -> TextPrefix:
        """The text as it is now (``trim``: without surrounding whitespace), made when read."""
        return TextPrefix(self, self.size, trim)


class TextPrefix:
    """The first ``end`` characters of a :class:`GrowingText` (``trim``: stripped), made when
    :meth:`text` is called (they never change: the text only grows)."""

    __slots__ = ("_source", "end", "trim")

    def __init__(self, source: GrowingText, end: int, trim: bool = False) -> None:
        self._source = source
        self.end = end
        self.trim = trim

    def __repr__(self) -> str:
        return f"TextPrefix(end={self.end})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, TextPrefix):
            return self.text() == other.text()
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def text(self) -> str:
        """The text itself."""
        text = self._source.text(self.end)
        return text.strip() if self.trim else text


_Maker = Callable[[], Any]


class LazyDict(dict[str, Any]):
    """A ``dict`` whose values for the keys of ``lazy`` are made (all at once) on first use.

    Reading another key, or testing ``key in d``, makes nothing; reading a lazy key, or the
    dict as a whole (iteration, ``len``, ``items()``, ``==``, ``repr``, copies, ``json.dumps``,
    changes), makes them first. Their keys come after the others.
    """

    __slots__ = ("_lazy",)

    def __init__(self, eager: Mapping[str, Any], lazy: Mapping[str, _Maker]) -> None:
        super().__init__(eager)
        self._lazy: Mapping[str, _Maker] | None = lazy or None

    def _fill(self) -> None:
        lazy = self._lazy
        if lazy is not None:
            self._lazy = None
            for key, make in lazy.items():
                dict.__setitem__(self, key, make())

    def __missing__(self, key: str) -> Any:
        if self._lazy is not None and key in self._lazy:
            self._fill()
            return dict.__getitem__(self, key)
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        if self._lazy is not None and key in self._lazy:
            self._fill()
        return dict.get(self, key, default)

    def __contains__(self, key: object) -> bool:
        lazy = self._lazy
        return (lazy is not None and key in lazy) or dict.__contains__(self, key)

    def __iter__(self) -> Iterator[str]:
        self._fill()
        return dict.__iter__(self)

    def __reversed__(self) -> Iterator[str]:
        self._fill()
        return dict.__reversed__(self)

    def __len__(self) -> int:
        self._fill()
        return dict.__len__(self)

    def __repr__(self) -> str:
        self._fill()
        return dict.__repr__(self)

    def __eq__(self, other: object) -> bool:
        self._fill()
        if isinstance(other, LazyDict):
            other._fill()
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None

    def __reduce__(self) -> Any:
        self._fill()
        return (dict, (dict(dict.items(self)),))

    def __copy__(self) -> dict[str, Any]:
        return self.copy()

    def copy(self) -> dict[str, Any]:
        self._fill()
        return dict(dict.items(self))

    def keys(self) -> Any:
        self._fill()
        return dict.keys(self)

    def values(self) -> Any:
        self._fill()
        return dict.values(self)

    def items(self) -> Any:
        self._fill()
        return dict.items(self)

    def __or__(self, other: Any) -> Any:
        return self.copy() | other

    def __ror__(self, other: Any) -> Any:
        return other | self.copy()

    def __setitem__(self, key: str, value: Any) -> None:
        self._fill()
        dict.__setitem__(self, key, value)

    def __delitem__(self, key: str) -> None:
        self._fill()
        dict.__delitem__(self, key)

    def __ior__(self, other: Any) -> Any:
        self._fill()
        return dict.__ior__(self, other)

    def pop(self, key: str, *default: Any) -> Any:
        self._fill()
        return dict.pop(self, key, *default)

    def popitem(self) -> tuple[str, Any]:
        self._fill()
        return dict.popitem(self)

    def setdefault(self, key: str, default: Any = None) -> Any:
        self._fill()
        return dict.setdefault(self, key, default)

    def update(self, *args: Any, **kwargs: Any) -> None:
        self._fill()
        dict.update(self, *args, **kwargs)

    def clear(self) -> None:
        self._lazy = None
        dict.clear(self)
