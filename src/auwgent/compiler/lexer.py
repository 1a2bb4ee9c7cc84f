"""The lexer: ``.agent`` text to tokens.

Words are all ``IDENT`` tokens; the parser gives words such as ``agent`` or ``tools`` their
meaning by position (contextual keywords), so ``model`` can be both a declaration keyword and a
config field. Each token records whether a line break precedes it, which the parser uses where
the language is line-sensitive (``return`` with no value, a call on the next line).

Strings come out processed (see ``nodes.StringLit``): ``"..."`` and ``'...'`` end at the line;
``\"\"\"...\"\"\"`` may span lines and is dedented (first and last blank lines dropped, common
indentation removed) before escapes are resolved.

The same lexer reads expressions inside prompt templates: ``tokenize_fragment`` lexes processed
string characters and maps every span back into the file through the string's offsets.

Speed: the parser gets a file's tokens from ``lex`` as columns (``Tokens``: parallel lists of
kinds, texts, start and end offsets, line-break flags and values), made by one ``findall`` and
a few passes in C (``_Lexer.run_fast``); a ``Token`` is built only on demand (``tokenize``,
``Tokens.token``). Lexing the bench project (80 files, 10,000 lines, 43,500 tokens) costs about
310 M instructions, 40% of them in the regex engine (near what any one-match-per-token pattern
costs there); with a ``Token`` and a ``Span`` per token it was 500 M.
"""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Sequence
from itertools import accumulate, chain, compress, count, repeat
from operator import contains

from .._records import record
from .diagnostics import Diagnostic, error
from .nodes import StringKind, StringLit
from .source import SourceFile, Span


class TokenKind(enum.Enum):
    """Kinds of tokens; punctuation kinds carry their spelling as the value."""

    IDENT = "identifier"
    NUMBER = "number"
    STRING = "string"
    LBRACE = "{"
    RBRACE = "}"
    LPAREN = "("
    RPAREN = ")"
    LBRACKET = "["
    RBRACKET = "]"
    COLON = ":"
    COMMA = ","
    DOT = "."
    AT = "@"
    PLUS = "+"
    MINUS = "-"
    STAR = "*"
    SLASH = "/"
    PERCENT = "%"
    ASSIGN = "="
    EQ = "=="
    NE = "!="
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="
    AND = "&&"
    OR = "||"
    BANG = "!"
    PIPE = "|"
    QUESTION = "?"
    HASH = "#"
    EOF = "end of file"

    # Enum hashes members in Python (by name); the parser looks kinds up in dicts and sets
    # tens of thousands of times per file. Members are singletons compared by identity, so
    # the identity hash agrees with equality and runs in C.
    __hash__ = object.__hash__


_IDENT = TokenKind.IDENT
_PUNCT = {kind.value: kind for kind in TokenKind if kind.value[0] in "{}()[]:,.@+-*/%=!<>&|?#"}


@record
class Token:
    """One token. ``value`` is the ``StringLit`` of a string, the number of a number.

    What ``tokenize`` returns, and what the parser builds from its columns (``Tokens``) when it
    needs a whole token, mostly for a message. A record, like the syntax tree's nodes.
    """

    kind: TokenKind
    text: str
    span: Span
    newline_before: bool
    value: StringLit | int | float | None = None

    def describe(self) -> str:
        """How to name this token in a message: ``identifier `foo```, ``end of file``."""
        if self.kind is TokenKind.EOF:
            return f"`{self.text}`" if self.text else "end of file"
        if self.kind is TokenKind.IDENT:
            return f"`{self.text}`"
        if self.kind is TokenKind.STRING:
            return "a string"
        if self.kind is TokenKind.NUMBER:
            return f"number `{self.text}`"
        return f"`{self.text}`"


