"""Running the ``test`` blocks of ``.agent`` files (``auwgent test``).

Each test builds its agent from the compiled IR with the runtime itself, on a
:class:`~auwgent.testing.ScriptedModel` that plays the test's ``model { }`` replies (in the
protocol the answering agent speaks) or on a replayed :class:`~auwgent.testing.Cassette`.
Tools return what the test's ``tools { }`` says, or a value made from their declared return
type; every execution is recorded. The run's final intents are then compared with ``expect``.
A run that ends with an ``error`` intent fails unless the test expects an error.
"""

from __future__ import annotations

import asyncio
import json
import time
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from auwgent._records import field, record
from auwgent.compiler import collect_tests, compile_project, parse, render_all, use_color
from auwgent.console import EXIT_ERRORS, EXIT_OK, EXIT_USAGE, display_path, plural
from auwgent.errors import ConfigError
from auwgent.project import load_project
from auwgent.runtime.agent import agent_from_ir
from auwgent.runtime.config import api_key_field, models_in_use
from auwgent.runtime.evaluate.schema import example_value
from auwgent.runtime.protocol.native import function_name
from auwgent.runtime.providers.offline import structured_reply
from auwgent.runtime.providers.scripted import ScriptedModel, block_text
from auwgent.testing.dsl_ts import TsRuntimeError, find_runtime, run_tests_ts

__all__ = [
    "RUNTIMES",
    "TestOutcome",
    "project_tests",
    "run_command",
    "run_test",
    "run_tests",
    "vector_outcome",
]

#: The runtimes ``auwgent test --runtime`` runs the tests on.
RUNTIMES = ("python", "ts")

_CALL_KINDS = {"tool": "tool_call", "workflow": "workflow_call", "helper": "helper_call"}


@record(frozen=False)
class TestOutcome:
    """One test's result: ``problems`` is empty when it passed."""

    name: str
    file: str
    line: int
    problems: list[str] = field(default_factory=list)
    intents: list[tuple[str, Any, str]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return not self.problems

    def report(self) -> str:
        """The failure text: what was expected, and the intents the run really emitted."""
        lines = [f"{self.file}:{self.line}: test {self.name!r} failed"]
        lines += [f"  expected: {p}" for p in self.problems]
        lines.append("  actual intents:")
        lines += [f"    {_shown(n, v, a)}" for n, v, a in self.intents] or ["    (none)"]
        return "\n".join(lines)


def _shown(name: str, value: Any, agent: str) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)
    if len(text) > 160:
        text = text[:157] + "..."
    return f"{name} {text}" + (f"  ({agent})" if agent else "")


# -- the agent's surface ---------------------------------------------------------------------


def _kinds(doc: Mapping[str, Any]) -> dict[str, str]:
    """Callable name → its call intent kind, across the document's agents."""
    kinds: dict[str, str] = {}
    for agent in doc["agents"].values():
        for tool in agent["tools"]:
            kinds.setdefault(tool["name"], "tool_call")
        for workflow in agent["workflows"]:
            kinds.setdefault(workflow["name"], "workflow_call")
            for tool in workflow.get("tools", ()):
                kinds.setdefault(tool["name"], "tool_call")
        for use in agent["helpers"]:
            kinds.setdefault(use["name"], "helper_call")
    return kinds


