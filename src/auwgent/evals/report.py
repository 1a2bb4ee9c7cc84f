"""What an eval run writes: the table, JSON, JUnit XML, HTML, and the baseline comparison."""

from __future__ import annotations

import difflib
import html
import json
import statistics
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .runner import CaseResult

__all__ = ["REPORT_VERSION", "compare", "table", "to_json", "write_html", "write_junit"]

REPORT_VERSION = 1


def _case_json(result: CaseResult) -> dict[str, Any]:
    return {
        "dataset": result.dataset,
        "id": result.case.id,
        "tags": result.case.tags,
        "input": result.case.input,
        "passed": result.passed,
        "error": result.error,
        "text": result.text,
        "output": result.output,
        "tokens": statistics.fmean(result.tokens) if result.tokens else 0,
        "seconds": statistics.fmean(result.seconds) if result.seconds else 0.0,
        "scores": {
            name: {
                **runs[-1].to_json(),
                "score": result.mean(name),
                "passed": all(s.passed for s in runs),
                "runs": [s.score for s in runs],
                "stdev": result.stdev(name),
            }
            for name, runs in sorted(result.scores.items())
        },
    }


def summaries(results: Sequence[CaseResult]) -> dict[str, dict[str, Any]]:
    """Per scorer: cases, pass rate, mean score, mean tokens and seconds of its cases."""
    found: dict[str, dict[str, Any]] = {}
    for name in sorted({n for r in results for n in r.scores}):
        having = [r for r in results if name in r.scores]
        found[name] = {
            "cases": len(having),
            "pass_rate": sum(all(s.passed for s in r.scores[name]) for r in having) / len(having),
            "mean_score": statistics.fmean(r.mean(name) for r in having),
            "tokens": statistics.fmean(statistics.fmean(r.tokens or [0]) for r in having),
            "seconds": statistics.fmean(statistics.fmean(r.seconds or [0.0]) for r in having),
        }
    return found


def to_json(results: Sequence[CaseResult], mode: str, repeat: int) -> dict[str, Any]:
    """The whole run as JSON (what ``--json`` writes and ``--baseline`` reads)."""
    return {
        "version": REPORT_VERSION,
        "mode": mode,
        "repeat": repeat,
        "passed": sum(r.passed for r in results),
        "failed": sum(not r.passed for r in results),
        "scorers": summaries(results),
        "cases": [_case_json(r) for r in results],
    }


def table(report: Mapping[str, Any]) -> str:
    """The per-scorer table printed after a run."""
    rows = [("scorer", "cases", "pass rate", "mean score", "tokens", "time")]
    for name, s in report["scorers"].items():
        rows.append(
            (
                name,
                str(s["cases"]),
                f"{s['pass_rate']:.0%}",
                f"{s['mean_score']:.3f}",
                f"{s['tokens']:.0f}",
                f"{s['seconds'] * 1000:.0f} ms",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(r, widths, strict=True))
        )
        for r in rows
    )


def failures(report: Mapping[str, Any]) -> list[str]:
    """One line per failed case: its scorers that failed and why."""
    lines = []
    for case in report["cases"]:
        if case["passed"]:
            continue
        why = [case["error"]] if case["error"] else []
        why += [
            f"{n}: {s['detail'] or 'failed'}" for n, s in case["scores"].items() if not s["passed"]
        ]
        lines.append(f"FAIL {case['dataset']}/{case['id']}: " + "; ".join(why))
    return lines


def variance(report: Mapping[str, Any]) -> list[str]:
    """Per case and scorer whose score varied between repeats: mean and standard deviation."""
    return [
        f"{c['dataset']}/{c['id']} {n}: mean {s['score']:.3f}, stdev {s['stdev']:.3f}, runs {s['runs']}"
        for c in report["cases"]
        for n, s in c["scores"].items()
        if s["stdev"] > 0
    ]


def compare(report: Mapping[str, Any], baseline: Mapping[str, Any], tolerance: float) -> list[str]:
    """The regressions against ``baseline``: a case that passed and now fails, or a score
    that dropped by more than ``tolerance``."""
    before = {(c["dataset"], c["id"]): c for c in baseline.get("cases", ())}
    found = []
    for case in report["cases"]:
        old = before.get((case["dataset"], case["id"]))
        if old is None:
            continue
        name = f"{case['dataset']}/{case['id']}"
        if old["passed"] and not case["passed"]:
            found.append(f"{name}: passed in the baseline, fails now")
        for scorer, score in case["scores"].items():
            was = old.get("scores", {}).get(scorer)
            if was is not None and was["score"] - score["score"] > tolerance:
                found.append(
                    f"{name}: {scorer} dropped from {was['score']:.3f} to {score['score']:.3f}"
                )
    return found