class Tokens:
    """A file's tokens as parallel lists: token ``i`` is ``kinds[i]``, ``texts[i]``, ...

    What the parser reads. Columns cost one list per field rather than two tuples (the token
    and its span) per token, and a list item is read faster than a record's field; the
    parser builds a ``Token`` (``token(i)``) only where it needs one, mostly for messages.
    """

    __slots__ = ("kinds", "texts", "starts", "ends", "newlines", "values")

    def __init__(
        self,
        kinds: list[TokenKind],
        texts: list[str],
        starts: list[int],
        ends: list[int],
        newlines: list[bool],
        values: list[StringLit | int | float | None],
    ) -> None:
        self.kinds = kinds
        self.texts = texts
        self.starts = starts
        self.ends = ends
        self.newlines = newlines
        self.values = values

    @classmethod
    def of(cls, tokens: list[Token]) -> Tokens:
        """The columns of a list of tokens (a mapped fragment, a file with an error)."""
        return cls(
            [token.kind for token in tokens],
            [token.text for token in tokens],
            [token.span.start for token in tokens],
            [token.span.end for token in tokens],
            [token.newline_before for token in tokens],
            [token.value for token in tokens],
        )

    def __len__(self) -> int:
        return len(self.kinds)

    def token(self, index: int) -> Token:
        """Token ``index`` as a ``Token``."""
        # A string's span is its literal's span (one object, as the slow path makes it).
        value = self.values[index]
        span = (
            value.span
            if isinstance(value, StringLit)
            else Span(self.starts[index], self.ends[index])
        )
        return Token(self.kinds[index], self.texts[index], span, self.newlines[index], value)

    def as_list(self) -> list[Token]:
        return [self.token(index) for index in range(len(self.kinds))]


# Blanks and comments. Written as "blanks, then (comment, blanks)*" rather than
# "(blank | comment)*": the same text, but the regex engine backtracks far less (2x faster).
_BLANKS = r"[ \t\r\f\v\ufeff\n]*(?://[^\n]*[ \t\r\f\v\ufeff\n]*)*"

# One match per token: the blanks and line comments before it, then the token. Groups by
# number: 1 word, 2 punctuation, 3 number, 4 anything the methods below handle (quotes, `/*`,
# stray characters). Only blanks at the end of the text match no group at all.
_SCAN = re.compile(
    _BLANKS
    + r"""
    (?:
        ([^\W\d]\w*)
        |(==|!=|<=|>=|&&|\|\||[{}()\[\]:,.@+\-*%<>=!|?\#]|/(?!\*))
        |(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
        |([\s\S])
    )?
    """,
    re.VERBOSE,
)
_WORD, _PUNCTUATION, _NUMBER = 1, 2, 3

# The whole-file pattern of the fast path (``_Lexer.run_fast``), for ``findall``: each match
# is (blanks and comments, block comments included; word or punctuation; other), where
# "other" is a number, a complete string, or one character that only the slow path can judge
# (a stray character, an unterminated string or comment). Only the last match may have no
# token. Three groups, not four: a word and a punctuation mark are told apart by a dict
# lookup afterwards, which is cheaper than one more substring per match. The comment loop is
# entered only where a comment starts (the lookahead), and "no token" is an empty branch
# rather than a `?`: the regex engine sets up a repeat (a memory allocation) for a `*` or `?`
# over a group each time it meets one, that is at every token (-20% for this findall).
_FILE = re.compile(
    r"([ \t\r\f\v\ufeff\n]*(?:(?=/[/*])(?:(?://[^\n]*|/\*[\s\S]*?\*/)[ \t\r\f\v\ufeff\n]*)+|))"
    + r"""
    (?:
        ([^\W\d]\w*
         |==|!=|<=|>=|&&|\|\||[{}()\[\]:,.@+\-*%<>=!|?\#]|/(?![*/]))
        |(\"\"\"[\s\S]*?\"\"\"
          |"(?!"")[^"\\\n]*(?:\\[^\n][^"\\\n]*)*"
          |'[^'\\\n]*(?:\\[^\n][^'\\\n]*)*'
          |\d+(?:\.\d+)?(?:[eE][+-]?\d+)?
          |[\s\S])
        |
    )
    """,
    re.VERBOSE,
)

# The body of a one-line string: up to the closing quote or the end of the line; a backslash
# takes the next character with it (except a line break, which ends the string).
_QUOTED = {q: re.compile(rf"(?:[^{q}\\\n]|\\[^\n])*(?:\\(?=\n|$))?") for q in "\"'"}

_ESCAPES = {
    "n": "\n",
    "t": "\t",
    "r": "\r",
    "0": "\0",
    '"': '"',
    "'": "'",
    "\\": "\\",
    "{": "{",
    "}": "}",
    "/": "/",
}


