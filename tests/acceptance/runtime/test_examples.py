"""Teaching the model with examples: @example on tools and workflows reaches the model as
ready-made calls, at most 5 in total, in both protocols."""

from __future__ import annotations

import re
from types import ModuleType

import pytest

from auwgent.testing import FakeOpenAIServer, text

from ._project import generate, openai_system

PROGRAM = """
agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "You are a weather assistant."
    }

    tool get_location(): string @desc "Gets the user's location"

    tools {
        get_weather(location: string): string
            @desc "Gets the current weather for a given location"
            @example(location = "Accra")

        get_forecast(location: string, days: number): string
            @desc "Gets the weather forecast for the next N days"
            @example(location = "Kumasi", days = 3)

        get_humidity(location: string): number
            @desc "Gets the current humidity percentage"
            @example(location = "Tamale")

        get_wind(location: string): number @desc "Wind speed" @example(location = "Ho")
        get_rain(location: string): number @desc "Rainfall" @example(location = "Wa")
        get_uv(location: string): number @desc "UV index" @example(location = "Bolga")
    }

    workflow weather_here(): string {
        description: "Gets the weather for the user's current location"

        tool fetch_weather(location: string): string

        let location = get_location()
        let weather = fetch_weather(location)

        return weather
    } @example()
}
"""


@pytest.fixture(scope="module")
def main(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    return generate(tmp_path_factory.mktemp("examples"), {"main.agent": PROGRAM})["main"]


@pytest.mark.parametrize("protocol", ["blocks", "native"])
async def test_at_most_five_examples_reach_the_model(main: ModuleType, protocol: str) -> None:
    with FakeOpenAIServer([text("Hi.")]) as server:
        agent = main.auwgent(
            {
                "apiKeys": {"openaiApiKey": "k"},
                "baseUrls": {"openai": server.base_url},
                "protocol": protocol,
            }
        )
        await agent.run("hello")
    system = openai_system(server.requests[0].body)
    places = ["Accra", "Kumasi", "Tamale", "Ho", "Wa", "Bolga"]
    shown = [p for p in places if re.search(rf"\b{p}\b", system)]
    workflow_example = "weather_here" in system.split("Tools:")[-1] and (
        "[workflow_call: weather_here]" in system or "workflow__weather_here({" in system
    )
    assert len(shown) + int(workflow_example) <= 5
    assert len(shown) + int(workflow_example) == 5  # the limit is used, not undershot
    if protocol == "blocks":
        # Written as the @example was: arguments in the tool's parameter order.
        assert "[tool_call: get_forecast]\nlocation: Kumasi\ndays: 3\n[/tool_call]" in system
    else:
        assert "tool__get_weather({" in system or "tool__get_forecast({" in system
