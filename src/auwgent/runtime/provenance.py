"""Provenance: where the values of a call's arguments may have come from.

Pure and stdlib only (docs/security.md states the rule this module implements):

- :func:`normalise` folds a text the way matching sees it: URL-decoded (``%XX`` sequences),
  case-folded, every run of whitespace one space, with a map from each folded character back
  to the original text (so a finding names the span of the result it came from);
- :class:`TextIndex` holds texts of one kind (the untrusted results of a run, or its trusted
  sources), each normalised once when added, and finds a value in them: a **bounded**
  occurrence, one not glued to letters or digits on a side where the value itself starts or
  ends with one (``bob@x.co`` is not found in ``bob@x.com``; ``5`` is not found in ``500``);
- :func:`leaves` walks an argument value by its declared type and yields the values to check:
  strings and numbers, except values of a literal type (``"low" | "high"``) and booleans;
- :func:`assess` applies the rule to one argument value and returns a :class:`Finding` when it
  is tainted.

Cost: adding a text is linear in its length; finding a value is one substring search over the
folded texts (linear in their total size), so checking a call is linear in the untrusted and
trusted text of the run and its kept history (bench/bench_taint.py measures it).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from auwgent._records import record

__all__ = [
    "Finding",
    "Source",
    "TextIndex",
    "assess",
    "call_findings",
    "is_literal",
    "leaves",
    "normalise",
    "resolved",
    "value_text",
]

_HEX = frozenset("0123456789abcdefABCDEF")
#: Separates the texts of an index, so that no value is found across two of them.
_SEP = "\x00"


def normalise(text: str) -> tuple[str, list[int]]:
    """``text`` folded for matching, and for each folded character the index of the original
    character it came from."""
    decoded, origin = _url_decoded(text)
    out: list[str] = []
    where: list[int] = []
    space = False
    for char, at in zip(decoded, origin, strict=True):
        if char.isspace():
            if not space and out:
                out.append(" ")
                where.append(at)
            space = True
            continue
        space = False
        for folded in char.casefold():
            out.append(folded)
            where.append(at)
    if out and out[-1] == " ":
        out.pop()
        where.pop()
    return "".join(out), where


def _url_decoded(text: str) -> tuple[str, list[int]]:
    """``%XX`` runs decoded as UTF-8 (bad bytes as U+FFFD), each decoded character mapped to
    the start of its run in ``text``; everything else as it is."""
    if "%" not in text:
        return text, list(range(len(text)))
    chars: list[str] = []
    origin: list[int] = []
    i = 0
    size = len(text)
    while i < size:
        if text[i] == "%" and _is_escape(text, i):
            start = i
            raw = bytearray()
            while i < size and text[i] == "%" and _is_escape(text, i):
                raw.append(int(text[i + 1 : i + 3], 16))
                i += 3
            for char in raw.decode("utf-8", errors="replace"):
                chars.append(char)
                origin.append(start)
            continue
        chars.append(text[i])
        origin.append(i)
        i += 1
    return "".join(chars), origin


def _is_escape(text: str, i: int) -> bool:
    return i + 2 < len(text) and text[i + 1] in _HEX and text[i + 2] in _HEX


@record
class Source:
    """One text of an index: what it is (``{"kind": "tool", "name": ..., ...}``) and its
    original text."""

    label: Mapping[str, Any]
    text: str


@record
class Finding:
    """Why one argument value is tainted.

    ``rule`` is ``"copied"`` (the value occurs in an untrusted text: ``source`` and ``span``,
    the character offsets in that text's original, say where) or ``"after_untrusted"`` (a free
    value, found in no trusted source, written after untrusted text entered the context:
    ``source`` is the first untrusted text of that context, ``span`` is ``None``).
    """

    path: str
    value: str
    rule: str
    source: Mapping[str, Any]
    span: tuple[int, int] | None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.path,
            "value": self.value,
            "rule": self.rule,
            "source": dict(self.source),
        }
        if self.span is not None:
            out["span"] = list(self.span)
        return out


class TextIndex:
    """Texts of one kind, each folded once, searched as one string (see the module
    docstring)."""

    __slots__ = ("_joined", "_parts", "_size", "_starts", "sources")

    def __init__(self) -> None:
        self.sources: list[Source] = []
        self._starts: list[int] = []  # offset of each text in the joined folded text
        self._parts: list[str] = []
        self._size = 0
        self._joined: str | None = ""  # the parts joined, until the next add

    def __len__(self) -> int:
        return len(self.sources)

    def add(self, label: Mapping[str, Any], text: str) -> None:
        """Add one text (an empty one adds nothing)."""
        folded = normalise(text)
        if not folded[0]:
            return
        self.sources.append(Source(label, text))
        self._starts.append(self._size)
        self._parts.append(folded[0] + _SEP)
        self._size += len(folded[0]) + 1
        self._joined = None

    def find(self, value: str) -> tuple[Source, tuple[int, int]] | None:
        """The first text holding a bounded occurrence of ``value`` (folded) and the span of
        that occurrence in the text's original; ``None`` when there is none."""
        needle = normalise(value)[0]
        if not needle:
            return None
        if self._joined is None:
            self._joined = "".join(self._parts)  # once per batch of adds: linear overall
        haystack = self._joined
        at = haystack.find(needle)
        while at != -1:
            end = at + len(needle)
            if _bounded(haystack, at, end, needle):
                return self._locate(at, end)
            at = haystack.find(needle, at + 1)
        return None

    def _locate(self, at: int, end: int) -> tuple[Source, tuple[int, int]]:
        """The text holding joined offsets ``at:end`` and the span in its original; its map
        back to the original is made again here, for this one text (keeping a map for every
        text would cost several times the text's size in memory)."""
        index = _bisect(self._starts, at)
        start = self._starts[index]
        source = self.sources[index]
        where = normalise(source.text)[1]
        first = where[at - start]
        last = where[end - start - 1]
        return source, (first, _char_end(source.text, last))


