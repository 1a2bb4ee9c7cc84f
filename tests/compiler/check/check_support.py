"""Shared helpers for the checker tests: golden files, folders as projects, IR validation."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema

from auwgent.compiler.pipeline import CompileResult, compile_sources
from auwgent.ir import compute_hash, load_schema
from golden import UPDATE as UPDATE
from golden import assert_golden

DATA = Path(__file__).parents[2] / "data"
REPO = Path(__file__).parents[3]


def sources_of(folder: Path) -> dict[str, str]:
    """Every ``.agent`` file under ``folder``, keyed by its ``/``-separated relative path."""
    return {
        p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(folder.rglob("*.agent"))
    }


def compile_path(path: Path) -> CompileResult:
    """Compile one file on its own, or a folder as a project."""
    if path.is_dir():
        return compile_sources(sources_of(path))
    return compile_sources({path.name: path.read_text(encoding="utf-8")})


@lru_cache(maxsize=1)
def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(load_schema())


def assert_valid_ir(doc: dict[str, Any]) -> None:
    """The document validates against schema.json and carries its own hash."""
    errors = sorted(_validator().iter_errors(doc), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:5])
    assert doc["hash"] == compute_hash(doc)


def assert_all_valid(result: CompileResult) -> None:
    """Every document of ``result`` is valid IR."""
    for doc in result.documents.values():
        assert_valid_ir(doc)


#: The suite's one golden comparison (tests/golden.py), under the name these tests use.
check_golden = assert_golden
