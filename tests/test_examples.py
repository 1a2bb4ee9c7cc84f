"""The README's main job: the example apps generate and run on the offline model."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.pop("AUWGENT_PROVIDER", None)
    return env


def _generate_and_run(name: str, tmp_path: Path, *args: str) -> str:
    project = tmp_path / name
    shutil.copytree(EXAMPLES / name, project, ignore=shutil.ignore_patterns("generated"))
    gen = subprocess.run(
        [sys.executable, "-m", "auwgent", "generate", str(project)],
        capture_output=True,
        text=True,
        env=_env(),
    )
    assert gen.returncode == 0, gen.stdout + gen.stderr
    run = subprocess.run(
        [sys.executable, "app.py", *args],
        cwd=project,
        capture_output=True,
        text=True,
        env=_env(),
        timeout=60,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Traceback" not in run.stderr
    return run.stdout


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir()))
def test_every_example_project_generates(name: str, tmp_path: Path) -> None:
    project = tmp_path / name
    shutil.copytree(EXAMPLES / name, project, ignore=shutil.ignore_patterns("generated"))
    out = subprocess.run(
        [sys.executable, "-m", "auwgent", "generate", str(project)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    generated = project / "generated"
    assert list(generated.rglob("*_types.py")) or list(generated.rglob("*.agent.types.ts"))


def test_quickstart_streams_and_answers_offline(tmp_path: Path) -> None:
    out = _generate_and_run("quickstart", tmp_path, "good", "morning")
    assert "running on the offline model" in out
    assert '[Main] response_text: Offline reply to "good morning".' in out
    assert "session: 1 turn(s)" in out


def test_weather_runs_its_tools_offline(tmp_path: Path) -> None:
    out = _generate_and_run("weather", tmp_path)
    for tool in ("get_location", "get_weather", "get_forecast", "get_humidity"):
        assert f'[Main] tool_result: {{"name": "{tool}"' in out
    assert "[Main] response_text:" in out
