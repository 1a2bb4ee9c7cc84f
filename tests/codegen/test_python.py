"""The generated module: golden text, valid Python, and what it does when imported."""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from auwgent.codegen.python import module_name, render_python
from auwgent.errors import CompileError, ConfigError
from auwgent.ir import canonical_json, with_hash
from auwgent.ir.vocabulary import api_key_env, api_key_field

from .conftest import DATA, assert_golden

HANDMADE = Path(__file__).resolve().parents[1] / "data" / "ir" / "handmade"
IR_FILES = sorted([*HANDMADE.glob("*.agent.json"), *(DATA / "ir").glob("*.agent.json")])


def _load(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return doc


def _import(source: str, name: str, tmp_path: Path) -> ModuleType:
    path = tmp_path / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    return module


@pytest.mark.parametrize("path", IR_FILES, ids=lambda p: p.name)
def test_generated_module_matches_golden_and_parses(path: Path) -> None:
    source = render_python(_load(path))
    ast.parse(source)
    stem = path.name.removesuffix(".agent.json")
    assert_golden(DATA / "golden" / "ir" / f"{stem}_types.py", source)


@pytest.mark.parametrize("path", IR_FILES, ids=lambda p: p.name)
def test_generation_is_deterministic(path: Path) -> None:
    assert render_python(_load(path)) == render_python(_load(path))


def test_embedded_ir_is_the_canonical_text_its_hash_covers(tmp_path: Path) -> None:
    doc = _load(DATA / "ir" / "edge.agent.json")
    module = _import(render_python(doc), "edge_embedded", tmp_path)
    body = {key: value for key, value in doc.items() if key != "hash"}
    assert module.IR_JSON == canonical_json(body)
    # The hash is over these very bytes: checking it needs no second serialisation.
    assert module.IR_HASH == "sha256:" + hashlib.sha256(module.IR_JSON.encode()).hexdigest()
    assert module.IR_HASH == doc["hash"]
    assert {**json.loads(module.IR_JSON), "hash": module.IR_HASH} == doc
    assert module.IR_VERSION == doc["ir_version"]
    assert module.COMPILER_VERSION == doc["compiler_version"]
    assert module.ROOT_AGENT == "Edge"


def test_generated_methods_carry_the_unimplemented_marker(tmp_path: Path) -> None:
    module = _import(render_python(_load(DATA / "ir" / "edge.agent.json")), "edge_marker", tmp_path)
    tools = module.AuwgentTools
    for name in ("send", "lookup", "shared", "archive_now", "ping"):
        assert getattr(tools, name).__auwgent_unimplemented__ is True

    class Mine(tools):  # type: ignore[misc,valid-type]
        def ping(self) -> str:
            return "pong"

    assert not hasattr(Mine().ping, "__auwgent_unimplemented__")
    assert Mine().lookup.__auwgent_unimplemented__ is True
    handler = module.AuwgentBaseIntentHandler
    assert handler.response_text.__auwgent_unimplemented__ is True
    assert handler.Mood.__auwgent_unimplemented__ is True
    assert module.AuwgentMiddleware.onRunStart.__auwgent_unimplemented__ is True


def test_a_misspelt_tool_method_is_reported_with_a_suggestion(tmp_path: Path) -> None:
    module = _import(render_python(_load(DATA / "ir" / "edge.agent.json")), "edge_typo", tmp_path)
    with pytest.raises(ConfigError, match=r"Tools\.lokup: .*did you mean 'lookup'\?"):
        type("Tools", (module.AuwgentTools,), {"lokup": lambda self, person: person})
    # A public method unlike any tool is the application's own business.
    type("Tools", (module.AuwgentTools,), {"connect": lambda self: None})


def test_typed_dicts_hold_keywords_and_non_identifier_keys(tmp_path: Path) -> None:
    module = _import(render_python(_load(DATA / "ir" / "edge.agent.json")), "edge_keys", tmp_path)
    assert module.Person.__required_keys__ == {"name", "from", "level"}
    assert module.Person.__optional_keys__ == {"address"}
    assert module.Address.__optional_keys__ == {"zip-code"}
    assert module.AuwgentContext.__required_keys__ == {"user_id"}
    # The helper's own context key is optional: it may arrive later through set_context.
    assert module.AuwgentContext.__optional_keys__ == {"is_vip", "prefs", "region"}
    assert set(module.AuwgentApiKeys.__optional_keys__) == {
        "geminiApiKey",
        "openaiApiKey",
        "1stProxyApiKey",
    }


def test_api_keys_list_only_the_providers_in_use() -> None:
    source = render_python(_load(HANDMADE / "helpers.agent.json"))
    tree = ast.parse(source)
    keys = next(
        node
        for node in tree.body
        if isinstance(node, ast.ClassDef) and node.name == "AuwgentApiKeys"
    )
    fields = [s.target.id for s in keys.body if isinstance(s, ast.AnnAssign)]  # type: ignore[union-attr]
    assert fields == ["openaiApiKey", "myGroqApiApiKey"]


@pytest.mark.parametrize(
    ("model", "field", "env"),
    [
        ({"provider": "gemini"}, "geminiApiKey", "GEMINI_API_KEY"),
        ({"provider": "openai"}, "openaiApiKey", "OPENAI_API_KEY"),
        ({"provider": "anthropic"}, "anthropicApiKey", "ANTHROPIC_API_KEY"),
        ({"provider": "custom", "id": "my-groq-api"}, "myGroqApiApiKey", "MY_GROQ_API_API_KEY"),
        ({"provider": "custom", "id": "local_llm"}, "localLlmApiKey", "LOCAL_LLM_API_KEY"),
    ],
)
def test_api_key_names_follow_the_decisions(model: dict[str, str], field: str, env: str) -> None:
    assert api_key_field(model) == field
    assert api_key_env(model)[0] == env


@pytest.mark.parametrize(
    ("stem", "expected"),
    [("main", "main"), ("my-agent", "my_agent"), ("2fast", "_2fast"), ("class", "class_")],
)
def test_module_names_are_valid_python(stem: str, expected: str) -> None:
    assert module_name(stem) == expected
    assert expected.isidentifier()


def test_a_type_named_like_a_generated_name_is_a_clear_error() -> None:
    doc = _load(HANDMADE / "minimal.agent.json")
    doc["types"] = {"AuwgentConfig": {"kind": "object", "fields": []}}
    with pytest.raises(CompileError, match="AuwgentConfig.*rename the type"):
        render_python(with_hash(doc))


def test_a_custom_intent_clashing_with_a_builtin_payload_is_a_clear_error() -> None:
    doc = _load(HANDMADE / "minimal.agent.json")
    doc["agents"]["Main"]["intents"] = [{"name": "ToolCall", "description": None, "fields": []}]
    with pytest.raises(CompileError, match="ToolCallIntent.*rename the intent"):
        render_python(with_hash(doc))


def test_output_does_not_depend_on_the_hash_seed() -> None:
    import os
    import subprocess

    script = (
        "import json, sys\n"
        "from auwgent.codegen.python import render_python\n"
        f"doc = json.load(open({str(DATA / 'ir' / 'edge.agent.json')!r}))\n"
        "sys.stdout.write(render_python(doc))\n"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", script],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert len(outputs) == 1


QUICKSTART = """
agent Main {
    default config {
        model: gemini("gemini-2.5-flash")
        prompt: "You are a helpful assistant. Be polite."
    }
    context {
        name: string
    }
}
"""


def _quickstart_source() -> str:
    from auwgent.compiler.pipeline import compile_sources

    result = compile_sources({"main.agent": QUICKSTART})
    assert result.ok
    return render_python(result.documents["main.agent"])


def test_the_factory_builds_a_typed_agent_that_runs(tmp_path: Path) -> None:
    module = _import(_quickstart_source(), "quick_run", tmp_path)
    agent = module.auwgent({"provider": "offline", "context": {"name": "Ama"}})
    assert isinstance(agent, module.AuwgentAgent)
    seen: list[tuple[str, Any, str]] = []
    agent.on_intent(lambda name, value, agent_name: seen.append((name, value, agent_name)))
    agent.run_sync("hello")
    assert [(n, a) for n, _, a in seen] == [("response_text", "Main")]
    assert seen[0][1]["text"]


def test_the_factory_checks_context_types_before_anything_runs(tmp_path: Path) -> None:
    from auwgent.errors import ContextError

    module = _import(_quickstart_source(), "quick_context", tmp_path)
    with pytest.raises(ContextError, match="context.name: expected string"):
        module.auwgent({"provider": "offline", "context": {"name": 3}})


@pytest.mark.parametrize("field", ["COMPILER_VERSION", "IR_VERSION"])
def test_bindings_from_an_incompatible_compiler_are_refused(tmp_path: Path, field: str) -> None:
    from auwgent._version import IR_VERSION, __version__

    old, new = {
        "COMPILER_VERSION": (f'COMPILER_VERSION = "{__version__}"', 'COMPILER_VERSION = "99.0.0"'),
        "IR_VERSION": (f"IR_VERSION = {IR_VERSION}", f"IR_VERSION = {IR_VERSION + 1}"),
    }[field]
    source = _quickstart_source()
    assert old in source
    module = _import(source.replace(old, new), "quick_versions", tmp_path)
    with pytest.raises(ConfigError, match="auwgent generate"):
        module.auwgent({"provider": "offline", "context": {"name": "Ama"}})
