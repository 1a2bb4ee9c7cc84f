"""The package's import graph: no circles, and every import points down the layers.

Every module under ``src/auwgent`` is parsed with ``ast`` (nothing is imported, so the test
also sees imports inside functions). Module-level, function-level and ``if TYPE_CHECKING:``
imports count alike: a circle only the type checker follows is still two modules that cannot
be read one without the other. A ``from package import name`` counts as an import of the
submodule when ``name`` is one, else of the package. Importing a submodule is not counted as
importing its parent package's ``__init__`` (Python runs it, but nothing in it is used).

Two more rules: outside the compiler, the compiler is imported only through its public face
(``from auwgent.compiler import name``, a name of its ``__all__``); and no module imports a
private name (``_name``) of another module (private modules such as ``auwgent._records`` are
the package's own and may be imported).

The layers (docs/architecture.md), lowest first; a module may import its own package and any
lower layer, never a higher one and never a sibling on its own layer:

0. ``auwgent._version``, ``auwgent._names``, ``auwgent._records``, ``auwgent._typing``,
   ``auwgent.errors``
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
    "auwgent._typing": 0,
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


def _imported(name: str, path: Path, is_package: bool) -> Iterator[str]:
    """What the module imports: ``import a.b`` gives ``a.b``; ``from a import b`` gives
    ``a.b`` when that is a module, else ``a``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = name.split(".") if is_package else name.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:
                yield f"{target}.{alias.name}"


def _import_froms(name: str, path: Path, is_package: bool) -> Iterator[tuple[str, str, int]]:
    """Every ``from X import y`` of the module: (X as an absolute name, y, line)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = name.split(".") if is_package else name.split(".")[:-1]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:
                yield target, alias.name, node.lineno


def face_violations(root: Path, face: str, allowed: set[str]) -> list[str]:
    """Imports of ``face``'s inner modules, or of names it does not export, from outside it."""
    problems = []
    for name, (path, is_package) in modules(root).items():
        if name == face or name.startswith(face + "."):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                problems += [
                    f"{name}:{node.lineno} imports {alias.name}"
                    for alias in node.names
                    if alias.name.startswith(face + ".")
                ]
        for target, imported, line in _import_froms(name, path, is_package):
            if target.startswith(face + "."):
                problems.append(f"{name}:{line} imports {target} (use {face})")
            elif target == face and imported not in allowed:
                problems.append(f"{name}:{line} imports {face}.{imported} (not in its __all__)")
    return problems


def private_imports(root: Path) -> list[str]:
    """``from module import _name`` of a private name (not a module) of another module."""
    found = modules(root)
    problems = []
    for name, (path, is_package) in found.items():
        for target, imported, line in _import_froms(name, path, is_package):
            private = imported.startswith("_") and not imported.startswith("__")
            if (
                private
                and target.split(".")[0] == root_package(found)
                and (f"{target}.{imported}" not in found)
            ):
                problems.append(f"{name}:{line} imports {target}.{imported}")
    return problems


def root_package(found: Mapping[str, object]) -> str:
    return min(found, key=len).split(".")[0]


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


def _exported(package: str) -> set[str]:
    """The names in ``package``'s ``__all__``, read with ``ast``."""
    init = SRC.joinpath(*package.split("."), "__init__.py")
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return set(ast.literal_eval(node.value))
    raise AssertionError(f"{package} has no __all__")


def test_the_compiler_is_used_through_its_face() -> None:
    problems = face_violations(SRC, "auwgent.compiler", _exported("auwgent.compiler"))
    assert not problems, "\n".join(problems)


def test_no_private_name_crosses_a_module_boundary() -> None:
    problems = private_imports(SRC)
    assert not problems, "\n".join(problems)


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


def test_type_checking_imports_count(tmp_path: Path) -> None:
    graph = _tree(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg.a import X\n",
            "pkg/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pkg.b\n",
            "pkg/b.py": "import pkg.a\n",
        },
    )
    assert graph["pkg"] == {"pkg.a"}
    assert graph["pkg.a"] == {"pkg.b"}
    assert cycles(graph) == [["pkg.a", "pkg.b"]]


def test_face_and_private_name_rules_name_the_import(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/comp/__init__.py": "from pkg.comp.inner import parse\n__all__ = ['parse']\n",
            "pkg/comp/inner.py": "def parse(): ...\n_HIDDEN = 1\n",
            "pkg/good.py": "from pkg.comp import parse\nfrom pkg import _records\n",
            "pkg/_records.py": "",
            "pkg/bad.py": "from pkg.comp.inner import _HIDDEN\nfrom pkg.comp import other\n",
        },
    )
    assert face_violations(tmp_path, "pkg.comp", {"parse"}) == [
        "pkg.bad:1 imports pkg.comp.inner (use pkg.comp)",
        "pkg.bad:2 imports pkg.comp.other (not in its __all__)",
    ]
    assert private_imports(tmp_path) == ["pkg.bad:1 imports pkg.comp.inner._HIDDEN"]


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
