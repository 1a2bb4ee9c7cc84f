"""``agent.run`` with a list of parts: checked before anything runs, kept in the session."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

import auwgent
from auwgent.errors import ConfigError
from auwgent.runtime.parts import MAX_PART_BYTES, InputError
from auwgent.runtime.session import check_session
from auwgent.testing import ScriptedModel

from .irkit import agent, block, document, helper_use, make_agent, text

PNG = b"\x89PNG\r\n\x1a\n-not-really-an-image"
B64 = base64.b64encode(PNG).decode()
IMAGE = {"type": "image", "data": B64, "media_type": "image/png"}
ASK = {"type": "text", "text": "What is this?"}

BAD: list[tuple[Any, str]] = [
    (42, "run(): the input must be a string or a list of parts, got int"),
    (
        {"type": "text", "text": "x"},
        "run(): the input must be a string or a list of parts, got dict",
    ),
    ([], "run(): the list of parts is empty"),
    (["hello"], "run(): part 1: expected a part (a dict with 'type'), got str"),
    (
        [ASK, {"type": "audio", "data": B64}],
        "run(): part 2: unknown part type 'audio' (expected 'text', 'image' or 'file')",
    ),
    ([{"type": "text", "text": 3}], "run(): part 1 (text): 'text' must be a string"),
    (
        [{"type": "image", "data": "not base64!", "media_type": "image/png"}],
        "run(): part 1 (image): 'data' is not valid base64",
    ),
    (
        [{"type": "image", "data": B64}],
        "run(): part 1 (image): 'media_type' is missing (needed with 'data')",
    ),
    (
        [{"type": "image", "data": B64, "media_type": "image/tiff"}],
        "run(): part 1 (image): unsupported media type 'image/tiff' "
        "(supported: image/gif, image/jpeg, image/png, image/webp)",
    ),
    (
        [{"type": "file", "data": B64, "media_type": "text/html"}],
        "run(): part 1 (file): unsupported media type 'text/html' (supported: application/pdf)",
    ),
    (
        [{"type": "image", "data": B64, "url": "https://x.test/a.png", "media_type": "image/png"}],
        "run(): part 1 (image): give exactly one of 'data' (base64) and 'url'",
    ),
    (
        [{"type": "image", "url": "file:///etc/passwd"}],
        "run(): part 1 (image): 'url' must be an http(s):// or gs:// URL, got 'file:///etc/passwd'",
    ),
    (
        [{"type": "image", "url": "https://x.test/a.png", "detail": "high"}],
        "run(): part 1 (image): unknown key(s) 'detail'",
    ),
]


@pytest.mark.parametrize(("given", "message"), BAD)
async def test_bad_input_is_refused_before_anything_runs(given: Any, message: str) -> None:
    model = ScriptedModel([text("never")])
    bot = make_agent(document(agent()), model)
    with pytest.raises(InputError) as caught:
        await bot.run(given)
    assert str(caught.value) == message
    assert model.requests == []


async def test_a_binary_past_the_cap_is_refused() -> None:
    big = base64.b64encode(b"\0" * (MAX_PART_BYTES + 1)).decode()
    bot = make_agent(document(agent()), ScriptedModel([text("never")]))
    with pytest.raises(InputError, match=r"part 1 \(file\): the data is \d+ bytes, past the limit"):
        await bot.run([{"type": "file", "data": big, "media_type": "application/pdf"}])


def test_constructors_read_bytes_paths_and_urls(tmp_path: Path) -> None:
    picture = tmp_path / "cat.JPG"
    picture.write_bytes(PNG)
    report = tmp_path / "report.pdf"
    report.write_bytes(b"%PDF-1.4")
    assert auwgent.image(picture) == {"type": "image", "data": B64, "media_type": "image/jpeg"}
    assert auwgent.image(PNG, "image/png") == IMAGE
    assert auwgent.image("https://x.test/a.webp?size=2") == {
        "type": "image",
        "url": "https://x.test/a.webp?size=2",
        "media_type": "image/webp",
    }
    assert auwgent.file(report) == {
        "type": "file",
        "data": base64.b64encode(b"%PDF-1.4").decode(),
        "media_type": "application/pdf",
        "filename": "report.pdf",
    }
    assert auwgent.text("hi") == {"type": "text", "text": "hi"}
    with pytest.raises(InputError, match=r"image\(\) \(image\): 'media_type' is missing"):
        auwgent.image(PNG)
    with pytest.raises(InputError, match=r"cannot read the file"):
        auwgent.file(tmp_path / "missing.pdf")


async def test_parts_are_kept_in_the_session_and_sent_again_next_turn() -> None:
    model = ScriptedModel([text("A cat."), text("Grey.")])
    bot = make_agent(document(agent()), model)
    session = await bot.run([ASK, IMAGE])
    turn = session["turns"][0]
    assert turn["input"] == {"text": "What is this?", "parts": [ASK, IMAGE]}
    again = json.loads(json.dumps(session))
    await bot.run("What colour?", session=again)
    first, second = (r.messages for r in model.requests)
    assert first[0].parts == (ASK, IMAGE) and first[0].content == "What is this?"
    assert second[0] == first[0]
    assert second[-1].parts == () and second[-1].content == "What colour?"


async def test_stream_takes_parts_too() -> None:
    model = ScriptedModel([text("A cat.")])
    bot = make_agent(document(agent()), model)
    names = [event.name async for event in bot.stream([ASK, IMAGE])]
    assert "response_text" in names
    assert model.requests[0].messages[0].parts == (ASK, IMAGE)


async def test_a_helper_the_conversation_was_handed_to_gets_the_parts() -> None:
    helper = agent("Support", kind="helper", prompt="You are support.")
    doc = document(agent(helpers=[helper_use("Support", handoff="user")]), helper)
    model = ScriptedModel(
        [block("helper_call", "Support", "input: help"), text("How can I help?"), text("A cat.")]
    )
    bot = make_agent(doc, model)
    session = await bot.run("I need help")
    session = await bot.run([ASK, IMAGE], session=session)
    last = model.requests[-1]
    assert last.system.startswith("You are support.")
    assert last.messages[-1].parts == (ASK, IMAGE)
    assert session["stack"][-1]["messages"][-2]["parts"] == [ASK, IMAGE]


def test_a_stored_session_with_bad_parts_is_refused_naming_the_field() -> None:
    session: dict[str, Any] = {
        "version": 1,
        "agent": "Main",
        "system_prompt": "",
        "stack": [{"agent": "Main"}],
        "turns": [{"input": {"text": "x", "parts": [{"type": "image", "data": "%%"}]}}],
    }
    with pytest.raises(ConfigError) as caught:
        check_session(session, "Main")
    assert str(caught.value) == (
        "session.turns[0].input.parts: part 1 (image): 'data' is not valid base64"
    )
