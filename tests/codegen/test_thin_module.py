"""The generated module only declares: a fix in ``auwgent.runtime.bindings`` needs no regeneration.

Two checks. Structurally, every golden module (the handmade IRs and the sample application)
holds nothing that behaves: no statement that branches or loops, no call but the few a
declaration needs, no function body beyond a docstring, a placeholder ``raise`` and the
factory's single delegation. Behaviourally, a module generated once follows a runtime that
changed after it was generated: the checks, the hooks and the factory it uses are the
runtime's own objects, looked up when the module is imported.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from auwgent.codegen.python import render_python
from auwgent.compiler.pipeline import compile_sources
from auwgent.errors import ConfigError
from auwgent.runtime import bindings

from .conftest import DATA

GOLDEN = sorted((DATA / "golden").glob("*/*_types.py"))

#: The only calls a declaration needs: functional TypedDicts, the tool-name set, generic
#: base classes (subscripts, not calls) and, in the factory, the runtime's ``create``.
ALLOWED_CALLS = {"TypedDict", "frozenset", "_create"}
ALLOWED_IMPORTS = {"__future__", "collections.abc", "typing", "auwgent.runtime.bindings"}


def _docstring_only(body: list[ast.stmt]) -> bool:
    return (
        len(body) == 1
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    )


def _placeholder_tool(body: list[ast.stmt]) -> bool:
    # A tool's placeholder: its docstring, then `raise NotImplementedError` (mypy wants a body
    # for a method that returns a value; the runtime never calls a placeholder).
    return (
        len(body) == 2
        and _docstring_only(body[:1])
        and isinstance(body[1], ast.Raise)
        and isinstance(body[1].exc, ast.Name)
        and body[1].exc.id == "NotImplementedError"
    )


def _factory(node: ast.FunctionDef) -> bool:
    body = node.body
    return (
        len(body) == 2
        and _docstring_only(body[:1])
        and isinstance(body[1], ast.Return)
        and isinstance(body[1].value, ast.Call)
        and isinstance(body[1].value.func, ast.Name)
        and body[1].value.func.id == "_create"
        and all(isinstance(a, ast.Name) for a in body[1].value.args)
        and all(isinstance(k.value, ast.Name) for k in body[1].value.keywords)
    )


def _behaviour(tree: ast.Module) -> list[str]:
    """Everything in the module that would behave, as ``line: what``."""
    found = [f for statement in tree.body for f in _top_level(statement)]
    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.For, ast.While, ast.Try, ast.With, ast.Lambda)):
            found.append(f"{node.lineno}: {type(node).__name__}")
        elif isinstance(node, (ast.Import, ast.AsyncFunctionDef, ast.FunctionDef)) and any(
            isinstance(n, (ast.Import, ast.ImportFrom)) for n in ast.walk(node) if n is not node
        ):
            found.append(f"{node.lineno}: import inside a function")
        elif isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
            if name not in ALLOWED_CALLS:
                found.append(f"{node.lineno}: call of {name}")
        elif isinstance(node, ast.ClassDef):
            found += _class_behaviour(node)
    return found


def _top_level(statement: ast.stmt) -> list[str]:
    if isinstance(statement, ast.ImportFrom) and statement.module not in ALLOWED_IMPORTS:
        return [f"{statement.lineno}: import from {statement.module}"]
    if isinstance(statement, ast.FunctionDef) and not (
        statement.name == "auwgent" and _factory(statement)
    ):
        return [f"{statement.lineno}: module-level function {statement.name}"]
    if not isinstance(statement, (ast.ImportFrom, ast.FunctionDef, ast.ClassDef)) and not (
        isinstance(statement, (ast.Assign, ast.AnnAssign, ast.Expr))
    ):
        return [f"{statement.lineno}: {type(statement).__name__} statement"]
    return []


def _class_behaviour(node: ast.ClassDef) -> list[str]:
    found = []
    for deco in node.decorator_list:
        if not (isinstance(deco, ast.Name) and deco.id == "_placeholders"):
            found.append(f"{node.lineno}: class decorator {ast.unparse(deco)}")
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if item.decorator_list:
                found.append(f"{item.lineno}: decorated method {item.name}")
            if not (_docstring_only(item.body) or _placeholder_tool(item.body)):
                found.append(f"{item.lineno}: method {node.name}.{item.name} has a body")
        elif not isinstance(item, (ast.AnnAssign, ast.Expr, ast.Pass)):
            found.append(f"{item.lineno}: {type(item).__name__} in class {node.name}")
    return found


def test_the_golden_modules_exist() -> None:
    assert len(GOLDEN) >= 10


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.name)
def test_a_generated_module_holds_nothing_that_behaves(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert _behaviour(tree) == []


def test_the_structural_check_finds_logic_copied_into_a_module() -> None:
    # What the generated module used to carry: a decorator function, a subclass hook that
    # loops and imports, a factory that checks what the runtime built.
    copied = '''
def _unimplemented(method):
    setattr(method, "__auwgent_unimplemented__", True)
    return method

class AuwgentTools(_Tools):
    def __init_subclass__(cls, **kwargs):
        for attr in vars(cls):
            import difflib

def auwgent(config):
    """Create the agent."""
    agent = _create(AuwgentAgent, config)
    if not isinstance(agent, AuwgentAgent):
        raise TypeError("the runtime did not build an AuwgentAgent")
    return agent
'''
    found = " ".join(_behaviour(ast.parse(copied)))
    for what in ("function _unimplemented", "call of setattr", "AuwgentTools.__init_subclass__",
                 "For", "import inside a function", "function auwgent", "If"):  # fmt: skip
        assert what in found


SOURCE = """
intent Mood {
    description: "Emit the mood"
    fields { mood: "calm" | "tense" }
}

