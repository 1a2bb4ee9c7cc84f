"""Golden diagnostics: every ``tests/data/check`` case beside its expected rendering.

A case is ``<code>_<what>.agent`` (one file) or a folder ``<code>_<what>/`` (a project, for
module rules); the expected text is ``<case>.txt``. The code in the name must be among the
diagnostics, so a case cannot silently stop testing its rule.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from check_support import DATA, assert_all_valid, check_golden, compile_path

from auwgent.compiler.diagnostics import render_all

CHECK = DATA / "check"
CASES = sorted(
    p for p in CHECK.iterdir() if p.suffix == ".agent" or (p.is_dir() and any(p.rglob("*.agent")))
)


def _golden(case: Path) -> Path:
    name = case.name[: -len(".agent")] if case.suffix == ".agent" else case.name
    return CHECK / f"{name}.txt"


def test_there_are_many_cases() -> None:
    assert len(CASES) >= 60


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_diagnostics_match_golden(case: Path) -> None:
    result = compile_path(case)
    rendered = render_all(result.diagnostics, color=False) + "\n"
    check_golden(_golden(case), rendered)
    code = case.name.split("_", 1)[0].upper()
    if code.startswith(("E", "W")):
        assert code in {d.code for d in result.diagnostics}, f"{case.name} lost its {code}"
    if code.startswith("W"):
        assert result.ok, "a warning case must not have errors"
    assert_all_valid(result)


def test_no_orphan_golden_files() -> None:
    expected = {_golden(case).name for case in CASES}
    assert {p.name for p in CHECK.glob("*.txt")} <= expected
