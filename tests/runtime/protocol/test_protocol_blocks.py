"""The block codec: protocol section, history messages, partials and their cost."""

from __future__ import annotations

import json
import re

import pytest
from protocol_contracts import CONTRACTS, make

from auwgent.errors import ConfigError
from auwgent.runtime.protocol import BlocksCodec, codec_for
from auwgent.runtime.protocol.contract import (
    AssistantTurn,
    CallOutcome,
    Contract,
    DecodeEvent,
    FinalEvent,
    PartialEvent,
)
from auwgent.runtime.protocol.values import BodyError, parse_body
from auwgent.runtime.providers.base import TextDelta, ToolCallDelta

CODEC = BlocksCodec()


def decode(contract: Contract, chunks: list[str]) -> list[DecodeEvent]:
    decoder = CODEC.decoder(contract)
    out: list[DecodeEvent] = []
    for chunk in chunks:
        out += decoder.feed(TextDelta(chunk))
    return out + decoder.close()


def test_codec_for_names_both_codecs_and_rejects_others() -> None:
    assert codec_for("blocks").name == "blocks"
    assert codec_for("native").name == "native"
    with pytest.raises(ConfigError, match="unknown protocol 'xml'"):
        codec_for("xml")


def test_section_lists_signatures_intents_output_and_examples() -> None:
    text = CODEC.system_section(CONTRACTS["text"])
    assert (
        '- get_weather(location: string /* city name */, units?: "c" | "f", days?: number)'
        ": WeatherResult // Gets the weather" in text
    )
    assert "- send_sms(phone: string): boolean // Sends a text [NOT CONFIGURED]" in text
    assert "- delete_user(id: string): boolean // Deletes a user record." in text
    assert "- DataAnalyzer(input: string): string // Analyses data" in text
    assert "- Planning { step: string, confidence: number } // Emit a plan" in text
    assert "[response_text]" in text and "[schema" not in text
    assert "[tool_call: get_weather]\nlocation: Accra\n[/tool_call]" in text
    assert "[workflow_call: delete_user]\n[/workflow_call]" in text
    assert "Address = { address: string, city?: string }" in text
    assert CODEC.system_section(CONTRACTS["text"]) == text  # deterministic
    assert CODEC.functions(CONTRACTS["text"]) == ()
    assert CODEC.response_schema(CONTRACTS["text"]) is None


def test_section_teaches_only_the_allowed_kinds() -> None:
    bare = Contract(agent="A", callables=(), intents=(), output={"kind": "text"}, types={})
    text = CODEC.system_section(bare)
    assert "tool_call" not in text and "custom" not in text and "Types:" not in text


def test_section_output_contract_for_structured_and_union() -> None:
    single = CODEC.system_section(CONTRACTS["person"])
    assert "`[schema: Person]`" in single
    assert "name: string /* full name */, age: number" in single
    assert "[response_text]" not in single
    union = CODEC.system_section(CONTRACTS["union"])
    assert "Person or Organisation" in union
    assert "Organisation = { company_name: string, industry: string }" in union


def test_results_come_back_in_one_message_with_kind_name_args_and_result() -> None:
    messages = CODEC.results_messages(
        [
            CallOutcome("tool", "get_weather", {"location": "Accra"}, "ok", {"temp": 30}),
            CallOutcome("workflow", "delete_user", {"id": "u1"}, "error", error="no such user"),
            CallOutcome("helper", "DataAnalyzer", {"input": "x"}, "ok", "plain text"),
            CallOutcome("tool", "notify", {"contact": "c"}, "skipped"),
        ]
    )
    assert len(messages) == 1 and messages[0].role == "user"
    assert messages[0].content == (
        '[tool_result: get_weather]\nargs: {"location":"Accra"}\nresult: {"temp":30}\n'
        "[/tool_result]\n"
        '[workflow_error: delete_user]\nargs: {"id":"u1"}\nerror: no such user\n'
        "[/workflow_error]\n"
        '[helper_result: DataAnalyzer]\nargs: {"input":"x"}\nresult: plain text\n'
        "[/helper_result]\n"
        '[tool_skipped: notify]\nargs: {"contact":"c"}\nnote: the application skipped this call\n'
        "[/tool_skipped]"
    )
    assert CODEC.results_messages([]) == []
    assert CODEC.assistant_message(
        AssistantTurn("[response_text]\nx\n[/response_text]")
    ).content.startswith("[response_text]")
    assert "fix the age" in CODEC.feedback_message("fix the age").content


