"""Expressions of the IR (``docs/ir.md``, "Expressions") evaluated over plain JSON values.

Two modes share one set of operators:

- **strict** (workflows): a mistake at run time (reading a field of ``null``, a missing field,
  an index out of range, adding a number to an array, dividing by zero) raises
  :class:`ExprError`; the workflow interpreter turns it into a ``WorkflowError`` naming the
  ``.agent`` file and line.
- **lenient** (prompt templates): the same mistakes yield ``None``, which renders as empty; a
  comparison that cannot be made is ``False``.

Numbers follow JavaScript where JSON allows it: there is one number type, so an arithmetic
result that is a whole number comes back as an ``int`` (``6 / 2`` is ``3``), and ``%`` keeps
the sign of the dividend. Booleans are never numbers. ``ctx.x`` for a key that was not given is
``None`` in both modes (context fields may be optional). ``length`` reads the size of an array
or a string, as in JavaScript.

One evaluator serves both (:func:`steps`): it yields at each tool call, so the workflow
interpreter (:mod:`auwgent.runtime.evaluate.workflows`) runs the call and sends the result back, and
:func:`evaluate` (templates) refuses it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

from auwgent.runtime.evaluate.schema import format_number

# The IR's expression type (auwgent.ir.model.Expr) for the type checker; plain dicts at run time.
if TYPE_CHECKING:
    from typing_extensions import Never

    from auwgent.ir.model import BinaryExpr, CallExpr
    from auwgent.ir.model import Expr as IRExpr
else:
    IRExpr = CallExpr = BinaryExpr = Mapping[str, Any]

__all__ = [
    "CallRequest",
    "ExprError",
    "IRExpr",
    "Names",
    "apply_binary",
    "apply_unary",
    "evaluate",
    "index_of",
    "json_equal",
    "kind_of",
    "member_of",
    "render_value",
    "steps",
    "truthy",
]

_MAX_SAFE = 2**53


class ExprError(Exception):
    """An expression failed at run time (strict mode). ``loc`` is ``(line, col)`` when known."""

    def __init__(self, message: str, loc: tuple[int, int] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.loc = loc


#: What :func:`steps` yields at a tool call (the call and its evaluated arguments); what is
#: sent back is the call's result.
CallRequest = tuple[CallExpr, dict[str, Any]]
Steps = Generator[CallRequest, Any, Any]


class Names(Protocol):
    """The variables in scope: a mapping, or the workflow interpreter's chain of blocks."""

    def __contains__(self, name: object, /) -> bool: ...

    def __getitem__(self, name: str, /) -> Any: ...


def steps(expr: IRExpr, scope: Names, ctx: Mapping[str, Any], strict: bool) -> Steps:
    """The one evaluator: a generator that returns the value of ``expr``.

    It yields ``(call, args)`` at every tool call, arguments evaluated left to right, and
    takes the call's result back (``send``), so the same code serves the prompt templates
    (:func:`evaluate`, where a call is an error) and the workflow interpreter (which awaits
    each call). ``&&`` and ``||`` short-circuit: a call on the side not needed never happens.
    """
    if expr["e"] == "lit":
        return expr["value"]
    if expr["e"] == "name":
        return _lookup(expr["name"], scope, strict)
    if expr["e"] == "ctx":
        return ctx.get(expr["name"])
    if expr["e"] == "member":
        target = yield from steps(expr["object"], scope, ctx, strict)
        return member_of(target, expr["name"], strict)
    if expr["e"] == "index":
        target = yield from steps(expr["object"], scope, ctx, strict)
        return index_of(target, (yield from steps(expr["index"], scope, ctx, strict)), strict)
    if expr["e"] == "array":
        items = []
        for item in expr["items"]:
            items.append((yield from steps(item, scope, ctx, strict)))
        return items
    if expr["e"] == "object":
        fields = {}
        for f in expr["fields"]:
            fields[f["name"]] = yield from steps(f["value"], scope, ctx, strict)
        return fields
    if expr["e"] == "unary":
        operand = yield from steps(expr["operand"], scope, ctx, strict)
        return apply_unary(expr["op"], operand, strict)
    if expr["e"] == "binary":
        return (yield from _binary_steps(expr, scope, ctx, strict))
    if expr["e"] == "call":
        args: dict[str, Any] = {}
        for arg in expr["args"]:
            args[arg["name"]] = yield from steps(arg["value"], scope, ctx, strict)
        return (yield (expr, args))
    return _unknown(expr)


