"""Running the cases of datasets: on the offline model, or through one cassette per case.

Each case builds its agent from the IR with the runtime (as ``auwgent test`` does); its tools
return the case's ``tools`` values (else a value of their declared return type) and every
execution is recorded. ``mode`` is ``"offline"`` (the offline model, no network), ``"replay"``
(answers from ``<cassettes>/<case id>.json``; a request it lacks fails the case) or
``"record"`` (the real provider, at ``<PROVIDER>_BASE_URL`` when that is set, written to the
cassette). The judge's requests go through the same cassette.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import statistics
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from auwgent._records import field, record
from auwgent.errors import AuwgentError
from auwgent.runtime.agent import agent_from_ir
from auwgent.runtime.config import api_key_env, api_key_field, models_in_use, resolve_base_url
from auwgent.runtime.evaluate.schema import example_value
from auwgent.runtime.parts import input_text
from auwgent.runtime.policy import RetryPolicy, Timeouts
from auwgent.runtime.providers.base import Message, ModelRequest, TextDelta
from auwgent.runtime.providers.factory import make_provider
from auwgent.testing.cassette import Cassette

from .check import model_names
from .dataset import Case, Dataset
from .scorers import CustomScorer, Observed, Score, score_expectations

__all__ = ["CaseResult", "Mode", "Runner"]

Mode = Literal["offline", "replay", "record"]
_JUDGE_SYSTEM = (
    "You grade the answer of an AI assistant against a rubric. Reply with JSON only: "
    '{"score": <a number from 0 to 1>, "reason": "<one sentence>"}.\nRubric: '
)


@record(frozen=False)
class CaseResult:
    """A case's scores over its runs (``runs`` > 1 with ``--repeat``)."""

    dataset: str
    case: Case
    scores: dict[str, list[Score]] = field(default_factory=dict)
    tokens: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    text: str = ""
    output: Any = None
    error: str | None = None

    @property
    def passed(self) -> bool:
        return self.error is None and all(s.passed for runs in self.scores.values() for s in runs)

    def mean(self, name: str) -> float:
        return statistics.fmean(s.score for s in self.scores[name])

    def stdev(self, name: str) -> float:
        values = [s.score for s in self.scores[name]]
        return statistics.pstdev(values) if len(values) > 1 else 0.0


class _Tools:
    """Implementations that return the case's values and record every execution."""

    def __init__(self, doc: Mapping[str, Any], results: Mapping[str, Any]) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.impls: dict[str, Callable[..., Any]] = {}
        for agent in doc["agents"].values():
            tools = list(agent["tools"])
            for workflow in agent["workflows"]:
                tools += workflow.get("tools", ())
            for tool in tools:
                value = results.get(tool["name"])
                if tool["name"] not in results:
                    value = example_value(tool["returns"], doc["types"])
                self.impls.setdefault(tool["name"], self._impl(tool["name"], value))

    def _impl(self, name: str, value: Any) -> Callable[..., Any]:
        def implementation(**kwargs: Any) -> Any:
            self.calls.append((name, kwargs))
            return value

        return implementation


