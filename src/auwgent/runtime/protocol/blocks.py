"""The block protocol: the default codec.

The model answers in plain text made of blocks (``[kind: Name]`` ... ``[/kind]``); see
``docs/protocol.md``. :class:`BlocksCodec` renders the protocol section and history messages,
:class:`BlocksDecoder` turns the streamed text into decode events.

The decoder is a small state machine over the characters of the stream. Outside a block it
only watches line starts for a header; inside a block it only looks for the block's closer, so
each character is examined a bounded number of times. A text partial carries the text added
since the last one; the text so far (its snapshot and ``raw``) is made only when read (see
:mod:`~auwgent.runtime.protocol.lazy`), so text partials come after every chunk and cost
what arrived. A JSON body's partial snapshots are built incrementally
(:class:`~auwgent.runtime.protocol.values.JsonSnapshot`); other bodies are read whole, which
costs time proportional to the body. A :class:`PartialBudget` decides when a structured
partial comes: after every chunk while the block is small, at least every 4 KB however large
it grows, and whole reads spaced so that their total cost stays linear in the stream; past
:data:`~auwgent.runtime.protocol.values.MAX_BODY_CHARS` (a body the final read refuses) the
last snapshot is shown again, unread.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from auwgent._records import field, record
from auwgent._typing import assert_never
from auwgent.runtime.evaluate.schema import IRField, IRType
from auwgent.runtime.protocol import section
from auwgent.runtime.protocol.contract import (
    AssistantTurn,
    CallableSpec,
    CallOutcome,
    Contract,
    DecodeEvent,
    FinalEvent,
    IntentKind,
    PartialEvent,
    RejectedEvent,
)
from auwgent.runtime.protocol.lazy import GrowingText, LazyDict
from auwgent.runtime.protocol.values import (
    MAX_BODY_CHARS,
    BodyError,
    JsonSnapshot,
    Repair,
    Stale,
    embedded_object,
    looks_structured,
    parse_body,
    parse_value,
    repair,
)
from auwgent.runtime.providers.base import (
    ContentPart,
    Finish,
    FunctionSpec,
    Message,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    Usage,
)

__all__ = ["BlocksCodec", "BlocksDecoder", "PartialBudget", "TextStream"]

KINDS: Mapping[str, IntentKind] = {
    "response_text": "response_text",
    "tool_call": "tool_call",
    "workflow_call": "workflow_call",
    "helper_call": "helper_call",
    "custom": "custom",
    "schema": "response_schema",
}
_CALL_KINDS: Mapping[str, Literal["tool", "workflow", "helper"]] = {
    "tool_call": "tool",
    "workflow_call": "workflow",
    "helper_call": "helper",
}
# An unknown `[kind: name]` is taken for a block (and rejected) only when the kind looks like
# a protocol word; `[TODO: fix]` or `[Note: x]` in a reply stay text.
_PROTOCOLISH = re.compile(r"\A[a-z_]*(?:call|tool|function|intent|schema|response|result|output)")
_MAX_HEADER = 200
_LINE_OR_BRACKET = re.compile(r"[\[\n]")  # a longer line starting with `[` is text, not a header
_LINE = re.compile(r"\n")
_MAX_CLOSER = 40

_HEADER = re.compile(
    r"\[[ \t]*(?P<kind>[A-Za-z_][\w-]*)[ \t]*(?::[ \t]*(?P<name>[^\]\n]*?))?[ \t]*\]?[ \t\r]*"
)
_NAME = re.compile(r"[A-Za-z_][\w.\-]*")
# Characters a header may contain; anything else ends the candidate (or it is a header's `]`).
_HEADER_STOP = re.compile(r"[^A-Za-z0-9_\-.: \t`\"'\r]")
_CLOSER = re.compile(r"\[/[ \t]*(?P<kind>[A-Za-z_][\w-]*)[ \t]*\]")
_CLOSER_PREFIX = re.compile(r"\[(?:/[ \t]*[\w-]*[ \t]*)?")
# Inside a block, a known header at a line start means the block lost its closer.
_KNOWN = r"(?:tool_call|workflow_call|helper_call|custom|schema|response_text)"
_NEXT_HEADER = re.compile(rf"\[[ \t]*{_KNOWN}[ \t]*(?::[^\]\n]*)?\]", re.I)
_NEXT_HEADER_PREFIX = re.compile(r"\[[ \t]*[A-Za-z_]*[ \t]*(?::[^\]\n]*)?")
# A line indented by this many columns (a tab reaching the next multiple of 4) is a Markdown
# code line: a quoted example, so nothing on it is a header.
CODE_INDENT = 4


def columns(start: int, spaces: str) -> int:
    """The column reached from ``start`` after ``spaces`` (spaces, tabs, ``\\r``)."""
    for char in spaces:
        if char == " ":
            start += 1
        elif char == "\t":
            start += 4 - start % 4
    return start


@record(frozen=False)
class PartialBudget:
    """Decides whether a partial snapshot is built now.

    Rebuilding a snapshot from the whole body costs about its ``size``. That is *within budget*
    while the total spent on this block stays within ``factor`` times the characters consumed
    plus a fixed ``floor``: small blocks get one per chunk, large ones at geometrically spaced
    sizes, and the total stays linear in the stream. Beside that, a partial is *due* once
    ``every`` characters arrived since the last one, whatever the budget: a structured
    snapshot is then built incrementally where the body allows (see
    :class:`~auwgent.runtime.protocol.values.JsonSnapshot`), and otherwise the last one is
    shown again. ``fresh`` says which of the two the last allowed partial was.
    """

    factor: int
    floor: int
    every: int = 4096
    spent: int = 0
    last: int = 0  # characters consumed at the last partial
    fresh: bool = True

    def allow(self, size: int, consumed: int) -> bool:
        """Whether a partial is built now (``size`` is spent when it is within budget)."""
        if self.spent + size <= self.factor * consumed + self.floor:
            self.spent += size
            self.fresh = True
        elif consumed - self.last < self.every:
            return False
        else:
            self.fresh = False
        self.last = consumed
        return True


def structured_budget() -> PartialBudget:
    """Structured snapshots read whole re-parse the body: dearer, so they thin out sooner
    (JSON bodies are read incrementally and keep the 4 KB cadence)."""
    return PartialBudget(factor=2, floor=1 << 16)


class TextStream:
    """The deltas of streaming text with leading and trailing whitespace trimmed.

    Trailing whitespace is held back until more text follows it, so the deltas handed out
    always concatenate to exactly the final (stripped) text. The text itself is not kept here:
    it is its raw text stripped (:func:`text_snapshot`).
    """

    def __init__(self) -> None:
        self.started = False
        self._held: list[str] = []
        self._pending: list[str] = []

    def push(self, piece: str) -> None:
        """Add text as it arrives."""
        if not self.started:
            piece = piece.lstrip()
            if not piece:
                return
            self.started = True
        stripped = piece.rstrip()
        if not stripped:
            self._held.append(piece)
            return
        delta = "".join(self._held) + stripped
        self._held = [piece[len(stripped) :]]
        self._pending.append(delta)

    def has_delta(self) -> bool:
        """True when text arrived since the last :meth:`take_delta`."""
        return bool(self._pending)

    def take_delta(self) -> str:
        """The text added since the last call."""
        delta = "".join(self._pending)
        self._pending = []
        return delta


def text_snapshot(raw: GrowingText) -> LazyDict:
    """``{"text": ...}``: the text so far (``raw`` trimmed), made when read."""
    return LazyDict({}, {"text": raw.prefix(trim=True).text})


@record(frozen=False)
class _Target:
    """What an open block will produce, resolved against the contract when it opens."""

    kind: IntentKind
    name: str | None
    fields: Sequence[IRField] = ()
    type_: IRType | None = None  # response_schema: the variant's type
    single: str | None = None  # a lone string parameter that may take the whole body
    raw_body: bool = False  # the body is that parameter's value as it is (code mode)


@record(frozen=False)
class _Block:
    segment: int
    header: str
    closers: frozenset[str]
    target: _Target | None
    error: str | None
    kind: IntentKind | None
    name: str | None
    parts: GrowingText = field(default_factory=GrowingText)  # the body so far
    pending: str = ""  # a possible closer (or next header) still arriving
    # The indentation of the body's last line while it holds only spaces and tabs (None once
    # it holds text): a header there, indented less than CODE_INDENT, starts a line.
    column: int | None = None
    text: TextStream | None = None
    json: JsonSnapshot = field(default_factory=JsonSnapshot)  # for partials of JSON bodies
    budget: PartialBudget = field(default_factory=structured_budget)
    dirty: bool = True  # something new since the last partial
    snapshot: Mapping[str, Any] = field(default_factory=dict)
    repairs: list[Repair] = field(default_factory=list)  # framing recovered, then the body's

    def body(self) -> str:
        return self.parts.text()


class BlocksDecoder:
    """Incremental decoder for one response in the block protocol."""

    def __init__(self, contract: Contract, *, partials: bool = True) -> None:
        self.contract = contract
        self._want_partials = partials
        self._text_output = contract.output["kind"] == "text"
        self._segment = 0
        self._line_start = True
        self._column = 0  # outside blocks: the indentation of the line so far
        self._code_line = False  # this line is indented as code: nothing on it is a header
        self._header: str | None = None  # a `[...` not yet known to be a header
        self._midline = False  # that `[` came after text on its line
        self._fence = ""  # outside blocks: the fence character of an open code fence
        self._probe = ""  # a run of fence characters starting the line so far
        self._last = ""  # the last character of text outside blocks
        self._block: _Block | None = None
        self._blocks_seen = False
        self._pre = GrowingText()  # text before the first block
        self._pre_text = TextStream()
        self._pre_segment: int | None = None
        self._events: list[DecodeEvent] = []

    # -- feeding ------------------------------------------------------------------------------

    def feed(self, event: StreamEvent) -> list[DecodeEvent]:
        """Consume one stream event; only text matters to this protocol."""
        if isinstance(event, TextDelta):
            if event.text:
                self._consume(event.text)
                if self._want_partials:
                    self._partials()
        elif isinstance(event, ToolCallDelta | ContentPart | Usage | Finish):
            pass  # not this protocol's (a native call's fragments, reasoning, usage, the end)
        else:
            assert_never(event)
        events, self._events = self._events, []
        return events

    def close(self) -> list[DecodeEvent]:
        """End of stream: finish a header or block left open, then the unframed text."""
        if self._probe:
            self._outside_text(self._probe)
            self._probe = ""
        if self._header is not None:
            header, self._header = self._header, None
            if self._midline or not self._open(header, header):
                self._outside_text(header)
        if self._block is not None:
            block = self._block
            self._flush_body(block, block.pending)
            block.pending = ""
            self._finish(block, "")
        if not self._blocks_seen:
            self._finish_unframed()
        events, self._events = self._events, []
        return events

    def _consume(self, chunk: str) -> None:
        if self._block is not None and self._block.pending:
            # Text held back at the end of the last chunk is read again with this one (it is
            # short, and only ever held at a chunk's end).
            chunk, self._block.pending = self._block.pending + chunk, ""
        i = 0
        while i < len(chunk):
            i = self._inside(chunk, i) if self._block is not None else self._outside(chunk, i)

    # -- outside blocks -----------------------------------------------------------------------

    def _outside(self, s: str, i: int) -> int:
        n = len(s)
        while i < n and self._block is None:
            if self._header is not None:
                i = self._grow_header(s, i)
                continue
            if self._probe:
                i = self._grow_probe(s, i)
                continue
            if self._line_start:
                j = i
                while j < n and s[j] in " \t\r":
                    j += 1
                self._column = columns(self._column, s[i:j])
                if j == n:
                    self._outside_text(s[i:])
                    return n
                self._line_start = False
                if self._column >= CODE_INDENT:
                    self._code_line = True  # a Markdown code line: text to its end
                elif s[j] == "[" and not self._fence:
                    self._outside_text(s[i:j])
                    self._header, self._midline = "[", False
                    i = j + 1
                    continue
                elif s[j] in "`~":  # perhaps a code fence: headers inside one are text
                    self._outside_text(s[i:j])
                    self._probe = s[j]
                    i = self._grow_probe(s, j + 1)
                    continue
            stop = (_LINE if self._fence or self._code_line else _LINE_OR_BRACKET).search(s, i)
            if stop is None:
                self._outside_text(s[i:])
                return n
            k = stop.start()
            if s[k] == "\n":
                self._outside_text(s[i : k + 1])
                self._new_line()
            elif (s[k - 1] if k > i else self._last) == "`":
                self._outside_text(s[i : k + 1])  # `[tool_call: x]` in inline code is text
            else:  # a header may also follow text on its line (`Sure. [tool_call: x]`)
                self._outside_text(s[i:k])
                self._header, self._midline = "[", True
            i = k + 1
        return i

    def _new_line(self) -> None:
        self._line_start, self._column, self._code_line = True, 0, False

    def _grow_probe(self, s: str, i: int) -> int:
        """Count the fence characters opening a line; three open (or close) a code fence."""
        char = self._probe[0]
        j = i
        while j < len(s) and s[j] == char and len(self._probe) + j - i < 3:
            j += 1
        self._probe += s[i:j]
        if len(self._probe) == 3:
            if not self._fence:
                self._fence = char
            elif self._fence == char:
                self._fence = ""
            self._outside_text(self._probe)
            self._probe = ""
        elif j < len(s):  # another character: not a fence
            self._outside_text(self._probe)
            self._probe = ""
        return j

    def _grow_header(self, s: str, i: int) -> int:
        assert self._header is not None
        stop = _HEADER_STOP.search(s, i)
        if stop is None:
            self._header += s[i:]
            if len(self._header) > _MAX_HEADER:
                self._release_header("")
            return len(s)
        k = stop.start()
        char = s[k]
        candidate = self._header + s[i:k]
        if char == "]" and self._open(candidate + "]", candidate + "]"):
            self._header = None
            return k + 1
        if char == "\n" and not self._midline and self._open(candidate, candidate + "\n"):
            self._header = None
            return k + 1
        self._header = candidate
        self._release_header(char if char in "]\n" else "")
        return k + 1 if char in "]\n" else k

    def _release_header(self, tail: str) -> None:
        assert self._header is not None
        self._outside_text(self._header + tail)
        self._header = None
        if tail == "\n":
            self._new_line()
        else:
            self._line_start = False

    def _outside_text(self, piece: str) -> None:
        if piece:
            self._last = piece[-1]
        if not piece or self._blocks_seen:
            return  # text between or after blocks is commentary: kept in history only
        self._pre.add(piece)
        if self._text_output:
            self._pre_text.push(piece)
            if self._pre_segment is None and self._pre_text.started:
                self._pre_segment = self._next_segment()

    # -- opening and closing blocks -----------------------------------------------------------

    def _open(self, candidate: str, header_raw: str) -> bool:
        match = _HEADER.fullmatch(candidate)
        if match is None:
            return False
        word = match.group("kind").lower()
        if self._midline and word not in KINDS:
            return False  # after text on a line only the protocol's own kinds open a block
        ok, name = _clean_name(match.group("name"))
        if not ok or (word not in KINDS and not (name and _PROTOCOLISH.search(match["kind"]))):
            return False  # `[Note]`, `[TODO: fix]`, `[see: the docs]`: ordinary text
        self._blocks_seen = True
        kind = KINDS.get(word)
        target, error = self._resolve(word, name)
        block = _Block(
            segment=self._next_segment(),
            header=header_raw,
            closers=_closers(word),
            target=target,
            error=error,
            kind=target.kind if target else kind,
            name=target.name if target else name,
        )
        block.column = 0 if header_raw.endswith("\n") else None
        if not candidate.rstrip(" \t\r").endswith("]"):
            block.repairs.append(repair("header_bracket", "", "a header without its `]`"))
        if kind == "response_text":
            block.text = TextStream()
        self._block = block
        self._line_start = False
        return True

    def _resolve(self, word: str, name: str | None) -> tuple[_Target | None, str | None]:
        kind = KINDS.get(word)
        if kind is None:
            return None, f"unknown block [{word}: {name}]; {self._allowed()}"
        if kind == "response_text":
            if self._text_output:
                return _Target("response_text", None), None
            return None, f"this agent answers with {self._schema_hint()}, not [response_text]"
        if kind == "response_schema":
            return self._resolve_schema(name)
        if name is None:
            return None, f"[{word}] needs a name: [{word}: name]"
        if kind == "custom":
            for intent in self.contract.intents:
                if intent["name"] == name:
                    return _Target("custom", name, intent["fields"]), None
            return None, f"unknown intent {name!r}; {self._allowed()}"
        return self._resolve_call(word, name)

    def _resolve_call(self, word: str, name: str) -> tuple[_Target | None, str | None]:
        spec = self.contract.callable(_CALL_KINDS[word], name)
        if spec is None:
            # A workflow written as a tool call (or the like) is still that workflow.
            same = [c for c in self.contract.callables if c.name == name]
            spec = same[0] if len(same) == 1 else None
        if spec is None:
            # Worded as the manual's tool_error example ("Tool not found: search_docs").
            what = _CALL_KINDS[word].capitalize()
            return None, f"{what} not found: {name} (not available here; {self._allowed()})"
        kind = section.BLOCK_KIND[spec.kind]
        single = _single_string(spec)
        target = _Target(KINDS[kind], spec.name, spec.params, single=single, raw_body=spec.raw_body)
        return target, None

    def _resolve_schema(self, name: str | None) -> tuple[_Target | None, str | None]:
        variants = section.output_variants(self.contract)
        if not variants:
            return None, "this agent answers with [response_text], not [schema]"
        if name is None and len(variants) == 1:
            name = variants[0][0]
        for variant_name, type_ in variants:
            if variant_name == name:
                return _Target("response_schema", name, type_=type_), None
        what = f"unknown output shape {name!r}" if name else "[schema] needs the shape's name"
        return None, f"{what}; answer with {self._schema_hint()}"

    def _allowed(self) -> str:
        names = [f"{c.kind} {c.name}" for c in self.contract.callables]
        names += [f"intent {i['name']}" for i in self.contract.intents]
        return "available: " + (", ".join(names) if names else "no tools")

    def _schema_hint(self) -> str:
        return " or ".join(f"[schema: {n}]" for n, _ in section.output_variants(self.contract))

    def _next_segment(self) -> int:
        self._segment += 1
        return self._segment - 1

    # -- inside a block -----------------------------------------------------------------------

    def _inside(self, s: str, i: int) -> int:
        block = self._block
        assert block is not None
        pos = i
        while (k := s.find("[", pos)) >= 0:
            match = _CLOSER.match(s, k)
            if match and match.group("kind").lower() in block.closers:
                self._flush_body(block, s[i:k])
                self._finish(block, match.group())
                return match.end()
            if block.text is None and self._at_line_start(block, s, i, k):
                if _NEXT_HEADER.match(s, k):
                    return self._reopen(block, s, i, k)
                if len(s) - k <= _MAX_HEADER and _NEXT_HEADER_PREFIX.fullmatch(s, k):
                    return self._hold(block, s, i, k)
            if len(s) - k < _MAX_CLOSER and _CLOSER_PREFIX.fullmatch(s, k):
                return self._hold(block, s, i, k)
            pos = k + 1
        self._flush_body(block, s[i:])
        return len(s)

    def _hold(self, block: _Block, s: str, i: int, k: int) -> int:
        """Keep a possible closer or header at the end of the chunk until more arrives."""
        self._flush_body(block, s[i:k])
        block.pending = s[k:]
        return len(s)

    def _reopen(self, block: _Block, s: str, i: int, k: int) -> int:
        """A new header at a line start: the open block lost its closer; finish it here."""
        self._flush_body(block, s[i:k])
        self._finish(block, "")
        self._new_line()  # the header's indentation was read in the block: under CODE_INDENT
        return k

    @staticmethod
    def _at_line_start(block: _Block, s: str, i: int, k: int) -> bool:
        """Whether the ``[`` at ``k`` starts a line, indented less than code."""
        j = k - 1
        while j >= i and s[j] in " \t":
            j -= 1
        if j >= i:
            start = 0 if s[j] == "\n" else None
        else:
            start = block.column
        return start is not None and columns(start, s[j + 1 : k]) < CODE_INDENT

    def _flush_body(self, block: _Block, piece: str) -> None:
        if not piece:
            return
        block.parts.add(piece)
        line = piece.rfind("\n")
        tail = piece[line + 1 :]
        if tail.strip(" \t"):
            block.column = None
        elif line >= 0:
            block.column = columns(0, tail)
        elif block.column is not None:
            block.column = columns(block.column, tail)
        block.dirty = True
        if block.text is not None:
            block.text.push(piece)

    def _finish(self, block: _Block, closer: str) -> None:
        """Finish ``block``; an empty ``closer`` means it never came (end of stream, or the
        next header)."""
        self._block = None
        if block.text is not None and block.target is not None:
            self._finish_text(block, closer)
            return
        body = block.body()
        raw = "".join((block.header, body, closer))  # one copy of a body that may be long
        if block.target is None:
            self._events.append(
                RejectedEvent(block.kind, block.name, block.segment, block.error or "", raw)
            )
            return
        repairs = block.repairs
        if not closer:
            repairs.append(repair("missing_closer", "", "a block without its closer"))
        try:
            payload = _payload(block.target, body, self.contract, partial=None, repairs=repairs)
        except BodyError as error:
            message = f"{_label(block.target)}: {error}"
            self._events.append(
                RejectedEvent(block.target.kind, block.name, block.segment, message, raw)
            )
            return
        self._events.append(
            FinalEvent(
                block.target.kind,
                block.name,
                block.segment,
                payload,
                raw,
                repairs=tuple(repairs),
            )
        )

    def _finish_text(self, block: _Block, closer: str) -> None:
        """A ``[response_text]`` block: its raw block made in one copy, its text cut from it
        (a long answer is copied twice, not three times)."""
        raw = block.parts.framed(block.header, closer)
        start, end = len(block.header), len(raw) - len(closer)
        while start < end and raw[start].isspace():
            start += 1
        while end > start and raw[end - 1].isspace():
            end -= 1
        repairs = block.repairs
        if not closer:
            repairs.append(repair("missing_closer", "", "a block without its closer"))
        payload = {"text": raw[start:end]}
        self._events.append(
            FinalEvent("response_text", None, block.segment, payload, raw, repairs=tuple(repairs))
        )

    # -- partials -----------------------------------------------------------------------------

    def _partials(self) -> None:
        block = self._block
        if block is not None and block.target is not None and block.dirty:
            self._block_partial(block, block.target)
        elif not self._blocks_seen and self._pre_segment is not None:
            self._pre_partial()

    def _block_partial(self, block: _Block, target: _Target) -> None:
        if block.text is not None:
            if not block.text.has_delta():
                return
            delta = block.text.take_delta()
            source = block.parts.prefix()
            snapshot = text_snapshot(block.parts)
            self._events.append(
                PartialEvent("response_text", None, block.segment, snapshot, source, delta)
            )
            block.dirty = False
            return
        size = block.parts.size
        if not block.budget.allow(size, size):
            return
        if size <= MAX_BODY_CHARS:  # longer: the final read refuses it, so nothing is read
            block.json.fresh = block.budget.fresh
            try:
                block.snapshot = _payload(target, block.body(), self.contract, partial=block.json)
            except (BodyError, KeyError, Stale):
                pass  # keep the previous snapshot; the final will say what is wrong
        self._events.append(
            PartialEvent(
                target.kind, target.name, block.segment, block.snapshot, block.parts.prefix()
            )
        )
        block.dirty = False

    def _pre_partial(self) -> None:
        stream = self._pre_text
        assert self._pre_segment is not None
        if not stream.has_delta():
            return
        delta = stream.take_delta()
        source = self._pre.prefix(trim=True)  # the text itself, as its snapshot says
        snapshot = text_snapshot(self._pre)
        self._events.append(
            PartialEvent("response_text", None, self._pre_segment, snapshot, source, delta)
        )

    # -- a response without blocks ------------------------------------------------------------

    def _finish_unframed(self) -> None:
        raw = self._pre.text()
        if self._text_output:
            text = raw.strip()
            if self._pre_segment is not None and text:
                payload = {"text": text}
                self._events.append(
                    FinalEvent("response_text", None, self._pre_segment, payload, raw)
                )
            return
        if not raw.strip():
            return
        segment = self._next_segment()
        variants = section.output_variants(self.contract)
        if len(variants) != 1:
            message = f"the answer must be one block: {self._schema_hint()}"
            self._events.append(RejectedEvent("response_schema", None, segment, message, raw))
            return
        name, type_ = variants[0]
        repairs: list[Repair] = []
        try:
            response = parse_value(
                embedded_object(raw), type_, self.contract.types, repairs=repairs
            )
        except BodyError as error:
            message = f"the answer must be a [schema: {name}] block ({error})"
            self._events.append(RejectedEvent("response_schema", name, segment, message, raw))
            return
        payload = {"type": name, "response": response}
        self._events.append(
            FinalEvent("response_schema", name, segment, payload, raw, repairs=tuple(repairs))
        )


def _clean_name(text: str | None) -> tuple[bool, str | None]:
    """The header's name without quotes (``None`` when absent); ``False`` first when the text
    is not a name at all."""
    name = (text or "").strip().strip("`\"'")
    if not name:
        return True, None
    return bool(_NAME.fullmatch(name)), name


def _closers(word: str) -> frozenset[str]:
    words = {word, word.removesuffix("_call")}
    if word == "response_text":
        words.add("response")
    return frozenset(words)


def _single_string(spec: CallableSpec) -> str | None:
    if len(spec.params) == 1 and spec.params[0]["type"]["kind"] in ("string", "text"):
        return str(spec.params[0]["name"])
    return None


def raw_value(body: str) -> str:
    """A raw body's value: without a surrounding code fence and common indentation."""
    lines = body.strip("\r\n").splitlines()
    if lines and lines[0].lstrip().startswith(("```", "~~~")):
        fence = lines[0].lstrip()[:3]
        lines = lines[1:]
        if lines and lines[-1].strip().startswith(fence) and not lines[-1].strip().strip(fence[0]):
            lines = lines[:-1]
    return textwrap.dedent("\n".join(lines)).strip("\n").rstrip()


def _label(target: _Target) -> str:
    word = {"response_schema": "schema", "custom": "custom"}.get(target.kind, target.kind)
    return f"[{word}: {target.name}]" if target.name else f"[{word}]"


def _payload(
    target: _Target,
    body: str,
    contract: Contract,
    *,
    partial: JsonSnapshot | None,
    repairs: list[Repair] | None = None,
) -> dict[str, Any]:
    """The payload of a block; ``partial`` is the body's snapshot builder while it streams."""
    types = contract.types
    streaming = partial is not None
    if target.kind == "response_text":
        return {"text": body.strip()}
    if target.kind == "response_schema":
        assert target.type_ is not None
        response = parse_value(
            body, target.type_, types, partial=streaming, stream=partial, repairs=repairs
        )
        return {"type": target.name, "response": response}
    if target.kind == "custom":
        return parse_body(
            body, target.fields, types, partial=streaming, stream=partial, repairs=repairs
        )
    return {"type": target.name, "args": _args(target, body, contract, partial, repairs)}


def _args(
    target: _Target,
    body: str,
    contract: Contract,
    partial: JsonSnapshot | None,
    repairs: list[Repair] | None,
) -> dict[str, Any]:
    """Call arguments. A lone string parameter takes the whole body as its value only when
    the body is plain text; a body that reads as fields must name that parameter (a guess
    here would hand the call text it never asked for)."""
    streaming = partial is not None
    single = target.single
    if target.raw_body and single is not None:
        # Code arrives whole: a partial would show lines the final (unfenced) value lacks.
        return {} if streaming else {single: raw_value(body)}
    if single is not None and not looks_structured(body, single):
        if streaming and "\n" not in body.lstrip():
            return {}  # the first line is still being typed: it may yet read as `name: ...`
        return {single: body.strip()}
    if single is None:
        return parse_body(
            body,
            target.fields,
            contract.types,
            partial=streaming,
            stream=partial,
            repairs=repairs,
        )
    hint = f"write `{single}: <value>` (or, for text, a body whose first line is not `name: ...`)"
    try:
        args = parse_body(
            body,
            target.fields,
            contract.types,
            partial=streaming,
            stream=partial,
            repairs=repairs,
        )
    except BodyError as error:
        raise BodyError(
            f"the only parameter is `{single}` and the body reads as fields ({error}); {hint}"
        ) from None
    others = [key for key in args if key != single]
    if others and not streaming:
        names = ", ".join(f"`{key}`" for key in others)
        raise BodyError(
            f"the only parameter is `{single}`, but the body reads as fields ({names}); {hint}"
        )
    return {key: value for key, value in args.items() if key == single}


# ---------------------------------------------------------------------------------------------
# The codec


class BlocksCodec:
    """The block protocol (the default): everything travels as text."""

    name: Literal["blocks", "native"] = "blocks"

    def system_section(self, contract: Contract) -> str:
        """The protocol section appended to the system prompt."""
        return section.blocks_section(contract)

    def functions(self, contract: Contract) -> tuple[FunctionSpec, ...]:
        """Blocks offer no native functions."""
        return ()

    def response_schema(self, contract: Contract) -> Mapping[str, Any] | None:
        """Blocks never ask the provider to enforce a schema."""
        return None

    def decoder(self, contract: Contract, *, partials: bool = True) -> BlocksDecoder:
        """A fresh decoder for one response (``partials=False``: finals only)."""
        return BlocksDecoder(contract, partials=partials)

    def assistant_message(self, turn: AssistantTurn) -> Message:
        """The model's raw text, blocks and all, as it wrote it."""
        return Message(role="assistant", content=turn.text)

    def results_messages(self, outcomes: Sequence[CallOutcome]) -> list[Message]:
        """One user message holding a result block per call, in call order."""
        if not outcomes:
            return []
        body = "\n".join(section.render_outcome(o) for o in outcomes)
        images = tuple(part for o in outcomes for part in o.parts)
        if not images:
            return [Message(role="user", content=body)]
        # Images a tool returned follow the result blocks in the same user message.
        return [Message(role="user", content=body, parts=({"type": "text", "text": body}, *images))]

    def feedback_message(self, text: str) -> Message:
        """A runtime note, framed so the model does not take it for the user's words (and
        so that nothing quoted in it can close the note or open a block)."""
        return Message(role="user", content=section.runtime_note(text))
