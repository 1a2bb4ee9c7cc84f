"""Prompt evaluation over hand-written IR (the shapes of docs/ir.md, "Prompts")."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from auwgent.runtime.evaluate.prompts import (
    referenced_context_keys,
    render_body,
    render_prompt,
    render_template,
)


def text(value: str) -> dict[str, Any]:
    return {"t": "text", "value": value}


def interp(expr: dict[str, Any]) -> dict[str, Any]:
    return {"t": "expr", "expr": expr}


def name(n: str) -> dict[str, Any]:
    return {"e": "name", "name": n}


def ctx(n: str) -> dict[str, Any]:
    return {"e": "ctx", "name": n}


def lit(v: Any) -> dict[str, Any]:
    return {"e": "lit", "value": v}


def eq(left: dict[str, Any], right: dict[str, Any]) -> dict[str, Any]:
    return {"e": "binary", "op": "==", "left": left, "right": right}


def t_if(cond: dict[str, Any], then: list[Any], else_: list[Any] | None = None) -> dict[str, Any]:
    return {"t": "if", "cond": cond, "then": then, "else": else_ or []}


def item(*nodes: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "text", "template": list(nodes)}


def no_schema(target: str) -> str:
    raise AssertionError(f"no schema expected, got {target}")


# The manual's GreetingPrompt after the compiler's """ dedent:
GREETING = {
    "name": "GreetingPrompt",
    "params": [
        {"name": "name", "type": {"kind": "string"}, "optional": False, "description": None},
        {"name": "is_vip", "type": {"kind": "boolean"}, "optional": False, "description": None},
    ],
    "body": [
        item(
            text("You are a helpful assistant.\nYou are speaking with "),
            interp(name("name")),
            text(".\n\n"),
            t_if(
                eq(name("is_vip"), lit(True)),
                [
                    text(
                        "\n    This is a VIP customer. Prioritise their request and offer premium options.\n"
                    )
                ],
                [text("\n    Treat this customer with standard support guidelines.\n")],
            ),
            text("\n\nAlways be polite and concise."),
        )
    ],
}
WELCOME = {
    "name": "WelcomePrompt",
    "params": [],
    "body": [item(text("You are a helpful assistant. Be polite and concise."))],
}
SUPPORT = {
    "name": "SupportPrompt",
    "params": [],
    "body": [
        item(text("You are a customer support agent.")),
        {
            "kind": "example",
            "user": [text("Hello, I need help with my account.")],
            "assistant": [text("I'd be happy to help.")],
        },
        {
            "kind": "example",
            "user": [text("What is today's date?")],
            "assistant": [text("I can't tell.")],
        },
    ],
}
TYPES = {
    "Person": {
        "kind": "object",
        "fields": [
            {"name": "name", "type": {"kind": "string"}, "optional": False, "description": None},
            {
                "name": "tier",
                "type": {
                    "kind": "union",
                    "variants": [
                        {"kind": "literal", "value": "gold"},
                        {"kind": "literal", "value": "basic"},
                    ],
                },
                "optional": True,
                "description": None,
            },
        ],
    }
}
AGENT = {
    "name": "Main",
    "input": {"kind": "text"},
    "output": {"kind": "ref", "name": "Person"},
    "context": [
        {"name": "name", "type": {"kind": "string"}, "optional": False, "description": None},
        {"name": "is_vip", "type": {"kind": "boolean"}, "optional": False, "description": None},
        {"name": "region", "type": {"kind": "string"}, "optional": True, "description": None},
    ],
}
DOC = {
    "prompts": {"GreetingPrompt": GREETING, "WelcomePrompt": WELCOME, "SupportPrompt": SUPPORT},
    "types": TYPES,
}


def config(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"prompt": list(parts)}


def ref(prompt: str, *args: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "ref", "name": prompt, "args": list(args), "loc": [1, 1]}


def inline(*items: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "inline", "body": list(items), "loc": [1, 1]}


