"""The lexer's whole-file fast path and its token-by-token slow path agree exactly.

``_Lexer.run`` lexes a file with ``findall`` and C-level passes and falls back to
``run_slow`` for a file with an error; both must give the same tokens and diagnostics on
every input, valid or not. The columns the parser reads (``lex``) hold the same tokens.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from auwgent.compiler.lexer import Token, Tokens, _Lexer, lex, tokenize
from auwgent.compiler.source import SourceFile

ROOT = Path(__file__).resolve().parents[3]
SOURCES = sorted((ROOT / "examples").rglob("*.agent"))[:40]
PIECES = ['"""', "/*", "*/", "//", "\\", '"', "'", "\n", "\t", "\r", "{", "}", "1.5e3", "\ufeff"]
PIECES += ["\u00a0", "#", "=", "==", "|", "&", ".", "x", "\\u00e9", "\\q", '""', "''", "9"]


def _both(text: str) -> tuple[object, object]:
    source = SourceFile("x.agent", text)
    slow, fast = _Lexer(text, source, None), _Lexer(text, source, None)
    slow_tokens: list[Token] = slow.run_slow()
    fast_tokens: list[Token] = fast.run()
    diag = [(d.code, d.message, d.span) for d in slow.diagnostics]
    fast_diag = [(d.code, d.message, d.span) for d in fast.diagnostics]
    return (slow_tokens, diag), (fast_tokens, fast_diag)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.name)
def test_paths_agree_on_examples_and_their_mutations(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    slow, fast = _both(text)
    assert fast == slow
    rnd = random.Random(path.name)
    for _ in range(25):
        chars = list(text)
        for _ in range(rnd.randint(1, 4)):
            at = rnd.randrange(len(chars) + 1)
            if rnd.random() < 0.6:
                chars[at:at] = rnd.choice(PIECES)
            elif chars:
                del chars[min(at, len(chars) - 1)]
        mutated = "".join(chars)
        slow, fast = _both(mutated)
        assert fast == slow, mutated


def test_paths_agree_on_short_random_texts() -> None:
    rnd = random.Random(7)
    for _ in range(3000):
        text = "".join(rnd.choice(PIECES) for _ in range(rnd.randint(0, 12)))
        slow, fast = _both(text)
        assert fast == slow, text


def _columns_agree(text: str) -> None:
    source = SourceFile("x.agent", text)
    tokens, diags = tokenize(source)
    columns, column_diags = lex(source)
    assert [(d.code, d.span) for d in column_diags] == [(d.code, d.span) for d in diags]
    assert len(columns) == len(tokens)
    for index, token in enumerate(tokens):
        assert columns.kinds[index] is token.kind
        assert columns.texts[index] == token.text
        assert (columns.starts[index], columns.ends[index]) == token.span
        assert columns.newlines[index] == token.newline_before
        assert columns.values[index] == token.value
        assert columns.token(index) == token
    assert Tokens.of(tokens).as_list() == tokens


@pytest.mark.parametrize("path", SOURCES[:10], ids=lambda p: p.name)
def test_columns_hold_the_same_tokens(path: Path) -> None:
    """What the parser reads (``lex``) is what ``tokenize`` returns, field by field."""
    _columns_agree(path.read_text(encoding="utf-8"))


def test_columns_hold_the_same_tokens_on_short_random_texts() -> None:
    rnd = random.Random(11)
    for _ in range(500):
        _columns_agree("".join(rnd.choice(PIECES) for _ in range(rnd.randint(0, 12))))
