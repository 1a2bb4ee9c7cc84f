"""No-progress detection and model fallback, through generated bindings.

Loop detection runs on the scripted model (the model's behaviour is the subject); fallback runs
against the real-HTTP fake servers and their fault builders (an outage of the primary, and a
primary that fails mid-stream, where the fallback must not be used).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from auwgent.errors import ConfigError
from auwgent.testing import (
    FakeGeminiServer,
    FakeOpenAIServer,
    ScriptedModel,
    disconnect,
    status,
    text,
)

from ._project import Recorder, generate

LOOPY = """
agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "You check the weather."
    }
    tool get_weather(location: string): string @desc "Gets the current weather"
    tool get_time(city: string): string @desc "Gets the local time"
    tool job_status(id: string): string @desc "Polls a job" @repeatable
}
"""

BACKED_UP = """
model Backup {
    provider: gemini("gemini-2.5-flash")
}

agent Main {
    default config {
        model: openai("gpt-4o")
        fallback: [Backup]
        prompt: "You are a helpful assistant."
    }
}
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ModuleType]:
    return generate(
        tmp_path_factory.mktemp("loops"), {"loopy.agent": LOOPY, "backed_up.agent": BACKED_UP}
    )


class Tools:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def get_weather(self, location: str) -> str:
        self.calls.append("get_weather")
        return "28°C and sunny"

    def get_time(self, city: str) -> str:
        self.calls.append("get_time")
        return "10:30"

    def job_status(self, id: str) -> str:
        self.calls.append("job_status")
        return "running"


def calling(*names: str) -> ScriptedModel:
    """A model that makes the given calls one per response, then answers."""
    args = {"get_weather": "location", "get_time": "city", "job_status": "id"}
    replies = [ScriptedModel.block("tool_call", n, {args[n]: "Accra"}) for n in names]
    return ScriptedModel([*replies, ScriptedModel.text("Done.")])


def loopy(project: dict[str, ModuleType], model: ScriptedModel, **extra: Any) -> tuple[Any, Tools]:
    tools = Tools()
    agent = project["loopy"].auwgent({"provider": model, "tools": tools, **extra})
    return agent, tools


async def test_repeating_a_call_warns_then_stops(project: dict[str, ModuleType]) -> None:
    model = calling(*["get_weather"] * 6)
    agent, tools = loopy(project, model)
    seen = Recorder()
    agent.on_intent(seen)
    session = await agent.run("weather?")
    assert tools.calls == ["get_weather"] * 4
    fourth = model.requests[3]
    assert "You are repeating yourself: get_weather was called 3 times" in str(fourth.messages)
    assert session["turns"][-1]["status"] == "error"
    message = seen.payloads("error")[-1]["message"]
    assert message.startswith("no progress: get_weather was called 4 times")
    assert '{"location":"Accra"}' in message


async def test_ping_pong_is_caught(project: dict[str, ModuleType]) -> None:
    model = calling("get_weather", "get_time", "get_weather", "get_time", "get_weather")
    agent, tools = loopy(project, model)
    seen = Recorder()
    agent.on_intent(seen)
    await agent.run("weather and time?")
    note = (
        'get_weather {"location":"Accra"} and get_time {"city":"Accra"} were called in turn, '
        "twice, with the same results each time"
    )
    assert note in model.requests[4].messages[-1].content
    # The fifth call is also get_weather's third: either pattern stops the run.
    assert seen.payloads("error")[-1]["message"].startswith("no progress: get_weather")
    assert len(tools.calls) == 5


async def test_ping_pong_on_one_tool_shows_the_arguments_that_alternate(
    project: dict[str, ModuleType],
) -> None:
    replies = [
        ScriptedModel.block("tool_call", "get_weather", {"location": city})
        for city in ["Accra", "Lagos"] * 4
    ]
    model = ScriptedModel([*replies, ScriptedModel.text("Done.")])
    agent, tools = loopy(project, model)
    seen = Recorder()
    agent.on_intent(seen)
    await agent.run("weather in Accra or Lagos?")
    reason = (
        'get_weather {"location":"Accra"} and get_weather {"location":"Lagos"} were called in '
        "turn, twice, with the same results each time"
    )
    assert f"You are repeating yourself: {reason}." in model.requests[4].messages[-1].content
    assert seen.payloads("error")[-1]["message"].startswith("no progress: get_weather")
    assert len(tools.calls) == 5


