"""Real recorded provider traffic, replayed through the adapters over HTTP.

``tests/data/wire/real/`` holds responses that other projects recorded from the real OpenAI and
Gemini APIs and from OpenAI-compatible vendors (each file names the repository, commit and path
it came from; ``scripts/extract_wire_cassettes.py`` wrote them). Every one is served by an
``httpx.MockTransport`` and decoded by our adapter, once whole and once in random small pieces
(the events must be identical), and the result is compared with a plain reading of the same
body (``wire_reference.py``). The counts appear in the pytest summary; a response that does not
decode exactly is a defect unless ``EXCEPTIONS`` below names it with the reason (documented in
docs/providers.md).
"""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import wire_reference as ref

from auwgent.errors import ProviderError
from auwgent.runtime.providers import (
    AnthropicProvider,
    ContentPart,
    Finish,
    GeminiProvider,
    Message,
    ModelRequest,
    OpenAIProvider,
    RetryPolicy,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    Usage,
)

pytestmark = pytest.mark.corpus

REAL = Path(__file__).resolve().parents[2] / "data" / "wire" / "real"
RECORDS = sorted(REAL.glob("*/*.json"))

# Responses that do not decode like the plain reading, each with the reason (also listed in
# docs/providers.md, "Recorded traffic").
EXCEPTIONS: dict[str, str] = {}

KEY = "test-key-not-in-any-body"
TALLY = {"replayed": 0, "exact": 0, "defects": 0, "exceptions": 0}


def _load(path: Path) -> dict[str, Any]:
    record: dict[str, Any] = json.loads(path.read_text())
    return record


def _transport(record: dict[str, Any], pieces: int | None) -> httpx.MockTransport:
    """Serve the recorded response; ``pieces`` is the seed of a random small chunking."""
    body = record["response"]["body"].encode()
    headers = dict(record["response"]["headers"])
    headers.setdefault("content-type", "application/json")

    async def chunks() -> AsyncIterator[bytes]:
        rng = random.Random(pieces)
        i = 0
        while i < len(body):
            step = rng.randint(1, 17)
            yield body[i : i + step]
            i += step

    def handler(request: httpx.Request) -> httpx.Response:
        content: Any = body if pieces is None else chunks()
        return httpx.Response(record["response"]["status"], headers=headers, content=content)

    return httpx.MockTransport(handler)


def _provider(record: dict[str, Any], client: httpx.AsyncClient) -> Any:
    once = RetryPolicy(attempts=1)
    if record["api"] == "gemini":
        return GeminiProvider(client=client, api_key=KEY, retry=once)
    if record["api"] == "anthropic":
        return AnthropicProvider(client=client, api_key=KEY, retry=once)
    return OpenAIProvider(client=client, api_key=KEY, retry=once, name="openai")


async def _replay(record: dict[str, Any], pieces: int | None) -> Any:
    async with httpx.AsyncClient(transport=_transport(record, pieces)) as client:
        provider = _provider(record, client)
        try:
            if "mbed" in record["endpoint"]:
                ok = record["response"]["status"] < 400
                count = len(ref.embedding_reference(record) or []) if ok else 1
                texts = [f"text {i}" for i in range(max(count, 1))]
                return await provider.embed(texts, "m")
            request = ModelRequest(
                model=str(record["request"]["model"] or "m"),
                system="",
                messages=(Message("user", "hi"),),
                stream=bool(record["request"]["stream"]),
            )
            return [event async for event in provider.stream(request)]
        except ProviderError as exc:
            return exc


def _summary(events: list[StreamEvent]) -> dict[str, Any]:
    calls: dict[int, dict[str, Any]] = {}
    for event in events:
        if isinstance(event, ToolCallDelta):
            call = calls.setdefault(event.index, {"id": None, "name": None, "arguments": ""})
            call["id"] = call["id"] or event.id
            call["name"] = call["name"] or event.name
            call["arguments"] += event.arguments
    usages = [e for e in events if isinstance(e, Usage)]
    finishes = [e for e in events if isinstance(e, Finish)]
    assert len(finishes) == 1 and events[-1] is finishes[0], "exactly one Finish, last"
    assert len(usages) <= 1, "at most one Usage"
    return {
        "text": "".join(e.text for e in events if isinstance(e, TextDelta)),
        "calls": [
            {"id": c["id"], "name": c["name"], "args": ref._arguments(c["arguments"])}
            for _, c in sorted(calls.items())
        ],
        "others": [e.kind for e in events if isinstance(e, ContentPart)],
        "usage": (usages[0].input_tokens, usages[0].output_tokens) if usages else None,
        "finish": finishes[0].reason,
    }


