"""The fake-server example of docs/testing.md, run as written (with a zero Retry-After)."""

from __future__ import annotations

from typing import Any

from auwgent import __version__
from auwgent.compiler.pipeline import compile_sources
from auwgent.ir import dumps_ir
from auwgent.runtime.agent import create_agent
from auwgent.testing import FakeOpenAIServer, status, text, tool_calls

SOURCE = """
agent Main {
    default config {
        model: openai("gpt-4o")
        prompt: "You are a weather assistant."
    }
    tools {
        get_weather(location: string): string @desc "Gets the current weather"
    }
}
"""


class Tools:
    def __init__(self) -> None:
        self.locations: list[str] = []

    def get_weather(self, location: str) -> str:
        self.locations.append(location)
        return "sunny"


def _auwgent(config: dict[str, Any]) -> Any:
    result = compile_sources({"main.agent": SOURCE})
    assert result.ok
    doc = result.documents["main.agent"]
    return create_agent(
        dumps_ir(doc), config, ir_hash=doc["hash"], compiler_version=__version__, ir_version=1
    )


async def test_the_fake_server_example() -> None:
    tools = Tools()
    seen: list[str] = []
    with FakeOpenAIServer(
        [
            status(429, retry_after=0),  # rate limited once...
            tool_calls([("tool__get_weather", {"location": "Accra"})]),
            text("It is sunny in Accra."),
        ]
    ) as server:
        agent = _auwgent(
            {
                "apiKeys": {"openaiApiKey": "test-key"},
                "baseUrls": {"openai": server.base_url},
                "protocol": "native",
                "tools": tools,
                "retry": {"attempts": 3, "baseDelay": 0.01, "maxDelay": 0.05},
            }
        )
        agent.on_intent(lambda name, value, agent_name: seen.append(name))
        await agent.run("Weather in Accra?")
        assert len(server.requests) == 3
    assert tools.locations == ["Accra"]
    assert seen == ["tool_call", "tool_result", "response_text"]
