"""The manual's prompts and workflows, compiled by the real compiler, then evaluated.

The other tests in this directory use hand-written IR; these make sure the evaluators agree
with what the compiler actually emits.
"""

from __future__ import annotations

from typing import Any

import pytest

from auwgent.compiler.pipeline import compile_sources
from auwgent.errors import WorkflowError
from auwgent.runtime.evaluate.prompts import referenced_context_keys, render_prompt
from auwgent.runtime.evaluate.schema import example_value, validate
from auwgent.runtime.evaluate.workflows import run_workflow

SOURCE = '''
model MyGemini {
    provider: gemini("gemini-2.5-flash")
}

type Person {
    name: string @desc "Full name"
    age?: number
}

prompt GreetingPrompt(name: string, is_vip: boolean) {
    """
    You are a helpful assistant.
    You are speaking with {{name}}.

    {{#if is_vip == true}}
        This is a VIP customer. Prioritise their request and offer premium options.
    {{else}}
        Treat this customer with standard support guidelines.
    {{/if}}

    Always be polite and concise.
    """
}

prompt WelcomePrompt {
    "You are a helpful assistant. Be polite and concise."
}

prompt SupportPrompt {
    "You are a customer support agent."

    Example {
        user: "Hello, I need help with my account."
        assistant: "I'd be happy to help. Could you please provide your account email?"
    }

    if (ctx.is_vip) {
        return "This is a VIP customer."
    } else {
        return "This is a standard customer."
    }

    "Reply in this shape: {{@schema(output)}}"
}

agent Main {
    default config {
        model: MyGemini
        prompt: GreetingPrompt(ctx.name, ctx.is_vip) + WelcomePrompt + "Always respond in English." + {
            "Additional instructions can go here."
        }
    }

    config Support {
        model: MyGemini
        prompt: SupportPrompt
    }

    context {
        name: string
        is_vip: boolean
        is_admin: boolean
    }

    output: Person

    tool get_location(): string
        @desc "Gets the user's current location"

    workflow check_value(value: number): string {
        description: "Checks whether the given value is above the threshold"

        let threshold = 10

        if (value > threshold) {
            return "above threshold"
        }

        return "below threshold"
    }

    workflow get_weather(): string {
        description: "Gets the weather for the user's current location"

        tool fetch_weather(location: string): string

        let location = get_location()
        let weather = fetch_weather(location)

        return weather
    }

    workflow delete_record(id: number): string {
        description: "Deletes a record by ID"

        tool delete_from_db(id: number): string

        if (ctx.is_admin) {
            let result = delete_from_db(id)
            return "record deleted"
        }

        return "you do not have permission to perform this action"
    }
}
'''


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    result = compile_sources({"main.agent": SOURCE})
    assert result.ok, [str(d) for d in result.errors]
    return dict(result.documents["main.agent"])


def _workflow(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(w for w in doc["agents"]["Main"]["workflows"] if w["name"] == name)


@pytest.mark.parametrize("vip", [True, False])
def test_manual_composition(doc: dict[str, Any], vip: bool) -> None:
    agent = doc["agents"]["Main"]
    rendered = render_prompt(
        doc, agent, agent["configs"]["default"], {"name": "Ama", "is_vip": vip}
    )
    middle = (
        "This is a VIP customer. Prioritise their request and offer premium options."
        if vip
        else "Treat this customer with standard support guidelines."
    )
    assert rendered == (
        "You are a helpful assistant.\nYou are speaking with Ama.\n\n"
        f"{middle}\n\nAlways be polite and concise.\n\n"
        "You are a helpful assistant. Be polite and concise.\n\n"
        "Always respond in English.\n\nAdditional instructions can go here."
    )
    assert referenced_context_keys(doc, agent, agent["configs"]["default"]) == {"name", "is_vip"}


def test_examples_js_if_and_schema(doc: dict[str, Any]) -> None:
    agent = doc["agents"]["Main"]
    rendered = render_prompt(doc, agent, agent["configs"]["Support"], {"is_vip": False})
    assert rendered == (
        "You are a customer support agent.\n\n"
        "Example:\nUser: Hello, I need help with my account.\n"
        "Assistant: I'd be happy to help. Could you please provide your account email?\n\n"
        "This is a standard customer.\n\n"
        "Reply in this shape: { name: string /* Full name */, age?: number }"
    )


def _no_tools(tool: str, args: dict[str, Any], loc: tuple[int, int]) -> Any:
    raise AssertionError(f"unexpected call {tool}")


@pytest.mark.parametrize(("value", "answer"), [(11, "above threshold"), (3, "below threshold")])
async def test_manual_check_value(doc: dict[str, Any], value: int, answer: str) -> None:
    async def call_tool(tool: str, args: dict[str, Any], loc: tuple[int, int]) -> Any:
        return _no_tools(tool, args, loc)

    assert (
        await run_workflow(
            _workflow(doc, "check_value"), {"value": value}, ctx={}, call_tool=call_tool
        )
        == answer
    )


async def test_manual_scoped_tool_chain(doc: dict[str, Any]) -> None:
    calls: list[tuple[str, dict[str, Any]]] = []
    results = {"get_location": "Accra", "fetch_weather": "Sunny"}

    async def call_tool(tool: str, args: dict[str, Any], loc: tuple[int, int]) -> Any:
        calls.append((tool, args))
        return results[tool]

    assert (
        await run_workflow(_workflow(doc, "get_weather"), {}, ctx={}, call_tool=call_tool)
        == "Sunny"
    )
    assert calls == [("get_location", {}), ("fetch_weather", {"location": "Accra"})]


async def test_manual_delete_record_failure_names_the_line(doc: dict[str, Any]) -> None:
    async def call_tool(tool: str, args: dict[str, Any], loc: tuple[int, int]) -> Any:
        raise RuntimeError("db down")

    workflow = _workflow(doc, "delete_record")
    denied = await run_workflow(workflow, {"id": 1}, ctx={"is_admin": False}, call_tool=call_tool)
    assert denied == "you do not have permission to perform this action"
    with pytest.raises(WorkflowError) as caught:
        await run_workflow(workflow, {"id": 1}, ctx={"is_admin": True}, call_tool=call_tool)
    line = next(i for i, text in enumerate(SOURCE.splitlines(), 1) if "delete_from_db(id)" in text)
    assert (
        str(caught.value)
        == f"main.agent:{line}: tool 'delete_from_db' failed: RuntimeError: db down"
    )


def test_example_output_validates_against_compiled_types(doc: dict[str, Any]) -> None:
    output = doc["agents"]["Main"]["output"]
    assert validate(example_value(output, doc["types"]), output, doc["types"]) == []
