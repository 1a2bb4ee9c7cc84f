"""``auwgent serve`` takes a run's input as a list of parts, and refuses bad parts with 400."""

from __future__ import annotations

import base64
import textwrap
from pathlib import Path

import httpx
import pytest

from auwgent.testing import FakeOpenAIServer, text

from .test_serve import AGENT, APP, headers, run, serving

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n-tiny").decode()
PARTS = [
    {"type": "text", "text": "What is this?"},
    {"type": "image", "data": PNG, "media_type": "image/png"},
]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "main.agent").write_text(AGENT, encoding="utf-8")
    (tmp_path / "app.py").write_text(textwrap.dedent(APP), encoding="utf-8")
    return tmp_path


def test_a_run_with_parts_reaches_the_model_and_the_store(project: Path, tmp_path: Path) -> None:
    answer = text("[response_text]\nA picture.\n[/response_text]")
    with (
        FakeOpenAIServer([answer]) as fake,
        serving(project, fake.base_url, f"sqlite:///{tmp_path / 's.db'}") as url,
    ):
        events = run(url, {"input": PARTS, "conversation_id": "c1"})
        assert events[-1][0] == "session"
        stored = httpx.get(f"{url}/v1/conversations/c1", headers=headers()).json()
        user = fake.requests[0].body["messages"][1]
        bad = httpx.post(
            f"{url}/v1/agents/Main/runs",
            json={"input": [{"type": "image", "data": PNG}]},
            headers=headers(),
        )
    assert stored["turns"][0]["input"] == {"text": "What is this?", "parts": PARTS}
    assert user["content"][1] == {
        "type": "image_url",
        "image_url": {"url": f"data:image/png;base64,{PNG}"},
    }
    assert bad.status_code == 400
    assert bad.json()["error"] == {
        "code": "bad_request",
        "message": "input: part 1 (image): 'media_type' is missing (needed with 'data')",
    }
