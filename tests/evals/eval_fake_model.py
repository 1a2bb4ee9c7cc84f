"""A deterministic stand-in for Gemini, served by ``FakeGeminiServer``, to record the example
eval datasets' cassettes (there is no network here).

It reads each request like a small rule-based model speaking the block protocol:

- a judge's request (its system prompt starts "You grade") gets a verdict: score 1 when the
  answer names a capitalised word of the user's input (a place, a person, a company) or a
  number from it, else 0;
- the weather agent, when its prompt tells it to use its tools, calls the tool the question
  asks for (forecast, humidity, a record to delete, "where I am", else the weather), then
  answers with the tool's result; with a prompt that does not, it answers without looking;
- the extraction agent answers a ``[schema: Person]`` or ``[schema: Organisation]`` block
  from "my name is ... I am N years old" or "I work at X, a Y company".

Re-record the examples' cassettes with ``python tests/evals/eval_fake_model.py``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from auwgent.testing.fake_servers import FakeGeminiServer, RecordedRequest, Turn, text

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _texts(request: RecordedRequest) -> tuple[str, list[str]]:
    body = request.body or {}
    system = "".join(p.get("text", "") for p in body.get("systemInstruction", {}).get("parts", ()))
    said = [
        "".join(p.get("text", "") for p in content.get("parts", ()))
        for content in body.get("contents", ())
    ]
    return system, said


def _block(kind: str, name: str | None, fields: dict[str, Any] | str) -> str:
    header = f"[{kind}: {name}]" if name else f"[{kind}]"
    if isinstance(fields, str):
        inner = fields
    else:
        inner = "\n".join(
            f"{k}: {v if isinstance(v, str) else json.dumps(v)}" for k, v in fields.items()
        )
    return f"{header}\n{inner}\n[/{kind}]" if inner else f"{header}\n[/{kind}]"


def _judge(said: list[str]) -> str:
    question, _, answer = said[0].partition("Assistant answer:")
    question = question.removeprefix("User input:")
    words = re.findall(r"\b[A-Z][a-z]{2,}\b|\b\d+\b", question)
    words = [w for w in words if w not in ("What", "How", "Will", "Delete", "Please", "The")]
    hit = any(w in answer for w in words) if words else bool(answer.strip())
    reason = "the answer speaks to the question" if hit else "the answer ignores the question"
    return json.dumps({"score": 1 if hit else 0, "reason": reason})


def _place(question: str) -> str:
    found = re.search(r"\b(?:in|for|at)\s+([A-Z][a-z]+(?:\s[A-Z][a-z]+)?)", question)
    return found.group(1) if found else "Accra"


def _weather_call(question: str) -> str:
    lower = question.lower()
    record = re.search(r"record\s+(\d+)", lower)
    if record:
        return _block("workflow_call", "delete_record", {"id": int(record.group(1))})
    if "where i am" in lower or re.search(r"\bhere\b", lower):
        return _block("workflow_call", "weather_here", {})
    if "threshold" in lower:
        value = re.search(r"(\d+)", lower)
        return _block(
            "workflow_call", "check_value", {"value": int(value.group(1)) if value else 0}
        )
    if "forecast" in lower:
        days = re.search(r"(\d+)\s*days?", lower)
        args = {"location": _place(question), "days": int(days.group(1)) if days else 3}
        return _block("tool_call", "get_forecast", args)
    if "humid" in lower:
        return _block("tool_call", "get_humidity", {"location": _place(question)})
    return _block("tool_call", "get_weather", {"location": _place(question)})


def _weather(system: str, said: list[str]) -> str:
    question = said[0]
    if "Use your tools" not in system:
        return _block("response_text", None, "I think it is probably fine outside.")
    if len(said) == 1:
        return _weather_call(question)
    lines = said[-1].splitlines()
    result = next((line[len("result: ") :] for line in lines if line.startswith("result: ")), "")
    try:
        value = json.loads(result)
    except ValueError:
        value = result
    shown = ", ".join(map(str, value.values())) if isinstance(value, dict) else str(value)
    if lines and lines[0].startswith("[tool_result"):
        shown = f"{_place(question)}: {shown}"
    return _block("response_text", None, shown)


def _extraction(said: list[str]) -> str:
    question = said[0]
    name = re.search(r"[Mm]y name is ([A-Z][\w]+(?: [A-Z][\w]+)*)", question)
    age = re.search(r"(\d+) years? old", question)
    if name:
        return _block(
            "schema", "Person", {"name": name.group(1), "age": int(age.group(1)) if age else 0}
        )
    company = re.search(r"work (?:at|for) ([A-Z][\w&]*(?: [A-Z][\w&]*)*),? an? ([\w-]+)", question)
    if company:
        return _block(
            "schema",
            "Organisation",
            {"company_name": company.group(1), "industry": company.group(2)},
        )
    return _block("schema", "Person", {"name": "unknown", "age": 0})


def answer(request: RecordedRequest) -> Turn:
    """The reply to one request (see the module docstring)."""
    system, said = _texts(request)
    if system.startswith("You grade"):
        return text(_judge(said))
    if "Person or Organisation" in system:
        return text(_extraction(said))
    return text(_weather(system, said))


@contextmanager
def fake_gemini() -> Iterator[dict[str, str]]:
    """The fake model running; yields the environment that points Gemini at it."""
    with FakeGeminiServer(answer) as server:
        yield {**os.environ, "GEMINI_BASE_URL": server.base_url, "GEMINI_API_KEY": "fake-key"}


def record(project: Path) -> subprocess.CompletedProcess[str]:
    """``auwgent eval --record`` in ``project`` against the fake model."""
    with fake_gemini() as env:
        return subprocess.run(
            [sys.executable, "-m", "auwgent", "eval", "--record"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )


if __name__ == "__main__":
    for folder in ("weather", "extraction"):
        done = record(EXAMPLES / folder)
        print(done.stdout, done.stderr)
