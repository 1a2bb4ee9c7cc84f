"""Golden diagnostics: each ``tests/data/parse/errors/*.agent`` beside its expected ``.txt``.

Regenerate with ``AUWGENT_UPDATE_GOLDEN=1`` and review the diff.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from auwgent.compiler.diagnostics import render_all
from auwgent.compiler.parser import parse
from auwgent.compiler.source import SourceFile
from golden import assert_golden

DATA = Path(__file__).parents[2] / "data" / "parse"
CASES = sorted((DATA / "errors").glob("*.agent"))


def rendered(path: Path) -> str:
    source = SourceFile(path.name, path.read_text(encoding="utf-8"))
    _, diagnostics = parse(source)
    return render_all(diagnostics, color=False) + "\n"


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_golden_diagnostics(case: Path) -> None:
    expected_path = case.with_suffix(".txt")
    actual = rendered(case)
    assert_golden(expected_path, actual)
    assert actual.strip(), "an error case must produce at least one diagnostic"


def test_every_golden_has_an_input() -> None:
    stale = [
        p.name for p in (DATA / "errors").glob("*.txt") if not p.with_suffix(".agent").exists()
    ]
    assert not stale


def test_many_cases() -> None:
    assert len(CASES) >= 15
