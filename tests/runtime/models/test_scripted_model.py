"""ScriptedModel: plays back responses as provider events and records requests."""

from __future__ import annotations

import json
import time

import pytest

from auwgent.errors import ProviderError
from auwgent.runtime.providers.base import (
    Finish,
    Message,
    ModelRequest,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from auwgent.testing import ScriptedModel


def _request(text: str = "hi") -> ModelRequest:
    return ModelRequest(model="m", system="sys", messages=(Message("user", text),))


async def _collect(model: ScriptedModel, request: ModelRequest | None = None) -> list[StreamEvent]:
    return [event async for event in model.stream(request or _request())]


def _text(events: list[StreamEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def _calls(events: list[StreamEvent]) -> dict[int, tuple[str | None, str | None, str]]:
    """Reassemble native call fragments the way a provider consumer would."""
    calls: dict[int, tuple[str | None, str | None, str]] = {}
    for event in events:
        if isinstance(event, ToolCallDelta):
            old_id, old_name, old_args = calls.get(event.index, (None, None, ""))
            calls[event.index] = (
                old_id or event.id,
                old_name or event.name,
                old_args + event.arguments,
            )
    return calls


async def test_text_is_streamed_in_chunks_of_chunk_size() -> None:
    text = "[response_text]\nHello there, friend!\n[/response_text]"
    model = ScriptedModel([text], chunk_size=5)
    events = await _collect(model)
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert _text(events) == text
    assert all(len(d.text) == 5 for d in deltas[:-1])
    assert len(deltas) == -(-len(text) // 5)
    assert events[-1] == Finish("stop")


async def test_responses_are_used_in_order_and_requests_recorded() -> None:
    model = ScriptedModel(["first", "second"])
    first, second = _request("one"), _request("two")
    assert _text(await _collect(model, first)) == "first"
    assert _text(await _collect(model, second)) == "second"
    assert model.requests == [first, second]
    assert model.last_request is second
    assert model.calls == 2
    assert model.remaining == 0


async def test_running_past_the_script_is_a_clear_provider_error() -> None:
    model = ScriptedModel(["only"])
    await _collect(model)
    with pytest.raises(ProviderError, match="no response left for call 2") as info:
        await _collect(model)
    assert info.value.provider == "scripted"
    # The failed call is still recorded, so a test can see what was asked.
    assert model.calls == 2
    assert model.remaining == 0


async def test_native_call_streams_id_and_name_first_then_argument_fragments() -> None:
    args = {"location": "Accra", "days": 3}
    model = ScriptedModel([ScriptedModel.call("tool__get_weather", args)], chunk_size=4)
    events = await _collect(model)
    fragments = [e for e in events if isinstance(e, ToolCallDelta)]
    assert len(fragments) > 1
    assert fragments[0].id == "call_1_0" and fragments[0].name == "tool__get_weather"
    assert all(f.id is None and f.name is None for f in fragments[1:])
    assert _calls(events) == {0: ("call_1_0", "tool__get_weather", json.dumps(args))}
    assert events[-1] == Finish("tool_calls")


async def test_reply_mixes_text_and_several_calls_with_indexes_and_usage() -> None:
    model = ScriptedModel(
        [
            "intro",
            ScriptedModel.reply(
                "Let me check.",
                ScriptedModel.call("tool__a", {"x": 1}),
                ScriptedModel.call("tool__b", '{"y": ', id="given"),
                usage=Usage(10, 5),
            ),
        ]
    )
    await _collect(model)
    events = await _collect(model)
    assert _text(events) == "Let me check."
    assert _calls(events) == {
        0: ("call_2_0", "tool__a", '{"x": 1}'),
        1: ("given", "tool__b", '{"y": '),  # malformed arguments pass through untouched
    }
    assert events[-2:] == [Usage(10, 5), Finish("tool_calls")]


async def test_json_helper_gives_structured_output_text() -> None:
    value = {"name": "Kwame", "tags": ["a", "é"]}
    model = ScriptedModel([ScriptedModel.json(value)], chunk_size=3)
    assert json.loads(_text(await _collect(model))) == value


async def test_function_script_sees_each_request_sync_and_async() -> None:
    def sync_script(request: ModelRequest) -> str:
        return "echo: " + request.messages[-1].content

    async def async_script(request: ModelRequest) -> str:
        return "async " + request.system

    assert _text(await _collect(ScriptedModel(sync_script), _request("yo"))) == "echo: yo"
    model = ScriptedModel(async_script)
    assert _text(await _collect(model)) == "async sys"
    assert model.remaining is None


async def test_fail_raises_after_streaming_the_given_prefix() -> None:
    model = ScriptedModel([ScriptedModel.fail("overloaded", after="partial te", status=503)])
    seen: list[StreamEvent] = []
    with pytest.raises(ProviderError) as info:
        async for event in model.stream(_request()):
            seen.append(event)
    assert _text(seen) == "partial te"
    assert not any(isinstance(e, Finish) for e in seen)
    assert info.value.status == 503
    assert "overloaded" in str(info.value)


async def test_raw_events_are_streamed_exactly() -> None:
    events = (TextDelta("a"), ToolCallDelta(0, id="c", name="n"), Finish("length"))
    model = ScriptedModel([ScriptedModel.events(*events)])
    assert tuple(await _collect(model)) == events


async def test_a_wrong_response_value_is_reported_with_the_call_number() -> None:
    model = ScriptedModel(lambda request: 42)  # type: ignore[arg-type,return-value]
    with pytest.raises(ProviderError, match="call 1 is a int"):
        await _collect(model)


def test_bad_arguments_fail_at_construction() -> None:
    with pytest.raises(ValueError):
        ScriptedModel([], chunk_size=0)
    with pytest.raises(TypeError):
        ScriptedModel("not a list")


async def test_embed_uses_the_given_function_and_records_calls() -> None:
    model = ScriptedModel([], embeddings=lambda texts, model: [[float(len(t))] for t in texts])
    assert await model.embed(["ab", "abc"], "emb") == [[2.0], [3.0]]
    assert model.embed_requests == [(["ab", "abc"], "emb")]


async def test_embed_without_function_is_deterministic_and_normalised() -> None:
    model = ScriptedModel([])
    first = await model.embed(["the weather in Accra", ""], "emb")
    again = await model.embed(["the weather in Accra", ""], "emb")
    assert first == again
    for vector in first:
        assert abs(sum(v * v for v in vector) - 1.0) < 1e-9


async def test_embed_function_returning_wrong_count_is_an_error() -> None:
    model = ScriptedModel([], embeddings=lambda texts, model: [])
    with pytest.raises(ProviderError, match="0 vectors for 1 texts"):
        await model.embed(["x"], "emb")


async def test_assert_exhausted_names_unused_responses() -> None:
    model = ScriptedModel(["a", "b", "c"])
    await _collect(model)
    with pytest.raises(
        AssertionError, match=r"called 1 time\(s\); 2 response\(s\) of 3 were never used"
    ):
        model.assert_exhausted()
    await _collect(model)
    await _collect(model)
    model.assert_exhausted()
    ScriptedModel(lambda request: "x").assert_exhausted()  # a function script never runs out


async def test_delay_spaces_out_the_events() -> None:
    model = ScriptedModel(["abcdef"], chunk_size=2, delay=0.02)
    start = time.perf_counter()
    events = await _collect(model)
    assert len(events) == 4  # three chunks and the finish
    assert time.perf_counter() - start >= 0.07


async def test_non_streaming_requests_get_the_same_events() -> None:
    streamed = await _collect(ScriptedModel(["hello world"]))
    request = ModelRequest(model="m", system="s", messages=(), stream=False)
    assert await _collect(ScriptedModel(["hello world"]), request) == streamed


def test_block_helpers_write_block_protocol_text() -> None:
    assert ScriptedModel.text("Hello!") == "[response_text]\nHello!\n[/response_text]"
    assert ScriptedModel.block("tool_call", "get_weather", {"location": "Accra", "days": 3}) == (
        "[tool_call: get_weather]\nlocation: Accra\ndays: 3\n[/tool_call]"
    )
    assert ScriptedModel.block("tool_call", "get_time") == "[tool_call: get_time]\n[/tool_call]"
    # Values a `key: value` line could misread, and nested values, are written as JSON.
    assert ScriptedModel.block("schema", "Person", {"name": "yes", "tags": ["a"]}) == (
        '[schema: Person]\n{"name": "yes", "tags": ["a"]}\n[/schema]'
    )
    assert ScriptedModel.block("custom", "Planning", "step: one") == (
        "[custom: Planning]\nstep: one\n[/custom]"
    )


def test_block_helper_refuses_unknown_kinds_and_missing_names() -> None:
    with pytest.raises(ValueError, match="unknown block kind 'tool'"):
        ScriptedModel.block("tool", "x")
    with pytest.raises(ValueError, match="a tool_call block needs a name"):
        ScriptedModel.block("tool_call")
    with pytest.raises(ValueError, match="response_text blocks take no name"):
        ScriptedModel.block("response_text", "x")
