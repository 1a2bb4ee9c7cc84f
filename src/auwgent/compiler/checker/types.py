"""The checker's view of types: small values, assignability, and how they read in messages.

AST type expressions (what the user wrote) are resolved into these values once, with named
types turned into ``Named`` references that a ``TypeTable`` can open. ``UNKNOWN`` stands for
"already reported": it is compatible with everything, so one mistake yields one diagnostic.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from ..._records import record
from ..diagnostics import listing

PrimName = Literal["string", "number", "boolean", "null", "text", "unknown"]


@record
class Prim:
    """A primitive: ``string``, ``number``, ``boolean``, ``null``, ``Text`` or unknown."""

    name: PrimName


@record
class Lit:
    """One string literal type, e.g. ``"low"``."""

    value: str


@record
class Arr:
    """``T[]``."""

    item: Ty


@record
class FieldTy:
    """One field of an object type."""

    name: str
    ty: Ty
    optional: bool = False


@record
class Obj:
    """An object type with its fields in declaration order."""

    fields: tuple[FieldTy, ...]

    def field(self, name: str) -> FieldTy | None:
        """The field called ``name``, or None."""
        for item in self.fields:
            if item.name == name:
                return item
        return None


@record
class Named:
    """A reference to a ``type`` block; ``key`` is unique across the project."""

    name: str
    key: str


@record
class UnionTy:
    """``A | B | ...`` (at least two variants)."""

    variants: tuple[Ty, ...]


Ty = Prim | Lit | Arr | Obj | Named | UnionTy

STRING = Prim("string")
NUMBER = Prim("number")
BOOLEAN = Prim("boolean")
NULL = Prim("null")
TEXT = Prim("text")
UNKNOWN = Prim("unknown")
# The primitives by name: resolving a written primitive reuses these values. They are the only
# ``Prim`` values ever made, so a primitive is compared by identity (``ty is NUMBER``): the
# same answer as ``==`` without a call to the records' Python-level ``__eq__``.
PRIMS: dict[str, Prim] = {p.name: p for p in (STRING, NUMBER, BOOLEAN, NULL, TEXT, UNKNOWN)}

#: Named types resolve through this table: key -> object type.
TypeTable = Mapping[str, Obj]

# Recursive types (``type Node { children: Node[] }``) compare by key first; the depth
# guard only stops pathological structural comparisons between two different recursive types.
_MAX_DEPTH = 32


def union_of(variants: list[Ty]) -> Ty:
    """A union of ``variants`` with duplicates removed; a single variant is returned as is."""
    if len(variants) == 1 and not isinstance(variants[0], UnionTy):
        return variants[0]  # the common case: what the loop below would return
    # A dict keeps the first of equal variants in order, at one hash each: a list's `in`
    # made a union of thousands of string literals quadratic.
    unique: dict[Ty, None] = {}
    for variant in variants:
        unique.update(
            dict.fromkeys(variant.variants if isinstance(variant, UnionTy) else (variant,))
        )
    flat = list(unique)
    if any(item is UNKNOWN for item in flat):
        return UNKNOWN
    return flat[0] if len(flat) == 1 else UnionTy(tuple(flat))


def resolve(ty: Ty, table: TypeTable) -> Ty:
    """Open a ``Named`` type into its object type (unknown names become UNKNOWN)."""
    if isinstance(ty, Named):
        return table.get(ty.key, UNKNOWN)
    return ty


def widen(ty: Ty) -> Ty:
    """The type a ``let`` gives a value: string literals widen to ``string``."""
    if isinstance(ty, Lit):
        return STRING
    if isinstance(ty, UnionTy) and all(isinstance(v, Lit) for v in ty.variants):
        return STRING
    return ty


def is_unknown(ty: Ty) -> bool:
    """True for the error-recovery type."""
    return ty is UNKNOWN


def assignable(src: Ty, dst: Ty, table: TypeTable, depth: int = 0) -> bool:
    """True when a value of type ``src`` may be used where ``dst`` is expected."""
    if src is dst or src is UNKNOWN or dst is UNKNOWN or depth > _MAX_DEPTH:
        return True
    # Values of two classes are never equal; skip the Python-level ``__eq__`` for them.
    if src.__class__ is dst.__class__ and src == dst:
        return True
    if isinstance(src, UnionTy):
        return all(assignable(v, dst, table, depth + 1) for v in src.variants)
    if isinstance(dst, UnionTy):
        return any(assignable(src, v, table, depth + 1) for v in dst.variants)
    if isinstance(src, Named) or isinstance(dst, Named):
        return assignable(resolve(src, table), resolve(dst, table), table, depth + 1)
    return _assignable_simple(src, dst, table, depth)


def _assignable_simple(src: Ty, dst: Ty, table: TypeTable, depth: int) -> bool:
    if isinstance(dst, Prim) and dst.name in ("string", "text"):
        return isinstance(src, Lit) or src is STRING or src is TEXT
    if isinstance(src, Arr) and isinstance(dst, Arr):
        return assignable(src.item, dst.item, table, depth + 1)
    if isinstance(src, Obj) and isinstance(dst, Obj):
        return _object_assignable(src, dst, table, depth)
    return False


def _object_assignable(src: Obj, dst: Obj, table: TypeTable, depth: int) -> bool:
    for want in dst.fields:
        have = src.field(want.name)
        if have is None:
            if not want.optional:
                return False
            continue
        if not assignable(have.ty, want.ty, table, depth + 1):
            return False
    return True


def missing_fields(src: Ty, dst: Ty, table: TypeTable) -> list[str]:
    """Required fields of object type ``dst`` that object type ``src`` lacks (for messages)."""
    src, dst = resolve(src, table), resolve(dst, table)
    if not isinstance(src, Obj) or not isinstance(dst, Obj):
        return []
    return [f.name for f in dst.fields if not f.optional and src.field(f.name) is None]


def display(ty: Ty) -> str:
    """The type as a user would write it in a ``.agent`` file."""
    if isinstance(ty, Prim):
        return {"text": "Text", "unknown": "unknown"}.get(ty.name, ty.name)
    if isinstance(ty, Lit):
        return '"' + ty.value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(ty, Arr):
        inner = display(ty.item)
        return f"({inner})[]" if isinstance(ty.item, UnionTy) else f"{inner}[]"
    if isinstance(ty, Named):
        return ty.name
    if isinstance(ty, UnionTy):
        return listing(ty.variants, display, " | ")
    if not ty.fields:
        return "{}"
    return (
        "{ " + listing(ty.fields, lambda f: f"{f.name}{'?' * f.optional}: {display(f.ty)}") + " }"
    )


def is_numeric(ty: Ty) -> bool:
    """True for ``number`` (or unknown)."""
    return ty is NUMBER or ty is UNKNOWN


def is_stringy(ty: Ty, table: TypeTable) -> bool:
    """True for ``string``, ``Text``, string literals and unions of them (or unknown)."""
    # Primitives and literals answered directly, as ``assignable`` would answer them.
    if ty.__class__ is Prim:
        return ty is STRING or ty is TEXT or ty is UNKNOWN
    if ty.__class__ is Lit:
        return True
    return assignable(ty, STRING, table)


def is_boolean(ty: Ty) -> bool:
    """True for ``boolean`` (or unknown)."""
    return ty is BOOLEAN or ty is UNKNOWN
