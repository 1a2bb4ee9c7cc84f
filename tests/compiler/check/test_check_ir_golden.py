"""Golden IR: the manual's programs (and a few of ours) beside the documents they compile to.

Single files are ``tests/data/ir/<name>.agent`` -> ``<name>.agent.json``; a folder is a
project whose agent files get a ``.json`` twin. Every document must validate against the
schema, and compiling twice must give byte-identical output.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from check_support import DATA, assert_valid_ir, check_golden, compile_path

from auwgent.compiler.diagnostics import render_all
from auwgent.ir import dumps_ir

IR = DATA / "ir"
CASES = sorted(
    p for p in IR.iterdir() if p.suffix == ".agent" or (p.is_dir() and p.name != "handmade")
)


def test_the_manual_programs_are_here() -> None:
    names = {p.name for p in CASES}
    for expected in ("quickstart.agent", "helpers.agent", "workflows.agent", "multi_file"):
        assert expected in names


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_ir_matches_golden(case: Path) -> None:
    result = compile_path(case)
    assert result.ok, render_all(result.diagnostics, color=False)
    assert result.documents, "an agent file must produce a document"
    base = case if case.is_dir() else case.parent
    for path, doc in sorted(result.documents.items()):
        assert_valid_ir(doc)
        check_golden(base / f"{path}.json", dumps_ir(doc))


@pytest.mark.parametrize("case", CASES[:4], ids=lambda p: p.name)
def test_compiling_twice_gives_identical_bytes(case: Path) -> None:
    first = compile_path(case).documents
    second = compile_path(case).documents
    assert {k: dumps_ir(v) for k, v in first.items()} == {k: dumps_ir(v) for k, v in second.items()}
