"""Helpers with helpers of their own, tools that belong to another agent, union variants
validated against the named variant, and provider faults (disconnects, environment
fallbacks, first-byte timeouts)."""

from __future__ import annotations

import time
from types import ModuleType
from typing import Any

import pytest

from auwgent.testing import FakeGeminiServer, FakeOpenAIServer, disconnect, stall, text

from ._project import Recorder, generate, openai_system

PROGRAM = """
type Person {
    name: string
    age: number
}

type Organisation {
    company_name: string
    industry: string
}

helper Fact {
    description: "Finds one fact"
    default config {
        model: openai("gpt-4o")
        prompt: "You find facts."
    }
    tool lookup(q: string): string @desc "Looks up a fact"
}

helper Research {
    description: "Researches a topic"
    default config {
        model: openai("gpt-4o")
        prompt: "You research."
    }
    helpers {
        Fact
    }
}

agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "You answer."
    }
    helpers {
        Research
    }
}

agent Extract {
    default config {
        model: openai("gpt-4o")
        prompt: "Extract whatever entity is described."
    }
    output: Person | Organisation
}
"""


@pytest.fixture(scope="module")
def modules(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ModuleType]:
    main, extract = PROGRAM.split("agent Extract")
    return generate(
        tmp_path_factory.mktemp("nesting"),
        {
            "main.agent": main,
            "extract.agent": main.split("helper Fact")[0] + "agent Extract" + extract,
        },
    )


def routed(routes: dict[str, list[str]]) -> Any:
    def reply(request: Any) -> Any:
        system = openai_system(request.body)
        for marker, answers in routes.items():
            if system.startswith(marker):
                return text(answers.pop(0))
        raise AssertionError(system[:60])

    return reply


async def test_a_helper_with_its_own_helper(modules: dict[str, ModuleType]) -> None:
    main = modules["main"]
    looked_up: list[str] = []
    active: list[tuple[str, str]] = []

    class Watch(main.AuwgentMiddleware):  # type: ignore[name-defined, misc]
        name = "watch"
        target = ["Research", "Fact"]

        async def onLLMStart(self, prompt: str, ctx: Any) -> None:
            active.append((ctx["activeAgent"], ctx["rootAgent"]))

    routes = {
        "You answer.": [
            "[helper_call: Research]\ninput: the Volta dam\n[/helper_call]",
            "It was finished in 1965.",
        ],
        "You research.": [
            "[helper_call: Fact]\ninput: Akosombo completion year\n[/helper_call]",
            "Completed in 1965.",
        ],
        "You find facts.": ["[tool_call: lookup]\nq: Akosombo\n[/tool_call]", "1965"],
    }
    seen = Recorder()
    with FakeOpenAIServer(routed(routes)) as server:
        agent = main.auwgent(
            {
                "apiKeys": {"openaiApiKey": "k"},
                "baseUrls": {"openai": server.base_url},
                "tools": {"lookup": lambda q: looked_up.append(q) or "1965"},
                "middleware": [Watch],
            }
        )
        agent.on_intent(seen)
        await agent.run("When was the Volta dam finished?")
    assert looked_up == ["Akosombo"]
    assert [(n, a) for n, _, a in seen.events if n.startswith("helper_")] == [
        ("helper_call", "Research"),
        ("helper_call", "Fact"),
        ("helper_result", "Fact"),
        ("helper_result", "Research"),
    ]
    assert seen.agents("tool_call") == ["Fact"]
    assert seen.events[-1] == ("response_text", {"text": "It was finished in 1965."}, "Main")
    assert active == [
        ("Research", "Main"),
        ("Fact", "Main"),
        ("Fact", "Main"),
        ("Research", "Main"),
    ]


