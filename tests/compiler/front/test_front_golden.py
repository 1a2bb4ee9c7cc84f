"""Golden diagnostics: each ``tests/data/parse/errors/*.agent`` beside its expected ``.txt``.

Regenerate with ``AUWGENT_UPDATE_GOLDEN=1`` and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from auwgent.compiler.diagnostics import render_all
from auwgent.compiler.parser import parse
from auwgent.compiler.source import SourceFile

DATA = Path(__file__).parents[2] / "data" / "parse"
CASES = sorted((DATA / "errors").glob("*.agent"))
UPDATE = os.environ.get("AUWGENT_UPDATE_GOLDEN") == "1"


def rendered(path: Path) -> str:
    source = SourceFile(path.name, path.read_text(encoding="utf-8"))
    _, diagnostics = parse(source)
    return render_all(diagnostics, color=False) + "\n"


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_golden_diagnostics(case: Path) -> None:
    expected_path = case.with_suffix(".txt")
    actual = rendered(case)
    if UPDATE:
        expected_path.write_text(actual, encoding="utf-8")
    assert expected_path.exists(), f"missing {expected_path.name}; run with AUWGENT_UPDATE_GOLDEN=1"
    assert actual == expected_path.read_text(encoding="utf-8")
    assert actual.strip(), "an error case must produce at least one diagnostic"


def test_every_golden_has_an_input() -> None:
    stale = [
        p.name for p in (DATA / "errors").glob("*.txt") if not p.with_suffix(".agent").exists()
    ]
    assert not stale


def test_many_cases() -> None:
    assert len(CASES) >= 15
