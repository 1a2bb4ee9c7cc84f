"""Scorers: each key of a case's ``expect`` measures one thing about a run (docs/evals.md).

A scorer gives a :class:`Score` between 0 and 1 and says whether the case passed it. The
judge (``judge``) needs a model and lives in :mod:`.runner`; everything here is a pure
function of the case's expectation and the :class:`Observed` run.
"""

from __future__ import annotations

import importlib
import json
import re
import sys
import unicodedata
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, cast

from auwgent._records import field, record
from auwgent.errors import ConfigError
from auwgent.runtime.evaluate.schema import IRType, Types, validate

from .jsonpath import PathError, equal, matches, select

__all__ = ["Observed", "Score", "load_custom", "normalise", "score_expectations"]


@record(frozen=False)
class Observed:
    """What one run of a case produced."""

    text: str
    output: Any
    calls: list[tuple[str, dict[str, Any]]]
    tokens: int
    seconds: float
    error: str | None = None
    output_type: Mapping[str, Any] = field(default_factory=dict)  # an IR type (ir.model.Type)
    types: Types = field(default_factory=dict)


@record(frozen=False)
class Score:
    """One scorer's verdict on one run."""

    name: str
    score: float
    passed: bool
    detail: str = ""
    expected: Any = None
    actual: Any = None
    request: Any = None  # the judge's request, as sent

    def to_json(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "passed": self.passed,
            "detail": self.detail,
            "expected": self.expected,
            "actual": self.actual,
            **({"request": self.request} if self.request is not None else {}),
        }


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _fraction(name: str, hits: list[bool], detail: str, expected: Any, actual: Any) -> Score:
    score = sum(hits) / len(hits) if hits else 1.0
    return Score(name, score, all(hits), "" if all(hits) else detail, expected, actual)


