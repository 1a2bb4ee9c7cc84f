"""Diagnostics: what went wrong, where, and what to do about it.

Every diagnostic has a stable code. The front end (lexer, parser) uses ``E0xxx``; the module
graph ``E1xxx``; the checker ``E2xxx`` and ``W2xxx``. Rendering follows rustc::

    error[E0102]: expected `}` to close `agent Main`, found end of file
     --> main.agent:3:5
      |
    3 |     tool x(): string
      |     ^^^^
      = note: `agent Main` opened here: main.agent:1:1
      = help: add `}`
"""

from __future__ import annotations

import enum
import os
from collections.abc import Iterable, Sequence

from .records import record
from .source import SourceFile, Span


class Severity(enum.Enum):
    """How bad a diagnostic is: errors fail the build, warnings do not."""

    ERROR = "error"
    WARNING = "warning"


@record
class Note:
    """Extra context; with a span it points somewhere else in the same file."""

    message: str
    span: Span | None = None


@record
class Diagnostic:
    """One message about one place in one source file."""

    code: str
    severity: Severity
    message: str
    source: SourceFile
    span: Span
    notes: tuple[Note, ...] = ()
    help: str | None = None

    @property
    def is_error(self) -> bool:
        """True for errors (the ones that fail ``auwgent check``)."""
        return self.severity is Severity.ERROR

    def with_notes(self, notes: tuple[Note, ...]) -> Diagnostic:
        """The same diagnostic with ``notes`` instead of its own."""
        return Diagnostic(
            self.code, self.severity, self.message, self.source, self.span, notes, self.help
        )

    def location(self) -> str:
        """``path:line:col`` of the start of the span."""
        line, col = self.source.line_col(self.span.start)
        return f"{self.source.path}:{line}:{col}"


def error(
    code: str,
    message: str,
    source: SourceFile,
    span: Span,
    *,
    notes: Sequence[Note] = (),
    help: str | None = None,
) -> Diagnostic:
    """Shorthand for an error diagnostic."""
    return Diagnostic(code, Severity.ERROR, message, source, span, tuple(notes), help)


def warning(
    code: str,
    message: str,
    source: SourceFile,
    span: Span,
    *,
    notes: Sequence[Note] = (),
    help: str | None = None,
) -> Diagnostic:
    """Shorthand for a warning diagnostic."""
    return Diagnostic(code, Severity.WARNING, message, source, span, tuple(notes), help)


# --------------------------------------------------------------------------------------------
# Rendering

_RESET = "\x1b[0m"
_BOLD = "\x1b[1m"
_COLORS = {Severity.ERROR: "\x1b[1;31m", Severity.WARNING: "\x1b[1;33m"}
_BLUE = "\x1b[1;34m"


def _paint(text: str, style: str, color: bool) -> str:
    return f"{style}{text}{_RESET}" if color else text


def render(diag: Diagnostic, *, color: bool) -> str:
    """Render one diagnostic as text (ANSI colours when ``color``), without a trailing newline."""
    level = _paint(f"{diag.severity.value}[{diag.code}]", _COLORS[diag.severity], color)
    lines = [f"{level}{_paint(': ' + diag.message, _BOLD, color)}"]
    line, col = diag.source.line_col(diag.span.start)
    gutter = " " * len(str(line))
    lines.append(f"{gutter}{_paint('-->', _BLUE, color)} {diag.source.path}:{line}:{col}")
    lines.extend(_snippet(diag, line, col, gutter, color))
    for note in diag.notes:
        text = note.message
        if note.span is not None:
            note_line, note_col = diag.source.line_col(note.span.start)
            text += f": {diag.source.path}:{note_line}:{note_col}"
        lines.append(f"{gutter} {_paint('=', _BLUE, color)} note: {text}")
    if diag.help:
        lines.append(f"{gutter} {_paint('=', _BLUE, color)} help: {diag.help}")
    return "\n".join(lines)


def _snippet(diag: Diagnostic, line: int, col: int, gutter: str, color: bool) -> list[str]:
    """The source line and the carets under the span (clipped to the first line)."""
    raw = diag.source.line_text(line)
    bar = _paint("|", _BLUE, color)
    end_line, end_col = diag.source.line_col(max(diag.span.start, diag.span.end))
    last = end_col if end_line == line else len(raw) + 1
    # Tabs become four spaces on both lines so the caret stays under the right character.
    text = raw.replace("\t", "    ")
    start = len(raw[: col - 1].replace("\t", "    "))
    width = max(1, len(raw[: last - 1].replace("\t", "    ")) - start)
    pad = " " * start
    carets = _paint("^" * width, _COLORS[diag.severity], color)

    return [
        f"{gutter} {bar}",
        f"{_paint(str(line), _BLUE, color)} {bar} {text}".rstrip(),
        f"{gutter} {bar} {pad}{carets}",
    ]


def render_all(diags: Iterable[Diagnostic], *, color: bool) -> str:
    """Render many diagnostics separated by blank lines (empty string for none)."""
    return "\n\n".join(render(d, color=color) for d in diags)


def sort_key(diag: Diagnostic) -> tuple[str, int, int, str]:
    """Order diagnostics by file, position, then code."""
    return (diag.source.path, diag.span.start, diag.span.end, diag.code)


def use_color(stream: object) -> bool:
    """Whether to colour output for ``stream``: a TTY, unless ``NO_COLOR`` is set."""
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(callable(isatty) and isatty())


# --------------------------------------------------------------------------------------------
# Did you mean


def edit_distance(a: str, b: str, limit: int | None = None) -> int:
    """Damerau-Levenshtein distance (adjacent swaps cost 1), case-sensitive."""
    if a == b:
        return 0
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cost = 0 if ca == cb else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        if limit is not None and min(cur) > limit:
            return limit + 1
        prev2, prev = prev, cur
    return prev[-1]


def suggest(name: str, candidates: Iterable[str]) -> str | None:
    """The candidate closest to ``name`` if it is close enough to be a likely typo.

    Close enough: at most a third of the name's length in edits (at least 1, at most 3); a
    case-only difference always qualifies. Ties go to the first candidate in sorted order, so
    the answer does not depend on the order of ``candidates``.
    """
    best: tuple[int, str] | None = None
    limit = max(1, min(3, len(name) // 3))
    for candidate in sorted(set(candidates)):
        if candidate == name:
            continue
        if candidate.lower() == name.lower():
            distance = 0
        else:
            distance = edit_distance(name, candidate, limit)
        if distance <= limit and (best is None or distance < best[0]):
            best = (distance, candidate)
    return best[1] if best else None


def did_you_mean(name: str, candidates: Iterable[str]) -> str | None:
    """``did you mean `x`?`` for a help line, or ``None`` when nothing is close."""
    found = suggest(name, candidates)
    return f"did you mean `{found}`?" if found else None