def _bisect(starts: Sequence[int], at: int) -> int:
    lo, hi = 0, len(starts)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if starts[mid] <= at:
            lo = mid
        else:
            hi = mid
    return lo


def _char_end(text: str, index: int) -> int:
    """The end of the original character (or ``%XX`` run) at ``index``."""
    if text[index] != "%" or not _is_escape(text, index):
        return index + 1
    end = index
    while end < len(text) and text[end] == "%" and _is_escape(text, end):
        end += 3
    return end


def _bounded(haystack: str, at: int, end: int, needle: str) -> bool:
    """Not glued to a letter or digit on a side where the needle itself has one."""
    if needle[0].isalnum() and at > 0 and haystack[at - 1].isalnum():
        return False
    return not (needle[-1].isalnum() and end < len(haystack) and haystack[end].isalnum())


def value_text(value: Any) -> str:
    """A leaf value as matching reads it: a string as it is, a whole number without a
    fraction (``50.0`` is ``50``)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def leaves(
    value: Any, type_: Mapping[str, Any] | None, types: Mapping[str, Any], path: str
) -> Iterator[tuple[str, Any]]:
    """``(path, leaf)`` for each string or number in ``value`` that is checked: not a
    boolean, not a value of a string literal type (or a union of them)."""
    type_ = resolved(type_, types)
    if isinstance(value, bool) or value is None or is_literal(type_, types):
        return
    if isinstance(value, str | int | float):
        yield path, value
    elif isinstance(value, Mapping):
        fields = {f["name"]: f["type"] for f in (type_ or {}).get("fields", ())}
        for key, item in value.items():
            yield from leaves(item, fields.get(key), types, f"{path}.{key}")
    elif isinstance(value, list | tuple):
        items = (type_ or {}).get("items") if (type_ or {}).get("kind") == "array" else None
        for i, item in enumerate(value):
            yield from leaves(item, items, types, f"{path}[{i}]")


def resolved(type_: Mapping[str, Any] | None, types: Mapping[str, Any]) -> Mapping[str, Any] | None:
    seen = 0
    while type_ is not None and type_.get("kind") == "ref" and seen < 32:
        type_ = types.get(str(type_.get("name")))
        seen += 1
    return type_


def is_literal(type_: Mapping[str, Any] | None, types: Mapping[str, Any]) -> bool:
    if type_ is None:
        return False
    kind = type_.get("kind")
    if kind == "literal":
        return True
    if kind == "union":
        return all(is_literal(resolved(v, types), types) for v in type_.get("variants", ()))
    return False


def assess(
    path: str,
    value: Any,
    *,
    untrusted: TextIndex,
    trusted: Sequence[TextIndex],
    exposed_by: Mapping[str, Any] | None,
) -> Finding | None:
    """The rule for one leaf value (docs/security.md, "The provenance rule"):

    1. found in a trusted source: clean;
    2. found in an untrusted text: tainted (``copied``);
    3. written after untrusted text entered the context (``exposed_by`` is that text's
       label): tainted (``after_untrusted``);
    4. otherwise clean.
    """
    text = value_text(value)
    if not normalise(text)[0] or any(index.find(text) is not None for index in trusted):
        return None
    found = untrusted.find(text)
    if found is not None:
        source, span = found
        return Finding(path, text, "copied", source.label, span)
    if exposed_by is not None:
        return Finding(path, text, "after_untrusted", exposed_by, None)
    return None


def call_findings(
    args: Mapping[str, Any],
    params: Sequence[Mapping[str, Any]],
    types: Mapping[str, Any],
    *,
    untrusted: TextIndex,
    trusted: Sequence[TextIndex],
    exposed_by: Mapping[str, Any] | None,
) -> list[Finding]:
    """The tainted leaf values of a call's ``args``, walked by the declared ``params``."""
    declared = {p["name"]: p["type"] for p in params}
    out: list[Finding] = []
    for key, value in args.items():
        for path, leaf in leaves(value, declared.get(key), types, f"args.{key}"):
            found = assess(path, leaf, untrusted=untrusted, trusted=trusted, exposed_by=exposed_by)
            if found is not None:
                out.append(found)
    return out
