"""Property tests: no input makes the front end raise; every diagnostic points into the file."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auwgent.codegen.python import render_python
from auwgent.compiler import nodes as n
from auwgent.compiler.diagnostics import MAX_PER_FILE, render_all
from auwgent.compiler.parser import parse
from auwgent.compiler.pipeline import compile_sources
from auwgent.compiler.source import SourceFile

DATA = Path(__file__).parents[2] / "data" / "parse"
SEEDS = [p.read_text(encoding="utf-8") for p in sorted(DATA.rglob("*.agent"))]
FRAGMENTS = [
    "agent",
    "helper",
    "model",
    "type",
    "prompt",
    "intent",
    "tool",
    "tools",
    "workflow",
    "default",
    "config",
    "context",
    "input",
    "output",
    "helpers",
    "with",
    "all",
    "handoff",
    "user",
    "then",
    "continue",
    "let",
    "if",
    "else",
    "return",
    "import",
    "export",
    "from",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ":",
    ",",
    ".",
    "@desc",
    "@example",
    "=",
    "==",
    "+",
    "|",
    "?",
    "!",
    "&&",
    '"',
    "'",
    '"""',
    "{{",
    "}}",
    "{{#if x}}",
    "{{else}}",
    "{{/if}}",
    "{{@schema(input)}}",
    "/*",
    "*/",
    "//",
    "\n",
    " ",
    "\t",
    "\\",
    "ctx",
    "x",
    "1.5",
    "-",
    # Hostile literals: each once crashed generate (see test_front_untrusted.py).
    "1e999",
    "-1e999",
    "1" * 4400,
    "0" * 4400 + "1",
    '"\\ud800"',
    '"\\udfff\\ud800"',
    '"\\ud83d\\ude00"',
    "\0\0\0",
    "\x1b[2J",
    "\ud800",
]


def compile_all(text: str) -> None:
    """What `auwgent generate` does with ``text``: compile, render, and write IR and bindings
    when it compiled (an internal error anywhere fails the test)."""
    result = compile_sources({"main.agent": text})
    assert len(result.diagnostics) <= MAX_PER_FILE + 1
    render_all(result.diagnostics, color=False).encode("utf-8")
    for doc in result.documents.values():
        render_python(doc)


def check(text: str) -> None:
    source = SourceFile("f.agent", text)
    module, diags = parse(source)
    for diag in diags:
        assert 0 <= diag.span.start <= diag.span.end <= len(text), diag
        for note in diag.notes:
            if note.span is not None:
                assert 0 <= note.span.start <= note.span.end <= len(text)
    for node in n.walk(module):
        span = getattr(node, "span", None)
        if span is not None:
            assert 0 <= span.start <= span.end <= len(text), node
    render_all(diags, color=False)


FAST = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))


@FAST
@given(st.text(max_size=300))
def test_random_text_never_raises(text: str) -> None:
    check(text)


@FAST
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=80).map(" ".join))
def test_random_token_soup_never_raises(text: str) -> None:
    check(text)


@st.composite
def mutated(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 6))):
        if not text:
            break
        at = draw(st.integers(0, len(text) - 1))
        action = draw(st.sampled_from(["delete", "insert", "duplicate", "cut"]))
        if action == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 20)) :]
        elif action == "insert":
            text = text[:at] + draw(st.sampled_from(FRAGMENTS)) + text[at:]
        elif action == "duplicate":
            text = text[:at] + text[at : at + 30] + text[at:]
        else:
            text = text[:at]
    return text


@settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
@given(mutated())
def test_mutated_programs_never_raise(text: str) -> None:
    check(text)


VALID = [p.read_text(encoding="utf-8") for p in sorted((DATA / "ok").glob("*.agent"))]


@st.composite
def hostile(draw: st.DrawFn) -> str:
    """A valid program with a few hostile literals put in place of numbers and strings, or
    anywhere."""
    text = draw(st.sampled_from(VALID))
    for _ in range(draw(st.integers(1, 3))):
        fragment = draw(st.sampled_from(FRAGMENTS[-10:]))
        spots = [i for i, c in enumerate(text) if c.isdigit() or c == '"'] or [0]
        at = (
            draw(st.sampled_from(spots)) if draw(st.booleans()) else draw(st.integers(0, len(text)))
        )
        text = text[:at] + fragment + text[at:]
    return text


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(hostile())
def test_hostile_literals_never_crash_the_whole_compiler(text: str) -> None:
    compile_all(text)


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(mutated())
def test_mutated_programs_never_crash_the_whole_compiler(text: str) -> None:
    compile_all(text)
