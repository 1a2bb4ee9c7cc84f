"""The workflow interpreter, driven by the cases in ``tests/data/workflows/*.json``.

Each case holds a workflow's IR, its arguments and context, a script of tool calls (the tool,
the arguments the interpreter must pass, the location, and the result to return or the message
to raise), and the expected return value or error message. The script doubles as the expected
call list: every scripted call must happen, in order, and no other.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from auwgent.errors import ToolError, WorkflowError
from auwgent.runtime.evaluate.expr import json_equal
from auwgent.runtime.evaluate.workflows import run_workflow
from golden import UPDATE

CASES = sorted((Path(__file__).parents[2] / "data" / "workflows").glob("*.json"))


class Script:
    """A fake engine: checks each call against the script and plays back its outcome."""

    def __init__(self, steps: list[dict[str, Any]]) -> None:
        self.steps = steps
        self.calls: list[dict[str, Any]] = []

    async def __call__(self, tool: str, args: dict[str, Any], loc: tuple[int, int]) -> Any:
        self.calls.append({"tool": tool, "args": args, "loc": list(loc)})
        assert len(self.calls) <= len(self.steps), f"unexpected extra call {self.calls[-1]}"
        step = self.steps[len(self.calls) - 1]
        assert self.calls[-1] == {k: step[k] for k in ("tool", "args", "loc")}
        if "raise" in step:
            raise RuntimeError(step["raise"])
        return step["result"]


def test_there_are_cases() -> None:
    assert len(CASES) >= 30


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
async def test_workflow_case(path: Path) -> None:
    case = json.loads(path.read_text(encoding="utf-8"))
    script = Script(case["script"])
    try:
        outcome = {
            "return": await run_workflow(
                case["workflow"], case["args"], ctx=case["ctx"], call_tool=script
            )
        }
    except WorkflowError as exc:
        assert exc.file == case["workflow"]["source"]
        outcome = {"error": str(exc)}
    if UPDATE:
        # Only the outcome is regenerated; the script (calls and tool results) is the input.
        path.write_text(
            json.dumps({**case, "expect": outcome}, indent=2, ensure_ascii=False) + "\n",
            encoding="utf-8",
        )
        return
    expect = case["expect"]
    assert outcome.keys() == expect.keys(), outcome
    if "error" in expect:
        assert outcome["error"] == expect["error"]
    else:
        assert json_equal(outcome["return"], expect["return"]), outcome
    assert script.calls == [{k: s[k] for k in ("tool", "args", "loc")} for s in script.steps]


def _workflow(body: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": "w", "params": [], "body": body, "source": "a.agent", "loc": [1, 1]}


def _call(tool: str) -> dict[str, Any]:
    return {"e": "call", "tool": tool, "args": [], "loc": [3, 7]}


async def test_tool_failure_keeps_the_original_exception_as_cause() -> None:
    boom = ValueError("bad input")

    async def call_tool(tool: str, args: dict[str, Any], loc: tuple[int, int]) -> Any:
        raise boom

    with pytest.raises(WorkflowError) as caught:
        await run_workflow(
            _workflow([{"s": "expr", "value": _call("t"), "loc": [3, 1]}]),
            {},
            ctx={},
            call_tool=call_tool,
        )
    assert caught.value.__cause__ is boom
    assert caught.value.line == 3
    assert str(caught.value) == "a.agent:3: tool 't' failed: ValueError: bad input"


async def test_auwgent_errors_from_the_engine_read_without_their_class_name() -> None:
    async def call_tool(tool: str, args: dict[str, Any], loc: tuple[int, int]) -> Any:
        raise ToolError("tool 't' has no implementation")

    with pytest.raises(
        WorkflowError, match=r"^a.agent:3: tool 't' failed: tool 't' has no implementation$"
    ):
        await run_workflow(
            _workflow([{"s": "expr", "value": _call("t"), "loc": [3, 1]}]),
            {},
            ctx={},
            call_tool=call_tool,
        )


async def test_a_nested_workflow_error_passes_through_unchanged() -> None:
    inner = WorkflowError("division by zero", file="other.agent", line=42)

    async def call_tool(tool: str, args: dict[str, Any], loc: tuple[int, int]) -> Any:
        raise inner

    with pytest.raises(WorkflowError) as caught:
        await run_workflow(
            _workflow([{"s": "return", "value": _call("sub"), "loc": [3, 1]}]),
            {},
            ctx={},
            call_tool=call_tool,
        )
    assert caught.value is inner


async def test_unknown_argument_is_refused() -> None:
    async def call_tool(tool: str, args: dict[str, Any], loc: tuple[int, int]) -> Any:
        raise AssertionError("no call expected")

    with pytest.raises(WorkflowError, match="has no parameter 'x'"):
        await run_workflow(_workflow([]), {"x": 1}, ctx={}, call_tool=call_tool)


def test_cases_hold_valid_ir() -> None:
    """The hand-written workflows follow the IR's own JSON Schema (src/auwgent/ir/schema.json)."""
    from jsonschema import Draft202012Validator

    import auwgent.ir

    ir_schema = json.loads(
        (Path(auwgent.ir.__file__).parent / "schema.json").read_text(encoding="utf-8")
    )
    validator = Draft202012Validator({"$defs": ir_schema["$defs"], "$ref": "#/$defs/Workflow"})
    for path in CASES:
        errors = [
            e.message
            for e in validator.iter_errors(json.loads(path.read_text(encoding="utf-8"))["workflow"])
        ]
        assert errors == [], path.name
