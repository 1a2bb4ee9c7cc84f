"""Custom scorers for the weather dataset (named in weather.yaml's `scorers`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def short_answer(case: Mapping[str, Any], run: Mapping[str, Any]) -> float:
    """1 for an answer of at most 80 characters, less the longer it gets."""
    length = len(run["text"])
    return 1.0 if length <= 80 else max(0.0, 1 - (length - 80) / 80)


def one_call(case: Mapping[str, Any], run: Mapping[str, Any]) -> dict[str, Any]:
    """Exactly one tool or workflow call."""
    count = len(run["calls"])
    return {"score": float(count == 1), "detail": f"{count} calls"}
