"""The lexer: token kinds, spans, strings (three kinds, escapes, dedent) and offset maps."""

from __future__ import annotations

import pytest

from auwgent.compiler.lexer import TokenKind, tokenize, tokenize_fragment
from auwgent.compiler.nodes import StringKind, StringLit
from auwgent.compiler.source import SourceFile, Span

K = TokenKind


def lex(text: str) -> tuple[list[tuple[TokenKind, str]], list[str]]:
    tokens, diags = tokenize(SourceFile("t.agent", text))
    return [(t.kind, t.text) for t in tokens], [d.code for d in diags]


def string_of(text: str) -> StringLit:
    tokens, diags = tokenize(SourceFile("t.agent", text))
    assert not diags, diags
    assert tokens[0].kind is K.STRING
    assert isinstance(tokens[0].value, StringLit)
    return tokens[0].value


def test_words_are_identifiers_and_punctuation_has_kinds() -> None:
    kinds, diags = lex("agent Main { a >= 1.5 && !b || c != d == e <= f }")
    assert diags == []
    assert kinds == [
        (K.IDENT, "agent"),
        (K.IDENT, "Main"),
        (K.LBRACE, "{"),
        (K.IDENT, "a"),
        (K.GE, ">="),
        (K.NUMBER, "1.5"),
        (K.AND, "&&"),
        (K.BANG, "!"),
        (K.IDENT, "b"),
        (K.OR, "||"),
        (K.IDENT, "c"),
        (K.NE, "!="),
        (K.IDENT, "d"),
        (K.EQ, "=="),
        (K.IDENT, "e"),
        (K.LE, "<="),
        (K.IDENT, "f"),
        (K.RBRACE, "}"),
        (K.EOF, ""),
    ]


def test_spans_are_half_open_offsets() -> None:
    source = SourceFile("t.agent", "  tool  x")
    tokens, _ = tokenize(source)
    assert tokens[0].span == Span(2, 6)
    assert tokens[1].span == Span(8, 9)
    assert tokens[2].span == Span(9, 9)


def test_numbers_keep_int_and_float() -> None:
    tokens, _ = tokenize(SourceFile("t", "40 0.95 1e3"))
    assert [t.value for t in tokens[:3]] == [40, 0.95, 1000.0]
    assert isinstance(tokens[0].value, int)


def test_comments_are_skipped_and_count_as_line_breaks() -> None:
    tokens, diags = tokenize(SourceFile("t", "a // note\nb /* x\ny */ c /* z */ d"))
    assert diags == []
    assert [(t.text, t.newline_before) for t in tokens[:4]] == [
        ("a", False),
        ("b", True),
        ("c", True),
        ("d", False),
    ]


@pytest.mark.parametrize(
    ("text", "value", "kind"),
    [
        ('"plain"', "plain", StringKind.DOUBLE),
        ("'single'", "single", StringKind.SINGLE),
        (r'"a\nb\t\"q\" \\ \u00e9"', 'a\nb\t"q" \\ é', StringKind.DOUBLE),
        (r"'it\'s'", "it's", StringKind.SINGLE),
        ('"""one line"""', "one line", StringKind.TRIPLE),
    ],
)
def test_string_values_are_processed(text: str, value: str, kind: StringKind) -> None:
    lit = string_of(text)
    assert lit.value == value
    assert lit.kind is kind
    assert len(lit.offsets) == len(lit.value) + 1


def test_triple_strings_drop_blank_edges_and_common_indentation() -> None:
    text = '"""\n        first\n          indented\n\n        last\n    """'
    assert string_of(text).value == "first\n  indented\n\nlast"


def test_triple_string_text_on_the_opening_line_is_kept() -> None:
    text = '"""Title\n    body\n      more\n    """'
    assert string_of(text).value == "Title\nbody\n  more"


def test_offsets_map_every_character_back_to_the_file() -> None:
    text = 'x = """\n    Hi {{name}}\n      there\n    """'
    source = SourceFile("t", text)
    tokens, _ = tokenize(source)
    lit = tokens[2].value
    assert isinstance(lit, StringLit)
    for index, char in enumerate(lit.value):
        if char != "\n":
            assert text[lit.offsets[index]] == char
    start = lit.value.index("name")
    span = lit.span_of(start, start + 4)
    assert text[span.start : span.end] == "name"


def test_escaped_character_maps_to_its_backslash() -> None:
    text = r'"a\nb"'
    lit = string_of(text)
    assert lit.offsets[:3] == (1, 2, 4)
    assert lit.span_of(1, 2) == Span(2, 3)


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ('"open', "E0002"),
        ("'open\nx", "E0002"),
        ('"""never closed', "E0002"),
        ("/* open", "E0003"),
        (r'"bad \q"', "E0004"),
        ("a $ b", "E0001"),
    ],
)
def test_lexical_errors_are_diagnostics(text: str, code: str) -> None:
    source = SourceFile("t", text)
    tokens, diags = tokenize(source)
    assert [d.code for d in diags] == [code]
    assert tokens[-1].kind is K.EOF
    for diag in diags:
        assert 0 <= diag.span.start <= diag.span.end <= len(text)


def test_unterminated_string_stops_at_the_line_end() -> None:
    tokens, _ = tokenize(SourceFile("t", '"open\nnext'))
    assert [t.kind for t in tokens] == [K.STRING, K.IDENT, K.EOF]
    assert tokens[1].newline_before


def test_fragment_spans_follow_the_offset_map() -> None:
    source = SourceFile("t", "0123456789abcdef")
    offsets = [10, 11, 12, 13, 14, 15]
    tokens, diags = tokenize_fragment("a.b==", offsets, source)
    assert diags == []
    assert [t.span for t in tokens] == [
        Span(10, 11),
        Span(11, 12),
        Span(12, 13),
        Span(13, 15),
        Span(15, 15),
    ]
    assert tokens[-1].describe() == "`}}`"
