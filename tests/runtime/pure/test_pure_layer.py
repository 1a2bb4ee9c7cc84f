"""The pure evaluators (``auwgent.runtime.evaluate``) import nothing else of the runtime.

Every import of every module there counts, those inside functions and under
``if TYPE_CHECKING:`` too: the evaluators are functions of the IR and of values, so that they
can be read, tested and compared with another runtime's without a run, an agent or a provider.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import auwgent.runtime.evaluate as evaluate

PACKAGE = Path(evaluate.__file__).parent
MODULES = sorted(PACKAGE.glob("*.py"))


def runtime_imports(source: str) -> list[str]:
    """The ``auwgent.runtime`` modules outside ``evaluate`` that ``source`` imports."""
    names: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names += [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
    return [
        name
        for name in names
        if name.startswith("auwgent.runtime")
        and name not in ("auwgent.runtime", "auwgent.runtime.evaluate")
        and not name.startswith("auwgent.runtime.evaluate.")
    ]


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_an_evaluator_imports_no_other_runtime_module(path: Path) -> None:
    assert runtime_imports(path.read_text(encoding="utf-8")) == []


def test_the_rule_sees_every_kind_of_import() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from auwgent.runtime.engine import Run\n"
        "def f():\n    import auwgent.runtime.agent\n"
        "from auwgent.runtime import calls\n"
        "from auwgent.runtime.evaluate import expr\n"
    )
    assert sorted(runtime_imports(source)) == [
        "auwgent.runtime.agent",
        "auwgent.runtime.calls",
        "auwgent.runtime.engine",
        "auwgent.runtime.engine.Run",
    ]
    assert len(MODULES) == 5
