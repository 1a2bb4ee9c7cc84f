"""Datasets against the compiled agents: what ``auwgent check`` says about ``evals/``.

Codes (docs/checker.md, "Eval datasets"): ``E2201`` the dataset's shape, ``E2202`` an unknown
agent, ``E2203`` an unknown named config, ``E2204`` context (a required field left out, an
unknown field, a value of the wrong type), ``E2205`` an unknown tool, ``E2206`` an expected
output that does not fit the agent's declared output, ``E2207`` an unknown judge, judge model
or custom scorer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from auwgent.compiler import CompileResult, Diagnostic, compile_project, suggest
from auwgent.console import display_path
from auwgent.project import Project
from auwgent.runtime.evaluate.schema import validate

from .dataset import Case, Dataset, Key, load_dataset
from .files import dataset_files
from .jsonpath import OPERATORS, PathError, is_predicate, parse

__all__ = [
    "agent_documents",
    "callable_names",
    "check_dataset",
    "check_with_datasets",
    "load_datasets",
    "model_names",
]

_STRUCTURED_SCORERS = ("json",)


def callable_names(doc: Mapping[str, Any]) -> set[str]:
    """Every tool, workflow, scoped tool and helper the document's agents can call."""
    names: set[str] = set()
    for agent in doc["agents"].values():
        names.update(t["name"] for t in agent["tools"])
        for workflow in agent["workflows"]:
            names.add(workflow["name"])
            names.update(t["name"] for t in workflow.get("tools", ()))
        names.update(h["name"] for h in agent["helpers"])
    return names


