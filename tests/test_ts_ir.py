"""ts/src/ir.ts, the TypeScript runtime's IR types, is what scripts/generate_ts_ir.py makes from
auwgent.ir.model, and says what schema.json says of every named object."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import pytest

from auwgent.ir import load_schema

ROOT = Path(__file__).resolve().parent.parent
IR_TS = ROOT / "ts" / "src" / "ir.ts"
generator = runpy.run_path(str(ROOT / "scripts" / "generate_ts_ir.py"))
_INTERFACE = re.compile(r"^export interface (\w+) \{\n(.*?)^\}", re.M | re.S)
_MEMBER = re.compile(r'^  "?(\w+)"?(\??): ', re.M)


def interfaces(text: str) -> dict[str, dict[str, bool]]:
    """Each interface of ``text``: its keys, each with whether it is required."""
    return {
        name: {key: not optional for key, optional in _MEMBER.findall(body)}
        for name, body in _INTERFACE.findall(text)
    }


def test_ir_ts_is_generated() -> None:
    assert IR_TS.read_text(encoding="utf-8") == generator["render"](), (
        "run: python scripts/generate_ts_ir.py"
    )


_NAMED = [
    name
    for name, spec in load_schema()["$defs"].items()
    if isinstance(spec, dict) and "properties" in spec
]


@pytest.mark.parametrize("name", _NAMED)
def test_each_named_object_of_the_schema_has_its_interface(name: str) -> None:
    spec = load_schema()["$defs"][name]
    declared = interfaces(IR_TS.read_text(encoding="utf-8")).get(name)
    assert declared is not None, f"ts/src/ir.ts has no interface {name}"
    assert set(declared) == set(spec["properties"]), name
    assert {k for k, required in declared.items() if required} == set(spec.get("required", ()))


def test_the_document_itself() -> None:
    schema = load_schema()
    declared = interfaces(IR_TS.read_text(encoding="utf-8"))["Document"]
    assert set(declared) == set(schema["properties"])
    assert {k for k, required in declared.items() if required} == set(schema["required"])


def test_the_reader_sees_a_missing_key() -> None:
    text = "export interface Intent {\n  name: string;\n  fields?: Field[];\n}\n"
    assert interfaces(text) == {"Intent": {"name": True, "fields": False}}
