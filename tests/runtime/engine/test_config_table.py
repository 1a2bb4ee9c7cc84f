"""The runtime config is one table: every key parsed by its entry, every generated type and the
docs' key table made from it, and the sub-objects reading (and naming) themselves."""

from __future__ import annotations

import re
import runpy
from pathlib import Path
from typing import Any

import pytest

from auwgent.errors import ConfigError
from auwgent.ir.vocabulary import NOT_YET_IN_TYPESCRIPT, RUNTIME_CONFIG_KEYS
from auwgent.runtime.config import KEYS, Budget, CodeLimits, RuntimeOptions, parse_options
from auwgent.runtime.policy import Limits, RetryPolicy, Timeouts
from auwgent.testing import ScriptedModel

from .irkit import agent, document, make_agent

ROOT = Path(__file__).resolve().parents[3]
generator = runpy.run_path(str(ROOT / "scripts" / "generate_runtime_config.py"))


@pytest.mark.parametrize("path", list(generator["OUTPUTS"]), ids=lambda p: p.name)
def test_generated_files_are_what_the_table_makes(path: Path) -> None:
    current = path.read_text(encoding="utf-8")
    made = generator["OUTPUTS"][path](current)
    assert current == made, "run: python scripts/generate_runtime_config.py"


def test_a_hand_edit_of_a_generated_part_is_seen() -> None:
    bindings: Path = generator["BINDINGS"]
    edited = bindings.read_text(encoding="utf-8").replace("    maxOutputRetries: int\n", "")
    assert generator["OUTPUTS"][bindings](edited) != edited
    docs: Path = generator["DOCS"]
    edited = docs.read_text(encoding="utf-8").replace("| `strict` |", "| `strictly` |")
    assert generator["OUTPUTS"][docs](edited) != edited


def test_the_table_is_the_vocabulary_and_fills_every_option() -> None:
    assert tuple(key.name for key in KEYS) == RUNTIME_CONFIG_KEYS
    assert sorted(key.field for key in KEYS) == sorted(RuntimeOptions._fields)
    missing = {key.name for key in KEYS if key.typescript is None}
    assert missing == set(NOT_YET_IN_TYPESCRIPT["runtime_config_keys"])


def test_runtime_options_hold_no_any() -> None:
    # The annotations as written (the module defers them): no field is typed Any.
    hints = RuntimeOptions.__annotations__
    assert hints and not [f for f, hint in hints.items() if re.search(r"\bAny\b", str(hint))]


def test_the_typescript_runtime_reads_the_generated_keys() -> None:
    config_ts = (ROOT / "ts" / "src" / "config.ts").read_text(encoding="utf-8")
    assert 'from "./runtime-config.js"' in config_ts
    assert "export const CONFIG_KEYS" not in config_ts


def _options(**config: Any) -> RuntimeOptions:
    make_agent(document(agent()), ScriptedModel([]), **config)  # an agent accepts it
    return parse_options(config)


def test_sub_objects_read_themselves() -> None:
    options = _options(
        retry={"attempts": 2},
        timeouts={"run": 30, "idle": 5},
        limits={"eventBytes": 10},
        budget={"tokens": 100},
        codeLimits={"timeout": 2},
    )
    assert options.retry == RetryPolicy(attempts=2)
    assert options.timeouts == Timeouts(idle=5, run=30)
    assert options.run_timeout == 30
    assert options.limits == Limits(event_bytes=10)
    assert options.budget == Budget(tokens=100)
    assert options.code_limits == CodeLimits(timeout=2.0)
    assert isinstance(options.code_limits.timeout, float)
    assert _options().budget is None and _options().run_timeout is None


def test_a_sub_object_given_as_itself_is_kept() -> None:
    policy = RetryPolicy(attempts=7, jitter=False)
    limits = CodeLimits(max_calls=3)
    options = _options(retry=policy, codeLimits=limits)
    assert options.retry is policy
    assert options.code_limits is limits


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"retry": {"attempts": 0}}, "retry.attempts: must be at least 1, got 0"),
        ({"retry": {"attempts": None}}, "retry.attempts: expected an integer, got None"),
        ({"retry": "often"}, "retry: expected an object, got str"),
        ({"timeouts": {"idle": True}}, "timeouts.idle: expected a number, got True"),
        ({"limits": {"eventBytes": 1.5}}, "limits.eventBytes: expected an integer, got 1.5"),
        ({"budget": {"token": 1}}, "budget.token: unknown config key; did you mean 'tokens'?"),
        ({"codeLimits": []}, "codeLimits: expected an object, got list"),
        ({"codeLimits": {"timeout": 0}}, "codeLimits.timeout: must be at least 0.001, got 0"),
        ({"maxOutputRetries": None}, "maxOutputRetries: expected an integer, got None"),
        ({"strict": None}, "strict: expected true or false, got None"),
        ({"approvals": "later"}, "approvals: expected 'ask' or 'defer', got 'later'"),
        ({"mcp": ["files"]}, "mcp: expected an object of servers, got list"),
        ({"middleware": "nope"}, "middleware: expected a list of middleware classes"),
    ],
)
def test_mistakes_name_the_key_path(config: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        _options(**config)
    assert str(caught.value).startswith(message)
