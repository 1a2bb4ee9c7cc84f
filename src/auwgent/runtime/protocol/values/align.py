"""Alignment to the schema: :class:`Reader` lines read values up with the declared fields
(aliases, dotted keys, coercion, duplicate keys) and records each repair."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from auwgent.runtime.evaluate.schema import (
    IRField,
    IRType,
    Types,
    coerce,
    field_map,
    resolve,
    validate,
)
from auwgent.runtime.protocol.values.common import MAX_DEPTH, BodyError, Repair, repair
from auwgent.runtime.protocol.values.lines import Entries, Raw
from auwgent.runtime.protocol.values.loose import JSON_WORD, TOO_LONG, Loose, bare, duplicate, show

if TYPE_CHECKING:
    from auwgent.ir.model import ArrayType, ObjectType

_STRINGY = ("string", "text", "literal")


OPEN = object()  # a streaming value not certain yet: left out of the snapshot
_MAX_REPAIRS = 100

Check = Callable[[Any, int], bool]  # (value, its depth if it is an object or list)
_SCALARS = (str, int, float, bool)
_NUMBERS = (int, float, bool)
_CHECKED_KINDS = ("string", "text", "literal", "number", "boolean", "object", "array")
_KEPT: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "text": (str,),
    "literal": (str,),
    "number": _NUMBERS,
    "boolean": (bool, float),
}
_Checks = dict[int, tuple["IRType | None", Check]]


def _check(type_: IRType | None, types: Types, cache: _Checks) -> Check:
    """The :meth:`Reader.plain` test of ``type_``, built from its parts' tests.

    A value that ``interpret`` and ``coerce`` would change, or that only the general reader
    can judge (a union, a key with a dot or an underscore that is not a field, nesting deeper
    than :data:`MAX_DEPTH`), fails it.
    """
    if type_ is None:
        return _untyped
    resolved = resolve(type_, types)
    kind = resolved["kind"]
    if kind not in _CHECKED_KINDS:
        return _never
    if kind in ("string", "text", "literal"):
        return lambda v, d: type(v) is str or _untyped_container(v, d)
    if kind == "number":
        return lambda v, d: type(v) in _NUMBERS or _untyped_container(v, d)
    if kind == "boolean":
        return lambda v, d: type(v) is bool or type(v) is float or _untyped_container(v, d)
    if resolved["kind"] == "array":
        return _array_check(type_, resolved, types, cache)
    if resolved["kind"] != "object":  # every other kind of _CHECKED_KINDS returned above
        return _never
    return _object_check(type_, resolved, types, cache)


def _array_check(type_: IRType, resolved: ArrayType, types: Types, cache: _Checks) -> Check:
    items: list[Check] = []  # filled below: a recursive type refers to itself

    def array(v: Any, d: int) -> bool:
        if type(v) is list:
            check = items[0]
            return d <= MAX_DEPTH and all(x is None or check(x, d + 1) for x in v)
        return type(v) is dict and _untyped(v, d) or type(v) in _SCALARS

    cache[id(type_)] = (type_, array)
    items.append(_cached_check(resolved["items"], types, cache))
    return array


def _object_check(type_: IRType, resolved: ObjectType, types: Types, cache: _Checks) -> Check:
    checks: dict[str, Check] = {}
    exact: dict[str, tuple[type, ...]] = {  # the scalar types a field keeps as they are
        f["name"]: _KEPT[k]
        for f in resolved["fields"]
        if (k := resolve(f["type"], types)["kind"]) in _KEPT
    }

    def obj(v: Any, d: int) -> bool:
        if type(v) is not dict:
            return type(v) is list and _untyped(v, d) or type(v) in _SCALARS
        if d > MAX_DEPTH:
            return False
        for key, x in v.items():
            if type(x) in exact.get(key, ()):
                continue
            check = checks.get(key)
            if x is None:
                return False
            if check is None:
                if "." in key or "_" in key or not _untyped(x, d + 1):
                    return False
            elif not check(x, d + 1):
                return False
        return True

    cache[id(type_)] = (type_, obj)
    for f in resolved["fields"]:
        checks[f["name"]] = _cached_check(f["type"], types, cache)
    return obj


def _cached_check(type_: IRType, types: Types, cache: _Checks) -> Check:
    found = cache.get(id(type_))
    if found is not None and found[0] is type_:
        return found[1]
    check = _check(type_, types, cache)
    cache[id(type_)] = (type_, check)
    return check


def _never(value: Any, depth: int) -> bool:
    return False


def _untyped(value: Any, depth: int) -> bool:
    """A value read without a declared type is kept as parsed, but a ``null`` field is
    dropped."""
    kind = type(value)
    if kind is dict:
        return depth <= MAX_DEPTH and all(
            x is not None and _untyped(x, depth + 1) for x in value.values()
        )
    if kind is list:
        return depth <= MAX_DEPTH and all(x is None or _untyped(x, depth + 1) for x in value)
    return kind in _SCALARS


def _untyped_container(value: Any, depth: int) -> bool:
    return type(value) in (dict, list) and _untyped(value, depth)


class Reader:
    def __init__(self, types: Types, partial: bool, repairs: list[Repair] | None = None) -> None:
        self.types = types
        self.partial = partial
        self.repairs = repairs
        self._noted: set[tuple[str, str]] = set()
        self.depth = 0
        self._field_maps: dict[int, tuple[IRType, dict[str, IRField]]] = {}
        self._checks: _Checks = {}

    def note(self, kind: str, path: str, detail: str, *, once: bool = False) -> None:
        """Record a repair (``once``: only the first of this kind in the body)."""
        if self.repairs is None or len(self.repairs) >= _MAX_REPAIRS:
            return
        mark = (kind, "" if once else path)
        if mark not in self._noted:
            self._noted.add(mark)
            self.repairs.append(repair(kind, path, detail))

    def fields(self, type_: IRType) -> dict[str, IRField]:
        """``field_map`` cached for this read (a long list of objects shares one type)."""
        cached = self._field_maps.get(id(type_))
        if cached is None or cached[0] is not type_:
            cached = self._field_maps[id(type_)] = (type_, field_map(type_, self.types))
        return cached[1]

    def loose(self, text: str, type_: IRType | None = None) -> Any:
        return Loose(text, self.partial, self, type_).document()

    def read(self, raw: Any, type_: IRType | None) -> Any:
        """A parsed JSON value (complete) interpreted and coerced as ``type_`` (None: a key
        the type does not declare, kept as interpreted), exactly as a whole read does."""
        if self.plain(type_)(raw, self.depth + 1):
            return raw
        value = self.interpret(raw, type_)
        return value if type_ is None else self.coerce(value, type_)

    def plain(self, type_: IRType | None) -> Check:
        """A test that a parsed JSON value is already what aligning and coercing it as
        ``type_`` gives (every key a declared field or untyped, no ``null`` field, nothing to
        convert); values that fail it take the general path. Built once per type and read."""
        key = id(type_)
        found = self._checks.get(key)
        if found is None or found[0] is not type_:
            found = self._checks[key] = (type_, _check(type_, self.types, self._checks))
        return found[1]

    def coerce(self, value: Any, type_: IRType) -> Any:
        """:func:`~auwgent.runtime.evaluate.schema.coerce`, each change listed as a repair."""
        try:
            out = coerce(value, type_, self.types)
        except ValueError:  # int() of a string of digits longer than Python reads
            raise BodyError(TOO_LONG) from None
        if self.repairs is not None:
            self._coerced(value, out, "")
        return out

    def _coerced(self, before: Any, after: Any, path: str) -> None:
        if isinstance(before, dict) and isinstance(after, dict):  # what the reader builds
            for key, value in after.items():
                if key in before:
                    self._coerced(before[key], value, f"{path}.{key}" if path else key)
        elif isinstance(before, list) and isinstance(after, list):
            for i, (old, new) in enumerate(zip(before, after, strict=False)):
                self._coerced(old, new, f"{path}[{i}]")
        elif type(before) is not type(after) or before != after:
            self.note("coerced", path, f"{show(before)} read as {show(after)}")

    def align(self, entries: Entries, target: IRType | None) -> dict[str, Any]:
        """Place each entry at the field its key names (dotted and underscore keys too).

        A key path given twice with different values is an ambiguity (also when both are
        objects: two ``user:`` blocks are not merged); paths that only share a prefix
        (``user.city`` and ``user.zip``) fill one object.
        """
        self._enter()
        out: dict[str, Any] = {}
        given: dict[Any, Any] = {}  # by key path: the key itself, or a tuple for nested paths
        for key, raw in entries:
            path = self.path_of(key, target) if target is not None else None
            names, type_ = path if path is not None else ([key], None)
            value = self.interpret(raw, type_)
            if value is OPEN or (value is None and self._null_is_absent(type_)):
                continue  # still being typed, or `null`: not given
            where = key if len(names) == 1 else tuple(names)
            if where in given:
                if not self._same(given[where], value, type_) and not self.partial:
                    raise duplicate(".".join(names), given[where], value)
                if not self.partial:
                    continue
            given[where] = value
            self._put(out, names, value, key, type_)
        self.depth -= 1
        return out

    def _null_is_absent(self, type_: IRType | None) -> bool:
        """``null`` means "not given" unless the declared type itself accepts null."""
        if type_ is None:
            return True
        return bool(validate(None, type_, self.types))

    def _same(self, first: Any, second: Any, type_: IRType | None) -> bool:
        if first == second:
            return True
        if type_ is None:
            return False
        return bool(coerce(first, type_, self.types) == coerce(second, type_, self.types))

    def path_of(self, key: str, target: IRType) -> tuple[list[str], IRType] | None:
        """The field path ``key`` names in ``target``: the field itself, a dotted path, or an
        underscore alias that exactly one nested path joins to."""
        fields = self.fields(target)
        if key in fields:
            return [key], fields[key]["type"]
        if "." in key:
            return self._dotted(key.split("."), target)
        if "_" in key:
            found = self._aliases(key, target, top=True)
            if len(found) == 1:
                names = found[0][0]
                self.note("alias", ".".join(names), f"`{key}` read as `{'.'.join(names)}`")
                return found[0]
            if found and not self.partial:
                ways = " or ".join(f"`{'.'.join(names)}`" for names, _ in found)
                raise BodyError(f"`{key}` could be {ways}; write the path with dots")
        return None

    def _aliases(self, key: str, target: IRType, *, top: bool) -> list[tuple[list[str], IRType]]:
        """Every way ``key`` splits at underscores into a path of nested fields (at any depth;
        at the top level the key must reach into a nested field). Stops at two: one is all
        that may be used."""
        found: list[tuple[list[str], IRType]] = []
        for name, declared in self.fields(target).items():
            if not top and key == name:
                found.append(([name], declared["type"]))
            elif key.startswith(name + "_"):
                rest = key[len(name) + 1 :]
                for sub, type_ in self._aliases(rest, declared["type"], top=False):
                    found.append(([name, *sub], type_))
            if len(found) > 1:
                break
        return found

    def _dotted(self, parts: list[str], target: IRType) -> tuple[list[str], IRType] | None:
        type_ = target
        for part in parts:
            field = self.fields(type_).get(part)
            if field is None:
                return None
            type_ = field["type"]
        return parts, type_

    def _put(
        self, out: dict[str, Any], names: list[str], value: Any, key: str, type_: IRType | None
    ) -> None:
        """Set ``value`` at ``names``; a different value already there is an ambiguity
        (values are compared after coercion, so ``28`` and ``"28"`` agree)."""
        node = out
        for name in names[:-1]:
            child = node.setdefault(name, {})
            if not isinstance(child, dict):
                if self.partial:
                    return
                raise duplicate(key, child, value)
            node = child
        last = names[-1]
        if last in node and node[last] != value:
            if isinstance(node[last], dict) and isinstance(value, dict):
                for sub_key, sub_value in value.items():
                    sub_type = self.fields(type_).get(sub_key) if type_ is not None else None
                    self._put(
                        node[last],
                        [sub_key],
                        sub_value,
                        f"{key}.{sub_key}",
                        sub_type["type"] if sub_type else None,
                    )
                return
            if type_ is not None and self._same(node[last], value, type_):
                return
            if not self.partial:
                raise duplicate(".".join(names) if len(names) > 1 else key, node[last], value)
        node[last] = value

    def interpret(self, raw: Any, type_: IRType | None) -> Any:
        """Turn a raw line value (or a parsed JSON value) into a value of ``type_``."""
        resolved = resolve(type_, self.types) if type_ is not None else None
        kind = resolved["kind"] if resolved is not None else None
        if isinstance(raw, Raw):
            if raw.open:
                return self._open_value(raw.text, resolved)
            return self._interpret_text(raw.text, resolved)
        if isinstance(raw, list) and raw and all(isinstance(p, tuple) for p in raw):
            return self.align(raw, resolved if kind == "object" else None)  # nested block
        if isinstance(raw, list):
            items = (
                resolved["items"] if resolved is not None and resolved["kind"] == "array" else None
            )
            self._enter()
            values = [self.interpret(item, items) for item in raw]
            self.depth -= 1
            return [v for v in values if v is not OPEN]
        if isinstance(raw, Mapping):
            return self.align(list(raw.items()), resolved if kind == "object" else None)
        return raw

    def _enter(self) -> None:
        """One level deeper into objects and lists (left again by the caller)."""
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise BodyError(f"values are nested deeper than {MAX_DEPTH} levels")

    def _open_value(self, text: str, type_: IRType | None) -> Any:
        """A value still being typed: shown only as far as it is certain. Plain text for a
        text field is a prefix of the final value; of a list, the items before the last."""
        kind = type_["kind"] if type_ is not None else None
        if kind in ("string", "text") and text and text[0] not in "[{\"'|>/":
            if not "null".startswith(text):
                return text
        if kind == "array" and text[:1] == "[":
            value = self.interpret(self.loose(text, type_), type_)
            return value[:-1] if isinstance(value, list) else OPEN
        return OPEN

    def _interpret_text(self, text: str, type_: IRType | None) -> Any:
        kind = type_["kind"] if type_ is not None else None
        if kind in _STRINGY:
            return None if text == "null" else _unquote(text)
        if not text:
            return None  # `key:` with nothing after it: not given
        if type_ is not None and type_["kind"] == "array" and text[0] != "[":
            parts = [p.strip() for p in text.split(",")]
            if any("\n" in part for part in parts):  # one item or one per line: not said
                raise BodyError(
                    f"the list {show(text)} is text over several lines: write each item on a"
                    " `- item` line, or the list as JSON"
                )
            return [self.interpret(Raw(p), type_["items"]) for p in parts]
        if kind in ("number", "boolean") and JSON_WORD.fullmatch(text):
            try:  # a bare `28` or `true`: the taught form, read as JSON (no coercion)
                return json.loads(text)
            except ValueError:  # an integer longer than Python reads
                raise BodyError(TOO_LONG) from None
        if text[0] not in "[{\"'":
            return bare(text)
        depth = self.depth
        try:
            return self.interpret(self.loose(text, type_), type_)
        except BodyError:
            self.depth = depth
            if kind in ("object", "array") and not self.partial:
                raise
            return text  # a union or an unknown key: validation says what is wrong


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        try:
            return str(Loose(text, False).document())
        except BodyError:
            return text
    return text