async def test_another_agents_tool_is_refused(modules: dict[str, ModuleType]) -> None:
    main = modules["main"]
    looked_up: list[str] = []
    routes = {
        "You answer.": ["[tool_call: lookup]\nq: x\n[/tool_call]", "I cannot."],
    }
    seen = Recorder()
    with FakeOpenAIServer(routed(routes)) as server:
        agent = main.auwgent(
            {
                "apiKeys": {"openaiApiKey": "k"},
                "baseUrls": {"openai": server.base_url},
                "tools": {"lookup": lambda q: looked_up.append(q) or "no"},
            }
        )
        agent.on_intent(seen)
        await agent.run("Look it up yourself")
    assert looked_up == []
    assert seen.names == ["tool_error", "response_text"]
    assert seen.payloads("tool_error")[0]["tool"] == "lookup"


async def test_a_union_variant_is_validated_against_the_named_variant(
    modules: dict[str, ModuleType],
) -> None:
    extract = modules["extract"]
    seen = Recorder()
    script = [
        text("[schema: Person]\ncompany_name: Kasapreko\nindustry: drinks\n[/schema]"),
        text("[schema: Organisation]\ncompany_name: Kasapreko\nindustry: drinks\n[/schema]"),
    ]
    with FakeOpenAIServer(script) as server:
        agent = extract.auwgent(
            {"apiKeys": {"openaiApiKey": "k"}, "baseUrls": {"openai": server.base_url}}
        )
        agent.on_intent(seen)
        await agent.run("Kasapreko makes drinks.")
    assert len(server.requests) == 2
    assert seen.events == [
        (
            "response_schema",
            {
                "type": "Organisation",
                "response": {"company_name": "Kasapreko", "industry": "drinks"},
            },
            "Extract",
        )
    ]


async def test_connection_errors_are_retried_then_reported(
    modules: dict[str, ModuleType],
) -> None:
    main = modules["main"]
    with FakeOpenAIServer() as server:
        closed = server.base_url  # nothing listens here once the server is closed
    seen = Recorder()
    agent = main.auwgent(
        {
            "apiKeys": {"openaiApiKey": "k"},
            "baseUrls": {"openai": closed},
            "retry": {"attempts": 3, "baseDelay": 0.01, "maxDelay": 0.02},
        }
    )
    agent.on_intent(seen)
    session = await agent.run("hello")
    assert seen.names == ["error"]
    assert "3 attempts" in seen.payloads("error")[0]["message"]
    assert session["turns"][-1]["status"] == "error"


@pytest.mark.parametrize("after_chunks", [0, 1])
async def test_a_connection_dropped_before_the_answer_starts_is_retried(
    modules: dict[str, ModuleType], after_chunks: int
) -> None:
    main = modules["main"]
    seen = Recorder()
    script = [disconnect(after_chunks=after_chunks), text("Fine.")]
    with FakeOpenAIServer(script) as server:
        agent = main.auwgent(
            {
                "apiKeys": {"openaiApiKey": "k"},
                "baseUrls": {"openai": server.base_url},
                "retry": {"attempts": 2, "baseDelay": 0.01, "maxDelay": 0.02},
            }
        )
        agent.on_intent(seen)
        await agent.run("hello")
    assert seen.events == [("response_text", {"text": "Fine."}, "Main")]
    assert len(server.requests) == 2


async def test_environment_fallbacks_for_openai(
    modules: dict[str, ModuleType], monkeypatch: pytest.MonkeyPatch
) -> None:
    main = modules["main"]
    with FakeOpenAIServer([text("Hi.")]) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "env-key")
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        await main.auwgent().run("hello")
    assert server.requests[0].headers["authorization"] == "Bearer env-key"