def write_junit(path: Path, report: Mapping[str, Any]) -> None:
    """One ``testsuite`` per dataset, one ``testcase`` per case."""
    root = ET.Element("testsuites", name="auwgent eval")
    by_dataset: dict[str, list[Mapping[str, Any]]] = {}
    for case in report["cases"]:
        by_dataset.setdefault(case["dataset"], []).append(case)
    for dataset, cases in by_dataset.items():
        suite = ET.SubElement(
            root,
            "testsuite",
            name=dataset,
            tests=str(len(cases)),
            failures=str(sum(not c["passed"] for c in cases)),
            time=f"{sum(c['seconds'] for c in cases):.3f}",
        )
        for case in cases:
            element = ET.SubElement(
                suite, "testcase", classname=dataset, name=case["id"], time=f"{case['seconds']:.3f}"
            )
            if not case["passed"]:
                line = failures({"cases": [case]})[0]
                ET.SubElement(element, "failure", message=line).text = json.dumps(
                    case["scores"], indent=2, default=str
                )
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


_STYLE = """body{font:14px system-ui,sans-serif;margin:2em}table{border-collapse:collapse}
td,th{border:1px solid #ccc;padding:4px 8px}.pass{color:#070}.fail{color:#b00}
pre{background:#f6f6f6;padding:6px;white-space:pre-wrap}.add{background:#dfd}.del{background:#fdd}
details{margin:6px 0}"""


def _diff(expected: Any, actual: Any) -> str:
    def lines(value: Any) -> list[str]:
        text = (
            value
            if isinstance(value, str)
            else json.dumps(value, indent=2, sort_keys=True, default=str)
        )
        return str(text).splitlines()

    out = []
    for line in difflib.ndiff(lines(expected), lines(actual)):
        if line.startswith("?"):
            continue
        kind = {"+": "add", "-": "del"}.get(line[:1], "")
        out.append(f'<span class="{kind}">{html.escape(line)}</span>')
    return "<pre>" + "\n".join(out) + "</pre>"


def write_html(path: Path, report: Mapping[str, Any], regressions: Sequence[str]) -> None:
    """A single self-contained page: the table, regressions, and each case with its diffs
    (``-`` expected, ``+`` actual) and the judge's request."""
    rows = "".join(
        f"<tr><td>{html.escape(n)}</td><td>{s['cases']}</td><td>{s['pass_rate']:.0%}</td>"
        f"<td>{s['mean_score']:.3f}</td><td>{s['tokens']:.0f}</td>"
        f"<td>{s['seconds'] * 1000:.0f} ms</td></tr>"
        for n, s in report["scorers"].items()
    )
    parts = [
        f"<!doctype html><meta charset=utf-8><title>auwgent eval</title><style>{_STYLE}</style>",
        f"<h1>auwgent eval</h1><p>{report['passed']} passed, {report['failed']} failed "
        f"({html.escape(report['mode'])}, repeat {report['repeat']})</p>",
        "<table><tr><th>scorer</th><th>cases</th><th>pass rate</th><th>mean score</th>"
        f"<th>tokens</th><th>time</th></tr>{rows}</table>",
    ]
    if regressions:
        items = "".join(f"<li>{html.escape(r)}</li>" for r in regressions)
        parts.append(f"<h2 class=fail>Regressions</h2><ul>{items}</ul>")
    parts.append("<h2>Cases</h2>")
    for case in report["cases"]:
        mark = "pass" if case["passed"] else "fail"
        body = [f"<p>input: {html.escape(case['input'])}</p>"]
        if case["error"]:
            body.append(f"<p class=fail>{html.escape(case['error'])}</p>")
        for name, score in case["scores"].items():
            sm = "pass" if score["passed"] else "fail"
            body.append(
                f"<h4 class={sm}>{html.escape(name)}: {score['score']:.3f} "
                f"{html.escape(score['detail'])}</h4>" + _diff(score["expected"], score["actual"])
            )
            if "request" in score:
                body.append(
                    "<pre>" + html.escape(json.dumps(score["request"], indent=2)) + "</pre>"
                )
        parts.append(
            f"<details{' open' if mark == 'fail' else ''}><summary class={mark}>"
            f"{mark.upper()} {html.escape(case['dataset'])}/{html.escape(case['id'])}</summary>"
            + "".join(body)
            + "</details>"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(parts) + "\n", encoding="utf-8")
