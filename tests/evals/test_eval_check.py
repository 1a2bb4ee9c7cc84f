"""``auwgent check`` on eval datasets: each mistake kind, located, against golden output.

Each ``tests/data/evals/check/<name>.yaml`` (or ``.jsonl``) is put beside the agents of
``tests/data/evals/check/project/`` as that project's only dataset; the command's stderr must
equal ``<name>.txt`` (``AUWGENT_UPDATE_GOLDEN=1`` rewrites it).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from golden import assert_golden

DATA = Path(__file__).resolve().parents[1] / "data" / "evals" / "check"
CASES = sorted(p for p in DATA.iterdir() if p.suffix in (".yaml", ".jsonl"))


def _check(project: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "auwgent", "check", "."],
        cwd=project,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=60,
    )


def _project(tmp_path: Path, dataset: Path | None) -> Path:
    project = tmp_path / "project"
    shutil.copytree(DATA / "project", project)
    if dataset is not None:
        (project / "evals").mkdir()
        shutil.copy(dataset, project / "evals" / dataset.name)
    return project


@pytest.mark.parametrize("dataset", CASES, ids=[p.stem for p in CASES])
def test_dataset_mistakes_are_located(dataset: Path, tmp_path: Path) -> None:
    result = _check(_project(tmp_path, dataset))
    assert result.returncode == 1, result.stdout + result.stderr
    code = dataset.stem.split("_")[0].upper()
    assert f"error[{code}]" in result.stderr
    assert f" --> evals/{dataset.name}:" in result.stderr
    assert "Traceback" not in result.stderr
    assert_golden(DATA / f"{dataset.stem}.txt", result.stderr)


def test_a_project_without_datasets_checks_as_before(tmp_path: Path) -> None:
    result = _check(_project(tmp_path, None))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("checked 2 files (2 agents)")


def test_a_good_dataset_counts_as_a_checked_file(tmp_path: Path) -> None:
    project = _project(tmp_path, None)
    (project / "evals").mkdir()
    (project / "evals" / "good.yaml").write_text(
        'agent: Main\ncases:\n  - input: "Where is order 5?"\n'
        "    context: {user_id: u1, is_admin: false}\n"
        "    expect: {calls: [get_order], contains: shipped}\n",
        encoding="utf-8",
    )
    result = _check(project)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("checked 3 files (2 agents)")


def test_evals_key_in_auwgent_yml_moves_the_datasets(tmp_path: Path) -> None:
    project = _project(tmp_path, None)
    (project / "auwgent.yml").write_text('evals: "qa/orders.yaml"\n', encoding="utf-8")
    (project / "qa").mkdir()
    shutil.copy(DATA / "e2203_unknown_config.yaml", project / "qa" / "orders.yaml")
    result = _check(project)
    assert result.returncode == 1
    assert "error[E2203]: agent `Main` has no config `breif`" in result.stderr
    assert " --> qa/orders.yaml:6:13" in result.stderr
    assert "help: did you mean `brief`?" in result.stderr


def test_every_dataset_code_is_documented_and_has_a_golden_case() -> None:
    source = Path(__file__).resolve().parents[2] / "src" / "auwgent" / "evals"
    emitted = {
        code
        for path in source.glob("*.py")
        for code in re.findall(r'"(E22\d\d)"', path.read_text(encoding="utf-8"))
    }
    assert len(emitted) == 7
    doc = (source.parents[2] / "docs" / "checker.md").read_text(encoding="utf-8")
    assert sorted(c for c in emitted if f"| {c} |" not in doc) == []
    golden = {p.stem.split("_")[0].upper() for p in CASES}
    assert sorted(emitted - golden) == []


def test_dataset_shape_is_checked_even_when_the_sources_have_errors(tmp_path: Path) -> None:
    project = _project(tmp_path, DATA / "e2201_shape.yaml")
    (project / "broken.agent").write_text("agent Broken {\n  toool x(): string\n", "utf-8")
    result = _check(project)
    assert result.returncode == 1
    assert "error[E0103]" in result.stderr
    assert "error[E2201]: unknown dataset key `judgs`" in result.stderr
    assert "E2204" not in result.stderr  # no IR to check the cases against
