"""Prompts and Context at run time, and Input and Output: context checked where it enters,
interpolated into prompts, merged by set_context, shown when unreferenced; text, inline,
named and union outputs as response_schema, and invalid output sent back."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pytest

from auwgent.errors import ConfigError
from auwgent.testing import FakeGeminiServer, FakeOpenAIServer, structured, text

from ._project import Recorder, gemini_system, generate, openai_system

PERSONAL = """
model MyGemini {
    provider: gemini("gemini-2.5-flash")
}

prompt BasePrompt {
    "You are a helpful assistant."

    Example {
        user: "Hello"
        assistant: "Hi there! How can I help you today?"
    }
}

prompt PersonalisedPrompt(name: string, is_vip: boolean) {
    \"\"\"
    You are speaking with {{name}}.

    {{#if is_vip == true}}
        This is a VIP customer. Offer premium support.
    {{else}}
        Apply standard support guidelines.
    {{/if}}
    \"\"\"
}

agent Main {
    default config {
        model: MyGemini
        prompt: BasePrompt + PersonalisedPrompt(ctx.name, ctx.is_vip)
    }

    context {
        name: string
        is_vip: boolean
        plan?: string
    }
}
"""

INLINE = """
agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "Extract the user's name and age from their message."
    }
    output: { name: string, age: number }
}
"""

UNION = """
type Person {
    name: string @desc "the user's full name"
    age: number
}

type Organisation {
    company_name: string
    industry: string
}

agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "Extract whatever entity is described in the message."
    }
    output: Person | Organisation
}
"""

NAMED = """
type Person {
    name: string @desc "the user's full name"
    age: number
}

agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "Extract the person's details from the message."
    }
    input: Text
    output: Person
}
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ModuleType]:
    return generate(
        tmp_path_factory.mktemp("context_output"),
        {
            "personal.agent": PERSONAL,
            "inline.agent": INLINE,
            "union.agent": UNION,
            "named.agent": NAMED,
        },
    )


def gemini_agent(module: ModuleType, server: FakeGeminiServer, **extra: Any) -> Any:
    return module.auwgent(
        {"apiKeys": {"geminiApiKey": "k"}, "baseUrls": {"gemini": server.base_url}, **extra}
    )


def openai_agent(module: ModuleType, server: FakeOpenAIServer, **extra: Any) -> Any:
    return module.auwgent(
        {"apiKeys": {"openaiApiKey": "k"}, "baseUrls": {"openai": server.base_url}, **extra}
    )


async def test_context_values_reach_the_prompt(project: dict[str, ModuleType]) -> None:
    personal = project["personal"]
    with FakeGeminiServer([text("Hello Kofi!"), text("Hello Kofi!")]) as server:
        agent = gemini_agent(
            server=server, module=personal, context={"name": "Kofi", "is_vip": True}
        )
        await agent.run("hello")
        agent.set_context({"is_vip": False})  # merges: name stays
        await agent.run("hello")
    vip = gemini_system(server.requests[0].body)
    assert vip.index("You are a helpful assistant.") < vip.index("You are speaking with Kofi.")
    assert "This is a VIP customer. Offer premium support." in vip
    assert "Apply standard support guidelines." not in vip
    assert "Hi there! How can I help you today?" in vip  # the Example block
    standard = gemini_system(server.requests[1].body)
    assert "You are speaking with Kofi." in standard
    assert "Apply standard support guidelines." in standard
    assert "VIP customer" not in standard
    assert agent.context["name"] == "Kofi" and agent.context["is_vip"] is False


def test_a_wrong_context_type_is_caught_before_the_agent_runs(
    project: dict[str, ModuleType],
) -> None:
    personal = project["personal"]
    with pytest.raises(ConfigError) as raised:
        personal.auwgent(
            {"apiKeys": {"geminiApiKey": "k"}, "context": {"name": "A", "is_vip": "yes"}}
        )
    message = str(raised.value)
    assert "is_vip" in message and "boolean" in message and "str" in message
    agent = personal.auwgent({"apiKeys": {"geminiApiKey": "k"}})
    with pytest.raises(ConfigError, match="name"):
        agent.set_context({"name": 42})


async def test_missing_required_context_ends_the_run_before_any_model_call(
    project: dict[str, ModuleType],
) -> None:
    personal = project["personal"]
    seen = Recorder()
    with FakeGeminiServer([text("never")]) as server:
        agent = gemini_agent(personal, server, context={"name": "Kofi"})
        agent.on_intent(seen)
        await agent.run("hello")
    assert server.requests == []
    assert seen.names == ["error"]
    assert "is_vip" in seen.payloads("error")[0]["message"]


async def test_on_run_start_may_supply_context_and_extra_keys_are_shown(
    project: dict[str, ModuleType],
) -> None:
    personal = project["personal"]

    class ContextMiddleware(personal.AuwgentMiddleware):  # type: ignore[name-defined, misc]
        name = "context-injection"

        async def onRunStart(self, session: Any, ctx: Any) -> Any:
            ctx["set_context"]({"name": "Esi", "is_vip": True})
            ctx["setContext"]({"retrieved_chunks": ["Refunds take 5 days."], "plan": "gold"})
            return session

    with FakeGeminiServer([text("Hi Esi.")]) as server:
        agent = gemini_agent(personal, server, middleware=[ContextMiddleware])
        await agent.run("How long do refunds take?")
    system = gemini_system(server.requests[0].body)
    assert "You are speaking with Esi." in system
    # Undeclared keys (retrieval data) are automatically injected; a declared key that no
    # prompt references (plan) stays with the application.
    assert "Refunds take 5 days." in system
    assert "gold" not in system and "plan" not in system
    assert agent.context.get("retrieved_chunks") is None  # the run's copy only


