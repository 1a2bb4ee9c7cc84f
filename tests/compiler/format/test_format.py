"""The formatter over every ``.agent`` file of the repository and a fuzz corpus made from
them: idempotent, every comment kept, the IR (or the diagnostics) unchanged."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auwgent.cli import main
from auwgent.compiler.format import FormatError, format_text
from auwgent.compiler.lexer import lex
from auwgent.compiler.parser import parse
from auwgent.compiler.pipeline import compile_sources
from auwgent.compiler.source import SourceFile
from auwgent.project import load_project

REPO = Path(__file__).resolve().parents[3]
FILES = sorted(
    p
    for folder in ("examples", "tests/data", "tests/sample_app")
    for p in (REPO / folder).rglob("*.agent")
)
COMMENT = re.compile(r"//[^\n]*|/\*[\s\S]*?\*/")


def _parses(text: str) -> bool:
    return not any(d.is_error for d in parse(SourceFile("x.agent", text))[1])


CLEAN = [p for p in FILES if _parses(p.read_text(encoding="utf-8"))]


def _comments(text: str) -> list[str]:
    """Every comment, in order, read from the gaps between the lexer's tokens."""
    tokens, _ = lex(SourceFile("x.agent", text))
    found: list[str] = []
    end = 0
    for start, stop in zip(tokens.starts, tokens.ends, strict=True):
        found += [c.rstrip() for c in COMMENT.findall(text[end:start])]
        end = stop
    return found


