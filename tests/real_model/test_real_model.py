"""Agents driven by a real model: SmolLM2-135M-Instruct on llama.cpp's server, over HTTP.

Each case runs in both protocols through the custom (OpenAI-compatible) provider, with
temperature 0 and a fixed seed. A 135M model is weak: it often ignores the tools and writes a
wrong or cut-off answer, so the tests assert what the runtime guarantees whatever the model
writes (``bench/bench_real_model.py`` measures how often it gets things right):

- every run ends with a well-formed outcome: a complete turn with its answer, or an error
  turn whose ``error`` intent says why, and a session that stays JSON;
- structured output is either valid against the declared type or refused with the reason
  (in the native protocol the server constrains it to the schema we send);
- a tool runs only with arguments valid for its declaration, and its result reaches the
  model in the next request;
- a continued session carries the earlier turns to the model, streamed partials are prefixes
  of the final text, and the usage figures are the server's own.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from local_model import WEATHER_AGENT, local_agent

from auwgent.runtime.agent import Agent

pytestmark = pytest.mark.real_model

PROTOCOLS = ["blocks", "native"]

TEXT = """
agent Main {
    default config {
        model: MODEL
        prompt: "You answer in one short sentence."
    }
}
"""

STRUCTURED = """
type Capital {
    city: string @desc "the capital city"
    country: string @desc "the country it is the capital of"
}
agent Main {
    default config {
        model: MODEL
        prompt: "Name the capital city of the country the user names."
    }
    output: Capital
}
"""


CAPITAL_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "country": {"type": "string"}},
    "required": ["city", "country"],
    "additionalProperties": False,
}


class Recorder:
    """Every final intent of a run, in order."""

    def __init__(self) -> None:
        self.intents: list[tuple[str, Any]] = []

    def __call__(self, name: str, value: Any, agent_name: str) -> None:
        self.intents.append((name, value))

    def of(self, name: str) -> list[Any]:
        return [value for kind, value in self.intents if kind == name]


def _check_outcome(session: dict[str, Any], recorder: Recorder, answer: str) -> dict[str, Any]:
    """The guarantees of every run; returns the last turn."""
    assert json.loads(json.dumps(session)) == session, "the session stays JSON"
    turn = session["turns"][-1]
    errors = recorder.of("error")
    if turn["status"] == "complete":
        assert errors == [], errors
        assert recorder.intents[-1][0] == answer, recorder.intents
    else:
        assert turn["status"] == "error", turn
        assert errors and all(e["message"] for e in errors), recorder.intents
        assert turn["error"], turn
    assert turn["model_calls"], "every run made at least one model call"
    for call in turn["model_calls"]:
        assert call["model"] == "local:SmolLM2-135M-Instruct.Q4_1"
        if call["finish_reason"] is None:
            # Seen once in CI (streamed, blocks, a loaded machine): the server's stream closed
            # after its content with neither a finish reason nor usage, which the runtime
            # accepts from an OpenAI-compatible stream. Nothing else may be missing then.
            assert call["usage"] is None, call
            continue
        assert call["finish_reason"] in ("stop", "length", "tool_calls"), call
        usage = call["usage"]
        assert usage["input_tokens"] > 0 and usage["output_tokens"] >= 0, call
        assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]
    return turn


def _record(agent: Agent) -> Recorder:
    recorder = Recorder()
    agent.on_intent(recorder)
    return recorder


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_text_answer(local_model_url: str, protocol: str) -> None:
    async with local_agent(TEXT, local_model_url, protocol, max_tokens=32) as agent:
        recorder = _record(agent)
        session = await agent.run("What is the capital of France?")
    turn = _check_outcome(session, recorder, "response_text")
    # A text agent takes any text as its answer: the run completes, cut off or not.
    assert turn["status"] == "complete", turn
    (answer,) = recorder.of("response_text")
    assert isinstance(answer["text"], str) and answer["text"].strip()
    assert answer.get("truncated", False) == (turn["model_calls"][-1]["finish_reason"] == "length")


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_structured_output(local_model_url: str, protocol: str) -> None:
    async with local_agent(
        STRUCTURED, local_model_url, protocol, max_tokens=48, maxOutputRetries=1
    ) as agent:
        recorder = _record(agent)
        session = await agent.run("France")
    turn = _check_outcome(session, recorder, "response_schema")
    if protocol == "native":
        # The schema goes out as `response_format`; llama.cpp decodes under it.
        assert turn["status"] == "complete", turn["error"]
    if turn["status"] == "complete":
        (output,) = recorder.of("response_schema")
        assert output["type"] == "Capital"
        jsonschema.validate(output["response"], CAPITAL_SCHEMA)
    else:
        # Refused with the reason: an output cut at the token limit, or still invalid after
        # the retries (each retry told the model what was wrong).
        assert recorder.of("response_schema") == []
        assert "output limit" in turn["error"] or "still invalid" in turn["error"], turn["error"]


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_one_tool_loop(local_model_url: str, protocol: str, streamed: bool) -> None:
    """Asked for in one piece, and streamed (a partial handler makes the runtime ask for the
    event stream, and a call may then start while the model is still writing)."""
    ran: list[Any] = []

    def get_weather(city: str) -> str:
        ran.append(city)
        return f"Sunny and 21 C in {city}."

    async with local_agent(
        WEATHER_AGENT, local_model_url, protocol, tools={"get_weather": get_weather}, maxToolLoops=3
    ) as agent:
        recorder = _record(agent)
        partials: list[str] = []
        if streamed:
            agent.on_intent_partial(lambda name, value, who: partials.append(name))
        session = await agent.run("Call get_weather for Paris.")
    turn = _check_outcome(session, recorder, "response_text")
    # Only validated arguments reach the tool: a string city, nothing else.
    assert all(isinstance(city, str) for city in ran), ran
    calls = recorder.of("tool_call")
    results = recorder.of("tool_result")
    assert [r["args"] for r in results] == [{"city": city} for city in ran]
    assert all(call["type"] == "get_weather" for call in calls)
    assert len(calls) >= len(ran), "nothing runs without its tool_call intent"
    if ran:
        # The result went back to the model: there was a later call, which read it.
        assert len(turn["model_calls"]) >= 2
        history = json.dumps(turn)
        assert "Sunny and 21 C in" in history
    if streamed and turn["status"] == "complete":
        assert partials, "the answer arrived as a stream"


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_multi_turn_session(local_model_url: str, protocol: str) -> None:
    async with local_agent(TEXT, local_model_url, protocol, max_tokens=24) as agent:
        first = await agent.run("My name is Ada. Say hello to me.")
        restored = json.loads(json.dumps(first))  # as a session store keeps it
        snapshots: list[str] = []
        deltas: list[str] = []
        finals: list[str] = []
        async for event in agent.stream("What is my name?", session=restored):
            if event.name == "response_text" and event.partial:
                snapshots.append(event.value["snapshot"]["text"])
                deltas.append(event.value.get("delta", ""))
            elif event.name == "response_text":
                finals.append(event.value["text"])
        second = agent.last_session
    assert second is not None
    assert [t["status"] for t in second["turns"]] == ["complete", "complete"]
    assert second["turns"][0] == first["turns"][0], "the earlier turn is carried unchanged"
    (answer,) = finals
    assert answer.strip()
    assert snapshots, "the answer streamed from the server"
    assert all(answer.startswith(snapshot) for snapshot in snapshots), (snapshots, answer)
    assert answer.startswith("".join(deltas)), (deltas, answer)
    one = first["turns"][0]["model_calls"][-1]["usage"]["input_tokens"]
    two = second["turns"][1]["model_calls"][-1]["usage"]["input_tokens"]
    assert two > one, "the second request held the first exchange"
    assert second["usage"]["input_tokens"] >= one + two