def _check(record: dict[str, Any], result: Any) -> None:
    """Assert that the adapter's reading of ``record`` is the reference reading."""
    status = record["response"]["status"]
    if status >= 400:
        assert isinstance(result, ProviderError), result
        assert result.status == status
        assert result.retryable == (status == 429 or status >= 500)
        message = ref.error_message(record)
        if message:
            assert message[:60] in str(result)
        return
    if "mbed" in record["endpoint"]:
        expected = ref.embedding_reference(record)
        assert not isinstance(result, ProviderError), result
        assert result == expected
        return
    readers = {"gemini": ref.gemini_reference, "anthropic": ref.anthropic_reference}
    reading = readers.get(record["api"], ref.openai_reference)(record)
    if "error" in reading:
        assert isinstance(result, ProviderError), result
        return
    assert not isinstance(result, ProviderError), result
    got = _summary(result)
    assert got["text"] == reading["text"]
    assert got["finish"] == reading["finish"]
    assert got["usage"] == reading["usage"]
    assert got["others"] == reading.get("others", [])
    assert [(c["name"], c["args"]) for c in got["calls"]] == [
        (c["name"], c["args"]) for c in reading["calls"]
    ]
    ids = [c["id"] for c in got["calls"]]
    assert all(isinstance(i, str) and i for i in ids), "every call has an id"
    assert len(set(ids)) == len(ids), "call ids are distinct"
    for mine, theirs in zip(got["calls"], reading["calls"], strict=True):
        if theirs["id"]:
            assert mine["id"] == theirs["id"]


def _comparable(result: Any) -> Any:
    if isinstance(result, ProviderError):
        return ("error", result.status, str(result))
    return result


@pytest.mark.parametrize("path", RECORDS, ids=[f"{p.parent.name}/{p.stem}" for p in RECORDS])
async def test_recorded_response_decodes_exactly(path: Path) -> None:
    record = _load(path)
    assert {"repo", "commit", "path", "interaction"} <= set(record["source"])
    TALLY["replayed"] += 1
    whole = await _replay(record, None)
    pieces = await _replay(record, len(path.name))
    try:
        assert _comparable(pieces) == _comparable(whole), "chunking changed the result"
        _check(record, whole)
    except AssertionError:
        if path.name in EXCEPTIONS:
            TALLY["exceptions"] += 1
            return
        TALLY["defects"] += 1
        raise
    TALLY["exact"] += 1


def test_the_corpus_covers_what_the_issue_lists() -> None:
    records = [_load(p) for p in RECORDS]
    assert len(records) >= 300
    kinds = {(r["api"], r["endpoint"], r["request"]["stream"]) for r in records}
    assert ("openai", "chat", True) in kinds and ("openai", "chat", False) in kinds
    assert ("gemini", "streamGenerateContent", True) in kinds
    assert ("gemini", "generateContent", False) in kinds
    assert any("mbed" in r["endpoint"] for r in records if r["api"] == "gemini")
    assert any("mbed" in r["endpoint"] for r in records if r["api"] == "openai")
    assert ("anthropic", "messages", True) in kinds and ("anthropic", "messages", False) in kinds
    statuses = {r["response"]["status"] for r in records}
    assert {400, 401, 404, 429} <= statuses
    bodies = "\n".join(r["response"]["body"] for r in records)
    for needle in (
        '"finish_reason": "length"',
        '"finishReason": "MAX_TOKENS"',
        '"finishReason": "SAFETY"',
        '"finishReason": "UNEXPECTED_TOOL_CALL"',
        '"finishReason": "MODEL_ARMOR"',
        '"finish_reason": "tool_calls"',
        "content_filter",
        '"thoughtSignature"',
        '"thought": true',
        '"executableCode"',
        '"inlineData"',
        '"id": ""',
        '"type": "thinking"',
        '"type": "redacted_thinking"',
        '"type": "signature_delta"',
        '"type": "input_json_delta"',
        '"stop_reason": "tool_use"',
        '"stop_reason": "stop_sequence"',
        '"cache_read_input_tokens"',
        '"type": "not_found_error"',
    ):
        assert needle in bodies or needle.replace(": ", ":") in bodies, needle