async def test_an_inline_output_is_main_output(project: dict[str, ModuleType]) -> None:
    inline = project["inline"]
    printed: list[Any] = []

    class HandleIntent(inline.AuwgentBaseIntentHandler):  # type: ignore[name-defined, misc]
        async def response_schema(self, intent: Any, agent_name: str) -> None:
            printed.append(intent)

        async def error(self, intent: Any, agent_name: str) -> None:
            printed.append(("Error", intent))

    script = [text("[schema: MainOutput]\nname: Ama\nage: 31\n[/schema]")]
    with FakeOpenAIServer(script) as server:
        agent = openai_agent(inline, server)
        agent.on_intent(HandleIntent)
        await agent.run("I am Ama and I am 31.")
    assert printed == [{"type": "MainOutput", "response": {"name": "Ama", "age": 31}}]


async def test_native_structured_output(project: dict[str, ModuleType]) -> None:
    named = project["named"]
    seen = Recorder()
    with FakeOpenAIServer([structured({"name": "Yaw", "age": 40})]) as server:
        agent = openai_agent(named, server, protocol="native")
        agent.on_intent(seen)
        await agent.run("Yaw is 40.")
    assert seen.events == [
        ("response_schema", {"type": "Person", "response": {"name": "Yaw", "age": 40}}, "Main")
    ]
    fmt = server.requests[0].body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "Person"


async def test_a_union_output_names_its_variant(project: dict[str, ModuleType]) -> None:
    union = project["union"]
    seen = Recorder()
    script = [
        text("[schema: Organisation]\ncompany_name: Kasapreko\nindustry: drinks\n[/schema]"),
        text("[schema: Person]\nname: Kojo\nage: 12\n[/schema]"),
    ]
    with FakeOpenAIServer(script) as server:
        agent = openai_agent(union, server)
        agent.on_intent(seen)
        await agent.run("Kasapreko makes drinks.")
        await agent.run("Kojo is 12.")
    assert seen.payloads("response_schema") == [
        {"type": "Organisation", "response": {"company_name": "Kasapreko", "industry": "drinks"}},
        {"type": "Person", "response": {"name": "Kojo", "age": 12}},
    ]
    system = openai_system(server.requests[0].body)
    assert "Person" in system and "Organisation" in system


async def test_invalid_output_is_sent_back_then_an_error(project: dict[str, ModuleType]) -> None:
    named = project["named"]
    seen = Recorder()
    script = [
        text("[schema: Person]\nname: Yaw\nage: forty\n[/schema]"),
        text("[schema: Person]\nname: Yaw\nage: 40\n[/schema]"),
    ]
    with FakeOpenAIServer(script) as server:
        agent = openai_agent(named, server)
        agent.on_intent(seen)
        await agent.run("Yaw is forty.")
    assert seen.names == ["response_schema"]
    assert seen.payloads("response_schema")[0]["response"] == {"name": "Yaw", "age": 40}
    assert "age" in json.dumps(server.requests[1].body["messages"][-1])

    seen = Recorder()
    bad = text("[schema: Person]\nname: Yaw\n[/schema]")
    with FakeOpenAIServer([bad, bad, bad]) as server:
        agent = openai_agent(named, server, maxOutputRetries=2)
        agent.on_intent(seen)
        session = await agent.run("Yaw.")
    assert len(server.requests) == 3
    assert seen.names == ["error"]
    assert session["turns"][-1]["status"] == "error"


async def test_native_structured_output_on_gemini(tmp_path: Any) -> None:
    gem = generate(
        tmp_path, {"named.agent": NAMED.replace('openai("gpt-4o")', 'gemini("gemini-2.5-flash")')}
    )["named"]
    seen = Recorder()
    partials: list[Any] = []
    with FakeGeminiServer([structured({"name": "Yaw", "age": 40})]) as server:
        agent = gem.auwgent(
            {
                "apiKeys": {"geminiApiKey": "k"},
                "baseUrls": {"gemini": server.base_url},
                "protocol": "native",
            }
        )
        agent.on_intent(seen)
        agent.on_intent_partial(lambda name, value, who: partials.append((name, value)))
        await agent.run("Yaw is 40.")
    assert seen.events == [
        ("response_schema", {"type": "Person", "response": {"name": "Yaw", "age": 40}}, "Main")
    ]
    config = server.requests[0].body["generationConfig"]
    assert config["responseMimeType"] == "application/json"
    assert set(config["responseJsonSchema"]["properties"]) == {"name", "age"}
    for name, value in partials:
        assert name == "response_schema"
        assert value["mode"] == "structured"
        assert set(value["snapshot"]) <= {"type", "response"}


async def test_set_context_from_middleware_is_type_checked(
    project: dict[str, ModuleType],
) -> None:
    personal = project["personal"]

    class ContextMiddleware(personal.AuwgentMiddleware):  # type: ignore[name-defined, misc]
        name = "context-injection"

        async def onRunStart(self, session: Any, ctx: Any) -> Any:
            ctx["set_context"]({"name": "Esi", "is_vip": "premium"})
            return session

    seen = Recorder()
    with FakeGeminiServer([text("never")]) as server:
        agent = gemini_agent(personal, server, middleware=[ContextMiddleware])
        agent.on_intent(seen)
        await agent.run("hello")
    assert server.requests == []
    assert seen.names == ["error"]
    message = seen.payloads("error")[0]["message"]
    assert "is_vip" in message and "boolean" in message
