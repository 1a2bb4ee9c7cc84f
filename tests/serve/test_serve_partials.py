"""The partial events of ``auwgent serve``: a text partial carries what is new (its delta),
never the text so far again, so a long answer costs a stream about its own size."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from auwgent.testing import FakeOpenAIServer, text

from .test_serve import headers, project, serving

__all__ = ["project"]  # the fixture, shared with test_serve

ANSWER = " ".join(f"word{i}" for i in range(8000))  # about 70 KB


def stream_bytes(url: str, body: dict[str, Any]) -> tuple[list[tuple[str, Any]], int]:
    """The events of a run, and the bytes of its partial events (event line, data, blank)."""
    events: list[tuple[str, Any]] = []
    partial_bytes, name, data = 0, "", ""
    with httpx.stream(
        "POST", f"{url}/v1/agents/Main/runs", json=body, headers=headers(), timeout=120
    ) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line[len("event: ") :]
            elif line.startswith("data: "):
                data = line[len("data: ") :]
            elif line == "" and name:
                events.append((name, json.loads(data)))
                if name == "partial":
                    partial_bytes += len(f"event: {name}\ndata: {data}\n\n".encode())
                name, data = "", ""
    return events, partial_bytes


def test_text_partials_carry_their_delta_only(project: Path, tmp_path: Path) -> None:
    reply = text(f"[response_text]\n{ANSWER}\n[/response_text]", chunk_size=1000)
    with (
        FakeOpenAIServer([reply]) as fake,
        serving(project, fake.base_url, f"sqlite:///{tmp_path / 's.db'}") as url,
    ):
        events, partial_bytes = stream_bytes(url, {"input": "Talk."})
    partials = [value for name, value in events if name == "partial"]
    # Partials a client has not read yet are merged (their deltas joined): how many arrive
    # depends on how fast this client reads, so only that some do.
    assert partials
    for partial in partials:
        assert partial["name"] == "response_text" and partial["agent"] == "Main"
        assert sorted(partial["value"]) == ["complete", "delta", "mode", "partial", "segment"]
        assert partial["value"]["mode"] == "text" and partial["value"]["segment"] == 0
    added = "".join(p["value"]["delta"] for p in partials)
    assert ANSWER.startswith(added) and len(added) > len(ANSWER) - 1000
    assert dict(events)["response_text"] == {"text": ANSWER}
    # The whole stream of partials is within 3x the answer (it was quadratic: the text so far
    # twice in every partial).
    assert partial_bytes <= 3 * len(ANSWER.encode())


def test_structured_partials_carry_their_snapshot_without_raw(
    project: Path, tmp_path: Path
) -> None:
    call = text(
        '[tool_call: get_weather]\n{"location": "Accra, Ghana"}\n[/tool_call]', chunk_size=6
    )
    with (
        FakeOpenAIServer([call, text("[response_text]\nSunny.\n[/response_text]")]) as fake,
        serving(project, fake.base_url, f"sqlite:///{tmp_path / 's.db'}") as url,
    ):
        events, _ = stream_bytes(url, {"input": "Weather?"})
    partials = [value["value"] for name, value in events if name == "partial"]
    calls = [p for p in partials if p["mode"] == "structured"]
    assert calls, partials
    for partial in calls:
        assert sorted(partial) == ["complete", "mode", "partial", "segment", "snapshot"]
    assert calls[-1]["snapshot"]["type"] == "get_weather"