async def test_a_warned_model_that_changes_course_finishes(project: dict[str, ModuleType]) -> None:
    model = calling("get_weather", "get_weather", "get_weather", "get_time")
    agent, tools = loopy(project, model)
    session = await agent.run("weather?")
    assert session["turns"][-1]["status"] == "complete"
    assert tools.calls[-1] == "get_time"


async def test_repeatable_tools_may_be_polled(project: dict[str, ModuleType]) -> None:
    model = calling(*["job_status"] * 6)
    agent, tools = loopy(project, model)
    session = await agent.run("is it done?")
    assert session["turns"][-1]["status"] == "complete"
    assert tools.calls == ["job_status"] * 6
    assert not any("repeating yourself" in str(r.messages) for r in model.requests)


async def test_loop_detection_is_configurable(project: dict[str, ModuleType]) -> None:
    agent, tools = loopy(project, calling(*["get_weather"] * 5), loopDetection=False)
    session = await agent.run("weather?")
    assert session["turns"][-1]["status"] == "complete" and len(tools.calls) == 5

    model = calling(*["get_weather"] * 5)
    agent, tools = loopy(project, model, loopDetection={"repeats": 5})
    await agent.run("weather?")
    assert "get_weather was called 5 times" in str(model.requests[5].messages)

    with pytest.raises(ConfigError, match=r"loopDetection\.repeats: expected a whole number"):
        loopy(project, model, loopDetection={"repeats": 1})
    with pytest.raises(ConfigError, match=r"loopDetection\.times: unknown key"):
        loopy(project, model, loopDetection={"times": 3})


# -- fallback -------------------------------------------------------------------------------------


def backed_up(
    project: dict[str, ModuleType], primary: FakeOpenAIServer, backup: FakeGeminiServer
) -> Any:
    return project["backed_up"].auwgent(
        {
            "apiKeys": {"openaiApiKey": "sk-primary", "geminiApiKey": "g-backup"},
            "baseUrls": {"openai": primary.base_url, "gemini": backup.base_url},
            "retry": {"attempts": 2, "baseDelay": 0.01, "maxDelay": 0.02},
        }
    )


async def test_an_outage_of_the_primary_goes_to_the_fallback(
    project: dict[str, ModuleType],
) -> None:
    with (
        FakeOpenAIServer([status(503), status(503)]) as primary,
        FakeGeminiServer([text("Answered by the backup.")]) as backup,
    ):
        agent = backed_up(project, primary, backup)
        seen = Recorder()
        agent.on_intent(seen)
        session = await agent.run("hello")
    assert len(primary.requests) == 2  # its own retries first
    assert len(backup.requests) == 1
    assert seen.names == ["response_text"]  # intents are unchanged
    assert seen.payloads("response_text") == [{"text": "Answered by the backup."}]
    assert [c["model"] for c in session["turns"][-1]["model_calls"]] == ["gemini:gemini-2.5-flash"]
    system = "".join(p["text"] for p in backup.requests[0].body["systemInstruction"]["parts"])
    assert system.startswith("You are a helpful assistant.")


async def test_an_unreachable_primary_goes_to_the_fallback(
    project: dict[str, ModuleType],
) -> None:
    with FakeGeminiServer([text("Still here.")]) as backup:
        dead = FakeOpenAIServer([])
        with dead:
            url = dead.base_url  # a port nobody listens on once the server is closed
        agent = project["backed_up"].auwgent(
            {
                "apiKeys": {"openaiApiKey": "sk", "geminiApiKey": "g"},
                "baseUrls": {"openai": url, "gemini": backup.base_url},
                "retry": {"attempts": 1},
            }
        )
        session = await agent.run("hello")
    assert session["turns"][-1]["output"] == "Still here."
    assert [c["model"] for c in session["turns"][-1]["model_calls"]] == ["gemini:gemini-2.5-flash"]


