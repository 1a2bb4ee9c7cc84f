"""``auwgent eval``: check the datasets, run their cases, print and write the reports."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal, TextIO

from auwgent._records import field, record
from auwgent.compiler import compile_project, render_all, use_color
from auwgent.console import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, display_path
from auwgent.errors import ConfigError
from auwgent.project import load_project

from .check import agent_documents, check_dataset, load_datasets
from .dataset import Dataset
from .files import dataset_files
from .report import (
    REPORT_VERSION,
    compare,
    failures,
    table,
    to_json,
    variance,
    write_html,
    write_junit,
)
from .runner import Mode, Runner
from .scorers import CustomScorer, load_custom

__all__ = ["EvalArgs", "run_eval"]


@record(frozen=False)
class EvalArgs:
    """What ``auwgent eval`` was asked (see docs/evals.md)."""

    project: Path = Path(".")
    datasets: list[Path] = field(default_factory=list)
    mode: Mode = "offline"
    concurrency: int = 4
    repeat: int = 1
    json: Path | None = None
    junit: Path | None = None
    html: Path | None = None
    baseline: Path | None = None
    tolerance: float = 0.0
    scorers: list[str] = field(default_factory=list)


def _progress(err: TextIO) -> Callable[[int, int, str], None] | None:
    if not err.isatty():
        return None

    def show(done: int, total: int, name: str) -> None:
        end = "\n" if done == total else ""
        print(f"\r\x1b[K[{done}/{total}] {name}", end=end, file=err, flush=True)

    return show


def _custom_scorers(datasets: list[Dataset], extra: list[str]) -> dict[str, CustomScorer]:
    """The dataset's ``scorers`` and ``--scorers module:function`` (named by the function)."""
    found: dict[str, CustomScorer] = {}
    for target in extra:
        found[target.partition(":")[2]] = load_custom(target, Path.cwd())
    for dataset in datasets:
        for name, target in dataset.scorers.items():
            found[name] = load_custom(target, dataset.path.parent)
    return found


def run_eval(args: EvalArgs, *, out: TextIO, err: TextIO) -> int:
    """``auwgent eval``: 0 every case passed and nothing regressed, 1 a failure or a
    regression, 2 the command could not run as asked."""
    try:
        project = load_project(args.project)
    except ConfigError as exc:
        print(f"error: {exc}", file=err)
        return EXIT_USAGE
    paths = [p.resolve() for p in args.datasets] or dataset_files(project.evals)
    missing = [p for p in paths if not p.is_file()]
    if missing or not paths:
        where = display_path(missing[0]) if missing else display_path(project.evals or project.root)
        print(f"error: {where}: no dataset there", file=err)
        return EXIT_USAGE
    result = compile_project(project.files, project.source_root, display=display_path)
    datasets, problems = load_datasets(paths)
    docs = agent_documents(result)
    try:
        custom = _custom_scorers(datasets, args.scorers) if not problems else {}
    except ConfigError as exc:
        print(f"error: {exc}", file=err)
        return EXIT_USAGE
    for dataset in datasets:
        problems += check_dataset(dataset, docs, custom) if result.ok else []
    diagnostics = [*result.diagnostics, *problems]
    if diagnostics:
        print(render_all(diagnostics, color=use_color(err)), file=err)
    if not result.ok or any(d.is_error for d in problems):
        print("the sources or datasets have errors; no case ran", file=err)
        return EXIT_ERRORS
    baseline = _read_baseline(args.baseline, err)
    if baseline is False:
        return EXIT_USAGE
    runner = Runner(docs, args.mode, custom, args.concurrency, args.repeat, _progress(err))
    results = asyncio.run(runner.run(datasets))
    report = to_json(results, args.mode, args.repeat)
    regressions = compare(report, baseline, args.tolerance) if baseline else []
    _print(report, regressions, out)
    _write(args, report, regressions)
    return EXIT_ERRORS if report["failed"] or regressions else EXIT_OK


def _read_baseline(path: Path | None, err: TextIO) -> Mapping[str, Any] | None | Literal[False]:
    if path is None:
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"error: --baseline {display_path(path)}: cannot read it: {exc}", file=err)
        return False
    if not isinstance(data, dict) or data.get("version") != REPORT_VERSION:
        print(
            f"error: --baseline {display_path(path)}: not an `auwgent eval --json` result "
            f"(version {REPORT_VERSION})",
            file=err,
        )
        return False
    return data


def _print(report: Mapping[str, Any], regressions: list[str], out: TextIO) -> None:
    for line in failures(report):
        print(line, file=out)
    print(table(report), file=out)
    for line in variance(report):
        print(f"variance {line}", file=out)
    for line in regressions:
        print(f"REGRESSION {line}", file=out)
    print(
        f"{report['passed']} passed, {report['failed']} failed"
        + (f", {len(regressions)} regressed" if regressions else ""),
        file=out,
    )


def _write(args: EvalArgs, report: Mapping[str, Any], regressions: list[str]) -> None:
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        data = {**report, "regressions": regressions}
        args.json.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
    if args.junit is not None:
        write_junit(args.junit, report)
    if args.html is not None:
        write_html(args.html, report, regressions)
