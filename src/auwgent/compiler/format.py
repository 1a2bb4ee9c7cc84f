"""The formatter: one canonical layout for ``.agent`` files (``auwgent fmt``, the editor).

It works on the token stream, not on the syntax tree: the lexer's tokens are printed again
with canonical spacing and indentation, and what lies between two tokens (blanks and
comments) is read straight from the text, so every comment stays where it was written. Line
breaks carry meaning in the language, so the formatter keeps the author's line breaks (at
most one blank line in a row), and it decides only:

- indentation: four spaces per open bracket, counted per line (a line that opens two
  brackets indents the next line once); one more for a continuation line, one that starts
  with an annotation or an operator or follows a line that ended with one;
- spacing inside a line: none inside brackets and before ``,`` ``:`` ``.`` ``?``, none
  between a name and the ``(`` or ``[`` that follows it, none after ``@``, ``!`` or a unary
  ``-``, one space elsewhere (``{ a: 1 }``, ``a + b``, ``x = 1``, ``A | B``);
- triple-quoted strings: their value is dedented, so the indentation their inner lines share
  is layout and is rebased to the line that opens them (``layout_triple``); one-line
  strings, numbers and comments are printed exactly as written;
- no trailing blanks, ``\\n`` line breaks, one line break at the end of the file.

The result is checked before it is returned: lexed again, it must give the same tokens (kind,
text, processed string value and line-break flag) as the input, which is what the parser
reads, so formatting never changes what a file means. A file that does not lex or parse
cleanly is not formatted (``FormatError``): its layout would be a guess.
"""

from __future__ import annotations

import re

from ..errors import AuwgentError
from .diagnostics import Diagnostic
from .lexer import TokenKind, Tokens, lex
from .nodes import StringLit
from .parser import STATEMENT_WORDS, parse
from .source import SourceFile

__all__ = ["FormatError", "format_source", "format_text"]

INDENT = "    "

K = TokenKind
_OPENERS = {K.LBRACE: K.RBRACE, K.LPAREN: K.RPAREN, K.LBRACKET: K.RBRACKET}
_CLOSERS = frozenset(_OPENERS.values())
#: Binary operators (``-`` only when it follows an operand): spaces on both sides.
_BINARY = frozenset(
    (K.PLUS, K.MINUS, K.STAR, K.SLASH, K.PERCENT, K.ASSIGN, K.EQ, K.NE, K.LT, K.LE, K.GT, K.GE)
    + (K.AND, K.OR, K.PIPE)
)
#: A line that starts with one of these continues the line before it.
_CONTINUES = _BINARY | {K.AT, K.DOT}
#: Words that are followed by an expression, never called: ``if (x)``, ``return [1]``.
_KEYWORDS = STATEMENT_WORDS
#: Tokens after which ``-`` is a binary minus (they end an operand).
_OPERAND_ENDS = frozenset((K.IDENT, K.NUMBER, K.STRING, K.RPAREN, K.RBRACKET, K.RBRACE))
_NO_SPACE_BEFORE = frozenset((K.RPAREN, K.RBRACKET, K.COMMA, K.COLON, K.DOT, K.QUESTION))
_NO_SPACE_AFTER = frozenset((K.LPAREN, K.LBRACKET, K.DOT, K.AT))

# What lies between two tokens: blanks, `// ...` and `/* ... */` (the lexer's own definition).
_GAP = re.compile(r"(//[^\n]*|/\*[\s\S]*?\*/)")


class FormatError(AuwgentError):
    """A file cannot be formatted: it has syntax errors (listed in ``diagnostics``)."""

    def __init__(self, message: str, diagnostics: tuple[Diagnostic, ...] = ()) -> None:
        super().__init__(message)
        self.diagnostics = diagnostics


def format_text(text: str, path: str = "<input>") -> str:
    """The canonical layout of ``text`` (an ``.agent`` file shown as ``path`` in errors)."""
    return format_source(SourceFile(path, text))


def format_source(source: SourceFile) -> str:
    """The canonical layout of ``source``; ``FormatError`` when it has syntax errors."""
    _, diagnostics = parse(source)
    errors = tuple(d for d in diagnostics if d.is_error)
    if errors:
        count = f"{len(errors)} syntax error{'s' if len(errors) != 1 else ''}"
        raise FormatError(f"{source.path}: not formatted: {count}", errors)
    tokens, _ = lex(source)
    out = _Printer(source.text, tokens).run()
    _check_same_tokens(source, tokens, out)
    return out


def _check_same_tokens(source: SourceFile, before: Tokens, text: str) -> None:
    after, problems = lex(SourceFile(source.path, text))
    if problems or _signature(before) != _signature(after):
        # A bug in the printer, never the user's: refuse rather than change the meaning.
        raise FormatError(
            f"{source.path}: not formatted: the layout would change its tokens "
            "(a bug in the formatter; please report it with the file)"
        )


def _signature(tokens: Tokens) -> list[tuple[object, ...]]:
    return [
        (kind, text if kind is not K.STRING else None, newline, _value(value))
        for kind, text, newline, value in zip(
            tokens.kinds, tokens.texts, tokens.newlines, tokens.values, strict=True
        )
    ]


def _value(value: object) -> object:
    return value.value if isinstance(value, StringLit) else value


