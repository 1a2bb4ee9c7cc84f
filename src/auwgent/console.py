"""What every ``auwgent`` command prints with: exit codes, paths as the user reads them, counts.

The commands' libraries (``generate``, ``fmt``, ``serve``, ``auwgent test``) and the command
line itself (:mod:`auwgent.cli`) share these, so that the libraries never import the command
line that calls them.

Exit codes: 0 success (warnings allowed), 1 the sources have errors, 2 the command could not
run as asked (bad arguments, a path that does not exist, a broken ``auwgent.yml``), 3 a bug in
Auwgent itself (reported in one line, never as a traceback).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["EXIT_ERRORS", "EXIT_INTERNAL", "EXIT_OK", "EXIT_USAGE", "display_path", "plural"]

EXIT_OK = 0
EXIT_ERRORS = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3


def display_path(path: Path) -> str:
    """``path`` relative to the working directory when it is below it, else as is."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def plural(count: int, word: str) -> str:
    """``1 file``, ``2 files``: a count and its word."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"
