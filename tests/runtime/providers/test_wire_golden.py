"""Every captured chat response in tests/data/wire, decoded, against its golden event list.

``<name>.sse`` is replayed as a streaming answer, ``<name>.json`` as a non-streaming one; the
events (or the error) are compared with ``<name>.events.json``. Regenerate the goldens with
``AUWGENT_UPDATE_GOLDEN=1`` and review the diff.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from auwgent._records import record_fields
from auwgent.errors import ProviderError
from auwgent.runtime.providers import (
    Finish,
    GeminiProvider,
    Message,
    ModelRequest,
    OpenAIProvider,
    StreamEvent,
)
from golden import assert_golden_json

WIRE = Path(__file__).resolve().parents[2] / "data" / "wire"
CASES = sorted(
    p
    for p in WIRE.iterdir()
    if p.suffix in (".sse", ".json")
    and not p.name.endswith(".events.json")
    and not any(word in p.name for word in ("error", "embedding"))
)


def _event_json(event: StreamEvent) -> dict[str, Any]:
    fields = {name: getattr(event, name) for name in record_fields(event)}
    if isinstance(event, Finish):  # the provider's own reason and message, when it gave them
        fields = {k: v for k, v in fields.items() if v is not None}
    if isinstance(fields.get("id"), str) and fields["id"].startswith("auwgent_call_"):
        fields["id"] = "<made up>"  # Gemini call ids are generated afresh each time
    return {"event": type(event).__name__, **fields}


async def _decode(path: Path) -> list[dict[str, Any]]:
    body = path.read_bytes()

    async def chunks() -> AsyncIterator[bytes]:
        for i in range(0, len(body), 97):  # uneven network pieces on purpose
            yield body[i : i + 97]

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=chunks())

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        provider: OpenAIProvider | GeminiProvider
        if path.name.startswith("gemini_"):
            provider = GeminiProvider(client=client)
        else:
            provider = OpenAIProvider(client=client)
        request = ModelRequest(
            model="m", system="", messages=(Message("user", "hi"),), stream=path.suffix == ".sse"
        )
        try:
            return [_event_json(e) async for e in provider.stream(request)]
        except ProviderError as exc:
            return [{"error": str(exc)}]


@pytest.mark.parametrize("path", CASES, ids=[p.name for p in CASES])
async def test_captured_response_decodes_to_its_golden_events(path: Path) -> None:
    golden = path.with_name(f"{path.stem}.events.json")
    events = await _decode(path)
    assert_golden_json(golden, events)
