"""Write ts/src/ir.ts: the IR's TypeScript types, made from ``auwgent.ir.model``.

``auwgent.ir.model`` is held equal to ``src/auwgent/ir/schema.json`` by
``tests/compiler/test_ir_model.py``; this script turns each of its names into the TypeScript
declaration of the same name (a ``TypedDict`` into an interface, a union or list alias into a
type), so the TypeScript runtime reads the IR by the same shapes. ``tests/test_ts_ir.py``
fails when ts/src/ir.ts differs from what this writes.

    python scripts/generate_ts_ir.py          # rewrite ts/src/ir.ts
    python scripts/generate_ts_ir.py --check  # exit 1 when it is stale
"""

from __future__ import annotations

import sys
import types
import typing
from pathlib import Path
from typing import Any, Literal

from auwgent.ir import model

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "ts" / "src" / "ir.ts"

_SCALARS: dict[Any, str] = {
    str: "string",
    int: "number",
    float: "number",
    bool: "boolean",
    type(None): "null",
    Any: "unknown",
}


def _is_typed_dict(value: Any) -> bool:
    return isinstance(value, type) and issubclass(value, dict) and hasattr(value, "__total__")


def _aliases() -> dict[Any, str]:
    """Each alias of the model (``Type``, ``Expr``, ``Block``, ...) by its value."""
    found: dict[Any, str] = {}
    for name in model.__all__:
        value = getattr(model, name)
        if not _is_typed_dict(value):
            found[value] = name
    return found


ALIASES = _aliases()


def ts_type(hint: Any, *, top: bool = False) -> str:
    """The TypeScript of one annotation; a named alias by its name (unless ``top``)."""
    if not top and hint in ALIASES:
        return ALIASES[hint]
    if hint in _SCALARS:
        return _SCALARS[hint]
    if _is_typed_dict(hint):
        return str(hint.__name__)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal:
        return " | ".join(_literal(a) for a in args)
    if origin in (types.UnionType, typing.Union):
        return _union(args, top)
    if origin is list:
        inner = ts_type(args[0])
        return f"({inner})[]" if " | " in inner else f"{inner}[]"
    if origin is dict:
        return f"Record<string, {ts_type(args[1])}>"
    raise TypeError(f"no TypeScript for {hint!r}")


def _union(args: tuple[Any, ...], top: bool) -> str:
    nullable = type(None) in args
    rest = tuple(a for a in args if a is not type(None))
    whole = typing.Union[rest] if len(rest) > 1 else rest[0]  # noqa: UP007 (a runtime value)
    parts = [ts_type(whole)] if whole in ALIASES and not top else [ts_type(a) for a in rest]
    if nullable:
        parts.append("null")
    return " | ".join(dict.fromkeys(parts))


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if isinstance(value, int) else f'"{value}"'


def _interface(cls: Any) -> list[str]:
    hints = typing.get_type_hints(cls)
    lines = [f"export interface {cls.__name__} {{"]
    for key, hint in hints.items():
        optional = "" if key in cls.__required_keys__ else "?"
        lines.append(f"  {_key(key)}{optional}: {ts_type(hint)};")
    return [*lines, "}"]


def _key(key: str) -> str:
    return key if key.isidentifier() else f'"{key}"'


def render() -> str:
    """The text of ts/src/ir.ts."""
    lines = [
        "// Generated from auwgent.ir.model (held equal to src/auwgent/ir/schema.json) by",
        "// scripts/generate_ts_ir.py: do not edit. The IR document's shapes (docs/ir.md).",
        "",
    ]
    for name in sorted(model.__all__):
        value = getattr(model, name)
        if _is_typed_dict(value):
            lines += _interface(value)
        else:
            lines.append(f"export type {name} = {ts_type(value, top=True)};")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        stale = not OUTPUT.is_file() or OUTPUT.read_text(encoding="utf-8") != text
        if stale:
            print("ts/src/ir.ts is stale: run python scripts/generate_ts_ir.py")
        return 1 if stale else 0
    OUTPUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