def _binary_steps(expr: BinaryExpr, scope: Names, ctx: Mapping[str, Any], strict: bool) -> Steps:
    op = expr["op"]
    left = yield from steps(expr["left"], scope, ctx, strict)
    # && and || decide on the left side alone when they can; the right side is not evaluated.
    if op == "&&" and not truthy(left):
        return False
    if op == "||" and truthy(left):
        return True
    right = yield from steps(expr["right"], scope, ctx, strict)
    return apply_binary(op, left, right, strict)


def _unknown(expr: Never) -> NoReturn:
    """Every kind of expression is handled (the checker proves it); an IR edited by hand to hold
    another is refused, naming it."""
    raise ExprError(f"unknown expression kind {expr['e']!r}")


def sub_expressions(expr: IRExpr) -> list[IRExpr]:
    """The expressions directly inside ``expr``, in evaluation order."""
    if expr["e"] == "lit" or expr["e"] == "name" or expr["e"] == "ctx":
        return []
    if expr["e"] == "member":
        return [expr["object"]]
    if expr["e"] == "unary":
        return [expr["operand"]]
    if expr["e"] == "index":
        return [expr["object"], expr["index"]]
    if expr["e"] == "binary":
        return [expr["left"], expr["right"]]
    if expr["e"] == "array":
        return list(expr["items"])
    if expr["e"] == "object":
        return [f["value"] for f in expr["fields"]]
    if expr["e"] == "call":
        return [a["value"] for a in expr["args"]]
    return _unknown(expr)


def evaluate(expr: IRExpr, scope: Names, ctx: Mapping[str, Any], *, strict: bool) -> Any:
    """Evaluate a call-free expression (:func:`steps` without calls).

    ``scope`` holds variables (workflows) or prompt parameters (templates); ``ctx`` the context.
    A ``call`` raises :class:`ExprError`: only the workflow interpreter may run tools.
    """
    run = steps(expr, scope, ctx, strict)
    try:
        call, _ = next(run)
    except StopIteration as done:
        return done.value
    run.close()
    raise ExprError(f"tool call {call['tool']}(...) is only allowed in workflows", _loc(call))


def _loc(expr: CallExpr) -> tuple[int, int] | None:
    loc = expr.get("loc")
    return (int(loc[0]), int(loc[1])) if loc else None


def _lookup(name: str, scope: Names, strict: bool) -> Any:
    if name in scope:
        return scope[name]
    if strict:
        raise ExprError(f"unknown variable {name!r}")
    return None


# ---------------------------------------------------------------------------------------------
# Operators


def member_of(target: Any, name: str, strict: bool) -> Any:
    """``target.name``: a field of an object, or ``length`` of an array or string."""
    if isinstance(target, Mapping):
        if name in target:
            return target[name]
        return _fail(strict, f"no field {name!r} in object {_fields_hint(target)}")
    if name == "length" and isinstance(target, (str, list, tuple)):
        return len(target)
    if target is None:
        return _fail(strict, f"cannot read field {name!r} of null")
    return _fail(strict, f"cannot read field {name!r} of {_shown(target)}")


def index_of(target: Any, index: Any, strict: bool) -> Any:
    """``target[index]``: an array or string by whole-number position, an object by key."""
    if isinstance(target, Mapping):
        if isinstance(index, str):
            return member_of(target, index, strict)
        return _fail(strict, f"object index must be a string, got {_shown(index)}")
    if isinstance(target, (list, tuple, str)):
        if not _is_number(index) or index != int(index):
            return _fail(
                strict, f"{kind_of(target)} index must be a whole number, got {_short(index)}"
            )
        position = int(index)
        if 0 <= position < len(target):
            return target[position]
        return _fail(
            strict, f"index {position} is out of range ({kind_of(target)} of length {len(target)})"
        )
    if target is None:
        return _fail(strict, f"cannot index null with {_short(index)}")
    return _fail(strict, f"cannot index {_shown(target)}")


def apply_unary(op: str, value: Any, strict: bool) -> Any:
    """``!v`` (truthiness) or ``-v`` (numbers only)."""
    if op == "!":
        return not truthy(value)
    if op == "-":
        if _is_number(value):
            return _normal(-value)
        return _fail(strict, f"cannot negate {_shown(value)}")
    raise ExprError(f"unknown unary operator {op!r}")


