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
"""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from itertools import accumulate, compress, count, repeat
from operator import add, contains, sub
from typing import NamedTuple

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
# Building named tuples through tuple.__new__ skips their Python-level __new__: the lexer makes
# two per token, and this halves the cost.
_new = tuple.__new__
_PUNCT = {kind.value: kind for kind in TokenKind if kind.value[0] in "{}()[]:,.@+-*/%=!<>&|?#"}


class Token(NamedTuple):
    """One token. ``value`` is the ``StringLit`` of a string, the number of a number.

    A named tuple rather than a dataclass: tokens are made by the ten thousand and never escape
    the front end, so creation speed matters more than anything else here.
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
# is (blanks and comments, block comments included; word; punctuation; other), where "other"
# is a number, a complete string, or one character that only the slow path can judge (a
# stray character, an unterminated string or comment). Only the last match may have no token.
_FILE = re.compile(
    r"([ \t\r\f\v\ufeff\n]*(?:(?://[^\n]*|/\*[\s\S]*?\*/)[ \t\r\f\v\ufeff\n]*)*)"
    + r"""
    (?:
        ([^\W\d]\w*)
        |(==|!=|<=|>=|&&|\|\||[{}()\[\]:,.@+\-*%<>=!|?\#]|/(?![*/]))
        |(\"\"\"[\s\S]*?\"\"\"
          |"(?!"")[^"\\\n]*(?:\\[^\n][^"\\\n]*)*"
          |'[^'\\\n]*(?:\\[^\n][^'\\\n]*)*'
          |\d+(?:\.\d+)?(?:[eE][+-]?\d+)?
          |[\s\S])
    )?
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
                return tokens
        return self.run_slow()

    def run_fast(self) -> list[Token] | None:
        """Lex a whole file in a few passes that run in C; None if it needs the slow path.

        A Python loop per token was half the time of ``auwgent check``. Here ``findall``
        splits the text, positions come from the running sum of the pieces' lengths, and
        tokens are built by ``map``; only numbers and strings (one token in ten) go through
        Python code. A file with an error (a stray character, an unterminated string or
        comment) is lexed again by ``run_slow``, which reports it.
        """
        found = _FILE.findall(self.text)
        while found and not (found[-1][1] or found[-1][2] or found[-1][3]):
            found.pop()  # blanks at the end of the text
        if not found:
            return self.finish([])
        blanks, words, puncts, others = zip(*found, strict=True)
        special = list(compress(count(), others))
        for index in special:
            raw = others[index]
            # A lone character is the catch-all (a quote alone opens an unterminated string).
            if raw[0] not in "0123456789" and (len(raw) == 1 or raw[0] not in "\"'"):
                return None
        texts = list(map(add, words, puncts))
        sizes = list(map(add, map(len, texts), map(len, others)))
        ends = list(accumulate(map(add, map(len, blanks), sizes)))
        starts = list(map(sub, ends, sizes))
        newlines = list(map(contains, blanks, repeat("\n")))
        kinds = map(_PUNCT.get, puncts, repeat(_IDENT))  # a word has no punctuation: IDENT
        spans = map(_new, repeat(Span), zip(starts, ends, strict=True))
        tokens = list(map(_new, repeat(Token), zip(kinds, texts, spans, newlines, repeat(None))))
        # The methods for numbers and strings append to self.tokens, in order; they take
        # the places of the placeholders made above.
        for index in special:
            raw, start, newline = others[index], starts[index], newlines[index]
            if raw[0] in "0123456789":
                # add_number inlined: positions are file offsets here (no mapping).
                value = _number(raw)
                span = _new(Span, (start, ends[index]))
                self.tokens.append(_new(Token, (TokenKind.NUMBER, raw, span, newline, value)))
            elif raw.startswith('"""'):
                self.triple_string(start, newline)
            elif "\\" in raw:
                self.quoted_string(start, newline)
            else:
                # The common case, a one-line string without escapes: the value is the body,
                # each character at its own offset (what quoted_string works out the long way).
                end = ends[index]
                span = _new(Span, (start, end))
                kind = StringKind.DOUBLE if raw[0] == '"' else StringKind.SINGLE
                lit = StringLit(raw[1:-1], kind, span, tuple(range(start + 1, end)))
                self.tokens.append(_new(Token, (TokenKind.STRING, raw, span, newline, lit)))
        for index, token in zip(special, self.tokens, strict=True):
            tokens[index] = token
        return self.finish(tokens)

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
                span = self.span(start, end) if mapped else _new(Span, (start, end))
                tokens.append(_new(Token, (kind, raw, span, newline, None)))
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
        if text.startswith('"""', pos):
            return False, self.triple_string(pos, newline)
        if text[pos] == '"' or text[pos] == "'":
            return False, self.quoted_string(pos, newline)
        if text.startswith("/*", pos):
            return self.block_comment(pos, newline)
        self.report("E0001", f"unexpected character {text[pos]!r}", pos, pos + 1)
        return newline, pos + 1

    def add_number(self, raw: str, start: int, end: int, newline: bool) -> None:
        self.tokens.append(
            Token(TokenKind.NUMBER, raw, self.span(start, end), newline, _number(raw))
        )

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

    def quoted_string(self, start: int, newline: bool) -> int:
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
        self.add_string(chars, offsets, kind, start, end, newline)
        return end

    def triple_string(self, start: int, newline: bool) -> int:
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
        self.add_string(chars, offsets, StringKind.TRIPLE, start, end, newline)
        return end

    def add_string(
        self,
        chars: list[str],
        offsets: list[int],
        kind: StringKind,
        start: int,
        end: int,
        newline: bool,
    ) -> None:
        span = self.span(start, end)
        lit = StringLit("".join(chars), kind, span, tuple(offsets))
        self.tokens.append(Token(TokenKind.STRING, self.text[start:end], span, newline, lit))

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
            digits = text[pos + 2 : pos + 6]
            if len(digits) == 4 and all(c in "0123456789abcdefABCDEF" for c in digits):
                chars.append(chr(int(digits, 16)))
                offsets.append(self.at(pos))
                return pos + 6
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


def _number(raw: str) -> int | float:
    """The value of a number token's text."""
    return float(raw) if ("." in raw or "e" in raw or "E" in raw) else int(raw)


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
    out = [(a, b) for a, b in lines[:1]] if first_kept else []
    # Blank lines keep nothing: their whitespace is not content.
    out += [(a + cut, b) if text[a:b].strip() else (b, b) for a, b in (rest)]
    return out


def tokenize(source: SourceFile) -> tuple[list[Token], list[Diagnostic]]:
    """Lex a whole file. Always ends with one ``EOF`` token; never raises."""
    lexer = _Lexer(source.text, source, None)
    return lexer.run(), lexer.diagnostics


def tokenize_fragment(
    text: str, offsets: Sequence[int], source: SourceFile, end_text: str = "}}"
) -> tuple[list[Token], list[Diagnostic]]:
    """Lex ``text`` whose characters sit at ``offsets`` in ``source`` (a template expression).

    ``offsets`` needs ``len(text) + 1`` entries; the last one is where ``EOF`` is placed, and
    messages call it ``end_text`` (the closing ``}}`` of the tag) rather than end of file.
    """
    lexer = _Lexer(text, source, offsets, end_text)
    return lexer.run(), lexer.diagnostics