class _Lexer:
    """Scans one text; ``offsets`` (when given) maps text positions to file offsets."""

    def __init__(
        self, text: str, source: SourceFile, offsets: Sequence[int] | None, end_text: str = ""
    ) -> None:
        self.end_text = end_text
        self.text = text
        self.source = source
        self.offsets = offsets
        self.tokens: list[Token] = []
        self.diagnostics: list[Diagnostic] = []

    def at(self, pos: int) -> int:
        """The file offset of text position ``pos``."""
        if self.offsets is None:
            return pos
        return self.offsets[min(pos, len(self.offsets) - 1)]

    def span(self, start: int, end: int) -> Span:
        """The file span of text ``[start, end)``."""
        if self.offsets is None or start >= end:
            return Span(self.at(start), self.at(end) if start < end else self.at(start))
        return Span(self.at(start), self.at(end - 1) + 1)

    def report(
        self, code: str, message: str, start: int, end: int, help: str | None = None
    ) -> None:
        self.diagnostics.append(error(code, message, self.source, self.span(start, end), help=help))

    def run(self) -> list[Token]:
        if self.offsets is None:
            tokens = self.run_fast()
            if tokens is not None:
                return tokens.as_list()
        return self.run_slow()

    def run_columns(self) -> Tokens:
        if self.offsets is None:
            tokens = self.run_fast()
            if tokens is not None:
                return tokens
        return Tokens.of(self.run_slow())

    def run_fast(self) -> Tokens | None:
        """Lex a whole file in a few passes that run in C; None if it needs the slow path.

        A Python loop per token was half the time of ``auwgent check``. Here ``findall``
        splits the text into (blanks, word or punctuation, other) triples; laid end to end
        they are the whole text, so a running sum of their lengths gives every position at
        once. Columns are sliced out of that flat list; only numbers and strings (one token
        in ten) go through Python code. A file with an error (a stray character, an
        unterminated string or comment) is lexed again by ``run_slow``, which reports it.
        """
        found = _FILE.findall(self.text)
        while found and not (found[-1][1] or found[-1][2]):
            found.pop()  # blanks at the end of the text
        flat = list(chain.from_iterable(found))
        del found
        special = list(compress(count(), flat[2::3]))  # the tokens with an "other" piece
        others = list(filter(None, flat[2::3]))
        for raw in others:
            # A lone character is the catch-all (a quote alone opens an unterminated string).
            if raw[0] not in "0123456789" and (len(raw) == 1 or raw[0] not in "\"'"):
                return None
        # Where each piece ends: a token starts where its blanks end, and ends where its
        # "other" piece (empty unless it is a number or a string) ends.
        bounds = list(accumulate(map(len, flat)))
        starts, ends = bounds[0::3], bounds[2::3]
        texts = flat[1::3]
        newlines = list(map(contains, flat[0::3], repeat("\n")))
        kinds = list(map(_PUNCT.get, texts, repeat(_IDENT)))  # a word is no punctuation
        values: list[StringLit | int | float | None] = [None] * len(texts)
        for index, raw in zip(special, others, strict=True):
            start = starts[index]
            texts[index] = raw
            if raw[0] in "0123456789":
                kinds[index] = TokenKind.NUMBER
                values[index] = self.number(raw, start, ends[index])
                continue
            kinds[index] = TokenKind.STRING
            if raw.startswith('"""'):
                values[index] = self.triple_string(start)[0]
            elif "\\" in raw:
                values[index] = self.quoted_string(start)[0]
            else:
                # The common case, a one-line string without escapes: the value is the body,
                # each character at its own offset (what quoted_string works out the long way).
                end = ends[index]
                span = Span(start, end)
                kind = StringKind.DOUBLE if raw[0] == '"' else StringKind.SINGLE
                values[index] = StringLit(raw[1:-1], kind, span, tuple(range(start + 1, end)))
        length = len(self.text)
        kinds.append(TokenKind.EOF)
        texts.append(self.end_text)
        starts.append(length)
        ends.append(length)
        newlines.append(True)
        values.append(None)
        return Tokens(kinds, texts, starts, ends, newlines, values)

    def finish(self, tokens: list[Token]) -> list[Token]:
        length = len(self.text)
        tokens.append(Token(TokenKind.EOF, self.end_text, self.span(length, length), True))
        self.tokens = tokens
        return tokens

    def run_slow(self) -> list[Token]:
        """Lex token by token; handles mapped fragments and every error."""
        self.tokens = []
        text, pos, newline = self.text, 0, False
        length = len(text)
        tokens = self.tokens
        match_at = _SCAN.match
        find = text.find
        mapped = self.offsets is not None
        while pos < length:
            match = match_at(text, pos)
            group = match.lastindex if match is not None else None
            if match is None or group is None:  # only blanks are left
                break
            start, end = match.span(group)
            newline = newline or find("\n", pos, start) != -1
            if group == _WORD or group == _PUNCTUATION:
                raw = text[start:end]
                kind = _IDENT if group == _WORD else _PUNCT[raw]
                span = self.span(start, end) if mapped else Span(start, end)
                tokens.append(Token(kind, raw, span, newline, None))
            elif group == _NUMBER:
                self.add_number(text[start:end], start, end, newline)
            else:
                newline, end = self.slow(start, newline)
                pos = end
                continue
            newline, pos = False, end
        return self.finish(tokens)

    def slow(self, pos: int, newline: bool) -> tuple[bool, int]:
        """Strings, block comments and stray characters: the new line state and position."""
        text = self.text
        if text[pos] == '"' or text[pos] == "'":
            triple = text.startswith('"""', pos)
            lit, end = self.triple_string(pos) if triple else self.quoted_string(pos)
            self.tokens.append(Token(TokenKind.STRING, text[pos:end], lit.span, newline, lit))
            return False, end
        if text.startswith("/*", pos):
            return self.block_comment(pos, newline)
        # A run of characters that start no token is one mistake (a pasted binary, a stray
        # control character repeated): one message for the run, not one per character.
        run = _STRAY.match(text, pos)
        end = max(run.end() if run else pos, pos + 1)
        if end == pos + 1:
            message = f"unexpected character {text[pos]!r}"
            help = "remove it, or write it inside a string"
        else:
            message = f"{end - pos} unexpected characters, starting with {text[pos]!r}"
            help = "remove them (an .agent source is UTF-8 text), or write them inside a string"
        self.report("E0001", message, pos, end, help=help)
        return newline, end

    def add_number(self, raw: str, start: int, end: int, newline: bool) -> None:
        value = self.number(raw, start, end)
        self.tokens.append(Token(TokenKind.NUMBER, raw, self.span(start, end), newline, value))

    def number(self, raw: str, start: int, end: int) -> int | float:
        """The value of the number ``raw`` at ``[start, end)``; 0 after reporting one that no
        64-bit float can hold (E0005)."""
        value = _number(raw)
        if value is None:
            self.report(
                "E0005",
                f"number `{_clip(raw)}` is out of range",
                start,
                end,
                help="numbers must fit a 64-bit float: at most about 1.8e308 in size",
            )
            return 0
        return value

    def block_comment(self, start: int, newline: bool) -> tuple[bool, int]:
        close = self.text.find("*/", start + 2)
        if close == -1:
            self.report(
                "E0003",
                "unterminated block comment: `/*` has no matching `*/`",
                start,
                start + 2,
                help="close the comment with `*/`",
            )
            return newline, len(self.text)
        return newline or "\n" in self.text[start:close], close + 2

    def quoted_string(self, start: int) -> tuple[StringLit, int]:
        """``"..."`` or ``'...'``: ends at the matching quote, or (an error) at the line end."""
        text, quote = self.text, self.text[start]
        body = _QUOTED[quote].match(text, start + 1)
        pos = body.end() if body is not None else start + 1
        terminated = pos < len(text) and text[pos] == quote
        if not terminated:
            self.report(
                "E0002",
                f"unterminated string: missing closing {quote}",
                start,
                pos,
                help=f'close the string with {quote}, or use """ for text that spans lines',
            )
        chars: list[str] = []
        offsets: list[int] = []
        self.unescape(start + 1, pos, chars, offsets)
        offsets.append(self.at(pos))
        end = pos + 1 if terminated else pos
        kind = StringKind.DOUBLE if quote == '"' else StringKind.SINGLE
        return self.literal(chars, offsets, kind, start, end), end

    def triple_string(self, start: int) -> tuple[StringLit, int]:
        text = self.text
        close = text.find('"""', start + 3)
        terminated = close != -1
        if not terminated:
            self.report(
                "E0002",
                'unterminated string: `"""` has no matching `"""`',
                start,
                start + 3,
                help='close the string with """',
            )
            close = len(text)
        chars: list[str] = []
        offsets: list[int] = []
        for index, (line_start, line_end) in enumerate(_dedent(text, start + 3, close)):
            if index:
                chars.append("\n")
                offsets.append(self.at(line_start - 1))
            self.unescape(line_start, line_end, chars, offsets)
        offsets.append(self.at(close))
        end = close + 3 if terminated else close
        return self.literal(chars, offsets, StringKind.TRIPLE, start, end), end

    def literal(
        self, chars: list[str], offsets: list[int], kind: StringKind, start: int, end: int
    ) -> StringLit:
        """The string literal of text ``[start, end)``, from its processed pieces."""
        return StringLit("".join(chars), kind, self.span(start, end), tuple(offsets))

    def unescape(self, pos: int, end: int, chars: list[str], offsets: list[int]) -> None:
        """Append the characters of ``text[pos:end]`` with escapes resolved."""
        text = self.text
        if text.find("\\", pos, end) == -1:  # the common case: nothing to resolve
            chars.append(text[pos:end])  # pieces, not characters: they are only joined
            if self.offsets is None:
                offsets.extend(range(pos, end))
            else:
                offsets.extend(self.offsets[pos:end])
            return
        while pos < end:
            ch = text[pos]
            if ch != "\\" or pos + 1 >= end:
                chars.append(ch)
                offsets.append(self.at(pos))
                pos += 1
                continue
            pos = self.escape(pos, end, chars, offsets)

    def escape(self, pos: int, end: int, chars: list[str], offsets: list[int]) -> int:
        text = self.text
        nxt = text[pos + 1]
        if nxt in _ESCAPES:
            chars.append(_ESCAPES[nxt])
            offsets.append(self.at(pos))
            return pos + 2
        if nxt == "u":
            code = _hex4(text, pos + 2, end)
            if code is not None:
                return self.code_point(code, pos, end, chars, offsets)
        self.report(
            "E0004",
            f"unknown escape sequence `\\{nxt}`",
            pos,
            pos + 2,
            help=r"valid escapes: \n \t \r \0 \" \' \\ \{ \} \uXXXX; write \\ for a backslash",
        )
        chars.append(nxt)
        offsets.append(self.at(pos))
        return pos + 2

    def code_point(
        self, code: int, pos: int, end: int, chars: list[str], offsets: list[int]
    ) -> int:
        """Append the character of the ``\\uXXXX`` escape at ``pos`` (value ``code``).

        UTF-16 surrogates are not characters: a high one followed by a ``\\u`` escape of a low
        one is the pair's character (as in JSON); any other is E0006.
        """
        text = self.text
        low = _hex4(text, pos + 8, end) if text.startswith("\\u", pos + 6) else None
        if 0xD800 <= code < 0xDC00 and low is not None and 0xDC00 <= low < 0xE000:
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
            consumed = 12
        elif 0xD800 <= code < 0xE000:
            self.report(
                "E0006",
                f"`\\u{code:04x}` is half of a UTF-16 surrogate pair, not a character",
                pos,
                pos + 6,
                help="write the character itself, or both halves (`\\ud83d\\ude00`)",
            )
            code, consumed = 0xFFFD, 6
        else:
            consumed = 6
        chars.append(chr(code))
        offsets.append(self.at(pos))
        return pos + consumed


