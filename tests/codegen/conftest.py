"""Shared helpers for the codegen tests: golden files and the sample application paths."""

from __future__ import annotations

from pathlib import Path

from golden import UPDATE, assert_golden

DATA = Path(__file__).resolve().parents[1] / "data" / "codegen"
SAMPLE_APP = Path(__file__).resolve().parents[1] / "sample_app"

__all__ = ["DATA", "SAMPLE_APP", "UPDATE", "assert_golden"]
