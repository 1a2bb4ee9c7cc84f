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
import re
from collections.abc import Callable, Collection, Iterable, Sequence
from itertools import islice
from typing import TypeVar

from .._names import edit_distance as edit_distance  # re-exported: the compiler says it from here
from .._names import suggest as suggest
from .._names import suggestion_budget as suggestion_budget
from .._records import record
from .source import SourceFile, Span

T = TypeVar("T")


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
    lines = [f"{level}{_paint(': ' + _visible(diag.message), _BOLD, color)}"]
    line, col = diag.source.line_col(diag.span.start)
    gutter = " " * len(str(line))
    path = _visible(diag.source.path)
    lines.append(f"{gutter}{_paint('-->', _BLUE, color)} {path}:{line}:{col}")
    lines.extend(_snippet(diag, line, gutter, color))
    for note in diag.notes:
        text = _visible(note.message)
        if note.span is not None:
            note_line, note_col = diag.source.line_col(note.span.start)
            text += f": {path}:{note_line}:{note_col}"
        lines.append(f"{gutter} {_paint('=', _BLUE, color)} note: {text}")
    if diag.help:
        lines.append(f"{gutter} {_paint('=', _BLUE, color)} help: {_visible(diag.help)}")
    return "\n".join(lines)


#: A snippet shows at most this many characters of its source line: a longer line (minified
#: or generated text, a binary file) is cut around the span, with `...` where it was cut.
SNIPPET_WIDTH = 200
# How much of a long line a cut snippet keeps before the span.
_SNIPPET_BEFORE = 60
# Characters a terminal would act on rather than show (controls, escape sequences, the
# bidirectional overrides that make text read other than it is) or that no encoder writes
# (lone surrogates): messages and snippets show U+FFFD in their place.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _visible(text: str) -> str:
    return _UNPRINTABLE.sub("\ufffd", text)


def _snippet(diag: Diagnostic, line: int, gutter: str, color: bool) -> list[str]:
    """The source line and the carets under the span (clipped to the first line); a line
    longer than ``SNIPPET_WIDTH`` is cut around the span."""
    source = diag.source
    first, last = source.line_bounds(line)
    start = min(max(diag.span.start, first), last)
    end = min(max(diag.span.end, start), last)
    cut_before = cut_after = ""
    if last - first > SNIPPET_WIDTH:  # only the window is sliced: the line may be megabytes
        if start - first > _SNIPPET_BEFORE:
            first, cut_before = start - _SNIPPET_BEFORE, "..."
        if last - first > SNIPPET_WIDTH:
            last, cut_after = first + SNIPPET_WIDTH, "..."
            end = min(end, last)
    raw = source.text[first:last]
    if not cut_after:
        raw = raw.rstrip("\r")
    bar = _paint("|", _BLUE, color)
    # Tabs become four spaces on both lines so the caret stays under the right character.
    text = cut_before + _visible(raw.replace("\t", "    ")) + cut_after
    pad = len(cut_before) + len(raw[: start - first].replace("\t", "    "))
    width = max(1, len(cut_before) + len(raw[: end - first].replace("\t", "    ")) - pad)
    carets = _paint("^" * width, _COLORS[diag.severity], color)
    return [
        f"{gutter} {bar}",
        f"{_paint(str(line), _BLUE, color)} {bar} {text}".rstrip(),
        f"{gutter} {bar} {' ' * pad}{carets}",
    ]


def render_all(diags: Iterable[Diagnostic], *, color: bool) -> str:
    """Render many diagnostics separated by blank lines (empty string for none)."""
    return "\n\n".join(render(d, color=color) for d in diags)


#: At most this many diagnostics are kept per file; the rest are counted in one more
#: (E0007), so that a file of garbage cannot bury the output.
MAX_PER_FILE = 200


def limit_per_file(diags: Sequence[Diagnostic]) -> list[Diagnostic]:
    """``diags`` (sorted by file) with at most ``MAX_PER_FILE`` per file, each file that had
    more ending with one E0007 that counts what was left out."""
    out: list[Diagnostic] = []
    index = 0
    while index < len(diags):
        path = diags[index].source.path
        stop = index
        while stop < len(diags) and diags[stop].source.path == path:
            stop += 1
        out.extend(diags[index : min(stop, index + MAX_PER_FILE)])
        hidden = diags[index + MAX_PER_FILE : stop]
        if hidden:
            out.append(_overflow(hidden))
        index = stop
    return out


def _overflow(hidden: Sequence[Diagnostic]) -> Diagnostic:
    errors = sum(1 for d in hidden if d.is_error)
    warnings = len(hidden) - errors
    counts = [f"{errors} more error{'s' if errors != 1 else ''}"] if errors else []
    if warnings:
        counts.append(f"{warnings} more warning{'s' if warnings != 1 else ''}")
    first = hidden[0]
    return Diagnostic(
        "E0007",
        Severity.ERROR if errors else Severity.WARNING,
        f"{' and '.join(counts)} in this file {'is' if len(hidden) == 1 else 'are'} not shown",
        first.source,
        first.span,
        help=f"at most {MAX_PER_FILE} are shown per file; fix these and check again",
    )


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


#: Lists in messages (fields, parameters, exports, a union's variants) show at most this
#: many items, then how many more: a message stays short however large the declaration.
MAX_LISTED = 20


def listing(items: Collection[T], show: Callable[[T], str] = str, sep: str = ", ") -> str:
    """The first ``MAX_LISTED`` of ``items``, each through ``show``, joined with ``sep``; then
    ``... (N more)`` if there are more."""
    shown = [show(item) for item in islice(items, MAX_LISTED)]
    if len(items) > MAX_LISTED:
        shown.append(f"... ({len(items) - MAX_LISTED} more)")
    return sep.join(shown)


def did_you_mean(name: str, candidates: Iterable[str]) -> str | None:
    """``did you mean `x`?`` for a help line, or ``None`` when nothing is close."""
    found = suggest(name, candidates)
    return f"did you mean `{found}`?" if found else None