async def test_no_fallback_once_the_stream_has_started(project: dict[str, ModuleType]) -> None:
    with (
        FakeOpenAIServer([disconnect(after_chunks=2)]) as primary,
        FakeGeminiServer([text("never")]) as backup,
    ):
        agent = backed_up(project, primary, backup)
        seen = Recorder()
        agent.on_intent(seen)
        session = await agent.run("hello")
    assert backup.requests == []
    assert session["turns"][-1]["status"] == "error"
    assert seen.names[-1] == "error"


async def test_no_fallback_for_a_request_the_primary_refuses(
    project: dict[str, ModuleType],
) -> None:
    with (
        FakeOpenAIServer([status(401, message="bad key")]) as primary,
        FakeGeminiServer([text("never")]) as backup,
    ):
        agent = backed_up(project, primary, backup)
        session = await agent.run("hello")
    assert backup.requests == []
    assert "401" in session["turns"][-1]["error"]


async def test_the_primary_answers_when_it_can(project: dict[str, ModuleType]) -> None:
    with (
        FakeOpenAIServer([text("From the primary.")]) as primary,
        FakeGeminiServer([]) as backup,
    ):
        session = await backed_up(project, primary, backup).run("hello")
    assert [c["model"] for c in session["turns"][-1]["model_calls"]] == ["openai:gpt-4o"]
    assert backup.requests == []


async def test_when_every_model_fails_the_error_lists_each_attempt(
    project: dict[str, ModuleType],
) -> None:
    with (
        FakeOpenAIServer([status(503, message="primary down")] * 2) as primary,
        FakeGeminiServer([status(503, message="backup down")] * 2) as backup,
    ):
        agent = backed_up(project, primary, backup)
        seen = Recorder()
        agent.on_intent(seen)
        session = await agent.run("hello")
    assert len(primary.requests) == len(backup.requests) == 2
    message = seen.payloads("error")[-1]["message"]
    assert message == (
        "the model and its fallbacks all failed before answering: "
        "openai:gpt-4o: OpenAI API error (503): primary down (gave up after 2 attempts); "
        "gemini:gemini-2.5-flash: Gemini API error (503): backup down [UNAVAILABLE] "
        "(gave up after 2 attempts)"
    )
    assert session["turns"][-1]["error"] == message


async def test_a_fallback_that_refuses_is_listed_with_the_outage_before_it(
    project: dict[str, ModuleType],
) -> None:
    with (
        FakeOpenAIServer([status(503, message="primary down")] * 2) as primary,
        FakeGeminiServer([status(401, message="bad key")]) as backup,
    ):
        session = await backed_up(project, primary, backup).run("hello")
    assert session["turns"][-1]["error"] == (
        "the model and its fallbacks all failed before answering: "
        "openai:gpt-4o: OpenAI API error (503): primary down (gave up after 2 attempts); "
        "gemini:gemini-2.5-flash: Gemini API error (401): bad key [UNAUTHENTICATED]"
    )


@pytest.mark.parametrize("replacement", ["offline", "scripted"])
async def test_model_calls_name_the_model_that_answered(
    project: dict[str, ModuleType], replacement: str
) -> None:
    provider: Any = "offline" if replacement == "offline" else ScriptedModel(["Hi."])
    session = await project["backed_up"].auwgent({"provider": provider}).run("hello")
    assert session["turns"][-1]["status"] == "complete"
    assert [c["model"] for c in session["turns"][-1]["model_calls"]] == [replacement]
    session = await project["loopy"].auwgent({"provider": provider, "tools": Tools()}).run("x")
    assert {c["model"] for c in session["turns"][-1]["model_calls"]} == {replacement}


def test_fallback_providers_need_their_keys(project: dict[str, ModuleType]) -> None:
    assert "geminiApiKey" in project["backed_up"].AuwgentApiKeys.__annotations__
    with pytest.raises(ConfigError, match=r"apiKeys\.geminiApiKey: missing API key"):
        project["backed_up"].auwgent({"apiKeys": {"openaiApiKey": "sk"}})
