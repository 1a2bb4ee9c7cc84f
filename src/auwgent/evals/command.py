"""``auwgent eval`` and the dataset half of ``auwgent check``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from auwgent.compiler.diagnostics import Diagnostic
from auwgent.compiler.pipeline import CompileResult, compile_project
from auwgent.console import display_path
from auwgent.project import Project

from .check import check_dataset
from .dataset import Dataset, load_dataset
from .files import dataset_files

__all__ = ["agent_documents", "check_datasets", "load_datasets"]


def agent_documents(result: CompileResult) -> dict[str, Mapping[str, Any]]:
    """Agent name -> its IR document."""
    return {str(doc["root"]): doc for doc in result.documents.values()}


def load_datasets(paths: list[Path]) -> tuple[list[Dataset], list[Diagnostic]]:
    """Read every dataset file; the shape diagnostics of all of them."""
    datasets, problems = [], []
    for path in paths:
        dataset, found = load_dataset(path, display_path(path))
        datasets.append(dataset)
        problems += found
    return datasets, problems


def check_datasets(project: Project, report: CompileResult) -> CompileResult:
    """``report`` with the diagnostics of the project's datasets added (none: ``report``)."""
    paths = dataset_files(project.evals)
    if not paths or not report.ok:
        return report
    full = compile_project(project.files, project.source_root, display=display_path)
    datasets, problems = load_datasets(paths)
    docs = agent_documents(full)
    for dataset in datasets:
        problems += check_dataset(dataset, docs)
    return CompileResult(
        report.documents,
        report.diagnostics + tuple(problems),
        report.files + len(paths),
        report.agents,
        report.sources,
    )