def _tools(doc: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    tools: dict[str, Mapping[str, Any]] = {}
    for agent in doc["agents"].values():
        for tool in agent["tools"]:
            tools.setdefault(tool["name"], tool)
        for workflow in agent["workflows"]:
            for tool in workflow.get("tools", ()):
                tools.setdefault(tool["name"], tool)
    return tools


class _Executions:
    """Tool implementations that return the test's values and record every execution."""

    def __init__(self, doc: Mapping[str, Any], results: Mapping[str, Any]) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.impls: dict[str, Any] = {}
        for name, tool in _tools(doc).items():
            result = (
                results[name] if name in results else example_value(tool["returns"], doc["types"])
            )
            self.impls[name] = self._impl(name, result)

    def _impl(self, name: str, result: Any) -> Any:
        def implementation(**kwargs: Any) -> Any:
            self.calls.append((name, kwargs))
            return result

        return implementation


# -- the scripted model ------------------------------------------------------------------------


def _script(replies: Sequence[Mapping[str, Any]], kinds: Mapping[str, str]) -> Any:
    queue = list(replies)

    def answer(request: Any) -> Any:
        if not queue:
            return ScriptedModel.fail("the test's `model { }` has no reply left for this call")
        reply = queue.pop(0)
        native = bool(request.functions) or request.response_schema is not None
        if reply["kind"] == "call":
            kind = kinds.get(reply["name"], "tool_call")
            if native:
                return ScriptedModel.call(function_name(kind, reply["name"]), reply["args"])  # type: ignore[arg-type]
            return block_text(kind, reply["name"], reply["args"])
        if reply["kind"] == "say":
            text = str(reply["text"])
            return text if native else block_text("response_text", None, text)
        return structured_reply(request, request.contract, reply["value"], native)

    return answer


# -- one test ----------------------------------------------------------------------------------


async def run_test(spec: Mapping[str, Any], doc: Mapping[str, Any], root: Path) -> TestOutcome:
    """Run one test spec (``auwgent.compiler.testspec``) against its agent's IR ``doc``."""
    outcome = TestOutcome(spec["name"], spec.get("shown", spec["file"]), spec["line"])
    started = time.perf_counter()
    executions = _Executions(doc, spec["tools"])
    config: dict[str, Any] = {"tools": executions.impls, "context": spec["context"]}
    if spec["config"]:
        config["config"] = spec["config"]
    if spec["persona"]:
        config["persona"] = spec["persona"]
    cassette = None
    if spec["replies"] is not None:
        config["provider"] = ScriptedModel(_script(spec["replies"], _kinds(doc)))
    else:
        from auwgent.testing.cassette import Cassette, CassetteMiss

        try:
            cassette = Cassette((root / spec["file"]).parent / spec["cassette"])
        except (OSError, CassetteMiss) as exc:  # no file, or not a cassette
            outcome.problems.append(str(exc))
            return outcome
        config["httpClient"] = cassette
        config["apiKeys"] = {api_key_field(m): "test-key" for m in models_in_use(doc)}
    try:
        agent = agent_from_ir(doc, config)
        agent.on_intent(
            lambda name, value, agent_name: outcome.intents.append((name, value, agent_name))
        )
        session = await agent.run(spec["input"])
        await agent.aclose()
    except Exception as exc:  # a test must report, never crash the runner
        outcome.problems.append(f"the agent could not run: {type(exc).__name__}: {exc}")
        return outcome
    if cassette is not None:
        outcome.problems += [str(miss) for miss in cassette.misses]
    output = session["turns"][-1].get("output")
    outcome.problems += _compare(spec["expects"], outcome.intents, executions.calls, output)
    outcome.seconds = time.perf_counter() - started
    return outcome


def vector_outcome(spec: Mapping[str, Any], doc: Mapping[str, Any]) -> dict[str, Any]:
    """What a ``test_blocks`` conformance vector pins of one test: its problems and intents."""
    outcome = asyncio.run(run_test(spec, doc, Path(".")))
    return {"problems": outcome.problems, "intents": [list(i) for i in outcome.intents]}


def _compare(
    expects: Sequence[Mapping[str, Any]],
    intents: Sequence[tuple[str, Any, str]],
    calls: Sequence[tuple[str, dict[str, Any]]],
    output: Any,
) -> list[str]:
    executed = list(calls) + [
        (value.get("name") or value.get("type") or "", value.get("args") or {})
        for name, value, _ in intents
        if name in ("workflow_result", "helper_result") and isinstance(value, Mapping)
    ]
    texts = [str(v.get("text", "")) for n, v, _ in intents if n == "response_text"]
    errors = [
        str(v.get("message") or v.get("error") or v)
        for n, v, _ in intents
        if n in ("error", "tool_error") and isinstance(v, Mapping)
    ]
    problems: list[str] = []
    for expect in expects:
        kind = expect["kind"]
        if kind in ("called", "not_called"):
            hit = any(
                name == expect["name"] and _subset(expect["args"] or {}, args)
                for name, args in executed
            )
            shown = expect["name"] + (f"({_args(expect['args'])})" if expect["args"] else "")
            if kind == "called" and not hit:
                problems.append(f"called {shown}")
            elif kind == "not_called" and hit:
                problems.append(f"not called {shown}")
        elif kind == "text":
            if not any(expect["contains"] in t for t in texts):
                problems.append(f"text contains {json.dumps(expect['contains'])}")
        elif kind == "output":
            if not _subset(expect["value"], output):
                problems.append(f"output {json.dumps(expect['value'], sort_keys=True)}")
        elif kind == "error":
            wanted = expect["contains"]
            if not any(wanted is None or wanted in e for e in errors):
                problems.append("error" + (f" contains {json.dumps(wanted)}" if wanted else ""))
        elif kind == "intent":
            if not any(
                n == expect["name"] and _subset(expect["fields"] or {}, v) for n, v, _ in intents
            ):
                fields = expect["fields"]
                problems.append(
                    f"intent {expect['name']}" + (f" {json.dumps(fields)}" if fields else "")
                )
    if not any(e["kind"] == "error" for e in expects):
        problems += [f"no error, but the run reported: {e}" for e in errors if e]
    return problems


def _args(args: Mapping[str, Any]) -> str:
    return ", ".join(f"{k} = {json.dumps(v, ensure_ascii=False)}" for k, v in args.items())


def _subset(expected: Any, actual: Any) -> bool:
    """``expected`` matches ``actual``: equal, or (for objects) every expected key matches."""
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(
            k in actual and _subset(v, actual[k]) for k, v in expected.items()
        )
    if isinstance(expected, (int, float)) and not isinstance(expected, bool):
        return (
            isinstance(actual, (int, float))
            and not isinstance(actual, bool)
            and (expected == actual)
        )
    return bool(expected == actual)


# -- a whole project ---------------------------------------------------------------------------


async def run_tests(
    specs: Sequence[Mapping[str, Any]], docs: Mapping[str, Mapping[str, Any]], root: Path
) -> list[TestOutcome]:
    """Run every spec against the document of its agent (``docs``: agent name → IR)."""
    outcomes = []
    for spec in specs:
        doc = docs.get(spec["agent"])
        if doc is None:  # pragma: no cover - the checker refuses unknown agents
            outcomes.append(
                TestOutcome(spec["name"], spec["file"], spec["line"], [f"agent {spec['agent']}"])
            )
            continue
        outcomes.append(await run_test(spec, doc, root))
    return outcomes


# -- the command -------------------------------------------------------------------------------


def project_tests(result: Any, pattern: str | None = None) -> list[dict[str, Any]]:
    """The ``test`` blocks of a compiled project (``result``: ``compile_project``'s), those
    whose name contains ``pattern`` (case-insensitive) when one is given."""
    specs = [
        {**spec, "shown": source.path}  # the path as diagnostics show it
        for rel, source in result.sources.items()
        if "test" in source.text
        for spec in collect_tests(parse(source)[0], rel)
    ]
    if pattern:
        specs = [s for s in specs if pattern.lower() in s["name"].lower()]
    return specs


def _outcome(item: Mapping[str, Any]) -> TestOutcome:
    """One outcome as the TypeScript runner wrote it."""
    return TestOutcome(
        str(item["name"]),
        str(item["file"]),
        int(item["line"]),
        [str(p) for p in item["problems"]],
        [(str(n), v, str(a)) for n, v, a in item["intents"]],
        float(item["seconds"]),
    )


def run_command(
    path: Path,
    pattern: str | None,
    junit: Path | None,
    *,
    out: TextIO,
    err: TextIO,
    runtime: str = "python",
) -> int:
    """``auwgent test [PATH] [-k PATTERN] [--junit FILE] [--runtime python|ts]``; returns the
    exit code."""
    if runtime not in RUNTIMES:
        print(f"error: --runtime: expected one of {', '.join(RUNTIMES)}, got {runtime!r}", file=err)
        return EXIT_USAGE
    try:
        project = load_project(path)
        runner = find_runtime(project.root) if runtime == "ts" else None
    except (ConfigError, TsRuntimeError) as exc:
        print(f"error: {exc}", file=err)
        return EXIT_USAGE
    result = compile_project(project.files, project.source_root, display=display_path)
    if result.diagnostics:
        print(render_all(result.diagnostics, color=use_color(err)), file=err)
    if not result.ok:
        print(f"the sources have {plural(len(result.errors), 'error')}; no test ran", file=err)
        return EXIT_ERRORS
    specs = project_tests(result, pattern)
    docs = {doc["root"]: doc for doc in result.documents.values()}
    started = time.perf_counter()
    if runner is None:
        outcomes = asyncio.run(run_tests(specs, docs, project.source_root))
    else:
        try:
            found = run_tests_ts(specs, docs, project.source_root, runner)
            outcomes = [_outcome(item) for item in found]
        except TsRuntimeError as exc:
            print(f"error: {exc}", file=err)
            return EXIT_ERRORS
    for outcome in outcomes:
        mark = "PASS" if outcome.passed else "FAIL"
        print(f"{mark} {outcome.file}:{outcome.line} {outcome.name}", file=out)
        if not outcome.passed:
            print(outcome.report(), file=out)
    failed = sum(1 for o in outcomes if not o.passed)
    elapsed = time.perf_counter() - started
    print(f"{len(outcomes) - failed} passed, {failed} failed in {elapsed:.2f} s", file=out)
    if junit is not None:
        write_junit(junit, outcomes, elapsed)
    return EXIT_ERRORS if failed else EXIT_OK


def write_junit(path: Path, outcomes: Sequence[TestOutcome], elapsed: float) -> None:
    """A JUnit XML report (one ``testsuite``, one ``testcase`` per test)."""
    failed = sum(1 for o in outcomes if not o.passed)
    suite = ET.Element(
        "testsuite",
        name="auwgent",
        tests=str(len(outcomes)),
        failures=str(failed),
        errors="0",
        time=f"{elapsed:.3f}",
    )
    for outcome in outcomes:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=outcome.file,
            name=outcome.name,
            file=outcome.file,
            line=str(outcome.line),
            time=f"{outcome.seconds:.3f}",
        )
        if not outcome.passed:
            failure = ET.SubElement(case, "failure", message="; ".join(outcome.problems))
            failure.text = outcome.report()
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)