def apply_binary(op: str, left: Any, right: Any, strict: bool) -> Any:
    """Apply a binary operator to two evaluated operands (``&&``/``||`` yield booleans)."""
    if op == "&&":
        return truthy(left) and truthy(right)
    if op == "||":
        return truthy(left) or truthy(right)
    if op == "==":
        return json_equal(left, right)
    if op == "!=":
        return not json_equal(left, right)
    if op in ("<", "<=", ">", ">="):
        return _compare(op, left, right, strict)
    if op == "+" and (isinstance(left, str) or isinstance(right, str)):
        return render_value(left) + render_value(right)
    if op in ("+", "-", "*", "/", "%"):
        return _arithmetic(op, left, right, strict)
    raise ExprError(f"unknown operator {op!r}")


def _compare(op: str, left: Any, right: Any, strict: bool) -> bool:
    same = (_is_number(left) and _is_number(right)) or (
        isinstance(left, str) and isinstance(right, str)
    )
    if not same:
        if strict:
            raise ExprError(f"cannot compare {_shown(left)} {op} {_shown(right)}")
        return False
    if op == "<":
        return bool(left < right)
    if op == "<=":
        return bool(left <= right)
    if op == ">":
        return bool(left > right)
    return bool(left >= right)


def _arithmetic(op: str, left: Any, right: Any, strict: bool) -> Any:
    if not (_is_number(left) and _is_number(right)):
        verb = {
            "+": "add",
            "-": "subtract",
            "*": "multiply",
            "/": "divide",
            "%": "take the remainder of",
        }[op]
        return _fail(
            strict,
            f"cannot {verb} {_shown(left)} and {_shown(right)}",
        )
    if op in ("/", "%") and right == 0:
        return _fail(strict, "division by zero")
    if op == "+":
        result = left + right
    elif op == "-":
        result = left - right
    elif op == "*":
        result = left * right
    elif op == "/":
        result = left / right
    elif isinstance(left, int) and isinstance(right, int):
        result = abs(left) % abs(right) * (-1 if left < 0 else 1)
    else:
        result = math.fmod(left, right)
    if isinstance(result, float) and not math.isfinite(result):
        return _fail(strict, f"the result of {_short(left)} {op} {_short(right)} is too large")
    return _normal(result)


def _normal(number: Any) -> Any:
    """Whole floats become ints (JavaScript has one number type; JSON writes ``3``, not ``3.0``)."""
    if isinstance(number, float) and number.is_integer() and abs(number) < _MAX_SAFE:
        return int(number)
    return number


def _fail(strict: bool, message: str) -> None:
    if strict:
        raise ExprError(message)
    return None


# ---------------------------------------------------------------------------------------------
# Values


def truthy(value: Any) -> bool:
    """JSON truthiness: ``false``, ``null``, ``0``, ``""``, ``[]`` and ``{}`` are false."""
    if value is None or value is False:
        return False
    if isinstance(value, (int, float, str, list, tuple, Mapping)):
        return bool(value)
    return True


def json_equal(left: Any, right: Any) -> bool:
    """Structural equality of JSON values, where ``true`` is not ``1`` (unlike Python's ``==``)."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if _is_number(left) and _is_number(right):
        return bool(left == right)
    if isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
        return len(left) == len(right) and all(
            json_equal(a, b) for a, b in zip(left, right, strict=True)
        )
    if isinstance(left, Mapping) and isinstance(right, Mapping):
        return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)
    if type(left) is not type(right) and not (isinstance(left, str) and isinstance(right, str)):
        return False
    return bool(left == right)


def render_value(value: Any) -> str:
    """How a value reads inside a prompt or a string concatenation.

    Strings as is, numbers in their shortest form (``3``, not ``3.0``), booleans
    ``true``/``false``, ``null`` as the empty string, arrays and objects as compact JSON.
    """
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return _json(value)


def _json(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return format_number(value) if math.isfinite(value) else "null"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Mapping):
        items = (f"{json.dumps(str(k), ensure_ascii=False)}:{_json(v)}" for k, v in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, Sequence):
        return "[" + ",".join(_json(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)


def kind_of(value: Any) -> str:
    """The JSON kind of a value, for messages: ``null``, ``boolean``, ``number``, ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _short(value: Any) -> str:
    text = _json(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _fields_hint(target: Mapping[str, Any]) -> str:
    names = ", ".join(str(k) for k in list(target)[:8])
    return f"(fields: {names})" if names else "(no fields)"


def _shown(value: Any) -> str:
    """A value for an error message: its kind and (short) JSON, e.g. ``string "a"``."""
    return "null" if value is None else f"{kind_of(value)} {_short(value)}"
