"""The conformance vectors of ``conformance/``, run through the Python runtime.

The TypeScript runtime runs the same files (``ts/test/conformance.test.mjs``). Both check that
the ids they ran are exactly those of ``conformance/manifest.json``, so a vector that only one
runtime would run fails both suites.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from auwgent.testing.conformance import GROUPS, run_vector

ROOT = Path(__file__).resolve().parents[2] / "conformance"


def _vectors() -> list[tuple[str, dict[str, Any]]]:
    return [
        (group, vector)
        for group in GROUPS
        for vector in json.loads((ROOT / f"{group}.json").read_text(encoding="utf-8"))
    ]


VECTORS = _vectors()


def test_the_vectors_are_exactly_the_manifest() -> None:
    manifest = json.loads((ROOT / "manifest.json").read_text(encoding="utf-8"))
    assert list(manifest) == list(GROUPS)
    ran = {group: [v["id"] for g, v in VECTORS if g == group] for group in GROUPS}
    assert ran == manifest
    assert len(VECTORS) >= 150
    print(f"conformance: {len(VECTORS)} vectors (python)")


@pytest.mark.parametrize(("group", "vector"), VECTORS, ids=[v["id"] for _, v in VECTORS])
def test_vector(group: str, vector: dict[str, Any]) -> None:
    assert run_vector(group, vector) == vector["expected"]
