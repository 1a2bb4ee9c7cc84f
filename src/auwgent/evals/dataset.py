"""Eval datasets: reading ``evals/*.yaml`` / ``*.jsonl`` with the position of every value.

A YAML dataset is a mapping with ``cases`` (a list) and optional dataset-wide keys; a JSONL
dataset has one case per line, and a line ``{"dataset": {...}}`` gives the dataset-wide keys.
Both are read through PyYAML's ``compose`` (JSON lines too: JSON is YAML), so each value keeps
its place in the file, and every mistake becomes a located :class:`Diagnostic` (``E2201``)
instead of an exception. The keys are described in docs/evals.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from auwgent._records import field, record
from auwgent.compiler import Diagnostic, SourceFile, Span, error, suggest
from auwgent.runtime.parts import InputError, Part, check_input

__all__ = [
    "CASE_KEYS",
    "DATASET_KEYS",
    "EXPECT_KEYS",
    "Case",
    "Dataset",
    "load_dataset",
]

Key = tuple[str | int, ...]
_PLAIN_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("str", "int", "float", "bool", "null", "map", "seq")
)

DATASET_KEYS = ("agent", "cases", "cassettes", "judges", "scorers", "tools")
CASE_KEYS = ("id", "input", "agent", "context", "config", "tools", "expect", "tags")
#: Each key of a case's ``expect`` is one scorer (docs/evals.md, "Scorers").
EXPECT_KEYS = (
    "output",
    "normalised",
    "contains",
    "not_contains",
    "regex",
    "json",
    "schema",
    "calls",
    "not_called",
    "max_tokens",
    "max_seconds",
    "judge",
    "custom",
)


@record(frozen=False)
class Case:
    """One case of a dataset; ``key`` is its place in the file (for :meth:`Dataset.span`)."""

    id: str
    input: str | list[Part]
    agent: str | None
    key: Key
    context: dict[str, Any] = field(default_factory=dict)
    config: str | None = None
    tools: dict[str, Any] = field(default_factory=dict)
    expect: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)


@record(frozen=False)
class Dataset:
    """A dataset file, read; ``spans`` maps a key path (``("cases", 3, "expect")``) to its
    value's place, ``key_spans`` to the place of the mapping key itself."""

    path: Path
    source: SourceFile
    agent: str | None = None
    cassettes: Path | None = None
    judges: dict[str, dict[str, Any]] = field(default_factory=dict)
    scorers: dict[str, str] = field(default_factory=dict)
    tools: dict[str, Any] = field(default_factory=dict)
    cases: list[Case] = field(default_factory=list)
    spans: dict[Key, Span] = field(default_factory=dict)
    key_spans: dict[Key, Span] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.path.stem

    def span(self, key: Key, *, of_key: bool = False) -> Span:
        """The place of the value at ``key`` (or of its mapping key), else of its nearest
        parent that has one."""
        table = self.key_spans if of_key else self.spans
        while key:
            if key in table:
                return table[key]
            key = key[:-1]
        return self.spans.get((), Span(0, 0))

    def error(self, message: str, key: Key, *, of_key: bool = False, **extra: Any) -> Diagnostic:
        """An ``E2201`` (shape) diagnostic, or another code given as ``code=``."""
        code = extra.pop("code", "E2201")
        return error(code, message, self.source, self.span(key, of_key=of_key), **extra)


# -- reading ---------------------------------------------------------------------------------


