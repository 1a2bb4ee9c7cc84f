"""``auwgent eval --baseline``: a worse prompt is flagged with the cases that regressed, an
unchanged project is not. The scratch project is the weather example, recorded live against
the deterministic fake Gemini (``eval_fake_model.py``), whose answers follow the prompt: told
to use its tools it looks the weather up, otherwise it guesses.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from eval_fake_model import fake_gemini

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
GOOD_PROMPT = "You are a weather assistant. Use your tools to answer questions about the weather."
WORSE_PROMPT = "You are a weather assistant. Answer from what you know."


def _eval(project: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "auwgent", "eval", "--record", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    project = tmp_path / "weather"
    shutil.copytree(EXAMPLES / "weather", project, ignore=shutil.ignore_patterns("generated"))
    shutil.rmtree(project / "evals" / "cassettes")
    return project


def test_a_worse_prompt_is_flagged_and_an_unchanged_one_is_not(scratch: Path) -> None:
    with fake_gemini() as env:
        first = _eval(scratch, env, "--json", "baseline.json")
        assert first.returncode == 0, first.stdout + first.stderr
        again = _eval(scratch, env, "--baseline", "baseline.json", "--json", "again.json")
        assert again.returncode == 0, again.stdout + again.stderr
        assert "REGRESSION" not in again.stdout
        assert json.loads((scratch / "again.json").read_text("utf-8"))["regressions"] == []

        agent = scratch / "main.agent"
        agent.write_text(
            agent.read_text("utf-8").replace(GOOD_PROMPT, WORSE_PROMPT), encoding="utf-8"
        )
        worse = _eval(scratch, env, "--baseline", "baseline.json", "--json", "worse.json")
    assert worse.returncode == 1
    regressions = json.loads((scratch / "worse.json").read_text("utf-8"))["regressions"]
    regressed = {line.partition(":")[0] for line in regressions}
    # Every case that needs a tool regressed; the budget-only case still passes.
    assert "weather/accra-weather" in regressed
    assert "weather/delete-not-admin" in regressed
    assert "weather/budget-tokens" not in regressed
    assert "weather/accra-weather: passed in the baseline, fails now" in regressions
    assert "weather/accra-weather: calls dropped from 1.000 to 0.000" in regressions
    assert "REGRESSION weather/accra-weather: passed in the baseline, fails now" in worse.stdout
    assert worse.stdout.splitlines()[-1].endswith(f"{len(regressions)} regressed")


def test_tolerance_lets_a_small_drop_through(scratch: Path, tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    with fake_gemini() as env:
        first = _eval(scratch, env, "--json", str(baseline))
    assert first.returncode == 0, first.stdout + first.stderr
    data = json.loads(baseline.read_text("utf-8"))
    case = next(c for c in data["cases"] if c["id"] == "ho-weather")
    case["scores"]["custom:short"]["score"] = 1.05  # the baseline scored it a little higher
    baseline.write_text(json.dumps(data), encoding="utf-8")
    with fake_gemini() as env:
        strict = _eval(scratch, env, "--baseline", str(baseline))
        loose = _eval(scratch, env, "--baseline", str(baseline), "--tolerance", "0.1")
    assert strict.returncode == 1
    assert (
        "REGRESSION weather/ho-weather: custom:short dropped from 1.050 to 1.000" in strict.stdout
    )
    assert loose.returncode == 0, loose.stdout
