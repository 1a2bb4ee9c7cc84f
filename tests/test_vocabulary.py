"""auwgent.ir.vocabulary is the one list of intents, hooks, providers, config keys and the
API-key rule: the compiler, the generators and the runtime say what it says."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from auwgent.ir import vocabulary as v

GOLDEN = Path(__file__).parent / "data" / "codegen" / "golden" / "ir" / "minimal_types.py"


@pytest.fixture(scope="module")
def bindings() -> ModuleType:
    spec = importlib.util.spec_from_file_location("vocabulary_minimal_types", GOLDEN)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_runtime_reads_the_vocabulary() -> None:
    from auwgent.runtime.config import CONFIG_KEYS, api_key_field
    from auwgent.runtime.intents import BUILTIN_INTENTS
    from auwgent.runtime.middleware import HOOKS

    assert BUILTIN_INTENTS == v.BUILTIN_INTENTS
    assert HOOKS == {hook.name: hook.alias for hook in v.HOOKS}
    assert CONFIG_KEYS == v.RUNTIME_CONFIG_KEYS
    assert api_key_field is v.api_key_field


def test_the_compiler_reads_the_vocabulary() -> None:
    from auwgent.compiler.checker.agents import BUILTIN_INTENTS, CONFIG_KEYS
    from auwgent.compiler.checker.context import PROVIDERS

    assert BUILTIN_INTENTS == set(v.BUILTIN_INTENTS)
    assert CONFIG_KEYS == v.CONFIG_BLOCK_KEYS
    assert PROVIDERS == {"gemini": (1, 2), "openai": (1, 2), "anthropic": (1, 2), "custom": (3, 4)}


def test_the_python_bindings_agree() -> None:
    # The generator derives its intent table from the vocabulary; the runtime's Middleware
    # base declares each hook as a typed method, which must be exactly the vocabulary's hooks.
    import inspect

    from auwgent.codegen.python import BUILTIN_INTENTS, STREAMED_INTENTS
    from auwgent.runtime.bindings import Middleware

    assert [(i.name, i.class_name, i.when) for i in v.INTENTS] == list(BUILTIN_INTENTS)
    assert v.STREAMED_INTENTS == STREAMED_INTENTS
    hooks = [name for name, _ in inspect.getmembers(Middleware) if name.startswith("on")]
    assert sorted(hooks) == sorted(hook.name for hook in v.HOOKS)


def test_payload_shapes_are_the_generated_ones(bindings: ModuleType) -> None:
    for intent in v.INTENTS:
        payload = getattr(bindings, intent.class_name)
        required = {f.name for f in intent.payload if f.required}
        optional = {f.name for f in intent.payload if not f.required}
        assert payload.__required_keys__ == required, intent.name
        assert payload.__optional_keys__ == optional, intent.name


@pytest.mark.parametrize(
    ("model", "field", "env"),
    [
        ({"provider": "gemini", "id": None}, "geminiApiKey", ("GEMINI_API_KEY", "GOOGLE_API_KEY")),
        ({"provider": "openai", "id": None}, "openaiApiKey", ("OPENAI_API_KEY",)),
        ({"provider": "custom", "id": "my-groq-api"}, "myGroqApiApiKey", ("MY_GROQ_API_API_KEY",)),
    ],
)
def test_the_api_key_rule(model: dict[str, Any], field: str, env: tuple[str, ...]) -> None:
    from auwgent.codegen import python

    # The generator uses the vocabulary's rule itself, not a copy of it.
    assert python.api_key_field is v.api_key_field
    assert v.api_key_field(model) == field
    assert v.api_key_env(model) == env


def test_conformance_vocabulary_json_is_generated_from_the_tables() -> None:
    # conformance/vocabulary.json is what the TypeScript tests compare with; a new intent,
    # hook, provider or config key here must reach it (python conformance/generate.py).
    path = Path(__file__).parents[1] / "conformance" / "vocabulary.json"
    assert json.loads(path.read_text(encoding="utf-8")) == v.document()


def test_not_yet_in_typescript_names_only_what_the_tables_hold() -> None:
    lists = v.document()
    for name, missing in v.NOT_YET_IN_TYPESCRIPT.items():
        assert set(missing) <= set(lists[name]), name