def test_tool_call_deltas_are_ignored_by_the_block_decoder() -> None:
    decoder = CODEC.decoder(CONTRACTS["text"])
    assert decoder.feed(ToolCallDelta(0, "a", "tool__x", "{}")) == []
    assert decoder.close() == []


def test_a_final_fires_the_moment_its_block_closes() -> None:
    decoder = CODEC.decoder(CONTRACTS["text"])
    out = decoder.feed(TextDelta("[tool_call: get_weather]\nlocation: Accra\n[/tool_call]"))
    assert [type(e) for e in out][-1] is FinalEvent
    assert decoder.feed(TextDelta("\n[response_text]\nDone")) != []


def test_call_partials_snapshot_args_and_raw() -> None:
    events = decode(CONTRACTS["text"], list("[tool_call: notify]\ncontact: ops\ntags: [a, b"))
    partials = [e for e in events if isinstance(e, PartialEvent)]
    assert partials[0].snapshot == {"type": "notify", "args": {}}
    # `b` may still grow (or be the first letters of a longer item): only `a` is certain.
    assert partials[-1].snapshot == {"type": "notify", "args": {"contact": "ops", "tags": ["a"]}}
    assert partials[-1].raw == "\ncontact: ops\ntags: [a, b"
    schema = decode(CONTRACTS["person"], ["[schema: Person]\nname: Ky", "aw\n"])
    assert [e.snapshot for e in schema if isinstance(e, PartialEvent)] == [
        {"type": "Person", "response": {"name": "Ky"}},
        {"type": "Person", "response": {"name": "Kyaw"}},
    ]


def test_no_partials_for_blocks_that_will_be_rejected() -> None:
    events = decode(CONTRACTS["text"], list("[tool_call: nope]\na: 1\n[/tool_call]"))
    assert not any(isinstance(e, PartialEvent) for e in events)


