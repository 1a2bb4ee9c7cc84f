"""Input parts (images, files) reach each provider in the shape its official SDK sends.

Each case runs a compiled agent with ``agent.run([...parts...])`` against the provider's
real-HTTP fake server and compares the user message of the request it received with the one
the official SDK (``openai``, ``google-genai``, ``anthropic``; dev dependencies only) sends for
the same input, captured through an ``httpx2.MockTransport`` so nothing leaves the machine.
Gemini's SDK writes some field names in snake_case; the API reads both, so those compare after
lowerCamelCasing the keys (as in ``test_sdk_requests.py``). A part an API cannot take is refused
before anything is sent, with an error naming the provider and the part.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from auwgent import __version__
from auwgent.compiler.pipeline import compile_sources
from auwgent.runtime.agent import Agent, create_agent
from auwgent.runtime.parts import file, image
from auwgent.testing.fake_servers import (
    FakeAnthropicServer,
    FakeGeminiServer,
    FakeOpenAIServer,
    text,
)

openai = pytest.importorskip("openai")
genai = pytest.importorskip("google.genai")
anthropic = pytest.importorskip("anthropic")
httpx2 = pytest.importorskip("httpx2")
types = genai.types

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00"
PDF = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"
PNG_URL = "https://example.test/cat.png"
PDF_URL = "https://example.test/report.pdf"
ASK = "What is in these?"
B64_PNG = base64.b64encode(PNG).decode()
B64_PDF = base64.b64encode(PDF).decode()

AGENT = """
agent Main {
    default config {
        model: MODEL
        prompt: "You describe what you are shown."
    }
}
"""


def _agent(model: str, **config: Any) -> Agent:
    result = compile_sources({"main.agent": AGENT.replace("MODEL", model)})
    assert result.ok, [str(d) for d in result.diagnostics]
    doc = dict(result.documents["main.agent"])
    settings = {"retry": {"attempts": 1}, "timeouts": {"connect": 2, "firstByte": 2}, **config}
    return create_agent(
        doc,
        settings,
        ir_hash=doc["hash"],
        compiler_version=__version__,
        ir_version=doc["ir_version"],
    )


class Seen:
    """An httpx2 mock handler that records each request and answers with ``answer``."""

    def __init__(self, answer: Mapping[str, Any]) -> None:
        self.answer = answer
        self.requests: list[Any] = []

    def __call__(self, request: Any) -> Any:
        self.requests.append(request)
        return httpx2.Response(200, json=self.answer)

    @property
    def body(self) -> Any:
        return json.loads(self.requests[-1].content)


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def normal(value: Any) -> Any:
    if isinstance(value, dict):
        return {_camel(k): normal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normal(v) for v in value]
    return value


# -- the SDKs ----------------------------------------------------------------------------------

CHAT_ANSWER = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 0,
    "model": "gpt-4o",
    "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}
    ],
}
GEMINI_ANSWER = {
    "candidates": [
        {"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP"}
    ]
}
MESSAGES_ANSWER = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5",
    "content": [{"type": "text", "text": "ok"}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 1, "output_tokens": 1},
}


def _openai_user(content: list[dict[str, Any]]) -> Any:
    seen = Seen(CHAT_ANSWER)
    client = openai.OpenAI(
        api_key="sk-test",
        base_url="https://oa.test/v1",
        http_client=httpx2.Client(transport=httpx2.MockTransport(seen)),
        max_retries=0,
    )
    client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": content}])
    return seen.body["messages"][-1]


def _gemini_user(parts: list[Any]) -> Any:
    seen = Seen(GEMINI_ANSWER)
    client = genai.Client(
        api_key="key-test",
        http_options=types.HttpOptions(
            base_url="https://gen.test",
            api_version="v1beta",
            httpx_client=httpx2.Client(transport=httpx2.MockTransport(seen)),
        ),
    )
    content = types.Content(role="user", parts=parts)
    client.models.generate_content(model="gemini-2.5-flash", contents=[content])
    return seen.body["contents"][-1]


def _anthropic_user(content: list[dict[str, Any]]) -> Any:
    seen = Seen(MESSAGES_ANSWER)
    client = anthropic.Anthropic(
        api_key="sk-ant-test",
        base_url="https://anthropic.test",
        http_client=httpx2.Client(transport=httpx2.MockTransport(seen)),
        max_retries=0,
    )
    client.messages.create(
        model="claude-sonnet-4-5", max_tokens=16, messages=[{"role": "user", "content": content}]
    )
    return seen.body["messages"][-1]


# -- our side, through agent.run ---------------------------------------------------------------

PARTS: list[Any] = [
    {"type": "text", "text": ASK},
    image(PNG, "image/png"),
    image(PNG_URL),
    file(PDF, "application/pdf", filename="report.pdf"),
]


async def _sent(server: Any, agent: Agent, parts: list[Any]) -> Any:
    session = await agent.run(parts)
    assert session["turns"][-1]["status"] == "complete", session["turns"][-1]["error"]
    return server.requests[-1].body


async def test_openai_image_and_file_parts_equal_the_sdk() -> None:
    with FakeOpenAIServer([text("ok")], api_key="sk-k") as server:
        agent = _agent(
            'openai("gpt-4o")',
            apiKeys={"openaiApiKey": "sk-k"},
            baseUrls={"openai": server.base_url},
        )
        body = await _sent(server, agent, PARTS)
    expected = _openai_user(
        [
            {"type": "text", "text": ASK},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{B64_PNG}"}},
            {"type": "image_url", "image_url": {"url": PNG_URL}},
            {
                "type": "file",
                "file": {
                    "file_data": f"data:application/pdf;base64,{B64_PDF}",
                    "filename": "report.pdf",
                },
            },
        ]
    )
    assert body["messages"][-1] == expected


async def test_custom_providers_send_the_openai_shape() -> None:
    with FakeOpenAIServer([text("ok")]) as server:
        agent = _agent(
            f'custom("my-local", "{server.base_url}", "llava")', apiKeys={"myLocalApiKey": "k"}
        )
        body = await _sent(server, agent, PARTS[:2])
    expected = _openai_user(
        [
            {"type": "text", "text": ASK},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{B64_PNG}"}},
        ]
    )
    assert body["messages"][-1] == expected


async def test_gemini_inline_data_and_file_data_equal_the_sdk() -> None:
    parts = [*PARTS, file(PDF_URL)]
    with FakeGeminiServer([text("ok")], api_key="AIza-k") as server:
        agent = _agent(
            'gemini("gemini-2.5-flash")',
            apiKeys={"geminiApiKey": "AIza-k"},
            baseUrls={"gemini": server.base_url},
        )
        body = await _sent(server, agent, parts)
    expected = _gemini_user(
        [
            types.Part.from_text(text=ASK),
            types.Part.from_bytes(data=PNG, mime_type="image/png"),
            types.Part.from_uri(file_uri=PNG_URL, mime_type="image/png"),
            types.Part.from_bytes(data=PDF, mime_type="application/pdf"),
            types.Part.from_uri(file_uri=PDF_URL, mime_type="application/pdf"),
        ]
    )
    assert normal(body["contents"][-1]) == normal(expected)


async def test_anthropic_image_and_document_blocks_equal_the_sdk() -> None:
    parts = [*PARTS, file(PDF_URL)]
    with FakeAnthropicServer([text("ok")], api_key="sk-ant") as server:
        agent = _agent(
            'anthropic("claude-sonnet-4-5")',
            apiKeys={"anthropicApiKey": "sk-ant"},
            baseUrls={"anthropic": server.base_url},
        )
        body = await _sent(server, agent, parts)
    png = {"type": "base64", "media_type": "image/png", "data": B64_PNG}
    pdf = {"type": "base64", "media_type": "application/pdf", "data": B64_PDF}
    expected = _anthropic_user(
        [
            {"type": "text", "text": ASK},
            {"type": "image", "source": png},
            {"type": "image", "source": {"type": "url", "url": PNG_URL}},
            {"type": "document", "source": pdf},
            {"type": "document", "source": {"type": "url", "url": PDF_URL}},
        ]
    )
    assert body["messages"][-1] == expected


async def test_parts_stay_in_the_history_of_the_next_turn() -> None:
    with FakeAnthropicServer([text("A cat."), text("Grey.")], api_key="sk-ant") as server:
        agent = _agent(
            'anthropic("claude-sonnet-4-5")',
            apiKeys={"anthropicApiKey": "sk-ant"},
            baseUrls={"anthropic": server.base_url},
        )
        session = await agent.run(PARTS[:2])
        again = json.loads(json.dumps(session))  # exported and imported
        await agent.run("What colour?", session=again)
    first, second = (r.body["messages"] for r in server.requests)
    assert second[0] == first[0]
    assert second[0]["content"][1]["type"] == "image"


REFUSED: list[tuple[str, str, Callable[[], Any], str]] = [
    (
        'openai("gpt-4o")',
        "openai",
        lambda: file(PDF_URL),
        "OpenAI API error: run(): part 2 (file, url https://example.test/report.pdf) cannot be "
        "sent: Chat Completions takes files as base64 data only",
    ),
    (
        'gemini("gemini-2.5-flash")',
        "gemini",
        lambda: image("https://example.test/picture"),
        "Gemini API error: part 2 (image, url https://example.test/picture) cannot be sent: "
        "Gemini needs the media_type of a URL part",
    ),
    (
        'anthropic("claude-sonnet-4-5")',
        "anthropic",
        lambda: image("gs://bucket/cat.png"),
        "Anthropic API error: part 2 (image, url gs://bucket/cat.png) cannot be sent: the "
        "Messages API fetches http(s) URLs only",
    ),
]


@pytest.mark.parametrize(("model", "provider", "part", "message"), REFUSED)
async def test_a_part_the_api_cannot_take_is_refused_before_sending(
    model: str, provider: str, part: Callable[[], Any], message: str
) -> None:
    servers = {"openai": FakeOpenAIServer, "gemini": FakeGeminiServer}
    server_class = servers.get(provider, FakeAnthropicServer)
    with server_class([text("never")]) as server:
        keys = {"openai": "openaiApiKey", "gemini": "geminiApiKey", "anthropic": "anthropicApiKey"}
        agent = _agent(model, apiKeys={keys[provider]: "k"}, baseUrls={provider: server.base_url})
        session = await agent.run([{"type": "text", "text": ASK}, part()])
    turn = session["turns"][-1]
    assert turn["status"] == "error"
    assert message.replace("run(): ", "") in turn["error"]
    assert server.requests == []
