"""The native codec: functions, response schema, decoding fragmented calls, history."""

from __future__ import annotations

import random

import jsonschema  # type: ignore[import-untyped]
import pytest
from protocol_contracts import CONTRACTS

from auwgent.runtime.protocol import NativeCodec, codec_for
from auwgent.runtime.protocol.contract import (
    AssistantTurn,
    CallOutcome,
    DecodeEvent,
    FinalEvent,
    PartialEvent,
    RejectedEvent,
)
from auwgent.runtime.providers.base import StreamEvent, TextDelta, ToolCallDelta

CODEC = NativeCodec()


def decode(events: list[StreamEvent], contract: str = "text") -> list[DecodeEvent]:
    decoder = CODEC.decoder(CONTRACTS[contract])
    out: list[DecodeEvent] = []
    for event in events:
        out += decoder.feed(event)
    return out + decoder.close()


def fragments(
    index: int,
    call_id: str,
    name: str,
    arguments: str,
    rng: random.Random,
) -> list[ToolCallDelta]:
    out = [ToolCallDelta(index, call_id, name, "")]
    i = 0
    while i < len(arguments):
        size = rng.randint(1, 6)
        out.append(ToolCallDelta(index, None, None, arguments[i : i + size]))
        i += size
    return out


def interleave(streams: list[list[ToolCallDelta]], rng: random.Random) -> list[StreamEvent]:
    out: list[StreamEvent] = []
    queues = [list(s) for s in streams]
    while any(queues):
        queue = rng.choice([q for q in queues if q])
        out.append(queue.pop(0))
    return out


Settled = FinalEvent | RejectedEvent


def finals(events: list[DecodeEvent]) -> list[Settled]:
    settled = [e for e in events if isinstance(e, (FinalEvent, RejectedEvent))]
    return sorted(settled, key=lambda e: e.segment)


def test_function_names_are_prefixed_by_kind_and_schemas_valid() -> None:
    functions = CODEC.functions(CONTRACTS["union"])
    names = [f.name for f in functions]
    assert names == [
        "tool__get_weather",
        "tool__notify",
        "tool__create_user",
        "tool__send_sms",
        "workflow__delete_user",
        "helper__DataAnalyzer",
        "intent__Planning",
        "output__Person",
        "output__Organisation",
    ]
    for function in functions:
        jsonschema.Draft202012Validator.check_schema(function.parameters)
    weather = functions[0].parameters
    assert weather["required"] == ["location"]
    assert weather["properties"]["units"] == {"type": "string", "enum": ["c", "f"]}
    sms = next(f for f in functions if f.name == "tool__send_sms")
    assert sms.description.endswith("[NOT CONFIGURED]")


def test_response_schema_only_for_a_single_structured_output() -> None:
    assert CODEC.response_schema(CONTRACTS["text"]) is None
    assert CODEC.response_schema(CONTRACTS["union"]) is None
    schema = CODEC.response_schema(CONTRACTS["person"])
    assert schema is not None and schema["name"] == "Person"
    assert schema["schema"]["required"] == ["name", "age"]
    assert not any(f.name.startswith("output__") for f in CODEC.functions(CONTRACTS["person"]))


def test_interleaved_fragmented_calls_decode_the_same_in_any_order() -> None:
    calls = [
        (0, "c0", "tool__get_weather", '{"location": "Accra", "days": "3"}'),
        (1, "c1", "workflow__delete_user", '{"id": "user_\\"1\\"", "extra": null}'),
        (2, "c2", "intent__Planning", '{"step": "Ask {politely}", "confidence": 0.5}'),
        (3, "c3", "tool__rm_rf", '{"path": "/"}'),
    ]
    expected = None
    for seed in range(25):
        rng = random.Random(seed)
        stream = interleave([fragments(*c, rng) for c in calls], rng)
        got = sorted(finals(decode(stream)), key=lambda e: e.call_id or "")
        settled = [
            (
                type(e).__name__,
                e.kind,
                e.name,
                e.call_id,
                e.payload if isinstance(e, FinalEvent) else e.message,
            )
            for e in got
        ]
        expected = expected or settled
        assert settled == expected
    assert expected is not None
    by_id = {row[3]: row for row in expected}
    assert by_id["c0"][4] == {"type": "get_weather", "args": {"location": "Accra", "days": 3}}
    assert by_id["c1"][4] == {"type": "delete_user", "args": {"id": 'user_"1"'}}
    assert by_id["c2"][1:3] == ("custom", "Planning")
    assert by_id["c2"][4] == {"step": "Ask {politely}", "confidence": 0.5}
    assert by_id["c3"][0] == "RejectedEvent" and "tool__rm_rf" in by_id["c3"][4]


@pytest.mark.parametrize("size", [1, 3, 8, 16, 40, 1000])
def test_a_call_is_final_only_when_the_stream_ends_whatever_the_fragments(size: int) -> None:
    """Fragments after the first balanced `}` still count: a conflicting duplicate key sent
    after it is rejected however the provider cut the arguments."""
    text = '{"location": "Accra"}{"location": "Tema"}'
    decoder = CODEC.decoder(CONTRACTS["text"])
    out: list[DecodeEvent] = []
    for i in range(0, len(text), size):
        out += decoder.feed(
            ToolCallDelta(0, "a" if i == 0 else None, "tool__get_weather", text[i : i + size])
        )
    assert not [e for e in out if not isinstance(e, PartialEvent)]
    settled = decoder.close()
    assert [type(e) for e in settled] == [RejectedEvent]


