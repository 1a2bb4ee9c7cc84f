"""Validation, coercion and description of values against IR types.

Every function here is pure: it reads an IR type (the plain ``{"kind": ...}`` dicts of
``docs/ir.md``) and the document's named-type table, and never does I/O.

Rules (also written up in ``docs/prompts.md``):

- ``text`` and ``string`` accept strings; ``number`` accepts finite ints and floats (never
  booleans); ``boolean`` accepts ``True``/``False``.
- Objects reject keys they do not declare. An optional field may be **absent**; ``None`` is not
  a value of any type, so ``{"age": None}`` for ``age?: number`` is invalid. The lenient
  :func:`coerce` step drops ``None``-valued optional fields, so a model that writes ``null`` for
  "not given" is still understood, while validated values always match the generated TypedDicts.
- :func:`coerce` converts only what the documented rule names (see its docstring) and never
  guesses beyond it; the caller validates its result.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from auwgent._records import record
from auwgent._typing import unhandled

# The IR's types (auwgent.ir.model) for the type checker; at run time the IR is plain dicts and
# these names only stay importable (building the TypedDicts costs import time).
if TYPE_CHECKING:
    from typing_extensions import TypeIs

    from auwgent.ir.model import ArrayType, ObjectType, PrimitiveType, UnionType
    from auwgent.ir.model import Field as IRField
    from auwgent.ir.model import Type as IRType
else:
    IRType = IRField = Mapping[str, Any]
Types = Mapping[str, IRType]

__all__ = [
    "IRField",
    "IRType",
    "coerce",
    "describe",
    "describe_fields",
    "example_value",
    "field_map",
    "format_number",
    "object_type",
    "referenced_types",
    "resolve",
    "to_json_schema",
    "validate",
]

_TRUE_WORDS = frozenset({"true", "yes", "1"})
_FALSE_WORDS = frozenset({"false", "no", "0"})
_NUMBER_RE = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_INT_RE = re.compile(r"[+-]?\d+")
_PRIMITIVES = frozenset({"text", "string", "number", "boolean"})


# Each function below that dispatches on a type's ``kind`` handles every kind of
# ``auwgent.ir.model.Type``; its last branch passes the type to ``unhandled``, which only a
# ``Never`` may reach, so the type checker fails when a kind is added and not handled.


def _primitive(type_: IRType) -> TypeIs[PrimitiveType]:
    return type_["kind"] in _PRIMITIVES


# ---------------------------------------------------------------------------------------------
# Looking types up


def resolve(type_: IRType, types: Types) -> IRType:
    """Follow ``ref`` types to the named type they stand for.

    Raises ``KeyError`` naming the type when a reference is not in ``types`` (a compiled IR
    document never contains one).
    """
    seen: set[str] = set()
    while type_["kind"] == "ref":
        name = type_["name"]
        if name in seen:
            raise KeyError(f"type {name!r} refers to itself")
        seen.add(name)
        if name not in types:
            raise KeyError(f"unknown type {name!r}")
        type_ = types[name]
    return type_


def object_type(fields: Sequence[IRField]) -> ObjectType:
    """An inline IR object type holding ``fields`` (a call's parameters, an intent's fields)."""
    return {"kind": "object", "fields": list(fields)}


def field_map(type_: IRType, types: Types) -> dict[str, IRField]:
    """The fields of an object type (refs followed) by name; ``{}`` for any other type."""
    resolved = resolve(type_, types)
    if resolved["kind"] != "object":
        return {}
    return {f["name"]: f for f in resolved["fields"]}


def referenced_types(type_: IRType, types: Types) -> list[str]:
    """Every named type reachable from ``type_``, in first-use order (depth first)."""
    found: list[str] = []

    def walk(t: IRType) -> None:
        if t["kind"] == "ref":
            if t["name"] not in found:
                found.append(t["name"])
                if t["name"] in types:
                    walk(types[t["name"]])
        elif t["kind"] == "array":
            walk(t["items"])
        elif t["kind"] == "object":
            for f in t["fields"]:
                walk(f["type"])
        elif t["kind"] == "union":
            for v in t["variants"]:
                walk(v)
        elif not _primitive(t) and t["kind"] != "literal":
            unhandled(t)  # (no names inside a primitive or a literal type)

    walk(type_)
    return found


# ---------------------------------------------------------------------------------------------
# Validation


def validate(value: Any, type_: IRType, types: Types, *, path: str = "$") -> list[str]:
    """Check ``value`` against ``type_``; return every error (empty when valid).

    Each error names the path, the expected type and what was given, e.g.
    ``$.user.age: expected number, got string "x"``.
    """
    if _primitive(type_):
        kind = type_["kind"]
        if kind == "number":
            return [] if _is_number(value) else [_mismatch(path, "number", value)]
        if kind == "boolean":
            return [] if isinstance(value, bool) else [_mismatch(path, "boolean", value)]
        return [] if isinstance(value, str) else [_mismatch(path, "string", value)]
    if type_["kind"] == "literal":
        ok = isinstance(value, str) and value == type_["value"]
        return [] if ok else [_mismatch(path, json.dumps(type_["value"]), value)]
    if type_["kind"] == "ref":
        if type_["name"] not in types:
            return [f"{path}: unknown type {type_['name']!r}"]
        return validate(value, types[type_["name"]], types, path=path)
    if type_["kind"] == "array":
        return _validate_array(value, type_, types, path)
    if type_["kind"] == "object":
        return _validate_object(value, type_, types, path)
    if type_["kind"] == "union":
        return _validate_union(value, type_, types, path)
    return [f"{path}: unknown type kind {unhandled(type_)['kind']!r}"]


def _validate_array(value: Any, type_: ArrayType, types: Types, path: str) -> list[str]:
    if not isinstance(value, (list, tuple)):
        return [_mismatch(path, describe(type_, types), value)]
    errors: list[str] = []
    for i, item in enumerate(value):
        errors.extend(validate(item, type_["items"], types, path=f"{path}[{i}]"))
    return errors


def _validate_object(value: Any, type_: ObjectType, types: Types, path: str) -> list[str]:
    if not isinstance(value, Mapping):
        return [_mismatch(path, "object", value)]
    errors: list[str] = []
    declared = {f["name"]: f for f in type_["fields"]}
    for name, field in declared.items():
        sub = _join(path, name)
        if name not in value:
            if not field["optional"]:
                errors.append(f"{sub}: missing required field ({describe(field['type'], types)})")
            continue
        errors.extend(validate(value[name], field["type"], types, path=sub))
    for key in value:
        if key not in declared:
            allowed = ", ".join(declared) or "none"
            errors.append(f"{_join(path, str(key))}: unexpected field (allowed: {allowed})")
    return errors


def _validate_union(value: Any, type_: UnionType, types: Types, path: str) -> list[str]:
    best: list[str] | None = None
    for variant in type_["variants"]:
        errors = validate(value, variant, types, path=path)
        if not errors:
            return []
        if best is None or len(errors) < len(best):
            best = errors
    head = _mismatch(path, describe(type_, types), value)
    # Literal unions explain themselves; for object unions the closest variant's errors say
    # what to fix.
    if isinstance(value, Mapping) and best:
        return [head, *best]
    return [head]


def _is_number(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return math.isfinite(value)


def _join(path: str, name: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        return f"{path}.{name}"
    return f"{path}[{json.dumps(name)}]"


def _mismatch(path: str, expected: str, value: Any) -> str:
    return f"{path}: expected {expected}, got {_given(value)}"


def _given(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {'true' if value else 'false'}"
    if isinstance(value, (int, float)):
        return f"number {format_number(value)}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"string {json.dumps(shown, ensure_ascii=False)}"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


# ---------------------------------------------------------------------------------------------
# Coercion


def coerce(value: Any, type_: IRType, types: Types) -> Any:
    """Apply the lenient coercion rule, then return the (possibly unchanged) value.

    The whole rule:

    - number fields: a string holding a decimal number (``"28"``, ``" -2.5 "``, ``"1e3"``)
      becomes that number (an int when written without a fraction or exponent);
    - boolean fields: ``"true"``/``"yes"``/``"1"`` and ``"false"``/``"no"``/``"0"`` (any case,
      surrounding spaces ignored) and the numbers ``1``/``0`` become booleans;
    - string and text fields: numbers and booleans become their template rendering
      (``3``, ``2.5``, ``true``);
    - literal fields: the same scalar-to-string step, kept only if it gives the literal;
    - objects: fields are coerced by their declared type, and optional fields whose value is
      ``None`` are dropped (``null`` means "not given");
    - arrays: items are coerced; a union takes the first variant that the coerced value
      satisfies (a value that already satisfies a variant is left alone).

    Nothing else changes; the result is meant to be checked with :func:`validate`.
    """
    if type_["kind"] == "ref":
        return coerce(value, types[type_["name"]], types) if type_["name"] in types else value
    if _primitive(type_):
        kind = type_["kind"]
        if kind == "number":
            return _to_number(value)
        if kind == "boolean":
            return _to_boolean(value)
        return _to_string(value)
    if type_["kind"] == "literal":
        text = _to_string(value)
        return text if text == type_["value"] else value
    if type_["kind"] == "array":
        return (
            [coerce(item, type_["items"], types) for item in value]
            if isinstance(value, list)
            else value
        )
    if type_["kind"] == "object":
        return _coerce_object(value, type_, types) if isinstance(value, Mapping) else value
    if type_["kind"] == "union":
        return _coerce_union(value, type_, types)
    unhandled(type_)
    return value


def _coerce_object(value: Mapping[str, Any], type_: ObjectType, types: Types) -> dict[str, Any]:
    declared = {f["name"]: f for f in type_["fields"]}
    out: dict[str, Any] = {}
    for key, item in value.items():
        field = declared.get(key)
        if field is None:
            out[key] = item  # left for validate() to report
        elif item is None and field["optional"]:
            continue
        else:
            out[key] = coerce(item, field["type"], types)
    return out


def _coerce_union(value: Any, type_: UnionType, types: Types) -> Any:
    variants = type_["variants"]
    if any(not validate(value, v, types) for v in variants):
        return value
    for variant in variants:
        candidate = coerce(value, variant, types)
        if not validate(candidate, variant, types):
            return candidate
    return value


def _to_number(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    text = value.strip()
    if _INT_RE.fullmatch(text):
        return int(text)
    if _NUMBER_RE.fullmatch(text):
        number = float(text)
        return number if math.isfinite(number) else value
    return value


def _to_boolean(value: Any) -> Any:
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _TRUE_WORDS:
            return True
        if word in _FALSE_WORDS:
            return False
    elif isinstance(value, int) and not isinstance(value, bool) and value in (0, 1):
        return value == 1
    return value


def _to_string(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if _is_number(value):
        return format_number(value)
    return value


def format_number(value: float) -> str:
    """Render a number in its shortest form, the way JavaScript's ``String(n)`` does.

    ``3.0`` → ``"3"``, ``0.1`` → ``"0.1"``, ``1e21`` → ``"1e+21"``, ``1e-7`` → ``"1e-7"``.
    Matching JavaScript keeps prompts identical across runtimes in different languages.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        if abs(value) < 10**21:
            return str(value)
        value = float(value)  # JavaScript switches to exponent form from 1e21 on
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    # repr gives the shortest round-trip digits; re-place the decimal point as JS would.
    digits, exponent = _shortest_digits(abs(value))
    point = exponent + 1  # digits before the decimal point
    if 0 < point <= 21:
        if len(digits) <= point:
            return sign + digits + "0" * (point - len(digits))
        return sign + digits[:point] + "." + digits[point:]
    if -6 < point <= 0:
        return sign + "0." + "0" * (-point) + digits
    rest = "." + digits[1:] if len(digits) > 1 else ""
    exp = point - 1
    return f"{sign}{digits[0]}{rest}e{'+' if exp > 0 else '-'}{abs(exp)}"


