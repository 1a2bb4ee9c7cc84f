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
from typing import TYPE_CHECKING

from auwgent.compiler import compile_project

if TYPE_CHECKING:
    from auwgent.compiler import CompileResult
    from auwgent.project import Project

__all__ = [
    "EXIT_ERRORS",
    "EXIT_INTERNAL",
    "EXIT_OK",
    "EXIT_USAGE",
    "check_project",
    "display_path",
    "plural",
    "summary",
]

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


def check_project(project: Project, *, jobs: int | None = None) -> CompileResult:
    """Run the whole compiler over ``project``: parse, modules, checker and lowering.

    ``jobs`` is how many processes a large project may be checked in (default: one per
    usable CPU); the report is the same for any value.
    """
    # Nothing is written, so no IR is built (only the lowering's own checks run).
    return compile_project(
        project.files,
        project.source_root,
        display=display_path,
        documents=False,
        jobs=jobs,
    )


def summary(report: CompileResult, elapsed_ms: float) -> str:
    """``checked 3 files (1 agent) in 4 ms``, plus the error and warning counts if any."""
    line = (
        f"checked {plural(report.files, 'file')} ({plural(report.agents, 'agent')}) "
        f"in {elapsed_ms:.0f} ms"
    )
    errors, warnings = len(report.errors), len(report.warnings)
    counts = [plural(errors, "error")] if errors else []
    if warnings:
        counts.append(plural(warnings, "warning"))
    return line + (": " + ", ".join(counts) if counts else "")