async def test_google_api_key_is_the_second_gemini_fallback(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    gem = generate(
        tmp_path,
        {
            "main.agent": """
            agent Main {
                default config {
                    model: gemini("gemini-2.5-flash")
                    prompt: "Hi."
                }
            }
            """
        },
    )["main"]
    with FakeGeminiServer([text("Hi.")]) as server:
        monkeypatch.setenv("GOOGLE_API_KEY", "google-key")
        agent = gem.auwgent({"baseUrls": {"gemini": server.base_url}})
        await agent.run("hello")
    assert server.requests[0].headers["x-goog-api-key"] == "google-key"


async def test_a_first_byte_timeout(modules: dict[str, ModuleType]) -> None:
    main = modules["main"]
    seen = Recorder()
    with FakeOpenAIServer([stall(30), stall(30)]) as server:
        agent = main.auwgent(
            {
                "apiKeys": {"openaiApiKey": "k"},
                "baseUrls": {"openai": server.base_url},
                "retry": {"attempts": 1},
                "timeouts": {"firstByte": 0.3},
            }
        )
        agent.on_intent(seen)
        agent.on_intent_partial(lambda name, value, who: None)  # a streamed answer
        started = time.monotonic()
        await agent.run("hello")
    assert time.monotonic() - started < 15  # the 30 s stall was cut short
    assert seen.names == ["error"]


async def test_an_answer_that_comes_whole_may_take_longer_than_the_first_byte_timeout(
    modules: dict[str, ModuleType],
) -> None:
    # Nobody reads partials, so the request is not streamed: the server sends its headers only
    # once the whole answer is written, and only the call's deadline bounds that wait.
    main = modules["main"]
    seen = Recorder()
    with FakeOpenAIServer([stall(0.8, reply=text("Hello."))]) as server:
        agent = main.auwgent(
            {
                "apiKeys": {"openaiApiKey": "k"},
                "baseUrls": {"openai": server.base_url},
                "retry": {"attempts": 1},
                "timeouts": {"firstByte": 0.3},
            }
        )
        agent.on_intent(seen)
        await agent.run("hello")
    assert not server.requests[0].stream
    assert seen.names == ["response_text"]


async def test_an_answer_that_comes_whole_ends_at_the_call_deadline(
    modules: dict[str, ModuleType],
) -> None:
    main = modules["main"]
    seen = Recorder()
    with FakeOpenAIServer([stall(30), stall(30)]) as server:
        agent = main.auwgent(
            {
                "apiKeys": {"openaiApiKey": "k"},
                "baseUrls": {"openai": server.base_url},
                "timeouts": {"firstByte": 0.2, "call": 0.6},
            }
        )
        agent.on_intent(seen)
        started = time.monotonic()
        await agent.run("hello")
    assert time.monotonic() - started < 15  # the 30 s stall was cut short
    assert seen.names == ["error"]
    assert "timeouts.call" in seen.payloads("error")[0]["message"]
    assert len(server.requests) == 1  # the deadline is not retried


async def test_a_named_config_applies_to_every_agent_that_has_it(tmp_path: Any) -> None:
    app = generate(
        tmp_path,
        {
            "main.agent": """
            helper Writer {
                description: "Writes"
                default config {
                    model: openai("gpt-4o")
                    prompt: "You write casually."
                }
                config Strict {
                    model: openai("gpt-4o-mini")
                    prompt: "You write formally."
                }
            }
            agent Main {
                default config {
                    model: openai("gpt-4o")
                    prompt: "You delegate."
                }
                config Strict {
                    model: openai("gpt-4o")
                    prompt: "You delegate strictly."
                }
                helpers {
                    Writer
                }
            }
            """
        },
    )["main"]
    routes = {
        "You delegate": ["[helper_call: Writer]\ninput: a note\n[/helper_call]", "Sent."],
        "You write": ["Dear colleague."],
    }
    with FakeOpenAIServer(routed(routes)) as server:
        agent = app.auwgent(
            {"apiKeys": {"openaiApiKey": "k"}, "baseUrls": {"openai": server.base_url}}
        )
        await agent.run("Write a note", config="Strict")
    prompts = [(openai_system(r.body).split("\n")[0], r.body["model"]) for r in server.requests]
    assert prompts == [
        ("You delegate strictly.", "gpt-4o"),
        ("You write formally.", "gpt-4o-mini"),
        ("You delegate strictly.", "gpt-4o"),
    ]