class _Reader:
    """YAML nodes to plain values, recording every value's span under its key path."""

    def __init__(self, dataset: Dataset, offset: int = 0) -> None:
        self.dataset = dataset
        self.offset = offset
        self.problems: list[Diagnostic] = []

    def value(self, node: yaml.Node, key: Key) -> Any:
        span = Span(node.start_mark.index + self.offset, node.end_mark.index + self.offset)
        self.dataset.spans[key] = span
        if node.tag == "tag:yaml.org,2002:timestamp":  # a date stays the text written
            return node.value
        if node.tag not in _PLAIN_TAGS:  # `!!python/...` and the like: refused, never run
            shown = node.tag.replace("tag:yaml.org,2002:", "!!")
            message = f"the tag `{shown}` is not allowed: a dataset holds plain data"
            self.problems.append(error("E2201", message, self.dataset.source, span))
            return None
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, key)
        if isinstance(node, yaml.SequenceNode):
            return [self.value(item, (*key, i)) for i, item in enumerate(node.value)]
        return self._scalar(node)

    def _scalar(self, node: yaml.Node) -> Any:
        try:
            return yaml.constructor.SafeConstructor().construct_object(node)
        except (yaml.constructor.ConstructorError, ValueError) as exc:  # e.g. `!!int many`
            span = Span(node.start_mark.index + self.offset, node.end_mark.index + self.offset)
            problem = exc.problem if isinstance(exc, yaml.MarkedYAMLError) else exc
            message = f"invalid value: {problem}"
            self.problems.append(error("E2201", message, self.dataset.source, span))
            return None

    def _mapping(self, node: yaml.MappingNode, key: Key) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            where = (*key, str(self._scalar(key_node)))
            self.dataset.key_spans[where] = Span(
                key_node.start_mark.index + self.offset, key_node.end_mark.index + self.offset
            )
            name = where[-1]
            if str(name) in out:
                self.problems.append(
                    self.dataset.error(f"`{name}` is given twice", where, of_key=True)
                )
            out[str(name)] = self.value(value_node, where)
        return out


def _compose(text: str, dataset: Dataset, offset: int, reader: _Reader) -> Any:
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        at = (mark.index if mark is not None else 0) + offset
        problem = exc.problem or exc.context or "invalid YAML"
        reader.problems.append(
            error("E2201", f"invalid YAML: {problem}", dataset.source, Span(at, at + 1))
        )
        return None
    except yaml.YAMLError as exc:
        reader.problems.append(error("E2201", f"invalid YAML: {exc}", dataset.source, Span(0, 1)))
        return None
    return None if node is None else reader.value(node, ())


