"""Where a project's datasets are; cheap, so that ``auwgent check`` can ask without reading
YAML when there are none."""

from __future__ import annotations

from pathlib import Path

__all__ = ["SUFFIXES", "dataset_files"]

SUFFIXES = (".yaml", ".yml", ".jsonl")


def dataset_files(location: Path | None) -> list[Path]:
    """The dataset files at ``location``: the file itself, or the folder's files (sorted)."""
    if location is None:
        return []
    if location.is_file():
        return [location]
    if not location.is_dir():
        return []
    return sorted(p for p in location.iterdir() if p.suffix in SUFFIXES and p.is_file())
