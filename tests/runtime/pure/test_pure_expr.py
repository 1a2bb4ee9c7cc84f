"""Expressions in both modes: strict (workflows) and lenient (templates)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from auwgent.runtime.evaluate.expr import ExprError, evaluate, json_equal, render_value, truthy


def lit(v: Any) -> dict[str, Any]:
    return {"e": "lit", "value": v}


def name(n: str) -> dict[str, Any]:
    return {"e": "name", "name": n}


def b(op: str, left: dict[str, Any], right: dict[str, Any]) -> dict[str, Any]:
    return {"e": "binary", "op": op, "left": left, "right": right}


def member(o: dict[str, Any], n: str) -> dict[str, Any]:
    return {"e": "member", "object": o, "name": n}


def index(o: dict[str, Any], i: dict[str, Any]) -> dict[str, Any]:
    return {"e": "index", "object": o, "index": i}


SCOPE = {"user": {"name": "Ama", "tags": ["a", "b"]}, "n": 7, "none": None, "s": "hey"}


def strict(expr: dict[str, Any], ctx: dict[str, Any] | None = None) -> Any:
    return evaluate(expr, SCOPE, ctx or {}, strict=True)


def lenient(expr: dict[str, Any], ctx: dict[str, Any] | None = None) -> Any:
    return evaluate(expr, SCOPE, ctx or {}, strict=False)


@pytest.mark.parametrize(
    ("expr", "value"),
    [
        (member(name("user"), "name"), "Ama"),
        (index(member(name("user"), "tags"), lit(1)), "b"),
        (index(member(name("user"), "tags"), lit(1.0)), "b"),
        (index(name("user"), lit("name")), "Ama"),
        (index(name("s"), lit(0)), "h"),
        (member(member(name("user"), "tags"), "length"), 2),
        (member(name("s"), "length"), 3),
        ({"e": "array", "items": [lit(1), name("n")]}, [1, 7]),
        ({"e": "object", "fields": [{"name": "k", "value": name("s")}]}, {"k": "hey"}),
        ({"e": "unary", "op": "-", "operand": name("n")}, -7),
        ({"e": "unary", "op": "!", "operand": lit("")}, True),
        (b("+", lit(0.1), lit(0.2)), 0.30000000000000004),
        (b("/", lit(6), lit(3)), 2),
        (b("%", lit(-7), lit(3)), -1),
        (b("%", lit(7.5), lit(2)), 1.5),
        (b("*", lit(2.5), lit(4)), 10),
        (b("+", lit("n="), lit(None)), "n="),
        (b("+", lit([1]), lit("!")), "[1]!"),
        (b("&&", lit(1), lit("x")), True),
        (b("||", lit(None), lit(0)), False),
        (b("==", lit({"a": [1, True]}), lit({"a": [1.0, True]})), True),
        (b("==", lit(0), lit(False)), False),
        (b("!=", lit("1"), lit(1)), True),
    ],
)
def test_values(expr: dict[str, Any], value: Any) -> None:
    result = strict(expr)
    assert json_equal(result, value) and type(result) is type(value)


def test_whole_results_are_ints() -> None:
    assert type(strict(b("/", lit(6), lit(3)))) is int
    assert type(strict(b("-", lit(2.5), lit(0.5)))) is int


def test_ctx_missing_key_is_null_in_both_modes() -> None:
    expr = {"e": "ctx", "name": "x"}
    assert strict(expr) is None and lenient(expr) is None
    assert strict(expr, {"x": 3}) == 3


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        (name("ghost"), "unknown variable 'ghost'"),
        (member(name("none"), "x"), "cannot read field 'x' of null"),
        (member(name("user"), "age"), "no field 'age' in object (fields: name, tags)"),
        (member(name("n"), "x"), "cannot read field 'x' of number 7"),
        (
            index(member(name("user"), "tags"), lit(5)),
            "index 5 is out of range (array of length 2)",
        ),
        (
            index(member(name("user"), "tags"), lit(-1)),
            "index -1 is out of range (array of length 2)",
        ),
        (
            index(member(name("user"), "tags"), lit(0.5)),
            "array index must be a whole number, got 0.5",
        ),
        (index(name("user"), lit(0)), "object index must be a string, got number 0"),
        (index(name("none"), lit(0)), "cannot index null with 0"),
        (index(name("n"), lit(0)), "cannot index number 7"),
        (b("-", lit("a"), lit(1)), 'cannot subtract string "a" and number 1'),
        (b("+", lit(True), lit(1)), "cannot add boolean true and number 1"),
        (b("%", lit(1), lit(0)), "division by zero"),
        (b("*", lit(1e200), lit(1e200)), "the result of 1e+200 * 1e+200 is too large"),
        (b("<", lit(None), lit(1)), "cannot compare null < number 1"),
        ({"e": "unary", "op": "-", "operand": lit("x")}, 'cannot negate string "x"'),
    ],
)
def test_strict_errors(expr: dict[str, Any], message: str) -> None:
    with pytest.raises(ExprError) as caught:
        strict(expr)
    assert caught.value.message == message


@pytest.mark.parametrize(
    "expr",
    [
        name("ghost"),
        member(name("none"), "x"),
        member(name("user"), "age"),
        index(member(name("user"), "tags"), lit(5)),
        b("-", lit("a"), lit(1)),
        b("/", lit(1), lit(0)),
    ],
)
def test_lenient_mistakes_are_null(expr: dict[str, Any]) -> None:
    assert lenient(expr) is None


def test_lenient_comparison_mismatch_is_false() -> None:
    assert lenient(b(">", lit("10"), lit(3))) is False


def test_calls_are_refused_outside_workflows() -> None:
    call = {"e": "call", "tool": "t", "args": [], "loc": [4, 2]}
    with pytest.raises(ExprError) as caught:
        lenient(call)
    assert caught.value.loc == (4, 2)


def test_short_circuit_skips_the_right_side() -> None:
    boom = {"e": "call", "tool": "never", "args": [], "loc": [1, 1]}
    assert strict(b("&&", lit(False), boom)) is False
    assert strict(b("||", lit("yes"), boom)) is True


@pytest.mark.parametrize("value", [False, None, 0, 0.0, "", [], {}])
def test_falsy(value: Any) -> None:
    assert truthy(value) is False


@pytest.mark.parametrize("value", [True, 1, -0.5, "0", " ", [0], {"a": None}])
def test_truthy(value: Any) -> None:
    assert truthy(value) is True


def test_render_value() -> None:
    assert render_value("x") == "x"
    assert render_value(3.0) == "3"
    assert render_value(True) == "true"
    assert render_value(None) == ""
    assert render_value({"a": [1.0, None, "é"], "b": False}) == '{"a":[1,null,"é"],"b":false}'


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(-3, 3) | st.text(max_size=3),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=2), c, max_size=3),
    max_leaves=8,
)


@given(json_values)
def test_json_equal_is_reflexive(value: Any) -> None:
    assert json_equal(value, value)


@given(json_values, json_values)
def test_json_equal_is_symmetric(left: Any, right: Any) -> None:
    assert json_equal(left, right) == json_equal(right, left)
