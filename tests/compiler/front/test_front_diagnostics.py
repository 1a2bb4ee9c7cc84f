"""Rendering diagnostics, source positions, and did-you-mean."""

from __future__ import annotations

from auwgent.compiler.diagnostics import (
    Note,
    Severity,
    did_you_mean,
    edit_distance,
    error,
    render,
    render_all,
    suggest,
    warning,
)
from auwgent.compiler.source import SourceFile, Span

SOURCE = SourceFile("dir/main.agent", "agent Main {\n\ttool x(): strng\n}\n")


def test_line_col_is_one_based_and_clamped() -> None:
    assert SOURCE.line_col(0) == (1, 1)
    assert SOURCE.line_col(12) == (1, 13)
    assert SOURCE.line_col(13) == (2, 1)
    assert SOURCE.line_col(10_000) == SOURCE.line_col(len(SOURCE.text))
    assert SOURCE.line_text(2) == "\ttool x(): strng"
    assert SOURCE.line_text(99) == ""


def test_render_plain_like_rustc() -> None:
    start = SOURCE.text.index("strng")
    diag = error(
        "E2001",
        "unknown type `strng`",
        SOURCE,
        Span(start, start + 5),
        notes=[Note("the agent starts here", Span(0, 5)), Note("a note without a place")],
        help=did_you_mean("strng", ["string", "number", "boolean"]),
    )
    assert render(diag, color=False) == (
        "error[E2001]: unknown type `strng`\n"
        " --> dir/main.agent:2:12\n"
        "  |\n"
        "2 |     tool x(): strng\n"
        "  |               ^^^^^\n"
        "  = note: the agent starts here: dir/main.agent:1:1\n"
        "  = note: a note without a place\n"
        "  = help: did you mean `string`?"
    )


def test_render_warning_and_multiline_span_is_clipped_to_the_first_line() -> None:
    diag = warning("W2001", "unused", SOURCE, Span(6, len(SOURCE.text)))
    text = render(diag, color=False)
    assert text.startswith("warning[W2001]: unused")
    assert text.splitlines()[-1] == "  |       ^^^^^^"
    assert diag.severity is Severity.WARNING and not diag.is_error


def test_render_with_color_uses_ansi_and_empty_span_gets_one_caret() -> None:
    diag = error("E0101", "eof", SOURCE, Span(len(SOURCE.text), len(SOURCE.text)))
    colored = render(diag, color=True)
    assert "\x1b[" in colored
    plain = render(diag, color=False)
    assert "\x1b[" not in plain and plain.splitlines()[-1].endswith("^")


def test_render_all_separates_with_blank_lines() -> None:
    one = error("E1", "a", SOURCE, Span(0, 1))
    two = error("E2", "b", SOURCE, Span(1, 2))
    assert render_all([one, two], color=False).count("\n\nerror[") == 1
    assert render_all([], color=False) == ""


def test_edit_distance_counts_swaps_as_one() -> None:
    assert edit_distance("tool", "tool") == 0
    assert edit_distance("toll", "tool") == 1
    assert edit_distance("tlool", "tool") == 1
    assert edit_distance("agnet", "agent") == 1
    assert edit_distance("abc", "xyz") == 3


def test_suggest_picks_close_names_only() -> None:
    assert suggest("agnt", ["agent", "helper"]) == "agent"
    assert suggest("Mian", ["Main", "Other"]) == "Main"
    assert suggest("main", ["Main"]) == "Main"
    assert suggest("xyz", ["agent"]) is None
    assert suggest("a", ["b"]) == "b"
    assert suggest("name", ["name"]) is None
    assert suggest("contxt", ["context", "config"]) == "context"
    assert did_you_mean("zzzzzz", ["agent"]) is None
