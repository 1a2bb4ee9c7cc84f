"""What the Python runtime's Anthropic adapter makes of shared inputs, for the TS tests.

Usage: ``python anthropic_vectors.py < REQUESTS.json``. The input is a list of requests in the
TypeScript form (``model``, ``system``, ``messages``, ``functions``, ``responseSchema``,
``options``, ``stream``); the output is one JSON object: ``bodies``, the Messages API body the
Python adapter builds for each request, and ``replays``, the events it decodes from every
recorded response in ``tests/data/wire/real/anthropic`` (by file name; an error as
``{"error": message, "status": code}``), in the TypeScript event form.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import httpx

from auwgent.errors import ProviderError
from auwgent.runtime.providers import (
    AnthropicProvider,
    ContentPart,
    Finish,
    FunctionSpec,
    ModelRequest,
    RetryPolicy,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    Usage,
)
from auwgent.runtime.providers.anthropic import build_messages_body
from auwgent.runtime.session import message_from_json

REAL = Path(__file__).resolve().parents[2] / "tests" / "data" / "wire" / "real" / "anthropic"


def request_of(spec: dict[str, Any]) -> ModelRequest:
    return ModelRequest(
        model=spec["model"],
        system=spec["system"],
        messages=tuple(message_from_json(m) for m in spec["messages"]),
        functions=tuple(FunctionSpec(**f) for f in spec.get("functions", [])),
        response_schema=spec.get("responseSchema"),
        options=spec.get("options", {}),
        stream=spec.get("stream", True),
    )


def event_json(event: StreamEvent) -> dict[str, Any]:
    if isinstance(event, TextDelta):
        return {"type": "text", "text": event.text}
    if isinstance(event, ToolCallDelta):
        return {
            "type": "tool_call_delta",
            "index": event.index,
            "id": event.id,
            "name": event.name,
            "arguments": event.arguments,
        }
    if isinstance(event, ContentPart):
        return {"type": "part", "kind": event.kind, "data": event.data}
    if isinstance(event, Usage):
        return {
            "type": "usage",
            "inputTokens": event.input_tokens,
            "outputTokens": event.output_tokens,
            "cacheReadTokens": event.cache_read_tokens,
            "cacheWriteTokens": event.cache_write_tokens,
        }
    assert isinstance(event, Finish)
    return {"type": "finish", "reason": event.reason, "raw": event.raw, "message": event.message}


async def replay(record: dict[str, Any]) -> Any:
    response = record["response"]

    def handler(request: httpx.Request) -> httpx.Response:
        body = response["body"].encode()
        return httpx.Response(response["status"], headers=response["headers"], content=body)

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        provider = AnthropicProvider(client=client, api_key="k", retry=RetryPolicy(attempts=1))
        request = ModelRequest(
            model="m", system="", messages=(), stream=bool(record["request"]["stream"])
        )
        try:
            return [event_json(e) async for e in provider.stream(request)]
        except ProviderError as error:
            return {"error": str(error), "status": error.status}


async def main() -> None:
    requests = json.load(sys.stdin)
    bodies = [build_messages_body(request_of(spec)) for spec in requests]
    replays = {}
    for path in sorted(REAL.glob("*.json")):
        replays[path.name] = await replay(json.loads(path.read_text()))
    json.dump({"bodies": bodies, "replays": replays}, sys.stdout)


if __name__ == "__main__":
    asyncio.run(main())
