"""A small JSON path and the predicates the scorers apply to what it selects.

Paths: ``$`` (the whole value), ``.name`` or ``["name"]`` (a key), ``[0]`` (an index, negative
from the end) and ``[*]`` (every element or value). ``select`` returns every value the path
reaches (none when a key or index is missing).

A predicate is a literal (equal to it: numbers by value, objects by subset) or a mapping
whose keys all start with ``$``: ``$eq``, ``$ne``, ``$gt``, ``$ge``, ``$lt``, ``$le``,
``$contains`` (a substring, a list element, or a key), ``$regex`` (searched in a string),
``$in`` (one of a list), ``$exists`` (true or false), ``$type`` (``string``, ``number``,
``boolean``, ``array``, ``object``, ``null``); all of them must hold.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["OPERATORS", "PathError", "equal", "is_predicate", "matches", "parse", "select"]

_TOKEN = re.compile(r"""\.([A-Za-z_][\w-]*)|\[(-?\d+)\]|\[\*\]|\["([^"]*)"\]|\['([^']*)'\]""")
_TYPES = {"string": str, "boolean": bool, "array": list, "object": dict}


class PathError(ValueError):
    """A JSON path outside the supported subset."""


Step = str | int | None  # None: every element


def parse(path: str) -> list[Step]:
    """``$.a[0][*]`` -> ``["a", 0, None]``."""
    if not path.startswith("$"):
        raise PathError(f"{path!r}: a JSON path starts with `$`")
    steps: list[Step] = []
    at = 1
    while at < len(path):
        match = _TOKEN.match(path, at)
        if match is None:
            raise PathError(f"{path!r}: cannot read the path from {path[at:]!r}")
        name, index, quoted, single = match.groups()
        if index is not None:
            steps.append(int(index))
        elif name is not None or quoted is not None or single is not None:
            steps.append(name if name is not None else quoted if quoted is not None else single)
        else:
            steps.append(None)
        at = match.end()
    return steps


def select(value: Any, path: str) -> list[Any]:
    """Every value ``path`` reaches in ``value``."""
    found = [value]
    for step in parse(path):
        found = [inner for current in found for inner in _step(current, step)]
    return found


def _step(value: Any, step: Step) -> list[Any]:
    if step is None:
        if isinstance(value, list):
            return list(value)
        return list(value.values()) if isinstance(value, Mapping) else []
    if isinstance(step, int):
        if isinstance(value, list) and -len(value) <= step < len(value):
            return [value[step]]
        return []
    return [value[step]] if isinstance(value, Mapping) and step in value else []


def is_predicate(spec: Any) -> bool:
    """A mapping of ``$`` operators (rather than a literal object)."""
    return isinstance(spec, Mapping) and bool(spec) and all(str(k).startswith("$") for k in spec)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def equal(expected: Any, actual: Any) -> bool:
    """Equal, numbers by value, objects by subset (every expected key equal)."""
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(
            k in actual and equal(v, actual[k]) for k, v in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(expected)
            and all(equal(e, a) for e, a in zip(expected, actual, strict=True))
        )
    if _number(expected):
        return _number(actual) and expected == actual
    return bool(type(expected) is type(actual) and expected == actual)


def _compare(op: str, expected: Any, actual: Any) -> bool:
    if not (_number(expected) and _number(actual)):
        return False
    checks = {
        "$gt": actual > expected,
        "$ge": actual >= expected,
        "$lt": actual < expected,
        "$le": actual <= expected,
    }
    return bool(checks[op])


def _type_is(name: Any, value: Any) -> bool:
    if name == "number":
        return _number(value)
    if name == "null":
        return value is None
    wanted = _TYPES.get(str(name))
    return (
        wanted is not None
        and isinstance(value, wanted)
        and not (wanted is not bool and isinstance(value, bool))
    )


def _contains(expected: Any, actual: Any) -> bool:
    if isinstance(actual, str):
        return isinstance(expected, str) and expected in actual
    if isinstance(actual, list):
        return any(equal(expected, item) for item in actual)
    return isinstance(actual, Mapping) and expected in actual


OPERATORS = (
    "$eq",
    "$ne",
    "$gt",
    "$ge",
    "$lt",
    "$le",
    "$contains",
    "$regex",
    "$in",
    "$exists",
    "$type",
)


def _holds(op: str, expected: Any, found: list[Any]) -> bool:
    if op == "$exists":
        return bool(found) == bool(expected)
    if not found:
        return False
    if op == "$eq":
        return all(equal(expected, v) for v in found)
    if op == "$ne":
        return all(not equal(expected, v) for v in found)
    if op in ("$gt", "$ge", "$lt", "$le"):
        return all(_compare(op, expected, v) for v in found)
    if op == "$contains":
        return all(_contains(expected, v) for v in found)
    if op == "$regex":
        return all(isinstance(v, str) and re.search(str(expected), v) for v in found)
    if op == "$in":
        return isinstance(expected, list) and all(any(equal(e, v) for e in expected) for v in found)
    if op == "$type":
        return all(_type_is(expected, v) for v in found)
    raise PathError(f"unknown operator {op!r} (expected one of {', '.join(OPERATORS)})")


def matches(spec: Any, found: list[Any]) -> bool:
    """The predicate ``spec`` holds for the selected values (a literal: every one equals it;
    nothing selected fails everything but ``$exists: false``)."""
    if is_predicate(spec):
        return all(_holds(str(op), expected, found) for op, expected in spec.items())
    return bool(found) and all(equal(spec, v) for v in found)