def _shortest_digits(value: float) -> tuple[str, int]:
    """The shortest significant digits of a positive float and its decimal exponent."""
    text = repr(value)
    mantissa, _, exp_text = text.partition("e")
    exponent = int(exp_text) if exp_text else 0
    whole, _, frac = mantissa.partition(".")
    if frac == "0":
        frac = ""
    digits = (whole + frac).lstrip("0")
    # Exponent of the first significant digit.
    lead_zeros = len(whole + frac) - len((whole + frac).lstrip("0"))
    exponent += len(whole) - 1 - lead_zeros
    return digits.rstrip("0") or "0", exponent


# ---------------------------------------------------------------------------------------------
# JSON Schema


def to_json_schema(type_: IRType, types: Types) -> dict[str, Any]:
    """A plain JSON Schema (draft 2020-12 compatible) for ``type_``.

    Named types are inlined; only a type that contains itself is emitted once under ``$defs``
    and referenced with ``$ref``. Objects list ``required`` fields and set
    ``additionalProperties: false``; unions of literals become one ``enum``; field
    descriptions become ``description``.
    """
    defs: dict[str, dict[str, Any]] = {}
    schema = _schema(type_, types, (), defs)
    if defs:
        schema = {**schema, "$defs": dict(sorted(defs.items()))}
    return schema


