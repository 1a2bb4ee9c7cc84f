"""The engine's two central objects stay small (docs/architecture.md, "The run's phases"):
a run's phases live in their own modules (model call, budgets, memory, calls, approvals,
taint, context budget), so ``Run`` holds the state of one run and the order of its phases,
and ``AgentCore`` the document's views and contracts. A feature that grows either past
these bounds belongs in a collaborator of its own."""

from __future__ import annotations

import ast
from pathlib import Path

RUNTIME = Path(__file__).resolve().parent.parent / "src" / "auwgent" / "runtime"

RUN_MAX_LINES = 400
METHOD_MAX_LINES = 40
CORE_MAX_ATTRIBUTES = 12


def _class(path: Path, name: str) -> ast.ClassDef:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    raise AssertionError(f"{path.name} defines no class {name}")


def _lines(node: ast.AST) -> int:
    return int(node.end_lineno or 0) - int(getattr(node, "lineno", 0)) + 1


def _attributes(cls: ast.ClassDef) -> set[str]:
    """The attributes ``cls`` declares in its body or assigns on ``self``."""
    names = {
        n.target.id
        for n in cls.body
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)
    }
    for node in ast.walk(cls):
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        for target in targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
                if target.value.id == "self":
                    names.add(target.attr)
    return names


def test_run_is_the_order_of_its_phases() -> None:
    run = _class(RUNTIME / "engine.py", "Run")
    assert _lines(run) < RUN_MAX_LINES
    long = {
        f.name: _lines(f)
        for f in run.body
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and _lines(f) > METHOD_MAX_LINES
    }
    assert long == {}


def test_agent_core_keeps_views_and_contracts() -> None:
    attributes = _attributes(_class(RUNTIME / "core.py", "AgentCore"))
    assert len(attributes) < CORE_MAX_ATTRIBUTES, sorted(attributes)


def test_the_measures_count_what_they_say(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "class C:\n    x: int\n    def __init__(self):\n        self.a = 1\n        self.b: int = 2\n"
        "        self.a += 1\n",
        encoding="utf-8",
    )
    cls = _class(source, "C")
    assert _attributes(cls) == {"x", "a", "b"}
    assert _lines(cls) == 6