def normalise(text: str) -> str:
    """Case-folded, accents and punctuation dropped, whitespace collapsed."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    kept = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(re.sub(r"[^\w\s]", " ", kept).split())


def _answer(observed: Observed) -> Any:
    return observed.output if observed.output is not None else observed.text


def answer_text(observed: Observed) -> str:
    """The text the text scorers read: the reply's text, else the output as JSON (sorted
    keys)."""
    if observed.text or observed.output is None:
        return observed.text
    if isinstance(observed.output, str):
        return observed.output
    return json.dumps(observed.output, ensure_ascii=False, sort_keys=True)


def _output(spec: Any, observed: Observed) -> Score:
    actual = _answer(observed)
    ok = equal(spec, actual) and (not isinstance(spec, Mapping) or spec == actual)
    return Score("output", float(ok), ok, "" if ok else "the output differs", spec, actual)


def _normalised(spec: Any, observed: Observed) -> Score:
    actual = normalise(answer_text(observed))
    ok = normalise(str(spec)) == actual
    return Score(
        "normalised", float(ok), ok, "" if ok else "differs after normalising", spec, actual
    )


def _contains(spec: Any, observed: Observed) -> Score:
    text = answer_text(observed)
    wanted = [str(s) for s in _as_list(spec)]
    hits = [w in text for w in wanted]
    missing = [w for w, h in zip(wanted, hits, strict=True) if not h]
    return _fraction("contains", hits, f"missing: {missing}", spec, text)


def _not_contains(spec: Any, observed: Observed) -> Score:
    text = answer_text(observed)
    found = [str(s) for s in _as_list(spec) if str(s) in text]
    hits = [str(s) not in text for s in _as_list(spec)]
    return _fraction("not_contains", hits, f"found: {found}", spec, text)


def _regex(spec: Any, observed: Observed) -> Score:
    text = answer_text(observed)
    hits = [re.search(str(p), text) is not None for p in _as_list(spec)]
    return _fraction("regex", hits, "a pattern did not match", spec, text)


def _json(spec: Any, observed: Observed) -> Score:
    hits, failed = [], []
    for path, predicate in dict(spec).items():
        try:
            ok = matches(predicate, select(observed.output, str(path)))
        except PathError as exc:
            return Score("json", 0.0, False, str(exc), spec, observed.output)
        hits.append(ok)
        if not ok:
            failed.append(path)
    return _fraction("json", hits, f"failed: {failed}", spec, observed.output)


def _schema(spec: Any, observed: Observed) -> Score:
    type_ = cast("IRType", observed.output_type)
    problems = validate(_answer(observed), type_, observed.types) if spec else []
    ok = not problems
    return Score("schema", float(ok), ok, "; ".join(problems), None, _answer(observed))


def _call_matches(expected: Any, call: tuple[str, dict[str, Any]]) -> bool:
    name = expected if isinstance(expected, str) else expected.get("name")
    if call[0] != name:
        return False
    args = {} if isinstance(expected, str) else expected.get("args") or {}
    return all(matches(pred, [call[1][k]] if k in call[1] else []) for k, pred in args.items())


def _calls(spec: Any, observed: Observed) -> Score:
    if isinstance(spec, Mapping):
        wanted, order = list(spec.get("calls") or []), str(spec.get("order", "sequence"))
    else:
        wanted, order = list(spec), "sequence"
    calls = observed.calls
    actual = [{"name": n, "args": a} for n, a in calls]
    if order == "exact":
        hits = [i < len(calls) and _call_matches(w, calls[i]) for i, w in enumerate(wanted)] + [
            len(calls) == len(wanted)
        ]
    elif order == "set":
        hits = [any(_call_matches(w, c) for c in calls) for w in wanted]
    else:  # a subsequence, in order
        hits, at = [], 0
        for w in wanted:
            index = next((i for i in range(at, len(calls)) if _call_matches(w, calls[i])), None)
            hits.append(index is not None)
            at = index + 1 if index is not None else at
    return _fraction("calls", hits, f"the calls do not match ({order})", spec, actual)


def _not_called(spec: Any, observed: Observed) -> Score:
    names = {n for n, _ in observed.calls}
    hits = [str(n) not in names for n in _as_list(spec)]
    return _fraction("not_called", hits, "a forbidden call was made", spec, sorted(names))


def _max_tokens(spec: Any, observed: Observed) -> Score:
    ok = observed.tokens <= float(spec)
    return Score("max_tokens", float(ok), ok, "" if ok else "over budget", spec, observed.tokens)


def _max_seconds(spec: Any, observed: Observed) -> Score:
    ok = observed.seconds <= float(spec)
    seconds = round(observed.seconds, 3)
    return Score("max_seconds", float(ok), ok, "" if ok else "too slow", spec, seconds)


_SCORERS: dict[str, Callable[[Any, Observed], Score]] = {
    "output": _output,
    "normalised": _normalised,
    "contains": _contains,
    "not_contains": _not_contains,
    "regex": _regex,
    "json": _json,
    "schema": _schema,
    "calls": _calls,
    "not_called": _not_called,
    "max_tokens": _max_tokens,
    "max_seconds": _max_seconds,
}

CustomScorer = Callable[[Mapping[str, Any], Mapping[str, Any]], Any]


def score_expectations(
    expect: Mapping[str, Any],
    observed: Observed,
    case: Mapping[str, Any],
    custom: Mapping[str, CustomScorer],
) -> list[Score]:
    """The scores of every ``expect`` key but ``judge`` (which the runner scores)."""
    scores = [fn(expect[key], observed) for key, fn in _SCORERS.items() if key in expect]
    for name in _as_list(expect.get("custom", [])):
        scores.append(_custom(str(name), custom[str(name)], case, observed))
    return scores


def _custom(name: str, fn: CustomScorer, case: Mapping[str, Any], observed: Observed) -> Score:
    run = {
        "text": observed.text,
        "output": observed.output,
        "calls": [{"name": n, "args": a} for n, a in observed.calls],
        "tokens": observed.tokens,
        "seconds": observed.seconds,
        "error": observed.error,
    }
    label = f"custom:{name}"
    try:
        result = fn(case, run)
    except Exception as exc:  # a scorer's bug fails its case, never the run
        return Score(label, 0.0, False, f"the scorer raised {type(exc).__name__}: {exc}")
    if isinstance(result, bool):
        return Score(label, float(result), result)
    if isinstance(result, (int, float)):
        return Score(label, float(result), float(result) >= 1.0)
    if isinstance(result, Mapping) and "score" in result:
        score = float(result["score"])
        passed = bool(result.get("passed", score >= 1.0))
        return Score(label, score, passed, str(result.get("detail", "")))
    return Score(label, 0.0, False, f"the scorer returned {type(result).__name__}, not a score")


def load_custom(target: str, base: Path) -> CustomScorer:
    """``module:function`` (the module importable from ``base`` or the path) -> the function."""
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise ConfigError(f'{target!r}: expected a custom scorer as "module:function"')
    if str(base) not in sys.path:
        sys.path.insert(0, str(base))
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(
            f"custom scorer {target!r}: cannot import {module_name!r}: {exc}"
        ) from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise ConfigError(f"custom scorer {target!r}: {module_name} has no function {attr!r}")
    return fn  # type: ignore[no-any-return]
