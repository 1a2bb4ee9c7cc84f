"""Helpers for the language acceptance tests: run the real ``auwgent`` command on files.

These tests look at Auwgent only from the outside, the way a user does: they write a project
into a temporary folder, run ``python -m auwgent`` in a subprocess and read what it prints and
writes. Nothing here imports the compiler.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

MODEL = 'model G { provider: gemini("gemini-2.5-flash") }\n'


def agent(body: str = "", *, config: str = 'model: G\n        prompt: "You help."') -> str:
    """A complete one-agent file: the model ``G`` plus ``agent Main`` holding ``body``."""
    return (
        MODEL
        + "agent Main {\n    default config {\n        "
        + config
        + "\n    }\n"
        + body
        + "\n}\n"
    )


def write(root: Path, files: dict[str, str | bytes]) -> None:
    """Write ``files`` (relative path → text or bytes) below ``root``."""
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


def run(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``auwgent ARGS`` in ``cwd``, without colour, as a user would run it."""
    full_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "auwgent", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=full_env,
        timeout=120,
    )


def assert_no_traceback(result: subprocess.CompletedProcess[str]) -> None:
    """No Python traceback and no internal-error exit code, whatever the input."""
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    assert result.returncode in (0, 1, 2), (result.returncode, result.stderr)


@dataclass(frozen=True)
class Rendered:
    """One rendered diagnostic as printed by the CLI."""

    severity: str
    code: str
    message: str
    path: str
    line: int
    col: int
    source_line: str
    caret_col: int
    carets: int
    text: str


_HEADER = re.compile(r"^(error|warning)\[([EW]\d{4})\]: (.*)$")
_LOCATION = re.compile(r"^\s*--> (.+):(\d+):(\d+)$")
_SOURCE = re.compile(r"^\s*(\d+) \| ?(.*)$")
_CARET = re.compile(r"^\s*\| ?( *)(\^+)")


def diagnostics(stderr: str) -> list[Rendered]:
    """Parse every ``severity[CODE]`` block of ``stderr``; fail on a malformed one."""
    found: list[Rendered] = []
    lines = stderr.splitlines()
    for index, line in enumerate(lines):
        header = _HEADER.match(line)
        if not header:
            continue
        block = lines[index : index + 8]
        location = next((m for m in map(_LOCATION.match, block) if m), None)
        assert location, f"no `--> path:line:col` after {line!r}:\n{stderr}"
        source_row = next(
            (
                (m, i)
                for i, m in enumerate(map(_SOURCE.match, block))
                if m and m.group(1) == location.group(2)
            ),
            None,
        )
        assert source_row, f"no source line for {line!r}:\n{stderr}"
        source, row = source_row
        caret = _CARET.match(block[row + 1]) if row + 1 < len(block) else None
        assert caret, f"no caret under the source line of {line!r}:\n{stderr}"
        end = next((i for i in range(index + 1, len(lines)) if _HEADER.match(lines[i])), len(lines))
        found.append(
            Rendered(
                severity=header.group(1),
                code=header.group(2),
                message=header.group(3),
                path=location.group(1),
                line=int(location.group(2)),
                col=int(location.group(3)),
                source_line=source.group(2),
                caret_col=len(caret.group(1)) + 1,
                carets=len(caret.group(2)),
                text="\n".join(lines[index:end]),
            )
        )
    return found


def position_of(source: str, needle: str) -> tuple[int, int]:
    """1-based line and column of the first occurrence of ``needle`` in ``source``."""
    offset = source.index(needle)
    line = source.count("\n", 0, offset) + 1
    col = offset - (source.rfind("\n", 0, offset) + 1) + 1
    return line, col
