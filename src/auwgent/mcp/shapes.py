"""Types across the MCP boundary: JSON Schema to IR types, IR types to ``.agent`` source, and
a canonical form to compare a declaration with what a server says.

The DSL has strings, numbers, booleans, string literals, arrays, objects and unions; JSON
Schema has more. ``integer`` becomes ``number``; ``null`` in a union is dropped (an optional
parameter is one the server does not require); ``$ref`` is followed into ``$defs``. A schema
the DSL cannot say (a free-form object, an array without ``items``, ``not``, a recursive
definition) gives ``None``: the importer reports it, the drift check leaves it alone.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

JSON = dict[str, Any]

__all__ = [
    "canonical",
    "from_json_schema",
    "is_identifier",
    "params_of",
    "returns_of",
    "source_field",
    "source_string",
    "source_type",
]

_PRIMITIVES = {"string": "string", "number": "number", "integer": "number", "boolean": "boolean"}


def from_json_schema(schema: Any, root: Mapping[str, Any] | None = None) -> JSON | None:
    """The IR type of ``schema`` (``root`` holds its ``$defs``), or ``None``."""
    return _convert(schema, root if root is not None else schema, ())


def _convert(schema: Any, root: Mapping[str, Any], seen: tuple[str, ...]) -> JSON | None:
    if not isinstance(schema, Mapping):
        return None
    ref = schema.get("$ref")
    if isinstance(ref, str):
        if ref in seen:
            return None  # recursive: the DSL has no way to say it inline
        return _convert(_resolve(ref, root), root, (*seen, ref))
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return _union([_convert(s, root, seen) for s in schema[key] if not _is_null(s)])
    if "enum" in schema or "const" in schema:
        values = schema["enum"] if "enum" in schema else [schema["const"]]
        values = [v for v in values if v is not None]
        if values and all(isinstance(v, str) for v in values):
            return _union([{"kind": "literal", "value": v} for v in values])
        return None
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        return _union([_convert({**schema, "type": k}, root, seen) for k in kinds])
    if kind in _PRIMITIVES:
        return {"kind": _PRIMITIVES[kind]}
    if kind == "array":
        items = _convert(schema.get("items"), root, seen)
        return {"kind": "array", "items": items} if items is not None else None
    if kind == "object" or "properties" in schema:
        return _object(schema, root, seen)
    return None


def _object(
    schema: Mapping[str, Any], root: Mapping[str, Any], seen: tuple[str, ...]
) -> JSON | None:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        return None  # a free-form object
    required = set(schema.get("required") or ())
    fields = []
    for name, prop in properties.items():
        type_ = _convert(prop, root, seen)
        if type_ is None:
            return None
        description = prop.get("description") if isinstance(prop, Mapping) else None
        fields.append(
            {
                "name": name,
                "type": type_,
                "optional": name not in required,
                "description": description if isinstance(description, str) else None,
            }
        )
    return {"kind": "object", "fields": fields}


def _resolve(ref: str, root: Mapping[str, Any]) -> Any:
    if not ref.startswith("#/"):
        return None
    node: Any = root
    for part in ref[2:].split("/"):
        if not isinstance(node, Mapping):
            return None
        node = node.get(part.replace("~1", "/").replace("~0", "~"))
    return node


def _is_null(schema: Any) -> bool:
    return isinstance(schema, Mapping) and schema.get("type") == "null"


def _union(variants: list[JSON | None]) -> JSON | None:
    if not variants or any(v is None for v in variants):
        return None
    unique: list[JSON] = []
    for variant in variants:
        if variant not in unique:
            unique.append(variant)  # type: ignore[arg-type]
    return unique[0] if len(unique) == 1 else {"kind": "union", "variants": unique}


def params_of(input_schema: Any) -> list[JSON] | None:
    """A tool's parameters (IR fields) from its ``inputSchema``; ``None`` if one cannot be said."""
    if not isinstance(input_schema, Mapping):
        return None
    if not input_schema.get("properties"):
        return []
    converted = from_json_schema(input_schema)
    return list(converted["fields"]) if converted is not None else None


def returns_of(output_schema: Any) -> JSON | None:
    """The declared return type a server's ``outputSchema`` stands for.

    Servers wrap a value that is not an object as ``{"result": value}`` (the SDK does), and the
    runtime unwraps it, so ``{"result": number}`` is ``number``. ``None`` when there is no
    schema or the DSL cannot say it.
    """
    if not isinstance(output_schema, Mapping):
        return None
    converted = from_json_schema(output_schema)
    if converted is not None and converted["kind"] == "object":
        fields = converted["fields"]
        if len(fields) == 1 and fields[0]["name"] == "result":
            return dict(fields[0]["type"])
    return converted


def canonical(type_: Mapping[str, Any], types: Mapping[str, Any], depth: int = 0) -> Any:
    """A comparable form of an IR type: named types resolved, objects and unions unordered,
    descriptions left out (two types are the same shape when their forms are equal)."""
    kind = type_.get("kind")
    if depth > 32:
        return "..."  # a recursive named type: deep enough to have compared everything
    if kind == "ref":
        target = types.get(str(type_.get("name")))
        return canonical(target, types, depth + 1) if target is not None else ("ref",)
    if kind == "literal":
        return ("literal", type_["value"])
    if kind == "array":
        return ("array", canonical(type_["items"], types, depth + 1))
    if kind == "object":
        fields = (
            (f["name"], f["optional"], canonical(f["type"], types, depth + 1))
            for f in type_["fields"]
        )
        return ("object", tuple(sorted(fields, key=repr)))
    if kind == "union":
        variants = {repr(canonical(v, types, depth + 1)): v for v in type_["variants"]}
        return ("union", tuple(sorted(variants)))
    return (str(kind),)


def source_type(type_: Mapping[str, Any], *, nested: bool = False) -> str:
    """An IR type (without refs) as ``.agent`` source: ``string``, ``{ a: number }[]``, ..."""
    kind = type_["kind"]
    if kind == "literal":
        return json.dumps(type_["value"], ensure_ascii=False)
    if kind == "array":
        return source_type(type_["items"], nested=True) + "[]"
    if kind == "object":
        return "{ " + ", ".join(source_field(f) for f in type_["fields"]) + " }"
    if kind == "union":
        text = " | ".join(source_type(v) for v in type_["variants"])
        return f"({text})" if nested else text
    if kind == "ref":
        return str(type_["name"])
    return str(kind)


def source_field(field: Mapping[str, Any]) -> str:
    """``name?: T @desc "..."``."""
    mark = "?" if field["optional"] else ""
    text = f"{field['name']}{mark}: {source_type(field['type'])}"
    description = field.get("description")
    return text + (f" @desc {source_string(description)}" if description else "")


def source_string(text: str) -> str:
    """``text`` as a one-line ``.agent`` string literal (runs of white space become one space)."""
    flat = " ".join(text.split())
    escaped = flat.replace("\\", "\\\\").replace('"', '\\"')
    return f'"{escaped}"'


def is_identifier(name: str) -> bool:
    """Whether ``name`` can be a tool or parameter name in ``.agent`` source."""
    return name.isascii() and name.replace("_", "a").isalnum() and not name[0].isdigit()


def identifier_for(name: str) -> str:
    """An identifier for the tool name ``name``: each run of other characters (``-``, ``.``,
    ``/``, spaces) becomes ``_``; ``tool_`` goes before a leading digit; ``""`` when nothing
    of it is ASCII letters or digits."""
    words = "".join(c if c.isascii() and c.isalnum() else " " for c in name).split()
    joined = "_".join(words)
    return f"tool_{joined}" if joined[:1].isdigit() else joined
