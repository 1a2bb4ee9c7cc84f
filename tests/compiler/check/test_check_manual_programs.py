"""The manual's programs and the example projects compile cleanly, to valid IR.

This walks FRONT's parse fixtures (every complete program of the manual) and every project
under ``examples/``, so a program added there is checked here without any change.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from check_support import DATA, REPO, assert_valid_ir, compile_path

from auwgent.compiler.diagnostics import render_all
from auwgent.compiler.pipeline import compile_project
from auwgent.project import load_project

PARSE_OK = DATA / "parse" / "ok"
PROGRAMS = sorted(PARSE_OK.glob("*.agent")) + sorted(p for p in PARSE_OK.iterdir() if p.is_dir())
EXAMPLES = sorted(p for p in (REPO / "examples").iterdir() if (p / "auwgent.yml").is_file())


def test_there_are_programs_and_examples() -> None:
    assert len(PROGRAMS) >= 10
    assert len(EXAMPLES) >= 5


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_manual_program_compiles_without_errors(program: Path) -> None:
    result = compile_path(program)
    assert result.ok, render_all(result.diagnostics, color=False)
    assert result.documents
    for doc in result.documents.values():
        assert_valid_ir(doc)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_example_project_compiles_without_errors(example: Path) -> None:
    project = load_project(example)
    result = compile_project(project.files, project.source_root)
    assert result.ok, render_all(result.diagnostics, color=False)
    assert result.agents >= 1
    assert len(result.documents) == result.agents
    for path, doc in result.documents.items():
        assert doc["source"] == path
        assert (project.source_root / path).is_file()
        assert_valid_ir(doc)
