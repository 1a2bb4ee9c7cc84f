"""``auwgent check`` through the real command line (``python -m auwgent``)."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from auwgent import __version__
from auwgent.cli import main

EXAMPLES = Path(__file__).parents[1] / "examples"
AGENT = 'agent Main {\n default config {\n model: gemini("m")\n prompt: "p"\n }\n}\n'


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": ""}
    return subprocess.run(
        [sys.executable, "-m", "auwgent", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=60,
    )


def test_examples_check_clean() -> None:
    for folder in sorted(p for p in EXAMPLES.iterdir() if p.is_dir()):
        result = run("check", str(folder))
        assert result.returncode == 0, result.stderr
        assert result.stderr == ""
        assert re.fullmatch(r"checked \d+ files? \(\d+ agents?\) in \d+ ms\n", result.stdout)


def test_multi_file_example_counts_files_and_agents() -> None:
    result = run("check", str(EXAMPLES / "multi_file"))
    assert result.stdout.startswith("checked 6 files (1 agent) in ")


def test_errors_exit_1_with_rendered_diagnostics(tmp_path: Path) -> None:
    (tmp_path / "good.agent").write_text(AGENT, encoding="utf-8")
    (tmp_path / "bad.agent").write_text("agent Main {\n  toool x(): string\n", encoding="utf-8")
    result = run("check", ".", cwd=tmp_path)
    assert result.returncode == 1
    assert "error[E0103]: expected a member of `agent Main`" in result.stderr
    assert " --> bad.agent:2:3" in result.stderr
    assert "help: did you mean `tool`?" in result.stderr
    assert "error[E0101]" in result.stderr
    assert "\x1b[" not in result.stderr  # not a terminal: no colour
    assert re.fullmatch(r"checked 2 files \(2 agents\) in \d+ ms: 2 errors\n", result.stdout)


def test_default_path_is_the_current_folder(tmp_path: Path) -> None:
    (tmp_path / "auwgent.yml").write_text('source: "main.agent"\n', encoding="utf-8")
    (tmp_path / "main.agent").write_text(AGENT, encoding="utf-8")
    result = run("check", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout.startswith("checked 1 file (1 agent)")


@pytest.mark.parametrize(
    ("files", "path", "message"),
    [
        ({}, "missing", "error: missing: no such file or folder"),
        (
            {"auwgent.yml": "targets: [rs]\n", "m.agent": ""},
            ".",
            'targets[0]: expected one of "py", "ts", got "rs"',
        ),
        ({"auwgent.yml": "source: [\n"}, "auwgent.yml", "auwgent.yml:2:1: invalid YAML"),
    ],
)
def test_usage_errors_exit_2(
    tmp_path: Path, files: dict[str, str], path: str, message: str
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    result = run("check", path, cwd=tmp_path)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_unreadable_source_is_a_diagnostic_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "bin.agent").write_bytes(b"agent \xff\xfe {}")
    result = run("check", str(tmp_path / "bin.agent"))
    assert result.returncode == 1
    assert "error[E0000]: cannot read" in result.stderr and "not UTF-8" in result.stderr
    assert "Traceback" not in result.stderr


def test_version_and_help() -> None:
    result = run("--version")
    assert result.returncode == 0 and result.stdout.strip() == f"auwgent {__version__}"
    result = run()
    assert result.returncode == 2 and "check" in result.stderr
    result = run("check", "--help")
    assert result.returncode == 0 and "auwgent.yml" in result.stdout
    result = run("frobnicate")
    assert result.returncode == 2 and "invalid choice" in result.stderr


def test_main_in_process(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.agent").write_text('prompt P { "{{#if x}}" }\n', encoding="utf-8")
    assert main(["check", str(tmp_path)]) == 1
    captured = capsys.readouterr()
    assert "error[E0111]: `{{#if}}` is never closed" in captured.err
    assert captured.out.startswith("checked 1 file (0 agents)")


def test_every_golden_error_file_fails_cleanly() -> None:
    folder = Path(__file__).parent / "data" / "parse" / "errors"
    result = run("check", str(folder))
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    for case in sorted(folder.glob("*.agent")):
        assert f"{case.name}:" in result.stderr, case.name


def test_colour_only_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    from auwgent.compiler.diagnostics import use_color

    class Tty:
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_color(Tty())
    assert not use_color(object())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_color(Tty())


def test_subcommands_are_registered() -> None:
    from auwgent.cli import build_parser

    help_text = build_parser().format_help()
    assert "check" in help_text and "generate" in help_text


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """``parser`` and every sub-command parser below it."""
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += _parsers(sub)
    return found


def test_help_points_at_nothing_an_installed_package_lacks() -> None:
    """No command's help names a ``docs/`` path: an installed package has no docs folder."""
    from auwgent.cli import build_parser

    helps = {p.prog: p.format_help() for p in _parsers(build_parser())}
    assert {"auwgent serve", "auwgent mcp", "auwgent mcp import", "auwgent test"} <= set(helps)
    assert not [prog for prog, text in helps.items() if "docs/" in text]