# Characters that start no token (not a word, number, punctuation mark, quote or blank): a
# run of them is reported once.
_STRAY = re.compile(r"[^\w \t\r\f\v\ufeff\n\"'{}()\[\]:,.@+\-*%<>=!|?#/&]*")
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
# Lone UTF-16 surrogates: a str can hold them (from Python, never from a UTF-8 file), but no
# encoder writes them; the lexer reports them and reads each as U+FFFD.
_SURROGATES = re.compile("[\ud800-\udfff]+")
#: Literals longer than this are shortened in messages.
_CLIP = 40


def _hex4(text: str, pos: int, end: int) -> int | None:
    """The value of four hex digits at ``text[pos:pos + 4]`` (before ``end``), else None."""
    match = _HEX4.match(text, pos, end)
    return int(match.group(), 16) if match else None


def _clip(raw: str) -> str:
    return raw if len(raw) <= _CLIP else f"{raw[:20]}...{raw[-12:]}"


def _number(raw: str) -> int | float | None:
    """The value of a number token's text; None if it does not fit a 64-bit float.

    Integers stay exact; one too large for a float (over 308 digits) is out of range, which
    also keeps Python's limit on converting long digit strings (4,300) out of reach.
    """
    if "." in raw or "e" in raw or "E" in raw:
        value = float(raw)
        return value if math.isfinite(value) else None
    digits = raw.lstrip("0") or "0"
    return int(digits) if len(digits) <= _MAX_INT_DIGITS else None


