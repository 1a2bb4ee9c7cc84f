"""The sample application (tests/sample_app): the manual's Python tabs against generated code.

One generation into a temporary copy, then: the generated modules parse and match their
golden files; ONE mypy --strict run over the bindings, the application and the deliberate
mistakes (every marked line, and only those, reported); the application runs offline; the
mistakes no type checker sees are caught at run time with a suggestion.
"""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from auwgent.generate import generate_path

from .conftest import DATA, SAMPLE_APP

REPO = Path(__file__).resolve().parents[2]
_MARK = re.compile(r"#\s*E:\s*(.+?)\s*$")
_MYPY_LINE = re.compile(r"^(?P<file>[^:]+\.py):(?P<line>\d+): error: (?P<msg>.*)$")


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sample_app")
    shutil.copytree(
        SAMPLE_APP, root, dirs_exist_ok=True, ignore=shutil.ignore_patterns("generated")
    )
    result = generate_path(root)
    assert result.ok, (result.errors, [d.message for d in result.diagnostics])
    return root


def _run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **env}
    return subprocess.run(
        args, cwd=cwd, env=full_env, capture_output=True, text=True, timeout=300, check=False
    )


def test_generated_modules_parse_and_match_golden(sample: Path) -> None:
    from .conftest import assert_golden

    modules = sorted((sample / "generated").glob("*_types.py"))
    assert len(modules) == len(list((SAMPLE_APP / "agents").glob("*.agent")))
    for module in modules:
        text = module.read_text(encoding="utf-8")
        ast.parse(text, filename=str(module))
        assert_golden(DATA / "golden" / "sample_app" / module.name, text)


def _expected_errors(root: Path) -> dict[tuple[str, int], str]:
    expected: dict[tuple[str, int], str] = {}
    for folder in ("app", "mistakes"):
        for path in sorted((root / folder).glob("*.py")):
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                found = _MARK.search(line)
                if found and not line.lstrip().startswith(('"""', "#")):
                    expected[(f"{folder}/{path.name}", number)] = found.group(1)
    return expected


@pytest.mark.slow
def test_mypy_strict_accepts_the_app_and_reports_every_mistake(sample: Path) -> None:
    done = _run(
        [
            sys.executable, "-m", "mypy", "--strict", "--python-version", "3.10",
            "--cache-dir", str(REPO / ".mypy_cache" / "sample_app"),
            "--no-error-summary", "--hide-error-context", "app", "mistakes", "generated",
        ],
        sample,
    )  # fmt: skip
    reported: dict[tuple[str, int], list[str]] = {}
    for line in done.stdout.splitlines():
        match = _MYPY_LINE.match(line)
        if match:
            key = (match["file"].replace(os.sep, "/"), int(match["line"]))
            reported.setdefault(key, []).append(match["msg"])
    expected = _expected_errors(sample)
    assert len(expected) >= 12
    unexpected = {k: v for k, v in reported.items() if k not in expected}
    assert not unexpected, f"mypy reported errors nobody expected:\n{done.stdout}{done.stderr}"
    for key, text in expected.items():
        messages = reported.get(key, [])
        assert any(text in m for m in messages), f"{key}: expected {text!r}, got {messages}"


def test_the_sample_app_runs_offline(sample: Path) -> None:
    script = (
        "import asyncio, importlib\n"
        "for name in ['getting_started', 'context', 'tools', 'workflows', 'output',"
        " 'helpers', 'intents', 'middleware', 'verbatim']:\n"
        "    asyncio.run(importlib.import_module('app.' + name).main())\n"
        "    print('\\nDONE', name)\n"
    )
    done = _run([sys.executable, "-W", "error::UserWarning", "-c", script], sample,
                AUWGENT_PROVIDER="offline")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("DONE") == 9
    assert 'Offline reply to "hello"' in done.stdout
    assert "{'type': 'Person', 'response': {" in done.stdout
    assert "Main says:" in done.stdout


@pytest.mark.parametrize(
    ("module", "expected"),
    [
        ("unknown_intent", "'respose_text' matches no intent of this agent; did you mean "
         "'response_text'?"),
        ("misspelt_tool", "ConfigError: Tools.get_wether: no tool named 'get_wether' is "
         "declared; did you mean 'get_weather'?"),
        ("wrong_context", "ContextError: context.is_vip: expected boolean"),
    ],
)  # fmt: skip
def test_mistakes_a_type_checker_cannot_see_are_caught_at_run_time(
    sample: Path, module: str, expected: str
) -> None:
    done = _run([sys.executable, "-c", f"import mistakes.{module}"], sample)
    assert expected in done.stderr