def _schema(
    type_: IRType, types: Types, stack: tuple[str, ...], defs: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    if _primitive(type_):
        kind = type_["kind"]
        return {"type": "string" if kind in ("text", "string") else kind}
    if type_["kind"] == "literal":
        return {"type": "string", "enum": [type_["value"]]}
    if type_["kind"] == "array":
        return {"type": "array", "items": _schema(type_["items"], types, stack, defs)}
    if type_["kind"] == "object":
        return _object_schema(type_, types, stack, defs)
    if type_["kind"] == "union":
        variants = type_["variants"]
        literals = [v["value"] for v in variants if v["kind"] == "literal"]
        if len(literals) == len(variants):
            return {"type": "string", "enum": literals}
        return {"anyOf": [_schema(v, types, stack, defs) for v in variants]}
    if type_["kind"] == "ref":
        name = type_["name"]
        if name in stack:
            if name not in defs:
                defs[name] = {}  # placeholder: stops re-entry while it is being built
                defs[name] = _schema(types[name], types, (name,), defs)
            return {"$ref": f"#/$defs/{name}"}
        return _schema(resolve(type_, types), types, (*stack, name), defs)
    raise ValueError(f"unknown type kind {unhandled(type_)['kind']!r}")


def _object_schema(
    type_: ObjectType, types: Types, stack: tuple[str, ...], defs: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    for f in type_["fields"]:
        prop = _schema(f["type"], types, stack, defs)
        if f.get("description"):
            prop = {**prop, "description": f["description"]}
        properties[f["name"]] = prop
    return {
        "type": "object",
        "properties": properties,
        "required": [f["name"] for f in type_["fields"] if not f["optional"]],
        "additionalProperties": False,
    }


# ---------------------------------------------------------------------------------------------
# Description


def describe(type_: IRType, types: Types, *, expand: bool = False, notes: bool = False) -> str:
    """Compact TypeScript-like text: ``string``, ``number[]``, ``{ name: string, age?: number }``,
    ``"low" | "high"``, ``Person``.

    With ``expand=True`` named types are written out as their structure (a type that contains
    itself is still written by name where it recurs), for ``{{@schema(...)}}`` in prompts.
    With ``notes=True`` each field's ``@desc`` follows it as a comment:
    ``{ name: string /* Full name */ }``.
    """
    return _Describer(types, notes).type(type_, () if expand else None)


def describe_fields(
    fields: Sequence[IRField], types: Types, *, expand: bool = False, notes: bool = False
) -> str:
    """Fields as ``name: string, age?: number`` (for signatures and object bodies)."""
    return _Describer(types, notes).fields(fields, () if expand else None)


@record
class _Describer:
    types: Types
    notes: bool

    def type(self, type_: IRType, stack: tuple[str, ...] | None) -> str:
        """``stack`` holds the named types being written out; ``None`` writes names only."""
        if _primitive(type_):
            kind = type_["kind"]
            return "string" if kind == "text" else str(kind)
        if type_["kind"] == "literal":
            return json.dumps(type_["value"], ensure_ascii=False)
        if type_["kind"] == "array":
            inner = self.type(type_["items"], stack)
            return f"({inner})[]" if type_["items"]["kind"] == "union" else f"{inner}[]"
        if type_["kind"] == "object":
            body = self.fields(type_["fields"], stack)
            return f"{{ {body} }}" if body else "{}"
        if type_["kind"] == "union":
            return " | ".join(self.type(v, stack) for v in type_["variants"])
        if type_["kind"] == "ref":
            name = type_["name"]
            if stack is None or name in stack or name not in self.types:
                return str(name)
            return self.type(self.types[name], (*stack, name))
        return str(unhandled(type_)["kind"])

    def fields(self, fields: Iterable[IRField], stack: tuple[str, ...] | None) -> str:
        parts = []
        for f in fields:
            text = f"{f['name']}{'?' if f['optional'] else ''}: {self.type(f['type'], stack)}"
            note = f.get("description")
            if self.notes and note:
                # "*/" would end the comment early; the model only needs the words.
                text += f" /* {note.replace('*/', '* /')} */"
            parts.append(text)
        return ", ".join(parts)


# ---------------------------------------------------------------------------------------------
# Example values


def example_value(type_: IRType, types: Types) -> Any:
    """A deterministic sample value of ``type_`` that :func:`validate` accepts.

    Strings are ``"example"``, numbers ``1``, booleans ``True``, arrays hold one sample item,
    objects hold every field, unions take their first variant. Where a named type recurs, the
    recursion is cut at an optional field (left out) or an array (left empty). A type that
    requires itself with no such exit has no finite value; this returns ``None`` there.
    """
    return _example(type_, types, ())


def _example(type_: IRType, types: Types, stack: tuple[str, ...]) -> Any:
    kind = type_["kind"]
    if kind in ("text", "string"):
        return "example"
    if kind == "number":
        return 1
    if kind == "boolean":
        return True
    if type_["kind"] == "literal":
        return type_["value"]
    if type_["kind"] == "array":
        if _recurs(type_["items"], types, stack):
            return []
        return [_example(type_["items"], types, stack)]
    if type_["kind"] == "object":
        out: dict[str, Any] = {}
        for f in type_["fields"]:
            if f["optional"] and _recurs(f["type"], types, stack):
                continue
            out[f["name"]] = _example(f["type"], types, stack)
        return out
    if type_["kind"] == "union":
        variants = type_["variants"]
        finite = [v for v in variants if not _recurs(v, types, stack)]
        return _example((finite or variants)[0], types, stack)
    if type_["kind"] == "ref":
        name = type_["name"]
        if name in stack or name not in types:
            return None
        return _example(types[name], types, (*stack, name))
    return None


def _recurs(type_: IRType, types: Types, stack: tuple[str, ...]) -> bool:
    """Whether expanding ``type_`` would meet a named type already being expanded."""
    return any(name in stack for name in referenced_types(type_, types))


def parsed_result(result: Any, returns: IRType, types: Types) -> Any:
    """A JSON-string result of a callable declared to return structured data, decoded (for
    workflows and code mode); anything else as it is."""
    if not isinstance(result, str):
        return result
    try:
        kind = resolve(returns, types)["kind"]
    except KeyError:
        return result
    if kind in ("object", "array", "union", "number", "boolean"):
        try:
            return json.loads(result)
        except ValueError:
            return result
    return result
