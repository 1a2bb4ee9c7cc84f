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
        "checker_mcp.py",
        "checker_exprs.py",
        "checker_tests.py",
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


MARKER = "<!-- examples: generated from tests/data/check by test_check_docs.py -->"


def _examples_section() -> str:
    """One rendered diagnostic per code, taken from the first golden case named after it."""
    from check_support import compile_path

    from auwgent.compiler.diagnostics import render

    blocks = [MARKER, "", "## One example of each", ""]
    cases = sorted(p for p in (DATA / "check").iterdir() if p.suffix == ".agent" or p.is_dir())
    for code in sorted(_emitted()):
        case = next(p for p in cases if p.name.split("_", 1)[0].upper() == code)
        diag = next(d for d in compile_path(case).diagnostics if d.code == code)
        blocks += [f"### {code}", "", "```text", render(diag, color=False), "```", ""]
    return "\n".join(blocks)


def test_examples_section_matches_the_goldens() -> None:
    from check_support import UPDATE

    path = REPO / "docs" / "checker.md"
    text = path.read_text(encoding="utf-8")
    head = text.split(MARKER)[0].rstrip("\n") + "\n\n"
    expected = head + _examples_section()
    if UPDATE:
        path.write_text(expected, encoding="utf-8")
        return
    assert MARKER in text, "run with AUWGENT_UPDATE_GOLDEN=1 to add the examples section"
    assert text == expected, "docs/checker.md examples are stale; AUWGENT_UPDATE_GOLDEN=1"