class _Printer:
    """Prints one file's tokens with the canonical layout."""

    def __init__(self, text: str, tokens: Tokens) -> None:
        self.text = text
        self.tokens = tokens
        self.out: list[str] = []
        # One entry per open bracket: (its closing kind, the indent level inside it).
        self.stack: list[tuple[TokenKind, int]] = []
        self.level = 0  # the indent level of the output line being written
        self.width = 0  # the width of that line's leading blanks
        self.line_start = True  # nothing written on the current output line yet
        self.prev: TokenKind | None = None  # what was last written: a token, None a comment
        self.prev_text = ""
        self.last: TokenKind | None = None  # the last token written (comments aside)
        self.line_last: TokenKind | None = None  # the last token when the line ended
        self.unary = False  # the last `-` written is a unary minus

    def run(self) -> str:
        tokens = self.tokens
        end = 0
        for index in range(len(tokens)):
            kind = tokens.kinds[index]
            self.gap(self.text[end : tokens.starts[index]], kind)
            if kind is K.EOF:
                break
            self.token(index, kind)
            end = tokens.ends[index]
        body = "".join(self.out).rstrip("\n ")
        return body + "\n" if body else ""

    # -- what lies between tokens ------------------------------------------------------------

    def gap(self, gap: str, kind: TokenKind) -> None:
        """The comments and line breaks before a token of ``kind``."""
        pieces = _GAP.split(gap)  # blanks, comment, blanks, comment, ..., blanks
        for position in range(1, len(pieces), 2):
            self.breaks(pieces[position - 1].count("\n"), None)
            comment = pieces[position].replace("\r\n", "\n")
            if comment.startswith("//"):
                comment = comment.rstrip()
            if self.line_start:
                self.indent(self.stack[-1][1] if self.stack else 0)
            else:
                self.out.append(" ")
            self.write(comment)
            self.prev, self.prev_text = None, ""
        self.breaks(pieces[-1].count("\n"), kind)

    def breaks(self, count: int, kind: TokenKind | None) -> None:
        """End the current line when the source had ``count`` line breaks here.

        At most one blank line, and none at the start of the file, after a line that ends
        with an opening bracket, before a closing one or at the end of the file.
        """
        if count == 0 or not self.out:
            return
        blank = (
            count > 1 and self.last not in _OPENERS and kind not in _CLOSERS and kind is not K.EOF
        )
        self.line_last = self.last
        self.out.append("\n\n" if blank else "\n")
        self.line_start = True

    # -- tokens ------------------------------------------------------------------------------

    def token(self, index: int, kind: TokenKind) -> None:
        raw = self.tokens.texts[index]
        closing = kind in _CLOSERS and bool(self.stack) and self.stack[-1][0] is kind
        if self.line_start:
            if closing:
                level = self.stack[-1][1] - 1
            else:
                level = self.stack[-1][1] if self.stack else 0
                if kind in _CONTINUES or self.line_last in _BINARY:
                    level += 1
            self.indent(level)
            self.unary = kind is K.MINUS
        else:
            if kind is K.MINUS:
                self.unary = self.last not in _OPERAND_ENDS or self.prev_text in _KEYWORDS
            if self.space_before(kind):
                self.out.append(" ")
        if closing:
            self.stack.pop()
        if kind is K.STRING and raw.startswith('"""'):
            raw = self.layout_triple(raw)
        self.write(raw)
        if kind in _OPENERS:
            self.stack.append((_OPENERS[kind], self.level + 1))
        self.prev = self.last = kind
        self.prev_text = raw

    def indent(self, level: int) -> None:
        self.level = level
        self.width = len(INDENT) * level
        self.out.append(INDENT * level)

    def write(self, text: str) -> None:
        self.out.append(text)
        self.line_start = False
        if "\n" in text:  # a multi-line string or comment: the line now is its last one
            tail = text[text.rfind("\n") + 1 :]
            self.width = len(tail) - len(tail.lstrip(" \t"))

    def space_before(self, kind: TokenKind) -> bool:
        """Whether one space separates the previous token from this one on a line."""
        prev = self.prev
        if prev is None:  # after a comment
            return True
        if kind in _CLOSERS:
            return kind is K.RBRACE and prev is not K.LBRACE
        if kind in _NO_SPACE_BEFORE or prev in _NO_SPACE_AFTER:
            return False
        if prev is K.BANG or (prev is K.MINUS and self.unary):
            return False
        if kind is K.LPAREN or kind is K.LBRACKET:
            if prev is K.IDENT:
                return self.prev_text in _KEYWORDS
            return not (kind is K.LBRACKET and prev in (K.RPAREN, K.RBRACKET, K.STRING))
        return True

    def layout_triple(self, raw: str) -> str:
        """A triple-quoted string's lines in the canonical layout.

        Its value is dedented, so the indentation its inner lines share is layout: they are
        rebased to the indentation of the line the string opens on (one level deeper when
        the string does not start that line), each keeping what it has beyond the shared
        part, so the value stays the same. A blank first line becomes just the quotes, blank
        inner lines become empty (they are empty in the value too) and closing quotes alone
        on their line go to the indentation of the opening line.
        """
        raw = raw.replace("\r\n", "\n")
        if "\n" not in raw:
            return raw
        first, *inner, last = raw.split("\n")
        if not first[3:].strip():
            first = '"""'
        last = last[:-3]
        content = [part for part in (*inner, last) if part.strip()]
        cut = min((len(part) - len(part.lstrip(" \t")) for part in content), default=0)
        base = " " * (self.width if self.line_start else self.width + len(INDENT))
        lines = [first] + [base + part[cut:] if part.strip() else "" for part in inner]
        lines.append((base + last[cut:] if last.strip() else " " * self.width) + '"""')
        return "\n".join(lines)