# 10**308 still fits a 64-bit float; integers of more digits do not.
_MAX_INT_DIGITS = 308


def _dedent(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Line ranges of a triple-quoted body after dropping blank edges and common indentation."""
    lines: list[tuple[int, int]] = []
    pos = start
    while True:
        nl = text.find("\n", pos, end)
        if nl == -1:
            lines.append((pos, end))
            break
        # A Windows line break leaves its \r out of the string.
        lines.append((pos, nl - 1 if nl > pos and text[nl - 1] == "\r" else nl))
        pos = nl + 1
    # Text right after the opening quotes does not count towards the common indentation
    # (as in inspect.cleandoc); a blank first or last line is dropped.
    first_kept = bool(text[lines[0][0] : lines[0][1]].strip())
    if len(lines) > 1 and not first_kept:
        lines.pop(0)
    if len(lines) > 1 and not text[lines[-1][0] : lines[-1][1]].strip():
        lines.pop()
    rest = lines[1:] if first_kept else lines
    indents = [len(text[a:b]) - len(text[a:b].lstrip(" \t")) for a, b in rest if text[a:b].strip()]
    cut = min(indents, default=0)
    out = lines[:1] if first_kept else []
    # Blank lines keep nothing: their whitespace is not content.
    out += [(a + cut, b) if text[a:b].strip() else (b, b) for a, b in rest]
    return out


def tokenize(source: SourceFile) -> tuple[list[Token], list[Diagnostic]]:
    """Lex a whole file. Always ends with one ``EOF`` token; never raises."""
    lexer = _file_lexer(source)
    return lexer.run(), lexer.diagnostics


def lex(source: SourceFile) -> tuple[Tokens, list[Diagnostic]]:
    """``tokenize`` as columns, for the parser."""
    lexer = _file_lexer(source)
    return lexer.run_columns(), lexer.diagnostics


def _file_lexer(source: SourceFile) -> _Lexer:
    """The lexer of a whole file; each run of lone surrogates is reported and read as blanks."""
    text = source.text
    if text.isascii() or _SURROGATES.search(text) is None:
        return _Lexer(text, source, None)
    lexer = _Lexer(_SURROGATES.sub(lambda m: " " * len(m.group()), text), source, None)
    for match in _SURROGATES.finditer(text):
        lexer.report(
            "E0001",
            f"invalid character {match.group()[0]!r}: a lone UTF-16 surrogate is not text",
            match.start(),
            match.end(),
            help="the text was not decoded properly; decode it as UTF-8 before compiling",
        )
    return lexer


def tokenize_fragment(
    text: str, offsets: Sequence[int], source: SourceFile, end_text: str = "}}"
) -> tuple[list[Token], list[Diagnostic]]:
    """Lex ``text`` whose characters sit at ``offsets`` in ``source`` (a template expression).

    ``offsets`` needs ``len(text) + 1`` entries; the last one is where ``EOF`` is placed, and
    messages call it ``end_text`` (the closing ``}}`` of the tag) rather than end of file.
    """
    lexer = _Lexer(text, source, offsets, end_text)
    return lexer.run(), lexer.diagnostics
