"""Contracts shared by the protocol tests (IR dicts written by hand, as docs/ir.md shows)."""

from __future__ import annotations

from typing import Any

from auwgent.runtime.protocol.contract import CallableSpec, Contract

STRING: dict[str, Any] = {"kind": "string"}
NUMBER: dict[str, Any] = {"kind": "number"}
BOOLEAN: dict[str, Any] = {"kind": "boolean"}


def fld(
    name: str,
    type_: dict[str, Any] = STRING,
    *,
    optional: bool = False,
    description: str | None = None,
) -> dict[str, Any]:
    return {"name": name, "type": type_, "optional": optional, "description": description}


def ref(name: str) -> dict[str, Any]:
    return {"kind": "ref", "name": name}


TYPES: dict[str, Any] = {
    "WeatherResult": {"kind": "object", "fields": [fld("temp", NUMBER)]},
    "Address": {"kind": "object", "fields": [fld("address"), fld("city", optional=True)]},
    "Person": {
        "kind": "object",
        "fields": [fld("name", description="full name"), fld("age", NUMBER)],
    },
    "Organisation": {"kind": "object", "fields": [fld("company_name"), fld("industry")]},
}

UNITS = {
    "kind": "union",
    "variants": [{"kind": "literal", "value": "c"}, {"kind": "literal", "value": "f"}],
}

CALLABLES = (
    CallableSpec(
        "tool",
        "get_weather",
        "Gets the weather",
        (
            fld("location", description="city name"),
            fld("units", UNITS, optional=True),
            fld("days", NUMBER, optional=True),
        ),
        ref("WeatherResult"),
    ),
    CallableSpec(
        "tool",
        "notify",
        "Sends a notice",
        (
            fld("contact"),
            fld("url", optional=True),
            fld("value", optional=True),
            fld("tags", {"kind": "array", "items": STRING}, optional=True),
        ),
        BOOLEAN,
    ),
    CallableSpec(
        "tool",
        "create_user",
        "Creates a user",
        (
            fld("name"),
            fld("age", NUMBER),
            fld("vip", BOOLEAN, optional=True),
            fld("user", ref("Address"), optional=True),
        ),
        STRING,
    ),
    CallableSpec("tool", "send_sms", "Sends a text", (fld("phone"),), BOOLEAN, configured=False),
    CallableSpec("workflow", "delete_user", "Deletes a user record.", (fld("id"),), BOOLEAN),
    CallableSpec("helper", "DataAnalyzer", "Analyses data", (fld("input"),), {"kind": "text"}),
)
INTENTS = (
    {
        "name": "Planning",
        "description": "Emit a plan",
        "fields": [fld("step"), fld("confidence", NUMBER)],
    },
)
EXAMPLES = (
    {"kind": "tool", "target": "get_weather", "args": {"location": "Accra"}},
    {"kind": "workflow", "target": "delete_user", "args": {}},
)


def is_prefix(partial: Any, final: Any) -> bool:
    """A partial snapshot shows only what the final holds: keys it has, text that is a prefix
    of the final text, list items before the last equal (the last a prefix), other values
    equal."""
    if isinstance(partial, dict):
        return isinstance(final, dict) and all(
            key in final and is_prefix(value, final[key]) for key, value in partial.items()
        )
    if isinstance(partial, list):
        return (
            isinstance(final, list)
            and len(partial) <= len(final)
            and all(a == b for a, b in zip(partial[:-1], final, strict=False))
            and (not partial or is_prefix(partial[-1], final[len(partial) - 1]))
        )
    if isinstance(partial, str):
        return isinstance(final, str) and final.startswith(partial)
    return bool(partial == final)


def make(output: dict[str, Any]) -> Contract:
    return Contract(
        agent="Main",
        callables=CALLABLES,
        intents=INTENTS,
        output=output,
        types=TYPES,
        examples=EXAMPLES,
    )


CONTRACTS: dict[str, Contract] = {
    "text": make({"kind": "text"}),
    "person": make(ref("Person")),
    "union": make({"kind": "union", "variants": [ref("Person"), ref("Organisation")]}),
}