def _strip(value: Any) -> Any:
    """An IR document without source positions and the hash."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in ("loc", "hash")}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _meaning(sources: dict[str, str]) -> Any:
    """What a set of files means: their IR, or (with errors) their diagnostics' codes and
    messages (line numbers may move when blank lines are merged)."""
    result = compile_sources(sources)
    if result.ok:
        return _strip(dict(result.documents))
    return sorted((d.source.path, d.code, d.message) for d in result.diagnostics)


def _project_sources(path: Path) -> tuple[dict[str, str], str]:
    project = load_project(path)
    sources = {
        f.relative_to(project.source_root).as_posix(): f.read_text(encoding="utf-8")
        for f in project.files
    }
    return sources, path.relative_to(project.source_root).as_posix()


def _formatted(text: str) -> str:
    try:
        return format_text(text)
    except FormatError:
        return text  # files with syntax errors are left alone


def test_the_corpus_is_the_repository() -> None:
    assert len(FILES) > 150 and len(CLEAN) > 100


@pytest.mark.parametrize("path", CLEAN, ids=lambda p: str(p.relative_to(REPO)))
def test_repository_files(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    once = format_text(text)
    assert format_text(once) == once
    assert _comments(once) == _comments(text)
    sources, rel = _project_sources(path)
    after = {name: _formatted(body) for name, body in sources.items()}
    assert _meaning(after) == _meaning(sources)
    assert after[rel] == once


def test_files_with_syntax_errors_are_refused() -> None:
    broken = [p for p in FILES if p not in CLEAN]
    assert broken
    for path in broken:
        with pytest.raises(FormatError, match="not formatted"):
            format_text(path.read_text(encoding="utf-8"))


def _mangle(text: str, rng: random.Random) -> tuple[str, bool]:
    """``text`` with random blanks and comments between its tokens, the same tokens and line
    breaks (and blank lines) where they were; True when comments were added."""
    tokens, _ = lex(SourceFile("x.agent", text))
    commented = rng.random() < 0.5
    out: list[str] = []
    end = 0
    for index, start in enumerate(tokens.starts):
        gap = text[end:start]
        out.append(_mangle_gap(gap, rng, commented, index == len(tokens) - 1))
        out.append(text[start : tokens.ends[index]])
        end = tokens.ends[index]
    return "".join(out), commented


def _mangle_gap(gap: str, rng: random.Random, comment: bool, last: bool) -> str:
    if COMMENT.search(gap):
        return gap
    breaks = gap.count("\n")
    extra = f" /* c{rng.randrange(100)} */ " if comment and rng.random() < 0.2 else ""
    if breaks == 0:
        if not gap:
            return extra.strip() if extra and rng.random() < 0.5 else ""
        return rng.choice([" ", "  ", "\t", "   "]) + extra
    trailing = f" // t{rng.randrange(100)}" if comment and rng.random() < 0.2 else ""
    indent = rng.choice(["", " ", "  ", "\t", " " * 9])
    middle = "\n" if breaks == 1 else "\n" * rng.choice([2, 3])
    if last:
        return extra + trailing + middle
    return rng.choice(["", " ", "\t "]) + extra + trailing + middle + indent


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(CLEAN), st.integers(0, 2**32))
def test_fuzz_mangled_layouts(path: Path, seed: int) -> None:
    text = path.read_text(encoding="utf-8")
    mangled, commented = _mangle(text, random.Random(seed))
    once = format_text(mangled)
    assert format_text(once) == once
    assert _comments(once) == _comments(mangled)
    if not commented:  # the layout depends on the tokens and line breaks alone
        assert once == format_text(text)
    sources, rel = _project_sources(path)
    assert _meaning({**sources, rel: once}) == _meaning(sources)


def test_cli_fmt_check_and_write(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    messy = tmp_path / "messy.agent"
    messy.write_text('agent Main {\n  default config { model: gemini( "m" )  } // c\n}\n')
    tidy = tmp_path / "tidy.agent"
    tidy.write_text(format_text(messy.read_text()))
    before = messy.read_text()

    assert main(["fmt", "--check", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "would reformat" in out and "messy.agent" in out and "tidy.agent" not in out
    assert messy.read_text() == before

    assert main(["fmt", str(tmp_path)]) == 0
    assert messy.read_text() == format_text(before)
    assert "// c" in messy.read_text()
    assert main(["fmt", "--check", str(messy)]) == 0
    assert "0 files would be reformatted, 1 already formatted" in capsys.readouterr().out


def test_cli_fmt_reports_syntax_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken.agent"
    broken.write_text("agent {\n")
    assert main(["fmt", str(broken)]) == 1
    err = capsys.readouterr().err
    assert "broken.agent: not formatted: 1 syntax error" in err
    assert "error[E0100]" in err and "broken.agent:1:7" in err
    assert broken.read_text() == "agent {\n"
    assert main(["fmt", str(tmp_path / "missing")]) == 2


def test_the_canonical_layout() -> None:
    """Spacing, indentation, blank lines, continuation lines, comments and a triple-quoted
    string moved with its line (the expected file was reviewed by hand)."""
    data = REPO / "tests" / "data" / "format"
    messy = (data / "messy.agent").read_text(encoding="utf-8")
    assert format_text(messy) == (data / "messy.expected.agent").read_text(encoding="utf-8")


def test_triple_quoted_strings_keep_their_value_when_moved() -> None:
    text = 'prompt P {\n"""\n  one\n\n    two\n  """\n}\n'
    out = format_text(text)
    assert out == 'prompt P {\n    """\n    one\n\n      two\n    """\n}\n'
    value = parse(SourceFile("x", out))[0].decls[0].items[0].string.value  # type: ignore[union-attr]
    assert value == "one\n\n  two"
    # The shared indentation is layout whichever way the file was indented.
    deep = 'prompt P {\n            """\n                one\n\n                  two\n  """\n}\n'
    assert format_text(deep) == out
    # Windows line breaks become \n; the value is unchanged.
    assert (
        format_text("type T {\r\n    a: string // c\r\n}\r\n")
        == "type T {\n    a: string // c\n}\n"
    )


def test_triple_quoted_layout() -> None:
    """Strings that open their line, follow other tokens, keep text after the opening quotes,
    end with text before the closing ones, or are indented with tabs (reviewed by hand)."""
    data = REPO / "tests" / "data" / "format"
    messy = (data / "triple.agent").read_text(encoding="utf-8")
    expected = (data / "triple.expected.agent").read_text(encoding="utf-8")
    assert format_text(messy) == expected
    assert _meaning({"triple.agent": expected}) == _meaning({"triple.agent": messy})


def test_tool_group_layout() -> None:
    """A top-level ``tools Name { }`` and a group named in an agent's ``tools { }`` are laid
    out like the agent's own blocks (reviewed by hand)."""
    data = REPO / "tests" / "data" / "format"
    messy = (data / "groups.agent").read_text(encoding="utf-8")
    expected = (data / "groups.expected.agent").read_text(encoding="utf-8")
    assert format_text(messy) == expected
    assert _meaning({"groups.agent": expected}) == _meaning({"groups.agent": messy})
    tools = _meaning({"groups.agent": expected})["groups.agent"]["agents"]["Main"]["tools"]
    assert [t["name"] for t in tools] == ["note", "read_text_file", "list_directory"]