@pytest.mark.parametrize(
    ("is_vip", "middle"),
    [
        (True, "This is a VIP customer. Prioritise their request and offer premium options."),
        (False, "Treat this customer with standard support guidelines."),
    ],
)
def test_manual_greeting_prompt(is_vip: bool, middle: str) -> None:
    cfg = config(ref("GreetingPrompt", ctx("name"), ctx("is_vip")))
    rendered = render_prompt(DOC, AGENT, cfg, {"name": "Ama", "is_vip": is_vip})
    assert rendered == (
        f"You are a helpful assistant.\nYou are speaking with Ama.\n\n{middle}\n\nAlways be polite and concise."
    )


def test_composition_keeps_plus_order_and_joins_with_blank_lines() -> None:
    cfg = config(
        ref("GreetingPrompt", ctx("name"), ctx("is_vip")),
        ref("WelcomePrompt"),
        inline(item(text("Always respond in English."))),
        inline(item(text("Additional instructions can go here."))),
    )
    rendered = render_prompt(DOC, AGENT, cfg, {"name": "Kofi", "is_vip": False})
    assert rendered == (
        "You are a helpful assistant.\nYou are speaking with Kofi.\n\n"
        "Treat this customer with standard support guidelines.\n\n"
        "Always be polite and concise.\n\n"
        "You are a helpful assistant. Be polite and concise.\n\n"
        "Always respond in English.\n\n"
        "Additional instructions can go here."
    )


def test_literal_arguments_and_empty_parts_are_skipped() -> None:
    cfg = config(inline(item(text(""))), ref("GreetingPrompt", lit("Zed"), lit(True)), inline())
    rendered = render_prompt(DOC, AGENT, cfg, {})
    assert rendered.startswith("You are a helpful assistant.\nYou are speaking with Zed.")
    assert not rendered.endswith("\n")


def test_example_blocks_render_in_a_fixed_format_in_order() -> None:
    rendered = render_prompt(DOC, AGENT, config(ref("SupportPrompt")), {})
    assert rendered == (
        "You are a customer support agent.\n\n"
        "Example:\nUser: Hello, I need help with my account.\nAssistant: I'd be happy to help.\n\n"
        "Example:\nUser: What is today's date?\nAssistant: I can't tell."
    )


def test_js_style_if_items() -> None:
    body = [
        item(text("Start.")),
        {
            "kind": "if",
            "cond": name("vip"),
            "then": [item(text("This is a VIP customer."))],
            "else": [item(text("This is a standard customer."))],
        },
        {"kind": "if", "cond": name("admin"), "then": [item(text("Admin mode."))], "else": []},
        item(text("End.")),
    ]
    assert render_body(body, {"vip": True, "admin": False}, {}, schema_text=no_schema) == (
        "Start.\n\nThis is a VIP customer.\n\nEnd."
    )
    assert render_body(body, {"vip": False, "admin": 1}, {}, schema_text=no_schema) == (
        "Start.\n\nThis is a standard customer.\n\nAdmin mode.\n\nEnd."
    )


def test_schema_injection_writes_structures_out() -> None:
    body = [
        item(
            text("Input: "),
            {"t": "schema", "target": "input"},
            text("\nOutput: "),
            {"t": "schema", "target": "output"},
            text("\nContext: "),
            {"t": "schema", "target": "context"},
        )
    ]
    rendered = render_prompt(
        {**DOC, "prompts": {"S": {"name": "S", "params": [], "body": body}}},
        AGENT,
        config(ref("S")),
        {},
    )
    assert rendered == (
        "Input: string\n"
        'Output: { name: string, tier?: "gold" | "basic" }\n'
        "Context: { name: string, is_vip: boolean, region?: string }"
    )


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (3, "3"),
        (3.0, "3"),
        (2.5, "2.5"),
        (1e21, "1e+21"),
        (True, "true"),
        (False, "false"),
        (None, ""),
        ("hi", "hi"),
        ([1, 2.0, "a", None], '[1,2,"a",null]'),
        ({"a": {"b": 1.50}}, '{"a":{"b":1.5}}'),
    ],
)
def test_interpolated_values_render_as_documented(value: Any, shown: str) -> None:
    nodes = [text("<"), interp(name("v")), text(">")]
    assert render_template(nodes, {"v": value}, {}, schema_text=no_schema) == f"<{shown}>"