def model_names(docs: Mapping[str, Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """The models the project's agents use, by name (a judge names one of these)."""
    found: dict[str, Mapping[str, Any]] = {}
    for doc in docs.values():
        for agent in doc["agents"].values():
            for config in agent["configs"].values():
                for model in [config.get("model"), *(config.get("fallback") or ())]:
                    if isinstance(model, Mapping) and model.get("name"):
                        found.setdefault(str(model["name"]), model)
    return found


def _did_you_mean(name: str, options: list[str]) -> str:
    hint = suggest(name, options)
    if hint:
        return f"did you mean `{hint}`?"
    return "expected one of " + ", ".join(f"`{o}`" for o in sorted(options)) if options else ""


def check_dataset(
    dataset: Dataset, docs: Mapping[str, Mapping[str, Any]], custom: Mapping[str, Any] = {}
) -> list[Diagnostic]:
    """Every place where ``dataset`` does not fit the agents (``docs``: agent name -> IR)."""
    problems: list[Diagnostic] = []
    models = model_names(docs)
    for name, judge in dataset.judges.items():
        if judge["model"] not in models:
            problems.append(
                dataset.error(
                    f"judge `{name}`: no model `{judge['model']}` in the project",
                    ("judges", name, "model"),
                    code="E2207",
                    help=_did_you_mean(judge["model"], list(models)),
                )
            )
    if dataset.agent is not None and dataset.agent in docs:
        known = callable_names(docs[dataset.agent])
        problems += [
            dataset.error(
                f"agent `{dataset.agent}` has no tool, workflow or helper `{name}`",
                ("tools", name),
                of_key=True,
                code="E2205",
                help=_did_you_mean(name, sorted(known)),
            )
            for name in dataset.tools
            if name not in known
        ]
    for case in dataset.cases:
        problems += _check_case(dataset, case, docs, custom)
    return problems


def _check_case(
    dataset: Dataset, case: Case, docs: Mapping[str, Mapping[str, Any]], custom: Mapping[str, Any]
) -> list[Diagnostic]:
    if case.agent is None or case.agent not in docs:
        where: Key = (*case.key, "agent") if (*case.key, "agent") in dataset.spans else ("agent",)
        if case.agent is None:
            where = case.key
        message = (
            "the case names no agent (give `agent:` in the case or the dataset)"
            if case.agent is None
            else f"no agent `{case.agent}` in the project"
        )
        return [
            dataset.error(
                message, where, code="E2202", help=_did_you_mean(case.agent or "", list(docs))
            )
        ]
    doc = docs[case.agent]
    agent = doc["agents"][doc["root"]]
    problems = _check_config(dataset, case, agent)
    problems += _check_context(dataset, case, agent, doc["types"])
    problems += _check_tools(dataset, case, doc)
    problems += _check_output(dataset, case, agent, doc["types"])
    problems += _check_scorer_names(dataset, case, custom)
    problems += _check_values(dataset, case)
    return problems


_ORDERS = ("sequence", "set", "exact")


def _predicate_problems(spec: Any) -> list[str]:
    if not is_predicate(spec):
        return []
    return [f"unknown operator `{op}`" for op in spec if op not in OPERATORS]


def _value_problems(key: str, spec: Any) -> list[tuple[Key, str]]:
    """What is wrong with one ``expect`` value, by the key path below it."""
    if key in ("contains", "not_contains", "regex"):
        texts = spec if isinstance(spec, list) else [spec]
        if not all(isinstance(t, str) for t in texts):
            return [((), f"`{key}`: expected a string or a list of strings")]
        if key == "regex":
            return [((), f"`regex`: {_regex_problem(t)}") for t in texts if _regex_problem(t)]
    if key in ("max_tokens", "max_seconds") and (
        isinstance(spec, bool) or not isinstance(spec, (int, float))
    ):
        return [((), f"`{key}`: expected a number")]
    if key == "json":
        if not isinstance(spec, Mapping):
            return [((), "`json`: expected a mapping of JSON path to value or predicate")]
        return [((path,), p) for path, value in spec.items() for p in _path_problems(path, value)]
    if key == "calls":
        return _calls_problems(spec)
    if key == "not_called" and not _names(spec, single=False):
        return [((), "`not_called`: expected a list of names")]
    if key in ("judge", "custom") and not _names(spec, single=True):
        return [((), f"`{key}`: expected a name or a list of names")]
    return []


def _names(spec: Any, *, single: bool) -> bool:
    """``spec`` is a list of names (or, with ``single``, one name)."""
    if single and isinstance(spec, str):
        return True
    return isinstance(spec, list) and all(isinstance(n, str) for n in spec)


def _regex_problem(pattern: str) -> str:
    try:
        re.compile(pattern)
    except re.error as exc:
        return f"not a regular expression: {exc}"
    return ""


def _path_problems(path: str, value: Any) -> list[str]:
    try:
        parse(path)
    except PathError as exc:
        return [str(exc)]
    return _predicate_problems(value)


def _calls_problems(spec: Any) -> list[tuple[Key, str]]:
    calls = spec
    problems: list[tuple[Key, str]] = []
    base: Key = ()
    if isinstance(spec, Mapping):
        calls, base = spec.get("calls"), ("calls",)
        if spec.get("order", "sequence") not in _ORDERS:
            problems.append((("order",), "`order`: expected one of sequence, set, exact"))
    if not isinstance(calls, list):
        return [*problems, (base, "`calls`: expected a list of calls (a name, or {name, args})")]
    for index, call in enumerate(calls):
        if isinstance(call, str):
            continue
        args = call.get("args", {}) if isinstance(call, Mapping) else None
        if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
            problems.append(((*base, index), "a call is a name, or a mapping with `name`"))
        elif not isinstance(args, Mapping):
            problems.append(((*base, index, "args"), "`args`: expected a mapping"))
        else:
            problems += [
                ((*base, index, "args", k), p)
                for k, v in args.items()
                for p in _predicate_problems(v)
            ]
    return problems


def _check_values(dataset: Dataset, case: Case) -> list[Diagnostic]:
    return [
        dataset.error(message, (*case.key, "expect", key, *below))
        for key, spec in case.expect.items()
        for below, message in _value_problems(key, spec)
    ]


def _check_config(dataset: Dataset, case: Case, agent: Mapping[str, Any]) -> list[Diagnostic]:
    if case.config is None or case.config in agent["configs"]:
        return []
    names = list(agent["configs"])
    return [
        dataset.error(
            f"agent `{agent['name']}` has no config `{case.config}`",
            (*case.key, "config"),
            code="E2203",
            help=_did_you_mean(case.config, names),
        )
    ]


def _check_context(
    dataset: Dataset, case: Case, agent: Mapping[str, Any], types: Mapping[str, Any]
) -> list[Diagnostic]:
    problems = []
    fields = {f["name"]: f for f in agent["context"]}
    for name, value in case.context.items():
        where = (*case.key, "context", name)
        if name not in fields:
            problems.append(
                dataset.error(
                    f"agent `{agent['name']}` has no context field `{name}`",
                    where,
                    of_key=True,
                    code="E2204",
                    help=_did_you_mean(name, list(fields)),
                )
            )
            continue
        for problem in validate(value, fields[name]["type"], types, path=f"context.{name}"):
            problems.append(dataset.error(problem, where, code="E2204"))
    missing = [n for n, f in fields.items() if not f["optional"] and n not in case.context]
    if missing:
        where = (*case.key, "context") if (*case.key, "context") in dataset.spans else case.key
        problems.append(
            dataset.error(
                "the case leaves out required context: " + ", ".join(f"`{m}`" for m in missing),
                where,
                code="E2204",
                help=f"add `context: {{{missing[0]}: ...}}` to the case",
            )
        )
    return problems


def _check_tools(dataset: Dataset, case: Case, doc: Mapping[str, Any]) -> list[Diagnostic]:
    known = callable_names(doc)
    named: list[tuple[str, Key, bool]] = [
        (name, (*case.key, "tools", name), True)
        for name in case.tools
        if (*case.key, "tools", name) in dataset.key_spans  # the dataset's own: checked once
    ]
    calls = case.expect.get("calls")
    if isinstance(calls, Mapping):
        calls = calls.get("calls")
    for index, call in enumerate(calls if isinstance(calls, list) else ()):
        called = call.get("name") if isinstance(call, Mapping) else call
        if isinstance(called, str):
            base = (*case.key, "expect", "calls")
            if (*base, "calls") in dataset.spans:
                base = (*base, "calls")
            named.append((called, (*base, index), False))
    not_called = case.expect.get("not_called")
    for index, name in enumerate(not_called if isinstance(not_called, list) else ()):
        if isinstance(name, str):
            named.append((name, (*case.key, "expect", "not_called", index), False))
    return [
        dataset.error(
            f"agent `{doc['root']}` has no tool, workflow or helper `{name}`",
            key,
            of_key=of_key,
            code="E2205",
            help=_did_you_mean(name, sorted(known)),
        )
        for name, key, of_key in named
        if name not in known
    ]


def _check_output(
    dataset: Dataset, case: Case, agent: Mapping[str, Any], types: Mapping[str, Any]
) -> list[Diagnostic]:
    output = agent["output"]
    problems = []
    if "output" in case.expect:
        for problem in validate(case.expect["output"], output, types, path="output"):
            problems.append(
                dataset.error(
                    f"expected output does not fit `{agent['name']}`'s declared output: {problem}",
                    (*case.key, "expect", "output"),
                    code="E2206",
                )
            )
    if output["kind"] == "text":
        for key in _STRUCTURED_SCORERS:
            if key in case.expect:
                problems.append(
                    dataset.error(
                        f"`{key}` checks structured output, but `{agent['name']}` answers in Text",
                        (*case.key, "expect", key),
                        of_key=True,
                        code="E2206",
                    )
                )
    return problems


def _check_scorer_names(
    dataset: Dataset, case: Case, custom: Mapping[str, Any]
) -> list[Diagnostic]:
    problems = []
    for key, known, what in (
        ("judge", dataset.judges, "judge"),
        ("custom", {**dataset.scorers, **custom}, "custom scorer"),
    ):
        value = case.expect.get(key)
        names = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        for index, name in enumerate(names):
            if isinstance(name, str) and name not in known:
                where = (*case.key, "expect", key) + ((index,) if isinstance(value, list) else ())
                problems.append(
                    dataset.error(
                        f"no {what} `{name}` in this dataset",
                        where,
                        code="E2207",
                        help=_did_you_mean(name, list(known)),
                    )
                )
    return problems


# -- the project ---------------------------------------------------------------------------


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


def check_with_datasets(project: Project, *, jobs: int | None = None) -> CompileResult:
    """``auwgent check`` for a project with datasets: the compiler's report (with the IR,
    which the datasets are checked against) plus the datasets' diagnostics. Their shape is
    checked even when the sources have errors; their fit to the agents only when there are
    none (there is no IR to check against then)."""
    paths = dataset_files(project.evals)
    report = compile_project(project.files, project.source_root, display=display_path, jobs=jobs)
    datasets, problems = load_datasets(paths)
    if report.ok:
        docs = agent_documents(report)
        for dataset in datasets:
            problems += check_dataset(dataset, docs)
    return CompileResult(
        report.documents,
        report.diagnostics + tuple(problems),
        report.files + len(paths),
        report.agents,
        report.sources,
    )
