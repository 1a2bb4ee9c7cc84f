"""The package's import graph: no circles, and every import points down the layers.

Every module under ``src/auwgent`` is parsed with ``ast`` (nothing is imported, so the test
also sees imports inside functions). Module-level and function-level imports count alike;
imports under ``if TYPE_CHECKING:`` are left out, because they never run: they only name
types for the checker. A ``from package import name`` counts as an import of the submodule
when ``name`` is one, else of the package. Importing a submodule is not counted as importing
its parent package's ``__init__`` (Python runs it, but nothing in it is used).

The layers (docs/architecture.md), lowest first; a module may import its own package and any
lower layer, never a higher one and never a sibling on its own layer:

0. ``auwgent._version``, ``auwgent._names``, ``auwgent._records``, ``auwgent.errors``
1. ``auwgent.ir``: the IR contract and the product's vocabulary
2. ``auwgent.compiler``, ``auwgent.codegen``, ``auwgent.runtime`` (siblings: none imports
   another)
3. the build library: ``auwgent.project``, ``generate``, ``fmt``, ``serve``,
   ``serve_security``, ``serve_stream``, ``console``, ``lsp``, ``_project_agent`` and the
   ``auwgent`` package itself (these may use each other)
4. ``auwgent.testing``
5. ``auwgent.evals``: datasets, scorers and ``auwgent eval`` (it runs cases through cassettes);
   ``auwgent.dev``: ``auwgent dev`` and its console (it runs the ``test`` blocks)
6. ``auwgent.cli``: nothing but ``auwgent.__main__`` (7) imports the command line
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"

LAYERS: dict[str, int] = {
    "auwgent._names": 0,
    "auwgent._records": 0,
    "auwgent._version": 0,
    "auwgent.errors": 0,
    "auwgent.ir": 1,
    "auwgent.compiler": 2,
    "auwgent.codegen": 2,
    "auwgent.runtime": 2,
    "auwgent": 3,
    "auwgent._project_agent": 3,
    "auwgent.console": 3,
    "auwgent.fmt": 3,
    "auwgent.generate": 3,
    "auwgent.lsp": 3,
    "auwgent.project": 3,
    "auwgent.serve": 3,
    "auwgent.serve_security": 3,
    "auwgent.serve_stream": 3,
    "auwgent.testing": 4,
    "auwgent.evals": 5,
    "auwgent.dev": 5,
    "auwgent.cli": 6,
    "auwgent.__main__": 7,
}
#: The layer whose members may import one another (the others are independent siblings).
SHARED_LAYER = 3

Graph = dict[str, set[str]]


def modules(root: Path) -> dict[str, tuple[Path, bool]]:
    """Every module under ``root``: dotted name -> (file, is it a package's ``__init__``)."""
    found: dict[str, tuple[Path, bool]] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        found[".".join(parts)] = (path, is_package)
    return found


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for inner in node.body:
                skipped.update(id(sub) for sub in ast.walk(inner))
    return skipped


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _imported(name: str, path: Path, is_package: bool) -> Iterator[str]:
    """What the module imports: ``import a.b`` gives ``a.b``; ``from a import b`` gives
    ``a.b`` when that is a module, else ``a``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    skipped = _type_checking_nodes(tree)
    package = name.split(".") if is_package else name.split(".")[:-1]
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:
                yield f"{target}.{alias.name}"


def import_graph(root: Path) -> Graph:
    """Module -> the modules of the same tree it imports."""
    found = modules(root)
    graph: Graph = {}
    for name, (path, is_package) in found.items():
        targets: set[str] = set()
        for target in _imported(name, path, is_package):
            while target and target not in found:
                target = target.rpartition(".")[0]
            if target and target != name:
                targets.add(target)
        graph[name] = targets
    return graph


def cycles(graph: Graph) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def layer_unit(module: str) -> str:
    """The entry of ``LAYERS`` a module belongs to (its longest listed prefix)."""
    best = ""
    for unit in LAYERS:
        if (module == unit or module.startswith(unit + ".")) and len(unit) > len(best):
            best = unit
    if not best:
        raise AssertionError(f"{module} belongs to no layer: add it to LAYERS in this test")
    return best


def layer_violations(graph: Graph) -> list[str]:
    problems = []
    for source, targets in sorted(graph.items()):
        unit = layer_unit(source)
        for target in sorted(targets):
            other = layer_unit(target)
            if other == unit:
                continue
            if LAYERS[other] < LAYERS[unit]:
                continue
            if LAYERS[other] == LAYERS[unit] == SHARED_LAYER:
                continue
            problems.append(f"{source} imports {target} ({unit} may not import {other})")
    return problems


# -- the package ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def graph() -> Graph:
    return import_graph(SRC)


def test_no_import_circles(graph: Graph) -> None:
    found = cycles(graph)
    details = [
        ", ".join(f"{m} -> {sorted(t for t in graph[m] if t in c)}" for m in c) for c in found
    ]
    assert not found, "import circles:\n" + "\n".join(details)


def test_runtime_never_imports_testing(graph: Graph) -> None:
    bad = [
        f"{source} imports {target}"
        for source, targets in graph.items()
        if layer_unit(source) == "auwgent.runtime"
        for target in targets
        if layer_unit(target) == "auwgent.testing"
    ]
    assert not bad


def test_nothing_but_main_imports_the_cli(graph: Graph) -> None:
    importers = sorted(s for s, targets in graph.items() if "auwgent.cli" in targets)
    assert importers == ["auwgent.__main__"]


def test_every_import_points_down(graph: Graph) -> None:
    problems = layer_violations(graph)
    assert not problems, "\n".join(problems)


# -- the checker of the graph itself (so the tests above can fail) ------------------------------


def _tree(tmp_path: Path, files: Mapping[str, str]) -> Graph:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return import_graph(tmp_path)


def test_function_level_and_relative_imports_count(tmp_path: Path) -> None:
    graph = _tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "def f():\n    from pkg.b import g\n",
            "pkg/b.py": "from . import c\nfrom .c import h\n",
            "pkg/c.py": "from pkg import a\n",
        },
    )
    assert graph["pkg.a"] == {"pkg.b"}
    assert graph["pkg.b"] == {"pkg.c"}
    assert graph["pkg.c"] == {"pkg.a"}
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.c"]]


def test_type_checking_imports_are_left_out(tmp_path: Path) -> None:
    graph = _tree(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg.a import X\n",
            "pkg/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.b\n",
            "pkg/b.py": "import pkg.a\n",
        },
    )
    assert graph["pkg"] == {"pkg.a"}
    assert graph["pkg.a"] == set()
    assert cycles(graph) == []


def test_layer_violations_are_named() -> None:
    graph: Graph = {
        "auwgent.runtime.agent": {"auwgent.testing.offline", "auwgent.ir"},
        "auwgent.compiler.checker": {"auwgent.runtime.schema"},
        "auwgent.generate": {"auwgent.project", "auwgent.cli"},
    }
    assert layer_violations(graph) == [
        "auwgent.compiler.checker imports auwgent.runtime.schema"
        " (auwgent.compiler may not import auwgent.runtime)",
        "auwgent.generate imports auwgent.cli (auwgent.generate may not import auwgent.cli)",
        "auwgent.runtime.agent imports auwgent.testing.offline"
        " (auwgent.runtime may not import auwgent.testing)",
    ]
