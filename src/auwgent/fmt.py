"""``auwgent fmt [--check] [PATH ...]``: rewrite ``.agent`` files in the canonical layout.

The layout itself is ``compiler/format.py``; this module finds the files, writes them back
(or, with ``--check``, only lists those that would change) and reports.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from auwgent.compiler import FormatError, SourceFile, format_source, render_all, use_color
from auwgent.console import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, display_path, plural
from auwgent.errors import ConfigError
from auwgent.project import load_project

__all__ = ["agent_files", "run_fmt"]


def _run_stdin(stdin: TextIO, *, check: bool, out: TextIO, err: TextIO) -> int:
    text = stdin.read()
    try:
        formatted = format_source(SourceFile("<stdin>", text))
    except FormatError as exc:
        print(f"error: {exc}", file=err)
        if exc.diagnostics:
            print(render_all(exc.diagnostics, color=use_color(err)), file=err)
        return EXIT_ERRORS
    if check:
        return EXIT_ERRORS if formatted != text else EXIT_OK
    out.write(formatted)
    return EXIT_OK


def agent_files(paths: Sequence[Path]) -> list[Path]:
    """The ``.agent`` files that ``paths`` name: files as given, folders and ``auwgent.yml``
    files as a project (``ConfigError`` for a path that is neither)."""
    found: set[Path] = set()
    for path in paths:
        if path.is_file() and path.suffix == ".agent":
            found.add(path)
        else:
            found.update(load_project(path).files)
    return sorted(found)


def run_fmt(
    paths: Sequence[Path],
    *,
    check: bool,
    out: TextIO,
    err: TextIO,
    stdin: TextIO | None = None,
) -> int:
    """Format (or with ``check`` only inspect) every file ``paths`` name; the exit code.

    ``-`` alone formats standard input to standard output (for editors' formatter hooks)."""
    if [str(p) for p in paths] == ["-"]:
        return _run_stdin(stdin or sys.stdin, check=check, out=out, err=err)
    try:
        files = agent_files(paths)
    except ConfigError as exc:
        print(f"error: {exc}", file=err)
        return EXIT_USAGE
    changed: list[str] = []
    failed = 0
    for path in files:
        shown = display_path(path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            print(f"error: cannot read {shown}: {exc}", file=err)
            failed += 1
            continue
        try:
            formatted = format_source(SourceFile(shown, text))
        except FormatError as exc:
            print(f"error: {exc}", file=err)
            if exc.diagnostics:
                print(render_all(exc.diagnostics, color=use_color(err)), file=err)
            failed += 1
            continue
        if formatted == text:
            continue
        changed.append(shown)
        if check:
            print(f"would reformat {shown}", file=out)
            continue
        try:
            path.write_text(formatted, encoding="utf-8", newline="")
        except OSError as exc:
            print(f"error: cannot write {shown}: {exc}", file=err)
            failed += 1
            continue
        print(f"reformatted {shown}", file=out)
    unchanged = len(files) - len(changed) - failed
    verb = "would be reformatted" if check else "reformatted"
    line = f"{plural(len(changed), 'file')} {verb}, {unchanged} already formatted"
    if failed:
        line += f", {failed} not formatted (errors above)"
    print(line, file=out)
    if failed or (check and changed):
        return EXIT_ERRORS
    return EXIT_OK
