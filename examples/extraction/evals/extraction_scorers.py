"""A custom scorer for the extraction dataset (named in extraction.jsonl's `scorers`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def name_from_input(case: Mapping[str, Any], run: Mapping[str, Any]) -> bool:
    """The extracted name or company appears word for word in the user's message."""
    output = run["output"] or {}
    value = output.get("name") or output.get("company_name") or ""
    return bool(value) and value in case["input"]