def _reindent(text: str, rng: random.Random) -> str:
    """``text`` indented anew: every line outside strings and block comments gets a random
    indentation, and the inner lines of each triple-quoted string move together by a random
    amount (blank ones get random blanks), which keeps every string's dedented value."""
    tokens, _ = lex(SourceFile("x.agent", text))
    out: list[str] = []
    end = 0
    for start, stop in zip(tokens.starts, tokens.ends, strict=True):
        pieces = re.split(f"({COMMENT.pattern})", text[end:start])
        for position, piece in enumerate(pieces):
            out.append(_reindent_blanks(piece, rng) if position % 2 == 0 else piece)
        raw = text[start:stop]
        out.append(_shift_triple(raw, rng) if raw.startswith('"""') else raw)
        end = stop
    return "".join(out)


def _blanks(rng: random.Random) -> str:
    return rng.choice(["", " ", "  ", "\t", " " * 9, "\t  "])


def _reindent_blanks(blanks: str, rng: random.Random) -> str:
    if "\n" not in blanks:
        return blanks
    lines = blanks.split("\n")
    return "\n".join([lines[0], *(_blanks(rng) for _ in lines[1:])])


def _shift_triple(raw: str, rng: random.Random) -> str:
    if "\n" not in raw:
        return raw
    first, *inner, last = raw.replace("\r\n", "\n").split("\n")
    last = last[:-3]
    content = [part for part in (*inner, last) if part.strip()]
    room = min((len(part) - len(part.lstrip(" \t")) for part in content), default=0)
    delta = rng.randint(-room, 8)

    def shifted(part: str) -> str:
        if not part.strip():
            return _blanks(rng)
        return rng.choice(" \t") * delta + part if delta >= 0 else part[-delta:]

    if not first[3:].strip():
        first = '"""' + _blanks(rng)
    return "\n".join([first, *map(shifted, inner), shifted(last) + '"""'])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(CLEAN), st.integers(0, 2**32))
def test_fuzz_reindented_files_format_alike(path: Path, seed: int) -> None:
    """fmt(reindent(file)) == fmt(file) for a reindentation that keeps the IR."""
    text = path.read_text(encoding="utf-8")
    moved = _reindent(text, random.Random(seed))
    sources, rel = _project_sources(path)
    assert _meaning({**sources, rel: moved}) == _meaning(sources)
    once = format_text(moved)
    assert once == format_text(text)
    assert format_text(once) == once


def test_reindenting_the_triple_quoted_data_formats_alike() -> None:
    text = (REPO / "tests" / "data" / "format" / "triple.agent").read_text(encoding="utf-8")
    for seed in range(200):
        moved = _reindent(text, random.Random(seed))
        assert _meaning({"t.agent": moved}) == _meaning({"t.agent": text})
        assert format_text(moved) == format_text(text)


def test_a_layout_that_would_change_the_tokens_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """The safety net: were the printer ever wrong, the file is left alone."""
    from auwgent.compiler import format as fmt

    original = fmt._Printer.run
    monkeypatch.setattr(fmt._Printer, "run", lambda self: original(self).replace("\n", " ", 1))
    with pytest.raises(FormatError, match="the layout would change its tokens"):
        format_text("type T {\n    a: string\n}\n")


def test_cli_fmt_standard_input(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    messy = "type T {\n  a :string // c\n}"
    monkeypatch.setattr("sys.stdin", io.StringIO(messy))
    assert main(["fmt", "-"]) == 0
    assert capsys.readouterr().out == format_text(messy)
    monkeypatch.setattr("sys.stdin", io.StringIO(messy))
    assert main(["fmt", "--check", "-"]) == 1
    assert capsys.readouterr().out == ""
    monkeypatch.setattr("sys.stdin", io.StringIO(format_text(messy)))
    assert main(["fmt", "--check", "-"]) == 0
    monkeypatch.setattr("sys.stdin", io.StringIO("type {"))
    assert main(["fmt", "-"]) == 1
    assert "<stdin>: not formatted: 1 syntax error" in capsys.readouterr().err
