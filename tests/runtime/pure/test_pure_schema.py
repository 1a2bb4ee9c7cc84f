"""Validation, coercion, JSON Schema, descriptions and example values."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from auwgent.runtime.evaluate.schema import (
    coerce,
    describe,
    describe_fields,
    example_value,
    field_map,
    format_number,
    referenced_types,
    resolve,
    to_json_schema,
    validate,
)

STRING = {"kind": "string"}
NUMBER = {"kind": "number"}
BOOLEAN = {"kind": "boolean"}
TEXT = {"kind": "text"}


def lit(v: str) -> dict[str, Any]:
    return {"kind": "literal", "value": v}


def arr(t: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "array", "items": t}


def ref(n: str) -> dict[str, Any]:
    return {"kind": "ref", "name": n}


def union(*vs: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "union", "variants": list(vs)}


def fld(
    name: str, t: dict[str, Any], optional: bool = False, desc: str | None = None
) -> dict[str, Any]:
    return {"name": name, "type": t, "optional": optional, "description": desc}


def obj(*fields: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "object", "fields": list(fields)}


PRIORITY = union(lit("low"), lit("high"))
TYPES: dict[str, Any] = {
    "Person": obj(fld("name", STRING, desc="Full name"), fld("age", NUMBER, optional=True)),
    "Company": obj(fld("title", STRING), fld("staff", arr(ref("Person")))),
    "Node": obj(
        fld("value", NUMBER), fld("children", arr(ref("Node"))), fld("next", ref("Node"), True)
    ),
    "Task": obj(fld("priority", PRIORITY), fld("done", BOOLEAN), fld("owner", ref("Person"), True)),
}
USER = obj(fld("user", ref("Person")), fld("tags", arr(STRING)))


# ---- validate -------------------------------------------------------------------------------


def test_valid_values_have_no_errors() -> None:
    assert validate({"name": "Kwame", "age": 28}, ref("Person"), TYPES) == []
    assert validate({"name": "Kwame"}, ref("Person"), TYPES) == []
    assert validate("hi", TEXT, TYPES) == []
    assert validate("low", PRIORITY, TYPES) == []
    assert validate([1, 2.5], arr(NUMBER), TYPES) == []


def test_error_names_path_expected_and_given() -> None:
    errors = validate({"user": {"name": "A", "age": "x"}, "tags": []}, USER, TYPES)
    assert errors == ['$.user.age: expected number, got string "x"']


def test_every_error_is_reported() -> None:
    errors = validate({"user": {"age": True, "extra": 1}, "tags": ["a", 3]}, USER, TYPES)
    assert errors == [
        "$.user.name: missing required field (string)",
        "$.user.age: expected number, got boolean true",
        "$.user.extra: unexpected field (allowed: name, age)",
        "$.tags[1]: expected string, got number 3",
    ]


def test_optional_field_may_be_absent_but_not_null() -> None:
    assert validate({"name": "A", "age": None}, ref("Person"), TYPES) == [
        "$.age: expected number, got null"
    ]


def test_booleans_are_not_numbers_and_nan_is_rejected() -> None:
    assert validate(True, NUMBER, TYPES) == ["$: expected number, got boolean true"]
    assert validate(float("nan"), NUMBER, TYPES) != []
    assert validate(1, BOOLEAN, TYPES) == ["$: expected boolean, got number 1"]


def test_literal_union_error_lists_the_choices() -> None:
    assert validate("mid", PRIORITY, TYPES) == ['$: expected "low" | "high", got string "mid"']


def test_object_union_reports_closest_variant() -> None:
    errors = validate({"name": 3}, union(ref("Person"), ref("Company")), TYPES)
    assert errors == [
        "$: expected Person | Company, got object",
        "$.name: expected string, got number 3",
    ]


def test_unknown_ref_is_an_error_not_a_crash() -> None:
    assert validate({}, ref("Nope"), TYPES) == ["$: unknown type 'Nope'"]


def test_long_strings_are_shortened_in_messages() -> None:
    (error,) = validate("x" * 100, NUMBER, TYPES)
    assert error.endswith('..."') and len(error) < 80


def test_odd_keys_are_quoted_in_paths() -> None:
    assert validate({"a b": 1}, obj(), TYPES) == ['$["a b"]: unexpected field (allowed: none)']


def test_recursive_type_validates() -> None:
    tree = {
        "value": 1,
        "children": [{"value": 2, "children": []}],
        "next": {"value": 3, "children": []},
    }
    assert validate(tree, ref("Node"), TYPES) == []
    tree["children"][0]["value"] = "2"  # type: ignore[index]
    assert validate(tree, ref("Node"), TYPES) == [
        '$.children[0].value: expected number, got string "2"'
    ]


# ---- coerce ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "type_", "expected"),
    [
        ("28", NUMBER, 28),
        (" -2.5 ", NUMBER, -2.5),
        ("1e3", NUMBER, 1000.0),
        ("twelve", NUMBER, "twelve"),
        ("", NUMBER, ""),
        (True, NUMBER, True),
        ("yes", BOOLEAN, True),
        ("TRUE", BOOLEAN, True),
        ("1", BOOLEAN, True),
        ("No", BOOLEAN, False),
        ("0", BOOLEAN, False),
        (0, BOOLEAN, False),
        (2, BOOLEAN, 2),
        ("maybe", BOOLEAN, "maybe"),
        (3, STRING, "3"),
        (3.0, STRING, "3"),
        (False, TEXT, "false"),
        (None, STRING, None),
        ([1], STRING, [1]),
        ("low", PRIORITY, "low"),
        (1, union(lit("1"), lit("2")), "1"),
        ("5", union(BOOLEAN, NUMBER), 5),
        ("1", union(BOOLEAN, NUMBER), True),
    ],
)
def test_coerce_follows_the_documented_rule(
    value: Any, type_: dict[str, Any], expected: Any
) -> None:
    result = coerce(value, type_, TYPES)
    assert result == expected and type(result) is type(expected)


def test_coerce_objects_recursively_and_drops_null_optionals() -> None:
    raw = {"user": {"name": 7, "age": "28"}, "tags": [1, True]}
    assert coerce(raw, USER, TYPES) == {"user": {"name": "7", "age": 28}, "tags": ["1", "true"]}
    assert coerce({"name": "A", "age": None}, ref("Person"), TYPES) == {"name": "A"}
    # A null required field stays, so validation reports it.
    assert coerce({"name": None}, ref("Person"), TYPES) == {"name": None}


def test_coerce_keeps_unknown_keys_for_validation_to_report() -> None:
    assert coerce({"name": "A", "x": "1"}, ref("Person"), TYPES) == {"name": "A", "x": "1"}


# ---- resolve, field_map, referenced_types ----------------------------------------------------


def test_resolve_and_field_map() -> None:
    assert resolve(ref("Person"), TYPES) is TYPES["Person"]
    assert resolve(NUMBER, TYPES) is NUMBER
    assert list(field_map(ref("Person"), TYPES)) == ["name", "age"]
    assert field_map(STRING, TYPES) == {}
    with pytest.raises(KeyError, match="Nope"):
        resolve(ref("Nope"), TYPES)


def test_referenced_types_in_first_use_order() -> None:
    assert referenced_types(union(ref("Task"), ref("Company")), TYPES) == [
        "Task",
        "Person",
        "Company",
    ]
    assert referenced_types(ref("Node"), TYPES) == ["Node"]


# ---- describe -------------------------------------------------------------------------------


def test_describe_is_compact_and_ts_like() -> None:
    assert describe(STRING, TYPES) == "string"
    assert describe(TEXT, TYPES) == "string"
    assert describe(arr(NUMBER), TYPES) == "number[]"
    assert describe(PRIORITY, TYPES) == '"low" | "high"'
    assert describe(arr(PRIORITY), TYPES) == '("low" | "high")[]'
    assert describe(ref("Person"), TYPES) == "Person"
    assert describe(obj(), TYPES) == "{}"
    assert describe(TYPES["Person"], TYPES) == "{ name: string, age?: number }"


def test_describe_expanded_writes_structure_and_stops_at_recursion() -> None:
    assert describe(ref("Company"), TYPES, expand=True) == (
        "{ title: string, staff: { name: string, age?: number }[] }"
    )
    assert describe(ref("Node"), TYPES, expand=True) == (
        "{ value: number, children: Node[], next?: Node }"
    )


def test_describe_with_notes() -> None:
    assert describe(ref("Person"), TYPES, expand=True, notes=True) == (
        "{ name: string /* Full name */, age?: number }"
    )
    assert describe(ref("Person"), TYPES, notes=True) == "Person"
    odd = [fld("x", STRING, desc="ends */ early")]
    assert describe_fields(odd, TYPES, notes=True) == "x: string /* ends * / early */"


def test_describe_fields() -> None:
    fields = [fld("location", STRING), fld("days", NUMBER, optional=True)]
    assert describe_fields(fields, TYPES) == "location: string, days?: number"
    assert describe_fields([fld("p", ref("Person"))], TYPES, expand=True) == (
        "p: { name: string, age?: number }"
    )


# ---- format_number ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (3, "3"),
        (3.0, "3"),
        (-0.0, "0"),
        (0.1, "0.1"),
        (2.5, "2.5"),
        (1e21, "1e+21"),
        (1e20, "100000000000000000000"),
        (1e-7, "1e-7"),
        (1e-6, "0.000001"),
        (123.456, "123.456"),
        (1.5e16, "15000000000000000"),
        (-1.25e-10, "-1.25e-10"),
        (10**20, "100000000000000000000"),
        (10**30, "1e+30"),
        (-(10**21), "-1e+21"),
    ],
)
def test_format_number_matches_javascript(value: float, text: str) -> None:
    assert format_number(value) == text


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_format_number_round_trips(value: float) -> None:
    assert float(format_number(value)) == value


# ---- to_json_schema -------------------------------------------------------------------------


def test_json_schema_shape() -> None:
    schema = to_json_schema(union(ref("Task"), ref("Company")), TYPES)
    task = schema["anyOf"][0]
    assert task["required"] == ["priority", "done"]
    assert task["additionalProperties"] is False
    assert task["properties"]["priority"] == {"type": "string", "enum": ["low", "high"]}
    assert task["properties"]["owner"]["properties"]["name"]["description"] == "Full name"
    assert "$defs" not in schema


def test_json_schema_uses_defs_only_for_recursion() -> None:
    schema = to_json_schema(ref("Node"), TYPES)
    assert schema["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert set(schema["$defs"]) == {"Node"}
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    assert validator.is_valid({"value": 1, "children": [{"value": 2, "children": []}]})
    assert not validator.is_valid({"value": 1, "children": [{"value": "2", "children": []}]})


# ---- generated types: example_value, json schema agreement ----------------------------------

_NAMES = ["Person", "Company", "Node", "Task"]
_leaf = st.sampled_from(
    [STRING, NUMBER, BOOLEAN, TEXT, PRIORITY, lit("x")] + [ref(n) for n in _NAMES]
)


def _extend(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    field_s = st.builds(fld, st.sampled_from(["a", "b", "c", "d"]), children, st.booleans())
    objects = st.lists(field_s, max_size=4, unique_by=lambda f: f["name"]).map(lambda fs: obj(*fs))
    unions = st.lists(children, min_size=1, max_size=3).map(lambda vs: union(*vs))
    return st.one_of(children.map(arr), objects, unions)


type_strategy = st.recursive(_leaf, _extend, max_leaves=8)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.sampled_from(["", "x", "low", "1", "yes"]),
    lambda c: (
        st.lists(c, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b", "name", "age"]), c, max_size=3)
    ),
    max_leaves=6,
)


@settings(max_examples=150, deadline=None)
@given(type_strategy)
def test_example_value_always_validates(type_: dict[str, Any]) -> None:
    value = example_value(type_, TYPES)
    assert validate(value, type_, TYPES) == []
    assert example_value(type_, TYPES) == value  # deterministic


@settings(max_examples=80, deadline=None)
@given(type_strategy, json_values)
def test_json_schema_agrees_with_validate(type_: dict[str, Any], value: Any) -> None:
    schema = to_json_schema(type_, TYPES)
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    assert validator.is_valid(value) == (validate(value, type_, TYPES) == [])
    example = example_value(type_, TYPES)
    assert validator.is_valid(example)


@settings(max_examples=100, deadline=None)
@given(type_strategy, json_values)
def test_coerce_is_idempotent_on_valid_values(type_: dict[str, Any], value: Any) -> None:
    if validate(value, type_, TYPES) == []:
        assert coerce(value, type_, TYPES) == value


@settings(max_examples=100, deadline=None)
@given(type_strategy, json_values)
def test_coerce_is_idempotent(type_: dict[str, Any], value: Any) -> None:
    once = coerce(value, type_, TYPES)
    assert coerce(once, type_, TYPES) == once
