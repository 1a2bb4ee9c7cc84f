"""The token estimator against input tokens real providers reported for text-only requests
(tests/data/context/usage_real.json, extracted from public cassettes by
scripts/extract_usage_cassettes.py; its source and license are in tests/data/context/README.md).
The table in docs/context.md is what ``table()`` prints."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

import pytest

from auwgent.runtime.context_budget import Calibration, limits_for, raw_estimate
from auwgent.runtime.providers.base import Message

DATA = Path(__file__).parent.parent / "data" / "context" / "usage_real.json"
RECORDED: list[dict[str, Any]] = json.loads(DATA.read_text(encoding="utf-8"))
APIS = ("openai", "anthropic", "gemini")


def _raw(entry: dict[str, Any]) -> int:
    limits = limits_for({"provider": entry["api"], "model": entry["model"]})
    messages = [Message(role=m["role"], content=m["content"]) for m in entry["messages"]]
    return sum(raw_estimate(limits, entry["system"], messages).values())


def _rows(api: str) -> list[tuple[int, int]]:
    return [(_raw(e), e["input_tokens"]) for e in RECORDED if e["api"] == api]


def _calibrated(rows: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Each request estimated after calibrating on all the others of its API."""
    out = []
    for index, (raw, reported) in enumerate(rows):
        calibration = Calibration()
        for other, (r, t) in enumerate(rows):
            if other != index:
                calibration.observe("m", r, t)
        out.append((math.ceil(raw * calibration.factor("m")), reported))
    return out


def _error(rows: list[tuple[int, int]]) -> list[float]:
    return [abs(estimate - reported) / reported for estimate, reported in rows]


def table() -> str:
    """The docs table: per API, requests, the error of the summed estimate, the median and
    largest error of one request (raw, and calibrated on the other requests)."""
    lines = [
        "| API | requests | tokens reported | sum error | median error | largest error "
        "| median, calibrated | largest, calibrated |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for api in APIS:
        rows = _rows(api)
        total = sum(t for _, t in rows)
        summed = abs(sum(r for r, _ in rows) - total) / total
        raw, cal = _error(rows), _error(_calibrated(rows))
        lines.append(
            f"| {api} | {len(rows)} | {total} | {summed:.1%} | {statistics.median(raw):.1%} "
            f"| {max(raw):.1%} | {statistics.median(cal):.1%} | {max(cal):.1%} |"
        )
    return "\n".join(lines)


@pytest.mark.parametrize("api", APIS)
def test_estimates_are_within_ten_percent_of_reported_usage(api: str) -> None:
    rows = _rows(api)
    assert len(rows) >= 15
    total = sum(t for _, t in rows)
    assert abs(sum(r for r, _ in rows) - total) <= 0.10 * total
    assert statistics.median(_error(rows)) <= 0.10
    assert statistics.median(_error(_calibrated(rows))) <= 0.10


def test_calibration_moves_estimates_toward_reported_usage() -> None:
    calibration = Calibration()
    assert calibration.factor("openai:gpt-4o") == 1.0
    calibration.observe("openai:gpt-4o", 100, 120)
    calibration.observe("openai:gpt-4o", 300, 330)
    assert calibration.factor("openai:gpt-4o") == pytest.approx(450 / 400)
    calibration.observe("openai:gpt-4o", 100, None)  # no usage reported: nothing learned
    assert calibration.factor("openai:gpt-4o") == pytest.approx(450 / 400)


def test_the_docs_table_is_current() -> None:
    docs = (Path(__file__).parents[2] / "docs" / "context.md").read_text(encoding="utf-8")
    assert table() in docs, "update the table in docs/context.md:\n" + table()
