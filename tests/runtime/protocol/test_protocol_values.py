"""The lenient body reader, directly: each accepted form and each refusal."""

from __future__ import annotations

import json
from typing import Any

import pytest
from protocol_contracts import NUMBER, STRING, fld

from auwgent.runtime.protocol.values import BodyError, JsonPrefix, loads_loose, parse_body

TYPES: dict[str, Any] = {
    "Step": {"kind": "object", "fields": [fld("name"), fld("minutes", NUMBER, optional=True)]},
    "Place": {
        "kind": "object",
        "fields": [
            fld("city"),
            fld(
                "geo",
                {"kind": "object", "fields": [fld("lat", NUMBER), fld("lng", NUMBER)]},
                optional=True,
            ),
        ],
    },
}
FIELDS = [
    fld("title"),
    fld("notes", optional=True),
    fld("steps", {"kind": "array", "items": {"kind": "ref", "name": "Step"}}, optional=True),
    fld("home", {"kind": "ref", "name": "Place"}, optional=True),
    fld(
        "level",
        {
            "kind": "union",
            "variants": [{"kind": "literal", "value": "low"}, {"kind": "literal", "value": "high"}],
        },
        optional=True,
    ),
    fld("labels", {"kind": "array", "items": STRING}, optional=True),
]

CASES: list[tuple[str, dict[str, Any]]] = [
    ('"title": Plan', {"title": "Plan"}),
    (
        "title: Plan\nnotes: |\n  first line\n  second line\nlevel: high",
        {"title": "Plan", "notes": "first line\nsecond line", "level": "high"},
    ),
    (
        "title: Trip\nsteps:\n  - name: pack\n    minutes: 20\n  - name: go\n",
        {"title": "Trip", "steps": [{"name": "pack", "minutes": 20}, {"name": "go"}]},
    ),
    (
        "title: T\nsteps: [{name: 'a', minutes: '5'}, {name: b}]",
        {"title": "T", "steps": [{"name": "a", "minutes": 5}, {"name": "b"}]},
    ),
    (
        "title: T\nhome.city: Accra\nhome.geo.lat: 5.6\nhome_geo_lng: -0.19",
        {"title": "T", "home": {"city": "Accra", "geo": {"lat": 5.6, "lng": -0.19}}},
    ),
    (
        "title: T\nhome: {city: Kumasi}\nhome.geo: {lat: 1, lng: 2}",
        {"title": "T", "home": {"city": "Kumasi", "geo": {"lat": 1, "lng": 2}}},
    ),
    ("title: 'single quoted'\nlabels: x", {"title": "single quoted", "labels": ["x"]}),
    (
        "title: a # not a comment\nnotes: 10:30 meeting",
        {"title": "a # not a comment", "notes": "10:30 meeting"},
    ),
    ('{"title": "J", "notes": null}', {"title": "J"}),
    ("{title: 'x', labels: ['a' 'b'],}", {"title": "x", "labels": ["a", "b"]}),
]


@pytest.mark.parametrize(("body", "expected"), CASES)
def test_accepted_forms(body: str, expected: dict[str, Any]) -> None:
    assert parse_body(body, FIELDS, TYPES) == expected


REFUSED = [
    ("title: a\ntitle: b", "given twice"),
    ("title: T\nhome.city: A\nhome: {city: B}", "given twice"),
    ("just some words", "cannot read the line"),
    ('["a", "b"]', "cannot read the line"),
    ("{title: 'x'", "not closed"),
]


@pytest.mark.parametrize(("body", "message"), REFUSED)
def test_refused_bodies_say_why(body: str, message: str) -> None:
    with pytest.raises(BodyError, match=message):
        parse_body(body, FIELDS, TYPES)


def test_unknown_keys_are_kept_for_validation_to_report() -> None:
    assert parse_body("title: T\ncolour: red", FIELDS, TYPES) == {"title": "T", "colour": "red"}


def test_loads_loose_keeps_bare_words_as_text() -> None:
    assert loads_loose("{a: 1, b: true, c: null, d: two words}") == {
        "a": "1",
        "b": "true",
        "c": None,
        "d": "two words",
    }
    assert loads_loose('{"a": [1, 2]}') == {"a": [1, 2]}  # valid JSON reads as JSON
    assert loads_loose('{"a": [1, 2', partial=True) == {"a": ["1", "2"]}  # typed later


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": "x\\', {"a": "x"}),
        ('{"a": 1, "b": tr', {"a": 1}),
        ('{"a": [1, {"b": "c"}, ', {"a": [1, {"b": "c"}]}),
        ('{"k\\"ey": "v', {'k"ey': "v"}),
    ],
)
def test_json_prefix_closes_a_streaming_object(text: str, expected: dict[str, Any]) -> None:
    prefix = JsonPrefix()
    for char in text:
        prefix.feed(char)
    for candidate in prefix.completed(text):
        try:  # an open string ends with a mark the reader uses to keep it out of snapshots
            assert json.loads(candidate.replace("\ue000", "")) == expected
            return
        except json.JSONDecodeError:
            continue
    raise AssertionError(f"no candidate parsed: {prefix.completed(text)}")
