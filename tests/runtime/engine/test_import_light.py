"""Importing generated bindings and building the agent load none of what only a run needs.

The run-time machinery (the event loop, httpx and TLS, the engine, the codecs, the prompt
renderer) is imported on the first run, and the value classes on the way are records and named
tuples, not dataclasses; this keeps ``import <bindings>`` + ``auwgent(config)`` well under the
60 ms budget (issue 20). A new top-level import of one of these modules fails here.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

GOLDEN = Path(__file__).parents[2] / "data" / "codegen" / "golden" / "sample_app"
RUN_ONLY = (
    "asyncio",
    "httpx",
    "ssl",
    "difflib",
    "uuid",
    "dataclasses",
    "inspect",
    "hashlib",
    "threading",
    "auwgent.runtime.engine",
    "auwgent.runtime.calls",
    "auwgent.runtime.evaluate.prompts",
    "auwgent.runtime.evaluate.schema",
    "auwgent.runtime.protocol.blocks",
    "auwgent.runtime.protocol.native",
    "auwgent.runtime.providers.openai",
    "auwgent.runtime.providers.http",
    "auwgent.runtime.providers.base",
    "auwgent.runtime.protocol.contract",
    "auwgent.runtime.providers.gemini",
)
CODE = """
import sys
sys.path.insert(0, {golden!r})
import quickstart_types as bindings
agent = bindings.auwgent({{"apiKeys": {{"geminiApiKey": "k", "openaiApiKey": "k"}}}})
assert agent.name
print(",".join(name for name in {names!r} if name in sys.modules))
"""


WITH_TOOLS = """
import functools, sys
sys.path.insert(0, {golden!r})
import weather_types as bindings
from auwgent import inline_tool

async def get_weather(location): return "sunny"
def get_forecast(*, location, days=3): return "rain"

class Tools(bindings.AuwgentTools):
    async def get_weather(self, *, location): return "sunny"
    def get_humidity(self, location, unit="%"): return "40"

class Log:
    async def on_llm_start(self, prompt, ctx): return prompt

class Handlers:
    def response_text(self, value, agent_name): pass

for tools in (
    {{"get_weather": get_weather, "get_forecast": get_forecast,
      "get_humidity": inline_tool(lambda location: "40")}},
    Tools,
    Tools(),
):
    config = {{"apiKeys": {{"geminiApiKey": "k"}}, "tools": tools, "middleware": [Log()]}}
    agent = bindings.auwgent(config)
    agent.on_intent(lambda name, value, agent_name: None)
    agent.on_intent(Handlers())
print(",".join(name for name in {names!r} if name in sys.modules))
"""


def _loaded(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code.format(golden=str(GOLDEN), names=RUN_ONLY)],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_bindings_import_and_agent_construction_load_no_run_time_module() -> None:
    assert _loaded(CODE) == ""


def test_tools_middleware_and_handlers_load_none_either() -> None:
    """Tools' signatures and whether they are async, and what kind of object a middleware or
    handler is, are read without ``inspect``."""
    assert _loaded(WITH_TOOLS) == ""
