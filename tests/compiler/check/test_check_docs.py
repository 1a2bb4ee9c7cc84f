"""Every diagnostic code the compiler can emit is documented and has a golden case."""

from __future__ import annotations

import re

from check_support import DATA, REPO

SOURCES = [
    REPO / "src" / "auwgent" / "compiler" / name
    for name in (
        "modules.py",
        "checker.py",
        "checker_agents.py",
        "checker_prompts.py",
        "checker_exprs.py",
        "lower.py",
        "pipeline.py",
    )
]
CODE = re.compile(r'"([EW][12]\d{3})"')


def _emitted() -> set[str]:
    return {code for path in SOURCES for code in CODE.findall(path.read_text(encoding="utf-8"))}


def test_codes_were_found() -> None:
    assert len(_emitted()) >= 40


def test_every_code_is_documented() -> None:
    doc = (REPO / "docs" / "checker.md").read_text(encoding="utf-8")
    missing = sorted(code for code in _emitted() if f"| {code} |" not in doc)
    assert not missing, f"docs/checker.md lacks {missing}"


def test_every_code_has_a_golden_case() -> None:
    cases = {p.name.split("_", 1)[0].upper() for p in (DATA / "check").iterdir()}
    missing = sorted(_emitted() - cases)
    assert not missing, f"tests/data/check has no case for {missing}"
