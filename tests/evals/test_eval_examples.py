"""``auwgent eval --replay`` on the example datasets: every case from its cassette, no network.

The cassettes were recorded once against the deterministic fake Gemini of
``eval_fake_model.py`` (``python tests/evals/eval_fake_model.py`` records them again).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from eval_fake_model import record

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SCORER_KINDS = {
    "output", "normalised", "contains", "not_contains", "regex", "schema", "calls",
    "not_called", "max_tokens", "max_seconds",
}  # fmt: skip


def eval_cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "auwgent", "eval", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env or {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")},
        timeout=300,
    )


@pytest.mark.parametrize("example", ["weather", "extraction"])
def test_example_dataset_replays_from_its_cassettes(example: str, tmp_path: Path) -> None:
    project = tmp_path / example
    shutil.copytree(EXAMPLES / example, project, ignore=shutil.ignore_patterns("generated"))
    files = ["--json", "r.json", "--junit", "r.xml", "--html", "r.html"]
    result = eval_cli("--replay", "--concurrency", "3", *files, cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads((project / "r.json").read_text(encoding="utf-8"))
    assert report["failed"] == 0 and report["passed"] == len(report["cases"]) >= 20
    kinds = {name.partition(":")[0] for name in report["scorers"]}
    expected = SCORER_KINDS | {"judge", "custom"} | ({"json"} if example == "extraction" else set())
    assert kinds == expected
    assert all(case["tokens"] > 0 for case in report["cases"])  # the recorded usage
    judged = next(c for c in report["cases"] if any(n.startswith("judge:") for n in c["scores"]))
    verdict = next(s for n, s in judged["scores"].items() if n.startswith("judge:"))
    assert verdict["request"]["model"] == "MyGemini"
    assert "Rubric:" in verdict["request"]["system"]
    assert judged["input"] in verdict["request"]["user"]
    assert '"score"' in verdict["request"]["reply"]
    suite = ET.parse(project / "r.xml").getroot()
    assert [s.get("tests") for s in suite] == [str(len(report["cases"]))]
    assert [s.get("failures") for s in suite] == ["0"]
    page = (project / "r.html").read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>") and "<script src" not in page
    assert "<link" not in page and f"{example}/" in page
    table = result.stdout.splitlines()
    assert table[0].split() == [
        "scorer",
        "cases",
        "pass",
        "rate",
        "mean",
        "score",
        "tokens",
        "time",
    ]
    assert table[-1] == f"{len(report['cases'])} passed, 0 failed"


def test_replay_without_the_cassette_fails_the_case_and_says_why(tmp_path: Path) -> None:
    project = tmp_path / "weather"
    shutil.copytree(EXAMPLES / "weather", project, ignore=shutil.ignore_patterns("generated"))
    (project / "evals" / "cassettes" / "weather" / "accra-weather.json").unlink()
    result = eval_cli("--replay", cwd=project)
    assert result.returncode == 1
    assert "FAIL weather/accra-weather: the agent could not run" in result.stdout
    assert "accra-weather.json does not exist" in result.stdout
    assert result.stdout.splitlines()[-1] == "21 passed, 1 failed"


def test_recording_again_against_the_fake_model_gives_the_same_answers(tmp_path: Path) -> None:
    project = tmp_path / "extraction"
    shutil.copytree(EXAMPLES / "extraction", project, ignore=shutil.ignore_patterns("generated"))
    shutil.rmtree(project / "evals" / "cassettes")
    done = record(project)
    assert done.returncode == 0, done.stdout + done.stderr
    fresh = sorted((project / "evals" / "cassettes" / "extraction").glob("*.json"))
    kept = EXAMPLES / "extraction" / "evals" / "cassettes" / "extraction"
    assert [p.name for p in fresh] == sorted(p.name for p in kept.glob("*.json"))
    for path in fresh:
        new = json.loads(path.read_text(encoding="utf-8"))["interactions"]
        old = json.loads((kept / path.name).read_text(encoding="utf-8"))["interactions"]
        assert [i["response"] for i in new] == [i["response"] for i in old], path.name


def test_the_offline_model_runs_without_cassettes_and_the_judge_fails_closed(
    tmp_path: Path,
) -> None:
    project = tmp_path / "weather"
    shutil.copytree(EXAMPLES / "weather", project, ignore=shutil.ignore_patterns("generated"))
    shutil.rmtree(project / "evals" / "cassettes")
    result = eval_cli("--json", "r.json", "--junit", "r.xml", "--html", "r.html", cwd=project)
    assert result.returncode == 1
    report = json.loads((project / "r.json").read_text(encoding="utf-8"))
    failed = [c["id"] for c in report["cases"] if not c["passed"]]
    suite = ET.parse(project / "r.xml").getroot()[0]
    assert suite.get("failures") == str(len(failed))
    assert sorted(c.get("name") for c in suite if c.find("failure") is not None) == sorted(failed)
    page = (project / "r.html").read_text(encoding="utf-8")
    # the diff of the first output case: the expected line removed, the offline reply added
    assert '<span class="del">- Accra: 28, sunny</span>' in page
    assert '<span class="add">+ Offline reply to' in page
    assert "<details open><summary class=fail>FAIL weather/accra-weather</summary>" in page
    assert report["mode"] == "offline"
    judged = [s for c in report["cases"] for n, s in c["scores"].items() if n.startswith("judge:")]
    assert judged and not any(s["passed"] for s in judged)
    assert {s["detail"] for s in judged} == {"a judge needs a model: run with --record or --replay"}
    assert not (project / "evals" / "cassettes").exists()