agent Main {
    default config {
        model: gemini("gemini-2.5-flash")
        prompt: "You are a weather assistant."
    }
    tool get_weather(location: string): string
    intent: Mood
}
"""


def _generated_once(tmp_path: Path) -> Path:
    result = compile_sources({"main.agent": SOURCE})
    assert result.ok, [d.message for d in result.diagnostics]
    path = tmp_path / "once_types.py"
    path.write_text(render_python(result.documents["main.agent"]), encoding="utf-8")
    return path


def _import(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(path.stem, None)
    return module


def test_the_module_uses_the_runtime_objects_themselves(tmp_path: Path) -> None:
    module = _import(_generated_once(tmp_path))
    # Inherited, not copied: a fix to a hook or a registration method is the module's fix.
    for hook in ("onRunStart", "onLLMStart", "onIntent", "onIntentPartial", "onLLMEnd",
                 "onRunComplete", "onError"):  # fmt: skip
        assert getattr(module.AuwgentMiddleware, hook) is getattr(bindings.Middleware, hook)
    for method in ("on_intent", "on_intent_partial", "on_approval"):
        assert getattr(module.AuwgentAgent, method) is getattr(bindings.TypedAgent, method)
    assert "__init_subclass__" not in vars(module.AuwgentTools)  # the runtime's check runs
    for name in ("IntentControl", "ErrorIntent", "PartialIntent", "AuwgentRetry", "AuwgentSession"):
        assert getattr(module, name) is getattr(bindings, name)


def test_a_runtime_fix_reaches_a_module_generated_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _generated_once(tmp_path)
    text = path.read_text(encoding="utf-8")
    # The runtime changes after generation (as an upgrade of auwgent would): a stricter tool
    # check, a placeholder marking that also records the class, a factory that also logs.
    built: list[str] = []
    original_create = bindings.create

    def stricter(cls: type[bindings.Tools], /, **kwargs: Any) -> None:
        for attr in vars(cls):
            if attr.lower() in cls._TOOL_NAMES and attr not in cls._TOOL_NAMES:
                raise ConfigError(f"{cls.__name__}.{attr}: tool names are case-sensitive")

    def marking(cls: Any) -> Any:
        cls.__auwgent_marked__ = True
        return original_placeholders(cls)

    def logging_create(agent_class: Any, config: Any, ir_json: str, **kwargs: Any) -> Any:
        built.append(agent_class.__name__)
        return original_create(agent_class, config, ir_json, **kwargs)

    original_placeholders = bindings.placeholders
    monkeypatch.setattr(bindings.Tools, "__init_subclass__", classmethod(stricter))
    monkeypatch.setattr(bindings, "placeholders", marking)
    monkeypatch.setattr(bindings, "create", logging_create)
    module = _import(path)
    assert path.read_text(encoding="utf-8") == text  # nothing was regenerated

    with pytest.raises(ConfigError, match="Tools.Get_Weather: tool names are case-sensitive"):
        type("Tools", (module.AuwgentTools,), {"Get_Weather": lambda self, location: location})
    assert module.AuwgentTools.__auwgent_marked__ is True
    assert module.AuwgentBaseIntentHandler.__auwgent_marked__ is True
    assert module.AuwgentBaseIntentHandler.Mood.__auwgent_unimplemented__ is True
    agent = module.auwgent({"provider": "offline"})
    assert built == ["AuwgentAgent"]
    assert isinstance(agent, module.AuwgentAgent)


def test_the_middleware_base_holds_exactly_the_hooks_the_runtime_calls() -> None:
    from auwgent.runtime.middleware import HOOKS

    hooks = {name for name in vars(bindings.Middleware) if name.startswith("on")}
    assert hooks == set(HOOKS)
    for hook in hooks:
        assert getattr(bindings.Middleware, hook).__auwgent_unimplemented__ is True
