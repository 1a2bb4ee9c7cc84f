"""The IR's TypedDicts (auwgent.ir.model) say what schema.json says, object by object.

Every object of the schema that has ``properties`` (the definitions and the variants of each
``oneOf``) is paired with its TypedDict below; the pairing must cover them all. For each pair
the keys, the required keys, and the literal values of tag-like keys (``const`` / ``enum``)
must be the same.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator
from typing import Any

import pytest

from auwgent.ir import load_schema
from auwgent.ir import model as m

PAIRS: dict[str, Any] = {
    "": m.Document,
    "/$defs/PrimitiveType": m.PrimitiveType,
    "/$defs/LiteralType": m.LiteralType,
    "/$defs/ArrayType": m.ArrayType,
    "/$defs/ObjectType": m.ObjectType,
    "/$defs/RefType": m.RefType,
    "/$defs/UnionType": m.UnionType,
    "/$defs/Field": m.Field,
    "/$defs/Agent": m.Agent,
    "/$defs/Config": m.Config,
    "/$defs/Config/properties/taint": m.TaintPolicy,
    "/$defs/History": m.History,
    "/$defs/OutputCap": m.OutputCap,
    "/$defs/Model": m.Model,
    "/$defs/Tool": m.Tool,
    "/$defs/Tool/properties/sensitive": m.Sensitive,
    "/$defs/Approval": m.Approval,
    "/$defs/McpServer/oneOf/0": m.McpStdioServer,
    "/$defs/McpServer/oneOf/1": m.McpHttpServer,
    "/$defs/Workflow": m.Workflow,
    "/$defs/HelperUse": m.HelperUse,
    "/$defs/Intent": m.Intent,
    "/$defs/Example": m.Example,
    "/$defs/PromptPart/oneOf/0": m.PromptRef,
    "/$defs/PromptPart/oneOf/1": m.PromptInline,
    "/$defs/NamedPrompt": m.NamedPrompt,
    "/$defs/Persona": m.Persona,
    "/$defs/PromptItem/oneOf/0": m.PromptText,
    "/$defs/PromptItem/oneOf/1": m.PromptExample,
    "/$defs/PromptItem/oneOf/2": m.PromptIf,
    "/$defs/TNode/oneOf/0": m.TText,
    "/$defs/TNode/oneOf/1": m.TExpr,
    "/$defs/TNode/oneOf/2": m.TIf,
    "/$defs/TNode/oneOf/3": m.TSchema,
    "/$defs/Expr/oneOf/0": m.LitExpr,
    "/$defs/Expr/oneOf/1": m.NameExpr,
    "/$defs/Expr/oneOf/2": m.MemberExpr,
    "/$defs/Expr/oneOf/3": m.IndexExpr,
    "/$defs/Expr/oneOf/4": m.ArrayExpr,
    "/$defs/Expr/oneOf/5": m.ObjectExpr,
    "/$defs/Expr/oneOf/6": m.UnaryExpr,
    "/$defs/Expr/oneOf/7": m.BinaryExpr,
    "/$defs/Expr/oneOf/8": m.CallExpr,
    "/$defs/NamedExpr": m.NamedExpr,
    "/$defs/Stmt/oneOf/0": m.BindStmt,
    "/$defs/Stmt/oneOf/1": m.IfStmt,
    "/$defs/Stmt/oneOf/1/properties/branches/items": m.IfBranch,
    "/$defs/Stmt/oneOf/2": m.ReturnStmt,
    "/$defs/Stmt/oneOf/3": m.ExprStmt,
}


def _objects(node: Any, pointer: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every schema object with ``properties``, by JSON pointer (conditional parts left out:
    ``if`` / ``then`` / ``else`` only narrow the properties of the object they sit in)."""
    if isinstance(node, dict):
        if "properties" in node and pointer.rsplit("/", 1)[-1] not in {"if", "then", "else"}:
            yield pointer, node
        for key, value in node.items():
            if key in {"if", "then", "else"}:
                continue
            if key == "properties" and pointer == "":
                # The document's own properties are maps of definitions, not objects.
                continue
            yield from _objects(value, f"{pointer}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _objects(value, f"{pointer}/{i}")


SCHEMA = load_schema()
OBJECTS = dict(_objects(SCHEMA))


def _resolve(pointer: str) -> dict[str, Any]:
    node: Any = SCHEMA
    for part in pointer.split("/")[1:]:
        node = node[int(part)] if isinstance(node, list) else node[part]
    assert isinstance(node, dict)
    return node


def _literals(hint: Any) -> set[object] | None:
    """The values a hint allows when it is made of literals (and ``None``), else ``None``."""
    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        return set(typing.get_args(hint))
    if hint is type(None):
        return {None}
    if origin in (typing.Union, types.UnionType):
        values: set[object] = set()
        for arg in typing.get_args(hint):
            found = _literals(arg)
            if found is None:
                return None
            values |= found
        return values
    return None


def test_every_schema_object_has_its_typed_dict() -> None:
    assert sorted(OBJECTS) == sorted(PAIRS)


@pytest.mark.parametrize("pointer", sorted(PAIRS))
def test_keys_agree(pointer: str) -> None:
    schema, typed = _resolve(pointer), PAIRS[pointer]
    keys = typed.__required_keys__ | typed.__optional_keys__
    assert keys == set(schema["properties"]), typed.__name__
    assert typed.__required_keys__ == set(schema.get("required", ())), typed.__name__


@pytest.mark.parametrize("pointer", sorted(PAIRS))
def test_tags_agree(pointer: str) -> None:
    schema, typed = _resolve(pointer), PAIRS[pointer]
    hints = typing.get_type_hints(typed)
    for key, prop in schema["properties"].items():
        if "const" in prop:
            allowed = {prop["const"]}
        elif "enum" in prop:
            allowed = set(prop["enum"])
        else:
            continue
        assert _literals(hints[key]) == allowed, f"{typed.__name__}.{key}"


def test_a_lowered_document_is_read_through_the_types() -> None:
    # The lowering returns a Document (checked by mypy); its keys are the declared ones.
    from auwgent.compiler.pipeline import compile_sources

    result = compile_sources(
        {
            "main.agent": 'agent Main {\n  default config {\n    model: gemini("gemini-2.5-flash")\n'
            '    prompt: "hi"\n  }\n  input: Text\n  output: Text\n}\n'
        }
    )
    result.raise_for_errors()
    (doc,) = result.documents.values()
    assert set(doc) == m.Document.__required_keys__
    (agent,) = doc["agents"].values()
    assert set(agent) == m.Agent.__required_keys__