def test_partials_snapshot_the_arguments_so_far() -> None:
    decoder = CODEC.decoder(CONTRACTS["text"])
    decoder.feed(ToolCallDelta(0, "a", "tool__get_weather", ""))
    out = decoder.feed(ToolCallDelta(0, None, None, '{"location": "Acc'))
    partial = out[-1]
    assert isinstance(partial, PartialEvent)
    assert partial.snapshot == {"type": "get_weather", "args": {"location": "Acc"}}
    assert partial.raw == '{"location": "Acc'


def test_scoped_or_foreign_names_are_rejected_with_the_call_id() -> None:
    stream: list[StreamEvent] = [
        ToolCallDelta(0, "x", "get_weather", "{}"),  # no prefix
        ToolCallDelta(1, "y", "tool__db_drop", "{}"),  # not in the contract
        ToolCallDelta(2, "z", "helper__Other", '{"input": "hi"}'),
    ]
    got = finals(decode(stream))
    assert all(isinstance(e, RejectedEvent) for e in got)
    assert [e.call_id for e in got] == ["x", "y", "z"]


def test_text_is_the_reply_or_the_single_schema_and_commentary_beside_calls() -> None:
    text = decode([TextDelta("  Hello "), TextDelta("there. ")])
    assert isinstance(text[-1], FinalEvent) and text[-1].payload == {"text": "Hello there."}
    deltas = "".join(e.delta or "" for e in text if isinstance(e, PartialEvent))
    assert deltas == "Hello there."
    person = finals(decode([TextDelta('{"name": "Ama",'), TextDelta(' "age": "30"}')], "person"))
    assert isinstance(person[0], FinalEvent)
    assert person[0].payload == {"type": "Person", "response": {"name": "Ama", "age": 30}}
    union = finals(decode([TextDelta('{"name": "Ama"}')], "union"))
    assert isinstance(union[0], RejectedEvent) and "output__Person" in union[0].message
    mixed = finals(
        decode([TextDelta("Checking."), ToolCallDelta(0, "a", "tool__notify", '{"contact": "x"}')])
    )
    assert [e.kind for e in mixed] == ["tool_call"]


def test_output_function_for_a_union_variant() -> None:
    got = finals(
        decode(
            [
                ToolCallDelta(
                    0, "o", "output__Organisation", '{"company_name": "A", "industry": "B"}'
                )
            ],
            "union",
        )
    )
    assert isinstance(got[0], FinalEvent)
    assert got[0].kind == "response_schema"
    assert got[0].payload == {
        "type": "Organisation",
        "response": {"company_name": "A", "industry": "B"},
    }


def test_history_uses_tool_calls_and_one_tool_message_per_call() -> None:
    call = FinalEvent(
        "tool_call",
        "get_weather",
        0,
        {"type": "get_weather", "args": {"location": "Accra"}},
        "raw",
        "c1",
    )
    intent = FinalEvent("custom", "Planning", 1, {"step": "s", "confidence": 1}, "raw", "c2")
    message = CODEC.assistant_message(AssistantTurn("thinking", (call, intent)))
    assert message.role == "assistant"
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [
        ("c1", "tool__get_weather", '{"location": "Accra"}')
    ]
    assert "intent__Planning" in message.content
    results = CODEC.results_messages(
        [
            CallOutcome(
                "tool", "get_weather", {"location": "Accra"}, "ok", {"temp": 30}, call_id="c1"
            ),
            CallOutcome(
                "workflow", "delete_user", {"id": "1"}, "error", error="boom", call_id="c3"
            ),
        ]
    )
    assert [(m.role, m.tool_call_id, m.name, m.content) for m in results] == [
        ("tool", "c1", "tool__get_weather", '{"temp":30}'),
        ("tool", "c3", "workflow__delete_user", "error: boom"),
    ]
    assert CODEC.feedback_message(" fix it ").content == "fix it"


def test_native_section_has_no_block_syntax() -> None:
    text = codec_for("native").system_section(CONTRACTS["union"])
    assert "[tool_call" not in text
    assert "output__Person" in text and 'tool__get_weather({"location": "Accra"})' in text


def test_single_schema_text_streams_schema_partials() -> None:
    chunks = ['  {"name": "Ama', 'nda", "ag', 'e": "3', '0"}']
    events = decode([TextDelta(c) for c in chunks], "person")
    partials = [e for e in events if isinstance(e, PartialEvent)]
    assert all(e.kind == "response_schema" for e in partials)
    assert [e.snapshot["response"] for e in partials] == [
        {"name": "Ama"},
        {"name": "Amanda"},
        {"name": "Amanda"},  # "3" for a number may still become "30": not shown yet
        {"name": "Amanda", "age": 30},
    ]
    assert partials[0].snapshot["type"] == "Person"
    final = events[-1]
    assert isinstance(final, FinalEvent)
    assert final.payload == {"type": "Person", "response": {"name": "Amanda", "age": 30}}


def test_a_rejected_call_is_replayed_under_the_name_the_model_used() -> None:
    rejected = finals(decode([ToolCallDelta(0, "q", "search_web", '{"q": "x"}')]))[0]
    assert isinstance(rejected, RejectedEvent) and rejected.kind is None
    # The engine keeps a rejected native call in the turn as a tool_call FinalEvent.
    kept = FinalEvent(
        "tool_call",
        rejected.name,
        rejected.segment,
        {"type": rejected.name, "args": {}},
        rejected.raw,
        rejected.call_id,
    )
    message = CODEC.assistant_message(AssistantTurn("", (kept,)))
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == [("q", "search_web", "{}")]
