"""The two lowering mistakes of the first implementation, pinned: argument order and return.

Positional arguments must bind in the tool's declaration order (never alphabetical), and a
``return`` inside an ``if`` must be a real early return in the IR: a ``return`` statement in
the branch body, with the rest of the workflow after the ``if``, not folded into an ``else``.
The last tests run the lowered IR through the runtime's interpreter to show the behaviour.
"""

from __future__ import annotations

from typing import Any

from check_support import assert_valid_ir

from auwgent.compiler.pipeline import compile_sources
from auwgent.runtime.evaluate.workflows import run_workflow

SOURCE = """
agent Main {
    default config {
        model: gemini("gemini-2.5-flash")
        prompt: "Hi."
    }

    tool transfer(to: string, amount: number, from: string, memo?: string): string

    workflow pay(zeta: string, alpha: number, mid: string): string {
        description: "Pays"
        if (alpha > 100) {
            if (zeta == "blocked") {
                return "blocked"
            }
            return "too much"
        }
        let receipt = transfer(zeta, alpha, mid)
        return receipt
    }
}
"""


def _workflow() -> dict[str, Any]:
    result = compile_sources({"main.agent": SOURCE})
    assert result.ok, result.diagnostics
    doc = result.documents["main.agent"]
    assert_valid_ir(doc)
    workflow: dict[str, Any] = doc["agents"]["Main"]["workflows"][0]
    return workflow


def test_workflow_params_keep_declaration_order() -> None:
    assert [p["name"] for p in _workflow()["params"]] == ["zeta", "alpha", "mid"]


def test_positional_call_arguments_bind_in_declaration_order() -> None:
    call = _workflow()["body"][1]["value"]
    assert call["e"] == "call" and call["tool"] == "transfer"
    assert [a["name"] for a in call["args"]] == ["to", "amount", "from"]
    assert [a["value"] for a in call["args"]] == [
        {"e": "name", "name": "zeta"},
        {"e": "name", "name": "alpha"},
        {"e": "name", "name": "mid"},
    ]


def test_return_inside_if_is_an_early_return() -> None:
    body = _workflow()["body"]
    assert [stmt["s"] for stmt in body] == ["if", "let", "return"]
    branch = body[0]["branches"][0]["body"]
    assert body[0]["else"] is None
    assert [stmt["s"] for stmt in branch] == ["if", "return"]
    inner = branch[0]
    assert inner["branches"][0]["body"] == [
        {"s": "return", "loc": [14, 17], "value": {"e": "lit", "value": "blocked"}}
    ]


async def _run(args: dict[str, Any]) -> tuple[Any, list[tuple[str, dict[str, Any]]]]:
    calls: list[tuple[str, dict[str, Any]]] = []

    async def call_tool(name: str, arguments: dict[str, Any], loc: tuple[int, int]) -> Any:
        calls.append((name, dict(arguments)))
        return f"paid {arguments['amount']} to {arguments['to']} from {arguments['from']}"

    value = await run_workflow(_workflow(), args, ctx={}, call_tool=call_tool)
    return value, calls


async def test_early_return_stops_the_workflow_when_run() -> None:
    assert await _run({"zeta": "blocked", "alpha": 500, "mid": "m"}) == ("blocked", [])
    assert await _run({"zeta": "ok", "alpha": 500, "mid": "m"}) == ("too much", [])


async def test_arguments_reach_the_tool_by_parameter_name_when_run() -> None:
    value, calls = await _run({"zeta": "ama", "alpha": 5, "mid": "kofi"})
    assert calls == [("transfer", {"to": "ama", "amount": 5, "from": "kofi"})]
    assert value == "paid 5 to ama from kofi"
