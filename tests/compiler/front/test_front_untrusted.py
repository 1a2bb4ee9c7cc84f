"""Hostile `.agent` input: every case is a diagnostic, never an internal error, and the output
stays bounded however large the input (limits counted, not timed; bench/ has the timings)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from auwgent import _names
from auwgent.compiler import diagnostics
from auwgent.compiler.diagnostics import MAX_PER_FILE, SNIPPET_WIDTH, edit_distance, render_all
from auwgent.compiler.lexer import TokenKind, tokenize
from auwgent.compiler.pipeline import compile_sources
from auwgent.compiler.source import SourceFile

HEAD = 'agent Main {\n    default config {\n        model: M\n        prompt: "p"\n    }\n}\n'


def with_option(value: str) -> str:
    """A valid agent file whose model has one provider option set to ``value``."""
    model = (
        f'model M {{\n    provider: gemini("gemini-2.5-flash", {{ temperature: {value} }})\n}}\n'
    )
    return model + HEAD


CRASHES = {
    "surrogate_escape": (with_option(r'"\ud800"'), "E0006"),
    "low_surrogate_escape": (with_option(r'"x\udfff"'), "E0006"),
    "huge_integer": (with_option("1" * 4301), "E0005"),
    "huge_negative_integer": (with_option("-" + "9" * 5000), "E0005"),
    "infinite_float": (with_option("1e999"), "E0005"),
    "negative_infinite_float": (with_option("-1e999"), "E0005"),
    "long_mantissa": (with_option("1" * 400 + ".5"), "E0005"),
    "nul_bytes": ("\0" * 5000 + HEAD, "E0001"),
}


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "auwgent", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=60,
    )


@pytest.mark.parametrize("name", sorted(CRASHES))
@pytest.mark.parametrize("command", ["check", "generate"])
def test_cli_reports_a_diagnostic_not_an_internal_error(
    name: str, command: str, tmp_path: Path
) -> None:
    text, code = CRASHES[name]
    (tmp_path / "main.agent").write_text(text, encoding="utf-8")
    result = run(command, ".", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert f"error[{code}]" in result.stderr
    assert " --> main.agent:" in result.stderr
    assert "help:" in result.stderr
    assert "internal error" not in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "generated").exists()


def test_leading_zeros_and_large_finite_numbers_are_fine() -> None:
    result = compile_sources({"main.agent": with_option("0" * 5000 + "7")})
    assert result.ok, render_all(result.diagnostics, color=False)
    result = compile_sources({"main.agent": with_option("1" * 308)})
    assert result.ok
    assert compile_sources({"main.agent": with_option("1" * 309)}).errors[0].code == "E0005"


def test_a_surrogate_pair_escape_is_one_character() -> None:
    tokens, diags = tokenize(SourceFile("f.agent", r'"a\ud83d\ude00b" "\uD83D\uDE00"'))
    assert not diags
    assert [t.value.value for t in tokens if t.kind is TokenKind.STRING] == [  # type: ignore[union-attr]
        "a\U0001f600b",
        "\U0001f600",
    ]


def test_raw_surrogates_in_text_from_python_are_a_diagnostic() -> None:
    text = with_option('"x\ud800\udc00y"').replace('p"', 'p\ud800"')
    result = compile_sources({"main.agent": text})
    assert [d.code for d in result.errors] == ["E0001", "E0001"]
    rendered = render_all(result.diagnostics, color=False)
    rendered.encode("utf-8")  # printable: the surrogates are not echoed raw


def test_a_run_of_stray_characters_is_one_diagnostic() -> None:
    result = compile_sources({"main.agent": "\0" * 200_000})
    assert [d.code for d in result.diagnostics] == ["E0001"]
    assert result.diagnostics[0].message == "200000 unexpected characters, starting with '\\x00'"
    assert len(render_all(result.diagnostics, color=False)) < 1000


def test_diagnostics_are_capped_per_file_with_a_count_of_the_rest() -> None:
    text = "agent Main {\n" + "    tool (: \n" * 1000 + "}\n"
    result = compile_sources({"main.agent": text, "other.agent": "agent B {\n    x\n}\n"})
    mine = [d for d in result.diagnostics if d.source.path == "main.agent"]
    assert len(mine) == MAX_PER_FILE + 1
    assert mine[-1].code == "E0007"
    assert mine[-1].message == "800 more errors in this file are not shown"
    assert mine[-1].location() == "main.agent:202:10"  # the first one left out
    assert [d.code for d in result.diagnostics if d.source.path == "other.agent"] == ["E0103"]


def test_a_long_line_is_cut_around_the_span_in_the_snippet() -> None:
    line = "x " * 500_000 + "$" + " y" * 500_000
    source = SourceFile("f.agent", "agent A {\n" + line + "\n}\n")
    diag = diagnostics.error("E0001", "bad", source, diagnostics.Span(10 + 10**6, 11 + 10**6))
    rendered = diagnostics.render(diag, color=False)
    snippet = rendered.splitlines()[3]
    assert len(snippet) <= SNIPPET_WIDTH + 20
    assert snippet.startswith("2 | ...x x") and snippet.endswith(" y ...")
    carets = rendered.splitlines()[4]
    assert snippet[carets.index("^")] == "$"


def test_a_short_line_is_shown_whole() -> None:
    source = SourceFile("f.agent", "agent A {\n\ttool\tx $\n}\n")
    diag = diagnostics.error("E0001", "bad", source, diagnostics.Span(18, 19))
    lines = diagnostics.render(diag, color=False).splitlines()
    assert lines[3] == "2 |     tool    x $"
    assert lines[4].index("^") == lines[3].index("$")


def test_control_characters_are_not_sent_to_the_terminal() -> None:
    source = SourceFile("f.agent", 'prompt P { "\x1b[2J" }\n')
    diag = diagnostics.error(
        "E9999", "bad \x1b]0;title\x07 \u202e", source, diagnostics.Span(12, 13)
    )
    rendered = diagnostics.render(diag, color=False)
    assert "\x1b" not in rendered and "\x07" not in rendered and "\u202e" not in rendered
    assert "\ufffd[2J" in rendered


def test_did_you_mean_work_is_bounded_per_file(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = 0
    real = _names.edit_distance

    def counting(a: str, b: str) -> int:
        nonlocal calls
        calls += 1
        return real(a, b)

    monkeypatch.setattr(_names, "edit_distance", counting)
    text = "".join(f"type Tname{i:05d} {{ a: Uname{i:05d} }}\n" for i in range(2000))
    result = compile_sources({"main.agent": text})
    assert len(result.diagnostics) == MAX_PER_FILE + 1
    # Without the budget: one search through 2,000 similar names per misspelling (4 million).
    assert calls <= _names._WORK_PER_FILE // _names._DISTANCE_COST
    first = next(d for d in result.diagnostics if d.code == "E2010")
    assert first.help == "did you mean `Tname00000`?"


def test_an_ordinary_file_still_gets_every_suggestion() -> None:
    types = "".join(f"export type Record{i} {{ a: string }}\n" for i in range(50))
    uses = "".join(f"export type Use{i} {{ a: Recrod{i} }}\n" for i in range(50))
    result = compile_sources({"main.agent": types + uses})
    helps = [d.help for d in result.errors if d.code == "E2010"]
    assert helps == [f"did you mean `Record{i}`?" for i in range(50)]


def _reference_distance(a: str, b: str) -> int:
    """The textbook table for the same distance (optimal string alignment)."""
    table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        for j in range(len(b) + 1):
            if i == 0 or j == 0:
                table[i][j] = i + j
                continue
            cost = 0 if a[i - 1] == b[j - 1] else 1
            best = min(table[i - 1][j] + 1, table[i][j - 1] + 1, table[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                best = min(best, table[i - 2][j - 2] + 1)
            table[i][j] = best
    return table[len(a)][len(b)]


@settings(max_examples=300, deadline=None)
@given(st.text("abcd_", max_size=12), st.text("abcd_", max_size=12))
def test_edit_distance_matches_the_table(a: str, b: str) -> None:
    assert edit_distance(a, b) == _reference_distance(a, b)


def test_messages_list_at_most_a_few_items_of_a_large_declaration() -> None:
    union = " | ".join(f'"v{i}"' for i in range(5000))
    fields = "\n".join(f"    f{i}: string" for i in range(5000))
    text = (
        f"export type Big {{\n{fields}\n}}\n"
        f"{HEAD[:-2]}"
        f"    tool t(pick: {union}): Big\n"
        '    workflow w(x: number): string {\n        description: "d"\n'
        "        let big = t(x)\n        return big.nope\n    }\n}\n"
    ).replace("model: M", 'model: gemini("m")')
    result = compile_sources({"main.agent": text})
    assert {d.code for d in result.errors} == {"E2055", "E2056"}, result.errors
    for diag in result.diagnostics:
        assert len(diagnostics.render(diag, color=False)) < 2000
    field_help = next(d.help for d in result.errors if d.code == "E2056")
    assert field_help is not None and field_help.endswith("`f19`, ... (4980 more)")