@record(frozen=False)
class Runner:
    """What every case of a run shares."""

    docs: Mapping[str, Mapping[str, Any]]
    mode: Mode
    custom: Mapping[str, CustomScorer]
    concurrency: int = 4
    repeat: int = 1
    progress: Callable[[int, int, str], None] | None = None
    done: int = 0

    async def run(self, datasets: list[Dataset]) -> list[CaseResult]:
        gate = asyncio.Semaphore(max(1, self.concurrency))
        jobs = [(d, c) for d in datasets for c in d.cases]

        async def one(dataset: Dataset, case: Case) -> CaseResult:
            async with gate:
                result = await self.case(dataset, case)
            self.done += 1
            if self.progress is not None:
                self.progress(self.done, len(jobs), f"{dataset.name}/{case.id}")
            return result

        return list(await asyncio.gather(*(one(d, c) for d, c in jobs)))

    async def case(self, dataset: Dataset, case: Case) -> CaseResult:
        result = CaseResult(dataset.name, case)
        for index in range(self.repeat):
            path = (dataset.cassettes or dataset.path.parent) / (
                f"{case.id}.json" if index == 0 else f"{case.id}.{index}.json"
            )
            try:
                await self._once(dataset, case, path, result)
            except Exception as exc:  # scoring broke: the case fails with the reason
                result.error = f"the case could not be scored: {type(exc).__name__}: {exc}"
        return result

    async def _once(self, dataset: Dataset, case: Case, path: Path, result: CaseResult) -> None:
        doc = self.docs[str(case.agent)]
        tools = _Tools(doc, case.tools)
        config: dict[str, Any] = {"tools": tools.impls, "context": dict(case.context)}
        if case.config:
            config["config"] = case.config
        try:
            client = self._client(path)
        except (OSError, ValueError, AuwgentError) as exc:  # no cassette, or a broken one
            result.error = f"the agent could not run: {exc}"
            return
        if client is None:
            config["provider"] = "offline"
        else:
            config["httpClient"] = client
            if self.mode == "replay":
                config["apiKeys"] = {api_key_field(m): "test-key" for m in models_in_use(doc)}
        intents: list[tuple[str, Any]] = []
        started = time.perf_counter()
        try:
            agent = agent_from_ir(doc, config)
            agent.on_intent(lambda name, value, _agent: _heard(name, value, intents, tools.calls))
            session = await agent.run(case.input)
            await agent.aclose()
        except Exception as exc:  # a case reports, never crashes the run
            result.error = f"the agent could not run: {type(exc).__name__}: {exc}"
            if client is not None:
                await client.aclose()
            return
        seconds = time.perf_counter() - started
        observed = _observed(doc, session, intents, tools.calls, seconds)
        case_json = {"id": case.id, "input": case.input, "context": case.context, "tags": case.tags}
        scores = score_expectations(case.expect, observed, case_json, self.custom)
        for name in _names(case.expect.get("judge")):
            scores.append(await self._judge(dataset, name, case, observed, client))
        if client is not None:
            misses = list(getattr(client, "misses", ()))
            await client.aclose()
            if misses:
                result.error = str(misses[0])
        if observed.error and result.error is None:
            result.error = observed.error
        for score in scores:
            result.scores.setdefault(score.name, []).append(score)
        result.tokens.append(observed.tokens)
        result.seconds.append(seconds)
        result.text, result.output = observed.text, observed.output

    def _client(self, path: Path) -> Cassette | None:
        """The case's cassette (``None``: the offline model)."""
        if self.mode == "offline":
            return None
        if self.mode == "record":
            path.parent.mkdir(parents=True, exist_ok=True)
        return Cassette(path, self.mode)

    async def _judge(
        self, dataset: Dataset, name: str, case: Case, observed: Observed, client: Any
    ) -> Score:
        spec = dataset.judges[name]
        label = f"judge:{name}"
        system = _JUDGE_SYSTEM + str(spec["rubric"])
        user = f"User input:\n{input_text(case.input)}\n\nAssistant answer:\n{_shown(observed)}"
        request = {"model": spec["model"], "system": system, "user": user}
        if client is None:
            return Score(
                label,
                0.0,
                False,
                "a judge needs a model: run with --record or --replay",
                request=request,
            )
        try:
            reply = await _ask(
                model_names(self.docs)[spec["model"]], system, user, client, self.mode
            )
        except Exception as exc:  # the judge failing fails its score, never the run
            return Score(
                label, 0.0, False, f"the judge failed: {type(exc).__name__}: {exc}", request=request
            )
        request["reply"] = reply
        found = re.search(r"\{.*\}", reply, re.DOTALL)
        try:
            verdict = json.loads(found.group(0)) if found else {}
            score = float(verdict["score"])
        except (ValueError, TypeError, KeyError):
            return Score(
                label,
                0.0,
                False,
                f"the judge's reply is not a verdict: {reply[:200]}",
                request=request,
            )
        threshold = float(spec.get("threshold", 0.5))
        score = min(1.0, max(0.0, score))
        return Score(
            label,
            score,
            score >= threshold,
            str(verdict.get("reason", "")),
            threshold,
            score,
            request,
        )


def _names(value: Any) -> list[str]:
    if value is None:
        return []
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _shown(observed: Observed) -> str:
    if observed.output is not None and not isinstance(observed.output, str):
        return json.dumps(observed.output, ensure_ascii=False, sort_keys=True)
    return observed.text


async def _ask(model: Mapping[str, Any], system: str, user: str, client: Any, mode: Mode) -> str:
    """One request to ``model`` through ``client``; the reply's text."""
    found = (os.environ[name] for name in api_key_env(model) if os.environ.get(name))
    key = "test-key" if mode == "replay" else next(found, None)
    provider = make_provider(
        model,
        api_key=key,
        base_url=resolve_base_url(model, {}),
        client=client,
        retry=RetryPolicy(),
        timeouts=Timeouts(),
    )
    request = ModelRequest(
        model=str(model["model"]), system=system, messages=(Message("user", user),)
    )
    parts = [e.text async for e in provider.stream(request) if isinstance(e, TextDelta)]
    return "".join(parts)


def _heard(
    name: str,
    value: Any,
    intents: list[tuple[str, Any]],
    calls: list[tuple[str, dict[str, Any]]],
) -> None:
    """Keep every intent; a workflow or helper call joins the tool executions in the order
    things happened (its own scoped tools run after it)."""
    intents.append((name, value))
    if name in ("workflow_call", "helper_call") and isinstance(value, Mapping):
        calls.append(
            (str(value.get("type") or value.get("name") or ""), dict(value.get("args") or {}))
        )


def _observed(
    doc: Mapping[str, Any],
    session: Mapping[str, Any],
    intents: list[tuple[str, Any]],
    calls: list[tuple[str, dict[str, Any]]],
    seconds: float,
) -> Observed:
    texts = [str(v.get("text", "")) for n, v in intents if n == "response_text"]
    errors = [
        str(v.get("message") or v.get("error") or v)
        for n, v in intents
        if n == "error" and isinstance(v, Mapping)
    ]
    usage = session.get("usage") or {}
    agent = doc["agents"][doc["root"]]
    return Observed(
        text="\n".join(texts),
        output=session["turns"][-1].get("output"),
        calls=list(calls),
        tokens=int(usage.get("total_tokens") or 0),
        seconds=seconds,
        error=errors[0] if errors else None,
        output_type=agent["output"],
        types=doc["types"],
    )