def test_missing_values_render_empty() -> None:
    nodes = [
        interp(ctx("nope")),
        interp(name("nope")),
        interp({"e": "member", "object": name("u"), "name": "x"}),
        interp({"e": "index", "object": name("xs"), "index": lit(9)}),
    ]
    assert render_template(nodes, {"u": None, "xs": [1]}, {}, schema_text=no_schema) == ""


def test_template_if_on_own_lines_leaves_no_stray_lines() -> None:
    nodes = [text("Hello.\n"), t_if(name("vip"), [text("\nVIP line\n")]), text("\nBye.")]
    assert (
        render_template(nodes, {"vip": True}, {}, schema_text=no_schema) == "Hello.\nVIP line\nBye."
    )
    assert render_template(nodes, {"vip": False}, {}, schema_text=no_schema) == "Hello.\nBye."


def test_indented_template_if_keeps_its_indentation_once() -> None:
    nodes = [
        text("Rules:\n  "),
        t_if(
            name("strict"),
            [text("\n      be strict\n      be brief\n  ")],
            [text("\n      be kind\n  ")],
        ),
        text("\nDone."),
    ]
    assert (
        render_template(nodes, {"strict": True}, {}, schema_text=no_schema)
        == "Rules:\n  be strict\n  be brief\nDone."
    )
    assert (
        render_template(nodes, {"strict": False}, {}, schema_text=no_schema)
        == "Rules:\n  be kind\nDone."
    )


def test_inline_template_if_is_kept_verbatim() -> None:
    nodes = [
        text("You are"),
        t_if(name("vip"), [text(" a VIP ")], [text(" a regular ")]),
        text("customer."),
    ]
    assert (
        render_template(nodes, {"vip": False}, {}, schema_text=no_schema)
        == "You are a regular customer."
    )


def test_template_conditions_use_comparisons_and_logic() -> None:
    cond = {
        "e": "binary",
        "op": "&&",
        "left": {"e": "binary", "op": ">", "left": ctx("age"), "right": lit(17)},
        "right": {"e": "unary", "op": "!", "operand": ctx("banned")},
    }
    nodes = [t_if(cond, [text("ok")], [text("no")])]
    assert render_template(nodes, {}, {"age": 20, "banned": False}, schema_text=no_schema) == "ok"
    assert render_template(nodes, {}, {"age": 20, "banned": True}, schema_text=no_schema) == "no"
    # A comparison that cannot be made is false in a template, never an exception.
    assert render_template(nodes, {}, {"age": "twenty"}, schema_text=no_schema) == "no"


def test_referenced_context_keys() -> None:
    cfg = config(
        ref("GreetingPrompt", ctx("name"), ctx("is_vip")),
        inline(item(text("Region: "), interp(ctx("region")))),
    )
    assert referenced_context_keys(DOC, AGENT, cfg) == {"name", "is_vip", "region"}
    assert referenced_context_keys(DOC, AGENT, config(ref("WelcomePrompt"))) == set()
    nested = inline(
        {
            "kind": "if",
            "cond": ctx("a"),
            "then": [
                item(t_if(ctx("b"), [interp({"e": "member", "object": ctx("c"), "name": "x"})]))
            ],
            "else": [{"kind": "example", "user": [interp(ctx("d"))], "assistant": []}],
        }
    )
    assert referenced_context_keys(DOC, AGENT, config(nested)) == {"a", "b", "c", "d"}


