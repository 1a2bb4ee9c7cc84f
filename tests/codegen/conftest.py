"""Shared helpers for the codegen tests: golden files and the sample application paths."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "data" / "codegen"
SAMPLE_APP = Path(__file__).resolve().parents[1] / "sample_app"
UPDATE = os.environ.get("AUWGENT_UPDATE_GOLDEN") == "1"


def assert_golden(path: Path, actual: str) -> None:
    """Compare ``actual`` with the golden file; ``AUWGENT_UPDATE_GOLDEN=1`` rewrites it."""
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    if not path.exists():
        pytest.fail(f"missing golden file {path}; run with AUWGENT_UPDATE_GOLDEN=1")
    expected = path.read_text(encoding="utf-8")
    assert actual == expected, f"{path.name} differs; review, then AUWGENT_UPDATE_GOLDEN=1"
