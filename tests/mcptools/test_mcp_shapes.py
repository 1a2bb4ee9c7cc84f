"""JSON Schema to IR types and back (``auwgent.mcp.shapes``), the shaping of MCP results, and
what the generated bindings say about ``@mcp`` tools. No server needed."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from auwgent.codegen.python import render_python
from auwgent.codegen.typescript import render_typescript
from auwgent.mcp.importer import declaration_text
from auwgent.mcp.shapes import (
    canonical,
    from_json_schema,
    identifier_for,
    params_of,
    returns_of,
    source_type,
)
from auwgent.runtime.mcp import _value

IR = Path(__file__).parents[1] / "data" / "ir" / "mcp_servers" / "main.agent.json"


@pytest.mark.parametrize(
    ("schema", "written"),
    [
        ({"type": "integer"}, "number"),
        ({"type": ["string", "null"]}, "string"),
        ({"anyOf": [{"type": "boolean"}, {"type": "null"}]}, "boolean"),
        ({"enum": ["low", "high"]}, '"low" | "high"'),
        ({"const": "only"}, '"only"'),
        (
            {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "number"}]}},
            "(string | number)[]",
        ),
        (
            {
                "$defs": {
                    "P": {
                        "type": "object",
                        "properties": {"n": {"type": "string"}},
                        "required": ["n"],
                    }
                },
                "type": "array",
                "items": {"$ref": "#/$defs/P"},
            },
            "{ n: string }[]",
        ),
    ],
)
def test_json_schema_becomes_a_dsl_type(schema: dict[str, Any], written: str) -> None:
    converted = from_json_schema(schema)
    assert converted is not None
    assert source_type(converted) == written


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object"},  # free-form
        {"type": "array"},  # no items
        {"enum": [1, 2]},
        {"$defs": {"T": {"type": "array", "items": {"$ref": "#/$defs/T"}}}, "$ref": "#/$defs/T"},
    ],
)
def test_what_the_dsl_cannot_say_is_none(schema: dict[str, Any]) -> None:
    assert from_json_schema(schema) is None


def test_params_returns_and_canonical_forms() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "integer", "description": "first"}, "b": {"type": "string"}},
        "required": ["a"],
    }
    assert params_of(schema) == [
        {"name": "a", "type": {"kind": "number"}, "optional": False, "description": "first"},
        {"name": "b", "type": {"kind": "string"}, "optional": True, "description": None},
    ]
    assert params_of({"type": "object", "properties": {}}) == []
    assert returns_of({"type": "object", "properties": {"result": {"type": "integer"}}}) == {
        "kind": "number"
    }
    assert returns_of(None) is None
    named = {"kind": "ref", "name": "Entry"}
    types = {
        "Entry": {
            "kind": "object",
            "fields": [
                {"name": "p", "type": {"kind": "string"}, "optional": False, "description": "x"}
            ],
        }
    }
    inline = {
        "kind": "object",
        "fields": [
            {"name": "p", "type": {"kind": "string"}, "optional": False, "description": None}
        ],
    }
    assert canonical(named, types) == canonical(inline, {})
    assert canonical({"kind": "string"}, {}) != canonical({"kind": "number"}, {})


def _result(structured: Any, *texts: str) -> Any:
    content = [SimpleNamespace(type="text", text=t) for t in texts]
    return SimpleNamespace(structured_content=structured, content=content)


def test_results_are_shaped_for_the_declared_type() -> None:
    number, string = {"kind": "number"}, {"kind": "string"}
    entries = {"kind": "array", "items": {"kind": "string"}}
    assert _value(_result({"result": 3}, "3"), number, {}) == 3
    assert _value(_result({"result": "hi"}, "hi"), string, {}) == "hi"
    assert _value(_result({"result": ["a"]}, '["a"]'), entries, {}) == ["a"]
    obj = {
        "kind": "object",
        "fields": [{"name": "result", "type": number, "optional": False, "description": None}],
    }
    assert _value(_result({"result": 3}, "{}"), obj, {}) == {"result": 3}  # an object stays whole
    assert _value(_result(None, "a", "b"), string, {}) == "a\nb"
    assert _value(_result(None, "[1]"), entries, {}) == "[1]"  # the call path decodes JSON text


def test_generated_tools_class_has_no_mcp_tools() -> None:
    doc = json.loads(IR.read_text(encoding="utf-8"))
    code = render_python(doc)
    assert "def note(" in code
    for name in ("list_dir", "delete_file", "compress", "search", "tag_file"):
        assert f"def {name}(" not in code
        assert f'"{name}"' in code  # still a tool name the intents can carry
    # The TypeScript bindings likewise: no function to implement for an @mcp tool.
    tools = render_typescript(doc).split("export interface AuwgentTools {")[1].split("\n}")[0]
    assert "note?: (args:" in tools
    assert not any(f"{name}?:" in tools for name in ("list_dir", "delete_file", "tag_file"))


@pytest.mark.parametrize(
    ("name", "made"),
    [("tag-file", "tag_file"), ("files.read", "files_read"), ("2fa code", "tool_2fa_code"),
     ("--x--", "x"), ("émoji-só", "moji_s"), ("***", "")],
)  # fmt: skip
def test_identifier_for_a_server_name(name: str, made: str) -> None:
    assert identifier_for(name) == made


def test_import_declares_other_names_under_identifiers_and_never_twice() -> None:
    def tool(name: str) -> Any:
        schema = {"type": "object", "properties": {"p": {"type": "string"}}, "required": ["p"]}
        return SimpleNamespace(name=name, input_schema=schema, output_schema=None, description="")

    text = declaration_text("Files", "servers.agent", [tool("read-file"), tool("read_file")])
    assert text.splitlines()[2:] == [
        "// left out `read-file`: its name is not an identifier (`read_file` is taken)",
        "tool read_file(p: string): string @mcp(Files)",
    ]
    text = declaration_text("Files", "servers.agent", [tool("a.b"), tool("a-b"), tool("!")])
    assert text.splitlines()[2:] == [
        'tool a_b(p: string): string @mcp(Files, "a.b")',
        "// left out `a-b`: its name is not an identifier (`a_b` is taken)",
        "// left out `!`: its name is not an identifier (no identifier can be made of it)",
    ]