def test_nested_template_ifs() -> None:
    inner = t_if(name("b"), [text("\n  both\n")], [text("\n  only a\n")])
    nodes = [
        text("Start\n"),
        t_if(name("a"), [text("\n"), inner, text("\n")], [text("\nnone\n")]),
        text("\nEnd"),
    ]
    render = lambda a, b: render_template(nodes, {"a": a, "b": b}, {}, schema_text=no_schema)  # noqa: E731
    assert render(True, True) == "Start\nboth\nEnd"
    assert render(True, False) == "Start\nonly a\nEnd"
    assert render(False, True) == "Start\nnone\nEnd"


def test_windows_line_endings_in_branches() -> None:
    nodes = [text("A\r\n"), t_if(name("x"), [text("\r\n    B\r\n")]), text("\r\nC")]
    assert render_template(nodes, {"x": True}, {}, schema_text=no_schema) == "A\r\nB\r\nC"


def test_example_blocks_interpolate() -> None:
    body = [
        {
            "kind": "example",
            "user": [text("I am "), interp(ctx("name"))],
            "assistant": [text("Hi "), interp(ctx("name")), text("!")],
        }
    ]
    assert (
        render_body(body, {}, {"name": "Esi"}, schema_text=no_schema)
        == "Example:\nUser: I am Esi\nAssistant: Hi Esi!"
    )


def test_a_left_out_optional_prompt_parameter_reads_as_null() -> None:
    prompt = {
        "name": "P",
        "params": [
            {"name": "who", "type": {"kind": "string"}, "optional": True, "description": None}
        ],
        "body": [item(text("["), interp(name("who")), text("]"))],
    }
    assert (
        render_prompt({"prompts": {"P": prompt}, "types": {}}, AGENT, config(ref("P")), {}) == "[]"
    )


def test_schema_text_for_text_output_and_empty_context() -> None:
    agent = {"name": "A", "input": {"kind": "text"}, "output": {"kind": "text"}, "context": []}
    body = [
        item({"t": "schema", "target": "output"}, text(" / "), {"t": "schema", "target": "context"})
    ]
    doc = {"prompts": {"S": {"name": "S", "params": [], "body": body}}, "types": {}}
    assert render_prompt(doc, agent, config(ref("S")), {}) == "string / {}"


scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5)
)
values = st.recursive(
    scalars,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=3),
    max_leaves=6,
)


@given(values, values)
def test_templates_never_fail_whatever_the_values(a: Any, b: Any) -> None:
    cond = {
        "e": "binary",
        "op": "<",
        "left": name("a"),
        "right": {"e": "member", "object": name("b"), "name": "x"},
    }
    nodes = [
        interp(name("a")),
        t_if(
            cond, [interp({"e": "index", "object": name("b"), "index": lit(0)})], [interp(ctx("a"))]
        ),
    ]
    assert isinstance(
        render_template(nodes, {"a": a, "b": b}, {"a": b}, schema_text=no_schema), str
    )


def test_an_empty_indented_block_leaves_no_line() -> None:
    nodes = [
        text("Rules:\n  "),
        t_if(name("strict"), [text("\n      be strict\n  ")]),
        text("\n  Done."),
    ]
    assert render_template(nodes, {"strict": False}, {}, schema_text=no_schema) == "Rules:\n  Done."
    assert (
        render_template(nodes, {"strict": True}, {}, schema_text=no_schema)
        == "Rules:\n  be strict\n  Done."
    )
    # At the very start and very end of a template.
    alone = [t_if(name("x"), [text("\nX\n")])]
    assert render_template(alone, {"x": False}, {}, schema_text=no_schema) == ""
    first = [t_if(name("x"), [text("\nX\n")]), text("\nRest")]
    assert render_template(first, {"x": False}, {}, schema_text=no_schema) == "Rest"
    assert render_template(first, {"x": True}, {}, schema_text=no_schema) == "X\nRest"
