"""Start auwgent.testing's fake OpenAI, Gemini and Anthropic servers on 127.0.0.1 for the TS
tests.

Usage: ``python fakes.py SCRIPT.json``. The script is ``{"openai": [reply, ...], "gemini":
[reply, ...], "anthropic": [reply, ...], "api_key": "..."}`` where a reply is ``{"text": "...",
"chunk_size": 3}``, ``{"calls": [[name, args], ...], "text": "..."}``, ``{"status": 503,
"retry_after": 0}``, ``{"stall": seconds, "after_chunks": n}``, ``{"disconnect": after_chunks}``
or ``{"error_event": after_chunks, "text": "..."}``; text and call replies take
``finish_reason`` (OpenAI's words), ``finish_message`` (Gemini's) and ``thinking`` (Anthropic).
Prints one JSON line with the base URLs, serves until its stdin closes, then prints one JSON
line with the requests each server recorded (path, body and the provider headers) and exits.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from auwgent.testing import (
    FakeAnthropicServer,
    FakeGeminiServer,
    FakeOpenAIServer,
    ServerReply,
    disconnect,
    error_event,
    stall,
    status,
    text,
    tool_calls,
)

HEADERS = ("authorization", "x-goog-api-key", "x-api-key", "anthropic-version")


def reply(spec: dict[str, Any]) -> ServerReply:
    if "stall" in spec:
        return stall(float(spec["stall"]), after_chunks=spec.get("after_chunks"))
    if "disconnect" in spec:
        return disconnect(after_chunks=int(spec["disconnect"]))
    if "status" in spec:
        return status(int(spec["status"]), retry_after=spec.get("retry_after"))
    if "error_event" in spec:
        return error_event(after_chunks=int(spec["error_event"]), reply=text(spec.get("text", "x")))
    if "calls" in spec:
        calls = [(str(n), a) for n, a in spec["calls"]]
        return tool_calls(
            calls,
            text=spec.get("text", ""),
            chunk_size=spec.get("chunk_size"),
            finish_reason=spec.get("finish_reason"),
            finish_message=spec.get("finish_message"),
            thinking=spec.get("thinking", ""),
        )
    return text(
        spec["text"],
        chunk_size=spec.get("chunk_size"),
        finish_reason=spec.get("finish_reason"),
        finish_message=spec.get("finish_message"),
        thinking=spec.get("thinking", ""),
    )


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as handle:
        script = json.load(handle)
    key = script.get("api_key")
    openai = FakeOpenAIServer([reply(r) for r in script.get("openai", [])], api_key=key)
    gemini = FakeGeminiServer([reply(r) for r in script.get("gemini", [])], api_key=key)
    anthropic = FakeAnthropicServer([reply(r) for r in script.get("anthropic", [])], api_key=key)
    servers = (("openai", openai), ("gemini", gemini), ("anthropic", anthropic))
    with openai, gemini, anthropic:
        print(json.dumps({name: server.base_url for name, server in servers}), flush=True)
        sys.stdin.read()
        seen = {
            name: [
                {
                    "path": r.path,
                    "body": r.body,
                    "headers": {k: v for k, v in r.headers.items() if k in HEADERS},
                }
                for r in server.requests
            ]
            for name, server in servers
        }
        print(json.dumps(seen), flush=True)


if __name__ == "__main__":
    main()