def load_dataset(path: Path, shown: str) -> tuple[Dataset, list[Diagnostic]]:
    """Read one dataset file; the diagnostics say what is wrong with its shape, located."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        dataset = Dataset(path, SourceFile(shown, ""))
        return dataset, [dataset.error(f"cannot read the dataset: {exc}", ())]
    dataset = Dataset(path, SourceFile(shown, text))
    reader = _Reader(dataset)
    if path.suffix == ".jsonl":
        raw = _jsonl(text, dataset, reader)
    else:
        raw = _compose(text, dataset, 0, reader)
    if reader.problems:
        return dataset, reader.problems
    problems = _fill(dataset, raw)
    return dataset, problems


def _jsonl(text: str, dataset: Dataset, reader: _Reader) -> dict[str, Any]:
    """The lines of a JSONL file as one YAML-shaped dataset (``cases`` are the lines)."""
    cases: list[Any] = []
    top: dict[str, Any] = {"cases": cases}
    offset = 0
    for line in text.split("\n"):
        if line.strip():
            sub = Dataset(dataset.path, dataset.source)
            line_reader = _Reader(sub, offset)
            value = _compose(line, sub, offset, line_reader)
            reader.problems += line_reader.problems
            if isinstance(value, dict) and set(value) == {"dataset"}:
                _rekey(dataset, sub, ("dataset",), ())
                if isinstance(value["dataset"], dict):
                    top.update({k: v for k, v in value["dataset"].items() if k != "cases"})
            else:
                _rekey(dataset, sub, (), ("cases", len(cases)))
                cases.append(value)
        offset += len(line) + 1
    dataset.spans[()] = Span(0, min(1, len(text)))
    return top


def _rekey(dataset: Dataset, sub: Dataset, drop: Key, prefix: Key) -> None:
    for table, into in ((sub.spans, dataset.spans), (sub.key_spans, dataset.key_spans)):
        for key, span in table.items():
            if key[: len(drop)] == drop:
                into[(*prefix, *key[len(drop) :])] = span


# -- the shape -------------------------------------------------------------------------------


def _unknown(
    dataset: Dataset, keys: dict[str, Any], allowed: tuple[str, ...], at: Key, what: str
) -> list[Diagnostic]:
    problems = []
    for key in keys:
        if key not in allowed:
            hint = suggest(key, allowed)
            problems.append(
                dataset.error(
                    f"unknown {what} key `{key}`",
                    (*at, key),
                    of_key=True,
                    help=f"did you mean `{hint}`?"
                    if hint
                    else "expected one of " + ", ".join(f"`{k}`" for k in allowed),
                )
            )
    return problems


def _mapping(
    dataset: Dataset, value: Any, key: Key, what: str, problems: list[Diagnostic]
) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.append(dataset.error(f"{what}: expected a mapping, got {_kind(value)}", key))
        return {}
    return value


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "nothing" if value is None else "a mapping"


def _fill(dataset: Dataset, raw: Any) -> list[Diagnostic]:
    problems: list[Diagnostic] = []
    top = _mapping(dataset, raw, (), "the dataset", problems)
    problems += _unknown(dataset, top, DATASET_KEYS, (), "dataset")
    dataset.agent = _optional_string(dataset, top, (), "agent", problems)
    cassettes = _optional_string(dataset, top, (), "cassettes", problems)
    dataset.cassettes = dataset.path.parent / (cassettes or f"cassettes/{dataset.name}")
    dataset.tools = _mapping(dataset, top.get("tools"), ("tools",), "tools", problems)
    scorers = _mapping(dataset, top.get("scorers"), ("scorers",), "scorers", problems)
    for name, target in scorers.items():
        if not isinstance(target, str) or ":" not in target:
            problems.append(
                dataset.error(
                    f'scorers.{name}: expected "module:function", got {_kind(target)}',
                    ("scorers", name),
                )
            )
        else:
            dataset.scorers[name] = target
    judges = _mapping(dataset, top.get("judges"), ("judges",), "judges", problems)
    for name, judge in judges.items():
        where = ("judges", name)
        spec = _mapping(dataset, judge, where, f"judges.{name}", problems)
        problems += _unknown(dataset, spec, ("model", "rubric", "threshold"), where, "judge")
        if not isinstance(spec.get("model"), str) or not isinstance(spec.get("rubric"), str):
            problems.append(
                dataset.error(f"judges.{name}: needs `model` (a model's name) and `rubric`", where)
            )
        else:
            dataset.judges[name] = spec
    cases = top.get("cases")
    if not isinstance(cases, list):
        problems.append(dataset.error("the dataset needs `cases`: a list of cases", ("cases",)))
        return problems
    seen: dict[str, Key] = {}
    for index, raw_case in enumerate(cases):
        case = _case(dataset, raw_case, ("cases", index), problems)
        if case is None:
            continue
        if case.id in seen:
            problems.append(dataset.error(f"case id `{case.id}` is used twice", (*case.key, "id")))
        seen[case.id] = case.key
        dataset.cases.append(case)
    return problems


def _optional_string(
    dataset: Dataset, data: dict[str, Any], at: Key, key: str, problems: list[Diagnostic]
) -> str | None:
    value = data.get(key)
    if value is not None and not isinstance(value, str):
        problems.append(
            dataset.error(f"`{key}`: expected a string, got {_kind(value)}", (*at, key))
        )
        return None
    return value


def _case(dataset: Dataset, raw: Any, key: Key, problems: list[Diagnostic]) -> Case | None:
    data = _mapping(dataset, raw, key, "a case", problems)
    if not data:
        return None
    problems += _unknown(dataset, data, CASE_KEYS, key, "case")
    if "input" not in data:
        problems.append(
            dataset.error("the case needs `input`: the user's text or a list of parts", key)
        )
        return None
    try:
        text = check_input(data["input"], "`input`")
    except InputError as problem:  # the runtime's own check of parts (docs/parts.md)
        problems.append(dataset.error(str(problem), (*key, "input")))
        return None
    case_id = data.get("id", f"case-{key[-1]}")
    tags = data.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        problems.append(dataset.error("`tags`: expected a list of strings", (*key, "tags")))
        tags = []
    expect = _mapping(dataset, data.get("expect"), (*key, "expect"), "expect", problems)
    problems += _unknown(dataset, expect, EXPECT_KEYS, (*key, "expect"), "expect")
    return Case(
        id=str(case_id),
        input=text,
        agent=_optional_string(dataset, data, key, "agent", problems) or dataset.agent,
        key=key,
        context=_mapping(dataset, data.get("context"), (*key, "context"), "context", problems),
        config=_optional_string(dataset, data, key, "config", problems),
        tools={
            **dataset.tools,
            **_mapping(dataset, data.get("tools"), (*key, "tools"), "tools", problems),
        },
        expect=expect,
        tags=tags,
    )