@pytest.mark.parametrize("chunk", [1, 8, 64])
def test_partial_cost_stays_linear_in_the_block(chunk: int) -> None:
    """Every partial copies its block so far: within the budget their total size stays a
    small multiple of the stream, however long the block and however small the chunks; beyond
    it, one partial per 4 KB of body (the cadence) adds one copy each."""
    items = [{"sku": f"item-{i}", "qty": i, "note": "x" * (i % 17)} for i in range(3000)]
    body = json.dumps({"name": "big", "age": 1, "items": items})
    contract = make({"kind": "ref", "name": "Person"})
    text = f'[tool_call: notify]\n{{"contact": "c", "tags": {json.dumps([body])}}}\n'
    chunks = [text[i : i + chunk] for i in range(0, len(text), chunk)]
    events = decode(contract, chunks)
    partials = [e for e in events if isinstance(e, PartialEvent)]
    assert len(partials) > 20
    cadence = (len(text) // 4096 + 1) * len(text)
    assert sum(len(e.raw) for e in partials) < 4 * len(text) + (1 << 17) + cadence
    sizes = [0] + [len(e.raw) for e in partials]
    assert max(b - a for a, b in zip(sizes, sizes[1:], strict=False)) < 4096 + chunk
    final = events[-1]
    assert isinstance(final, FinalEvent) and final.payload["args"]["tags"] == [body]


def test_text_partials_are_frequent_for_ordinary_replies() -> None:
    reply = "word " * 400
    events = decode(CONTRACTS["text"], [reply[i : i + 4] for i in range(0, len(reply), 4)])
    partials = [e for e in events if isinstance(e, PartialEvent)]
    assert len(partials) >= 400  # one per chunk that adds visible text


def test_values_partial_mode_never_raises() -> None:
    fields = CONTRACTS["text"].callables[2].params
    body = 'name: a\nname: b\nuser: {address: "x", ]\n{'
    with pytest.raises(BodyError):
        parse_body(body, fields, CONTRACTS["text"].types)
    for end in range(len(body) + 1):
        parse_body(body[:end], fields, CONTRACTS["text"].types, partial=True)


def test_an_empty_value_means_not_given_except_for_text() -> None:
    fields = CONTRACTS["text"].callables[1].params  # notify(contact, url?, value?, tags?)
    assert parse_body("contact: x\ntags:\nurl:", fields, {}) == {"contact": "x", "url": ""}


def test_a_bracketed_text_value_stays_text() -> None:
    fields = CONTRACTS["text"].callables[1].params
    body = "contact: [ops] on-call\nvalue: {not json"
    assert parse_body(body, fields, {}) == {"contact": "[ops] on-call", "value": "{not json"}
    with pytest.raises(BodyError, match="not closed"):
        parse_body("contact: x\ntags: [a, b", fields, {})


def test_partials_read_a_fenced_json_body_before_the_fence_closes() -> None:
    stream = '[tool_call: get_weather]\n```json\n{"location": "Cape Co'
    events = decode(CONTRACTS["text"], [stream])
    partials = [e for e in events if isinstance(e, PartialEvent)]
    assert partials[-1].snapshot == {"type": "get_weather", "args": {"location": "Cape Co"}}
    final = decode(CONTRACTS["text"], [stream + 'ast"}\n'])[-1]  # the fence never closes
    assert isinstance(final, FinalEvent)
    assert final.payload == {"type": "get_weather", "args": {"location": "Cape Coast"}}


def test_repairs_are_listed_on_the_final_event() -> None:
    stream = "[tool_call: create_user\n{name: 'Ada' age: \"28\", vip: yes, user_city: Accra,}"
    (final,) = [e for e in decode(CONTRACTS["text"], [stream]) if isinstance(e, FinalEvent)]
    assert final.payload["args"] == {
        "name": "Ada",
        "age": 28,
        "vip": True,
        "user": {"city": "Accra"},
    }
    kinds = [r["kind"] for r in final.repairs]
    for kind in ("header_bracket", "missing_closer", "unquoted_key", "single_quotes"):
        assert kind in kinds
    assert {"kind": "alias", "path": "user.city", "detail": "`user_city` read as `user.city`"} in (
        final.repairs
    )
    assert {"kind": "coerced", "path": "age", "detail": '"28" read as 28'} in final.repairs
    clean = decode(CONTRACTS["text"], ["[tool_call: get_weather]\nlocation: Accra\n[/tool_call]"])
    assert [e.repairs for e in clean if isinstance(e, FinalEvent)] == [()]


def test_a_lone_string_parameter_never_shows_a_key_as_its_value() -> None:
    events = decode(CONTRACTS["text"], list("[helper_call: DataAnalyzer]\ninput: low stock\n"))
    snapshots = [e.snapshot["args"] for e in events if isinstance(e, PartialEvent)]
    # While `input` is typed it could be plain text or a key: nothing is shown until `:`.
    assert all(s == {} or "low stock".startswith(s["input"]) for s in snapshots)
    assert snapshots[-1] == {"input": "low stock"}


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ("a_b_c: x", "could be `a_b.c` or `a.b_c`"),
        ("name: Ada\nage: 3\nuser:\n  address: X\nuser:\n  address: Y", "given twice"),
    ],
)
def test_ambiguity_is_rejected_with_a_message(body: str, words: str) -> None:
    fields = [
        {"name": "a_b", "type": {"kind": "object", "fields": [_f("c")]}, "optional": True},
        {"name": "a", "type": {"kind": "object", "fields": [_f("b_c")]}, "optional": True},
        _f("name"),
        {"name": "age", "type": {"kind": "number"}, "optional": False},
        {"name": "user", "type": {"kind": "object", "fields": [_f("address")]}, "optional": True},
    ]
    with pytest.raises(BodyError, match=re.escape(words)):
        parse_body(body, fields, {})


def _f(name: str) -> dict[str, object]:
    return {"name": name, "type": {"kind": "string"}, "optional": True, "description": None}
